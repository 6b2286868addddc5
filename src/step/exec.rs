//! Running one layout's step on the ranks: each rank's program (its stage's slots in 1F1B order,
//! TP's and EP's calls in each forward and backward pass, DP's at the end), one communicator per group
//! (`setup::make_group_backend`: `MPI_Comm_split` on mpi, `ncclCommSplit` or one unique id per
//! group on nccl), real buffers (host memory on mpi, device memory on nccl); the pipeline's
//! transfers are [`Backend::exchange`]s on each pipeline's communicator (`MPI_Sendrecv`, or a
//! grouped `ncclSend` + `ncclRecv`). Timed per dimension in the whole step and alone, then one
//! checked step (device buffers read back). Nothing here prints.

use super::model::{plan, CallGroup, Dim, DimPlan, DpStyle, DIMS};
use super::schedule::{slots, Dir, Exchange, Slot};
use super::types::{DimResult, LayoutResult, StepOptions};
use crate::backend::{Backend, Buf, Call};
use crate::collective::{Kind, Layout};
use crate::dtype::{DType, Op};
use crate::error::Result;
use crate::options::{BackendKind, Options};
use crate::sweep::check::Check;
use crate::verify::{GUARD_BYTES, SENTINEL};
use crate::watchdog::{Phase, StepPart, StepPass, StepTask, Task, Watchdog};
use crate::world::World;

use super::model::{Model, Shape};
use crate::layout::Grid;

/// The type `backend` moves for the model's `dtype`: bf16 and fp16 go as float (the same bytes
/// in half as many elements) on mpi (MPI has no standard 16-bit float) and on nccl with the
/// check on (the exact check has no 16-bit float arithmetic); nccl with `-c 0` moves the real
/// type (ncclBfloat16, ncclFloat16).
pub fn wire_dtype(dtype: DType, backend: BackendKind, check: bool) -> DType {
    match (dtype, backend) {
        (DType::Bfloat16 | DType::Float16, BackendKind::Nccl) if !check => dtype,
        (DType::Bfloat16 | DType::Float16, _) => DType::Float32,
        (d, _) => d,
    }
}

/// Why `shape` cannot run checked on nccl, if it cannot: DDP's average of float gradients on a
/// data-parallel group whose size is not a power of two (NCCL multiplies each input by 1/n
/// before summing, which rounds; see `backend::nccl::avg_is_checkable`).
pub fn nccl_unfit(opts: &StepOptions, shape: &Shape) -> Option<String> {
    let avg = opts.model.dp_style == DpStyle::Ddp && shape.dp > 1;
    let wire = wire_dtype(opts.dtype, opts.backend, opts.check);
    (opts.backend == BackendKind::Nccl && opts.check && avg && wire.is_float() && !shape.dp.is_power_of_two()).then(|| {
        format!(
            "ddp's average of {wire} gradients over dp={} ranks cannot be checked exactly on nccl (NCCL multiplies each input by 1/{} before summing, which rounds); expected a power-of-two dp, --dp zero, or -c 0",
            shape.dp, shape.dp
        )
    })
}

/// The options a group backend of the step is made from: the backend, the check, and the type.
pub fn backend_options(opts: &StepOptions) -> Options {
    let wire = wire_dtype(opts.dtype, opts.backend, opts.check);
    // ops: Sum only, so the nccl backend's own avg rule (on the world's size) does not apply;
    // `nccl_unfit` judges the DP group's size instead.
    Options {
        backend: opts.backend,
        check: opts.check,
        dtypes: vec![wire],
        ops: vec![Op::Sum],
        launch: opts.launch,
        ..Options::default()
    }
}

/// One operation of a rank's program.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// A collective of TP, EP or DP on `bytes` (the whole buffer; EP's: the mean rank's).
    /// `combine`: EP's all-to-all-v with the router's counts transposed.
    Coll { dim: Dim, kind: Kind, op: Op, bytes: u64, combine: bool },
    /// A pipeline exchange of `bytes` each way it goes.
    Pp { x: Exchange, bytes: u64 },
}

