//! Gather: the root ends with every rank's block, in rank order. The size is the root's whole
//! receive buffer; each rank sends size/n rounded down to whole 16 bytes (`super::per_rank`).
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct Gather;

impl Collective for Gather {
    fn kind(&self) -> Kind {
        Kind::Gather
    }
    fn name(&self) -> &'static str {
        "gather"
    }
    fn rooted(&self) -> bool {
        true
    }
    fn layout(&self, elems: usize, elem: usize, n: usize, rank: usize, _c: Convention) -> Layout {
        let base = super::share::per_rank(elems, elem, n);
        Layout {
            count: base,
            send_count: base,
            recv_count: base * n,
            alg_count: base * n,
            peers: None,
            in_place_input: rank * base,
            in_place_output: 0,
        }
    }
    fn bus_factor(&self, n: usize) -> f64 {
        super::share::one_pass(n)
    }
    fn input(&self, c: &Ctx, i: usize) -> Cell {
        Cell::Data { src: c.rank as u64, k: i as u64 }
    }
    fn output_len(&self, c: &Ctx) -> usize {
        if c.rank == c.root {
            c.layout.recv_count
        } else {
            0
        }
    }
    fn expected(&self, c: &Ctx, j: usize) -> Cell {
        let base = c.layout.count;
        Cell::Data { src: (j / base) as u64, k: (j % base) as u64 }
    }
    fn input_run(&self, _c: &Ctx, _i: usize) -> usize {
        usize::MAX
    }
    fn expected_run(&self, c: &Ctx, j: usize) -> usize {
        c.layout.count.max(1) - j % c.layout.count.max(1)
    }
}
