//! Real multi-host runs on one machine: `ci/netns-bed.sh` makes "hosts" out of network
//! namespaces joined by a bridge, mpirun starts its daemons on them through an ssh stand-in, and
//! the ranks talk TCP across the bridge. Every collective is checked across two hosts; a host
//! whose link is capped (tc tbf) must be the one the table names; a host whose link goes down
//! mid-run must end every rank through the watchdog (-T), exit 2, with a valid partial CSV.
//!
//! Needs root, iproute2 (ip, tc) and bridges. Where the machine does not allow it, each test
//! prints `SKIPPED: <reason>` (straight to stderr, past the test harness's capture) and returns.
//! The tests share one lock, so beds never overlap, and name their namespaces after this
//! process (`cbt<pid>-node1` …), so they cannot collide with anything else.
mod common;
use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const BED_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ci/netns-bed.sh");

static BED_LOCK: Mutex<()> = Mutex::new(());

/// One test bed, torn down on drop (also when the test fails).
struct Bed {
    prefix: String,
    dir: tempfile::TempDir,
    hostfile: PathBuf,
    _lock: std::sync::MutexGuard<'static, ()>,
}

fn skipped(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {why}");
}

fn bed_cmd(prefix: &str) -> Command {
    let mut c = Command::new("bash");
    c.arg(BED_SCRIPT)
        .env("CB_NETNS_PREFIX", prefix)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

impl Bed {
    /// `hosts` namespace hosts with 2 slots each, or `None` (after printing why) when this machine
    /// cannot have them.
    fn up(test: &str, hosts: usize) -> Option<Bed> {
        let lock = BED_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        if FAMILY != "openmpi" {
            let why = format!(
                "this build is linked against {FAMILY}: under Hydra on the bed (ci/netns-bed.sh mpiexec), MPICH 4.0.2 \
                 (ch4:ucx over TCP) printed a correct table naming the slow host, then its ranks did not exit \
                 (hung after the sweep, ended by the time limit); the multi-host tests run against Open MPI only"
            );
            skipped(test, &why);
            return None;
        }
        let prefix = format!("cbt{}-", std::process::id());
        let check = bed_cmd(&prefix).arg("check").output().expect("bash runs");
        if !check.status.success() {
            let why = String::from_utf8_lossy(&check.stdout).trim().to_string();
            let why = if why.is_empty() { String::from_utf8_lossy(&check.stderr).trim().to_string() } else { why };
            skipped(test, &why);
            return None;
        }
        let up = bed_cmd(&prefix).args(["up", &hosts.to_string()]).output().expect("bash runs");
        assert!(up.status.success(), "ci/netns-bed.sh up {hosts} failed although `check` passed:\n{}", stderr(&up));
        let dir = tempfile::tempdir().unwrap();
        let hostfile = dir.path().join("hostfile");
        let lines: String = (1..=hosts).map(|i| format!("{prefix}node{i} slots=2\n")).collect();
        std::fs::write(&hostfile, lines).unwrap();
        Some(Bed { prefix, dir, hostfile, _lock: lock })
    }

    fn host(&self, i: usize) -> String {
        format!("{}node{i}", self.prefix)
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `mpirun -q -n N --map-by MAP -hostfile … PROGRAM ARGS…` from the launcher namespace, in the
    /// bed's directory, killed after `limit_s`.
    fn mpirun(&self, n: usize, map_by: &str, program: &[&str], args: &[&str], limit_s: u32) -> Output {
        Command::new("timeout")
            .args(["--kill-after=5", &limit_s.to_string(), "bash", BED_SCRIPT, "mpirun", "-q", "--bind-to", "none"])
            .args(["-n", &n.to_string(), "--map-by", map_by, "-hostfile"])
            .arg(&self.hostfile)
            .args(program)
            .args(args)
            .current_dir(self.dir())
            .env("CB_NETNS_PREFIX", &self.prefix)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .expect("timeout and bash run")
    }

    fn run(&self, what: &[&str]) -> Output {
        let o = bed_cmd(&self.prefix).args(what).output().expect("bash runs");
        assert!(o.status.success(), "ci/netns-bed.sh {what:?}: {}", stderr(&o));
        o
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        let _ = bed_cmd(&self.prefix).arg("down").output();
    }
}

fn now_s() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

#[test]
fn every_collective_is_correct_across_two_hosts() {
    let Some(bed) = Bed::up("every_collective_is_correct_across_two_hosts", 2) else { return };
    let (h1, h2) = (bed.host(1), bed.host(2));
    let args = ["all", "-d", "int32,float,double", "-o", "all", "-b", "8", "-e", "64K", "-f", "8", "-n", "3"];
    let o = bed.mpirun(4, "node", &[BIN], &[&args[..], &["--csv", "run.csv"]].concat(), 300);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    // Every host with its ranks: --map-by node alternates them.
    assert!(out.contains("# ranks: 4 on 2 host(s)\n"), "{out}");
    assert!(out.contains(&format!("#   {h1}: 2 rank(s): 0,2\n")), "{out}");
    assert!(out.contains(&format!("#   {h2}: 2 rank(s): 1,3\n")), "{out}");
    for (rank, host) in [(0, &h1), (1, &h2), (2, &h1), (3, &h2)] {
        let line = out.lines().find(|l| l.starts_with(&format!("#  Rank {rank:>3} Pid"))).unwrap();
        assert!(line.ends_with(&format!(" on {host}")), "{line}");
    }
    assert!(out.contains("# Out of bounds values : 0 OK"), "{out}");
    assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
    let rows = rows(&o);
    // 3 reducing × 3 types × 5 ops + 6 moving × 3 types, sizes 8, 64, 512, 4096, 32768; barrier.
    assert_eq!(rows.len(), (3 * 3 * 5 + 6 * 3) * 5 + 1, "{out}");
    assert!(rows.iter().all(|r| r[8] == "0" && r[12] == "0"), "{out}");
    let mut csv = csv::Reader::from_path(bed.dir().join("run.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|c| c == name).unwrap();
    for r in csv.records() {
        let r = r.unwrap();
        assert_eq!((&r[col("hosts")], &r[col("ranks")]), ("2", "4"), "{r:?}");
        assert_eq!(&r[col("host_names")], format!("{h1};{h2}"), "{r:?}");
    }

    // Node-local ranks: rank-by-slot puts 0,1 on the first host and 2,3 on the second. MPI's
    // node split (MPI_Comm_split_type) is compared with the launcher's local ranks on every
    // rank; a disagreement would end the run with exit 2.
    let o = bed.mpirun(4, "slot", &[BIN], &["barrier", "--no-csv"], 120);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(
        out.contains(&format!("#   {h1}: 2 rank(s): 0-1\n")) && out.contains(&format!("#   {h2}: 2 rank(s): 2-3\n")),
        "{out}"
    );
}

/// Two hosts cannot tell which end of their one link is slow (every byte crosses both), so
/// this takes three: with `--map-by node`, ranks 0-5 sit on hosts 1 2 3 1 2 3 and the ping-pong
/// pairs 0-1, 2-3, 4-5 join hosts 1-2, 3-1, 2-3: only host 2 has no fast pair.
#[test]
fn a_slow_host_is_named_in_the_table() {
    let Some(bed) = Bed::up("a_slow_host_is_named_in_the_table", 3) else { return };
    bed.run(&["slow", "2", "10mbit"]);
    let o = bed.mpirun(6, "node", &[BIN], &["sendrecv", "-b", "64K", "-e", "64K", "-n", "5", "--no-csv"], 120);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let line = out.lines().find(|l| l.starts_with("# Ping-pong per host")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(&format!("slowest: {},", bed.host(2))), "{line}");
    // 64 KiB at 10 Mbit/s takes 52 ms each way; unshaped, well under a millisecond on an idle
    // machine and a few ms when six ranks share two busy cores.
    assert!(line.contains("(sendrecv 64 KiB, one way"), "{line}");
}

/// Host 2's link goes down 3 s into a sweep that would take about 10 s. Every rank, on both
/// hosts, must end through its watchdog with exit 2 about -T after the cut. Ranks on the cut-off
/// host cannot reach mpirun any more, so each rank runs under ci/netns/record-rank.sh, which
/// leaves its stderr, exit code and end time in the shared directory. mpirun itself returns 2
/// once TCP gives up on the cut-off daemon (the bed sets tcp_retries2=4: about 6 s more).
#[test]
fn a_link_down_ends_every_rank_through_the_watchdog() {
    let Some(bed) = Bed::up("a_link_down_ends_every_rank_through_the_watchdog", 2) else { return };
    let wrapper = concat!(env!("CARGO_MANIFEST_DIR"), "/ci/netns/record-rank.sh");
    let dir = bed.dir().to_str().unwrap();
    let limit_s = 5.0;
    let cut_at = std::thread::scope(|s| {
        let cutter = s.spawn(|| {
            std::thread::sleep(Duration::from_secs(3));
            let t = now_s();
            bed.run(&["cut", "2"]);
            t
        });
        let started = Instant::now();
        let args =
            ["all-reduce", "-b", "8", "-e", "64K", "-f", "2", "--budget", "300ms", "-T", "5", "--csv", "run.csv"];
        let o = bed.mpirun(4, "node", &[wrapper, dir, BIN], &args, 90);
        let took = started.elapsed().as_secs_f64();
        let cut_at = cutter.join().unwrap();
        assert_eq!(o.status.code(), Some(2), "mpirun after {took:.1} s\n{}\n{}", stdout(&o), stderr(&o));
        // 3 s before the cut, -T after it, and Open MPI's time to give up on the lost daemon.
        assert!(took < 3.0 + limit_s + 20.0, "mpirun took {took:.1} s");
        cut_at
    });
    // The promise: every rank is gone within the limit, and the job says which call hung, at
    // what size, and on whom it waited. Each rank either ends through its own watchdog (exit 2,
    // its one line) or is ended by the launcher's tear-down when another rank's watchdog fired
    // first (Open MPI kills the other ranks of a host as soon as one exits non-zero): which of
    // the two happens on the host that can still reach mpirun is a race, and both keep the promise.
    let mut lines_seen = 0;
    for rank in 0..4 {
        let read = |ext: &str| std::fs::read_to_string(bed.dir().join(format!("rank{rank}.{ext}"))).unwrap_or_default();
        let host = bed.host(rank % 2 + 1);
        let pid: i32 = read("pid").trim().parse().unwrap_or_else(|_| panic!("rank {rank}: no pid recorded"));
        let gone = (0..100).any(|_| {
            let alive = Path::new(&format!("/proc/{pid}")).exists();
            if alive {
                std::thread::sleep(Duration::from_millis(100));
            }
            !alive
        });
        assert!(gone, "rank {rank} (pid {pid}) still runs after mpirun ended");
        let err = read("err");
        let lines: Vec<&str> = err.lines().collect();
        assert!(lines.len() <= 1, "rank {rank}: at most one line expected:\n{err}");
        if let Some(line) = lines.first() {
            lines_seen += 1;
            assert_eq!(read("rc").trim(), "2", "rank {rank}: exit code after its line: {err}");
            assert!(line.starts_with("coll-bench: error: all-reduce of "), "{err}");
            assert!(line.contains(&format!(" on rank {rank} ({host}); waiting on ranks ")), "{err}");
            assert!(line.ends_with("; aborting the job"), "{err}");
        } else {
            // Ended by the launcher: SIGTERM (143) is recorded, SIGKILL leaves no exit code.
            let rc = read("rc");
            assert!(
                rc.is_empty() || rc.trim().parse::<i32>().is_ok_and(|c| c > 128),
                "rank {rank}: exit {rc}, no line"
            );
        }
        if let Ok(ended) = read("end").trim().parse::<f64>() {
            // At most the limit, plus twice the batch's expected time (about 0.3 s here), plus
            // the tick, after the cut; less when the batch that hung began well before it.
            let after = ended - cut_at;
            assert!(after > 0.0 && after < limit_s + 3.0, "rank {rank} ended {after:.2} s after the cut: {err}");
        }
    }
    assert!(lines_seen >= 1, "no rank said which call hung");
    // The CSV holds what was measured before the cut: a header and whole rows, nothing torn.
    let text = std::fs::read_to_string(bed.dir().join("run.csv")).unwrap();
    assert!(text.ends_with('\n'), "last row torn: {text:?}");
    let mut csv = csv::Reader::from_reader(text.as_bytes());
    let width = csv.headers().unwrap().len();
    let rows: Vec<csv::StringRecord> = csv.records().map(|r| r.expect("every row parses")).collect();
    assert!(rows.iter().all(|r| r.len() == width));
    // 14 sizes × 2 placements in all; the cut comes a few sizes in.
    assert!(!rows.is_empty() && rows.len() < 28, "{} rows", rows.len());
}
