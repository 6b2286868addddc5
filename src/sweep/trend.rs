//! Points the machine timed, not the collective: a point slower than a much larger size of the
//! same series in the same run. No collective slows as its message shrinks; a point does when
//! its ranks take turns on a core at the scheduler's tick (4 ms on many kernels: 8 B all-reduce
//! at 3 992 us beside 64 KiB at 250 us, issue 47) or when other processes take the cores. Such a
//! point is consistent within itself (every sample waits one tick), so the per-point warnings
//! miss it; it shows only against its neighbours, which the sweep measures after it. So the
//! sweep keeps each point's median ([`Seen`]), and after its last point names the points above
//! the trend ([`above_trend`]); the reports add [`Warning::AboveTrend`] to their rows
//! ([`crate::report::Report::amend`]). `spec from-run` leaves out such points by the same rule.

use crate::record::{Crowded, Flag, Placement, Seen};
use crate::stats::Warning;

pub use crate::stats::{TREND_FACTOR as FACTOR, TREND_SIZES as SIZES};

/// What a flagged point's warning suspects: the most crowded host, or other processes.
fn suspect(crowded: Option<&Crowded>) -> (&'static str, String) {
    match crowded {
        Some(c) => (
            "more_ranks_than_cores",
            format!(
                "the scheduler's tick: {} ranks share {} core(s) on {} (more ranks than free cores take turns); run at most one rank per core",
                c.ranks, c.cores, c.host
            ),
        ),
        None => ("other_processes", "other processes on the machine; run again on a quieter one".to_string()),
    }
}

/// Whether a point of `size` bytes and `median_us` is above the trend against a point of its
/// series of `larger` bytes and `larger_median_us`: that size is [`SIZES`]× or more larger and
/// over [`FACTOR`]× faster. The one rule, for the sweep's points and for `spec from-run`'s rows.
pub fn above(size: u64, median_us: f64, larger: u64, larger_median_us: f64) -> bool {
    larger > 0 && larger >= size.max(1).saturating_mul(SIZES) && median_us > FACTOR * larger_median_us
}

/// The scheduler ticks a kernel may have (1 / HZ for HZ of 100, 250, 300 and 1000), µs, the
/// longest first (a time on a 4 ms tick is on the 1 ms one too).
pub const TICKS_US: [f64; 4] = [10_000.0, 4000.0, 10_000.0 / 3.0, 1000.0];
/// A median within this fraction of a tick of a whole multiple of it sits on the tick.
pub const ON_TICK: f64 = 0.03;
/// Whole multiples of a tick looked at (a time of more ticks says nothing by its remainder).
pub const MAX_TICKS: f64 = 16.0;
/// A run is tick-bound when at least this many of its medians of a tick or more ...
pub const TICK_BOUND_POINTS: usize = 3;
/// ... and at least this share of them sit on the tick.
pub const TICK_BOUND_SHARE: f64 = 0.75;

/// Whether `median_us` sits on a whole multiple (1 to [`MAX_TICKS`]) of `tick_us`.
fn on_tick(median_us: f64, tick_us: f64) -> bool {
    let k = (median_us / tick_us).round();
    (1.0..=MAX_TICKS).contains(&k) && (median_us - k * tick_us).abs() <= ON_TICK * tick_us
}

/// The tick the run's times are bound to, if any: the longest of [`TICKS_US`] at which at least
/// [`TICK_BOUND_POINTS`] medians are a tick or more and [`TICK_BOUND_SHARE`] of those sit on a
/// whole multiple of it. By chance a time lands within 3% of a whole number of ticks about one
/// time in 17; three in four of them, and at least three, do when ranks wait for the scheduler.
pub fn tick_bound(seen: &[Seen]) -> Option<f64> {
    TICKS_US.into_iter().find(|&tick| {
        let long: Vec<f64> = seen.iter().map(|s| s.median_us).filter(|m| *m >= (1.0 - ON_TICK) * tick).collect();
        let on = long.iter().filter(|m| on_tick(**m, tick)).count();
        long.len() >= TICK_BOUND_POINTS && on as f64 >= TICK_BOUND_SHARE * long.len() as f64
    })
}

