//! JSON, Markdown, per-rank rows, progress and --plot, from real runs under mpirun.
mod common;
use common::*;

#[test]
fn json_markdown_and_per_rank_rows() {
    let (o, dir) = mpirun(
        3,
        &[
            "all-reduce",
            "all-gather",
            "-b",
            "1K",
            "-e",
            "4K",
            "--per-rank",
            "--csv",
            "r.csv",
            "--json",
            "out/r.json",
            "--markdown",
            "r.md",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/r.json")).unwrap()).unwrap();
    assert_eq!(doc["schema"], "coll-bench/2");
    assert_eq!(doc["tool"], "coll-bench");
    assert_eq!(doc["complete"], true);
    // One vocabulary: the command line's names, hosts as objects, no hidden testing options.
    assert_eq!(doc["run"]["options"]["collectives"], serde_json::json!(["all-reduce", "all-gather"]));
    assert_eq!(doc["run"]["options"]["dtypes"], serde_json::json!(["float"]));
    assert_eq!(doc["run"]["hosts"][0]["ranks"], serde_json::json!([0, 1, 2]));
    assert!(doc["run"]["hosts"][0]["name"].is_string());
    assert!(!doc.to_string().contains("debug_"));
    assert_eq!(doc["points"][0]["collective"], "all-reduce");
    assert_eq!(doc["points"][0]["out_of_place"]["placement"], "out-of-place");
    assert_eq!(doc["run"]["ranks"], 3);
    assert_eq!(doc["run"]["options"]["collectives"].as_array().unwrap().len(), 2);
    assert!(doc["run"]["backend_details"][0].as_str().unwrap().contains("MPI library"));
    let lib = doc["run"]["mpi_library"].as_str().unwrap();
    assert!(lib.contains(if FAMILY == "mpich" { "MPICH" } else { "Open MPI" }), "mpi_library {lib:?}");
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2 * 3);
    let m = &points[0]["out_of_place"];
    assert_eq!(m["per_rank_us"].as_array().unwrap().len(), 3);
    assert!(m["summary"]["median_us"].as_f64().unwrap() > 0.0);
    assert_eq!(m["wrong"], 0);
    assert_eq!(doc["totals"]["wrong"], 0);
    // Never a dump of the environment.
    let text = doc.to_string();
    assert!(!text.contains("OMPI_") && !text.contains("PATH"), "environment leaked");

    let md = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    assert!(md.contains("## all-reduce (float sum)") && md.contains("## all-gather (float)"));
    // all-gather on 3 ranks: 1 KiB is 85 floats a rank, rounded down to whole 16 bytes as in
    // nccl-tests: 3 × 84 floats = 1008 B.
    assert_eq!(md.lines().filter(|l| l.starts_with("| 1024 |")).count(), 1);
    assert_eq!(md.lines().filter(|l| l.starts_with("| 1008 | 84 |")).count(), 1);

    let mut rd = csv::Reader::from_path(dir.path().join("r.csv")).unwrap();
    let rank_col = rd.headers().unwrap().iter().position(|h| h == "rank").unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    // 2 collectives × 3 sizes × 2 placements × (combined + 3 ranks)
    assert_eq!(rows.len(), 2 * 3 * 2 * 4);
    let ranks: Vec<&str> = rows.iter().take(4).map(|r| r.get(rank_col).unwrap()).collect();
    assert_eq!(ranks, ["", "0", "1", "2"]);

    // One vocabulary (issue 26): the JSON's keys are the CSV's column names, with the CSV's
    // values — `none` and -1, never `null` — for the first point's out-of-place row.
    let head = rd.headers().unwrap().clone();
    let col = |name: &str| rows[0].get(head.iter().position(|h| h == name).unwrap()).unwrap().to_string();
    let p = &points[0];
    let m = &p["out_of_place"];
    for (key, json) in [
        ("count_elements", &p["count_elements"]),
        ("size_bytes", &p["size_bytes"]),
        ("root", &p["root"]),
        ("batch_iters", &m["batch_iters"]),
        ("out_of_bounds_bytes", &m["out_of_bounds_bytes"]),
        ("outlier_samples", &m["summary"]["outlier_samples"]),
        ("iters", &m["iters"]),
        ("warmup_iters", &m["warmup_iters"]),
    ] {
        assert!(json.is_i64() || json.is_u64(), "{key}: {json} in {p}");
        assert_eq!(json.to_string(), col(key), "JSON {key} and the CSV's column");
    }
    assert_eq!(p["op"], col("op"));
    let ag = points.iter().find(|p| p["collective"] == "all-gather").unwrap();
    assert_eq!((ag["op"].as_str(), ag["root"].as_i64()), (Some("none"), Some(-1)), "{ag}");
    assert_eq!(doc["totals"]["out_of_bounds_bytes"], 0);
}

#[test]
fn bad_report_paths_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(dir.path(), 2, &["-e", "1K", "--no-csv", "--json", "/proc/nope/r.json"], 120);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--json: cannot write '/proc/nope/r.json'"), "{err}");
    assert!(stdout(&o).is_empty());
}