/// `rank`'s program for one step.
pub fn program(model: &Model, shape: &Shape, rank: usize) -> Vec<Action> {
    let plans = plan(model, shape);
    let find = |d: Dim| plans.iter().find(|p| p.dim == d);
    let stage = shape.grid().coord(rank, Dim::Pp);
    let mut out = vec![];
    // TP's and EP's calls in one forward or backward pass of the stage's layers: per layer,
    // the attention's TP calls, then EP's dispatch and combine around the experts, then the
    // MLP's TP calls (backward, the same calls: each gradient takes its call's way back, the
    // combine's gradient as a dispatch and the dispatch's as a combine).
    let tp: Vec<Action> = match find(Dim::Tp) {
        Some(tp) => {
            let bytes = tp.groups[0].bytes;
            let per_layer: Vec<Kind> = if model.sequence_parallel {
                vec![Kind::AllGather, Kind::ReduceScatter, Kind::AllGather, Kind::ReduceScatter]
            } else {
                vec![Kind::AllReduce, Kind::AllReduce]
            };
            per_layer
                .iter()
                .map(|&kind| Action::Coll { dim: Dim::Tp, kind, op: Op::Sum, bytes, combine: false })
                .collect()
        }
        None => vec![],
    };
    let ep: Vec<Action> = match find(Dim::Ep) {
        Some(ep) => {
            let bytes = ep.groups[0].bytes;
            let call = |combine| Action::Coll { dim: Dim::Ep, kind: Kind::AllToAllV, op: Op::Sum, bytes, combine };
            vec![call(false), call(true)]
        }
        None => vec![],
    };
    let layers = model.layers / shape.pp as u64;
    let half = tp.len() / 2;
    let pass: Vec<Action> = (0..layers)
        .flat_map(|_| tp[..half].iter().chain(&ep).chain(&tp[half..]).copied().collect::<Vec<_>>())
        .collect();
    let pp_bytes = find(Dim::Pp).map_or(0, |p| p.groups[0].bytes);
    for slot in slots(stage, shape.pp, model.micro_batches) {
        match slot {
            Slot::Forward | Slot::Backward => out.extend_from_slice(&pass),
            Slot::Exchange(x) => out.push(Action::Pp { x, bytes: pp_bytes }),
        }
    }
    if let Some(dp) = find(Dim::Dp) {
        let op = if model.dp_style == DpStyle::Ddp { Op::Avg } else { Op::Sum };
        for g in &dp.groups {
            for _ in 0..g.calls {
                out.push(Action::Coll { dim: Dim::Dp, kind: g.kind, op, bytes: g.bytes, combine: false });
            }
        }
    }
    out
}

/// Bytes of buffers one rank holds for `shape` (both buffers of TP, EP, DP and PP, with
/// guards; EP's as large as its busiest rank's total, sent or received).
pub fn buffer_need(model: &Model, shape: &Shape) -> u64 {
    plan(model, shape)
        .iter()
        .map(|p| {
            let most = p.groups.iter().map(|g| g.bytes).max().unwrap_or(0);
            let most = match (p.dim, model.moe) {
                (Dim::Ep, Some(m)) => {
                    let imb = m.pattern().imbalance(shape.ep);
                    (most as f64 * imb.sent.max(imb.received)).ceil() as u64 + 16 * shape.ep as u64
                }
                _ => most,
            };
            2 * (most + 4 + GUARD_BYTES as u64)
        })
        .sum()
}

/// Seconds per dimension, indexed like [`DIMS`].
type PerDim = [f64; DIMS.len()];

/// A group's communicator and the backend on it.
struct Group {
    backend: Box<dyn Backend>,
    rank: usize,
    size: usize,
}

