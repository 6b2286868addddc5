//! The generic driver: for every collective × type × op × size and both placements, warm up,
//! time a batch of back-to-back calls, combine the ranks' times, then check the result in a
//! separate pass. Produces [`Point`]s; prints nothing.

pub mod ceiling;
pub mod check;
pub mod timing;
pub mod trend;

pub use timing::{iterations, MIN_SAMPLE_S};

use crate::backend::{Backend, Call};
use crate::collective::{Collective, Convention, Kind, Layout};
use crate::dtype::{DType, Op};
use crate::error::Result;
use crate::options::{Aggregation, Malloc, Options, Order};
use crate::record::{Measurement, Placement, Point, Runs, Totals};
use crate::stats::{mean_of, Summary};
use crate::verify::{DataErrors, GUARD_BYTES};
use crate::watchdog::{Phase, Task, Watchdog};
use crate::world::{aggregate, World};
use check::Check;
use timing::Agreed;

/// The collective × type × op combinations of a run, in the order they run: the options' one
/// plan ([`Options::plan`]), which also gives the progress bar its total.
pub fn plan(opts: &Options) -> Vec<(Kind, DType, Option<Op>, usize)> {
    opts.plan()
}

/// Sizes a collective runs at (barrier: one, of zero bytes).
pub fn sizes_for(spec: &dyn Collective, opts: &Options) -> Vec<u64> {
    if spec.sized() {
        opts.sizes()
    } else {
        vec![0]
    }
}

/// One point of a run's plan: collective, type, op, all-to-all-v's pattern (an index into
/// `Options::patterns`; 0 for the others) and size.
pub type PlannedPoint = (Kind, DType, Option<Op>, usize, u64);

/// Every point of a run in the order it is measured (`--order`): each combination's sizes in
/// turn, or round by round, every combination's i-th size in round i.
pub fn points(opts: &Options) -> Vec<PlannedPoint> {
    let series: Vec<_> = plan(opts)
        .into_iter()
        .map(|(kind, dtype, op, pattern)| (kind, dtype, op, pattern, sizes_for(kind.spec(), opts)))
        .collect();
    match opts.order {
        Order::Collective => {
            series.into_iter().flat_map(|(k, d, o, p, sizes)| sizes.into_iter().map(move |s| (k, d, o, p, s))).collect()
        }
        Order::Size => {
            let rounds = series.iter().map(|s| s.4.len()).max().unwrap_or(0);
            (0..rounds)
                .flat_map(|i| {
                    series.iter().filter_map(move |(k, d, o, p, sizes)| sizes.get(i).map(|s| (*k, *d, *o, *p, *s)))
                })
                .collect()
        }
    }
}

/// Bytes of the send and receive buffers one rank needs for the whole run (the receive buffer
/// includes the guard zone of the out-of-bounds check).
pub fn buffer_bytes(opts: &Options, nranks: usize, rank: usize, conv: Convention) -> (usize, usize) {
    let (mut send, mut recv) = (0usize, 0usize);
    for (kind, dtype, _, pattern) in plan(opts) {
        let spec = kind.spec();
        let elem = dtype.size();
        // Layouts grow with size, so the largest size decides.
        if let Some(&size) = sizes_for(spec, opts).last() {
            let l = crate::collective::layout_of(
                kind,
                opts.pattern(pattern),
                (size / elem as u64) as usize,
                elem,
                nranks,
                rank,
                conv,
            );
            send = send.max(l.send_count * elem);
            recv = recv.max(l.recv_count.max(l.in_place_extent()) * elem);
        }
    }
    // The ceiling pass's sendrecv at the run's largest size (at most its cap): every run of
    // those sizes measures its ceiling at one transfer size, whichever collectives it runs (an
    // all-gather's send buffer alone is 1/n of its size, and sendrecv at half the size reads
    // another rate: 24-27 GB/s against 19 here, which failed a gate learned from a full sweep).
    let sized = opts.collectives.iter().any(|k| k.spec().sized());
    if let (true, true, Some(&largest)) = (opts.ceiling, sized, opts.sizes().iter().max()) {
        let bytes = largest.min(crate::record::Ceiling::MAX_BYTES) as usize;
        let l = Kind::SendRecv.spec().layout(bytes, 1, nranks, rank, conv);
        send = send.max(l.send_count);
        recv = recv.max(l.recv_count);
    }
    (send, recv + GUARD_BYTES)
}

