//! What a sweep produces and every report consumes: plain data, no MPI, no formatting.

use crate::collective::Kind;
use crate::dtype::{DType, Op};
use crate::options::Options;
use crate::stats::{rank_outliers, RankOutlier, Summary, Warning};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    OutOfPlace,
    InPlace,
}

impl Placement {
    pub const ACCEPTED: &'static str = "out-of-place or in-place";

    /// The one spelling everywhere: table, CSV, JSON, specs, plot and compare.
    pub fn name(self) -> &'static str {
        match self {
            Placement::OutOfPlace => "out-of-place",
            Placement::InPlace => "in-place",
        }
    }

    /// Accepts the name and the old spellings: `out_of_place`/`in_place` (CSV and JSON of the
    /// first layout, see docs/output.md) and `out`/`in` (plot's flag then).
    pub fn parse(s: &str) -> Option<Placement> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "out-of-place" | "out" => Some(Placement::OutOfPlace),
            "in-place" | "in" => Some(Placement::InPlace),
            _ => None,
        }
    }
}

/// One placement of one point.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    pub placement: Placement,
    pub warmup_iters: u64,
    pub iters: u64,
    /// Calls per timed sample (more than one for calls shorter than a few microseconds); JSON
    /// `batch_iters`, as the CSV column.
    #[serde(rename = "batch_iters")]
    pub batch: u64,
    /// Per-iteration time: each rank's mean, combined across ranks by the aggregation policy
    /// (what nccl-tests reports).
    pub time_us: f64,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// Per-iteration samples combined across ranks by the same policy, summarised (rank 0).
    pub summary: Summary,
    /// Each rank's mean per-iteration time, by rank.
    pub per_rank_us: Vec<f64>,
    /// Wrong elements summed over ranks; `None` when the check is off.
    pub wrong: Option<u64>,
    /// Bytes written past the expected output, summed over ranks; `None` when the check is off.
    /// JSON `out_of_bounds_bytes`, as the CSV column.
    #[serde(rename = "out_of_bounds_bytes")]
    pub out_of_bounds: Option<u64>,
    /// The first warm-up call, slowest rank (µs); `None` when warm-up was fixed by `-w`.
    pub first_call_us: Option<f64>,
    /// Ranks whose time stands out from the others (three ranks or more).
    pub slow_ranks: Vec<RankOutlier>,
    /// Typed warnings with advice (rank 0).
    pub warnings: Vec<Warning>,
    /// Minor page faults per timed call (`getrusage` of the calling thread around the timed
    /// calls): the rank with most. `None` where not counted (tune's cells).
    pub minor_faults_per_call: Option<f64>,
    /// The host's time to launch one call (`-C 1`, NCCL; nccl-tests' cputime), µs, each rank's
    /// combined as the time is; `None` without `-C 1`.
    pub cpu_time_us: Option<f64>,
}

/// How one placement was run: its warm-up and timed call counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Runs {
    pub warmup_iters: u64,
    pub iters: u64,
    /// Calls per timed sample.
    pub batch: u64,
    /// The first warm-up call, slowest rank (µs); `None` when warm-up was fixed by `-w`.
    pub first_call_us: Option<f64>,
}

impl Measurement {
    /// A measurement with no calls (a placement or cell not run): no numbers.
    pub fn skipped(placement: Placement) -> Measurement {
        Measurement {
            placement,
            warmup_iters: 0,
            iters: 0,
            batch: 1,
            time_us: f64::NAN,
            algbw_gbps: f64::NAN,
            busbw_gbps: f64::NAN,
            summary: Summary::of_seconds(&[]),
            per_rank_us: vec![],
            wrong: None,
            out_of_bounds: None,
            first_call_us: None,
            slow_ranks: vec![],
            warnings: vec![],
            minor_faults_per_call: None,
            cpu_time_us: None,
        }
    }

