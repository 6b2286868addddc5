//! Summaries of per-sample times (statrs), typed warnings with advice (as hyperfine gives them),
//! and the outlier test behind slow-rank detection. Samples are seconds; summaries microseconds.

use serde::Serialize;
use statrs::statistics::{Data, Distribution, Max, Median, Min, OrderStatistics};
use std::fmt;

/// Summary of one measurement's per-sample times, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub samples: usize,
    pub mean_us: f64,
    pub median_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Sample standard deviation; NaN with fewer than two samples.
    pub stddev_us: f64,
    /// 95% confidence interval of the median (distribution-free, from order statistics);
    /// NaN with fewer than 6 samples.
    pub ci95_lo_us: f64,
    pub ci95_hi_us: f64,
    /// Samples whose modified z-score (|x − median| / (1.4826·MAD)) exceeds [`OUTLIER_Z`]; JSON
    /// `outlier_samples`, as the CSV column.
    #[serde(rename = "outlier_samples")]
    pub outliers: usize,
}

/// Modified z-score beyond which a sample is an outlier (hyperfine's threshold).
pub const OUTLIER_Z: f64 = 14.826;

impl Summary {
    /// Summarise samples given in seconds. An empty slice gives all-NaN (statrs' convention).
    pub fn of_seconds(samples: &[f64]) -> Summary {
        let nan = f64::NAN;
        if samples.is_empty() {
            return Summary {
                samples: 0,
                mean_us: nan,
                median_us: nan,
                p95_us: nan,
                p99_us: nan,
                min_us: nan,
                max_us: nan,
                stddev_us: nan,
                ci95_lo_us: nan,
                ci95_hi_us: nan,
                outliers: 0,
            };
        }
        let mut us: Vec<f64> = samples.iter().map(|s| s * 1e6).collect();
        us.sort_by(f64::total_cmp);
        let (ci95_lo_us, ci95_hi_us) = median_ci95(&us);
        let mut data = Data::new(us.clone());
        let median = data.median();
        Summary {
            samples: us.len(),
            mean_us: data.mean().unwrap_or(nan),
            median_us: median,
            p95_us: data.percentile(95),
            p99_us: data.percentile(99),
            min_us: data.min(),
            max_us: data.max(),
            stddev_us: if us.len() > 1 { data.std_dev().unwrap_or(nan) } else { nan },
            ci95_lo_us,
            ci95_hi_us,
            outliers: modified_z(&us).iter().filter(|z| z.abs() > OUTLIER_Z).count(),
        }
    }
}

/// Distribution-free 95% interval of the median of sorted data: the order statistics at
/// n/2 ∓ 1.96·√n/2 (normal approximation of the binomial).
fn median_ci95(sorted: &[f64]) -> (f64, f64) {
    let n = sorted.len();
    if n < 6 {
        return (f64::NAN, f64::NAN);
    }
    let half = 1.96 * (n as f64).sqrt() / 2.0;
    let lo = ((n as f64 / 2.0 - half).floor().max(1.0) as usize) - 1;
    let hi = ((n as f64 / 2.0 + half).ceil() as usize).min(n) - 1;
    (sorted[lo], sorted[hi])
}

/// Mean of a rank's samples (0 when it has none: an idle rank, or no timed calls).
pub fn mean_of(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.iter().sum::<f64>() / samples.len() as f64
}

/// Median of unsorted values (NaN when empty).
pub fn median_of(v: &[f64]) -> f64 {
    Data::new(v.to_vec()).median()
}

/// Modified z-scores (x − median) / (1.4826·MAD). With MAD 0 (most values equal), values that
/// differ from the median get ±∞ and equal ones 0.
pub fn modified_z(values: &[f64]) -> Vec<f64> {
    if values.is_empty() {
        return vec![];
    }
    let m = median_of(values);
    let deviations: Vec<f64> = values.iter().map(|x| (x - m).abs()).collect();
    let mad = median_of(&deviations) * 1.4826;
    values
        .iter()
        .map(|x| {
            let d = x - m;
            if mad > 0.0 {
                d / mad
            } else if d.abs() <= 1e-12 * m.abs().max(1e-300) {
                0.0
            } else {
                d.signum() * f64::INFINITY
            }
        })
        .collect()
}

/// A rank whose time stands out from the others at one point.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RankOutlier {
    pub rank: usize,
    pub time_us: f64,
    pub median_us: f64,
}

