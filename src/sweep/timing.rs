//! What the timing loops share: how many calls a sample spans, how many a size gets, how the
//! warm-up estimates a call, and one watched batch of calls; the check pass they share is
//! `sweep::check`. There are four loops, kept apart for what they measure:
//!
//! - the sweep (`sweep::Sweep`): one collective at a time, warm-up then the budget's timed calls
//!   in batches, then a separate check call; its numbers are nccl-tests' columns;
//! - tune (`tune::measure`): several candidates (algorithms) of one collective at one size, in
//!   interleaved rounds, so a burst of load lands on one round of some candidates rather than on
//!   every round of one; the budget is split over the rounds (at least one call a round) and the
//!   warm-up takes no call beyond the first when a tenth of the budget is less than one call (a
//!   64 MiB call is not repeated five times per candidate);
//! - step (`step::exec`): a whole training step of many calls on several communicators, timed
//!   by the wall clock between barriers, and each dimension alone; its unit is a step, not a
//!   call, so it counts steps, not batches (`--iters`/`--warmup` steps), and shares only the
//!   watchdog and the check pass with the other two;
//! - pairs (`pairs::measure`): ping-pong between the two ranks of each pair, every pair of a
//!   round at once; the initiator alone times the round trips (its clock only, so no skew
//!   between hosts enters), with 3 warm-up round trips and a count from the budget (5 to
//!   100 000); its unit is one message one way, not a collective call, and it has no check pass
//!   (the bytes are not read back) and no batches.
//!
//! The sweep and tune take their counts, their warm-up and their batches from here, so the two
//! cannot drift apart (they once did: tune's warm-up differed from the sweep's).

use crate::backend::{Backend, Call};
use crate::error::Result;
use crate::options::{MAX_AUTO_ITERS, MIN_AUTO_ITERS};
use crate::watchdog::{Phase, Task, Watchdog};

/// Shortest time one sample should span, so the clock's cost stays below 1% of it.
pub const MIN_SAMPLE_S: f64 = 5e-6;

/// Most calls the automatic warm-up adds after the first one.
const MAX_WARMUP_CALLS: u64 = 1000;

/// Calls per sample for calls of about `est_s`: enough that a sample spans [`MIN_SAMPLE_S`]
/// (1 to 1000).
pub fn calls_per_sample(est_s: f64) -> u64 {
    (ceil_ratio(MIN_SAMPLE_S, est_s.max(1e-9)) as u64).clamp(1, 1000)
}

/// A fixed count stays exact: the largest number of calls per sample, not above `want`, that
/// divides `n`.
pub fn exact_batch(n: u64, want: u64) -> u64 {
    (1..=want.min(n)).rev().find(|b| n % b == 0).unwrap_or(1)
}

/// Timed iterations and calls per sample, from a fixed count (`-n`) or the time budget, and the
/// estimated time per call (the same on every rank, so every rank runs the same calls).
pub fn iterations(fixed: Option<u64>, budget_s: f64, est_s: f64) -> (u64, u64) {
    let want = calls_per_sample(est_s);
    match fixed {
        Some(n) => (n, exact_batch(n, want)),
        None => {
            let iters = (ceil_ratio(budget_s, est_s.max(1e-9)) as u64).clamp(MIN_AUTO_ITERS, MAX_AUTO_ITERS);
            (iters.div_ceil(want) * want, want)
        }
    }
}

/// Timed calls per round and calls per sample when `rounds` rounds share one size's budget
/// (tune): `-n N` spreads N calls over the rounds (at least one each); otherwise the budget split
/// over the rounds, at least one call per round.
pub fn per_round(fixed: Option<u64>, budget_s: f64, est_s: f64, rounds: u64) -> (u64, u64) {
    let want = calls_per_sample(est_s);
    match fixed {
        Some(n) => {
            let per = n.div_ceil(rounds).max(1);
            (per, exact_batch(per, want))
        }
        None => {
            let per = (ceil_ratio(budget_s / rounds as f64, est_s.max(1e-9)) as u64).clamp(1, MAX_AUTO_ITERS / rounds);
            (per.div_ceil(want) * want, want)
        }
    }
}

/// The statistic of a warm-up batch's samples that the warm-up needs, agreed across ranks (the
/// slowest rank's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreed {
    /// The first sample (the first call, cold).
    First,
    /// The mean over the batch.
    Mean,
}

/// What the warm-up found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WarmUp {
    /// Seconds per call, the slowest rank's: what the counts are derived from.
    pub est_s: f64,
    /// Warm-up calls made (the first call included; 0 with `-w 0`).
    pub iters: u64,
    /// The first call's time in µs, when the automatic warm-up timed it alone.
    pub first_call_us: Option<f64>,
}

