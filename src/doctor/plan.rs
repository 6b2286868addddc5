//! How long doctor will take, and the size it measures at so that it fits `--max-time`: no MPI.
//!
//! A probe first (sendrecv around the ring at two small sizes, as the ceiling pass runs it) gives
//! a latency and a rate: `t(s) = alpha + s / rate`. Every phase after it is counted in calls, as
//! the code that runs it counts them (the sweep's warm-up and minimum of timed calls, tune's
//! rounds, the pairs' passes), each call costed from that line: a collective at
//! [`SLOWER_THAN_RING`] times the ring's time for its bus bytes (doctor's own bar is half the
//! ceiling; the library's slower algorithms are timed too). The size is the largest of `-e`,
//! `-e`/2, … (not below [`SMALLEST_BYTES`]) whose estimate fits the time left; where even that one
//! does not, the algorithms are left out, and the page says so.

use crate::collective::Kind;
use crate::record::Ceiling;
use crate::sweep::timing;
use serde::Serialize;

/// A collective's call is costed at this many times the ring's sendrecv of its bus bytes.
pub const SLOWER_THAN_RING: f64 = 2.0;
/// The smallest size doctor lowers `-e` to: below it, a link's rate is mostly its latency.
pub const SMALLEST_BYTES: u64 = 256 << 10;
/// Seconds allowed for what is not counted in calls: the hosts' CPUs and memory (about 0.4 s),
/// communicators made per algorithm, exchanges of results.
pub const FIXED_S: f64 = 2.0;
/// The probe's sizes (each at most `-e`).
pub const PROBE_BYTES: [u64; 2] = [64 << 10, 1 << 20];
/// A third probe where the second took less than [`QUICK_PROBE_S`] per call (at most `-e`).
pub const LARGE_PROBE_BYTES: u64 = 16 << 20;
pub const QUICK_PROBE_S: f64 = 0.02;
/// Rounds a tune cell takes, and how many cells get a second look (an allowance).
const TUNE_ROUNDS: u64 = 3;
const SECOND_LOOKS: u64 = 2;

/// The ring's latency and rate, from the probe.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Line {
    pub alpha_s: f64,
    pub bytes_per_s: f64,
}

impl Line {
    /// From the probe's (bytes, seconds per call) at two sizes (or one: no latency).
    pub fn fit(points: &[(u64, f64)]) -> Line {
        let mut p: Vec<(u64, f64)> = points.iter().copied().filter(|(b, t)| *b > 0 && *t > 0.0).collect();
        p.sort_by_key(|x| x.0);
        p.dedup_by_key(|x| x.0);
        match p[..] {
            [] => Line { alpha_s: 0.0, bytes_per_s: f64::INFINITY },
            [(b, t)] => Line { alpha_s: 0.0, bytes_per_s: b as f64 / t },
            [(b0, t0), .., (b2, t2)] => {
                let (b1, t1) = p[p.len() - 2];
                // The rate from the two largest (what large messages get), the latency from the
                // smallest.
                if t2 > t1 {
                    let rate = (b2 - b1) as f64 / (t2 - t1);
                    let alpha = (t0 - b0 as f64 / rate).max(0.0);
                    Line { alpha_s: alpha, bytes_per_s: rate }
                } else {
                    // The larger size no slower (noise): its rate, no latency (the pessimistic line).
                    Line { alpha_s: 0.0, bytes_per_s: b2 as f64 / t2 }
                }
            }
        }
    }

    /// Seconds for a sendrecv of `bytes` around the ring.
    pub fn ring_s(&self, bytes: f64) -> f64 {
        self.alpha_s + bytes / self.bytes_per_s
    }

    /// Seconds a call of `kind` at `size` bytes is costed at, on `n` ranks.
    pub fn collective_s(&self, kind: Kind, size: u64, n: usize) -> f64 {
        let steps = 2.0 * (n.max(2) as f64).log2().ceil();
        SLOWER_THAN_RING * (steps * self.alpha_s + size as f64 * kind.spec().bus_factor(n) / self.bytes_per_s)
    }
}

/// What the plan needs besides the line: the run's shape and counts.
#[derive(Clone, Debug)]
pub struct Shape {
    pub ranks: usize,
    /// Each collective and the number of candidates tune weighs for it (the default included).
    pub collectives: Vec<(Kind, usize)>,
    /// Rounds of the pairs between hosts (0: one host, no pairs).
    pub pair_rounds: usize,
    pub budget_s: f64,
    /// `-w`, `-n`: fixed counts, where the user gave them.
    pub warmup: Option<u64>,
    pub iters: Option<u64>,
    pub check: bool,
}