/// What the sweep needs from the other ranks: who this rank is, and the reductions that combine
/// timings, estimates, check counts and outcomes across ranks (every rank calls them in the same
/// order). [`World`] does it with MPI; the unit tests run one rank alone, without MPI
/// (`sim_tests::Alone`).
pub trait Ranks {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// [`World::agree`]: the lowest failing rank's error on every rank.
    fn agree(&self, local: Result<()>) -> Result<()>;
    fn max_f64(&self, x: f64) -> f64;
    /// Every rank's values (as many on every rank), by rank, one after the other.
    fn all_gather_f64(&self, x: &[f64]) -> Vec<f64>;
    /// [`World::combine_samples`]: valid on rank 0 only.
    fn combine_samples(&self, agg: Aggregation, samples: &[f64]) -> Vec<f64>;
}

impl Ranks for World {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn agree(&self, local: Result<()>) -> Result<()> {
        World::agree(self, local)
    }
    fn max_f64(&self, x: f64) -> f64 {
        World::max_f64(self, x)
    }
    fn all_gather_f64(&self, x: &[f64]) -> Vec<f64> {
        World::all_gather_f64(self, x)
    }
    fn combine_samples(&self, agg: Aggregation, samples: &[f64]) -> Vec<f64> {
        World::combine_samples(self, agg, samples)
    }
}

/// This rank's place in the groups of `--groups`: which group, how many there are, its rank in
/// the group and the group's size (the backend runs on the group's communicator). The world is
/// one group of every rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub group: usize,
    pub groups: usize,
    pub rank: usize,
    pub size: usize,
    /// `--one-group-at-a-time`: each point is measured group by group, the others waiting.
    pub one_at_a_time: bool,
}

impl Member {
    /// The whole world as one group.
    pub fn world(ranks: &dyn Ranks) -> Member {
        Member { group: 0, groups: 1, rank: ranks.rank(), size: ranks.size(), one_at_a_time: false }
    }
}

/// What a measurement runs by where it does not follow the options (see `Sweep::limits`).
#[derive(Clone, Copy, Debug)]
struct Limits {
    warmup: Option<u64>,
    iters: Option<u64>,
    budget_s: f64,
    check: bool,
}

/// One turn of one placement on this rank: what its batches gave.
struct Turn {
    runs: Runs,
    samples: Vec<f64>,
    verdict: DataErrors,
    /// Minor page faults of this process during the timed batches (0 on an idle rank).
    faults: u64,
    /// The host's seconds per call launching the timed calls (`-C`; 0 on an idle rank or where
    /// the backend does not tell).
    launch_s: f64,
}

pub struct Sweep<'a> {
    pub world: &'a dyn Ranks,
    pub backend: &'a mut dyn Backend,
    pub opts: &'a Options,
    /// This rank's group (`--groups`); the world by default.
    pub member: Member,
    samples: Vec<f64>,
    /// `-T`: armed around every batch of calls and exchange of results, disarmed between points;
    /// `None` with `-T 0`.
    watchdog: Option<Watchdog>,
    /// The warm-up and iteration counts, the budget and the check of what is measured now,
    /// where they are not the user's `-w`, `-n`, `--budget` and `-c`: the ceiling pass's own
    /// ([`ceiling`]).
    limits: Option<Limits>,
    /// Whether each point is also measured in place (the sweep's columns); doctor reads out of
    /// place only ([`Sweep::out_of_place_only`]).
    in_place: bool,
    /// Each measurement's median as run: after the last point, those above the trend of their
    /// series are named ([`Sweep::above_trend`]).
    seen: Vec<crate::record::Seen>,
}

