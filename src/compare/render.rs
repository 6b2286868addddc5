//! Rendering: the header, the tables of points and series, the whole run, and the summary.

use super::matching::{Matched, Run};
use super::model::Settings;
use super::model::{pct, Change, Comparison, Noise};
use crate::csvread::Key;
use crate::size::human;
use std::fmt::Write as _;

/// Keys grouped into their series, in first-seen order, with the sizes of each.
pub(super) fn by_series<'a>(keys: &[&'a Key]) -> Vec<(&'a Key, Vec<u64>)> {
    let mut out: Vec<(&Key, Vec<u64>)> = vec![];
    for k in keys {
        match out.iter_mut().find(|(s, _)| s.series() == k.series()) {
            Some((_, sizes)) => sizes.push(k.size_bytes),
            None => out.push((k, vec![k.size_bytes])),
        }
    }
    out
}

pub(super) fn sizes_text(sizes: &[u64]) -> String {
    let n = sizes.len();
    let list: Vec<String> = sizes.iter().map(|s| human(*s)).collect();
    if n <= 6 {
        format!("{} size{} ({})", n, if n == 1 { "" } else { "s" }, list.join(" "))
    } else {
        format!("{n} sizes ({} .. {})", list[0], list[n - 1])
    }
}

/// Distinct values, sorted, joined by `/` (a side's rank counts, its orders).
fn distinct<T: Ord + ToString>(values: impl Iterator<Item = T>) -> String {
    let mut v: Vec<T> = values.collect();
    v.sort_unstable();
    v.dedup();
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("/")
}

fn ranks_text(runs: &[Run]) -> String {
    distinct(runs.iter().flat_map(|r| r.rows.iter().filter_map(|r| r.ranks)))
}

/// The orders a side's runs were measured in (`collective`, `size`, or both).
fn order_text(runs: &[Run]) -> String {
    distinct(runs.iter().flat_map(|r| r.rows.iter().map(|r| if r.size_order { "size" } else { "collective" })))
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

pub(super) fn render(base: &[Run], new: &[Run], m: &Matched, c: &Comparison, s: &Settings) -> String {
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
            "# judged: each series' shift (the median over its sizes of ln new/base of the {stat}) relative to the level of the same runs (`rel`: the median over every series; over the other collective's with only two), so drift of the whole run cancels; a point likewise, only in a stretch of consecutive sizes (3, or 2 in a series of fewer than 6); with one run per side such a stretch (each size slower than the threshold) is judged as one, its mean change against its noise with neighbouring sizes moving together (rho {:.2})",
            c.neighbour_rho
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
        let (ob, on) = (order_text(base), order_text(new));
        if ob != on {
            let _ = writeln!(
                out,
                "# note: the runs were measured in different orders (--order: base {ob}, new {on}): a machine that changes speed during a run slows a whole collective in one order and a band of sizes of every collective in the other, so the two sides' drift differs in shape"
            );
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
        for st in c.stretches.iter().filter(|s| s.verdict == Change::Regression) {
            let _ = writeln!(
                out,
                "regressed stretch: {} from {} to {} ({} sizes): {stat} {:+.1}% on average ({:+.1}% relative to the rest of the run, bar {:+.1}%; neighbouring sizes moving together by rho {:.2})",
                series_text(st.key),
                human(st.min_bytes),
                human(st.max_bytes),
                st.points.len(),
                st.change_pct,
                st.rel_pct,
                st.bar_pct,
                c.neighbour_rho
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
        let stretches = c.stretches.iter().filter(|s| s.verdict == Change::Regression).count();
        // The verdict first, from the same test as the exit code.
        let verdict = if c.regressed() {
            format!(
                "REGRESSED (exit 1): {} series, {} stretch{} of sizes, {} point{}, whole run {}",
                scount(Change::Regression),
                stretches,
                if stretches == 1 { "" } else { "es" },
                count(Change::Regression),
                if count(Change::Regression) == 1 { "" } else { "s" },
                if c.common.verdict == Change::Regression { "regressed" } else { "not" }
            )
        } else {
            "no regression (exit 0)".to_string()
        };
        // What one run per side could not see, before the verdict's line (the last line).
        if let Some(line) = blind_spots(c) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(
            out,
            "compare: {verdict}; {} point{} in common: {} regressed, {} improved, {} beyond {}% within noise, {} lone, {} within {}%; series: {} regressed, {} improved of {}; judged on the {stat}, {}, whole run {:+.1}% {}; {} only in base, {} only in new",
            c.points.len(),
            if c.points.len() == 1 { "" } else { "s" },
            count(Change::Regression),
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

/// Above this smallest detectable slowdown of a collective, one run per side says what it cannot
/// see and asks for more runs.
pub(super) const BLIND_PCT: f64 = 30.0;

/// With one run per side, the smallest slowdown compare could have judged a regression, per
/// collective (the lowest bar of its series: a slowdown of the whole collective beyond it would
/// have been caught); `None` with several runs per side, whose noise is measured between runs.
fn blind_spots(c: &Comparison) -> Option<String> {
    if c.noise != Noise::BetweenSeries || c.series.is_empty() {
        return None;
    }
    let mut per: Vec<(&str, f64)> = vec![];
    for sj in &c.series {
        match per.iter_mut().find(|(k, _)| *k == sj.key.collective.as_str()) {
            Some((_, bar)) => *bar = bar.min(sj.bar_pct),
            None => per.push((sj.key.collective.as_str(), sj.bar_pct)),
        }
    }
    let shown: Vec<String> = per.iter().map(|(k, b)| format!("{k} {b:+.0}%")).collect();
    let blind: Vec<&str> = per.iter().filter(|(_, b)| *b > BLIND_PCT).map(|(k, _)| *k).collect();
    let advice = if blind.is_empty() {
        String::from("smaller slowdowns are within this pair of runs' noise")
    } else {
        format!(
            "above {BLIND_PCT:.0}% for {}: a slowdown smaller than that went unseen, not absent; give each side 2-3 runs (compare B1.csv B2.csv -- N1.csv N2.csv)",
            blind.join(", ")
        )
    };
    Some(format!(
        "# one run per side, so the smallest slowdown it could have judged a regression is, per collective (its series' lowest bar): {}; {advice}",
        shown.join(", ")
    ))
}
