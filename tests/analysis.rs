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
    assert_eq!(doc["tool"], "coll-bench");
    assert_eq!(doc["complete"], true);
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
    // all-gather on 3 ranks: 1 KiB rounds down to 3 × 85 floats = 1020 B.
    assert_eq!(md.lines().filter(|l| l.starts_with("| 1024 |")).count(), 1);
    assert_eq!(md.lines().filter(|l| l.starts_with("| 1020 | 85 |")).count(), 1);

    let mut rd = csv::Reader::from_path(dir.path().join("r.csv")).unwrap();
    let rank_col = rd.headers().unwrap().iter().position(|h| h == "rank").unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    // 2 collectives × 3 sizes × 2 placements × (combined + 3 ranks)
    assert_eq!(rows.len(), 2 * 3 * 2 * 4);
    let ranks: Vec<&str> = rows.iter().take(4).map(|r| r.get(rank_col).unwrap()).collect();
    assert_eq!(ranks, ["", "0", "1", "2"]);
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
