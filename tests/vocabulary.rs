//! One vocabulary (issue 26): every subcommand run for real under mpirun, each file it writes
//! read back, and docs/output.md held to it — every CSV column (in order) and JSON field the
//! writers write is documented there, and every one documented is written. Default CSVs share
//! one name pattern, `results/coll-bench[-SUBCOMMAND]-<UTC time>.csv`; old flag spellings work,
//! with one note each on stderr naming the new one.

mod common;
use common::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every field path of a JSON value: keys joined by '.', array elements as '[]'; the children
/// of `free` (objects keyed by data, e.g. variable names) are left out.
fn paths(v: &serde_json::Value, prefix: &str, free: &[&str], out: &mut BTreeSet<String>) {
    if free.contains(&prefix) {
        return;
    }
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
                out.insert(p.clone());
                paths(x, &p, free, out);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                paths(x, &format!("{prefix}[]"), free, out);
            }
        }
        _ => {}
    }
}

/// The JSON a writer wrote against its section: nothing undocumented; everything documented
/// written, but for the elements of arrays that are empty here (no InfiniBand on this host)
/// and the `variants` this run cannot show (the other form of a field that has two).
fn json_matches_docs(doc: &serde_json::Value, heading: &str, free: &[&str], variants: &[&str]) {
    let mut written = BTreeSet::new();
    paths(doc, "", free, &mut written);
    let docs: BTreeSet<String> = documented(heading).into_iter().collect();
    let undocumented: Vec<&String> = written.difference(&docs).collect();
    assert!(undocumented.is_empty(), "{heading}: written, not in docs/output.md: {undocumented:?}\n{doc:#}");
    let empty_array = |p: &str| {
        p.match_indices("[]").any(|(i, _)| {
            let array = &p[..i];
            written.contains(array) && !written.iter().any(|w| w.starts_with(&format!("{array}[]")))
        })
    };
    let stale: Vec<&String> =
        docs.difference(&written).filter(|p| !empty_array(p.as_str()) && !variants.contains(&p.as_str())).collect();
    assert!(stale.is_empty(), "{heading}: in docs/output.md, never written: {stale:?}\n{doc:#}");
}

/// The one file under `dir/results` named `coll-bench{infix}-<UTC time>.csv`.
fn default_csv(dir: &Path, infix: &str) -> PathBuf {
    let found: Vec<PathBuf> = files(&dir.join("results"))
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let stamp = name.strip_prefix(&format!("coll-bench{infix}-")).and_then(|r| r.strip_suffix(".csv"));
            // 20261123T151132Z
            stamp.is_some_and(|s| s.len() == 16 && &s[8..9] == "T" && s.ends_with('Z'))
        })
        .collect();
    assert_eq!(found.len(), 1, "one results/coll-bench{infix}-<UTC time>.csv: {:?}", files(dir));
    found[0].clone()
}

fn header(path: &Path) -> Vec<String> {
    let mut rd = csv::Reader::from_path(path).unwrap();
    let h: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert!(rd.records().next().is_some(), "{}: no rows", path.display());
    h
}

fn ok(o: &std::process::Output) {
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(o), stderr(o));
}

#[test]
fn sweep_check_and_tune_csvs_are_the_documented_columns_under_one_name() {
    let sweep = documented("## CSV columns");
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(dir.path(), 2, &["all-reduce", "-b", "8", "-e", "8", "-n", "2", "-w", "1"], 120);
    ok(&o);
    assert_eq!(header(&default_csv(dir.path(), "")), sweep);

    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        "[settings]\nbudget = \"2ms\"\n\n[[rule]]\nname = \"any\"\ncollective = \"all-reduce\"\nsizes = \"8..8\"\nmax_time_us = 1e9\n",
    )
    .unwrap();
    let o = mpirun_in(dir.path(), 2, &["check", spec.to_str().unwrap()], 120);
    ok(&o);
    let want: Vec<String> = sweep.iter().cloned().chain(documented("## check: CSV columns")).collect();
    assert_eq!(header(&default_csv(dir.path(), "-check")), want);

    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(dir.path(), 2, &["tune", "reduce-scatter", "-b", "1K", "-e", "1K", "-n", "3"], 300);
    ok(&o);
    let want: Vec<String> = sweep.iter().cloned().chain(documented("## tune: CSV columns")).collect();
    assert_eq!(header(&default_csv(dir.path(), "-tune")), want);
}

