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
//! hosts (as `pairs` runs them, more than one host), the hosts' NICs and CPUs, then tune's
//! comparison of every collective's algorithms. causes.rs draws the conclusions, without MPI;
//! cpus.rs reads the CPUs.

pub mod causes;
pub mod cpus;

use crate::error::{exit, Error, Result};
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
    json: Option<&'a Path>,
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

/// The sweep at doctor's size with its ceiling: the points (rank 0's are the reported ones), the
/// run's context, and whether any result was wrong.
fn sweep(world: &World, opts: &Options) -> Result<(Vec<Point>, RunInfo, bool)> {
    let mut opts = opts.clone();
    let (mut backend, note) = crate::setup::ready_backend(world, &mut opts)?;
    let mut info =
        crate::setup::run_info(world, backend.as_ref(), &opts, &chrono::Utc::now(), note.into_iter().collect());
    let mut points = vec![];
    let mut sweep = Sweep::new(world, backend.as_mut(), &opts);
    let links = info.ring_links();
    info.ceiling = sweep.ceiling(links, &mut info.notes)?;
    let totals = sweep.run(&mut |p| {
        points.push(p.without_rank_times());
        Ok(())
    })?;
    Ok((points, info, totals.failed()))
}

/// The whole subcommand, on every rank, once the options are agreed.
pub fn run(world: &World, o: &DoctorOptions) -> Result<i32> {
    let t0 = mpi::time();
    if world.size < 2 {
        return world.agree(Err(Error::usage(
            "doctor: a world of 1 rank has no links to weigh; expected at least 2 ranks (mpirun -n 2 or more)",
        )));
    }
    let opts = &o.sweep;
    world.agree(opts.validate_for_world(world.size))?;
    world.agree(crate::backend::mpi::known_faults(world, opts))?;
    // The JSON's path first: a run that would fail on it fails before anything is measured.
    let outputs: Vec<(&str, &Path)> = o.json.iter().map(|p| ("doctor --json", p.as_path())).collect();
    crate::setup::check_outputs(world, &outputs, &[], opts.files)?;
    crate::report::interrupted::arm(world.rank, Some(&[]));
    say(world, &format!("# coll-bench {} doctor: {}", env!("CARGO_PKG_VERSION"), what(world, o)));

    let (points, mut info, wrong) = sweep(world, opts)?;
    let hosts = world.ranks_by_host();
    let links = if hosts.len() > 1 {
        crate::pairs::links::measure(world, opts.max_bytes, opts.budget_s, opts.files)
    } else {
        vec![]
    };
    // Read once: every host's rate for the link causes, and beside the ceiling between hosts as
    // the sweep's (`nic::beside`) gives it.
    let nominal = crate::nic::nominal_rates(world);
    if let Some(c) = info.ceiling.as_mut().filter(|c| c.links == RunInfo::BETWEEN_HOSTS) {
        c.nominal = nominal.clone();
    }
    let host_cpus = cpus::gather(world);
    let seen: Vec<Seen> = points.iter().map(|p| seen(p, &info, &world.hosts)).collect();
    // Every collective's algorithms, short or not: a faster one is a finding either way.
    let measured = crate::tune::alternatives(world, opts)?;
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
    let mut all = causes::link_causes(&links, &nominal);
    all.extend(cpus::cpu_causes(&host_cpus));
    all.extend(causes::point_causes(&seen, &alternatives, crate::memory::fault_cost_us()));
    all.extend(causes::call_causes(&calls));
    let ranked = causes::rank(all);
    let below: Vec<&Seen> =
        seen.iter().filter(|s| s.pct_of_ceiling.is_some_and(|p| p < o.min_pct_of_ceiling)).collect();
    let ceiling_short = ranked.iter().any(|c| c.short);
    let code = if wrong || !below.is_empty() || ceiling_short { exit::WRONG } else { exit::OK };
    let seconds = mpi::time() - t0;
    print_page(o, &info, &seen, &ranked, &below, wrong, code, seconds);
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
                        json: Some(path.as_path()),
                    },
                },
                collectives: &seen,
                links: &links,
                nominal: &nominal,
                cpus: &host_cpus,
                alternatives: &alternatives,
                calls: &calls,
                causes: &ranked,
                verdict: if code == exit::OK { "ok" } else { "short" },
                exit_code: code,
                seconds,
            };
            let mut text = serde_json::to_string_pretty(&f).map_err(|e| Error::setup(format!("doctor --json: {e}")))?;
            text.push('\n');
            crate::report::outfile::replace("doctor --json", path, text.as_bytes(), opts.files, false)
                .map(|_| println!("{}", crate::report::written_line(path, "JSON")))
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
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// The run in one line: ranks, hosts, collectives, size, bar.
fn what(world: &World, o: &DoctorOptions) -> String {
    let hosts = world.ranks_by_host();
    let names: Vec<String> = o.sweep.collectives.iter().map(|k| k.to_string()).collect();
    format!(
        "{} ranks on {} host(s), {} at {} ({}), bar {}% of the ceiling",
        world.size,
        hosts.len(),
        names.join(", "),
        human(o.sweep.max_bytes),
        o.sweep.dtypes.first().map(|d| d.to_string()).unwrap_or_default(),
        o.min_pct_of_ceiling
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
) {
    println!("# MPI library: {}", info.mpi_library);
    match &info.ceiling {
        Some(c) => println!(
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
        None => println!("# ceiling: none (buffers too small for the pass)"),
    }
    println!(
        "# {:<14} {:>12} {:>6}  {:<32} {:>11} {:>7}  verdict",
        "collective", "busbw (GB/s)", "%ceil", "algorithm (how known)", "faults/call", "spread"
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
        println!(
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
        println!(
            "# above the ceiling: {}: more than {:.0}% of it, so the ceiling (point-to-point around the ring) is not what limits them here; their %ceil says little (docs/output.md, \"The ceiling\")",
            above.join(", "),
            bar
        );
    }
    if ranked.is_empty() {
        println!("# causes: none found (links and hosts alike, no faster algorithm, no page faults, little spread)");
    } else {
        println!("# causes, most likely first (share: the part of the time each would save, or explains):");
        for (i, c) in ranked.iter().enumerate() {
            println!(
                "  {}. {:<9} {:<24} {:>4.0}% ({}): {}",
                i + 1,
                c.cause,
                c.subject,
                c.share * 100.0,
                c.share_source,
                c.evidence
            );
            if let Some(r) = &c.remedy {
                println!("     next: {r}");
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
    if code == exit::OK {
        println!(
            "# verdict: ok: every collective at {}% of the ceiling or more, links and hosts alike ({seconds:.1} s)",
            o.min_pct_of_ceiling
        );
    } else {
        println!("# verdict: SHORT: {} ({seconds:.1} s)", why.join("; "));
    }
}
