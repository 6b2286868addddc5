//! `coll-bench pairs`: point-to-point latency and bandwidth between every pair of ranks, in
//! tournament rounds of disjoint pairs (n−1 rounds, not n²/2 runs one by one); names the slowest
//! pairs and the hosts that appear in most of them, and writes the full matrix to CSV a round at
//! a time. Rank 0 holds one round and a bounded summary ([`tally`]), whatever the rank count.

pub mod links;
pub mod measure;
pub mod schedule;
pub mod tally;
mod types;

use crate::error::{Error, Result};
use crate::options::CsvTarget;
use crate::size::human;
use crate::world::World;
use schedule::Schedule;
use std::io::Write;
use tally::{Tally, Verdict};
pub use types::{PairResult, PairsOptions};

/// The CSV's columns.
const CSV_HEAD: [&str; 9] = [
    "rank_a",
    "rank_b",
    "host_a",
    "host_b",
    "round",
    "latency_us",
    "bandwidth_gbps",
    "latency_bytes",
    "bandwidth_bytes",
];

/// One round's rows, each row whole.
fn write_rows(
    file: &mut crate::report::AppendFile,
    pairs: &[PairResult],
    hosts: &[String],
    opts: &PairsOptions,
) -> Result<()> {
    for p in pairs {
        crate::report::csv::append_record(
            file,
            "--csv",
            &[
                p.a.to_string(),
                p.b.to_string(),
                hosts[p.a].clone(),
                hosts[p.b].clone(),
                p.round.to_string(),
                p.latency_us.to_string(),
                p.bandwidth_gbps.to_string(),
                opts.latency_bytes.to_string(),
                opts.bandwidth_bytes.to_string(),
            ],
        )?;
    }
    Ok(())
}

/// The whole subcommand, on every rank, after the options are agreed.
pub fn run(world: &World, opts: &PairsOptions) -> Result<i32> {
    if world.size < 2 {
        return world.agree(Err(Error::usage(
            "pairs: a world of 1 rank has no pairs; expected at least 2 ranks (mpirun -n 2 or more)",
        )));
    }
    // The CSV's path first: a run that would fail on it fails before anything is measured.
    let checked = match (&opts.csv, world.rank) {
        (CsvTarget::Path(p), 0) => crate::report::outfile::check(&[("pairs --csv", p)], &[], opts.files),
        _ => Ok(()),
    };
    world.agree(checked)?;
    let per_rank = opts.latency_bytes + opts.bandwidth_bytes + crate::memory::OVERHEAD_BYTES;
    crate::setup::fit_memory(world, "pairs -e/--bandwidth-bytes", per_rank)?;
    let now = chrono::Utc::now();
    // Created before measuring (exclusively: a default name never collides), written a round at a time.
    let created = match world.rank {
        0 => crate::report::outputs::open_csv((&opts.csv).into(), "pairs --csv", "coll-bench-pairs", &now, opts.files),
        _ => Ok(None),
    };
    let mut csv_file = world.agree(created)?;
    let head =
        csv_file.as_mut().map_or(Ok(()), |f| crate::report::csv::append_record(f, "--csv", CSV_HEAD.map(String::from)));
    world.agree(head)?;
    // SIGINT/SIGTERM from here on: rank 0 names the CSV, whole rows of the rounds done.
    let files: Vec<(std::path::PathBuf, &str)> =
        csv_file.iter().map(|f| (f.real_path().to_path_buf(), "CSV, a round at a time")).collect();
    crate::report::interrupted::arm(world.rank, Some(&files));

    let schedule = if opts.sequential { Schedule::Sequential(world.size) } else { Schedule::Tournament(world.size) };
    let mut tally = Tally::new(if world.rank == 0 { &world.hosts } else { &[] }, opts.top);
    let t0 = mpi::time();
    let measured = measure::rounds(world, opts, &schedule, |pairs| {
        tally.add(&pairs);
        csv_file.as_mut().map_or(Ok(()), |f| write_rows(f, &pairs, &world.hosts, opts))
    });
    let elapsed = mpi::time() - t0;
    if world.rank != 0 || measured.is_err() {
        return world.agree(measured.map(|_| crate::error::exit::OK));
    }
    print_report(&mut crate::report::stdout::out(), &world.hosts, opts, &tally.verdict(opts.top), schedule, elapsed);
    if let Some(f) = &csv_file {
        crate::outln!("{}", crate::report::written_line(f.real_path(), "CSV"));
    }
    world.agree(Ok(crate::error::exit::OK))
}

/// The heading of the slow pairs' list: abnormal ones (below half the median bandwidth), or,
/// when none is, that none is and these are only the slowest.
fn slow_heading(v: &Verdict) -> String {
    let median = if v.table.is_some() {
        format!("{:.3} GB/s", v.median_gbps)
    } else {
        format!("about {:.3} GB/s, from the summary", v.median_gbps)
    };
    if v.slow > 0 {
        let more = if v.slow > v.listed.len() {
            format!(" {}, the {} slowest listed:", v.slow, v.listed.len())
        } else {
            String::new()
        };
        format!("Slow pairs (below half the median bandwidth of {median}):{more}")
    } else {
        format!(
            "None abnormal: no pair below half the median bandwidth of {median}; the {} slowest for reference:",
            v.listed.len()
        )
    }
}

