//! All-to-all: block d of rank s's buffer goes to block s of rank d. The size is the whole buffer.
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct AllToAll;

impl Collective for AllToAll {
    fn kind(&self) -> Kind {
        Kind::AllToAll
    }
    fn name(&self) -> &'static str {
        "all-to-all"
    }
    fn layout(&self, elems: usize, elem: usize, n: usize, _rank: usize, _c: Convention) -> Layout {
        let base = super::share::per_rank(elems, elem, n);
        Layout { count: base, send_count: base * n, recv_count: base * n, alg_count: base * n, ..Layout::default() }
    }
    fn bus_factor(&self, n: usize) -> f64 {
        super::share::one_pass(n)
    }
    fn input(&self, c: &Ctx, i: usize) -> Cell {
        let base = c.layout.count;
        let dest = i / base;
        Cell::Data { src: (c.rank * c.nranks + dest) as u64, k: (i % base) as u64 }
    }
    fn expected(&self, c: &Ctx, j: usize) -> Cell {
        let base = c.layout.count;
        let source = j / base;
        Cell::Data { src: (source * c.nranks + c.rank) as u64, k: (j % base) as u64 }
    }
    fn input_run(&self, c: &Ctx, i: usize) -> usize {
        c.layout.count.max(1) - i % c.layout.count.max(1)
    }
    fn expected_run(&self, c: &Ctx, j: usize) -> usize {
        c.layout.count.max(1) - j % c.layout.count.max(1)
    }
}
