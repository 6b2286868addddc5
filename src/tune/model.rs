//! What `tune` is given (its options, from `crate::cli`) and the findings it hands to `doctor`.
//! Below the other files of `tune`, which speak in them.

use crate::collective::Kind;
use crate::options::Options;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `coll-bench tune`'s options (from `crate::cli`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneOptions {
    pub sweep: Options,
    pub write_rules: Option<PathBuf>,
    pub verify: Option<PathBuf>,
    /// `--in-place`: time in place too.
    pub in_place: bool,
    /// `--no-skip`: no skip rule.
    pub no_skip: bool,
}

/// The skip rule, as printed before each table.
pub const SKIP_RULE: &str = "skip rule: an algorithm whose fastest round is more than 3x the fastest time (of those the library can select; for coll-bench's own, of all) at two consecutive sizes \
     of 64 KiB or more is not run at larger sizes (`skip` in the table, `skipped` in the CSV; the default is always run; \
     --no-skip runs every cell)";

/// At one size, the library's algorithm with the lowest median (the default aside), whether or
/// not its rounds were told apart from the default's, and the default's fastest round:
/// `doctor` names a faster median inside the noise as noise, not as "no faster algorithm".
#[derive(Clone, Debug, PartialEq)]
pub struct MedianFastest {
    pub collective: Kind,
    pub size_bytes: u64,
    pub algorithm: String,
    pub us: f64,
    pub slowest_round_us: f64,
    pub default_fastest_round_us: f64,
}

/// The library's other function for a collective (`--impl counts`) against the one coll-bench
/// times by default, at one size, interleaved as tune times every candidate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OtherCall {
    pub collective: Kind,
    pub size_bytes: u64,
    /// The function timed by default (`MPI_Reduce_scatter_block`) and its time (µs).
    pub function: &'static str,
    pub function_us: f64,
    /// The other (`MPI_Reduce_scatter`, equal counts), its time and its slowest round (µs).
    pub other_function: &'static str,
    pub other_us: f64,
    pub other_slowest_round_us: f64,
}

/// How much slower than the default the file's choice may be, beyond the two noise bands of the
/// same run, and still not count as slower (`--verify`; tune-app's bar: an application ≥ 0.95).
pub const VERIFY_TOLERANCE: f64 = 0.05;
