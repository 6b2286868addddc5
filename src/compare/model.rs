//! The model: how a point, a series and the whole run changed, against which noise.

use super::matching::Point;
use super::stats::{ln_ratio, mad_sigma, median, pooled, step_noise, t_for, z_for};
use crate::csvread::{Key, Row};
use std::collections::HashSet;

/// Which statistic of each run is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    Median,
    Mean,
}

impl Stat {
    pub fn parse(s: &str) -> Option<Stat> {
        match s.trim() {
            "median" => Some(Stat::Median),
            "mean" => Some(Stat::Mean),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Stat::Median => "median",
            Stat::Mean => "mean",
        }
    }
    pub(crate) fn other(self) -> Stat {
        match self {
            Stat::Median => Stat::Mean,
            Stat::Mean => Stat::Median,
        }
    }
    pub(crate) fn of(self, r: &Row) -> f64 {
        match self {
            Stat::Median => r.median_us,
            Stat::Mean => r.time_us,
        }
    }
    /// The CSV column it comes from.
    pub(crate) fn column(self) -> &'static str {
        match self {
            Stat::Median => "median_us",
            Stat::Mean => "time_us",
        }
    }
}

/// The judgement's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub stat: Stat,
    /// Percent.
    pub threshold_pct: f64,
    pub alpha: f64,
    /// Percent: with one run per side, the shift of the whole run that fails the gate.
    pub drift_pct: f64,
}

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
    /// One run per side: stretches of consecutive sizes slower than the threshold, judged as one.
    pub stretches: Vec<Stretch<'a>>,
    /// One run per side: the correlation of neighbouring sizes' relative changes (ρ), measured on
    /// this comparison; 0 with several runs per side.
    pub neighbour_rho: f64,
    pub common: Common,
}

impl Comparison<'_> {
    /// Whether anything regressed: a point, a stretch, a series or the whole run. The exit code
    /// and the summary line both come from here, so they cannot disagree.
    pub fn regressed(&self) -> bool {
        self.regressed_points() > 0
            || self.stretches.iter().any(|s| s.verdict == Change::Regression)
            || self.series.iter().any(|s| s.verdict == Change::Regression)
            || self.common.verdict == Change::Regression
    }
    pub fn regressed_points(&self) -> usize {
        self.points.iter().filter(|j| j.verdict == Change::Regression).count()
    }
}

/// One run per side: a stretch of consecutive sizes of one series, each slower than the
/// threshold relative to the run and in itself, judged as one (the mean of its relative changes
/// against their noise, neighbouring sizes counted as moving together by ρ).
#[derive(Clone, Debug, PartialEq)]
pub struct Stretch<'a> {
    pub key: &'a Key,
    /// Indices of its points (in the points' order), by size.
    pub points: Vec<usize>,
    pub min_bytes: u64,
    pub max_bytes: u64,
    /// The mean over its sizes of the change, and of the change relative to the run (percent).
    pub change_pct: f64,
    pub rel_pct: f64,
    /// Standard error of the mean relative ln change.
    pub se: f64,
    /// The relative slowdown beyond which it is a regression (percent).
    pub bar_pct: f64,
    pub verdict: Change,
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
///
/// The phases, in order: [`Deviations`] (y), [`Levels`] (S, R, L), [`Relative`] (S − R, y − R),
/// the noise ([`noise_between_runs`] or [`noise_between_series`]), then the verdicts:
/// [`judge_points`], [`judge_stretches`] (a point counts only in a stretch of sizes),
/// [`judge_series`], [`judge_whole_run`].
pub fn classify_all<'a>(points: &[Point<'a>], m: usize, k: usize, s: &Settings) -> Comparison<'a> {
    let noise = if m >= 2 || k >= 2 { Noise::BetweenRuns } else { Noise::BetweenSeries };
    let y = Deviations::of(points, m, s.stat);
    let lv = Levels::of(points, &y, m + k);
    let rel = Relative::of(points.len(), &y, &lv);
    let nz = match noise {
        Noise::BetweenRuns => noise_between_runs(&y, &lv, &rel, m, k, s),
        Noise::BetweenSeries => noise_between_series(points, &y, &lv, s),
    };
    let mut judged_points = judge_points(points, &y, &rel, &nz, s);
    let stretches = judge_stretches(points, &y, &lv, &rel, &nz, noise, s, &mut judged_points);
    let series = judge_series(&y, &lv, &rel, &nz, s);
    let common = judge_whole_run(&y, &lv, &nz, noise, s);
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
        series_noise_pct: typical(&lv.judged.iter().map(|j| nz.se_series[*j]).collect::<Vec<_>>()),
        point_noise_pct: typical(&nz.se_point),
        z_point: nz.z_point,
        n_points: nz.n_points,
        z_series: nz.z_series,
        n_series: lv.judged.len(),
        points: judged_points,
        series,
        stretches,
        neighbour_rho: nz.rho,
        common,
    }
}

