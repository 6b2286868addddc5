//! Barrier: no data; one row with its latency.
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct Barrier;

impl Collective for Barrier {
    fn kind(&self) -> Kind {
        Kind::Barrier
    }
    fn name(&self) -> &'static str {
        "barrier"
    }
    fn sized(&self) -> bool {
        false
    }
    fn layout(&self, _elems: usize, _elem: usize, _n: usize, _rank: usize, _c: Convention) -> Layout {
        Layout::default()
    }
    fn bus_factor(&self, _n: usize) -> f64 {
        0.0
    }
    fn input(&self, c: &Ctx, i: usize) -> Cell {
        Cell::Data { src: c.rank as u64, k: i as u64 }
    }
    fn expected(&self, c: &Ctx, j: usize) -> Cell {
        Cell::Data { src: c.rank as u64, k: j as u64 }
    }
    fn input_run(&self, _c: &Ctx, _i: usize) -> usize {
        usize::MAX
    }
    fn expected_run(&self, _c: &Ctx, _j: usize) -> usize {
        usize::MAX
    }
}
