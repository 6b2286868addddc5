//! CSV: one row per collective × type × op × placement × size, with stable, unit-suffixed
//! column names and the run's context on every row. Each row is written in one call, so the file
//! only ever holds whole rows (cut back to the last one when a write fails). New columns are
//! only ever appended.

use super::AppendFile;
use super::Report;
use crate::error::{Error, Result};
use crate::record::{Measurement, Point, RunInfo, Totals};
use serde::Serialize;
use std::path::Path;

/// The column names, in order (the header row).
pub const COLUMNS: &[&str] = &[
    "timestamp",
    "coll_bench_version",
    "backend",
    "collective",
    "dtype",
    "op",
    "root",
    "placement",
    "size_bytes",
    "count_elements",
    "elem_bytes",
    "warmup_iters",
    "iters",
    "time_us",
    "algbw_gbps",
    "busbw_gbps",
    "bus_factor",
    "median_us",
    "p99_us",
    "min_us",
    "max_us",
    "stddev_us",
    "wrong",
    "out_of_bounds_bytes",
    "ranks",
    "hosts",
    "host_names",
    "aggregation",
    "batch_iters",
    "p95_us",
    "ci95_lo_us",
    "ci95_hi_us",
    "outlier_samples",
    "first_call_us",
    "slow_ranks",
    "warnings",
    "rank",
    "mpi_library",
    "groups",
    "group_size",
    "group_count",
    "group",
    "malloc",
    "minor_faults_per_call",
    "algorithm",
    "algorithm_source",
    "ceiling_gbps",
    "ceiling_source",
    "pct_of_ceiling",
    "order",
    "budget_s",
    "pattern",
    "imbalance_sent",
    "imbalance_received",
    "dropped_pct",
    "cuda_graph",
    "agg_iters",
    "cpu_time_us",
    "register",
];

#[derive(Serialize)]
struct Row<'a> {
    timestamp: &'a str,
    coll_bench_version: &'a str,
    backend: &'a str,
    collective: &'a str,
    dtype: &'a str,
    op: &'a str,
    root: String,
    placement: &'a str,
    size_bytes: u64,
    count_elements: u64,
    elem_bytes: usize,
    warmup_iters: u64,
    iters: u64,
    time_us: f64,
    algbw_gbps: f64,
    busbw_gbps: f64,
    bus_factor: f64,
    median_us: String,
    p99_us: String,
    min_us: String,
    max_us: String,
    stddev_us: String,
    wrong: String,
    out_of_bounds_bytes: String,
    ranks: usize,
    hosts: usize,
    host_names: &'a str,
    aggregation: &'a str,
    batch_iters: u64,
    p95_us: String,
    ci95_lo_us: String,
    ci95_hi_us: String,
    outlier_samples: usize,
    first_call_us: String,
    slow_ranks: &'a str,
    warnings: &'a str,
    /// Empty on the combined row; the rank on `--per-rank` rows.
    rank: String,
    /// The MPI library the run was built against and launched with (first line of its version).
    mpi_library: &'a str,
    /// The layout of `--groups` (`world` by default).
    groups: String,
    /// Ranks per group (the bus factor's rank count).
    group_size: usize,
    group_count: usize,
    /// Empty on the combined row; the group's id on a `--per-group` row.
    group: String,
    /// The heap the MPI library ran on (`--malloc`): `default` or `kept`.
    malloc: &'a str,
    /// Minor page faults per timed call, the rank with most (`getrusage` around the timed calls).
    minor_faults_per_call: String,
    /// The algorithm the library ran, or `unknown` (docs/output.md).
    algorithm: &'a str,
    /// How `algorithm` is known: one of `record::ALGORITHM_SOURCES`.
    algorithm_source: &'a str,
    /// The run's ceiling (GB/s, `record::Ceiling`); empty without one.
    ceiling_gbps: String,
    /// How the ceiling is known (`measured`); empty without one.
    ceiling_source: &'a str,
    /// This row's busbw as a percentage of the ceiling; empty without one, and for barrier.
    pct_of_ceiling: String,
    /// The order the run measured its points in (`--order`): `collective` or `size`.
    order: &'a str,
    /// The run's `--budget` (each size and placement's time budget), seconds.
    budget_s: f64,
    /// All-to-all-v's `--pattern`; empty for the other collectives (as the next three).
    pattern: &'a str,
    /// The largest rank's bytes sent over the mean rank's.
    imbalance_sent: String,
    /// The largest rank's bytes received over the mean rank's.
    imbalance_received: String,
    /// Percentage of the `moe` pattern's token copies dropped by its capacity.
    dropped_pct: String,
    /// `-G`: graph launches per sample (0: calls launched on the stream); empty on MPI.
    cuda_graph: String,
    /// `-m`: calls per NCCL group; empty on MPI.
    agg_iters: String,
    /// `-C 1`: the host's time to launch one call, µs; empty otherwise.
    cpu_time_us: String,
    /// `-R`: 0 buffers not registered, 1 `ncclCommRegister`, 2 symmetric windows; empty on MPI.
    register: String,
}

