//! `coll-bench pairs`: point-to-point latency and bandwidth between every pair of ranks, in
//! tournament rounds of disjoint pairs (n−1 rounds, not n²/2 runs one by one); names the slowest
//! pairs and the hosts that appear in most of them, and writes the full matrix to CSV.

pub mod links;
pub mod schedule;

use crate::error::{Error, Result};
use crate::size::human;
use crate::world::World;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;

/// `coll-bench pairs`'s options (from `crate::cli`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairsOptions {
    pub latency_bytes: u64,
    pub bandwidth_bytes: u64,
    pub budget_s: f64,
    pub top: usize,
    pub sequential: bool,
    pub csv: Option<Option<PathBuf>>,
    pub files: crate::report::Policy,
}

/// One measured pair.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PairResult {
    pub a: usize,
    pub b: usize,
    pub round: usize,
    pub latency_us: f64,
    pub bandwidth_gbps: f64,
}

/// Ping-pong `iters` round trips of `buf` with `peer`; the initiator returns the one-way time
/// per message in seconds. The count travels first, so both sides run the same loop.
fn ping_pong(world: &World, peer: usize, initiator: bool, buf: &mut [u8], iters: u64) -> f64 {
    if initiator {
        world.send_bytes(peer, &iters.to_le_bytes());
        let t0 = mpi::time();
        for _ in 0..iters {
            world.send_bytes(peer, buf);
            world.recv_bytes(peer, buf);
        }
        (mpi::time() - t0) / iters as f64 / 2.0
    } else {
        let mut n = [0u8; 8];
        world.recv_bytes(peer, &mut n);
        for _ in 0..u64::from_le_bytes(n) {
            world.recv_bytes(peer, buf);
            world.send_bytes(peer, buf);
        }
        0.0
    }
}

/// Warm up, pick a count from the budget, measure: one-way seconds per message (initiator).
fn measure(world: &World, peer: usize, initiator: bool, buf: &mut [u8], budget_s: f64) -> f64 {
    let warm = ping_pong(world, peer, initiator, buf, 3);
    let iters = if initiator { ((budget_s / (2.0 * warm.max(1e-9))) as u64).clamp(5, 100_000) } else { 0 };
    ping_pong(world, peer, initiator, buf, iters)
}

/// Run every round; rank 0 returns all pairs, others an empty list. Collective.
pub fn measure_all(world: &World, opts: &PairsOptions, rounds: &[Vec<(usize, usize)>]) -> Vec<PairResult> {
    let mut lat = vec![0u8; opts.latency_bytes as usize];
    let mut bw = vec![0u8; opts.bandwidth_bytes as usize];
    // One slot per round: (a, b, latency s, one-way bandwidth s), NaN where this rank is not
    // the initiator.
    let mut mine = vec![f64::NAN; rounds.len() * 4];
    for (r, round) in rounds.iter().enumerate() {
        world.barrier();
        if let Some(&(a, b)) = round.iter().find(|(a, b)| *a == world.rank || *b == world.rank) {
            let initiator = world.rank == a;
            let peer = if initiator { b } else { a };
            let l = measure(world, peer, initiator, &mut lat, opts.budget_s);
            let t = measure(world, peer, initiator, &mut bw, opts.budget_s);
            if initiator {
                mine[r * 4..r * 4 + 4].copy_from_slice(&[a as f64, b as f64, l, t]);
            }
        }
    }
    world.barrier();
    let all = world.gather_f64(&mine);
    if world.rank != 0 {
        return vec![];
    }
    let mut out = vec![];
    // Slot i of every rank's block is round i.
    for (slot, chunk) in all.chunks(4).enumerate() {
        if chunk[0].is_nan() {
            continue;
        }
        out.push(PairResult {
            a: chunk[0] as usize,
            b: chunk[1] as usize,
            round: slot % rounds.len(),
            latency_us: chunk[2] * 1e6,
            bandwidth_gbps: opts.bandwidth_bytes as f64 / chunk[3] / 1e9,
        });
    }
    out.sort_by_key(|p| (p.a, p.b));
    out
}

