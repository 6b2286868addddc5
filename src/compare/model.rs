//! The model: how a point, a series and the whole run changed, against which noise.

use super::stats::{ln_ratio, mad_sigma, median, pooled, step_noise, t_for, z_for};
use super::{Point, Settings, Stat};
use crate::csvread::{Key, Row};
use std::collections::HashSet;

/// How the noise was estimated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Noise {
    /// From the spread between the runs of each side (two or more runs on a side).
    BetweenRuns,
    /// One run per side: from the spread between the series of the comparison (and the jitter
    /// between neighbouring sizes); blind to a shift of the whole run.
    BetweenSeries,
}

/// How a point, a series or the whole run changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Slower beyond the threshold and beyond what the noise explains.
    Regression,
    /// Faster beyond both.
    Improvement,
    /// Beyond the threshold, but within the noise.
    WithinNoise,
    /// A point slower beyond its bar in a stretch of fewer consecutive sizes of its series than a
    /// regression needs (three, or two in a series of fewer than six sizes): jitter, not judged
    /// a regression.
    Lone,
    /// One run per side: a point slower beyond its bar in a stretch of consecutive sizes long
    /// enough to be a regression with repeated runs. Back-to-back runs move such stretches of
    /// one collective (small sizes, by up to ~35% on the 2-core VM), so with one run per side it
    /// is shown, not judged.
    Slower,
    /// Within the threshold.
    Unchanged,
    /// A value that is not a positive time; no ratio.
    NoRatio,
}

impl Change {
    pub fn word(self) -> &'static str {
        match self {
            Change::Regression => "REGRESSION",
            Change::Improvement => "improved",
            Change::WithinNoise => "noise",
            Change::Lone => "lone",
            Change::Slower => "slower",
            Change::Unchanged => "ok",
            Change::NoRatio => "n/a",
        }
    }
}

/// One point's judgement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
    /// Each side's value: its run's, or the geometric mean over its runs (µs).
    pub base: f64,
    pub new: f64,
    /// new / base.
    pub ratio: f64,
    /// (ratio − 1) × 100.
    pub change_pct: f64,
    /// The change relative to the run's level (see [`classify_all`]), in percent: what is judged.
    pub rel_pct: f64,
    /// The same change, in the other statistic (mean when the median is judged).
    pub other_change_pct: f64,
    /// Standard error of the relative ln ratio.
    pub se: f64,
    /// The relative slowdown (percent) beyond which this point is a regression.
    pub bar_pct: f64,
    /// The relative speed-up (percent, positive) beyond which it is an improvement.
    pub bar_down_pct: f64,
    pub verdict: Change,
}

/// One series' judgement: the median over its sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesJudgement<'a> {
    pub key: &'a Key,
    /// Points of the series with a ratio.
    pub sizes: usize,
    /// The series' shift: exp of the median over sizes of ln(new / base) (between the sides'
    /// mean levels with several runs).
    pub ratio: f64,
    pub change_pct: f64,
    /// The shift relative to the run's level (percent): what is judged.
    pub rel_pct: f64,
    /// The series' shift in the other statistic.
    pub other_change_pct: f64,
    pub se: f64,
    pub bar_pct: f64,
    pub bar_down_pct: f64,
    pub verdict: Change,
}

/// The shift of the whole run: the median over series of each series' shift.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Common {
    pub change_pct: f64,
    /// Its standard error between runs; None with one run per side (no way to know it).
    pub se: Option<f64>,
    /// The slowdown beyond which it fails the gate: `--drift` with one run per side; the
    /// threshold or the between-run noise with several.
    pub bar_pct: f64,
    pub bar_down_pct: f64,
    pub verdict: Change,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison<'a> {
    pub noise: Noise,
    /// Typical noise of a series' relative shift, in percent (exp(median σ) − 1).
    pub series_noise_pct: f64,
    /// Typical noise of a point's relative change, in percent.
    pub point_noise_pct: f64,
    /// The quantiles used, and the number of tests each is shared over (Bonferroni); with
    /// several runs they are Student's t quantiles with the pooled degrees of freedom.
    pub z_point: f64,
    pub n_points: usize,
    pub z_series: f64,
    pub n_series: usize,
    /// In the points' order.
    pub points: Vec<Judgement>,
    /// Series of three sizes or more.
    pub series: Vec<SeriesJudgement<'a>>,
    pub common: Common,
}

