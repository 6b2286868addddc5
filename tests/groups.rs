//! `--groups LAYOUT` on one host under the real launcher (both MPI families): every collective
//! exact in groups (all at once and one at a time), the header's groups, the CSV's group columns
//! and `--per-group` rows, a corrupted group caught by the check, and bad layouts refused with
//! one line and exit 2 before anything is measured. The two-host layouts (`node`, `rail`) are in
//! tests/multihost.rs.
mod common;
use common::*;
use std::process::Output;

/// The header's group lines (`#   group   0: ranks 0,2 on vm`), without the host part.
fn group_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with("#   group "))
        .map(|l| l.split(" on ").next().unwrap().trim_start_matches("#   group ").trim().to_string())
        .collect()
}

fn exact(o: &Output) -> String {
    let out = stdout(o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(o));
    assert!(out.contains("# Out of bounds values : 0 OK"), "{out}");
    assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
    let rows = rows(o);
    assert!(!rows.is_empty(), "{out}");
    // all-to-all-v is measured out of place only: "-" in its in-place columns.
    assert!(rows.iter().all(|r| r[8] == "0" && (r[12] == "0" || (r[9] == "-" && r[12] == "-"))), "{out}");
    out
}

/// Sizes 8, 64, 512: below 2744 B, where MPICH 4.0 would refuse an in-place reduce at root 1.
const ALL: [&str; 11] = ["all", "-d", "int32,float", "-b", "8", "-e", "2K", "-f", "8", "-n", "2"];

#[test]
fn every_collective_is_exact_in_groups_all_at_once() {
    // Root 1 counts within each group of 2 (world ranks 1 and 3 for split=div:2).
    for (layout, want) in [
        ("split=div:2", vec!["0: ranks 0-1", "1: ranks 2-3"]),
        ("split=mod:2", vec!["0: ranks 0,2", "1: ranks 1,3"]),
        ("tp=2,dp=2", vec!["0: ranks 0-1", "1: ranks 2-3"]),
        ("tp=2,dp=2:dp", vec!["0: ranks 0,2", "1: ranks 1,3"]),
        ("tp=2,dp=*,order=dp-tp-cp-ep-pp:tp", vec!["0: ranks 0,2", "1: ranks 1,3"]),
    ] {
        let (o, _d) = mpirun(4, &[&ALL[..], &["-w", "1", "-r", "1", "--no-csv", "--groups", layout]].concat());
        let out = exact(&o);
        assert!(
            out.contains(&format!(
                "# groups: {layout} — 2 group(s) of 2 rank(s), all at the same time; root and bus factor count within each group\n"
            )),
            "{layout}:\n{out}"
        );
        assert_eq!(group_lines(&out), want, "{layout}:\n{out}");
        // Rooted collectives show the root as given (within each group).
        assert!(rows(&o).iter().any(|r| r[4] == "1"), "{out}");
    }
}

#[test]
fn groups_of_one_and_of_the_whole_world_are_exact() {
    // rail on one host: every rank is its own group; split=mod:1: one group of every rank, made
    // by MPI_Comm_split (not the world's communicator).
    for (layout, want) in
        [("rail", vec!["0: ranks 0", "1: ranks 1", "2: ranks 2"]), ("split=mod:1", vec!["0: ranks 0-2"])]
    {
        let (o, _d) = mpirun(3, &[&ALL[..], &["--no-csv", "--groups", layout]].concat());
        let out = exact(&o);
        assert_eq!(group_lines(&out), want, "{layout}:\n{out}");
    }
}

