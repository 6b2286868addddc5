//! `coll-bench tune`: every algorithm the library reports is timed and checked, the rules file
//! is one the library accepts and applies, `--verify` runs the default with it, bad input is
//! one line and exit 2. No timing is judged here (the machine is shared and noisy): the bars are
//! measured by bench/tune.sh.
mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};

/// The algorithm names the library's own tool lists for reduce-scatter (`MPI_Reduce_scatter_block`):
/// Open MPI's `ompi_info` (independent of MPI_T), MPICH 4.0's documented list.
fn reduce_scatter_algorithms() -> Vec<String> {
    if FAMILY == "mpich" {
        return ["noncommutative", "recursive_doubling", "pairwise", "recursive_halving"].map(String::from).to_vec();
    }
    let out = std::process::Command::new("ompi_info")
        .args(["--param", "coll", "tuned", "--level", "9", "--parsable"])
        .output()
        .expect("ompi_info runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let prefix = "mca:coll:tuned:param:coll_tuned_reduce_scatter_block_algorithm:enumerator:value:";
    let names: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|v| v.split_once(':'))
        .filter(|(v, _)| *v != "0")
        .map(|(_, n)| n.to_string())
        .collect();
    assert!(names.len() >= 2, "ompi_info lists the algorithms: {text}");
    names
}

fn tune(dir: &Path, n: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut full = vec!["tune"];
    full.extend_from_slice(args);
    mpirun_env(dir, n, &full, env, 600)
}

