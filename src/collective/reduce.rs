//! Reduce: the root ends with the reduction of every rank's buffer.
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct Reduce;

impl Collective for Reduce {
    fn kind(&self) -> Kind {
        Kind::Reduce
    }
    fn name(&self) -> &'static str {
        "reduce"
    }
    fn reduces(&self) -> bool {
        true
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
    fn input(&self, _c: &Ctx, i: usize) -> Cell {
        Cell::Contribution { idx: i as u64 }
    }
    fn output_len(&self, c: &Ctx) -> usize {
        if c.rank == c.root {
            c.layout.recv_count
        } else {
            0
        }
    }
    fn expected(&self, _c: &Ctx, j: usize) -> Cell {
        Cell::Reduced { idx: j as u64 }
    }
    fn input_run(&self, _c: &Ctx, _i: usize) -> usize {
        usize::MAX
    }
    fn expected_run(&self, _c: &Ctx, _j: usize) -> usize {
        usize::MAX
    }
}