/// The hosts that appear in most of the given pairs, with their counts (most first).
pub fn suspect_hosts(pairs: &[PairResult], hosts: &[String]) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = vec![];
    for p in pairs {
        let (ha, hb) = (&hosts[p.a], &hosts[p.b]);
        for h in if ha == hb { vec![ha] } else { vec![ha, hb] } {
            match counts.iter_mut().find(|(x, _)| x == h) {
                Some((_, n)) => *n += 1,
                None => counts.push((h.clone(), 1)),
            }
        }
    }
    counts.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    counts
}

/// The pairs to blame: those below half the median bandwidth, or else the `top` slowest.
pub fn slowest(pairs: &[PairResult], top: usize) -> (Vec<PairResult>, bool) {
    let mut sorted = pairs.to_vec();
    sorted.sort_by(|x, y| x.bandwidth_gbps.total_cmp(&y.bandwidth_gbps));
    if sorted.is_empty() {
        return (sorted, false);
    }
    let median = sorted[sorted.len() / 2].bandwidth_gbps;
    let slow: Vec<PairResult> = sorted.iter().copied().filter(|p| p.bandwidth_gbps < 0.5 * median).collect();
    if !slow.is_empty() {
        (slow, true)
    } else {
        sorted.truncate(top);
        (sorted, false)
    }
}

/// The heading of the slow pairs' list: abnormal ones (below half the median bandwidth), or,
/// when none is, that none is and these are only the slowest.
fn slow_heading(pairs: &[PairResult], listed: usize, below_half: bool) -> String {
    let mut bw: Vec<f64> = pairs.iter().map(|p| p.bandwidth_gbps).collect();
    bw.sort_by(f64::total_cmp);
    let median = bw.get(bw.len() / 2).copied().unwrap_or(0.0);
    if below_half {
        format!("Slow pairs (below half the median bandwidth of {median:.3} GB/s):")
    } else {
        format!(
            "None abnormal: no pair below half the median bandwidth of {median:.3} GB/s; the {listed} slowest for reference:"
        )
    }
}