/// The change between the sides of per-run values `v` (base runs then new): mean of new − mean
/// of base.
fn diff(v: &[f64], m: usize) -> f64 {
    mean(&v[m..]) - mean(&v[..m])
}

/// ln of every run's value of a point (base runs then new runs); None where one is not a
/// positive time.
fn logs(p: &Point, st: Stat) -> Option<Vec<f64>> {
    p.base.iter().chain(&p.new).map(|r| st.of(r)).map(|v| (v > 0.0 && v.is_finite()).then(|| v.ln())).collect()
}

/// Phase 1: y(r,p), each run's deviation from the point's mean ln over all runs, in the judged
/// statistic and the other one, and each point's change between the sides.
struct Deviations {
    /// Base runs.
    m: usize,
    y: Vec<Option<Vec<f64>>>,
    y_other: Vec<Option<Vec<f64>>>,
    /// diff of y: the point's ln change new / base; None without a ratio.
    change: Vec<Option<f64>>,
}

impl Deviations {
    fn of(points: &[Point], m: usize, st: Stat) -> Deviations {
        let dev = |l: Vec<f64>| -> Vec<f64> {
            let c = mean(&l);
            l.iter().map(|x| x - c).collect()
        };
        let y: Vec<Option<Vec<f64>>> = points.iter().map(|p| logs(p, st).map(dev)).collect();
        let y_other = points.iter().map(|p| logs(p, st.other()).map(dev)).collect();
        let change = y.iter().map(|v| v.as_ref().map(|v| diff(v, m))).collect();
        Deviations { m, y, y_other, change }
    }
    fn diff(&self, v: &[f64]) -> f64 {
        diff(v, self.m)
    }
}

/// Phase 2: the series and their levels S(r,s), the references R(r,C), the run's level L(r).
struct Levels<'a> {
    /// Each series' first key and its points with a ratio, by size.
    series: Vec<(&'a Key, Vec<usize>)>,
    /// Series of three sizes or more: the judged ones.
    judged: Vec<usize>,
    /// The series references and the whole run are made of: the judged ones (every series when
    /// none is judged).
    basis: Vec<usize>,
    collectives: HashSet<&'a str>,
    /// S(r,s) per series and run, in the judged statistic and the other one.
    level: Vec<Vec<f64>>,
    level_other: Vec<Vec<f64>>,
    /// R(r,C) per series (by its collective) and run.
    reference: Vec<Vec<f64>>,
    /// L(r) per run.
    run_level: Vec<f64>,
    /// The series of each point (None for a point without a ratio).
    series_of: Vec<Option<usize>>,
}

