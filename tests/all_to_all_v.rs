//! all-to-all-v under a real launcher: every pattern exact on 1 to 8 ranks, a rank that sends
//! nothing and one that receives nothing, the pattern and its imbalance in the header, the CSV
//! and the JSON, out of place only.
mod common;
use common::*;

/// An n×n matrix file (bytes, row = sender): rank 1 sends nothing, rank 2 receives nothing,
/// blocks that are not whole 16-byte units.
fn matrix_file(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let mut text = String::new();
    for i in 0..n {
        let row: Vec<String> =
            (0..n).map(|j| if i == 1 % n || j == 2 % n { 0 } else { 1000 + 16 * i + 7 * j }.to_string()).collect();
        text.push_str(&row.join(" "));
        text.push('\n');
    }
    let p = dir.join("traffic.txt");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn every_pattern_is_exact_on_1_to_8_ranks() {
    for n in [1, 2, 3, 4, 8] {
        // Under MPICH with more ranks than cores every call busy-waits for its turn: 8 ranks
        // there run the skewed patterns only.
        let dir = tempfile::tempdir().unwrap();
        let matrix = format!("matrix={}", matrix_file(dir.path(), n).display());
        let mut patterns = vec!["moe:experts=8,topk=2,skew=1.5,capacity=1.25,seed=3", matrix.as_str()];
        if !(oversubscribed_mpich(n) && n > 4) {
            patterns.extend(["uniform", "spread=0.5", "spread=1", "moe:experts=3,topk=1,skew=0,seed=1"]);
        }
        for pattern in patterns {
            let sizes: &[&str] = if pattern.starts_with("matrix=") {
                &["-b", "16K", "-e", "16K"]
            } else {
                &["-b", "8", "-e", "64K", "-f", "32"]
            };
            let mut args = vec!["all-to-all-v", "--pattern", pattern, "-d", "int32,float64", "-n", "2", "-w", "1"];
            args.extend(sizes);
            args.extend(["--no-ceiling", "--csv", "run.csv", "--json", "run.json"]);
            let o = mpirun_in(dir.path(), n, &args, 600);
            let out = stdout(&o);
            assert_eq!(o.status.code(), Some(0), "{n} ranks, {pattern}:\n{out}\n{}", stderr(&o));
            assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
            assert!(out.contains("# Out of bounds values : 0 OK"), "{out}");
            assert!(out.contains(&format!("# pattern: {pattern}")), "{out}");
            let rows = csv_rows(&dir.path().join("run.csv"));
            let want_rows = if pattern.starts_with("matrix=") { 2 } else { 2 * 3 };
            assert_eq!(rows.len(), want_rows, "{pattern}: out of place only");
            for r in &rows {
                assert_eq!(r["collective"], "all-to-all-v");
                assert_eq!(r["placement"], "out-of-place");
                assert_eq!((r["wrong"].as_str(), r["out_of_bounds_bytes"].as_str()), ("0", "0"), "{r:?}");
                assert_eq!(r["pattern"], pattern);
                let sent: f64 = r["imbalance_sent"].parse().unwrap();
                let received: f64 = r["imbalance_received"].parse().unwrap();
                assert!(sent >= 1.0 && received >= 1.0, "{r:?}");
            }
            if pattern.starts_with("moe:experts=8") && n == 4 {
                // Experts 0 and 1, the hottest under Zipf 1.5, both live on rank 0.
                let received: f64 = rows.last().unwrap()["imbalance_received"].parse().unwrap();
                assert!(received >= 2.0, "{rows:?}");
                assert!(rows.last().unwrap()["dropped_pct"].parse::<f64>().unwrap() > 0.0, "{rows:?}");
            }
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
            let p = &json["points"][0];
            assert_eq!(p["pattern"], pattern);
            assert!(p["in_place"].is_null(), "{p}");
            assert_eq!(json["run"]["options"]["patterns"][0], pattern);
            for f in ["run.csv", "run.json"] {
                std::fs::remove_file(dir.path().join(f)).unwrap();
            }
        }
    }
}

/// A list of skews: a series per skew in one run, each its own block of the table and its own
/// rows, the imbalance growing with the skew.
#[test]
fn a_list_of_skews_runs_a_series_each() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "all-to-all-v",
        "--pattern",
        "moe:experts=8,topk=2,skew=0,0.75,1.5",
        "-b",
        "4K",
        "-e",
        "64K",
        "-f",
        "4",
        "-n",
        "2",
        "-w",
        "1",
        "--no-ceiling",
        "--csv",
        "run.csv",
        "--order",
        "size",
    ];
    let o = mpirun_in(dir.path(), 4, &args, 300);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let skews = ["0", "0.75", "1.5"];
    for z in skews {
        let p = format!("moe:experts=8,topk=2,skew={z},seed=1");
        assert!(out.contains(&format!("# pattern: {p} (all-to-all-v; ")), "{out}");
        assert_eq!(out.matches(&format!("# Collective: all-to-all-v  pattern: {p}\n")).count(), 1, "{out}");
    }
    let rows = csv_rows(&dir.path().join("run.csv"));
    assert_eq!(rows.len(), 3 * 3, "3 skews × 3 sizes, out of place");
    let at_64k: Vec<f64> = skews
        .iter()
        .map(|z| {
            let p = format!("moe:experts=8,topk=2,skew={z},seed=1");
            let r = rows.iter().find(|r| r["pattern"] == p && r["size_bytes"] == "65536").unwrap();
            r["imbalance_received"].parse().unwrap()
        })
        .collect();
    assert!(at_64k[0] < at_64k[1] && at_64k[1] < at_64k[2] && at_64k[2] >= 2.0, "{at_64k:?}");

    // `plot --x-axis imbalance`: one line per size (the skews joined), a point per skew, on both
    // panels; a CSV without all-to-all-v is refused in one line, and no image is written.
    let plot = |csv: &str, svg: &str| {
        std::process::Command::new(BIN)
            .args(["plot", csv, "-o", svg, "--x-axis", "imbalance"])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let o = plot("run.csv", "skew.svg");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("(3 series, out-of-place only, mean time per call, against imbalance)"),
        "{}",
        stdout(&o)
    );
    let svg = std::fs::read_to_string(dir.path().join("skew.svg")).unwrap();
    assert_eq!(
        svg.matches("imbalance: bytes of the busiest rank over the mean").count(),
        2,
        "an imbalance axis on each panel"
    );
    for size in ["4K", "16K", "64K"] {
        assert!(svg.contains(&format!("all-to-all-v(moe:experts=8,topk=2,seed=1) at {size}")), "{size}: {svg}");
    }
    // 3 series × 3 skews on each of the 2 panels, and one in the legend per series.
    assert_eq!(svg.matches("<circle").count(), 3 * 3 * 2 + 3, "{svg}");
    let o = mpirun_in(dir.path(), 2, &["all-reduce", "-b", "8", "-e", "64", "-n", "2", "--csv", "ar.csv"], 120);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = plot("ar.csv", "ar.svg");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--x-axis imbalance: no all-to-all-v measurement with an imbalance in ar.csv"), "{err}");
    assert!(!dir.path().join("ar.svg").exists());
}

