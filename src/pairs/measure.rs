//! The measurement: ping-pong between the two ranks of each pair, round by round (a round's
//! pairs are disjoint, so it measures many links at once). Rank 0 receives each round's pairs as
//! the round ends, one gather of four doubles a rank, so what any rank holds is one round
//! whatever the rank count (the whole matrix at the end was 8 GiB at 16 384 ranks).

use super::schedule::Pairing;
use super::types::{PairResult, PairsOptions};
use crate::error::Result;
use crate::world::World;

/// Ping-pong `iters` round trips of `buf` with `peer`; the initiator returns the one-way time
/// per message in seconds. The count travels first, so both sides run the same loop.
fn ping_pong(world: &World, peer: usize, initiator: bool, buf: &mut [u8], iters: u64) -> f64 {
    if initiator {
        world.send_bytes(peer, &iters.to_le_bytes());
        let t0 = mpi::time();
        for _ in 0..iters {
            world.send_bytes(peer, buf);
            world.recv_bytes(peer, buf);
        }
        (mpi::time() - t0) / iters as f64 / 2.0
    } else {
        let mut n = [0u8; 8];
        world.recv_bytes(peer, &mut n);
        for _ in 0..u64::from_le_bytes(n) {
            world.recv_bytes(peer, buf);
            world.send_bytes(peer, buf);
        }
        0.0
    }
}

/// Warm up, pick a count from the budget, measure: one-way seconds per message (initiator).
fn measure(world: &World, peer: usize, initiator: bool, buf: &mut [u8], budget_s: f64) -> f64 {
    let warm = ping_pong(world, peer, initiator, buf, 3);
    let iters = if initiator { ((budget_s / (2.0 * warm.max(1e-9))) as u64).clamp(5, 100_000) } else { 0 };
    ping_pong(world, peer, initiator, buf, iters)
}

/// Run every round of `schedule`, handing each round's pairs (in rank order) to `each` on rank 0
/// as the round ends. An error from `each` stops the run before the next round on every rank;
/// rank 0 returns it, the others `Ok`. Collective.
pub fn rounds(
    world: &World,
    opts: &PairsOptions,
    schedule: &impl Pairing,
    each: impl FnMut(Vec<PairResult>) -> Result<()>,
) -> Result<()> {
    rounds_keeping(world, opts, schedule, |_, m| m, each)
}

/// As [`rounds`], with what the initiator reports changed by `mine` first: (round, [a, b,
/// latency s, one-way bandwidth s]) to what rank 0 receives.
fn rounds_keeping(
    world: &World,
    opts: &PairsOptions,
    schedule: &impl Pairing,
    mut mine_of: impl FnMut(usize, [f64; 4]) -> [f64; 4],
    mut each: impl FnMut(Vec<PairResult>) -> Result<()>,
) -> Result<()> {
    let mut lat = vec![0u8; opts.latency_bytes as usize];
    let mut bw = vec![0u8; opts.bandwidth_bytes as usize];
    let mut done: Result<()> = Ok(());
    for round in 0..schedule.rounds() {
        // The round's start, as a barrier would mark it, carrying rank 0's word: stop after a
        // failed write (a run that will fail at its end wastes the cluster's time).
        if world.max_u64(done.is_err() as u64) != 0 {
            break;
        }
        // (a, b, latency s, one-way bandwidth s): NaN where this rank is not the initiator.
        let mut mine = [f64::NAN; 4];
        if let Some((a, b)) = schedule.pair_of(round, world.rank) {
            let initiator = world.rank == a;
            let peer = if initiator { b } else { a };
            let l = measure(world, peer, initiator, &mut lat, opts.budget_s);
            let t = measure(world, peer, initiator, &mut bw, opts.budget_s);
            if initiator {
                mine = mine_of(round, [a as f64, b as f64, l, t]);
            }
        }
        let all = world.gather_f64(&mine);
        if world.rank == 0 {
            let pairs = all
                .chunks(4)
                .filter(|c| !c[0].is_nan())
                .map(|c| PairResult {
                    a: c[0] as usize,
                    b: c[1] as usize,
                    round,
                    latency_us: c[2] * 1e6,
                    bandwidth_gbps: opts.bandwidth_bytes as f64 / c[3] / 1e9,
                })
                .collect();
            done = each(pairs);
        }
    }
    done
}

/// The pairs of `schedule` measured for `doctor` and `check`: a pass to warm up, then two, each
/// pair's better one (the lower latency, the higher bandwidth) handed to `each` on rank 0 a
/// round at a time. The first kept pass stays with each pair's initiator (one entry a round:
/// O(n) per rank), which reports the better of the two in the second; rank 0 never holds more
/// than a round. Collective.
pub fn best_of_two(
    world: &World,
    opts: &PairsOptions,
    schedule: &impl Pairing,
    each: impl FnMut(Vec<PairResult>) -> Result<()>,
) -> Result<()> {
    rounds(world, opts, schedule, |_| Ok(()))?;
    let mut first = vec![[f64::NAN; 2]; schedule.rounds()];
    rounds_keeping(
        world,
        opts,
        schedule,
        |round, m| {
            first[round] = [m[2], m[3]];
            m
        },
        |_| Ok(()),
    )?;
    rounds_keeping(
        world,
        opts,
        schedule,
        |round, m| [m[0], m[1], m[2].min(first[round][0]), m[3].min(first[round][1])],
        each,
    )
}