/// Ranks whose mean time per call is an outlier among the ranks (modified z-score beyond 3.5,
/// the usual cut, and at least 10% from the median so timer noise on a quiet machine does
/// not count). Needs three ranks or more: with two there is no majority to compare with.
/// In a blocking collective the rank the others wait for (it arrives late) shows the
/// *shortest* time; a rank that waits on a slow peer shows the longest.
pub fn rank_outliers(per_rank_us: &[f64]) -> Vec<RankOutlier> {
    if per_rank_us.len() < 3 {
        return vec![];
    }
    let m = median_of(per_rank_us);
    modified_z(per_rank_us)
        .iter()
        .enumerate()
        .filter(|(r, z)| z.abs() > 3.5 && (per_rank_us[*r] - m).abs() > 0.1 * m)
        .map(|(r, _)| RankOutlier { rank: r, time_us: per_rank_us[r], median_us: m })
        .collect()
}

/// What a reader of the table should believe differently about a measurement, each with what
/// to do about it. Only what changes the reading is a warning: outlier samples that leave the
/// mean where the median is, or a slow first call kept out by the warm-up, are not (they stay in
/// the CSV's `outlier_samples` and `first_call_us`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// The median's 95% interval is wider than [`NOISY_RELATIVE_CI`] of the median: the time is
    /// uncertain by that much.
    Noisy { relative_ci: f64 },
    /// The table's time (the mean per call) and the median of the samples differ by more than
    /// [`MEAN_OFF_MEDIAN`]: a few slow samples pull the mean, and the median is the typical call.
    /// (JSON: `outlier_samples`, as the CSV column.)
    MeanOffMedian {
        time_us: f64,
        median_us: f64,
        #[serde(rename = "outlier_samples")]
        outliers: usize,
        samples: usize,
    },
    /// Minor page faults during the timed calls cost more than [`PAGE_FAULT_SHARE`] of the time
    /// (faults per call × one fault's cost on this host, measured at start): the time includes
    /// the allocator's work, as it does in an application on the same allocator.
    PageFaults { faults_per_call: f64, fault_cost_us: f64, share: f64 },
    /// The median is over [`TREND_FACTOR`]× that of a size [`TREND_SIZES`]× larger or more of the same series in the same run: no
    /// collective slows as its message shrinks, so the machine's scheduler timed this point, not
    /// the collective (ranks taking turns on a core at the scheduler's tick, 4 ms on many
    /// kernels; or other processes). Found after the sweep, by comparing its points.
    AboveTrend {
        median_us: f64,
        larger_bytes: u64,
        larger_median_us: f64,
        /// What is suspected: `more_ranks_than_cores` or `other_processes`.
        cause: &'static str,
        /// The cause in words (the host, its ranks and the cores they may run on).
        suspect: String,
    },
    /// The run's times sit on whole multiples of one scheduler tick (1, 3.3, 4 or 10 ms: the
    /// kernel's HZ), and this point's median is a tick or more: its ranks waited for the
    /// scheduler, not for each other (two spinning ranks on one core take a tick per exchange:
    /// 8 B all-reduce at 4 000 us and 1 MiB at 16 000 us, each size steady, none faster than a
    /// smaller one). Found after the sweep, over all its points.
    SchedulerTick {
        median_us: f64,
        tick_us: f64,
        /// `more_ranks_than_cores` or `other_processes`, as [`Warning::AboveTrend`]'s.
        cause: &'static str,
        suspect: String,
    },
}

/// A point slower than this many times a size at least [`TREND_SIZES`]× larger of its series is
/// above the trend (`crate::sweep::trend`).
pub const TREND_FACTOR: f64 = 3.0;
/// How much larger the faster size must be (a factor of 16 in bytes: 4 steps of the default
/// doubling sweep, far beyond where a size's time can fall for a change of algorithm).
pub const TREND_SIZES: u64 = 16;

/// Share of a call's time, estimated from its page faults, beyond which they are said to cost
/// time.
pub const PAGE_FAULT_SHARE: f64 = 0.10;

/// Relative width of the median's interval beyond which a point is called noisy.
pub const NOISY_RELATIVE_CI: f64 = 0.10;

/// Relative difference between the table's time (mean) and the median beyond which they are
/// said to disagree.
pub const MEAN_OFF_MEDIAN: f64 = 0.10;

