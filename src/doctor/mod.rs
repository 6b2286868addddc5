//! `coll-bench doctor`: one page saying whether every collective reaches the ceiling of its
//! links at one large size and, where one does not (or the ceiling itself is short), what is
//! most likely to blame, each cause with its evidence: a link (a host slower than its peers,
//! or a lone host pair against its nominal rate), a host (within-host exchange, page faults, a
//! slow rank, more ranks than cores or than their binding allows, a clock held low), the
//! algorithm (the library's default against every algorithm it can select, timed as tune times
//! them), the library call (its other function for the collective, timed with them) or noise
//! (the spread of the samples).
//!
//! The order: the ceiling pass and the sweep at `-e` (as the sweep runs them), the pairs between
//! hosts (as `pairs` runs them, more than one host), the hosts' NICs and CPUs, tune's
//! comparison of every collective's algorithms; right after the sweep, for a collective that
//! page-faulted, its point with the heap kept against the defaults (heap.rs). causes.rs draws
//! the conclusions, without MPI; cpus.rs reads the CPUs.

pub mod causes;
pub mod cpus;
pub mod heap;
pub mod plan;

use crate::collective::Kind;
use crate::error::{exit, Error, Result};
use crate::options::human_duration;
use crate::options::Options;
use crate::record::{Ceiling, Point, RunInfo};
use crate::size::human;
use crate::sweep::Sweep;
use crate::world::World;
use causes::{Alternative, Cause, Link, Nominal, Seen};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The bar when `--min-pct-of-ceiling` is not given.
pub const DEFAULT_MIN_PCT: f64 = 50.0;

/// `coll-bench doctor`'s options (from `crate::cli`): the sweep's, at one size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoctorOptions {
    pub sweep: Options,
    pub min_pct_of_ceiling: f64,
    pub json: Option<PathBuf>,
    /// `--max-time`: the time doctor fits its measurements in, seconds; 0: none (measure at -e).
    pub max_time_s: f64,
    /// `--progress`: a line on stderr as each phase starts.
    pub progress: bool,
}

/// doctor's JSON layout; a change that renames or removes a field changes it.
pub const SCHEMA: &str = "coll-bench-doctor/1";

/// One host and its ranks, as every JSON file of coll-bench writes hosts.
#[derive(Debug, Serialize)]
struct Host {
    name: String,
    ranks: Vec<usize>,
}

/// What doctor ran with (`run.options`).
#[derive(Debug, Serialize)]
struct Asked<'a> {
    collectives: Vec<String>,
    size_bytes: u64,
    dtype: String,
    budget_s: f64,
    min_pct_of_ceiling: f64,
    /// `--max-time`, seconds (0: none).
    max_time_s: f64,
    json: Option<&'a Path>,
}

/// How doctor fitted its run in `--max-time` (`plan`).
#[derive(Debug, Serialize)]
struct PlanJson<'a> {
    /// The size asked (`-e`) and the size measured at.
    asked_size_bytes: u64,
    size_bytes: u64,
    /// Why they differ, or why the algorithms were left out; `null` where nothing was.
    reason: Option<&'a str>,
    /// The probe's line: the ring's latency and rate.
    probe: &'a plan::Line,
    estimated_s: f64,
    phases: Vec<PhaseJson>,
    /// Collectives whose algorithms were not weighed (the time limit).
    algorithms_left_out: Vec<String>,
}

#[derive(Debug, Serialize)]
struct PhaseJson {
    name: &'static str,
    estimated_s: f64,
    seconds: f64,
}

/// `run`: the run's context, as the sweep's and step's.
#[derive(Debug, Serialize)]
struct Run<'a> {
    version: &'static str,
    timestamp: &'a str,
    backend: &'a str,
    backend_details: &'a [String],
    mpi_library: &'a str,
    ranks: usize,
    hosts: Vec<Host>,
    ceiling: Option<&'a Ceiling>,
    options: Asked<'a>,
    plan: PlanJson<'a>,
}

