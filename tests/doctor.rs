//! `coll-bench doctor` on one host, under this build's MPI launcher: a forced slow algorithm is
//! named in the page and the JSON as what ran and as a cause, with the faster one measured; bad
//! input is one line, exit 2, before anything is measured. Across hosts (a shaped link named
//! first, the time bar): tests/multihost.rs.
mod common;
use common::*;
use std::sync::Mutex;

/// The tests here run one at a time: the algorithms' comparison is a timing, and a second job
/// on these 2 cores would be the noise it reads.
static ALONE: Mutex<()> = Mutex::new(());

fn json(dir: &std::path::Path, name: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap()
}

/// All-reduce forced to Open MPI's basic_linear (a reduce to rank 0, then a broadcast): the
/// column names it as forced, and doctor names the algorithm as a cause with a faster algorithm
/// it measured (interleaved, as tune times them; 8 MiB, 200 ms per round). On 2 ranks, as many
/// as this machine has cores: the issue asks 4, but 4 ranks on 2 cores hide the algorithm behind
/// the oversubscription (basic_linear 1.2-2.0x the ring's time from one hour to the next, tune's
/// noise bands overlapping in 5 of 10 runs at the end of session 15), where 2 ranks gave
/// 1.45-1.6x in 6 of 6. MPICH 4.0 has no algorithm that slow (its reduce-then-broadcast is not
/// among its all-reduce values; recursive doubling measured as fast as the rest): Open MPI
/// only, as the issue asks.
#[test]
fn a_forced_slow_algorithm_is_named_as_the_cause_with_the_faster_one() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    if FAMILY != "openmpi" {
        say_skipped(
            "a_forced_slow_algorithm_is_named_as_the_cause_with_the_faster_one",
            "Open MPI's coll_tuned algorithms only (MPICH 4.0 has no all-reduce algorithm clearly slower for 4 ranks)",
        );
        return;
    }
    let forced = &[("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"), ("OMPI_MCA_coll_tuned_allreduce_algorithm", "1")];
    let slow = "basic_linear";
    let dir = tempfile::tempdir().unwrap();
    // doctor's own advice when its samples spread too far to tell algorithms apart ("noise": a
    // longer --budget, or a quieter machine) is what this test follows: a run whose first cause
    // is that noise is measured again with three times the budget. Where that is still noise
    // (another job on these 2 cores: a fresh-machine run beside a build named noise in 1 of 3
    // runs), the test says SKIPPED, not passed: the algorithms were not told apart.
    let mut tries = vec![];
    let (out, j, alg) = loop {
        let budget = ["200ms", "600ms"][tries.len()];
        let o = mpirun_env(
            dir.path(),
            2,
            &["doctor", "all-reduce", "-e", "8M", "--budget", budget, "--json", "d.json", "--force"],
            forced,
            300,
        );
        let out = stdout(&o);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{out}\n{}", stderr(&o));
        let j = json(dir.path(), "d.json");
        let c = &j["collectives"][0];
        assert_eq!((c["algorithm"].as_str(), c["algorithm_source"].as_str()), (Some(slow), Some("forced")), "{out}");
        let causes = j["causes"].as_array().unwrap().clone();
        if let Some(alg) = causes.iter().find(|c| c["cause"] == "algorithm" && c["subject"] == "all-reduce") {
            break (out, j.clone(), alg.clone());
        }
        // No algorithm named: only because the run was too noisy to tell, and it says so first.
        assert_eq!(
            causes.first().map(|c| &c["cause"]),
            Some(&serde_json::json!("noise")),
            "no algorithm cause, and not noise:\n{out}\nalternatives: {}",
            j["alternatives"]
        );
        tries.push(budget);
        if tries.len() == 2 {
            say_skipped(
                "a_forced_slow_algorithm_is_named_as_the_cause_with_the_faster_one",
                &format!("too noisy here to tell the algorithms apart (doctor named noise first with --budget {}); alternatives: {}", tries.join(" and "), j["alternatives"]),
            );
            return;
        }
    };
    // The algorithm of lowest median, judged by doctor's rule (not tune's stricter one).
    let faster = j["alternatives"][0]["median_fastest"].as_str().unwrap();
    assert!(faster != "default" && faster != slow, "{out}");
    let evidence = alg["evidence"].as_str().unwrap();
    assert!(evidence.contains(&format!("ran {slow} (forced)")) && evidence.contains(faster), "{evidence}");
    assert!(alg["share"].as_f64().unwrap() > 0.05, "{alg}");
    // The page says the same, in its numbered causes.
    let line = out.lines().find(|l| l.contains(". algorithm")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(slow) && line.contains(faster), "{line}");
    assert!(out.lines().any(|l| l.starts_with("# verdict: ")), "{out}");
}

