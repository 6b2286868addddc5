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
