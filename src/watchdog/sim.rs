//! Thousands of simulated ranks in one process (tests only): an in-memory network behind the
//! same `Transport` as the UDP side channel, so the announcement tree (`tree`) and the inquiry
//! (`inquiry::run`) run unchanged over it. A stopped rank is one whose packets nobody reads, as
//! a SIGSTOPped process's socket buffer.
//!
//! What is simulated and what is not: every rank announces every step through `tree::announce`
//! and every live rank reads what it received as the watchdog thread does; for the inquiry, the
//! reporting rank runs the real `inquiry::run` (its queries, waits, and the line), while the
//! other live ranks only answer it (`State` and `Heard`, as `inquiry` answers a `Query`). In a
//! real job each runs its own inquiry too: whom every rank asks, round by round, is simulated
//! for all ranks at once in lockstep (`inquire_all`, with `inquiry::Asking`, the rule
//! `inquiry::run` follows), to bound the whole job's queries (docs/architecture.md, "Per-rank
//! costs").

use super::transport::Transport;
use super::transport::{Kind, Packet, State};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The network: one queue of packets per rank, and what each rank received.
pub struct Net {
    boxes: Vec<Mutex<VecDeque<Packet>>>,
    /// Packets a queue holds at most, as a socket's receive buffer: more are dropped.
    capacity: usize,
    /// Packets received per rank, by kind (`Kind as usize`).
    received: Vec<[AtomicU64; 10]>,
    /// Packets dropped per rank, its queue full.
    dropped: Vec<AtomicU64>,
}

/// One rank's end of the network.
pub struct End {
    net: Arc<Net>,
    rank: usize,
}

impl Net {
    pub fn new(n: usize) -> Arc<Net> {
        Net::bounded(n, usize::MAX)
    }

    /// A network whose queues hold at most `capacity` packets each, as a UDP socket's buffer
    /// (Linux's default, 208 KiB, holds a few hundred small datagrams).
    pub fn bounded(n: usize, capacity: usize) -> Arc<Net> {
        Arc::new(Net {
            boxes: (0..n).map(|_| Mutex::new(VecDeque::new())).collect(),
            capacity,
            received: (0..n).map(|_| Default::default()).collect(),
            dropped: (0..n).map(|_| Default::default()).collect(),
        })
    }

    /// Packets rank r's full queue dropped so far.
    pub fn dropped(&self, r: usize) -> u64 {
        self.dropped[r].load(Ordering::Relaxed)
    }

    pub fn end(self: &Arc<Self>, rank: usize) -> End {
        End { net: Arc::clone(self), rank }
    }

    /// Packets of `kind` rank r has received so far.
    pub fn received(&self, r: usize, kind: Kind) -> u64 {
        self.received[r][kind as usize].load(Ordering::Relaxed)
    }
}

