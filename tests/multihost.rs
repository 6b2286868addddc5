//! Real multi-host runs on one machine, under Open MPI's mpirun or MPICH's Hydra (whichever this
//! build is linked against): `ci/netns-bed.sh` makes "hosts" out of network
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
        let prefix = format!("cbt{}-", std::process::id());
        let check = bed_cmd(&prefix).arg("check").output().expect("bash runs");
        if !check.status.success() {
            let why = String::from_utf8_lossy(&check.stdout).trim().to_string();
            let why = if why.is_empty() { String::from_utf8_lossy(&check.stderr).trim().to_string() } else { why };
            say_skipped(test, &why);
            return None;
        }
        let up = bed_cmd(&prefix).args(["up", &hosts.to_string()]).output().expect("bash runs");
        assert!(up.status.success(), "ci/netns-bed.sh up {hosts} failed although `check` passed:\n{}", stderr(&up));
        let dir = tempfile::tempdir().unwrap();
        let hostfile = dir.path().join("hostfile");
        let lines: String = (1..=hosts).map(|i| format!("{prefix}node{i} slots=2\n")).collect();
        std::fs::write(&hostfile, lines).unwrap();
        // Hydra's hostfiles: `host:N` places N ranks on a host before the next, wrapping round,
        // so `:1` is Open MPI's --map-by node and `:2` its --map-by slot on these 2-slot hosts.
        for (map_by, per_host) in [("node", 1), ("slot", 2)] {
            let lines: String = (1..=hosts).map(|i| format!("{prefix}node{i}:{per_host}\n")).collect();
            std::fs::write(dir.path().join(format!("hostfile.hydra-{map_by}")), lines).unwrap();
        }
        Some(Bed { prefix, dir, hostfile, _lock: lock })
    }

    /// The launcher part of a command line on the bed for this build's family: Open MPI's
    /// `mpirun -q --bind-to none -hostfile … --map-by MAP`, or Hydra's `mpiexec -f …` with the
    /// hostfile that places ranks the same way.
    fn launcher(&self, map_by: &str) -> Vec<String> {
        if FAMILY == "openmpi" {
            let hostfile = self.hostfile.to_str().unwrap().to_string();
            ["mpirun", "-q", "--bind-to", "none", "--map-by", map_by, "-hostfile", &hostfile].map(String::from).to_vec()
        } else {
            let hostfile = self.dir().join(format!("hostfile.hydra-{map_by}"));
            vec!["mpiexec".into(), "-f".into(), hostfile.to_str().unwrap().into()]
        }
    }

    fn host(&self, i: usize) -> String {
        format!("{}node{i}", self.prefix)
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `mpirun -q --map-by MAP -hostfile … -n N PROGRAM ARGS…` (Hydra: `mpiexec -f … -n N …`) from
    /// the launcher namespace, in the bed's directory, killed after `limit_s`.
    fn mpirun(&self, n: usize, map_by: &str, program: &[&str], args: &[&str], limit_s: u32) -> Output {
        Command::new("timeout")
            .args(["--kill-after=5", &limit_s.to_string(), "bash", BED_SCRIPT])
            .args(self.launcher(map_by))
            .args(["-n", &n.to_string()])
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
    // Under MPICH with more ranks than cores, one integer and one float type, as in
    // tests/collectives.rs (`oversubscribed_mpich`: every type on 1 and 2 ranks of the same build).
    // The operators likewise: MPICH computes them the same whether the peer is on this host or
    // another (tests/collectives.rs runs every one); across hosts what can differ is the
    // transport, which every collective, type and size here crosses.
    let mpich = oversubscribed_mpich(4);
    let types = if mpich { "int32,double" } else { "int32,float,double" };
    // `all` is sum, prod, max, min, avg.
    let (ops, nops) = if mpich { ("sum,max", 2) } else { ("all", 5) };
    let ntypes = types.split(',').count();
    let args = ["all", "-d", types, "-o", ops, "-b", "8", "-e", "64K", "-f", "8", "-n", "3"];
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
    // 3 reducing × the types × the ops + 8 moving × the types, sizes 8, 64, 512, 4096, 32768; barrier.
    assert_eq!(rows.len(), (3 * ntypes * nops + 8 * ntypes) * 5 + 1, "{out}");
    // all-to-all-v is measured out of place only: "-" in its in-place columns.
    assert!(rows.iter().all(|r| r[8] == "0" && (r[12] == "0" || (r[9] == "-" && r[12] == "-"))), "{out}");
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
    if skip_timing_test("a_slow_host_is_named_in_the_table", 6) {
        return;
    }
    let Some(bed) = Bed::up("a_slow_host_is_named_in_the_table", 3) else { return };
    bed.run(&["slow", "2", "10mbit"]);
    let o = bed.mpirun(6, "node", &[BIN], &["ping-pong", "-b", "64K", "-e", "64K", "-n", "5", "--no-csv"], 120);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let line = out.lines().find(|l| l.starts_with("# Ping-pong per host")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(&format!("slowest: {},", bed.host(2))), "{line}");
    // 64 KiB at 10 Mbit/s takes 52 ms each way; unshaped, well under a millisecond on an idle
    // machine and a few ms when six ranks share two busy cores.
    assert!(line.contains("(ping-pong 64K, one way"), "{line}");
}

/// The ceiling across hosts is the slowest link's rate: host 2 capped at 50 Mbit/s each way
/// (6.25 MB/s), one rank per host, the ring 1 → 2 → 3 → 1 crosses it twice. The ceiling pass
/// must find that rate (within 20%: TCP's headers take a few percent) and say the ring runs
/// between hosts; each host pair measured on its own, the two through host 2 at that rate and
/// the third far above; all-reduce over the same links lands between 30% and 105% of it.
#[test]
fn the_ceiling_is_the_shaped_links_rate() {
    if skip_timing_test("the_ceiling_is_the_shaped_links_rate", 3) {
        return;
    }
    let Some(bed) = Bed::up("the_ceiling_is_the_shaped_links_rate", 3) else { return };
    bed.run(&["slow", "2", "50mbit"]);
    let args = ["all-reduce", "-b", "1M", "-e", "1M", "--csv", "c.csv"];
    let o = bed.mpirun(3, "node", &[BIN], &args, 180);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let head = out.lines().find(|l| l.starts_with("# ceiling: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(head.contains("sendrecv of 1M around the ring of 3 ranks, between hosts"), "{head}");
    // The hosts' nominal rates beside it (the bed's veth interfaces state 10 Gb/s: the capped
    // ceiling is under 1% of that; a kernel that states none says so).
    let nominal = out.lines().find(|l| l.starts_with("# nominal: ")).unwrap_or_else(|| panic!("{out}"));
    if nominal.contains(" on every host;") {
        let pct: f64 = nominal.split("the ceiling is ").nth(1).unwrap().split('%').next().unwrap().parse().unwrap();
        assert!(pct < 10.0, "{nominal}");
    } else {
        assert!(nominal.starts_with("# nominal: no host's hardware states"), "{nominal}");
    }
    // Each host pair on its own: the two through host 2 at the shaped rate, the third far above.
    let pairs = out.lines().find(|l| l.starts_with("# ceiling per host pair ")).unwrap_or_else(|| panic!("{out}"));
    let each: Vec<(String, f64)> = pairs
        .split("slowest first: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{pairs}"))
        .split(", ")
        .map(|p| {
            let (name, gbps) = p.rsplit_once(' ').unwrap();
            (name.to_string(), gbps.parse().unwrap())
        })
        .collect();
    assert_eq!(each.len(), 3, "{pairs}");
    let (n1, n2, n3) = (bed.host(1), bed.host(2), bed.host(3));
    for (name, gbps) in &each[..2] {
        assert!(name.contains(&n2) && (0.8 * 0.00625..=1.2 * 0.00625).contains(gbps), "{pairs}");
    }
    assert!(each[2].0 == format!("{n1}-{n3}") && each[2].1 > 10.0 * 0.00625, "{pairs}");
    let mut r = csv::Reader::from_path(bed.dir().join("c.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|c| c == n).unwrap();
    let rec = r.records().next().unwrap().unwrap();
    let ceiling: f64 = rec[col("ceiling_gbps")].parse().unwrap();
    assert!((0.8 * 0.00625..=1.2 * 0.00625).contains(&ceiling), "ceiling {ceiling} GB/s, 50 Mbit/s is 0.00625:\n{out}");
    let pct: f64 = rec[col("pct_of_ceiling")].parse().unwrap();
    assert!((30.0..=105.0).contains(&pct), "all-reduce at {pct}% of the ceiling:\n{out}");
}

/// Host 2's link goes down once the sweep (about 10 s) has written two rows: a fixed delay would
/// let a slow start on a busy machine cut before any row. Every rank, on both
/// hosts, must end through its watchdog with exit 2 about -T after the cut. Ranks on the cut-off
/// host cannot reach mpirun any more, so each rank runs under ci/netns/record-rank.sh, which
/// leaves its stderr, exit code and end time in the shared directory. mpirun itself returns 2
/// once TCP gives up on the cut-off daemon (the bed sets tcp_retries2=4: about 6 s more).
#[test]
fn a_link_down_ends_every_rank_through_the_watchdog() {
    let Some(bed) = Bed::up("a_link_down_ends_every_rank_through_the_watchdog", 2) else { return };
    let wrapper = concat!(env!("CARGO_MANIFEST_DIR"), "/ci/netns/record-rank.sh");
    let dir = bed.dir().to_str().unwrap();
    // -T 10 against 100 ms batches: a batch must run 100 times slower than its budget to trip the
    // limit before the cut (with -T 5 and 300 ms batches, a run beside a full test suite on 2
    // cores tripped it in the 8 B step, every rank answering, before the link went down).
    let limit_s = 10.0;
    let cut_at = std::thread::scope(|s| {
        let cutter = s.spawn(|| {
            let csv = bed.dir().join("run.csv");
            let waiting = Instant::now();
            while std::fs::read_to_string(&csv).map_or(0, |t| t.lines().count()) < 3
                && waiting.elapsed() < Duration::from_secs(60)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            let t = (now_s(), Instant::now());
            bed.run(&["cut", "2"]);
            t
        });
        let started = Instant::now();
        let args =
            ["all-reduce", "-b", "8", "-e", "64K", "-f", "2", "--budget", "100ms", "-T", "10", "--csv", "run.csv"];
        // Hydra's mpiexec waits for the proxy of the cut-off host as long as it is let: it
        // sends that proxy nothing, so TCP never gives up on it (on a cluster, until ssh's
        // keep-alive does). The ranks' promise below is the same for both families; the
        // launcher's end is checked where the launcher keeps it (Open MPI).
        let hydra = FAMILY != "openmpi";
        let o = bed.mpirun(4, "node", &[wrapper, dir, BIN], &args, if hydra { 45 } else { 90 });
        let took = started.elapsed().as_secs_f64();
        let (cut_at, cut) = cutter.join().unwrap();
        if !hydra {
            assert_eq!(o.status.code(), Some(2), "mpirun after {took:.1} s\n{}\n{}", stdout(&o), stderr(&o));
            // -T and the inquiry after the cut, and Open MPI's time to give up on the lost daemon.
            let after = cut.elapsed().as_secs_f64();
            assert!(after < limit_s + 20.0, "mpirun ended {after:.1} s after the cut ({took:.1} s in all)");
        }
        cut_at
    });
    // The promise: every rank is gone within the limit, and the job says which call hung, at
    // what size, and on whom it waited. The cut splits the side channel too, so each host's
    // lowest rank speaks for its side (rank 0 for host 1, rank 1 for host 2), naming the other
    // host's ranks as the ones that stopped answering; the other rank of each host ends quietly
    // (exit 2) once its host's line is out, or is ended by the launcher's tear-down first (Open
    // MPI kills the other ranks of a host as soon as one exits non-zero): which of those two
    // happens is a race, and both keep the promise.
    let mut lines_seen = 0;
    for rank in 0..4 {
        let read = |ext: &str| std::fs::read_to_string(bed.dir().join(format!("rank{rank}.{ext}"))).unwrap_or_default();
        let host = bed.host(rank % 2 + 1);
        let other_host = bed.host(2 - rank % 2);
        let (mine, others) = if rank % 2 == 0 { ("0,2", "1,3") } else { ("1,3", "0,2") };
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
        // Open MPI's TCP transport may report the dead connection first (`[host][…] …
        // mca_btl_tcp_frag_recv: readv failed: Connection timed out`, once TCP gives up on the
        // peer, about 6 s after the cut on the bed): a true word from the MPI library, not ours.
        let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with('[') || !l.contains("btl_tcp")).collect();
        assert!(lines.len() <= 1, "rank {rank}: at most one line expected:\n{err}");
        if let Some(line) = lines.first() {
            lines_seen += 1;
            assert!(rank < 2, "rank {rank} spoke although a lower rank of its host could: {err}");
            // Its own exit, 2. Under Hydra the host's proxy SIGKILLs the ranks of its host when
            // one exits without `cmd=finalize` (a hang's ending, docs/watchdog.md), so the other
            // rank's quiet exit may end this one after its line and before its own exit: SIGKILL
            // leaves no code (seen once in a CI-like run of the MPICH pass).
            let rc = read("rc");
            let killed_after_line = FAMILY == "mpich" && rc.is_empty();
            assert!(rc.trim() == "2" || killed_after_line, "rank {rank}: exit code {rc:?} after its line: {err}");
            // Both ranks of the other host, together or each with what this side knows of it.
            assert!(line.starts_with("coll-bench: error: rank"), "{err}");
            let named = |r: &str| line.contains(&format!("rank {r} ({other_host}) "));
            let both = line.contains(&format!("ranks {others} ({other_host}) "));
            assert!(both || others.split(',').all(named), "rank {rank} names ranks {others}: {err}");
            assert!(line.contains("all-reduce of "), "{err}");
            assert!(line.contains(&format!("; ranks {mine} ({host}) waited ")), "{err}");
            assert!(line.ends_with("; aborting the job"), "{err}");
        } else {
            // Ended quietly after its host's line (2), or by the launcher: SIGTERM (143) is
            // recorded, SIGKILL leaves no exit code.
            let rc = read("rc");
            assert!(
                rc.is_empty() || rc.trim().parse::<i32>().is_ok_and(|c| c == 2 || c > 128),
                "rank {rank}: exit {rc}, no line"
            );
        }
        if let Ok(ended) = read("end").trim().parse::<f64>() {
            // At most the limit, plus twice the batch's expected time (about 0.1 s here), plus
            // the tick, after the cut (less when the batch that hung began well before it); then
            // the inquiry over the side channel: a fifth of -T (1 to 5 s) for answers, and as
            // long again on host 2, whose ranks wait for the silent lower ranks of host 1 to
            // speak first.
            let ask = (limit_s / 5.0_f64).clamp(1.0, 5.0);
            let after = ended - cut_at;
            assert!(
                after > 0.0 && after < limit_s + 2.0 * ask + 2.0,
                "rank {rank} ended {after:.2} s after the cut: {err}"
            );
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
    // 14 sizes × 2 placements in all; the cut comes after the second.
    assert!(rows.len() >= 2 && rows.len() < 28, "{} rows", rows.len());
}

/// `coll-bench info` across two hosts, one of which has a variable the other does not: one entry
/// per host, every field present, and the odd host named in the last lines (a tie of one rank
/// each goes to the lowest rank's host, so the second host is the one that differs).
#[test]
fn info_names_the_host_that_differs() {
    let Some(bed) = Bed::up("info_names_the_host_that_differs", 2) else { return };
    let (h1, h2) = (bed.host(1), bed.host(2));
    // One rank per host, each with its own value of the variable (MPMD: `A : B`). Hydra's host
    // options are global: its `host:1` hostfile puts the first part's rank on host 1 and the
    // second's on host 2.
    let env = |host: &str, value: &str| -> Vec<String> {
        if FAMILY == "openmpi" {
            ["-n", "1", "-host", host, "-x", &format!("NCCL_SOCKET_IFNAME={value}")].map(String::from).to_vec()
        } else {
            ["-n", "1", "-env", "NCCL_SOCKET_IFNAME", value].map(String::from).to_vec()
        }
    };
    let o = Command::new("timeout")
        .args(["--kill-after=5", "120", "bash", BED_SCRIPT])
        .args(bed.launcher("node"))
        .args(env(&h1, "eth0"))
        .args([BIN, "info", "--strict", ":"])
        .args(env(&h2, "ib0"))
        .args([BIN, "info", "--strict"])
        .current_dir(bed.dir())
        .env("CB_NETNS_PREFIX", &bed.prefix)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("timeout and bash run");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "--strict with a host that differs:\n{out}\n{}", stderr(&o));
    assert!(out.starts_with("# coll-bench info: 2 ranks on 2 hosts\n"), "{out}");
    assert!(out.contains(&format!("\n## {h1} (rank 0)\n")) && out.contains(&format!("\n## {h2} (rank 1)\n")), "{out}");
    // The majority's block has every field; the odd host's block only what differs.
    for f in ["coll-bench", "MPI library", "launcher", "memory", "network interfaces", "NCCL", "GPUs"] {
        assert_eq!(out.lines().filter(|l| l.starts_with(f) && l.contains(" : ")).count(), 1, "{f}:\n{out}");
    }
    assert!(out.contains(&format!("\n## {h2} (rank 1)\nenv NCCL_SOCKET_IFNAME")), "{out}");
    let last: Vec<&str> = out.trim_end().lines().rev().take(2).collect();
    assert_eq!(last[1], "# Differ from the majority: 1", "{out}");
    // Nothing else differs between the two namespace hosts (same interfaces, same machine).
    assert_eq!(last[0], format!("# {h2} (rank 1): env NCCL_SOCKET_IFNAME = ib0 (majority: eth0)"), "{out}");
}

/// `step` on 2 hosts × 2 ranks (`--map-by slot`: ranks 0,1 on host 1, 2,3 on host 2): TP stays
/// within a host, so `--layout all` leaves tp=4 out and runs the other five, data correct; a
/// tp=2,dp=2 step's TP groups are the two hosts' rank pairs.
#[test]
fn step_layouts_on_two_hosts() {
    let Some(bed) = Bed::up("step_layouts_on_two_hosts", 2) else { return };
    let o = bed.mpirun(4, "slot", &[BIN], &["step", "--layout", "all", "-n", "2", "--csv", "step.csv"], 300);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("step: 4 ranks on 2 host(s)"), "{out}");
    assert!(
        out.contains(
            "# Layouts (5): tp=1, pp=1, dp=4; tp=1, pp=2, dp=2; tp=1, pp=4, dp=1; tp=2, pp=1, dp=2; tp=2, pp=2, dp=1\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("# Left out: tp=4, pp=1, dp=1: tp=4 would span hosts of 2 ranks (--tp-across-hosts)"),
        "{out}"
    );
    assert_eq!(out.matches("; all data correct").count(), 5, "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("#   ") && l.contains(" ms/step (")).count(), 5, "{out}");
    let mut rd = csv::Reader::from_path(bed.dir().join("step.csv")).unwrap();
    // One row per layout and dimension of size > 1: dp=4 (1), pp=2,dp=2 (2), pp=4 (1),
    // tp=2,dp=2 (2), tp=2,pp=2 (2).
    assert_eq!(rd.records().count(), 8);
}

/// `--groups` on the test bed (2 hosts × 2 ranks, `--map-by slot`: ranks 0,1 on host 1 and 2,3
/// on host 2): `node` is one group per host, `rail` the i-th rank of each host (the cross-host
/// groups), `tp=2,dp=2` keeps each tensor-parallel pair on one host and `:dp` crosses them.
/// Every collective exact in every layout, and the header's groups with their hosts.
#[test]
fn groups_follow_the_hosts_on_two_hosts() {
    let Some(bed) = Bed::up("groups_follow_the_hosts_on_two_hosts", 2) else { return };
    let (h1, h2) = (bed.host(1), bed.host(2));
    let both = format!("{h1}, {h2}");
    for (layout, want) in [
        ("node", [format!("group   0: ranks 0-1 on {h1}"), format!("group   1: ranks 2-3 on {h2}")]),
        ("rail", [format!("group   0: ranks 0,2 on {both}"), format!("group   1: ranks 1,3 on {both}")]),
        ("tp=2,dp=2", [format!("group   0: ranks 0-1 on {h1}"), format!("group   1: ranks 2-3 on {h2}")]),
        ("tp=2,dp=2:dp", [format!("group   0: ranks 0,2 on {both}"), format!("group   1: ranks 1,3 on {both}")]),
    ] {
        // Under MPICH with more ranks than cores (every call a scheduler quantum), one type: the
        // groups' hosts come from the launcher's placement, not from the types.
        let types = if oversubscribed_mpich(4) { "int32" } else { "int32,float" };
        let ntypes = types.split(',').count();
        let args = ["all", "-d", types, "-b", "8", "-e", "4K", "-f", "8", "-n", "3", "--no-csv", "--groups", layout];
        let o = bed.mpirun(4, "slot", &[BIN], &args, 300);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{layout}:\n{out}\n{}", stderr(&o));
        assert!(out.contains(&format!("#   {h1}: 2 rank(s): 0-1\n")), "{out}");
        let listed: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("#   group ")).collect();
        let want: Vec<String> = want.iter().map(|w| w.trim_start_matches("group ").to_string()).collect();
        assert_eq!(listed, want, "{layout}:\n{out}");
        assert!(out.contains("2 group(s) of 2 rank(s), all at the same time"), "{out}");
        assert!(out.contains("# Wrong elements       : 0 OK"), "{layout}:\n{out}");
        assert!(out.contains("# Out of bounds values : 0 OK"), "{layout}:\n{out}");
        let rows = rows(&o);
        // 3 reducing + 8 moving, × the types, sizes 8, 64, 512, 4096; barrier.
        assert_eq!(rows.len(), (3 + 8) * ntypes * 4 + 1, "{layout}:\n{out}");
        assert!(
            rows.iter().all(|r| r[8] == "0" && (r[12] == "0" || (r[9] == "-" && r[12] == "-"))),
            "{layout}:\n{out}"
        );
    }
    // Hosts of unequal rank counts have no rails: 3 ranks, 2 on host 1 and 1 on host 2.
    let o = bed.mpirun(3, "slot", &[BIN], &["all-reduce", "-e", "64", "--no-csv", "--groups", "rail"], 120);
    assert_eq!(o.status.code(), Some(2), "{}\n{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("--groups rail: hosts have unequal rank counts (2 and 1)"), "{err}");
    assert!(!stdout(&o).contains("# Collective"), "{}", stdout(&o));
}

/// `doctor` on 3 hosts, host 2's link capped at 50 Mbit/s, one rank per host: the first cause is
/// host 2's link (both its pairs slow, against the pair that avoids it), the ceiling is short,
/// so exit 1; all-reduce over the capped ring lands between 30% and 105% of the ceiling.
#[test]
fn doctor_names_the_shaped_hosts_link_first() {
    if skip_timing_test("doctor_names_the_shaped_hosts_link_first", 3) {
        return;
    }
    let Some(bed) = Bed::up("doctor_names_the_shaped_hosts_link_first", 3) else { return };
    bed.run(&["slow", "2", "50mbit"]);
    let o = bed.mpirun(3, "node", &[BIN], &["doctor", "all-reduce", "-e", "256K", "--json", "d.json"], 240);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(bed.dir().join("d.json")).unwrap()).unwrap();
    let first = &j["causes"][0];
    assert_eq!(
        (first["cause"].as_str(), first["subject"].as_str()),
        (Some("link"), Some(bed.host(2).as_str())),
        "{out}"
    );
    assert_eq!(first["short"], true, "{out}");
    assert!(first["share"].as_f64().unwrap() > 0.5, "{out}");
    assert_eq!(j["verdict"], "short");
    let pct = j["collectives"][0]["pct_of_ceiling"].as_f64().unwrap();
    assert!((30.0..=105.0).contains(&pct), "all-reduce at {pct}% of the ceiling:\n{out}");
    let line = out.lines().find(|l| l.trim_start().starts_with("1. ")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("link") && line.contains(&bed.host(2)), "{line}");
    assert!(out.lines().any(|l| l.starts_with("# verdict: SHORT: link ") && l.contains(&bed.host(2))), "{out}");
}

/// `doctor` with its defaults but a 40 s limit on 3 hosts, host 2's link at 50 Mbit/s (where
/// 64 MiB would take most of an hour, issue 51): it answers within the limit + 20% (rank 0's
/// clock), at a size below -e that the page and the JSON give with the reason, names host 2's
/// link first, and compares no host's memory with another's: the bed's hosts are one machine
/// (one boot id).
#[test]
fn doctor_fits_its_time_limit_on_a_slow_link() {
    if skip_timing_test("doctor_fits_its_time_limit_on_a_slow_link", 3) {
        return;
    }
    let Some(bed) = Bed::up("doctor_fits_its_time_limit_on_a_slow_link", 3) else { return };
    bed.run(&["slow", "2", "50mbit"]);
    let o = bed.mpirun(3, "node", &[BIN], &["doctor", "--max-time", "40s", "--json", "d.json"], 240);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(bed.dir().join("d.json")).unwrap()).unwrap();
    let took = j["seconds"].as_f64().unwrap();
    assert!(took <= 48.0, "doctor took {took:.1} s of a 40 s limit:\n{out}");
    let plan = &j["run"]["plan"];
    let size = plan["size_bytes"].as_u64().unwrap();
    assert!(size < 64 << 20 && plan["reason"].is_string(), "{plan}");
    assert!(out.lines().any(|l| l.starts_with("# plan: at ")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("# size: ")), "{out}");
    let first = &j["causes"][0];
    assert_eq!(
        (first["cause"].as_str(), first["subject"].as_str()),
        (Some("link"), Some(bed.host(2).as_str())),
        "{out}"
    );
    let boot: Vec<&serde_json::Value> = j["cpus"].as_array().unwrap().iter().map(|c| &c["boot_id"]).collect();
    assert!(boot.iter().all(|b| b.is_string() && *b == boot[0]), "{boot:?}");
    assert!(!out.contains("copies its memory"), "hosts of one machine compared:\n{out}");
}

/// The time bar: `doctor` with its defaults (three collectives at 64 MiB, the pairs,
/// every algorithm) on 4 ranks of a 2-host bed answers within 60 s (31 s, the median of 5, on this 2-core
/// machine, bench/doctor-vm.md); allowed 90 s here, beside other tests. Its findings hold
/// together: every collective read against a ceiling between hosts, the host pair measured, the
/// verdict the exit code's.
#[test]
fn doctor_on_four_ranks_of_two_hosts_answers_in_time() {
    if skip_timing_test("doctor_on_four_ranks_of_two_hosts_answers_in_time", 4) {
        return;
    }
    let Some(bed) = Bed::up("doctor_on_four_ranks_of_two_hosts_answers_in_time", 2) else { return };
    let started = Instant::now();
    let o = bed.mpirun(4, "slot", &[BIN], &["doctor", "--json", "d.json"], 180);
    let took = started.elapsed().as_secs_f64();
    let out = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}\n{}", stderr(&o));
    assert!(took <= 90.0, "doctor took {took:.1} s:\n{out}");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(bed.dir().join("d.json")).unwrap()).unwrap();
    assert_eq!(j["run"]["ceiling"]["links"], "between hosts", "{out}");
    let seen = j["collectives"].as_array().unwrap();
    assert_eq!(seen.len(), 3, "{out}");
    assert!(seen.iter().all(|c| c["size_bytes"] == 64 << 20 && c["pct_of_ceiling"].as_f64().is_some()), "{out}");
    let links = j["links"].as_array().unwrap();
    assert!(links.iter().any(|l| l["a"] == bed.host(1) && l["b"] == bed.host(2) && l["rank_pairs"] == 4), "{out}");
    let short = j["verdict"] == "short";
    assert_eq!(o.status.code(), Some(if short { 1 } else { 0 }), "{out}");
}

/// `doctor` across 2 hosts with one rank each, in both families (MPICH's Hydra included): the
/// one host pair is measured and the verdict is the exit code.
#[test]
fn doctor_across_two_hosts_measures_the_host_pair() {
    let Some(bed) = Bed::up("doctor_across_two_hosts_measures_the_host_pair", 2) else { return };
    let o = bed.mpirun(2, "node", &[BIN], &["doctor", "all-reduce", "-e", "1M", "--json", "d.json"], 180);
    let out = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}\n{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(bed.dir().join("d.json")).unwrap()).unwrap();
    let links = j["links"].as_array().unwrap();
    assert_eq!(links.len(), 1, "{out}");
    assert_eq!(
        (links[0]["a"].as_str(), links[0]["b"].as_str()),
        (Some(bed.host(1).as_str()), Some(bed.host(2).as_str()))
    );
    assert!(links[0]["gbps"].as_f64().unwrap() > 0.0, "{out}");
    // Each host's memory copied by its own first rank, both at once.
    let cpus = j["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 2, "{out}");
    assert!(cpus.iter().all(|c| c["memory_copy_gbps"].as_f64().is_some_and(|g| g > 0.0)), "{out}");
    assert_eq!(o.status.code(), Some(if j["verdict"] == "short" { 1 } else { 0 }), "{out}");
}

/// A `min_pct_of_ceiling` rule on 3 hosts judges the ceiling's links too: unshaped, every
/// host's best link is near the fastest host pair and the rule passes; with host 2's link capped
/// at 50 Mbit/s the ceiling is that link's rate (the collective still reads well against it),
/// and the rule fails on its `links` check, naming host 2.
#[test]
fn a_ceiling_rule_fails_on_a_capped_link_and_names_it() {
    if skip_timing_test("a_ceiling_rule_fails_on_a_capped_link_and_names_it", 3) {
        return;
    }
    let Some(bed) = Bed::up("a_ceiling_rule_fails_on_a_capped_link_and_names_it", 3) else { return };
    let spec = "[settings]\nrepeats = 1\nbudget = \"20ms\"\n\n[[rule]]\nname = \"near the links\"\ncollective = \"all-reduce\"\nsizes = \"256K..256K\"\nplateau = \"256K..256K\"\nmin_pct_of_ceiling = 1\n";
    std::fs::write(bed.dir().join("spec.toml"), spec).unwrap();
    // The verdict table's line of one check of the rule (the word after the collective).
    let check_line = |out: &str, check: &str| -> String {
        out.lines()
            .find(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                l.contains("near the links (line") && w.windows(2).any(|p| p == ["all-reduce", check])
            })
            .unwrap_or_else(|| panic!("no {check} line:\n{out}"))
            .to_string()
    };
    // The ceiling's passes before and after the sweeps may disagree on a busy machine (CI beside
    // another job): NOISY (exit 3), saying so; the links are judged all the same.
    let noisy = |l: &str| l.ends_with("NOISY") && l.contains("check again when it is quiet");
    // So may the links' two measurements (a host slow in one only: NOISY, both named).
    let o = bed.mpirun(3, "node", &[BIN], &["check", "spec.toml", "--no-csv"], 180);
    let out = stdout(&o);
    let (links, ceiling) = (check_line(&out, "links"), check_line(&out, "ceiling"));
    assert!(links.ends_with("PASS") || noisy(&links), "{out}\n{}", stderr(&o));
    assert!(ceiling.ends_with("PASS") || noisy(&ceiling), "{out}");
    let code = if noisy(&links) || noisy(&ceiling) { 3 } else { 0 };
    assert_eq!(o.status.code(), Some(code), "{out}\n{}", stderr(&o));
    bed.run(&["slow", "2", "50mbit"]);
    let o = bed.mpirun(3, "node", &[BIN], &["check", "spec.toml", "--no-csv"], 180);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{}", stderr(&o));
    let line = check_line(&out, "links");
    assert!(line.ends_with("FAIL") && line.contains(&format!("{}'s best link", bed.host(2))), "{line}");
    let ceiling = check_line(&out, "ceiling");
    assert!(ceiling.ends_with("PASS") || noisy(&ceiling), "the collective against the capped ceiling: {ceiling}");
}
