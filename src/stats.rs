//! Summaries of per-iteration samples (statrs). Samples are seconds; summaries microseconds.

use serde::Serialize;
use statrs::statistics::{Data, Distribution, Max, Median, Min, OrderStatistics};

/// Summary of one measurement's per-iteration times, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub samples: usize,
    pub mean_us: f64,
    pub median_us: f64,
    pub p99_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Sample standard deviation; NaN with fewer than two samples.
    pub stddev_us: f64,
}

impl Summary {
    /// Summarise samples given in seconds. An empty slice gives all-NaN (statrs' convention).
    pub fn of_seconds(samples: &[f64]) -> Summary {
        if samples.is_empty() {
            return Summary {
                samples: 0,
                mean_us: f64::NAN,
                median_us: f64::NAN,
                p99_us: f64::NAN,
                min_us: f64::NAN,
                max_us: f64::NAN,
                stddev_us: f64::NAN,
            };
        }
        let mut data = Data::new(samples.iter().map(|s| s * 1e6).collect::<Vec<f64>>());
        Summary {
            samples: samples.len(),
            mean_us: data.mean().unwrap_or(f64::NAN),
            median_us: data.median(),
            p99_us: data.percentile(99),
            min_us: data.min(),
            max_us: data.max(),
            stddev_us: if samples.len() > 1 { data.std_dev().unwrap_or(f64::NAN) } else { f64::NAN },
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
        assert!((sum.stddev_us - 29.011491975882016).abs() < 1e-6);
    }

    #[test]
    fn one_sample_has_no_stddev_and_none_is_nan() {
        let one = Summary::of_seconds(&[2e-6]);
        assert!((one.median_us - 2.0).abs() < 1e-12);
        assert!(one.stddev_us.is_nan());
        assert!(Summary::of_seconds(&[]).median_us.is_nan());
    }
}
