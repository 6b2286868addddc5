//! The table on stdout, in nccl-tests' layout: a header (run context), per collective a block
//! of rows (size, count, type, redop, root, then time, algbw, busbw, #wrong out of place and in
//! place), and a footer (out-of-bounds and wrong counts, bus bandwidth where it has levelled off).

use super::Report;
use crate::error::Result;
use crate::options::Step;
use crate::record::{Measurement, Point, RunInfo, Totals};
use std::io::Write;

/// Share of the largest size from which a point counts as "levelled off" for the footer's
/// average bus bandwidth (nccl-tests averages every size, latency-bound ones included).
const PLATEAU_FRACTION: u64 = 8;

/// `--per-rank`: hosts given a line of their own under a point, every host up to this many;
/// beyond it only the hosts that stand out, the fastest and the slowest (this many at most),
/// and one line for the others. Every rank's time is in the CSV and JSON.
const HOST_LINES: usize = 8;

/// Ranks named on a `--per-rank` point's line of odd ranks, and in the footer's slow-rank lines;
/// the others are counted (by host in the footer).
const NAMED_RANKS: usize = 8;

pub struct TableReport<W: Write> {
    out: W,
    /// The current block's label (collective, type, op), and its sized points for its footer
    /// line (none for barrier, which moves no data: no bus-bandwidth line).
    block: Option<String>,
    /// The algorithm line last printed in this block (algorithm and its source).
    algorithm: Option<(String, String)>,
    current: Vec<(String, u64, f64)>,
    footers: Vec<String>,
    /// Measurements seen, and per warning kind: its headline, how many had it and the first
    /// example.
    measured: usize,
    warnings: Vec<(String, String, usize, String)>,
    /// Per rank: points where it stood out, and the first example.
    slow: std::collections::BTreeMap<usize, (usize, String)>,
    /// Per group (`--groups`): points where it stood out, and the first example.
    slow_groups: std::collections::BTreeMap<usize, (usize, String)>,
    /// ping-pong at its largest size: bytes and each rank's one-way time (per-host footer line).
    pingpong: Option<(u64, Vec<f64>)>,
    /// Measurements more than `Ceiling::ABOVE` over the ceiling: how many, and the highest
    /// (percentage, where).
    above: (usize, Option<(f64, String)>),
    /// `info.notes` printed so far (the ceiling pass adds its own after the header).
    notes_shown: usize,
}