/// The warm-up of one size: `-w N` (`fixed`) N calls, or with `-w 0` one call that only gives the
/// estimate; automatically, one call, then about a tenth of the budget, 1 to 1000 calls
/// (`at_least_one_more`, the sweep) or 0 to 1000 (tune: no second call when a tenth of the budget
/// is less than one). `batch(calls, est_s, stat)` runs that many calls (one per sample) and
/// returns `stat` of its samples, agreed across ranks.
pub fn warm_up(
    fixed: Option<u64>,
    budget_s: f64,
    at_least_one_more: bool,
    batch: &mut dyn FnMut(u64, f64, Agreed) -> Result<f64>,
) -> Result<WarmUp> {
    match fixed {
        Some(w) if w > 0 => Ok(WarmUp { est_s: batch(w, 0.0, Agreed::Mean)?, iters: w, first_call_us: None }),
        Some(_) => Ok(WarmUp { est_s: batch(1, 0.0, Agreed::First)?, iters: 0, first_call_us: None }),
        None => {
            let first = batch(1, 0.0, Agreed::First)?;
            let more = ((0.1 * budget_s / first.max(1e-9)) as u64).clamp(at_least_one_more as u64, MAX_WARMUP_CALLS);
            if more == 0 {
                return Ok(WarmUp { est_s: first, iters: 1, first_call_us: Some(first * 1e6) });
            }
            let est_s = batch(more, first, Agreed::Mean)?;
            Ok(WarmUp { est_s, iters: 1 + more, first_call_us: Some(first * 1e6) })
        }
    }
}

/// One batch of `iters` calls through `backend`, `batch` calls per sample, under the watchdog
/// (`-T`) unless it is off: its limit follows from `iters` × `est_s` (`Timeout::limit_s`). The
/// exchange of results that follows a batch is watched too, until the next batch.
pub fn watched_batch(
    watchdog: Option<&Watchdog>,
    backend: &mut dyn Backend,
    call: &Call,
    phase: Phase,
    (iters, batch): (u64, u64),
    est_s: f64,
    samples: &mut Vec<f64>,
) -> Result<()> {
    if let Some(w) = watchdog {
        w.arm(Task { call: *call, phase, calls: iters }, iters as f64 * est_s);
    }
    // The check is one plain call (nccl-tests' `startColl` then `CheckData`): an in-place
    // reduction repeated within a group or a graph would not give the expected data.
    let r = match phase {
        Phase::Check => backend.run_plain(call, samples),
        _ => backend.run(call, iters as usize, batch as usize, samples),
    };
    if let Some(w) = watchdog {
        w.arm(Task { call: *call, phase: Phase::Results, calls: 1 }, 0.0);
    }
    r
}

/// ⌈a / b⌉, forgiving the last bits of rounding (5e-6 / 0.5e-6 is 10, not 11).
fn ceil_ratio(a: f64, b: f64) -> f64 {
    (a / b * (1.0 - 1e-12)).ceil()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterations_follow_the_budget_and_batch_short_calls() {
        // 0.5 us calls, 50 ms: 100000 calls in samples of 10 calls (5 us each).
        assert_eq!(iterations(None, 0.05, 0.5e-6), (100_000, 10));
        // 10 ms calls: the floor of 5 iterations, one call per sample.
        assert_eq!(iterations(None, 0.05, 10e-3), (5, 1));
        // 1 ms calls: 50 iterations.
        assert_eq!(iterations(None, 0.05, 1e-3), (50, 1));
        // Fixed counts are kept exactly.
        assert_eq!(iterations(Some(20), 0.05, 0.5e-6), (20, 10));
        assert_eq!(iterations(Some(7), 0.05, 0.5e-6), (7, 7));
        assert_eq!(iterations(Some(13), 0.05, 0.4e-6), (13, 13));
        assert_eq!(iterations(Some(3), 0.05, 1.0), (3, 1));
    }

    #[test]
    fn the_warm_up_is_one_rule_with_tunes_floor_apart() {
        let mut calls = vec![];
        // Calls of 10 ms against a 50 ms budget: a tenth is 5 ms, less than one call.
        let mut b = |n: u64, _est: f64, stat: Agreed| {
            calls.push((n, stat));
            Ok(0.01)
        };
        let sweep = warm_up(None, 0.05, true, &mut b).unwrap();
        assert_eq!((sweep.iters, sweep.first_call_us), (2, Some(10_000.0)));
        let tune = warm_up(None, 0.05, false, &mut b).unwrap();
        assert_eq!((tune.iters, tune.est_s), (1, 0.01));
        assert_eq!(calls, [(1, Agreed::First), (1, Agreed::Mean), (1, Agreed::First)]);
        // -w 0: one call, for the estimate only; -w 3: three calls, their mean.
        let mut b = |n: u64, _est: f64, _stat: Agreed| Ok(n as f64);
        assert_eq!(warm_up(Some(0), 0.05, true, &mut b).unwrap().iters, 0);
        assert_eq!(warm_up(Some(3), 0.05, true, &mut b).unwrap(), WarmUp { est_s: 3.0, iters: 3, first_call_us: None });
        // Short calls: a tenth of the budget, at most 1000 more.
        let mut b = |_n: u64, _est: f64, _stat: Agreed| Ok(1e-6);
        assert_eq!(warm_up(None, 0.05, true, &mut b).unwrap().iters, 1001);
    }
}