/// A pattern's bad values, a matrix that is not square, negative or smaller than the ranks, and
/// a pattern without all-to-all-v: one line naming the flag, exit 2, before anything is measured
/// or any file made.
#[test]
fn bad_patterns_are_refused_before_anything_runs() {
    let matrices = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = matrices.path().join(name);
        std::fs::write(&p, text).unwrap();
        format!("matrix={}", p.display())
    };
    let ragged = write("ragged.txt", "16 32\n48\n");
    let negative = write("negative.txt", "16 -32\n48 64\n");
    let small = write("small.txt", "16 32 48\n16 32 48\n16 32 48\n");
    let absent = format!("matrix={}", matrices.path().join("absent.txt").display());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--pattern", "moe:experts=8,topk=2,skew=-1"], "--pattern: 'moe:experts=8,topk=2,skew=-1' has a skew"),
        (vec!["--pattern", "moe:experts=4,topk=5"], "routes each token to topk=5 of only 4 experts"),
        (vec!["--pattern", "moe:experts=8,topk=2,capacity=0"], "has a capacity that is not a number above 0"),
        (vec!["--pattern", "spread=2"], "spread that is not a number from 0 to 1"),
        (vec!["--pattern", &ragged], "is not square"),
        (vec!["--pattern", &negative], "is negative"),
        (vec!["--pattern", &absent], "cannot read it"),
        (vec!["--pattern", &small, "-b", "1K", "-e", "1K"], "3x3, smaller than the 4 ranks"),
        (vec!["--pattern", &small, "-b", "64", "-e", "1K"], "expected -b/--minbytes equal to -e/--maxbytes"),
        (vec!["--pattern", &small, "-b", "64", "-e", "64"], "has a rank that moves"),
    ];
    for (extra, needle) in cases {
        let dir = tempfile::tempdir().unwrap();
        let n = if needle.contains("ranks that run it") || needle.contains("4 ranks") { 4 } else { 3 };
        let mut args = vec!["all-to-all-v"];
        args.extend(extra.iter().copied());
        args.extend(["--csv", "run.csv", "--json", "run.json"]);
        let o = mpirun_in(dir.path(), n, &args, 120);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(
            lines[0].starts_with("coll-bench: error: ") && lines[0].contains(needle),
            "{args:?}: {needle:?} not in {err}"
        );
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
        assert!(files(dir.path()).is_empty(), "{args:?}: left {:?}", files(dir.path()));
    }
    // One matrix file at a time.
    let dir = tempfile::tempdir().unwrap();
    let args =
        ["all-to-all-v", "--pattern", "moe:experts=4,topk=1,skew=0,1", "--write-matrix", "m.txt", "--csv", "run.csv"];
    let o = mpirun_in(dir.path(), 2, &args, 120);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--write-matrix: writes one pattern's matrix"), "{}", stderr(&o));
    assert!(files(dir.path()).is_empty());
    // A pattern shapes all-to-all-v only.
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(dir.path(), 2, &["all-reduce", "--pattern", "spread=1", "--csv", "run.csv"], 120);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--pattern: 'spread=1' shapes all-to-all-v only"), "{}", stderr(&o));
    assert!(files(dir.path()).is_empty());
}