    /// The record of one placement from its times, which the caller has combined across ranks
    /// (no MPI here): `per_rank_s`, each rank's mean per-iteration time (s), by rank; `time_s`,
    /// their combination by the aggregation policy; `combined`, the per-iteration samples
    /// combined across ranks on rank 0 (`None` on the other ranks: no summary, no warnings);
    /// `alg_bytes`, what one call moves by the collective's algorithm count; `bus_factor`, the
    /// collective's for the rank count it ran on. Unchecked: the caller sets `wrong` and
    /// `out_of_bounds` when the check ran.
    pub fn from_times(
        placement: Placement,
        runs: Runs,
        per_rank_s: &[f64],
        time_s: f64,
        combined: Option<&[f64]>,
        alg_bytes: f64,
        bus_factor: f64,
    ) -> Measurement {
        let summary = combined.map(Summary::of_seconds).unwrap_or_default();
        let warnings = if combined.is_some() { Warning::check(&summary, time_s * 1e6) } else { vec![] };
        let algbw_gbps = if time_s > 0.0 { alg_bytes / time_s / 1e9 } else { 0.0 };
        let per_rank_us: Vec<f64> = per_rank_s.iter().map(|s| s * 1e6).collect();
        let Runs { warmup_iters, iters, batch, first_call_us } = runs;
        Measurement {
            placement,
            warmup_iters,
            iters,
            batch,
            time_us: time_s * 1e6,
            algbw_gbps,
            busbw_gbps: algbw_gbps * bus_factor,
            summary,
            slow_ranks: rank_outliers(&per_rank_us),
            per_rank_us,
            wrong: None,
            out_of_bounds: None,
            first_call_us,
            warnings,
            minor_faults_per_call: None,
            cpu_time_us: None,
        }
    }

    /// Set the minor page faults per call (the rank with most), and on rank 0 (which holds the
    /// warnings) warn where they cost time: `fault_cost_us`, one fault's cost on this host
    /// (`None`: unknown, no warning); `warn`: whether the advice applies (the default heap).
    pub fn set_faults(&mut self, faults_per_call: f64, fault_cost_us: Option<f64>, warn: bool) {
        self.minor_faults_per_call = Some(faults_per_call);
        if let (true, Some(c)) = (warn, fault_cost_us) {
            self.warnings.extend(Warning::page_faults(faults_per_call, c, self.time_us));
        }
    }
}

impl Measurement {
    /// This measurement without each rank's time (`per_rank_us` emptied; the slow ranks stay
    /// named): what a caller keeps beyond the point's reports (check's repeats, tune's cells),
    /// so that what it holds per point does not grow with the ranks.
    pub fn without_rank_times(self) -> Measurement {
        Measurement { per_rank_us: Vec::new(), ..self }
    }
}

/// One host's ranks at one measurement: the spread of their times and the slowest of them
/// (`--per-rank`'s table lines).
#[derive(Clone, Debug, PartialEq)]
pub struct HostTimes<'a> {
    pub host: &'a str,
    pub ranks: &'a [usize],
    pub min_us: f64,
    pub median_us: f64,
    pub max_us: f64,
    /// The rank with the longest time (the lowest such rank on a tie).
    pub slowest_rank: usize,
}

/// Each host's [`HostTimes`] at one measurement, in the hosts' order (`hosts`: name and ranks,
/// as [`RunInfo::hosts`]; `per_rank_us`: every rank's time, by rank). Hosts without a time
/// (none of their ranks in `per_rank_us`) are left out.
pub fn host_times<'a>(hosts: &'a [(String, Vec<usize>)], per_rank_us: &[f64]) -> Vec<HostTimes<'a>> {
    let mut out = Vec::with_capacity(hosts.len());
    let mut times: Vec<f64> = Vec::new();
    for (host, ranks) in hosts {
        times.clear();
        let mut slowest: Option<(usize, f64)> = None;
        for &r in ranks {
            let Some(&t) = per_rank_us.get(r) else { continue };
            times.push(t);
            if slowest.is_none_or(|(_, s)| t > s) {
                slowest = Some((r, t));
            }
        }
        let Some((slowest_rank, max_us)) = slowest else { continue };
        out.push(HostTimes {
            host,
            ranks,
            min_us: times.iter().copied().fold(f64::INFINITY, f64::min),
            median_us: crate::stats::median_of(&times),
            max_us,
            slowest_rank,
        });
    }
    out
}

