//! Every bad input: one line on stderr naming the flag, printed once (not per rank), exit 2,
//! no panic, no CSV left behind, no hang.
mod common;
use common::*;

fn refused(n: usize, args: &[&str], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut full: Vec<&str> = args.to_vec();
    full.extend(["--csv", "run.csv"]);
    let o = mpirun_in(dir.path(), n, &full, 120);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: expected one line, got:\n{err}");
    assert!(lines[0].starts_with("coll-bench: error: "), "{args:?}: {err}");
    assert!(lines[0].contains(needle), "{args:?}: {needle:?} not in {err}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err}");
    assert!(stdout(&o).is_empty(), "{args:?}: table printed: {}", stdout(&o));
    assert!(files(dir.path()).is_empty(), "{args:?}: left {:?}", files(dir.path()));
}

#[test]
fn sizes() {
    refused(2, &["-b", "0"], "-b/--minbytes");
    refused(2, &["-b", "-64"], "-b/--minbytes");
    refused(2, &["-e", "12Q"], "-e/--maxbytes");
    refused(2, &["-e", "1.5M"], "-e/--maxbytes");
    refused(2, &["-b", "1M", "-e", "1K"], "larger than -e/--maxbytes");
    refused(2, &["-i", "0"], "-i/--stepbytes");
    refused(2, &["--budget", "-5ms"], "--budget: '-5ms' is not a positive duration");
    refused(2, &["--max-time", "-1h"], "--max-time: '-1h'");
}

#[test]
fn steps_and_counts() {
    refused(2, &["-f", "1"], "-f/--stepfactor");
    refused(2, &["-f", "0.5"], "-f/--stepfactor");
    refused(2, &["-n", "0"], "-n/--iters");
    refused(2, &["-w", "many"], "-w/--warmup-iters");
    refused(2, &["-c", "yes"], "-c/--check");
    refused(2, &["-a", "7"], "-a/--average");
}

#[test]
fn names() {
    refused(2, &["all-reduce", "allscatter"], "COLLECTIVE: unknown collective 'allscatter'");
    refused(2, &["-d", "float128"], "-d/--datatype: unknown value 'float128'");
    refused(2, &["-d", "bfloat16"], "-d/--datatype: bfloat16 is not supported by the mpi backend");
    refused(2, &["-d", "fp8e4m3"], "-d/--datatype: fp8e4m3 is not supported by the mpi backend");
    refused(2, &["-o", "xor"], "-o/--op: unknown value 'xor'");
    refused(2, &["--backend", "gloo"], "--backend");
    refused(2, &["--impl", "ring2"], "--impl");
    refused(
        2,
        &["--malloc", "big"],
        "--malloc: unknown heap 'big'; expected default (the allocator an application gets) or kept",
    );
    refused(2, &["--frobnicate"], "--frobnicate");
}

/// nccl-tests' launch modes (issue 48): the nccl backend's only, each refused on the mpi backend
/// by name, out of range, and where they cannot run together; tune and doctor refuse them.
#[test]
fn launch_modes_are_the_nccl_backends() {
    refused(2, &["-G", "1"], "-G/--cuda-graph: a launch mode of the nccl backend");
    refused(2, &["-m", "4"], "-m/--agg-iters: a launch mode of the nccl backend");
    refused(2, &["-C", "1"], "-C/--cpu-time: a launch mode of the nccl backend");
    refused(2, &["-m", "0"], "-m/--agg-iters: 0 is out of range");
    refused(2, &["-G", "2000"], "-G/--cuda-graph: 2000 is out of range; expected a whole number from 0 to 1024");
    refused(2, &["-C", "yes"], "-C/--cpu-time");
    refused(2, &["--backend", "nccl", "-G", "1", "-z", "1"], "-G/--cuda-graph with -z 1");
    refused(2, &["--backend", "nccl", "-m", "2", "ping-pong"], "-m/--agg-iters: ping-pong's");
    refused(2, &["tune", "-G", "1"], "tune -G/--cuda-graph");
    refused(2, &["doctor", "-m", "2"], "doctor -m/--agg-iters");
    refused(2, &["-R", "1"], "-R/--register: a launch mode of the nccl backend");
    refused(2, &["--backend", "nccl", "-R", "3"], "-R/--register: '3' is not a registration level; expected 0 (none), 1 (ncclCommRegister) or 2 (symmetric windows)");
    refused(2, &["tune", "-R", "2"], "tune -R/--register");
    refused(2, &["doctor", "--register", "1"], "doctor -R/--register");
    refused(2, &["step", "-G", "1"], "-G/--cuda-graph: a launch mode of the nccl backend");
    refused(2, &["step", "--backend", "nccl", "-R", "4"], "-R/--register: '4' is not a registration level");
}

