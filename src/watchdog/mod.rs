//! `-T/--timeout`: a watchdog for steps that never finish (a host gone, a link down, a rank
//! stopped), so that a hang always ends, and says who is stuck.
//!
//! A thread wakes a few times a second and looks at one deadline. The sweep arms it before each
//! step: each batch of calls (warm-up, timed batch, check call) and each exchange of results
//! between them, and disarms it after each point. Arming is a few atomic stores, an uncontended
//! lock and one `sendto` on the side channel ("arrived at step N", `channel`), per step, never
//! inside the timed loop. A step may take `-T` plus twice its expected time (calls × the
//! warm-up's estimate per call), so long batches of large messages do not trip it while a hang
//! is still caught about `-T` after it began; the first warm-up call, a fixed `-w` warm-up and
//! the check call have no estimate: `-T` alone. Without `-T`, a step may take max(30 s, 20× its
//! expected time) (NCCL's init: 5 min, `Timeout::setup_limit_s`); `-T 0` turns the watchdog off.
//! A batch still taking samples is slow, not stuck (a loaded machine makes each sample many
//! times slower than the warm-up said): its limit counts from its last sample
//! (`crate::backend::samples_taken`, counted by the MPI backend's timed loop, looked at every
//! tick). A hang takes no sample, and is caught one limit (and a tick) after the last.
//!
//! `coll-bench step` arms it once per pass of a layout (`Phase::Step`: the set-up, each warm-up,
//! timed and check step), so the steps are numbered alike on every rank although a pipeline
//! stage's calls are not another's, and re-arms it (`rearm`: a new deadline and description,
//! the same step) for each call of the pass, so the line says where the reporting rank waits.
//!
//! When the deadline passes, the ranks find out over the side channel who does not answer any
//! more, and the lowest rank that does prints one line for the job (`inquiry`, `message`), then
//! every rank ends with exit code 2 (`_exit`: no MPI call, which could block on the broken
//! network, and no unwinding through a thread that is stuck inside MPI). mpirun tears down the
//! rest. Rows already written stay: the reports flush every row as it is written.
//!
//! A failed MPI call ends the job through the same channel (`crate::mpi_error::fail`, routed here
//! while a watchdog runs, also with `-T 0`, which only turns the deadlines off): the failing rank
//! sends its line to rank 0 (`Failed`), which prints it, so one line is printed however many
//! ranks fail; rank 0 failing prints its own line. Then the job ends in order, every rank by
//! itself, those blocked inside the collective too: rank 0 sends `End` until every rank has
//! answered `Bye` (`BYE_WAIT`), then `Finish`, on which each rank leaves the launcher's books
//! (`pmi`: under MPICH's Hydra, a rank that exits without that is taken for crashed, and the
//! others are SIGKILLed with a `BAD TERMINATION` banner) and exits with 2. A rank that does not
//! answer `Bye` in time gets `Done` instead, as after a hang: every rank exits at once and the
//! launcher ends what is left. If rank 0 does not answer within `FAILED_WAIT` (gone), the failing
//! rank prints its line itself.
//!
//! Why `_exit` and not `MPI_Abort`: MPI runs single-threaded here (`MPI_THREAD_SINGLE`), so a
//! second thread calling into it is outside the standard. With Open MPI 4.1 both end the job
//! the same way (tried on the namespace test bed with a link cut, and with a stopped rank);
//! `_exit` needs nothing from MPI.

mod channel;
mod inquiry;
mod liveness;
mod message;
pub mod pmi;
#[cfg(test)]
mod sim;
mod task;
mod transport;
mod tree;

use crate::error::exit;
use crate::mpi_error;
use crate::options::Timeout;
use crate::world::World;
use channel::Channel;
use inquiry::Outcome;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use transport::{Kind, Packet, State};

pub use message::describe;
pub use task::{Phase, StepPart, StepPass, StepTask, Task};

/// How long a rank whose MPI call failed waits for rank 0 to print its line and end the job
/// before printing it itself (more than `BYE_WAIT` and `FINISH_WAIT` together).
const FAILED_WAIT: Duration = Duration::from_secs(15);

