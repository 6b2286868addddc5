//! MPI errors are ours to report (issue 9): a failed MPI call, forced with the hidden
//! `--debug-mpi-error RANKS` (those ranks pass `MPI_DATATYPE_NULL`), ends the job with exactly
//! one line naming the rank, the call, the collective, its size and the library's own message;
//! exit code 2; no Open MPI "MPI_ERRORS_ARE_FATAL" banner, MPICH "Fatal error in" stack or Hydra
//! "BAD TERMINATION" banner; every rank gone, those blocked in the collective too, and under
//! Hydra every rank ended by itself with 2 (none killed by the launcher); no half-written CSV.
mod common;
use common::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// The launcher's limit: generous, as the ranks may wait for a loaded machine's CPU (a failed job
/// ends within a second or two when they get it); a job that did not end would be killed then.
const LIMIT_S: u32 = 120;

/// What a forced failure left behind.
struct Failed {
    code: Option<i32>,
    out: String,
    err: String,
    took: Duration,
    pids: Vec<i32>,
    host: String,
}

/// Run `args` on `n` ranks with `--debug-mpi-error fail` and `--csv run.csv` in `dir`.
fn forced(dir: &Path, n: usize, fail: &str, args: &[&str]) -> Failed {
    let mut full: Vec<&str> = args.to_vec();
    // The collectives' own calls: the ceiling pass (a sendrecv before the header) would fail
    // first (see `a_failure_in_the_ceiling_pass_is_one_line_before_any_file`).
    full.extend(["--csv", "run.csv", "--debug-mpi-error", fail, "--no-ceiling"]);
    // Under Hydra, `-print-all-exitcodes`: each rank's wait status, to tell a rank that ended by
    // itself from one its proxy killed (whose status Hydra may report as 0 and print no banner).
    let mut c = launch_cmd(LIMIT_S);
    if FAMILY == "mpich" {
        c.arg("-print-all-exitcodes");
    }
    c.args(["-n", &n.to_string(), BIN]).args(&full).current_dir(dir);
    let t0 = Instant::now();
    let o = c.output().expect("the MPI launcher runs");
    let took = t0.elapsed();
    let out = stdout(&o);
    let (mut pids, mut host) = (vec![None; n], String::new());
    // `#  Rank   1 Pid  12345 on HOST`: the header is out before the first call.
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("#  Rank") {
            let f: Vec<&str> = rest.split_whitespace().collect();
            if let (Some(r), Some(pid)) = (f.first().and_then(|r| r.parse::<usize>().ok()), f.get(2)) {
                pids[r] = pid.parse::<i32>().ok();
                host = f.last().unwrap().to_string();
            }
        }
    }
    let err = stderr(&o);
    let pids = pids.iter().map(|p| p.unwrap_or_else(|| panic!("a pid is missing in\n{out}\n{err}"))).collect();
    Failed { code: o.status.code(), out, err, took, pids, host }
}

