//! `coll-bench check SPEC.toml`: run each rule's sweep a few times and judge it — bandwidth only
//! over the sizes where it has levelled off, on the median over repeats, so one noisy run does
//! not fail a healthy cluster. Prints a verdict table; exit 0 all pass, 1 any fail, 3 none
//! failed but some could not be judged (NOISY), 2 error; `--junit FILE` writes JUnit XML, one
//! testcase per check.

pub mod from_run;
pub mod junit;
pub mod spec;
mod verdict;

use crate::error::{exit, Error, Result};
use crate::options::{Aggregation, CsvTarget, Options, Step};
use crate::record::{Ceiling, Placement, Point};
use crate::report::csv::CsvReport;
use crate::report::progress::{BarAwareWriter, ProgressReport};
use crate::report::Report as _;
use crate::stats::RankOutlier;
use crate::sweep::Sweep;
use crate::world::World;
use serde::{Deserialize, Serialize};
use spec::{Rule, Spec};
use std::io::Write;
use std::path::PathBuf;
pub use verdict::{CheckResult, Outcome};

/// `coll-bench check`'s options (from `crate::cli`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckOptions {
    pub spec: PathBuf,
    pub junit: Option<PathBuf>,
    pub csv: CsvTarget,
    pub files: crate::report::Policy,
    pub progress: bool,
    pub debug_slow_rank: Option<(usize, u64)>,
}

/// What every NOISY line ends with.
const NOISY_ADVICE: &str = "the machine changed speed; check again when it is quiet";

/// The ceiling's own check, for a `min_pct_of_ceiling` rule on more than two hosts: the ceiling
/// is the slowest link's rate, so a slow link lowers it and the collective still reads well
/// against it; here every host's best link to another host must carry at least
/// [`SLOWER_THAN_PEERS`](crate::pairs::links::SLOWER_THAN_PEERS) of the fastest host pair (as
/// `doctor` judges it). `None` with fewer than two host pairs (nothing to compare with).
pub fn judge_links(rule: &Rule, links: &[crate::pairs::links::Link]) -> Option<CheckResult> {
    use crate::pairs::links::{Peers, SLOWER_THAN_PEERS};
    let peers = Peers::of(links)?;
    let fastest = &peers.fastest;
    let required = format!(
        ">= {:.0}% of the fastest host pair ({}-{} {:.4} GB/s)",
        SLOWER_THAN_PEERS * 100.0,
        fastest.a,
        fastest.b,
        fastest.gbps
    );
    let slow: Vec<_> = peers.slow().collect();
    // Each host's best link; the weakest of them is the value.
    let weakest = peers.hosts.iter().min_by(|a, b| a.best_gbps.total_cmp(&b.best_gbps))?;
    let gbps = weakest.best_gbps;
    let measured = if slow.is_empty() {
        format!("every host's best link >= {gbps:.4} GB/s ({})", weakest.host)
    } else {
        let named: Vec<String> =
            slow.iter().map(|s| format!("{}'s best link {:.4} GB/s", s.host, s.best_gbps)).collect();
        format!("{} (point-to-point)", named.join("; "))
    };
    Some(CheckResult {
        rule: rule.name.clone(),
        line: rule.line,
        collective: rule.collective.name().to_string(),
        check: "links",
        measured,
        required,
        outcome: if slow.is_empty() { Outcome::Pass } else { Outcome::Fail },
        value: Some(("link_gbps", gbps)),
        slow_ranks: vec![],
        seconds: 0.0,
    })
}

/// A `min_pct_of_ceiling` check judged on its ceiling passes (before and after the rule's
/// sweeps). The ceiling is the faster pass: load slows a transfer, nothing speeds one up. When
/// the passes disagree by more than [`Ceiling::UNCERTAIN_PCT`], or the kept pass's own repeats
/// do ([`Ceiling::uncertain`]), the machine changed speed and the true ceiling may lie above
/// the faster pass by as much again: a rule short of its share against the faster pass FAILs
/// (a higher ceiling only lowers the share), one that keeps it even against the band's top
/// PASSes, and one in between is NOISY. A rule reading [`Ceiling::FAR_ABOVE`] times its
/// ceiling is NOISY too (both passes measured while the machine was busy: the share is not of
/// a ceiling). `None` without a pass; else (outcome, percent of the kept ceiling, measured text).
pub fn judge_ceiling(passes: &[Ceiling], size: u64, busbw: f64, min_pct: f64) -> Option<(Outcome, f64, String)> {
    let kept = passes.iter().max_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
    let pct_of = |gbps: f64| if gbps > 0.0 && busbw.is_finite() { busbw / gbps * 100.0 } else { 0.0 };
    let pct = pct_of(kept.gbps);
    let of = format!("{pct:.1}% of {:.3} GB/s at {}", kept.gbps, crate::size::human(size));
    let slowest = passes.iter().map(|c| c.gbps).fold(f64::INFINITY, f64::min);
    let apart = if slowest > 0.0 { kept.gbps / slowest } else { f64::INFINITY };
    let shown: Vec<String> = passes.iter().map(|c| format!("{:.3}", c.gbps)).collect();
    let (band, why) = if (apart - 1.0) * 100.0 > Ceiling::UNCERTAIN_PCT {
        (apart, format!("the ceiling passes before and after the sweeps disagree ({} GB/s)", shown.join(", ")))
    } else if kept.uncertain() {
        (1.0 + kept.spread_pct / 100.0, format!("the ceiling pass's repeats spread {:.0}%", kept.spread_pct))
    } else {
        (1.0, String::new())
    };
    let advice = NOISY_ADVICE;
    if busbw > kept.gbps * Ceiling::FAR_ABOVE {
        let busy = format!("over {}x the ceiling, which was measured while the machine was busy", Ceiling::FAR_ABOVE);
        return Some((Outcome::Noisy, pct, format!("{of}; {busy}: {advice}")));
    }
    let passes_said =
        if passes.len() > 1 { format!(" (the faster of {} ceiling passes)", passes.len()) } else { String::new() };
    if band == 1.0 {
        let outcome = if pct >= min_pct { Outcome::Pass } else { Outcome::Fail };
        return Some((outcome, pct, format!("{of}{passes_said}")));
    }
    Some(if pct < min_pct {
        (Outcome::Fail, pct, format!("{of}; {why}, short even against the faster"))
    } else if pct_of(kept.gbps * band) >= min_pct {
        (Outcome::Pass, pct, format!("{of}; {why}, met even {:.1}x above the faster", band))
    } else {
        (Outcome::Noisy, pct, format!("{of}; {why}: {advice}"))
    })
}

/// The hosts whose every link is slower than their peers ([`judge_links`]'s FAIL), by name.
fn slow_hosts(links: &[crate::pairs::links::Link]) -> Vec<String> {
    crate::pairs::links::Peers::of(links).map(|p| p.slow().map(|h| h.host.clone()).collect()).unwrap_or_default()
}

/// What the second measurement of the links said, beside the first ([`links_agree`]).
#[derive(Clone, Debug, PartialEq)]
struct Remeasured {
    /// Both measurements named every host of the FAIL, each on its own.
    both: bool,
    /// The slow hosts of the first and of the second measurement.
    first: Vec<String>,
    again: Vec<String>,
    /// The most any link's two readings differ by (the faster over the slower): how far the
    /// machine's speed moved between them.
    band: f64,
    /// A slow host's best link, that much faster, would not be slow: noise can account for it.
    within_band: bool,
}

impl Remeasured {
    fn of(first: &[crate::pairs::links::Link], again: &[crate::pairs::links::Link]) -> Remeasured {
        use crate::pairs::links::{disagreement, faster_of, Peers, SLOWER_THAN_PEERS};
        let (named_first, named_again) = (slow_hosts(first), slow_hosts(again));
        let kept = faster_of(first, again);
        let slow = slow_hosts(&kept);
        let band = disagreement(first, again);
        let within_band = Peers::of(&kept)
            .is_some_and(|p| p.slow().any(|h| h.best_gbps * band >= SLOWER_THAN_PEERS * p.fastest.gbps));
        Remeasured {
            both: slow.iter().all(|h| named_first.contains(h) && named_again.contains(h)),
            first: named_first,
            again: named_again,
            band,
            within_band,
        }
    }
}