/// The report of ranks on `hosts` (by rank).
fn print_report(
    out: &mut dyn Write,
    hosts: &[String],
    opts: &PairsOptions,
    v: &Verdict,
    schedule: Schedule,
    elapsed: f64,
) {
    let mut distinct = hosts.to_vec();
    distinct.sort();
    distinct.dedup();
    let _ = writeln!(
        out,
        "# coll-bench {} pairs: {} ranks on {} host(s), {} pairs in {} {}; latency with {}-byte messages, bandwidth with {}-byte messages (one way, ping-pong)",
        env!("CARGO_PKG_VERSION"),
        hosts.len(),
        distinct.len(),
        v.pairs,
        schedule.rounds(),
        schedule.rounds_name(),
        human(opts.latency_bytes),
        human(opts.bandwidth_bytes)
    );
    match &v.table {
        Some(table) => {
            let _ = writeln!(out, "#  rank  rank  host -> host                      latency (us)  bandwidth (GB/s)");
            for p in table {
                let _ = writeln!(
                    out,
                    "{:>7} {:>5}  {:<32}  {:>12.2}  {:>16.3}",
                    p.a,
                    p.b,
                    format!("{} -> {}", hosts[p.a], hosts[p.b]),
                    p.latency_us,
                    p.bandwidth_gbps
                );
            }
        }
        None => {
            let whole = if opts.csv != CsvTarget::Off { "every pair is in the CSV" } else { "--csv writes every pair" };
            let _ = writeln!(
                out,
                "# No table: it is printed up to {} pairs (128 ranks); {whole}. The median and the slow pairs come from a summary of every pair in bins of 1.1%",
                tally::KEPT
            );
        }
    }
    if v.listed.is_empty() {
        let _ = writeln!(out, "# Took {elapsed:.2} s");
        return;
    }
    let _ = writeln!(out, "# {}", slow_heading(v));
    for p in &v.listed {
        let _ = writeln!(
            out,
            "#   {} ({}) <-> {} ({}): {:.3} GB/s, {:.2} us",
            p.a, hosts[p.a], p.b, hosts[p.b], p.bandwidth_gbps, p.latency_us
        );
    }
    let of = if v.slow > 0 { v.slow } else { v.listed.len() };
    let mut named: Vec<String> =
        v.hosts.iter().take(tally::HOSTS_NAMED).map(|(h, n)| format!("{h} ({n} of {of})")).collect();
    if v.hosts.len() > tally::HOSTS_NAMED {
        named.push(format!("and {} more host(s)", v.hosts.len() - tally::HOSTS_NAMED));
    }
    let _ = writeln!(out, "# Hosts in the slowest pairs: {}", named.join(", "));
    let _ = writeln!(out, "# Took {elapsed:.2} s");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Beyond the pairs kept one by one: no table, the median "about", the slow pairs counted
    /// with the slowest listed, the hosts named up to ten and the rest counted.
    #[test]
    fn the_summary_s_report_says_what_it_is() {
        let hosts: Vec<String> = (0..64).map(|r| format!("n{:02}", r / 2)).collect();
        let opts = PairsOptions {
            latency_bytes: 8,
            bandwidth_bytes: 1 << 20,
            budget_s: 0.02,
            top: 5,
            sequential: false,
            csv: CsvTarget::Default,
            files: Default::default(),
        };
        let schedule = Schedule::Tournament(64);
        let mut t = tally::Tally::keeping(&hosts, 5, 10);
        for r in 0..schedule.rounds() {
            let round: Vec<PairResult> = schedule
                .round(r)
                .into_iter()
                .map(|(a, b)| {
                    let slow = (a / 2 == 7) != (b / 2 == 7);
                    let gbps = if slow { 0.1 } else { 5.0 + (a + b) as f64 / 1000.0 };
                    PairResult { a, b, round: r, latency_us: 2.0, bandwidth_gbps: gbps }
                })
                .collect();
            t.add(&round);
        }
        let mut out = vec![];
        print_report(&mut out, &hosts, &opts, &t.verdict(5), schedule, 1.5);
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].contains(": 64 ranks on 32 host(s), 2016 pairs in 63 tournament rounds;"), "{out}");
        assert!(
            lines[1].starts_with("# No table: it is printed up to 8192 pairs (128 ranks); every pair is in the CSV."),
            "{out}"
        );
        assert!(
            lines[2].starts_with("# Slow pairs (below half the median bandwidth of about 5.0")
                && lines[2].ends_with(" GB/s, from the summary): 124, the 100 slowest listed:"),
            "{out}"
        );
        assert_eq!(lines.iter().filter(|l| l.starts_with("#   ") && l.contains(": 0.100 GB/s, 2.00 us")).count(), 100);
        assert_eq!(
            lines[103],
            "# Hosts in the slowest pairs: n07 (124 of 124), n00 (4 of 124), n01 (4 of 124), n02 (4 of 124), n03 (4 of 124), n04 (4 of 124), n05 (4 of 124), n06 (4 of 124), n08 (4 of 124), n09 (4 of 124), and 22 more host(s)"
        );
        assert_eq!(lines[104], "# Took 1.50 s");
    }
}
