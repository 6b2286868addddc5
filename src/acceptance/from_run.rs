//! `coll-bench spec from-run RUN.csv --margin 30% [-o SPEC.toml]`: an acceptance spec from a
//! known-good run, so today's healthy cluster becomes tomorrow's gate. No MPI: it reads a CSV
//! (a sweep's or `check`'s) and writes TOML that `coll-bench check` takes.
//!
//! Per series (collective × backend × type × op, out of place) it writes up to two rules, each
//! judged as `check` judges: a bandwidth rule over the sizes where bandwidth has levelled off
//! (the largest eighth of the range, as the table's footer), requiring the weakest of them at
//! `busbw / (1 + margin)`; and a latency rule at the smallest size, requiring `time × (1 +
//! margin)`. So `--margin 30%` means "up to 30% slower than the baseline", for bandwidth and
//! time alike. Each size's baseline value is the median over the file's rows for it (a `check`
//! CSV holds several repeats). The rules carry `ranks_per_node` of the baseline, so the gate is
//! skipped, not misjudged, on another layout. The text is parsed back as a spec before it is
//! written: what this writes, `check` accepts.

use super::spec;
use crate::collective::Kind;
use crate::csvread::{self, Row};
use crate::dtype::{DType, Op};
use crate::error::{exit, Error, Result};
use crate::options::Policy;
use crate::size::human;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The command line's form, for error lines.
pub const FORM: &str = "coll-bench spec from-run RUN.csv [--margin PCT] [-o SPEC.toml]";

/// Share of the largest size from which bandwidth counts as levelled off (as the table's footer).
const PLATEAU_FRACTION: u64 = 8;

/// `coll-bench spec from-run`, as the command line gave it (`crate::cli`).
#[derive(Clone, Debug, PartialEq)]
pub struct FromRunOptions {
    /// The known-good run's CSV.
    pub run: PathBuf,
    /// How much slower than the baseline still passes: 0.30 for `30%`.
    pub margin: f64,
    /// The margin as given, for the spec's header.
    pub margin_text: String,
    /// Where the spec goes; `None`: standard output.
    pub output: Option<PathBuf>,
    pub policy: Policy,
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
        crate::report::outfile::check(&[("-o/--output", out)], &[("the run's CSV", &a.run)], policy)?;
    }
    let rows = csvread::read(&a.run)?;
    let shown = crate::error::shown(crate::report::outfile::absolute(&a.run));
    let text = render(&rows, a.margin, &a.margin_text, &shown)?;
    match &a.output {
        None => print!("{text}"),
        Some(out) => {
            crate::report::outfile::replace("-o/--output", out, text.as_bytes(), policy, true)?;
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

/// One series of the run: its rows, out of place.
struct Series<'a> {
    kind: Kind,
    dtype: DType,
    op: Option<Op>,
    rows: Vec<&'a Row>,
}

fn median(v: impl Iterator<Item = f64>) -> f64 {
    crate::stats::median_of(&v.collect::<Vec<f64>>())
}

/// Four significant digits, written so TOML reads a float (`1.0`, not `1`).
fn float(x: f64) -> String {
    let digits = 4 - 1 - x.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits.max(0));
    format!("{:?}", (x * scale).round() / scale)
}

