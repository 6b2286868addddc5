//! All-reduce: every rank ends with the reduction of every rank's buffer.
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct AllReduce;

impl Collective for AllReduce {
    fn kind(&self) -> Kind {
        Kind::AllReduce
    }
    fn name(&self) -> &'static str {
        "all-reduce"
    }
    fn reduces(&self) -> bool {
        true
    }
    fn layout(&self, elems: usize, _elem: usize, _n: usize, _rank: usize, _c: Convention) -> Layout {
        Layout { count: elems, send_count: elems, recv_count: elems, alg_count: elems, ..Layout::default() }
    }
    fn bus_factor(&self, n: usize) -> f64 {
        2.0 * super::share::one_pass(n)
    }
    fn input(&self, _c: &Ctx, i: usize) -> Cell {
        Cell::Contribution { idx: i as u64 }
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