/// Values that used to get through and fail later (issue 49): a layout whose sizes overflow
/// (wrapped to 2, then "capacity overflow" on every rank) and a `-T` too short to tell a stuck
/// rank from a slow one (taken for a hang of ranks that had all answered).
#[test]
fn values_out_of_range_are_refused_up_front() {
    refused(2, &["--groups", "tp=9223372036854775809,pp=2"], "too large");
    refused(2, &["-T", "1ns"], "-T/--timeout: 1ns is below the floor of 1 s");
    refused(2, &["-T", "500ms"], "-T/--timeout");
    // An empty output path: refused by the flag's own parser (report::outfile::check refuses it
    // again for every output, wherever a path comes from).
    for flag in ["--json", "--markdown", "--plot", "--write-matrix", "--csv"] {
        refused(2, &[flag, ""], &format!("'{flag} <"));
    }
}

/// A standard output that cannot take the output (a full disk): one line, exit 2, never an
/// internal error or a silent 0, for every subcommand (issue 49; the sweep exited 0 before).
/// A closed pipe (`| head`) is not an error.
#[test]
fn a_full_standard_output_is_one_line_and_exit_2() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    let Ok(_) = full else { return say_skipped("a_full_standard_output_is_one_line_and_exit_2", "no /dev/full") };
    let dir = tempfile::tempdir().unwrap();
    for i in 1..=2 {
        let o = mpirun_in(dir.path(), 2, &["all-reduce", "-e", "1K", "-n", "3", "--csv", &format!("r{i}.csv")], 120);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    // Every subcommand that prints, as one process (`--one-rank`: under mpirun a rank's stdout
    // is the launcher's pipe, and what the launcher cannot write is the launcher's to say;
    // doctor and pairs need two ranks and refuse one before printing anything).
    let cases: [&[&str]; 10] = [
        &["compare", "r1.csv", "r2.csv"],
        &["spec", "from-run", "r1.csv", "r2.csv"],
        &["info", "--json"],
        &["info", "--one-rank"],
        &["plot", "r1.csv", "-o", "p.svg"],
        &["all-reduce", "-e", "1K", "--no-csv", "--one-rank"],
        &["tune", "all-reduce", "-b", "8", "-e", "64", "--no-csv", "--one-rank"],
        &["step", "--no-csv", "--one-rank"],
        &["--help"],
        &["help", "check"],
    ];
    for args in cases {
        let o = std::process::Command::new(BIN)
            .args(args)
            .current_dir(dir.path())
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .stdout(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("coll-bench: error: ")).collect();
        assert_eq!(ours.len(), 1, "{args:?}: {err}");
        assert!(ours[0].contains("standard output failed") && !err.contains("internal error"), "{args:?}: {err}");
    }
}

#[test]
fn root_beyond_the_world() {
    refused(2, &["broadcast", "-r", "2"], "-r/--root: 2 is not a rank of this job");
    refused(3, &["gather", "-r", "7"], "-r/--root: 7");
}

#[test]
fn buffers_that_cannot_fit() {
    refused(2, &["-b", "1T", "-e", "4T"], "-e/--maxbytes: the buffers need");
}

#[test]
fn unwritable_csv() {
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(dir.path(), 2, &["-e", "1K", "--csv", "/proc/no/such/dir/run.csv"], 120);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--csv: cannot write '/proc/no/such/dir/run.csv'"), "{err}");
    assert!(stdout(&o).is_empty());
}