#[cfg(test)]
impl Measurement {
    /// A plausible measurement for unit tests: 10 calls of 1.5 us on 2 ranks, checked, no
    /// warnings; tests change the fields they look at.
    pub fn sample(placement: Placement) -> Measurement {
        let runs = Runs { warmup_iters: 1, iters: 10, batch: 1, first_call_us: None };
        // 150 B in 1.5 us on each of 2 ranks: 0.1 GB/s, bus factor 1.
        let m = Measurement::from_times(placement, runs, &[1.5e-6, 1.5e-6], 1.5e-6, None, 150.0, 1.0);
        Measurement { wrong: Some(0), out_of_bounds: Some(0), ..m }
    }
}

/// One size of one collective × type × op: both placements.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub collective: Kind,
    pub dtype: DType,
    /// `None` for collectives that do not reduce (JSON `"none"`, as the CSV).
    #[serde(serialize_with = "op_or_none")]
    pub op: Option<Op>,
    /// `None` for collectives without a root (JSON `-1`, as the CSV).
    #[serde(serialize_with = "root_or_minus_one")]
    pub root: Option<usize>,
    pub size_bytes: u64,
    /// JSON `count_elements`, as the CSV column.
    #[serde(rename = "count_elements")]
    pub count: u64,
    pub bus_factor: f64,
    pub out_of_place: Measurement,
    pub in_place: Measurement,
    /// The algorithm the library ran for this point (both placements), or `unknown`; see
    /// [`ALGORITHM_SOURCES`] for how it is known.
    pub algorithm: String,
    /// How `algorithm` is known: one of [`ALGORITHM_SOURCES`].
    pub algorithm_source: String,
    /// All-to-all-v's traffic (`--pattern`) and its imbalance at this size; `None` for the
    /// other collectives (the keys are then absent from the JSON, the columns empty in the CSV).
    #[serde(flatten)]
    pub traffic: Option<Traffic>,
}

/// What all-to-all-v's pattern made of one size (`crate::collective::traffic`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Traffic {
    /// `--pattern` as written back (`uniform`, `spread=0.5`, `matrix=FILE`, `moe:…`).
    pub pattern: String,
    /// The largest rank's bytes sent over the mean rank's (1: balanced).
    pub imbalance_sent: f64,
    /// The largest rank's bytes received over the mean rank's.
    pub imbalance_received: f64,
    /// Percentage of the `moe` pattern's token copies dropped by its capacity (0 otherwise).
    pub dropped_pct: f64,
}

impl Traffic {
    pub fn of(
        pattern: &crate::collective::traffic::Pattern,
        peers: &crate::collective::traffic::PeerCounts,
    ) -> Traffic {
        let i = peers.imbalance();
        Traffic {
            pattern: pattern.to_string(),
            imbalance_sent: i.sent,
            imbalance_received: i.received,
            dropped_pct: i.dropped * 100.0,
        }
    }
}

/// The algorithm column's value when the library cannot tell.
pub const UNKNOWN_ALGORITHM: &str = "unknown";

/// How an algorithm is known (`algorithm_source`), the one vocabulary (docs/output.md): named by
/// `forced` (the library's variable, set by the user, read back through MPI_T), `fixed rules`
/// (Open MPI 4.1's `coll_tuned` decision, replicated), `rules file` (an Open MPI dynamic rules
/// file's rule, applied as Open MPI does), `coll-bench` (`--impl`: our own), `other call` (tune's candidate of the library's other function), `library log` (NCCL's
/// tuning line for one call after the timed ones); `unknown` because
/// of `rules file` (a rules file that cannot be read as Open MPI reads it), `auto` (the
/// library's own selection, not replicated), `other component` (Open MPI: a component other than
/// `coll_tuned` may serve the communicator), `not reported` (nothing says: NCCL, another
/// library, a point-to-point test).
pub const ALGORITHM_SOURCES: [&str; 9] = [
    "forced",
    "fixed rules",
    "coll-bench",
    "other call",
    "library log",
    "rules file",
    "auto",
    "other component",
    "not reported",
];

impl Point {
    /// The placements the collective is measured in: both, or out of place alone where it has
    /// no in-place form (all-to-all-v), whose in-place row is then not written.
    pub fn measurements(&self) -> Vec<&Measurement> {
        if self.collective.spec().has_in_place() {
            vec![&self.out_of_place, &self.in_place]
        } else {
            vec![&self.out_of_place]
        }
    }