/// Which row of a measurement: the combined one, one rank's (`--per-rank`) or one group's
/// (`--per-group`).
#[derive(Clone, Copy)]
enum Which {
    Combined,
    Rank(usize),
    Group(usize, f64),
}

/// The fields of a measurement that each of its rows repeats.
struct Shared {
    host_names: String,
    slow_ranks: String,
    warnings: String,
    /// With `--per-rank`: each rank's host, by rank (its row's `host_names`).
    host_of_rank: Vec<String>,
}

pub struct CsvReport {
    /// `None` once [`CsvReport::finish`] has written the warnings found after the sweep.
    file: Option<AppendFile>,
    path: std::path::PathBuf,
    /// Columns appended after [`COLUMNS`] by a caller that writes several sweeps to one file
    /// (`check`: `rule`, `repeat`), and their values for the rows written next.
    extra_columns: &'static [&'static str],
    extra: Vec<String>,
    /// Data rows written so far.
    rows: u64,
    /// The data rows of each point given to [`Report::point`], by placement, in order.
    points: Vec<Vec<(crate::record::Placement, std::ops::Range<u64>)>>,
    /// Where the current sweep's points start in `points` ([`CsvReport::next_sweep`]).
    sweep_start: usize,
    /// Warnings found after the rows were written ([`Report::amend`]): data row -> CSV kinds.
    amended: std::collections::BTreeMap<u64, Vec<&'static str>>,
}

