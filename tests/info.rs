//! `coll-bench info`: the real binary alone and under a real launcher, 1 and 4 ranks. Every field
//! is present on every entry (a value, or `absent`); a rank given a variable the others do not
//! have is named in the last lines; `--strict` turns that into exit 1; `--json` says the same.

mod common;
use common::*;
use std::process::Output;

const FIELDS: &[&str] = &[
    "coll-bench",
    "MPI library",
    "launcher",
    "CPU model",
    "cores",
    "NUMA nodes",
    "memory",
    "locked-memory limit",
    "network interfaces",
    "InfiniBand",
    "NCCL",
    "CUDA driver",
    "GPUs",
];

/// `## LABEL` blocks of the text report: (label, [(field, value)]).
fn blocks(out: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut v: Vec<(String, Vec<(String, String)>)> = vec![];
    for l in out.lines() {
        if let Some(label) = l.strip_prefix("## ") {
            v.push((label.to_string(), vec![]));
        } else if let (Some(last), Some((k, val))) = (v.last_mut(), l.split_once(" : ")) {
            if !l.starts_with('#') {
                last.1.push((k.trim().to_string(), val.to_string()));
            }
        }
    }
    v
}

/// The first block (the largest set of alike hosts) has every field; the others only the
/// fields where they differ.
fn every_field_present(out: &str) {
    let b = blocks(out);
    assert!(!b.is_empty(), "{out}");
    for (label, fields) in &b[..1] {
        for f in FIELDS {
            let v = fields.iter().find(|(k, _)| k == f).map(|(_, v)| v.as_str());
            assert!(v.is_some_and(|v| !v.trim().is_empty()), "{label}: {f} missing or empty:\n{out}");
        }
    }
}

/// Under the launcher: `n` ranks, or with `odd`, `n - 1` ranks with NCCL_DEBUG=WARN and one
/// (the last) with NCCL_DEBUG=INFO, in two app contexts (Open MPI `-x`, Hydra `-env`).
fn info_run(n: usize, args: &[&str], odd: bool, env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let set = |var: &str, val: &str| -> Vec<String> {
        match FAMILY {
            "mpich" => vec!["-env".into(), var.into(), val.into()],
            _ => vec!["-x".into(), format!("{var}={val}")],
        }
    };
    let mut cmd = if odd {
        let mut cmd = launch_cmd(120);
        cmd.args(["-n", &(n - 1).to_string()]).args(set("NCCL_DEBUG", "WARN")).arg(BIN).arg("info").args(args);
        cmd.args([":", "-n", "1"]).args(set("NCCL_DEBUG", "INFO")).arg(BIN).arg("info").args(args);
        cmd
    } else {
        let mut cmd = mpirun_cmd(n, 120);
        cmd.arg("info").args(args);
        cmd
    };
    cmd.current_dir(dir.path()).env_remove("NCCL_DEBUG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the MPI launcher runs (is MPI installed? run ci/setup.sh)")
}

fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(o), stderr(o));
    assert!(stderr(o).trim().is_empty(), "{}", stderr(o));
    stdout(o)
}

#[test]
fn alone_one_host_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(BIN).arg("info").current_dir(dir.path()).output().unwrap();
    let out = ok(&o);
    assert!(out.starts_with("# coll-bench info: 1 rank on 1 host\n"), "{out}");
    every_field_present(&out);
    let b = blocks(&out);
    assert_eq!(b[0].1.iter().find(|(k, _)| k == "launcher").unwrap().1, "none (started without a launcher)");
    assert!(out.trim_end().ends_with("# Differ from the majority: none"), "{out}");
    assert!(files(dir.path()).is_empty());
}

#[test]
fn one_rank_under_the_launcher() {
    let out = ok(&info_run(1, &["--strict"], false, &[]));
    every_field_present(&out);
    let b = blocks(&out);
    assert_eq!(b.len(), 1, "{out}");
    assert!(b[0].0.ends_with(" (rank 0)"), "{out}");
    let launcher = &b[0].1.iter().find(|(k, _)| k == "launcher").unwrap().1;
    let want = if FAMILY == "mpich" { "MPICH Hydra, 1 rank" } else { "Open MPI, 1 rank, 1 on this host" };
    assert!(launcher.starts_with(want), "{launcher}");
    let mpi = &b[0].1.iter().find(|(k, _)| k == "MPI library").unwrap().1;
    assert!(mpi.contains(if FAMILY == "mpich" { "MPICH" } else { "Open MPI" }), "{mpi}");
}