impl Failed {
    /// One line for the job, naming a failing rank (one of `ranks`), `call` in `what`, and the
    /// library's message for a null datatype; nothing else on stderr, no banner anywhere.
    fn assert_one_line(&self, ranks: &[usize], call: &str, what: &str) {
        let (out, err) = (&self.out, &self.err);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "expected one line, got:\n{err}\nstdout:\n{out}");
        let l = lines[0];
        let named = ranks.iter().any(|r| l.starts_with(&format!("coll-bench: error: rank {r} ({}): ", self.host)));
        assert!(named, "the line names a failing rank of {ranks:?} and its host: {l}");
        assert!(l.contains(&format!(": {call} failed in {what}: ")), "{call} in {what}: {l}");
        assert!(l.ends_with("; aborting the job"), "{l}");
        // The library's own text (MPI_Error_string), not ours: Open MPI's starts with the error
        // class (for a null datatype in a reduction it blames the op: MPI_ERR_OP).
        let at = l.find(&format!(" failed in {what}: ")).unwrap() + format!(" failed in {what}: ").len();
        let message = &l[at..l.len() - "; aborting the job".len()];
        let library = if FAMILY == "mpich" { "atatype" } else { "MPI_ERR_" };
        assert!(message.contains(library), "the library's message ({library}): {message:?} in {l}");
        for text in [out, err] {
            for banner in ["MPI_ERRORS_ARE_FATAL", "Fatal error in", "BAD TERMINATION", "EXIT STRING", "panicked"] {
                assert!(!text.contains(banner), "{banner:?} in the output:\n{text}");
            }
        }
    }

    /// Exit code 2 from the launcher (Open MPI's mpirun returns the first failing rank's code,
    /// Hydra the OR of every rank's wait status). Under Hydra, also every rank's own status: 2
    /// from `exit` (512), not a signal, nor the 0 Hydra reports for a rank it killed before
    /// collecting it.
    fn assert_exit_2(&self) {
        assert_eq!(self.code, Some(2), "exit code\n{}\n{}", self.out, self.err);
        if FAMILY == "mpich" {
            let statuses = hydra_exit_codes(&self.out);
            assert_eq!(statuses, vec![512; self.pids.len()], "each rank's status (512: exit(2))\n{}", self.out);
        }
    }

    /// Every rank is gone within 10 s of the launcher's return, which came before its limit
    /// (`timeout` would have given 124, not 2: `assert_exit_2`).
    fn assert_all_gone(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        for (rank, pid) in self.pids.iter().enumerate() {
            while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert!(!Path::new(&format!("/proc/{pid}")).exists(), "rank {rank} (pid {pid}) still runs");
        }
        assert!(self.took < Duration::from_secs(LIMIT_S.into()), "the job took {:?} to end", self.took);
    }
}

/// Hydra's `-print-all-exitcodes` line, `[mpiexec@HOST] Exit codes: [HOST] 512,512 [HOST2] …`:
/// every rank's wait status, host by host.
fn hydra_exit_codes(out: &str) -> Vec<i32> {
    let line = out.lines().find(|l| l.contains("Exit codes:")).unwrap_or_else(|| panic!("no exit codes in\n{out}"));
    let codes = &line[line.find("Exit codes:").unwrap() + "Exit codes:".len()..];
    codes
        .split_whitespace()
        .filter(|w| !w.starts_with('['))
        .flat_map(|w| w.split(','))
        .map(|c| c.parse().unwrap_or_else(|_| panic!("a status in {line}")))
        .collect()
}

#[test]
fn hydra_exit_codes_are_read_host_by_host() {
    assert_eq!(hydra_exit_codes("x\n[mpiexec@vm] Exit codes: [vm] 512,0\n"), vec![512, 0]);
    assert_eq!(hydra_exit_codes("[mpiexec@a] Exit codes: [a] 512 [b] 9,512\n"), vec![512, 9, 512]);
}

/// The CSV, if there is one, holds its header and whole rows only.
fn assert_csv_whole(dir: &Path) {
    let Ok(text) = std::fs::read_to_string(dir.join("run.csv")) else { return };
    assert!(text.is_empty() || text.ends_with('\n'), "{text:?}");
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let width = rd.headers().unwrap().len();
    for r in rd.records() {
        assert_eq!(r.expect("every row parses").len(), width, "{text}");
    }
}

const ALL_REDUCE: &[&str] = &["all-reduce", "-b", "8", "-e", "64", "-n", "3", "-w", "1"];
const AT_8_B: &str = "all-reduce of 8 B (float, sum, out-of-place)";

fn check(n: usize, fail: &str, failing: &[usize], args: &[&str], call: &str, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let f = forced(dir.path(), n, fail, args);
    f.assert_one_line(failing, call, what);
    f.assert_exit_2();
    f.assert_all_gone();
    assert_csv_whole(dir.path());
}

/// Rank 1 fails; rank 0 is blocked inside the all-reduce and is ended too.
#[test]
fn one_failing_rank_of_two() {
    check(2, "1", &[1], ALL_REDUCE, "MPI_Allreduce", AT_8_B);
}

#[test]
fn every_rank_of_two_failing_gives_one_line() {
    check(2, "0,1", &[0, 1], ALL_REDUCE, "MPI_Allreduce", AT_8_B);
}

