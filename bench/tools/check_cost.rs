//! The check pass's CPU cost on rank 0 (issue 49): `fill_input` and `verify`, the two halves of
//! the check the sweep, tune and step run per point, timed directly on the default sweep's points
//! (all-reduce, all-gather, reduce-scatter; float sum; 8 B to 64 MiB by 2; out of place and in
//! place; rank 0 of 2, MPI's convention), as a run with `-n 1 -w 1` makes them once per point.
//! No MPI: the same functions on the same buffers, so the time is theirs alone. Built as an
//! integration test of the tree under measurement by bench/check-cost.sh (copied into its
//! tests/), which runs it with `--ignored --nocapture`; prints `CHECK_COST fill_s verify_s`.
#[allow(unused_imports)]
use coll_bench::collective::{Collective, Convention, Ctx, Kind};
use coll_bench::dtype::{DType, Op};
use coll_bench::verify::{fill_input, verify, GUARD_BYTES, SENTINEL};

#[test]
#[ignore]
fn check_cost() {
    let (n, rank, dtype, op) = (2usize, 0usize, DType::Float32, Op::Sum);
    let elem = dtype.size();
    let max = 64usize << 20;
    let mut send = vec![0u8; max + GUARD_BYTES];
    let mut recv = vec![0u8; 2 * max + GUARD_BYTES];
    let (mut fill_s, mut verify_s, mut wrong) = (0.0, 0.0, 0u64);
    for kind in [Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter] {
        let spec = kind.spec();
        let mut size = 8usize;
        while size <= max {
            for in_place in [false, true] {
                let layout = spec.layout(size / elem, elem, n, rank, Convention::Mpi);
                let c = Ctx { rank, nranks: n, root: 0, in_place, convention: Convention::Mpi, layout };
                let (out_at, guard_from) = if in_place {
                    (layout.in_place_output, layout.in_place_extent() * elem)
                } else {
                    (0, layout.recv_count * elem)
                };
                let recv_len = guard_from + GUARD_BYTES;
                recv[..recv_len].fill(SENTINEL);
                let t = std::time::Instant::now();
                if in_place {
                    fill_input(spec, &c, dtype, op, &mut recv[..recv_len], layout.in_place_input);
                } else {
                    fill_input(spec, &c, dtype, op, &mut send[..layout.send_count * elem], 0);
                }
                fill_s += t.elapsed().as_secs_f64();
                let t = std::time::Instant::now();
                wrong += verify(spec, &c, dtype, op, &recv[..recv_len], out_at, guard_from).wrong;
                verify_s += t.elapsed().as_secs_f64();
            }
            size *= 2;
        }
    }
    // `wrong` keeps the verify from being optimised away (the buffers hold no call's output).
    println!("CHECK_COST {fill_s:.6} {verify_s:.6} {wrong}");
}
