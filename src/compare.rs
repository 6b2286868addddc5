//! `coll-bench compare BASE.csv NEW.csv`: did NEW get slower than BASE?
//!
//! Points are matched on (collective, backend, dtype, op, placement, size). For each shared
//! point: the ratio of medians (new / base), the change in percent, and a one-sided Welch t-test
//! on the means, from each row's mean (`time_us`), `stddev_us` and sample count (`iters /
//! batch_iters`), and, where the CSV has them (`ci95_lo_us`, `ci95_hi_us`), whether the medians'
//! distribution-free 95% intervals are apart: the t-test alone loses its power when a few slow
//! outliers (preemption on a shared node) inflate the standard deviation, while the median's
//! interval stays tight. Where neither is possible (fewer than two samples, no spread, no
//! interval) the sample ranges decide: NEW is significantly slower only if its fastest sample
//! is slower than BASE's slowest. A point regressed when its median slowed by more than
//! `--threshold` percent AND the slowdown is significant. Exit 1 if any point regressed, 0 if
//! none, 2 on error. Points only in one run are listed, never judged.

use crate::csvread::{self, human_bytes, Key, Row};
use crate::error::{exit, Error, Result};
use clap::Parser;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

const FORM: &str = "coll-bench compare BASE.csv NEW.csv [--threshold PCT] [--alpha P]";

#[derive(Parser, Debug)]
#[command(
    name = "coll-bench compare",
    bin_name = "coll-bench compare",
    about = "Compare two coll-bench CSVs point by point; exit 1 if NEW is significantly slower than BASE anywhere",
    after_help = "Runs without MPI (no mpirun needed).\nExample: coll-bench compare last-week.csv today.csv --threshold 10\n\
Exit codes: 0 no significant regression, 1 at least one, 2 error."
)]
struct Args {
    /// The reference run's CSV.
    #[arg(value_name = "BASE.csv")]
    base: PathBuf,
    /// The run to judge against it.
    #[arg(value_name = "NEW.csv")]
    new: PathBuf,
    /// Slowdown of the median, in percent, beyond which a significant slowdown is a regression.
    #[arg(long, value_name = "PCT", default_value = "5")]
    threshold: String,
    /// Significance level of the one-sided test.
    #[arg(long, value_name = "P", default_value = "0.05")]
    alpha: String,
}

/// Entry point; `args[0]` is "compare".
pub fn main(args: &[String]) -> i32 {
    let parsed: Args = match csvread::parse_or_exit("compare", FORM, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(&parsed) {
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

fn run(args: &Args) -> Result<(String, i32)> {
    let threshold = match args.threshold.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => v,
        _ => {
            return Err(Error::usage(format!(
                "--threshold: '{}' is not a percentage; expected a number >= 0, e.g. --threshold 5",
                args.threshold
            )))
        }
    };
    let alpha = match args.alpha.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => v,
        _ => {
            return Err(Error::usage(format!(
                "--alpha: '{}' is not a significance level; expected a number between 0 and 1, e.g. --alpha 0.05",
                args.alpha
            )))
        }
    };
    let with_form = |e: Error| Error::usage(format!("{e}; expected {FORM}"));
    let base = csvread::read(&args.base).map_err(with_form)?;
    let new = csvread::read(&args.new).map_err(with_form)?;
    let base_name = args.base.display().to_string();
    let new_name = args.new.display().to_string();
    let m = match_points(&base, &new)
        .map_err(|(which, e)| Error::usage(format!("'{}': {e}", if which == 0 { &base_name } else { &new_name })))?;
    if m.pairs.is_empty() {
        return Err(Error::usage(format!(
            "'{base_name}' and '{new_name}' share no point (same collective, backend, dtype, op, placement and size); nothing to compare"
        )));
    }
    let judged: Vec<(&Row, &Row, Judgement)> =
        m.pairs.iter().map(|(b, n)| (*b, *n, judge(&sample(b), &sample(n), threshold, alpha))).collect();
    let text = render(&base_name, &new_name, &base, &new, &m, &judged, threshold, alpha);
    let regressed = judged.iter().any(|(_, _, j)| j.verdict == Verdict::Regression);
    Ok((text, if regressed { exit::WRONG } else { exit::OK }))
}

/// Points of two runs, matched by key.
#[derive(Debug)]
pub struct Matched<'a> {
    /// Shared points, in BASE's order.
    pub pairs: Vec<(&'a Row, &'a Row)>,
    pub only_base: Vec<&'a Key>,
    pub only_new: Vec<&'a Key>,
}

