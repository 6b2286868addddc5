//! `coll-bench spec from-run RUN.csv [RUN.csv …] --margin 30% [-o SPEC.toml]`: an acceptance
//! spec from known-good runs, so today's healthy cluster becomes tomorrow's gate. No MPI: it
//! reads CSVs (a sweep's or `check`'s) and writes TOML that `coll-bench check` takes.
//!
//! Per series (collective × backend × type × op, out of place) it writes up to four rules, each
//! judged as `check` judges: a bandwidth rule over the sizes where bandwidth has levelled off
//! (the largest eighth of the range, as the table's footer), requiring the weakest of them at
//! `busbw / (1 + margin)`; a latency rule over the latency band (the sizes from the smallest whose
//! median stays within 1.5x of the smallest's) on the median time per call
//! (`max_median_us`: a mean at small sizes is pulled far up by a few slow calls, 0.87 µs where
//! the median was 0.26 µs), requiring `median × (1 + margin)`. Where the runs' rows have a
//! ceiling (`pct_of_ceiling`), a third rule over the same plateau requires the weakest size's
//! `pct_of_ceiling / (1 + margin)` (`min_pct_of_ceiling`): portable to links of another speed.
//! Where the curve reaches half its plateau's bandwidth below the plateau, a knee rule
//! (`max_knee_bytes`) allows the runs' latest knee one size step later, judged against the
//! baseline's plateau (`knee_plateau_gbps`), not the checked run's own.
//!
//! Each size's baseline value is the median over every row for it: one per run given, and one
//! per repeat of a `check` CSV. Its spread is the larger of the spread between those rows
//! ((max − min) / median) and one row's own uncertainty (half its median's 95% interval; for
//! bandwidth, two standard errors of the mean). A rule's margin is `--margin` or
//! [`SPREAD_FACTOR`] times that spread (at most [`MAX_SPREAD_MARGIN`], so a halving is still
//! caught), whichever is wider, and the rule says which: a gate tighter than the baseline's own
//! noise fails the same machine minutes later. Rows the run
//! warned about (`noisy`, `mean_off_median` in its `warnings` column) are named on stderr and in
//! the spec's header. The rules carry `ranks_per_node` of the baseline, so the gate is skipped,
//! not misjudged, on another layout. The text is parsed back as a spec before it is written:
//! what this writes, `check` accepts.

use super::spec;
use crate::collective::Kind;
use crate::csvread::{self, Row};
use crate::dtype::{DType, Op};
use crate::error::{exit, Error, Result};
use crate::options::Policy;
use crate::size::human;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The command line's form, for error lines.
pub const FORM: &str = "coll-bench spec from-run RUN.csv [RUN.csv ...] [--margin PCT] [-o SPEC.toml]";

/// Share of the largest size from which bandwidth counts as levelled off (as the table's footer).
const PLATEAU_FRACTION: u64 = 8;

/// The latency band: the sizes from the smallest whose median time stays within this factor of
/// the smallest's (the flat start of the curve). One bound over the band catches a slowdown of
/// more than this factor times the margin at any of its sizes.
const LATENCY_BAND: f64 = 1.5;

/// A latency rule's bound is never tighter than the baseline plus this (µs): sub-microsecond
/// latencies move between speed modes no application notices (8 B all-reduce at 0.16 or 0.45
/// µs for minutes at a time on the 2-core VM: a gate learned at 0.2 failed five checks of five
/// there), and +1 µs still catches a network hop added or a latency doubled past a few µs.
pub const LATENCY_FLOOR_US: f64 = 1.0;

/// A rule's margin is at least this many times the baseline's measured spread: a run repeated
/// on the same machine lands within about that much of it.
pub const SPREAD_FACTOR: f64 = 3.0;

/// The widest margin the spread gives a rule (100%: bus bandwidth >= half the baseline, time <=
/// twice it), so that a gate learned from runs that disagree still catches a halving; `--margin`
/// may ask for more. Where 3x the spread is wider, the rule says the runs disagree (one quiet
/// VM's ceiling pass read 10 GB/s in one baseline and 17-20 in two: 3x their spread allowed a
/// ceiling share 3.7x below the baseline).
pub const MAX_SPREAD_MARGIN: f64 = 1.0;

/// Warnings of the sweep that say a row's number is uncertain (see `stats::Warning`).
const NOISE_WARNINGS: &[&str] = &["noisy", "mean_off_median"];

/// `coll-bench spec from-run`, as the command line gave it (`crate::cli`).
#[derive(Clone, Debug, PartialEq)]
pub struct FromRunOptions {
    /// The known-good runs' CSVs (one or more).
    pub runs: Vec<PathBuf>,
    /// How much slower than the baseline still passes: 0.30 for `30%`.
    pub margin: f64,
    /// The margin as given, for the spec's header.
    pub margin_text: String,
    /// Where the spec goes; `None`: standard output.
    pub output: Option<PathBuf>,
    pub policy: Policy,
}

/// One baseline file: its rows, and the warnings the run gave each (by the row's line).
pub struct Run {
    /// The file as shown in messages.
    pub shown: String,
    pub rows: Vec<Row>,
    /// The `warnings` column of each row that has one, by line (files without the column: none).
    pub warnings: HashMap<u64, String>,
}

/// `coll-bench spec from-run`: the spec written; the exit code.
pub fn main(o: &FromRunOptions) -> i32 {
    match from_run(o) {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("coll-bench: error: spec from-run: {e}");
            exit::ERROR
        }
    }
}

fn from_run(a: &FromRunOptions) -> Result<()> {
    let policy = a.policy;
    if let Some(out) = &a.output {
        let inputs: Vec<(&str, &Path)> = a.runs.iter().map(|r| ("the run's CSV", r.as_path())).collect();
        crate::report::outfile::check(&[("-o/--output", out.as_path())], &inputs, policy)?;
        crate::report::outfile::claim("-o/--output", out, policy)?;
    }
    let mut runs = vec![];
    for path in &a.runs {
        runs.push(Run {
            shown: crate::error::shown(crate::report::outfile::absolute(path)),
            rows: csvread::read_sweep(path, "spec from-run")?,
            warnings: warnings(path)?,
        });
    }
    let (text, noise) = render(&runs, a.margin, &a.margin_text)?;
    if let Some(n) = noise {
        eprintln!("coll-bench spec: warning: {n}");
    }
    match &a.output {
        None => {
            use std::io::Write;
            let _ = crate::report::stdout::out().write_all(text.as_bytes());
        }
        Some(out) => {
            crate::report::outfile::replace("-o/--output", out, text.as_bytes(), policy)?;
            let rules = text.matches("[[rule]]").count();
            eprintln!(
                "coll-bench spec: wrote {} ({rules} rules; run it with mpirun -n N coll-bench check {})",
                crate::error::shown(crate::report::outfile::absolute(out)),
                crate::error::shown(out)
            );
        }
    }
    Ok(())
}