/// The library's other function for reduce-scatter (`MPI_Reduce_scatter`, equal counts) timed
/// against `MPI_Reduce_scatter_block` in interleaved rounds, in the JSON; the `call` cause
/// stands exactly where those numbers say it beats the default by more than 5% with its slowest
/// round under the default's time (Open MPI 4.1's is 1.9-6x faster at 1 MiB here), and the page
/// says so. Both families.
#[test]
fn the_library_s_other_call_is_timed_and_named_where_it_is_faster() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(
        dir.path(),
        2,
        &["doctor", "reduce-scatter", "-e", "1M", "--budget", "50ms", "--json", "d.json"],
        300,
    );
    let out = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}\n{}", stderr(&o));
    let j = json(dir.path(), "d.json");
    let calls = j["calls"].as_array().unwrap_or_else(|| panic!("{j}"));
    assert_eq!(calls.len(), 1, "{j}");
    let c = &calls[0];
    assert_eq!(
        (c["function"].as_str(), c["other_function"].as_str()),
        (Some("MPI_Reduce_scatter_block"), Some("MPI_Reduce_scatter"))
    );
    assert_eq!(c["size_bytes"], 1 << 20);
    let t = |k: &str| c[k].as_f64().unwrap_or_else(|| panic!("{k}: {c}"));
    let (default_us, other_us, hi) = (t("function_us"), t("other_us"), t("other_slowest_round_us"));
    assert!(default_us > 0.0 && other_us > 0.0 && hi >= other_us, "{c}");
    let faster = other_us < default_us * 0.95 && hi < default_us;
    let cause = j["causes"].as_array().unwrap().iter().find(|x| x["cause"] == "call").cloned();
    assert_eq!(cause.is_some(), faster, "{c}\n{out}");
    if let Some(cause) = cause {
        assert_eq!(cause["subject"], "reduce-scatter");
        assert!(cause["evidence"].as_str().unwrap().contains("MPI_Reduce_scatter (equal counts)"), "{cause}");
        let line = out.lines().find(|l| l.contains(". call")).unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains("MPI_Reduce_scatter_block"), "{line}");
    }
    // The heap (Open MPI 4.1's _block mallocs its temporaries on every call: 225 faults per call
    // at 1 MiB here): measured again with the heap kept, back to back, for a collective that
    // page-faulted, and the allocator advised only where that was faster by 10% or more.
    let faults = j["collectives"][0]["minor_faults_per_call"].as_f64().unwrap_or(0.0);
    let heap = j["heap"].as_array().unwrap_or_else(|| panic!("{j}"));
    // At most the one collective, and only where it faulted (a kept run that still faulted is
    // dropped: then the cause's share is estimated and nothing is advised).
    assert!(heap.len() <= usize::from(faults >= 16.0), "{j}");
    let fault_cause =
        j["causes"].as_array().unwrap().iter().find(|x| x["subject"] == "reduce-scatter page faults").cloned();
    assert_eq!(fault_cause.is_some(), faults >= 16.0, "{j}");
    if let (None, Some(cause)) = (heap.first(), &fault_cause) {
        assert_eq!(cause["share_source"], "estimated", "{cause}");
        assert!(!cause["remedy"].as_str().unwrap_or("").contains("MALLOC_"), "advice not measured: {cause}");
    }
    if let (Some(h), Some(cause)) = (heap.first(), fault_cause) {
        let t = |k: &str| h[k].as_f64().unwrap_or_else(|| panic!("{k}: {h}"));
        assert!(t("kept_faults_per_call") < 16.0 && t("default_faults_per_call") >= 16.0, "{h}");
        assert_eq!(cause["share_source"], "measured", "{cause}");
        let advised = cause["remedy"].as_str().is_some_and(|r| r.contains("MALLOC_TRIM_THRESHOLD_"));
        assert_eq!(advised, t("kept_us") <= 0.9 * t("default_us"), "{h}\n{cause}");
        let phases = j["run"]["plan"]["phases"].as_array().unwrap();
        assert!(phases.iter().any(|p| p["name"] == "heap"), "{j}");
    }
}

