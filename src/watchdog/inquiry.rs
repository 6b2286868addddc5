//! When a step is given up on: the inquiry that finds who is stuck, and the choice of the one
//! rank that says so for the job.
//!
//! The rank whose deadline passed first asks over the side channel where the others are
//! (`Query`, repeated every 200 ms); a rank that is asked answers (`State`) and starts its own
//! inquiry. Whom a rank asks ([`Asking`]): first ranks 0 and 1 and the two just below it, and
//! every rank above it only if none of those has answered by the next round (rank 0 at once); a
//! rank that has heard from a rank below it asks nobody more. So the lowest live rank, the one
//! that reports, asks everyone, and the others ask at most four: a round costs a few n queries
//! over the job, not n(n − 1) (at 16 384 ranks, ~33 000 per rank in a burst before). After `ask` (1 to 5 s, `ask_for`) the
//! lowest rank that answered reports: it prints the job's one line, tells the others (`Done`) and
//! ends. A rank that would report although lower ranks did not answer waits `ask` more for one of
//! them to speak up first, so a lower rank that was merely slow to answer is not named as stuck
//! by a higher one. The others wait for `Done` and end quietly; if it never comes (the reporter
//! died meanwhile, or the job is cut in two) they ask every rank not heard for `ask` and print
//! their own view, after `3 × ask + 1 s`. Every path ends the process.
//!
//! Each `Query` and `State` a parent in the announcement tree sends is followed by its `Heard`
//! (`tree`): the last steps of the ranks it hears, so the reporter knows them for the line.

use super::message::job_line;
use super::transport::Transport;
use super::transport::{Kind, Packet, State};
use super::tree::{self, note_arrival};
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// How long the inquiry waits for answers, for a limit of `base_s` (`-T`): a fifth of it, from
/// 1 s (so `-T 5` still ends within about 7 s) to 5 s (the default limit: more patience for a
/// busy machine, where a live rank's answer may take a while).
pub fn ask_for(base_s: f64) -> Duration {
    Duration::from_secs_f64((base_s / 5.0).clamp(1.0, 5.0))
}
const RESEND: Duration = Duration::from_millis(200);
const POLL: Duration = Duration::from_millis(5);
/// Queries sent at most per [`POLL`]: their answers (a `State` each, and a `Heard` from each
/// parent) stay well inside a UDP socket's default buffer (a few hundred datagrams) between
/// two reads. 12 800 a second: every rank of 4 096 asked in 0.32 s.
const BATCH: usize = 64;

/// How long an inquiry of `n` ranks waits for answers, `ask` (from [`ask_for`]) or, where more,
/// the time to ask every rank twice at [`BATCH`] per [`POLL`] (past 6 400 ranks; 2.6 s at
/// 16 384).
pub fn ask_for_ranks(ask: Duration, n: usize) -> Duration {
    ask.max(POLL * (2 * n.div_ceil(BATCH)) as u32)
}

/// How the inquiry ends on this rank.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Print this line for the job (then tell the others).
    Report(String),
    /// Another rank has printed it: end without a word.
    Quiet,
}

struct Inquiry<'a> {
    ch: &'a dyn Transport,
    me: &'a dyn Fn() -> State,
    arrivals: &'a mut [Option<u64>],
    /// Every rank heard from since the inquiry began (a query carries its sender's state).
    answers: BTreeMap<usize, State>,
    done: bool,
}

