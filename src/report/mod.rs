//! Outputs, one file each, all fed the same records ([`RunInfo`], [`Point`], [`Totals`]). Only
//! rank 0 builds reports. The sweep's files are one table ([`outputs::FORMATS`]: checked, opened
//! and named from it); every file is written through [`outfile`], standard output through
//! [`stdout`]. Adding a format is its file here and one row in that table, with its flag, its
//! field in the options and its rows in docs/output.md (the checklist in docs/architecture.md).

pub mod csv;
pub mod interrupted;
pub mod json;
pub mod markdown;
pub mod outfile;
pub mod outputs;
pub mod progress;
pub mod series_order;
pub mod stdout;
pub mod table;

use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};
pub use outfile::{AppendFile, Policy};

pub trait Report {
    fn begin(&mut self, info: &RunInfo) -> Result<()>;
    /// Called once the ceiling pass is through (after `begin`, before the first point), with
    /// `info.ceiling` and the pass's notes filled in: the header's ceiling lines come here, so
    /// the header and the files exist before the pass measures anything.
    fn ceiling(&mut self, _info: &RunInfo) -> Result<()> {
        Ok(())
    }
    /// Called as each point is measured: write and flush, so a killed run loses nothing.
    fn point(&mut self, info: &RunInfo, p: &Point) -> Result<()>;
    /// Called once after the last point, before `end`, with the measurements found above the
    /// trend of their series (`crate::sweep::trend`: only the run's later points show it):
    /// each report adds the warning to what it wrote of them.
    fn amend(&mut self, _info: &RunInfo, _flags: &[crate::record::Flag]) -> Result<()> {
        Ok(())
    }
    fn end(&mut self, info: &RunInfo, totals: &Totals) -> Result<()>;
}

/// One footer line naming a file written: `# Wrote /abs/path (WHAT)`, the path absolute.
pub fn written_line(path: &std::path::Path, what: &str) -> String {
    format!("# Wrote {} ({what})", crate::error::shown(outfile::absolute(path)))
}