/// Match on the key. A file that has the same point twice is an error: (0 for base, 1 for new,
/// the message).
pub fn match_points<'a>(base: &'a [Row], new: &'a [Row]) -> std::result::Result<Matched<'a>, (usize, String)> {
    fn index(rows: &[Row]) -> std::result::Result<HashMap<&Key, &Row>, String> {
        let mut map = HashMap::with_capacity(rows.len());
        for r in rows {
            if let Some(prev) = map.insert(&r.key, r) {
                return Err(format!(
                    "line {} measures the same point as line {} ({}); compare takes one run per file",
                    r.line, prev.line, r.key
                ));
            }
        }
        Ok(map)
    }
    let b = index(base).map_err(|e| (0, e))?;
    let n = index(new).map_err(|e| (1, e))?;
    Ok(Matched {
        pairs: base.iter().filter_map(|r| n.get(&r.key).map(|m| (r, *m))).collect(),
        only_base: base.iter().filter(|r| !n.contains_key(&r.key)).map(|r| &r.key).collect(),
        only_new: new.iter().filter(|r| !b.contains_key(&r.key)).map(|r| &r.key).collect(),
    })
}

/// What the tests need of one point of one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub mean: f64,
    pub median: f64,
    pub stddev: Option<f64>,
    pub n: u64,
    pub min: f64,
    pub max: f64,
    /// 95% interval of the median, where the CSV has it.
    pub median_ci: Option<(f64, f64)>,
}

fn sample(r: &Row) -> Sample {
    Sample {
        mean: r.time_us,
        median: r.median_us,
        stddev: r.stddev_us,
        n: r.samples(),
        min: r.min_us,
        max: r.max_us,
        median_ci: r.median_ci95_us,
    }
}

/// One-sided Welch t-test of NEW's mean against BASE's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// p of "NEW is slower" and of "NEW is faster".
    pub p_slower: f64,
    pub p_faster: f64,
}

/// Where NEW's interval lies against BASE's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Apart {
    /// Entirely above (slower).
    Slower,
    /// Entirely below (faster).
    Faster,
    Overlap,
}

fn apart((blo, bhi): (f64, f64), (nlo, nhi): (f64, f64)) -> Apart {
    if nlo > bhi {
        Apart::Slower
    } else if nhi < blo {
        Apart::Faster
    } else {
        Apart::Overlap
    }
}

/// What the data allowed, for one point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Evidence {
    /// The t-test on the means; None with fewer than two samples, no stddev or no spread.
    pub welch: Option<Welch>,
    /// The medians' 95% intervals, where both rows have them.
    pub median_ci: Option<Apart>,
    /// The sample ranges [min, max]: consulted only when neither of the above is available.
    pub ranges: Option<Apart>,
}

/// One-sided Welch t-test of "NEW's mean is larger" (and "smaller"). None where the data do not
/// allow it: fewer than two samples on a side, no standard deviation, or no spread at all.
pub fn welch(base: &Sample, new: &Sample) -> Option<Welch> {
    let (sb, sn) = (base.stddev?, new.stddev?);
    if base.n < 2 || new.n < 2 || !sb.is_finite() || !sn.is_finite() {
        return None;
    }
    let (vb, vn) = (sb * sb / base.n as f64, sn * sn / new.n as f64);
    let se2 = vb + vn;
    if se2 <= 0.0 || !se2.is_finite() {
        return None;
    }
    let t = (new.mean - base.mean) / se2.sqrt();
    let df = se2 * se2 / (vb * vb / (base.n - 1) as f64 + vn * vn / (new.n - 1) as f64);
    if !t.is_finite() || !df.is_finite() {
        return None;
    }
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(Welch { t, df, p_slower: dist.sf(t), p_faster: dist.cdf(t) })
}