impl Inquiry<'_> {
    /// Handle what has arrived; false once another rank has reported.
    fn drain(&mut self) -> bool {
        while let Some(p) = self.ch.recv() {
            self.handle(p);
        }
        !self.done
    }

    fn handle(&mut self, p: Packet) {
        match p.kind {
            Kind::Arrive => note_arrival(self.arrivals, p.from, p.state.step),
            Kind::Query => {
                self.ch.send(p.from, Kind::State, &(self.me)());
                tree::send_heard(self.ch, p.from, self.arrivals);
                self.answers.insert(p.from, p.state);
            }
            Kind::Heard => tree::note_heard(self.arrivals, &p.state),
            Kind::State => {
                self.answers.insert(p.from, p.state);
            }
            // Another rank has printed the job's line (a hang's, or a failed call's).
            Kind::Done | Kind::End | Kind::Finish => self.done = true,
            // A failed MPI call during an inquiry: the inquiry's line comes first.
            Kind::Failed | Kind::Bye => {}
        }
    }

    /// Handle packets until `until` or `stop` says so; false once another rank has reported.
    fn wait(&mut self, until: Instant, stop: &dyn Fn(&Self) -> bool) -> bool {
        loop {
            if !self.drain() {
                return false;
            }
            if stop(self) || Instant::now() >= until {
                return true;
            }
            std::thread::sleep(POLL);
        }
    }

    /// For `ask`, send a `Query` (and what this rank heard) to each rank `whom` names, at most
    /// [`BATCH`] every [`POLL`] (the answers to a batch fit a socket's buffer between two
    /// reads: asking thousands at once loses most answers), and again to those not heard once
    /// the last round is through and `RESEND` has passed, until every rank has answered; false
    /// once another rank has reported.
    fn ask(&mut self, ask: Duration, whom: &mut dyn FnMut(&Self) -> Vec<usize>) -> bool {
        let n = self.ch.size();
        let end = Instant::now() + ask;
        let mut next = Instant::now();
        let mut round: VecDeque<usize> = VecDeque::new();
        while Instant::now() < end && self.answers.len() < n - 1 {
            if round.is_empty() && Instant::now() >= next {
                round = whom(self).into();
                next = Instant::now() + RESEND;
            }
            let mine = (self.me)();
            let mut sent = 0;
            while let Some(r) = round.pop_front() {
                if self.answers.contains_key(&r) {
                    continue;
                }
                self.ch.send(r, Kind::Query, &mine);
                tree::send_heard(self.ch, r, self.arrivals);
                sent += 1;
                if sent == BATCH {
                    break;
                }
            }
            let until = if round.is_empty() { next } else { Instant::now() + POLL };
            if !self.wait(until.min(end), &|q| q.answers.len() == n - 1) {
                return false;
            }
        }
        true
    }

    fn line(&self, hosts: &[String]) -> String {
        let mut all = self.answers.clone();
        all.insert(self.ch.rank(), (self.me)());
        job_line(&all, self.arrivals, hosts)
    }
}

/// Whom one rank asks, round by round (see the module's doc).
#[derive(Debug, Default)]
pub struct Asking {
    /// Whether it has asked a round already.
    started: bool,
}

/// The ranks just below it a rank asks, besides ranks 0 and 1.
const NEAREST: usize = 2;

impl Asking {
    /// This round's queries for `rank` of `n`, given who has been heard so far (`heard`): none
    /// once a lower rank is heard; else ranks 0 and 1 and the [`NEAREST`] ranks just below it
    /// (those not heard), and, from the second round on (rank 0: at once), every higher rank
    /// not heard. The lowest live rank hears none below and so asks everyone from the second
    /// round; a rank with a live rank among those it asks below stays quiet. A rank above a run
    /// of stopped ranks with ranks 0 and 1 stopped too asks everyone as well, and hears the
    /// lowest live rank's query: a few ranks asking n each, never every rank.
    pub fn next(&mut self, rank: usize, n: usize, heard: &dyn Fn(usize) -> bool) -> Vec<usize> {
        if (0..rank).any(heard) {
            return vec![];
        }
        let below = (0..2.min(rank)).chain(rank.saturating_sub(NEAREST).max(2)..rank);
        let mut out: Vec<usize> = below.filter(|&r| !heard(r)).collect();
        if self.started || rank == 0 {
            out.extend((rank + 1..n).filter(|&r| !heard(r)));
        }
        self.started = true;
        out
    }
}

/// Run the inquiry on this rank. `seed`: packets that started it (queries from other ranks).
pub fn run(
    ch: &dyn Transport,
    me: &dyn Fn() -> State,
    arrivals: &mut [Option<u64>],
    hosts: &[String],
    seed: Vec<Packet>,
    ask: Duration,
) -> Outcome {
    let (rank, n) = (ch.rank(), ch.size());
    let ask = ask_for_ranks(ask, n);
    let mut q = Inquiry { ch, me, arrivals, answers: BTreeMap::new(), done: false };
    for p in seed {
        q.handle(p);
    }
    let mut asking = Asking::default();
    if !q.ask(ask, &mut |q| asking.next(rank, n, &|r| q.answers.contains_key(&r))) {
        return Outcome::Quiet;
    }
    let lowest_heard = |q: &Inquiry| q.answers.keys().next().is_some_and(|&r| r < rank);
    if !lowest_heard(&q) && rank > 0 {
        // Every lower rank is silent so far: give them a last chance to report first.
        if !q.wait(Instant::now() + ask, &lowest_heard) {
            return Outcome::Quiet;
        }
    }
    if !lowest_heard(&q) {
        return Outcome::Report(q.line(hosts));
    }
    // A lower rank reports; wait for its word.
    if !q.wait(Instant::now() + 2 * ask + Duration::from_secs(1), &|_| false) {
        return Outcome::Quiet;
    }
    // No word: the reporter died, or the job is cut in two. Ask every rank not heard (this
    // rank asked only the lowest), then say what this rank sees.
    if !q.ask(ask, &mut |q| (0..n).filter(|&r| r != rank && !q.answers.contains_key(&r)).collect()) {
        return Outcome::Quiet;
    }
    Outcome::Report(q.line(hosts))
}