    /// A copy without each rank's times ([`Measurement::without_rank_times`]), to keep.
    pub fn without_rank_times(&self) -> Point {
        let strip = |m: &Measurement| Measurement { per_rank_us: Vec::new(), ..m.clone() };
        Point { out_of_place: strip(&self.out_of_place), in_place: strip(&self.in_place), ..self.clone() }
    }
}

/// The run's context, for headers and for every CSV row.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub version: String,
    /// UTC, RFC 3339.
    pub timestamp: String,
    pub backend: String,
    /// Library lines from the backend (name and version).
    pub backend_details: Vec<String>,
    /// The MPI library that bootstraps the run (`MPI_Get_library_version`'s first line), whatever
    /// the backend: "Open MPI v4.1.4, …", "MPICH Version: 4.0.2", "Intel(R) MPI Library …".
    pub mpi_library: String,
    pub ranks: usize,
    /// Hosts in order of their first rank, each with its ranks (JSON: `{"name", "ranks"}`).
    #[serde(serialize_with = "hosts_as_objects")]
    pub hosts: Vec<(String, Vec<usize>)>,
    pub options: Options,
    /// Process id of every rank, by rank (for the header).
    pub pids: Vec<u32>,
    /// What the run changed of what was asked, once each (e.g. types the backend does not
    /// support, dropped from a list that has others).
    pub notes: Vec<String>,
    /// The groups of `--groups` (the world: one group of every rank).
    pub groups: Vec<GroupInfo>,
    /// What the links between the ranks carried in the ceiling pass, before the sweep; `None`
    /// with `--no-ceiling`, one rank per group, or where no subcommand measured it (JSON `null`).
    pub ceiling: Option<Ceiling>,
}

/// The ceiling every point's bus bandwidth is measured against: nccl-tests' busbw is defined so
/// that it compares with the bandwidth of the slowest link the collective uses, one way
/// (its `doc/PERFORMANCE.md`). Measured before the sweep as that: sendrecv around the ring of
/// each group's ranks, every rank sending to the next and receiving from the previous at once, at
/// the run's largest size that fits the buffers (at most [`Ceiling::MAX_BYTES`]); the ring's
/// time is its slowest link's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ceiling {
    /// The ring's bus bandwidth (GB/s; sendrecv's bus factor is 1): what each link carried one
    /// way, every link busy at once.
    pub gbps: f64,
    /// How it is known: `measured` (the ceiling pass).
    pub source: &'static str,
    /// Bytes each rank sent (and received) per call.
    pub size_bytes: u64,
    /// Time per call (µs), each rank's mean combined by `-a`.
    pub time_us: f64,
    /// `within hosts` when every pair of ring neighbours shares a host, else `between hosts`.
    pub links: &'static str,
    /// Between hosts: each host's nominal link rate where its hardware states one
    /// ([`crate::nic`]), listed beside the measured ceiling (a port's speed is not what MPI
    /// carries over it); empty within hosts.
    pub nominal: Vec<Nominal>,
    /// The sweep, between hosts: each host pair the world's ring (rank order) crosses, measured
    /// on its own point to point ([`crate::pairs::links::ring_host_links`]); the ring's one
    /// ceiling is the slowest of them with every link busy. Empty elsewhere.
    pub host_pairs: Vec<Link>,
    /// Wall time of the whole pass on rank 0 (the ring, and between hosts the nominal rates and
    /// the host pairs), seconds: what the ceiling cost the run.
    pub seconds: f64,
    /// How many times the ring was timed ([`Ceiling::REPEATS`]); `gbps` and `time_us` are the
    /// median repeat's.
    pub repeats: u32,
    /// The repeats' spread: (slowest - fastest) / median time, percent. Wide
    /// ([`Ceiling::uncertain`]): the machine changed speed during the pass, and no row is
    /// judged against the ceiling as if it were known.
    pub spread_pct: f64,
}