/// A links FAIL stands when each host it names was named by both measurements, each on its
/// own, and is slower than the two measurements' disagreement can account for; else the
/// machine changed speed between them and the check is NOISY. `named`: `None` when measured
/// once (none read slow).
fn links_agree(mut c: CheckResult, named: Option<Remeasured>) -> CheckResult {
    let Some(r) = named.filter(|_| c.outcome == Outcome::Fail) else { return c };
    let said = |h: &[String]| if h.is_empty() { "none".to_string() } else { h.join(", ") };
    if !r.both {
        c.outcome = Outcome::Noisy;
        c.measured = format!(
            "{}; the two measurements name different slow hosts ({}; then {}): {NOISY_ADVICE}",
            c.measured,
            said(&r.first),
            said(&r.again)
        );
    } else if r.within_band {
        c.outcome = Outcome::Noisy;
        c.measured = format!(
            "{}; a link's two measurements differ by up to {:.1}x, enough to account for it: {NOISY_ADVICE}",
            c.measured, r.band
        );
    }
    c
}

/// Judge one rule on the points of its repeats (all repeats' points together); `ceilings`: the
/// ceiling passes measured before and after the rule's sweeps, for `min_pct_of_ceiling`
/// ([`judge_ceiling`]).
pub fn judge_rule(
    rule: &Rule,
    points: &[Point],
    hosts: &[String],
    ceilings: &[crate::record::Ceiling],
    seconds: f64,
) -> Vec<CheckResult> {
    fn placed(in_place: bool, p: &Point) -> &crate::record::Measurement {
        if in_place {
            &p.in_place
        } else {
            &p.out_of_place
        }
    }
    let mut sizes: Vec<u64> = points.iter().map(|p| p.size_bytes).collect();
    sizes.sort();
    sizes.dedup();
    let per_size = |size: u64, f: &dyn Fn(&Point) -> f64| -> f64 {
        crate::stats::median_of(&points.iter().filter(|p| p.size_bytes == size).map(f).collect::<Vec<f64>>())
    };
    // Each repeat on its own: every repeat sweeps the same sizes in order, so repeat k's point
    // of a size is that size's k-th. `extreme` picks a repeat's weakest or slowest size.
    let repeats = sizes.iter().map(|s| points.iter().filter(|p| p.size_bytes == *s).count()).max().unwrap_or(0);
    let at = |size: u64, k: usize| points.iter().filter(|p| p.size_bytes == size).nth(k);
    let by_repeat = |in_sizes: &dyn Fn(u64) -> bool, f: &dyn Fn(&Point) -> f64, extreme: fn(f64, f64) -> f64| {
        (0..repeats)
            .map(|k| sizes.iter().filter(|s| in_sizes(**s)).filter_map(|s| at(*s, k).map(f)).reduce(extreme))
            .collect::<Vec<Option<f64>>>()
    };
    let in_plateau = |s: u64| s >= rule.plateau.0 && s <= rule.plateau.1;
    let busbw = |p: &Point| placed(rule.in_place, p).busbw_gbps;
    // The weakest plateau size on the median over repeats, and each repeat's weakest plateau
    // busbw: `min_busbw_gbps` and `min_pct_of_ceiling` both judge them.
    let weakest =
        sizes.iter().filter(|s| in_plateau(**s)).map(|s| (*s, per_size(*s, &busbw))).min_by(|a, b| a.1.total_cmp(&b.1));
    let weakest_by_repeat = by_repeat(&in_plateau, &busbw, f64::min);

    // Slow ranks: counted over every measurement of the rule.
    let mut counts: Vec<(usize, usize)> = vec![];
    let mut measurements = 0;
    for p in points {
        for m in p.measurements() {
            measurements += 1;
            for RankOutlier { rank, .. } in &m.slow_ranks {
                match counts.iter_mut().find(|(r, _)| r == rank) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((*rank, 1)),
                }
            }
        }
    }
    let slow_ranks: Vec<(usize, String, usize, usize)> = counts
        .iter()
        .filter(|(_, n)| 2 * n >= measurements)
        .map(|(r, n)| (*r, hosts.get(*r).cloned().unwrap_or_default(), *n, measurements))
        .collect();

    // The rule's time goes to its first check, so JUnit's totals add up.
    let first = std::cell::Cell::new(true);
    let base =
        |check: &'static str, value: (&'static str, f64), measured: String, required: String, pass: bool| CheckResult {
            rule: rule.name.clone(),
            line: rule.line,
            collective: rule.collective.name().to_string(),
            check,
            measured,
            required,
            outcome: if pass { Outcome::Pass } else { Outcome::Fail },
            value: Some(value),
            slow_ranks: slow_ranks.clone(),
            seconds: if first.replace(false) { seconds } else { 0.0 },
        };
    let mut out = vec![];
    let wrong: u64 =
        points.iter().flat_map(|p| p.measurements()).map(|m| m.wrong.unwrap_or(0) + m.out_of_bounds.unwrap_or(0)).sum();
    out.push(base(
        "wrong",
        ("wrong_elements", wrong as f64),
        format!("{wrong} wrong elements"),
        "0".into(),
        wrong == 0,
    ));
    if let Some(min) = rule.min_busbw_gbps {
        // The weakest plateau size, each size judged on its median over repeats.
        match weakest {
            Some((size, bw)) => {
                let c = base(
                    "busbw",
                    ("busbw_gbps", bw),
                    format!("{bw:.3} GB/s at {}", crate::size::human(size)),
                    format!(">= {min} GB/s"),
                    bw >= min,
                );
                out.push(consistent(c, weakest_by_repeat.iter().map(|w| w.is_some_and(|w| w >= min))))
            }
            None => out.push(CheckResult {
                outcome: Outcome::Skip,
                value: None,
                ..base("busbw", ("busbw_gbps", 0.0), "no size in the plateau".into(), format!(">= {min} GB/s"), false)
            }),
        }
    }
    if let Some(min) = rule.min_pct_of_ceiling {
        // As busbw: the weakest plateau size, its median over repeats, as a share of the ceiling.
        let required = format!(">= {min}% of the ceiling");
        match weakest.and_then(|(size, bw)| judge_ceiling(ceilings, size, bw, min).map(|j| (bw, j))) {
            Some((bw, (outcome, pct, measured))) => {
                let c = CheckResult { outcome, ..base("ceiling", ("pct_of_ceiling", pct), measured, required, false) };
                // Each repeat's weakest plateau size against the same ceiling.
                out.push(consistent(c, weakest_by_repeat.iter().map(|w| w.is_some_and(|w| w / bw * pct >= min))))
            }
            None => {
                let why = if ceilings.is_empty() { "no ceiling (one rank: no ring)" } else { "no size in the plateau" };
                out.push(CheckResult {
                    outcome: Outcome::Skip,
                    value: None,
                    ..base("ceiling", ("pct_of_ceiling", 0.0), why.into(), required, false)
                })
            }
        }
    }
    if let Some(max) = rule.max_knee_bytes {
        let curve: Vec<(u64, f64)> = sizes.iter().map(|s| (*s, per_size(*s, &busbw))).collect();
        let required = format!("<= {}", crate::size::human(max));
        let of = rule.knee_plateau_gbps;
        match knee(&curve, rule.plateau, of) {
            Some((best, knee)) => {
                let whose = if of.is_some() { "the baseline plateau's" } else { "the plateau's" };
                let measured = match knee {
                    Some(k) => format!("half {whose} {best:.3} GB/s at {}", crate::size::human(k)),
                    // Against the baseline's plateau: say how far this run's own plateau got.
                    None => match self::knee(&curve, rule.plateau, None).filter(|_| of.is_some()) {
                        Some((own, _)) => format!("never half {whose} {best:.3} GB/s (its own plateau {own:.3} GB/s)"),
                        None => format!("never half {whose} {best:.3} GB/s"),
                    },
                };
                let value = knee.map_or(f64::INFINITY, |k| k as f64);
                let c = base("knee", ("knee_bytes", value), measured, required, knee.is_some_and(|k| k <= max));
                // Each repeat's own curve and knee, judged against the same bandwidth.
                let met = (0..repeats).map(|k| {
                    let curve: Vec<(u64, f64)> = sizes.iter().filter_map(|s| Some((*s, busbw(at(*s, k)?)))).collect();
                    matches!(self::knee(&curve, rule.plateau, of), Some((_, Some(k))) if k <= max)
                });
                out.push(consistent(c, met))
            }
            None => out.push(CheckResult {
                outcome: Outcome::Skip,
                value: None,
                ..base("knee", ("knee_bytes", 0.0), "no size in the plateau".into(), required, false)
            }),
        }
    }
    // A time bound: the slowest size, each size judged on its median over repeats; `time`
    // bounds the mean time per call, `median` the median (what `spec from-run` writes).
    type Of = fn(&crate::record::Measurement) -> f64;
    let bounds: [(Option<f64>, &'static str, &'static str, Of); 2] = [
        (rule.max_time_us, "time", "time_us", |m| m.time_us),
        (rule.max_median_us, "median", "median_us", |m| m.summary.median_us),
    ];
    for (max, check, column, of) in bounds {
        let Some(max) = max else { continue };
        let worst = sizes
            .iter()
            .map(|s| (*s, per_size(*s, &|p| of(placed(rule.in_place, p)))))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((size, t)) = worst {
            let c = base(
                check,
                (column, t),
                format!("{t:.2} us at {}", crate::size::human(size)),
                format!("<= {max} us"),
                t <= max,
            );
            let met = by_repeat(&|_| true, &|p| of(placed(rule.in_place, p)), f64::max);
            out.push(consistent(c, met.iter().map(|w| w.is_some_and(|w| w <= max))));
        }
    }
    if rule.fail_on_slow_rank {
        let names: Vec<String> = slow_ranks.iter().map(|(r, h, _, _)| format!("rank {r} ({h})")).collect();
        out.push(base(
            "slow-rank",
            ("slow_ranks", slow_ranks.len() as f64),
            if names.is_empty() { "none".into() } else { names.join(", ") },
            "none".into(),
            slow_ranks.is_empty(),
        ));
    }
    out
}