/// One phase's estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase {
    /// `ceiling and collectives`, `pairs`, `hosts`, `algorithms`.
    pub name: &'static str,
    pub estimated_s: f64,
}

/// The phases at one size.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub size_bytes: u64,
    pub phases: Vec<Phase>,
    /// Per collective, its algorithms' part of the `algorithms` phase.
    pub algorithms_s: Vec<(Kind, f64)>,
}

impl Estimate {
    pub fn total_s(&self) -> f64 {
        self.phases.iter().map(|p| p.estimated_s).sum()
    }

    /// The total less the algorithms (a plan that leaves them out).
    pub fn without_algorithms_s(&self) -> f64 {
        self.phases.iter().filter(|p| p.name != "algorithms").map(|p| p.estimated_s).sum()
    }
}

/// Calls the sweep makes at one point and placement with a call of `t` seconds: the check call,
/// the warm-up (one call, then about a tenth of the budget, at least one), the timed calls.
fn sweep_calls(t: f64, budget_s: f64, warmup: Option<u64>, iters: Option<u64>, check: bool) -> f64 {
    let warm = match warmup {
        Some(w) => w.max(1),
        None => 1 + ((0.1 * budget_s / t.max(1e-9)) as u64).clamp(1, 1000),
    };
    let timed = timing::iterations(iters, budget_s, t).0;
    (u64::from(check) + warm + timed) as f64
}

/// Calls one tune cell makes (tune's warm-up takes no call beyond the first when a tenth of the
/// budget is less than one; at least one call a round).
fn tune_calls(t: f64, budget_s: f64, warmup: Option<u64>, iters: Option<u64>, check: bool) -> f64 {
    let warm = match warmup {
        Some(w) => w.max(1),
        None => 1 + ((0.1 * budget_s / t.max(1e-9)) as u64).min(1000),
    };
    let per = timing::per_round(iters, budget_s, t, TUNE_ROUNDS).0;
    (u64::from(check) + warm + TUNE_ROUNDS * per) as f64
}

/// Seconds the pairs take for one pair's message of one-way `t` seconds (warm-up of 3 round
/// trips, then at least 5 within the budget).
fn pair_s(t: f64, budget_s: f64) -> f64 {
    let iters = ((budget_s / (2.0 * t.max(1e-9))) as u64).clamp(5, 100_000);
    2.0 * t * (3 + iters) as f64
}

/// Seconds tune takes to weigh `cands` candidates of a collective whose call takes `t`.
fn tune_s(t: f64, cands: usize, shape: &Shape) -> f64 {
    let (b, w, n, c) = (shape.budget_s, shape.warmup, shape.iters, shape.check);
    let cell = t * tune_calls(t, b, w, n, c);
    let again = t * TUNE_ROUNDS as f64 * timing::per_round(n, b, t, TUNE_ROUNDS).0 as f64;
    cands as f64 * cell + SECOND_LOOKS.min(cands as u64) as f64 * again
}

/// The library's other algorithms are costed at this many times its default's measured call.
pub const OTHERS_SLOWER: f64 = 1.5;

/// The algorithms phase planned again once the collectives were measured at `measured_size`
/// (`measured`: each collective's seconds per call there): the largest of that size, half of
/// it, … (not below [`SMALLEST_BYTES`] or the measured size where smaller) whose estimate fits
/// `left_s`, each call scaled from the measured one by size, with the estimate per collective;
/// `None` where not even the smallest fits.
pub fn algorithms_at(
    shape: &Shape,
    measured_size: u64,
    measured: &[(Kind, f64)],
    left_s: f64,
) -> Option<(u64, Vec<(Kind, f64)>)> {
    let at = |size: u64| -> Vec<(Kind, f64)> {
        shape
            .collectives
            .iter()
            .map(|(k, cands)| {
                let t = measured.iter().find(|m| m.0 == *k).map_or(0.0, |m| m.1);
                let t = OTHERS_SLOWER * t * size as f64 / measured_size.max(1) as f64;
                (*k, tune_s(t, *cands, shape))
            })
            .collect()
    };
    let floor = SMALLEST_BYTES.min(measured_size);
    let mut size = measured_size;
    loop {
        let est = at(size);
        if est.iter().map(|e| e.1).sum::<f64>() <= left_s {
            return Some((size, est));
        }
        if size / 2 < floor {
            return None;
        }
        size /= 2;
    }
}

