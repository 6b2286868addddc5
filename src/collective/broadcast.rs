//! Broadcast: the root's buffer reaches every rank.
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct Broadcast;

impl Collective for Broadcast {
    fn kind(&self) -> Kind {
        Kind::Broadcast
    }
    fn name(&self) -> &'static str {
        "broadcast"
    }
    fn rooted(&self) -> bool {
        true
    }
    fn layout(&self, elems: usize, _elem: usize, _n: usize, _rank: usize, _c: Convention) -> Layout {
        Layout { count: elems, send_count: elems, recv_count: elems, alg_count: elems, ..Layout::default() }
    }
    fn bus_factor(&self, _n: usize) -> f64 {
        1.0
    }
    fn input_len(&self, c: &Ctx) -> usize {
        if c.rank == c.root {
            c.layout.send_count
        } else {
            0
        }
    }
    fn input(&self, c: &Ctx, i: usize) -> Cell {
        Cell::Data { src: c.root as u64, k: i as u64 }
    }
    fn output_len(&self, c: &Ctx) -> usize {
        // MPI has one buffer: an out-of-place root sends from its send buffer and its receive
        // buffer is not part of the call. NCCL copies into the root's receive buffer too.
        if c.rank == c.root && !c.in_place && c.convention == Convention::Mpi {
            0
        } else {
            c.layout.recv_count
        }
    }
    fn expected(&self, c: &Ctx, j: usize) -> Cell {
        Cell::Data { src: c.root as u64, k: j as u64 }
    }
    fn input_run(&self, _c: &Ctx, _i: usize) -> usize {
        usize::MAX
    }
    fn expected_run(&self, _c: &Ctx, _j: usize) -> usize {
        usize::MAX
    }
}