#[test]
fn one_group_at_a_time_is_exact_and_says_so() {
    let (o, d) = mpirun(
        4,
        &[&ALL[..], &["--groups", "split=mod:2", "--one-group-at-a-time", "--per-group", "--csv", "g.csv"]].concat(),
    );
    let out = exact(&o);
    assert!(out.contains("2 group(s) of 2 rank(s), one at a time;"), "{out}");
    let mut rd = csv::Reader::from_path(d.path().join("g.csv")).unwrap();
    let header = rd.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|c| c == name).unwrap_or_else(|| panic!("no column {name}"));
    // The group columns come after the columns before them, in this order (then the heap's).
    let n = header.iter().position(|c| c == "group").unwrap() + 1;
    assert_eq!(
        (&header[n - 4], &header[n - 3], &header[n - 2], &header[n - 1]),
        ("groups", "group_size", "group_count", "group")
    );
    let recs: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let combined: Vec<&csv::StringRecord> = recs.iter().filter(|r| r[col("group")].is_empty()).collect();
    let per_group: Vec<&csv::StringRecord> = recs.iter().filter(|r| !r[col("group")].is_empty()).collect();
    assert_eq!(per_group.len(), 2 * combined.len(), "one row per group after each combined row");
    for r in &recs {
        assert_eq!((&r[col("groups")], &r[col("group_size")], &r[col("group_count")]), ("split=mod:2", "2", "2"));
    }
    // The bus factor is the group's: all-reduce on 2 ranks is 2(n-1)/n = 1.
    let ar = combined.iter().find(|r| &r[col("collective")] == "all-reduce").unwrap();
    assert_eq!(ar[col("bus_factor")].parse::<f64>().unwrap(), 1.0);
    // A per-group row's time is its own, with the bandwidth it implies.
    for r in &per_group {
        let t: f64 = r[col("time_us")].parse().unwrap();
        assert!(t >= 0.0 && r[col("median_us")].is_empty(), "{r:?}");
        assert!(["0", "1"].contains(&&r[col("group")]), "{r:?}");
    }
}

#[test]
fn the_check_runs_within_each_group_and_can_fail() {
    // World rank 3 corrupts one element of its output: wrong data, exit 1.
    let (o, _d) = mpirun(
        4,
        &[
            "all-reduce",
            "-b",
            "64",
            "-e",
            "64",
            "-n",
            "2",
            "--no-csv",
            "--groups",
            "tp=2,dp=2",
            "--debug-corrupt-rank",
            "3",
        ],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{}", stderr(&o));
    assert!(out.contains("# Wrong elements       : 2 FAILED"), "{out}");
}

#[test]
fn world_is_the_default_and_prints_no_groups() {
    let (o, _d) = mpirun(2, &["all-reduce", "-b", "64", "-e", "64", "-n", "2", "--groups", "world", "--csv", "w.csv"]);
    let out = exact(&o);
    assert!(!out.contains("# groups:"), "{out}");
    let (o, d) = mpirun(2, &["all-reduce", "-b", "64", "-e", "64", "-n", "2", "--csv", "w.csv"]);
    exact(&o);
    let mut rd = csv::Reader::from_path(d.path().join("w.csv")).unwrap();
    let header = rd.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|c| c == name).unwrap();
    for r in rd.records() {
        let r = r.unwrap();
        assert_eq!(
            (&r[col("groups")], &r[col("group_size")], &r[col("group_count")], &r[col("group")]),
            ("world", "2", "1", "")
        );
    }
}

/// Exit 2, one line on stderr containing `needle`, no table, no file.
fn refused(n: usize, args: &[&str], needle: &str) {
    let (o, d) = mpirun(n, &[args, &["--csv", "r.csv"]].concat());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}\n{err}", stdout(&o));
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(lines[0].contains(needle), "{args:?}: {}", lines[0]);
    assert!(!err.contains("panicked"), "{err}");
    assert!(!stdout(&o).contains("# Collective"), "{args:?}: measured anyway");
    assert!(!d.path().join("r.csv").exists(), "{args:?}: left a file");
}

#[test]
fn bad_layouts_are_one_line_and_exit_2() {
    let base = ["all-reduce", "-b", "64", "-e", "64", "-n", "2", "--groups"];
    refused(
        4,
        &[&base[..], &["tp=3,dp=*"]].concat(),
        "--groups tp=3,dp=*: the other sizes multiply to 3, which does not divide the 4 ranks",
    );
    refused(4, &[&base[..], &["tp=2,dp=3"]].concat(), "the sizes multiply to 6, not to the 4 ranks");
    refused(4, &[&base[..], &["tp=2,xp=2"]].concat(), "--groups \"tp=2,xp=2\": no dimension \"xp\"");
    refused(4, &[&base[..], &["tp=2,dp=2:pp"]].concat(), ":pp names a dimension the layout does not give");
    refused(4, &[&base[..], &["split=div:3"]].concat(), "its groups would have unequal sizes (3 and 1 ranks)");
    refused(4, &[&base[..], &["split=xor:2"]].concat(), "split kind \"xor\" is not mod or div");
    refused(4, &[&base[..], &["planet"]].concat(), "accepted: world, node, rail");
    refused(
        4,
        &["broadcast", "-b", "64", "-e", "64", "-n", "2", "-r", "2", "--groups", "split=mod:2"],
        "-r/--root: 2 is not a rank of each group",
    );
}
