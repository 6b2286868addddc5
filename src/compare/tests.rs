//! Unit tests of matching, the model and the rendering.

use super::render::{by_series, render, sizes_text};
use super::stats::pooled_var;
use super::*;
use crate::csvread::{Key, Row};

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
        median_ci95_us: Some((median * 0.999, median * 1.001)),
        pct_of_ceiling: None,
        busbw_gbps: 1.0,
        ranks: Some(2),
        hosts: Some(1),
        line,
        size_order: false,
        budget_s: None,
        imbalance: None,
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
    let new =
        [run("n", vec![row("all-reduce", 16, 2.0, 2), row("all-reduce", 32, 1.0, 3), row("all-reduce", 8, 1.0, 4)])];
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
        move |coll: &str, s: u64| (1.0 + 0.15 * jitter(seed, coll.len() as u64)) * (1.0 + 0.05 * jitter(seed + 100, s))
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
    // Its series, and its 12 points as one stretch of sizes.
    assert_eq!(regressions(&c), (12, 1), "{c:?}");
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
    let two =
        |c: &str, s: u64| noisy(2, 0.02)(c, s) * if c == "all-reduce" && (s == 1024 || s == 2048) { 1.6 } else { 1.0 };
    let b = [sweep3("b", two)];
    let (_, c) = compare(&a, &b);
    assert_eq!(regressions(&c), (0, 0), "{c:?}");
    assert_eq!(c.points.iter().filter(|j| j.verdict == Change::Lone).count(), 2, "{c:?}");
}

#[test]
fn a_slowdown_of_some_sizes_is_a_regression_with_one_run_per_side_or_several() {
    // all-reduce 30% slower from 4K up (its 3 largest sizes of 12).
    let slow = |c: &str, s: u64| if c == "all-reduce" && s >= 4096 { 1.3 } else { 1.0 };
    let a = [sweep("a", |_, _| 1.0)];
    let b = [sweep("b", slow)];
    let (m, c) = compare(&a, &b);
    // One run per side: the stretch is judged as one, and its points take its verdict; the
    // series' median did not move.
    for (p, j) in m.points.iter().zip(&c.points) {
        let doctored = p.key.collective == "all-reduce" && p.key.size_bytes >= 4096;
        assert_eq!(j.verdict == Change::Regression, doctored, "{p:?} {j:?}");
        if doctored {
            assert!((j.change_pct - 30.0).abs() < 1e-9);
            assert!((j.other_change_pct - 30.0).abs() < 1e-9, "the mean moved the same way");
        }
    }
    assert_eq!(regressions(&c), (3, 0));
    assert_eq!(c.stretches.len(), 1, "{:?}", c.stretches);
    let st = &c.stretches[0];
    assert_eq!((st.key.collective.as_str(), st.min_bytes, st.max_bytes), ("all-reduce", 4096, 16384));
    assert!(c.regressed());
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
    assert!(lines[4].contains("median_chg") && lines[4].contains(" rel ") && lines[4].ends_with("mean_chg"), "{text}");
    let rows: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(rows.len(), 35, "{text}");
    assert_eq!(rows.iter().filter(|l| l.contains(" REGRESSION ")).count(), 9, "{text}");
    // The series table: three series, all-reduce regressed.
    let series: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("= ")).collect();
    assert_eq!(series.len(), 3, "{text}");
    assert!(series[0].starts_with("= all-reduce") && series[0].contains("REGRESSION"), "{text}");
    // The whole run, in one line.
    assert_eq!(lines.iter().filter(|l| l.starts_with("# whole run: median +0.0% ")).count(), 1, "{text}");
    // Unmatched points, sizes as the flags take them.
    assert!(lines.contains(&"# only in a.csv: all-gather mpi float sum out-of-place: 1 size (16K)"), "{text}");
    assert!(lines.contains(&"# only in b.csv: all-reduce mpi float sum out-of-place: 1 size (32M)"), "{text}");
    // One line per regressed point, one for the stretch, one for the series, then the summary.
    assert_eq!(lines.iter().filter(|l| l.starts_with("regressed: all-reduce ")).count(), 9);
    assert!(
        lines.contains(
            &"regressed: all-reduce mpi float sum out-of-place 16K: median 17.38 -> 22.60 us (+30.0%; +30.0% relative to the rest of the run, bar +5.0%)"
        ),
        "{text}"
    );
    assert_eq!(lines.iter().filter(|l| l.starts_with("regressed stretch: ")).count(), 1, "{text}");
    assert!(
        lines.iter().any(|l| l.starts_with(
            "regressed stretch: all-reduce mpi float sum out-of-place from 64 to 16K (9 sizes): median +30.0% on average (+30.0% relative to the rest of the run, bar +5.0%;"
        )),
        "{text}"
    );
    assert!(
        lines.contains(
            &"regressed series: all-reduce mpi float sum out-of-place over 12 sizes: median ratio 1.300 (+30.0%; +30.0% relative to the rest of the run, bar +5.0%)"
        ),
        "{text}"
    );
    // One run per side: what it could not see, per collective, before the verdict's line.
    let blind = lines
        .iter()
        .find(|l| l.starts_with("# one run per side, so the smallest slowdown"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        blind.contains("all-reduce +5%")
            && blind.contains("above 30% for all-gather, reduce-scatter: a slowdown smaller than that went unseen"),
        "{blind}"
    );
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("compare: REGRESSED (exit 1): 1 series, 1 stretch of sizes, 9 points, whole run not; 35 points in common: 9 regressed, 0 improved, 0 beyond 5% within noise, 0 lone, 26 within 5%; series: 1 regressed, 0 improved of 3;")
            && last.contains("judged on the median, one run per side (drift not separable), whole run +0.0% ok;")
            && last.ends_with("1 only in base, 1 only in new"),
        "{text}"
    );
}

