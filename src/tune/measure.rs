//! Timing tune's candidates, size by size: at each size every candidate still in the race runs
//! in [`ROUNDS`] interleaved rounds (default, algorithm 1, 2, …, ours, then again), so a burst of
//! load from elsewhere lands on one round of some candidates rather than on all the rounds of
//! one; a candidate's time at a size is the median over its rounds of each round's median time
//! per call (choose.rs). Each round times calls through the backend exactly as the sweep does
//! (same batches of back-to-back calls, samples combined across ranks by `-a`); the budget is
//! per cell (candidate × size), split over the rounds, with at least one call per round.
//!
//! The check costs no extra call: before the first round a candidate's send buffer holds the
//! check's known input and its receive buffer the sentinel; every out-of-place call computes the
//! same output from the same input, so the output after that round's calls is compared exactly
//! as the sweep compares its one check call (elements and guard zone). In place (`--in-place`)
//! the output is the next call's input, so that placement keeps the sweep's separate check call.

use super::choose::{median_of_rounds, Outcome};
use crate::backend::mpi::{DupComm, MpiBackend};
use crate::backend::{Backend, Call};
use crate::collective::{Convention, Ctx};
use crate::dtype::Op;
use crate::error::Result;
use crate::options::Implementation;
use crate::options::Options;
use crate::record::{Measurement, Placement, Point, Runs};
use crate::stats::{mean_of, median_of};
use crate::sweep::buffer_bytes;
use crate::sweep::check::Check;
use crate::sweep::timing::{self, Agreed};
use crate::watchdog::{Phase, Watchdog};
use crate::world::{aggregate, World};

/// Interleaved rounds per cell (odd: the median is one of them).
pub const ROUNDS: usize = 3;

/// One candidate × size.
#[derive(Clone, Debug)]
pub enum Cell {
    /// Timed: the point for the CSV (out of place; in place too with `--in-place`) and each
    /// round's median time per call (µs), the same on every rank.
    Timed { point: Box<Point>, rounds: Vec<f64> },
    /// Not run at this size, and why (the skip rule).
    Skipped(String),
    /// The library refused the candidate (an MPI error): left out from this size on.
    Failed,
}

impl Cell {
    /// Wrong elements (either placement) disqualify; otherwise the median of the rounds.
    pub fn outcome(&self) -> Outcome {
        match self {
            Cell::Timed { point, rounds } => {
                let wrong: u64 =
                    point.measurements().iter().map(|m| m.wrong.unwrap_or(0) + m.out_of_bounds.unwrap_or(0)).sum();
                if wrong > 0 {
                    Outcome::Wrong(wrong)
                } else {
                    Outcome::Time(median_of_rounds(rounds))
                }
            }
            _ => Outcome::Absent,
        }
    }

    pub fn rounds(&self) -> &[f64] {
        match self {
            Cell::Timed { rounds, .. } => rounds,
            _ => &[],
        }
    }
}

/// A candidate after its rounds at a size, for the second look: (index, outcome, rounds).
pub type Seen = (usize, Outcome, Vec<f64>);

/// A cell being measured: its plan (from the first round's warm-up) and what it has gathered.
struct Open {
    backend: usize,
    warmup_iters: u64,
    first_call_us: Option<f64>,
    /// Timed calls per round and calls per sample.
    iters: u64,
    batch: u64,
    est_s: f64,
    /// This rank's samples of every round (s per call).
    samples: Vec<f64>,
    rounds: Vec<f64>,
    wrong: u64,
    out_of_bounds: u64,
    in_place: Option<Measurement>,
}

impl Open {
    fn outcome(&self) -> Outcome {
        if self.wrong + self.out_of_bounds > 0 {
            Outcome::Wrong(self.wrong + self.out_of_bounds)
        } else {
            Outcome::Time(median_of_rounds(&self.rounds))
        }
    }
}

/// Where a collective's time went (seconds, this rank's wall clock), for the report's last line.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spent {
    pub warm_up: f64,
    pub timed: f64,
    /// Filling the check's input and sentinel, and comparing the output.
    pub check: f64,
    /// Combining samples and agreeing across ranks after each round.
    pub exchange: f64,
    /// `--in-place`'s measurements.
    pub in_place: f64,
}