#[test]
fn pairs_csv_is_the_documented_columns_under_the_one_name() {
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(dir.path(), 2, &["pairs", "-e", "64K", "--budget", "2ms"], 120);
    ok(&o);
    // Was results/pairs-<UTC time>.csv.
    assert_eq!(header(&default_csv(dir.path(), "-pairs")), documented("## pairs: CSV columns"));
}

/// step with its old spellings (`--layouts all`, `--dtype bf16`, `--warmup_iters`): it runs,
/// says each new spelling once on stderr, and writes the documented CSV (µs, under the one
/// name) and JSON.
#[test]
fn step_files_are_documented_and_old_spellings_work_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "step",
        "--layouts",
        "all",
        "--dtype",
        "bf16",
        "--warmup_iters",
        "0",
        "-n",
        "1",
        "--layers",
        "1",
        "--hidden",
        "128",
        "--seq",
        "128",
        "--json",
        "s.json",
        "-T",
        "120",
        "--experts",
        "4",
    ];
    let o = mpirun_in(dir.path(), 4, &args, 300);
    ok(&o);
    let err = stderr(&o);
    let notes: Vec<&str> = err.lines().collect();
    assert_eq!(
        notes,
        [
            "coll-bench: note: coll-bench step --layouts is now --layout; the old spelling goes in the next release",
            "coll-bench: note: coll-bench step --dtype is now --datatype; the old spelling goes in the next release",
            "coll-bench: note: coll-bench step --warmup_iters is now --warmup-iters; the old spelling goes in the next release",
        ],
        "{err}"
    );
    // tp = 1, 2, 4 (pp must divide the one layer), and with 4 experts ep = 2, 4 of dp.
    assert!(stdout(&o).contains("# Layouts (6):"), "{}", stdout(&o));
    // Was results/step-<UTC time>.csv, in ms.
    assert_eq!(header(&default_csv(dir.path(), "-step")), documented("## step: CSV columns"));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(doc["run"]["options"]["dtype"], "bfloat16");
    assert_eq!(doc["run"]["options"]["layout"], "all");
    json_matches_docs(&doc, "## step: JSON fields", &[], &["run.options.csv.path"]);
}

/// doctor's JSON on one host (no links, no nominal rate here: those arrays are empty).
#[test]
fn doctor_json_is_the_documented_fields() {
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(dir.path(), 2, &["doctor", "-e", "64K", "--budget", "5ms", "--json", "d.json"], 300);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}{}", stdout(&o), stderr(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("d.json")).unwrap()).unwrap();
    assert_eq!(doc["schema"], "coll-bench-doctor/1");
    json_matches_docs(&doc, "## doctor: JSON fields", &[], &[]);
}

#[test]
fn info_json_is_the_documented_fields() {
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(dir.path(), 2, &["info", "--json"], 120);
    ok(&o);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    json_matches_docs(&doc, "## info --json: JSON fields", &["reports[].env"], &[]);
}

/// The sweep's JSON from a real run: every field written is documented (the exact match, with
/// every variant, is `src/report/json.rs`'s test).
#[test]
fn sweep_json_fields_are_documented() {
    let (o, dir) =
        mpirun(2, &["all-reduce", "all-gather", "-b", "8", "-e", "16", "-n", "2", "--no-csv", "--json", "r.json"]);
    ok(&o);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let mut written = BTreeSet::new();
    paths(&doc, "", &[], &mut written);
    let written: BTreeSet<String> = written
        .into_iter()
        .map(|p| {
            p.replace("points[].out_of_place", "points[].<placement>")
                .replace("points[].in_place", "points[].<placement>")
        })
        .collect();
    let docs: BTreeSet<String> = documented("## JSON fields").into_iter().collect();
    let undocumented: Vec<&String> = written.difference(&docs).collect();
    assert!(undocumented.is_empty(), "undocumented: {undocumented:?}");
}