/// What doctor found, as `--json` writes it (docs/output.md, "doctor: JSON fields").
#[derive(Debug, Serialize)]
struct Findings<'a> {
    schema: &'static str,
    tool: &'static str,
    complete: bool,
    run: Run<'a>,
    collectives: &'a [Seen],
    links: &'a [Link],
    nominal: &'a [Nominal],
    cpus: &'a [cpus::HostCpus],
    alternatives: &'a [Alternative],
    calls: &'a [crate::tune::OtherCall],
    /// The heap kept against the defaults, per collective that page-faulted (heap.rs).
    heap: &'a [heap::HeapKept],
    causes: &'a [Cause],
    /// `ok` or `short`.
    verdict: &'static str,
    exit_code: i32,
    seconds: f64,
}

/// A point as doctor reads it.
fn seen(p: &Point, info: &RunInfo, hosts: &[String]) -> Seen {
    let m = &p.out_of_place;
    Seen {
        collective: p.collective,
        size_bytes: p.size_bytes,
        time_us: m.time_us,
        busbw_gbps: m.busbw_gbps,
        pct_of_ceiling: info.pct_of_ceiling(p, m.busbw_gbps),
        algorithm: p.algorithm.clone(),
        algorithm_source: p.algorithm_source.clone(),
        minor_faults_per_call: m.minor_faults_per_call,
        median_us: m.summary.median_us,
        p95_us: m.summary.p95_us,
        samples: m.summary.samples,
        slow_ranks: m
            .slow_ranks
            .iter()
            .map(|o| causes::SlowRank {
                rank: o.rank,
                host: hosts.get(o.rank).cloned().unwrap_or_default(),
                time_us: o.time_us,
                median_us: o.median_us,
            })
            .collect(),
    }
}

/// The probe: the ceiling pass at [`plan::PROBE_BYTES`] (each at most `-e`), as seconds per
/// sendrecv at each size, on every rank alike (the pass agrees its times).
fn probe(
    world: &World,
    backend: &mut dyn crate::backend::Backend,
    opts: &Options,
    links: &'static str,
) -> Result<plan::Line> {
    let mut points: Vec<(u64, f64)> = vec![];
    let mut at = |bytes: u64, points: &mut Vec<(u64, f64)>| -> Result<()> {
        let mut p = opts.clone();
        (p.min_bytes, p.max_bytes) = (bytes, bytes);
        if let Some(c) = Sweep::new(world, &mut *backend, &p).ceiling(links, &mut vec![])? {
            points.push((c.size_bytes, c.time_us * 1e-6));
        }
        Ok(())
    };
    for bytes in plan::PROBE_BYTES.map(|b| b.min(opts.max_bytes)) {
        if !points.iter().any(|(b, _)| *b == bytes) {
            at(bytes, &mut points)?;
        }
    }
    // A third size where the second was quick: a large message's rate (past the caches) is what
    // a large -e gets, and a quick link probes it in a fraction of a second.
    let large = plan::LARGE_PROBE_BYTES.min(opts.max_bytes);
    if points.last().is_some_and(|(b, t)| *b < large && *t < plan::QUICK_PROBE_S) {
        at(large, &mut points)?;
    }
    Ok(plan::Line::fit(&points))
}

/// The ceiling pass and the sweep at `opts`' one size, out of place: the points (rank 0's are
/// the reported ones), and whether any result was wrong.
fn sweep(
    world: &World,
    backend: &mut dyn crate::backend::Backend,
    opts: &Options,
    info: &mut RunInfo,
) -> Result<(Vec<Point>, bool)> {
    let mut points = vec![];
    let mut sweep = Sweep::new(world, backend, opts).out_of_place_only();
    let links = info.ring_links();
    info.ceiling = sweep.ceiling(links, &mut info.notes)?;
    let totals = sweep.run(&mut |p| {
        points.push(p.without_rank_times());
        Ok(())
    })?;
    Ok((points, totals.failed()))
}

/// Seconds since `t0` as rank 0 counts them, on every rank.
fn elapsed(world: &World, t0: f64) -> f64 {
    let mine = (mpi::time() - t0).to_le_bytes().to_vec();
    let b = world.broadcast_bytes(0, mine);
    f64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]))
}

