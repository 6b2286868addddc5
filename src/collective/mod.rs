//! One module per collective. Each supplies only what differs between collectives, as in
//! nccl-tests: the per-rank element counts for a total size (and the in-place offsets), the bytes
//! behind algbw, the bus factor, the input pattern and the expected output. The generic driver
//! (`crate::sweep`) and the check (`crate::verify`) do the rest.

mod all_gather;
mod all_reduce;
mod all_to_all;
mod all_to_all_v;
mod barrier;
mod broadcast;
mod contract;
mod gather;
mod ping_pong;
mod reduce;
mod reduce_scatter;
mod scatter;
mod sendrecv;
mod share;
pub mod traffic;

use std::fmt;

pub use contract::{Cell, Collective, Convention, Ctx, Kind, Layout};
pub use ping_pong::partner;
pub use sendrecv::ring_peers;

impl Kind {
    pub fn name(self) -> &'static str {
        self.spec().name()
    }

    /// The module that describes this collective.
    pub fn spec(self) -> &'static dyn Collective {
        match self {
            Kind::AllReduce => &all_reduce::AllReduce,
            Kind::AllGather => &all_gather::AllGather,
            Kind::ReduceScatter => &reduce_scatter::ReduceScatter,
            Kind::Broadcast => &broadcast::Broadcast,
            Kind::Reduce => &reduce::Reduce,
            Kind::Gather => &gather::Gather,
            Kind::Scatter => &scatter::Scatter,
            Kind::AllToAll => &all_to_all::AllToAll,
            Kind::AllToAllV => &all_to_all_v::AllToAllV,
            Kind::SendRecv => &sendrecv::SendRecv,
            Kind::PingPong => &ping_pong::PingPong,
            Kind::Barrier => &barrier::Barrier,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The layout of `kind` with the run's traffic pattern (which only all-to-all-v reads).
pub fn layout_of(
    kind: Kind,
    pattern: &traffic::Pattern,
    elems: usize,
    elem: usize,
    nranks: usize,
    rank: usize,
    convention: Convention,
) -> Layout {
    match kind {
        Kind::AllToAllV => all_to_all_v::layout(pattern, elems, elem, nranks, rank),
        _ => kind.spec().layout(elems, elem, nranks, rank, convention),
    }
}

/// all-to-all-v's layout of `pattern`, of its transposed counts when `transposed` (`step`'s
/// combine, which sends every block back).
pub fn all_to_all_v_layout(
    pattern: &traffic::Pattern,
    (elems, elem): (usize, usize),
    nranks: usize,
    rank: usize,
    transposed: bool,
) -> Layout {
    if transposed {
        all_to_all_v::layout_transposed(pattern, elems, elem, nranks, rank)
    } else {
        all_to_all_v::layout(pattern, elems, elem, nranks, rank)
    }
}

#[cfg(test)]
mod tests {
    use super::share::per_rank;
    use super::*;

    const NS: [usize; 6] = [1, 2, 3, 4, 7, 8];

    fn factor(k: Kind, n: usize) -> f64 {
        k.spec().bus_factor(n)
    }

    #[test]
    fn bus_factors_are_nccl_tests_factors() {
        for n in NS {
            let nf = n as f64;
            assert_eq!(factor(Kind::AllReduce, n), 2.0 * (nf - 1.0) / nf, "n={n}");
            for k in [Kind::AllGather, Kind::ReduceScatter, Kind::AllToAll, Kind::Gather, Kind::Scatter] {
                assert_eq!(factor(k, n), (nf - 1.0) / nf, "{k} n={n}");
            }
            for k in [Kind::Broadcast, Kind::Reduce, Kind::SendRecv, Kind::PingPong] {
                assert_eq!(factor(k, n), 1.0, "{k} n={n}");
            }
        }
        assert_eq!(factor(Kind::AllReduce, 1), 0.0);
        assert_eq!(factor(Kind::AllReduce, 8), 1.75);
    }

    /// nccl-tests' `GetCollByteCount` of all_gather.cu, reduce_scatter.cu, alltoall.cu,
    /// gather.cu and scatter.cu, written as there: the per-rank count ("paramcount").
    fn nccl_tests_base(count: usize, elt_size: usize, nranks: usize) -> usize {
        (count / nranks) & !(16 / elt_size - 1)
    }

    #[test]
    fn layouts_match_nccl_tests() {
        // 1 MiB, and sizes that do not share out evenly, in every element size.
        for bytes in [1usize << 20, 100 * 4, 8, 1000, 24_576 + 40] {
            for elem in [1usize, 2, 4, 8] {
                let elems = bytes / elem;
                for n in NS {
                    for rank in [0, n - 1] {
                        let layout = |k: Kind, conv| k.spec().layout(elems, elem, n, rank, conv);
                        let l = layout(Kind::AllReduce, Convention::Mpi);
                        assert_eq!((l.count, l.send_count, l.recv_count, l.alg_count), (elems, elems, elems, elems));
                        assert_eq!((l.in_place_input, l.in_place_output), (0, 0));

                        let base = nccl_tests_base(elems, elem, n);
                        let at = format!("{bytes} B of {elem}-byte elements on {n} ranks");
                        let l = layout(Kind::AllGather, Convention::Mpi);
                        assert_eq!(
                            (l.count, l.send_count, l.recv_count, l.alg_count),
                            (base, base, base * n, base * n),
                            "{at}"
                        );
                        assert_eq!((l.in_place_input, l.in_place_output), (rank * base, 0));

                        for conv in [Convention::Mpi, Convention::Nccl] {
                            let l = layout(Kind::ReduceScatter, conv);
                            assert_eq!(
                                (l.count, l.send_count, l.recv_count, l.alg_count),
                                (base, base * n, base, base * n),
                                "{at}"
                            );
                            let out = if conv == Convention::Mpi { 0 } else { rank * base };
                            assert_eq!((l.in_place_input, l.in_place_output), (0, out));
                        }

                        let l = layout(Kind::AllToAll, Convention::Mpi);
                        assert_eq!(
                            (l.count, l.send_count, l.recv_count, l.alg_count),
                            (base, base * n, base * n, base * n),
                            "{at}"
                        );

                        let l = layout(Kind::Gather, Convention::Mpi);
                        assert_eq!(
                            (l.count, l.send_count, l.recv_count, l.alg_count),
                            (base, base, base * n, base * n),
                            "{at}"
                        );
                        assert_eq!(l.in_place_input, rank * base);

                        let l = layout(Kind::Scatter, Convention::Mpi);
                        assert_eq!(
                            (l.count, l.send_count, l.recv_count, l.alg_count),
                            (base, base * n, base, base * n),
                            "{at}"
                        );
                        assert_eq!(l.in_place_output, rank * base);

                        // Every block, and every in-place pointer into one buffer, is 16-byte aligned.
                        for k in [Kind::AllGather, Kind::ReduceScatter, Kind::AllToAll, Kind::Gather, Kind::Scatter] {
                            let l = layout(k, Convention::Nccl);
                            assert_eq!(l.count * elem % 16, 0, "{k} {at}");
                            assert_eq!(
                                (l.in_place_input * elem % 16, l.in_place_output * elem % 16),
                                (0, 0),
                                "{k} {at}"
                            );
                        }

                        for k in [Kind::Broadcast, Kind::Reduce, Kind::SendRecv, Kind::PingPong] {
                            let l = layout(k, Convention::Mpi);
                            assert_eq!(
                                (l.count, l.send_count, l.recv_count, l.alg_count),
                                (elems, elems, elems, elems)
                            );
                        }
                        assert_eq!(layout(Kind::Barrier, Convention::Mpi), Layout::default());
                    }
                }
            }
        }
    }

    #[test]
    fn per_rank_count_rounds_down_to_16_bytes_as_nccl_tests() {
        // 100 floats over 7 ranks: 14 each would leave rank 1's block at byte 56; nccl-tests
        // rounds down to 12 (48 bytes), 84 in the whole buffer.
        let l = Kind::AllGather.spec().layout(100, 4, 7, 3, Convention::Mpi);
        assert_eq!((l.count, l.recv_count, l.alg_count), (12, 84, 84));
        assert_eq!(l.size_bytes(4), 336);
        // 1000 bytes on 7 ranks: 142 int8 → 128; 71 half → 64; 35 int32 → 32; 17 double → 16.
        for (elem, want) in [(1, 128), (2, 64), (4, 32), (8, 16)] {
            assert_eq!(per_rank(1000 / elem, elem, 7), want, "{elem}");
        }
        // Fewer than 16 bytes a rank: nothing to move.
        let l = Kind::ReduceScatter.spec().layout(2, 4, 3, 0, Convention::Mpi);
        assert_eq!(l.count, 0);
        assert_eq!(Kind::AllToAll.spec().layout(24, 4, 7, 0, Convention::Mpi).count, 0);
    }

    #[test]
    fn names_parse_in_every_spelling() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.name()), Some(k));
            assert_eq!(Kind::parse(&k.name().replace('-', "_")), Some(k));
        }
        assert_eq!(Kind::parse("allreduce"), Some(Kind::AllReduce));
        assert_eq!(Kind::parse("all_to_all"), Some(Kind::AllToAll));
        assert_eq!(Kind::parse("allreduce2"), None);
        // sendrecv is nccl-tests' ring; OSU's ping-pong has its own name, and the old alias p2p,
        // which meant the ping-pong, names neither.
        assert_eq!(Kind::parse("sendrecv"), Some(Kind::SendRecv));
        assert_eq!(Kind::parse("send_recv"), Some(Kind::SendRecv));
        assert_eq!(Kind::parse("pingpong"), Some(Kind::PingPong));
        assert_eq!(Kind::parse("ping_pong"), Some(Kind::PingPong));
        assert_eq!(Kind::parse("p2p"), None);
    }

    #[test]
    fn in_place_extent_covers_input_and_output() {
        let l = Kind::ReduceScatter.spec().layout(64, 4, 4, 3, Convention::Nccl);
        assert_eq!(l.in_place_extent(), 64);
        let l = Kind::AllGather.spec().layout(64, 4, 4, 3, Convention::Mpi);
        assert_eq!(l.in_place_extent(), 64);
    }
}
