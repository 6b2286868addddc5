//! CSV: one row per collective × type × op × placement × size, with stable, unit-suffixed
//! column names and the run's context on every row. Flushed after every row. New columns are
//! only ever appended.

use super::Report;
use crate::error::{Error, Result};
use crate::record::{Measurement, Point, RunInfo, Totals};
use serde::Serialize;
use std::fs::File;
use std::path::{Path, PathBuf};

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
    median_us: f64,
    p99_us: f64,
    min_us: f64,
    max_us: f64,
    stddev_us: String,
    wrong: String,
    out_of_bounds_bytes: String,
    ranks: usize,
    hosts: usize,
    host_names: String,
    aggregation: &'a str,
    batch_iters: u64,
}

pub struct CsvReport {
    path: PathBuf,
    writer: csv::Writer<File>,
}

fn opt(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

impl CsvReport {
    /// Create the file (and its directory) now, so an unwritable path fails before the run.
    pub fn create(path: &Path) -> Result<CsvReport> {
        let fail = |e: std::io::Error| {
            Error::usage(format!("--csv: cannot write '{}': {e}; expected a writable file path", path.display()))
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let file = File::create(path).map_err(fail)?;
        Ok(CsvReport { path: path.to_path_buf(), writer: csv::WriterBuilder::new().has_headers(false).from_writer(file) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn row(&mut self, info: &RunInfo, p: &Point, m: &Measurement) -> Result<()> {
        let hosts: Vec<&str> = info.hosts.iter().map(|(h, _)| h.as_str()).collect();
        let row = Row {
            timestamp: &info.timestamp,
            coll_bench_version: &info.version,
            backend: &info.backend,
            collective: p.collective.name(),
            dtype: p.dtype.name(),
            op: p.op.map(|o| o.name()).unwrap_or("none"),
            root: p.root.map(|r| r.to_string()).unwrap_or_default(),
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
            median_us: m.summary.median_us,
            p99_us: m.summary.p99_us,
            min_us: m.summary.min_us,
            max_us: m.summary.max_us,
            stddev_us: if m.summary.stddev_us.is_nan() { String::new() } else { m.summary.stddev_us.to_string() },
            wrong: opt(m.wrong),
            out_of_bounds_bytes: opt(m.out_of_bounds),
            ranks: info.ranks,
            hosts: info.hosts.len(),
            host_names: hosts.join(";"),
            aggregation: info.options.aggregation.name(),
            batch_iters: m.batch,
        };
        self.writer.serialize(row).map_err(|e| self.io_error(e))?;
        self.writer.flush().map_err(|e| self.io_error(e))
    }

    fn io_error(&self, e: impl std::fmt::Display) -> Error {
        Error::setup(format!("--csv: writing '{}' failed: {e}", self.path.display()))
    }
}

impl Report for CsvReport {
    fn begin(&mut self, _info: &RunInfo) -> Result<()> {
        self.writer.write_record(COLUMNS).map_err(|e| self.io_error(e))?;
        self.writer.flush().map_err(|e| self.io_error(e))
    }

    fn point(&mut self, info: &RunInfo, p: &Point) -> Result<()> {
        for m in p.measurements() {
            self.row(info, p, m)?;
        }
        Ok(())
    }

    fn end(&mut self, _info: &RunInfo, _totals: &Totals) -> Result<()> {
        self.writer.flush().map_err(|e| self.io_error(e))
    }
}
