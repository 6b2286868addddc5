//! Outputs, one file each, all fed the same records ([`RunInfo`], [`Point`], [`Totals`]). Only
//! rank 0 builds reports. Adding a format is one file and one line in `crate::app`.

pub mod csv;
pub mod table;

use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};

pub trait Report {
    fn begin(&mut self, info: &RunInfo) -> Result<()>;
    /// Called as each point is measured: write and flush, so a killed run loses nothing.
    fn point(&mut self, info: &RunInfo, p: &Point) -> Result<()>;
    fn end(&mut self, info: &RunInfo, totals: &Totals) -> Result<()>;
}