/// The matrix, row by row, each row whole (the file was created before measuring).
fn write_csv(
    file: &mut crate::report::AppendFile,
    pairs: &[PairResult],
    hosts: &[String],
    opts: &PairsOptions,
) -> Result<()> {
    let mut record = |fields: &[String]| crate::report::csv::append_record(file, "--csv", fields);
    let head = [
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
    record(&head.map(String::from))?;
    for p in pairs {
        record(&[
            p.a.to_string(),
            p.b.to_string(),
            hosts[p.a].clone(),
            hosts[p.b].clone(),
            p.round.to_string(),
            p.latency_us.to_string(),
            p.bandwidth_gbps.to_string(),
            opts.latency_bytes.to_string(),
            opts.bandwidth_bytes.to_string(),
        ])?;
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
        (Some(Some(p)), 0) => crate::report::outfile::check(&[("pairs --csv", p)], &[], opts.files),
        _ => Ok(()),
    };
    world.agree(checked)?;
    let per_rank = opts.latency_bytes + opts.bandwidth_bytes + crate::memory::OVERHEAD_BYTES;
    crate::setup::fit_memory(world, "pairs -e/--bandwidth-bytes", per_rank)?;
    let now = chrono::Utc::now();
    // Created before measuring (exclusively: a default name never collides), written at the end.
    let created = match (&opts.csv, world.rank) {
        (Some(Some(p)), 0) => crate::report::AppendFile::create("pairs --csv", p, opts.files).map(Some),
        (Some(None), 0) => crate::report::create_default_csv("pairs --csv", "coll-bench-pairs", &now).map(Some),
        _ => Ok(None),
    };
    let mut csv_file = world.agree(created)?;
    // SIGINT/SIGTERM from here on: rank 0 names the CSV, which is written whole at the end
    // (report::interrupted).
    let files: Vec<(std::path::PathBuf, &str)> =
        csv_file.iter().map(|f| (f.real_path().to_path_buf(), "CSV, written at the end: empty")).collect();
    crate::report::interrupted::arm(world.rank, Some(&files));

    let rounds = if opts.sequential { schedule::sequential(world.size) } else { schedule::tournament(world.size) };
    let t0 = mpi::time();
    let pairs = measure_all(world, opts, &rounds);
    let elapsed = mpi::time() - t0;
    if world.rank != 0 {
        return world.agree(Ok(crate::error::exit::OK));
    }
    let written = csv_file.as_mut().map(|f| write_csv(f, &pairs, &world.hosts, opts)).transpose();
    print_report(world, opts, &pairs, rounds.len(), elapsed);
    if let (Ok(_), Some(f)) = (&written, &csv_file) {
        println!("{}", crate::report::written_line(f.real_path(), "CSV"));
    }
    world.agree(written.map(|_| crate::error::exit::OK))
}

fn print_report(world: &World, opts: &PairsOptions, pairs: &[PairResult], rounds: usize, elapsed: f64) {
    let hosts = &world.hosts;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "# coll-bench {} pairs: {} ranks on {} host(s), {} pairs in {} {}; latency with {}-byte messages, bandwidth with {}-byte messages (one way, ping-pong)",
        env!("CARGO_PKG_VERSION"),
        world.size,
        world.ranks_by_host().len(),
        pairs.len(),
        rounds,
        if opts.sequential { "sequential runs" } else { "tournament rounds" },
        human(opts.latency_bytes),
        human(opts.bandwidth_bytes)
    );
    let _ = writeln!(out, "#  rank  rank  host -> host                      latency (us)  bandwidth (GB/s)");
    for p in pairs {
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
    let (slow, below_half) = slowest(pairs, opts.top);
    if !slow.is_empty() {
        let _ = writeln!(out, "# {}", slow_heading(pairs, slow.len(), below_half));
        for p in &slow {
            let _ = writeln!(
                out,
                "#   {} ({}) <-> {} ({}): {:.3} GB/s, {:.2} us",
                p.a, hosts[p.a], p.b, hosts[p.b], p.bandwidth_gbps, p.latency_us
            );
        }
        let suspects = suspect_hosts(&slow, hosts);
        let list: Vec<String> = suspects.iter().map(|(h, n)| format!("{h} ({n} of {})", slow.len())).collect();
        let _ = writeln!(out, "# Hosts in the slowest pairs: {}", list.join(", "));
    }
    let _ = writeln!(out, "# Took {elapsed:.2} s");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(a: usize, b: usize, bw: f64) -> PairResult {
        PairResult { a, b, round: 0, latency_us: 1.0, bandwidth_gbps: bw }
    }

    #[test]
    fn a_slow_host_is_the_one_in_most_slow_pairs() {
        let hosts: Vec<String> =
            ["n1", "n1", "n2", "n2", "n3", "n3", "n4", "n4"].iter().map(|s| s.to_string()).collect();
        let mut pairs = vec![];
        for a in 0..8 {
            for b in a + 1..8 {
                let slow = hosts[a] == "n2" || hosts[b] == "n2";
                let cross = hosts[a] != hosts[b];
                pairs.push(pr(a, b, if slow && cross { 0.1 } else { 5.0 }));
            }
        }
        let (slow, below_half) = slowest(&pairs, 5);
        assert!(below_half);
        // n2's two ranks with the 6 ranks elsewhere: 12 of 28 pairs.
        assert_eq!(slow.len(), 12);
        assert_eq!(suspect_hosts(&slow, &hosts)[0], ("n2".to_string(), 12));
    }

    #[test]
    fn without_outliers_the_top_k_are_listed() {
        let pairs = vec![pr(0, 1, 5.0), pr(0, 2, 4.0), pr(1, 2, 4.5)];
        let (slow, below_half) = slowest(&pairs, 2);
        assert!(!below_half);
        assert_eq!(
            slow_heading(&pairs, slow.len(), below_half),
            "None abnormal: no pair below half the median bandwidth of 4.500 GB/s; the 2 slowest for reference:"
        );
        assert_eq!(slow.iter().map(|p| (p.a, p.b)).collect::<Vec<_>>(), vec![(0, 2), (1, 2)]);
    }
}
