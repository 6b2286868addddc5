//! Send/receive around a ring, as nccl-tests' `sendrecv_perf`: every rank sends its buffer to
//! rank+1 and receives rank−1's, both at once (one `MPI_Sendrecv`; one `ncclSend` and one
//! `ncclRecv` in a group). The bus factor is 1. In place, one buffer is sent and overwritten by
//! the one received (`MPI_Sendrecv_replace`). For OSU's ping-pong between pairs, which this name
//! meant before, see [`super::ping_pong`].
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct SendRecv;

/// The ranks this rank sends to and receives from: (rank+1, rank−1) around the ring.
pub fn ring_peers(rank: usize, nranks: usize) -> (usize, usize) {
    let n = nranks.max(1);
    ((rank + 1) % n, (rank + n - 1) % n)
}

impl Collective for SendRecv {
    fn kind(&self) -> Kind {
        Kind::SendRecv
    }
    fn name(&self) -> &'static str {
        "sendrecv"
    }
    fn layout(&self, elems: usize, _elem: usize, _n: usize, _rank: usize, _c: Convention) -> Layout {
        Layout { count: elems, send_count: elems, recv_count: elems, alg_count: elems, ..Layout::default() }
    }
    fn bus_factor(&self, _n: usize) -> f64 {
        1.0
    }
    fn input(&self, c: &Ctx, i: usize) -> Cell {
        Cell::Data { src: c.rank as u64, k: i as u64 }
    }
    fn expected(&self, c: &Ctx, j: usize) -> Cell {
        Cell::Data { src: ring_peers(c.rank, c.nranks).1 as u64, k: j as u64 }
    }
    fn input_run(&self, _c: &Ctx, _i: usize) -> usize {
        usize::MAX
    }
    fn expected_run(&self, _c: &Ctx, _j: usize) -> usize {
        usize::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::ring_peers;

    #[test]
    fn each_rank_sends_to_the_next_and_receives_from_the_previous() {
        assert_eq!(ring_peers(0, 1), (0, 0));
        assert_eq!((ring_peers(0, 2), ring_peers(1, 2)), ((1, 1), (0, 0)));
        assert_eq!((ring_peers(0, 3), ring_peers(2, 3)), ((1, 2), (0, 1)));
        for n in [4, 7, 8] {
            for r in 0..n {
                let (to, from) = ring_peers(r, n);
                assert_eq!(ring_peers(to, n).1, r);
                assert_eq!(ring_peers(from, n).0, r);
            }
        }
    }
}
