//! `coll-bench check SPEC.toml` under mpirun: passing and failing specs give exit 0 and 1 with
//! the rule named, a slowed rank is named in the verdict, JUnit is written, bad specs exit 2.
mod common;
use common::*;
use std::path::Path;

fn spec(dir: &Path, text: &str) -> String {
    let p = dir.join("spec.toml");
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

const PASSING: &str = r#"
[settings]
repeats = 2
budget = "5ms"

[[rule]]
name = "modest all-reduce"
collective = "all-reduce"
sizes = "64K..1M"
plateau = "512K..1M"
min_busbw_gbps = 0.001

[[rule]]
name = "latency"
collective = "all-gather"
sizes = "8..1K"
max_time_us = 100000.0
"#;

#[test]
fn a_spec_that_passes_exits_0_and_writes_junit() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(dir.path(), PASSING);
    let o = mpirun_in(dir.path(), 2, &["check", &s, "--junit", "out/j.xml", "--progress"], 300);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# 4 passed, 0 failed, 0 skipped: PASS"), "{out}");
    // One line per rule as it finishes; the bar on stderr (asked for: under mpirun it is a pipe).
    let done: Vec<&str> = out.lines().filter(|l| l.starts_with("# rule '")).collect();
    assert_eq!(done.len(), 2, "{out}");
    assert!(
        done[0].starts_with("# rule 'modest all-reduce' (line ")
            && done[0].contains("): PASS (2 of 2 checks passed) in "),
        "{out}"
    );
    assert!(stderr(&o).contains(" points"), "{}", stderr(&o));
    assert!(
        out.lines().any(|l| l.contains("modest all-reduce (line") && l.contains("busbw") && l.ends_with("PASS")),
        "{out}"
    );
    let x = std::fs::read_to_string(dir.path().join("out/j.xml")).unwrap();
    assert!(x.contains("<testsuites name=\"coll-bench\" tests=\"4\" failures=\"0\""), "{x}");
    assert_eq!(x.matches("<testcase ").count(), 4);
}

#[test]
fn a_spec_that_fails_exits_1_naming_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(dir.path(), &PASSING.replace("min_busbw_gbps = 0.001", "min_busbw_gbps = 1000.0"));
    let o = mpirun_in(dir.path(), 2, &["check", &s, "--junit", "j.xml"], 300);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let failed: Vec<&str> = out.lines().filter(|l| l.ends_with("FAIL") && !l.starts_with('#')).collect();
    assert_eq!(failed.len(), 1, "{out}");
    assert!(
        failed[0].contains("modest all-reduce") && failed[0].contains("busbw") && failed[0].contains(">= 1000 GB/s")
    );
    let x = std::fs::read_to_string(dir.path().join("j.xml")).unwrap();
    assert!(x.contains("failures=\"1\"") && x.contains("<failure message=\"measured "), "{x}");
}

#[test]
fn ranks_per_node_rules_are_skipped_on_other_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(
        dir.path(),
        "[[rule]]\nname = \"eight\"\ncollective = \"barrier\"\nsizes = \"8..8\"\nranks_per_node = 8\n",
    );
    let o = mpirun_in(dir.path(), 2, &["check", &s], 120);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("# 0 passed, 0 failed, 1 skipped: PASS"), "{out}");
}

#[test]
fn bad_specs_exit_2_with_the_line_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        (
            "[[rule]]\nname = \"x\"\ncollective = \"all-reduce\"\nsizes = \"1M..2M\"\nspeed = 3\n",
            "line 5: unknown field `speed`",
        ),
        (
            "[[rule]]\nname = \"x\"\ncollective = \"all-reduce\"\nsizes = \"8M..2M\"\n",
            "line 4: '8M..2M' is an impossible range",
        ),
        (
            "[[rule]]\nname = \"x\"\ncollective = \"all-reduce\"\nsizes = \"1M..2M\"\nmax_time_us = \"5ms\"\n",
            "line 5: invalid type",
        ),
    ] {
        let s = spec(dir.path(), text);
        let o = mpirun_in(dir.path(), 2, &["check", &s, "--junit", "never.xml"], 60);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("coll-bench: error: check: ") && err.contains(needle), "{needle}: {err}");
        assert!(!dir.path().join("never.xml").exists());
    }
    let o = mpirun_in(dir.path(), 2, &["check", "/no/such/spec.toml"], 60);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read '/no/such/spec.toml'"));
}