impl<W: Write> TableReport<W> {
    pub fn new(out: W) -> Self {
        TableReport {
            out,
            block: None,
            algorithm: None,
            current: vec![],
            footers: vec![],
            measured: 0,
            warnings: vec![],
            slow: Default::default(),
            slow_groups: Default::default(),
            pingpong: None,
            above: (0, None),
            notes_shown: 0,
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    /// Count a warning of the measurement `at` for the footer (the first of its kind is its
    /// example).
    fn warn(&mut self, w: &crate::stats::Warning, at: &str) {
        let kind = format!("{:?}", std::mem::discriminant(w));
        match self.warnings.iter_mut().find(|(k, _, _, _)| *k == kind) {
            Some((_, _, n, _)) => *n += 1,
            None => self.warnings.push((kind, w.headline(), 1, format!("{at}: {w}"))),
        }
    }

    // A closed stdout (`| head`) must not stop the measurement: write errors are ignored.
    fn line(&mut self, s: &str) {
        let _ = writeln!(self.out, "{s}");
    }

    fn close_block(&mut self) {
        let Some((label, _, _)) = self.current.first().cloned() else { return };
        let max = self.current.iter().map(|(_, s, _)| *s).max().unwrap_or(0);
        let floor = max / PLATEAU_FRACTION;
        let plateau: Vec<&(String, u64, f64)> = self.current.iter().filter(|(_, s, _)| *s >= floor).collect();
        let avg = plateau.iter().map(|(_, _, b)| b).sum::<f64>() / plateau.len() as f64;
        let lo = plateau.iter().map(|(_, s, _)| *s).min().unwrap_or(0);
        self.footers.push(format!(
            "# Avg bus bandwidth    : {avg:.3} GB/s  ({label}, out-of-place, sizes {}..{})",
            crate::size::human(lo),
            crate::size::human(max)
        ));
        self.current.clear();
    }
}

fn time_col(us: f64) -> String {
    if us >= 10000.0 {
        format!("{us:7.0}")
    } else if us >= 100.0 {
        format!("{us:7.1}")
    } else {
        format!("{us:7.2}")
    }
}

/// All-to-all-v's traffic for the header: the pattern and what it makes of the ranks.
pub fn pattern_line(p: &crate::collective::traffic::Pattern, nranks: usize) -> String {
    let i = p.imbalance(nranks);
    let dropped =
        if i.dropped > 0.0 { format!("; {:.1}% of token copies dropped", i.dropped * 100.0) } else { String::new() };
    format!(
        "{p} (all-to-all-v; busiest rank over the mean on {nranks} ranks: sent {:.2}x, received {:.2}x{dropped})",
        i.sent, i.received
    )
}

fn placement_cols(m: &Measurement) -> String {
    let wrong = m.wrong.map(|w| w.to_string()).unwrap_or_else(|| "N/A".into());
    format!("  {}  {:6.2}  {:6.2}  {:>6}", time_col(m.time_us), m.algbw_gbps, m.busbw_gbps, wrong)
}

impl<W: Write> Report for TableReport<W> {
    fn begin(&mut self, info: &RunInfo) -> Result<()> {
        let o = &info.options;
        self.line(&format!("# coll-bench {}  backend: {}  started {}", info.version, info.backend, info.timestamp));
        for d in &info.backend_details {
            self.line(&format!("# {d}"));
        }
        let names: Vec<&str> = o.collectives.iter().map(|k| k.name()).collect();
        self.line(&format!("# collectives: {}", names.join(" ")));
        if o.collectives.contains(&crate::collective::Kind::AllToAllV) {
            for p in &o.patterns {
                self.line(&format!("# pattern: {}", pattern_line(p, info.group_size())));
            }
        }
        self.line(&format!("# ranks: {} on {} host(s)", info.ranks, info.hosts.len()));
        for (host, ranks) in &info.hosts {
            self.line(&format!("#   {host}: {} rank(s): {}", ranks.len(), crate::world::rank_list(ranks)));
        }
        let step = match o.step {
            Step::Factor(f) => format!("{f}(factor)"),
            Step::Bytes(b) => format!("{b}(bytes)"),
        };
        let warm = o.warmup.map(|w| w.to_string()).unwrap_or_else(|| "auto".into());
        let iters = o.iters.map(|n| n.to_string()).unwrap_or_else(|| format!("auto (budget {} ms)", o.budget_s * 1e3));
        let dtypes: Vec<&str> = o.dtypes.iter().map(|d| d.name()).collect();
        let ops: Vec<&str> = o.ops.iter().map(|d| d.name()).collect();
        self.line(&format!(
            "# minBytes {} maxBytes {} step: {step} warmup iters: {warm} iters: {iters} validation: {} average: {} ({}) root: {} blocking: {} datatype: {} op: {}",
            o.min_bytes,
            o.max_bytes,
            o.check as u8,
            o.aggregation.flag(),
            o.aggregation.name(),
            o.root,
            o.blocking as u8,
            dtypes.join(","),
            ops.join(",")
        ));
        let points = o.point_count(u64::MAX - 1);
        let estimate = match o.estimated_s(points) {
            Some(s) => format!("estimated {} from the budget", crate::options::human_duration(s)),
            None => "duration set by -n (not estimated)".to_string(),
        };
        self.line(&format!("# plan: {points} points, {estimate}"));
        if o.order == crate::options::Order::Size {
            self.line(
                "# order: size (every collective at one size, then the next size; the table follows the last point)",
            );
        }
        for note in &info.notes {
            self.line(&format!("# note: {note}"));
        }
        self.notes_shown = info.notes.len();
        if !o.groups.is_world() {
            let mode = if o.one_group_at_a_time { "one at a time" } else { "all at the same time" };
            self.line(&format!(
                "# groups: {} — {} group(s) of {} rank(s), {mode}; root and bus factor count within each group",
                o.groups,
                info.groups.len(),
                info.group_size()
            ));
            for g in &info.groups {
                self.line(&format!(
                    "#   group {:>3}: ranks {} on {}",
                    g.id,
                    crate::world::rank_list(&g.ranks),
                    g.hosts.join(", ")
                ));
            }
        }
        self.line("#");
        for (rank, host) in info.hosts.iter().flat_map(|(h, rs)| rs.iter().map(move |r| (*r, h))) {
            let pid = info.pids.get(rank).copied().unwrap_or(0);
            self.line(&format!("#  Rank {rank:>3} Pid {pid:>7} on {host}"));
        }
        Ok(())
    }

    fn ceiling(&mut self, info: &RunInfo) -> Result<()> {
        let lines: Vec<String> = [ceiling_line(info), nominal_line(info), host_pairs_line(info)]
            .into_iter()
            .flatten()
            .chain(info.notes.iter().skip(self.notes_shown).map(|n| format!("# note: {n}")))
            .collect();
        if !lines.is_empty() {
            self.line("#");
        }
        for l in lines {
            self.line(&l);
        }
        self.notes_shown = info.notes.len();
        Ok(())
    }

    fn point(&mut self, info: &RunInfo, p: &Point) -> Result<()> {
        let label = crate::record::series_label(p.collective, p.dtype, p.op);
        // all-to-all-v's series are one per pattern.
        let pattern = p.traffic.as_ref().map(|t| t.pattern.as_str()).filter(|t| *t != "uniform");
        let block = match pattern {
            Some(t) => format!("{label} {t}"),
            None => label.clone(),
        };
        let new_block = self.block.as_ref() != Some(&block);
        if new_block {
            self.close_block();
            self.block = Some(block);
            self.algorithm = None;
            self.line("#");
            match pattern {
                Some(t) => self.line(&format!("# Collective: {}  pattern: {t}", p.collective.name())),
                None => self.line(&format!("# Collective: {}", p.collective.name())),
            }
            let (ceil, unit) = if info.ceiling.is_some() { ("  %ceil", "  (oop)") } else { ("", "") };
            // -C 1: the host's launch time per call, out of place, after nccl-tests' columns.
            let (cpu, cpu_unit) = if info.options.launch.cpu_time { ("  cputime", " (us,oop)") } else { ("", "") };
            self.line("#                                                              out-of-place                       in-place");
            self.line(&format!("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong{ceil}{cpu}"));
            self.line(&format!("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)        {unit}{cpu_unit}"));
        }
        // Where the algorithm changes (and at a block's first row): a comment line before the
        // row, so the rows keep nccl-tests' columns.
        let alg = (p.algorithm.clone(), p.algorithm_source.clone());
        if self.algorithm.as_ref() != Some(&alg) {
            self.line(&format!("#  algorithm: {} ({}) from {} B", alg.0, alg.1, p.size_bytes));
            self.algorithm = Some(alg);
        }
        let sized = p.collective.spec().sized();
        let dtype = if sized { p.dtype.name() } else { "none" };
        let op = p.op.map(|o| o.name()).unwrap_or("none");
        let root = p.root.map(|r| r as i64).unwrap_or(-1);
        // `%ceil`: out-of-place busbw as a percentage of the ceiling, where there is one.
        let ceil = match (&info.ceiling, info.pct_of_ceiling(p, p.out_of_place.busbw_gbps)) {
            (None, _) => String::new(),
            (Some(_), Some(pct)) => format!("  {pct:>5.0}"),
            (Some(_), None) => format!("  {:>5}", "-"),
        };
        let cpu = match (info.options.launch.cpu_time, p.out_of_place.cpu_time_us) {
            (false, _) => String::new(),
            (true, Some(us)) => format!("  {}", time_col(us)),
            (true, None) => format!("  {:>7}", "-"),
        };
        self.line(&format!(
            "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}{ceil}{cpu}",
            p.size_bytes,
            p.count,
            dtype,
            op,
            root,
            placement_cols(&p.out_of_place),
            if p.collective.spec().has_in_place() {
                placement_cols(&p.in_place)
            } else {
                format!("  {:>8}  {:>6}  {:>6}  {:>6}", "-", "-", "-", "-")
            }
        ));
        if info.options.per_rank {
            for m in p.measurements() {
                for l in per_rank_lines(&info.hosts, m) {
                    self.line(&l);
                }
            }
        }
        let _ = self.out.flush();
        for m in p.measurements() {
            self.measured += 1;
            let at = format!("{label} {} B {}", p.size_bytes, m.placement.name());
            if let Some(pct) = info
                .pct_of_ceiling(p, m.busbw_gbps)
                .filter(|&x| info.ceiling.as_ref().is_some_and(|c| x > c.above_pct()))
            {
                self.above.0 += 1;
                if self.above.1.as_ref().is_none_or(|(hi, _)| pct > *hi) {
                    self.above.1 = Some((pct, at.clone()));
                }
            }
            for w in &m.warnings {
                self.warn(w, &at);
            }
            for o in &m.slow_ranks {
                let e = self.slow.entry(o.rank).or_insert_with(|| {
                    (0, format!("{:.2} us against a median of {:.2} us at {at}", o.time_us, o.median_us))
                });
                e.0 += 1;
            }
            // The slow-rank rule applied to the groups' times.
            if info.groups.len() > 1 {
                for o in crate::stats::rank_outliers(&info.group_times_us(m)) {
                    let e = self.slow_groups.entry(o.rank).or_insert_with(|| {
                        (0, format!("{:.2} us against a median of {:.2} us at {at}", o.time_us, o.median_us))
                    });
                    e.0 += 1;
                }
            }
        }
        if p.collective == crate::collective::Kind::PingPong
            && self.pingpong.as_ref().is_none_or(|(s, _)| p.size_bytes >= *s)
        {
            self.pingpong = Some((p.size_bytes, p.out_of_place.per_rank_us.clone()));
        }
        if sized {
            // The block's name: all-to-all-v's pattern with it.
            let block = self.block.clone().unwrap_or(label);
            self.current.push((block, p.size_bytes, p.out_of_place.busbw_gbps));
        }
        Ok(())
    }

    fn amend(&mut self, _info: &RunInfo, flags: &[crate::record::Flag]) -> Result<()> {
        for f in flags {
            self.warn(&f.warning, &f.label());
        }
        Ok(())
    }

    fn end(&mut self, info: &RunInfo, totals: &Totals) -> Result<()> {
        self.close_block();
        self.line("#");
        if info.options.check {
            let ok = |n: u64| if n == 0 { "OK" } else { "FAILED" };
            self.line(&format!("# Out of bounds values : {} {}", totals.out_of_bounds, ok(totals.out_of_bounds)));
            self.line(&format!("# Wrong elements       : {} {}", totals.wrong, ok(totals.wrong)));
        } else {
            self.line("# Out of bounds values : N/A (check off)");
        }
        for f in std::mem::take(&mut self.footers) {
            self.line(&f);
        }
        if let Some(l) = self.pingpong.take().and_then(|(size, t)| pingpong_per_host(&info.hosts, size, &t)) {
            self.line(&l);
        }
        for (_, headline, n, example) in std::mem::take(&mut self.warnings) {
            self.line(&format!(
                "# Warning: {headline} at {n} of {} measurements (each point's out-of-place and in-place counted apart); e.g. {example}",
                self.measured
            ));
        }
        let uncertain = info.ceiling.as_ref().filter(|c| c.uncertain());
        let above = std::mem::take(&mut self.above);
        if let (Some(c), (n, Some((pct, at)))) = (uncertain, &above) {
            self.line(&format!(
                "# Above the ceiling: {n} of {} measurements more than {:.0}% of it (highest {pct:.0}% at {at}), but the ceiling is uncertain: its {} repeats spread {:.0}% (the machine changed speed during the pass: other processes, or more ranks than free cores), so %ceil says little in this run; measure again on a quieter machine",
                self.measured,
                c.above_pct(),
                c.repeats,
                c.spread_pct
            ));
        } else if let (n, Some((pct, at))) = above {
            // Far above (5x): more likely a pass taken while the machine was busy than another path.
            let far = if pct > crate::record::Ceiling::FAR_ABOVE * 100.0 {
                format!("; {:.0}x above is more than another path gives: the pass may have run while the machine was busy, so run again before reading %ceil", pct / 100.0)
            } else {
                String::new()
            };
            self.line(&format!(
                "# Above the ceiling: {n} of {} measurements more than {:.0}% of it (highest {pct:.0}% at {at}): the ceiling is how these ranks carry point-to-point data; a collective above it moved its data another way (a shared-memory component, fewer bytes than busbw counts), so for it the ceiling is not the limit{far}",
                self.measured,
                info.ceiling.as_ref().map_or(crate::record::Ceiling::ABOVE * 100.0, |c| c.above_pct())
            ));
        }
        let slow = std::mem::take(&mut self.slow);
        for l in slow_rank_lines(&info.hosts, slow, self.measured) {
            self.line(&l);
        }
        for (g, (n, example)) in std::mem::take(&mut self.slow_groups) {
            let hosts = info.groups.get(g).map(|g| g.hosts.join(", ")).unwrap_or_default();
            let ranks = info.groups.get(g).map(|g| crate::world::rank_list(&g.ranks)).unwrap_or_default();
            self.line(&format!(
                "# Slow group: group {g} (ranks {ranks} on {hosts}) stands out at {n} of {} measurements, e.g. {example}",
                self.measured
            ));
        }
        self.line(&format!(
            "# Peak memory per rank: {} (largest of any rank; buffers sized for {} messages)",
            crate::size::amount(totals.peak_rss_bytes),
            crate::size::human(info.options.max_bytes)
        ));
        self.line("#");
        let _ = self.out.flush();
        Ok(())
    }
}

/// The header's ceiling line: `# ceiling: 5.43 GB/s busbw (measured: sendrecv of 64 MiB around
/// the ring of 2 ranks, within hosts; %ceil = out-of-place busbw as a percentage of it)`.
fn ceiling_line(info: &RunInfo) -> Option<String> {
    let c = info.ceiling.as_ref()?;
    let ring = if info.groups.len() > 1 {
        format!("each group's ring of {} ranks", info.group_size())
    } else {
        format!("the ring of {} ranks", info.ranks)
    };
    let short = if c.size_bytes < crate::record::Ceiling::PLATEAU_BYTES {
        "; under 1 MiB a transfer is bound by latency more than by the link: raise -e for a truer ceiling"
    } else {
        ""
    };
    Some(format!(
        "# ceiling: {} GB/s busbw ({}: sendrecv of {} around {ring}, {}, {:.1} us per call, median of {} repeat(s), spread {:.0}%{}{short}; %ceil = out-of-place busbw as a percentage of it; the pass took {:.1} s, --no-ceiling skips it)",
        c.shown_gbps(),
        c.source,
        crate::size::human(c.size_bytes),
        c.links,
        c.time_us,
        c.repeats,
        c.spread_pct,
        if c.uncertain() { ": uncertain, the machine changed speed during the pass" } else { "" },
        c.seconds
    ))
}

/// Between hosts, the header's line of the hosts' nominal link rates beside the measured
/// ceiling: collapsed when every host states the same, the hosts that state none named, and the
/// ceiling as a percentage of the slowest (above it beyond noise: the ceiling's traffic did not
/// go through that interface).
fn nominal_line(info: &RunInfo) -> Option<String> {
    let c = info.ceiling.as_ref().filter(|c| c.links == RunInfo::BETWEEN_HOSTS)?;
    let Some(slowest) = c.slowest_nominal() else {
        return Some(
            "# nominal: no host's hardware states its link rate (/sys/class/net/*/speed, /sys/class/infiniband/*/ports/*/rate)"
                .into(),
        );
    };
    let silent: Vec<&str> =
        info.hosts.iter().map(|(h, _)| h.as_str()).filter(|h| !c.nominal.iter().any(|n| n.host == *h)).collect();
    let alike = c.nominal.iter().all(|n| n.gbps == slowest.gbps && n.interface == slowest.interface);
    let mut line = if alike && silent.is_empty() {
        format!("# nominal: {} on every host", slowest.shown())
    } else {
        let each: Vec<String> = c.nominal.iter().map(|n| format!("{} {}", n.host, n.shown())).collect();
        format!("# nominal: {}", each.join(", "))
    };
    if !silent.is_empty() {
        line.push_str(&format!("; not stated by {}", silent.join(", ")));
    }
    let pct = c.gbps / slowest.gbps * 100.0;
    let pct = if pct < 10.0 { format!("{pct:.2}") } else { format!("{pct:.0}") };
    line.push_str(&format!("; the ceiling is {pct}% of the slowest, {} GB/s", crate::record::shown_gbps(slowest.gbps)));
    if c.gbps > slowest.gbps * crate::record::Ceiling::ABOVE {
        line.push_str(
            ": above it, so its traffic took another path than that interface, or the hardware understates it",
        );
    }
    Some(line)
}

/// Between hosts, the host pairs the ring crosses, each measured on its own: one range when all
/// are within 10% of the fastest, else each, the slowest first (at most eight, then a count).
fn host_pairs_line(info: &RunInfo) -> Option<String> {
    let c = info.ceiling.as_ref()?;
    let mut pairs: Vec<&crate::record::Link> = c.host_pairs.iter().filter(|l| l.gbps.is_finite()).collect();
    pairs.sort_by(|a, b| a.gbps.total_cmp(&b.gbps));
    let (slowest, fastest) = (pairs.first()?.gbps, pairs.last()?.gbps);
    let gb = crate::record::shown_gbps;
    let what = "# ceiling per host pair (point-to-point, one way, each host pair of the ring on its own)";
    if slowest >= 0.9 * fastest {
        let n = pairs.len();
        let range = if slowest == fastest {
            format!("{} GB/s", gb(slowest))
        } else {
            format!("{}..{} GB/s", gb(slowest), gb(fastest))
        };
        let alike = if n == 1 { "one pair".to_string() } else { format!("all {n} pairs alike") };
        return Some(format!("{what}: {range} ({alike})"));
    }
    const SHOWN: usize = 8;
    let mut each: Vec<String> = pairs.iter().take(SHOWN).map(|l| format!("{}-{} {}", l.a, l.b, gb(l.gbps))).collect();
    if pairs.len() > SHOWN {
        each.push(format!("and {} more up to {}", pairs.len() - SHOWN, gb(fastest)));
    }
    Some(format!("{what}, GB/s, slowest first: {}", each.join(", ")))
}

/// The host of `rank` (`?` if none has it).
fn host_of(hosts: &[(String, Vec<usize>)], rank: usize) -> &str {
    hosts.iter().find(|(_, rs)| rs.contains(&rank)).map(|(h, _)| h.as_str()).unwrap_or("?")
}

/// A host's ranks, as a list while it is short, else counted.
fn ranks_label(ranks: &[usize]) -> String {
    let list = crate::world::rank_list(ranks);
    if list.len() <= 24 {
        format!("ranks {list}")
    } else {
        format!("{} ranks", ranks.len())
    }
}

fn us(t: f64) -> String {
    time_col(t).trim().to_string()
}

/// `--per-rank`'s lines under a point, for one placement: the spread over every rank, a line
/// per host (min / median / max and its slowest rank; with more than [`HOST_LINES`] hosts only
/// those that stand out, the fastest and the slowest, and one line for the others), and the
/// ranks that stand out, named (at most [`NAMED_RANKS`], the others counted). As many lines at
/// 16 384 ranks as at 64.
fn per_rank_lines(hosts: &[(String, Vec<usize>)], m: &Measurement) -> Vec<String> {
    let t = &m.per_rank_us;
    if t.is_empty() {
        return vec![];
    }
    let per_host = crate::record::host_times(hosts, t);
    let lo = t.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = t.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut out = vec![format!(
        "#  per rank, {}: {} / {} / {} us (min / median / max) over {} ranks on {} host(s)",
        m.placement.name(),
        us(lo),
        us(crate::stats::median_of(t)),
        us(hi),
        t.len(),
        per_host.len()
    )];
    let shown: Vec<usize> = if per_host.len() <= HOST_LINES {
        (0..per_host.len()).collect()
    } else {
        let medians: Vec<f64> = per_host.iter().map(|h| h.median_us).collect();
        let by = |f: fn(f64, f64) -> bool| {
            (0..medians.len()).fold(0, |best, i| if f(medians[i], medians[best]) { i } else { best })
        };
        let mut odd: Vec<crate::stats::RankOutlier> = crate::stats::rank_outliers(&medians);
        // The farthest from the median host first, when more stand out than there are lines.
        odd.sort_by(|a, b| (b.time_us - b.median_us).abs().total_cmp(&(a.time_us - a.median_us).abs()));
        let ends = [by(|a, b| a < b), by(|a, b| a > b)];
        let mut shown: Vec<usize> = ends.to_vec();
        shown.extend(odd.iter().map(|o| o.rank).filter(|i| !ends.contains(i)).take(HOST_LINES - 2));
        shown.sort();
        shown.dedup();
        shown
    };
    for &i in &shown {
        let h = &per_host[i];
        out.push(format!(
            "#    {} ({}): {} / {} / {} us, slowest rank {}",
            h.host,
            ranks_label(h.ranks),
            us(h.min_us),
            us(h.median_us),
            us(h.max_us),
            h.slowest_rank
        ));
    }
    let others: Vec<f64> =
        per_host.iter().enumerate().filter(|(i, _)| !shown.contains(i)).map(|(_, h)| h.median_us).collect();
    if !others.is_empty() {
        let (a, b) = others.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        out.push(format!("#    {} other hosts: medians {} .. {} us", others.len(), us(a), us(b)));
    }
    if !m.slow_ranks.is_empty() {
        let named: Vec<String> = m
            .slow_ranks
            .iter()
            .take(NAMED_RANKS)
            .map(|o| format!("rank {} on {} {} us", o.rank, host_of(hosts, o.rank), us(o.time_us)))
            .collect();
        let more = m.slow_ranks.len().saturating_sub(NAMED_RANKS);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        out.push(format!("#    odd ranks (median {} us): {}{more}", us(m.slow_ranks[0].median_us), named.join(", ")));
    }
    out
}

/// The footer's slow ranks: a line for each of the [`NAMED_RANKS`] that stood out most often,
/// and one line counting the others by host. `slow`: per rank, the measurements it stood out at
/// and the first example; `measured`: the measurements of the run.
fn slow_rank_lines(
    hosts: &[(String, Vec<usize>)],
    slow: std::collections::BTreeMap<usize, (usize, String)>,
    measured: usize,
) -> Vec<String> {
    let mut ranks: Vec<(usize, (usize, String))> = slow.into_iter().collect();
    // Most often first; by rank on a tie (the map's order, kept by the stable sort).
    ranks.sort_by_key(|(_, (n, _))| std::cmp::Reverse(*n));
    let mut out: Vec<String> = ranks
        .iter()
        .take(NAMED_RANKS)
        .map(|(rank, (n, example))| {
            format!(
                "# Slow rank: rank {rank} on {} stands out at {n} of {measured} measurements, e.g. {example} (a rank the others wait for shows the shortest time; one waiting on a slow peer the longest)",
                host_of(hosts, *rank)
            )
        })
        .collect();
    if ranks.len() > NAMED_RANKS {
        let rest = &ranks[NAMED_RANKS..];
        let mut by_host: Vec<(&str, usize)> = vec![];
        for (rank, _) in rest {
            let h = host_of(hosts, *rank);
            match by_host.iter_mut().find(|(x, _)| *x == h) {
                Some((_, n)) => *n += 1,
                None => by_host.push((h, 1)),
            }
        }
        by_host.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        let listed: Vec<String> = by_host.iter().take(HOST_LINES).map(|(h, n)| format!("{n} on {h}")).collect();
        let more = if by_host.len() > HOST_LINES {
            format!(" and {} more host(s)", by_host.len() - HOST_LINES)
        } else {
            String::new()
        };
        let most = rest.iter().map(|(_, (n, _))| *n).max().unwrap_or(0);
        out.push(format!(
            "# Slow ranks: {} more stand out at {most} of {measured} measurements or fewer: {}{more}",
            rest.len(),
            listed.join(", ")
        ));
    }
    out
}

/// With ping-pong on several hosts: each host's fastest rank, one way, and the host that stands
/// out. A host is as fast as its best link: a rank paired with a slow host is slow wherever it
/// runs, but every rank of a slow host is slow. (With two hosts every pair crosses both links,
/// so no host can stand out; with three or more and `--map-by node`, one can.)
fn pingpong_per_host(hosts: &[(String, Vec<usize>)], size: u64, per_rank_us: &[f64]) -> Option<String> {
    let best: Vec<(&str, f64)> = hosts
        .iter()
        .map(|(h, rs)| {
            (h.as_str(), rs.iter().filter_map(|&r| per_rank_us.get(r)).fold(f64::INFINITY, |a, &b| a.min(b)))
        })
        .filter(|(_, t)| t.is_finite())
        .collect();
    if best.len() < 2 {
        return None;
    }
    let mut sorted: Vec<f64> = best.iter().map(|(_, t)| *t).collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[(sorted.len() - 1) / 2];
    let (slowest, t) = best.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let verdict = if median > 0.0 && t > 2.0 * median {
        format!("slowest: {slowest}, {:.0}x the median host", t / median)
    } else {
        "no host stands out".to_string()
    };
    let list: Vec<String> = best.iter().map(|(h, t)| format!("{h} {} us", time_col(*t).trim())).collect();
    Some(format!(
        "# Ping-pong per host   : {} (ping-pong {}, one way, fastest rank of each host); {verdict}",
        list.join(", "),
        crate::size::human(size)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Kind;
    use crate::dtype::{DType, Op};
    use crate::record::Placement;
    use crate::stats::Warning;

    fn m(placement: Placement, warnings: Vec<Warning>) -> Measurement {
        Measurement { warnings, ..Measurement::sample(placement) }
    }

    fn point(kind: Kind, size: u64, warnings: Vec<Warning>) -> Point {
        Point {
            collective: kind,
            dtype: DType::Float32,
            op: kind.spec().reduces().then_some(Op::Sum),
            root: None,
            size_bytes: size,
            count: size / 4,
            bus_factor: 1.0,
            out_of_place: m(Placement::OutOfPlace, warnings),
            in_place: m(Placement::InPlace, vec![]),
            algorithm: "unknown".into(),
            algorithm_source: "not reported".into(),
            traffic: None,
        }
    }

    /// Barrier gets no bus-bandwidth line; each warning kind is one line with its threshold
    /// and the count of measurements it applies to.
    #[test]
    fn footer_lines_only_where_they_say_something() {
        let info = RunInfo::sample(vec![("h".into(), vec![0, 1])]);
        let off = || vec![Warning::MeanOffMedian { time_us: 2.0, median_us: 1.0, outliers: 3, samples: 100 }];
        let mut t = TableReport::new(Vec::new());
        t.begin(&info).unwrap();
        t.point(&info, &point(Kind::AllReduce, 1024, off())).unwrap();
        t.point(&info, &point(Kind::AllReduce, 2048, vec![])).unwrap();
        t.point(&info, &point(Kind::Barrier, 0, off())).unwrap();
        t.end(&info, &Totals::default()).unwrap();
        let out = String::from_utf8(t.into_inner()).unwrap();
        let bw: Vec<&str> = out.lines().filter(|l| l.starts_with("# Avg bus bandwidth")).collect();
        assert_eq!(bw.len(), 1, "{out}");
        assert!(bw[0].contains("(all-reduce float sum, out-of-place"), "{out}");
        let warn: Vec<&str> = out.lines().filter(|l| l.starts_with("# Warning")).collect();
        assert_eq!(warn.len(), 1, "{out}");
        assert!(
            warn[0].starts_with("# Warning: the time (the mean) and the median differ by more than 10% ")
                && warn[0].contains(" at 2 of 6 measurements ")
                && warn[0].contains("e.g. all-reduce float sum 1024 B ")
                && warn[0].contains(": time 2.00 us is 100% above the median 1.00 us; 3 of 100 samples"),
            "{out}"
        );
        assert_eq!(out.matches("# Collective: ").count(), 2, "{out}");
    }

    #[test]
    fn pingpong_names_the_host_whose_every_rank_is_slow() {
        let hosts: Vec<(String, Vec<usize>)> = [("a", vec![0, 3]), ("b", vec![1, 4]), ("c", vec![2, 5])]
            .iter()
            .map(|(h, r)| (h.to_string(), r.clone()))
            .collect();
        // b slow: pairs 0-1 (a-b) and 4-5 (b-c) slow, 2-3 (c-a) fast.
        let l = pingpong_per_host(&hosts, 65536, &[900.0, 900.0, 30.0, 31.0, 905.0, 905.0]).unwrap();
        assert!(
            l.contains(": a 31.00 us, b 900.0 us, c 30.00 us (ping-pong 64K,")
                && l.ends_with("slowest: b, 29x the median host"),
            "{l}"
        );
        let l = pingpong_per_host(&hosts[..2], 8, &[50.0, 51.0, 0.0, 52.0, 50.0]).unwrap();
        assert!(l.ends_with("no host stands out"), "{l}");
        assert_eq!(pingpong_per_host(&hosts[..1], 8, &[1.0, 2.0]), None);
    }

    /// Between hosts, the nominal rates under the ceiling's line: collapsed when alike, the
    /// silent hosts named, the ceiling against the slowest; nothing within hosts.
    #[test]
    fn the_nominal_rates_are_listed_beside_a_ceiling_between_hosts() {
        use crate::record::Nominal;
        let mut info = RunInfo::sample(vec![("a".into(), vec![0]), ("b".into(), vec![1]), ("c".into(), vec![2])]);
        let nominal = |host: &str, gbps| Nominal { host: host.into(), interface: "eth0".into(), gbps };
        let ceiling = |gbps, links, nominal| crate::record::Ceiling {
            gbps,
            source: "measured",
            size_bytes: 1 << 20,
            time_us: 1.0,
            links,
            nominal,
            host_pairs: vec![],
            seconds: 0.5,
            repeats: 3,
            spread_pct: 0.0,
        };
        let line = |info: &RunInfo| nominal_line(info);
        info.ceiling = Some(ceiling(0.78, "within hosts", vec![]));
        assert_eq!(line(&info), None);
        info.ceiling = Some(ceiling(0.78, "between hosts", vec![]));
        assert!(line(&info).unwrap().starts_with("# nominal: no host's hardware states its link rate"));
        let all = vec![nominal("a", 1.25), nominal("b", 1.25), nominal("c", 1.25)];
        info.ceiling = Some(ceiling(0.78, "between hosts", all));
        assert_eq!(
            line(&info).unwrap(),
            "# nominal: 1.25 GB/s (eth0, 10 Gb/s) on every host; the ceiling is 62% of the slowest, 1.25 GB/s"
        );
        info.ceiling = Some(ceiling(0.00564, "between hosts", vec![nominal("a", 12.5), nominal("b", 1.25)]));
        assert_eq!(
            line(&info).unwrap(),
            "# nominal: a 12.50 GB/s (eth0, 100 Gb/s), b 1.25 GB/s (eth0, 10 Gb/s); not stated by c; the ceiling is 0.45% of the slowest, 1.25 GB/s"
        );
        info.ceiling =
            Some(ceiling(2.4, "between hosts", vec![nominal("a", 1.25), nominal("b", 1.25), nominal("c", 1.25)]));
        assert!(line(&info).unwrap().ends_with("the ceiling is 192% of the slowest, 1.25 GB/s: above it, so its traffic took another path than that interface, or the hardware understates it"));

        // The host pairs the ring crosses: none, alike, one slow.
        use crate::record::Link;
        let link = |a: &str, b: &str, gbps| Link { a: a.into(), b: b.into(), gbps, rank_pairs: 1 };
        let with = |pairs: Vec<Link>| {
            let mut i = info.clone();
            i.ceiling.as_mut().unwrap().host_pairs = pairs;
            host_pairs_line(&i)
        };
        assert_eq!(with(vec![]), None);
        assert_eq!(
            with(vec![link("a", "b", 2.4), link("b", "c", 2.5), link("a", "c", 2.5)]).unwrap(),
            "# ceiling per host pair (point-to-point, one way, each host pair of the ring on its own): 2.40..2.50 GB/s (all 3 pairs alike)"
        );
        assert_eq!(
            with(vec![link("a", "b", 0.00781), link("b", "c", 0.00782), link("a", "c", 2.48)]).unwrap(),
            "# ceiling per host pair (point-to-point, one way, each host pair of the ring on its own), GB/s, slowest first: a-b 0.00781, b-c 0.00782, a-c 2.48"
        );
    }

    /// With a ceiling: the header's line, `%ceil` after nccl-tests' thirteen columns (`-` for
    /// barrier), and one footer line for the measurements above it; none of it without one.
    #[test]
    fn the_ceiling_adds_a_header_line_a_column_and_what_stands_above_it() {
        let mut info = RunInfo::sample(vec![("h".into(), vec![0, 1])]);
        // The sample measurements carry 0.1 GB/s busbw.
        info.ceiling = Some(crate::record::Ceiling {
            gbps: 0.08,
            source: "measured",
            size_bytes: 64 << 10,
            time_us: 800.0,
            links: "within hosts",
            nominal: vec![],
            host_pairs: vec![],
            seconds: 0.5,
            repeats: 3,
            spread_pct: 0.0,
        });
        let mut t = TableReport::new(Vec::new());
        t.begin(&info).unwrap();
        t.ceiling(&info).unwrap();
        t.point(&info, &point(Kind::AllReduce, 1024, vec![])).unwrap();
        t.point(&info, &point(Kind::Barrier, 0, vec![])).unwrap();
        t.end(&info, &Totals::default()).unwrap();
        let out = String::from_utf8(t.into_inner()).unwrap();
        let head = out.lines().find(|l| l.starts_with("# ceiling: ")).unwrap_or_else(|| panic!("{out}"));
        assert!(
            head.starts_with("# ceiling: 0.0800 GB/s busbw (measured: sendrecv of 64K around the ring of 2 ranks, within hosts, 800.0 us per call, median of 3 repeat(s), spread 0%; under 1 MiB"),
            "{head}"
        );
        // The ceiling's lines come after the header's rank list (the pass runs after it).
        let at = |p: &str| out.lines().position(|l| l.starts_with(p)).unwrap_or_else(|| panic!("{p}: {out}"));
        assert!(at("#  Rank   1") < at("# ceiling: ") && at("# ceiling: ") < at("# Collective: "), "{out}");
        let rows: Vec<Vec<&str>> =
            out.lines().filter(|l| !l.starts_with('#')).map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows.len(), 2, "{out}");
        assert_eq!((rows[0].len(), rows[0][13]), (14, "125"), "{out}");
        assert_eq!((rows[1].len(), rows[1][13]), (14, "-"), "{out}");
        assert!(out.contains("busbw  #wrong  %ceil\n"), "{out}");
        let above: Vec<&str> = out.lines().filter(|l| l.starts_with("# Above the ceiling: ")).collect();
        assert_eq!(above.len(), 1, "{out}");
        assert!(
            above[0].contains("2 of 4 measurements more than 110% of it (highest 125% at all-reduce float sum 1024 B"),
            "{out}"
        );

        // An uncertain ceiling (repeats spread 230%): the rows above it are blamed on it.
        info.ceiling.as_mut().unwrap().spread_pct = 230.0;
        let mut t = TableReport::new(Vec::new());
        t.begin(&info).unwrap();
        t.ceiling(&info).unwrap();
        t.point(&info, &point(Kind::AllReduce, 1024, vec![])).unwrap();
        t.end(&info, &Totals::default()).unwrap();
        let out = String::from_utf8(t.into_inner()).unwrap();
        let head = out.lines().find(|l| l.starts_with("# ceiling: ")).unwrap();
        assert!(head.contains("spread 230%: uncertain, the machine changed speed during the pass"), "{head}");
        let above: Vec<&str> = out.lines().filter(|l| l.starts_with("# Above the ceiling: ")).collect();
        assert_eq!(above.len(), 0, "125% is within a 230% spread: {out}");

        info.ceiling = None;
        let mut t = TableReport::new(Vec::new());
        t.begin(&info).unwrap();
        t.ceiling(&info).unwrap();
        t.point(&info, &point(Kind::AllReduce, 1024, vec![])).unwrap();
        t.end(&info, &Totals::default()).unwrap();
        let out = String::from_utf8(t.into_inner()).unwrap();
        assert!(!out.contains("ceiling") && !out.contains("%ceil"), "{out}");
        let row: Vec<&str> = out.lines().find(|l| !l.starts_with('#')).unwrap().split_whitespace().collect();
        assert_eq!(row.len(), 13, "{out}");
    }

    #[test]
    fn time_column_precision_follows_nccl_tests() {
        assert_eq!(time_col(1.234), "   1.23");
        assert_eq!(time_col(123.45), "  123.5");
        assert_eq!(time_col(12345.6), "  12346");
    }
}
