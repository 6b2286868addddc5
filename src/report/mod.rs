//! Outputs, one file each, all fed the same records ([`RunInfo`], [`Point`], [`Totals`]). Only
//! rank 0 builds reports. Adding a format is one file and one line in `crate::app`.

pub mod csv;
pub mod json;
pub mod markdown;
pub mod progress;
pub mod table;

use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};

pub trait Report {
    fn begin(&mut self, info: &RunInfo) -> Result<()>;
    /// Called as each point is measured: write and flush, so a killed run loses nothing.
    fn point(&mut self, info: &RunInfo, p: &Point) -> Result<()>;
    fn end(&mut self, info: &RunInfo, totals: &Totals) -> Result<()>;
}

/// Create `path` (and its directory) now, so an unwritable path fails before the run.
pub(crate) fn create_file(flag: &str, path: &std::path::Path) -> Result<std::fs::File> {
    let fail = |e: std::io::Error| {
        crate::error::Error::usage(format!(
            "{flag}: cannot write '{}': {e}; expected a writable file path",
            path.display()
        ))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::File::create(path).map_err(fail)
}

/// Replace the file's contents in one step (write beside it, then rename), so a reader or a
/// killed run never sees half a file.
pub(crate) fn replace_file(flag: &str, path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| crate::error::Error::setup(format!("{flag}: writing '{}' failed: {e}", path.display())))
}

/// Where a run writes by default: `results/<prefix>-<UTC time>.csv` under the working directory.
pub(crate) fn default_results_path(prefix: &str, now: &chrono::DateTime<chrono::Utc>) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("results/{prefix}-{}.csv", now.format("%Y%m%dT%H%M%SZ")))
}