/// doctor's phases after the probe, at `size`.
pub fn estimate(line: &Line, shape: &Shape, size: u64) -> Estimate {
    let (b, w, n, c) = (shape.budget_s, shape.warmup, shape.iters, shape.check);
    // The ceiling pass: its own budget, repeats while the pass is short.
    let t = line.ring_s(size as f64);
    let repeat_b = b.min(Ceiling::REPEAT_BUDGET_S);
    let first = t * sweep_calls(t, repeat_b, None, None, c);
    let mut ceiling = first;
    for _ in 1..Ceiling::REPEATS {
        if ceiling > Ceiling::REPEAT_WITHIN_S {
            break;
        }
        ceiling += t * sweep_calls(t, repeat_b, None, None, false);
    }
    let collectives: f64 = shape
        .collectives
        .iter()
        .map(|(k, _)| {
            let t = line.collective_s(*k, size, shape.ranks);
            t * sweep_calls(t, b, w, n, c)
        })
        .sum();
    let pair_bytes = size.min(crate::pairs::links::LINK_BYTES) as f64;
    let pairs = shape.pair_rounds as f64 * 3.0 * (pair_s(line.ring_s(8.0), b) + pair_s(line.ring_s(pair_bytes), b));
    let algorithms_s: Vec<(Kind, f64)> = shape
        .collectives
        .iter()
        .map(|(k, cands)| (*k, tune_s(line.collective_s(*k, size, shape.ranks), *cands, shape)))
        .collect();
    Estimate {
        size_bytes: size,
        phases: vec![
            Phase { name: "ceiling and collectives", estimated_s: ceiling + collectives },
            Phase { name: "pairs", estimated_s: pairs },
            Phase { name: "hosts", estimated_s: FIXED_S },
            Phase { name: "algorithms", estimated_s: algorithms_s.iter().map(|a| a.1).sum() },
        ],
        algorithms_s,
    }
}

/// What doctor will measure: the size, whether the algorithms are weighed, the estimate, and
/// why the size is not `-e` where it is not.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub estimate: Estimate,
    pub algorithms: bool,
    /// Why the size or the phases differ from what was asked; `None` where they do not.
    pub reason: Option<String>,
}

