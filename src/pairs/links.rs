//! What the pairs say of the links between hosts: each host pair's rate (the median of its rank
//! pairs), the hosts whose every link is slower than the fastest host pair (their own link is the
//! bottleneck), and each host's nominal rate where its hardware states one. For `doctor`'s causes
//! and `check`'s judgement of the ceiling itself; measured with [`super::measure_all`].

use crate::world::World;
use serde::Serialize;
use std::path::{Path, PathBuf};

use super::PairResult;

/// A link or host below this fraction of the best of its peers is slower than its peers. Half:
/// a degraded link (a port at a lower speed, a flapping cable) is that or worse, while healthy
/// links between the test bed's oversubscribed hosts read as low as 0.74 of the fastest pair
/// (0.8 failed a healthy bed 1 run in 8).
pub const SLOWER_THAN_PEERS: f64 = 0.5;

/// The pairs' bandwidth message for a measurement of links at `size` bytes: at most this (a slow
/// link stays seconds).
pub const LINK_BYTES: u64 = 1 << 20;

/// The point-to-point rate between two hosts (the same host twice: within it): the median of
/// the rank pairs' one-way bandwidth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Link {
    pub a: String,
    pub b: String,
    pub gbps: f64,
    pub rank_pairs: usize,
}

/// A host's nominal link rate, where its hardware says (`/sys/class/net/*/speed`,
/// `/sys/class/infiniband/*/ports/*/rate`): the fastest up interface.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Nominal {
    pub host: String,
    pub interface: String,
    pub gbps: f64,
}

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

/// Measure every rank pair (tournament rounds, as `pairs`: a pass to warm up, then two, each
/// pair's faster one) with
/// a `bytes` message (at most [`LINK_BYTES`]) and `budget_s` per pair: rank 0 gets the host
/// links, the others nothing.
/// Collective.
pub fn measure(world: &World, bytes: u64, budget_s: f64, files: crate::report::Policy) -> Vec<Link> {
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
    let rounds = super::schedule::tournament(world.size);
    super::measure_all(world, &po, &rounds);
    let mut pairs = super::measure_all(world, &po, &rounds);
    for (p, q) in pairs.iter_mut().zip(super::measure_all(world, &po, &rounds)) {
        p.bandwidth_gbps = p.bandwidth_gbps.max(q.bandwidth_gbps);
    }
    host_links(&pairs, &world.hosts)
}

/// This host's fastest up link as its hardware reports it, under `sys_root` (`/sys`):
/// Ethernet `speed` (Mb/s), InfiniBand port `rate` (`100 Gb/sec (4X EDR)`), in Gb/s.
pub fn nominal_here(sys_root: &Path) -> Option<(String, f64)> {
    let read = |p: PathBuf| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    let mut found: Vec<(String, f64)> = vec![];
    if let Ok(rd) = std::fs::read_dir(sys_root.join("class/net")) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let dir = e.path();
            if name == "lo" || read(dir.join("operstate")).as_deref() != Some("up") {
                continue;
            }
            if let Some(mbps) = read(dir.join("speed")).and_then(|s| s.parse::<f64>().ok()).filter(|s| *s > 0.0) {
                found.push((name, mbps / 1000.0));
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(sys_root.join("class/infiniband")) {
        for d in rd.flatten() {
            let Ok(ports) = std::fs::read_dir(d.path().join("ports")) else { continue };
            for p in ports.flatten() {
                let active = read(p.path().join("state")).is_some_and(|s| s.contains("ACTIVE"));
                let rate = read(p.path().join("rate"))
                    .and_then(|r| r.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()));
                if let (true, Some(r)) = (active, rate) {
                    let name = format!("{}/{}", d.file_name().to_string_lossy(), p.file_name().to_string_lossy());
                    found.push((name, r));
                }
            }
        }
    }
    found.into_iter().max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
}

/// Every host's nominal rate (rank 0; empty elsewhere). Collective.
pub fn nominal_rates(world: &World) -> Vec<Nominal> {
    // Never empty (an all-gather of nothing from every rank is refused by some libraries).
    let mine = format!("+{}", nominal_here(Path::new("/sys")).map(|(n, g)| format!("{n}\t{g}")).unwrap_or_default());
    let all = world.all_gather_bytes(mine.as_bytes());
    if world.rank != 0 {
        return vec![];
    }
    let mut out: Vec<Nominal> = vec![];
    for (rank, bytes) in all.iter().enumerate() {
        let host = &world.hosts[rank];
        let text = String::from_utf8_lossy(bytes);
        let Some((iface, g)) = text.trim_start_matches('+').split_once('\t') else { continue };
        if out.iter().any(|n| &n.host == host) {
            continue;
        }
        if let Ok(gbps) = g.parse::<f64>() {
            out.push(Nominal { host: host.clone(), interface: iface.to_string(), gbps });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nominal_rate_is_the_fastest_up_link() {
        let root = std::env::temp_dir().join(format!("coll-bench-links-sys-{}", std::process::id()));
        let put = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        assert_eq!(nominal_here(&root), None);
        put("class/net/eth0/operstate", "up\n");
        put("class/net/eth0/speed", "25000\n");
        put("class/net/eth1/operstate", "down\n");
        put("class/net/eth1/speed", "100000\n");
        put("class/net/lo/operstate", "up\n");
        assert_eq!(nominal_here(&root), Some(("eth0".into(), 25.0)));
        put("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
        put("class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)\n");
        assert_eq!(nominal_here(&root), Some(("mlx5_0/1".into(), 100.0)));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
