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

/// `--per-rank` on 8 real ranks (oversubscribed: correctness only, issue 27): under each point
/// the table has, for each placement, the spread over the ranks and a line per host (its
/// min / median / max and its slowest rank), never a line per rank; the CSV keeps a row per rank
/// and the JSON every rank's time.
#[test]
fn per_rank_tables_summarise_by_host_and_the_files_keep_every_rank() {
    let (o, dir) = mpirun(
        8,
        &[
            "all-reduce",
            "-b",
            "1K",
            "-e",
            "4K",
            "-n",
            "5",
            "-w",
            "1",
            "--per-rank",
            "--csv",
            "r.csv",
            "--json",
            "r.json",
        ],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    let body: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("# Collective")).collect();
    for placement in ["out-of-place", "in-place"] {
        let spread: Vec<&&str> =
            body.iter().filter(|l| l.starts_with(&format!("#  per rank, {placement}: "))).collect();
        assert_eq!(spread.len(), 3, "one line per point:\n{out}");
        assert!(spread.iter().all(|l| l.ends_with(" us (min / median / max) over 8 ranks on 1 host(s)")), "{out}");
    }
    let hosts: Vec<&&str> = body.iter().filter(|l| l.starts_with("#    ") && l.contains(" (ranks 0-7): ")).collect();
    assert_eq!(hosts.len(), 3 * 2, "a host line per point and placement:\n{out}");
    assert!(hosts.iter().all(|l| l.contains(" us, slowest rank ")), "{out}");
    // The only other per-rank lines name odd ranks (at most one a placement and point).
    let indented = body.iter().filter(|l| l.starts_with("#    ")).count();
    assert!(indented <= 3 * 2 * 2, "{out}");

    let mut rd = csv::Reader::from_path(dir.path().join("r.csv")).unwrap();
    let rank_col = rd.headers().unwrap().iter().position(|h| h == "rank").unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 3 * 2 * (1 + 8));
    let ranks: Vec<&str> = rows.iter().take(9).map(|r| r.get(rank_col).unwrap()).collect();
    assert_eq!(ranks, ["", "0", "1", "2", "3", "4", "5", "6", "7"]);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(doc["complete"], true);
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for p in points {
        assert_eq!(p["in_place"]["per_rank_us"].as_array().unwrap().len(), 8);
    }
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
    // Under mpirun, whole lines: after the first point, then every few seconds.
    assert!(stderr(&o).starts_with("coll-bench: progress 1/14 points, all-reduce 8 done, ETA "), "{}", stderr(&o));
    assert!(stderr(&o).lines().all(|l| l.starts_with("coll-bench: progress ")), "{}", stderr(&o));
    assert!(!stdout(&o).contains("/14 points"), "progress leaked into the table");
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
    // One rank on purpose (`--one-rank`): a run without a launcher is refused otherwise.
    command_in_a_terminal(dir, &[&[BIN, "--one-rank"][..], args].concat())
}

/// `mpirun -n N coll-bench ARGS…` inside a real pseudo-terminal: mpirun's stdout and stderr are
/// the terminal, each rank's are pipes to mpirun, as for a person launching a run by hand.
fn mpirun_in_a_terminal(dir: &std::path::Path, n: usize, args: &[&str]) -> Option<(Option<i32>, String)> {
    let n = n.to_string();
    command_in_a_terminal(dir, &[&launcher()[..], &["-n", n.as_str(), BIN], args].concat())
}

/// The command line `cmd` inside a real pseudo-terminal (`script` from util-linux); see
/// [`in_a_terminal`].
fn command_in_a_terminal(dir: &std::path::Path, cmd: &[&str]) -> Option<(Option<i32>, String)> {
    if !on_path("script") {
        say_skipped("command_in_a_terminal", "progress in a terminal: no `script` (util-linux) on the PATH");
        return None;
    }
    let quote = |a: &str| format!("'{}'", a.replace('\'', r"'\''"));
    let cmd: Vec<String> = cmd.iter().copied().map(quote).collect();
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

/// The screen a terminal shows after `raw`, row by row (trailing blanks trimmed): `raw` fed to a
/// terminal emulator (the `vt100` crate: cursor moves, erasures, carriage returns, wrapping at
/// the right margin), tall enough that nothing scrolls away.
fn emulated_screen(raw: &str, cols: u16) -> Vec<String> {
    let mut term = vt100::Parser::new(4000, cols, 0);
    term.process(raw.as_bytes());
    let rows: Vec<String> = term.screen().rows(0, cols).map(|r| r.trim_end().to_string()).collect();
    let used = rows.iter().rposition(|r| !r.is_empty()).map_or(0, |i| i + 1);
    rows[..used].to_vec()
}

/// `--progress` under mpirun, in a real terminal: rank 0's stdout (the table) and stderr (the
/// progress) reach the screen through two pipes that mpirun forwards in its own order, so
/// progress drawn in place tore 3 to 6 rows a run (`>   2/66 points  all-reduce 16 done  ETA 4s
/// 16   4   float   sum …`). Read back through a terminal emulator, every row is whole and no
/// progress text sits on a row's line.
#[test]
fn progress_under_mpirun_in_a_terminal_never_tears_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["all-reduce", "all-gather", "-b", "64", "-e", "1M", "--no-csv", "--progress"];
    let Some((code, raw)) = mpirun_in_a_terminal(dir.path(), 2, &args) else { return };
    assert_eq!(code, Some(0), "{raw}");
    // 15 sizes (64 B .. 1 MiB) of two collectives: progress after the first point at least.
    assert!(raw.contains("coll-bench: progress 1/30 points, "), "no progress shown:\n{raw}");
    let screen = emulated_screen(&raw, 200);
    let shown = screen.join("\n");
    // A row starts with its size; a row with progress text before it does not, and is missed.
    let sized = |l: &str| l.split_whitespace().next().is_some_and(|w| w.parse::<u64>().is_ok());
    let table: Vec<&String> = screen.iter().filter(|l| l.contains(" float ") && sized(l)).collect();
    assert_eq!(table.len(), 30, "every row once, whole:\n{shown}");
    for l in &table {
        // size count type redop root, then time algbw busbw #wrong for each placement, %ceil.
        assert_eq!(l.split_whitespace().count(), 14, "a row torn or joined with progress: {l:?}\n{shown}");
        assert!(!l.contains("points") && !l.contains("ETA") && !l.contains("progress"), "{l:?}\n{shown}");
    }
    // Progress lines are whole too: each alone on its row, from its start to its ETA.
    let progress: Vec<&String> = screen.iter().filter(|l| l.contains("ETA")).collect();
    assert!(!progress.is_empty(), "{shown}");
    for l in progress {
        let eta = l.rsplit("ETA ").next().unwrap_or("");
        assert!(
            l.starts_with("coll-bench: progress ")
                && l.matches("ETA").count() == 1
                && !eta.is_empty()
                && eta.chars().all(|c| c.is_ascii_digit() || c == 'm' || c == 's'),
            "{l:?}\n{shown}"
        );
    }
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
