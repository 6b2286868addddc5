//! What the pairs say of the links between hosts: each host pair's rate (the median of its rank
//! pairs), the hosts whose every link is slower than the fastest host pair (their own link is the
//! bottleneck); each host's nominal rate comes from [`crate::nic`]. For `doctor`'s causes
//! and `check`'s judgement of the ceiling itself; measured with [`super::measure::best_of_two`]
//! a host pair at a time ([`ByHost`]), so that rank 0 holds one host round of rank pairs, and
//! the host links (h² / 2 of them), never every rank pair (5 GiB a pass at 16 384 ranks before).

pub use crate::record::{Link, Nominal};
use crate::world::World;

use super::schedule::{ByHost, Pairing, Schedule};
use super::types::PairResult;
use std::collections::BTreeMap;

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
    let mut acc = HostPairs::new(hosts);
    acc.add(pairs);
    acc.links()
}

/// The host links, built as the rank pairs come: the values of the host pairs still open, and
/// the links of those closed (`close`: their every rank pair has come).
pub struct HostPairs<'a> {
    /// Each host, in order of first appearance.
    names: Vec<&'a str>,
    /// Each rank's host, as an index into `names`.
    host_of: Vec<usize>,
    open: BTreeMap<(usize, usize), Vec<f64>>,
    closed: Vec<((usize, usize), Link)>,
    /// The host round the open pairs are of (`add_round`).
    host_round: usize,
}

impl<'a> HostPairs<'a> {
    pub fn new(hosts: &'a [String]) -> Self {
        let (names, host_of) = crate::layout::numbered_by_first_rank(hosts.iter().map(String::as_str));
        HostPairs { names, host_of, open: BTreeMap::new(), closed: vec![], host_round: 0 }
    }

    pub fn add(&mut self, pairs: &[PairResult]) {
        for p in pairs {
            let (x, y) = (self.host_of[p.a], self.host_of[p.b]);
            self.open.entry((x.min(y), x.max(y))).or_default().push(p.bandwidth_gbps);
        }
    }

    /// A round of `schedule`'s pairs: the host pairs of the host round before it are whole, so
    /// they are closed first.
    pub fn add_round(&mut self, schedule: &ByHost, pairs: &[PairResult]) {
        if let Some(p) = pairs.first().filter(|p| schedule.host_round(p.round) != self.host_round) {
            self.close();
            self.host_round = schedule.host_round(p.round);
        }
        self.add(pairs);
    }

    /// Every open host pair is whole: take their medians, and let their values go.
    pub fn close(&mut self) {
        for ((x, y), v) in std::mem::take(&mut self.open) {
            let link = Link {
                a: self.names[x].to_string(),
                b: self.names[y].to_string(),
                gbps: crate::stats::median_of(&v),
                rank_pairs: v.len(),
            };
            self.closed.push(((x, y), link));
        }
    }

    /// Rank pairs' values held now.
    pub fn held(&self) -> usize {
        self.open.values().map(Vec::len).sum()
    }

    /// Every link, in the order of the hosts' first appearance.
    pub fn links(mut self) -> Vec<Link> {
        self.close();
        self.closed.sort_by_key(|(k, _)| *k);
        self.closed.into_iter().map(|(_, l)| l).collect()
    }
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
    let mut acc = HostPairs::new(&world.hosts);
    best_of_two(world, bytes, budget_s, files, &Schedule::Ring(world.size), |pairs| acc.add(&pairs));
    acc.links().into_iter().filter(|l| l.a != l.b).collect()
}

/// Measure every rank pair, a host pair at a time ([`ByHost`]), with a `bytes` message (at most
/// [`LINK_BYTES`]) and `budget_s` per pair: rank 0 gets the host links, the others nothing. Rank
/// 0 closes each host round's links as it ends, so it holds one host round of rank pairs.
/// Collective.
pub fn measure(world: &World, bytes: u64, budget_s: f64, files: crate::report::Policy) -> Vec<Link> {
    let schedule = ByHost::new(&world.hosts);
    let mut acc = HostPairs::new(&world.hosts);
    best_of_two(world, bytes, budget_s, files, &schedule, |pairs| acc.add_round(&schedule, &pairs));
    acc.links()
}

/// Two measurements of the same host pairs, each pair's faster reading (load slows a transfer,
/// nothing speeds one up); a pair measured once keeps that reading.
pub fn faster_of(first: &[Link], again: &[Link]) -> Vec<Link> {
    let mut out = first.to_vec();
    for l in again {
        match out.iter_mut().find(|o| (&o.a, &o.b) == (&l.a, &l.b)) {
            Some(o) if l.gbps > o.gbps => o.gbps = l.gbps,
            Some(_) => {}
            None => out.push(l.clone()),
        }
    }
    out
}