/// The measuring loop of one collective: a backend per implementation (buffers at the largest
/// size), the candidates' communicators (made by the caller after forcing each algorithm).
pub struct Bench<'a> {
    world: &'a World,
    opts: &'a Options,
    backends: Vec<(Implementation, MpiBackend)>,
    watchdog: Option<Watchdog>,
    samples: Vec<f64>,
    /// Which backend's send buffer holds the check input of which size (filled once per size).
    filled: Vec<Option<u64>>,
    pub in_place: bool,
    pub spent: Spent,
}

impl<'a> Bench<'a> {
    /// `opts`: one collective, one type and op. `implementations`: those the candidates use.
    pub fn new(
        world: &'a World,
        opts: &'a Options,
        implementations: &[Implementation],
        in_place: bool,
    ) -> Result<Bench<'a>> {
        let (send, recv) = buffer_bytes(opts, world.size, world.rank, Convention::Mpi);
        let mut backends = vec![];
        for &imp in implementations {
            if backends.iter().any(|(n, _)| *n == imp) {
                continue;
            }
            let one = Options { implementation: imp, debug_slow_rank: None, ..opts.clone() };
            let mut b = world.agree(MpiBackend::new(world, &one))?;
            world.agree(b.allocate(send, recv))?;
            backends.push((imp, b));
        }
        let filled = vec![None; backends.len()];
        let watchdog = Watchdog::start(world, opts.timeout);
        Ok(Bench { world, opts, backends, watchdog, samples: vec![], filled, in_place, spent: Spent::default() })
    }

    fn backend_of(&self, implementation: Implementation) -> usize {
        self.backends.iter().position(|(n, _)| *n == implementation).expect("every implementation has its backend")
    }

    fn call(&self, size: u64, in_place: bool) -> Call {
        let o = self.opts;
        let kind = o.collectives[0];
        let dtype = o.dtypes[0];
        let elems = (size / dtype.size() as u64) as usize;
        let layout = kind.spec().layout(elems, dtype.size(), self.world.size, self.world.rank, Convention::Mpi);
        Call { kind, dtype, op: o.ops.first().copied().unwrap_or(Op::Sum), root: o.root, layout, in_place }
    }

    fn ctx(&self, call: &Call) -> Ctx {
        Ctx {
            rank: self.world.rank,
            nranks: self.world.size,
            root: call.root,
            in_place: call.in_place,
            convention: Convention::Mpi,
            layout: call.layout,
        }
    }

    /// One batch through backend `b` on `comm`, watched ([`timing::watched_batch`]); agreed
    /// across ranks (an MPI error, such as an algorithm the library refuses for this
    /// communicator, is every rank's).
    fn batch(&mut self, b: usize, call: &Call, phase: Phase, iters: u64, batch: u64, est_s: f64) -> Result<()> {
        let backend = &mut self.backends[b].1;
        let r = timing::watched_batch(
            self.watchdog.as_ref(),
            backend,
            call,
            phase,
            (iters, batch),
            est_s,
            &mut self.samples,
        );
        self.world.agree(r)
    }

    /// Sentinel output and known input (out of place: the send buffer, once per backend and
    /// size; in place: the receive buffer's input region): the sweep's check pass
    /// ([`crate::sweep::check`]), its call the next one made.
    fn prepare_check(&mut self, b: usize, call: &Call, size: u64) -> Result<Check> {
        let c = self.ctx(call);
        let check = Check::new(call, c.rank, c.nranks, c.convention);
        let fill_send = self.filled[b] != Some(size);
        check.prepare(&mut self.backends[b].1, fill_send)?;
        if !call.in_place && fill_send {
            self.filled[b] = Some(size);
        }
        Ok(check)
    }

    /// Compare the output with the expected values; (wrong, out of bounds) summed over ranks.
    fn verify(&mut self, b: usize, check: &Check) -> Result<(u64, u64)> {
        let backend = &mut self.backends[b].1;
        if self.opts.debug_corrupt_rank == Some(self.world.rank) {
            check.corrupt(backend)?;
        }
        let v = check.verify(backend)?;
        Ok((self.world.sum_u64(v.wrong), self.world.sum_u64(v.out_of_bounds)))
    }

    /// Warm up as the sweep does (`-w`, or one call and then a tenth of the budget, at most
    /// 1000 calls and none more when one call already spends it); the time per call estimated
    /// from it (maximum over ranks), and (calls, first call µs).
    fn warm_up(&mut self, b: usize, call: &Call) -> Result<(f64, u64, Option<f64>)> {
        let world = self.world;
        let (warmup, budget_s) = (self.opts.warmup, self.opts.budget_s);
        let w = timing::warm_up(warmup, budget_s, false, &mut |n, est, stat| {
            self.batch(b, call, Phase::WarmUp, n, 1, est)?;
            Ok(world.max_f64(match stat {
                Agreed::First => self.samples[0],
                Agreed::Mean => mean_of(&self.samples),
            }))
        })?;
        Ok((w.est_s, w.iters, w.first_call_us))
    }

    /// The median of this batch's samples combined across ranks (rank 0's), on every rank.
    fn round_median(&self) -> f64 {
        let combined = self.world.combine_samples(self.opts.aggregation, &self.samples);
        let m = if self.world.rank == 0 { median_of(&combined) * 1e6 } else { 0.0 };
        let bytes = self.world.broadcast_bytes(0, m.to_le_bytes().to_vec());
        f64::from_le_bytes(bytes[..8].try_into().unwrap_or([0; 8]))
    }

    /// One round of one cell on `comm`: the first also warms up, plans the calls and checks.
    fn round(&mut self, cell: &mut Open, comm: &DupComm, size: u64) -> Result<()> {
        let b = cell.backend;
        self.backends[b].1.use_comm(comm);
        let call = self.call(size, false);
        let first = cell.rounds.is_empty();
        let mut t = std::time::Instant::now();
        let mut lap = |to: &mut f64| {
            *to += t.elapsed().as_secs_f64();
            t = std::time::Instant::now();
        };
        let check_at = if first && self.opts.check { Some(self.prepare_check(b, &call, size)?) } else { None };
        lap(&mut self.spent.check);
        if first {
            let (est, warmup, first_call) = self.warm_up(b, &call)?;
            let (iters, batch) = per_round(self.opts.iters, self.opts.budget_s, est);
            (cell.est_s, cell.warmup_iters, cell.first_call_us, cell.iters, cell.batch) =
                (est, warmup, first_call, iters, batch);
            lap(&mut self.spent.warm_up);
        }
        self.batch(b, &call, Phase::Timed, cell.iters, cell.batch, cell.est_s)?;
        lap(&mut self.spent.timed);
        cell.samples.extend_from_slice(&self.samples);
        cell.rounds.push(self.round_median());
        lap(&mut self.spent.exchange);
        if let Some(check) = check_at {
            (cell.wrong, cell.out_of_bounds) = self.verify(b, &check)?;
            lap(&mut self.spent.check);
        }
        if first && self.in_place {
            cell.in_place = Some(self.in_place_measurement(b, size)?);
            lap(&mut self.spent.in_place);
        }
        Ok(())
    }

    /// In place (`--in-place`): the sweep's order (check call, warm-up, timed) in one go; it is
    /// reported, not chosen on (the library's file cannot tell the placements apart).
    fn in_place_measurement(&mut self, b: usize, size: u64) -> Result<Measurement> {
        let call = self.call(size, true);
        let (wrong, oob) = if self.opts.check {
            let check = self.prepare_check(b, &call, size)?;
            self.batch(b, &call, Phase::Check, 1, 1, 0.0)?;
            self.verify(b, &check)?
        } else {
            (0, 0)
        };
        let (est, warmup, first_call) = self.warm_up(b, &call)?;
        let (per, batch) = per_round(self.opts.iters, self.opts.budget_s, est);
        let iters = per * ROUNDS as u64;
        self.batch(b, &call, Phase::Timed, iters, batch, est)?;
        let samples = std::mem::take(&mut self.samples);
        let runs = Runs { warmup_iters: warmup, iters, batch, first_call_us: first_call };
        let mut m = self.measurement(&call, Placement::InPlace, &samples, runs);
        if self.opts.check {
            (m.wrong, m.out_of_bounds) = (Some(wrong), Some(oob));
        }
        Ok(m)
    }

    /// The sweep's measurement record from this rank's samples.
    fn measurement(&self, call: &Call, placement: Placement, samples: &[f64], runs: Runs) -> Measurement {
        let world = self.world;
        let per_rank_s = world.all_gather(mean_of(samples));
        let time_s = aggregate(self.opts.aggregation, &per_rank_s);
        let combined = world.combine_samples(self.opts.aggregation, samples);
        let bytes = (call.layout.alg_count * call.dtype.size()) as f64;
        let bus_factor = call.kind.spec().bus_factor(world.size);
        let root = (world.rank == 0).then_some(&combined[..]);
        // Kept in the cell until the end: without each rank's time (tune has no per-rank
        // output), so the cells do not grow with the ranks.
        Measurement::from_times(placement, runs, &per_rank_s, time_s, root, bytes, bus_factor).without_rank_times()
    }

    /// Measure `live` candidates (indices into `comms` and `implementations`) at `size` in
    /// interleaved rounds; `select(c)` runs before each of candidate c's rounds (libraries that
    /// read the algorithm variable at each call: set it). After the rounds, `second_look` is
    /// shown each candidate's outcome and rounds and names those that get [`ROUNDS`] more
    /// (interleaved again) before the cells are closed. Returns a cell per live candidate.
    #[allow(clippy::too_many_arguments)]
    pub fn size(
        &mut self,
        size: u64,
        live: &[usize],
        comms: &[DupComm],
        implementations: &[Implementation],
        select: &mut dyn FnMut(usize) -> Result<()>,
        say_failed: &mut dyn FnMut(usize, &crate::error::Error),
        second_look: &dyn Fn(&[Seen]) -> Vec<usize>,
    ) -> Vec<(usize, Cell)> {
        let mut open: Vec<(usize, Option<Open>)> = live
            .iter()
            .map(|&c| {
                let backend = self.backend_of(implementations[c]);
                (c, Some(new_open(backend)))
            })
            .collect();
        for _ in 0..ROUNDS {
            self.rounds_of(&mut open, None, size, comms, select, say_failed);
        }
        let seen: Vec<(usize, Outcome, Vec<f64>)> =
            open.iter().filter_map(|(c, o)| o.as_ref().map(|o| (*c, o.outcome(), o.rounds.clone()))).collect();
        let again = second_look(&seen);
        if !again.is_empty() {
            for _ in 0..ROUNDS {
                self.rounds_of(&mut open, Some(&again), size, comms, select, say_failed);
            }
        }
        open.into_iter().map(|(c, o)| (c, o.map(|o| self.close(o, size)).unwrap_or(Cell::Failed))).collect()
    }

    /// One round of every open cell (of those in `only`, if given).
    fn rounds_of(
        &mut self,
        open: &mut [(usize, Option<Open>)],
        only: Option<&[usize]>,
        size: u64,
        comms: &[DupComm],
        select: &mut dyn FnMut(usize) -> Result<()>,
        say_failed: &mut dyn FnMut(usize, &crate::error::Error),
    ) {
        for (c, slot) in open.iter_mut() {
            if only.is_some_and(|o| !o.contains(c)) {
                continue;
            }
            let Some(cell) = slot.as_mut() else { continue };
            let r = select(*c).and_then(|_| self.round(cell, &comms[*c], size));
            if let Err(e) = r {
                say_failed(*c, &e);
                *slot = None;
            }
        }
        if let Some(w) = &self.watchdog {
            w.disarm();
        }
    }

    /// The cell's point (out of place from all its rounds' samples) and its rounds.
    fn close(&self, o: Open, size: u64) -> Cell {
        let call = self.call(size, false);
        let iters = o.samples.len() as u64 * o.batch;
        let runs = Runs { warmup_iters: o.warmup_iters, iters, batch: o.batch, first_call_us: o.first_call_us };
        let mut m = self.measurement(&call, Placement::OutOfPlace, &o.samples, runs);
        if self.opts.check {
            (m.wrong, m.out_of_bounds) = (Some(o.wrong), Some(o.out_of_bounds));
        }
        let spec = call.kind.spec();
        let dtype = call.dtype;
        let elems = (size / dtype.size() as u64) as usize;
        let l0 = spec.layout(elems, dtype.size(), self.world.size, 0, Convention::Mpi);
        let in_place = o.in_place.unwrap_or_else(|| Measurement::skipped(Placement::InPlace));
        let point = Point {
            collective: call.kind,
            dtype,
            op: spec.reduces().then_some(call.op),
            root: spec.rooted().then_some(call.root),
            size_bytes: l0.size_bytes(dtype.size()) as u64,
            count: call.layout.count as u64,
            bus_factor: spec.bus_factor(self.world.size),
            out_of_place: m,
            in_place,
            // The caller names the candidate it forced.
            algorithm: crate::record::UNKNOWN_ALGORITHM.to_string(),
            algorithm_source: "not reported".to_string(),
            traffic: None,
        };
        Cell::Timed { point: Box::new(point), rounds: o.rounds }
    }

    /// The point of a cell that was not run (for the CSV row that says so).
    pub fn skipped_point(&self, size: u64) -> Point {
        let call = self.call(size, false);
        let spec = call.kind.spec();
        let dtype = call.dtype;
        let elems = (size / dtype.size() as u64) as usize;
        let l0 = spec.layout(elems, dtype.size(), self.world.size, 0, Convention::Mpi);
        Point {
            collective: call.kind,
            dtype,
            op: spec.reduces().then_some(call.op),
            root: spec.rooted().then_some(call.root),
            size_bytes: l0.size_bytes(dtype.size()) as u64,
            count: call.layout.count as u64,
            bus_factor: spec.bus_factor(self.world.size),
            out_of_place: Measurement::skipped(Placement::OutOfPlace),
            in_place: Measurement::skipped(Placement::InPlace),
            algorithm: crate::record::UNKNOWN_ALGORITHM.to_string(),
            traffic: None,
            algorithm_source: "not reported".to_string(),
        }
    }
}

