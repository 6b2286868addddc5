//! Scatter: rank r ends with block r of the root's buffer. The size is the root's whole send
//! buffer; each rank receives size/n rounded down to whole 16 bytes (`super::per_rank`).
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct Scatter;

impl Collective for Scatter {
    fn kind(&self) -> Kind {
        Kind::Scatter
    }
    fn name(&self) -> &'static str {
        "scatter"
    }
    fn rooted(&self) -> bool {
        true
    }
    fn layout(&self, elems: usize, elem: usize, n: usize, rank: usize, _c: Convention) -> Layout {
        let base = super::share::per_rank(elems, elem, n);
        Layout {
            count: base,
            send_count: base * n,
            recv_count: base,
            alg_count: base * n,
            peers: None,
            in_place_input: 0,
            in_place_output: rank * base,
        }
    }
    fn bus_factor(&self, n: usize) -> f64 {
        super::share::one_pass(n)
    }
    fn input_len(&self, c: &Ctx) -> usize {
        if c.rank == c.root {
            c.layout.send_count
        } else {
            0
        }
    }
    fn input(&self, c: &Ctx, i: usize) -> Cell {
        // The root's block for destination d is d's data.
        let base = c.layout.count;
        Cell::Data { src: (i / base) as u64, k: (i % base) as u64 }
    }
    fn expected(&self, c: &Ctx, j: usize) -> Cell {
        Cell::Data { src: c.rank as u64, k: j as u64 }
    }
    fn input_run(&self, c: &Ctx, i: usize) -> usize {
        c.layout.count.max(1) - i % c.layout.count.max(1)
    }
    fn expected_run(&self, _c: &Ctx, _j: usize) -> usize {
        usize::MAX
    }
}