struct Runner<'a> {
    world: &'a World,
    shape: Shape,
    grid: Grid,
    wire: DType,
    tp: Option<Group>,
    ep: Option<Group>,
    dp: Option<Group>,
    /// EP's router traffic (the `moe` pattern of the model's experts).
    router: crate::collective::traffic::Pattern,
    /// This rank's pipeline: its place in the group is its stage.
    pp: Option<Group>,
    samples: Vec<f64>,
    /// `-m`: calls per NCCL group, each group one iteration of the backend's (1 elsewhere).
    launch_agg: u32,
    /// Testing only: flip a bit of each output received in the check pass.
    corrupt: bool,
    /// `-T`: armed once per pass (the same sequence on every rank), re-armed per call.
    watchdog: Option<&'a Watchdog>,
    /// The pass being run, for the watchdog's message.
    pass: StepPass,
    alone: Option<Dim>,
    /// The longest step so far on this rank, seconds: what any one part of a step is expected
    /// to take at most (0 before the first: `-T` alone).
    est_s: f64,
    /// Testing only: stop this rank (SIGSTOP) before its first call of this dimension in the
    /// first timed step.
    stop: Option<Dim>,
}

/// The watchdog's task for a part of a step of the layout `shape`.
fn step_task(shape: &Shape, pass: StepPass, alone: Option<Dim>, part: StepPart, rank: usize, call: Call) -> Task {
    let layout = [shape.tp, shape.ep, shape.pp, shape.dp];
    Task { call, phase: Phase::Step(StepTask { layout, pass, alone, part, rank }), calls: 1 }
}

/// The call of a part that is not a collective of the model's (a barrier, an exchange), with
/// `bytes` to show.
fn bytes_call(kind: Kind, bytes: u64) -> Call {
    let layout = Layout { alg_count: bytes as usize, ..Layout::default() };
    Call { kind, dtype: DType::Uint8, op: Op::Sum, root: 0, layout, in_place: false }
}

/// The byte of element `i` of the transfer `x` from `src` (a pattern the receiver can predict).
fn pp_byte(src: usize, dir: Dir, mb: u64, i: usize) -> u8 {
    let d = if dir == Dir::Forward { 1 } else { 2 };
    ((src * 131 + mb as usize * 31 + d * 7 + i) % 251) as u8
}