/// A FAIL stands only when every repeat of the rule fell short on its own: a rule that fails
/// on the median over repeats while one of them met the bound is NOISY (the machine changed
/// speed between repeats; which of them is the cluster cannot be told). `met`: each repeat's
/// own verdict. PASS, SKIP and a rule of one repeat are left as they are.
fn consistent(mut c: CheckResult, met: impl Iterator<Item = bool>) -> CheckResult {
    let met: Vec<bool> = met.collect();
    let passed = met.iter().filter(|m| **m).count();
    if c.outcome == Outcome::Fail && passed > 0 {
        c.outcome = Outcome::Noisy;
        // Every repeat met it on its own while their median did not (a knee: the median curve's
        // can fall later than each repeat's): not a disagreement, but no FAIL either.
        let why = if passed == met.len() {
            format!("each of its {passed} repeats met it on its own, their median did not")
        } else {
            format!("its repeats disagree ({passed} of {} met it)", met.len())
        };
        c.measured = format!("{}; {why}: {NOISY_ADVICE}", c.measured);
    }
    c
}

/// The knee of a curve of (size, bus bandwidth), sizes ascending: the bandwidth it is judged
/// against and the smallest size that reaches half of it (`None`: none does). That bandwidth is
/// `of` where given (the baseline's plateau, `knee_plateau_gbps`), else the best over the
/// `plateau`'s sizes; `None` when it is not given and no size is in the plateau or none carries
/// data. `spec from-run` learns it the same way.
pub fn knee(busbw: &[(u64, f64)], plateau: (u64, u64), of: Option<f64>) -> Option<(f64, Option<u64>)> {
    let best = of.unwrap_or_else(|| {
        busbw
            .iter()
            .filter(|(s, b)| *s >= plateau.0 && *s <= plateau.1 && b.is_finite())
            .map(|(_, b)| *b)
            .fold(f64::NAN, f64::max)
    });
    if best.is_nan() || best <= 0.0 {
        return None;
    }
    Some((best, busbw.iter().find(|(_, b)| *b >= best / 2.0).map(|(s, _)| *s)))
}

fn sweep_options(rule: &Rule, spec: &Spec) -> Options {
    Options {
        collectives: vec![rule.collective],
        min_bytes: rule.min_bytes,
        max_bytes: rule.max_bytes,
        step: Step::Factor(2.0),
        budget_s: spec.budget_s,
        check: true,
        dtypes: vec![rule.dtype],
        ops: vec![rule.op.unwrap_or(crate::dtype::Op::Sum)],
        aggregation: Aggregation::Mean,
        backend: rule.backend,
        patterns: vec![rule.pattern.clone()],
        csv: CsvTarget::Off,
        ..Options::default()
    }
}

/// The extra CSV columns of `check`: which rule (its name) and which repeat (1, 2, …) a row
/// belongs to.
pub const CSV_COLUMNS: &[&str] = &["rule", "repeat"];

/// The whole subcommand on every rank, once the options are agreed.
pub fn run(world: &World, opts: &CheckOptions) -> Result<i32> {
    let spec = load_spec(world, opts)?;
    // all-to-all-v's patterns against this world (a matrix smaller than the ranks, its sizes),
    // before anything is measured.
    for r in spec.rules.iter().filter(|r| r.collective == crate::collective::Kind::AllToAllV) {
        r.pattern.check_run(world.size, r.min_bytes, r.max_bytes).map_err(|e| {
            crate::error::Error::usage(format!(
                "{} line {}: rule '{}': {e}",
                crate::error::shown(&opts.spec),
                r.line,
                r.name
            ))
        })?;
    }
    // Outputs checked now, before anything is measured: a run that would fail on one fails
    // first, leaving nothing. The CSV is created now, the JUnit file written at the end.
    let mut outputs: Vec<(&str, &std::path::Path)> = vec![];
    if let Some(p) = &opts.junit {
        outputs.push(("--junit", p));
    }
    if let CsvTarget::Path(p) = &opts.csv {
        outputs.push(("--csv", p));
    }
    crate::setup::check_outputs(world, &outputs, &[("the spec", &opts.spec)], opts.files)?;
    // The JUnit file, written whole at the end, claimed now.
    let whole: Vec<(&str, &std::path::Path)> = opts.junit.iter().map(|p| ("--junit", p.as_path())).collect();
    crate::setup::claim_outputs(world, &whole, opts.files)?;
    let (mut csv, csv_path) = open_csv(world, opts)?;

    let by_host = world.ranks_by_host();
    // Every rule's points (each repeat counts) and what they should take, as the sweep's plan.
    let (total, estimated_s) = spec.rules.iter().fold((0u64, 0.0), |(n, t), r| {
        let o = sweep_options(r, &spec);
        let points = o.point_count(u64::MAX - 1) * spec.repeats as u64;
        (n + points, t + o.estimated_s(points).unwrap_or(0.0))
    });
    // Rank 0: a bar over them, and stdout through it.
    let progress =
        if world.rank == 0 { crate::report::progress::ProgressReport::new(total, opts.progress) } else { None };
    let mut out = BarAwareWriter::new(crate::report::stdout::out(), progress.as_ref().and_then(|p| p.bar()));
    if world.rank == 0 {
        let _ = writeln!(
            out,
            "# coll-bench {} check {}: {} rule(s), median of {} repeat(s), {} ranks on {} host(s)",
            env!("CARGO_PKG_VERSION"),
            crate::error::shown(&opts.spec),
            spec.rules.len(),
            spec.repeats,
            world.size,
            by_host.len()
        );
        let _ = writeln!(
            out,
            "# plan: {total} points over every rule and repeat, estimated {} from the budget (more on a busy machine)",
            crate::options::human_duration(estimated_s)
        );
        if let Some(p) = &csv_path {
            let _ = writeln!(out, "# measurements: {}", crate::error::shown(p));
        }
    }
    let mut noise = Noise::default();
    let judged = run_rules(world, opts, &spec, &by_host, &mut csv, progress.as_ref(), &mut out, &mut noise);
    if let Some(bar) = &progress {
        bar.finish();
    }
    drop(out);
    let measured_any = csv.as_ref().is_some_and(|c| c.rows() > 0);
    let verdicts = match judged {
        Ok(v) => v,
        Err(e) => {
            // A run that never measured leaves no file behind; rows already written stay whole.
            if let (Some(c), false) = (csv, measured_any) {
                c.remove();
            }
            return Err(e);
        }
    };
    // The warnings found after each sweep go into their rows (rank 0 alone holds the CSV); a
    // failed rewrite leaves the rows as they were, and says so.
    if let Some(Err(e)) = csv.as_mut().map(CsvReport::finish) {
        eprintln!("coll-bench check: {e}; its rows stay as measured, without the above_trend warnings");
    }
    drop(csv); // closes the CSV
    if world.rank != 0 {
        return world.agree(Ok(exit::OK));
    }
    print_verdicts(&verdicts);
    if let Some(line) = noise.line() {
        crate::outln!("{line}");
    }
    let written = write_junit(world, opts, &spec, &by_host, csv_path.as_deref(), &verdicts);
    let code = match overall(&verdicts) {
        Outcome::Fail => exit::WRONG,
        Outcome::Noisy => exit::NOISY,
        _ => exit::OK,
    };
    world.agree(written.map(|_| code))
}