/// How far two measurements of the same host pairs disagree: the most any pair's two readings
/// differ by, the faster over the slower (1 when they agree or share no pair).
pub fn disagreement(first: &[Link], again: &[Link]) -> f64 {
    first
        .iter()
        .filter_map(|f| again.iter().find(|a| (&a.a, &a.b) == (&f.a, &f.b)).map(|a| (f.gbps, a.gbps)))
        .filter(|(x, y)| *x > 0.0 && *y > 0.0 && x.is_finite() && y.is_finite())
        .map(|(x, y)| x.max(y) / x.min(y))
        .fold(1.0, f64::max)
}

/// The pairs of `schedule`, each pair's better of two passes after one to warm up, to `each` a
/// round at a time on rank 0.
fn best_of_two(
    world: &World,
    bytes: u64,
    budget_s: f64,
    files: crate::report::Policy,
    schedule: &impl Pairing,
    mut each: impl FnMut(Vec<PairResult>),
) {
    let po = super::types::PairsOptions {
        latency_bytes: 8,
        bandwidth_bytes: bytes.clamp(8, LINK_BYTES),
        budget_s,
        top: 0,
        sequential: false,
        csv: crate::options::CsvTarget::Off,
        files,
    };
    // A pass first that is not kept: the library makes its connections on first use (Open MPI's
    // TCP), and a warm-up that includes one leaves a pair's timed loop at its minimum of calls
    // (in `check`, right after the ceiling pass, healthy hosts read at 0.6-0.75 of the fastest).
    // Then two passes, each pair's faster one: load slows a transfer, nothing speeds one up, so
    // a host is not taken for slow because a burst hit its pairs once.
    let kept = super::measure::best_of_two(world, &po, schedule, |pairs| {
        each(pairs);
        Ok(())
    });
    debug_assert!(kept.is_ok(), "keeping pairs cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_measurement_keeps_each_pairs_faster_reading() {
        let l = |a: &str, b: &str, gbps: f64| Link { a: a.into(), b: b.into(), gbps, rank_pairs: 1 };
        let first = [l("x", "y", 1.0), l("x", "z", 0.1), l("y", "z", 1.1)];
        let again = [l("x", "y", 0.9), l("x", "z", 1.0), l("z", "w", 2.0)];
        let kept = faster_of(&first, &again);
        let gbps: Vec<f64> = kept.iter().map(|k| k.gbps).collect();
        assert_eq!(gbps, [1.0, 1.0, 1.1, 2.0]);
    }

    /// Blocks of `per` ranks on each of `hosts` hosts; `slow`'s links at a quarter of the rest.
    fn simulate(hosts: usize, per: usize, slow: usize) -> (Vec<String>, Vec<Link>, usize, Vec<PairResult>) {
        let names: Vec<String> = (0..hosts * per).map(|r| format!("node{:04}", r / per)).collect();
        let schedule = ByHost::new(&names);
        let rate = |a: usize, b: usize| {
            let g = 10.0 + ((a * 7 + b * 13) % 10) as f64 / 10.0;
            if a / per == slow || b / per == slow {
                g / 4.0
            } else {
                g
            }
        };
        let (mut acc, mut most, mut all) = (HostPairs::new(&names), 0, vec![]);
        let keep_all = hosts * per <= 256;
        for round in 0..schedule.rounds() {
            let pairs: Vec<PairResult> = (0..names.len())
                .filter_map(|x| schedule.pair_of(round, x).filter(|p| p.0 == x))
                .map(|(a, b)| PairResult { a, b, round, latency_us: 1.0, bandwidth_gbps: rate(a, b) })
                .collect();
            acc.add_round(&schedule, &pairs);
            most = most.max(acc.held());
            if keep_all {
                all.extend(pairs);
            }
        }
        let links = acc.links();
        (names, links, most, all)
    }

    #[test]
    fn a_host_pair_at_a_time_rank_0_holds_one_host_round_and_the_links_are_the_same() {
        // 256 ranks: the links as from every pair at once.
        let (names, links, most, all) = simulate(32, 8, 5);
        assert_eq!(links, host_links(&all, &names));
        assert_eq!(links.len(), 32 * 33 / 2);
        assert!(most <= 256 * 8 / 2, "{most}");
        // 4 096 simulated ranks on 512 hosts of 8: one host round at a time (16 384 values, 128
        // KiB), not 8.4 M pairs; the slow host named alone.
        let (_, links, most, _) = simulate(512, 8, 300);
        assert!(most <= 4096 * 8 / 2, "{most}");
        assert_eq!(links.len(), 512 * 513 / 2);
        assert!(links.iter().all(|l| l.rank_pairs == if l.a == l.b { 28 } else { 64 }));
        let peers = Peers::of(&links).unwrap();
        let slow: Vec<&str> = peers.slow().map(|h| h.host.as_str()).collect();
        assert_eq!(slow, ["node0300"]);
    }
}