/// The verdict on a relative change `rel` (ln) with standard error `se`, and an absolute change
/// `abs` (ln): (bar up %, bar down %, verdict). A regression must be slower than the bar
/// relative to the rest of the run AND slower than the threshold in itself (a series that held
/// still while the rest of the run got faster did not regress); an improvement likewise.
fn classify(rel: f64, abs: f64, se: f64, z: f64, threshold_pct: f64) -> (f64, f64, Change) {
    let t = threshold_pct / 100.0;
    let up = t.max((z * se).exp() - 1.0);
    let down = t.max(1.0 - (-z * se).exp());
    let (r, a) = (rel.exp() - 1.0, abs.exp() - 1.0);
    let v = if r > up && a > t {
        Change::Regression
    } else if r < -down && a < -t {
        Change::Improvement
    } else if r.abs() > t || a.abs() > t {
        Change::WithinNoise
    } else {
        Change::Unchanged
    };
    (up * 100.0, down * 100.0, v)
}

pub(super) fn pct(l: f64) -> f64 {
    (l.exp() - 1.0) * 100.0
}

pub(super) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Judge every point, every series and the whole run. `m` and `k`: the runs on each side.
///
/// Every run r gets, per point p, its deviation y(r,p) = ln value − the point's mean ln over all
/// runs of both sides; per series s, its level S(r,s) = the median of y over the series' sizes;
/// and per collective C, a reference R(r,C) = the median level of every series when the runs
/// have three collectives or more (one that moved is a minority), else of the series of the
/// OTHER collective (of every series when there is no other). A series' (or a point's)
/// relative change is the difference between the sides' mean of S − R (of y − R): the whole run
/// moving (drift) moves R with it, a collective moving alone does not. The whole run's shift is
/// the difference between the sides' mean of L(r) = the median level over all series.
pub fn classify_all<'a>(points: &[Point<'a>], m: usize, k: usize, s: &Settings) -> Comparison<'a> {
    let noise = if m >= 2 || k >= 2 { Noise::BetweenRuns } else { Noise::BetweenSeries };
    let runs = m + k;
    // ln of every run's value (base runs then new runs); None where a value is not a positive time.
    let logs = |p: &Point, st: Stat| -> Option<Vec<f64>> {
        p.base.iter().chain(&p.new).map(|r| st.of(r)).map(|v| (v > 0.0 && v.is_finite()).then(|| v.ln())).collect()
    };
    let lv: Vec<Option<Vec<f64>>> = points.iter().map(|p| logs(p, s.stat)).collect();
    let lo: Vec<Option<Vec<f64>>> = points.iter().map(|p| logs(p, s.stat.other())).collect();
    // Deviation of each run from the point's mean over all runs.
    let dev = |l: &Vec<f64>| -> Vec<f64> {
        let c = mean(l);
        l.iter().map(|x| x - c).collect()
    };
    let y: Vec<Option<Vec<f64>>> = lv.iter().map(|l| l.as_ref().map(dev)).collect();
    let yo: Vec<Option<Vec<f64>>> = lo.iter().map(|l| l.as_ref().map(dev)).collect();
    // The change between the sides of per-run values: mean of new − mean of base.
    let diff = |v: &[f64]| mean(&v[m..]) - mean(&v[..m]);
    let ls: Vec<Option<f64>> = y.iter().map(|v| v.as_ref().map(|v| diff(v))).collect();

    // Series: indices of their points, by size; those with three sizes or more are judged.
    let mut series: Vec<(&Key, Vec<usize>)> = vec![];
    for (i, p) in points.iter().enumerate() {
        match series.iter_mut().find(|(k, _)| k.series() == p.key.series()) {
            Some((_, idx)) => idx.push(i),
            None => series.push((p.key, vec![i])),
        }
    }
    for (_, idx) in series.iter_mut() {
        idx.sort_by_key(|i| points[*i].key.size_bytes);
        idx.retain(|i| ls[*i].is_some());
    }
    let judged: Vec<usize> = (0..series.len()).filter(|j| series[*j].1.len() >= 3).collect();
    // Per-run level of a series.
    let level = |ys: &[Option<Vec<f64>>], idx: &[usize], r: usize| -> f64 {
        median(idx.iter().filter_map(|i| ys[*i].as_ref().map(|v| v[r])))
    };
    let levels: Vec<Vec<f64>> = series.iter().map(|(_, idx)| (0..runs).map(|r| level(&y, idx, r)).collect()).collect();
    let levels_other: Vec<Vec<f64>> =
        series.iter().map(|(_, idx)| (0..runs).map(|r| level(&yo, idx, r)).collect()).collect();
    // The series a collective's reference is made of: judged series of other collectives, or
    // every judged series when there is none (or every series when none is judged).
    let basis: Vec<usize> = if judged.is_empty() { (0..series.len()).collect() } else { judged.clone() };
    // With three collectives or more, one that moved is a minority of the series and the median
    // over all of them is the run's level; with two, each is judged against the other (the
    // absolute change then tells which of them moved).
    let collectives: HashSet<&str> = basis.iter().map(|j| series[*j].0.collective.as_str()).collect();
    let reference_of = |coll: &str| -> Vec<usize> {
        let others: Vec<usize> = basis.iter().copied().filter(|j| series[*j].0.collective != coll).collect();
        if others.is_empty() || collectives.len() >= 3 {
            basis.clone()
        } else {
            others
        }
    };
    // R(r, C) per series (by its collective), and L(r).
    let refs: Vec<Vec<f64>> = series
        .iter()
        .map(|(key, _)| {
            let from = reference_of(&key.collective);
            (0..runs).map(|r| median(from.iter().map(|j| levels[*j][r]))).collect()
        })
        .collect();
    let run_level: Vec<f64> = (0..runs).map(|r| median(basis.iter().map(|j| levels[*j][r]))).collect();
    // Relative per-run values: series levels and point deviations against their reference.
    let zs: Vec<Vec<f64>> = (0..series.len()).map(|j| (0..runs).map(|r| levels[j][r] - refs[j][r]).collect()).collect();
    let series_of: Vec<Option<usize>> =
        (0..points.len()).map(|i| series.iter().position(|(_, idx)| idx.contains(&i))).collect();
    let zp: Vec<Option<Vec<f64>>> = (0..points.len())
        .map(|i| {
            let j = series_of[i]?;
            y[i].as_ref().map(|v| (0..runs).map(|r| v[r] - refs[j][r]).collect())
        })
        .collect();
    let scale = (1.0 / m as f64 + 1.0 / k as f64).sqrt();

    // Noise: the standard error of each series' and point's relative change, and the quantiles.
    let n_points = ls.iter().filter(|l| l.is_some()).count();
    let n_series = judged.len();
    let mut se_series = vec![f64::NAN; series.len()];
    let mut se_point = vec![f64::NAN; points.len()];
    let (z_point, z_series);
    let mut common_se = None;
    match noise {
        Noise::BetweenRuns => {
            // Series: the between-run variance of S − R, pooled over the judged series (each
            // series alone has only a few runs); t with the pooled degrees of freedom.
            let groups: Vec<Vec<f64>> =
                judged.iter().flat_map(|j| [zs[*j][..m].to_vec(), zs[*j][m..].to_vec()]).collect();
            let refs_g: Vec<&[f64]> = groups.iter().map(|g| &g[..]).collect();
            let (v, df) = pooled(&refs_g).unwrap_or((0.0, 1));
            for j in &judged {
                se_series[*j] = v.sqrt() * scale;
            }
            z_series = t_for(s.alpha, n_series, df);
            // Points: per series, the between-run variance of y − R over its sizes, pooled.
            let mut dfs = vec![];
            for (_, idx) in &series {
                let groups: Vec<Vec<f64>> = idx
                    .iter()
                    .filter_map(|i| zp[*i].as_ref())
                    .flat_map(|v| [v[..m].to_vec(), v[m..].to_vec()])
                    .collect();
                let g: Vec<&[f64]> = groups.iter().map(|g| &g[..]).collect();
                let (v, df) = pooled(&g).unwrap_or((0.0, 1));
                dfs.push(df);
                for i in idx {
                    se_point[*i] = v.sqrt() * scale;
                }
            }
            z_point = t_for(s.alpha, n_points, dfs.into_iter().min().unwrap_or(1));
            // The whole run: the between-run variance of L.
            common_se = pooled(&[&run_level[..m], &run_level[m..]]).map(|(v, df)| (v.sqrt() * scale, df));
        }
        Noise::BetweenSeries => {
            // One run per side. Series: the spread of the other collectives' series around
            // their median (MAD), never below the series' own jitter between sizes (the median's
            // error, 1.2533 σ / √n). Points: that spread and the jitter between neighbouring
            // sizes (never below the jitter of the whole comparison) together.
            let steps_of = |idx: &[usize]| -> Vec<f64> {
                let l: Vec<f64> = idx.iter().filter_map(|i| ls[*i]).collect();
                l.windows(2).map(|w| w[1] - w[0]).collect()
            };
            let all: Vec<f64> = series.iter().flat_map(|(_, idx)| steps_of(idx)).collect();
            let global = step_noise(&all).unwrap_or(0.0);
            for (j, (key, idx)) in series.iter().enumerate() {
                let steps = steps_of(idx);
                let own = if steps.len() >= 3 { step_noise(&steps).unwrap_or(0.0) } else { 0.0 };
                let jitter = own.max(global);
                let others: Vec<usize> =
                    basis.iter().copied().filter(|o| series[*o].0.collective != key.collective).collect();
                let between = if others.len() >= 2 {
                    mad_sigma(&others.iter().map(|o| diff(&levels[*o])).collect::<Vec<_>>()).unwrap_or(0.0)
                } else {
                    0.0
                };
                let n = idx.len().max(1) as f64;
                se_series[j] = between.max(1.2533 * jitter / n.sqrt());
                for i in idx {
                    // How much the other collectives moved at this very size (a stretch of small
                    // sizes often moves together between runs): their spread (MAD), if two or more.
                    let size = points[*i].key.size_bytes;
                    let here: Vec<f64> = others
                        .iter()
                        .flat_map(|o| series[*o].1.iter())
                        .filter(|q| points[**q].key.size_bytes == size)
                        .filter_map(|q| ls[*q])
                        .collect();
                    let local = if here.len() >= 2 { mad_sigma(&here).unwrap_or(0.0) } else { 0.0 };
                    se_point[*i] = (between * between + jitter * jitter + local * local).sqrt();
                }
            }
            z_series = z_for(s.alpha, n_series);
            z_point = z_for(s.alpha, n_points);
        }
    }

    // Points.
    let mut judged_points: Vec<Judgement> = points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let side = |rows: &[&Row], st: Stat| -> f64 {
                let l: Option<Vec<f64>> =
                    rows.iter().map(|r| st.of(r)).map(|v| (v > 0.0 && v.is_finite()).then(|| v.ln())).collect();
                match l {
                    Some(l) => mean(&l).exp(),
                    None => median(rows.iter().map(|r| st.of(r))),
                }
            };
            let (b, n) = (side(&p.base, s.stat), side(&p.new, s.stat));
            let other = ln_ratio(side(&p.base, s.stat.other()), side(&p.new, s.stat.other())).map_or(f64::NAN, pct);
            let rel = zp[i].as_ref().map(|v| diff(v));
            let (bar_pct, bar_down_pct, v) = match (ls[i], rel) {
                (Some(l), Some(r)) => classify(r, l, se_point[i], z_point, s.threshold_pct),
                _ => (f64::NAN, f64::NAN, Change::NoRatio),
            };
            Judgement {
                base: b,
                new: n,
                ratio: ls[i].map_or(f64::NAN, f64::exp),
                change_pct: ls[i].map_or(f64::NAN, pct),
                rel_pct: rel.map_or(f64::NAN, pct),
                other_change_pct: other,
                se: se_point[i],
                bar_pct,
                bar_down_pct,
                verdict: v,
            }
        })
        .collect();
    // A point regression needs neighbouring sizes of its series to have regressed too: a stretch
    // of at least three consecutive sizes (two in a series of fewer than six sizes; a series of
    // one or two sizes has no neighbours to ask). One or two sizes' jitter is not a regression.
    for (_, idx) in &series {
        if idx.len() < 3 {
            continue;
        }
        let need = if idx.len() >= 6 { 3 } else { 2 };
        let regressed: Vec<bool> = idx.iter().map(|i| judged_points[*i].verdict == Change::Regression).collect();
        let mut start = 0;
        while start < idx.len() {
            let end = (start..idx.len()).find(|e| regressed[*e] != regressed[start]).unwrap_or(idx.len());
            if regressed[start] && (end - start < need || noise == Noise::BetweenSeries) {
                let v = if end - start < need { Change::Lone } else { Change::Slower };
                for i in &idx[start..end] {
                    judged_points[*i].verdict = v;
                }
            }
            start = end;
        }
    }

    // Series.
    let series_out: Vec<SeriesJudgement> = judged
        .iter()
        .map(|j| {
            let (key, idx) = &series[*j];
            let (rel, abs) = (diff(&zs[*j]), diff(&levels[*j]));
            let (bar_pct, bar_down_pct, v) = classify(rel, abs, se_series[*j], z_series, s.threshold_pct);
            SeriesJudgement {
                key,
                sizes: idx.len(),
                ratio: abs.exp(),
                change_pct: pct(abs),
                rel_pct: pct(rel),
                other_change_pct: pct(diff(&levels_other[*j])),
                se: se_series[*j],
                bar_pct,
                bar_down_pct,
                verdict: v,
            }
        })
        .collect();

    // The whole run: its shift is the median over series; it moved only if every collective
    // moved that way (each collective's shift: the median over its series), so one collective
    // that moved alone is that collective's change, not the run's.
    let shift = diff(&run_level);
    let by_collective: Vec<f64> = collectives
        .iter()
        .map(|c| median(basis.iter().filter(|j| series[**j].0.collective == *c).map(|j| diff(&levels[*j]))))
        .collect();
    let (least_up, least_down) = (
        by_collective.iter().copied().fold(f64::INFINITY, f64::min),
        by_collective.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let everywhere = |v: Change, bar_up: f64, bar_down: f64| match v {
        Change::Regression if pct(least_up) <= bar_up => Change::WithinNoise,
        Change::Improvement if pct(least_down) >= -bar_down => Change::WithinNoise,
        v => v,
    };
    let common = match (noise, common_se) {
        (Noise::BetweenRuns, Some((se, df))) => {
            let (bar_pct, bar_down_pct, verdict) = classify(shift, shift, se, t_for(s.alpha, 1, df), s.threshold_pct);
            let verdict = everywhere(verdict, bar_pct, bar_down_pct);
            Common { change_pct: pct(shift), se: Some(se), bar_pct, bar_down_pct, verdict }
        }
        _ => {
            // One run per side: drift and a change common to everything look the same; only a
            // shift beyond --drift fails the gate.
            let d = s.drift_pct.max(s.threshold_pct);
            let (_, _, verdict) = classify(shift, shift, 0.0, 0.0, d);
            let verdict = match everywhere(verdict, d, d) {
                Change::Unchanged if pct(shift).abs() > s.threshold_pct => Change::WithinNoise,
                v => v,
            };
            Common { change_pct: pct(shift), se: None, bar_pct: d, bar_down_pct: d, verdict }
        }
    };

    let typical = |v: &[f64]| {
        let t = median(v.iter().copied().filter(|x| x.is_finite()));
        if t.is_finite() {
            pct(t)
        } else {
            0.0
        }
    };
    Comparison {
        noise,
        series_noise_pct: typical(&judged.iter().map(|j| se_series[*j]).collect::<Vec<_>>()),
        point_noise_pct: typical(&se_point),
        z_point,
        n_points,
        z_series,
        n_series,
        points: judged_points,
        series: series_out,
        common,
    }
}