impl Ceiling {
    /// The largest transfer of the ceiling pass: beyond it links have levelled off.
    pub const MAX_BYTES: u64 = 256 << 20;
    /// Below this the pass measures latency more than bandwidth (the header says so).
    pub const PLATEAU_BYTES: u64 = 1 << 20;
    /// A point this far above the ceiling is more than noise: the ceiling is not its limit.
    pub const ABOVE: f64 = 1.10;
    /// Rows this many times the ceiling point at the ceiling more than at another path: a pass
    /// measured while the machine was busy (one read 0.115 GB/s where 13-15 is usual).
    pub const FAR_ABOVE: f64 = 5.0;
    /// The pass times the ring this many times, each with its own warm-up and budget.
    pub const REPEATS: u32 = 3;
    /// Each repeat's budget at most (the sweep's `--budget` when smaller), seconds.
    pub const REPEAT_BUDGET_S: f64 = 0.05;
    /// Repeats past the first only while the pass has taken less than this, seconds.
    pub const REPEAT_WITHIN_S: f64 = 2.0;
    /// Repeats spread wider than this (percent of the median) leave the ceiling uncertain.
    pub const UNCERTAIN_PCT: f64 = 50.0;

    /// Whether the repeats disagreed too much to read rows against the ceiling.
    pub fn uncertain(&self) -> bool {
        self.spread_pct > Self::UNCERTAIN_PCT
    }

    /// The percentage of the ceiling above which a row is "above the ceiling": [`Ceiling::ABOVE`],
    /// or further out by the repeats' spread when that is wider (a row within the ceiling's own
    /// noise is not above it).
    pub fn above_pct(&self) -> f64 {
        (Self::ABOVE * 100.0).max(100.0 + self.spread_pct)
    }

    /// The ceiling for a header: three significant digits, at least two decimals (a 50 Mbit/s
    /// link is `0.00622`, not `0.01`).
    pub fn shown_gbps(&self) -> String {
        shown_gbps(self.gbps)
    }

    /// The slowest nominal rate of the hosts that state one.
    pub fn slowest_nominal(&self) -> Option<&Nominal> {
        self.nominal.iter().min_by(|a, b| a.gbps.total_cmp(&b.gbps))
    }

    /// `busbw_gbps` as a percentage of the ceiling.
    pub fn pct(&self, busbw_gbps: f64) -> Option<f64> {
        (self.gbps > 0.0 && busbw_gbps.is_finite()).then(|| busbw_gbps / self.gbps * 100.0)
    }
}

/// The point-to-point rate between two hosts (the same host twice: within it): the median of
/// the rank pairs' one-way bandwidth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Link {
    pub a: String,
    pub b: String,
    pub gbps: f64,
    pub rank_pairs: usize,
}

/// A host's nominal link rate, where its hardware says ([`crate::nic`]): its fastest up
/// interface.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Nominal {
    pub host: String,
    /// `eth0`, or an InfiniBand `device/port`.
    pub interface: String,
    /// GB/s, one way (the hardware states Gb/s: a 10 Gb/s port is 1.25).
    pub gbps: f64,
}

impl Nominal {
    /// `1.25 GB/s (eth0, 10 Gb/s)`.
    pub fn shown(&self) -> String {
        format!("{} GB/s ({}, {} Gb/s)", shown_gbps(self.gbps), self.interface, self.gbps * 8.0)
    }
}

/// A rate in GB/s to three significant digits (at least two decimals), as the ceiling's header
/// shows it: `14.33`, `0.650`, `0.00622`.
pub fn shown_gbps(gbps: f64) -> String {
    let magnitude = if gbps > 0.0 { gbps.log10().floor() as i32 } else { 0 };
    format!("{:.*}", (2 - magnitude).clamp(2, 9) as usize, gbps)
}

/// One group of `--groups`, for the header and the reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupInfo {
    pub id: usize,
    pub ranks: Vec<usize>,
    /// The hosts of its ranks, in order of their first rank in the group.
    pub hosts: Vec<String>,
}