fn opt(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// NaN (not computable) is written as an empty field.
fn num(v: f64) -> String {
    if v.is_nan() {
        String::new()
    } else {
        v.to_string()
    }
}

impl CsvReport {
    /// Write to a file created before the run (see [`super::outfile`]).
    pub fn new(file: AppendFile) -> CsvReport {
        CsvReport::with_extra_columns(file, &[])
    }

    /// As [`CsvReport::new`], with `columns` appended to every row; their values are set by
    /// [`CsvReport::set_extra`] (empty until then).
    pub fn with_extra_columns(file: AppendFile, columns: &'static [&'static str]) -> CsvReport {
        CsvReport {
            path: file.path().to_path_buf(),
            file: Some(file),
            extra_columns: columns,
            extra: vec![String::new(); columns.len()],
            rows: 0,
            points: vec![],
            sweep_start: 0,
            amended: Default::default(),
        }
    }

    /// The values of the extra columns for the rows written from now on.
    pub fn set_extra(&mut self, values: Vec<String>) {
        debug_assert_eq!(values.len(), self.extra_columns.len());
        self.extra = values;
    }

    /// The path as given or chosen.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header row: [`COLUMNS`], then the extra columns.
    pub fn write_header(&mut self) -> Result<()> {
        let header: Vec<&str> = COLUMNS.iter().chain(self.extra_columns).copied().collect();
        self.write(header)
    }

    /// The rows of one placement of a point (tune: out of place only, unless `--in-place`).
    pub fn measurement(&mut self, info: &RunInfo, p: &Point, m: &Measurement) -> Result<()> {
        // The fields every row of the measurement repeats, made once (with `--per-rank` there
        // are as many rows as ranks, and these grow with the hosts and the slow ranks).
        let hosts: Vec<&str> = info.hosts.iter().map(|(h, _)| h.as_str()).collect();
        let shared = Shared {
            host_names: hosts.join(";"),
            slow_ranks: m.slow_ranks.iter().map(|o| o.rank.to_string()).collect::<Vec<_>>().join(";"),
            warnings: m.warnings.iter().map(warning_kind).collect::<Vec<_>>().join(";"),
            host_of_rank: if info.options.per_rank {
                let mut by_rank = vec!["?".to_string(); info.ranks];
                for (h, ranks) in &info.hosts {
                    for r in ranks {
                        if let Some(slot) = by_rank.get_mut(*r) {
                            *slot = h.clone();
                        }
                    }
                }
                by_rank
            } else {
                vec![]
            },
        };
        self.row(info, &shared, p, m, Which::Combined)?;
        if info.options.per_rank {
            for r in 0..m.per_rank_us.len() {
                self.row(info, &shared, p, m, Which::Rank(r))?;
            }
        }
        if info.options.per_group {
            for (g, t) in info.group_times_us(m).into_iter().enumerate() {
                self.row(info, &shared, p, m, Which::Group(g, t))?;
            }
        }
        Ok(())
    }

    /// Data rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Remove the file: the run never started.
    pub fn remove(self) {
        if let Some(f) = self.file {
            f.remove()
        }
    }

    /// The points given from now on are another sweep's (`check` writes one per rule and
    /// repeat): [`Report::amend`]'s flags count from its first point.
    pub fn next_sweep(&mut self) {
        self.sweep_start = self.points.len();
    }

    /// Add the warnings found after the sweep to its rows, rewriting the file in one step
    /// ([`AppendFile::replace_from_records`]: a reader never sees half of it, and a failed
    /// rewrite leaves the file as it was). Nothing to add: the file is left alone. No row is
    /// appended after this.
    pub fn finish(&mut self) -> Result<()> {
        if self.amended.is_empty() {
            return Ok(());
        }
        let Some(file) = self.file.take() else { return Ok(()) };
        let amended = std::mem::take(&mut self.amended);
        let col = COLUMNS.iter().position(|c| *c == "warnings").expect("a warnings column");
        file.replace_from_records(|records, out| {
            let mut rd = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(records);
            let mut wr = csv::WriterBuilder::new().has_headers(false).flexible(true).from_writer(out);
            for (i, record) in rd.records().enumerate() {
                let record = record.map_err(std::io::Error::other)?;
                // Record 0 is the header; data row k is record k + 1.
                match i.checked_sub(1).and_then(|k| amended.get(&(k as u64))) {
                    Some(kinds) => {
                        let mut fields: Vec<String> = record.iter().map(str::to_string).collect();
                        if let Some(w) = fields.get_mut(col) {
                            for k in kinds {
                                if !w.split(';').any(|x| x == *k) {
                                    if !w.is_empty() {
                                        w.push(';');
                                    }
                                    w.push_str(k);
                                }
                            }
                        }
                        wr.write_record(&fields).map_err(std::io::Error::other)?;
                    }
                    None => wr.write_record(&record).map_err(std::io::Error::other)?,
                }
            }
            wr.flush()
        })
    }

    fn write<S: Serialize>(&mut self, record: S) -> Result<()> {
        match self.file.as_mut() {
            Some(f) => append_record(f, "--csv", record),
            None => Err(Error::setup(format!("--csv: '{}' was already finished", crate::error::shown(&self.path)))),
        }
    }

    fn row(&mut self, info: &RunInfo, shared: &Shared, p: &Point, m: &Measurement, which: Which) -> Result<()> {
        let rank = match which {
            Which::Rank(r) => Some(r),
            _ => None,
        };
        let nccl = info.options.backend == crate::options::BackendKind::Nccl;
        let row = Row {
            timestamp: &info.timestamp,
            coll_bench_version: &info.version,
            backend: &info.backend,
            collective: p.collective.name(),
            dtype: p.dtype.name(),
            op: p.op.map(|o| o.name()).unwrap_or("none"),
            root: p.root.map(|r| r.to_string()).unwrap_or_else(|| "-1".into()),
            placement: m.placement.name(),
            size_bytes: p.size_bytes,
            count_elements: p.count,
            elem_bytes: p.dtype.size(),
            warmup_iters: m.warmup_iters,
            iters: m.iters,
            time_us: m.time_us,
            algbw_gbps: m.algbw_gbps,
            busbw_gbps: m.busbw_gbps,
            bus_factor: p.bus_factor,
            median_us: num(m.summary.median_us),
            p99_us: num(m.summary.p99_us),
            min_us: num(m.summary.min_us),
            max_us: num(m.summary.max_us),
            stddev_us: num(m.summary.stddev_us),
            wrong: opt(m.wrong),
            out_of_bounds_bytes: opt(m.out_of_bounds),
            ranks: info.ranks,
            hosts: info.hosts.len(),
            host_names: &shared.host_names,
            aggregation: info.options.aggregation.name(),
            batch_iters: m.batch,
            p95_us: num(m.summary.p95_us),
            ci95_lo_us: num(m.summary.ci95_lo_us),
            ci95_hi_us: num(m.summary.ci95_hi_us),
            outlier_samples: m.summary.outliers,
            first_call_us: m.first_call_us.map(|v| v.to_string()).unwrap_or_default(),
            slow_ranks: &shared.slow_ranks,
            warnings: &shared.warnings,
            rank: rank.map(|r| r.to_string()).unwrap_or_default(),
            mpi_library: &info.mpi_library,
            groups: info.options.groups.to_string(),
            group_size: info.group_size(),
            group_count: info.groups.len().max(1),
            group: match which {
                Which::Group(g, _) => g.to_string(),
                _ => String::new(),
            },
            malloc: info.options.malloc.name(),
            minor_faults_per_call: m.minor_faults_per_call.map(num).unwrap_or_default(),
            algorithm: &p.algorithm,
            algorithm_source: &p.algorithm_source,
            ceiling_gbps: info.ceiling.as_ref().map(|c| num(c.gbps)).unwrap_or_default(),
            ceiling_source: info.ceiling.as_ref().map_or("", |c| c.source),
            pct_of_ceiling: String::new(),
            order: info.options.order.name(),
            budget_s: info.options.budget_s,
            pattern: p.traffic.as_ref().map_or("", |t| t.pattern.as_str()),
            imbalance_sent: p.traffic.as_ref().map(|t| num(t.imbalance_sent)).unwrap_or_default(),
            imbalance_received: p.traffic.as_ref().map(|t| num(t.imbalance_received)).unwrap_or_default(),
            dropped_pct: p.traffic.as_ref().map(|t| num(t.dropped_pct)).unwrap_or_default(),
            cuda_graph: if nccl { info.options.launch.cuda_graph.to_string() } else { String::new() },
            agg_iters: if nccl { info.options.launch.agg_iters.to_string() } else { String::new() },
            cpu_time_us: m.cpu_time_us.map(num).unwrap_or_default(),
            register: if nccl { info.options.launch.register.to_string() } else { String::new() },
        };
        let mut row = row;
        // A rank's (group's) row names the host(s) it covers, and leaves the slow ranks (a fact
        // of the combined point) to the combined row: O(1) per row, not O(hosts) per rank.
        let own_hosts = match which {
            Which::Combined => None,
            Which::Rank(r) => Some(shared.host_of_rank.get(r).cloned().unwrap_or_else(|| "?".into())),
            Which::Group(g, _) => info.groups.get(g).map(|x| x.hosts.join(";")),
        };
        if let Some(h) = &own_hosts {
            row.host_names = h;
            row.slow_ranks = "";
        }
        let own = match which {
            Which::Combined => None,
            Which::Rank(r) => Some(m.per_rank_us[r]),
            Which::Group(_, t) => Some(t),
        };
        if let Some(t) = own {
            // A per-rank (per-group) row: that rank's own mean time (the group's ranks' times
            // combined by -a) and the bandwidth it implies; the sample statistics describe the
            // combined samples and are left empty.
            row.time_us = t;
            row.algbw_gbps = if t > 0.0 { m.algbw_gbps * m.time_us / t } else { 0.0 };
            row.busbw_gbps = row.algbw_gbps * p.bus_factor;
            for f in [
                &mut row.median_us,
                &mut row.p95_us,
                &mut row.p99_us,
                &mut row.min_us,
                &mut row.max_us,
                &mut row.stddev_us,
                &mut row.ci95_lo_us,
                &mut row.ci95_hi_us,
            ] {
                f.clear();
            }
        }
        row.pct_of_ceiling = info.pct_of_ceiling(p, row.busbw_gbps).map(num).unwrap_or_default();
        let extra = std::mem::take(&mut self.extra);
        let written = self.write((row, &extra));
        self.extra = extra;
        self.rows += written.is_ok() as u64;
        written
    }
}

