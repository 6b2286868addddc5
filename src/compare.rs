//! `coll-bench compare BASE.csv NEW.csv`, or `compare BASE.csv… -- NEW.csv…`: did NEW get slower
//! than BASE, by more than repeating the same run on the same machine would explain?
//!
//! Points are matched on (collective, backend, dtype, op, placement, size). Each point is judged
//! on one statistic of each run (`--stat`: the median, default, or the mean — the table's time);
//! a side's value is the geometric mean over its runs, and the change is the ratio new / base.
//!
//! The noise that matters is between runs, not within one: thousands of samples make a run's own
//! interval tiny, while two back-to-back runs of the same sweep differ by far more — mostly all
//! together (the whole run a few percent faster or slower). So a change is judged relative to
//! the rest of the same run ([`classify_all`]):
//! - a series (collective × backend × type × op × placement, three sizes or more) regressed when
//!   its shift (the median over its sizes of ln new/base) minus the run's level (the median over
//!   every series; the other collective's when there are two) is beyond the noise at `--alpha`
//!   (Bonferroni over the series) and the series is slower than `--threshold` in itself. The noise:
//!   with one run per side, the spread (MAD) of the other collectives' series, never below the
//!   series' own jitter between sizes; with several, the between-run spread of each run's relative
//!   level, pooled over the series (Student's t);
//! - a point likewise, but only in a stretch of consecutive sizes (one or two sizes are `lone`),
//!   and only with several runs per side: with one, a stretch of one collective's sizes moves too
//!   much between back-to-back runs to be judged, and is shown as `slower`;
//! - the whole run (the median over series) cannot be told from drift with one run per side: it
//!   fails only beyond `--drift`; with several, by the between-run spread of the runs' levels;
//!   either way only if every collective moved.
//!
//! Exit 1 if a series, a point or the whole run regressed, 0 if none, 2 on error. Points only in
//! one side are listed, never judged. The flags are parsed by `cli::compare`.

use crate::csvread::{self, Key, Row};
use crate::error::{exit, Error, Result};
use crate::size::human;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

/// The accepted form, named by every usage error.
pub const FORM: &str = "coll-bench compare BASE.csv NEW.csv, or BASE.csv... -- NEW.csv... [--stat median|mean] [--threshold PCT] [--alpha P] [--drift PCT]";

/// What `compare` was asked (parsed and checked by `cli::compare`).
#[derive(Clone, Debug, PartialEq)]
pub struct CompareOptions {
    /// The BASE runs and the NEW runs, one sweep per file.
    pub base: Vec<PathBuf>,
    pub new: Vec<PathBuf>,
    pub settings: Settings,
}

/// Run a comparison, print it; returns the exit code.
pub fn main(opts: &CompareOptions) -> i32 {
    match run(opts) {
        Ok((text, code)) => {
            print!("{text}");
            code
        }
        Err(e) => {
            eprintln!("coll-bench: error: compare: {e}");
            exit::ERROR
        }
    }
}

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
    fn other(self) -> Stat {
        match self {
            Stat::Median => Stat::Mean,
            Stat::Mean => Stat::Median,
        }
    }
    fn of(self, r: &Row) -> f64 {
        match self {
            Stat::Median => r.median_us,
            Stat::Mean => r.time_us,
        }
    }
    /// The CSV column it comes from.
    fn column(self) -> &'static str {
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

fn run(opts: &CompareOptions) -> Result<(String, i32)> {
    let (base_paths, new_paths) = (&opts.base, &opts.new);
    let with_form = |e: Error| Error::usage(format!("{e}; expected {FORM}"));
    let read = |paths: &[PathBuf]| -> Result<Vec<Run>> {
        let mut runs = vec![];
        for p in paths {
            let name = crate::error::shown(p);
            if runs.iter().any(|r: &Run| r.name == name) {
                return Err(Error::usage(format!(
                    "'{name}' is given twice on one side; each run counts once; expected {FORM}"
                )));
            }
            let rows = csvread::read(p).map_err(with_form)?;
            // A ratio over a time of zero is no ratio (NaN or infinite): refused, not judged.
            let stat = opts.settings.stat;
            if let Some(r) = rows.iter().find(|r| stat.of(r) <= 0.0) {
                return Err(Error::usage(format!(
                    "'{name}' line {}: column {} is {}, expected a time above zero (compare divides by it)",
                    r.line,
                    stat.column(),
                    stat.of(r)
                )));
            }
            runs.push(Run { rows, name });
        }
        Ok(runs)
    };
    let base = read(base_paths)?;
    let new = read(new_paths)?;
    let m = match_runs(&base, &new).map_err(Error::usage)?;
    if m.points.is_empty() {
        return Err(Error::usage(format!(
            "{} and {} share no point measured in every run (same collective, backend, dtype, op, placement and size); nothing to compare",
            side_name(&base),
            side_name(&new)
        )));
    }
    let settings = opts.settings;
    let c = classify_all(&m.points, base.len(), new.len(), &settings);
    let text = render(&base, &new, &m, &c, &settings);
    let regressed = c.points.iter().any(|j| j.verdict == Change::Regression)
        || c.series.iter().any(|s| s.verdict == Change::Regression)
        || c.common.verdict == Change::Regression;
    Ok((text, if regressed { exit::WRONG } else { exit::OK }))
}

/// One CSV: one run of a sweep.
#[derive(Debug)]
pub struct Run {
    pub name: String,
    pub rows: Vec<Row>,
}

fn side_name(runs: &[Run]) -> String {
    match runs {
        [one] => format!("'{}'", one.name),
        _ => format!(
            "the {} runs {}",
            runs.len(),
            runs.iter().map(|r| format!("'{}'", r.name)).collect::<Vec<_>>().join(" ")
        ),
    }
}