/// The largest of `max_bytes`, `max_bytes`/2, … (not below [`SMALLEST_BYTES`], nor below
/// `max_bytes` where that is smaller) whose estimate fits `left_s`; where none does, the
/// smallest without the algorithms (or, failing that too, with them left out all the same,
/// saying so). `left_s` infinite: `max_bytes`, no reason.
pub fn choose(line: &Line, shape: &Shape, max_bytes: u64, left_s: f64, limit_s: f64) -> Choice {
    let asked = estimate(line, shape, max_bytes);
    if asked.total_s() <= left_s {
        return Choice { estimate: asked, algorithms: true, reason: None };
    }
    let floor = SMALLEST_BYTES.min(max_bytes);
    let shown = crate::options::human_duration;
    let mut size = max_bytes;
    while size / 2 >= floor {
        size /= 2;
        let e = estimate(line, shape, size);
        if e.total_s() <= left_s {
            let reason = format!(
                "-e {} is estimated at {} over a ring of {} GB/s; {} is the largest size that fits the {} limit (--max-time)",
                crate::size::human(max_bytes),
                shown(asked.total_s()),
                crate::record::shown_gbps(line.bytes_per_s / 1e9),
                crate::size::human(size),
                shown(limit_s)
            );
            return Choice { estimate: e, algorithms: true, reason: Some(reason) };
        }
    }
    let e = estimate(line, shape, size);
    let without = e.without_algorithms_s();
    let reason = format!(
        "even {} is estimated at {} over a ring of {} GB/s, beyond the {} limit (--max-time): the algorithms are not weighed{}",
        crate::size::human(size),
        shown(e.total_s()),
        crate::record::shown_gbps(line.bytes_per_s / 1e9),
        shown(limit_s),
        if without > left_s { format!(", and the rest is estimated at {} all the same", shown(without)) } else { String::new() }
    );
    Choice { estimate: e, algorithms: false, reason: Some(reason) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        Shape {
            ranks: 3,
            collectives: vec![(Kind::AllReduce, 7), (Kind::AllGather, 7), (Kind::ReduceScatter, 5)],
            pair_rounds: 3,
            budget_s: 0.05,
            warmup: None,
            iters: None,
            check: true,
        }
    }

    #[test]
    fn the_line_through_two_probes() {
        let l = Line::fit(&[(1 << 16, 0.0105), (1 << 20, 0.1665)]);
        assert!((l.bytes_per_s - 6.3e6).abs() < 0.1e6, "{l:?}");
        assert!(l.alpha_s >= 0.0 && l.alpha_s < 1e-3, "{l:?}");
        // The larger no slower: its own rate, no latency.
        let l = Line::fit(&[(1 << 16, 0.002), (1 << 20, 0.001)]);
        assert_eq!((l.alpha_s, l.bytes_per_s), (0.0, (1 << 20) as f64 / 0.001));
        assert_eq!(Line::fit(&[(1024, 0.001)]).bytes_per_s, 1024.0 / 0.001);
        // Three: the rate of the two largest (past the caches), the latency of the smallest.
        let l = Line::fit(&[(1 << 16, 1.1e-5), (1 << 20, 1.5e-4), (16 << 20, 6.15e-3)]);
        assert!((l.bytes_per_s - 2.62e9).abs() < 0.01e9, "{l:?}");
        assert!(l.alpha_s == 0.0, "{l:?}");
    }

    /// A 50 Mbit/s link (the bed): 64 MiB would take most of an hour, so the size comes
    /// down to one that fits two minutes; a fast link keeps -e.
    #[test]
    fn a_slow_ring_lowers_the_size_and_a_fast_one_keeps_it() {
        let slow = Line { alpha_s: 1e-4, bytes_per_s: 6.2e6 };
        let asked = estimate(&slow, &shape(), 64 << 20);
        assert!(asked.total_s() > 1800.0, "{asked:?}");
        let c = choose(&slow, &shape(), 64 << 20, 118.0, 120.0);
        assert!(c.algorithms && c.estimate.total_s() <= 118.0, "{c:?}");
        assert!(c.estimate.size_bytes >= SMALLEST_BYTES && c.estimate.size_bytes <= 2 << 20, "{c:?}");
        let r = c.reason.unwrap();
        assert!(
            r.starts_with("-e 64M is estimated at") && r.contains("the largest size that fits the 2.0 min limit"),
            "{r}"
        );
        let fast = Line { alpha_s: 2e-6, bytes_per_s: 5e9 };
        let c = choose(&fast, &shape(), 64 << 20, 118.0, 120.0);
        assert_eq!((c.estimate.size_bytes, c.algorithms, c.reason), (64 << 20, true, None));
        assert!(c.estimate.total_s() < 60.0, "{:?}", c.estimate);
    }

    /// Where even the smallest size does not fit, the algorithms are left out and it says so.
    #[test]
    fn a_limit_too_short_for_anything_leaves_the_algorithms_out() {
        let slow = Line { alpha_s: 1e-4, bytes_per_s: 6.2e6 };
        let c = choose(&slow, &shape(), 64 << 20, 5.0, 10.0);
        assert_eq!((c.estimate.size_bytes, c.algorithms), (SMALLEST_BYTES, false));
        let r = c.reason.unwrap();
        assert!(r.starts_with("even 256K is estimated at") && r.contains("the algorithms are not weighed"), "{r}");
        // -e below the smallest size: -e itself.
        let c = choose(&slow, &shape(), 64 << 10, 0.5, 10.0);
        assert_eq!(c.estimate.size_bytes, 64 << 10);
    }

    /// Once the collectives are measured, the algorithms are planned from their own calls:
    /// slower than the probe said, a smaller size; slower still, none.
    #[test]
    fn the_algorithms_are_planned_again_from_the_measured_calls() {
        let measured = [(Kind::AllReduce, 0.3), (Kind::AllGather, 0.13), (Kind::ReduceScatter, 0.19)];
        let (size, est) = algorithms_at(&shape(), 1 << 20, &measured, 1000.0).unwrap();
        assert_eq!(size, 1 << 20);
        let all: f64 = est.iter().map(|e| e.1).sum();
        // 7 + 7 + 5 candidates of 5 calls, two second looks each, at 1.5 times the default.
        assert!((all - 1.5 * (0.3 * 41.0 + 0.13 * 41.0 + 0.19 * 31.0)).abs() < 1e-6, "{all}");
        let (size, _) = algorithms_at(&shape(), 1 << 20, &measured, all / 3.0).unwrap();
        assert_eq!(size, 256 << 10);
        assert_eq!(algorithms_at(&shape(), 1 << 20, &measured, 1.0), None);
    }

    /// The counts follow the sweep's: a call far longer than the budget is made 8 times (check,
    /// two warm-up, five timed); tune's cell 5 (check, one warm-up, one a round).
    #[test]
    fn calls_are_counted_as_the_loops_count_them() {
        assert_eq!(sweep_calls(1.0, 0.05, None, None, true), 8.0);
        assert_eq!(tune_calls(1.0, 0.05, None, None, true), 5.0);
        assert_eq!(sweep_calls(1.0, 0.05, Some(2), Some(10), false), 12.0);
        // Short calls: the budget, not the minimum.
        let short = sweep_calls(1e-5, 0.05, None, None, false) * 1e-5;
        assert!(short > 0.05 && short < 0.07, "{short}");
    }
}