/// A matrix "file" that is not one, or is huge, or holds counts whose sums pass 2^64 or MPI's
/// 32-bit counts (issue 65): one line naming `--pattern matrix` and the file, exit 2, quickly
/// (the file is never read past its cap, nor a device or FIFO at all), a bad value quoted short.
#[test]
fn bad_matrix_files_are_refused_quickly_by_name() {
    let matrices = tempfile::tempdir().unwrap();
    let m = matrices.path();
    let write = |name: &str, text: &[u8]| {
        std::fs::write(m.join(name), text).unwrap();
        format!("matrix={}", m.join(name).display())
    };
    let fifo = m.join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = format!("matrix={}", fifo.display());
    let dir = format!("matrix={}", m.display());
    // Past the 16 MiB cap: refused after reading 16 MiB + 1 byte, whatever the file's size.
    let mut huge = vec![b'1'; (16 << 20) + 10];
    huge.extend(b" 16\n16 16\n");
    let huge = write("huge.txt", &huge);
    // A long number within the cap: quoted by its first characters only.
    let mut long = vec![b'7'; 1 << 20];
    long.extend(b" 16\n16 16\n");
    let long = write("long.txt", &long);
    let max =
        write("max.txt", b"18446744073709551615 18446744073709551615\n18446744073709551615 18446744073709551615\n");
    let wraps = write("wraps.txt", b"18446744073709551600 32\n32 18446744073709551600\n");
    let fraction = write("fraction.txt", b"16.5 16\n16 16\n");
    // 2^33 bytes from rank 0 to itself: 2^31 floats, one past MPI's int count.
    let mpi_count = write("count.txt", b"8589934592 0\n0 16\n");
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        ("/dev/zero", vec!["--pattern", "matrix=/dev/zero", "-b", "1K", "-e", "1K"], "--pattern matrix=/dev/zero: is a device, not a regular file"),
        ("fifo", vec!["--pattern", &fifo, "-b", "1K", "-e", "1K"], "is a FIFO, not a regular file"),
        ("directory", vec!["--pattern", &dir, "-b", "1K", "-e", "1K"], "is a directory, not a regular file"),
        ("huge", vec!["--pattern", &huge, "-b", "1K", "-e", "1K"], "is larger than 16 MiB; expected a matrix file of at most 16 MiB"),
        ("long", vec!["--pattern", &long, "-b", "1K", "-e", "1K"], "'77777777777777777777777777777777…' (column 1) is larger than 18446744073709551615"),
        ("max", vec!["--pattern", &max, "-b", "8K", "-e", "8K"], "max.txt: row 1 sums to more than 18446744073709551615 bytes"),
        ("wraps", vec!["--pattern", &wraps, "-b", "8K", "-e", "8K"], "wraps.txt: row 1 sums to more than 18446744073709551615 bytes"),
        ("fraction", vec!["--pattern", &fraction, "-b", "1K", "-e", "1K"], "'16.5' (column 1) is not a whole number of bytes"),
        ("count", vec!["--pattern", &mpi_count, "-b", "8G", "-e", "8G"], "count.txt: rank 0 sends 2147483648 float elements (8589934592 bytes), past the 2147483647 of MPI's 32-bit counts"),
    ];
    for (name, extra, needle) in cases {
        let run = tempfile::tempdir().unwrap();
        let mut args = vec!["all-to-all-v"];
        args.extend(extra);
        args.extend(["--csv", "run.csv"]);
        let t0 = std::time::Instant::now();
        let o = mpirun_in(run.path(), 2, &args, 30);
        let took = t0.elapsed().as_secs_f64();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{name}: {err}");
        assert!(
            lines[0].starts_with("coll-bench: error: --pattern matrix") && lines[0].contains(needle),
            "{name}: {needle:?} not in {err}"
        );
        assert!(lines[0].len() < 400, "{name}: a line of {} bytes", lines[0].len());
        assert!(!lines[0].contains("-e/--maxbytes"), "{name}: blames -e: {err}");
        assert!(stdout(&o).is_empty() && files(run.path()).is_empty(), "{name}: {}", stdout(&o));
        // The launcher's start-up aside, nothing here takes long: no file is read past 16 MiB.
        assert!(took < 15.0, "{name}: took {took:.1} s");
    }
}