/// The `warnings` column of a coll-bench CSV, by line; empty where the file has no such column.
/// (`csvread::read` has already read the file whole, so errors here are only an unreadable file.)
fn warnings(path: &Path) -> Result<HashMap<u64, String>> {
    let shown = crate::error::shown(path);
    let bad = |e: csv::Error| Error::usage(format!("'{shown}': {e}"));
    let mut rd = csv::ReaderBuilder::new().has_headers(true).from_path(path).map_err(bad)?;
    let Some(col) = rd.headers().map_err(bad)?.iter().position(|h| h.trim() == "warnings") else {
        return Ok(HashMap::new());
    };
    let mut out = HashMap::new();
    for rec in rd.records() {
        let rec = rec.map_err(bad)?;
        let w = rec.get(col).unwrap_or("").trim();
        if !w.is_empty() {
            out.insert(rec.position().map(|p| p.line()).unwrap_or(0), w.to_string());
        }
    }
    Ok(out)
}

/// One series of the runs: its rows (of every run), out of place, each with its run's index.
struct Series<'a> {
    kind: Kind,
    dtype: DType,
    op: Option<Op>,
    /// all-to-all-v's pattern where it is not uniform (the rule's `pattern`).
    pattern: Option<String>,
    rows: Vec<(usize, &'a Row)>,
}

fn median(v: impl Iterator<Item = f64>) -> f64 {
    crate::stats::median_of(&v.collect::<Vec<f64>>())
}

/// A size's baseline: the median over its rows, and its spread relative to that median: the
/// spread between the rows ((max − min) / median) or one row's own uncertainty, the larger.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Baseline {
    value: f64,
    spread: f64,
    rows: usize,
}

/// `values`: each row's value and its own relative uncertainty.
fn baseline(values: &[(f64, f64)]) -> Baseline {
    let v: Vec<f64> = values.iter().map(|x| x.0).filter(|v| *v > 0.0 && v.is_finite()).collect();
    if v.is_empty() {
        return Baseline { value: 0.0, spread: 0.0, rows: 0 };
    }
    let value = median(v.iter().copied());
    let (lo, hi) = v.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    let between = if v.len() >= 2 && value > 0.0 { (hi - lo) / value } else { 0.0 };
    let own = median(values.iter().map(|x| x.1).filter(|u| u.is_finite()));
    Baseline { value, spread: between.max(if own.is_finite() { own } else { 0.0 }), rows: v.len() }
}

/// One row's median time and its uncertainty: half its 95% interval over the median.
fn median_time(r: &Row) -> (f64, f64) {
    let own = match r.median_ci95_us {
        Some((lo, hi)) if r.median_us > 0.0 => (hi - lo) / 2.0 / r.median_us,
        _ => 0.0,
    };
    (r.median_us, own)
}

/// One row's bus bandwidth and its uncertainty: two standard errors of the mean time over it.
fn bandwidth(r: &Row) -> (f64, f64) {
    let own = match r.stddev_us {
        Some(sd) if r.time_us > 0.0 && r.samples() > 1 => 2.0 * sd / (r.samples() as f64).sqrt() / r.time_us,
        _ => 0.0,
    };
    (r.busbw_gbps, own)
}

/// Four significant digits, written so TOML reads a float (`1.0`, not `1`).
fn float(x: f64) -> String {
    let digits = 4 - 1 - x.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits.max(0));
    format!("{:?}", (x * scale).round() / scale)
}

/// A percentage for a comment: `30%`, `7.5%`.
fn pct(x: f64) -> String {
    let p = (x * 1000.0).round() / 10.0;
    format!("{p}%")
}

/// The margin a rule gets from the baseline's spread, and the comment that says why when it is
/// wider than `--margin`.
fn widened(margin: f64, b: &Baseline) -> (f64, String) {
    let wide = SPREAD_FACTOR * b.spread;
    let m = margin.max(wide.min(MAX_SPREAD_MARGIN));
    let over = if b.rows >= 2 { format!("between its {} rows", b.rows) } else { "within its row".to_string() };
    if wide > MAX_SPREAD_MARGIN && m < wide {
        (
            m,
            format!(
                "; margin {}, the most the spread gives: the baseline's spread of {} {over} (3x would be {}, which would not catch a halving); its runs disagree, so take the baseline again on a quiet machine",
                pct(m),
                pct(b.spread),
                pct(wide)
            ),
        )
    } else if m > margin {
        (m, format!("; margin {}: {SPREAD_FACTOR}x the baseline's spread of {} {over}", pct(m), pct(b.spread)))
    } else {
        (m, String::new())
    }
}

/// The spec's text, and a line to warn with when a run it learned from was noisy. `margin_text`
/// is the flag as given (for the header).
pub fn render(runs: &[Run], margin: f64, margin_text: &str) -> Result<(String, Option<String>)> {
    let (mut series, skipped) = gather(runs)?;
    let incredible = drop_incredible(&mut series, runs);
    let (ranks, hosts) = one_layout(runs)?;
    let per_node = match (ranks, hosts) {
        (Some(r), Some(h)) if h > 0 && r % h == 0 => Some(r / h),
        _ => None,
    };
    let mut t = String::new();
    write_header(&mut t, runs, margin, margin_text, (ranks, hosts), &skipped);
    let header_end = t.len();
    let (budget, said) = budget(runs);
    let _ = writeln!(t, "\n[settings]\nrepeats = 3\nbudget = \"{budget}\"{said}");
    // Rows the rules learn from that the run warned about: (warning, series label, size).
    let mut noisy: Vec<(String, String, u64)> = vec![];
    for s in &series {
        write_rules(&mut t, s, runs, margin, per_node, &mut noisy);
    }
    let noise = noise_line(&noisy, runs.len());
    let noise = match (noise, incredible) {
        (n, None) => n,
        (None, Some(i)) => Some(i),
        (Some(n), Some(i)) => Some(format!("{i}; {n}")),
    };
    if !t.contains("[[rule]]") {
        return Err(Error::usage(format!(
            "no rule could be learned from {}: {}",
            runs.iter().map(|r| format!("'{}'", r.shown)).collect::<Vec<_>>().join(", "),
            noise.as_deref().unwrap_or("no series had points to learn from")
        )));
    }
    if let Some(n) = &noise {
        t.insert_str(header_end, &format!("# Warning: {n}\n"));
    }
    // What is written must be what check accepts.
    spec::parse("the written spec", &t)
        .map_err(|e| Error::setup(format!("internal error, the spec is invalid: {e}")))?;
    Ok((t, noise))
}

/// The baselines' `--budget` for the spec's `budget` (the sweep's 50 ms default where the CSVs
/// predate the `budget_s` column), and a comment after it where the runs did not all say one: a
/// time measured with another budget is another number (fewer samples, another warm-up).
fn budget(runs: &[Run]) -> (String, String) {
    let each: Vec<Option<f64>> = runs.iter().map(|r| r.rows.iter().find_map(|x| x.budget_s)).collect();
    let known: Vec<f64> = each.iter().flatten().copied().collect();
    // Whole milliseconds as `20ms`; anything finer as plain seconds (both parse back).
    let text = |s: f64| {
        let ms = s * 1e3;
        if (ms - ms.round()).abs() < 1e-9 {
            format!("{}ms", ms.round())
        } else {
            format!("{s}")
        }
    };
    match known.iter().copied().reduce(f64::max) {
        None => ("50ms".into(), "  # the baselines' CSVs do not say their --budget: the sweep's default".into()),
        Some(max) if known.len() == each.len() && known.iter().all(|b| *b == max) => (text(max), String::new()),
        Some(max) => (
            text(max),
            format!("  # the baselines ran with different --budget (or did not say): the longest, {}", text(max)),
        ),
    }
}

