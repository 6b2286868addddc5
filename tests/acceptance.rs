//! `coll-bench check SPEC.toml` under mpirun: passing and failing specs give exit 0 and 1 with
//! the rule named, a slowed rank is named in the verdict, JUnit is written and validates against
//! junit-10.xsd with the evidence in every testcase, every measurement goes to a CSV whose path
//! is printed, bad specs exit 2.
mod common;
#[path = "common/junit10.rs"]
mod junit10;
use common::*;
use std::path::Path;

/// The CSV `check` wrote: its absolute path from stderr (`coll-bench check: wrote PATH (every
/// measurement, CSV)`), which the stdout header names too.
fn written_csv(o: &std::process::Output) -> std::path::PathBuf {
    let err = stderr(o);
    let line = err.lines().find(|l| l.ends_with("(every measurement, CSV)")).unwrap_or_else(|| panic!("{err}"));
    let path = line.trim_start_matches("coll-bench check: wrote ").trim_end_matches(" (every measurement, CSV)");
    assert!(Path::new(path).is_absolute(), "{line}");
    assert!(stdout(o).contains(&format!("# measurements: {path}\n")), "{}", stdout(o));
    path.into()
}

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
    // The plan before the first rule, as the sweep's: the points of every rule and repeat.
    let plan = out.lines().nth(1).unwrap_or_default();
    assert!(plan.starts_with("# plan: ") && plan.contains(" points over every rule and repeat, estimated "), "{out}");
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
    junit10::validate(&x).unwrap_or_else(|e| panic!("junit-10.xsd: {e}\n{x}"));
    assert!(x.contains("<testsuites name=\"coll-bench\" tests=\"4\" failures=\"0\""), "{x}");
    assert_eq!(x.matches("<testcase ").count(), 4);
    // Passing testcases carry the measured value and the requirement.
    assert_eq!(x.matches("<system-out>measured: ").count(), 4, "{x}");
    assert!(x.contains("required: &gt;= 0.001 GB/s\n&lt;measurement&gt;&lt;name&gt;busbw_gbps&lt;/name&gt;"), "{x}");
    let junit_abs = dir.path().canonicalize().unwrap().join("out/j.xml");
    assert!(stderr(&o).contains(&format!("coll-bench check: wrote {} (verdicts, JUnit XML)", junit_abs.display())));

    // Every measurement behind the verdicts: the sweep's columns, then rule and repeat.
    let csv = written_csv(&o);
    assert!(csv.starts_with(dir.path().canonicalize().unwrap().join("results")), "{}", csv.display());
    assert!(x.contains(&format!("<property name=\"csv\" value=\"{}\"/>", csv.display())), "{x}");
    let mut rd = csv::Reader::from_path(&csv).unwrap();
    let head: Vec<String> = rd.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(head[head.len() - 2..], ["rule", "repeat"]);
    assert!(head.iter().any(|h| h == "busbw_gbps"));
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    let count = |rule: &str, repeat: &str| {
        rows.iter().filter(|r| &r[head.len() - 2] == rule && &r[head.len() - 1] == repeat).count()
    };
    // 64K..1M: 5 sizes, 8..1K: 8 sizes; two placements each, two repeats.
    assert_eq!((count("modest all-reduce", "1"), count("modest all-reduce", "2")), (10, 10));
    assert_eq!((count("latency", "1"), count("latency", "2")), (16, 16));
    assert_eq!(rows.len(), 52);
}

#[test]
fn check_csv_flags_follow_the_output_rules() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(dir.path(), "[[rule]]\nname = \"b\"\ncollective = \"barrier\"\nsizes = \"8..8\"\n");
    // An existing file is never overwritten: refused before anything is measured.
    std::fs::write(dir.path().join("old.csv"), "mine").unwrap();
    let o = mpirun_in(dir.path(), 2, &["check", &s, "--csv", "old.csv", "--junit", "j.xml"], 120);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("--csv: 'old.csv' already exists"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(dir.path().join("old.csv")).unwrap(), "mine");
    assert!(!dir.path().join("j.xml").exists() && !dir.path().join("results").exists());
    // --csv PATH writes there; --no-csv writes none.
    let o = mpirun_in(dir.path(), 2, &["check", &s, "--csv", "sub/m.csv"], 120);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(written_csv(&o), dir.path().canonicalize().unwrap().join("sub/m.csv"));
    let o = mpirun_in(dir.path(), 2, &["check", &s, "--no-csv"], 120);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!dir.path().join("results").exists(), "--no-csv wrote a CSV");
    assert!(!stdout(&o).contains("# measurements:"));
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
    junit10::validate(&x).unwrap_or_else(|e| panic!("junit-10.xsd: {e}\n{x}"));
    assert!(x.contains("failures=\"1\"") && x.contains("<failure message=\"measured "), "{x}");
}