/// Everything the two rows allow.
pub fn evidence(base: &Sample, new: &Sample) -> Evidence {
    let welch = welch(base, new);
    let median_ci = base.median_ci.zip(new.median_ci).map(|(b, n)| apart(b, n));
    let ranges = match (welch, median_ci) {
        (None, None) => Some(apart((base.min, base.max), (new.min, new.max))),
        _ => None,
    };
    Evidence { welch, median_ci, ranges }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Slower beyond the threshold, and significantly so.
    Regression,
    /// Faster beyond the threshold, and significantly so.
    Improvement,
    /// Beyond the threshold either way, but not significant: noise as far as the data tell.
    NotSignificant,
    /// Within the threshold.
    Unchanged,
    /// The base median is not a positive time; no ratio.
    NoRatio,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Regression => "REGRESSION",
            Verdict::Improvement => "improved",
            Verdict::NotSignificant => "noise",
            Verdict::Unchanged => "ok",
            Verdict::NoRatio => "n/a",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
    /// new median / base median.
    pub ratio: f64,
    /// (ratio − 1) × 100.
    pub change_pct: f64,
    pub evidence: Evidence,
    pub slower_significant: bool,
    pub faster_significant: bool,
    pub verdict: Verdict,
}

/// The decision for one point. A change is significant when the Welch test says so at `alpha`,
/// or the medians' 95% intervals do not overlap (which stays decisive when a few slow outliers
/// inflate the standard deviation and drown the t-test); with neither available, when the
/// sample ranges do not overlap.
pub fn judge(base: &Sample, new: &Sample, threshold_pct: f64, alpha: f64) -> Judgement {
    let ratio = if base.median > 0.0 && base.median.is_finite() { new.median / base.median } else { f64::NAN };
    let change_pct = (ratio - 1.0) * 100.0;
    let ev = evidence(base, new);
    let by = |dir: Apart| ev.median_ci == Some(dir) || ev.ranges == Some(dir);
    let slower = ev.welch.is_some_and(|w| w.p_slower < alpha) || by(Apart::Slower);
    let faster = ev.welch.is_some_and(|w| w.p_faster < alpha) || by(Apart::Faster);
    let verdict = if !ratio.is_finite() {
        Verdict::NoRatio
    } else if change_pct > threshold_pct {
        if slower {
            Verdict::Regression
        } else {
            Verdict::NotSignificant
        }
    } else if change_pct < -threshold_pct {
        if faster {
            Verdict::Improvement
        } else {
            Verdict::NotSignificant
        }
    } else {
        Verdict::Unchanged
    };
    Judgement { ratio, change_pct, evidence: ev, slower_significant: slower, faster_significant: faster, verdict }
}

/// The evidence in a few words: the t-test's p in the direction the median moved, and whether
/// the intervals are apart.
fn evidence_text(j: &Judgement) -> String {
    let mut parts = vec![];
    if let Some(w) = j.evidence.welch {
        let p = if j.change_pct >= 0.0 { w.p_slower } else { w.p_faster };
        parts.push(if p < 1e-4 { "t-test p<1e-4".to_string() } else { format!("t-test p={p:.4}") });
    }
    let word = |a: Apart| if a == Apart::Overlap { "overlap" } else { "apart" };
    if let Some(a) = j.evidence.median_ci {
        parts.push(format!("median CIs {}", word(a)));
    }
    if let Some(a) = j.evidence.ranges {
        parts.push(format!("ranges {}", word(a)));
    }
    parts.join(", ")
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
    let list: Vec<String> = sizes.iter().map(|s| human_bytes(*s)).collect();
    if n <= 6 {
        format!("{} size{} ({})", n, if n == 1 { "" } else { "s" }, list.join(" "))
    } else {
        format!("{n} sizes ({} .. {})", list[0], list[n - 1])
    }
}