impl Warning {
    /// The warnings of one measurement: its samples' summary and the table's time.
    pub fn check(s: &Summary, time_us: f64) -> Vec<Warning> {
        let mut out = vec![];
        if s.median_us > 0.0 && s.ci95_hi_us.is_finite() {
            let rel = (s.ci95_hi_us - s.ci95_lo_us) / s.median_us;
            if rel > NOISY_RELATIVE_CI {
                out.push(Warning::Noisy { relative_ci: rel });
            }
        }
        if s.median_us > 0.0 && time_us.is_finite() && (time_us - s.median_us).abs() > MEAN_OFF_MEDIAN * s.median_us {
            out.push(Warning::MeanOffMedian {
                time_us,
                median_us: s.median_us,
                outliers: s.outliers,
                samples: s.samples,
            });
        }
        out
    }

    /// The page-fault warning of a measurement of `time_us` per call that took
    /// `faults_per_call` minor page faults (the rank with most), each costing `fault_cost_us`
    /// here; `None` below [`PAGE_FAULT_SHARE`] of the time.
    pub fn page_faults(faults_per_call: f64, fault_cost_us: f64, time_us: f64) -> Option<Warning> {
        let share = faults_per_call * fault_cost_us / time_us;
        (time_us > 0.0 && share.is_finite() && share > PAGE_FAULT_SHARE).then_some(Warning::PageFaults {
            faults_per_call,
            fault_cost_us,
            share,
        })
    }