impl<'a> Levels<'a> {
    fn of(points: &[Point<'a>], d: &Deviations, runs: usize) -> Levels<'a> {
        let mut series: Vec<(&Key, Vec<usize>)> = vec![];
        for (i, p) in points.iter().enumerate() {
            match series.iter_mut().find(|(k, _)| k.series() == p.key.series()) {
                Some((_, idx)) => idx.push(i),
                None => series.push((p.key, vec![i])),
            }
        }
        for (_, idx) in series.iter_mut() {
            idx.sort_by_key(|i| points[*i].key.size_bytes);
            idx.retain(|i| d.change[*i].is_some());
        }
        let judged: Vec<usize> = (0..series.len()).filter(|j| series[*j].1.len() >= 3).collect();
        let level_of = |ys: &[Option<Vec<f64>>], idx: &[usize]| -> Vec<f64> {
            (0..runs).map(|r| median(idx.iter().filter_map(|i| ys[*i].as_ref().map(|v| v[r])))).collect()
        };
        let level: Vec<Vec<f64>> = series.iter().map(|(_, idx)| level_of(&d.y, idx)).collect();
        let level_other = series.iter().map(|(_, idx)| level_of(&d.y_other, idx)).collect();
        let basis: Vec<usize> = if judged.is_empty() { (0..series.len()).collect() } else { judged.clone() };
        // With three collectives or more, one that moved is a minority of the series and the
        // median over all of them is the run's level; with two, each is judged against the other
        // (the absolute change then tells which of them moved).
        let collectives: HashSet<&str> = basis.iter().map(|j| series[*j].0.collective.as_str()).collect();
        let reference = series
            .iter()
            .map(|(key, _)| {
                let others: Vec<usize> =
                    basis.iter().copied().filter(|j| series[*j].0.collective != key.collective).collect();
                let from = if others.is_empty() || collectives.len() >= 3 { &basis } else { &others };
                (0..runs).map(|r| median(from.iter().map(|j| level[*j][r]))).collect()
            })
            .collect();
        let run_level = (0..runs).map(|r| median(basis.iter().map(|j| level[*j][r]))).collect();
        let series_of = (0..points.len()).map(|i| series.iter().position(|(_, idx)| idx.contains(&i))).collect();
        Levels { series, judged, basis, collectives, level, level_other, reference, run_level, series_of }
    }

    /// The judged series of collectives other than `coll`.
    fn others(&self, coll: &str) -> Vec<usize> {
        self.basis.iter().copied().filter(|o| self.series[*o].0.collective != coll).collect()
    }
}

/// Phase 3: relative per-run values: S − R per series, y − R per point.
struct Relative {
    series: Vec<Vec<f64>>,
    points: Vec<Option<Vec<f64>>>,
}

impl Relative {
    fn of(n: usize, d: &Deviations, lv: &Levels) -> Relative {
        let series = (0..lv.series.len())
            .map(|j| lv.level[j].iter().zip(&lv.reference[j]).map(|(s, r)| s - r).collect())
            .collect();
        let points = (0..n)
            .map(|i| {
                let j = lv.series_of[i]?;
                d.y[i].as_ref().map(|v| v.iter().zip(&lv.reference[j]).map(|(y, r)| y - r).collect())
            })
            .collect();
        Relative { series, points }
    }
}

/// Phase 4: the noise — the standard error of each series' and point's relative change, and the
/// quantiles they are judged at.
struct NoiseModel {
    se_series: Vec<f64>,
    se_point: Vec<f64>,
    z_point: f64,
    n_points: usize,
    z_series: f64,
    /// The whole run's between-run standard error and degrees of freedom (several runs only).
    common_se: Option<(f64, usize)>,
    /// One run per side: the correlation of neighbouring sizes' relative changes.
    rho: f64,
}

/// Several runs per side: the between-run spread of the relative levels, pooled (Student's t).
fn noise_between_runs(d: &Deviations, lv: &Levels, rel: &Relative, m: usize, k: usize, s: &Settings) -> NoiseModel {
    let scale = (1.0 / m as f64 + 1.0 / k as f64).sqrt();
    let n_points = d.change.iter().filter(|l| l.is_some()).count();
    let mut se_series = vec![f64::NAN; lv.series.len()];
    let mut se_point = vec![f64::NAN; d.change.len()];
    // Series: the between-run variance of S − R, pooled over the judged series (each series
    // alone has only a few runs); t with the pooled degrees of freedom.
    let groups: Vec<Vec<f64>> =
        lv.judged.iter().flat_map(|j| [rel.series[*j][..m].to_vec(), rel.series[*j][m..].to_vec()]).collect();
    let refs_g: Vec<&[f64]> = groups.iter().map(|g| &g[..]).collect();
    let (v, df) = pooled(&refs_g).unwrap_or((0.0, 1));
    for j in &lv.judged {
        se_series[*j] = v.sqrt() * scale;
    }
    let z_series = t_for(s.alpha, lv.judged.len(), df);
    // Points: per series, the between-run variance of y − R over its sizes, pooled.
    let mut dfs = vec![];
    for (_, idx) in &lv.series {
        let groups: Vec<Vec<f64>> = idx
            .iter()
            .filter_map(|i| rel.points[*i].as_ref())
            .flat_map(|v| [v[..m].to_vec(), v[m..].to_vec()])
            .collect();
        let g: Vec<&[f64]> = groups.iter().map(|g| &g[..]).collect();
        let (v, df) = pooled(&g).unwrap_or((0.0, 1));
        dfs.push(df);
        for i in idx {
            se_point[*i] = v.sqrt() * scale;
        }
    }
    let z_point = t_for(s.alpha, n_points, dfs.into_iter().min().unwrap_or(1));
    // The whole run: the between-run variance of L.
    let common_se = pooled(&[&lv.run_level[..m], &lv.run_level[m..]]).map(|(v, df)| (v.sqrt() * scale, df));
    NoiseModel { se_series, se_point, z_point, n_points, z_series, common_se, rho: 0.0 }
}

/// The within-run standard error of ln of a row's median, from its 95% interval; 0 where the
/// row has none (fewer than 6 samples, or a file without the columns).
fn within_run_se(r: &Row) -> f64 {
    match r.median_ci95_us {
        Some((lo, hi)) if lo > 0.0 && hi >= lo => (hi / lo).ln() / (2.0 * 1.96),
        _ => 0.0,
    }
}

/// One run per side. Series: the spread (MAD) of the other collectives' series, never below
/// the series' own jitter between sizes (the median's error, 1.2533 σ / √n). Points: that
/// spread, the jitter between neighbouring sizes (never below the jitter of the whole
/// comparison), how much the other collectives moved at the same size, and each run's own
/// interval of the point's median together.
fn noise_between_series(points: &[Point], d: &Deviations, lv: &Levels, s: &Settings) -> NoiseModel {
    let n_points = d.change.iter().filter(|l| l.is_some()).count();
    let mut se_series = vec![f64::NAN; lv.series.len()];
    let mut se_point = vec![f64::NAN; points.len()];
    let steps_of = |idx: &[usize]| -> Vec<f64> {
        let l: Vec<f64> = idx.iter().filter_map(|i| d.change[*i]).collect();
        l.windows(2).map(|w| w[1] - w[0]).collect()
    };
    let all: Vec<f64> = lv.series.iter().flat_map(|(_, idx)| steps_of(idx)).collect();
    let global = step_noise(&all).unwrap_or(0.0);
    for (j, (key, idx)) in lv.series.iter().enumerate() {
        let steps = steps_of(idx);
        let own = if steps.len() >= 3 { step_noise(&steps).unwrap_or(0.0) } else { 0.0 };
        let jitter = own.max(global);
        let others = lv.others(&key.collective);
        let between = if others.len() >= 2 {
            mad_sigma(&others.iter().map(|o| d.diff(&lv.level[*o])).collect::<Vec<_>>()).unwrap_or(0.0)
        } else {
            0.0
        };
        let n = idx.len().max(1) as f64;
        se_series[j] = between.max(1.2533 * jitter / n.sqrt());
        for i in idx {
            // How much the other collectives moved at this very size (a stretch of small sizes
            // often moves together between runs): their spread (MAD), if two or more.
            let size = points[*i].key.size_bytes;
            let here: Vec<f64> = others
                .iter()
                .flat_map(|o| lv.series[*o].1.iter())
                .filter(|q| points[**q].key.size_bytes == size)
                .filter_map(|q| d.change[*q])
                .collect();
            let local = if here.len() >= 2 { mad_sigma(&here).unwrap_or(0.0) } else { 0.0 };
            let within: f64 = points[*i].base.iter().chain(&points[*i].new).map(|r| within_run_se(r).powi(2)).sum();
            se_point[*i] = (between * between + jitter * jitter + local * local + within).sqrt();
        }
    }
    let rho = neighbour_rho(d, lv, &se_point);
    NoiseModel {
        se_series,
        se_point,
        z_point: z_for(s.alpha, n_points),
        n_points,
        z_series: z_for(s.alpha, lv.judged.len()),
        common_se: None,
        rho,
    }
}

/// The correlation of neighbouring sizes' relative changes, standardised by their noise and
/// pooled over the series (lag 1, about the median, each clipped at ±3): how much adjacent sizes
/// move together between the two runs. Clamped to [0.5, 1]: at least half, so a stretch's noise
/// never shrinks as fast as that of independent points.
fn neighbour_rho(d: &Deviations, lv: &Levels, se: &[f64]) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for (_, idx) in &lv.series {
        let u: Vec<Option<f64>> = idx
            .iter()
            .map(|i| {
                let j = lv.series_of[*i]?;
                let r = d.change[*i]? - d.diff(&lv.reference[j]);
                (se[*i].is_finite() && se[*i] > 0.0).then(|| (r / se[*i]).clamp(-3.0, 3.0))
            })
            .collect();
        let c = median(u.iter().flatten().copied());
        for w in u.windows(2) {
            if let (Some(a), Some(b)) = (w[0], w[1]) {
                num += (a - c) * (b - c);
                den += ((a - c).powi(2) + (b - c).powi(2)) / 2.0;
            }
        }
    }
    if den > 0.0 {
        (num / den).clamp(0.5, 1.0)
    } else {
        1.0
    }
}

/// Phase 5: each point on its own (its bar and verdict), before the stretch rule.
fn judge_points(points: &[Point], d: &Deviations, rel: &Relative, nz: &NoiseModel, s: &Settings) -> Vec<Judgement> {
    points
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
            let r = rel.points[i].as_ref().map(|v| d.diff(v));
            let (bar_pct, bar_down_pct, v) = match (d.change[i], r) {
                (Some(l), Some(r)) => classify(r, l, nz.se_point[i], nz.z_point, s.threshold_pct),
                _ => (f64::NAN, f64::NAN, Change::NoRatio),
            };
            Judgement {
                base: b,
                new: n,
                ratio: d.change[i].map_or(f64::NAN, f64::exp),
                change_pct: d.change[i].map_or(f64::NAN, pct),
                rel_pct: r.map_or(f64::NAN, pct),
                other_change_pct: other,
                se: nz.se_point[i],
                bar_pct,
                bar_down_pct,
                verdict: v,
            }
        })
        .collect()
}