fn runs_text(rows: &[Row]) -> String {
    let mut ranks: Vec<u64> = rows.iter().filter_map(|r| r.ranks).collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks.iter().map(|r| r.to_string()).collect::<Vec<_>>().join("/")
}

#[allow(clippy::too_many_arguments)]
fn render(
    base_name: &str,
    new_name: &str,
    base: &[Row],
    new: &[Row],
    m: &Matched,
    judged: &[(&Row, &Row, Judgement)],
    threshold: f64,
    alpha: f64,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# compare: base {base_name} -> new {new_name}; regression = median slower by more than {threshold}% and significantly so (one-sided Welch t-test on the means at alpha {alpha}, or the medians' 95% CIs apart)"
    );
    let (rb, rn) = (runs_text(base), runs_text(new));
    if rb != rn {
        let _ = writeln!(s, "# note: the runs had different rank counts (base {rb}, new {rn})");
    }
    let w = judged.iter().map(|(b, _, _)| b.key.collective.len()).max().unwrap_or(0).max(10);
    let _ = writeln!(
        s,
        "# {:<w$} {:>7} {:>8} {:>6} {:>12} {:>12} {:>12} {:>12} {:>7} {:>8}  {:<10}  evidence",
        "collective",
        "backend",
        "type",
        "redop",
        "placement",
        "size",
        "base_med",
        "new_med",
        "ratio",
        "change",
        "verdict"
    );
    let _ = writeln!(
        s,
        "# {:<w$} {:>7} {:>8} {:>6} {:>12} {:>12} {:>12} {:>12} {:>7} {:>8}",
        "", "", "", "", "", "(B)", "(us)", "(us)", "", ""
    );
    for (b, n, j) in judged {
        let k = &b.key;
        let _ = writeln!(
            s,
            "  {:<w$} {:>7} {:>8} {:>6} {:>12} {:>12} {:>12.2} {:>12.2} {:>7.3} {:>+7.1}%  {:<10}  {}",
            k.collective,
            k.backend,
            k.dtype,
            k.op,
            k.placement,
            k.size_bytes,
            b.median_us,
            n.median_us,
            j.ratio,
            j.change_pct,
            j.verdict.word(),
            evidence_text(j)
        );
    }
    for (name, keys) in [(base_name, &m.only_base), (new_name, &m.only_new)] {
        for (k, sizes) in by_series(keys) {
            let _ = writeln!(
                s,
                "# only in {name}: {} {} {} {} {}: {}",
                k.collective,
                k.backend,
                k.dtype,
                k.op,
                k.placement,
                sizes_text(&sizes)
            );
        }
    }
    let count = |v: Verdict| judged.iter().filter(|(_, _, j)| j.verdict == v).count();
    for (b, n, j) in judged.iter().filter(|(_, _, j)| j.verdict == Verdict::Regression) {
        let _ = writeln!(
            s,
            "regressed: {}: median {:.2} -> {:.2} us ({:+.1}%; {})",
            b.key,
            b.median_us,
            n.median_us,
            j.change_pct,
            evidence_text(j)
        );
    }
    let regressions = count(Verdict::Regression);
    let _ = writeln!(
        s,
        "compare: {} point{} in common: {} regression{}, {} improved, {} beyond {}% but not significant, {} within {}%; {} only in base, {} only in new",
        judged.len(),
        if judged.len() == 1 { "" } else { "s" },
        regressions,
        if regressions == 1 { "" } else { "s" },
        count(Verdict::Improvement),
        count(Verdict::NotSignificant),
        threshold,
        count(Verdict::Unchanged) + count(Verdict::NoRatio),
        threshold,
        m.only_base.len(),
        m.only_new.len()
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(coll: &str, size: u64, median: f64, line: u64) -> Row {
        Row {
            key: Key {
                collective: coll.into(),
                backend: "mpi".into(),
                dtype: "float".into(),
                op: "sum".into(),
                placement: "out_of_place".into(),
                size_bytes: size,
            },
            iters: 100,
            batch_iters: 1,
            time_us: median,
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

    fn s(mean: f64, sd: Option<f64>, n: u64, min: f64, max: f64) -> Sample {
        Sample { mean, median: mean, stddev: sd, n, min, max, median_ci: None }
    }

    #[test]
    fn matching_pairs_shared_points_and_lists_the_rest() {
        let base = vec![row("all-reduce", 8, 1.0, 2), row("all-reduce", 16, 1.0, 3), row("all-gather", 8, 1.0, 4)];
        let new = vec![row("all-reduce", 16, 2.0, 2), row("all-reduce", 32, 1.0, 3), row("all-reduce", 8, 1.0, 4)];
        let m = match_points(&base, &new).unwrap();
        let pairs: Vec<(u64, u64)> = m.pairs.iter().map(|(b, n)| (b.line, n.line)).collect();
        assert_eq!(pairs, vec![(2, 4), (3, 2)], "in base's order, each with its own match");
        assert_eq!(m.only_base.len(), 1);
        assert_eq!(m.only_base[0].collective, "all-gather");
        assert_eq!(m.only_new.len(), 1);
        assert_eq!(m.only_new[0].size_bytes, 32);
        // Another placement, type or backend is another point.
        let mut other = row("all-reduce", 8, 1.0, 2);
        other.key.placement = "in_place".into();
        let m = match_points(&base[..1], std::slice::from_ref(&other)).unwrap();
        assert!(m.pairs.is_empty());
    }

    #[test]
    fn a_point_twice_in_one_file_is_an_error() {
        let base = vec![row("all-reduce", 8, 1.0, 2), row("all-reduce", 8, 1.0, 7)];
        let (which, e) = match_points(&base, &base[..1]).unwrap_err();
        assert_eq!(which, 0);
        assert!(e.contains("line 7 measures the same point as line 2"), "{e}");
    }

    #[test]
    fn welch_matches_a_worked_example() {
        // Means 10 and 12, sd 2, n 10 each: t = 2 / sqrt(0.8) = 2.236, df = 18, one-sided p ≈ 0.019.
        let w = welch(&s(10.0, Some(2.0), 10, 0.0, 0.0), &s(12.0, Some(2.0), 10, 0.0, 0.0)).unwrap();
        assert!((w.t - 2.2361).abs() < 1e-3, "{w:?}");
        assert!((w.df - 18.0).abs() < 1e-9, "{w:?}");
        assert!((w.p_slower - 0.0191).abs() < 1e-3, "{w:?}");
        assert!((w.p_slower + w.p_faster - 1.0).abs() < 1e-12);
        // Unequal variances and counts: Welch–Satterthwaite df lies between min(n)−1 and n1+n2−2.
        let w = welch(&s(10.0, Some(1.0), 50, 0.0, 0.0), &s(10.5, Some(4.0), 8, 0.0, 0.0)).unwrap();
        assert!(w.df > 7.0 && w.df < 56.0, "{w:?}");
        // Not possible: one sample, no stddev, no spread.
        assert_eq!(welch(&s(10.0, Some(1.0), 1, 0.0, 0.0), &s(12.0, Some(1.0), 10, 0.0, 0.0)), None);
        assert_eq!(welch(&s(10.0, None, 10, 0.0, 0.0), &s(12.0, Some(1.0), 10, 0.0, 0.0)), None);
        assert_eq!(welch(&s(10.0, Some(0.0), 10, 0.0, 0.0), &s(12.0, Some(0.0), 10, 0.0, 0.0)), None);
    }

    #[test]
    fn clear_slowdown_beyond_threshold_is_a_regression() {
        let j = judge(&s(100.0, Some(5.0), 50, 90.0, 120.0), &s(130.0, Some(5.0), 50, 117.0, 156.0), 5.0, 0.05);
        assert!((j.ratio - 1.3).abs() < 1e-12);
        assert!((j.change_pct - 30.0).abs() < 1e-9);
        assert!(j.slower_significant);
        assert_eq!(j.verdict, Verdict::Regression);
        assert_eq!(j.evidence.ranges, None, "the t-test was possible");
    }

    #[test]
    fn noisy_slowdown_is_not_a_regression() {
        // +10% with sd 30 on 5 samples: nowhere near significant.
        let j = judge(&s(100.0, Some(30.0), 5, 60.0, 150.0), &s(110.0, Some(30.0), 5, 70.0, 160.0), 5.0, 0.05);
        assert!(!j.slower_significant);
        assert_eq!(j.verdict, Verdict::NotSignificant);
    }

    #[test]
    fn tight_median_intervals_decide_when_outliers_drown_the_t_test() {
        // Median 20 → 26 µs, intervals tight, but a few 20 ms outliers make sd ~ 900 µs.
        let mut b = s(76.0, Some(927.0), 1990, 15.5, 24096.0);
        let mut n = s(98.8, Some(1205.0), 1990, 20.2, 31325.0);
        (b.median, n.median) = (20.19, 26.25);
        assert!(welch(&b, &n).unwrap().p_slower > 0.05, "the t-test alone misses it");
        (b.median_ci, n.median_ci) = (Some((20.0, 20.4)), Some((26.0, 26.5)));
        let j = judge(&b, &n, 5.0, 0.05);
        assert_eq!(j.evidence.median_ci, Some(Apart::Slower));
        assert_eq!(j.verdict, Verdict::Regression);
        // Overlapping intervals and a weak t-test: noise.
        n.median_ci = Some((20.3, 26.5));
        assert_eq!(judge(&b, &n, 5.0, 0.05).verdict, Verdict::NotSignificant);
    }

    #[test]
    fn significant_but_small_slowdown_is_within_threshold() {
        // +2%, very tight: significant, but below a 5% threshold.
        let (b, n) = (s(100.0, Some(0.1), 1000, 99.0, 101.0), s(102.0, Some(0.1), 1000, 101.0, 103.0));
        let j = judge(&b, &n, 5.0, 0.05);
        assert!(j.slower_significant);
        assert_eq!(j.verdict, Verdict::Unchanged);
        // With a 1% threshold it is a regression.
        assert_eq!(judge(&b, &n, 1.0, 0.05).verdict, Verdict::Regression);
    }

    #[test]
    fn speedups_are_improvements_never_regressions() {
        let j = judge(&s(130.0, Some(5.0), 50, 117.0, 156.0), &s(100.0, Some(5.0), 50, 90.0, 120.0), 5.0, 0.05);
        assert!(j.faster_significant && !j.slower_significant);
        assert_eq!(j.verdict, Verdict::Improvement);
    }

    #[test]
    fn without_spread_or_intervals_the_ranges_decide() {
        // One sample each (no stddev, no interval): the ranges must not overlap.
        let one = |v: f64| s(v, None, 1, v, v);
        let j = judge(&one(100.0), &one(130.0), 5.0, 0.05);
        assert_eq!(j.evidence, Evidence { welch: None, median_ci: None, ranges: Some(Apart::Slower) });
        assert_eq!(j.verdict, Verdict::Regression);
        // Overlapping ranges: not significant.
        let j = judge(&s(100.0, None, 1, 90.0, 140.0), &s(130.0, None, 1, 120.0, 150.0), 5.0, 0.05);
        assert_eq!(j.evidence.ranges, Some(Apart::Overlap));
        assert_eq!(j.verdict, Verdict::NotSignificant);
        // Zero spread on both sides: no t, ranges again.
        let j = judge(&s(100.0, Some(0.0), 10, 100.0, 100.0), &s(130.0, Some(0.0), 10, 130.0, 130.0), 5.0, 0.05);
        assert_eq!(j.evidence.ranges, Some(Apart::Slower));
        assert_eq!(j.verdict, Verdict::Regression);
    }

    #[test]
    fn a_zero_base_has_no_ratio() {
        let j = judge(&s(0.0, Some(0.0), 10, 0.0, 0.0), &s(1.0, Some(0.1), 10, 0.9, 1.1), 5.0, 0.05);
        assert_eq!(j.verdict, Verdict::NoRatio);
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
}