/// The runs' out-of-place rows of the mpi backend, by series (collective, type, op), and the
/// series left out (other backends), each named once.
fn gather(runs: &[Run]) -> Result<(Vec<Series<'_>>, Vec<String>)> {
    let mut series: Vec<Series> = vec![];
    let mut skipped: Vec<String> = vec![];
    for (i, run) in runs.iter().enumerate() {
        for r in &run.rows {
            let placement = r.key.placement.replace('_', "-");
            if placement != "out-of-place" {
                continue;
            }
            let k = &r.key;
            let at =
                |what: &str, v: &str| Error::usage(format!("'{}' line {}: unknown {what} '{v}'", run.shown, r.line));
            // all-to-all-v under a pattern (csvread's `all-to-all-v(PATTERN)`): its rules carry it.
            let (collective, pattern) =
                match k.collective.strip_prefix("all-to-all-v(").and_then(|p| p.strip_suffix(')')) {
                    Some(p) => {
                        crate::collective::traffic::Pattern::parse(p).map_err(|_| at("pattern", p))?;
                        ("all-to-all-v", Some(p.to_string()))
                    }
                    None => (k.collective.as_str(), None),
                };
            let kind = Kind::parse(collective).ok_or_else(|| at("collective", &k.collective))?;
            let dtype = DType::parse(&k.dtype)
                .or(if kind.spec().sized() { None } else { Some(DType::Float32) })
                .ok_or_else(|| at("dtype", &k.dtype))?;
            let op = match k.op.as_str() {
                "none" | "" => None,
                o => Some(Op::parse(o).ok_or_else(|| at("op", o))?),
            };
            if k.backend != "mpi" {
                let s =
                    format!("{} {} ({} backend); check runs the mpi backend only", k.collective, k.dtype, k.backend);
                if !skipped.contains(&s) {
                    skipped.push(s);
                }
                continue;
            }
            match series.iter_mut().find(|s| s.kind == kind && s.dtype == dtype && s.op == op && s.pattern == pattern) {
                Some(s) => s.rows.push((i, r)),
                None => series.push(Series { kind, dtype, op, pattern, rows: vec![(i, r)] }),
            }
        }
    }
    if series.is_empty() {
        let names = runs.iter().map(|r| format!("'{}'", r.shown)).collect::<Vec<_>>().join(", ");
        return Err(Error::usage(format!(
            "{names}: no out-of-place rows of the mpi backend; expected a CSV of a coll-bench sweep or check"
        )));
    }
    Ok((series, skipped))
}

/// A point slower than this many times a size at least [`INCREDIBLE_SIZES`]× larger of the same
/// series in the same run is not a measurement of the collective (a scheduler tick: 4 ms at 8 B
/// when more ranks than free cores take turns; docs/check.md). The sweep's rule
/// (`above_trend` in its warnings column), applied again here to CSVs of any version.
const INCREDIBLE_FACTOR: f64 = crate::sweep::trend::FACTOR;
const INCREDIBLE_SIZES: u64 = crate::sweep::trend::SIZES;

/// Leave out the rows no rule may learn from: a point whose median is over
/// [`INCREDIBLE_FACTOR`]× the median of a size [`INCREDIBLE_SIZES`]× larger or more in the same
/// run, or that its run warned was timed by the machine (`above_trend`, `scheduler_tick`).
/// Returns the warning naming them (`None` when every point is credible).
fn drop_incredible(series: &mut [Series], runs: &[Run]) -> Option<String> {
    let mut named: Vec<String> = vec![];
    let mut ticked: Vec<String> = vec![];
    for s in series.iter_mut() {
        let rows = s.rows.clone();
        s.rows.retain(|(i, r)| {
            // The row as the warning names it, up to its median.
            let at = || {
                format!(
                    "{} {}{} at {} in {} (median {:.1} us",
                    s.kind.name(),
                    s.dtype.name(),
                    s.op.map(|o| format!(" {}", o.name())).unwrap_or_default(),
                    crate::size::human(r.key.size_bytes),
                    runs[*i].shown,
                    r.median_us
                )
            };
            let warned = runs[*i].warnings.get(&r.line).map(String::as_str).unwrap_or("");
            if warned.split(';').any(|w| w == "scheduler_tick") {
                ticked.push(format!("{})", at()));
                return false;
            }
            let faster = rows.iter().filter(|(j, q)| {
                j == i && crate::sweep::trend::above(r.key.size_bytes, r.median_us, q.key.size_bytes, q.median_us)
            });
            let Some((_, q)) = faster.min_by(|a, b| a.1.median_us.total_cmp(&b.1.median_us)) else { return true };
            named.push(format!("{}, above {}'s {:.1} us)", at(), crate::size::human(q.key.size_bytes), q.median_us));
            false
        });
    }
    const SHOWN: usize = 4;
    let list = |v: &[String]| {
        let more = v.len().saturating_sub(SHOWN);
        format!(
            "{}{}",
            v[..v.len().min(SHOWN)].join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        )
    };
    let mut said = vec![];
    if !ticked.is_empty() {
        said.push(format!(
            "left out {} point(s) its run timed on the scheduler's tick (scheduler_tick in its warnings: the ranks waited for the scheduler, not for each other): {}",
            ticked.len(),
            list(&ticked)
        ));
    }
    if !named.is_empty() {
        said.push(format!(
            "left out {} point(s) slower than {INCREDIBLE_FACTOR}x a size {INCREDIBLE_SIZES}x larger of the same run, which no collective is (a scheduler tick: more ranks than free cores, or other processes): {}",
            named.len(),
            list(&named)
        ));
    }
    (!said.is_empty()).then(|| format!("{}; take the baseline on a quieter machine", said.join("; ")))
}

/// The runs' ranks and hosts: every run must have had the same layout (a gate from mixed
/// layouts judges neither).
fn one_layout(runs: &[Run]) -> Result<(Option<u64>, Option<u64>)> {
    let layout = |run: &Run| (run.rows.iter().find_map(|r| r.ranks), run.rows.iter().find_map(|r| r.hosts));
    let (ranks, hosts) = layout(&runs[0]);
    if let Some(other) = runs.iter().find(|r| layout(r) != (ranks, hosts)) {
        let (r2, h2) = layout(other);
        let show = |r: Option<u64>, h: Option<u64>| match (r, h) {
            (Some(r), Some(h)) => format!("{r} ranks on {h} host(s)"),
            _ => "an unknown layout".to_string(),
        };
        return Err(Error::usage(format!(
            "'{}' ran {} but '{}' {}; expected runs of one layout",
            runs[0].shown,
            show(ranks, hosts),
            other.shown,
            show(r2, h2)
        )));
    }
    Ok((ranks, hosts))
}

