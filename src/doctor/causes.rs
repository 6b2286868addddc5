//! What doctor concludes from what it measured, with no MPI: the host links from the pairs, and
//! the causes of a shortfall, each with its evidence and the share of the time it accounts for,
//! ranked. Every number here comes from a measurement of the run, or is named an estimate.

use super::heap::{HeapKept, FAULTS_NOTED};
use crate::collective::Kind;
pub use crate::pairs::links::{Link, Nominal};
use crate::pairs::links::{Peers, SLOWER_THAN_PEERS};
use crate::record::shown_gbps as gb;
use crate::size::human;
pub use crate::tune::OtherCall;
use serde::Serialize;
/// A point whose 95th percentile is this much above its median is noisy.
pub const NOISY_SPREAD: f64 = 0.10;
/// An algorithm counts only when it beats the default by this much (and its slowest round
/// beats the default's median).
pub const ALGORITHM_GAIN: f64 = 0.05;

/// One collective as the sweep measured it at doctor's size (out of place).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Seen {
    pub collective: Kind,
    pub size_bytes: u64,
    pub time_us: f64,
    pub busbw_gbps: f64,
    /// busbw as a percentage of the ceiling; `None` without one.
    pub pct_of_ceiling: Option<f64>,
    pub algorithm: String,
    pub algorithm_source: String,
    pub minor_faults_per_call: Option<f64>,
    pub median_us: f64,
    pub p95_us: f64,
    pub samples: usize,
    /// Ranks that stood out.
    pub slow_ranks: Vec<SlowRank>,
}

/// A rank whose time stood out from the others' at a point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SlowRank {
    pub rank: usize,
    pub host: String,
    pub time_us: f64,
    /// The median rank's time.
    pub median_us: f64,
}

/// The library's default against the fastest algorithm it can select, measured as tune does.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Alternative {
    pub collective: Kind,
    pub size_bytes: u64,
    pub default_us: f64,
    /// `default` when no algorithm beats it.
    pub fastest: String,
    pub fastest_us: f64,
    pub fastest_slowest_round_us: f64,
    /// The library's algorithm of lowest median (the default aside), whether or not its rounds
    /// were told apart from the default's; `None` where none ran correctly.
    pub median_fastest: Option<String>,
    pub median_fastest_us: Option<f64>,
    pub median_fastest_slowest_round_us: Option<f64>,
    /// The default's fastest round, against which that slowest round is judged.
    pub default_fastest_round_us: Option<f64>,
}

/// One cause, ranked by `share`: the part of the time it would save or explain (0 to 1).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cause {
    /// `link`, `host`, `algorithm`, `call` or `noise`.
    pub cause: &'static str,
    /// The host, host pair or collective it is about.
    pub subject: String,
    pub share: f64,
    /// `measured` (from the run's own comparison) or `estimated` (page faults).
    pub share_source: &'static str,
    /// How far the share may be off, from the repeats of the measurement it rests on (± the
    /// same units); `None` where it rests on one comparison made once.
    pub share_uncertainty: Option<f64>,
    pub evidence: String,
    pub remedy: Option<String>,
    /// Whether it makes doctor's verdict a shortfall by itself (a link or host slower than its
    /// peers: the ceiling is short); the others explain a collective's shortfall.
    pub short: bool,
}