impl Runner<'_> {
    /// A new pass: armed (a new step of the watchdog's, announced), its barrier first.
    fn begin(&mut self, pass: StepPass, alone: Option<Dim>) {
        (self.pass, self.alone) = (pass, alone);
        if let Some(w) = self.watchdog {
            w.arm(self.task(StepPart::Barrier, bytes_call(Kind::Barrier, 0)), self.est_s);
        }
    }

    fn task(&self, part: StepPart, call: Call) -> Task {
        step_task(&self.shape, self.pass, self.alone, part, self.world.rank, call)
    }

    /// The next part of the pass: re-armed with its own deadline, under the pass's step.
    fn watch(&self, part: StepPart, call: Call) {
        if let Some(w) = self.watchdog {
            w.rearm(self.task(part, call), self.est_s);
        }
    }

    /// Testing only (`--debug-stop-rank`): stop here, as a rank stopped from outside would.
    fn maybe_stop(&mut self, dim: Dim) {
        if self.stop == Some(dim) && self.alone.is_none() && matches!(self.pass, StepPass::Timed { i: 1, .. }) {
            self.stop = None;
            // SAFETY: raise(3) with a signal number; the process stops until SIGCONT or SIGKILL.
            unsafe {
                libc::raise(libc::SIGSTOP);
            }
        }
    }

    fn group(&mut self, dim: Dim) -> &mut Group {
        match dim {
            Dim::Tp => self.tp.as_mut(),
            Dim::Ep => self.ep.as_mut(),
            Dim::Pp => self.pp.as_mut(),
            _ => self.dp.as_mut(),
        }
        .expect("a group for every dimension with calls")
    }

    /// One collective (`combine`: EP's, with the router's counts transposed); its seconds and,
    /// when `check`, the elements wrong on this rank.
    fn coll(&mut self, (dim, kind, op, combine): (Dim, Kind, Op, bool), bytes: u64, check: bool) -> Result<(f64, u64)> {
        let wire = self.wire;
        let elem = wire.size();
        let router = self.router.clone();
        let g = self.group(dim);
        let elems = (bytes as usize).div_ceil(elem);
        let spec = kind.spec();
        let convention = g.backend.convention();
        let layout = match kind {
            Kind::AllToAllV => crate::collective::all_to_all_v_layout(&router, (elems, elem), g.size, g.rank, combine),
            _ => spec.layout(elems, elem, g.size, g.rank, convention),
        };
        let call = Call { kind, dtype: wire, op, root: 0, layout, in_place: false };
        let check_pass = Check::new(&call, g.rank, g.size, convention);
        self.maybe_stop(dim);
        self.watch(StepPart::Coll(dim), call);
        let g = self.group(dim);
        if check {
            check_pass.prepare(g.backend.as_mut(), true)?;
        }
        let mut samples = std::mem::take(&mut self.samples);
        let g = self.group(dim);
        g.backend.run(&call, 1, 1, &mut samples)?;
        // -m: one iteration is that many calls in one NCCL group; the step makes one.
        let t = samples[0] / f64::from(self.launch_agg);
        self.samples = samples;
        let mut wrong = 0;
        if check {
            let corrupt = self.corrupt;
            let g = self.group(dim);
            if corrupt {
                check_pass.corrupt(g.backend.as_mut())?;
            }
            let v = check_pass.verify(g.backend.as_mut())?;
            wrong = v.wrong + v.out_of_bounds;
        }
        Ok((t, wrong))
    }

    /// One pipeline exchange on the pipeline's communicator; its seconds and, when `check`,
    /// the bytes wrong on this rank (the guard after them included).
    fn exchange(&mut self, x: Exchange, bytes: u64, check: bool) -> Result<(f64, u64)> {
        let me = self.grid.coords(self.world.rank);
        let pp = Dim::Pp as usize;
        // The neighbour's stage (its rank in the pipeline's communicator) and world rank.
        let peer = |dir: Dir, sending: bool| {
            let next = matches!((dir, sending), (Dir::Forward, true) | (Dir::Backward, false));
            let mut c = me;
            c[pp] = if next { c[pp] + 1 } else { c[pp] - 1 };
            (c[pp], self.grid.rank_at(&c))
        };
        let n = bytes as usize;
        let to = x.send.map(|s| peer(s.dir, true));
        let from = x.recv.map(|r| peer(r.dir, false));
        self.maybe_stop(Dim::Pp);
        self.watch(StepPart::Pp { to: to.map(|p| p.1), from: from.map(|p| p.1) }, bytes_call(Kind::SendRecv, bytes));
        let corrupt = self.corrupt;
        let me = self.world.rank;
        let g = self.pp.as_mut().expect("a pipeline group where the step has PP exchanges");
        if check {
            if let Some(s) = x.send {
                g.backend.write(Buf::Send, n, &mut |b| {
                    b.iter_mut().enumerate().for_each(|(i, v)| *v = pp_byte(me, s.dir, s.mb, i));
                })?;
            }
            g.backend.write(Buf::Recv, n + GUARD_BYTES, &mut |b| b.fill(SENTINEL))?;
        }
        let secs = g.backend.exchange(to.map(|p| p.0), from.map(|p| p.0), n)?;
        let mut wrong = 0;
        if let (true, Some(r), Some((_, src))) = (check, x.recv, from) {
            if corrupt && n > 0 {
                g.backend.write(Buf::Recv, 1, &mut |b| b[0] ^= 0x40)?;
            }
            g.backend.read(Buf::Recv, n + GUARD_BYTES, &mut |b| {
                let data = b[..n].iter().enumerate().filter(|(i, v)| **v != pp_byte(src, r.dir, r.mb, *i)).count();
                wrong = (data + b[n..].iter().filter(|v| **v != SENTINEL).count()) as u64;
            })?;
        }
        Ok((secs, wrong))
    }

    /// One step of `prog` (the pass `pass`, watched), running only the dimensions in `only`
    /// (`alone`: one of several): seconds per dimension ([`DIMS`]), the step's wall time on
    /// this rank, and the elements wrong when `check`.
    fn step(
        &mut self,
        prog: &[Action],
        only: &[Dim],
        (pass, alone): (StepPass, Option<Dim>),
        check: bool,
    ) -> Result<(PerDim, f64, u64)> {
        let mut per: PerDim = [0.0f64; DIMS.len()];
        let mut wrong = 0;
        let idx = |d: Dim| DIMS.iter().position(|x| *x == d).unwrap_or(0);
        self.begin(pass, alone);
        self.world.barrier();
        let t0 = mpi::time();
        for op in prog {
            match *op {
                Action::Coll { dim, kind, op, bytes, combine } if only.contains(&dim) => {
                    let (t, w) = self.coll((dim, kind, op, combine), bytes, check)?;
                    per[idx(dim)] += t;
                    wrong += w;
                }
                Action::Pp { x, bytes } if only.contains(&Dim::Pp) => {
                    let (t, w) = self.exchange(x, bytes, check)?;
                    per[idx(Dim::Pp)] += t;
                    wrong += w;
                }
                _ => {}
            }
        }
        let wall = mpi::time() - t0;
        self.watch(StepPart::Results, bytes_call(Kind::Barrier, 0));
        self.est_s = self.est_s.max(wall);
        Ok((per, wall, wrong))
    }

    /// `warmup` then `iters` steps: mean seconds per step per dimension and of the wall time,
    /// each the slowest rank's. `alone`: `only` is one dimension of several.
    fn timed(
        &mut self,
        prog: &[Action],
        only: &[Dim],
        alone: Option<Dim>,
        warmup: u64,
        iters: u64,
    ) -> Result<(PerDim, f64)> {
        for _ in 0..warmup {
            self.step(prog, only, (StepPass::WarmUp, alone), false)?;
        }
        let (mut per, mut wall): (PerDim, f64) = ([0.0f64; DIMS.len()], 0.0);
        for i in 1..=iters {
            let (p, w, _) = self.step(prog, only, (StepPass::Timed { i, of: iters }, alone), false)?;
            per.iter_mut().zip(p).for_each(|(a, b)| *a += b);
            wall += w;
        }
        let n = iters as f64;
        let per = per.map(|x| self.world.max_f64(x / n));
        Ok((per, self.world.max_f64(wall / n)))
    }
}

