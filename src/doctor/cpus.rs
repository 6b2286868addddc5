//! What each host's CPUs say of its ranks: the cores online, the cores its ranks may run on
//! (their binding, `Cpus_allowed_list`), and the clock of those cores against their maximum
//! where cpufreq says (`scaling_cur_freq`, `cpuinfo_max_freq`); and the rate one core of it
//! copies memory at (the host's first rank, every host at once). Read on every rank, summed up per
//! host on rank 0 (one entry per host, whatever the rank count), and read as host causes: more
//! ranks than cores, ranks bound to fewer cores than they are, a clock held low, memory that
//! copies at less than half the fastest host's rate.

use super::causes::Cause;
use crate::info::facts::{count_cpu_list, cpu_list};
use crate::pairs::links::SLOWER_THAN_PEERS;
use crate::world::World;
use serde::Serialize;
use std::path::Path;

/// A host's clock below this fraction of its maximum is held low (a power-saving governor,
/// thermal or power capping): turbo and idle states move a busy core's clock by less.
pub const CLOCK_HELD_LOW: f64 = 0.8;

/// One rank's view of its CPUs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankCpus {
    pub online: Option<usize>,
    /// The CPUs it may run on.
    pub allowed: Vec<usize>,
    /// The mean current and maximum clock of those CPUs, MHz, where cpufreq states both.
    pub clock_mhz: Option<(f64, f64)>,
    /// How far the current clock moved over [`CLOCK_READS`] reads: a fraction of its mean.
    pub clock_spread: Option<f64>,
    /// GB/s one core copies memory at ([`memory_copy`]): the host's first rank only; and how far
    /// its repeats spread (slowest to fastest, a fraction of the median).
    pub memory_copy_gbps: Option<f64>,
    pub memory_copy_spread: Option<f64>,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): ranks that read the same one
    /// run on one machine, whatever their host names (network namespaces, containers).
    pub machine: Option<String>,
}

/// One host's CPUs, as its ranks saw them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostCpus {
    pub host: String,
    pub ranks: usize,
    /// CPUs online (`/sys/devices/system/cpu/online`), where it says.
    pub cores_online: Option<usize>,
    /// CPUs any of its ranks may run on: the union of their bindings.
    pub cores_usable: usize,
    /// The mean current clock of those CPUs (MHz), and their maximum, where cpufreq says.
    pub clock_mhz: Option<f64>,
    pub max_clock_mhz: Option<f64>,
    /// How far its ranks' clocks moved over their reads: the most of any rank, percent.
    pub clock_spread_pct: Option<f64>,
    /// GB/s one core of it copies memory at (read + write, as STREAM's Copy counts), measured by
    /// its first rank while every host measures at once: the median of [`COPY_REPEATS`].
    pub memory_copy_gbps: Option<f64>,
    /// How far those repeats spread: slowest to fastest, percent of the median.
    pub memory_copy_spread_pct: Option<f64>,
    /// The machine it runs on (its kernel's boot id), where it says: hosts of one machine share
    /// its cores and memory, so they are not compared with each other.
    pub boot_id: Option<String>,
}

/// Repeats of the memory copy; its spread is the uncertainty of a host's rate.
pub const COPY_REPEATS: usize = 3;
/// Reads of the clock, 10 ms apart; their spread is the uncertainty of a held-low clock.
pub const CLOCK_READS: usize = 3;

/// The bytes [`memory_copy_gbps`] copies, each way: past the last-level cache of most servers'
/// sockets (not of the largest, which hold hundreds of MiB: there it is a cache rate, the same on
/// every host of one model, so the comparison between a cluster's hosts still holds).
const COPY_BYTES: usize = 64 << 20;

