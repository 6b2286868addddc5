//! `-T/--timeout`: a watchdog for calls that never finish (a host gone, a link down, a rank stuck).
//!
//! A thread wakes a few times a second and looks at one deadline. The sweep arms it before each
//! batch of calls (warm-up, timed batch, check call) and before the exchanges of results between
//! them, and disarms it after each point: arming is two atomic stores and an uncontended lock,
//! per batch, never inside the timed loop. When the deadline passes, the thread prints one line
//! naming the call, the rank, its host and the ranks it waits on, and ends this process with exit
//! code 2 (`_exit`: no MPI call, which could block on the broken network, and no unwinding
//! through a thread that is stuck inside MPI). mpirun then tears the rest of the job down; every
//! other stuck rank's own watchdog fires too. Rows already written stay: the reports flush every
//! row as it is written.
//!
//! A batch may take `-T` plus twice its expected time (calls × the warm-up's estimate per call),
//! so long timed batches of large messages do not trip it while a hang is still caught about
//! `-T` after it began. The first warm-up call, a fixed `-w` warm-up and the check call have no
//! estimate to go by: `-T` alone.
//!
//! Why `_exit` and not `MPI_Abort`: MPI runs single-threaded here (`MPI_THREAD_SINGLE`), so a
//! second thread calling into it is outside the standard. With Open MPI 4.1 both end the job
//! the same way (tried on the namespace test bed with a link cut, and with a stopped rank);
//! `_exit` needs nothing from MPI.

use crate::backend::Call;
use crate::collective::{partner, Kind};
use crate::error::exit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the sweep is doing while the watchdog is armed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    WarmUp,
    Timed,
    Check,
    /// The exchanges of timings and check results after a batch (small collectives).
    Results,
}

/// The call being watched, for the message.
#[derive(Clone, Copy, Debug)]
pub struct Task {
    pub call: Call,
    pub phase: Phase,
    /// Calls in the batch.
    pub calls: u64,
}

struct Shared {
    epoch: Instant,
    /// Deadline in ns after `epoch`; 0: disarmed.
    deadline_ns: AtomicU64,
    /// The limit the current deadline was set with, ns (for the message).
    limit_ns: AtomicU64,
    task: Mutex<Option<Task>>,
    stop: AtomicBool,
    rank: usize,
    hosts: Vec<String>,
}

pub struct Watchdog {
    shared: Arc<Shared>,
    limit_s: f64,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Start the thread. `hosts`: the host of every rank, by rank.
    pub fn start(limit_s: f64, rank: usize, hosts: Vec<String>) -> Watchdog {
        let shared = Arc::new(Shared {
            epoch: Instant::now(),
            deadline_ns: AtomicU64::new(0),
            limit_ns: AtomicU64::new(0),
            task: Mutex::new(None),
            stop: AtomicBool::new(false),
            rank,
            hosts,
        });
        // Look often enough that the job ends within a few percent of the limit, rarely enough to
        // cost nothing: 10 Hz, faster for short limits.
        let tick = Duration::from_secs_f64((limit_s / 20.0).clamp(0.005, 0.1));
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("coll-bench-watchdog".into())
            .spawn(move || watch(&s, tick))
            .expect("the watchdog thread starts");
        Watchdog { shared, limit_s, thread: Some(thread) }
    }

    /// Watch `task`, expected to take `expected_s` seconds: it may take the limit plus twice that.
    pub fn arm(&self, task: Task, expected_s: f64) {
        let limit = self.limit_s + 2.0 * expected_s.max(0.0);
        let s = &self.shared;
        *s.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
        let deadline = s.epoch.elapsed().as_nanos() as u64 + (limit * 1e9) as u64;
        s.limit_ns.store((limit * 1e9) as u64, Ordering::Relaxed);
        s.deadline_ns.store(deadline.max(1), Ordering::Release);
    }