/// One point measured in every run of both sides: its rows, run by run.
#[derive(Debug)]
pub struct Point<'a> {
    pub key: &'a Key,
    pub base: Vec<&'a Row>,
    pub new: Vec<&'a Row>,
}

/// Points of the two sides, matched by key.
#[derive(Debug)]
pub struct Matched<'a> {
    /// Shared points, in the first BASE run's order.
    pub points: Vec<Point<'a>>,
    pub only_base: Vec<&'a Key>,
    pub only_new: Vec<&'a Key>,
    /// Points left out because some run of their side lacks them.
    pub not_in_every_run: usize,
}

/// Match on the key. A file that has the same point twice is an error naming the file.
pub fn match_runs<'a>(base: &'a [Run], new: &'a [Run]) -> std::result::Result<Matched<'a>, String> {
    fn index(run: &Run) -> std::result::Result<HashMap<&Key, &Row>, String> {
        let mut map = HashMap::with_capacity(run.rows.len());
        for r in &run.rows {
            if let Some(prev) = map.insert(&r.key, r) {
                return Err(format!(
                    "'{}': line {} measures the same point as line {} ({}); give each run its own file (compare A.csv B.csv -- C.csv D.csv)",
                    run.name, r.line, prev.line, r.key
                ));
            }
        }
        Ok(map)
    }
    // A side's points: those in every one of its runs, in its first run's order.
    /// A side's points in order, each run's index, and how many points only some runs have.
    type Side<'a> = (Vec<&'a Key>, Vec<HashMap<&'a Key, &'a Row>>, usize);
    fn side<'a>(runs: &'a [Run]) -> std::result::Result<Side<'a>, String> {
        let maps = runs.iter().map(index).collect::<std::result::Result<Vec<_>, _>>()?;
        let keys: Vec<&Key> =
            runs[0].rows.iter().map(|r| &r.key).filter(|k| maps.iter().all(|m| m.contains_key(k))).collect();
        let all: HashSet<&Key> = maps.iter().flat_map(|m| m.keys().copied()).collect();
        Ok((keys.clone(), maps, all.len() - keys.len()))
    }
    let (bk, bm, bpart) = side(base)?;
    let (nk, nm, npart) = side(new)?;
    let nset: HashSet<&Key> = nk.iter().copied().collect();
    let bset: HashSet<&Key> = bk.iter().copied().collect();
    let points = bk
        .iter()
        .filter(|k| nset.contains(*k))
        .map(|k| Point { key: k, base: bm.iter().map(|m| m[k]).collect(), new: nm.iter().map(|m| m[k]).collect() })
        .collect();
    Ok(Matched {
        points,
        only_base: bk.iter().filter(|k| !nset.contains(*k)).copied().collect(),
        only_new: nk.iter().filter(|k| !bset.contains(*k)).copied().collect(),
        not_in_every_run: bpart + npart,
    })
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
    fn word(self) -> &'static str {
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
fn ln_ratio(base: f64, new: f64) -> Option<f64> {
    (base > 0.0 && new > 0.0 && base.is_finite() && new.is_finite()).then(|| (new / base).ln())
}