/// The spec's opening comment: where it came from, how to run the gate, what each rule allows.
fn write_header(
    t: &mut String,
    runs: &[Run],
    margin: f64,
    margin_text: &str,
    (ranks, hosts): (Option<u64>, Option<u64>),
    skipped: &[String],
) {
    let _ = writeln!(t, "# Acceptance spec written by coll-bench {} spec from-run", env!("CARGO_PKG_VERSION"));
    if runs.len() == 1 {
        let _ = writeln!(t, "# from the known-good run {} (--margin {margin_text}).", runs[0].shown);
    } else {
        let _ = writeln!(t, "# from {} known-good runs (--margin {margin_text}):", runs.len());
        for r in runs {
            let _ = writeln!(t, "#   {}", r.shown);
        }
    }
    if let (Some(r), Some(h)) = (ranks, hosts) {
        let _ = writeln!(t, "# The baseline ran {r} ranks on {h} host(s); run the gate the same way:");
        let _ = writeln!(t, "#   mpirun -n {r} coll-bench check THIS.toml --junit verdicts.xml");
    }
    let _ = writeln!(
        t,
        "# Each requirement allows {} slower than the baseline: bus bandwidth >= baseline / {}, median time per call <= baseline x {},",
        pct(margin),
        float(1.0 + margin),
        float(1.0 + margin)
    );
    let _ = writeln!(
        t,
        "# or {SPREAD_FACTOR}x the baseline's measured spread where that is wider, up to {} (the rule then says so).",
        pct(MAX_SPREAD_MARGIN)
    );
    let _ = writeln!(
        t,
        "# Baseline: each size's median over {} (out of place).",
        if runs.len() == 1 { "the run's rows" } else { "the runs' rows" }
    );
    for s in skipped {
        let _ = writeln!(t, "# Left out: {s}.");
    }
}

/// One series' rules: bus bandwidth over its plateau (sized collectives) and the median time
/// at its smallest size; the warnings of the rows they learn from go to `noisy`.
fn write_rules(
    t: &mut String,
    s: &Series,
    runs: &[Run],
    margin: f64,
    per_node: Option<u64>,
    noisy: &mut Vec<(String, String, u64)>,
) {
    let mut sizes: Vec<u64> = s.rows.iter().map(|(_, r)| r.key.size_bytes).collect();
    sizes.sort();
    sizes.dedup();
    // A sized collective's 0-byte rows (nccl-tests' geometry: a size below one element per
    // rank) time the call's overhead alone, and a spec's sizes start at 1: the rules learn from
    // the sizes that move data. (A barrier's rows are all 0 B; its rule says 8, as check runs it.)
    if s.kind.spec().sized() {
        sizes.retain(|&z| z > 0);
    }
    let (Some(&smallest), Some(&largest)) = (sizes.first(), sizes.last()) else { return };
    let at_size = |size: u64, f: &dyn Fn(&Row) -> (f64, f64)| {
        baseline(&s.rows.iter().filter(|(_, r)| r.key.size_bytes == size).map(|(_, r)| f(r)).collect::<Vec<_>>())
    };
    let label = format!(
        "{} {}{}{}",
        s.kind.name(),
        if s.kind.spec().sized() { s.dtype.name() } else { "" },
        s.op.map(|o| format!(" {}", o.name())).unwrap_or_default(),
        s.pattern.as_ref().map(|p| format!(" {p}")).unwrap_or_default()
    )
    .trim()
    .replace("  ", " ");
    let mut learn = |size: u64| {
        for (i, r) in s.rows.iter().filter(|(_, r)| r.key.size_bytes == size) {
            let w = runs[*i].warnings.get(&r.line).map(String::as_str).unwrap_or("");
            for kind in w.split(';').map(str::trim).filter(|k| NOISE_WARNINGS.contains(k)) {
                let n = (kind.to_string(), label.clone(), size);
                if !noisy.contains(&n) {
                    noisy.push(n);
                }
            }
        }
    };
    let head = |t: &mut String, name: &str, sizes: &str| {
        let _ = writeln!(t, "\n[[rule]]\nname = \"{label} {name}\"\ncollective = \"{}\"", s.kind.name());
        if s.kind.spec().sized() {
            let _ = writeln!(t, "dtype = \"{}\"", s.dtype.name());
        }
        if let Some(o) = s.op.filter(|_| s.kind.spec().reduces()) {
            let _ = writeln!(t, "op = \"{}\"", o.name());
        }
        if let Some(p) = &s.pattern {
            let _ = writeln!(t, "pattern = \"{p}\"");
        }
        let _ = writeln!(t, "placement = \"out-of-place\"\nsizes = \"{sizes}\"");
    };
    let tail = |t: &mut String| {
        if let Some(n) = per_node {
            let _ = writeln!(t, "ranks_per_node = {n}");
        }
    };
    if s.kind.spec().sized() {
        let plateau: Vec<u64> = sizes.iter().copied().filter(|&z| z >= largest / PLATEAU_FRACTION).collect();
        let each: Vec<(u64, Baseline)> = plateau.iter().map(|&z| (z, at_size(z, &bandwidth))).collect();
        let &(weakest, b) =
            each.iter().min_by(|a, b| a.1.value.total_cmp(&b.1.value)).expect("the largest size is in the plateau");
        if b.value > 0.0 {
            plateau.iter().for_each(|&z| learn(z));
            // The rule judges the weakest size of the plateau, whichever it is that day: the
            // widest spread over the plateau counts.
            let spread = each.iter().map(|(_, b)| b.spread).fold(0.0, f64::max);
            let (m, why) = widened(margin, &Baseline { spread, ..b });
            let range = format!("{}..{}", human(plateau[0]), human(largest));
            head(t, "bandwidth", &range);
            let _ = writeln!(t, "plateau = \"{range}\"");
            let _ = writeln!(
                t,
                "min_busbw_gbps = {}   # baseline {} GB/s at {} (the weakest size of the plateau){why}",
                float(b.value / (1.0 + m)),
                float(b.value),
                human(weakest)
            );
            tail(t);
            // The same plateau against the ceiling, where every row of it has one: the rule that
            // serves another cluster with other links (check measures the ceiling there).
            let pcts: Vec<(u64, Baseline)> = plateau
                .iter()
                .map(|&z| {
                    let rows: Vec<&Row> =
                        s.rows.iter().filter(|(_, r)| r.key.size_bytes == z).map(|(_, r)| *r).collect();
                    let all = rows.iter().all(|r| r.pct_of_ceiling.is_some());
                    let v: Vec<(f64, f64)> =
                        rows.iter().map(|r| (r.pct_of_ceiling.unwrap_or(f64::NAN), bandwidth(r).1)).collect();
                    (z, if all { baseline(&v) } else { Baseline { value: 0.0, spread: 0.0, rows: 0 } })
                })
                .collect();
            if pcts.iter().all(|(_, b)| b.value > 0.0) {
                let &(weakest, b) =
                    pcts.iter().min_by(|a, b| a.1.value.total_cmp(&b.1.value)).expect("the plateau has sizes");
                let spread = pcts.iter().map(|(_, b)| b.spread).fold(0.0, f64::max);
                let (m, why) = widened(margin, &Baseline { spread, ..b });
                let required = b.value / (1.0 + m);
                if required > 100.0 {
                    // Above the ceiling even with the margin: the ceiling does not limit this
                    // collective (it moved its data another way), and no rule can require more
                    // than all of it (check refuses one).
                    let _ = writeln!(
                        t,
                        "\n# No ceiling rule for {label}: the baseline was {}% of the ceiling at {}, above it, so the ceiling is not its limit (docs/output.md, \"The ceiling\")",
                        float(b.value),
                        human(weakest)
                    );
                } else {
                    head(t, "ceiling", &range);
                    let _ = writeln!(t, "plateau = \"{range}\"");
                    let _ = writeln!(
                        t,
                        "min_pct_of_ceiling = {}   # baseline {}% of the ceiling at {} (the weakest size of the plateau){why}; \
                         judged against the ceiling check measures where it runs, so this rule serves other links too",
                        float(required),
                        float(b.value),
                        human(weakest)
                    );
                    tail(t);
                }
            }
        }
        // The baseline's plateau: the best of its sizes' medians, as check's own knee() takes it.
        let best = each.iter().map(|(z, b)| (*z, b.value)).max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some(best) = best {
            knee_rule(t, s, &sizes, (plateau[0], largest), best, &mut learn, &head, &tail);
        }
    }
    // The latency band: the smallest size and every next one whose median stays within
    // LATENCY_BAND of the smallest's (the flat start of the curve, where time is latency).
    let first = at_size(smallest, &median_time);
    if first.value > 0.0 {
        let band: Vec<(u64, Baseline)> = sizes
            .iter()
            .map(|&z| (z, at_size(z, &median_time)))
            .take_while(|(_, b)| b.value > 0.0 && b.value <= LATENCY_BAND * first.value)
            .collect();
        band.iter().for_each(|(z, _)| learn(*z));
        // Each size's own margin; the band's bound is the loosest of them.
        let (top, b, (m, why)) = band
            .iter()
            .map(|(z, b)| (*z, *b, widened(margin, b)))
            .max_by(|x, y| (x.1.value * (1.0 + x.2 .0)).total_cmp(&(y.1.value * (1.0 + y.2 .0))))
            .expect("the smallest size is in the band");
        let last = band.last().expect("the band has a size").0;
        let (lo, hi) = if s.kind.spec().sized() { (human(smallest), human(last)) } else { ("8".into(), "8".into()) };
        head(t, "latency", &format!("{lo}..{hi}"));
        let at = if !s.kind.spec().sized() {
            String::new()
        } else if band.len() == 1 {
            format!(" at {lo}")
        } else {
            format!(
                " at {} (the largest of the band {lo}..{hi}: the sizes within {LATENCY_BAND}x of the median at {lo}, {} us)",
                human(top),
                float(first.value)
            )
        };
        let learned = b.value * (1.0 + m);
        let bound = learned.max(b.value + LATENCY_FLOOR_US);
        let floor = if bound > learned {
            format!("; the floor of +{LATENCY_FLOOR_US} us over the baseline (a latency mode, not a regression)")
        } else {
            String::new()
        };
        let _ =
            writeln!(t, "max_median_us = {}   # baseline median {} us{at}{why}{floor}", float(bound), float(b.value));
        tail(t);
    }
}