/// The backend on `rank`'s group in `dim` (`setup::make_group_backend`: `MPI_Comm_split`, or
/// `ncclCommSplit` of `parent`'s communicator / one unique id per group; collective over the
/// world), its buffers allocated for the largest call of `plan` (PP: one transfer each way, and
/// a guard).
fn make_group(
    world: &World,
    (opts, parent): (&Options, &dyn Backend),
    grid: &Grid,
    (dim, plan): (Dim, &DimPlan),
    (wire, router): (DType, &crate::collective::traffic::Pattern),
) -> Result<Group> {
    let all = grid.groups_of(dim);
    let members = &all.iter().find(|g| g.index_of(world.rank).is_some()).expect("every rank is in a group").ranks;
    // Ranks ascending in a group (tp fastest, then dp, then pp), so the place in the group's
    // communicator (keyed by world rank) is the place in the list: in a pipeline, the stage.
    let key = members.iter().position(|r| *r == world.rank).expect("the rank is in its group");
    let mut backend = world.agree(crate::setup::make_group_backend(world, opts, &all, Some(parent)))?;
    let elem = wire.size();
    let (mut send, mut recv) = (0usize, 0usize);
    for g in &plan.groups {
        if dim == Dim::Pp {
            send = send.max(g.bytes as usize);
            recv = recv.max(g.bytes as usize);
            continue;
        }
        let elems = (g.bytes as usize).div_ceil(elem);
        let layouts = if g.kind == Kind::AllToAllV {
            let v = |t| crate::collective::all_to_all_v_layout(router, (elems, elem), members.len(), key, t);
            vec![v(false), v(true)]
        } else {
            vec![g.kind.spec().layout(elems, elem, members.len(), key, backend.convention())]
        };
        for l in layouts {
            send = send.max(l.send_count * elem);
            recv = recv.max(l.recv_count * elem);
        }
    }
    world.agree(backend.allocate(send, recv + GUARD_BYTES))?;
    Ok(Group { backend, rank: key, size: members.len() })
}

/// Effective bus bandwidth of `plan`'s calls in `secs`: Σ calls × bytes × bus factor / time.
fn busbw(plan: &DimPlan, secs: f64) -> f64 {
    let moved: f64 = plan
        .groups
        .iter()
        .map(|g: &CallGroup| (g.calls * g.bytes) as f64 * g.kind.spec().bus_factor(plan.group_size))
        .sum();
    if secs > 0.0 {
        moved / secs / 1e9
    } else {
        0.0
    }
}