/// The spec, read by rank 0 (other hosts need not see the file) and broadcast; every rule's
/// sweep checked on every rank before the first is measured.
fn load_spec(world: &World, opts: &CheckOptions) -> Result<Spec> {
    let loaded: Result<Spec> =
        if world.rank == 0 { read_spec(&opts.spec) } else { Ok(Spec { repeats: 0, budget_s: 0.0, rules: vec![] }) };
    let loaded = world.agree(loaded)?;
    let bytes = world.broadcast_bytes(0, serde_json::to_vec(&loaded).expect("spec serialises"));
    let spec: Spec = serde_json::from_slice(&bytes).expect("spec deserialises");
    for rule in &spec.rules {
        let sweep_opts = Options { debug_slow_rank: opts.debug_slow_rank, ..sweep_options(rule, &spec) };
        world.agree(
            sweep_opts
                .validate_for_world(world.size)
                .map_err(|e| Error::usage(format!("check: rule '{}' (line {}): {e}", rule.name, rule.line))),
        )?;
    }
    Ok(spec)
}

/// The spec file, parsed. At most one byte past the limit is read: a huge file is refused,
/// never loaded.
fn read_spec(file: &std::path::Path) -> Result<Spec> {
    let path = crate::error::shown(file);
    let mut bytes = vec![];
    std::fs::File::open(file)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, spec::MAX_BYTES as u64 + 1), &mut bytes))
        .map_err(|e| Error::usage(format!("check: cannot read '{path}': {e}; expected a TOML acceptance spec")))
        .and_then(|_| match bytes.len() > spec::MAX_BYTES {
            true => Err(Error::usage(format!(
                "check: {path}: over {} MiB; expected a spec of at most {} MiB ({} rules)",
                spec::MAX_BYTES >> 20,
                spec::MAX_BYTES >> 20,
                spec::MAX_RULES
            ))),
            false => String::from_utf8(bytes).map_err(|_| {
                Error::usage(format!("check: '{path}' is not UTF-8 text; expected a TOML acceptance spec"))
            }),
        })
        .and_then(|text| spec::parse(&path, &text).map_err(|e| Error::usage(format!("check: {e}"))))
}

/// Rank 0's CSV (none elsewhere) with its header, and its absolute path; from here on
/// SIGINT/SIGTERM make rank 0 name it (report::interrupted).
fn open_csv(world: &World, opts: &CheckOptions) -> Result<(Option<CsvReport>, Option<std::path::PathBuf>)> {
    let now = chrono::Utc::now();
    let created = match world.rank {
        0 => crate::report::outputs::open_csv((&opts.csv).into(), "--csv", "coll-bench-check", &now, opts.files),
        _ => Ok(None),
    };
    let csv_file = world.agree(created)?;
    let csv_path = csv_file.as_ref().map(|f| crate::report::outfile::absolute(f.real_path()));
    let files: Vec<(std::path::PathBuf, &str)> = csv_path.iter().map(|p| (p.clone(), "CSV")).collect();
    crate::report::interrupted::arm(world.rank, Some(&files));
    let mut csv = csv_file.map(|f| CsvReport::with_extra_columns(f, CSV_COLUMNS));
    world.agree(csv.as_mut().map(CsvReport::write_header).unwrap_or(Ok(())))?;
    Ok((csv, csv_path))
}

/// Rank 0, at the end: the JUnit file (`--junit`) with the run's context, and the files
/// written named on stderr (under check, stdout is the verdict table), absolute; the CSV even
/// when the JUnit file could not be written.
fn write_junit(
    world: &World,
    opts: &CheckOptions,
    spec: &Spec,
    by_host: &[(String, Vec<usize>)],
    csv_path: Option<&std::path::Path>,
    verdicts: &[CheckResult],
) -> Result<()> {
    let mut context: Vec<(&str, String)> = vec![
        ("coll_bench_version", env!("CARGO_PKG_VERSION").to_string()),
        ("spec", crate::error::shown(crate::report::outfile::absolute(&opts.spec))),
        ("ranks", world.size.to_string()),
        ("hosts", by_host.iter().map(|(h, r)| format!("{h}:{}", r.len())).collect::<Vec<_>>().join(",")),
        ("mpi_library", world.library_version.clone()),
        ("repeats", spec.repeats.to_string()),
    ];
    if let Some(p) = csv_path {
        context.push(("csv", crate::error::shown(p)));
    }
    let written = match &opts.junit {
        Some(p) => junit::write(p, &crate::error::shown(&opts.spec), verdicts, &context, opts.files),
        None => Ok(()),
    };
    let mut err = std::io::stderr().lock();
    if let Some(p) = csv_path {
        let _ = writeln!(err, "coll-bench check: wrote {} (every measurement, CSV)", crate::error::shown(p));
    }
    if let (Some(p), Ok(())) = (&opts.junit, &written) {
        let _ = writeln!(
            err,
            "coll-bench check: wrote {} (verdicts, JUnit XML)",
            crate::error::shown(crate::report::outfile::absolute(p))
        );
    }
    written
}

/// The measurements of a check and how many of them carry a noise warning (`noisy`,
/// `mean_off_median`, `above_trend`, `scheduler_tick`: the CSV's `warnings`), for the line under
/// the verdict table.
#[derive(Debug, Default, PartialEq)]
pub struct Noise {
    pub measurements: usize,
    pub warned: usize,
}

impl Noise {
    fn add(&mut self, p: &Point) {
        use crate::stats::Warning;
        for m in p.measurements() {
            self.measurements += 1;
            self.warned += m.warnings.iter().any(|w| !matches!(w, Warning::PageFaults { .. })) as usize;
        }
    }

    /// `None` when no measurement was warned about.
    pub fn line(&self) -> Option<String> {
        (self.warned > 0).then(|| {
            format!(
                "# noise: {} of {} measurements carry a noise warning (noisy, mean_off_median, above_trend or scheduler_tick, as the CSV's warnings column names them)",
                self.warned, self.measurements
            )
        })
    }
}