/// One CSV record (a struct or a list of fields), formatted in memory and appended in one call,
/// so `file` only ever holds whole rows; `flag` names the output in the error.
pub(crate) fn append_record<S: Serialize>(file: &mut AppendFile, flag: &str, record: S) -> Result<()> {
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::with_capacity(512));
    let bytes = w
        .serialize(record)
        .and_then(|_| w.into_inner().map_err(|e| e.into_error().into()))
        .map_err(|e| Error::setup(format!("{flag}: writing '{}' failed: {e}", crate::error::shown(file.path()))))?;
    file.append(&bytes)
}

fn warning_kind(w: &crate::stats::Warning) -> &'static str {
    use crate::stats::Warning;
    match w {
        Warning::Noisy { .. } => "noisy",
        Warning::MeanOffMedian { .. } => "mean_off_median",
        Warning::PageFaults { .. } => "page_faults",
        Warning::AboveTrend { .. } => "above_trend",
        Warning::SchedulerTick { .. } => "scheduler_tick",
    }
}

impl Report for CsvReport {
    fn begin(&mut self, _info: &RunInfo) -> Result<()> {
        self.write_header()
    }

    fn point(&mut self, info: &RunInfo, p: &Point) -> Result<()> {
        let mut rows = vec![];
        for m in p.measurements() {
            let first = self.rows;
            self.measurement(info, p, m)?;
            rows.push((m.placement, first..self.rows));
        }
        self.points.push(rows);
        Ok(())
    }