#[test]
fn four_ranks_on_one_host_agree() {
    let out = ok(&info_run(4, &["--strict"], false, &[]));
    assert!(out.starts_with("# coll-bench info: 4 ranks on 1 host\n"), "{out}");
    every_field_present(&out);
    let b = blocks(&out);
    assert_eq!(b.len(), 1, "ranks of one host that agree are one entry:\n{out}");
    assert!(b[0].0.ends_with(" (ranks 0-3)"), "{out}");
    assert!(out.trim_end().ends_with("# Differ from the majority: none"), "{out}");
}

#[test]
fn a_rank_with_another_nccl_setting_is_named_last() {
    let o = info_run(4, &[], true, &[]);
    let out = ok(&o);
    every_field_present(&out);
    let b = blocks(&out);
    assert_eq!(b.len(), 2, "{out}");
    assert!(b[0].0.ends_with(" (ranks 0-2)") && b[1].0.ends_with(" (rank 3)"), "{out}");
    let last: Vec<&str> = out.trim_end().lines().rev().take(2).collect();
    assert_eq!(last[1], "# Differ from the majority: 1", "{out}");
    assert!(
        last[0].starts_with("# ") && last[0].ends_with(" (rank 3): env NCCL_DEBUG = INFO (majority: WARN)"),
        "{out}"
    );

    // --strict: the same report, exit 1.
    let o = info_run(4, &["--strict"], true, &[]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).trim_end().ends_with(" (rank 3): env NCCL_DEBUG = INFO (majority: WARN)"));

    // The odd rank's block holds only what differs, with the majority's value.
    assert_eq!(b[1].1, [("env NCCL_DEBUG".to_string(), "INFO (majority: WARN)".to_string())], "{out}");

    // --json: one document saying the same, under snake_case keys, numbers as numbers, with a
    // schema (issue 26: was the display labels, "2 online", no schema).
    let out = ok(&info_run(4, &["--json"], true, &[]));
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((j["schema"].as_str(), j["ranks"].as_u64()), (Some("coll-bench-info/2"), Some(4)), "{out}");
    let hosts = j["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 1, "{out}");
    assert_eq!(hosts[0]["ranks"], serde_json::json!([0, 1, 2, 3]));
    assert!(hosts[0]["name"].is_string(), "{out}");
    let reports = j["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 2, "{out}");
    for r in reports {
        let fields = r["fields"].as_object().unwrap();
        for k in fields.keys() {
            assert!(k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{k}: {out}");
        }
        for k in ["coll_bench", "mpi_library", "launcher", "cpu_model", "nccl", "cuda_driver"] {
            assert!(fields.contains_key(k), "{k} missing: {out}");
        }
        assert!(fields["cores_online"].is_u64() && fields["memory_gib"].is_u64(), "{out}");
        assert!(fields["network_interfaces"].is_array() && fields["gpus"].is_array(), "{out}");
    }
    assert_eq!(reports[0]["env"]["NCCL_DEBUG"], "WARN");
    assert_eq!(reports[1]["differs"][0]["field"], "env.NCCL_DEBUG");
    assert_eq!(reports[1]["differs"][0]["majority"], "WARN");
    let differ = j["differ_from_majority"].as_array().unwrap();
    assert_eq!(differ.len(), 1);
    assert_eq!(differ[0]["ranks"], serde_json::json!([3]), "{out}");
}

#[test]
fn nccl_and_gpus_are_reported_where_present() {
    let (cuda, nccl) = fakes();
    let env = [
        ("COLL_BENCH_CUDA_LIBRARY", cuda.to_str().unwrap()),
        ("COLL_BENCH_NCCL_LIBRARY", nccl.to_str().unwrap()),
        ("FAKE_CUDA_DEVICES", "2"),
    ];
    let out = ok(&info_run(2, &[], false, &env));
    let b = blocks(&out);
    assert_eq!(b.len(), 1, "{out}");
    let get = |f: &str| b[0].1.iter().find(|(k, _)| k == f).unwrap().1.clone();
    assert_eq!(get("NCCL"), format!("2.18.5 at {}", nccl.display()));
    assert_eq!(get("CUDA driver"), format!("12.4 at {}", cuda.display()));
    assert_eq!(get("GPUs"), "0: Fake GPU 0 (0000:01:00.0, 16G); 1: Fake GPU 1 (0000:02:00.0, 16G)");
}

#[test]
fn bad_flags_are_one_line() {
    let (o, d) = mpirun(2, &["info", "--frobnicate"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("--frobnicate") && lines[0].contains("coll-bench info --help"), "{err}");
    assert!(stdout(&o).is_empty() && files(d.path()).is_empty());
}
