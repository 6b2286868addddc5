//! `coll-bench plot` and `coll-bench compare` on a real CSV: one sweep under mpirun (shared by
//! every test here), then the subcommands run on it and on copies doctored with the csv crate.
mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The real run: all-reduce and all-gather, 16 B .. 2 MiB (18 sizes), 2 ranks. Made once per test
/// binary. From 16 B: on 2 ranks all-gather's 8 B and 16 B are both 0 B after nccl-tests' 16-byte
/// rounding, one point twice, which these tests of the statistics need not meet.
fn real_csv() -> &'static Path {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| {
        let (o, dir) = mpirun(2, &["all-reduce", "all-gather", "-b", "16", "-e", "2M", "--csv", "run.csv"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plot_compare_run.csv");
        std::fs::copy(dir.path().join("run.csv"), &keep).unwrap();
        keep
    })
}

/// A fresh directory holding a copy of the real run as `run.csv`.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(real_csv(), dir.path().join("run.csv")).unwrap();
    dir
}

/// coll-bench SUBCOMMAND ARGS… in `dir`, without mpirun (the subcommands need no MPI).
fn sub(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN).args(args).current_dir(dir).output().expect("coll-bench runs")
}

/// Rewrite `from` into `to`, row by row; `edit` gets the header and a row, and returns false to
/// drop the row.
fn doctor(from: &Path, to: &Path, edit: impl Fn(&csv::StringRecord, &mut Vec<String>) -> bool) {
    let mut rd = csv::Reader::from_path(from).unwrap();
    let header = rd.headers().unwrap().clone();
    let mut wr = csv::Writer::from_path(to).unwrap();
    wr.write_record(&header).unwrap();
    for rec in rd.records() {
        let mut row: Vec<String> = rec.unwrap().iter().map(str::to_string).collect();
        if edit(&header, &mut row) {
            wr.write_record(&row).unwrap();
        }
    }
    wr.flush().unwrap();
}

/// The run with its warnings cleared, as `base.csv` in `dir`, for the tests of where `spec
/// from-run` writes (not what it learns): a run taken while other tests load the machine (MPICH's
/// ranks spinning) carries `scheduler_tick` on its small sizes, and from-run rightly learns
/// nothing from such a run.
fn learnable(dir: &Path) -> &'static str {
    doctor(&dir.join("run.csv"), &dir.join("base.csv"), |h, row| {
        row[col(h, "warnings")].clear();
        true
    });
    "base.csv"
}

fn col(header: &csv::StringRecord, name: &str) -> usize {
    header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"))
}

