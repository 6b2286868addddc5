//! Reduce-scatter: rank r ends with block r of the reduction. The size is the whole send buffer.
use super::contract::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct ReduceScatter;

impl Collective for ReduceScatter {
    fn kind(&self) -> Kind {
        Kind::ReduceScatter
    }
    fn name(&self) -> &'static str {
        "reduce-scatter"
    }
    fn reduces(&self) -> bool {
        true
    }
    fn layout(&self, elems: usize, elem: usize, n: usize, rank: usize, conv: Convention) -> Layout {
        let base = super::share::per_rank(elems, elem, n);
        Layout {
            count: base,
            send_count: base * n,
            recv_count: base,
            alg_count: base * n,
            peers: None,
            in_place_input: 0,
            in_place_output: match conv {
                Convention::Mpi => 0,
                Convention::Nccl => rank * base,
            },
        }
    }
    fn bus_factor(&self, n: usize) -> f64 {
        super::share::one_pass(n)
    }
    fn input(&self, _c: &Ctx, i: usize) -> Cell {
        Cell::Contribution { idx: i as u64 }
    }
    fn expected(&self, c: &Ctx, j: usize) -> Cell {
        Cell::Reduced { idx: (c.rank * c.layout.count + j) as u64 }
    }
    fn input_run(&self, _c: &Ctx, _i: usize) -> usize {
        usize::MAX
    }
    fn expected_run(&self, _c: &Ctx, _j: usize) -> usize {
        usize::MAX
    }
}
