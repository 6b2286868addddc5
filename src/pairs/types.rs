//! What `pairs` is given and what it measures: its options (from `crate::cli`) and one pair's
//! result. Below the other files of `pairs`, which all speak in them.

use serde::{Deserialize, Serialize};

/// `coll-bench pairs`'s options (from `crate::cli`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairsOptions {
    pub latency_bytes: u64,
    pub bandwidth_bytes: u64,
    pub budget_s: f64,
    pub top: usize,
    pub sequential: bool,
    pub csv: crate::options::CsvTarget,
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