/// Run and judge every rule, each measurement appended to `csv` (rank 0) as it comes, the bar
/// advanced and one line per rule printed to `out` (rank 0) as each finishes; `noise` counts
/// the measurements' noise warnings.
#[allow(clippy::too_many_arguments)]
fn run_rules(
    world: &World,
    opts: &CheckOptions,
    spec: &Spec,
    by_host: &[(String, Vec<usize>)],
    csv: &mut Option<CsvReport>,
    progress: Option<&ProgressReport>,
    out: &mut impl Write,
    noise: &mut Noise,
) -> Result<Vec<CheckResult>> {
    let mut verdicts = vec![];
    // What a point above the trend suspects (collective: once, before the first rule).
    let crowded = crate::info::facts::crowded(world);
    for rule in &spec.rules {
        if let Some(want) = rule.ranks_per_node {
            if by_host.iter().any(|(_, r)| r.len() != want) {
                let have: Vec<String> = by_host.iter().map(|(h, r)| format!("{h}: {}", r.len())).collect();
                verdicts.push(CheckResult {
                    rule: rule.name.clone(),
                    line: rule.line,
                    collective: rule.collective.name().into(),
                    check: "ranks-per-node",
                    measured: have.join(", "),
                    required: format!("{want} per host"),
                    outcome: Outcome::Skip,
                    value: None,
                    slow_ranks: vec![],
                    seconds: 0.0,
                });
                if world.rank == 0 {
                    rule_done(out, rule, &verdicts[verdicts.len() - 1..], 0.0);
                }
                continue;
            }
        }
        let mut sweep_opts = Options { debug_slow_rank: opts.debug_slow_rank, ..sweep_options(rule, spec) };
        let (mut backend, note) = crate::setup::ready_backend(world, &mut sweep_opts)?;
        let mut info = crate::setup::run_info(
            world,
            backend.as_ref(),
            &sweep_opts,
            &chrono::Utc::now(),
            note.into_iter().collect(),
        );
        let t0 = mpi::time();
        let mut links = vec![];
        let mut ceilings = vec![];
        let ring = info.ring_links();
        if rule.min_pct_of_ceiling.is_some() {
            // Before its repeats (the rows of its sweeps carry this pass), and again after them
            // (judge_ceiling).
            info.ceiling = Sweep::new(world, backend.as_mut(), &sweep_opts).ceiling(ring, &mut info.notes)?;
            crate::nic::beside(world, &mut info.ceiling);
            ceilings.extend(info.ceiling.clone());
            // And the links it could be short of: the pairs between hosts (three hosts or more).
            if by_host.len() > 2 {
                links = crate::pairs::links::measure(world, rule.max_bytes, spec.budget_s, opts.files);
            }
        }
        let mut points: Vec<Point> = vec![];
        for repeat in 1..=spec.repeats {
            if let Some(c) = csv.as_mut() {
                c.set_extra(vec![rule.name.clone(), repeat.to_string()]);
                c.next_sweep();
            }
            let first = points.len();
            let mut sweep = Sweep::new(world, backend.as_mut(), &sweep_opts);
            sweep.run(&mut |p| {
                if let Some(bar) = progress {
                    bar.advance(p);
                }
                // Judged at the end: kept without each rank's time (only the slow ranks are
                // judged), so the repeats' points do not grow with the ranks.
                points.push(p.without_rank_times());
                csv.as_mut().map(|c| c.point(&info, p)).unwrap_or(Ok(()))
            })?;
            // The points above the trend of their series, known once the sweep is through:
            // warned of in the CSV's rows and counted in the noise line.
            let flags = sweep.above_trend(crowded.as_ref());
            for f in &flags {
                if let Some(p) = points.get_mut(first + f.seen.point) {
                    let m = if f.seen.placement == Placement::InPlace { &mut p.in_place } else { &mut p.out_of_place };
                    m.warnings.push(f.warning.clone());
                }
            }
            points[first..].iter().for_each(|p| noise.add(p));
            world.agree(csv.as_mut().map(|c| c.amend(&info, &flags)).unwrap_or(Ok(())))?;
        }
        if !ceilings.is_empty() {
            let mut notes = vec![];
            ceilings.extend(Sweep::new(world, backend.as_mut(), &sweep_opts).ceiling(ring, &mut notes)?);
            info.notes.extend(notes);
        }
        // A host whose best link reads slow is measured again now, each link's faster reading
        // kept (load slows a transfer, nothing speeds one up): a burst during one pass is not
        // a slow host. The decision is rank 0's (it alone holds the links), agreed.
        let slow = judge_links(rule, &links).is_some_and(|l| l.outcome == Outcome::Fail);
        let mut named = None;
        if world.max_f64(if slow { 1.0 } else { 0.0 }) > 0.0 {
            let again = crate::pairs::links::measure(world, rule.max_bytes, spec.budget_s, opts.files);
            named = Some(Remeasured::of(&links, &again));
            links = crate::pairs::links::faster_of(&links, &again);
        }
        let seconds = mpi::time() - t0;
        let mut judged = judge_rule(rule, &points, &world.hosts, &ceilings, seconds);
        judged.extend(judge_links(rule, &links).map(|l| links_agree(l, named)));
        if world.rank == 0 {
            rule_done(out, rule, &judged, seconds);
        }
        verdicts.extend(judged);
    }
    Ok(verdicts)
}

/// One line as each rule finishes, so a long check shows where it is (the table comes at the end).
fn rule_done(out: &mut impl Write, rule: &Rule, verdicts: &[CheckResult], seconds: f64) {
    let count = |o: Outcome| verdicts.iter().filter(|v| v.outcome == o).count();
    let outcome = [Outcome::Fail, Outcome::Noisy, Outcome::Pass]
        .into_iter()
        .find(|o| count(*o) > 0)
        .unwrap_or(Outcome::Skip)
        .word();
    let _ = writeln!(
        out,
        "# rule '{}' (line {}): {outcome} ({} of {} checks passed) in {seconds:.1} s",
        rule.name,
        rule.line,
        count(Outcome::Pass),
        verdicts.len()
    );
}

fn print_verdicts(verdicts: &[CheckResult]) {
    let mut out = crate::report::stdout::out();
    let _ = out.write_all(verdict_table(verdicts).as_bytes());
}

/// The verdict table, its columns as wide as their longest entry (a long rule name shifts
/// nothing), then the slow ranks and the summary line.
pub fn verdict_table(verdicts: &[CheckResult]) -> String {
    let outcome = |v: &CheckResult| v.outcome.word();
    let rows: Vec<[String; 6]> = verdicts
        .iter()
        .map(|v| {
            [
                format!("{} (line {})", v.rule, v.line),
                v.collective.clone(),
                v.check.to_string(),
                v.measured.clone(),
                v.required.clone(),
                outcome(v).to_string(),
            ]
        })
        .collect();
    let head = ["rule", "collective", "check", "measured", "required", "verdict"];
    let mut width = head.map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |lead: &str, cells: &[&str]| -> String {
        let mut l = lead.to_string();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                l.push_str(c);
                l.push_str(&" ".repeat(width[i] - c.chars().count() + 2));
            }
        }
        l.push('\n');
        l
    };
    let mut out = String::from("#\n");
    out.push_str(&line("# ", &head));
    for r in &rows {
        out.push_str(&line("  ", &r.iter().map(String::as_str).collect::<Vec<_>>()));
    }
    let mut named = vec![];
    for v in verdicts {
        for (rank, host, n, of) in &v.slow_ranks {
            let line = format!(
                "# Slow rank: rank {rank} on {host} stood out at {n} of {of} measurements of rule '{}'",
                v.rule
            );
            if !named.contains(&line) {
                named.push(line);
            }
        }
    }
    for l in named {
        out.push_str(&l);
        out.push('\n');
    }
    let count = |o: Outcome| verdicts.iter().filter(|v| v.outcome == o).count();
    let noisy = match count(Outcome::Noisy) {
        0 => String::new(),
        n => format!("{n} noisy, "),
    };
    out.push_str(&format!(
        "# {} passed, {} failed, {noisy}{} skipped: {}\n",
        count(Outcome::Pass),
        count(Outcome::Fail),
        count(Outcome::Skip),
        overall(verdicts).word()
    ));
    out
}