/// Run `shape`'s step on every rank: whole, each dimension alone, then checked; every part of
/// it under `watchdog` (`-T`), from the set-up of its groups to the exchange of its results.
/// The groups' backends come from `parent` (`setup::make_parent_backend`, kept for the whole
/// run) and are dropped before it.
pub fn run_layout(
    world: &World,
    opts: &StepOptions,
    parent: &dyn Backend,
    shape: &Shape,
    watchdog: Option<&Watchdog>,
) -> Result<LayoutResult> {
    if let Some(w) = watchdog {
        w.arm(
            step_task(shape, StepPass::SetUp, None, StepPart::Barrier, world.rank, bytes_call(Kind::Barrier, 0)),
            0.0,
        );
    }
    let model = &opts.model;
    let plans = plan(model, shape);
    let wire = wire_dtype(opts.dtype, opts.backend, opts.check);
    let bopts = backend_options(opts);
    let find = |d: Dim| plans.iter().find(|p| p.dim == d);
    let grid = shape.grid();
    let router = model.moe.map(|m| m.pattern()).unwrap_or_default();
    let group =
        |d: Dim| find(d).map(|p| make_group(world, (&bopts, parent), &grid, (d, p), (wire, &router))).transpose();
    let (tp, ep, pp, dp) = (group(Dim::Tp)?, group(Dim::Ep)?, group(Dim::Pp)?, group(Dim::Dp)?);
    let mut r = Runner {
        world,
        shape: *shape,
        grid,
        wire,
        tp,
        ep,
        dp,
        router,
        pp,
        samples: vec![],
        launch_agg: opts.launch.agg_iters.max(1),
        corrupt: opts.debug_corrupt_rank == Some(world.rank),
        watchdog,
        pass: StepPass::SetUp,
        alone: None,
        est_s: 0.0,
        stop: opts.debug_stop_rank.filter(|(rank, _)| *rank == world.rank).map(|(_, d)| d),
    };
    let prog = program(model, shape, world.rank);
    let dims: Vec<Dim> = plans.iter().map(|p| p.dim).collect();
    let (per, step_s) = r.timed(&prog, &dims, None, opts.warmup, opts.iters)?;
    let mut results = vec![];
    for p in &plans {
        let i = DIMS.iter().position(|x| *x == p.dim).unwrap_or(0);
        // Alone: the same calls, the other dimensions idle (no warm-up beyond the first run's).
        let only_one = (dims.len() > 1).then_some(p.dim);
        let (alone, _) = r.timed(&prog, &[p.dim], only_one, opts.warmup.min(1), opts.iters)?;
        results.push(DimResult {
            dim: p.dim,
            group_size: p.group_size,
            group_count: shape.world() / p.group_size,
            plan: p.clone(),
            calls: p.calls(),
            bytes: p.bytes(),
            time_s: per[i],
            alone_s: alone[i],
            busbw_gbps: busbw(p, per[i]),
            alone_busbw_gbps: busbw(p, alone[i]),
        });
    }
    let wrong = if opts.check {
        let (_, _, w) = r.step(&prog, &dims, (StepPass::Check, None), true)?;
        Some(world.sum_u64(w))
    } else {
        None
    };
    world.barrier();
    Ok(LayoutResult { shape: *shape, dims: results, step_s, wrong })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::model::DpStyle;

    use crate::step::model::small_for_tests as small;

    /// What travels: float for bf16/fp16 on mpi and on checked nccl; the real type on nccl with
    /// the check off. DDP's avg over a dp that is not a power of two is refused only on checked
    /// nccl of a float type.
    #[test]
    fn wire_types_and_the_nccl_avg_rule() {
        let (mpi, nccl) = (BackendKind::Mpi, BackendKind::Nccl);
        for d in [DType::Bfloat16, DType::Float16] {
            assert_eq!(wire_dtype(d, mpi, true), DType::Float32);
            assert_eq!(wire_dtype(d, mpi, false), DType::Float32);
            assert_eq!(wire_dtype(d, nccl, true), DType::Float32);
            assert_eq!(wire_dtype(d, nccl, false), d);
        }
        assert_eq!(wire_dtype(DType::Float32, nccl, false), DType::Float32);
        let opts = |backend, check, dp_style| StepOptions {
            model: Model { dp_style, ..small() },
            dtype: DType::Bfloat16,
            layout: crate::step::LayoutChoice::All,
            tp_across_hosts: false,
            backend,
            launch: crate::options::LaunchModes::default(),
            iters: 1,
            warmup: 0,
            check,
            csv: crate::options::CsvTarget::Off,
            json: None,
            files: crate::options::Policy::default(),
            timeout: crate::options::Timeout::Auto,
            debug_corrupt_rank: None,
            debug_stop_rank: None,
        };
        let dp3 = Shape::dense(2, 1, 3);
        let why = nccl_unfit(&opts(nccl, true, DpStyle::Ddp), &dp3).unwrap();
        assert!(why.starts_with("ddp's average of float gradients over dp=3 ranks"), "{why}");
        assert!(why.ends_with("expected a power-of-two dp, --dp zero, or -c 0"), "{why}");
        assert_eq!(nccl_unfit(&opts(nccl, true, DpStyle::Ddp), &Shape::dense(3, 1, 4)), None);
        assert_eq!(nccl_unfit(&opts(nccl, false, DpStyle::Ddp), &dp3), None);
        assert_eq!(nccl_unfit(&opts(nccl, true, DpStyle::Zero), &dp3), None);
        assert_eq!(nccl_unfit(&opts(mpi, true, DpStyle::Ddp), &dp3), None);
        let b = backend_options(&opts(nccl, false, DpStyle::Ddp));
        assert_eq!((b.backend, b.check, b.dtypes, b.ops), (nccl, false, vec![DType::Bfloat16], vec![Op::Sum]));
    }

    /// Every rank's program makes exactly the model's calls: TP and DP per rank, PP per stage
    /// boundary (each transfer sent once and received once).
    #[test]
    fn programs_make_the_models_calls() {
        for sp in [false, true] {
            for style in [DpStyle::Ddp, DpStyle::Zero] {
                let m = Model { sequence_parallel: sp, dp_style: style, ..small() };
                let m = Model {
                    moe: Some(crate::step::model::Experts { experts: 4, topk: 2, skew: 1.0, capacity: None }),
                    ..m
                };
                for shape in [
                    Shape::dense(2, 1, 2),
                    Shape::dense(1, 2, 2),
                    Shape::dense(2, 2, 1),
                    Shape { tp: 1, pp: 2, dp: 1, ep: 2 },
                    Shape { tp: 2, pp: 1, dp: 1, ep: 2 },
                ] {
                    let plans = plan(&m, &shape);
                    let mut sends = 0u64;
                    for rank in 0..shape.world() {
                        let prog = program(&m, &shape, rank);
                        for p in &plans {
                            let mine: Vec<(Kind, u64)> = prog
                                .iter()
                                .filter_map(|o| match *o {
                                    Action::Coll { dim, kind, bytes, .. } if dim == p.dim => Some((kind, bytes)),
                                    _ => None,
                                })
                                .collect();
                            if p.dim != Dim::Pp {
                                assert_eq!(mine.len() as u64, p.calls(), "{shape} {:?}", p.dim);
                                assert_eq!(mine.iter().map(|x| x.1).sum::<u64>(), p.bytes());
                            }
                        }
                        sends += prog.iter().filter(|o| matches!(o, Action::Pp { x, .. } if x.send.is_some())).count()
                            as u64;
                    }
                    // PP: 2·M transfers per stage boundary, (pp − 1) boundaries per pipeline.
                    let pipelines = (shape.tp * shape.ep * shape.dp) as u64;
                    let want = plans.iter().find(|p| p.dim == Dim::Pp).map_or(0, |p| p.calls() * (shape.pp as u64 - 1));
                    assert_eq!(sends, want * pipelines, "{shape}");
                }
            }
        }
    }
}