impl GroupInfo {
    /// The groups of `ranks_of` on a world whose hosts are `hosts` (name, ranks).
    pub fn of(groups: &[(usize, Vec<usize>)], hosts: &[(String, Vec<usize>)]) -> Vec<GroupInfo> {
        let host_of =
            |r: usize| hosts.iter().find(|(_, rs)| rs.contains(&r)).map(|(h, _)| h.clone()).unwrap_or_default();
        groups
            .iter()
            .map(|(id, ranks)| {
                let mut hs: Vec<String> = vec![];
                for r in ranks {
                    let h = host_of(*r);
                    if !hs.contains(&h) {
                        hs.push(h);
                    }
                }
                GroupInfo { id: *id, ranks: ranks.clone(), hosts: hs }
            })
            .collect()
    }
}

#[cfg(test)]
impl RunInfo {
    /// A run's context for unit tests: `hosts` (name, ranks), default options, no groups, no
    /// notes; tests change the fields they look at.
    pub fn sample(hosts: Vec<(String, Vec<usize>)>) -> RunInfo {
        let ranks = hosts.iter().map(|(_, r)| r.len()).sum();
        RunInfo {
            version: "0".into(),
            timestamp: "t".into(),
            backend: "mpi".into(),
            backend_details: vec![],
            mpi_library: "MPI".into(),
            ranks,
            hosts,
            options: crate::options::Options::default(),
            pids: (1..=ranks as u32).collect(),
            notes: vec![],
            groups: vec![],
            ceiling: None,
        }
    }
}

impl RunInfo {
    /// `m`'s bus bandwidth as a percentage of the run's ceiling; `None` without a ceiling and
    /// for collectives that move no data (barrier).
    pub fn pct_of_ceiling(&self, p: &Point, busbw_gbps: f64) -> Option<f64> {
        if !p.collective.spec().sized() {
            return None;
        }
        self.ceiling.as_ref().and_then(|c| c.pct(busbw_gbps))
    }

    /// Whether a ring of each group's ranks (the world's, without groups), in rank order, has
    /// neighbours on different hosts.
    pub fn ring_crosses_hosts(&self) -> bool {
        // Each rank's host, indexed once: O(ranks), not a search of every host's ranks per rank.
        let mut host = vec![usize::MAX; self.ranks];
        for (i, (_, rs)) in self.hosts.iter().enumerate() {
            for r in rs {
                if let Some(slot) = host.get_mut(*r) {
                    *slot = i;
                }
            }
        }
        let host_of = |r: usize| host.get(r).copied();
        let world: Vec<usize> = (0..self.ranks).collect();
        let rings: Vec<&[usize]> =
            if self.groups.is_empty() { vec![&world[..]] } else { self.groups.iter().map(|g| &g.ranks[..]).collect() };
        rings.iter().any(|ring| (0..ring.len()).any(|i| host_of(ring[i]) != host_of(ring[(i + 1) % ring.len()])))
    }

    /// The ceiling's `links`: `between hosts` when [`RunInfo::ring_crosses_hosts`], else
    /// `within hosts`.
    pub fn ring_links(&self) -> &'static str {
        if self.ring_crosses_hosts() {
            Self::BETWEEN_HOSTS
        } else {
            Self::WITHIN_HOSTS
        }
    }

    pub const BETWEEN_HOSTS: &'static str = "between hosts";
    pub const WITHIN_HOSTS: &'static str = "within hosts";

    /// Ranks per group (every group has the same size).
    pub fn group_size(&self) -> usize {
        self.groups.first().map_or(self.ranks, |g| g.ranks.len())
    }

    /// Each group's time of `m`: its ranks' times combined by `-a` (rank 0 of the group for
    /// `rank0`), by group; empty when the ranks' times are not there.
    pub fn group_times_us(&self, m: &Measurement) -> Vec<f64> {
        use crate::options::Aggregation;
        let t = &m.per_rank_us;
        if t.is_empty() {
            return vec![];
        }
        self.groups
            .iter()
            .map(|g| {
                let v: Vec<f64> = g.ranks.iter().filter_map(|r| t.get(*r).copied()).collect();
                match self.options.aggregation {
                    Aggregation::Rank0 => v.first().copied().unwrap_or(0.0),
                    Aggregation::Mean => v.iter().sum::<f64>() / v.len().max(1) as f64,
                    Aggregation::Min => v.iter().copied().fold(f64::INFINITY, f64::min),
                    Aggregation::Max => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                }
            })
            .collect()
    }
}