/// How long rank 0 asks (`End`, every `END_RESEND`) for every rank's `Bye` after a failed call.
/// Every live rank's watchdog thread answers within a tick (at most 0.1 s); the margin is for a
/// loaded machine.
const BYE_WAIT: Duration = Duration::from_secs(5);
const END_RESEND: Duration = Duration::from_millis(100);

/// How long a rank that said `Bye` waits for `Finish` or `Done` before ending anyway (the
/// launcher then ends the rest).
const FINISH_WAIT: Duration = Duration::from_secs(8);

/// How long a rank that saw rank 0 die waits for rank 1's `Done` (rank 1 names the death)
/// before naming it itself.
const REPORTER_WAIT: Duration = Duration::from_secs(2);

/// Set by the first thread that prints this process's line: a second one (the watchdog thread
/// given another rank's failure while the main thread reports its own) stays silent and waits
/// for the first to end the process. One line per rank at most, one for the job by design.
static SAID: AtomicBool = AtomicBool::new(false);

/// The step being watched.
#[derive(Default)]
struct Current {
    task: Option<Task>,
    /// Steps armed so far: the same sequence on every rank.
    step: u64,
    armed_at_ns: u64,
}

struct Shared {
    epoch: Instant,
    /// Deadline in ns after `epoch`; 0: disarmed.
    deadline_ns: AtomicU64,
    /// The limit the current deadline was set with, ns (for the message).
    limit_ns: AtomicU64,
    /// `crate::backend::samples_taken` at the last tick (or when the deadline was set) ...
    samples_seen: AtomicU64,
    /// ... and when it last changed, ns after `epoch`: a step's limit counts from its last
    /// sample, so a slow batch is not stuck and a hang is caught one limit after its last.
    sampled_ns: AtomicU64,
    current: Mutex<Current>,
    stop: AtomicBool,
    rank: usize,
    hosts: Vec<String>,
    channel: Option<Channel>,
    /// Rank 0, ending the job after a failed call: which ranks have said `Bye` (either thread may
    /// read it off the channel).
    byes: Mutex<Vec<bool>>,
    /// This rank's socket to MPICH's process manager, if it has one.
    pmi: Option<pmi::Pmi>,
}

pub struct Watchdog {
    shared: Arc<Shared>,
    timeout: Timeout,
    thread: Option<JoinHandle<()>>,
    /// The thread that watches the other ranks' links for a death (`liveness`).
    links: Option<(liveness::Stopper, JoinHandle<()>)>,
}

impl Watchdog {
    /// Start the thread, after opening the side channel. Collective (every rank calls it with the
    /// same `timeout`). With `-T 0` no step has a deadline, but a failed MPI call still ends every
    /// rank through the channel; `None` there on one rank (nothing to watch).
    pub fn start(world: &World, timeout: Timeout) -> Option<Watchdog> {
        if timeout.base_s().is_none() && world.size == 1 {
            return None;
        }
        // No deadline: the failed calls' channel only, looked at 10 times a second.
        let base_s = timeout.base_s().unwrap_or(Timeout::AUTO_MIN_S);
        let channel = if world.size > 1 { Channel::open(world) } else { None };
        let links = channel.as_ref().and_then(|ch| liveness::Links::open(world, ch));
        let mut w = Self::with_channel(base_s, timeout, world.rank, world.hosts.clone(), channel);
        if let Some(mut links) = links {
            let s = Arc::clone(&w.shared);
            let stopper = links.stopper();
            let thread = std::thread::Builder::new()
                .name("coll-bench-links".into())
                .spawn(move || {
                    while let Some((rank, how)) = links.wait() {
                        match how {
                            // This process already ends the job (its own line, or a peer's
                            // word that it does): a peer's end now is the job's tear-down.
                            liveness::Ended::Died if crate::error::ENDING.load(Ordering::SeqCst) => {}
                            liveness::Ended::Died => died(&s, rank),
                            // That rank ends the job with an outcome of its own: a SIGTERM from
                            // here on is the launcher's tear-down, not the user's interruption,
                            // and this rank's other links hear it from here (the tree's flood).
                            liveness::Ended::Own => crate::error::ending(),
                        }
                    }
                })
                .expect("the links thread starts");
            w.links = Some((stopper, thread));
        }
        Some(w)
    }