#[test]
fn ranks_per_node_rules_are_skipped_on_other_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(
        dir.path(),
        "[[rule]]\nname = \"eight\"\ncollective = \"barrier\"\nsizes = \"8..8\"\nranks_per_node = 8\n",
    );
    let o = mpirun_in(dir.path(), 2, &["check", &s, "--junit", "j.xml"], 120);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("# 0 passed, 0 failed, 1 skipped: PASS"), "{out}");
    let x = std::fs::read_to_string(dir.path().join("j.xml")).unwrap();
    junit10::validate(&x).unwrap_or_else(|e| panic!("junit-10.xsd: {e}\n{x}"));
    assert!(
        x.contains("<skipped message=")
            && !x.contains("<testsuites name=\"coll-bench\" tests=\"1\" failures=\"0\" errors=\"0\" skipped"),
        "{x}"
    );
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
        (
            "[[rule]]\nname = \"x\"\ncollective = \"all-reduce\"\nsizes = \"1M..2M\"\nplateau = \"2M..2M\"\n",
            "line 5: plateau '2M..2M' is set but min_busbw_gbps is not",
        ),
    ] {
        let s = spec(dir.path(), text);
        let o = mpirun_in(dir.path(), 2, &["check", &s, "--junit", "never.xml"], 60);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("coll-bench: error: check: ") && err.contains(needle), "{needle}: {err}");
        assert!(!dir.path().join("never.xml").exists());
        assert!(!dir.path().join("results").exists(), "a refused spec left a CSV");
    }
    let o = mpirun_in(dir.path(), 2, &["check", "/no/such/spec.toml"], 60);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read '/no/such/spec.toml'"));
}

/// `coll-bench spec from-run` (no MPI) on a CSV from a real sweep.
fn from_run(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(BIN).arg("spec").arg("from-run").args(args).current_dir(dir).output().unwrap()
}

/// A copy of a sweep's CSV with every time (mean, median, percentiles, the median's interval)
/// set to `time_us`, spreads to 0, every bandwidth and percentage of the ceiling to `busbw_gbps`
/// and every row's warnings to `warnings`, times and rates scaled with the size (× size / the
/// smallest size that moves data: each size a step out of the latency band, the curve's half
/// reached inside its plateau, so no knee rule): a baseline whose numbers do not depend on how
/// loaded the machine was.
fn doctored(dir: &Path, from: &str, to: &str, (time_us, busbw_gbps): (f64, f64), warnings: &str) {
    let mut rd = csv::Reader::from_path(dir.join(from)).unwrap();
    let head = rd.headers().unwrap().clone();
    let size_col = head.iter().position(|h| h == "size_bytes").unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let size = |r: &csv::StringRecord| r[size_col].parse::<f64>().unwrap();
    let smallest = rows.iter().map(size).filter(|s| *s > 0.0).fold(f64::INFINITY, f64::min);
    let mut w = csv::Writer::from_path(dir.join(to)).unwrap();
    w.write_record(&head).unwrap();
    for r in &rows {
        let scale = size(r).max(smallest) / smallest;
        let r: Vec<String> = r
            .iter()
            .zip(head.iter())
            .map(|(v, h)| match h {
                "stddev_us" => "0".to_string(),
                "warnings" => warnings.to_string(),
                _ if h.ends_with("_us") && !v.is_empty() => (time_us * scale).to_string(),
                _ if h.ends_with("_gbps") || h == "pct_of_ceiling" => (busbw_gbps * scale).to_string(),
                _ => v.to_string(),
            })
            .collect();
        w.write_record(&r).unwrap();
    }
    w.flush().unwrap();
}