fn one_error_line(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got:\n{err}");
    assert!(lines[0].starts_with("coll-bench: error: "), "{err}");
    assert!(lines[0].contains(needle), "{needle:?} not in {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn plot_writes_svg_and_png_of_the_asked_size() {
    let dir = workdir();
    let o = sub(dir.path(), &["plot", "run.csv", "-o", "run.svg"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // It says what it wrote and what the image shows (out of place only, unless asked).
    let abs = dir.path().canonicalize().unwrap().join("run.svg");
    assert_eq!(
        stdout(&o),
        format!("coll-bench plot: wrote {} (2 series, out-of-place only, mean time per call)\n", abs.display())
    );
    let svg = std::fs::read_to_string(dir.path().join("run.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{}", &svg[..200.min(svg.len())]);
    for text in [
        "bus bandwidth (GB/s)",
        "message size (bytes, log2 scale)",
        "all-reduce · mpi",
        "all-gather · mpi",
        "run.csv (2 ranks on 1 host)",
        "series, out-of-place only",
    ] {
        assert!(svg.contains(text), "{text:?} not in the SVG");
    }
    assert!(svg.contains("<polyline") || svg.contains("<path"), "no lines drawn");

    let o = sub(
        dir.path(),
        &["plot", "run.csv", "-o", "run.png", "--width", "640", "--height", "480", "--placement", "both"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (info, rgb) = decode_png(&dir.path().join("run.png"));
    assert_eq!((info.width, info.height), (640, 480));
    // The first series' colour is on the image, and so are dark (text) pixels.
    let px: Vec<&[u8]> = rgb.chunks(3).collect();
    assert!(px.iter().filter(|p| *p == &[31u8, 119, 180]).count() > 100, "first series not drawn");
    assert!(px.iter().filter(|p| p.iter().all(|c| *c < 80)).count() > 500, "no text drawn");

    // Default size.
    let o = sub(dir.path(), &["plot", "run.csv", "-o", "default.PNG"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (info, _) = decode_png(&dir.path().join("default.PNG"));
    assert_eq!((info.width, info.height), (1200, 900));
}

fn decode_png(path: &Path) -> (png::OutputInfo, Vec<u8>) {
    let dec = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info, buf)
}

#[test]
fn plot_overlays_several_files() {
    let dir = workdir();
    // A second "run": all-gather only.
    doctor(&dir.path().join("run.csv"), &dir.path().join("other.csv"), |h, row| {
        row[col(h, "collective")] == "all-gather"
    });
    let o = sub(dir.path(), &["plot", "run.csv", "other.csv", "-o", "both.svg", "--title", "two runs"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = std::fs::read_to_string(dir.path().join("both.svg")).unwrap();
    for text in ["two runs", "run.csv · all-reduce · mpi", "run.csv · all-gather · mpi", "other.csv · all-gather · mpi"]
    {
        assert!(svg.contains(text), "{text:?} not in the SVG");
    }
    assert!(!svg.contains("other.csv · all-reduce"));
}

#[test]
fn plot_refuses_bad_input_and_leaves_no_file() {
    let dir = workdir();
    std::fs::write(dir.path().join("notes.csv"), "name,value\nx,1\n").unwrap();
    let form = "expected coll-bench plot RUN.csv";
    for (args, needle) in [
        (&["plot", "run.csv"][..], "--output"),
        (&["plot", "-o", "x.png"][..], "<RUN.csv>"),
        (&["plot", "missing.csv", "-o", "x.png"][..], "cannot read 'missing.csv': no such file"),
        (&["plot", "notes.csv", "-o", "x.svg"][..], "'notes.csv' is not a coll-bench CSV (no column 'backend')"),
        (&["plot", "run.csv", "-o", "x.jpg"][..], "-o/--output: unknown image type '.jpg'"),
        (&["plot", "run.csv", "-o", "x"][..], "-o/--output: 'x' has no extension"),
        (&["plot", "run.csv", "-o", "x.png", "--placement", "up"][..], "--placement"),
        (&["plot", "run.csv", "-o", "x.png", "--width", "0"][..], "--width"),
        (&["plot", "run.csv", "-o", "run.csv/x.png"][..], "cannot write 'run.csv/x.png'"),
    ] {
        let o = sub(dir.path(), args);
        one_error_line(&o, needle);
        if !needle.contains("cannot write") {
            assert!(stderr(&o).contains(form), "{args:?}: {}", stderr(&o));
        }
        let mut left: Vec<String> =
            files(dir.path()).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        left.sort();
        assert_eq!(left, vec!["notes.csv", "run.csv"], "{args:?} left a file behind");
    }
}

#[test]
fn compare_a_run_with_itself_finds_nothing() {
    let dir = workdir();
    let o = sub(dir.path(), &["compare", "run.csv", "run.csv"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    let rows = std::fs::read_to_string(dir.path().join("run.csv")).unwrap().lines().count() - 1;
    let summary = out.lines().last().unwrap();
    assert!(
        summary.starts_with(&format!("compare: no regression (exit 0); {rows} points in common: 0 regressed")),
        "{summary}"
    );
    assert!(
        summary.contains("series: 0 regressed, 0 improved of 4; judged on the median, one run per side"),
        "{summary}"
    );
    assert!(summary.ends_with("0 only in base, 0 only in new"), "{summary}");
    assert!(!out.contains("REGRESSION") && !out.contains("only in run.csv"), "{out}");
    // One run per side: the output says drift cannot be told from change.
    assert!(out.contains("# noise: one run per side, so this verdict cannot separate drift"), "{out}");
    // Every point: ratio 1, change 0, verdict ok; the columns name the statistic judged.
    assert!(out.lines().any(|l| l.starts_with("# collective") && l.contains("base_median") && l.contains("mean_chg")));
    let table: Vec<&str> = out.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(table.len(), rows);
    assert!(table.iter().all(|l| l.contains(" 1.000 ") && l.contains("+0.0%") && l.contains("  ok ")), "{out}");
}

/// Every time column: a uniformly slower run scales them all.
const TIMES: &[&str] =
    &["time_us", "median_us", "p95_us", "p99_us", "min_us", "max_us", "stddev_us", "ci95_lo_us", "ci95_hi_us"];

/// A copy of the real run with every time column of the rows `pick` chooses scaled by
/// `factor(row)`.
fn scaled(dir: &Path, to: &str, factor: impl Fn(&csv::StringRecord, &[String]) -> f64) {
    doctor(&dir.join("run.csv"), &dir.join(to), |h, row| {
        let f = factor(h, row);
        for c in TIMES.iter().filter_map(|c| h.iter().position(|x| x == *c)) {
            if let Ok(v) = row[c].parse::<f64>() {
                row[c] = (v * f).to_string();
            }
        }
        true
    });
}

/// Deterministic noise in [-1, 1] from a seed and some text.
fn unit(seed: u64, text: &str) -> f64 {
    let mut x = seed.wrapping_add(1).wrapping_mul(0x9e3779b97f4a7c15);
    for b in text.bytes() {
        x = (x ^ b as u64).wrapping_mul(0x100000001b3);
    }
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58476d1ce4e5b9);
    x ^= x >> 32;
    (x % 2001) as f64 / 1000.0 - 1.0
}

/// Deterministic noise in [-1, 1] for one point of the run.
fn jitter(seed: u64, h: &csv::StringRecord, row: &[String]) -> f64 {
    let point: Vec<&str> = ["collective", "placement", "size_bytes"].iter().map(|c| row[col(h, c)].as_str()).collect();
    unit(seed, &point.join(" "))
}

#[test]
fn compare_flags_a_thirty_percent_slowdown() {
    let dir = workdir();
    // all-reduce from 128 KiB up made 30% slower: 5 sizes × 2 placements (the series' median
    // does not move: 5 of 18 sizes).
    let slowed = |h: &csv::StringRecord, row: &[String]| {
        row[col(h, "collective")] == "all-reduce" && row[col(h, "size_bytes")].parse::<u64>().unwrap() >= 128 << 10
    };
    scaled(dir.path(), "slow.csv", |h, row| if slowed(h, row) { 1.3 } else { 1.0 });
    // One run per side (last night's CSV against today's): the stretch of sizes is judged as
    // one, a regression: exit 1, the stretch named, each of its points named, and the summary
    // line says so first (on main: exit 0, "0 regressions, 10 slower not judged").
    let o = sub(dir.path(), &["compare", "run.csv", "slow.csv"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let stretches: Vec<&str> = out.lines().filter(|l| l.starts_with("regressed stretch: ")).collect();
    assert!(!stretches.is_empty() && stretches.len() <= 2, "one per placement at most, nothing else:\n{out}");
    for l in &stretches {
        assert!(
            l.starts_with("regressed stretch: all-reduce mpi float sum ")
                && l.contains(" from 128K to ")
                && l.contains("median +30.0% on average (+30.0% relative to the rest of the run, bar "),
            "{l}"
        );
    }
    let regressed: Vec<&str> = out.lines().filter(|l| l.starts_with("regressed: ")).collect();
    assert!(regressed.len() >= 3, "{out}");
    assert!(regressed
        .iter()
        .all(|l| l.contains(": all-reduce mpi float sum ") && l.contains("(+30.0%; +30.0% relative")));
    for l in out.lines().filter(|l| l.starts_with("  ") && l.contains(" REGRESSION ")) {
        assert!(l.contains(" 1.300 ") && l.trim_end().ends_with("+30.0%"), "{l}");
    }
    let summary = out.lines().last().unwrap();
    assert!(
        summary.starts_with(&format!(
            "compare: REGRESSED (exit 1): 0 series, {} stretch{} of sizes, {} points, whole run not; ",
            stretches.len(),
            if stretches.len() == 1 { "" } else { "es" },
            regressed.len()
        )) && summary.contains(&format!(" in common: {} regressed, ", regressed.len())),
        "{summary}"
    );

    // Two runs a side, each a copy within ±1% of the other: the same stretch is a regression.
    scaled(dir.path(), "run2.csv", |h, row| 1.0 + 0.01 * jitter(7, h, row));
    scaled(dir.path(), "slow2.csv", |h, row| (1.0 + 0.01 * jitter(8, h, row)) * if slowed(h, row) { 1.3 } else { 1.0 });
    let two = |extra: &[&'static str]| {
        let mut a = vec!["compare", "run.csv", "run2.csv"];
        a.extend(extra);
        a.extend(["--", "slow.csv", "slow2.csv"]);
        a
    };
    let o = sub(dir.path(), &two(&[]));
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let regressed: Vec<&str> = out.lines().filter(|l| l.starts_with("regressed: ")).collect();
    assert_eq!(regressed.len(), 10, "every doctored point, nothing else:\n{out}");
    for l in &regressed {
        assert!(
            l.starts_with("regressed: all-reduce mpi float sum ")
                && l.contains(" relative to the rest of the run, bar "),
            "{l}"
        );
    }
    // The table row of each says so, on the median, and the mean moved the same way.
    for l in out.lines().filter(|l| l.starts_with("  ") && l.contains(" REGRESSION ")) {
        let ratio: f64 = l.split_whitespace().nth(8).unwrap().parse().unwrap();
        assert!(l.contains("all-reduce") && (1.25..1.35).contains(&ratio) && l.trim_end().ends_with('%'), "{l}");
    }
    assert_eq!(out.lines().filter(|l| l.starts_with("  ") && l.contains(" REGRESSION ")).count(), 10, "{out}");
    let summary = out.lines().last().unwrap();
    assert!(
        summary.starts_with("compare: REGRESSED (exit 1): ")
            && summary.contains(" in common: 10 regressed,")
            && summary.contains("judged on the median, 2 vs 2 runs"),
        "{summary}"
    );

    // Below the threshold it is not a regression: --threshold 40.
    let o = sub(dir.path(), &two(&["--threshold", "40"]));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // The other way round it is an improvement.
    let o = sub(dir.path(), &["compare", "slow.csv", "run.csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("compare: no regression (exit 0); "), "{}", stdout(&o));
    // Each doctored point is judged on its own against the run's noise: most are improvements,
    // one may fall within the noise of a real run (9 of 10 seen), none is a regression.
    let improved: usize = stdout(&o)
        .split(" in common: 0 regressed, ")
        .nth(1)
        .and_then(|t| t.split(" improved").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no \"0 regressed, N improved\": {}", stdout(&o)));
    assert!((5..=10).contains(&improved), "{}", stdout(&o));
    // Judged on the mean, it says so.
    let o = sub(dir.path(), &two(&["--stat", "mean"]));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("judged on the mean time per call (time_us of each run"), "{}", stdout(&o));
    assert!(stdout(&o).lines().any(|l| l.contains("base_mean") && l.contains("median_chg")), "{}", stdout(&o));
    assert!(
        stdout(&o).lines().filter(|l| l.starts_with("regressed: ")).all(|l| l.contains(": mean ")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn compare_one_run_per_side_judges_against_the_runs_own_noise() {
    let dir = workdir();
    // A "back-to-back run": every point off by up to ±20%, the run as a whole 3% slower. The
    // old within-run test called dozens of such points regressions.
    scaled(dir.path(), "again.csv", |h, row| 1.03 * (1.0 + 0.2 * jitter(1, h, row)));
    let o = sub(dir.path(), &["compare", "run.csv", "again.csv"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("cannot separate drift between the runs from a change"), "{out}");
    assert!(out.lines().filter(|l| l.contains(" noise ")).count() > 10, "beyond 5% but within the noise:\n{out}");
    // The same with all-gather 30% slower at every size: its two series regressed, nothing else.
    scaled(dir.path(), "slow.csv", |h, row| {
        1.03 * (1.0 + 0.2 * jitter(1, h, row)) * if row[col(h, "collective")] == "all-gather" { 1.3 } else { 1.0 }
    });
    let o = sub(dir.path(), &["compare", "run.csv", "slow.csv"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let named: Vec<&str> = out.lines().filter(|l| l.starts_with("regressed")).collect();
    assert!(named.iter().all(|l| l.contains("all-gather")), "{out}");
    assert!(out.contains("regressed series: all-gather mpi float none out-of-place over 18 sizes"), "{out}");
    assert!(out.contains("regressed series: all-gather mpi float none in-place over 18 sizes"), "{out}");
    // The summary line leads with the verdict the exit code gives (on main it could read
    // "0 regressions … series: 2 regressed" beside exit 1).
    let summary = out.lines().last().unwrap();
    assert!(summary.starts_with("compare: REGRESSED (exit 1): 2 series, "), "{summary}");
}

#[test]
fn compare_several_runs_per_side_judges_on_run_to_run_noise() {
    let dir = workdir();
    // Three runs a side; each run drifts as a whole, per collective (by up to ±10%), and point
    // by point (±5%).
    const DRIFT: [[f64; 2]; 6] = [[0.10, -0.05], [-0.10, 0.10], [0.0, 0.0], [-0.05, 0.08], [0.05, -0.08], [0.10, 0.02]];
    let drift = |run: usize| {
        move |h: &csv::StringRecord, row: &[String]| {
            let c = usize::from(row[col(h, "collective")] != "all-reduce");
            (1.0 + DRIFT[run][c]) * (1.0 + 0.05 * jitter(run as u64 + 10, h, row))
        }
    };
    for i in 0..6 {
        scaled(dir.path(), &format!("r{i}.csv"), drift(i));
    }
    let args = |new: [&'static str; 3]| {
        let mut a = vec!["compare", "r0.csv", "r1.csv", "r2.csv", "--"];
        a.extend(new);
        a
    };
    let o = sub(dir.path(), &args(["r3.csv", "r4.csv", "r5.csv"]));
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# noise: between runs (3 base, 3 new)"), "{out}");
    assert!(out.contains("a side's value is the geometric mean over its runs"), "{out}");
    assert!(out.lines().last().unwrap().contains("judged on the median, 3 vs 3 runs"), "{out}");
    // all-reduce 30% slower in every NEW run: caught, and only it.
    for i in 3..6 {
        let d = drift(i);
        scaled(dir.path(), &format!("s{i}.csv"), move |h, row| {
            d(h, row) * if row[col(h, "collective")] == "all-reduce" { 1.3 } else { 1.0 }
        });
    }
    let o = sub(dir.path(), &args(["s3.csv", "s4.csv", "s5.csv"]));
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let named: Vec<&str> = out.lines().filter(|l| l.starts_with("regressed")).collect();
    assert!(!named.is_empty() && named.iter().all(|l| l.contains("all-reduce")), "{out}");
}

#[test]
fn compare_of_different_runs_names_what_only_one_has() {
    let dir = workdir();
    let size = |h: &csv::StringRecord, row: &[String]| row[col(h, "size_bytes")].parse::<u64>().unwrap();
    // base: all-reduce up to 512 KiB only, and all-gather; new: all-reduce only, every size.
    doctor(&dir.path().join("run.csv"), &dir.path().join("base.csv"), |h, row| {
        row[col(h, "collective")] != "all-reduce" || size(h, row) <= 512 << 10
    });
    doctor(&dir.path().join("run.csv"), &dir.path().join("new.csv"), |h, row| {
        row[col(h, "collective")] == "all-reduce"
    });
    let o = sub(dir.path(), &["compare", "base.csv", "new.csv"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# only in base.csv: all-gather mpi float none out-of-place: 18 sizes (0 .. 2M)"), "{out}");
    assert!(out.contains("# only in base.csv: all-gather mpi float none in-place: 18 sizes (0 .. 2M)"), "{out}");
    assert!(out.contains("# only in new.csv: all-reduce mpi float sum out-of-place: 2 sizes (1M 2M)"), "{out}");
    assert!(out.contains("# only in new.csv: all-reduce mpi float sum in-place: 2 sizes (1M 2M)"), "{out}");
    let summary = out.lines().last().unwrap();
    assert!(summary.starts_with("compare: no regression (exit 0); 32 points in common"), "{summary}");
    assert!(summary.ends_with("36 only in base, 4 only in new"), "{summary}");

    // Nothing shared at all is an error.
    doctor(&dir.path().join("run.csv"), &dir.path().join("gather.csv"), |h, row| {
        row[col(h, "collective")] == "all-gather"
    });
    one_error_line(&sub(dir.path(), &["compare", "new.csv", "gather.csv"]), "share no point");
}

#[test]
fn compare_refuses_bad_input() {
    let dir = workdir();
    std::fs::write(dir.path().join("notes.csv"), "name,value\nx,1\n").unwrap();
    let form = "expected coll-bench compare BASE.csv NEW.csv";
    for (args, needle) in [
        (&["compare", "run.csv"][..], "the NEW run is missing"),
        (&["compare", "run.csv", "missing.csv"][..], "cannot read 'missing.csv': no such file"),
        (&["compare", "notes.csv", "run.csv"][..], "'notes.csv' is not a coll-bench CSV"),
        (&["compare", "run.csv", "run.csv", "extra.csv"][..], "3 CSVs without '--'"),
        (&["compare", "run.csv", "--", "run.csv", "run.csv"][..], "'run.csv' is given twice on one side"),
        (&["compare", "run.csv", "--stat", "p99", "run.csv"][..], "--stat: 'p99' is not a statistic (median or mean)"),
    ] {
        let o = sub(dir.path(), args);
        one_error_line(&o, needle);
        assert!(stderr(&o).contains(form), "{}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }
    one_error_line(&sub(dir.path(), &["compare", "run.csv", "run.csv", "--threshold", "-3"]), "--threshold");
    one_error_line(&sub(dir.path(), &["compare", "run.csv", "run.csv", "--alpha", "2"]), "--alpha");
    one_error_line(
        &sub(dir.path(), &["compare", "run.csv", "run.csv", "--drift", "lots"]),
        "--drift: 'lots' is not a percentage",
    );
}

/// `coll-bench ARGS…` in `dir` with standard output a pipe whose read end is already closed.
fn into_closed_pipe(dir: &Path, args: &[&str]) -> Output {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two new descriptors, each owned once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: fresh descriptors from pipe(2), owned by nobody else.
    let (read, write) = unsafe {
        use std::os::fd::FromRawFd;
        (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1]))
    };
    drop(read);
    let child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::from(write))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("coll-bench runs");
    child.wait_with_output().expect("coll-bench ends")
}

#[test]
fn a_closed_pipe_is_the_readers_choice_and_a_full_disk_an_error() {
    let dir = workdir();
    let base = learnable(dir.path());
    let runs: [&[&str]; 5] = [
        &["compare", "run.csv", "run.csv"],
        &["spec", "from-run", base],
        &["plot", "run.csv", "-o", "p.svg"],
        &["plot", "--help"],
        &["help", "compare"],
    ];
    for (i, args) in runs.iter().enumerate() {
        let o = into_closed_pipe(dir.path(), args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?} into a closed pipe: {err}");
        assert!(!err.contains("error") && !err.contains("Broken pipe"), "{args:?}: {err}");
        let _ = std::fs::remove_file(dir.path().join("p.svg"));
        let full = Command::new(BIN)
            .args(*args)
            .current_dir(dir.path())
            .stdout(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
            .output()
            .unwrap();
        let err = stderr(&full);
        assert_eq!(full.status.code(), Some(2), "{args:?} into /dev/full: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("coll-bench: error: ")).collect();
        assert_eq!(errors.len(), 1, "{i}: {args:?}: {err}");
        assert!(errors[0].contains("writing to standard output failed: No space left"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        let _ = std::fs::remove_file(dir.path().join("p.svg"));
    }
}

/// Several runs started together on one output path: the first claims it and writes it whole,
/// every other is refused in one line (at its check, or at its claim when another run claimed
/// the path in between) and says nothing of writing; nothing else is left in the directory.
#[test]
fn runs_started_together_on_one_path_write_it_once() {
    let dir = workdir();
    let base = learnable(dir.path());
    let runs: [(&[&str], &str, &str); 2] = [
        (&["plot", "run.csv", "-o", "same.svg"], "same.svg", "</svg>"),
        (&["spec", "from-run", base, "-o", "same.toml"], "same.toml", "[[rule]]"),
    ];
    for (args, name, whole) in runs {
        let children: Vec<_> = (0..4)
            .map(|_| {
                Command::new(BIN)
                    .args(args)
                    .current_dir(dir.path())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outs: Vec<Output> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
        let said = |o: &Output| format!("{}{}", stdout(o), stderr(o));
        let wrote: Vec<&Output> = outs.iter().filter(|o| o.status.code() == Some(0)).collect();
        assert_eq!(wrote.len(), 1, "{args:?}: {:?}", outs.iter().map(said).collect::<Vec<_>>());
        assert!(said(wrote[0]).contains("wrote"), "{}", said(wrote[0]));
        for o in outs.iter().filter(|o| o.status.code() != Some(0)) {
            let err = stderr(o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("coll-bench: error: ")).collect();
            assert_eq!(errors.len(), 1, "{args:?}: {err}");
            // Refused at the check ("already exists"), or, when another run claimed the path
            // between this one's check and its claim, at the claim ("appeared while").
            let refused = [format!("'{name}' already exists"), format!("'{name}' appeared while this run went on")];
            assert!(refused.iter().any(|r| errors[0].contains(r.as_str())), "{args:?}: {err}");
            assert!(!said(o).contains("wrote"), "{args:?}: {}", said(o));
        }
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(text.contains(whole), "{name} is not whole: {text}");
    }
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["base.csv", "run.csv", "same.svg", "same.toml"], "{left:?}");
}

/// `plot -o` into a directory that does not exist makes it, as every other output does; an
/// error never names a temporary file.
#[test]
fn plot_makes_missing_directories_as_every_output_does() {
    let dir = workdir();
    let o = sub(dir.path(), &["plot", "run.csv", "-o", "new/dir/p.svg"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("wrote") && stdout(&o).contains("/new/dir/p.svg"), "{}", stdout(&o));
    assert!(std::fs::read_to_string(dir.path().join("new/dir/p.svg")).unwrap().contains("</svg>"));
    let o = sub(dir.path(), &["spec", "from-run", learnable(dir.path()), "-o", "other/s.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(dir.path().join("other/s.toml").is_file());
}