impl<'a> Sweep<'a> {
    pub fn new(world: &'a World, backend: &'a mut dyn Backend, opts: &'a Options) -> Self {
        let watchdog = Watchdog::start(world, opts.timeout);
        Sweep {
            world,
            backend,
            opts,
            member: Member::world(world),
            samples: vec![],
            watchdog,
            limits: None,
            in_place: true,
            seen: vec![],
        }
    }

    /// The sweep run in groups: the backend runs on this rank's group's communicator, sizes,
    /// bus factors and checks follow the group; times are combined over every rank.
    pub fn in_group(mut self, member: Member) -> Self {
        self.member = member;
        self
    }

    /// Each point out of place only, its in-place measurement left empty
    /// ([`Measurement::skipped`]): for doctor, which reads no other (half the calls).
    pub fn out_of_place_only(mut self) -> Self {
        self.in_place = false;
        self
    }

    /// A sweep over `ranks` without the watchdog (which needs MPI's world): for unit tests.
    #[cfg(test)]
    pub(crate) fn without_watchdog(ranks: &'a dyn Ranks, backend: &'a mut dyn Backend, opts: &'a Options) -> Self {
        Sweep {
            world: ranks,
            backend,
            opts,
            member: Member::world(ranks),
            samples: vec![],
            watchdog: None,
            limits: None,
            in_place: true,
            seen: vec![],
        }
    }

    /// One batch of `iters` calls through the backend, watched ([`timing::watched_batch`]).
    fn batch(&mut self, call: &Call, phase: Phase, iters: u64, batch: u64, est_s: f64) -> Result<()> {
        timing::watched_batch(
            self.watchdog.as_ref(),
            self.backend,
            call,
            phase,
            (iters, batch),
            est_s,
            &mut self.samples,
        )
    }

    /// Run the whole sweep, handing each point to `sink` (called on every rank; only rank 0's
    /// points carry sample summaries). A sink error on any rank stops every rank.
    pub fn run(&mut self, sink: &mut dyn FnMut(&Point) -> Result<()>) -> Result<Totals> {
        let mut totals = Totals::default();
        let conv = self.backend.convention();
        let (n, rank) = (self.member.size, self.member.rank);
        self.seen.clear();
        for (ordinal, (kind, dtype, op, pattern, size)) in points(self.opts).into_iter().enumerate() {
            let spec = kind.spec();
            let elems = (size / dtype.size() as u64) as usize;
            let pattern = self.opts.pattern(pattern);
            let layout = crate::collective::layout_of(kind, pattern, elems, dtype.size(), n, rank, conv);
            let call =
                |in_place| Call { kind, dtype, op: op.unwrap_or(Op::Sum), root: self.opts.root, layout, in_place };
            let out_of_place = self.measure(&call(false), Placement::OutOfPlace)?;
            // All-to-all-v is measured out of place only (`Collective::has_in_place`).
            let in_place = if self.in_place && spec.has_in_place() {
                self.measure(&call(true), Placement::InPlace)?
            } else {
                Measurement::skipped(Placement::InPlace)
            };
            // Named after the timed calls, never inside them.
            let (algorithm, source) = self.backend.algorithm(&call(false));
            let point = Point {
                collective: kind,
                dtype,
                op,
                root: spec.rooted().then_some(self.opts.root),
                size_bytes: layout
                    .peers
                    .map_or_else(|| layout_size(spec, elems, n, conv, dtype), |p| (p.nominal * dtype.size()) as u64),
                count: layout.count as u64,
                bus_factor: spec.bus_factor(n),
                out_of_place,
                in_place,
                algorithm,
                algorithm_source: source.to_string(),
                traffic: layout.peers.map(|p| crate::record::Traffic::of(pattern, p)),
            };
            totals.add(&point);
            self.seen.extend(crate::record::Seen::of(ordinal, &point));
            self.world.agree(sink(&point))?;
            if let Some(w) = &self.watchdog {
                w.disarm();
            }
        }
        Ok(totals)
    }