/// The run's verdict: FAIL when a check failed, else NOISY when one could not be judged, else
/// PASS (a run of skipped checks passes: nothing was short).
pub fn overall(verdicts: &[CheckResult]) -> Outcome {
    let any = |o: Outcome| verdicts.iter().any(|v| v.outcome == o);
    if any(Outcome::Fail) {
        Outcome::Fail
    } else if any(Outcome::Noisy) {
        Outcome::Noisy
    } else {
        Outcome::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Kind;
    use crate::dtype::{DType, Op};
    use crate::record::{Measurement, Placement};

    fn m(placement: Placement, time_us: f64, busbw: f64, wrong: u64, slow: &[usize]) -> Measurement {
        Measurement {
            time_us,
            algbw_gbps: busbw,
            busbw_gbps: busbw,
            per_rank_us: vec![],
            wrong: Some(wrong),
            slow_ranks: slow.iter().map(|r| RankOutlier { rank: *r, time_us: 1.0, median_us: 2.0 }).collect(),
            ..Measurement::sample(placement)
        }
    }

    fn point(size: u64, busbw: f64, wrong: u64, slow: &[usize]) -> Point {
        Point {
            collective: Kind::AllReduce,
            dtype: DType::Float32,
            op: Some(Op::Sum),
            root: None,
            size_bytes: size,
            count: size / 4,
            bus_factor: 1.0,
            out_of_place: m(Placement::OutOfPlace, 10.0, busbw, wrong, slow),
            in_place: m(Placement::InPlace, 10.0, busbw, 0, slow),
            algorithm: "unknown".into(),
            algorithm_source: "not reported".into(),
            traffic: None,
        }
    }

    /// The one rule of a spec: an all-reduce named `ar`, then `rest` (its sizes and requirements).
    fn one_rule(rest: &str) -> Rule {
        let text = format!("[[rule]]\nname = \"ar\"\ncollective = \"all-reduce\"\n{rest}");
        spec::parse("s", &text).unwrap().rules[0].clone()
    }

    fn rule() -> Rule {
        one_rule("sizes = \"1K..8K\"\nplateau = \"4K..8K\"\nmin_busbw_gbps = 2.0\nmax_time_us = 20.0\n")
    }

    #[test]
    fn bandwidth_is_judged_on_the_plateau_median_over_repeats() {
        let hosts = vec!["h".to_string(); 4];
        // Small sizes are slow (latency bound) but outside the plateau; one repeat at 8K is a
        // noisy outlier, the median of three still passes.
        let pts = vec![
            point(1024, 0.1, 0, &[]),
            point(4096, 2.5, 0, &[]),
            point(8192, 3.0, 0, &[]),
            point(1024, 0.1, 0, &[]),
            point(4096, 2.4, 0, &[]),
            point(8192, 0.5, 0, &[]),
            point(1024, 0.1, 0, &[]),
            point(4096, 2.6, 0, &[]),
            point(8192, 3.1, 0, &[]),
        ];
        let v = judge_rule(&rule(), &pts, &hosts, &[], 1.0);
        assert_eq!(
            v.iter().map(|v| (v.check, v.outcome)).collect::<Vec<_>>(),
            [("wrong", Outcome::Pass), ("busbw", Outcome::Pass), ("time", Outcome::Pass)]
        );
        assert!(v[1].measured.starts_with("2.500 GB/s at 4K"), "{}", v[1].measured);
    }

    /// FAIL only when every repeat fell short on its own; a median short of the bound while a
    /// repeat met it is NOISY, saying how many met it. Repeat k is each size's k-th point.
    #[test]
    fn a_fail_needs_every_repeat_to_fall_short() {
        let hosts = vec!["h".to_string(); 2];
        let r = one_rule("sizes = \"4K..8K\"\nplateau = \"4K..8K\"\nmin_busbw_gbps = 2.0\nmax_time_us = 20.0\n");
        let repeats = |bw: [f64; 3], us: [f64; 3]| -> Vec<Point> {
            (0..3)
                .flat_map(|k| {
                    [4096, 8192].map(|size| Point {
                        out_of_place: Measurement { time_us: us[k], ..point(size, bw[k], 0, &[]).out_of_place },
                        ..point(size, bw[k], 0, &[])
                    })
                })
                .collect()
        };
        let judged = |pts: &[Point], check: &str| {
            let v = judge_rule(&r, pts, &hosts, &[], 1.0);
            let c = v.into_iter().find(|v| v.check == check).unwrap();
            (c.outcome, c.measured)
        };
        // Two repeats at 1 GB/s and 30 us, one at 3 GB/s and 10 us: the medians fail, one met.
        let noisy = repeats([1.0, 3.0, 1.0], [30.0, 10.0, 30.0]);
        for check in ["busbw", "time"] {
            let (outcome, measured) = judged(&noisy, check);
            assert_eq!(outcome, Outcome::Noisy, "{measured}");
            assert!(
                measured.contains("; its repeats disagree (1 of 3 met it): the machine changed speed"),
                "{measured}"
            );
        }
        // Every repeat short: FAIL; every repeat but one met: the median passes.
        let short = repeats([1.0, 1.5, 1.0], [30.0, 25.0, 30.0]);
        assert_eq!((judged(&short, "busbw").0, judged(&short, "time").0), (Outcome::Fail, Outcome::Fail));
        let met = repeats([3.0, 1.0, 3.0], [10.0, 30.0, 10.0]);
        assert_eq!((judged(&met, "busbw").0, judged(&met, "time").0), (Outcome::Pass, Outcome::Pass));
        // Every repeat met, their median not (a knee can do that): NOISY, and said as such.
        let c = consistent(
            CheckResult { outcome: Outcome::Fail, measured: "knee at 256K".into(), ..judged_result() },
            [true, true, true].into_iter(),
        );
        assert_eq!(c.outcome, Outcome::Noisy);
        assert!(c.measured.contains("each of its 3 repeats met it on its own, their median did not"), "{}", c.measured);
    }

    fn judged_result() -> CheckResult {
        CheckResult {
            rule: "r".into(),
            line: 1,
            collective: "all-reduce".into(),
            check: "knee",
            measured: String::new(),
            required: String::new(),
            outcome: Outcome::Pass,
            value: None,
            slow_ranks: vec![],
            seconds: 0.0,
        }
    }

    #[test]
    fn max_median_us_judges_the_median_not_the_mean() {
        // A mean of 10 us pulled up by a few slow calls, a median of 2 us: what `spec from-run`
        // writes judges the median, at the slowest size's median over repeats.
        let hosts = vec!["h".to_string(); 2];
        let mut r = rule();
        (r.min_busbw_gbps, r.max_time_us, r.max_median_us) = (None, None, Some(3.0));
        let with_median = |size: u64, median_us: f64| {
            let mut p = point(size, 1.0, 0, &[]);
            p.out_of_place.summary.median_us = median_us;
            p
        };
        let pts = vec![with_median(1024, 2.0), with_median(1024, 2.5), with_median(1024, 9.0)];
        let v = judge_rule(&r, &pts, &hosts, &[], 1.0);
        assert_eq!(
            v.iter().map(|v| (v.check, v.outcome)).collect::<Vec<_>>(),
            [("wrong", Outcome::Pass), ("median", Outcome::Pass)]
        );
        assert_eq!(
            (v[1].measured.as_str(), v[1].required.as_str(), v[1].value),
            ("2.50 us at 1K", "<= 3 us", Some(("median_us", 2.5)))
        );
        let pts = vec![with_median(1024, 2.0), with_median(2048, 3.5), with_median(2048, 3.4)];
        let v = judge_rule(&r, &pts, &hosts, &[], 1.0);
        assert_eq!((v[1].outcome, v[1].measured.as_str()), (Outcome::Fail, "3.45 us at 2K"));
    }

    /// `max_knee_bytes`: the smallest size whose median busbw reaches half the plateau's best.
    #[test]
    fn the_knee_is_where_the_curve_reaches_half_its_plateau() {
        let hosts = vec!["h".to_string(); 2];
        let r = one_rule("sizes = \"1K..16K\"\nplateau = \"16K..16K\"\nmax_knee_bytes = \"4K\"\n");
        assert_eq!(r.max_knee_bytes, Some(4096));
        let curve = |bw: [f64; 5]| -> Vec<Point> {
            [1024u64, 2048, 4096, 8192, 16384].iter().zip(bw).map(|(s, b)| point(*s, b, 0, &[])).collect()
        };
        let judged =
            |pts: &[Point]| judge_rule(&r, pts, &hosts, &[], 1.0).into_iter().find(|v| v.check == "knee").unwrap();
        // Half of 4.0 reached at 4K: pass.
        let v = judged(&curve([0.5, 1.0, 2.0, 3.5, 4.0]));
        assert_eq!(
            (v.outcome, v.measured.as_str(), v.value),
            (Outcome::Pass, "half the plateau's 4.000 GB/s at 4K", Some(("knee_bytes", 4096.0)))
        );
        // Both ends unchanged, the middle later: 8K, fail.
        let v = judged(&curve([0.5, 1.0, 1.5, 3.0, 4.0]));
        assert_eq!((v.outcome, v.required.as_str()), (Outcome::Fail, "<= 4K"));
        // Three repeats, the median curve's knee at 8K while one repeat's was at 4K: NOISY.
        let late = curve([0.5, 1.0, 1.5, 3.0, 4.0]);
        let v = judged(&[late.clone(), curve([0.5, 1.0, 2.0, 3.5, 4.0]), late].concat());
        assert_eq!(v.outcome, Outcome::Noisy, "{}", v.measured);
        assert!(v.measured.contains("its repeats disagree (1 of 3 met it)"), "{}", v.measured);
        assert_eq!(knee(&[(8, 0.0)], (8, 8), None), None);
        assert_eq!(knee(&[(8, 1.0), (16, 4.0)], (16, 16), None), Some((4.0, Some(16))));
    }

    /// With `knee_plateau_gbps` (what `spec from-run` writes) the knee is where the curve reaches
    /// half the baseline's plateau: a curve faster at every size passes however high its own
    /// plateau; one that levels off later at the baseline's bandwidth fails; one whose plateau
    /// never reaches half of the baseline's fails saying so. Each repeat is judged the same way.
    #[test]
    fn the_knee_is_judged_against_the_baseline_plateau() {
        let hosts = vec!["h".to_string(); 2];
        let r =
            one_rule("sizes = \"1K..16K\"\nplateau = \"16K..16K\"\nmax_knee_bytes = \"4K\"\nknee_plateau_gbps = 4.0\n");
        assert_eq!((r.max_knee_bytes, r.knee_plateau_gbps), (Some(4096), Some(4.0)));
        let curve = |bw: [f64; 5]| -> Vec<Point> {
            [1024u64, 2048, 4096, 8192, 16384].iter().zip(bw).map(|(s, b)| point(*s, b, 0, &[])).collect()
        };
        let judged = |r: &Rule, pts: &[Point]| {
            judge_rule(r, pts, &hosts, &[], 1.0).into_iter().find(|v| v.check == "knee").unwrap()
        };
        // The baseline: half of 4.0 at 4K. This run is faster at every size, its plateau twice
        // as high: against its own plateau (8.0) the knee would be 8K and fail.
        let faster = curve([0.6, 1.2, 2.4, 5.0, 8.0]);
        let v = judged(&r, &faster);
        assert_eq!(
            (v.outcome, v.measured.as_str(), v.value),
            (Outcome::Pass, "half the baseline plateau's 4.000 GB/s at 4K", Some(("knee_bytes", 4096.0)))
        );
        let own = Rule { knee_plateau_gbps: None, ..r.clone() };
        assert_eq!(judged(&own, &faster).outcome, Outcome::Fail);
        // The same plateau as the baseline, reached later: half of 4.0 only at 8K.
        let v = judged(&r, &curve([0.5, 1.0, 1.5, 3.0, 4.0]));
        assert_eq!(
            (v.outcome, v.measured.as_str(), v.required.as_str()),
            (Outcome::Fail, "half the baseline plateau's 4.000 GB/s at 8K", "<= 4K")
        );
        // A plateau below half of the baseline's: the knee is never reached.
        let v = judged(&r, &curve([0.2, 0.4, 0.8, 1.2, 1.5]));
        assert_eq!((v.outcome, v.value), (Outcome::Fail, Some(("knee_bytes", f64::INFINITY))));
        assert_eq!(v.measured, "never half the baseline plateau's 4.000 GB/s (its own plateau 1.500 GB/s)");
        // Repeats: the median curve's knee at 8K while the faster repeat's, against the same 4.0,
        // is at 4K: NOISY.
        let late = curve([0.5, 1.0, 1.5, 3.0, 4.0]);
        let v = judged(&r, &[late.clone(), faster, late].concat());
        assert_eq!(v.outcome, Outcome::Noisy, "{}", v.measured);
        assert!(v.measured.contains("its repeats disagree (1 of 3 met it)"), "{}", v.measured);
        assert_eq!(knee(&[(8, 1.0), (16, 8.0)], (16, 16), Some(2.0)), Some((2.0, Some(8))));
        assert_eq!(knee(&[(8, 0.5), (16, 0.9)], (16, 16), Some(2.0)), Some((2.0, None)));
    }

    #[test]
    fn the_verdict_table_keeps_its_columns_for_long_rule_names() {
        let hosts = vec!["h".to_string(); 2];
        let mut long = rule();
        long.name = "an all-reduce bandwidth rule whose name is much longer than any column width".into();
        let pts = vec![point(4096, 2.5, 0, &[]), point(8192, 3.0, 0, &[])];
        let mut v = judge_rule(&rule(), &pts, &hosts, &[], 1.0);
        v.extend(judge_rule(&long, &pts, &hosts, &[], 1.0));
        let table = verdict_table(&v);
        let head = table.lines().find(|l| l.starts_with("# rule")).unwrap();
        let starts: Vec<usize> = ["collective", "check", "measured", "required", "verdict"]
            .iter()
            .map(|w| head.find(&format!("  {w}")).unwrap() + 2)
            .collect();
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(rows.len(), 6, "{table}");
        for r in &rows {
            // Every cell starts where its header does: a space before, text at the column.
            for (c, want) in starts.iter().zip(["all-reduce", "", "", "", "PASS"]) {
                assert_eq!(&r[c - 1..*c], " ", "column at {c}: {table}");
                assert_ne!(&r[*c..c + 1], " ", "column at {c}: {table}");
                assert!(r[*c..].starts_with(want), "column at {c}: {table}");
            }
        }
        assert!(table.ends_with("# 6 passed, 0 failed, 0 skipped: PASS\n"), "{table}");
    }

    /// NOISY: its own word in the table and the footer, and the run's verdict when nothing
    /// failed; a FAIL anywhere outranks it.
    #[test]
    fn noisy_is_counted_and_outranked_only_by_fail() {
        let v = |outcome: Outcome| CheckResult {
            rule: "r".into(),
            line: 1,
            collective: "all-reduce".into(),
            check: "ceiling",
            measured: "m".into(),
            required: "q".into(),
            outcome,
            value: None,
            slow_ranks: vec![],
            seconds: 0.0,
        };
        let table = verdict_table(&[v(Outcome::Pass), v(Outcome::Noisy), v(Outcome::Skip)]);
        assert_eq!(
            table.lines().filter(|l| l.starts_with("  r (line 1)") && l.ends_with(" NOISY")).count(),
            1,
            "{table}"
        );
        assert!(table.ends_with("# 1 passed, 0 failed, 1 noisy, 1 skipped: NOISY\n"), "{table}");
        assert_eq!(overall(&[v(Outcome::Noisy), v(Outcome::Fail)]), Outcome::Fail);
        assert_eq!(overall(&[v(Outcome::Skip), v(Outcome::Pass)]), Outcome::Pass);
        let table = verdict_table(&[v(Outcome::Pass)]);
        assert!(table.ends_with("# 1 passed, 0 failed, 0 skipped: PASS\n"), "{table}");
    }

    #[test]
    fn the_noise_line_counts_the_warned_measurements() {
        use crate::stats::Warning;
        let mut noise = Noise::default();
        let mut p = point(4096, 1.0, 0, &[]);
        noise.add(&p);
        assert_eq!((noise.line(), noise.measurements), (None, 2));
        p.in_place.warnings = vec![Warning::Noisy { relative_ci: 0.5 }];
        p.out_of_place.warnings = vec![Warning::PageFaults { faults_per_call: 1.0, fault_cost_us: 1.0, share: 0.5 }];
        noise.add(&p);
        assert_eq!(
            noise.line().unwrap(),
            "# noise: 1 of 4 measurements carry a noise warning (noisy, mean_off_median, above_trend or scheduler_tick, as the CSV's warnings column names them)"
        );
    }

    /// A links FAIL stands only when both measurements named the same slow hosts, slower than
    /// the measurements' disagreement accounts for.
    #[test]
    fn a_links_fail_needs_both_measurements_to_name_the_host() {
        let fail = CheckResult {
            rule: "r".into(),
            line: 1,
            collective: "all-reduce".into(),
            check: "links",
            measured: "b's best link 0.0100 GB/s (point-to-point)".into(),
            required: "q".into(),
            outcome: Outcome::Fail,
            value: None,
            slow_ranks: vec![],
            seconds: 0.0,
        };
        let l =
            |a: &str, b: &str, gbps: f64| crate::pairs::links::Link { a: a.into(), b: b.into(), gbps, rank_pairs: 1 };
        // b's links at a tenth of a-c, twice: a slow host, the readings agreeing.
        let first = [l("a", "b", 0.1), l("a", "c", 1.0), l("b", "c", 0.1)];
        let again = [l("a", "b", 0.11), l("a", "c", 0.95), l("b", "c", 0.1)];
        assert_eq!(links_agree(fail.clone(), Some(Remeasured::of(&first, &again))).outcome, Outcome::Fail);
        assert_eq!(links_agree(fail.clone(), None).outcome, Outcome::Fail);
        // Named once only: the second measurement slow all through.
        let slower = [l("a", "b", 0.1), l("a", "c", 0.15), l("b", "c", 0.1)];
        let v = links_agree(fail.clone(), Some(Remeasured::of(&first, &slower)));
        assert_eq!(v.outcome, Outcome::Noisy);
        assert!(
            v.measured.ends_with(
                "name different slow hosts (b; then none): the machine changed speed; check again when it is quiet"
            ),
            "{}",
            v.measured
        );
        // Named twice, at a fifth of the fastest pair, while one link read 3x apart: a busy
        // machine can account for it.
        let first = [l("a", "b", 0.2), l("a", "c", 1.0), l("b", "c", 0.18)];
        let again = [l("a", "b", 0.1), l("a", "c", 0.33), l("b", "c", 0.1)];
        let r = Remeasured::of(&first, &again);
        assert!(r.both && r.within_band && (r.band - 1.0 / 0.33).abs() < 1e-9, "{r:?}");
        let v = links_agree(fail, Some(r));
        assert_eq!(v.outcome, Outcome::Noisy);
        assert!(v.measured.contains("differ by up to 3.0x, enough to account for it"), "{}", v.measured);
    }

    #[test]
    fn failures_and_slow_ranks() {
        let hosts: Vec<String> = ["a", "a", "b", "b"].iter().map(|s| s.to_string()).collect();
        let pts = vec![point(4096, 1.0, 0, &[2]), point(8192, 1.5, 3, &[2])];
        let v = judge_rule(&rule(), &pts, &hosts, &[], 1.0);
        assert_eq!(v[0].outcome, Outcome::Fail, "3 wrong elements");
        assert_eq!(v[1].outcome, Outcome::Fail, "busbw below 2.0");
        assert_eq!(v[0].slow_ranks, vec![(2, "b".to_string(), 4, 4)]);
    }

    /// `min_pct_of_ceiling`: the weakest plateau size's median busbw over the ceiling, the
    /// same rule passing against a slow ceiling and failing against a fast one; SKIP without one.
    #[test]
    fn pct_of_ceiling_is_judged_on_the_plateau_against_the_measured_ceiling() {
        let hosts = vec!["h".to_string(); 2];
        let r = one_rule("sizes = \"1K..8K\"\nplateau = \"4K..8K\"\nmin_pct_of_ceiling = 80\n");
        let pts = vec![point(1024, 0.1, 0, &[]), point(4096, 2.5, 0, &[]), point(8192, 3.0, 0, &[])];
        let ceiling = |gbps: f64| crate::record::Ceiling {
            gbps,
            source: "measured",
            size_bytes: 8192,
            time_us: 1.0,
            links: "within hosts",
            nominal: vec![],
            host_pairs: vec![],
            seconds: 0.5,
            repeats: 3,
            spread_pct: 0.0,
        };
        let judged = |c: &[crate::record::Ceiling]| {
            let v = judge_rule(&r, &pts, &hosts, c, 1.0);
            let c = v.iter().find(|v| v.check == "ceiling").unwrap().clone();
            (c.outcome, c.measured, c.required)
        };
        // 2.5 GB/s at 4K, the weakest plateau size: 83.3% of 3 GB/s, 50% of 5 GB/s.
        let (outcome, measured, required) = judged(&[ceiling(3.0)]);
        assert_eq!(
            (outcome, measured.as_str(), required.as_str()),
            (Outcome::Pass, "83.3% of 3.000 GB/s at 4K", ">= 80% of the ceiling")
        );
        assert_eq!(judged(&[ceiling(5.0)]).0, Outcome::Fail);
        assert_eq!(judged(&[]).0, Outcome::Skip);
        // Before and after the sweeps: the faster pass, when they agree (a 4.5 GB/s pass under
        // a burst does not turn the rule's FAIL against 5 GB/s into a PASS).
        let (outcome, measured, _) = judged(&[ceiling(4.5), ceiling(5.0)]);
        assert_eq!(
            (outcome, measured.as_str()),
            (Outcome::Fail, "50.0% of 5.000 GB/s at 4K (the faster of 2 ceiling passes)")
        );
        // Passes that disagree (the machine busy during one: the CI run that failed read 0.131
        // GB/s before where 8-13 are usual, and passed a rule no collective here meets). The
        // true ceiling is at least the faster pass: short of it is FAIL; above it, PASS only if
        // the share holds even as far again above it, else NOISY, both passes named.
        let (outcome, measured, _) = judged(&[ceiling(1.0), ceiling(3.0)]);
        assert_eq!(outcome, Outcome::Noisy, "83% of 3, 28% of 9: {measured}");
        assert!(
            measured.contains("disagree (1.000, 3.000 GB/s)") && measured.contains("check again when it is quiet"),
            "{measured}"
        );
        let (outcome, measured, _) = judged(&[ceiling(5.0), ceiling(0.5)]);
        assert_eq!(outcome, Outcome::Fail, "{measured}");
        assert!(measured.ends_with("short even against the faster"), "{measured}");
        let (outcome, measured, _) = judged(&[ceiling(1.0), ceiling(0.6)]);
        assert_eq!(outcome, Outcome::Pass, "250% of 1, 150% of 1.67: {measured}");
        assert!(measured.ends_with("met even 1.7x above the faster"), "{measured}");
        // One pass whose own repeats disagree: the band is their spread.
        let wide = |spread_pct| crate::record::Ceiling { spread_pct, ..ceiling(3.0) };
        assert_eq!(judged(&[wide(80.0)]).0, Outcome::Noisy);
        assert_eq!(judged(&[wide(40.0)]).0, Outcome::Pass, "within the spread a quiet machine has");
        // Both passes slow alike: a rule at over 5x the ceiling cannot have read it right.
        let (outcome, measured, _) = judged(&[ceiling(0.2), ceiling(0.21)]);
        assert_eq!(outcome, Outcome::Noisy, "{measured}");
        assert!(measured.starts_with("1190.5% of 0.210 GB/s at 4K; over 5x the ceiling"), "{measured}");
        // Barrier moves no data; a plateau with it alone is enough.
        let barrier = "[[rule]]\nname = \"b\"\ncollective = \"barrier\"\nsizes = \"8..8\"\nmin_pct_of_ceiling = 80\n";
        assert!(spec::parse("s", barrier).unwrap_err().contains("not min_pct_of_ceiling"));
    }
}