/// Phase 6: a point regression needs neighbouring sizes of its series to have moved too: a
/// stretch of at least three consecutive sizes (two in a series of fewer than six; a series of
/// one or two sizes has no neighbours to ask). One or two sizes' jitter is `lone`.
///
/// Several runs per side: a stretch of points each beyond its own bar regressed. One run per
/// side: the points' own bars (shared over every point) are too wide for a slowdown of a third
/// of a series, so a stretch of sizes each slower than the threshold (relative to the run and in
/// itself) is judged as one: the mean of its relative changes (weighted by each point's noise,
/// [`stretch_mean`]) against the standard error of that mean when neighbouring sizes move
/// together by ρ, at `--alpha` shared over the series. Its points take its verdict.
#[allow(clippy::too_many_arguments)]
fn judge_stretches<'a>(
    points: &[Point<'a>],
    d: &Deviations,
    lv: &Levels<'a>,
    rel: &Relative,
    nz: &NoiseModel,
    noise: Noise,
    s: &Settings,
    judged: &mut [Judgement],
) -> Vec<Stretch<'a>> {
    let mut out = vec![];
    for (key, idx) in &lv.series {
        if idx.len() < 3 {
            continue;
        }
        let need = if idx.len() >= 6 { 3 } else { 2 };
        // One run per side, a point of unknown noise neither joins nor breaks a stretch.
        let idx: Vec<usize> = match noise {
            Noise::BetweenRuns => idx.clone(),
            Noise::BetweenSeries => idx.iter().copied().filter(|i| nz.se_point[*i].is_finite()).collect(),
        };
        let member: Vec<bool> = match noise {
            Noise::BetweenRuns => idx.iter().map(|i| judged[*i].verdict == Change::Regression).collect(),
            Noise::BetweenSeries => idx
                .iter()
                .map(|i| {
                    let j = &judged[*i];
                    j.rel_pct > s.threshold_pct && j.change_pct > s.threshold_pct
                })
                .collect(),
        };
        let mut start = 0;
        while start < idx.len() {
            let end = (start..idx.len()).find(|e| member[*e] != member[start]).unwrap_or(idx.len());
            let run = &idx[start..end];
            if member[start] {
                match noise {
                    Noise::BetweenRuns if run.len() < need => {
                        run.iter().for_each(|i| judged[*i].verdict = Change::Lone)
                    }
                    Noise::BetweenRuns => {}
                    Noise::BetweenSeries if run.len() < need => {
                        for i in run {
                            if judged[*i].verdict == Change::Regression {
                                judged[*i].verdict = Change::Lone;
                            }
                        }
                    }
                    Noise::BetweenSeries => {
                        let rels: Vec<f64> =
                            run.iter().map(|i| d.diff(rel.points[*i].as_ref().expect("a ratio"))).collect();
                        let abs: Vec<f64> = run.iter().map(|i| d.change[*i].expect("a ratio")).collect();
                        let sig: Vec<f64> = run.iter().map(|i| nz.se_point[*i]).collect();
                        let (m_rel, se) = stretch_mean(&rels, &sig, nz.rho);
                        let (m_abs, _) = stretch_mean(&abs, &sig, nz.rho);
                        let (bar_pct, _, v) = classify(m_rel, m_abs, se, nz.z_series, s.threshold_pct);
                        let v = if v == Change::Regression { v } else { Change::WithinNoise };
                        for i in run {
                            judged[*i].verdict = v;
                        }
                        out.push(Stretch {
                            key,
                            points: run.to_vec(),
                            min_bytes: points[run[0]].key.size_bytes,
                            max_bytes: points[run[run.len() - 1]].key.size_bytes,
                            change_pct: pct(m_abs),
                            rel_pct: pct(m_rel),
                            se,
                            bar_pct,
                            verdict: v,
                        });
                    }
                }
            } else if noise == Noise::BetweenSeries {
                // Outside any stretch, one run per side: a point beyond its own bar is lone.
                for i in run {
                    if judged[*i].verdict == Change::Regression {
                        judged[*i].verdict = Change::Lone;
                    }
                }
            }
            start = end;
        }
    }
    out
}