/// Two ranks bound to one core (`taskset -c 0` under the launcher, the same for both
/// families): the host's CPUs in the JSON say so (2 ranks, 1 usable core), and a `host` cause
/// names the host and the binding, its share estimated.
#[test]
fn ranks_bound_to_one_core_are_named_as_a_host_cause() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    if cores() < 2 {
        say_skipped("ranks_bound_to_one_core_are_named_as_a_host_cause", "one core: 2 ranks oversubscribe it anyway");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = launch_cmd(300)
        .args(["-n", "2", "taskset", "-c", "0", BIN, "doctor", "all-reduce", "-e", "64K", "--budget", "5ms"])
        .args(["--json", "d.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}\n{}", stderr(&o));
    let j = json(dir.path(), "d.json");
    let cpus = j["cpus"].as_array().unwrap_or_else(|| panic!("{j}"));
    assert_eq!(cpus.len(), 1, "{j}");
    assert_eq!((cpus[0]["ranks"].as_u64(), cpus[0]["cores_usable"].as_u64()), (Some(2), Some(1)), "{j}");
    // The host's memory, copied by its first rank: a rate, and no cause with one host.
    assert!(cpus[0]["memory_copy_gbps"].as_f64().is_some_and(|g| g > 0.0), "{j}");
    assert!(!out.contains("copies its memory"), "{out}");
    let cause = j["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == "host" && c["evidence"].as_str().unwrap().contains("may run on 1 core(s) only"))
        .unwrap_or_else(|| panic!("no binding cause:\n{out}"));
    assert_eq!((cause["share"].as_f64(), cause["share_source"].as_str()), (Some(0.5), Some("estimated")), "{cause}");
    assert!(out.lines().any(|l| l.contains(". host") && l.contains("(their binding)")), "{out}");
}

/// Flags doctor does not take, a bad bar, and a JSON path that would overwrite a file: one line
/// each, exit 2, nothing measured and the file untouched.
#[test]
fn bad_input_to_doctor_is_one_line_before_anything_is_measured() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kept.json"), "mine\n").unwrap();
    for (args, want) in [
        (&["doctor", "-b", "1K"][..], "doctor -b: doctor measures at one size; expected -e/--maxbytes SIZE only"),
        (&["doctor", "--min-pct-of-ceiling", "120"][..], "doctor --min-pct-of-ceiling: '120' is not a percentage"),
        (&["doctor", "--csv", "x.csv"][..], "doctor --csv: the sweep's, not doctor's"),
        (&["doctor", "-f", "4"][..], "doctor -f/--stepfactor: doctor measures at one size"),
        (&["doctor", "--max-time", "soon"][..], "doctor --max-time: 'soon' is not a duration; expected a duration"),
        (&["doctor", "-e", "1M", "--json", "kept.json"][..], "kept.json"),
        (
            &["doctor", "--pattern", "spread=0.5"][..],
            "doctor --pattern: shapes all-to-all-v, which doctor does not diagnose",
        ),
        (&["doctor", "all-to-all-v"][..], "doctor COLLECTIVE: all-to-all-v has no algorithms to weigh"),
        (&["doctor", "--per-group"][..], "doctor --per-group: the sweep's, not doctor's"),
    ] {
        let o = mpirun_in(dir.path(), 2, args, 120);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("coll-bench: error: ")).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].contains(want), "{args:?}: {err}");
        assert!(!stdout(&o).contains("# ceiling:"), "{args:?}: measured before refusing:\n{}", stdout(&o));
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("kept.json")).unwrap(), "mine\n");
    assert!(!dir.path().join("x.csv").exists());
}

