//! `coll-bench plot` and `coll-bench compare` on a real CSV: one sweep under mpirun (shared by
//! every test here), then the subcommands run on it and on copies doctored with the csv crate.
mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The real run: all-reduce and all-gather, 8 B .. 1 MiB, 2 ranks. Made once per test binary.
fn real_csv() -> &'static Path {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| {
        let (o, dir) = mpirun(2, &["all-reduce", "all-gather", "-e", "1M", "--csv", "run.csv"]);
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
    let svg = std::fs::read_to_string(dir.path().join("run.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{}", &svg[..200.min(svg.len())]);
    for text in [
        "bus bandwidth (GB/s)",
        "message size (bytes, log2 scale)",
        "all-reduce · mpi",
        "all-gather · mpi",
        "run.csv (2 ranks on 1 host)",
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
        (&["plot", "run.csv", "-o", "no/such/dir/x.png"][..], "cannot write 'no/such/dir/x.png'"),
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
    assert!(summary.starts_with(&format!("compare: {rows} points in common: 0 regressions")), "{summary}");
    assert!(summary.ends_with("0 only in base, 0 only in new"), "{summary}");
    assert!(!out.contains("REGRESSION") && !out.contains("only in run.csv"), "{out}");
    // Every point: ratio 1, change 0.
    let table: Vec<&str> = out.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(table.len(), rows);
    assert!(table.iter().all(|l| l.contains(" 1.000 ") && l.contains("+0.0%  ok ")), "{out}");
}

/// Every time column: a uniformly 30% slower run scales them all.
const TIMES: &[&str] =
    &["time_us", "median_us", "p95_us", "p99_us", "min_us", "max_us", "stddev_us", "ci95_lo_us", "ci95_hi_us"];

#[test]
fn compare_flags_a_thirty_percent_slowdown() {
    let dir = workdir();
    // all-reduce from 64 KiB up made 30% slower.
    let slowed = |h: &csv::StringRecord, row: &[String]| {
        row[col(h, "collective")] == "all-reduce" && row[col(h, "size_bytes")].parse::<u64>().unwrap() >= 64 << 10
    };
    doctor(&dir.path().join("run.csv"), &dir.path().join("slow.csv"), |h, row| {
        if slowed(h, row) {
            for c in TIMES.iter().filter_map(|c| h.iter().position(|x| x == *c)) {
                if let Ok(v) = row[c].parse::<f64>() {
                    row[c] = (v * 1.3).to_string();
                }
            }
        }
        true
    });
    let o = sub(dir.path(), &["compare", "run.csv", "slow.csv"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));

    // The doctored points; those whose median interval is narrower than the slowdown (as good as
    // all of them) must be flagged whatever the t-test says on this noisy machine.
    let mut doctored = vec![];
    let mut rd = csv::Reader::from_path(dir.path().join("run.csv")).unwrap();
    let h = rd.headers().unwrap().clone();
    for rec in rd.records() {
        let row: Vec<String> = rec.unwrap().iter().map(str::to_string).collect();
        if slowed(&h, &row) {
            let ci = |c: &str| row[col(&h, c)].parse::<f64>().ok();
            let detectable = matches!((ci("ci95_lo_us"), ci("ci95_hi_us")), (Some(lo), Some(hi)) if hi < 1.3 * lo);
            doctored.push((row[col(&h, "placement")].clone(), row[col(&h, "size_bytes")].clone(), detectable));
        }
    }
    assert_eq!(doctored.len(), 10, "64K..1M, two placements");
    let row_of = |placement: &str, size: &str| {
        out.lines()
            .find(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 6 && f[0] == "all-reduce" && f[4] == placement && f[5] == size
            })
            .unwrap_or_else(|| panic!("no table row for {placement} {size}:\n{out}"))
    };
    for (placement, size, detectable) in &doctored {
        let line = row_of(placement, size);
        assert!(line.contains(" 1.300 ") && line.contains("+30.0%"), "{line}");
        if *detectable {
            assert!(line.contains(" REGRESSION "), "{line}\n{out}");
        }
    }
    // Only doctored points are named, each on its own line.
    let regressed: Vec<&str> = out.lines().filter(|l| l.starts_with("regressed: all-reduce mpi float sum ")).collect();
    assert_eq!(regressed.len(), out.lines().filter(|l| l.starts_with("regressed: ")).count(), "{out}");
    assert!(regressed.len() >= doctored.iter().filter(|d| d.2).count().max(5), "{out}");
    for l in &regressed {
        assert!(l.contains("(+30.0%;"), "{l}");
    }
    let summary = out.lines().last().unwrap();
    assert!(summary.contains(&format!(": {} regression", regressed.len())), "{summary}");

    // Below the threshold it is not a regression: --threshold 40.
    let o = sub(dir.path(), &["compare", "run.csv", "slow.csv", "--threshold", "40"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // The other way round it is an improvement.
    let o = sub(dir.path(), &["compare", "slow.csv", "run.csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains(&format!("0 regressions, {} improved", regressed.len())), "{}", stdout(&o));
}

#[test]
fn compare_of_different_runs_names_what_only_one_has() {
    let dir = workdir();
    let size = |h: &csv::StringRecord, row: &[String]| row[col(h, "size_bytes")].parse::<u64>().unwrap();
    // base: all-reduce up to 256 KiB only, and all-gather; new: all-reduce only, every size.
    doctor(&dir.path().join("run.csv"), &dir.path().join("base.csv"), |h, row| {
        row[col(h, "collective")] != "all-reduce" || size(h, row) <= 256 << 10
    });
    doctor(&dir.path().join("run.csv"), &dir.path().join("new.csv"), |h, row| {
        row[col(h, "collective")] == "all-reduce"
    });
    let o = sub(dir.path(), &["compare", "base.csv", "new.csv"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# only in base.csv: all-gather mpi float none out_of_place: 18 sizes (8 .. 1M)"), "{out}");
    assert!(out.contains("# only in base.csv: all-gather mpi float none in_place: 18 sizes (8 .. 1M)"), "{out}");
    assert!(out.contains("# only in new.csv: all-reduce mpi float sum out_of_place: 2 sizes (512K 1M)"), "{out}");
    assert!(out.contains("# only in new.csv: all-reduce mpi float sum in_place: 2 sizes (512K 1M)"), "{out}");
    let summary = out.lines().last().unwrap();
    assert!(summary.starts_with("compare: 32 points in common"), "{summary}");
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
        (&["compare", "run.csv"][..], "<NEW.csv>"),
        (&["compare", "run.csv", "missing.csv"][..], "cannot read 'missing.csv': no such file"),
        (&["compare", "notes.csv", "run.csv"][..], "'notes.csv' is not a coll-bench CSV"),
        (&["compare", "run.csv", "run.csv", "extra.csv"][..], "'extra.csv'"),
    ] {
        let o = sub(dir.path(), args);
        one_error_line(&o, needle);
        assert!(stderr(&o).contains(form), "{}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }
    one_error_line(&sub(dir.path(), &["compare", "run.csv", "run.csv", "--threshold", "-3"]), "--threshold");
    one_error_line(&sub(dir.path(), &["compare", "run.csv", "run.csv", "--alpha", "2"]), "--alpha");
}
