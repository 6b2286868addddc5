//! `-T/--timeout` on one host: a rank that stops mid-run ends the job through the other ranks'
//! watchdogs (exit 2, one line each, the CSV so far intact), and a run that is merely slow does
//! not trip it. The multi-host case (a link down) is in tests/multihost.rs.
mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn a_generous_limit_does_not_trip() {
    // 30 s: the auto warm-up sizes a batch from one quick first call (hundreds of calls); on a
    // loaded 2-core machine each may then cost a scheduler quantum, and -T 5 tripped (seen
    // twice with two busy loops beside the test). A watched run must finish untouched.
    let (o, _d) = mpirun(2, &["all", "-b", "8", "-e", "4K", "-f", "8", "-n", "3", "-T", "30", "--no-csv"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("# Wrong elements       : 0 OK"));
}

#[test]
fn a_stopped_rank_ends_the_job_through_the_watchdog() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = launch_cmd(120)
        .args(["-n", "2", BIN])
        // Fixed counts (2 warm-up, 20 timed calls) of small sizes, thousands of them so the run is
        // still going at the stop: on a loaded, oversubscribed machine one call can cost a
        // scheduler quantum, which stretched a batch sized from a budget past -T 2 before the
        // stop (seen under load 11); 20 calls of at most 16 KiB cannot, so only the stop trips it.
        .args(["all-reduce", "-b", "8", "-e", "16K", "-i", "8", "-w", "2", "-n", "20", "-T", "2", "--csv", "run.csv"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun runs");
    // Rank 1's pid from the header; stop it (SIGSTOP: it cannot run its own watchdog either)
    // once the second row is out, so the CSV has rows before the hang.
    let mut out = String::new();
    let mut pid = None;
    let mut rows = 0;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stopped_at = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        out.push_str(&line);
        out.push('\n');
        if let Some(rest) = line.strip_prefix("#  Rank   1 Pid") {
            pid = rest.split_whitespace().next().map(str::to_string);
        }
        if !line.starts_with('#') && !line.trim().is_empty() {
            rows += 1;
            if rows == 2 {
                let pid = pid.clone().unwrap_or_else(|| panic!("no pid for rank 1 in\n{out}"));
                let pid: i32 = pid.parse().unwrap_or_else(|_| panic!("pid {pid:?} in\n{out}"));
                // SAFETY: kill(2) with a pid and a signal number; no memory is shared.
                assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0, "kill -STOP {pid}");
                stopped_at = Some(Instant::now());
                break;
            }
        }
    }
    for line in lines {
        out.push_str(&line.unwrap());
        out.push('\n');
    }
    let o = child.wait_with_output().unwrap();
    let took = stopped_at.unwrap_or_else(|| panic!("the run ended before two rows\n{out}")).elapsed();
    let err = stderr(&o);
    // Open MPI's mpirun returns the first failing rank's code (2). MPICH's Hydra kills the
    // stopped rank with SIGKILL and returns that signal's number (9): coll-bench's own exit code
    // is in rank 0's line either way (README, exit codes).
    let expected: &[i32] = if FAMILY == "mpich" { &[2, 9] } else { &[2] };
    assert!(o.status.code().is_some_and(|c| expected.contains(&c)), "exit {:?}\n{out}\n{err}", o.status.code());
    // 2 s, plus twice the batch's expected time (20 small calls), plus launcher tear-down.
    assert!(took < Duration::from_secs(8), "ended {took:?} after the stop");
    // Rank 0 names the call and the rank it waits on. mpirun's tear-down sends the stopped rank
    // SIGCONT before SIGTERM, so rank 1 may wake up past its own deadline and say so too.
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty() && lines.len() <= 2, "{err}");
    for l in &lines {
        assert!(l.starts_with("coll-bench: error: ") && l.contains(" did not finish within "), "{err}");
        assert!(l.ends_with("; aborting the job"), "{err}");
    }
    let rank0 =
        lines.iter().find(|l| l.contains(" on rank 0 (")).unwrap_or_else(|| panic!("no line from rank 0:\n{err}"));
    assert!(rank0.contains("all-reduce of ") && rank0.contains("; waiting on rank 1 ("), "{err}");
    // The CSV: header and whole rows, at least the two printed before the stop.
    let text = std::fs::read_to_string(dir.path().join("run.csv")).unwrap();
    assert!(text.ends_with('\n'), "{text:?}");
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let width = rd.headers().unwrap().len();
    let recs: Vec<csv::StringRecord> = rd.records().map(|r| r.expect("every row parses")).collect();
    assert!(recs.len() >= 4 && recs.iter().all(|r| r.len() == width), "{} rows", recs.len());
}