/// Pooled variance within groups (groups of two values or more) and its degrees of freedom;
/// None if no group has two.
fn pooled(groups: &[&[f64]]) -> Option<(f64, usize)> {
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
fn pooled_var(groups: &[&[f64]]) -> Option<f64> {
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

fn pct(l: f64) -> f64 {
    (l.exp() - 1.0) * 100.0
}

fn mean(v: &[f64]) -> f64 {
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

/// Keys grouped into their series, in first-seen order, with the sizes of each.
fn by_series<'a>(keys: &[&'a Key]) -> Vec<(&'a Key, Vec<u64>)> {
    let mut out: Vec<(&Key, Vec<u64>)> = vec![];
    for k in keys {
        match out.iter_mut().find(|(s, _)| s.series() == k.series()) {
            Some((_, sizes)) => sizes.push(k.size_bytes),
            None => out.push((k, vec![k.size_bytes])),
        }
    }
    out
}

fn sizes_text(sizes: &[u64]) -> String {
    let n = sizes.len();
    let list: Vec<String> = sizes.iter().map(|s| human(*s)).collect();
    if n <= 6 {
        format!("{} size{} ({})", n, if n == 1 { "" } else { "s" }, list.join(" "))
    } else {
        format!("{n} sizes ({} .. {})", list[0], list[n - 1])
    }
}

fn ranks_text(runs: &[Run]) -> String {
    let mut ranks: Vec<u64> = runs.iter().flat_map(|r| r.rows.iter().filter_map(|r| r.ranks)).collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks.iter().map(|r| r.to_string()).collect::<Vec<_>>().join("/")
}

fn series_text(k: &Key) -> String {
    format!("{} {} {} {} {}", k.collective, k.backend, k.dtype, k.op, k.placement)
}

/// What the text of a comparison is made from: both sides' runs, their matched points, the
/// judgement and its settings.
struct Report<'r, 'a> {
    base: &'r [Run],
    new: &'r [Run],
    matched: &'r Matched<'a>,
    comparison: &'r Comparison<'a>,
    settings: &'r Settings,
}

fn render(base: &[Run], new: &[Run], m: &Matched, c: &Comparison, s: &Settings) -> String {
    Report { base, new, matched: m, comparison: c, settings: s }.render()
}

impl Report<'_, '_> {
    /// The header, the table of points, the table of series, the whole run, the unmatched
    /// points, one line per regression and the summary line.
    fn render(&self) -> String {
        let mut out = String::new();
        self.header(&mut out);
        self.points_table(&mut out);
        self.series_table(&mut out);
        self.whole_run(&mut out);
        self.unmatched(&mut out);
        self.regressions(&mut out);
        self.summary(&mut out);
        out
    }

    /// `# compare:` what is judged, how the noise was estimated, what counts as a regression.
    fn header(&self, out: &mut String) {
        let (base, new, c, s) = (self.base, self.new, self.comparison, self.settings);
        let stat = s.stat.name();
        let names = |runs: &[Run]| runs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(" ");
        let _ = writeln!(
            out,
            "# compare: base {} -> new {}; judged on the {stat} time per call ({} of each run{})",
            names(base),
            names(new),
            s.stat.column(),
            if base.len() > 1 || new.len() > 1 { "; a side's value is the geometric mean over its runs" } else { "" }
        );
        let _ = writeln!(
            out,
            "# judged: each series' shift (the median over its sizes of ln new/base of the {stat}) relative to the level of the same runs (`rel`: the median over every series; over the other collective's with only two), so drift of the whole run cancels; a point likewise, only in a stretch of consecutive sizes (3, or 2 in a series of fewer than 6), and only with several runs per side (with one, such a stretch is `slower`, shown, not judged)"
        );
        match c.noise {
            Noise::BetweenRuns => {
                let _ = writeln!(
                    out,
                    "# noise: between runs ({} base, {} new): the spread of each run's relative levels, pooled over the series (typical {:.1}% per series, {:.1}% per point)",
                    base.len(),
                    new.len(),
                    c.series_noise_pct,
                    c.point_noise_pct
                );
            }
            Noise::BetweenSeries => {
                let _ = writeln!(
                    out,
                    "# noise: one run per side, so this verdict cannot separate drift between the runs from a change common to every collective: the noise is the spread between the other collectives' series and the jitter between neighbouring sizes (typical {:.1}% per series, {:.1}% per point); give each side several runs (compare B1.csv B2.csv B3.csv -- N1.csv N2.csv N3.csv) to judge on run-to-run noise",
                    c.series_noise_pct, c.point_noise_pct
                );
            }
        }
        let _ = writeln!(
            out,
            "# regression: {stat} slower by more than {}% and, relative to the rest of the run, by more than the noise explains at alpha {} ({} {:.2} over {} series, {:.2} over {} points); `bar` is the relative slowdown each needed",
            s.threshold_pct,
            s.alpha,
            match c.noise {
                Noise::BetweenRuns => "t",
                Noise::BetweenSeries => "z",
            },
            c.z_series,
            c.n_series,
            c.z_point,
            c.n_points
        );
        let (rb, rn) = (ranks_text(base), ranks_text(new));
        if rb != rn {
            let _ = writeln!(out, "# note: the runs had different rank counts (base {rb}, new {rn})");
        }
    }

    /// Width of the collective column.
    fn width(&self) -> usize {
        self.matched.points.iter().map(|p| p.key.collective.len()).max().unwrap_or(0).max(10)
    }

    /// One row per shared point.
    fn points_table(&self, out: &mut String) {
        let (m, c, s) = (self.matched, self.comparison, self.settings);
        let stat = s.stat.name();
        let w = self.width();
        let other = format!("{}_chg", s.stat.other().name());
        let _ = writeln!(
            out,
            "# {:<w$} {:>7} {:>8} {:>6} {:>12} {:>12} {:>12} {:>12} {:>7} {:>8} {:>8} {:>8}  {:<10}  {:>9}",
            "collective",
            "backend",
            "type",
            "redop",
            "placement",
            "size",
            format!("base_{stat}"),
            format!("new_{stat}"),
            "ratio",
            format!("{stat}_chg"),
            "rel",
            "bar",
            "verdict",
            other
        );
        let _ = writeln!(
            out,
            "# {:<w$} {:>7} {:>8} {:>6} {:>12} {:>12} {:>12} {:>12}",
            "", "", "", "", "", "(B)", "(us)", "(us)"
        );
        for (p, j) in m.points.iter().zip(&c.points) {
            let k = p.key;
            let _ = writeln!(
                out,
                "  {:<w$} {:>7} {:>8} {:>6} {:>12} {:>12} {:>12.2} {:>12.2} {:>7.3} {:>+7.1}% {:>+7.1}% {:>+7.1}%  {:<10}  {:>+8.1}%",
                k.collective,
                k.backend,
                k.dtype,
                k.op,
                k.placement,
                k.size_bytes,
                j.base,
                j.new,
                j.ratio,
                j.change_pct,
                j.rel_pct,
                j.bar_pct,
                j.verdict.word(),
                j.other_change_pct
            );
        }
    }

    /// One row per series of three sizes or more, when there is one.
    fn series_table(&self, out: &mut String) {
        let (c, s) = (self.comparison, self.settings);
        if c.series.is_empty() {
            return;
        }
        let stat = s.stat.name();
        let w = self.width();
        let _ = writeln!(
            out,
            "# series: the shift of each series as a whole (the median over its sizes), relative to the run's level (rel), against the noise of that shift"
        );
        let _ = writeln!(
            out,
            "# {:<w$} {:>7} {:>8} {:>6} {:>12} {:>12} {:>7} {:>8} {:>8} {:>8}  {:<10}  {:>9}",
            "collective",
            "backend",
            "type",
            "redop",
            "placement",
            "sizes",
            "ratio",
            format!("{stat}_chg"),
            "rel",
            "bar",
            "verdict",
            format!("{}_chg", s.stat.other().name())
        );
        for sj in &c.series {
            let k = sj.key;
            let _ = writeln!(
                out,
                "= {:<w$} {:>7} {:>8} {:>6} {:>12} {:>12} {:>7.3} {:>+7.1}% {:>+7.1}% {:>+7.1}%  {:<10}  {:>+8.1}%",
                k.collective,
                k.backend,
                k.dtype,
                k.op,
                k.placement,
                sj.sizes,
                sj.ratio,
                sj.change_pct,
                sj.rel_pct,
                sj.bar_pct,
                sj.verdict.word(),
                sj.other_change_pct
            );
        }
    }

    /// The shift of the whole run, in one line, and what it can mean.
    fn whole_run(&self, out: &mut String) {
        let (c, s) = (self.comparison, self.settings);
        let stat = s.stat.name();
        let w = &c.common;
        match w.se {
            None => {
                let _ = writeln!(
                    out,
                    "# whole run: {stat} {:+.1}% (median over series); with one run per side a shift of every collective cannot be told from drift between the runs, so it fails only beyond --drift {}%: {}",
                    w.change_pct,
                    w.bar_pct,
                    w.verdict.word()
                );
            }
            Some(se) => {
                let _ = writeln!(
                    out,
                    "# whole run: {stat} {:+.1}% (median over series; between-run noise {:.1}%, bar {:+.1}%): {}",
                    w.change_pct,
                    pct(se),
                    w.bar_pct,
                    w.verdict.word()
                );
            }
        }
    }

    /// Points only one side has, by series; and how many some run of a side lacks.
    fn unmatched(&self, out: &mut String) {
        let (base, new, m) = (self.base, self.new, self.matched);
        for (what, keys) in [("base", &m.only_base), ("new", &m.only_new)] {
            let name = match what {
                "base" if base.len() == 1 => base[0].name.clone(),
                "new" if new.len() == 1 => new[0].name.clone(),
                _ => format!("the {what} runs"),
            };
            for (k, sizes) in by_series(keys) {
                let _ = writeln!(out, "# only in {name}: {}: {}", series_text(k), sizes_text(&sizes));
            }
        }
        if m.not_in_every_run > 0 {
            let _ = writeln!(
                out,
                "# note: {} point{} not in every run of {} side left out",
                m.not_in_every_run,
                if m.not_in_every_run == 1 { "" } else { "s" },
                if m.not_in_every_run == 1 { "its" } else { "their" }
            );
        }
    }

    /// One `regressed:` line per point, one `regressed series:` line per series, and one
    /// `regressed whole run:` line; each names the statistic judged.
    fn regressions(&self, out: &mut String) {
        let (m, c) = (self.matched, self.comparison);
        let stat = self.settings.stat.name();
        for (p, j) in m.points.iter().zip(&c.points).filter(|(_, j)| j.verdict == Change::Regression) {
            let _ = writeln!(
                out,
                "regressed: {}: {stat} {:.2} -> {:.2} us ({:+.1}%; {:+.1}% relative to the rest of the run, bar {:+.1}%)",
                p.key, j.base, j.new, j.change_pct, j.rel_pct, j.bar_pct
            );
        }
        for (p, j) in m.points.iter().zip(&c.points).filter(|(_, j)| j.verdict == Change::Slower) {
            let _ = writeln!(
                out,
                "slower, not judged (one run per side): {}: {stat} {:.2} -> {:.2} us ({:+.1}%; {:+.1}% relative to the rest of the run, bar {:+.1}%)",
                p.key, j.base, j.new, j.change_pct, j.rel_pct, j.bar_pct
            );
        }
        for sj in c.series.iter().filter(|s| s.verdict == Change::Regression) {
            let _ = writeln!(
                out,
                "regressed series: {} over {} sizes: {stat} ratio {:.3} ({:+.1}%; {:+.1}% relative to the rest of the run, bar {:+.1}%)",
                series_text(sj.key),
                sj.sizes,
                sj.ratio,
                sj.change_pct,
                sj.rel_pct,
                sj.bar_pct
            );
        }
        if c.common.verdict == Change::Regression {
            let _ = writeln!(
                out,
                "regressed whole run: {stat} {:+.1}% over every series (bar {:+.1}%{})",
                c.common.change_pct,
                c.common.bar_pct,
                if c.common.se.is_none() { ", --drift: one run per side cannot tell it from drift" } else { "" }
            );
        }
    }

    /// The last line: the counts.
    fn summary(&self, out: &mut String) {
        let (base, new, m, c, s) = (self.base, self.new, self.matched, self.comparison, self.settings);
        let stat = s.stat.name();
        let count = |v: Change| c.points.iter().filter(|j| j.verdict == v).count();
        let scount = |v: Change| c.series.iter().filter(|j| j.verdict == v).count();
        let regressions = count(Change::Regression);
        let _ = writeln!(
            out,
            "compare: {} point{} in common: {} regression{}, {} slower not judged, {} improved, {} beyond {}% within noise, {} lone, {} within {}%; series: {} regressed, {} improved of {}; judged on the {stat}, {}, whole run {:+.1}% {}; {} only in base, {} only in new",
            c.points.len(),
            if c.points.len() == 1 { "" } else { "s" },
            regressions,
            if regressions == 1 { "" } else { "s" },
            count(Change::Slower),
            count(Change::Improvement),
            count(Change::WithinNoise),
            s.threshold_pct,
            count(Change::Lone),
            count(Change::Unchanged) + count(Change::NoRatio),
            s.threshold_pct,
            scount(Change::Regression),
            scount(Change::Improvement),
            c.series.len(),
            match c.noise {
                Noise::BetweenRuns => format!("{} vs {} runs", base.len(), new.len()),
                Noise::BetweenSeries => "one run per side (drift not separable)".to_string(),
            },
            c.common.change_pct,
            c.common.verdict.word(),
            m.only_base.len(),
            m.only_new.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(coll: &str, placement: &str, size: u64) -> Key {
        Key {
            collective: coll.into(),
            backend: "mpi".into(),
            dtype: "float".into(),
            op: "sum".into(),
            placement: placement.into(),
            size_bytes: size,
        }
    }

    fn row(coll: &str, size: u64, median: f64, line: u64) -> Row {
        Row {
            key: key(coll, "out-of-place", size),
            iters: 100,
            batch_iters: 1,
            time_us: median * 1.1,
            median_us: median,
            min_us: median * 0.9,
            max_us: median * 1.2,
            stddev_us: Some(median * 0.05),
            median_ci95_us: None,
            busbw_gbps: 1.0,
            ranks: Some(2),
            hosts: Some(1),
            line,
        }
    }

    fn run(name: &str, rows: Vec<Row>) -> Run {
        Run { name: name.into(), rows }
    }

    /// A run of two collectives × 12 sizes, each point's median `base(size) × f(coll, size)`.
    fn sweep(name: &str, f: impl Fn(&str, u64) -> f64) -> Run {
        let mut rows = vec![];
        for coll in ["all-reduce", "all-gather"] {
            for i in 0..12u64 {
                let size = 8u64 << i;
                let base = 1.0 + size as f64 / 1000.0;
                rows.push(row(coll, size, base * f(coll, size), rows.len() as u64 + 2));
            }
        }
        run(name, rows)
    }

    /// Deterministic noise in [-1, 1] from a seed and a size.
    fn jitter(seed: u64, size: u64) -> f64 {
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(size.wrapping_mul(1442695040888963407));
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51afd7ed558ccd);
        x ^= x >> 33;
        (x % 2001) as f64 / 1000.0 - 1.0
    }

    fn settings() -> Settings {
        Settings { stat: Stat::Median, threshold_pct: 5.0, alpha: 0.05, drift_pct: 25.0 }
    }

    fn compare<'a>(base: &'a [Run], new: &'a [Run]) -> (Matched<'a>, Comparison<'a>) {
        let m = match_runs(base, new).unwrap();
        let c = classify_all(&m.points, base.len(), new.len(), &settings());
        (m, c)
    }

    fn regressions(c: &Comparison) -> (usize, usize) {
        (
            c.points.iter().filter(|j| j.verdict == Change::Regression).count(),
            c.series.iter().filter(|j| j.verdict == Change::Regression).count(),
        )
    }

    #[test]
    fn matching_pairs_shared_points_and_lists_the_rest() {
        let base =
            [run("b", vec![row("all-reduce", 8, 1.0, 2), row("all-reduce", 16, 1.0, 3), row("all-gather", 8, 1.0, 4)])];
        let new = [run(
            "n",
            vec![row("all-reduce", 16, 2.0, 2), row("all-reduce", 32, 1.0, 3), row("all-reduce", 8, 1.0, 4)],
        )];
        let m = match_runs(&base, &new).unwrap();
        let pairs: Vec<(u64, u64)> = m.points.iter().map(|p| (p.base[0].line, p.new[0].line)).collect();
        assert_eq!(pairs, vec![(2, 4), (3, 2)], "in base's order, each with its own match");
        assert_eq!(m.only_base.len(), 1);
        assert_eq!(m.only_base[0].collective, "all-gather");
        assert_eq!(m.only_new.len(), 1);
        assert_eq!(m.only_new[0].size_bytes, 32);
        assert_eq!(m.not_in_every_run, 0);
        // Another placement is another point.
        let mut other = row("all-reduce", 8, 1.0, 2);
        other.key.placement = "in-place".into();
        let others = [run("o", vec![other])];
        let m = match_runs(&base[..], &others).unwrap();
        assert!(m.points.is_empty());
        // Several runs a side: a point must be in every run of its side.
        let base2 = [run("b1", base[0].rows.clone()), run("b2", base[0].rows[..2].to_vec())];
        let m = match_runs(&base2, &new).unwrap();
        assert_eq!(m.points.len(), 2);
        assert_eq!(m.points[0].base.len(), 2);
        assert_eq!(m.not_in_every_run, 1, "all-gather 8 is in b1 only");
    }

    #[test]
    fn a_point_twice_in_one_file_is_an_error() {
        let base = [run("b.csv", vec![row("all-reduce", 8, 1.0, 2), row("all-reduce", 8, 1.0, 7)])];
        let new = [run("n.csv", vec![row("all-reduce", 8, 1.0, 2)])];
        let e = match_runs(&base, &new).unwrap_err();
        assert!(e.contains("'b.csv': line 7 measures the same point as line 2"), "{e}");
    }

    #[test]
    fn noise_helpers() {
        assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median([]).is_nan());
        // Steps of ±a around a flat line: MAD a, noise 1.4826 a / √2.
        let s = step_noise(&[0.1, -0.1, 0.1, -0.1]).unwrap();
        assert!((s - 1.4826 * 0.1 / 2f64.sqrt()).abs() < 1e-12);
        // Bonferroni: 0.05 over one test is the 95% one-sided quantile; over 100, 0.0005.
        assert!((z_for(0.05, 1) - 1.6449).abs() < 1e-3);
        assert!((z_for(0.05, 100) - 3.2905).abs() < 1e-3);
        // Pooled variance of ln values within sides of two runs or more.
        let v = pooled_var(&[&[0.0, 1.0], &[5.0], &[2.0, 4.0, 6.0]]).unwrap();
        assert!((v - (0.5 + 8.0) / 3.0).abs() < 1e-12, "{v}");
        assert_eq!(pooled_var(&[&[1.0], &[2.0]]), None);
    }

    #[test]
    fn a_run_against_itself_is_unchanged() {
        let a = [sweep("a", |_, _| 1.0)];
        let (_, c) = compare(&a, &a);
        assert_eq!(c.noise, Noise::BetweenSeries);
        assert!(c.points.iter().all(|j| j.verdict == Change::Unchanged && j.ratio == 1.0));
        assert_eq!(c.series.len(), 2, "one series per collective here");
        assert_eq!(regressions(&c), (0, 0));
    }

    #[test]
    fn one_run_per_side_tolerates_its_own_between_size_noise() {
        // ±20% jitter point by point: beyond the 5% threshold at many points, but the noise.
        let a = [sweep("a", |_, s| 1.0 + 0.2 * jitter(1, s))];
        let b = [sweep("b", |_, s| 1.0 + 0.2 * jitter(2, s))];
        let (_, c) = compare(&a, &b);
        assert!(c.points.iter().filter(|j| j.change_pct.abs() > 5.0).count() > 5, "the old compare would cry wolf");
        assert!(c.point_noise_pct > 5.0, "{}", c.point_noise_pct);
        assert_eq!(regressions(&c), (0, 0), "{c:?}");
        // A whole collective 30% slower on top of it: caught, as a series at least.
        let slow = [sweep("slow", |coll, s| (1.0 + 0.2 * jitter(2, s)) * if coll == "all-reduce" { 1.3 } else { 1.0 })];
        let (_, c) = compare(&a, &slow);
        let flagged: Vec<&str> =
            c.series.iter().filter(|s| s.verdict == Change::Regression).map(|s| s.key.collective.as_str()).collect();
        assert_eq!(flagged, vec!["all-reduce"], "{c:?}");
    }

    #[test]
    fn several_runs_per_side_judge_on_between_run_noise() {
        // Run-to-run drift of ±15% per run and collective, ±5% per point: back-to-back runs.
        let drift = |seed: u64| {
            move |coll: &str, s: u64| {
                (1.0 + 0.15 * jitter(seed, coll.len() as u64)) * (1.0 + 0.05 * jitter(seed + 100, s))
            }
        };
        let base: Vec<Run> = (0..3).map(|i| sweep(&format!("b{i}"), drift(i))).collect();
        let new: Vec<Run> = (3..6).map(|i| sweep(&format!("n{i}"), drift(i))).collect();
        let (_, c) = compare(&base, &new);
        assert_eq!(c.noise, Noise::BetweenRuns);
        assert_eq!(regressions(&c), (0, 0), "{c:?}");
        // All-gather 40% slower in every new run: its series regressed, all-reduce's did not.
        let slow: Vec<Run> = (3..6)
            .map(|i| {
                let d = drift(i);
                sweep(&format!("n{i}"), move |coll, s| d(coll, s) * if coll == "all-gather" { 1.4 } else { 1.0 })
            })
            .collect();
        let (_, c) = compare(&base, &slow);
        let flagged: Vec<&str> =
            c.series.iter().filter(|s| s.verdict == Change::Regression).map(|s| s.key.collective.as_str()).collect();
        assert_eq!(flagged, vec!["all-gather"], "{c:?}");
    }

    #[test]
    fn one_wild_run_makes_noise_not_a_regression() {
        // A run during which the machine was overloaded: every size of every collective 1000x
        // slower. Among two runs a side it is noise, not evidence.
        let base = [sweep("b1", |_, _| 1.0), sweep("b2", |_, s| 1.0 + 0.03 * jitter(7, s))];
        let new = [sweep("n1", |_, _| 1000.0), sweep("n2", |_, s| 1.0 + 0.03 * jitter(8, s))];
        let (_, c) = compare(&base, &new);
        assert_eq!(regressions(&c), (0, 0), "{c:?}");
        assert!(c.series.iter().all(|s| s.verdict == Change::WithinNoise));
    }

    /// A run of three collectives × 12 sizes (one placement), each point's median
    /// `base(size) × f(coll, size)`.
    fn sweep3(name: &str, f: impl Fn(&str, u64) -> f64) -> Run {
        let mut rows = vec![];
        for coll in ["all-reduce", "all-gather", "reduce-scatter"] {
            for i in 0..12u64 {
                let size = 8u64 << i;
                let base = 1.0 + size as f64 / 1000.0;
                rows.push(row(coll, size, base * f(coll, size), rows.len() as u64 + 2));
            }
        }
        run(name, rows)
    }

    /// Point jitter of ±`amp` from a seed, per collective and size.
    fn noisy(seed: u64, amp: f64) -> impl Fn(&str, u64) -> f64 {
        move |coll: &str, s: u64| 1.0 + amp * jitter(seed + 31 * coll.len() as u64, s)
    }

    #[test]
    fn a_shift_common_to_every_collective_is_drift_up_to_the_drift_bar() {
        // The whole new run 15% slower (every collective), with ±3% point jitter: with one run
        // per side that is drift as much as a change; below --drift 25%, not a regression.
        let a = [sweep3("a", noisy(1, 0.03))];
        let b = [sweep3("b", |c, s| 1.15 * noisy(2, 0.03)(c, s))];
        let (_, c) = compare(&a, &b);
        assert_eq!(regressions(&c), (0, 0), "{c:?}");
        assert!((c.common.change_pct - 15.0).abs() < 3.0, "{:?}", c.common);
        assert_eq!(c.common.verdict, Change::WithinNoise);
        assert_eq!(c.common.se, None);
        assert!(c.series.iter().all(|s| s.rel_pct.abs() < 5.0), "relative to each other nothing moved: {c:?}");
        // 40% slower everywhere: beyond --drift, the whole run regressed.
        let b = [sweep3("b", |c, s| 1.4 * noisy(2, 0.03)(c, s))];
        let (_, c) = compare(&a, &b);
        assert_eq!(c.common.verdict, Change::Regression, "{:?}", c.common);
        assert_eq!(regressions(&c), (0, 0), "no series moved against the others");
        // One collective of two 40% slower is that collective's change, not the whole run's.
        let b = [sweep("b", |c, _| if c == "all-gather" { 1.4 } else { 1.0 })];
        let a2 = [sweep("a", |_, _| 1.0)];
        let (_, c) = compare(&a2, &b);
        assert_ne!(c.common.verdict, Change::Regression, "{:?}", c.common);
        assert_eq!(regressions(&c), (0, 1), "{c:?}");
        // With three runs a side, the whole run is judged on the runs' own spread: 15% slower
        // in every new run, the runs within ±2% of each other, is a regression.
        let level = |seed: u64| 1.0 + 0.02 * jitter(seed, 99);
        let base: Vec<Run> =
            (0..3).map(|i| sweep3(&format!("b{i}"), move |c, s| level(i) * noisy(i, 0.03)(c, s))).collect();
        let new: Vec<Run> =
            (3..6).map(|i| sweep3(&format!("n{i}"), move |c, s| 1.15 * level(i) * noisy(i, 0.03)(c, s))).collect();
        let (_, c) = compare(&base, &new);
        assert_eq!(c.noise, Noise::BetweenRuns);
        assert!(c.common.se.is_some());
        assert_eq!(c.common.verdict, Change::Regression, "{:?}", c.common);
        assert_eq!(regressions(&c), (0, 0), "{c:?}");
    }

    #[test]
    fn one_collective_slower_than_the_rest_of_a_drifting_run_is_caught() {
        // The whole new run 12% faster (drift), ±5% point jitter, and all-gather 30% slower than
        // it would have been: in absolute terms +14%, relative to the other collectives +30%.
        let a = [sweep3("a", noisy(1, 0.05))];
        let b = [sweep3("b", |c, s| 0.88 * noisy(2, 0.05)(c, s) * if c == "all-gather" { 1.3 } else { 1.0 })];
        let (_, c) = compare(&a, &b);
        let flagged: Vec<&str> =
            c.series.iter().filter(|s| s.verdict == Change::Regression).map(|s| s.key.collective.as_str()).collect();
        assert_eq!(flagged, vec!["all-gather"], "{c:?}");
        let ag = c.series.iter().find(|s| s.key.collective == "all-gather").unwrap();
        assert!((ag.rel_pct - 30.0).abs() < 5.0 && (ag.change_pct - 14.4).abs() < 5.0, "{ag:?}");
        // The others held still against each other: not improvements, though 12% faster.
        assert!(c.series.iter().filter(|s| s.key.collective != "all-gather").all(|s| s.verdict != Change::Improvement));
        // A collective that held still while the rest got 12% faster did not regress: it is
        // +14% relative, but not slower in itself.
        let b = [sweep3("b", |c, s| noisy(2, 0.05)(c, s) * if c == "all-gather" { 1.0 } else { 0.88 })];
        let (_, c) = compare(&a, &b);
        assert_eq!(regressions(&c), (0, 0), "{c:?}");
    }

    #[test]
    fn jitter_at_one_or_two_sizes_is_not_a_regression() {
        // ±2% jitter, and all-reduce 60% slower at one size (64 B), then at two neighbouring
        // sizes (1K and 2K) of its 12.
        let a = [sweep3("a", noisy(1, 0.02))];
        let spike = |c: &str, s: u64| noisy(2, 0.02)(c, s) * if c == "all-reduce" && s == 64 { 1.6 } else { 1.0 };
        let b = [sweep3("b", spike)];
        let (_, c) = compare(&a, &b);
        assert_eq!(regressions(&c), (0, 0), "{c:?}");
        assert_eq!(c.points.iter().filter(|j| j.verdict == Change::Lone).count(), 1, "{c:?}");
        let two = |c: &str, s: u64| {
            noisy(2, 0.02)(c, s) * if c == "all-reduce" && (s == 1024 || s == 2048) { 1.6 } else { 1.0 }
        };
        let b = [sweep3("b", two)];
        let (_, c) = compare(&a, &b);
        assert_eq!(regressions(&c), (0, 0), "{c:?}");
        assert_eq!(c.points.iter().filter(|j| j.verdict == Change::Lone).count(), 2, "{c:?}");
    }

    #[test]
    fn a_slowdown_of_some_sizes_is_a_regression_with_repeated_runs_only() {
        // all-reduce 30% slower from 4K up (its 3 largest sizes of 12).
        let slow = |c: &str, s: u64| if c == "all-reduce" && s >= 4096 { 1.3 } else { 1.0 };
        let a = [sweep("a", |_, _| 1.0)];
        let b = [sweep("b", slow)];
        let (m, c) = compare(&a, &b);
        // One run per side: shown as `slower`, not judged (back-to-back runs move such
        // stretches of one collective); the series' median did not move.
        for (p, j) in m.points.iter().zip(&c.points) {
            let doctored = p.key.collective == "all-reduce" && p.key.size_bytes >= 4096;
            assert_eq!(j.verdict == Change::Slower, doctored, "{p:?} {j:?}");
            if doctored {
                assert!((j.change_pct - 30.0).abs() < 1e-9);
                assert!((j.other_change_pct - 30.0).abs() < 1e-9, "the mean moved the same way");
            }
        }
        assert_eq!(regressions(&c), (0, 0));
        // Two runs a side (±1% apart): a regression at those points.
        let base = [sweep("a1", noisy(1, 0.01)), sweep("a2", noisy(2, 0.01))];
        let new = [
            sweep("b1", move |c, s| slow(c, s) * noisy(3, 0.01)(c, s)),
            sweep("b2", move |c, s| slow(c, s) * noisy(4, 0.01)(c, s)),
        ];
        let (m, c) = compare(&base, &new);
        for (p, j) in m.points.iter().zip(&c.points) {
            let doctored = p.key.collective == "all-reduce" && p.key.size_bytes >= 4096;
            assert_eq!(j.verdict == Change::Regression, doctored, "{p:?} {j:?}");
        }
        // Within the threshold is never a regression, however precise.
        let b = [sweep3("b", |coll, _| if coll == "all-reduce" { 1.04 } else { 1.0 })];
        assert_eq!(regressions(&compare(&[sweep3("a", |_, _| 1.0)], &b).1), (0, 0));
        // Faster everywhere: the whole run moved, no series against the others.
        let b = [sweep("b", |_, _| 0.7)];
        let (_, c) = compare(&a, &b);
        assert_eq!(c.common.verdict, Change::Improvement);
        assert_eq!(regressions(&c), (0, 0));
    }

    #[test]
    fn the_statistic_judged_is_the_one_shown() {
        // all-gather's mean doubles (a few preempted samples), its median stays: judged on the
        // median it is ok, on the mean it regressed, and each names the other's change.
        let a = [sweep3("a", |_, _| 1.0)];
        let mut b = sweep3("b", |_, _| 1.0);
        for r in b.rows.iter_mut().filter(|r| r.key.collective == "all-gather") {
            r.time_us *= 2.0;
        }
        let b = [b];
        let m = match_runs(&a, &b).unwrap();
        let med = classify_all(&m.points, 1, 1, &settings());
        assert!(med.points.iter().all(|j| j.verdict == Change::Unchanged));
        let ag = med.series.iter().find(|s| s.key.collective == "all-gather").unwrap();
        assert!(ag.verdict == Change::Unchanged && (ag.other_change_pct - 100.0).abs() < 1e-9, "{ag:?}");
        let mean = classify_all(&m.points, 1, 1, &Settings { stat: Stat::Mean, ..settings() });
        let ag = mean.series.iter().find(|s| s.key.collective == "all-gather").unwrap();
        assert!(ag.verdict == Change::Regression && ag.other_change_pct.abs() < 1e-9, "{ag:?}");
        assert!((ag.change_pct - 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_zero_base_has_no_ratio() {
        let a = [run("a", vec![row("all-reduce", 8, 0.0, 2)])];
        let b = [run("b", vec![row("all-reduce", 8, 1.0, 2)])];
        let (_, c) = compare(&a, &b);
        assert_eq!(c.points[0].verdict, Change::NoRatio);
        assert!(c.series.is_empty());
    }

    #[test]
    fn unshared_points_are_grouped_by_series() {
        let a = row("all-gather", 8, 1.0, 2);
        let b = row("all-gather", 16, 1.0, 3);
        let c = row("broadcast", 8, 1.0, 4);
        let g = by_series(&[&a.key, &b.key, &c.key]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].1, vec![8, 16]);
        assert_eq!(sizes_text(&g[0].1), "2 sizes (8 16)");
        assert_eq!(sizes_text(&[1, 2, 4, 8, 16, 32, 1024]), "7 sizes (1 .. 1K)");
    }

    #[test]
    fn the_report_has_each_part_once_and_in_order() {
        // A made-up comparison: all-reduce 30% slower from 64 B on (9 of its 12 sizes); new lacks
        // all-gather at 16K and has all-reduce at 32M more.
        let a = sweep3("a.csv", |_, _| 1.0);
        let mut b = sweep3("b.csv", |coll, s| if coll == "all-reduce" && s >= 64 { 1.3 } else { 1.0 });
        b.rows.retain(|r| !(r.key.collective == "all-gather" && r.key.size_bytes == 16384));
        b.rows.push(row("all-reduce", 32 << 20, 5.0, 99));
        let (a, b) = ([a], [b]);
        let (m, c) = compare(&a, &b);
        let text = render(&a, &b, &m, &c, &settings());
        let lines: Vec<&str> = text.lines().collect();
        // Header: names, statistic, what is judged, noise, bar.
        assert_eq!(
            lines[0],
            "# compare: base a.csv -> new b.csv; judged on the median time per call (median_us of each run)"
        );
        assert!(lines[1].starts_with("# judged: each series' shift"), "{text}");
        assert!(lines[2].starts_with("# noise: one run per side"), "{text}");
        assert!(lines[3].starts_with("# regression: median slower by more than 5% "), "{text}");
        // One table row per shared point (35 of them), after the two header lines; the table
        // shows the change in both statistics.
        assert!(
            lines[4].contains("median_chg") && lines[4].contains(" rel ") && lines[4].ends_with("mean_chg"),
            "{text}"
        );
        let rows: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(rows.len(), 35, "{text}");
        assert_eq!(rows.iter().filter(|l| l.contains(" slower ")).count(), 9, "{text}");
        // The series table: three series, all-reduce regressed.
        let series: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("= ")).collect();
        assert_eq!(series.len(), 3, "{text}");
        assert!(series[0].starts_with("= all-reduce") && series[0].contains("REGRESSION"), "{text}");
        // The whole run, in one line.
        assert_eq!(lines.iter().filter(|l| l.starts_with("# whole run: median +0.0% ")).count(), 1, "{text}");
        // Unmatched points, sizes as the flags take them.
        assert!(lines.contains(&"# only in a.csv: all-gather mpi float sum out-of-place: 1 size (16K)"), "{text}");
        assert!(lines.contains(&"# only in b.csv: all-reduce mpi float sum out-of-place: 1 size (32M)"), "{text}");
        // One line per `slower` point, one for the series, then the summary last.
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("slower, not judged (one run per side): all-reduce ")).count(),
            9
        );
        assert!(
            lines.contains(
                &"slower, not judged (one run per side): all-reduce mpi float sum out-of-place 16K: median 17.38 -> 22.60 us (+30.0%; +30.0% relative to the rest of the run, bar +5.0%)"
            ),
            "{text}"
        );
        assert!(
            lines.contains(
                &"regressed series: all-reduce mpi float sum out-of-place over 12 sizes: median ratio 1.300 (+30.0%; +30.0% relative to the rest of the run, bar +5.0%)"
            ),
            "{text}"
        );
        let last = lines.last().unwrap();
        assert!(
            last.starts_with("compare: 35 points in common: 0 regressions, 9 slower not judged, 0 improved, 0 beyond 5% within noise, 0 lone, 26 within 5%; series: 1 regressed, 0 improved of 3;")
                && last.contains("judged on the median, one run per side (drift not separable), whole run +0.0% ok;")
                && last.ends_with("1 only in base, 1 only in new"),
            "{text}"
        );
    }
}