/// The knee rule of a sized series: the largest knee of its runs (each run's curve, the smallest
/// size reaching half the baseline's plateau: [`super::knee`]) with one size step of slack
/// (×2), where that knee is below the plateau (a curve that reaches half only within the plateau
/// has no knee to guard). `plateau`: the bandwidth rule's; `best`: the baseline's best plateau
/// size and its bandwidth (each size's median), written as `knee_plateau_gbps` so that check judges the knee
/// against it, not against its own run's plateau, which a quieter machine raises.
#[allow(clippy::too_many_arguments)]
fn knee_rule(
    t: &mut String,
    s: &Series,
    sizes: &[u64],
    plateau: (u64, u64),
    (best_at, best): (u64, f64),
    learn: &mut dyn FnMut(u64),
    head: &dyn Fn(&mut String, &str, &str),
    tail: &dyn Fn(&mut String),
) {
    let (Some(&smallest), Some(&largest)) = (sizes.first(), sizes.last()) else { return };
    // The knees are learned against the value as written, so that check judges what was learned.
    let best = float(best).parse::<f64>().unwrap_or(f64::NAN);
    if best.is_nan() || best <= 0.0 {
        return;
    }
    let mut runs: Vec<usize> = s.rows.iter().map(|(i, _)| *i).collect();
    runs.sort();
    runs.dedup();
    let mut knees = vec![];
    for run in runs {
        // A check CSV holds repeats: each repeat's rows are a curve of their own.
        let rows: Vec<&Row> = s.rows.iter().filter(|(i, _)| *i == run).map(|(_, r)| *r).collect();
        let repeats = sizes.iter().map(|&z| rows.iter().filter(|r| r.key.size_bytes == z).count()).max().unwrap_or(0);
        for k in 0..repeats {
            let curve: Vec<(u64, f64)> = sizes
                .iter()
                .filter_map(|&z| rows.iter().filter(|r| r.key.size_bytes == z).nth(k).map(|r| (z, r.busbw_gbps)))
                .collect();
            // A curve that never reaches half the baseline's plateau: the runs disagree too much
            // to learn a knee from.
            match super::knee(&curve, plateau, Some(best)) {
                Some((_, Some(at))) => knees.push(at),
                _ => return,
            }
        }
    }
    let Some(&knee) = knees.iter().max() else { return };
    if knee >= plateau.0 {
        return;
    }
    sizes.iter().filter(|&&z| z <= knee).for_each(|&z| learn(z));
    let allowed = (knee * 2).min(largest);
    head(t, "knee", &format!("{}..{}", human(smallest), human(largest)));
    let _ = writeln!(t, "plateau = \"{}..{}\"", human(plateau.0), human(plateau.1));
    let each = if knees.len() > 1 { format!(", the latest of {} runs", knees.len()) } else { String::new() };
    let _ = writeln!(
        t,
        "max_knee_bytes = \"{}\"   # baseline: half the plateau's {} GB/s reached at {}{each}; one size step of slack",
        human(allowed),
        float(best),
        human(knee)
    );
    let _ = writeln!(
        t,
        "knee_plateau_gbps = {}   # the baseline's plateau (its best size, {}, each size's median): the knee is judged against half of it, so a higher plateau does not move the knee later",
        float(best),
        human(best_at)
    );
    tail(t);
}