/// The measurements the machine timed ([`crate::stats::Warning`]'s `SchedulerTick` and
/// `AboveTrend`), each with its warning: in a tick-bound run ([`tick_bound`]) every median of
/// a tick or more; then any other slower than [`FACTOR`]× a size [`SIZES`]× larger or more of
/// its series (its fastest such size named).
pub fn above_trend(seen: &[Seen], crowded: Option<&Crowded>) -> Vec<Flag> {
    let (cause, words) = suspect(crowded);
    let tick = tick_bound(seen);
    let ticked = |s: &Seen| tick.is_some_and(|t| s.median_us >= (1.0 - ON_TICK) * t);
    let mut flags: Vec<Flag> = seen
        .iter()
        .filter(|s| ticked(s))
        .map(|s| Flag {
            seen: *s,
            warning: Warning::SchedulerTick {
                median_us: s.median_us,
                tick_us: tick.unwrap_or(f64::NAN),
                cause,
                suspect: words.clone(),
            },
        })
        .collect();
    flags.extend(seen.iter().filter(|s| !ticked(s)).filter_map(|s| {
        let faster = seen
            .iter()
            .filter(|q| q.series() == s.series() && above(s.size_bytes, s.median_us, q.size_bytes, q.median_us))
            .min_by(|a, b| a.median_us.total_cmp(&b.median_us))?;
        Some(Flag {
            seen: *s,
            warning: Warning::AboveTrend {
                median_us: s.median_us,
                larger_bytes: faster.size_bytes,
                larger_median_us: faster.median_us,
                cause,
                suspect: words.clone(),
            },
        })
    }));
    flags.sort_by_key(|f| (f.seen.point, f.seen.placement == Placement::InPlace));
    flags
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Kind;
    use crate::dtype::{DType, Op};

    fn seen(point: usize, size: u64, median_us: f64) -> Seen {
        Seen {
            point,
            collective: Kind::AllReduce,
            dtype: DType::Float32,
            op: Some(Op::Sum),
            size_bytes: size,
            placement: Placement::OutOfPlace,
            median_us,
            pattern: 0,
        }
    }

    /// The 4 ms case of issue 47: 8 B and 4 KiB at the tick, 64 KiB at 250 us.
    #[test]
    fn a_point_slower_than_a_much_larger_size_is_above_the_trend() {
        let s = [seen(0, 8, 3991.9), seen(1, 1024, 600.0), seen(2, 4096, 16000.0), seen(3, 65536, 250.0)];
        let crowded = Crowded { host: "vm".into(), ranks: 4, cores: 1 };
        let f = above_trend(&s, Some(&crowded));
        let points: Vec<usize> = f.iter().map(|f| f.seen.point).collect();
        assert_eq!(points, [0, 2], "{f:?}");
        match &f[0].warning {
            Warning::AboveTrend { larger_bytes, larger_median_us, cause, suspect, .. } => {
                assert_eq!((*larger_bytes, *larger_median_us, *cause), (65536, 250.0, "more_ranks_than_cores"));
                assert!(suspect.contains("4 ranks share 1 core(s) on vm"), "{suspect}");
            }
            w => panic!("{w:?}"),
        }
        assert_eq!(f[0].label(), "all-reduce float sum 8 B out-of-place");
        // 1 KiB is 2.4x 64 KiB's time: within the factor.
        assert!(
            f[0].warning
                .to_string()
                .contains("median 3991.9 us, against 250.0 us at 65536 B (a size 16x larger or more)"),
            "{}",
            f[0].warning
        );
    }

    /// An ordinary curve, a noisy one within the factor, another series, and NaN (ranks other
    /// than 0) flag nothing.
    #[test]
    fn ordinary_curves_and_other_series_flag_nothing() {
        let mut s: Vec<Seen> = (0..20).map(|i| seen(i, 8 << i, 1.0 + (8u64 << i) as f64 / 1e4)).collect();
        s.push(seen(20, 8, 2.5)); // 2.5x the 8 B above, and no larger size is 3x faster
        let mut other = seen(21, 8, 100.0);
        other.collective = Kind::AllGather;
        s.push(other);
        assert!(above_trend(&s, None).is_empty());
        let nan: Vec<Seen> = (0..10).map(|i| seen(i, 8 << i, f64::NAN)).collect();
        assert!(above_trend(&nan, None).is_empty());
    }

    /// Two spinning ranks on one core (`mpirun -n 2 taskset -c 0`, Open MPI): every size a
    /// whole number of 4 ms ticks, rising with the size, so none is above the trend.
    #[test]
    fn a_run_on_the_tick_is_flagged_at_every_point_of_a_tick_or_more() {
        let medians = [3999.6, 3999.3, 3999.2, 8000.3, 7997.3, 15998.0, 7999.9, 15201.0, 16797.0, 16001.0, 16010.0];
        let s: Vec<Seen> = medians.iter().enumerate().map(|(i, m)| seen(i, 8 << i, *m)).collect();
        assert_eq!(tick_bound(&s), Some(4000.0));
        let f = above_trend(&s, Some(&Crowded { host: "vm".into(), ranks: 2, cores: 1 }));
        assert_eq!(f.len(), medians.len(), "{f:?}");
        match &f[3].warning {
            Warning::SchedulerTick { tick_us, cause, .. } => {
                assert_eq!((*tick_us, *cause), (4000.0, "more_ranks_than_cores"))
            }
            w => panic!("{w:?}"),
        }
        assert!(
            f[3].warning.to_string().starts_with("scheduler tick: median 8000.3 us, 2.0 ticks of 4.0 ms"),
            "{}",
            f[3].warning
        );
        // Times of a real network, a few ms, off any tick: not bound, nothing flagged.
        let real: Vec<Seen> = [1234.0, 2570.0, 5190.0, 10_420.0, 20_870.0]
            .iter()
            .enumerate()
            .map(|(i, m)| seen(i, 1 << (20 + i), *m))
            .collect();
        assert_eq!((tick_bound(&real), above_trend(&real, None).len()), (None, 0));
        // Two on a tick are not enough to say so.
        assert_eq!(tick_bound(&s[..2]), None);
    }
}
