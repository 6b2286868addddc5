//! `coll-bench pairs` under mpirun: a complete matrix in n−1 tournament rounds.
mod common;
use common::*;

#[test]
fn four_ranks_give_a_complete_matrix_in_three_rounds() {
    let (o, dir) = mpirun(4, &["pairs", "-e", "256K", "--budget", "5ms", "--csv", "m/pairs.csv"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("6 pairs in 3 tournament rounds"), "{out}");
    let mut rd = csv::Reader::from_path(dir.path().join("m/pairs.csv")).unwrap();
    assert_eq!(
        rd.headers().unwrap().iter().collect::<Vec<_>>(),
        [
            "rank_a",
            "rank_b",
            "host_a",
            "host_b",
            "round",
            "latency_us",
            "bandwidth_gbps",
            "latency_bytes",
            "bandwidth_bytes"
        ]
    );
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let mut pairs: Vec<(u32, u32)> = rows.iter().map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap())).collect();
    pairs.sort();
    assert_eq!(pairs, [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]);
    // A round at a time: the rows come grouped by round.
    let rounds: Vec<u32> = rows.iter().map(|r| r[4].parse().unwrap()).collect();
    assert!(rounds.windows(2).all(|w| w[0] <= w[1]), "{rounds:?}");
    for r in &rows {
        let lat: f64 = r[5].parse().unwrap();
        let bw: f64 = r[6].parse().unwrap();
        assert!(lat > 0.0 && bw > 0.0, "{r:?}");
        assert!(r[4].parse::<u32>().unwrap() < 3);
    }
    // What the numbers mean: units in the header, and whether any pair is abnormal.
    assert!(
        out.contains("; latency with 8-byte messages, bandwidth with 256K-byte messages (one way, ping-pong)"),
        "{out}"
    );
    assert!(out.contains("#  rank  rank  host -> host") && out.contains("latency (us)  bandwidth (GB/s)"), "{out}");
    assert!(
        out.contains("# None abnormal: no pair below half the median bandwidth of ")
            || out.contains("# Slow pairs (below half the median bandwidth of "),
        "{out}"
    );
    assert!(out.contains("# Hosts in the slowest pairs: "), "{out}");
    let abs = dir.path().canonicalize().unwrap().join("m/pairs.csv");
    assert!(out.ends_with(&format!("# Wrote {} (CSV)\n", abs.display())), "{out}");
}

/// Rank 0 writes each round's rows as the round ends (it holds one round, not the matrix): the
/// first round's rows are on disk while the later rounds are still being measured.
#[test]
fn the_csv_grows_a_round_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    // 3 rounds of about 1 s each (two measurements of 0.5 s a pair).
    let mut child = mpirun_cmd(4, 120)
        .args(["pairs", "-e", "64K", "--budget", "500ms", "--csv", "pairs.csv"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let path = dir.path().join("pairs.csv");
    let mut seen_while_running = vec![];
    while child.try_wait().unwrap().is_none() {
        let rows = std::fs::read_to_string(&path).map(|t| t.lines().count().saturating_sub(1)).unwrap_or(0);
        if child.try_wait().unwrap().is_none() && !seen_while_running.contains(&rows) {
            seen_while_running.push(rows);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Round 0's two rows (or rounds 0 and 1's four) were on disk before the job ended.
    assert!(seen_while_running.iter().any(|&rows| rows == 2 || rows == 4), "{seen_while_running:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 7);
}

#[test]
fn odd_rank_counts_and_sequential_mode() {
    let (o, _d) = mpirun(3, &["pairs", "-e", "64K", "--budget", "2ms", "--no-csv", "--sequential"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("3 pairs in 3 sequential runs"), "{}", stdout(&o));
    let (o, _d) = mpirun(3, &["pairs", "-e", "64K", "--budget", "2ms", "--no-csv"]);
    assert!(stdout(&o).contains("3 pairs in 3 tournament rounds"), "{}", stdout(&o));
}

#[test]
fn pairs_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (&["pairs", "-e", "0"][..], "pairs -e/--bandwidth-bytes"),
        (&["pairs", "--top", "0"][..], "pairs --top"),
        (&["pairs", "--bogus"][..], "--bogus"),
    ] {
        let o = mpirun_in(dir.path(), 2, args, 60);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert!(files(dir.path()).is_empty());
}

/// A full disk mid-run: rank 0 stops every rank before the next round (it does not measure to
/// the end for a file it cannot write), one line names the CSV and the error, exit 2, and the
/// CSV ends at its last whole row.
#[test]
fn a_full_disk_stops_the_rounds_and_leaves_whole_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    let Some(_disk) = small_disk("a_full_disk_stops_the_rounds_and_leaves_whole_rows", &mnt, "4k") else { return };
    // 16 ranks: 120 rows of about 50 B in 15 rounds, past the 4 KiB the disk holds.
    let o = mpirun_in(dir.path(), 16, &["pairs", "-e", "4K", "--budget", "1ms", "--csv", "small/pairs.csv"], 120);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("coll-bench: ")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("small/pairs.csv") && lines[0].contains("No space left on device"), "{err}");
    assert!(!stdout(&o).contains("# Took"), "{}", stdout(&o));
    let csv = std::fs::read_to_string(mnt.join("pairs.csv")).unwrap();
    assert!(csv.ends_with('\n'), "cut-off row: {csv}");
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows.len() > 1 && rows.len() < 121, "{} rows", rows.len());
    assert!(rows.iter().all(|l| l.split(',').count() == 9), "a row is not whole: {csv}");
}