/// One line naming the rows the rules learn from that their run warned about, or `None`.
fn noise_line(noisy: &[(String, String, u64)], runs: usize) -> Option<String> {
    if noisy.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = vec![];
    for kind in NOISE_WARNINGS {
        let mut by_series: Vec<(String, Vec<u64>)> = vec![];
        for (_, label, size) in noisy.iter().filter(|n| n.0 == *kind) {
            match by_series.iter_mut().find(|(l, _)| l == label) {
                Some((_, v)) => v.push(*size),
                None => by_series.push((label.clone(), vec![*size])),
            }
        }
        if !by_series.is_empty() {
            let list: Vec<String> = by_series
                .iter()
                .map(|(l, v)| format!("{l} at {}", v.iter().map(|z| human(*z)).collect::<Vec<_>>().join(", ")))
                .collect();
            parts.push(format!("{kind}: {}", list.join("; ")));
        }
    }
    let more =
        if runs == 1 { "; a gate learned from several runs (spec from-run a.csv b.csv c.csv) is steadier" } else { "" };
    Some(format!(
        "the baseline was noisy where the rules learn from it ({}); their margins are widened to {SPREAD_FACTOR}x its measured spread{more}",
        parts.join(" | ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csvread::Key;

    fn row(coll: &str, dtype: &str, op: &str, placement: &str, size: u64, time_us: f64, busbw: f64) -> Row {
        Row {
            key: Key {
                collective: coll.into(),
                backend: "mpi".into(),
                dtype: dtype.into(),
                op: op.into(),
                placement: placement.into(),
                size_bytes: size,
            },
            iters: 100,
            batch_iters: 1,
            time_us,
            median_us: time_us,
            min_us: time_us,
            max_us: time_us,
            stddev_us: None,
            median_ci95_us: None,
            pct_of_ceiling: None,
            busbw_gbps: busbw,
            ranks: Some(4),
            hosts: Some(2),
            line: 2,
            size_order: false,
            budget_s: None,
            imbalance: None,
        }
    }

    fn run(rows: Vec<Row>) -> Run {
        Run { shown: "/r/good.csv".into(), rows, warnings: HashMap::new() }
    }

    /// The 4 ms case (issue 47): small sizes at a scheduler tick, far above 64 KiB of the same
    /// run, are left out and named; the latency rule learns from the first credible size.
    #[test]
    fn points_slower_than_a_much_larger_size_are_left_out_and_named() {
        let mut rows = vec![];
        for e in 3..=20u32 {
            let size = 1u64 << e;
            let time = if size <= 4096 { 3991.9 } else { 10.0 + size as f64 / 1000.0 };
            rows.push(row("all-reduce", "float", "sum", "out_of_place", size, time, size as f64 / time / 1e3));
        }
        let (text, noise) = render(&[run(rows)], 0.25, "25%").unwrap();
        let noise = noise.unwrap_or_else(|| panic!("{text}"));
        assert!(noise.starts_with("left out 10 point(s) slower than 3x a size 16x larger of the same run"), "{noise}");
        assert!(
            noise.contains("all-reduce float sum at 8 in /r/good.csv (median 3991.9 us, above 8K's 18.2 us)"),
            "{noise}"
        );
        assert!(text.contains("# Warning: left out 10 point(s)"), "{text}");
        let spec = spec::parse("s", &text).unwrap();
        assert!(spec.rules.iter().all(|r| r.max_median_us.is_none_or(|m| m < 1000.0)), "{text}");
        // A flat latency region (8 B as slow as 128 B, within 3x) is left alone.
        let flat: Vec<Row> = (3..=20u32)
            .map(|e| {
                let size = 1u64 << e;
                let time = if size <= 4096 { 0.45 } else { size as f64 / 1000.0 };
                row("all-reduce", "float", "sum", "out_of_place", size, time, size as f64 / time / 1e3)
            })
            .collect();
        assert_eq!(render(&[run(flat)], 0.25, "25%").unwrap().1, None);
    }

    /// The spec times with the baselines' --budget (issue 47: it wrote 50ms after --budget 20ms).
    #[test]
    fn the_spec_keeps_the_baselines_budget() {
        let with = |b: Option<f64>| {
            let rows: Vec<Row> = (3..=20u32)
                .map(|e| {
                    let size = 1u64 << e;
                    Row {
                        budget_s: b,
                        ..row("all-reduce", "float", "sum", "out_of_place", size, 1.0, size as f64 / 1e3)
                    }
                })
                .collect();
            run(rows)
        };
        let budget = |runs: &[Run]| {
            let text = render(runs, 0.25, "25%").unwrap().0;
            (
                spec::parse("s", &text).unwrap().budget_s,
                text.lines().find(|l| l.starts_with("budget")).unwrap().to_string(),
            )
        };
        assert_eq!(budget(&[with(Some(0.02)), with(Some(0.02))]), (0.02, "budget = \"20ms\"".to_string()));
        assert_eq!(budget(&[with(Some(0.0125))]).0, 0.0125);
        let (b, line) = budget(&[with(None)]);
        assert!(b == 0.05 && line.contains("do not say their --budget"), "{line}");
        let (b, line) = budget(&[with(Some(0.02)), with(Some(0.1))]);
        assert!(b == 0.1 && line.contains("different --budget") && line.contains("100ms"), "{line}");
    }

    #[test]
    fn rules_from_a_run_with_repeats_parse_back_as_a_spec() {
        let mut rows = vec![];
        // Two repeats of an all-reduce sweep 8 B..64 MiB; plateau 8M..64M; 16M is the weakest.
        // Time flat at 10 us up to 512 B, then size/100 (1K: 10.24, in the band; 2K: 20.48,
        // out); bandwidth rising to 1.5M then flat at 5 (half at 1M: the knee).
        for (rep, slow) in [(0, 1.0), (1, 1.05)] {
            for e in 3..=26u32 {
                let size = 1u64 << e;
                let rise = (size as f64 / (1.5 * (1u64 << 20) as f64)).min(1.0);
                let bw = if size == 16 << 20 { 4.0 } else { 5.0 * rise } * if rep == 1 { 1.02 } else { 1.0 };
                let time = if size <= 512 { 10.0 } else { size as f64 / 100.0 };
                rows.push(row("all-reduce", "float", "sum", "out_of_place", size, time * slow, bw));
                rows.push(row("all-reduce", "float", "sum", "in_place", size, 1.0, 100.0));
            }
        }
        rows.push(row("barrier", "none", "none", "out_of_place", 0, 20.0, 0.0));
        let (text, noise) = render(&[run(rows)], 0.25, "25%").unwrap();
        assert_eq!(noise, None);
        let spec = spec::parse("s", &text).unwrap();
        assert_eq!(spec.rules.len(), 4, "{text}");
        let bw = &spec.rules[0];
        assert_eq!(
            (bw.collective, bw.min_bytes, bw.max_bytes, bw.plateau),
            (Kind::AllReduce, 8 << 20, 64 << 20, (8 << 20, 64 << 20))
        );
        // Median of 4.0 and 4.08 = 4.04, over 1.25 (their 2% spread is well inside 25%).
        assert_eq!(bw.min_busbw_gbps, Some(3.232), "{text}");
        assert_eq!(bw.ranks_per_node, Some(2));
        // The knee: half the plateau's bandwidth reached at 1M in both repeats; one step of slack.
        let knee = &spec.rules[1];
        assert_eq!(
            (knee.min_bytes, knee.max_bytes, knee.plateau, knee.max_knee_bytes),
            (8, 64 << 20, (8 << 20, 64 << 20), Some(2 << 20)),
            "{text}"
        );
        // Judged against the baseline's plateau, each size's median over the repeats (5.0, 5.1).
        assert_eq!(knee.knee_plateau_gbps, Some(5.05), "{text}");
        assert!(
            text.contains("# baseline: half the plateau's 5.05 GB/s reached at 1M, the latest of 2 runs"),
            "{text}"
        );
        assert!(
            text.contains(
                "knee_plateau_gbps = 5.05   # the baseline's plateau (its best size, 64M, each size's median)"
            ),
            "{text}"
        );
        // The latency band 8..1K (within 1.5x of the median at 8), bounded at its slowest size:
        // the median time, not the mean; 10.24 and 10.75 spread by 5%: the margin stays 25%.
        let lat = &spec.rules[2];
        assert_eq!(
            (lat.min_bytes, lat.max_bytes, lat.max_median_us, lat.max_time_us),
            (8, 1024, Some(13.12), None),
            "{text}"
        );
        assert!(
            text.contains("at 1K (the largest of the band 8..1K: the sizes within 1.5x of the median at 8, 10.25 us)"),
            "{text}"
        );
        let barrier = &spec.rules[3];
        assert_eq!(
            (barrier.collective, barrier.max_median_us, barrier.min_busbw_gbps),
            (Kind::Barrier, Some(25.0), None)
        );
        assert!(text.contains("# from the known-good run /r/good.csv (--margin 25%)"), "{text}");
        assert!(text.contains("mpirun -n 4 coll-bench check"), "{text}");
    }

    #[test]
    fn rows_with_a_ceiling_give_a_rule_on_it_too() {
        let mut rows = vec![];
        for e in 3..=26u32 {
            let size = 1u64 << e;
            let mut r = row("all-gather", "float", "none", "out_of_place", size, 10.0, 5.0);
            r.pct_of_ceiling = Some(if size == 32 << 20 { 60.0 } else { 80.0 });
            rows.push(r);
        }
        let (text, _) = render(&[run(rows.clone())], 0.25, "25%").unwrap();
        let spec = spec::parse("s", &text).unwrap();
        let ceil: Vec<_> = spec.rules.iter().filter(|r| r.min_pct_of_ceiling.is_some()).collect();
        assert_eq!(ceil.len(), 1, "{text}");
        assert_eq!((ceil[0].plateau, ceil[0].min_busbw_gbps), ((8 << 20, 64 << 20), None), "{text}");
        // The weakest plateau size (32M: 60%) over 1.25.
        assert_eq!(ceil[0].min_pct_of_ceiling, Some(48.0), "{text}");
        assert!(text.contains("name = \"all-gather float ceiling\""), "{text}");
        // Above the ceiling (shared memory): no rule on it, a comment saying why.
        let mut above = rows.clone();
        above.iter_mut().for_each(|r| r.pct_of_ceiling = Some(400.0));
        let (text, _) = render(&[run(above)], 0.25, "25%").unwrap();
        assert!(!text.contains("min_pct_of_ceiling"), "{text}");
        assert!(
            text.contains("# No ceiling rule for all-gather float: the baseline was 400.0% of the ceiling"),
            "{text}"
        );
        // One plateau row without a ceiling: no such rule.
        rows[23].pct_of_ceiling = None;
        let (text, _) = render(&[run(rows)], 0.25, "25%").unwrap();
        assert!(!text.contains("min_pct_of_ceiling"), "{text}");
    }

    #[test]
    fn latency_rules_come_from_the_median_not_the_mean() {
        // The run: mean 0.87 us at 8 B, median 0.26 us.
        let mut r = row("all-reduce", "float", "sum", "out_of_place", 8, 0.87, 0.01);
        r.median_us = 0.26;
        let (text, _) = render(&[run(vec![r])], 0.3, "30%").unwrap();
        let spec = spec::parse("s", &text).unwrap();
        let lat = spec.rules.iter().find(|r| r.name.ends_with("latency")).unwrap();
        // Its margin of 30% (0.338 us) is under the floor: 0.26 + 1 us.
        assert_eq!((lat.max_median_us, lat.max_time_us), (Some(1.26), None), "{text}");
        assert!(
            text.contains("# baseline median 0.26 us at 8; the floor of +1 us over the baseline (a latency mode, not a regression)"),
            "{text}"
        );
    }

    #[test]
    fn zero_byte_rows_of_a_sized_collective_are_not_learned_from() {
        // `coll-bench all -b 8` on 2 ranks: all-gather's 8 and 16 B rows are 0 B (below one
        // float per rank). On main the latency rule said `sizes = "0..0"`, which the spec
        // parser refuses: "internal error, the spec is invalid". A sized series with only 0-byte
        // rows gets no rule; the barrier (0 B) still gets its latency rule.
        let runs = [run(vec![
            row("all-gather", "float", "none", "out-of-place", 0, 0.2, 0.0),
            row("all-gather", "float", "none", "out-of-place", 32, 0.5, 0.1),
            row("all-gather", "float", "none", "out-of-place", 1 << 20, 100.0, 5.0),
            row("scatter", "float", "none", "out-of-place", 0, 0.2, 0.0),
            row("barrier", "none", "none", "out_of_place", 0, 20.0, 0.0),
        ])];
        let (text, _) = render(&runs, 0.3, "30%").unwrap();
        let spec = spec::parse("s", &text).unwrap();
        let names: Vec<&str> = spec.rules.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["all-gather float bandwidth", "all-gather float latency", "barrier latency"], "{text}");
        assert!(text.contains("sizes = \"32..32\""), "{text}");
        assert!(!text.contains("\"0..0\""), "{text}");
    }

    #[test]
    fn margins_widen_to_the_spread_between_runs_and_within_a_row() {
        // Three runs whose medians at 8 B are 10, 12 and 14 us: a spread of 4 us, a third of the
        // median 12, so the margin is 100%, not 30%. Bandwidth agrees within 1%: 30% stays.
        let runs: Vec<Run> = [10.0, 12.0, 14.0]
            .iter()
            .zip([5.0, 5.02, 5.05])
            .map(|(t, bw)| {
                run(vec![
                    row("all-reduce", "float", "sum", "out-of-place", 8, *t, 0.001),
                    row("all-reduce", "float", "sum", "out-of-place", 1 << 20, 100.0, bw),
                ])
            })
            .collect();
        let (text, _) = render(&runs, 0.3, "30%").unwrap();
        let spec = spec::parse("s", &text).unwrap();
        let lat = spec.rules.iter().find(|r| r.name.ends_with("latency")).unwrap();
        assert_eq!(lat.max_median_us, Some(24.0), "{text}");
        assert!(text.contains("margin 100%: 3x the baseline's spread of 33.3% between its 3 rows"), "{text}");
        let bw = spec.rules.iter().find(|r| r.name.ends_with("bandwidth")).unwrap();
        assert_eq!(bw.min_busbw_gbps, Some(3.862), "{text}");
        assert!(text.contains("# from 3 known-good runs (--margin 30%):"), "{text}");

        // One run whose median at 8 B is known to +-20% (its 95% interval 8..12 around 10):
        // margin 60%.
        let mut r = row("all-reduce", "float", "sum", "out-of-place", 8, 10.0, 0.001);
        r.median_ci95_us = Some((8.0, 12.0));
        let (text, _) = render(&[run(vec![r])], 0.3, "30%").unwrap();
        assert!(text.contains("max_median_us = 16.0   # baseline median 10.0 us at 8; margin 60%: 3x the baseline's spread of 20% within its row"), "{text}");

        // Runs that disagree (bandwidth 10, 17 and 20 at 1 MiB: a spread of 59%): the margin
        // stops at 100%, a halving, and the rule says the runs disagree; --margin 150% is kept.
        let runs: Vec<Run> = [10.0, 17.0, 20.0]
            .iter()
            .map(|bw| run(vec![row("all-reduce", "float", "sum", "out-of-place", 1 << 20, 100.0, *bw)]))
            .collect();
        let (text, _) = render(&runs, 0.3, "30%").unwrap();
        let bw = |text: &str| {
            let spec = spec::parse("s", text).unwrap();
            spec.rules.iter().find(|r| r.name.ends_with("bandwidth")).unwrap().min_busbw_gbps
        };
        assert_eq!(bw(&text), Some(8.5), "{text}");
        assert!(text.contains("margin 100%, the most the spread gives: the baseline's spread of 58.8% between its 3 rows (3x would be 176.5%"), "{text}");
        assert!(text.contains("its runs disagree, so take the baseline again on a quiet machine"), "{text}");
        assert_eq!(bw(&render(&runs, 1.5, "150%").unwrap().0), Some(6.8));
    }

    #[test]
    fn a_noisy_baseline_is_said() {
        let mut a = run(vec![
            row("all-reduce", "float", "sum", "out-of-place", 8, 1.0, 0.001),
            row("all-reduce", "float", "sum", "out-of-place", 1 << 20, 100.0, 5.0),
            row("all-reduce", "float", "sum", "out-of-place", 64, 2.0, 0.001),
        ]);
        for (i, r) in a.rows.iter_mut().enumerate() {
            r.line = 2 + i as u64;
        }
        // 8 B noisy and off its mean, 1M fine, 64 B noisy but no rule learns from it (2x the
        // median at 8: outside the latency band).
        a.warnings = HashMap::from([(2, "noisy;mean_off_median".to_string()), (4, "noisy".to_string())]);
        let (text, noise) = render(&[a], 0.3, "30%").unwrap();
        let noise = noise.expect("a noisy baseline is said");
        assert_eq!(
            noise,
            "the baseline was noisy where the rules learn from it (noisy: all-reduce float sum at 8 | \
             mean_off_median: all-reduce float sum at 8); their margins are widened to 3x its measured spread; \
             a gate learned from several runs (spec from-run a.csv b.csv c.csv) is steadier"
        );
        assert!(text.contains(&format!("# Warning: {noise}\n\n[settings]")), "{text}");
    }

    #[test]
    fn runs_of_different_layouts_are_refused() {
        let a = run(vec![row("all-reduce", "float", "sum", "out-of-place", 8, 1.0, 0.001)]);
        let mut b = run(vec![row("all-reduce", "float", "sum", "out-of-place", 8, 1.0, 0.001)]);
        b.rows[0].ranks = Some(8);
        b.shown = "/r/big.csv".into();
        let e = render(&[a, b], 0.3, "30%").unwrap_err().to_string();
        assert!(e.contains("'/r/good.csv' ran 4 ranks on 2 host(s) but '/r/big.csv' 8 ranks on 2 host(s)"), "{e}");
    }

    /// A run the sweep warned was on the scheduler's tick (`scheduler_tick`): those rows are left
    /// out and named; a run of nothing else is refused, with that reason (exit 2, no spec).
    #[test]
    fn rows_on_the_scheduler_tick_are_left_out_and_a_run_of_them_refused() {
        let rows: Vec<Row> = (3..=20u32)
            .map(|e| {
                let size = 1u64 << e;
                let t = if e < 10 { 4000.0 } else { 8000.0 };
                Row {
                    line: e as u64,
                    ..row("all-reduce", "float", "sum", "out_of_place", size, t, size as f64 / t / 1e3)
                }
            })
            .collect();
        let mut all = run(rows.clone());
        all.warnings = (3..=20u64).map(|l| (l, "noisy;scheduler_tick".to_string())).collect();
        let e = render(&[all], 0.3, "30%").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("no rule could be learned from '/r/good.csv'"), "{text}");
        assert!(text.contains("left out 18 point(s) its run timed on the scheduler's tick"), "{text}");
        assert!(matches!(e, Error::Usage(_)), "{e:?}");
        // Only the small sizes on the tick: the rest is learned from, and the header says so.
        let mut some = run(rows);
        some.warnings = (3..=9u64).map(|l| (l, "scheduler_tick".to_string())).collect();
        let (text, noise) = render(&[some], 0.3, "30%").unwrap();
        let noise = noise.unwrap();
        assert!(noise.contains("left out 7 point(s) its run timed on the scheduler's tick"), "{noise}");
        assert!(
            noise.contains("all-reduce float sum at 8 in /r/good.csv (median 4000.0 us)")
                && noise.contains("and 3 more"),
            "{noise}"
        );
        assert!(text.contains("[[rule]]") && text.contains(&format!("# Warning: {noise}")), "{text}");
    }

    #[test]
    fn a_file_without_usable_rows_is_refused() {
        let rows = vec![row("all-reduce", "float", "sum", "in_place", 8, 1.0, 1.0)];
        let e = render(&[run(rows)], 0.3, "30%").unwrap_err().to_string();
        assert!(e.contains("no out-of-place rows"), "{e}");
        let rows = vec![row("all-smush", "float", "sum", "out_of_place", 8, 1.0, 1.0)];
        assert!(render(&[run(rows)], 0.3, "30%").unwrap_err().to_string().contains("unknown collective 'all-smush'"));
    }

    /// all-to-all-v under a pattern (read as `all-to-all-v(PATTERN)`): its rules carry the
    /// pattern, so check runs the traffic they were learned from, and the spec reads back.
    #[test]
    fn all_to_all_v_under_a_pattern_learns_rules_with_it() {
        let mut rows = vec![];
        for e in 10..=20u32 {
            let size = 1u64 << e;
            let time = 10.0 + size as f64 / 1000.0;
            rows.push(row("all-reduce", "float", "sum", "out_of_place", size, time, size as f64 / time / 1e3));
            let v = "all-to-all-v(moe:experts=8,topk=2,skew=1.5,seed=1)";
            rows.push(row(v, "float", "none", "out_of_place", size, 2.0 * time, size as f64 / time / 2e3));
        }
        let (text, _) = render(&[run(rows)], 0.3, "30%").unwrap();
        assert!(
            text.contains("collective = \"all-to-all-v\"\ndtype = \"float\"\npattern = \"moe:experts=8,topk=2,skew=1.5,seed=1\"\n"),
            "{text}"
        );
        let spec = crate::acceptance::spec::parse("learned.toml", &text).unwrap();
        let v: Vec<_> = spec.rules.iter().filter(|r| r.collective == Kind::AllToAllV).collect();
        assert!(!v.is_empty(), "{text}");
        assert!(v.iter().all(|r| r.pattern.to_string() == "moe:experts=8,topk=2,skew=1.5,seed=1"), "{text}");
        assert!(v.iter().all(|r| r.name.contains("all-to-all-v float moe:experts=8")), "{text}");
    }
}