/// The spec's text: a header saying where it came from, settings, then the rules. `margin_text`
/// is the flag as given (for the header); `run` the file as shown.
pub fn render(rows: &[Row], margin: f64, margin_text: &str, run: &str) -> Result<String> {
    let mut series: Vec<Series> = vec![];
    let mut skipped: Vec<String> = vec![];
    for r in rows {
        let placement = r.key.placement.replace('_', "-");
        if placement != "out-of-place" {
            continue;
        }
        let k = &r.key;
        let at = |what: &str, v: &str| Error::usage(format!("'{run}' line {}: unknown {what} '{v}'", r.line));
        let kind = Kind::parse(&k.collective).ok_or_else(|| at("collective", &k.collective))?;
        let dtype = DType::parse(&k.dtype)
            .or(if kind.spec().sized() { None } else { Some(DType::Float32) })
            .ok_or_else(|| at("dtype", &k.dtype))?;
        let op = match k.op.as_str() {
            "none" | "" => None,
            o => Some(Op::parse(o).ok_or_else(|| at("op", o))?),
        };
        if k.backend != "mpi" {
            let s = format!("{} {} ({} backend)", k.collective, k.dtype, k.backend);
            if !skipped.contains(&s) {
                skipped.push(s);
            }
            continue;
        }
        match series.iter_mut().find(|s| s.kind == kind && s.dtype == dtype && s.op == op) {
            Some(s) => s.rows.push(r),
            None => series.push(Series { kind, dtype, op, rows: vec![r] }),
        }
    }
    if series.is_empty() {
        return Err(Error::usage(format!(
            "'{run}' has no out-of-place rows of the mpi backend; expected a CSV of a coll-bench sweep or check"
        )));
    }
    let ranks = rows.iter().find_map(|r| r.ranks);
    let hosts = rows.iter().find_map(|r| r.hosts);
    let per_node = match (ranks, hosts) {
        (Some(r), Some(h)) if h > 0 && r % h == 0 => Some(r / h),
        _ => None,
    };
    let pct = margin * 100.0;
    let mut t = String::new();
    let _ = writeln!(t, "# Acceptance spec written by coll-bench {} spec from-run", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(t, "# from the known-good run {run} (--margin {margin_text}).");
    if let (Some(r), Some(h)) = (ranks, hosts) {
        let _ = writeln!(t, "# The baseline ran {r} ranks on {h} host(s); run the gate the same way:");
        let _ = writeln!(t, "#   mpirun -n {r} coll-bench check THIS.toml --junit verdicts.xml");
    }
    let _ = writeln!(
        t,
        "# Each requirement allows {pct}% slower than the baseline: bus bandwidth >= baseline / {}, time <= baseline x {}",
        float(1.0 + margin),
        float(1.0 + margin)
    );
    let _ = writeln!(t, "# (baseline: each size's median over the run's rows, out of place).");
    for s in &skipped {
        let _ = writeln!(t, "# Left out: {s}; check runs the mpi backend only.");
    }
    let _ = writeln!(t, "\n[settings]\nrepeats = 3\nbudget = \"50ms\"");

    for s in &series {
        let mut sizes: Vec<u64> = s.rows.iter().map(|r| r.key.size_bytes).collect();
        sizes.sort();
        sizes.dedup();
        let at_size = |size: u64, f: &dyn Fn(&Row) -> f64| {
            median(s.rows.iter().filter(|r| r.key.size_bytes == size).map(|r| f(r)))
        };
        let label = format!(
            "{} {}{}",
            s.kind.name(),
            if s.kind.spec().sized() { s.dtype.name() } else { "" },
            s.op.map(|o| format!(" {}", o.name())).unwrap_or_default()
        )
        .trim()
        .replace("  ", " ");
        let head = |t: &mut String, name: &str, sizes: &str| {
            let _ = writeln!(t, "\n[[rule]]\nname = \"{label} {name}\"\ncollective = \"{}\"", s.kind.name());
            if s.kind.spec().sized() {
                let _ = writeln!(t, "dtype = \"{}\"", s.dtype.name());
            }
            if let Some(o) = s.op.filter(|_| s.kind.spec().reduces()) {
                let _ = writeln!(t, "op = \"{}\"", o.name());
            }
            let _ = writeln!(t, "placement = \"out-of-place\"\nsizes = \"{sizes}\"");
        };
        let tail = |t: &mut String| {
            if let Some(n) = per_node {
                let _ = writeln!(t, "ranks_per_node = {n}");
            }
        };
        let (&smallest, &largest) = (sizes.first().expect("a series has rows"), sizes.last().expect("rows"));
        if s.kind.spec().sized() {
            let plateau: Vec<u64> = sizes.iter().copied().filter(|&z| z >= largest / PLATEAU_FRACTION).collect();
            let (weakest, bw) = plateau
                .iter()
                .map(|&z| (z, at_size(z, &|r| r.busbw_gbps)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("the largest size is in the plateau");
            if bw > 0.0 {
                let range = format!("{}..{}", human(plateau[0]), human(largest));
                head(&mut t, "bandwidth", &range);
                let _ = writeln!(t, "plateau = \"{range}\"");
                let _ = writeln!(
                    t,
                    "min_busbw_gbps = {}   # baseline {} GB/s at {} (the weakest size of the plateau)",
                    float(bw / (1.0 + margin)),
                    float(bw),
                    human(weakest)
                );
                tail(&mut t);
            }
        }
        let time = at_size(smallest, &|r| r.time_us);
        if time > 0.0 {
            let size = if s.kind.spec().sized() { human(smallest) } else { "8".to_string() };
            head(&mut t, "latency", &format!("{size}..{size}"));
            let at = if s.kind.spec().sized() { format!(" at {}", human(smallest)) } else { String::new() };
            let _ = writeln!(t, "max_time_us = {}   # baseline {} us{at}", float(time * (1.0 + margin)), float(time));
            tail(&mut t);
        }
    }
    // What is written must be what check accepts.
    spec::parse("the written spec", &t)
        .map_err(|e| Error::setup(format!("internal error, the spec is invalid: {e}")))?;
    Ok(t)
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
            busbw_gbps: busbw,
            ranks: Some(4),
            hosts: Some(2),
            line: 2,
        }
    }

    #[test]
    fn rules_from_a_run_with_repeats_parse_back_as_a_spec() {
        let mut rows = vec![];
        // Two repeats of an all-reduce sweep 8 B..64 MiB; plateau 8M..64M; 16M is the weakest.
        for (rep, slow) in [(0, 1.0), (1, 1.1)] {
            for e in 3..=26u32 {
                let size = 1u64 << e;
                let bw = if size == 16 << 20 { 4.0 } else { 5.0 } * if rep == 1 { 1.02 } else { 1.0 };
                rows.push(row("all-reduce", "float", "sum", "out_of_place", size, 10.0 * slow, bw));
                rows.push(row("all-reduce", "float", "sum", "in_place", size, 1.0, 100.0));
            }
        }
        rows.push(row("barrier", "none", "none", "out_of_place", 0, 20.0, 0.0));
        let text = render(&rows, 0.25, "25%", "/r/good.csv").unwrap();
        let spec = spec::parse("s", &text).unwrap();
        assert_eq!(spec.rules.len(), 3, "{text}");
        let bw = &spec.rules[0];
        assert_eq!(
            (bw.collective, bw.min_bytes, bw.max_bytes, bw.plateau),
            (Kind::AllReduce, 8 << 20, 64 << 20, (8 << 20, 64 << 20))
        );
        // Median of 4.0 and 4.08 = 4.04, over 1.25.
        assert_eq!(bw.min_busbw_gbps, Some(3.232), "{text}");
        assert_eq!(bw.ranks_per_node, Some(2));
        let lat = &spec.rules[1];
        assert_eq!((lat.min_bytes, lat.max_bytes, lat.max_time_us), (8, 8, Some(13.13)), "{text}");
        let barrier = &spec.rules[2];
        assert_eq!(
            (barrier.collective, barrier.max_time_us, barrier.min_busbw_gbps),
            (Kind::Barrier, Some(25.0), None)
        );
        assert!(text.contains("# from the known-good run /r/good.csv (--margin 25%)"), "{text}");
        assert!(text.contains("mpirun -n 4 coll-bench check"), "{text}");
    }

    #[test]
    fn a_file_without_usable_rows_is_refused() {
        let rows = vec![row("all-reduce", "float", "sum", "in_place", 8, 1.0, 1.0)];
        let e = render(&rows, 0.3, "30%", "x.csv").unwrap_err().to_string();
        assert!(e.contains("no out-of-place rows"), "{e}");
        let rows = vec![row("all-smush", "float", "sum", "out_of_place", 8, 1.0, 1.0)];
        assert!(render(&rows, 0.3, "30%", "x.csv").unwrap_err().to_string().contains("unknown collective 'all-smush'"));
    }
}