/// Rank 0 fails; ranks 1 and 2 are blocked.
#[test]
fn rank_0_failing_of_three() {
    check(3, "0", &[0], ALL_REDUCE, "MPI_Allreduce", AT_8_B);
}

#[test]
fn every_rank_of_three_failing_gives_one_line() {
    check(3, "0,1,2", &[0, 1, 2], ALL_REDUCE, "MPI_Allreduce", AT_8_B);
}

/// Past 32 ranks the watchdog's links are a tree (`watchdog::liveness`): rank 40's failure still
/// ends the job in one line, and the word that the job ends crosses the tree, so no rank takes
/// another's end for a death (no second line). Open MPI only: 64 MPICH ranks busy-poll 2 cores.
#[test]
fn one_failing_rank_of_64_gives_one_line() {
    if FAMILY == "mpich" {
        say_skipped("one_failing_rank_of_64_gives_one_line", "64 MPICH ranks busy-poll 2 cores");
        return;
    }
    check(64, "40", &[40], ALL_REDUCE, "MPI_Allreduce", AT_8_B);
}

/// Our own implementations go through one checked `MPI_Sendrecv`.
#[test]
fn a_failing_ring_names_mpi_sendrecv() {
    let args = ["all-gather", "--impl", "ring", "-b", "96", "-e", "96", "-n", "3", "-w", "1"];
    check(3, "2", &[2], &args, "MPI_Sendrecv", "all-gather of 96 B (float, out-of-place)");
}

/// sendrecv is nccl-tests' ring: one `MPI_Sendrecv` to rank+1 from rank−1 (`MPI_Sendrecv_replace`
/// in place), not the ping-pong's ordered `MPI_Send`/`MPI_Recv` (rank 1, odd, would fail in
/// `MPI_Recv` there); ping-pong, the old meaning, still is.
#[test]
fn sendrecv_is_the_ring_and_ping_pong_the_pairs() {
    let what = |coll: &str, placement: &str| format!("{coll} of 96 B (float, {placement})");
    let out_of_place = ["sendrecv", "-b", "96", "-e", "96", "-n", "3", "-w", "1"];
    check(3, "1", &[1], &out_of_place, "MPI_Sendrecv", &what("sendrecv", "out-of-place"));
    let ping = ["ping-pong", "-b", "96", "-e", "96", "-n", "3", "-w", "1"];
    check(3, "1", &[1], &ping, "MPI_Recv", &what("ping-pong", "out-of-place"));
    check(3, "0", &[0], &ping, "MPI_Send", &what("ping-pong", "out-of-place"));
}

/// With `-T 0` no step has a deadline, but the side channel still ends every rank in order.
#[test]
fn with_minus_t_zero_one_failing_rank_still_ends_the_job() {
    let args = ["all-reduce", "-b", "8", "-e", "64", "-n", "3", "-w", "1", "-T", "0"];
    check(2, "1", &[1], &args, "MPI_Allreduce", AT_8_B);
}

/// The ceiling pass runs after the header and the files (issue 46): a failed call there is the
/// same one line (naming sendrecv), exit 2, and the CSV holds its header row only.
#[test]
fn a_failure_in_the_ceiling_pass_is_one_line_and_leaves_the_csv_whole() {
    let dir = tempfile::tempdir().unwrap();
    let o = launch_cmd(LIMIT_S)
        .args(["-n", "2", BIN, "all-reduce", "-e", "1K", "--csv", "run.csv", "--debug-mpi-error", "1"])
        .current_dir(dir.path())
        .output()
        .expect("the MPI launcher runs");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}{}", stdout(&o));
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("coll-bench: ")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("coll-bench: error: rank 1 (")
            && lines[0].contains(": MPI_Sendrecv failed in sendrecv of 1024 B (uint8, out-of-place): "),
        "{err}"
    );
    let csv = std::fs::read_to_string(dir.path().join("run.csv")).unwrap_or_default();
    assert!(csv.starts_with("timestamp,") && csv.ends_with('\n') && csv.lines().count() == 1, "{csv}");
}