    fn with_channel(base_s: f64, timeout: Timeout, rank: usize, hosts: Vec<String>, channel: Option<Channel>) -> Self {
        let shared = Arc::new(Shared::new(rank, hosts, channel));
        // Look often enough that the job ends within a few percent of the limit, rarely enough to
        // cost nothing: 10 Hz, faster for short limits.
        let tick = Duration::from_secs_f64((base_s / 20.0).clamp(0.005, 0.1));
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("coll-bench-watchdog".into())
            .spawn(move || watch(&s, tick, inquiry::ask_for(base_s)))
            .expect("the watchdog thread starts");
        // A failed MPI call, from now until the watchdog is dropped, ends every rank through it.
        let s = Arc::clone(&shared);
        mpi_error::set_ender(Some(Arc::new(move |line: &str| failed(&s, line))));
        Watchdog { shared, timeout, thread: Some(thread), links: None }
    }

    /// Watch `task`, expected to take `expected_s` seconds (see `Timeout::limit_s`).
    pub fn arm(&self, task: Task, expected_s: f64) {
        let Some(limit) = self.timeout.limit_s(expected_s) else { return };
        let step = self.shared.set(task, limit, true);
        if let Some(ch) = &self.shared.channel {
            tree::announce(ch, step);
        }
    }

    /// Watch another part of the step armed last (`Phase::Step`: each call of a pass), with a
    /// deadline of its own: the step's number stays and nothing is announced, so the sequence
    /// of steps stays the same on every rank (a pipeline stage's calls are not another's).
    pub fn rearm(&self, task: Task, expected_s: f64) {
        let Some(limit) = self.timeout.limit_s(expected_s) else { return };
        self.shared.set(task, limit, false);
    }