/// The whole subcommand, on every rank, once the options are agreed.
pub fn run(world: &World, o: &DoctorOptions) -> Result<i32> {
    let t0 = mpi::time();
    if world.size < 2 {
        return world.agree(Err(Error::usage(
            "doctor: a world of 1 rank has no links to weigh; expected at least 2 ranks (mpirun -n 2 or more)",
        )));
    }
    world.agree(o.sweep.validate_for_world(world.size))?;
    world.agree(crate::backend::mpi::known_faults(world, &o.sweep))?;
    // The JSON's path first: a run that would fail on it fails before anything is measured.
    let outputs: Vec<(&str, &Path)> = o.json.iter().map(|p| ("doctor --json", p.as_path())).collect();
    crate::setup::check_outputs(world, &outputs, &[], o.sweep.files)?;
    crate::setup::claim_outputs(world, &outputs, o.sweep.files)?;
    crate::report::interrupted::arm(world.rank, Some(&[]));
    say(world, &format!("# coll-bench {} doctor: {}", env!("CARGO_PKG_VERSION"), what(world, o)));
    let limit_s = if o.max_time_s > 0.0 { o.max_time_s } else { f64::INFINITY };
    let progress = |phase: &str| {
        if o.progress && world.rank == 0 {
            eprintln!("# doctor: {:.1} s: {phase}", mpi::time() - t0);
        }
    };

    // The probe, then the plan: the size, the phases, their estimates.
    let mut asked = o.sweep.clone();
    let (mut backend, note) = crate::setup::ready_backend(world, &mut asked)?;
    let mut info =
        crate::setup::run_info(world, backend.as_ref(), &asked, &chrono::Utc::now(), note.into_iter().collect());
    progress("probe: sendrecv around the ring at two small sizes");
    let line = probe(world, backend.as_mut(), &asked, info.ring_links())?;
    let hosts = world.ranks_by_host();
    let shape = plan::Shape {
        ranks: world.size,
        collectives: crate::tune::candidate_counts(world, &asked.collectives)?,
        pair_rounds: if hosts.len() > 1 {
            crate::pairs::schedule::Pairing::rounds(&crate::pairs::schedule::ByHost::new(&world.hosts))
        } else {
            0
        },
        budget_s: asked.budget_s,
        warmup: asked.warmup,
        iters: asked.iters,
        check: asked.check,
    };
    let left_s = limit_s - elapsed(world, t0);
    let choice = plan::choose(&line, &shape, asked.max_bytes, left_s, limit_s);
    let size = choice.estimate.size_bytes;
    say(world, &plan_line(&choice, limit_s, mpi::time() - t0));
    if let Some(r) = &choice.reason {
        say(world, &format!("# size: {}: {r}", human(size)));
    }
    let mut opts = asked.clone();
    (opts.min_bytes, opts.max_bytes) = (size, size);
    let mut spent: Vec<(&'static str, f64)> = vec![];
    let mut lap = {
        let mut at = mpi::time();
        move |name: &'static str, spent: &mut Vec<(&'static str, f64)>| {
            let now = mpi::time();
            spent.push((name, now - at));
            at = now;
        }
    };
    lap("probe", &mut spent);

    progress(&format!("ceiling and collectives at {}", human(size)));
    let (points, wrong) = sweep(world, backend.as_mut(), &opts, &mut info)?;
    lap("ceiling and collectives", &mut spent);
    // The heap kept against the defaults, for the collectives that page-faulted, before any
    // allocator advice (heap.rs): at once, on the same buffers, while the process's heap is the
    // one the faults were counted in (later phases change it), and only within the time left.
    // Decided on rank 0.
    let faulted = |p: &Point| p.out_of_place.minor_faults_per_call.is_some_and(|f| f >= heap::FAULTS_NOTED);
    let heap_est: f64 = points
        .iter()
        .filter(|p| faulted(p))
        .map(|p| 2.0 * (1.3 * opts.budget_s + 20.0 * p.out_of_place.time_us * 1e-6))
        .sum();
    let heap_go = elapsed(world, t0) + heap_est <= limit_s;
    let mine: Vec<u8> =
        points.iter().enumerate().filter(|(_, p)| heap_go && faulted(p)).map(|(i, _)| i as u8).collect();
    let heap_kinds: Vec<Kind> = world
        .broadcast_bytes(0, mine)
        .iter()
        .filter_map(|&i| points.get(usize::from(i)).map(|p| p.collective))
        .collect();
    if !heap_kinds.is_empty() {
        progress(&format!(
            "the heap kept against the defaults at {} (estimated {})",
            human(size),
            human_duration(heap_est)
        ));
    }
    let heap = heap::measure(world, backend.as_mut(), &opts, &heap_kinds)?;
    let heap_ran = !heap_kinds.is_empty();
    lap("heap", &mut spent);
    drop(backend);
    let links = if hosts.len() > 1 {
        progress(&format!("pairs between hosts at {}", human(size.min(crate::pairs::links::LINK_BYTES))));
        crate::pairs::links::measure(world, size, opts.budget_s, opts.files)
    } else {
        vec![]
    };
    lap("pairs", &mut spent);
    // Read once: every host's rate for the link causes, and beside the ceiling between hosts as
    // the sweep's (`nic::beside`) gives it.
    progress("hosts: NICs, CPUs, memory");
    let nominal = crate::nic::nominal_rates(world);
    if let Some(c) = info.ceiling.as_mut().filter(|c| c.links == RunInfo::BETWEEN_HOSTS) {
        c.nominal = nominal.clone();
    }
    let host_cpus = cpus::gather(world);
    lap("hosts", &mut spent);
    let seen: Vec<Seen> = points.iter().map(|p| seen(p, &info, &world.hosts)).collect();
    // Every collective's algorithms, short or not: a faster one is a finding either way. Planned
    // again from the collectives' own calls (the probe's line may have been kind), at a smaller
    // size where that one would not fit what is left; each collective while the limit allows.
    // Decided on rank 0, for every rank.
    let left_s = limit_s - elapsed(world, t0);
    let calls: Vec<(Kind, f64)> = points.iter().map(|p| (p.collective, p.out_of_place.time_us * 1e-6)).collect();
    let replanned = if choice.algorithms { plan::algorithms_at(&shape, size, &calls, left_s) } else { None };
    let alg_size = {
        let mine = replanned.as_ref().map_or(0, |r| r.0).to_le_bytes().to_vec();
        let b = world.broadcast_bytes(0, mine);
        u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]))
    };
    let alg_est = replanned.map(|r| r.1).unwrap_or_default();
    let mut alg_note = None;
    if choice.algorithms && alg_size != size {
        let all: f64 =
            plan::algorithms_at(&shape, size, &calls, f64::INFINITY).map_or(0.0, |r| r.1.iter().map(|e| e.1).sum());
        alg_note = Some(format!(
            "the algorithms at {} would take about {} (from the collectives' calls), beyond the {} left of the {} limit: {}",
            human(size),
            human_duration(all),
            human_duration(left_s.max(0.0)),
            human_duration(limit_s),
            if alg_size > 0 { format!("weighed at {}", human(alg_size)) } else { "not weighed".into() }
        ));
    }
    let mut alg_opts = opts.clone();
    (alg_opts.min_bytes, alg_opts.max_bytes) = (alg_size.max(8), alg_size.max(8));
    let mut left_out: Vec<Kind> = vec![];
    let mut go_on = |kind: Kind| {
        let est = alg_est.iter().find(|a| a.0 == kind).map_or(0.0, |a| a.1);
        let go = {
            let mine = vec![u8::from(alg_size > 0 && elapsed(world, t0) + est <= limit_s)];
            world.broadcast_bytes(0, mine)[0] == 1
        };
        if go {
            progress(&format!("algorithms of {kind} at {} (estimated {})", human(alg_size), human_duration(est)));
        } else {
            left_out.push(kind);
        }
        go
    };
    let measured = crate::tune::alternatives(world, &alg_opts, &mut go_on)?;
    lap("algorithms", &mut spent);
    let calls = measured.calls;
    let alternatives: Vec<Alternative> = measured
        .algorithms
        .into_iter()
        .map(|m| {
            let median =
                measured.median_fastest.iter().find(|f| f.collective == m.kind && f.size_bytes == m.size_bytes);
            Alternative {
                collective: m.kind,
                size_bytes: m.size_bytes,
                default_us: m.default_us,
                fastest: m.algorithm,
                fastest_us: m.chosen_us,
                fastest_slowest_round_us: m.chosen_hi_us,
                median_fastest: median.map(|f| f.algorithm.clone()),
                median_fastest_us: median.map(|f| f.us),
                median_fastest_slowest_round_us: median.map(|f| f.slowest_round_us),
                default_fastest_round_us: median.map(|f| f.default_fastest_round_us),
            }
        })
        .collect();
    if world.rank != 0 {
        let code = world.max_u64(0);
        return world.agree(Ok(code as i32));
    }
    let boot_id = |h: &str| host_cpus.iter().find(|c| c.host == h).and_then(|c| c.boot_id.clone());
    let shares_machine = |a: &str, b: &str| a == b || boot_id(a).is_some_and(|x| Some(x) == boot_id(b));
    let mut all = causes::link_causes(&links, &nominal, &shares_machine);
    all.extend(cpus::cpu_causes(&host_cpus));
    all.extend(causes::point_causes(&seen, &alternatives, &heap, crate::memory::fault_cost_us()));
    all.extend(causes::call_causes(&calls));
    let ranked = causes::rank(all);
    let below: Vec<&Seen> =
        seen.iter().filter(|s| s.pct_of_ceiling.is_some_and(|p| p < o.min_pct_of_ceiling)).collect();
    let ceiling_short = ranked.iter().any(|c| c.short);
    let code = if wrong || !below.is_empty() || ceiling_short { exit::WRONG } else { exit::OK };
    let seconds = mpi::time() - t0;
    print_page(o, &info, &seen, &ranked, &below, wrong, code, seconds, (&left_out, alg_note.as_deref()), limit_s);
    let written = match &o.json {
        Some(path) => {
            let f = Findings {
                schema: SCHEMA,
                tool: "coll-bench",
                complete: true,
                run: Run {
                    version: env!("CARGO_PKG_VERSION"),
                    timestamp: &info.timestamp,
                    backend: &info.backend,
                    backend_details: &info.backend_details,
                    mpi_library: &world.library_version,
                    ranks: world.size,
                    hosts: hosts.into_iter().map(|(name, ranks)| Host { name, ranks }).collect(),
                    ceiling: info.ceiling.as_ref(),
                    options: Asked {
                        collectives: opts.collectives.iter().map(|k| k.to_string()).collect(),
                        size_bytes: opts.max_bytes,
                        dtype: opts.dtypes.first().map(|d| d.to_string()).unwrap_or_default(),
                        budget_s: opts.budget_s,
                        min_pct_of_ceiling: o.min_pct_of_ceiling,
                        max_time_s: o.max_time_s,
                        json: Some(path.as_path()),
                    },
                    plan: PlanJson {
                        asked_size_bytes: asked.max_bytes,
                        size_bytes: size,
                        reason: choice.reason.as_deref(),
                        probe: &line,
                        estimated_s: choice.estimate.total_s(),
                        phases: choice
                            .estimate
                            .phases
                            .iter()
                            .map(|p| PhaseJson {
                                name: p.name,
                                estimated_s: p.estimated_s,
                                seconds: spent.iter().find(|s| s.0 == p.name).map_or(0.0, |s| s.1),
                            })
                            .chain(heap_ran.then(|| PhaseJson {
                                name: "heap",
                                estimated_s: heap_est,
                                seconds: spent.iter().find(|s| s.0 == "heap").map_or(0.0, |s| s.1),
                            }))
                            .collect(),
                        algorithms_left_out: left_out.iter().map(|k| k.to_string()).collect(),
                    },
                },
                collectives: &seen,
                links: &links,
                nominal: &nominal,
                cpus: &host_cpus,
                alternatives: &alternatives,
                calls: &calls,
                heap: &heap,
                causes: &ranked,
                verdict: if code == exit::OK { "ok" } else { "short" },
                exit_code: code,
                seconds,
            };
            let mut text = serde_json::to_string_pretty(&f).map_err(|e| Error::setup(format!("doctor --json: {e}")))?;
            text.push('\n');
            crate::report::outfile::replace("doctor --json", path, text.as_bytes(), opts.files)
                .map(|_| crate::outln!("{}", crate::report::written_line(path, "JSON")))
        }
        None => Ok(()),
    };
    world.max_u64(code as u64);
    world.agree(written.map(|_| code))
}