/// Links and hosts slower than their peers: a host whose best link to another host carries
/// less than [`SLOWER_THAN_PEERS`] of the fastest host pair (its own link is the bottleneck:
/// every pair through it is slow); with one host pair, the pair against its hosts' nominal rate;
/// a host whose ranks exchange slower within it than other hosts' ranks within theirs.
/// `shares_machine(a, b)`: hosts `a` and `b` run on one machine, so they are not compared with
/// each other as hosts.
pub fn link_causes(links: &[Link], nominal: &[Nominal], shares_machine: &dyn Fn(&str, &str) -> bool) -> Vec<Cause> {
    let mut out = vec![];
    let between: Vec<&Link> = links.iter().filter(|l| l.a != l.b && l.gbps.is_finite()).collect();
    let nominal_of = |h: &str| nominal.iter().find(|n| n.host == h);
    let nominal_text = |h: &str| nominal_of(h).map(|n| format!("; nominal {}", n.shown())).unwrap_or_default();
    if let Some(peers) = Peers::of(links) {
        for slow in peers.slow() {
            let h = &slow.host;
            let list: Vec<String> = slow.to.iter().map(|(other, g)| format!("{} GB/s to {other}", gb(*g))).collect();
            out.push(Cause {
                cause: "link",
                subject: h.clone(),
                share: 1.0 - slow.best_gbps / peers.fastest.gbps,
                share_source: "measured",
                share_uncertainty: None,
                evidence: format!(
                    "{h}'s links carry {} (point-to-point, one way); the fastest host pair, {} and {}, {} GB/s{}",
                    list.join(", "),
                    peers.fastest.a,
                    peers.fastest.b,
                    gb(peers.fastest.gbps),
                    nominal_text(h)
                ),
                remedy: Some(format!(
                    "check {h}'s network link: cable, port speed, switch port, NIC firmware and errors (ethtool -S, ibstat)"
                )),
                short: true,
            });
        }
    } else if let [l] = between[..] {
        let nom =
            [nominal_of(&l.a), nominal_of(&l.b)].into_iter().flatten().map(|n| n.gbps).fold(f64::INFINITY, f64::min);
        if nom.is_finite() && l.gbps < SLOWER_THAN_PEERS * nom {
            out.push(Cause {
                cause: "link",
                subject: format!("{}-{}", l.a, l.b),
                share: 1.0 - l.gbps / nom,
                share_source: "measured",
                share_uncertainty: None,
                evidence: format!(
                    "{} GB/s one way between {} and {} (point-to-point), against the nominal {} GB/s of the slower end{}",
                    gb(l.gbps),
                    l.a,
                    l.b,
                    gb(nom),
                    nominal_text(&l.a)
                ),
                remedy: Some(
                    "compare with a point-to-point test of the fabric itself (ib_write_bw, iperf3): the MPI transport may not reach the link's rate"
                        .into(),
                ),
                short: false,
            });
        }
    }
    let within: Vec<&Link> = links.iter().filter(|l| l.a == l.b && l.gbps.is_finite()).collect();
    for l in &within {
        // The best of the hosts of other machines.
        let Some(best) = within.iter().filter(|o| !shares_machine(&l.a, &o.a)).map(|o| o.gbps).reduce(f64::max) else {
            continue;
        };
        if l.gbps < SLOWER_THAN_PEERS * best {
            out.push(Cause {
                cause: "host",
                subject: l.a.clone(),
                share: 1.0 - l.gbps / best,
                share_source: "measured",
                share_uncertainty: None,
                evidence: format!(
                    "its ranks exchange {} GB/s within it (point-to-point, {} pairs); other hosts' ranks up to {} GB/s within theirs",
                    gb(l.gbps),
                    l.rank_pairs,
                    gb(best)
                ),
                remedy: Some(format!(
                    "check {}'s memory and CPU: frequency, binding, other jobs (coll-bench info)",
                    l.a
                )),
                short: true,
            });
        }
    }
    out
}

/// The kept heap counts as a gain only beyond this (its time at most 90% of the default's).
pub const HEAP_GAIN: f64 = 0.9;

/// A collective's page faults: with the heap measured kept against the defaults in this run,
/// its measured share and, only where keeping it was faster, the variables that give an
/// application that time; without, the faults' estimated share and advice to measure.
fn fault_cause(s: &Seen, f: f64, heap: Option<&HeapKept>, fault_us: Option<f64>) -> Option<Cause> {
    let what = format!(
        "{f:.0} minor page faults per call at {} (the rank with most): the library's temporaries are given back to the system and taken again on every call under the C library's defaults, as in an application that exchanged other messages with its peers first (docs/sweep.md, \"The heap\")",
        human(s.size_bytes)
    );
    let faults = |x: Option<f64>| x.map(|f| format!("{f:.0}")).unwrap_or_else(|| "?".into());
    let cause = |share: f64, share_source: &'static str, evidence: String, remedy: Option<String>| Cause {
        cause: "host",
        subject: format!("{} page faults", s.collective),
        share,
        share_source,
        share_uncertainty: None,
        evidence,
        remedy,
        short: false,
    };
    match heap {
        Some(h) => {
            let side = format!(
                "measured in this run, back to back: {:.1} us per call with freed memory kept in the heap ({} faults per call) against {:.1} us under the defaults ({} faults per call)",
                h.kept_us,
                faults(h.kept_faults_per_call),
                h.default_us,
                faults(h.default_faults_per_call)
            );
            if h.kept_us <= HEAP_GAIN * h.default_us {
                Some(cause(
                    (1.0 - h.kept_us / h.default_us).clamp(0.0, 1.0),
                    "measured",
                    format!("{what}; {side}"),
                    Some(format!(
                        "an application gets the kept time ({:.2}x here) with {} in its environment (glibc), or by chance when one of the library's small allocations pins its heap top",
                        h.speedup(),
                        crate::backend::host::KEPT_HEAP_ENV
                    )),
                ))
            } else {
                Some(cause(0.0, "measured", format!("{what}; {side}: keeping the heap gained nothing here"), None))
            }
        }
        None => {
            let cost = fault_us?;
            Some(cause(
                (f * cost / s.time_us).min(1.0),
                "estimated",
                format!("{what}; at {cost:.2} us each (one fault on this host, measured at start)"),
                Some("measure with the heap kept (coll-bench --malloc kept) before changing the allocator: doctor did not measure it in this run".into()),
            ))
        }
    }
}

