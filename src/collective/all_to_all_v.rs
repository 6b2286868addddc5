//! All-to-all-v: rank s sends rank d its own count, from the traffic matrix of `--pattern`
//! ([`super::traffic`]). Blocks lie contiguous in rank order on both sides. The size is the
//! bytes a rank sends on average (nccl-tests' total); algbw's bytes are the busiest rank's,
//! sent or received (nccl-tests' `AlltoAllvGetBw`), with all-to-all's bus factor.
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};
use super::traffic::{peer_counts, Pattern, PeerCounts};

pub struct AllToAllV;

/// The layout of `pattern` at `elems` elements (the whole send buffer of the mean rank).
pub fn layout(pattern: &Pattern, elems: usize, elem: usize, n: usize, rank: usize) -> Layout {
    layout_of(peer_counts(pattern, elems, elem, n, rank), n)
}

/// The layout of `pattern`'s transposed matrix (`step`'s combine: every block goes back).
pub fn layout_transposed(pattern: &Pattern, elems: usize, elem: usize, n: usize, rank: usize) -> Layout {
    layout_of(super::traffic::peer_counts_of(pattern, elems, elem, n, rank, true), n)
}

fn layout_of(peers: &'static PeerCounts, n: usize) -> Layout {
    Layout {
        count: peers.nominal / n.max(1),
        send_count: peers.send_total(),
        recv_count: peers.recv_total(),
        alg_count: peers.busiest,
        in_place_input: 0,
        in_place_output: 0,
        peers: Some(peers),
    }
}

fn peers(c: &Ctx) -> &'static PeerCounts {
    c.layout.peers.expect("an all-to-all-v layout carries its counts")
}

impl Collective for AllToAllV {
    fn kind(&self) -> Kind {
        Kind::AllToAllV
    }
    fn name(&self) -> &'static str {
        "all-to-all-v"
    }
    /// Without a pattern: uniform (the sweep passes `--pattern` through [`super::layout_of`]).
    fn layout(&self, elems: usize, elem: usize, n: usize, rank: usize, _c: Convention) -> Layout {
        layout(&Pattern::Uniform, elems, elem, n, rank)
    }
    fn has_in_place(&self) -> bool {
        false
    }
    fn bus_factor(&self, n: usize) -> f64 {
        super::share::one_pass(n)
    }
    fn input(&self, c: &Ctx, i: usize) -> Cell {
        let p = peers(c);
        let (dest, k) = PeerCounts::locate(&p.send, &p.send_displs, i);
        Cell::Data { src: (c.rank * c.nranks + dest) as u64, k: k as u64 }
    }
    fn expected(&self, c: &Ctx, j: usize) -> Cell {
        let p = peers(c);
        let (source, k) = PeerCounts::locate(&p.recv, &p.recv_displs, j);
        Cell::Data { src: (source * c.nranks + c.rank) as u64, k: k as u64 }
    }
}

#[cfg(test)]
mod tests {
    use super::super::traffic::Moe;
    use super::*;

    #[test]
    fn uniform_is_all_to_all_and_the_size_is_the_mean_rank_s() {
        for n in [1, 2, 3, 4, 7, 8] {
            for rank in [0, n - 1] {
                let a = Kind::AllToAll.spec().layout(1 << 20, 4, n, rank, Convention::Mpi);
                let v = layout(&Pattern::Uniform, 1 << 20, 4, n, rank);
                assert_eq!(
                    (v.count, v.send_count, v.recv_count, v.alg_count),
                    (a.count, a.send_count, a.recv_count, a.alg_count)
                );
                assert_eq!(v.size_bytes(4), a.size_bytes(4));
            }
        }
        // A skewed pattern: the size stays what was asked (the mean rank's), algbw's bytes are
        // the busiest rank's.
        let moe = Pattern::Moe(Moe { experts: 8, topk: 2, skew: 1.5, capacity: None, seed: 1 });
        let l = layout(&moe, 1 << 18, 4, 4, 0);
        assert_eq!(l.size_bytes(4), 1 << 20);
        assert!(l.alg_count as f64 > 2.0 * (1 << 18) as f64, "{l:?}");
        // Transposed: each rank receives what it sent and sends what it received.
        for rank in 0..4 {
            let (d, c) = (layout(&moe, 1 << 18, 4, 4, rank), layout_transposed(&moe, 1 << 18, 4, 4, rank));
            assert_eq!((d.send_count, d.recv_count), (c.recv_count, c.send_count));
            assert_eq!((d.peers.unwrap().send.clone(), d.alg_count), (c.peers.unwrap().recv.clone(), c.alg_count));
        }
    }
}