/// A known-good run becomes a gate, rules and margin as documented. Timing on this loaded
/// machine swings by 100x and more between runs (a rank descheduled mid-call, in the baseline
/// run as in the check), so the verdicts are judged against baselines doctored out of reach of
/// that: every call 100 s and 1e-9 GB/s, which the gate (10% margin) passes, and every call
/// 1 ns and 1e6 GB/s, which fails on both rules. The output follows the file rules (never over
/// an existing file or the input).
#[test]
fn spec_from_run_turns_a_good_run_into_a_gate() {
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(
        dir.path(),
        2,
        &["all-reduce", "-b", "64K", "-e", "1M", "--budget", "10ms", "--csv", "base.csv"],
        300,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = from_run(dir.path(), &["base.csv", "--margin", "30%", "-o", "gate.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let abs = dir.path().canonicalize().unwrap().join("gate.toml");
    // (A warning line may come first: this run's rows may be noisy.)
    // Bandwidth, ceiling and latency; a knee rule too where this run's curve reached half its
    // plateau's bandwidth below the plateau.
    let wrote = format!("coll-bench spec: wrote {} (", abs.display());
    let line = stderr(&o).lines().find(|l| l.starts_with(&wrote)).map(str::to_string);
    let line = line.unwrap_or_else(|| panic!("{}", stderr(&o)));
    let gate = std::fs::read_to_string(dir.path().join("gate.toml")).unwrap();
    let knee = gate.contains("name = \"all-reduce float sum knee\"");
    // The ceiling rule, unless this run's plateau measured above its ceiling (a ceiling pass
    // slowed by a busy machine: seen in a fresh-machine run, 128K at 212% of it); then the
    // spec says why it has none (issue 47), and the doctored runs below hold the rule itself.
    let no_ceiling = gate.contains("# No ceiling rule for all-reduce float sum: the baseline was ");
    let rules = 2 + usize::from(knee) + usize::from(!no_ceiling);
    assert!(line[wrote.len()..].starts_with(&format!("{rules} rules;")), "{line}\n{gate}");
    // The latency band starts at the smallest size. Unless a scheduler tick slowed a point of
    // this baseline (a busy machine): then spec from-run leaves that point out and names it in
    // its header, and the bands start past it (seen in a fresh-machine run: 64K at 763 us
    // against 1M's 198 us).
    let left_out: Vec<&str> = gate
        .lines()
        .filter(|l| l.starts_with("# Warning: left out"))
        .flat_map(|l| l.split(" at ").skip(1).map(|t| t.split(' ').next().unwrap_or("")))
        .collect();
    if left_out.is_empty() {
        assert!(gate.contains("plateau = \"128K..1M\"") && gate.contains("sizes = \"64K.."), "{gate}");
    } else {
        let first = ["64K", "128K", "256K", "512K", "1M"].into_iter().find(|s| !left_out.contains(s)).unwrap();
        assert!(gate.contains(&format!("sizes = \"{first}..")), "{left_out:?}\n{gate}");
    }
    assert!(gate.contains("ranks_per_node = 2") && gate.contains("bus bandwidth >= baseline / 1.3"), "{gate}");
    // The sweep measured a ceiling: the plateau also gets a rule on it, portable to other links.
    let ceiling_rule =
        |spec: &str| spec.contains("name = \"all-reduce float sum ceiling\"") && spec.contains("min_pct_of_ceiling = ");
    assert!(ceiling_rule(&gate) != no_ceiling, "{gate}");

    // Never over an existing file, never over the input; a bad margin is one line.
    let o = from_run(dir.path(), &["base.csv", "-o", "gate.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("-o/--output: 'gate.toml' already exists"), "{}", stderr(&o));
    let o = from_run(dir.path(), &["base.csv", "-o", "base.csv", "--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("same file as the run's CSV"), "{}", stderr(&o));
    let o = from_run(dir.path(), &["base.csv", "--margin", "-5%"]);
    assert_eq!((o.status.code(), stderr(&o).lines().count()), (Some(2), 1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--margin: '-5%' is not a margin"), "{}", stderr(&o));

    doctored(dir.path(), "base.csv", "slow.csv", (1e8, 1e-9), "");
    let o = from_run(dir.path(), &["slow.csv", "--margin", "10%", "-o", "lenient.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Latency on the median per call, the margin as given (these rows do not spread).
    let lenient = std::fs::read_to_string(dir.path().join("lenient.toml")).unwrap();
    assert!(lenient.contains("max_median_us = 110000000.0   # baseline median 100000000.0 us at 64K\n"), "{lenient}");
    assert!(!lenient.contains("max_time_us") && !lenient.contains("# Warning"), "{lenient}");
    // Far below any ceiling: the plateau gets its ceiling rule.
    assert!(ceiling_rule(&lenient), "{lenient}");

    // A baseline the run warned about is said to be noisy, on stderr and in the spec.
    doctored(dir.path(), "base.csv", "noisy.csv", (1e8, 1e-9), "noisy;mean_off_median");
    let o = from_run(dir.path(), &["noisy.csv", "-o", "noisy.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let said = "the baseline was noisy where the rules learn from it (noisy: all-reduce float sum at 128K, 256K, 512K, 1M, 64K";
    assert!(stderr(&o).starts_with(&format!("coll-bench spec: warning: {said}")), "{}", stderr(&o));
    let noisy = std::fs::read_to_string(dir.path().join("noisy.toml")).unwrap();
    assert!(noisy.contains(&format!("# Warning: {said}")), "{noisy}");
    // Several runs: the file given twice is two runs that agree; the header lists both.
    let o = from_run(dir.path(), &["slow.csv", "slow.csv", "--margin", "10%"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("# from 2 known-good runs (--margin 10%):\n#   "), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("max_median_us = 110000000.0   # baseline median 100000000.0 us at 64K\n"),
        "{}",
        stdout(&o)
    );
    let o = mpirun_in(dir.path(), 2, &["check", "lenient.toml", "--no-csv"], 300);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("# 6 passed, 0 failed, 0 skipped: PASS"), "{}", stdout(&o));

    doctored(dir.path(), "base.csv", "fast.csv", (1e-3, 1e6), "");
    let o = from_run(dir.path(), &["fast.csv", "--margin", "10%", "-o", "strict.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A million times the baseline's bandwidth is far above the ceiling: no rule can require
    // more than all of it, so the spec says why it has no ceiling rule (issue 47).
    let strict = std::fs::read_to_string(dir.path().join("strict.toml")).unwrap();
    assert!(strict.contains("# No ceiling rule for all-reduce float sum: the baseline was "), "{strict}");
    let o = mpirun_in(dir.path(), 2, &["check", "strict.toml", "--no-csv"], 300);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let failed: Vec<String> =
        stdout(&o).lines().filter(|l| l.ends_with("FAIL") && !l.starts_with('#')).map(str::to_string).collect();
    assert_eq!(failed.len(), 2, "{}", stdout(&o));
    assert!(
        failed[0].contains("all-reduce float sum bandwidth") && failed[1].contains("all-reduce float sum latency"),
        "{failed:?}"
    );
}

/// `max_knee_bytes` judged on a real curve: at the largest size it cannot fail (the plateau's
/// best is reached there at the latest); at 8 B it cannot pass (all-reduce of 8 B carries a
/// thousandth of what 256K..1M does); the measured knee is named in the line. The median of 3
/// repeats: with 1, a stall of this VM during the plateau's 5 ms points (seen once in a
/// fresh-machine run: the plateau at 0.065 GB/s against 9.3 GB/s in the rule before) made 8 B
/// reach half of it.
#[test]
fn the_knee_of_a_real_curve_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let rule = |name: &str, knee: &str| {
        format!("\n[[rule]]\nname = \"{name}\"\ncollective = \"all-reduce\"\nsizes = \"8..1M\"\nplateau = \"256K..1M\"\nmax_knee_bytes = \"{knee}\"\n")
    };
    let text = format!("[settings]\nrepeats = 3\nbudget = \"5ms\"\n{}{}", rule("late", "1M"), rule("early", "8"));
    let s = spec(dir.path(), &text);
    let o = mpirun_in(dir.path(), 2, &["check", &s, "--no-csv"], 300);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let knees: Vec<&str> = out.lines().filter(|l| !l.starts_with('#') && l.contains(" knee ")).collect();
    assert_eq!(knees.len(), 2, "{out}");
    assert!(knees[0].contains("late") && knees[0].contains("<= 1M") && knees[0].ends_with("PASS"), "{out}");
    assert!(knees[1].contains("early") && knees[1].contains("<= 8") && knees[1].ends_with("FAIL"), "{out}");
    assert!(knees[1].contains("half the plateau's "), "{out}");
}

/// A sweep whose smallest sizes are 0 B for a sized collective (all-gather from 8 B on 2 ranks,
/// nccl-tests' geometry: below one element per rank) still makes a gate that check runs. On
/// main `spec from-run` failed: "internal error, the spec is invalid: … '0' is zero in '0..0'".
#[test]
fn spec_from_run_learns_from_a_sweep_with_zero_byte_rows() {
    let dir = tempfile::tempdir().unwrap();
    let o =
        mpirun_in(dir.path(), 2, &["all-gather", "-b", "8", "-e", "256", "--budget", "5ms", "--csv", "base.csv"], 300);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut rd = csv::Reader::from_path(dir.path().join("base.csv")).unwrap();
    let col = rd.headers().unwrap().iter().position(|h| h == "size_bytes").unwrap();
    let sizes: Vec<u64> = rd.records().map(|r| r.unwrap()[col].parse().unwrap()).collect();
    assert!(sizes.contains(&0), "no 0-byte row to learn around: {sizes:?}");
    let smallest = sizes.iter().copied().filter(|&s| s > 0).min().unwrap();
    doctored(dir.path(), "base.csv", "slow.csv", (1e8, 1e-9), "");
    let o = from_run(dir.path(), &["slow.csv", "-o", "gate.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let gate = std::fs::read_to_string(dir.path().join("gate.toml")).unwrap();
    assert!(gate.contains(&format!("sizes = \"{smallest}..{smallest}\"")), "{gate}");
    let o = mpirun_in(dir.path(), 2, &["check", "gate.toml", "--no-csv"], 300);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // Bandwidth, ceiling and latency: two checks each.
    assert!(stdout(&o).contains("# 6 passed, 0 failed, 0 skipped: PASS"), "{}", stdout(&o));
}

/// `min_pct_of_ceiling`: the ceiling measured before and after each rule that asks for it, judged
/// against it (a modest share passes, an impossible one fails, naming the ceiling), and that
/// rule's CSV rows carry it; a rule without it measures none.
#[test]
fn a_rule_on_the_ceiling_is_judged_against_the_measured_one() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
[settings]
repeats = 1
budget = "5ms"

[[rule]]
name = "near the links"
collective = "all-reduce"
sizes = "256K..1M"
plateau = "1M..1M"
min_pct_of_ceiling = 0.1

[[rule]]
name = "beyond the links"
collective = "reduce-scatter"
sizes = "256K..1M"
plateau = "1M..1M"
min_pct_of_ceiling = 100

[[rule]]
name = "no ceiling"
collective = "all-reduce"
sizes = "8..64"
max_time_us = 100000.0
"#;
    let s = spec(dir.path(), text);
    let o = mpirun_in(dir.path(), 2, &["check", &s], 300);
    let out = stdout(&o);
    let verdict = |rule: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(rule) && l.contains(" ceiling "))
            .unwrap_or_else(|| panic!("{rule}:\n{out}"))
    };
    // Measured before and after the rule's sweeps, the faster pass kept. Where the machine
    // changed speed between them (a CI run beside another job read 0.131 GB/s before, where
    // 8-13 are usual, and passed "beyond the links" at 388%), a share the band between them
    // cannot settle is NOISY, saying so (src/acceptance judge_ceiling).
    let noisy = |l: &str| l.trim_end().ends_with("NOISY") && l.contains("check again when it is quiet");
    let judged =
        |l: &str, verdict: &str| l.trim_end().ends_with(verdict) && l.contains("% of ") && l.contains(" GB/s at 1M");
    let near = verdict("near the links");
    assert!(near.contains(">= 0.1% of the ceiling") && (judged(near, "PASS") || noisy(near)), "{near}");
    let beyond = verdict("beyond the links");
    // reduce-scatter of 1 MiB on 2 ranks: about a quarter of the ceiling here (its busbw counts
    // half the buffer, and the library reduces it on one rank), never all of it.
    assert!(beyond.contains(">= 100% of the ceiling") && (judged(beyond, "FAIL") || noisy(beyond)), "{beyond}");
    let want = if judged(beyond, "FAIL") { 1 } else { 3 };
    assert_eq!(o.status.code(), Some(want), "{out}{}", stderr(&o));
    let mut r = csv::Reader::from_path(written_csv(&o)).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|c| c == n).unwrap();
    for rec in r.records().map(|x| x.unwrap()) {
        let measured = rec[col("rule")] != *"no ceiling";
        assert_eq!(!rec[col("ceiling_gbps")].is_empty(), measured, "{rec:?}");
        assert_eq!(&rec[col("ceiling_source")], if measured { "measured" } else { "" }, "{rec:?}");
    }
}