/// The mean of a stretch's values `x` of noise `sig`, each weighted by 1/σ² (a point whose run
/// was noisy counts little), and its standard error when neighbours are correlated by `rho`:
/// Var = (Σ 1/σᵢ² + ρ Σ_{i≠j} 1/(σᵢσⱼ)) / (Σ 1/σᵢ²)². A zero σ counts as the smallest other
/// one (or 1e-6 when all are zero).
fn stretch_mean(x: &[f64], sig: &[f64], rho: f64) -> (f64, f64) {
    let floor = sig.iter().copied().filter(|s| *s > 0.0).fold(f64::INFINITY, f64::min);
    let floor = if floor.is_finite() { floor } else { 1e-6 };
    let sig: Vec<f64> = sig.iter().map(|s| s.max(floor)).collect();
    let w: Vec<f64> = sig.iter().map(|s| 1.0 / (s * s)).collect();
    let sw: f64 = w.iter().sum();
    let m = x.iter().zip(&w).map(|(x, w)| x * w).sum::<f64>() / sw;
    let inv: f64 = sig.iter().map(|s| 1.0 / s).sum();
    let cross = inv * inv - sw; // Σ_{i≠j} 1/(σᵢσⱼ)
    (m, ((sw + rho * cross).max(0.0)).sqrt() / sw)
}

