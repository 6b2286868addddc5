//! Launched by a real Slurm (`ci/slurm-bed.sh`: munged, slurmctld and one slurmd per host of
//! the network-namespace bed), the way clusters launch: `srun --mpi=pmix` for an Open MPI build,
//! `srun --mpi=pmi2` for an MPICH build (whichever this build is), `srun` without `--mpi` (caught
//! on the first line, every task exits 2, the line says what to add), a failed MPI call ended
//! through the watchdog (one line, every task's code 2), `info` naming the job and step, and the
//! nightly batch script (`ci/acceptance/nightly.sbatch`) under `sbatch`: the job's exit code is
//! the verdict (0 pass, 1 a failed rule, 2 bad input), and a hang ends through the watchdog, not
//! Slurm's time limit.
//!
//! Needs what ci/netns-bed.sh needs (root, network namespaces) and Debian's Slurm packages (the
//! bed installs them: `bash ci/setup.sh slurm`). Where the machine cannot host the bed, or Slurm
//! lacks the plugin a launch form needs, the test prints `SKIPPED: <test>: <reason>` and returns.
//! One bed per test, named after this process and the test (`s<pid><letter>-`), so beds of other
//! test runs and the netns tests never collide; a lock keeps this file's beds one at a time.
mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const BED_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ci/slurm-bed.sh");
const NIGHTLY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ci/acceptance/nightly.sbatch");

static BED_LOCK: Mutex<()> = Mutex::new(());
static BEDS: AtomicUsize = AtomicUsize::new(0);

/// srun's `--mpi` for this build's family.
fn mpi_type() -> &'static str {
    if FAMILY == "mpich" {
        "pmi2"
    } else {
        "pmix"
    }
}

/// A Slurm bed of two hosts (2 CPUs each), torn down on drop.
struct Bed {
    prefix: String,
    dir: tempfile::TempDir,
    _lock: std::sync::MutexGuard<'static, ()>,
}

fn bed_cmd(prefix: &str) -> Command {
    let mut c = Command::new("bash");
    c.arg(BED_SCRIPT)
        .env("CB_NETNS_PREFIX", prefix)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

fn why(o: &Output) -> String {
    let w = String::from_utf8_lossy(&o.stdout).trim().to_string();
    if w.is_empty() {
        String::from_utf8_lossy(&o.stderr).trim().to_string()
    } else {
        w
    }
}

impl Bed {
    /// Two hosts, or `None` (after printing why) when this machine cannot have them or Slurm
    /// lacks `srun --mpi=MPI` for this build (`needs_mpi`).
    fn up(test: &str, needs_mpi: bool) -> Option<Bed> {
        let lock = BED_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // At most 11 characters (ci/netns/common.sh): `s`, the pid (≤ 7 digits), a letter per bed.
        let prefix = format!("s{}{}-", std::process::id(), (b'a' + BEDS.fetch_add(1, Ordering::Relaxed) as u8) as char);
        let check = bed_cmd(&prefix).arg("check").output().expect("bash runs");
        if !check.status.success() {
            say_skipped(test, &why(&check));
            return None;
        }
        let up = bed_cmd(&prefix).args(["up", "2"]).output().expect("bash runs");
        // Slurm missing and not installable here (no package mirror): the bed's own reason.
        if !up.status.success() && stderr(&up).contains("could not install Slurm") {
            say_skipped(test, stderr(&up).lines().last().unwrap_or("Slurm could not be installed"));
            return None;
        }
        assert!(up.status.success(), "ci/slurm-bed.sh up 2 failed although `check` passed:\n{}", stderr(&up));
        let bed = Bed { prefix, dir: tempfile::tempdir().unwrap(), _lock: lock };
        if needs_mpi {
            let m = bed_cmd(&bed.prefix).args(["mpi", mpi_type()]).output().expect("bash runs");
            if !m.status.success() {
                say_skipped(test, &format!("srun --mpi={}: {}", mpi_type(), why(&m)));
                return None;
            }
        }
        Some(bed)
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `ci/slurm-bed.sh WHAT…` in the bed's directory, killed after `limit_s`.
    fn run(&self, what: &[&str], limit_s: u32) -> Output {
        Command::new("timeout")
            .args(["--kill-after=5", &limit_s.to_string(), "bash", BED_SCRIPT])
            .args(what)
            .current_dir(self.dir())
            .env("CB_NETNS_PREFIX", &self.prefix)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .expect("timeout and bash run")
    }

    /// `srun -N 2 --ntasks-per-node=2 [--mpi=TYPE] coll-bench ARGS…`.
    fn srun(&self, mpi: Option<&str>, args: &[&str]) -> Output {
        let mpi_flag = mpi.map(|m| format!("--mpi={m}"));
        let mut what = vec!["srun", "-N", "2", "--ntasks-per-node=2"];
        what.extend(mpi_flag.as_deref());
        what.push(BIN);
        what.extend(args);
        self.run(&what, 120)
    }

    fn host(&self, i: usize) -> String {
        format!("{}node{i}", self.prefix)
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        let _ = bed_cmd(&self.prefix).arg("down").output();
    }
}

const TINY: &[&str] = &["all-reduce", "-b", "8", "-e", "64", "-n", "2", "-w", "1"];

/// The lines coll-bench printed on stderr (srun's own are `srun: …`).
fn ours(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.starts_with("coll-bench")).collect()
}

/// srun's summaries of tasks that did not end with 0: `srun: error: HOST: tasks 0-1: Exited with
/// exit code 2` (srun groups the tasks of a host as they end, in any order).
fn srun_exit_lines(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.starts_with("srun: error: ") && l.contains(": task")).collect()
}