#[test]
fn one_run_per_side_catches_a_third_of_a_series_thirty_percent_slower() {
    // Three collectives × 12 sizes, ±3% point jitter in each run, the new run 2% slower as a
    // whole (drift); all-reduce 30% slower over its largest third (2K..16K, 4 sizes): the
    // series' median does not move, the stretch does.
    let a = [sweep3("a", noisy(1, 0.03))];
    let third = |c: &str, s: u64| if c == "all-reduce" && s >= 2048 { 1.3 } else { 1.0 };
    let b = [sweep3("b", move |c, s| 1.02 * noisy(2, 0.03)(c, s) * third(c, s))];
    let (m, c) = compare(&a, &b);
    assert!(c.regressed(), "{c:?}");
    assert_eq!(c.series.iter().filter(|s| s.verdict == Change::Regression).count(), 0, "the median held");
    let caught: Vec<&Stretch> = c.stretches.iter().filter(|s| s.verdict == Change::Regression).collect();
    assert_eq!(caught.len(), 1, "{:?}", c.stretches);
    assert_eq!(
        (caught[0].key.collective.as_str(), caught[0].min_bytes, caught[0].max_bytes),
        ("all-reduce", 2048, 16384)
    );
    for (p, j) in m.points.iter().zip(&c.points) {
        let doctored = third(&p.key.collective, p.key.size_bytes) > 1.0;
        assert_eq!(j.verdict == Change::Regression, doctored, "{p:?} {j:?}");
    }
    // The same two runs without the slowdown: nothing, however the jitter lines up.
    for seed in 0..20 {
        let a = [sweep3("a", noisy(100 + seed, 0.03))];
        let b = [sweep3("b", move |c, s| 1.02 * noisy(200 + seed, 0.03)(c, s))];
        let (_, c) = compare(&a, &b);
        assert!(!c.regressed(), "seed {seed}: {c:?}");
    }
    // And a stretch of +8% (beyond the 5% threshold, within ±3% jitter's reach as a stretch of
    // three sizes) at the smallest sizes is noise, not a regression.
    let small = |c: &str, s: u64| if c == "all-gather" && s <= 32 { 1.08 } else { 1.0 };
    let b = [sweep3("b", move |c, s| noisy(2, 0.03)(c, s) * small(c, s))];
    let (_, c) = compare(&a, &b);
    assert!(!c.regressed(), "{c:?}");
}

#[test]
fn runs_measured_in_different_orders_are_noted() {
    let (a, b) = ([sweep("a", |_, _| 1.0)], [sweep("b", |_, _| 1.0)]);
    let note = "# note: the runs were measured in different orders (--order: base collective, new size)";
    let (m, c) = compare(&a, &b);
    assert!(!render(&a, &b, &m, &c, &settings()).contains("# note: the runs were measured"));
    let mut b = b;
    b[0].rows.iter_mut().for_each(|r| r.size_order = true);
    let (m, c) = compare(&a, &b);
    let text = render(&a, &b, &m, &c, &settings());
    assert!(text.contains(note), "{text}");
}