/// `full`: `--in-place --no-skip` (every candidate × size × placement); otherwise tune's
/// default (out of place, the skip rule on: skipped cells are rows marked `skipped`).
fn check_reduce_scatter_tune(n: usize, full: bool) {
    let dir = tempfile::tempdir().unwrap();
    // MPICH with more ranks than cores pays a scheduler quantum per call: fewer sizes there.
    let step = if oversubscribed_mpich(n) { "8" } else { "2" };
    let mut args = vec![
        "reduce-scatter",
        "-b",
        "64K",
        "-e",
        "4M",
        "-f",
        step,
        "-n",
        "3",
        "-w",
        "1",
        "--csv",
        "rs.csv",
        "--write-rules",
        "rs.rules",
    ];
    if full {
        args.extend(["--in-place", "--no-skip"]);
    }
    let o = tune(dir.path(), n, &args, &[]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(!out.contains("WRONG"), "{out}");
    let listed = out
        .lines()
        .find(|l| l.starts_with("# reduce-scatter: ") && l.contains("candidates"))
        .unwrap_or_else(|| panic!("{out}"));
    for name in reduce_scatter_algorithms() {
        assert!(listed.contains(&format!(":{name}")), "{name} missing from {listed}");
    }
    assert!(listed.contains("ring(coll-bench)"), "{listed}");
    // The library's other function for the collective is a candidate too.
    assert!(listed.ends_with(", MPI_Reduce_scatter(call)"), "{listed}");
    // The skip rule is stated before the table unless every cell runs.
    assert_eq!(out.contains("# reduce-scatter: skip rule: "), !full, "{out}");
    // The CSV: the sweep's columns (the ceiling's empty: tune measures none) plus
    // algorithm_id, is_default, skipped; a row for
    // every candidate × size (× placement with --in-place), every cell run correct, every cell
    // not run marked with the rule's reason and no numbers.
    let mut r = csv::Reader::from_path(dir.path().join("rs.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap_or_else(|| panic!("no {name} in {h:?}"));
    let last: Vec<&str> = h.iter().skip(h.len() - 18).collect();
    assert_eq!(
        last,
        [
            "algorithm",
            "algorithm_source",
            "ceiling_gbps",
            "ceiling_source",
            "pct_of_ceiling",
            "order",
            "budget_s",
            "pattern",
            "imbalance_sent",
            "imbalance_received",
            "dropped_pct",
            "cuda_graph",
            "agg_iters",
            "cpu_time_us",
            "register",
            "algorithm_id",
            "is_default",
            "skipped"
        ]
    );
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    let candidates = listed.split(" candidates: ").nth(1).unwrap().split(", ").count();
    let sizes = if step == "8" { 3 } else { 7 };
    let placements = if full { 2 } else { 1 };
    assert_eq!(rows.len(), candidates * sizes * placements, "{out}");
    assert_eq!(
        rows.iter().filter(|r| &r[col("placement")] == "in-place").count(),
        if full { candidates * sizes } else { 0 }
    );
    let (run, skipped): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r[col("skipped")].is_empty());
    assert!(run.iter().all(|r| &r[col("wrong")] == "0"), "a wrong result in the CSV");
    if full {
        assert!(skipped.is_empty(), "--no-skip skipped a cell");
    }
    for r in &skipped {
        assert!(r[col("skipped")].starts_with("skipped: more than 3x the fastest at "), "{r:?}");
        assert!(r[col("wrong")].is_empty() && r[col("median_us")].is_empty() && &r[col("iters")] == "0", "{r:?}");
        assert_ne!(&r[col("is_default")], "true", "the default is always run");
        // Once skipped, skipped at every larger size.
        let (alg, size) = (&r[col("algorithm")], r[col("size_bytes")].parse::<u64>().unwrap());
        assert!(rows
            .iter()
            .filter(|x| &x[col("algorithm")] == alg && x[col("size_bytes")].parse::<u64>().unwrap() > size)
            .all(|x| !x[col("skipped")].is_empty()));
    }
    // The table says `skip` where the CSV says skipped.
    let table_skips: usize = out
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().filter(|w| *w == "skip").count())
        .sum();
    assert_eq!(table_skips, skipped.len(), "{out}");
    let defaults = rows.iter().filter(|r| &r[col("is_default")] == "true").count();
    assert_eq!(defaults, sizes * placements);
    assert!(rows.iter().any(|r| &r[col("algorithm")] == "ring(coll-bench)" && r[col("algorithm_id")].is_empty()));
    let call: Vec<_> = rows.iter().filter(|r| &r[col("algorithm")] == "MPI_Reduce_scatter(call)").collect();
    assert_eq!(call.len(), sizes * placements, "{out}");
    assert!(call.iter().all(|r| &r[col("algorithm_source")] == "other call" && r[col("algorithm_id")].is_empty()));
    // Where the time went, per collective.
    assert!(
        out.lines()
            .any(|l| l.starts_with("# reduce-scatter: ") && l.contains(" s in all") && l.contains("timed calls")),
        "{out}"
    );
    // The rules file: the library's own format, read back by --verify.
    let rules = std::fs::read_to_string(dir.path().join("rs.rules")).unwrap();
    match FAMILY {
        "mpich" => assert!(rules.starts_with("# coll-bench-rules mpich"), "{rules}"),
        _ => {
            assert!(rules.starts_with("# coll-bench-rules openmpi"), "{rules}");
            assert!(rules.contains("coll_tuned_dynamic_rules_filename"), "{rules}");
            assert!(rules.contains("13   # reduce-scatter"), "{rules}");
        }
    }
    assert_eq!(rules.matches("# coll-bench-measured reduce-scatter").count(), sizes, "{rules}");
    // The file's choice ran at every size: a time for it everywhere (MPICH's one algorithm for
    // every size is never one the skip rule left out somewhere).
    assert!(!rules.contains("NaN"), "{rules}");
    let o = tune(dir.path(), n, &["--verify", "rs.rules", "-n", "3", "-w", "1", "--no-csv"], &[]);
    let (out, err) = (stdout(&o), stderr(&o));
    // The verdict is timing (exit 0 or 1); correctness is not.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}\n{err}");
    assert!(!out.contains("WRONG") && !out.contains("FAILED"), "{out}");
    let verdicts: Vec<&str> =
        out.lines().filter(|l| !l.starts_with('#') && (l.contains(" ok (") || l.contains(" MISSED ("))).collect();
    assert_eq!(verdicts.len(), sizes, "{out}");
    // A size the file leaves to the library is the library's default in both runs: never MISSED;
    // every other is timed beside the default (a speed-up is shown).
    for (line, m) in verdicts.iter().zip(rules.lines().filter(|l| l.starts_with("# coll-bench-measured"))) {
        if m.split_whitespace().nth(4) == Some("default") {
            assert!(line.ends_with("ok (the file keeps the library's default here)"), "{line}\n{out}");
        } else {
            assert!(line.split_whitespace().nth(3).is_some_and(|x| x.ends_with('x')), "{line}\n{out}");
        }
    }
}

#[test]
fn reduce_scatter_on_2_ranks_lists_and_checks_every_algorithm() {
    check_reduce_scatter_tune(2, false);
}

/// Every cell, both placements (`--in-place --no-skip`).
#[test]
fn reduce_scatter_on_4_ranks_lists_and_checks_every_algorithm() {
    check_reduce_scatter_tune(4, true);
}

/// Open MPI reads and applies a file in the format tune writes (its comments included): a rule
/// selecting all-gather's two-process algorithm for a 4-rank communicator makes the library
/// refuse every all-gather, so the sweep fails with the file and passes without it. Then a file
/// tune wrote, applied the way it says, leaves a sweep correct.
#[test]
fn open_mpi_applies_the_rules_file() {
    if FAMILY != "openmpi" {
        say_skipped("open_mpi_applies_the_rules_file", "the dynamic rules file is Open MPI's");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two-proc.rules");
    std::fs::write(
        &file,
        "# coll-bench-rules openmpi\n# a comment\n1   # collectives\n0   # all-gather\n1   # communicator sizes\n4   # ranks\n1   # message-size rules\n0 6 0 0   # from 0 B: two_proc\n",
    )
    .unwrap();
    let env = [
        ("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
        ("OMPI_MCA_coll_tuned_dynamic_rules_filename", file.to_str().unwrap()),
    ];
    let args = ["all-gather", "-b", "1K", "-e", "1K", "-n", "2", "--no-csv"];
    let with = mpirun_env(dir.path(), 4, &args, &env, 120);
    assert_ne!(with.status.code(), Some(0), "the two-process rule was not applied: {}", stdout(&with));
    let without = mpirun_env(dir.path(), 4, &args, &env[..1], 120);
    assert_eq!(without.status.code(), Some(0), "{}", stderr(&without));
    // `tune --verify` runs the file's choice at each size beside the default, as the library
    // picks it from the file: the same rule fails its run, and the verdict names it.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("# coll-bench-measured all-gather 1024 two_proc 10 10\n");
    std::fs::write(&file, text).unwrap();
    let verify = tune(dir.path(), 4, &["--verify", file.to_str().unwrap(), "-n", "2", "--no-csv"], &[]);
    assert_eq!(verify.status.code(), Some(1), "--verify did not run the file's choice: {}", stdout(&verify));
    assert!(stdout(&verify).contains("FAILED (two_proc: the library refused it)"), "{}", stdout(&verify));
    // A job that already has a rules file applied has no default to compare with: refused first.
    let applied = tune(dir.path(), 2, &["--verify", file.to_str().unwrap(), "--no-csv"], &env);
    assert_eq!(applied.status.code(), Some(2), "{}", stdout(&applied));
    assert!(stdout(&applied).is_empty(), "{}", stdout(&applied));
    assert!(stderr(&applied).contains("a rules file is applied to this job"), "{}", stderr(&applied));

    let o = tune(
        dir.path(),
        2,
        &[
            "all-reduce",
            "reduce-scatter",
            "-b",
            "1K",
            "-e",
            "1M",
            "-f",
            "32",
            "-n",
            "3",
            "-w",
            "1",
            "--no-csv",
            "--write-rules",
            "t.rules",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let rules = dir.path().join("t.rules");
    let env = [
        ("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
        ("OMPI_MCA_coll_tuned_dynamic_rules_filename", rules.to_str().unwrap()),
    ];
    let o = mpirun_env(
        dir.path(),
        2,
        &["all-reduce", "reduce-scatter", "-b", "1K", "-e", "1M", "-f", "4", "-n", "3", "--csv", "s.csv"],
        &env,
        300,
    );
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(rows(&o).iter().all(|r| r[8] == "0" && r[12] == "0"), "{}", stdout(&o));
    // tune in a job with a rules file applied says that its `default` is the file's choice.
    let o = tune(dir.path(), 2, &["all-reduce", "-b", "1K", "-e", "1K", "-n", "2", "-w", "1", "--no-csv"], &env);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("# note: a rules file is applied to this job"), "{}", stdout(&o));
    // The sweep names, at each size, the algorithm tune chose there (its rules' comments:
    // `from N B: name`), or the fixed rules where tune kept the library's default.
    let text = std::fs::read_to_string(&rules).unwrap();
    let mut chosen: Vec<(String, u64, String)> = vec![];
    let mut current = String::new();
    for line in text.lines() {
        if let Some(c) = line.split("# ").nth(1).filter(|c| *c == "all-reduce" || *c == "reduce-scatter") {
            current = c.to_string();
        }
        if let Some((from, name)) = line.split_once("# from ").and_then(|(_, r)| r.split_once(" B: ")) {
            chosen.push((current.clone(), from.parse().unwrap(), name.trim().to_string()));
        }
    }
    assert!(!chosen.is_empty(), "{text}");
    let mut r = csv::Reader::from_path(dir.path().join("s.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    for rec in r.records() {
        let rec = rec.unwrap();
        let (coll, size) = (rec[col("collective")].to_string(), rec[col("size_bytes")].parse::<u64>().unwrap());
        let rule = chosen.iter().rfind(|(c, from, _)| *c == coll && *from <= size);
        let got = (&rec[col("algorithm")], &rec[col("algorithm_source")]);
        match rule {
            Some((_, _, name)) if name != "default" => {
                assert_eq!(got, (name.as_str(), "rules file"), "{coll} {size}\n{text}")
            }
            _ => assert_eq!(got.1, "fixed rules", "{coll} {size}\n{text}"),
        }
    }
}

/// `--verify` times the file's choice beside the library's default in one run: a size the file
/// leaves to the library is `ok` without a comparison (it runs what it ran), a size where it
/// selects another algorithm shows both times and the speed-up; a file's measured line without
/// a time for the chosen one (`NaN`, a cell tune did not run) reaches no table. A job whose
/// variable already selects an algorithm is refused before anything is measured.
#[test]
fn verify_times_the_files_choice_beside_the_default_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let var = "MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM";
    let rules = match FAMILY {
        "mpich" => format!("# coll-bench-rules mpich\n{var}=pairwise\n"),
        // The default below 128 KiB; from it, algorithm 1 (basic_linear).
        _ => "# coll-bench-rules openmpi\n1\n13\n1\n2\n2\n0 0 0 0\n131072 1 0 0\n".to_string(),
    };
    let chosen = if FAMILY == "mpich" { "pairwise" } else { "basic_linear" };
    let text = format!(
        "{rules}# coll-bench-measured reduce-scatter 65536 default 1000000 1000000 1000000\n# coll-bench-measured reduce-scatter 262144 {chosen} 1000000 NaN NaN\n"
    );
    std::fs::write(dir.path().join("old.rules"), text).unwrap();
    let o = tune(dir.path(), 2, &["--verify", "old.rules", "-n", "3", "-w", "1", "--no-csv"], &[]);
    let (out, err) = (stdout(&o), stderr(&o));
    // Which is faster is this machine's business (exit 0 or 1); what ran is not.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}\n{err}");
    assert!(!out.to_lowercase().contains("nan"), "{out}");
    let row = |size: &str| {
        out.lines().find(|l| l.split_whitespace().next() == Some(size)).unwrap_or_else(|| panic!("no {size}: {out}"))
    };
    let r = row("65536");
    if FAMILY == "mpich" {
        // MPICH's line holds for every size.
        assert!(r.contains(&format!("({chosen}")), "{out}");
    } else {
        assert!(r.ends_with("ok (the file keeps the library's default here)"), "{out}");
        assert_eq!(r.split_whitespace().nth(2), Some("(default)"), "{r}");
    }
    // The sizes the file records, not the steps between them.
    let timed: Vec<&str> =
        out.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(timed, ["65536", "262144"], "{out}");
    let r = row("262144");
    let f: Vec<&str> = r.split_whitespace().collect();
    assert!(f[1].parse::<f64>().is_ok() && f[2].parse::<f64>().is_ok(), "both timed in this run: {r}");
    assert!(f[3].ends_with('x') && f[4] == "-", "the speed-up now, none recorded: {r}");
    assert!(r.contains(&format!("ok ({chosen}")) || r.contains(&format!("MISSED ({chosen} slower")), "{r}");
    // A variable that already selects an algorithm: no default to compare with.
    let (set, value) = match FAMILY {
        "mpich" => (var, "pairwise"),
        _ => ("OMPI_MCA_coll_tuned_reduce_scatter_block_algorithm", "2"),
    };
    let o = tune(dir.path(), 2, &["--verify", "old.rules", "--no-csv"], &[(set, value)]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stdout(&o).is_empty(), "measured before refusing: {}", stdout(&o));
    assert!(stderr(&o).contains("is set to") && stderr(&o).contains("run it without that setting"), "{}", stderr(&o));
}

/// By default the library runs on the application's heap (no mallopt) and tune's file and
/// lines say nothing about the allocator; `--malloc kept` keeps freed memory in the heap, says
/// so in the header, and the file says its times hold only for a job with that heap. A user's
/// own malloc variable is named in the header, and left alone.
#[test]
fn the_heap_is_the_applications_unless_malloc_kept_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    // The launcher's environment without any malloc variable of the caller's, plus `env`.
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = mpirun_cmd(2, 120);
        c.args(args).current_dir(dir.path());
        for v in ["MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"] {
            c.env_remove(v);
        }
        c.envs(env.iter().copied());
        let o = c.output().expect("the MPI launcher runs");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let sweep = ["reduce-scatter", "-b", "1K", "-e", "1K", "-n", "2", "--no-csv"];
    let out = run(&sweep, &[]);
    assert!(out.contains("# malloc: default: the C library's allocator untouched"), "{out}");
    let out = run(&["tune", "reduce-scatter", "-b", "1K", "-e", "1K", "-n", "3", "--no-csv"], &[]);
    assert!(out.lines().nth(2).is_some_and(|l| l.starts_with("# malloc: default: ")), "{out}");
    let kept_line = |args: &[&str]| {
        let out = run(args, &[]);
        out.lines().nth(2).is_some_and(|l| l.starts_with("# malloc: kept: freed memory kept in the heap"))
    };
    assert!(kept_line(&["tune", "reduce-scatter", "-b", "1K", "-e", "1K", "-n", "3", "--no-csv", "--malloc", "kept"]));
    // tune's file mentions the allocator only when measured with the kept heap, as the condition
    // its times hold under.
    let rules_say = |extra: &[&str], env: &[(&str, &str)]| {
        let _ = std::fs::remove_file(dir.path().join("h.rules"));
        let mut args =
            vec!["tune", "reduce-scatter", "-b", "1K", "-e", "1K", "-n", "3", "--no-csv", "--write-rules", "h.rules"];
        args.extend_from_slice(extra);
        let out = run(&args, env);
        let file = std::fs::read_to_string(dir.path().join("h.rules")).unwrap();
        let kept =
            "these times hold for a job whose heap keeps it too (MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295)";
        (out.contains(kept), file.contains(kept), out.contains("MALLOC_") || file.contains("MALLOC_"))
    };
    assert_eq!(rules_say(&[], &[]), (false, false, false));
    assert_eq!(rules_say(&["--malloc", "kept"], &[]), (true, true, true));
    let out = run(&sweep, &[("MALLOC_TRIM_THRESHOLD_", "1048576")]);
    assert!(
        out.contains(
            "# malloc: default: the C library's allocator as MALLOC_TRIM_THRESHOLD_ in the environment sets it"
        ),
        "{out}"
    );
    assert!(!out.contains("freed memory kept"), "{out}");
}

fn refused(args: &[&str], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("taken.rules"), "mine\n").unwrap();
    let o = tune(dir.path(), 2, args, &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(lines[0].contains(needle), "{args:?}: {needle:?} not in {err}");
    assert!(stdout(&o).is_empty(), "{args:?}: measured before refusing: {}", stdout(&o));
    assert_eq!(std::fs::read_to_string(dir.path().join("taken.rules")).unwrap(), "mine\n");
    assert_eq!(files(dir.path()).len(), 1, "{:?}", files(dir.path()));
}

#[test]
fn bad_input_is_one_line_and_exit_2_before_measuring() {
    refused(&["gather"], "tune COLLECTIVE: gather cannot be tuned");
    refused(&["--impl", "ring"], "tune: --backend and --impl");
    refused(&["--json", "t.json"], "tune: --json, --markdown, --progress, --no-ceiling and --write-matrix");
    refused(&["--no-ceiling"], "--write-matrix are the sweep's");
    refused(&["--write-matrix", "m.txt"], "--write-matrix are the sweep's");
    refused(&["reduce-scatter", "--write-rules", "taken.rules"], "--write-rules");
    refused(&["--verify", "missing.rules"], "tune --verify: cannot read 'missing.rules'");
    refused(&["--verify", "taken.rules"], "not a rules file written by coll-bench tune");
    refused(
        &["--pattern", "spread=0.5"],
        "tune --pattern: shapes all-to-all-v, which tune does not tune; expected no --pattern",
    );
    refused(&["all-to-all-v"], "tune COLLECTIVE: all-to-all-v cannot be tuned");
}

/// tune's help offers none of what tune refuses.
#[test]
fn help_offers_nothing_tune_refuses() {
    let o = Command::new(BIN).args(["help", "tune"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for flag in ["--pattern", "--write-matrix", "--json"] {
        assert!(!stdout(&o).contains(flag), "{flag} in tune's help: {}", stdout(&o));
    }
}
