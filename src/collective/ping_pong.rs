//! Ping-pong between rank pairs (0↔1, 2↔3, …), as OSU's latency test (`osu_latency`) does: the
//! even rank sends and waits for the answer, the odd rank answers, one call after the other (no
//! group). The time is one way (half the round trip). With an odd number of ranks the last one
//! exchanges with itself. (Before the ring of [`super::sendrecv`] took the name, this was
//! `sendrecv`.)
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct PingPong;

/// The rank this rank exchanges with.
pub fn partner(rank: usize, nranks: usize) -> usize {
    let p = rank ^ 1;
    if p < nranks {
        p
    } else {
        rank
    }
}

impl Collective for PingPong {
    fn kind(&self) -> Kind {
        Kind::PingPong
    }
    fn name(&self) -> &'static str {
        "ping-pong"
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
        let p = partner(c.rank, c.nranks);
        // In place, the responder overwrites its buffer with the ping before answering, so the
        // initiator gets its own data back.
        let src = if c.in_place && c.rank % 2 == 0 { c.rank } else { p };
        Cell::Data { src: src as u64, k: j as u64 }
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
    use super::partner;

    #[test]
    fn pairs_are_disjoint_and_the_odd_one_out_is_alone() {
        assert_eq!(partner(0, 1), 0);
        assert_eq!((partner(0, 2), partner(1, 2)), (1, 0));
        assert_eq!((partner(0, 3), partner(1, 3), partner(2, 3)), (1, 0, 2));
        for n in [4, 7, 8] {
            for r in 0..n {
                assert_eq!(partner(partner(r, n), n), r);
            }
        }
    }
}