    /// The measurements of the last [`Sweep::run`] slower than a much larger size of their series
    /// ([`trend::above_trend`]; rank 0's, empty elsewhere), suspecting `crowded` where a host
    /// has more ranks than cores (`crate::info::facts::crowded`).
    pub fn above_trend(&self, crowded: Option<&crate::record::Crowded>) -> Vec<crate::record::Flag> {
        trend::above_trend(&self.seen, crowded)
    }

    /// Warm up, choose the iteration count, time, combine across ranks, check. With
    /// `--one-group-at-a-time` each group takes its turn while the others wait; every rank
    /// takes part in every exchange of every turn (an idle rank gives nothing), so the counts
    /// stay agreed.
    fn measure(&mut self, call: &Call, placement: Placement) -> Result<Measurement> {
        let opts = self.opts;
        let world = self.world;
        let turns = if self.member.one_at_a_time { self.member.groups } else { 1 };
        let mut mine = None;
        for t in 0..turns {
            let active = turns == 1 || t == self.member.group;
            let turn = self.turn(call, active)?;
            if active {
                mine = Some(turn);
            }
        }
        let Some(Turn { mut runs, mut samples, verdict, faults, launch_s }) = mine else {
            unreachable!("every rank is in one group, whose turn comes")
        };
        // -m N: the backend timed iterations of N calls in one group; the time is per call.
        let agg = f64::from(opts.launch.agg_iters.max(1));
        samples.iter_mut().for_each(|s| *s /= agg);
        runs.first_call_us = runs.first_call_us.map(|t| t / agg);
        self.samples = samples;
        // One exchange for all that a point needs of every rank (each reduction is a small
        // collective of its own, and at 128 ranks they are what the run spends beside the
        // timed calls): its mean time (for the time, the slow ranks, `--per-rank`), its page
        // faults per call (the most count: the rank a collective waits for), and its wrong and
        // out-of-bounds elements (summed).
        let faults_per_call = faults as f64 / runs.iters.max(1) as f64;
        let mine =
            [mean_of(&self.samples), faults_per_call, verdict.wrong as f64, verdict.out_of_bounds as f64, launch_s];
        let all = world.all_gather_f64(&mine);
        let each = |i: usize| all.chunks(mine.len()).map(move |c| c[i]);
        let per_rank_s: Vec<f64> = each(0).collect();
        let time_s = aggregate(opts.aggregation, &per_rank_s);
        // Turns may differ in their sample counts: combine the common part. One turn: every
        // rank's count comes from agreed numbers (the batches planned, the agreed stop), so it
        // is the same everywhere.
        let common = if turns == 1 {
            self.samples.len()
        } else {
            (-world.max_f64(-(self.samples.len() as f64))).max(0.0) as usize
        };
        let combined = world.combine_samples(opts.aggregation, &self.samples[..common]);
        let bytes = (call.layout.alg_count * call.dtype.size()) as f64;
        let bus_factor = call.kind.spec().bus_factor(self.member.size);
        let root = (world.rank() == 0).then_some(&combined[..]);
        let mut m = Measurement::from_times(placement, runs, &per_rank_s, time_s, root, bytes, bus_factor);
        let faults = each(1).fold(0.0, f64::max);
        let warn = world.rank() == 0 && opts.malloc == Malloc::Default;
        m.set_faults(faults, if warn { crate::memory::fault_cost_us() } else { None }, warn);
        if opts.launch.cpu_time {
            m.cpu_time_us = Some(aggregate(opts.aggregation, &each(4).collect::<Vec<_>>()) * 1e6);
        }
        if self.limits.map_or(opts.check, |l| l.check) && self.backend.unchecked(call).is_none() {
            // Counts below 2^53 are exact as doubles.
            let sum = |i| each(i).map(|x| x as u64).sum::<u64>();
            (m.wrong, m.out_of_bounds) = (Some(sum(2)), Some(sum(3)));
        }
        Ok(m)
    }

