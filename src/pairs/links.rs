//! What the pairs say of the links between hosts: each host pair's rate (the median of its rank
//! pairs), the hosts whose every link is slower than the fastest host pair (their own link is the
//! bottleneck); each host's nominal rate comes from [`crate::nic`]. For `doctor`'s causes
//! and `check`'s judgement of the ceiling itself; measured with [`super::measure::all`].

pub use crate::record::{Link, Nominal};
use crate::world::World;

use super::schedule::Schedule;
use super::PairResult;

/// A link or host below this fraction of the best of its peers is slower than its peers. Half:
/// a degraded link (a port at a lower speed, a flapping cable) is that or worse, while healthy
/// links between the test bed's oversubscribed hosts read as low as 0.74 of the fastest pair
/// (0.8 failed a healthy bed 1 run in 8).
pub const SLOWER_THAN_PEERS: f64 = 0.5;

/// The pairs' bandwidth message for a measurement of links at `size` bytes: at most this (a slow
/// link stays seconds).
pub const LINK_BYTES: u64 = 1 << 20;

/// One host's links to the other hosts.
#[derive(Clone, Debug, PartialEq)]
pub struct HostBest {
    pub host: String,
    /// Its fastest link to another host, GB/s.
    pub best_gbps: f64,
    /// Each of its links: (the other host, GB/s).
    pub to: Vec<(String, f64)>,
}

/// The host pairs read against each other: the fastest host pair and every host's best link.
#[derive(Clone, Debug, PartialEq)]
pub struct Peers {
    pub fastest: Link,
    /// Every host between hosts, in order of first appearance.
    pub hosts: Vec<HostBest>,
}

/// The host links from the rank pairs: one per host pair (and per host, within it), the median
/// of its rank pairs; hosts in `hosts`' order of first appearance.
pub fn host_links(pairs: &[PairResult], hosts: &[String]) -> Vec<Link> {
    let mut order: Vec<&String> = vec![];
    for h in hosts {
        if !order.contains(&h) {
            order.push(h);
        }
    }
    let at = |h: &String| order.iter().position(|x| *x == h).unwrap_or(usize::MAX);
    let mut groups: Vec<((usize, usize), Vec<f64>)> = vec![];
    for p in pairs {
        let (x, y) = (at(&hosts[p.a]), at(&hosts[p.b]));
        let key = (x.min(y), x.max(y));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(p.bandwidth_gbps),
            None => groups.push((key, vec![p.bandwidth_gbps])),
        }
    }
    groups.sort_by_key(|(k, _)| *k);
    groups
        .into_iter()
        .map(|((x, y), v)| Link {
            a: order[x].clone(),
            b: order[y].clone(),
            gbps: crate::stats::median_of(&v),
            rank_pairs: v.len(),
        })
        .collect()
}

impl Peers {
    /// With two host pairs or more (finite rates), the fastest and each host's best link;
    /// `None` otherwise (nothing to compare with).
    pub fn of(links: &[Link]) -> Option<Peers> {
        let between: Vec<&Link> = links.iter().filter(|l| l.a != l.b && l.gbps.is_finite()).collect();
        let fastest = between.iter().max_by(|x, y| x.gbps.total_cmp(&y.gbps)).filter(|_| between.len() >= 2)?;
        let mut names: Vec<&String> = vec![];
        for l in &between {
            for h in [&l.a, &l.b] {
                if !names.contains(&h) {
                    names.push(h);
                }
            }
        }
        let hosts = names
            .into_iter()
            .map(|h| {
                let to: Vec<(String, f64)> = between
                    .iter()
                    .filter(|l| &l.a == h || &l.b == h)
                    .map(|l| (if &l.a == h { l.b.clone() } else { l.a.clone() }, l.gbps))
                    .collect();
                let best_gbps = to.iter().map(|t| t.1).fold(0.0, f64::max);
                HostBest { host: h.clone(), best_gbps, to }
            })
            .collect();
        Some(Peers { fastest: (*fastest).clone(), hosts })
    }

    /// The hosts slower than their peers: each whose best link to another host carries less
    /// than [`SLOWER_THAN_PEERS`] of the fastest host pair (every pair through it is slow: its
    /// own link is the bottleneck).
    pub fn slow(&self) -> impl Iterator<Item = &HostBest> {
        self.hosts.iter().filter(|h| h.best_gbps < SLOWER_THAN_PEERS * self.fastest.gbps)
    }
}

/// The host pairs the world's ring crosses (rank i with i+1, the last with 0), each measured as
/// [`measure`] measures a pair, in two or three rounds whatever the rank count: one entry per
/// host pair (the median of its rank pairs), rank 0 only; pairs within a host are left out. For
/// the sweep's header beside the ring's one ceiling. Collective.
pub fn ring_host_links(world: &World, bytes: u64, budget_s: f64, files: crate::report::Policy) -> Vec<Link> {
    let pairs = best_of_two(world, bytes, budget_s, files, Schedule::Ring(world.size));
    host_links(&pairs, &world.hosts).into_iter().filter(|l| l.a != l.b).collect()
}

/// Measure every rank pair (tournament rounds, as `pairs`) with a `bytes` message (at most
/// [`LINK_BYTES`]) and `budget_s` per pair: rank 0 gets the host links, the others nothing.
/// Collective.
pub fn measure(world: &World, bytes: u64, budget_s: f64, files: crate::report::Policy) -> Vec<Link> {
    let pairs = best_of_two(world, bytes, budget_s, files, Schedule::Tournament(world.size));
    host_links(&pairs, &world.hosts)
}

/// The pairs of `schedule`: a pass to warm up, then two, each pair's faster one.
fn best_of_two(
    world: &World,
    bytes: u64,
    budget_s: f64,
    files: crate::report::Policy,
    schedule: Schedule,
) -> Vec<super::PairResult> {
    let po = super::PairsOptions {
        latency_bytes: 8,
        bandwidth_bytes: bytes.clamp(8, LINK_BYTES),
        budget_s,
        top: 0,
        sequential: false,
        csv: None,
        files,
    };
    // A pass first that is not kept: the library makes its connections on first use (Open MPI's
    // TCP), and a warm-up that includes one leaves a pair's timed loop at its minimum of calls
    // (in `check`, right after the ceiling pass, healthy hosts read at 0.6-0.75 of the fastest).
    // Then two passes, each pair's faster one: load slows a transfer, nothing speeds one up, so
    // a host is not taken for slow because a burst hit its pairs once.
    super::measure::all(world, &po, schedule);
    let mut pairs = super::measure::all(world, &po, schedule);
    for (p, q) in pairs.iter_mut().zip(super::measure::all(world, &po, schedule)) {
        p.bandwidth_gbps = p.bandwidth_gbps.max(q.bandwidth_gbps);
    }
    pairs
}