/// `--write-matrix` writes nccl-tests' format before measuring; `--pattern matrix=` reads it
/// back to the same traffic; it never replaces a file, nor writes over its own input.
#[test]
fn a_written_matrix_replays_the_same_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let pattern = "moe:experts=8,topk=2,skew=1.5,seed=2";
    let args = ["all-to-all-v", "--pattern", pattern, "-b", "64K", "-e", "64K", "-n", "2", "-w", "1", "--no-ceiling"];
    let first: Vec<&str> = args.iter().copied().chain(["--csv", "a.csv", "--write-matrix", "m.txt"]).collect();
    let o = mpirun_in(dir.path(), 4, &first, 300);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("m.txt")).unwrap();
    let m: Vec<Vec<u64>> = text.lines().map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect()).collect();
    assert_eq!((m.len(), m[0].len()), (4, 4), "{text}");
    assert!(m.iter().flatten().all(|b| b % 16 == 0), "{text}");
    let busiest = (0..4).map(|r| m[r].iter().sum::<u64>().max((0..4).map(|i| m[i][r]).sum())).max().unwrap();
    let size = busiest.to_string();
    let replay = [
        "all-to-all-v",
        "--pattern",
        "matrix=m.txt",
        "-b",
        &size,
        "-e",
        &size,
        "-n",
        "2",
        "-w",
        "1",
        "--no-ceiling",
        "--csv",
        "b.csv",
    ];
    let o = mpirun_in(dir.path(), 4, &replay, 300);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (a, b) = (&csv_rows(&dir.path().join("a.csv"))[0], &csv_rows(&dir.path().join("b.csv"))[0]);
    for col in ["imbalance_sent", "imbalance_received", "wrong", "algbw_gbps"] {
        if col == "algbw_gbps" {
            // The same busiest rank's bytes behind it: algbw × time agrees to rounding.
            let bytes = |r: &std::collections::HashMap<String, String>| {
                r["algbw_gbps"].parse::<f64>().unwrap() * r["time_us"].parse::<f64>().unwrap() * 1e3
            };
            assert!((bytes(a) - busiest as f64).abs() < 2.0 && (bytes(b) - busiest as f64).abs() < 2.0, "{a:?} {b:?}");
        } else {
            assert_eq!(a[col], b[col], "{col}");
        }
    }
    // The size: what was asked (the generated pattern), the file's mean row (the matrix).
    assert_eq!(a["size_bytes"], "65536");
    let mean = m.iter().flatten().sum::<u64>() / 4;
    assert_eq!(b["size_bytes"], mean.to_string());
    assert_eq!(b["pattern"], "matrix=m.txt");
    // Neither an existing file nor the input is written over.
    for (path, needle) in [("m.txt", "already exists"), ("a.csv", "already exists")] {
        let again: Vec<&str> = replay
            .iter()
            .copied()
            .filter(|a| *a != "b.csv" && *a != "--csv")
            .chain(["--no-csv", "--write-matrix", path])
            .collect();
        let o = mpirun_in(dir.path(), 4, &again, 120);
        assert_eq!(o.status.code(), Some(2), "{path}: {}", stderr(&o));
        assert!(stderr(&o).contains("--write-matrix") && stderr(&o).contains(needle), "{}", stderr(&o));
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("m.txt")).unwrap(), text);
}