/// Phase 7: each series of three sizes or more, on its shift relative to the run.
fn judge_series<'a>(
    d: &Deviations,
    lv: &Levels<'a>,
    rel: &Relative,
    nz: &NoiseModel,
    s: &Settings,
) -> Vec<SeriesJudgement<'a>> {
    lv.judged
        .iter()
        .map(|j| {
            let (key, idx) = &lv.series[*j];
            let (r, abs) = (d.diff(&rel.series[*j]), d.diff(&lv.level[*j]));
            let (bar_pct, bar_down_pct, v) = classify(r, abs, nz.se_series[*j], nz.z_series, s.threshold_pct);
            SeriesJudgement {
                key,
                sizes: idx.len(),
                ratio: abs.exp(),
                change_pct: pct(abs),
                rel_pct: pct(r),
                other_change_pct: pct(d.diff(&lv.level_other[*j])),
                se: nz.se_series[*j],
                bar_pct,
                bar_down_pct,
                verdict: v,
            }
        })
        .collect()
}

/// Phase 8: the whole run. Its shift is the median over series; it moved only if every
/// collective moved that way (each collective's shift: the median over its series), so one
/// collective that moved alone is that collective's change, not the run's.
fn judge_whole_run(d: &Deviations, lv: &Levels, nz: &NoiseModel, noise: Noise, s: &Settings) -> Common {
    let shift = d.diff(&lv.run_level);
    let by_collective: Vec<f64> = lv
        .collectives
        .iter()
        .map(|c| median(lv.basis.iter().filter(|j| lv.series[**j].0.collective == *c).map(|j| d.diff(&lv.level[*j]))))
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
    match (noise, nz.common_se) {
        (Noise::BetweenRuns, Some((se, df))) => {
            let (bar_pct, bar_down_pct, verdict) = classify(shift, shift, se, t_for(s.alpha, 1, df), s.threshold_pct);
            let verdict = everywhere(verdict, bar_pct, bar_down_pct);
            Common { change_pct: pct(shift), se: Some(se), bar_pct, bar_down_pct, verdict }
        }
        _ => {
            // One run per side: drift and a change common to everything look the same; only a
            // shift beyond --drift fails the gate.
            let dr = s.drift_pct.max(s.threshold_pct);
            let (_, _, verdict) = classify(shift, shift, 0.0, 0.0, dr);
            let verdict = match everywhere(verdict, dr, dr) {
                Change::Unchanged if pct(shift).abs() > s.threshold_pct => Change::WithinNoise,
                v => v,
            };
            Common { change_pct: pct(shift), se: None, bar_pct: dr, bar_down_pct: dr, verdict }
        }
    }
}