/// Print on rank 0.
fn say(world: &World, line: &str) {
    if world.rank == 0 {
        use std::io::Write;
        let mut out = crate::report::stdout::out();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// The run in one line: ranks, hosts, collectives, size, bar.
fn what(world: &World, o: &DoctorOptions) -> String {
    let hosts = world.ranks_by_host();
    let names: Vec<String> = o.sweep.collectives.iter().map(|k| k.to_string()).collect();
    format!(
        "{} ranks on {} host(s), {} at {} ({}), bar {}% of the ceiling, {}",
        world.size,
        hosts.len(),
        names.join(", "),
        human(o.sweep.max_bytes),
        o.sweep.dtypes.first().map(|d| d.to_string()).unwrap_or_default(),
        o.min_pct_of_ceiling,
        if o.max_time_s > 0.0 {
            format!("time limit {} (--max-time)", human_duration(o.max_time_s))
        } else {
            "no time limit (--max-time 0)".to_string()
        }
    )
}

/// The plan in one line: each phase's estimate and the total against the limit.
fn plan_line(c: &plan::Choice, limit_s: f64, probe_s: f64) -> String {
    let phases: Vec<String> = c
        .estimate
        .phases
        .iter()
        .filter(|p| c.algorithms || p.name != "algorithms")
        .map(|p| format!("{} {}", p.name, human_duration(p.estimated_s)))
        .collect();
    let total = probe_s + if c.algorithms { c.estimate.total_s() } else { c.estimate.without_algorithms_s() };
    format!(
        "# plan: at {}: probe {} (done), {}; estimated {}{}",
        human(c.estimate.size_bytes),
        human_duration(probe_s),
        phases.join(", "),
        human_duration(total),
        if limit_s.is_finite() { format!(" of the {} limit", human_duration(limit_s)) } else { String::new() }
    )
}

#[allow(clippy::too_many_arguments)]
fn print_page(
    o: &DoctorOptions,
    info: &RunInfo,
    seen: &[Seen],
    ranked: &[Cause],
    below: &[&Seen],
    wrong: bool,
    code: i32,
    seconds: f64,
    (left_out, alg_note): (&[Kind], Option<&str>),
    limit_s: f64,
) {
    crate::outln!("# MPI library: {}", info.mpi_library);
    match &info.ceiling {
        Some(c) => crate::outln!(
            "# ceiling: {} GB/s, {}: sendrecv of {} around the ring, {}, median of {} repeat(s), spread {:.0}%{}",
            c.shown_gbps(),
            c.source,
            human(c.size_bytes),
            c.links,
            c.repeats,
            c.spread_pct,
            if c.uncertain() {
                ": uncertain (the machine changed speed during the pass), so %ceil and SHORT below may be the ceiling's error"
            } else {
                ""
            }
        ),
        None => crate::outln!("# ceiling: none (buffers too small for the pass)"),
    }
    crate::outln!(
        "# {:<14} {:>12} {:>6}  {:<32} {:>11} {:>7}  verdict",
        "collective",
        "busbw (GB/s)",
        "%ceil",
        "algorithm (how known)",
        "faults/call",
        "spread"
    );
    for s in seen {
        let pct = s.pct_of_ceiling.map(|p| format!("{p:.0}")).unwrap_or_else(|| "-".into());
        let faults = s.minor_faults_per_call.map(|f| format!("{f:.1}")).unwrap_or_else(|| "-".into());
        let spread =
            if s.median_us > 0.0 { format!("{:.0}%", (s.p95_us / s.median_us - 1.0) * 100.0) } else { "-".into() };
        let verdict = match s.pct_of_ceiling {
            Some(p) if p < o.min_pct_of_ceiling => "SHORT",
            Some(_) => "ok",
            None => "no ceiling",
        };
        crate::outln!(
            "  {:<14} {:>12} {:>6}  {:<32} {:>11} {:>7}  {verdict}",
            s.collective.to_string(),
            crate::record::shown_gbps(s.busbw_gbps),
            pct,
            format!("{} ({})", s.algorithm, s.algorithm_source),
            faults,
            spread
        );
    }
    let bar = info.ceiling.as_ref().map_or(Ceiling::ABOVE * 100.0, Ceiling::above_pct);
    let above: Vec<String> = seen
        .iter()
        .filter(|s| s.pct_of_ceiling.is_some_and(|p| p > bar))
        .map(|s| format!("{} {:.0}%", s.collective, s.pct_of_ceiling.unwrap_or(f64::NAN)))
        .collect();
    if !above.is_empty() {
        crate::outln!(
            "# above the ceiling: {}: more than {:.0}% of it, so the ceiling (point-to-point around the ring) is not what limits them here; their %ceil says little (docs/output.md, \"The ceiling\")",
            above.join(", "),
            bar
        );
    }
    if let Some(n) = alg_note {
        crate::outln!("# algorithms: {n}");
    }
    if !left_out.is_empty() && alg_note.is_none_or(|n| !n.ends_with("not weighed")) {
        let names: Vec<String> = left_out.iter().map(|k| k.to_string()).collect();
        crate::outln!(
            "# algorithms not weighed: {}: the {} limit (--max-time) left no time for them; the causes below rank what was measured",
            names.join(", "),
            human_duration(limit_s)
        );
    }
    if ranked.is_empty() {
        crate::outln!(
            "# causes: none found (links and hosts alike, no faster algorithm, no page faults, little spread)"
        );
    } else {
        crate::outln!("# causes, most likely first (share: the part of the time each would save, or explains):");
        for (i, c) in ranked.iter().enumerate() {
            let off = c.share_uncertainty.map(|u| format!(" ±{:.0}%", u * 100.0)).unwrap_or_default();
            crate::outln!(
                "  {}. {:<9} {:<24} {:>4.0}%{off} ({}): {}",
                i + 1,
                c.cause,
                c.subject,
                c.share * 100.0,
                c.share_source,
                c.evidence
            );
            if let Some(r) = &c.remedy {
                crate::outln!("     next: {r}");
            }
        }
    }
    let uncertain = match &info.ceiling {
        Some(c) if c.uncertain() => {
            format!(", a ceiling whose {} repeats spread {:.0}%: measure again to confirm", c.repeats, c.spread_pct)
        }
        _ => String::new(),
    };
    let mut why: Vec<String> = below
        .iter()
        .map(|s| {
            let pct = s.pct_of_ceiling.unwrap_or(f64::NAN);
            format!("{} at {pct:.0}% of the ceiling (bar {}%{uncertain})", s.collective, o.min_pct_of_ceiling)
        })
        .collect();
    why.extend(ranked.iter().filter(|c| c.short).map(|c| format!("{} {} slower than its peers", c.cause, c.subject)));
    if wrong {
        why.push("a wrong result".into());
    }
    let took = if limit_s.is_finite() {
        format!("{seconds:.1} s of the {} limit", human_duration(limit_s))
    } else {
        format!("{seconds:.1} s")
    };
    if code == exit::OK {
        crate::outln!(
            "# verdict: ok: every collective at {}% of the ceiling or more, links and hosts alike ({took})",
            o.min_pct_of_ceiling
        );
    } else {
        crate::outln!("# verdict: SHORT: {} ({took})", why.join("; "));
    }
}