/// The causes seen in the collectives' own measurements and in the algorithms' comparison;
/// `heap`: the heap kept against the defaults where doctor measured it (heap.rs), the only
/// ground for allocator advice; `fault_us`: one minor page fault's cost on this host
/// (`memory::fault_cost_us`), for the share of the page faults where the heap was not measured.
pub fn point_causes(
    seen: &[Seen],
    alternatives: &[Alternative],
    heap: &[HeapKept],
    fault_us: Option<f64>,
) -> Vec<Cause> {
    let mut out: Vec<Cause> = alternatives.iter().filter_map(|a| algorithm_cause(a, seen)).collect();
    for s in seen {
        if let Some(f) = s.minor_faults_per_call.filter(|f| *f >= FAULTS_NOTED) {
            if let Some(c) = fault_cause(s, f, heap.iter().find(|h| h.collective == s.collective), fault_us) {
                out.push(c);
            }
        }
        for SlowRank { rank, host, time_us: t, median_us: med } in &s.slow_ranks {
            out.push(Cause {
                cause: "host",
                subject: host.clone(),
                share: (1.0 - med / t).clamp(0.0, 1.0),
                share_source: "measured",
                share_uncertainty: None,
                evidence: format!(
                    "rank {rank} on {host} took {t:.0} us per {} call, the median rank {med:.0} us",
                    s.collective
                ),
                remedy: Some(format!("check {host}: other jobs, CPU frequency and binding (coll-bench info)")),
                short: false,
            });
        }
        if s.samples >= 2 && s.p95_us > s.median_us * (1.0 + NOISY_SPREAD) {
            out.push(Cause {
                cause: "noise",
                subject: s.collective.to_string(),
                share: 1.0 - s.median_us / s.p95_us,
                share_source: "measured",
                share_uncertainty: None,
                evidence: format!(
                    "its samples spread: 95th percentile {:.0} us against the median {:.0} us ({} samples)",
                    s.p95_us, s.median_us, s.samples
                ),
                remedy: Some("a longer --budget, or a quieter machine: other jobs, daemons, power states".into()),
                short: false,
            });
        }
    }
    out
}

/// The library's algorithm of lowest median against its default: an `algorithm` cause where it
/// beat the default by more than [`ALGORITHM_GAIN`] with its slowest round under the default's
/// median; `noise` where it beat it by as much but its rounds overlapped the default's (not told
/// apart: not "no faster algorithm"), its share what the faster median would save.
fn algorithm_cause(a: &Alternative, seen: &[Seen]) -> Option<Cause> {
    let (Some(name), Some(us), Some(hi)) = (&a.median_fastest, a.median_fastest_us, a.median_fastest_slowest_round_us)
    else {
        return None;
    };
    if us >= a.default_us * (1.0 - ALGORITHM_GAIN) {
        return None;
    }
    let ran = seen
        .iter()
        .find(|s| s.collective == a.collective)
        .map(|s| format!("{} ({})", s.algorithm, s.algorithm_source))
        .unwrap_or_else(|| "its default".into());
    let size = human(a.size_bytes);
    let b = a.size_bytes;
    let share = 1.0 - us / a.default_us;
    Some(if hi < a.default_us {
        Cause {
            cause: "algorithm",
            subject: a.collective.to_string(),
            share,
            share_source: "measured",
            share_uncertainty: None,
            evidence: format!(
                "at {size} the library ran {ran}, {:.0} us per call; {name} measured {us:.0} us ({:.2}x faster), interleaved as tune times them",
                a.default_us,
                a.default_us / us
            ),
            remedy: Some(format!(
                "coll-bench tune {k} -b {b} -e {b} --write-rules {k}.rules, and apply the file as tune says",
                k = a.collective
            )),
            short: false,
        }
    } else {
        let lo = a.default_fastest_round_us.map(|v| format!("{v:.0} us")).unwrap_or_else(|| "-".into());
        Cause {
            cause: "noise",
            subject: a.collective.to_string(),
            share,
            share_source: "measured",
            share_uncertainty: None,
            evidence: format!(
                "at {size} {name}'s median, {us:.0} us, beat the library's {ran}, {:.0} us, but their rounds overlapped ({name}'s slowest {hi:.0} us, the default's fastest {lo}): the algorithms were not told apart",
                a.default_us
            ),
            remedy: Some("a longer --budget, or a quieter machine: other jobs, daemons, power states".into()),
            short: false,
        }
    })
}