    /// One batch on an active rank; on an idle one (another group's turn) no call and no
    /// samples, but the watchdog armed as for the batch it waits for (the next exchange).
    fn turn_batch(
        &mut self,
        active: bool,
        call: &Call,
        phase: Phase,
        iters: u64,
        batch: u64,
        est_s: f64,
    ) -> Result<()> {
        if active {
            return self.batch(call, phase, iters, batch, est_s);
        }
        // Waiting for the group whose turn it is: watched as long as its batch may take.
        if let Some(w) = &self.watchdog {
            w.arm(Task { call: *call, phase, calls: iters }, iters as f64 * est_s);
        }
        self.samples.clear();
        Ok(())
    }

    /// Warm-up, timed batches and the check of one turn. Estimates are maxima over every rank
    /// (an idle rank gives 0), so every rank derives the same counts.
    fn turn(&mut self, call: &Call, active: bool) -> Result<Turn> {
        let opts = self.opts;
        let world = self.world;
        let Limits { warmup: fixed_warmup, iters: fixed_iters, budget_s, check } = self.limits.unwrap_or(Limits {
            warmup: opts.warmup,
            iters: opts.iters,
            budget_s: opts.budget_s,
            check: opts.check,
        });
        // -G N: a sample's time is per iteration, and each iteration of a batch runs N times (its
        // graph is launched N times), so the budget and the watchdog count N per iteration.
        let launches = f64::from(opts.launch.cuda_graph.max(1));
        let warm = timing::warm_up(fixed_warmup, budget_s, true, &mut |n, est, stat| {
            self.turn_batch(active, call, Phase::WarmUp, n, 1, est)?;
            Ok(world.max_f64(match stat {
                Agreed::First => self.samples.first().copied().unwrap_or(0.0),
                Agreed::Mean => mean_of(&self.samples),
            }) * launches)
        })?;
        let (est, warmup_iters) = (warm.est_s, warm.iters);
        let first_call_us = warm.first_call_us.map(|t| t / launches);
        let (planned, batch) = iterations(fixed_iters, budget_s, est);
        // Adaptive: with the count from the budget, time it in quarters and stop once every
        // rank's median is known tightly enough (the decision is agreed, so all ranks stop
        // together).
        let chunks = if fixed_iters.is_none() && opts.ci_target > 0.0 && planned / batch >= 24 { 4 } else { 1 };
        let per_chunk = (planned / batch).div_ceil(chunks) * batch;
        let mut timed: Vec<f64> = Vec::with_capacity((planned / batch) as usize);
        let mut iters = 0u64;
        let faults_before = crate::memory::minor_faults();
        let mut launch_s = 0.0;
        while iters < planned {
            let n = per_chunk.min(planned - iters);
            self.turn_batch(active, call, Phase::Timed, n, batch, est)?;
            timed.extend_from_slice(&self.samples);
            if active {
                launch_s += self.backend.launch_seconds().unwrap_or(0.0) * n as f64;
            }
            iters += n;
            let ci = if active { relative_ci95(&timed) } else { 0.0 };
            if chunks > 1 && iters < planned && world.max_f64(ci) <= opts.ci_target {
                break;
            }
        }
        let faults = if active { crate::memory::minor_faults().saturating_sub(faults_before) } else { 0 };
        let checked = check && active && self.backend.unchecked(call).is_none();
        let verdict = if checked { self.check(call)? } else { DataErrors::default() };
        let launch_s = launch_s / iters.max(1) as f64;
        Ok(Turn { runs: Runs { warmup_iters, iters, batch, first_call_us }, samples: timed, verdict, faults, launch_s })
    }