/// The op as the CSV has it: its name, or `none` where the collective does not reduce.
fn op_or_none<S: serde::Serializer>(op: &Option<Op>, s: S) -> Result<S::Ok, S::Error> {
    match op {
        Some(op) => op.serialize(s),
        None => s.serialize_str("none"),
    }
}

/// The root as the CSV has it: the rank, or `-1` where the collective has none.
fn root_or_minus_one<S: serde::Serializer>(root: &Option<usize>, s: S) -> Result<S::Ok, S::Error> {
    match root {
        Some(r) => s.serialize_i64(*r as i64),
        None => s.serialize_i64(-1),
    }
}

fn hosts_as_objects<S: serde::Serializer>(hosts: &[(String, Vec<usize>)], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Host<'a> {
        name: &'a str,
        ranks: &'a [usize],
    }
    s.collect_seq(hosts.iter().map(|(name, ranks)| Host { name, ranks }))
}

/// Totals over the whole run, for the footer and the exit code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub points: u64,
    pub wrong: u64,
    /// JSON `out_of_bounds_bytes`, as the CSV column.
    #[serde(rename = "out_of_bounds_bytes")]
    pub out_of_bounds: u64,
    /// Largest peak resident memory of any rank, bytes (filled in after the sweep).
    pub peak_rss_bytes: u64,
}

impl Totals {
    pub fn add(&mut self, p: &Point) {
        self.points += 1;
        for m in p.measurements() {
            self.wrong += m.wrong.unwrap_or(0);
            self.out_of_bounds += m.out_of_bounds.unwrap_or(0);
        }
    }
    pub fn failed(&self) -> bool {
        self.wrong > 0 || self.out_of_bounds > 0
    }
}

// Warnings found after a run, by comparing its points (`crate::sweep::trend`); the reports
// add them to what they wrote (`crate::report::Report::amend`).

/// One measurement's median, as the sweep saw it (rank 0's summaries; NaN elsewhere): what `crate::sweep::trend` compares.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    /// The point's place in the run (0 for the first point the reports were given).
    pub point: usize,
    pub collective: Kind,
    pub dtype: DType,
    pub op: Option<Op>,
    pub size_bytes: u64,
    pub placement: Placement,
    pub median_us: f64,
    /// all-to-all-v's pattern (a hash of its text; 0 for the other collectives): a series each.
    pub pattern: u64,
}

impl Seen {
    /// The measured placements of the `point`-th point.
    pub fn of(point: usize, p: &Point) -> Vec<Seen> {
        p.measurements()
            .into_iter()
            .map(|m| Seen {
                point,
                collective: p.collective,
                dtype: p.dtype,
                op: p.op,
                size_bytes: p.size_bytes,
                placement: m.placement,
                median_us: m.summary.median_us,
                pattern: p.traffic.as_ref().map_or(0, |t| {
                    use std::hash::{Hash, Hasher};
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    t.pattern.hash(&mut h);
                    h.finish() | 1
                }),
            })
            .collect()
    }

    pub fn series(&self) -> (Kind, DType, Option<Op>, Placement, u64) {
        (self.collective, self.dtype, self.op, self.placement, self.pattern)
    }
}

/// A measurement found above the trend, with its warning.
#[derive(Clone, Debug)]
pub struct Flag {
    pub seen: Seen,
    pub warning: Warning,
}

impl Flag {
    /// As the table names a measurement: `all-reduce float sum 8 B out-of-place`.
    pub fn label(&self) -> String {
        let s = &self.seen;
        format!("{} {} B {}", series_label(s.collective, s.dtype, s.op), s.size_bytes, s.placement.name())
    }
}

/// A collective × type × op as the table's blocks and warnings name it: `all-reduce float sum`.
pub fn series_label(collective: Kind, dtype: DType, op: Option<Op>) -> String {
    format!("{} {}{}", collective.name(), dtype.name(), op.map(|o| format!(" {o}")).unwrap_or_default())
}