    pub fn disarm(&self) {
        self.shared.deadline_ns.store(0, Ordering::Release);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.disarm();
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn watch(s: &Shared, tick: Duration) {
    while !s.stop.load(Ordering::Acquire) {
        std::thread::park_timeout(tick);
        let d = s.deadline_ns.load(Ordering::Acquire);
        if d == 0 || (s.epoch.elapsed().as_nanos() as u64) < d {
            continue;
        }
        // Re-read under the lock: the sweep may have moved on between the two loads.
        let task = *s.task.lock().unwrap_or_else(|e| e.into_inner());
        if s.deadline_ns.load(Ordering::Acquire) != d {
            continue;
        }
        if let Some(task) = task {
            let limit_s = s.limit_ns.load(Ordering::Relaxed) as f64 / 1e9;
            let line = format!("coll-bench: error: {}\n", message(&task, limit_s, s.rank, &s.hosts));
            // One write(2) for the line, so ranks' lines do not interleave.
            // SAFETY: writing a valid buffer to the stderr descriptor; _exit ends the process
            // without running anything else (no MPI, no destructors, no locks).
            unsafe {
                libc::write(2, line.as_ptr().cast(), line.len());
                libc::_exit(exit::ERROR);
            }
        }
    }
}

/// The one line the watchdog prints (without the `coll-bench: error: ` prefix).
pub fn message(task: &Task, limit_s: f64, rank: usize, hosts: &[String]) -> String {
    let c = &task.call;
    let placement = if c.in_place { "in-place" } else { "out-of-place" };
    let what = if c.kind.spec().sized() {
        let bytes = c.layout.alg_count * c.dtype.size();
        format!("{} of {bytes} B ({}, {placement}", c.kind.name(), c.dtype.name())
    } else {
        format!("{} ({placement}", c.kind.name())
    };
    let what = match task.phase {
        Phase::WarmUp => format!("{what}, warm-up)"),
        Phase::Timed if task.calls > 1 => format!("{what}, {} timed calls)", task.calls),
        Phase::Timed => format!("{what})"),
        Phase::Check => format!("{what}, check call)"),
        Phase::Results => format!("the exchange of results after {what})"),
    };
    let host = hosts.get(rank).map(String::as_str).unwrap_or("?");
    let peers = peers(task, rank, hosts.len());
    let waiting = if peers.is_empty() {
        String::new()
    } else {
        let mut on: Vec<&str> = vec![];
        for &r in &peers {
            let h = hosts.get(r).map(String::as_str).unwrap_or("?");
            if !on.contains(&h) {
                on.push(h);
            }
        }
        let s = if peers.len() == 1 { "" } else { "s" };
        format!("; waiting on rank{s} {} ({})", crate::world::rank_list(&peers), on.join(", "))
    };
    format!("{what} did not finish within {} s on rank {rank} ({host}){waiting}; aborting the job", seconds(limit_s))
}

/// The ranks this rank's call depends on.
fn peers(task: &Task, rank: usize, n: usize) -> Vec<usize> {
    let c = &task.call;
    let others = || (0..n).filter(|&r| r != rank).collect::<Vec<_>>();
    if task.phase == Phase::Results {
        return others();
    }
    match c.kind {
        Kind::SendRecv => {
            let p = partner(rank, n);
            if p == rank {
                vec![]
            } else {
                vec![p]
            }
        }
        Kind::Broadcast | Kind::Scatter | Kind::Reduce | Kind::Gather if rank != c.root => vec![c.root],
        _ => others(),
    }
}

fn seconds(s: f64) -> String {
    if (s - s.round()).abs() < 0.05 {
        format!("{}", s.round())
    } else {
        format!("{s:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Layout;
    use crate::dtype::{DType, Op};

    fn task(kind: Kind, phase: Phase, calls: u64) -> Task {
        let layout = Layout { alg_count: 16384, ..Layout::default() };
        let call = Call { kind, dtype: DType::Float32, op: Op::Sum, root: 0, layout, in_place: false };
        Task { call, phase, calls }
    }

    fn hosts() -> Vec<String> {
        ["n1", "n2", "n1", "n2"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_message_names_call_rank_host_and_peers() {
        let m = message(&task(Kind::AllReduce, Phase::Timed, 1), 5.0, 3, &hosts());
        assert_eq!(
            m,
            "all-reduce of 65536 B (float, out-of-place) did not finish within 5 s on rank 3 (n2); waiting on ranks 0-2 (n1, n2); aborting the job"
        );
        let m = message(&task(Kind::SendRecv, Phase::Check, 1), 2.5, 2, &hosts());
        assert!(m.starts_with("sendrecv of 65536 B (float, out-of-place, check call) did not finish within 2.5 s on rank 2 (n1); waiting on rank 3 (n2);"), "{m}");
        let m = message(&task(Kind::Broadcast, Phase::Timed, 40), 5.0, 1, &hosts());
        assert!(m.contains("(float, out-of-place, 40 timed calls)") && m.contains("waiting on rank 0 (n1)"), "{m}");
        let m = message(&task(Kind::Barrier, Phase::Results, 1), 5.0, 0, &hosts());
        assert!(m.starts_with("the exchange of results after barrier (out-of-place) did not finish"), "{m}");
        assert!(!m.contains('\n'));
    }

    #[test]
    fn arming_and_disarming_does_not_fire() {
        let w = Watchdog::start(0.05, 0, hosts());
        for _ in 0..5 {
            w.arm(task(Kind::AllReduce, Phase::Timed, 1), 0.0);
            std::thread::sleep(Duration::from_millis(10));
            w.disarm();
        }
        std::thread::sleep(Duration::from_millis(100));
        drop(w); // joins the thread: it did not end the process
    }
}
