//! The ceiling (docs/output.md#the-ceiling): sendrecv around the ring before the sweep, given
//! in the header, and every point's busbw as a percentage of it in the table, CSV and JSON.
//! Across hosts, with one link shaped, see tests/multihost.rs.
mod common;
use common::*;

#[test]
fn the_header_gives_the_ceiling_and_every_point_is_read_against_it() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["all-reduce", "all-gather", "barrier", "-b", "256K", "-e", "1M", "--csv", "c.csv", "--json", "j.json"];
    let o = mpirun_in(dir.path(), 2, &args, 600);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let head = out.lines().find(|l| l.starts_with("# ceiling: ")).unwrap_or_else(|| panic!("no ceiling line:\n{out}"));
    assert!(
        head.contains(" GB/s busbw (measured: sendrecv of 1M around the ring of 2 ranks, within hosts, ")
            && !head.contains("under 1 MiB"),
        "{head}"
    );
    let gbps: f64 = head["# ceiling: ".len()..].split_whitespace().next().unwrap().parse().unwrap();
    assert!(gbps > 0.0, "{head}");

    // The CSV: the same ceiling on every row, and each row's busbw as a percentage of it.
    let rows = csv_rows(&dir.path().join("c.csv"));
    assert_eq!(rows.len(), 2 * 3 * 2 + 2, "3 sizes of 2 collectives and a barrier, both placements");
    let ceiling: f64 = rows[0]["ceiling_gbps"].parse().unwrap();
    assert!((ceiling - gbps).abs() <= 0.005 + 1e-9, "the header rounds the CSV's {ceiling} to {gbps}");
    for r in &rows {
        assert_eq!((r["ceiling_gbps"].parse::<f64>().unwrap(), r["ceiling_source"].as_str()), (ceiling, "measured"));
        if r["collective"] == "barrier" {
            assert_eq!(r["pct_of_ceiling"], "", "barrier moves no data: {r:?}");
            continue;
        }
        let busbw: f64 = r["busbw_gbps"].parse().unwrap();
        let pct: f64 = r["pct_of_ceiling"].parse().unwrap();
        assert!((pct - busbw / ceiling * 100.0).abs() < 1e-6 * pct.max(1.0), "{r:?}");
    }

    // The table: %ceil after nccl-tests' thirteen columns, the CSV's out-of-place value rounded.
    let table = common::rows(&o);
    assert_eq!(table.len(), 7, "{out}");
    for row in &table {
        assert_eq!(row.len(), 14, "{row:?}");
        if row[0] == "0" {
            assert_eq!(row[13], "-", "barrier: {row:?}");
        } else {
            assert!(row[13].parse::<f64>().is_ok(), "{row:?}");
        }
    }
    let ar_1m = rows
        .iter()
        .find(|r| r["collective"] == "all-reduce" && r["size_bytes"] == "1048576" && r["placement"] == "out-of-place")
        .unwrap();
    let shown = table.iter().find(|r| r[0] == "1048576" && r[3] == "sum").unwrap();
    let pct: f64 = ar_1m["pct_of_ceiling"].parse().unwrap();
    assert_eq!(shown[13], format!("{pct:.0}"), "{shown:?} against {pct}");

    // The JSON: the run's ceiling, each placement's percentage.
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("j.json")).unwrap()).unwrap();
    let c = &j["run"]["ceiling"];
    assert_eq!(
        (c["source"].as_str(), c["size_bytes"].as_u64(), c["links"].as_str()),
        (Some("measured"), Some(1 << 20), Some("within hosts"))
    );
    // serde_json reads floats to within an ulp or two (no float_roundtrip).
    assert!((c["gbps"].as_f64().unwrap() - ceiling).abs() < 1e-9 * ceiling, "{c} against {ceiling}");
    assert_eq!(j["run"]["options"]["ceiling"], true);
    for p in j["points"].as_array().unwrap() {
        for key in ["out_of_place", "in_place"] {
            let m = &p[key];
            if p["collective"] == "barrier" {
                assert!(m["pct_of_ceiling"].is_null(), "{p}");
            } else {
                let want = m["busbw_gbps"].as_f64().unwrap() / ceiling * 100.0;
                assert!((m["pct_of_ceiling"].as_f64().unwrap() - want).abs() < 1e-6 * want.max(1.0), "{p}");
            }
        }
    }
}

/// `--no-ceiling`: no pass, no line, nccl-tests' thirteen columns, empty CSV fields, JSON null.
#[test]
fn no_ceiling_leaves_nccl_tests_columns() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["all-reduce", "-b", "1K", "-e", "4K", "--no-ceiling", "--csv", "c.csv", "--json", "j.json"];
    let o = mpirun_in(dir.path(), 2, &args, 600);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(!out.contains("ceiling") && !out.contains("%ceil"), "{out}");
    let table = common::rows(&o);
    assert_eq!(table.len(), 3, "{out}");
    assert!(table.iter().all(|r| r.len() == 13), "{out}");
    for r in csv_rows(&dir.path().join("c.csv")) {
        assert_eq!(
            (r["ceiling_gbps"].as_str(), r["ceiling_source"].as_str(), r["pct_of_ceiling"].as_str()),
            ("", "", "")
        );
    }
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("j.json")).unwrap()).unwrap();
    assert!(j["run"]["ceiling"].is_null(), "{}", j["run"]);
    assert_eq!(j["run"]["options"]["ceiling"], false);
    assert!(j["points"][0]["out_of_place"]["pct_of_ceiling"].is_null());
}

/// Groups: each group's ring (the header says so); a small largest size: the header says the
/// transfer is bound by latency. A group of one rank has no ring: no ceiling.
#[test]
fn groups_measure_their_own_rings_and_small_transfers_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["all-reduce", "-b", "1K", "-e", "4K", "--groups", "split=mod:2", "--no-csv"];
    let o = mpirun_in(dir.path(), 4, &args, 600);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let head = out.lines().find(|l| l.starts_with("# ceiling: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(
        head.contains("sendrecv of 4K around each group's ring of 2 ranks, within hosts")
            && head.contains("under 1 MiB a transfer is bound by latency"),
        "{head}"
    );
    let args = ["all-reduce", "-b", "1K", "-e", "4K", "--groups", "split=mod:2", "--no-csv"];
    let o = mpirun_in(dir.path(), 2, &args, 600);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(!out.contains("# ceiling: "), "groups of one rank have no ring:\n{out}");
    assert!(common::rows(&o).iter().all(|r| r.len() == 13), "{out}");
}