/// GB/s one core copies memory at, [`COPY_REPEATS`] times: each the fastest of at least 3 copies
/// of [`COPY_BYTES`] within 50 ms, counting each byte read and written (STREAM's Copy); the
/// median and the spread (slowest to fastest, a fraction of the median). The buffers are
/// touched first, so no page is faulted in while timed.
pub fn memory_copy() -> (f64, f64) {
    let src = vec![1u8; COPY_BYTES];
    let mut dst = vec![0u8; COPY_BYTES];
    dst.fill(2);
    let mut rates: Vec<f64> = (0..COPY_REPEATS)
        .map(|_| {
            let started = std::time::Instant::now();
            let mut best = f64::INFINITY;
            let mut copies = 0;
            while copies < 3 || (copies < 50 && started.elapsed().as_secs_f64() < 0.05) {
                let t = std::time::Instant::now();
                dst.copy_from_slice(std::hint::black_box(&src));
                std::hint::black_box(&mut dst);
                best = best.min(t.elapsed().as_secs_f64());
                copies += 1;
            }
            2.0 * COPY_BYTES as f64 / best.max(1e-9) / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    (median, (rates[rates.len() - 1] - rates[0]) / median)
}

/// This rank's CPUs, read under `proc_root` (`/proc`) and `sys_root` (`/sys`).
pub fn here(proc_root: &Path, sys_root: &Path) -> RankCpus {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let cpu = sys_root.join("devices/system/cpu");
    let online = read(&cpu.join("online")).and_then(|l| count_cpu_list(&l));
    let allowed = crate::info::facts::allowed_cpus(proc_root);
    let khz = |c: usize, f: &str| {
        read(&cpu.join(format!("cpu{c}/cpufreq/{f}"))).and_then(|s| s.trim().parse::<f64>().ok()).filter(|k| *k > 0.0)
    };
    // The mean clock of the allowed CPUs, read CLOCK_READS times (10 ms apart): the mean of the
    // reads, and their spread (a clock moves with idle states and turbo).
    let read_clocks = || -> Option<(f64, f64)> {
        let v: Vec<(f64, f64)> = allowed
            .iter()
            .map(|&c| Some((khz(c, "scaling_cur_freq")?, khz(c, "cpuinfo_max_freq")?)))
            .collect::<Option<Vec<_>>>()
            .filter(|v| !v.is_empty())?;
        let n = v.len() as f64;
        Some((v.iter().map(|x| x.0).sum::<f64>() / n / 1000.0, v.iter().map(|x| x.1).sum::<f64>() / n / 1000.0))
    };
    let mut reads = vec![];
    for i in 0..CLOCK_READS {
        match read_clocks() {
            Some(r) => reads.push(r),
            None => break,
        }
        if i + 1 < CLOCK_READS {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    let (clock_mhz, clock_spread) = if reads.is_empty() {
        (None, None)
    } else {
        let n = reads.len() as f64;
        let cur = reads.iter().map(|r| r.0).sum::<f64>() / n;
        let lo = reads.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
        let hi = reads.iter().map(|r| r.0).fold(0.0, f64::max);
        (Some((cur, reads[0].1)), Some((hi - lo) / cur))
    };
    let machine = crate::info::facts::boot_id(proc_root);
    RankCpus { online, allowed, clock_mhz, clock_spread, memory_copy_gbps: None, memory_copy_spread: None, machine }
}

/// Every host's CPUs, in order of first rank (rank 0; empty elsewhere). Collective.
pub fn gather(world: &World) -> Vec<HostCpus> {
    let me = here(Path::new("/proc"), Path::new("/sys"));
    let list: Vec<String> = me.allowed.iter().map(|c| c.to_string()).collect();
    // The host's first rank measures; the others wait in the all-gather below.
    let first_here = world.hosts.iter().position(|h| h == world.host()) == Some(world.rank);
    let copy = if first_here {
        let (gbps, spread) = memory_copy();
        format!("{gbps} {spread}")
    } else {
        String::new()
    };
    let text = format!(
        "{}\t{}\t{}\t{}\t{copy}",
        me.online.map(|o| o.to_string()).unwrap_or_default(),
        list.join(","),
        me.clock_mhz.map(|(c, m)| format!("{c} {m} {}", me.clock_spread.unwrap_or(0.0))).unwrap_or_default(),
        me.machine.clone().unwrap_or_default()
    );
    let all = world.all_gather_bytes(text.as_bytes());
    if world.rank != 0 {
        return vec![];
    }
    let ranks: Vec<(String, RankCpus)> = all
        .iter()
        .enumerate()
        .map(|(rank, bytes)| {
            let text = String::from_utf8_lossy(bytes);
            let mut f = text.split('\t');
            let online = f.next().and_then(|o| o.parse().ok());
            let allowed = f.next().and_then(cpu_list).unwrap_or_default();
            let clock = f.next().and_then(|c| {
                let mut w = c.split(' ').map(|x| x.parse::<f64>().ok());
                Some((w.next()??, w.next()??, w.next().flatten().unwrap_or(0.0)))
            });
            let (clock_mhz, clock_spread) = (clock.map(|c| (c.0, c.1)), clock.map(|c| c.2));
            let machine = f.next().filter(|m| !m.is_empty()).map(str::to_string);
            let copy = f.next().and_then(|c| {
                let (g, s) = c.split_once(' ')?;
                Some((g.parse().ok()?, s.parse().ok()?))
            });
            let (memory_copy_gbps, memory_copy_spread) = (copy.map(|c: (f64, f64)| c.0), copy.map(|c| c.1));
            (
                world.hosts[rank].clone(),
                RankCpus { online, allowed, clock_mhz, clock_spread, memory_copy_gbps, memory_copy_spread, machine },
            )
        })
        .collect();
    per_host(&ranks)
}

/// A host being summed up: its entry, the CPUs its ranks may use, each rank's clock.
type Summing = (HostCpus, Vec<usize>, Vec<(f64, f64)>);

/// The ranks' views summed up per host, hosts in order of first rank.
pub fn per_host(ranks: &[(String, RankCpus)]) -> Vec<HostCpus> {
    let mut out: Vec<Summing> = vec![];
    for (host, r) in ranks {
        let at = match out.iter().position(|(h, _, _)| &h.host == host) {
            Some(i) => i,
            None => {
                out.push((
                    HostCpus {
                        host: host.clone(),
                        ranks: 0,
                        cores_online: r.online,
                        cores_usable: 0,
                        clock_mhz: None,
                        max_clock_mhz: None,
                        clock_spread_pct: None,
                        memory_copy_gbps: None,
                        memory_copy_spread_pct: None,
                        boot_id: r.machine.clone(),
                    },
                    vec![],
                    vec![],
                ));
                out.len() - 1
            }
        };
        let (h, usable, clocks) = &mut out[at];
        h.ranks += 1;
        if h.memory_copy_gbps.is_none() {
            h.memory_copy_gbps = r.memory_copy_gbps;
            h.memory_copy_spread_pct = r.memory_copy_spread.map(|s| s * 100.0);
        }
        for c in &r.allowed {
            if !usable.contains(c) {
                usable.push(*c);
            }
        }
        clocks.extend(r.clock_mhz);
        if let Some(sp) = r.clock_spread {
            h.clock_spread_pct = Some(h.clock_spread_pct.unwrap_or(0.0).max(sp * 100.0));
        }
    }
    out.into_iter()
        .map(|(mut h, usable, clocks)| {
            h.cores_usable = usable.len();
            if !clocks.is_empty() && clocks.len() == h.ranks {
                let n = clocks.len() as f64;
                h.clock_mhz = Some(clocks.iter().map(|c| c.0).sum::<f64>() / n);
                h.max_clock_mhz = Some(clocks.iter().map(|c| c.1).sum::<f64>() / n);
            }
            h
        })
        .collect()
}

/// Whether two hosts run on one machine (the same boot id): they share its cores and memory.
pub fn same_machine(a: &HostCpus, b: &HostCpus) -> bool {
    a.host == b.host || (a.boot_id.is_some() && a.boot_id == b.boot_id)
}

/// The host causes in the CPUs: more ranks than cores online (then nothing more about binding),
/// ranks bound to fewer cores than they are, a clock below [`CLOCK_HELD_LOW`] of its maximum,
/// memory copied at less than [`SLOWER_THAN_PEERS`] of the fastest host's rate. Shares are
/// estimates: the part of a core each rank lacks, the part of the clock or the rate missing.
pub fn cpu_causes(hosts: &[HostCpus]) -> Vec<Cause> {
    let mut out = vec![];
    for h in hosts {
        let cause = |share: f64, evidence: String, remedy: String| Cause {
            cause: "host",
            subject: h.host.clone(),
            share: share.clamp(0.0, 1.0),
            share_source: "estimated",
            share_uncertainty: None,
            evidence,
            remedy: Some(remedy),
            short: false,
        };
        match h.cores_online {
            Some(online) if h.ranks > online => out.push(cause(
                1.0 - online as f64 / h.ranks as f64,
                format!(
                    "{} ranks on {online} online cores: ranks take turns on a core, and every collective waits for the rank that is not running",
                    h.ranks
                ),
                format!("at most one rank per core on {}: fewer ranks per host, or more hosts", h.host),
            )),
            _ if h.cores_usable > 0 && h.cores_usable < h.ranks => out.push(cause(
                1.0 - h.cores_usable as f64 / h.ranks as f64,
                format!(
                    "its {} ranks may run on {} core(s) only (their binding){}: they take turns on them",
                    h.ranks,
                    h.cores_usable,
                    h.cores_online.map(|o| format!(", of {o} online")).unwrap_or_default()
                ),
                "bind one rank per core (mpirun --bind-to core, srun --cpu-bind=cores), or not at all (--bind-to none)"
                    .into(),
            )),
            _ => {}
        }
        if let (Some(cur), Some(max)) = (h.clock_mhz, h.max_clock_mhz) {
            if cur < CLOCK_HELD_LOW * max {
                let spread = h.clock_spread_pct.unwrap_or(0.0) / 100.0;
                let told_apart = cur * (1.0 + spread) < CLOCK_HELD_LOW * max;
                let mut c = cause(
                    1.0 - cur / max,
                    format!(
                        "its ranks' cores run at {cur:.0} MHz of their {max:.0} MHz maximum (cpufreq scaling_cur_freq, cpuinfo_max_freq; {CLOCK_READS} reads spread {:.0}%){}",
                        spread * 100.0,
                        if told_apart {
                            ": a power-saving governor, or thermal or power capping"
                        } else {
                            ": within that spread of the bar, so not told apart from a clock that idles between reads"
                        }
                    ),
                    if told_apart {
                        format!(
                            "on {}: the performance governor (cpupower frequency-set -g performance); check throttling (turbostat, dmesg)",
                            h.host
                        )
                    } else {
                        format!("read {}'s clock under load (turbostat) before changing anything", h.host)
                    },
                );
                c.share_uncertainty = Some(spread * cur / max);
                if !told_apart {
                    c.cause = "noise";
                    c.subject = format!("{} clock", h.host);
                }
                out.push(c);
            }
        }
        // Only against hosts of other machines: hosts of one machine share its memory.
        let fastest = hosts
            .iter()
            .filter(|o| !same_machine(h, o))
            .filter_map(|o| Some((o.memory_copy_gbps?, o)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        if let (Some(rate), Some((best, b))) = (h.memory_copy_gbps, fastest) {
            if rate < SLOWER_THAN_PEERS * best {
                // The ratio's uncertainty: both rates' spreads over their repeats.
                let u = |x: &HostCpus| x.memory_copy_spread_pct.unwrap_or(0.0) / 100.0;
                let ratio = rate / best;
                let off = ratio * (u(h) + u(b));
                let told_apart = ratio + off < SLOWER_THAN_PEERS;
                let spreads =
                    format!("their {COPY_REPEATS} repeats spread {:.0}% and {:.0}%", 100.0 * u(h), 100.0 * u(b));
                let mut c = cause(
                    1.0 - ratio,
                    format!(
                        "one core copies its memory at {rate:.1} GB/s (read + write) against {best:.1} GB/s on {}, the fastest host, measured at once ({spreads}){}",
                        b.host,
                        if told_apart {
                            ": fewer memory channels populated, a DIMM down, or memory on a remote NUMA node"
                        } else {
                            ": within that spread of half, so not told apart"
                        }
                    ),
                    if told_apart {
                        format!(
                            "on {}: check its DIMMs and memory configuration (dmidecode -t memory, numactl -H) against {}'s",
                            h.host, b.host
                        )
                    } else {
                        "measure again on a quiet machine: other jobs share the memory".into()
                    },
                );
                c.share_uncertainty = Some(off);
                if !told_apart {
                    c.cause = "noise";
                    c.subject = format!("{} memory", h.host);
                }
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_reads_its_binding_and_clock() {
        let root = std::env::temp_dir().join(format!("coll-bench-cpus-{}", std::process::id()));
        let put = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("proc/self/status", "Name:\tx\nCpus_allowed_list:\t2-3\nMems_allowed_list:\t0\n");
        put("sys/devices/system/cpu/online", "0-7\n");
        let r = here(&root.join("proc"), &root.join("sys"));
        assert_eq!((r.online, r.allowed.clone(), r.clock_mhz), (Some(8), vec![2, 3], None));
        for c in [2, 3] {
            put(&format!("sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq"), "1200000\n");
            put(&format!("sys/devices/system/cpu/cpu{c}/cpufreq/cpuinfo_max_freq"), "3000000\n");
        }
        assert_eq!(here(&root.join("proc"), &root.join("sys")).clock_mhz, Some((1200.0, 3000.0)));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn oversubscribed_bound_together_and_slow_clocks_are_causes() {
        let rank = |online, allowed: &[usize], clock| RankCpus {
            online: Some(online),
            allowed: allowed.to_vec(),
            clock_mhz: clock,
            ..RankCpus::default()
        };
        // a: 4 ranks on 2 cores; b: 2 ranks bound to core 0 of 8; c: fine but clocked low.
        let ranks = vec![
            ("a".to_string(), rank(2, &[0, 1], None)),
            ("a".to_string(), rank(2, &[0, 1], None)),
            ("a".to_string(), rank(2, &[0, 1], None)),
            ("a".to_string(), rank(2, &[0, 1], None)),
            ("b".to_string(), rank(8, &[0], None)),
            ("b".to_string(), rank(8, &[0], None)),
            ("c".to_string(), rank(8, &[0], Some((1200.0, 3000.0)))),
            ("c".to_string(), rank(8, &[1], Some((1200.0, 3000.0)))),
        ];
        let hosts = per_host(&ranks);
        assert_eq!(
            hosts.iter().map(|h| (h.host.as_str(), h.ranks, h.cores_usable)).collect::<Vec<_>>(),
            [("a", 4, 2), ("b", 2, 1), ("c", 2, 2)]
        );
        assert_eq!((hosts[2].clock_mhz, hosts[2].max_clock_mhz), (Some(1200.0), Some(3000.0)));
        let c = cpu_causes(&hosts);
        assert_eq!(
            c.iter().map(|c| (c.subject.as_str(), c.share)).collect::<Vec<_>>(),
            [("a", 0.5), ("b", 0.5), ("c", 0.6)]
        );
        assert!(c[0].evidence.starts_with("4 ranks on 2 online cores"), "{}", c[0].evidence);
        assert_eq!((c[2].cause, c[2].share_uncertainty), ("host", Some(0.0)));
        // 2100 MHz of 3000 whose reads moved 20%: within reach of 80%, not told apart.
        let mut moving = per_host(&[("c".to_string(), rank(8, &[0], Some((2100.0, 3000.0))))]);
        moving[0].clock_spread_pct = Some(20.0);
        let m = cpu_causes(&moving);
        assert_eq!((m.len(), m[0].cause, m[0].subject.as_str()), (1, "noise", "c clock"), "{m:?}");
        assert!(m[0].evidence.contains("3 reads spread 20%") && m[0].evidence.contains("not told apart"), "{m:?}");
        assert!(
            c[1].evidence.starts_with("its 2 ranks may run on 1 core(s) only (their binding), of 8 online"),
            "{}",
            c[1].evidence
        );
        assert!(c[2].evidence.contains("1200 MHz of their 3000 MHz"), "{}", c[2].evidence);
        assert!(c.iter().all(|c| c.cause == "host" && c.share_source == "estimated" && !c.short));
        // One rank per core, full clock: nothing.
        let fine = per_host(&[
            ("d".to_string(), rank(4, &[0], Some((2900.0, 3000.0)))),
            ("d".to_string(), rank(4, &[1], None)),
        ]);
        assert!(cpu_causes(&fine).is_empty());
        assert_eq!(fine[0].clock_mhz, None, "a clock for every rank or none");
    }

    /// Each host's first rank copies memory, every host at once; a host below half the fastest
    /// host's rate, beyond the spread of both rates' repeats, is a cause (share: the rate
    /// missing, ± that spread); within it, noise "not told apart"; hosts of one machine (one
    /// boot id) are not compared with each other.
    #[test]
    fn a_host_that_copies_memory_at_half_the_fastest_rate_is_a_cause() {
        let rank = |gbps: Option<f64>, spread: f64, machine: &str| RankCpus {
            online: Some(8),
            memory_copy_gbps: gbps,
            memory_copy_spread: gbps.map(|_| spread),
            machine: Some(machine.to_string()),
            ..RankCpus::default()
        };
        let hosts = per_host(&[
            ("a".to_string(), rank(Some(20.0), 0.05, "m1")),
            ("a".to_string(), rank(None, 0.0, "m1")),
            ("b".to_string(), rank(Some(12.0), 0.05, "m2")),
            ("c".to_string(), rank(Some(8.0), 0.05, "m3")),
        ]);
        assert_eq!(hosts.iter().map(|h| h.memory_copy_gbps).collect::<Vec<_>>(), [Some(20.0), Some(12.0), Some(8.0)]);
        let c = cpu_causes(&hosts);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].cause, c[0].subject.as_str(), c[0].share), ("host", "c", 0.6));
        assert!((c[0].share_uncertainty.unwrap() - 0.04).abs() < 1e-9, "{c:?}");
        assert!(
            c[0].evidence.contains("at 8.0 GB/s (read + write) against 20.0 GB/s on a, the fastest host, measured at once (their 3 repeats spread 5% and 5%)"),
            "{}",
            c[0].evidence
        );
        // Repeats that spread 30%: 0.4 of the fastest is within reach of half, not told apart.
        let noisy =
            per_host(&[("a".to_string(), rank(Some(20.0), 0.3, "m1")), ("c".to_string(), rank(Some(8.0), 0.3, "m3"))]);
        let c = cpu_causes(&noisy);
        assert_eq!((c.len(), c[0].cause, c[0].subject.as_str()), (1, "noise", "c memory"), "{c:?}");
        assert!(c[0].evidence.contains("not told apart"), "{}", c[0].evidence);
        // One machine (the test bed's namespaces): no comparison at all.
        let shared =
            per_host(&[("a".to_string(), rank(Some(20.0), 0.0, "m1")), ("c".to_string(), rank(Some(3.0), 0.0, "m1"))]);
        assert!(cpu_causes(&shared).is_empty());
        // A host that measured nothing is never judged, nor judges.
        assert!(cpu_causes(&per_host(&[
            ("a".to_string(), rank(None, 0.0, "m1")),
            ("b".to_string(), rank(Some(1.0), 0.0, "m2"))
        ]))
        .is_empty());
    }

    #[test]
    fn one_core_copies_memory_at_a_plausible_rate() {
        let (gbps, spread) = memory_copy();
        assert!((0.1..1000.0).contains(&gbps), "{gbps} GB/s");
        assert!((0.0..10.0).contains(&spread), "{spread}");
    }
}