    /// The check pass ([`check`]): known input, sentinel-filled output, one call, compare.
    fn check(&mut self, call: &Call) -> Result<DataErrors> {
        let check = Check::new(call, self.member.rank, self.member.size, self.backend.convention());
        check.prepare(&mut *self.backend, true)?;
        self.batch(call, Phase::Check, 1, 1, 0.0)?;
        if self.opts.debug_corrupt_rank == Some(self.world.rank()) {
            check.corrupt(&mut *self.backend)?;
        }
        check.verify(&mut *self.backend)
    }
}

fn layout_size(spec: &dyn Collective, elems: usize, n: usize, conv: Convention, dtype: DType) -> u64 {
    // The size column is the same on every rank: take rank 0's layout.
    let l: Layout = spec.layout(elems, dtype.size(), n, 0, conv);
    l.size_bytes(dtype.size()) as u64
}

/// Width of the 95% interval of the median relative to the median (∞ when unknown).
fn relative_ci95(samples: &[f64]) -> f64 {
    let s = Summary::of_seconds(samples);
    let rel = (s.ci95_hi_us - s.ci95_lo_us) / s.median_us;
    if rel.is_finite() {
        rel
    } else {
        f64::INFINITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::CsvTarget;

    fn opts(colls: &[Kind], dtypes: &[DType], ops: &[Op]) -> Options {
        Options {
            collectives: colls.to_vec(),
            max_bytes: 1 << 20,
            dtypes: dtypes.to_vec(),
            ops: ops.to_vec(),
            csv: CsvTarget::Off,
            ..Options::default()
        }
    }

    #[test]
    fn plan_expands_ops_only_for_reductions_and_barrier_once() {
        let o = opts(
            &[Kind::AllReduce, Kind::AllGather, Kind::Barrier],
            &[DType::Int32, DType::Float32],
            &[Op::Sum, Op::Max],
        );
        let p = plan(&o);
        assert_eq!(p.len(), 4 + 2 + 1);
        assert_eq!(p[6], (Kind::Barrier, DType::Int32, None, 0));
        assert_eq!(sizes_for(Kind::Barrier.spec(), &o), vec![0]);
    }

    #[test]
    fn all_to_all_v_has_a_series_per_pattern() {
        let mut o = opts(&[Kind::AllReduce, Kind::AllToAllV], &[DType::Float32], &[Op::Sum]);
        o.patterns = crate::collective::traffic::Pattern::parse_list("moe:experts=8,topk=2,skew=0,1,1.5").unwrap();
        let p = plan(&o);
        assert_eq!(p.iter().map(|s| s.3).collect::<Vec<_>>(), [0, 0, 1, 2]);
        assert_eq!(o.point_count(u64::MAX), 4 * o.sizes().len() as u64);
        // Buffers hold the most skewed pattern's busiest rank.
        let one = Options { patterns: o.patterns[..1].to_vec(), ..o.clone() };
        assert!(buffer_bytes(&o, 4, 0, Convention::Mpi).1 > buffer_bytes(&one, 4, 0, Convention::Mpi).1);
    }

    #[test]
    fn buffers_hold_the_largest_layout_and_the_guard() {
        let o = opts(&[Kind::AllReduce], &[DType::Float32], &[Op::Sum]);
        assert_eq!(buffer_bytes(&o, 2, 0, Convention::Mpi), (1 << 20, (1 << 20) + GUARD_BYTES));
        // all-gather alone: each rank sends a quarter of the buffer on 4 ranks; the ceiling pass
        // sends the largest size whole (its transfer is the run's largest size, whatever the
        // collectives), so with the ceiling the send buffer holds it.
        let o = Options { ceiling: false, ..opts(&[Kind::AllGather], &[DType::Float32], &[Op::Sum]) };
        assert_eq!(buffer_bytes(&o, 4, 3, Convention::Mpi), (1 << 18, (1 << 20) + GUARD_BYTES));
        let o = Options { ceiling: true, ..o };
        assert_eq!(buffer_bytes(&o, 4, 3, Convention::Mpi), (1 << 20, (1 << 20) + GUARD_BYTES));
    }
}

#[cfg(test)]
mod sim_tests;