/// A limit too short for anything (2 s, of which the hosts alone are costed 2 s): doctor says
/// so on the page and in the JSON, measures at its smallest size, weighs no algorithm, and ranks
/// what it has; well within the time a full run takes (about 15 s here at 64M).
#[test]
fn a_limit_too_short_leaves_the_algorithms_out_and_says_so() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(dir.path(), 2, &["doctor", "--max-time", "2s", "--json", "d.json", "--progress"], 120);
    let out = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}\n{}", stderr(&o));
    let first = out.lines().next().unwrap_or_default();
    assert!(first.ends_with("time limit 2.0 s (--max-time)"), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("# size: 256K: even 256K is estimated at")
            && l.contains("the algorithms are not weighed")),
        "{out}"
    );
    assert!(
        stderr(&o).contains("# doctor: ") && stderr(&o).contains(": probe: sendrecv around the ring"),
        "{}",
        stderr(&o)
    );
    let j = json(dir.path(), "d.json");
    let plan = &j["run"]["plan"];
    assert_eq!((plan["asked_size_bytes"].as_u64(), plan["size_bytes"].as_u64()), (Some(64 << 20), Some(256 << 10)));
    assert_eq!(plan["algorithms_left_out"].as_array().map(|a| a.len()), Some(3), "{plan}");
    assert_eq!(j["alternatives"].as_array().map(|a| a.len()), Some(0));
    assert_eq!(j["run"]["options"]["max_time_s"].as_f64(), Some(2.0));
    let mut phases: Vec<&str> = plan["phases"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    // The heap's phase, after the planned ones: only where a collective page-faulted, and
    // present wherever it gave a measurement (a kept run that still faulted gives none).
    let faulted = |c: &serde_json::Value| c["minor_faults_per_call"].as_f64().is_some_and(|f| f >= 16.0);
    let heap_phase = phases.last() == Some(&"heap");
    assert!(!heap_phase || j["collectives"].as_array().unwrap().iter().any(faulted), "{j}");
    assert!(heap_phase || j["heap"].as_array().unwrap().is_empty(), "{j}");
    phases.retain(|p| *p != "heap");
    assert_eq!(phases, ["ceiling and collectives", "pairs", "hosts", "algorithms"]);
    assert!(j["seconds"].as_f64().unwrap() < 10.0, "{out}");
}

/// doctor's help offers none of what doctor refuses; the sweep's lists every collective it takes.
#[test]
fn help_offers_what_is_taken_and_nothing_refused() {
    let help = |args: &[&str]| {
        let o = std::process::Command::new(BIN).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let doctor = help(&["help", "doctor"]);
    for flag in ["--pattern", "--per-group", "--write-matrix"] {
        assert!(!doctor.contains(flag), "{flag} in doctor's help: {doctor}");
    }
    let sweep = help(&["--help"]);
    let collectives = sweep.lines().find(|l| l.trim_start().starts_with("[COLLECTIVE]")).unwrap_or_default();
    assert!(collectives.contains("all-to-all-v"), "{sweep}");
}