/// The library's other function for a collective where it beat the one coll-bench times by
/// more than [`ALGORITHM_GAIN`] (its slowest round under the default's time): the application
/// that calls the slower one gets the shortfall.
pub fn call_causes(calls: &[OtherCall]) -> Vec<Cause> {
    calls
        .iter()
        .filter(|c| c.other_us < c.function_us * (1.0 - ALGORITHM_GAIN) && c.other_slowest_round_us < c.function_us)
        .map(|c| Cause {
            cause: "call",
            subject: c.collective.to_string(),
            share: 1.0 - c.other_us / c.function_us,
            share_source: "measured",
            share_uncertainty: None,
            evidence: format!(
                "at {} {} took {:.0} us per call; the library's {} (equal counts) {:.0} us ({:.2}x faster), interleaved as tune times them",
                human(c.size_bytes),
                c.function,
                c.function_us,
                c.other_function,
                c.other_us,
                c.function_us / c.other_us
            ),
            remedy: Some(format!(
                "an application that calls {} gets the slower time: call {} with equal counts (coll-bench --impl counts sweeps it)",
                c.function, c.other_function
            )),
            short: false,
        })
        .collect()
}

/// All causes, most of the time first (a tie: link, host, algorithm, call, noise).
pub fn rank(mut causes: Vec<Cause>) -> Vec<Cause> {
    let order =
        |c: &Cause| ["link", "host", "algorithm", "call", "noise"].iter().position(|x| *x == c.cause).unwrap_or(9);
    causes.sort_by(|x, y| y.share.total_cmp(&x.share).then(order(x).cmp(&order(y))));
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::pairs::links::host_links;
    use crate::pairs::PairResult;

    fn pair(a: usize, b: usize, gbps: f64) -> PairResult {
        PairResult { a, b, round: 0, latency_us: 1.0, bandwidth_gbps: gbps }
    }

    fn hosts(h: &[&str]) -> Vec<String> {
        h.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_other_call_is_a_cause_only_when_faster_beyond_its_noise() {
        let call = |other_us: f64, hi: f64| OtherCall {
            collective: Kind::ReduceScatter,
            size_bytes: 1 << 20,
            function: "MPI_Reduce_scatter_block",
            function_us: 580.0,
            other_function: "MPI_Reduce_scatter",
            other_us,
            other_slowest_round_us: hi,
        };
        let c = call_causes(&[call(98.0, 120.0)]);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].cause, c[0].subject.as_str(), c[0].short), ("call", "reduce-scatter", false));
        assert!((c[0].share - (1.0 - 98.0 / 580.0)).abs() < 1e-9);
        assert!(c[0].evidence.contains("MPI_Reduce_scatter_block took 580 us") && c[0].evidence.contains("5.92x"));
        // Within 5%, or a slowest round over the default's time: not a cause.
        assert!(call_causes(&[call(560.0, 570.0)]).is_empty());
        assert!(call_causes(&[call(400.0, 600.0)]).is_empty());
        // Ranked after an algorithm of the same share.
        let mut alg = c[0].clone();
        alg.cause = "algorithm";
        let r = rank(vec![c[0].clone(), alg]);
        assert_eq!((r[0].cause, r[1].cause), ("algorithm", "call"));
    }

    #[test]
    fn the_host_whose_every_link_is_slow_is_named() {
        // Three hosts, h3 shaped: its two links slow, h1-h2 fast.
        let hs = hosts(&["h1", "h2", "h3"]);
        let links = host_links(&[pair(0, 1, 0.6), pair(0, 2, 0.006), pair(1, 2, 0.0061)], &hs);
        assert_eq!(links.len(), 3);
        let c = link_causes(&links, &[], &|a, b| a == b);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].cause, c[0].subject.as_str(), c[0].short), ("link", "h3", true));
        assert!(c[0].share > 0.98, "{c:?}");
        assert!(c[0].evidence.contains("to h1") && c[0].evidence.contains("h1 and h2"), "{}", c[0].evidence);
        // All alike: nothing.
        let links = host_links(&[pair(0, 1, 0.6), pair(0, 2, 0.58), pair(1, 2, 0.61)], &hs);
        assert!(link_causes(&links, &[], &|a, b| a == b).is_empty());
    }

    #[test]
    fn one_host_pair_is_read_against_the_nominal_rate_and_hosts_against_each_other() {
        let hs = hosts(&["a", "a", "b", "b"]);
        let links = host_links(
            &[pair(0, 1, 4.0), pair(2, 3, 1.0), pair(0, 2, 0.5), pair(0, 3, 0.7), pair(1, 2, 0.6), pair(1, 3, 0.6)],
            &hs,
        );
        assert_eq!(
            links.iter().map(|l| (l.a.as_str(), l.b.as_str())).collect::<Vec<_>>(),
            [("a", "a"), ("a", "b"), ("b", "b")]
        );
        assert_eq!(links[1].gbps, 0.6);
        let nominal = [Nominal { host: "a".into(), interface: "eth0".into(), gbps: 1.25 }];
        let c = link_causes(&links, &nominal, &|a, b| a == b);
        let link = c.iter().find(|c| c.cause == "link").expect("link");
        assert!((link.share - (1.0 - 0.6 / 1.25)).abs() < 1e-9 && !link.short, "{link:?}");
        let host = c.iter().find(|c| c.cause == "host").expect("host");
        assert_eq!((host.subject.as_str(), host.short), ("b", true));
        assert!((host.share - 0.75).abs() < 1e-9);
        // Without a nominal rate one host pair says nothing.
        assert!(link_causes(&links[1..2], &[], &|a, b| a == b).is_empty());
    }

    /// Allocator advice only where this run measured the kept heap faster; without a
    /// measurement, the faults' estimated share and advice to measure, no variables.
    #[test]
    fn the_allocator_is_advised_only_where_the_kept_heap_measured_faster() {
        let seen = Seen {
            collective: Kind::ReduceScatter,
            size_bytes: 1 << 20,
            time_us: 550.0,
            busbw_gbps: 1.0,
            pct_of_ceiling: Some(20.0),
            algorithm: "basic_linear".into(),
            algorithm_source: "fixed rules".into(),
            minor_faults_per_call: Some(225.0),
            median_us: 550.0,
            p95_us: 560.0,
            samples: 20,
            slow_ranks: vec![],
        };
        let kept = |kept_us: f64| HeapKept {
            collective: Kind::ReduceScatter,
            size_bytes: 1 << 20,
            default_us: 540.0,
            default_faults_per_call: Some(225.0),
            kept_us,
            kept_faults_per_call: Some(0.0),
        };
        let faults = |heap: &[HeapKept]| {
            let c = point_causes(std::slice::from_ref(&seen), &[], heap, Some(0.7));
            c.into_iter().find(|c| c.subject == "reduce-scatter page faults").expect("a fault cause")
        };
        let env = crate::backend::host::KEPT_HEAP_ENV;
        let gain = faults(&[kept(145.0)]);
        assert_eq!(gain.share_source, "measured");
        assert!((gain.share - (1.0 - 145.0 / 540.0)).abs() < 1e-9, "{gain:?}");
        assert!(
            gain.evidence.contains("145.0 us per call with freed memory kept") && gain.evidence.contains("540.0 us")
        );
        assert!(gain.remedy.as_deref().is_some_and(|r| r.contains(env) && r.contains("3.72x")), "{gain:?}");
        // Within 10% of the default: no gain, no advice, ranked last.
        let none = faults(&[kept(500.0)]);
        assert_eq!((none.share, none.share_source, none.remedy.is_none()), (0.0, "measured", true), "{none:?}");
        assert!(none.evidence.contains("gained nothing"), "{none:?}");
        // Not measured (the time limit): estimated, and no variable named.
        let est = faults(&[]);
        assert_eq!(est.share_source, "estimated");
        assert!(est.remedy.as_deref().is_some_and(|r| !r.contains("MALLOC") && r.contains("--malloc kept")), "{est:?}");
    }

    #[test]
    fn an_algorithm_counts_only_beyond_noise_and_causes_rank_by_share() {
        let seen = Seen {
            collective: Kind::AllReduce,
            size_bytes: 1 << 20,
            time_us: 1000.0,
            busbw_gbps: 1.0,
            pct_of_ceiling: Some(20.0),
            algorithm: "basic_linear".into(),
            algorithm_source: "forced".into(),
            minor_faults_per_call: Some(256.0),
            median_us: 1000.0,
            p95_us: 1050.0,
            samples: 20,
            slow_ranks: vec![],
        };
        let alt = |fastest: &str, us: f64, hi: f64| Alternative {
            collective: Kind::AllReduce,
            size_bytes: 1 << 20,
            default_us: 1000.0,
            fastest: fastest.into(),
            fastest_us: us,
            fastest_slowest_round_us: hi,
            median_fastest: Some("ring".into()),
            median_fastest_us: Some(us),
            median_fastest_slowest_round_us: Some(hi),
            default_fastest_round_us: Some(900.0),
        };
        assert!(point_causes(std::slice::from_ref(&seen), &[alt("default", 1000.0, 1100.0)], &[], Some(0.7))
            .iter()
            .all(|c| c.cause != "algorithm"));
        let overlapped = point_causes(std::slice::from_ref(&seen), &[alt("ring", 400.0, 1200.0)], &[], Some(0.7));
        assert!(overlapped.iter().all(|c| c.cause != "algorithm"), "{overlapped:?}");
        // A faster median whose rounds overlapped the default's is noise, not "no faster
        // algorithm": named, with what it would save; tune keeping the default (`fastest`
        // `default`) the same. Within 5% of the default, nothing.
        let mut kept = alt("default", 1000.0, 1000.0);
        (kept.median_fastest_us, kept.median_fastest_slowest_round_us) = (Some(700.0), Some(1150.0));
        for causes in [overlapped, point_causes(std::slice::from_ref(&seen), &[kept.clone()], &[], Some(0.7))] {
            let n = causes.iter().find(|c| c.cause == "noise").unwrap_or_else(|| panic!("{causes:?}"));
            assert!(n.evidence.contains("ring's median") && n.evidence.contains("not told apart"), "{}", n.evidence);
            assert!(
                n.evidence.contains("basic_linear (forced), 1000 us") && n.evidence.contains("fastest 900 us"),
                "{}",
                n.evidence
            );
            assert!(n.share > 0.29 && n.remedy.as_deref().unwrap().starts_with("a longer --budget"), "{n:?}");
        }
        kept.median_fastest_us = Some(960.0);
        assert!(point_causes(std::slice::from_ref(&seen), &[kept.clone()], &[], Some(0.7))
            .iter()
            .all(|c| c.cause != "noise"));
        // doctor's rule, not tune's (10%, bands apart): 30% faster, its slowest round under the
        // default's median, is an algorithm cause where tune would keep the default.
        (kept.median_fastest_us, kept.median_fastest_slowest_round_us) = (Some(700.0), Some(950.0));
        let c = point_causes(std::slice::from_ref(&seen), &[kept], &[], Some(0.7));
        let alg = c.iter().find(|c| c.cause == "algorithm").unwrap_or_else(|| panic!("{c:?}"));
        assert!(alg.evidence.contains("ring measured 700 us (1.43x faster)"), "{}", alg.evidence);
        assert!(c.iter().all(|c| c.cause != "noise"), "{c:?}");
        let c = rank(point_causes(std::slice::from_ref(&seen), &[alt("ring", 400.0, 450.0)], &[], Some(0.7)));
        assert_eq!(c[0].cause, "algorithm");
        assert!(
            c[0].evidence.contains("basic_linear (forced)") && c[0].evidence.contains("2.50x"),
            "{}",
            c[0].evidence
        );
        assert!(
            c[0].remedy.as_deref().unwrap().starts_with("coll-bench tune all-reduce -b 1048576 -e 1048576"),
            "{:?}",
            c[0].remedy
        );
        // 256 faults at 0.7 us in a 1000 us call: an estimated 18%; the spread (5%) is no cause.
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!((c[1].cause, c[1].share_source), ("host", "estimated"));
        assert!((c[1].share - 0.1792).abs() < 1e-9);
    }
}