impl Transport for End {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.net.boxes.len()
    }

    fn send(&self, to: usize, kind: Kind, state: &State) {
        let p = Packet { kind, from: self.rank, to, state: state.clone() };
        let mut queue = self.net.boxes[to].lock().unwrap();
        if queue.len() >= self.net.capacity {
            self.net.dropped[to].fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.net.received[to][kind as usize].fetch_add(1, Ordering::Relaxed);
        queue.push_back(p);
    }

    fn recv(&self) -> Option<Packet> {
        self.net.boxes[self.rank].lock().unwrap().pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::super::inquiry::{self, Outcome};
    use super::super::tree::{self, note_arrival};
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    const N: usize = 4096;
    /// Ranks per simulated host.
    const PER_HOST: usize = 64;

    fn hosts(n: usize) -> Vec<String> {
        (0..n).map(|r| format!("node{}", r / PER_HOST)).collect()
    }

    const DESC: &str = "all-reduce of 65536 B (float, out-of-place, 40 timed calls)";

    /// A job of `N` ranks: each arms steps 1..=`last[r]` (announcing each), and each live rank
    /// reads its packets after every step, as its watchdog thread would. Returns the network and
    /// each rank's arrivals (what it heard; a full table only where a rank hears someone or
    /// reports, as the real one is, a few kB per rank).
    fn run_steps(last: &[u64], stopped: &[usize]) -> (Arc<Net>, Vec<Vec<Option<u64>>>) {
        run_steps_on(Net::new(last.len()), last, stopped)
    }

    fn run_steps_on(net: Arc<Net>, last: &[u64], stopped: &[usize]) -> (Arc<Net>, Vec<Vec<Option<u64>>>) {
        let n = last.len();
        let ends: Vec<End> = (0..n).map(|r| net.end(r)).collect();
        let mut arrivals: Vec<Vec<Option<u64>>> =
            (0..n).map(|r| if r <= 1 || tree::hears(r, n).next().is_some() { vec![None; n] } else { vec![] }).collect();
        let steps = *last.iter().max().unwrap();
        for step in 1..=steps {
            let before: Vec<u64> = (0..n).map(|r| net.received(r, Kind::Arrive)).collect();
            for (r, e) in ends.iter().enumerate() {
                if step <= last[r] {
                    tree::announce(e, step);
                }
            }
            // The bound: whatever n, at most FAN_IN announcements per rank and step.
            let most = (0..n).map(|r| net.received(r, Kind::Arrive) - before[r]).max().unwrap();
            assert!(most <= tree::FAN_IN as u64, "step {step}: a rank received {most} announcements");
            for (r, e) in ends.iter().enumerate().filter(|(r, _)| !stopped.contains(r)) {
                while let Some(p) = e.recv() {
                    assert_eq!(p.kind, Kind::Arrive);
                    note_arrival(&mut arrivals[r], p.from, p.state.step);
                }
            }
        }
        (net, arrivals)
    }

    /// The inquiry once `stopped` have stopped: `reporter` runs the real one, every other live
    /// rank answers it (its state at step `at`, and what it heard). Returns the reporter's line
    /// and how long the inquiry took.
    fn inquire(
        net: &Arc<Net>,
        mut arrivals: Vec<Vec<Option<u64>>>,
        stopped: &[usize],
        reporter: usize,
        at: u64,
    ) -> (String, Duration) {
        let n = arrivals.len();
        let done = Arc::new(AtomicBool::new(false));
        let me = |step| move || State { step, armed: true, elapsed_s: 5.0, desc: DESC.to_string() };
        let mine = std::mem::take(&mut arrivals[reporter]);
        let answering = {
            let (net, done, stopped) = (Arc::clone(net), Arc::clone(&done), stopped.to_vec());
            std::thread::spawn(move || {
                let ends: Vec<End> = (0..n).map(|r| net.end(r)).collect();
                while !done.load(Ordering::Acquire) {
                    for r in (0..n).filter(|&r| r != reporter && !stopped.contains(&r)) {
                        while let Some(p) = ends[r].recv() {
                            if p.kind == Kind::Query {
                                ends[r].send(p.from, Kind::State, &me(at)());
                                tree::send_heard(&ends[r], p.from, &arrivals[r]);
                            }
                        }
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        let mut mine = mine;
        let start = Instant::now();
        let ask = inquiry::ask_for(5.0);
        let out = inquiry::run(&net.end(reporter), &me(at), &mut mine, &hosts(n), vec![], ask);
        let took = start.elapsed();
        done.store(true, Ordering::Release);
        answering.join().unwrap();
        match out {
            Outcome::Report(line) => (line, took),
            Outcome::Quiet => panic!("rank {reporter} did not report"),
        }
    }

    /// 4 096 ranks, 64 per host: at most `FAN_IN` announcements per rank and step, and a stopped
    /// leaf (its parent answers for its last step) is named with its host and whether it reached
    /// the step, within `-T` + 5 s of its deadline (`-T 5`: the inquiry asks for 1 s).
    #[test]
    fn a_stopped_leaf_of_4096_ranks_is_named() {
        let victim = 3000; // parent 96, itself a child of 3
        let (net, arrivals) = run_steps(&[5; N], &[victim]);
        let (line, took) = inquire(&net, arrivals, &[victim], 0, 5);
        assert!(
            line.starts_with(&format!("rank 3000 (node46) reached {DESC}, step 5, but never finished it; ranks 0-2999,3001-4095 (node0, node1, ")),
            "{line}"
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
        // During the inquiry the reporter receives about one `State` per rank and one `Heard`
        // per parent: O(n) once, not per step.
        let states = net.received(0, Kind::State);
        assert!(states >= (N - 2) as u64 && net.received(0, Kind::Heard) <= (N / tree::CHILDREN + 2) as u64);
    }

    /// The reporter's own burst: it asks every rank, and the answers come faster than it reads
    /// them. With queues that hold 256 packets, as a UDP socket's default buffer holds a few
    /// hundred, a stopped leaf of 4 096 ranks is still the only rank named, within the limit:
    /// the reporter asks in batches its buffer can hold, and asks again those whose answers
    /// were dropped.
    #[test]
    fn a_reporter_with_a_socket_buffer_s_room_still_hears_every_live_rank() {
        let victim = 3000;
        let (net, arrivals) = run_steps_on(Net::bounded(N, 256), &[5; N], &[victim]);
        let (line, took) = inquire(&net, arrivals, &[victim], 0, 5);
        assert!(
            line.starts_with(&format!("rank 3000 (node46) reached {DESC}, step 5, but never finished it; ranks 0-2999,3001-4095 (node0, node1, ")),
            "dropped {} at the reporter: {line}",
            net.dropped(0)
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    /// A stopped parent (rank 40: parent 1, children 1241-1271) that stopped before step 5: its
    /// children's announcements of step 5 are lost with it, but they answer the inquiry
    /// themselves; the parent is named as never having reached step 5 (rank 1 heard its step 4).
    /// With one of its children stopped too, that child's last step is unknown (its parent is
    /// silent): it is named as having stopped answering.
    #[test]
    fn a_stopped_parent_of_4096_ranks_is_named_and_its_stopped_child_too() {
        let mut last = vec![5; N];
        last[40] = 4;
        let (net, arrivals) = run_steps(&last, &[40]);
        let (line, _) = inquire(&net, arrivals, &[40], 0, 5);
        assert!(
            line.starts_with(&format!("rank 40 (node0) never reached {DESC}, step 5; ranks 0-39,41-4095 (node0, ")),
            "{line}"
        );
        let (net, arrivals) = run_steps(&last, &[40, 1250]);
        let (line, took) = inquire(&net, arrivals, &[40, 1250], 0, 5);
        assert!(
            line.starts_with(&format!("rank 40 (node0) never reached {DESC}, step 5; rank 1250 (node19) stopped answering (stopped, dead or cut off); ranks 0-39,41-1249,1251-4095 (")),
            "{line}"
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    /// Rank 0 stopped inside step 5: rank 1 (which hears rank 0's announcements) reports, after
    /// giving rank 0 a last chance, and names it as having reached the step.
    #[test]
    fn a_stopped_rank_0_of_4096_is_named_by_rank_1() {
        let (net, arrivals) = run_steps(&[5; N], &[0]);
        let (line, took) = inquire(&net, arrivals, &[0], 1, 5);
        assert!(
            line.starts_with(&format!("rank 0 (node0) reached {DESC}, step 5, but never finished it; ranks 1-4095 (")),
            "{line}"
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    /// Every live rank's inquiry at once (the worst case: every deadline passes in the same
    /// round), in lockstep rounds of `RESEND`: each computes whom it asks from what it heard by
    /// the round's start ([`inquiry::Asking`], as `inquiry::run` does), then the queries are
    /// delivered and answered (a `Query` tells the asked rank of the asker, the `State` tells
    /// the asker of the asked). Returns the queries sent per round, the most any rank received
    /// in a round, and who each rank heard after `rounds` rounds.
    fn inquire_all(n: usize, stopped: &[usize], rounds: usize) -> (Vec<usize>, usize, Vec<Vec<bool>>) {
        let live = |r: usize| !stopped.contains(&r);
        let mut heard = vec![vec![false; n]; n];
        let mut asking: Vec<inquiry::Asking> = (0..n).map(|_| Default::default()).collect();
        let (mut sent, mut most) = (vec![], 0);
        for _ in 0..rounds {
            let queries: Vec<(usize, Vec<usize>)> = (0..n)
                .filter(|&r| live(r))
                .map(|r| {
                    let h = &heard[r];
                    (r, asking[r].next(r, n, &|x| h[x]))
                })
                .collect();
            let mut received = vec![0usize; n];
            for (from, to) in &queries {
                for &t in to {
                    received[t] += 1;
                    if live(t) {
                        heard[t][*from] = true;
                        heard[*from][t] = true;
                        received[*from] += 1;
                    }
                }
            }
            sent.push(queries.iter().map(|(_, to)| to.len()).sum());
            most = most.max(*received.iter().max().unwrap());
        }
        (sent, most, heard)
    }

    /// 4 096 ranks, every one inquiring at once: a round costs at most 5n queries over the job (4 from each rank, n from the lowest live one)
    /// (every rank asked every other before: n(n − 1), 16.8 million), no rank receives more than
    /// 2n in a round, and the lowest live rank — the one that reports —
    /// hears every live rank within the first rounds while every other live rank hears a lower
    /// one (so it stays quiet). With rank 0 stopped, and with the first host's 64 ranks stopped.
    #[test]
    fn every_rank_inquiring_at_once_costs_about_n_queries_a_round() {
        for stopped in [vec![3000], vec![0], (0..PER_HOST).collect::<Vec<_>>()] {
            let (sent, most, heard) = inquire_all(N, &stopped, 5);
            let reporter = (0..N).find(|r| !stopped.contains(r)).unwrap();
            assert!(sent.iter().all(|&q| q <= 5 * N), "stopped {:?}..: queries per round {sent:?}", stopped[0]);
            assert!(most <= 2 * N, "a rank received {most} in a round");
            assert!(
                (0..N).all(|r| stopped.contains(&r) || r == reporter || heard[reporter][r]),
                "the reporter (rank {reporter}) did not hear every live rank"
            );
            assert!(
                (reporter + 1..N).all(|r| stopped.contains(&r) || (0..r).any(|x| heard[r][x])),
                "a live rank above the reporter heard no lower rank"
            );
            // After the first rounds, only the stopped ranks are still asked.
            assert!(sent[4] <= stopped.len() * 2, "{sent:?}");
        }
        // The old rule, every rank asking every rank not heard, breaks the bound at once.
        let old: usize = (0..N).map(|r| (0..N).filter(|&x| x != r).count()).sum();
        assert!(old > 5 * N);
    }

    /// Before the tree, every rank announced to rank 0: n − 1 packets per step there. The same
    /// simulation with that pattern breaks the bound (so the check above can fail).
    #[test]
    fn announcing_to_rank_0_would_break_the_bound() {
        let net = Net::new(N);
        for r in 1..N {
            net.end(r).send(0, Kind::Arrive, &State { step: 1, ..State::default() });
        }
        assert!(net.received(0, Kind::Arrive) > tree::FAN_IN as u64);
    }
}
