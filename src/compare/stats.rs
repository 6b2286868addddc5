//! Statistics helpers of the model: medians, pooled variances, robust spreads, quantiles.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The median of some values (the mean of the middle two for an even count); NaN when empty.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// ln(new / base), where both are positive times.
pub(super) fn ln_ratio(base: f64, new: f64) -> Option<f64> {
    (base > 0.0 && new > 0.0 && base.is_finite() && new.is_finite()).then(|| (new / base).ln())
}

/// Pooled variance within groups (groups of two values or more) and its degrees of freedom;
/// None if no group has two.
pub(super) fn pooled(groups: &[&[f64]]) -> Option<(f64, usize)> {
    let (mut ss, mut df) = (0.0, 0usize);
    for g in groups.iter().filter(|g| g.len() >= 2) {
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        ss += g.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
        df += g.len() - 1;
    }
    (df > 0).then(|| (ss / df as f64, df))
}

/// Pooled variance within groups; None if no group has two values.
#[cfg(test)]
pub(super) fn pooled_var(groups: &[&[f64]]) -> Option<f64> {
    pooled(groups).map(|(v, _)| v)
}

/// Robust noise of a sequence from its steps: 1.4826 × median |step| / √2 (a step of two
/// independent values has √2 times their spread; 1.4826 makes the MAD a standard deviation).
pub fn step_noise(steps: &[f64]) -> Option<f64> {
    (!steps.is_empty()).then(|| 1.4826 * median(steps.iter().map(|s| s.abs())) / std::f64::consts::SQRT_2)
}

/// Robust spread of values around their median: 1.4826 × the median absolute deviation.
pub fn mad_sigma(values: &[f64]) -> Option<f64> {
    let c = median(values.iter().copied());
    (!values.is_empty()).then(|| 1.4826 * median(values.iter().map(|v| (v - c).abs())))
}

/// One-sided normal quantile for `alpha` shared over `tests` tests (Bonferroni).
pub fn z_for(alpha: f64, tests: usize) -> f64 {
    let n = Normal::new(0.0, 1.0).expect("the standard normal");
    n.inverse_cdf(1.0 - alpha / tests.max(1) as f64)
}

/// One-sided Student's t quantile with `df` degrees of freedom for `alpha` shared over `tests`.
pub fn t_for(alpha: f64, tests: usize, df: usize) -> f64 {
    match StudentsT::new(0.0, 1.0, df.max(1) as f64) {
        Ok(t) => t.inverse_cdf(1.0 - alpha / tests.max(1) as f64),
        Err(_) => z_for(alpha, tests),
    }
}