/// A check rule carries all-to-all-v's pattern: its sweep runs that traffic (the CSV's rows say
/// so), and a matrix smaller than the ranks is refused before anything runs.
#[test]
fn a_check_rule_runs_its_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let spec = "[settings]\nrepeats = 1\nbudget = \"5ms\"\n\n[[rule]]\nname = \"moe\"\ncollective = \"all-to-all-v\"\n\
                pattern = \"moe:experts=8,topk=2,skew=1.5\"\nsizes = \"64K..64K\"\nmax_median_us = 1000000.0\n";
    std::fs::write(dir.path().join("s.toml"), spec).unwrap();
    let o = mpirun_in(dir.path(), 4, &["check", "s.toml", "--csv", "c.csv"], 300);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let rows = csv_rows(&dir.path().join("c.csv"));
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(
            (r["collective"].as_str(), r["pattern"].as_str()),
            ("all-to-all-v", "moe:experts=8,topk=2,skew=1.5,seed=1")
        );
        assert!(r["imbalance_received"].parse::<f64>().unwrap() >= 2.0, "{r:?}");
    }
    let small = dir.path().join("m.txt");
    std::fs::write(&small, "16 16\n16 16\n").unwrap();
    let spec = format!(
        "[[rule]]\nname = \"m\"\ncollective = \"all-to-all-v\"\npattern = \"matrix={}\"\nsizes = \"1K..1K\"\nmax_median_us = 1e6\n",
        small.display()
    );
    std::fs::write(dir.path().join("m.toml"), spec).unwrap();
    let o = mpirun_in(dir.path(), 4, &["check", "m.toml", "--csv", "m.csv"], 120);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("rule 'm': --pattern: the matrix in") && stderr(&o).contains("smaller than the 4 ranks"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("m.csv").exists());
}