fn new_open(backend: usize) -> Open {
    Open {
        backend,
        warmup_iters: 0,
        first_call_us: None,
        iters: 0,
        batch: 1,
        est_s: 0.0,
        samples: vec![],
        rounds: vec![],
        wrong: 0,
        out_of_bounds: 0,
        in_place: None,
    }
}

/// Timed calls per round and calls per sample: `-n N` spreads N calls over the rounds (at least
/// one each); otherwise the cell's time budget split over the rounds, at least one call per
/// round (a 64 MiB call of a third of a second is timed [`ROUNDS`] times, not the sweep's
/// minimum of 5 per placement), batched as the sweep batches calls shorter than
/// [`MIN_SAMPLE_S`].
pub fn per_round(fixed: Option<u64>, budget_s: f64, est_s: f64) -> (u64, u64) {
    timing::per_round(fixed, budget_s, est_s, ROUNDS as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_per_round_follow_the_budget_with_at_least_one_per_round() {
        // 0.5 us calls, 20 ms: a third of 40000 calls a round, in samples of 10.
        assert_eq!(per_round(None, 0.02, 0.5e-6), (13340, 10));
        // A 300 ms call (64 MiB): one per round, three in all.
        assert_eq!(per_round(None, 0.02, 0.3), (1, 1));
        // 2 ms calls: 4 a round.
        assert_eq!(per_round(None, 0.02, 2e-3), (4, 1));
        // -n 3: one a round; -n 10: four a round (12 in all).
        assert_eq!(per_round(Some(3), 0.02, 1e-3), (1, 1));
        assert_eq!(per_round(Some(10), 0.02, 1e-3), (4, 1));
        assert_eq!(per_round(Some(10), 0.02, 0.5e-6), (4, 4));
    }
}