    pub fn disarm(&self) {
        self.shared.deadline_ns.store(0, Ordering::Release);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        mpi_error::set_ender(None);
        self.disarm();
        if let Some((stopper, thread)) = self.links.take() {
            // Not a death: the peers see `CLOSE` before the sockets close.
            liveness::close();
            stopper.stop();
            let _ = thread.join();
        }
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Shared {
    fn new(rank: usize, hosts: Vec<String>, channel: Option<Channel>) -> Self {
        Shared {
            byes: Mutex::new(vec![false; hosts.len()]),
            pmi: pmi::Pmi::from_env(),
            epoch: Instant::now(),
            deadline_ns: AtomicU64::new(0),
            limit_ns: AtomicU64::new(0),
            samples_seen: AtomicU64::new(0),
            sampled_ns: AtomicU64::new(0),
            current: Mutex::new(Current::default()),
            stop: AtomicBool::new(false),
            rank,
            hosts,
            channel,
        }
    }

    /// Watch `task` for `limit_s` from now: a new step (`new_step`) or another part of the
    /// current one. The step's number.
    fn set(&self, task: Task, limit_s: f64, new_step: bool) -> u64 {
        let now = self.epoch.elapsed().as_nanos() as u64;
        let step = {
            let mut c = self.current.lock().unwrap_or_else(|e| e.into_inner());
            c.task = Some(task);
            c.step += u64::from(new_step);
            c.armed_at_ns = now;
            c.step
        };
        let limit_ns = (limit_s * 1e9) as u64;
        self.limit_ns.store(limit_ns, Ordering::Relaxed);
        self.samples_seen.store(crate::backend::samples_taken(), Ordering::Relaxed);
        self.sampled_ns.store(now, Ordering::Relaxed);
        self.deadline_ns.store((now + limit_ns).max(1), Ordering::Release);
        step
    }

    fn note_bye(&self, rank: usize) {
        if let Some(b) = self.byes.lock().unwrap_or_else(|e| e.into_inner()).get_mut(rank) {
            *b = true;
        }
    }

    fn said_bye(&self, rank: usize) -> bool {
        self.byes.lock().unwrap_or_else(|e| e.into_inner()).get(rank).copied().unwrap_or(false)
    }

    /// Every rank but this one has said `Bye`.
    fn all_said_bye(&self) -> bool {
        let byes = self.byes.lock().unwrap_or_else(|e| e.into_inner());
        byes.iter().enumerate().all(|(r, &b)| b || r == self.rank)
    }

    /// This rank's state, as it tells the others.
    fn state(&self) -> State {
        let c = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.epoch.elapsed().as_nanos() as u64;
        State {
            step: c.step,
            armed: self.deadline_ns.load(Ordering::Acquire) != 0,
            elapsed_s: now.saturating_sub(c.armed_at_ns) as f64 / 1e9,
            desc: c.task.as_ref().map(describe).unwrap_or_else(|| "the start of the sweep".into()),
        }
    }

    /// The task whose deadline has passed, if one has. Called every tick. A step that takes
    /// samples (a batch of calls on a loaded machine, each sample slower than the warm-up
    /// said) is slow, not stuck: its limit counts from its last sample, seen to within a tick.
    /// A hang takes no sample.
    fn overdue(&self) -> Option<Task> {
        let d = self.deadline_ns.load(Ordering::Acquire);
        let now = self.epoch.elapsed().as_nanos() as u64;
        let taken = crate::backend::samples_taken();
        if self.samples_seen.swap(taken, Ordering::Relaxed) != taken {
            self.sampled_ns.store(now, Ordering::Relaxed);
        }
        if d == 0 || now < d {
            return None;
        }
        // Armed at or before the last sample, so the deadline moves by as much as the samples
        // went on past the arming (never earlier than it was set).
        let armed_ns = d.saturating_sub(self.limit_ns.load(Ordering::Relaxed));
        let since_sample = self.sampled_ns.load(Ordering::Relaxed).saturating_sub(armed_ns);
        if now < d + since_sample {
            return None;
        }
        // Re-read under the lock: the sweep may have moved on between the two loads.
        let task = self.current.lock().unwrap_or_else(|e| e.into_inner()).task;
        if self.deadline_ns.load(Ordering::Acquire) != d {
            return None;
        }
        task
    }
}

/// `ask`: how long an inquiry waits for answers.
fn watch(s: &Shared, tick: Duration, ask: Duration) {
    let mut arrivals = vec![None; s.hosts.len()];
    // When this rank said `Bye` (rank 0 ends the job after a failed call).
    let mut ending: Option<Instant> = None;
    while !s.stop.load(Ordering::Acquire) {
        std::thread::park_timeout(if ending.is_some() { tick.min(END_RESEND / 4) } else { tick });
        let mut asked = vec![];
        if let Some(ch) = &s.channel {
            while let Some(p) = ch.recv() {
                match p.kind {
                    Kind::Arrive => tree::note_arrival(&mut arrivals, p.from, p.state.step),
                    Kind::Query => asked.push(p),
                    Kind::Heard => tree::note_heard(&mut arrivals, &p.state),
                    Kind::State => {}
                    Kind::Done => end(None),
                    Kind::Failed => report_for_job(s, &p.state.desc),
                    Kind::End => {
                        ch.send(p.from, Kind::Bye, &s.state());
                        ending.get_or_insert_with(Instant::now);
                    }
                    Kind::Bye => s.note_bye(p.from),
                    Kind::Finish => leave(s),
                }
            }
        }
        if ending.is_some_and(|t| t.elapsed() > FINISH_WAIT) {
            end(None);
        }
        let overdue = s.overdue();
        if !asked.is_empty() || overdue.is_some() {
            give_up(s, overdue, &mut arrivals, asked, ask);
        }
    }
}

/// A step is given up on (this rank's deadline passed, or another rank asks): find out who is
/// stuck, print the job's line if this rank is the one to, and end the process.
fn give_up(s: &Shared, overdue: Option<Task>, arrivals: &mut [Option<u64>], asked: Vec<Packet>, ask: Duration) -> ! {
    match &s.channel {
        Some(ch) => match inquiry::run(ch, &|| s.state(), arrivals, &s.hosts, asked, ask) {
            Outcome::Report(line) => {
                say(&line);
                let me = s.state();
                for r in (0..ch.size()).filter(|&r| r != s.rank) {
                    ch.send(r, Kind::Done, &me);
                }
                end(None)
            }
            Outcome::Quiet => end(None),
        },
        None => {
            let limit_s = s.limit_ns.load(Ordering::Relaxed) as f64 / 1e9;
            let task = overdue.or(s.current.lock().unwrap_or_else(|e| e.into_inner()).task);
            let line = task.map(|t| message::own_view(&t, limit_s, s.rank, &s.hosts));
            end(line.as_deref())
        }
    }
}

/// Rank `who` ended without a word (killed, crashed): its parent in the tree names it for the
/// job (`liveness::namer`: rank 0 up to 32 ranks; rank 1 when rank 0 is the one), tells the
/// others (`Done`), and every rank that saw it ends with exit 2. The other ranks that saw it
/// (its children: every rank, when rank 0 died in a job of up to 32) wait up to
/// [`REPORTER_WAIT`] for the namer's `Done` (the watchdog thread ends the process on it) and
/// speak themselves if none comes: MPICH's Hydra kills every rank of the dead rank's host at
/// once, and the namer may go before its line does (seen in a fresh-machine run: exit 2, no
/// line, no banner).
fn died(s: &Shared, who: usize) -> ! {
    let reporter = liveness::namer(who);
    let line = || {
        let host = s.hosts.get(who).map(String::as_str).unwrap_or("?");
        format!(
            "rank {who} ({host}) ended without a word (killed or crashed) while rank {} was in {}; aborting the job",
            s.rank,
            s.state().desc
        )
    };
    if s.rank != reporter && s.channel.is_some() {
        // From here a SIGTERM is the launcher's tear-down, not the user's interruption.
        crate::error::ending();
        std::thread::sleep(REPORTER_WAIT);
        end(Some(&line()));
    }
    if s.rank == reporter {
        let me = s.state();
        say(&line());
        if let Some(ch) = &s.channel {
            for r in (0..ch.size()).filter(|&r| r != s.rank && r != who) {
                ch.send(r, Kind::Done, &me);
            }
        }
    }
    end(None)
}

/// An MPI call failed on this rank (`line`, from `mpi_error::fail`): end the job through rank 0.
fn failed(s: &Shared, line: &str) -> ! {
    match &s.channel {
        Some(ch) if s.rank != 0 => {
            let state = State { desc: line.to_string(), ..s.state() };
            ch.send(0, Kind::Failed, &state);
            // Rank 0 prints the line and sends `Done`, on which this rank's watchdog thread ends
            // the process; this thread waits, and speaks only if that never comes.
            std::thread::sleep(FAILED_WAIT);
            end(Some(line))
        }
        Some(_) => report_for_job(s, line),
        None => end(Some(line)),
    }
}

/// Rank 0, after a failed call: print `line` for the job, and end every rank in order: `End`
/// until all have said `Bye`, then `Finish`, and leave; `Done` if some rank stays silent.
fn report_for_job(s: &Shared, line: &str) -> ! {
    say(line);
    let Some(ch) = &s.channel else { end(None) };
    let me = s.state();
    let others = || (0..ch.size()).filter(|&r| r != s.rank);
    let deadline = Instant::now() + BYE_WAIT;
    let mut next = Instant::now();
    while !s.all_said_bye() && Instant::now() < deadline {
        if Instant::now() >= next {
            for r in others().filter(|&r| !s.said_bye(r)) {
                ch.send(r, Kind::End, &me);
            }
            next += END_RESEND;
        }
        while let Some(p) = ch.recv() {
            if p.kind == Kind::Bye {
                s.note_bye(p.from);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if !s.all_said_bye() {
        for r in others() {
            ch.send(r, Kind::Done, &me);
        }
        end(None)
    }
    // Twice: one lost packet would cost that rank `FINISH_WAIT` and the job its clean end.
    for _ in 0..2 {
        for r in others() {
            ch.send(r, Kind::Finish, &me);
        }
    }
    // Let the others leave first (they look every 25 ms), so that none sees this rank's MPI
    // connections drop while it is still inside MPI.
    std::thread::sleep(END_RESEND);
    leave(s)
}

/// End this process in order (every other rank does too): leave the launcher's books, then exit
/// with code 2.
fn leave(s: &Shared) -> ! {
    if let Some(p) = s.pmi {
        p.finalize();
    }
    end(None)
}

/// The line, in one write(2), so ranks' lines never interleave. Once per process: a second
/// caller (another thread) waits here for the first to end the process.
fn say(line: &str) {
    crate::error::ending();
    if SAID.swap(true, Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
    let line = format!("coll-bench: error: {line}\n");
    // SAFETY: writing a valid, live buffer to the stderr descriptor.
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
    }
}

/// Print `line` if given, and end this process with exit code 2 at once.
fn end(line: Option<&str>) -> ! {
    crate::error::ending();
    if let Some(l) = line {
        say(l);
    }
    // SAFETY: _exit ends the process without running anything else (no MPI, no destructors, no
    // locks), which is the point: the main thread may be stuck inside MPI.
    unsafe { libc::_exit(exit::ERROR) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Call;
    use crate::collective::{Kind as Coll, Layout};
    use crate::dtype::{DType, Op};

    fn task() -> Task {
        let call = Call {
            kind: Coll::AllReduce,
            dtype: DType::Float32,
            op: Op::Sum,
            root: 0,
            layout: Layout::default(),
            in_place: false,
        };
        Task { call, phase: Phase::Timed, calls: 1 }
    }

    #[test]
    fn arming_and_disarming_does_not_fire() {
        let hosts = vec!["n1".to_string(), "n2".to_string()];
        let w = Watchdog::with_channel(0.05, Timeout::Fixed(0.05), 0, hosts, None);
        for _ in 0..5 {
            w.arm(task(), 0.0);
            std::thread::sleep(Duration::from_millis(10));
            w.disarm();
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(w.shared.state().step, 5);
        // Re-arming watches another part of the same step: its number stays.
        w.arm(task(), 0.0);
        w.rearm(Task { phase: Phase::Check, ..task() }, 0.0);
        let s = w.shared.state();
        assert_eq!((s.step, s.armed), (6, true));
        assert!(s.desc.ends_with("check call)"), "{}", s.desc);
        w.disarm();
        drop(w); // joins the thread: it did not end the process
    }

    /// A step's limit counts from its last sample: a step that takes samples past its limit is
    /// not overdue, and one whose samples stop is overdue one limit after the last, not at the
    /// next whole limit (a link cut just after a step began was once caught at twice -T, past
    /// the multi-host test's bound). Here the limit is 1 s and samples come for 1.1 s: overdue
    /// at 2.1 s (a whole-limit extension would say 3 s). No watchdog thread: the test ticks.
    #[test]
    fn a_hang_is_overdue_one_limit_after_the_last_sample() {
        let s = Shared::new(0, vec!["n1".into(), "n2".into()], None);
        let started = Instant::now();
        s.set(task(), 1.0, true);
        let last_sample = loop {
            let t = started.elapsed();
            if t > Duration::from_millis(1100) {
                break t;
            }
            crate::backend::sample_taken();
            assert!(s.overdue().is_none(), "overdue at {t:?} while taking samples");
            std::thread::sleep(Duration::from_millis(10));
        };
        let fired = loop {
            let t = started.elapsed();
            if s.overdue().is_some() {
                break t;
            }
            assert!(t < Duration::from_secs(5), "never overdue");
            std::thread::sleep(Duration::from_millis(10));
        };
        let after = fired.as_secs_f64() - last_sample.as_secs_f64();
        // One limit after the last sample, seen within a tick; scheduling may add to it.
        assert!((0.95..1.5).contains(&after), "overdue {after:.3} s after the last sample (at {fired:?})");
    }
}
