//! The host's network links as its hardware states them: the nominal rate of its fastest up
//! interface (Ethernet `/sys/class/net/*/speed`, InfiniBand `/sys/class/infiniband/*/ports/*/rate`),
//! for the ceiling's header and doctor's link causes. A port's speed, not what MPI carries
//! over it: listed beside the measured ceiling, never used as it.

use crate::record::{Ceiling, Nominal, RunInfo};
use crate::world::World;
use std::path::{Path, PathBuf};

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

/// Every host's nominal rate, in GB/s as every rate coll-bench reports (rank 0; empty
/// elsewhere). Collective.
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
            out.push(Nominal { host: host.clone(), interface: iface.to_string(), gbps: gbps / 8.0 });
        }
    }
    out
}

/// Between hosts, the hosts' nominal rates beside a measured ceiling (rank 0 gets them).
/// Collective: every rank calls it with the ceiling it measured (the same on every rank).
pub fn beside(world: &World, ceiling: &mut Option<Ceiling>) {
    if let Some(c) = ceiling.as_mut().filter(|c| c.links == RunInfo::BETWEEN_HOSTS) {
        c.nominal = nominal_rates(world);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nominal_rate_is_the_fastest_up_link() {
        let root = std::env::temp_dir().join(format!("coll-bench-nic-sys-{}", std::process::id()));
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