    fn amend(&mut self, _info: &RunInfo, flags: &[crate::record::Flag]) -> Result<()> {
        for f in flags {
            let Some(rows) = self.points.get(self.sweep_start + f.seen.point) else { continue };
            for (_, range) in rows.iter().filter(|(p, _)| *p == f.seen.placement) {
                for r in range.clone() {
                    self.amended.entry(r).or_default().push(warning_kind(&f.warning));
                }
            }
        }
        Ok(())
    }

    fn end(&mut self, _info: &RunInfo, _totals: &Totals) -> Result<()> {
        self.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Kind;
    use crate::dtype::{DType, Op};
    use crate::options::Options;
    use crate::record::{Measurement, Placement, Runs};
    use crate::stats::RankOutlier;

    /// A rank's row names its own host and leaves the slow ranks to the combined row; a group's
    /// row names its group's hosts (issue 27: per-rank rows stay O(1), not O(hosts), each).
    #[test]
    fn per_rank_and_per_group_rows_name_their_own_hosts() {
        let runs = Runs { warmup_iters: 1, iters: 10, batch: 1, first_call_us: None };
        let mut m =
            Measurement::from_times(Placement::OutOfPlace, runs, &[1e-6, 1e-6, 1e-6, 1e-6], 1e-6, None, 8.0, 1.0);
        m.slow_ranks = vec![RankOutlier { rank: 3, time_us: 9.0, median_us: 1.0 }];
        let p = Point {
            collective: Kind::AllReduce,
            dtype: DType::Float32,
            op: Some(Op::Sum),
            root: None,
            size_bytes: 8,
            count: 2,
            bus_factor: 1.5,
            out_of_place: m.clone(),
            in_place: m.clone(),
            algorithm: "unknown".into(),
            algorithm_source: "not reported".into(),
            traffic: None,
        };
        let options = Options { per_rank: true, per_group: true, ..Options::default() };
        let info = RunInfo {
            options,
            groups: vec![
                crate::record::GroupInfo { id: 0, ranks: vec![0, 1], hosts: vec!["a".into(), "b".into()] },
                crate::record::GroupInfo { id: 1, ranks: vec![2, 3], hosts: vec!["a".into(), "b".into()] },
            ],
            ..RunInfo::sample(vec![("a".into(), vec![0, 2]), ("b".into(), vec![1, 3])])
        };
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("r.csv");
        let mut r = CsvReport::new(AppendFile::create("--csv", &path, crate::report::Policy::default()).unwrap());
        r.write_header().unwrap();
        r.measurement(&info, &p, &m).unwrap();
        drop(r);
        let mut rd = csv::Reader::from_path(&path).unwrap();
        let h = rd.headers().unwrap().clone();
        let col = |n: &str| h.iter().position(|x| x == n).unwrap();
        let got: Vec<(String, String, String, String)> = rd
            .records()
            .map(|r| r.unwrap())
            .map(|r| {
                (
                    r[col("rank")].into(),
                    r[col("group")].into(),
                    r[col("host_names")].into(),
                    r[col("slow_ranks")].into(),
                )
            })
            .collect();
        let row =
            |rank: &str, group: &str, hosts: &str, slow: &str| (rank.into(), group.into(), hosts.into(), slow.into());
        assert_eq!(
            got,
            vec![
                row("", "", "a;b", "3"),
                row("0", "", "a", ""),
                row("1", "", "b", ""),
                row("2", "", "a", ""),
                row("3", "", "b", ""),
                row("", "0", "a;b", ""),
                row("", "1", "a;b", ""),
            ]
        );
    }
}