#[test]
fn launcher_disagreement_names_both_views() {
    // A binary that MPI starts as one rank while the launcher's environment says 8: the classic
    // "linked against another MPI" failure. Simulated by a torchrun-style variable that Open
    // MPI does not set.
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new("timeout")
        .args(["60", BIN, "-e", "1K", "--no-csv"])
        .current_dir(dir.path())
        .env("RANK", "5")
        .env("WORLD_SIZE", "8")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // torchrun's variables with no MPI launcher: torchrun is named, not a different MPI (the
    // other family's launcher below is the disagreement case).
    assert!(err.contains("torchrun's variables are set (RANK=5 WORLD_SIZE=8)"), "{err}");
}

#[test]
fn help_and_version_print_once_and_exit_0() {
    let (o, _d) = mpirun(2, &["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o).matches("coll-bench").count(), 1, "{}", stdout(&o));
    let (o, _d) = mpirun(2, &["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o).matches("Usage:").count(), 1);
}

/// The top-level help lists exactly the subcommands coll-bench has, one line each; `help SUB`
/// shows that subcommand's help with its launch form or an example; an unknown one is refused.
#[test]
fn help_lists_every_subcommand_and_help_sub_works() {
    let (o, _d) = mpirun(2, &["help"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text.matches("Usage:").count(), 1, "{text}");
    let block: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Subcommands"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        block,
        ["(none)", "check", "tune", "doctor", "pairs", "step", "info", "plot", "compare", "spec"],
        "{text}"
    );
    assert!(!text.contains("next;"), "the tagline still promises NCCL for later: {text}");
    for sub in ["check", "tune", "doctor", "pairs", "step", "info", "plot", "compare", "spec"] {
        let (o, _d) = mpirun(2, &["help", sub]);
        let text = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "help {sub}: {}", stderr(&o));
        assert_eq!(text.matches("Usage:").count(), 1, "help {sub}: {text}");
        assert!(text.contains(&format!("Usage: coll-bench {sub}")), "help {sub}: {text}");
        assert!(text.contains("Example: ") || text.contains("Examples:\n"), "help {sub} has no example: {text}");
    }
    let (o, _d) = mpirun(2, &["help", "nonsense"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("help: unknown subcommand 'nonsense'"), "{err}");
}

#[test]
fn ranks_given_different_options_stop_together() {
    // MPMD launch: rank 1 gets another -e than rank 0.
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_cmd(1, 120)
        .args(["-e", "1K", "--csv", "x.csv", ":", "-n", "1", BIN, "-e", "2K", "--csv", "x.csv"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("rank 1") && err.contains("different options than rank 0"), "{err}");
    assert!(files(dir.path()).is_empty());
}

#[test]
fn own_implementations_only_for_what_they_implement() {
    refused(
        2,
        &["--impl", "ring", "broadcast"],
        "--impl ring: implements all-reduce, all-gather, reduce-scatter only, not broadcast",
    );
    refused(
        2,
        &["--impl", "recursive-doubling"],
        "--impl recursive-doubling: implements all-reduce only, not all-gather",
    );
}

/// The other MPI family's launcher starting this build (both installed, as on our CI): every rank
/// sees a world of one while the launcher's variables say two, and says so in one line.
#[test]
fn the_other_familys_launcher_is_named_as_the_cause() {
    let other = if FAMILY == "mpich" { "openmpi" } else { "mpich" };
    // Its own per-family name only: a plain `mpiexec` may be this family's.
    let launcher = launcher_of(other)[0];
    if !launcher.ends_with(&format!(".{other}")) {
        say_skipped("the_other_familys_launcher_is_named_as_the_cause", &format!("no {launcher}"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = launch_cmd_of(other, 60)
        .args(["-n", "2", BIN, "-e", "1K", "--csv", "x.csv"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("coll-bench: ")).collect();
    assert!(!ours.is_empty() && ours.len() <= 2, "{err}");
    for l in ours {
        assert!(l.contains("launcher and MPI disagree") && l.contains("MPI says rank 0 of 1"), "{err}");
    }
    assert!(files(dir.path()).is_empty());
}

/// The tests' stderr drops Open MPI's libevent warnings and nothing else (`common::stderr`).
#[test]
fn open_mpis_libevent_warnings_are_not_counted_as_our_lines() {
    use std::os::unix::process::ExitStatusExt;
    let err = "coll-bench: error: step --bucket: '0' is zero; expected …\n\
               [warn] Epoll MOD(1) on fd 25 failed. Old events were 6; read change was 0 (none); write change was 2 (del); close change was 0 (none): Bad file descriptor\n\
               [warn] something else\n";
    let o = std::process::Output {
        status: std::process::ExitStatus::from_raw(2 << 8),
        stdout: vec![],
        stderr: err.as_bytes().to_vec(),
    };
    assert_eq!(stderr(&o), "coll-bench: error: step --bucket: '0' is zero; expected …\n[warn] something else\n");
}

/// A tune CSV given to `spec from-run` or `compare` is refused as what it is (issue 47; was "no
/// out-of-place rows of the mpi backend" and "share no point").
#[test]
fn a_tune_csv_is_named_as_one_where_a_sweep_csv_is_expected() {
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun_in(dir.path(), 2, &["tune", "all-reduce", "-b", "1K", "-e", "4K", "--csv", "t.csv"], 300);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = mpirun_in(dir.path(), 2, &["all-reduce", "-b", "1K", "-e", "4K", "-n", "3", "--csv", "s.csv"], 120);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for args in [&["spec", "from-run", "t.csv"][..], &["compare", "t.csv", "s.csv"], &["compare", "s.csv", "t.csv"]] {
        let o = std::process::Command::new(BIN).args(args).current_dir(dir.path()).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].contains("'t.csv' is a tune CSV") && lines[0].contains("reads sweep CSVs"), "{args:?}: {err}");
    }
}

/// `step`'s model sizes (issue 65): every product of --layers, --hidden, --seq, --micro-batch,
/// --micro-batches, --topk and --params checked; one that wraps, or passes what a rank can hold,
/// is refused naming the flags (it used to wrap to 0 parameters and report "all data correct");
/// a layout whose calls would be empty is refused too.
#[test]
fn step_model_sizes_that_overflow() {
    refused(
        2,
        &["step", "--layout", "dp=2", "--hidden", "4294967296", "--seq", "4294967296"],
        "step --layers/--hidden: a gradient of 12 × 4 layers × 4294967296² hidden parameters is more than a rank can hold (at most 256T a call)",
    );
    refused(
        2,
        &["step", "--layout", "dp=2", "--params", "1000", "--hidden", "65536", "--seq", "4294967296"],
        "step --micro-batch/--seq/--hidden: an activation of 1 × 4294967296 × 65536 elements of 2 bytes is more than a rank can hold",
    );
    refused(
        2,
        &[
            "step",
            "--layout",
            "dp=2",
            "--params",
            "1000",
            "--layers",
            "1099511627776",
            "--micro-batches",
            "1099511627776",
        ],
        "step --layers/--micro-batches: 4 × 1099511627776 layers × 1099511627776 micro-batches calls",
    );
    refused(
        2,
        &[
            "step",
            "--layout",
            "ep=2",
            "--experts",
            "2",
            "--params",
            "1000",
            "--seq",
            "4294967296",
            "--hidden",
            "32768",
            "--topk",
            "2",
        ],
        "step --micro-batch/--seq/--topk/--hidden: an expert dispatch",
    );
    refused(2, &["step", "--params", "1e30"], "step --params: '1e30' is not allowed");
    refused(
        4,
        &["step", "--layout", "tp=2,ep=2", "--experts", "2", "--seq", "1", "--sequence-parallel"],
        "step --layout tp=2, ep=2, pp=1, dp=1: its ep all-to-all-v calls would be 0 bytes",
    );
}

/// A refusal's sizes are the true ones (issue 65): buffers past 2^64 bytes are not shown as a
/// saturated ~16777216.0T.
#[test]
fn sizes_past_2_64_are_shown_true() {
    let huge = "17293822569102704640"; // 15 × 2^60
    refused(
        2,
        &["all-to-all", "-b", huge, "-e", huge],
        "-e/--maxbytes: the buffers need ~31457280.0T per rank × 2 rank(s) on ",
    );
}