/// Every task srun names as `Exited with exit code CODE`, sorted; panics on a summary that says
/// anything else (a signal, a launch failure).
fn tasks_exited_with(err: &str, code: i32) -> Vec<usize> {
    let mut tasks = vec![];
    for l in srun_exit_lines(err) {
        assert!(l.ends_with(&format!(": Exited with exit code {code}")), "{l}\n{err}");
        let list = l.split(": task").nth(1).unwrap().trim_start_matches('s').trim();
        let list = list.split(':').next().unwrap();
        for part in list.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            tasks.extend(a.trim().parse::<usize>().unwrap()..=b.trim().parse::<usize>().unwrap());
        }
    }
    tasks.sort();
    tasks
}

#[test]
fn srun_with_the_pmi_of_this_build_runs_one_job_across_two_hosts() {
    let test = "srun_with_the_pmi_of_this_build_runs_one_job_across_two_hosts";
    let Some(bed) = Bed::up(test, true) else { return };
    let o = bed.srun(Some(mpi_type()), &[TINY, &["--csv", "run.csv"]].concat());
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    // One job of four ranks, two on each host (srun's block placement), not four jobs of one.
    assert!(out.contains("# ranks: 4 on 2 host(s)\n"), "{out}");
    assert!(out.contains(&format!("#   {}: 2 rank(s): 0-1\n", bed.host(1))), "{out}");
    assert!(out.contains(&format!("#   {}: 2 rank(s): 2-3\n", bed.host(2))), "{out}");
    assert_eq!(out.matches("# Wrong elements       : 0 OK").count(), 1, "{out}");
    let csv = std::fs::read_to_string(bed.dir().join("run.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4 * 2, "a header, 4 sizes out of place and in place:\n{csv}");
    assert!(ours(&err).is_empty() && srun_exit_lines(&err).is_empty(), "{err}");
}

#[test]
fn srun_without_mpi_is_caught_on_the_first_line_and_says_what_to_add() {
    let test = "srun_without_mpi_is_caught_on_the_first_line_and_says_what_to_add";
    let Some(bed) = Bed::up(test, false) else { return };
    let t0 = Instant::now();
    let o = bed.srun(None, &[TINY, &["--csv", "run.csv"]].concat());
    let took = t0.elapsed();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    // One line, from task 0, before anything is measured: nothing on stdout, no file.
    let lines = ours(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("add --mpi=pmix (Open MPI) or --mpi=pmi2"), "{}", lines[0]);
    assert!(!lines[0].contains("different MPI"), "{}", lines[0]);
    assert!(out.trim().is_empty(), "{out}");
    assert!(!bed.dir().join("run.csv").exists());
    // Every task ended by itself with 2; no MPI library banner (Open MPI's MPI_Init would abort with one on every task).
    assert_eq!(tasks_exited_with(&err, 2), vec![0, 1, 2, 3], "{err}");
    for banner in ["MPI_Init", "OPAL ERROR", "direct launched", "Fatal error", "panicked"] {
        assert!(!err.contains(banner) && !out.contains(banner), "{banner:?}:\n{err}");
    }
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[test]
fn a_failed_mpi_call_under_srun_ends_every_task_with_2_in_one_line() {
    let test = "a_failed_mpi_call_under_srun_ends_every_task_with_2_in_one_line";
    let Some(bed) = Bed::up(test, true) else { return };
    // --no-ceiling: the failure is to come in the collective (the ceiling pass is a sendrecv).
    let o = bed.srun(Some(mpi_type()), &[TINY, &["--no-csv", "--debug-mpi-error", "1", "--no-ceiling"]].concat());
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    let lines = ours(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with(&format!("coll-bench: error: rank 1 ({}): MPI_Allreduce failed", bed.host(1))),
        "{err}"
    );
    // Every task's own code is 2: srun names each host's tasks with it; none killed by a signal
    // (srun would say `Killed` or `Terminated`), no library banner.
    assert_eq!(tasks_exited_with(&err, 2), vec![0, 1, 2, 3], "{err}");
    for banner in ["MPI_ERRORS_ARE_FATAL", "Fatal error in", "BAD TERMINATION", "Killed", "Terminated", "panicked"] {
        assert!(!err.contains(banner) && !out.contains(banner), "{banner:?}:\n{err}");
    }
}

#[test]
fn info_names_the_slurm_job_and_step_and_checks_the_task_count() {
    let test = "info_names_the_slurm_job_and_step_and_checks_the_task_count";
    let Some(bed) = Bed::up(test, true) else { return };
    let o = bed.srun(Some(mpi_type()), &["info"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    let launcher: Vec<&str> = out.lines().filter(|l| l.trim_start().starts_with("launcher")).collect();
    assert!(!launcher.is_empty(), "{out}");
    let pmi = if FAMILY == "mpich" { "Slurm PMI-2, 4 ranks" } else { "Slurm PMIx" };
    for l in launcher {
        assert!(l.contains(pmi), "{l}\n{out}");
        assert!(l.contains(" step 0: 4 tasks on 2 nodes, 2 on this node, = MPI's world"), "{l}\n{out}");
        assert!(l.contains("Slurm job "), "{l}");
    }
}

/// `sbatch --wait` of the nightly script with `spec` (a path in the bed's directory) on 2 nodes of
/// 2 tasks: the job's exit code, its output and how long it took.
fn nightly(bed: &Bed, spec: &str) -> (Option<i32>, String, Duration) {
    let t0 = Instant::now();
    let o = Command::new("timeout")
        .args(["--kill-after=5", "300", "bash", BED_SCRIPT, "sbatch", "-N", "2", "--ntasks-per-node=2"])
        .args(["-o", "job.out", NIGHTLY])
        .current_dir(bed.dir())
        .env("CB_NETNS_PREFIX", &bed.prefix)
        .env("COLL_BENCH", BIN)
        .env("COLL_BENCH_SPEC", spec)
        .env("COLL_BENCH_MPI_TYPE", mpi_type())
        .env("COLL_BENCH_OUT", bed.dir().join("acceptance"))
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("timeout and bash run");
    let took = t0.elapsed();
    let job = std::fs::read_to_string(bed.dir().join("job.out")).unwrap_or_default();
    let _ = std::fs::remove_file(bed.dir().join("job.out"));
    (o.status.code(), format!("{job}\n-- sbatch:\n{}{}", stdout(&o), stderr(&o)), took)
}

const PASSING: &str = r#"
[settings]
repeats = 1
budget = "2ms"

[[rule]]
name = "tiny all-reduce"
collective = "all-reduce"
sizes = "8..64"
max_time_us = 10000000.0
"#;

#[test]
fn the_nightly_batch_job_exits_with_the_verdict() {
    let test = "the_nightly_batch_job_exits_with_the_verdict";
    let Some(bed) = Bed::up(test, true) else { return };
    let spec = |name: &str, text: &str| {
        let p = bed.dir().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    // Pass: 0, with the JUnit file and the CSV where the script says.
    let (code, out, _) = nightly(&bed, &spec("pass.toml", PASSING));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("PASS"), "{out}");
    let written: Vec<String> = std::fs::read_dir(bed.dir().join("acceptance"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(written.iter().any(|f| f.starts_with("verdicts-") && f.ends_with(".xml")), "{written:?}");
    assert!(written.iter().any(|f| f.starts_with("measurements-") && f.ends_with(".csv")), "{written:?}");
    // A rule no cluster meets: 1.
    let (code, out, _) = nightly(&bed, &spec("fail.toml", &PASSING.replace("10000000.0", "0.001")));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL"), "{out}");
    // Bad input (an unknown key): 2, one line naming the spec's line.
    let (code, out, _) = nightly(&bed, &spec("bad.toml", &PASSING.replace("repeats = 1", "repeats = 1\nrepeat = 2")));
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("coll-bench: error:") && out.contains("repeat"), "{out}");
}

#[test]
fn a_hang_in_a_batch_job_ends_through_the_watchdog_before_the_time_limit() {
    let test = "a_hang_in_a_batch_job_ends_through_the_watchdog_before_the_time_limit";
    let Some(bed) = Bed::up(test, true) else { return };
    // Rank 3 stops itself (SIGSTOP) in the first timed step; -T 3: the others end within seconds
    // (srun as in the nightly script). The job's limit is 5 minutes.
    let script = format!(
        "#!/bin/bash\n#SBATCH --time=5\n#SBATCH -o job.out\nsrun --mpi={} --kill-on-bad-exit=1 {BIN} step \
         --layout tp=2,pp=2 --hidden 128 --seq 128 -w 0 -n 2 --no-csv -T 3 --debug-stop-rank 3:pp\n\
         code=$?\necho \"srun: $code\"\ncase $code in 0 | 1 | 2) exit $code ;; *) exit 2 ;; esac\n",
        mpi_type()
    );
    std::fs::write(bed.dir().join("hang.sbatch"), script).unwrap();
    let t0 = Instant::now();
    let o = bed.run(&["sbatch", "-N", "2", "--ntasks-per-node=2", "hang.sbatch"], 300);
    let took = t0.elapsed();
    let job = std::fs::read_to_string(bed.dir().join("job.out")).unwrap_or_default();
    // The job's code is 2, mapped as in the nightly script from srun's: the highest of its
    // tasks' codes, 2 for those the watchdog ended, 143 (SIGTERM) or a signal for the stopped
    // rank, which srun ends (--kill-on-bad-exit) once another has exited with 2.
    assert_eq!(o.status.code(), Some(2), "{job}\n{}", stderr(&o));
    let srun_code = job.lines().find_map(|l| l.strip_prefix("srun: ")?.parse::<i32>().ok());
    assert!(matches!(srun_code, Some(2) | Some(137) | Some(143) | Some(9) | Some(15)), "{job}");
    let lines = ours(&job);
    assert_eq!(lines.len(), 1, "{job}");
    assert!(lines[0].contains("rank 3"), "the stopped rank is named: {job}");
    assert!(took < Duration::from_secs(150), "the job took {took:?}, half of its 5-minute limit");
    assert!(!job.contains("DUE TO TIME LIMIT"), "{job}");
}