/// A host whose ranks outnumber the cores they may run on (the union of their bindings), so
/// they take turns at the scheduler's tick.
#[derive(Clone, Debug, PartialEq)]
pub struct Crowded {
    pub host: String,
    pub ranks: usize,
    pub cores: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four ranks, rank 3 slow; time_s is what the aggregation policy gave (the slowest here),
    /// and its samples' median sits far from it, which rank 0 warns of.
    #[test]
    fn a_measurement_from_times_derives_bandwidths_rank_times_and_rank_0s_summary() {
        let runs = Runs { warmup_iters: 3, iters: 20, batch: 2, first_call_us: Some(9.0) };
        let per_rank_s = [1e-3, 1e-3, 1e-3, 4e-3];
        let samples = [1e-3; 8];
        let m = Measurement::from_times(Placement::InPlace, runs, &per_rank_s, 4e-3, Some(&samples), 2e6, 1.5);
        assert_eq!(m.placement, Placement::InPlace);
        assert_eq!((m.warmup_iters, m.iters, m.batch, m.first_call_us), (3, 20, 2, Some(9.0)));
        assert_eq!(m.time_us, 4000.0);
        // 2 MB in 4 ms: 0.5 GB/s; the bus factor on top.
        assert!((m.algbw_gbps - 0.5).abs() < 1e-12 && (m.busbw_gbps - 0.75).abs() < 1e-12, "{m:?}");
        assert_eq!(m.per_rank_us, vec![1000.0, 1000.0, 1000.0, 4000.0]);
        assert_eq!(m.slow_ranks.iter().map(|o| o.rank).collect::<Vec<_>>(), vec![3]);
        assert_eq!((m.summary.samples, m.summary.median_us), (8, 1000.0));
        assert!(matches!(m.warnings[..], [Warning::MeanOffMedian { .. }]), "{:?}", m.warnings);
        assert_eq!((m.wrong, m.out_of_bounds), (None, None));

        // Another rank: the same numbers, no summary and no warnings.
        let other = Measurement::from_times(Placement::InPlace, runs, &per_rank_s, 4e-3, None, 2e6, 1.5);
        assert_eq!((other.time_us, other.busbw_gbps, other.per_rank_us.len()), (m.time_us, m.busbw_gbps, 4));
        assert_eq!(other.summary.samples, 0);
        assert!(other.warnings.is_empty());

        // No time: no bandwidth (not a division by zero).
        let zero = Measurement::from_times(Placement::OutOfPlace, runs, &[0.0, 0.0], 0.0, None, 2e6, 1.0);
        assert_eq!((zero.algbw_gbps, zero.busbw_gbps), (0.0, 0.0));
    }

    /// Each host's spread and slowest rank, from the ranks' times by rank; a tie goes to the
    /// lower rank, a host without a time is left out.
    #[test]
    fn host_times_summarise_each_hosts_ranks() {
        let hosts: Vec<(String, Vec<usize>)> =
            vec![("a".into(), vec![0, 2, 4]), ("b".into(), vec![1, 3]), ("c".into(), vec![9])];
        let t = [1.0, 5.0, 3.0, 5.0, 2.0];
        let h = host_times(&hosts, &t);
        assert_eq!(h.len(), 2);
        assert_eq!((h[0].host, h[0].min_us, h[0].median_us, h[0].max_us, h[0].slowest_rank), ("a", 1.0, 2.0, 3.0, 2));
        assert_eq!((h[1].host, h[1].min_us, h[1].median_us, h[1].max_us, h[1].slowest_rank), ("b", 5.0, 5.0, 5.0, 1));
        assert_eq!(h[1].ranks, &[1, 3]);
        let m = Measurement::sample(Placement::InPlace);
        assert_eq!((m.per_rank_us.len(), m.clone().without_rank_times().per_rank_us.len()), (2, 0));
    }

    /// docs/output.md's table of sources lists this vocabulary, in this order, and no other.
    #[test]
    fn the_algorithm_sources_are_the_ones_documented() {
        let page = include_str!("../docs/output.md");
        let section = page.split("## Which algorithm").nth(1).unwrap().split("\n## ").next().unwrap();
        let documented: Vec<&str> = section
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split('`').next())
            .skip(1) // the header row
            .collect();
        assert_eq!(documented, ALGORITHM_SOURCES);
    }
}
