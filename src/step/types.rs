//! What `step` is given (its options, from `crate::cli`) and what it measures (a dimension's and
//! a layout's result). Below the other files of `step`, which all speak in them.

use super::model::{self, Dim, Model, Shape};
use crate::dtype::DType;
use crate::layout::Grid;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One layout, or every valid one. Serialised as the command line has it: the grid's text
/// (`tp=2,dp=*`) or `all`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum LayoutChoice {
    /// `--layout`: a tp × pp × dp grid in the default rank order; its `*` is filled from the
    /// world size.
    One(Grid),
    All,
}

impl From<LayoutChoice> for String {
    fn from(c: LayoutChoice) -> String {
        match c {
            LayoutChoice::One(g) => g.into(),
            LayoutChoice::All => "all".into(),
        }
    }
}

impl TryFrom<String> for LayoutChoice {
    type Error = crate::error::Error;
    fn try_from(s: String) -> crate::error::Result<LayoutChoice> {
        match s.as_str() {
            "all" => Ok(LayoutChoice::All),
            _ => Grid::try_from(s).map(LayoutChoice::One),
        }
    }
}

/// `coll-bench step`'s options (from `crate::cli`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepOptions {
    pub model: Model,
    pub dtype: DType,
    pub layout: LayoutChoice,
    pub tp_across_hosts: bool,
    /// `--backend`: where the step's calls run (mpi: host buffers; nccl: device buffers).
    pub backend: crate::options::BackendKind,
    /// `-G`, `-m`, `-R` on the nccl backend: how each call is launched and on what memory
    /// (`-C` is the sweep's only).
    pub launch: crate::options::LaunchModes,
    pub iters: u64,
    pub warmup: u64,
    pub check: bool,
    pub csv: crate::options::CsvTarget,
    pub json: Option<PathBuf>,
    pub files: crate::report::Policy,
    /// `-T/--timeout`, as the sweep's: every part of a step is watched.
    pub timeout: crate::options::Timeout,
    /// Testing only: this rank flips a bit of every output it receives in the check pass.
    pub debug_corrupt_rank: Option<usize>,
    /// Testing only: this rank stops itself (SIGSTOP) before its first call of this dimension
    /// in the first timed step.
    pub debug_stop_rank: Option<(usize, Dim)>,
}

/// One dimension's measured cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DimResult {
    pub dim: Dim,
    pub group_size: usize,
    pub group_count: usize,
    /// What is sent, per step, with the call counts (calls and bytes are per group, per step).
    pub plan: model::DimPlan,
    #[serde(rename = "calls_per_step")]
    pub calls: u64,
    #[serde(rename = "bytes_per_step")]
    pub bytes: u64,
    /// Seconds per step in this dimension's calls, in the whole step (the slowest rank's). JSON:
    /// `time_per_step_us`, in µs, as the CSV column.
    #[serde(rename = "time_per_step_us", serialize_with = "seconds_as_us")]
    pub time_s: f64,
    /// The same calls run with the other dimensions idle (JSON: `alone_time_per_step_us`, µs).
    #[serde(rename = "alone_time_per_step_us", serialize_with = "seconds_as_us")]
    pub alone_s: f64,
    /// Σ bytes × bus factor / time, GB/s (1e9).
    pub busbw_gbps: f64,
    pub alone_busbw_gbps: f64,
}

/// One layout's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayoutResult {
    /// JSON: `tp`, `pp`, `dp`, as the CSV columns.
    #[serde(flatten)]
    pub shape: Shape,
    pub dims: Vec<DimResult>,
    /// Wall time of the whole step (communication only), seconds: the slowest rank's. JSON:
    /// `step_us`, in µs, as the CSV column.
    #[serde(rename = "step_us", serialize_with = "seconds_as_us")]
    pub step_s: f64,
    /// Elements wrong (summed over ranks) in the check pass; None when not checked.
    pub wrong: Option<u64>,
}

/// Seconds written as µs (the one time unit of every file, docs/output.md).
fn seconds_as_us<S: serde::Serializer>(s: &f64, ser: S) -> std::result::Result<S::Ok, S::Error> {
    ser.serialize_f64(s * 1e6)
}