    /// One line for the footer's summary of this kind: what it means, with the threshold.
    pub fn headline(&self) -> String {
        match self {
            Warning::Noisy { .. } => format!(
                "the median's 95% interval is wider than {:.0}% of it (the time is uncertain by that much)",
                NOISY_RELATIVE_CI * 100.0
            ),
            Warning::MeanOffMedian { .. } => format!(
                "the time (the mean) and the median differ by more than {:.0}% (slow samples pull the mean; the median, median_us in the CSV, is the typical call)",
                MEAN_OFF_MEDIAN * 100.0
            ),
            Warning::PageFaults { .. } => format!(
                "minor page faults cost more than {:.0}% of the time (the MPI library's per-call buffers under the default allocator: an application that exchanged other messages with its peers before its loop gets them too, a process whose loop is its first traffic may not, docs/sweep.md \"The heap\"; minor_faults_per_call in the CSV; run with --malloc kept to compare)",
                PAGE_FAULT_SHARE * 100.0
            ),
            Warning::SchedulerTick { tick_us, .. } => format!(
                "the time is a whole number of the scheduler's ticks ({:.1} ms), as most of the run's are: the ranks waited for the scheduler, not for each other (more ranks than free cores spin in turns, or other processes), so it is no measurement of the collective; scheduler_tick in the CSV's warnings; spec from-run learns nothing from it",
                tick_us / 1e3
            ),
            Warning::AboveTrend { .. } => format!(
                "slower than {}x a size {}x larger of the same collective in this run, which no collective is: the machine's scheduler timed it, not the collective (more ranks than free cores take turns at its tick, or other processes); above_trend in the CSV's warnings; spec from-run learns nothing from it",
                TREND_FACTOR,
                TREND_SIZES
            ),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Noisy { relative_ci } => write!(
                f,
                "noisy: the median's 95% interval spans {:.0}% of it; give it more time (--budget) or run on a quieter machine",
                relative_ci * 100.0
            ),
            Warning::MeanOffMedian { time_us, median_us, outliers, samples } => write!(
                f,
                "time {time_us:.2} us is {:.0}% {} the median {median_us:.2} us; {outliers} of {samples} samples are outliers (other programs, interrupts or a straggling rank); consider a quieter machine",
                ((time_us - median_us) / median_us).abs() * 100.0,
                if time_us > median_us { "above" } else { "below" }
            ),
            Warning::PageFaults { faults_per_call, fault_cost_us, share } => write!(
                f,
                "page faults: {faults_per_call:.0} minor page faults per call, ~{fault_cost_us:.2} us each on this host: about {:.0}% of the time; run with --malloc kept to see the time without them",
                share * 100.0
            ),
            Warning::SchedulerTick { median_us, tick_us, suspect, .. } => write!(
                f,
                "scheduler tick: median {median_us:.1} us, {:.1} ticks of {:.1} ms; suspect {suspect}",
                median_us / tick_us,
                tick_us / 1e3
            ),
            Warning::AboveTrend { median_us, larger_bytes, larger_median_us, suspect, .. } => write!(
                f,
                "above the trend: median {median_us:.1} us, against {larger_median_us:.1} us at {larger_bytes} B (a size {TREND_SIZES}x larger or more); suspect {suspect}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_data() {
        // 1..=100 µs
        let s: Vec<f64> = (1..=100).map(|i| i as f64 * 1e-6).collect();
        let sum = Summary::of_seconds(&s);
        assert_eq!(sum.samples, 100);
        assert!((sum.mean_us - 50.5).abs() < 1e-9);
        assert!((sum.median_us - 50.5).abs() < 1e-9);
        assert!((sum.min_us - 1.0).abs() < 1e-9 && (sum.max_us - 100.0).abs() < 1e-9);
        assert!(sum.p99_us > 98.9 && sum.p99_us <= 100.0, "{}", sum.p99_us);
        assert!(sum.p95_us > 94.0 && sum.p95_us < 96.5, "{}", sum.p95_us);
        assert!((sum.stddev_us - 29.011491975882016).abs() < 1e-6);
        // n = 100: order statistics 40 and 60.
        assert!((sum.ci95_lo_us - 40.0).abs() < 1e-9 && (sum.ci95_hi_us - 60.0).abs() < 1e-9);
        assert_eq!(sum.outliers, 0);
    }

    #[test]
    fn one_sample_has_no_stddev_and_none_is_nan() {
        let one = Summary::of_seconds(&[2e-6]);
        assert!((one.median_us - 2.0).abs() < 1e-12);
        assert!(one.stddev_us.is_nan() && one.ci95_lo_us.is_nan());
        assert!(Summary::of_seconds(&[]).median_us.is_nan());
    }

    #[test]
    fn outliers_and_warnings() {
        // One sample 50x the others among 2000: an outlier, but the mean stays within 10% of
        // the median, so nothing the reader should believe differently.
        let mut s: Vec<f64> = (0..2000).map(|i| (10.0 + (i % 5) as f64 * 0.1) * 1e-6).collect();
        s.push(500e-6);
        let sum = Summary::of_seconds(&s);
        assert_eq!(sum.outliers, 1);
        assert_eq!(Warning::check(&sum, sum.mean_us), vec![], "mean {} median {}", sum.mean_us, sum.median_us);
        // The same sample among 200: the mean moves 24% above the median.
        let mut s: Vec<f64> = (0..200).map(|i| (10.0 + (i % 5) as f64 * 0.1) * 1e-6).collect();
        s.push(500e-6);
        let sum = Summary::of_seconds(&s);
        let w = Warning::check(&sum, sum.mean_us);
        assert!(matches!(w[..], [Warning::MeanOffMedian { outliers: 1, samples: 201, .. }]), "{w:?}");
        assert!(w[0].to_string().contains("% above the median 10.20 us"), "{}", w[0]);
        assert!(w[0].headline().contains("more than 10%"));
        // Uniform 1..100: the interval is 40% of the median; mean = median, so only noisy.
        let wide: Vec<f64> = (1..=100).map(|i| i as f64 * 1e-6).collect();
        let sum = Summary::of_seconds(&wide);
        let w = Warning::check(&sum, sum.mean_us);
        assert!(matches!(w[..], [Warning::Noisy { .. }]), "{w:?}");
        assert!(w[0].to_string().contains("--budget"));
    }

    #[test]
    fn slow_rank_is_the_outlier() {
        // Rank 2 arrives late: the others wait for it and show longer times.
        let t = [100.0, 101.0, 20.0, 99.0, 100.5, 100.2, 99.8, 100.1];
        let o = rank_outliers(&t);
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].rank, 2);
        // All equal: nothing.
        assert!(rank_outliers(&[5.0, 5.0, 5.0, 5.0]).is_empty());
        // Small relative differences are not outliers even with a tiny MAD.
        assert!(rank_outliers(&[100.0, 100.0, 100.0, 104.0]).is_empty());
        // Two ranks: no majority.
        assert!(rank_outliers(&[1.0, 100.0]).is_empty());
        // One slow rank among equals (MAD 0).
        assert_eq!(rank_outliers(&[100.0, 100.0, 100.0, 300.0])[0].rank, 3);
    }
}