#[test]
fn progress_goes_to_stderr_only_when_asked() {
    // Under mpirun a rank's stderr is a pipe: no bar unless asked for.
    let (o, _d) = mpirun(2, &["all-reduce", "-e", "64K", "--no-csv"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let (o, _d) = mpirun(2, &["all-reduce", "-e", "64K", "--no-csv", "--progress"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("14/14 points"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("/14 points"), "the bar leaked into the table");
    assert_eq!(rows(&o).len(), 14);
}

#[test]
fn plot_at_the_end_of_a_sweep() {
    let (o, dir) = mpirun(2, &["all-reduce", "-e", "64K", "--csv", "r.csv", "--plot", "out/r.svg"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = std::fs::read_to_string(dir.path().join("out/r.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("all-reduce"), "{}", &svg[..svg.len().min(300)]);
    for (args, needle) in [
        (&["-e", "1K", "--csv", "r.csv", "--plot", "r.gif"][..], "--plot: unknown image type '.gif'"),
        (&["-e", "1K", "--no-csv", "--plot", "r.svg"][..], "--plot draws the run's CSV"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let o = mpirun_in(d.path(), 2, args, 60);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{needle}: {err}");
        assert!(files(d.path()).is_empty());
    }
}

/// `ARGS…` of coll-bench as one process (an MPI singleton, no launcher) inside a real
/// pseudo-terminal (`script` from util-linux), so stdout and stderr are the same terminal, as
/// for a person typing the command. Returns (exit code, everything the terminal received), or
/// None (with SKIPPED printed) where `script` is missing.
fn in_a_terminal(dir: &std::path::Path, args: &[&str]) -> Option<(Option<i32>, String)> {
    if !on_path("script") {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED: progress in a terminal: no `script` (util-linux) on the PATH");
        return None;
    }
    let quote = |a: &str| format!("'{}'", a.replace('\'', r"'\''"));
    // One rank on purpose (`--one-rank`): a run without a launcher is refused otherwise.
    let cmd: Vec<String> = [BIN, "--one-rank"].into_iter().chain(args.iter().copied()).map(quote).collect();
    let o = std::process::Command::new("timeout")
        .args(["--kill-after=5", "300", "script", "-qec", &cmd.join(" "), "/dev/null"])
        .env("TERM", "xterm")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .current_dir(dir)
        .output()
        .expect("script runs");
    Some((o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned()))
}

/// What the terminal shows, line by line: what is left of each line after carriage returns
/// (the bar redraws itself over its own line), without escape sequences.
fn screen_lines(raw: &str) -> Vec<String> {
    raw.split('\n')
        .map(|l| {
            let l = l.strip_suffix('\r').unwrap_or(l);
            let last = l.rsplit('\r').next().unwrap_or("");
            let mut out = String::new();
            let mut chars = last.chars();
            while let Some(c) = chars.next() {
                if c == '\x1b' {
                    // CSI: ESC [ parameters, then one final letter.
                    if chars.next() == Some('[') {
                        for c in chars.by_ref() {
                            if c.is_ascii_alphabetic() {
                                break;
                            }
                        }
                    }
                } else {
                    out.push(c);
                }
            }
            out
        })
        .collect()
}

#[test]
fn progress_in_a_terminal_never_splits_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let Some((code, raw)) = in_a_terminal(dir.path(), &["all-reduce", "-e", "64K", "--no-csv"]) else { return };
    assert_eq!(code, Some(0), "{raw}");
    // The bar was drawn (stderr is the terminal), more than once, between the rows.
    assert!(raw.matches("/14 points").count() >= 2, "no bar drawn:\n{raw}");
    let lines = screen_lines(&raw);
    let table: Vec<&String> = lines.iter().filter(|l| l.contains(" float ")).filter(|l| !l.starts_with('#')).collect();
    assert_eq!(table.len(), 14, "every row once, whole:\n{}", lines.join("\n"));
    for l in &table {
        assert_eq!(l.split_whitespace().count(), 13, "a row split or joined with the bar: {l:?}");
        assert!(!l.contains("points") && !l.contains("ETA"), "the bar and a row share a line: {l:?}");
    }
    assert!(lines.iter().all(|l| !(l.contains("ETA") && l.contains(" float "))), "{}", lines.join("\n"));
}

#[test]
fn check_in_a_terminal_reports_each_rule_as_it_finishes_without_tearing() {
    let dir = tempfile::tempdir().unwrap();
    // One process (no launcher): bus bandwidth is 0 on one rank, so both rules judge time.
    std::fs::write(
        dir.path().join("spec.toml"),
        "[settings]\nrepeats = 2\nbudget = \"5ms\"\n\n[[rule]]\nname = \"bandwidth\"\ncollective = \"all-reduce\"\n\
         sizes = \"64K..256K\"\nmax_time_us = 1000000.0\n\n[[rule]]\nname = \"latency\"\n\
         collective = \"all-gather\"\nsizes = \"8..1K\"\nmax_time_us = 1000000.0\n",
    )
    .unwrap();
    let Some((code, raw)) = in_a_terminal(dir.path(), &["check", "spec.toml", "--progress"]) else { return };
    assert_eq!(code, Some(0), "{raw}");
    assert!(raw.contains(" points"), "no bar drawn:\n{raw}");
    let lines = screen_lines(&raw);
    let done: Vec<&String> = lines.iter().filter(|l| l.starts_with("# rule '")).collect();
    assert_eq!(done.len(), 2, "one line per rule:\n{}", lines.join("\n"));
    for (l, name) in done.iter().zip(["bandwidth", "latency"]) {
        assert!(
            l.starts_with(&format!("# rule '{name}' (line ")) && l.contains("): PASS (2 of 2 checks passed) in "),
            "{l}"
        );
    }
    // Each as the rule finished: before the verdict table.
    let table = lines.iter().position(|l| l.starts_with("# rule ") && l.contains("collective")).expect("verdict table");
    assert!(lines.iter().position(|l| l == done[1]).unwrap() < table);
    for l in lines.iter().filter(|l| l.ends_with("PASS") || l.starts_with("# rule")) {
        assert!(!l.contains("points") && !l.contains("ETA"), "the bar and a line share a line: {l:?}");
    }
}
