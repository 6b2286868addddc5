//! The typed, validated plan every rank runs. Built from the command line by `crate::cli`,
//! broadcast from rank 0 and compared on every rank before anything is measured.

use crate::collective::Kind;
use crate::dtype::{DType, Op};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How each rank's time is combined into the one reported (`-a`, nccl-tests' numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Aggregation {
    Rank0,
    Mean,
    Min,
    Max,
}

impl Aggregation {
    pub fn from_flag(v: u8) -> Option<Aggregation> {
        Some(match v {
            0 => Aggregation::Rank0,
            1 => Aggregation::Mean,
            2 => Aggregation::Min,
            3 => Aggregation::Max,
            _ => return None,
        })
    }
    pub fn flag(self) -> u8 {
        match self {
            Aggregation::Rank0 => 0,
            Aggregation::Mean => 1,
            Aggregation::Min => 2,
            Aggregation::Max => 3,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Aggregation::Rank0 => "rank0",
            Aggregation::Mean => "mean",
            Aggregation::Min => "min",
            Aggregation::Max => "max",
        }
    }
}

/// The `-T` limit of a watched step that is expected to take `e` seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Timeout {
    /// No `-T`: max(5 min, 20 × e), so an unattended run cannot hang forever.
    Auto,
    /// `-T SECONDS`: SECONDS + 2 × e.
    Fixed(f64),
    /// `-T 0`: wait forever.
    Off,
}

impl Timeout {
    /// The floor of the default limit, seconds.
    pub const AUTO_MIN_S: f64 = 300.0;
    /// The default limit, in multiples of a step's expected time.
    pub const AUTO_FACTOR: f64 = 20.0;

    /// Seconds a step expected to take `expected_s` may take; `None`: no limit.
    pub fn limit_s(self, expected_s: f64) -> Option<f64> {
        let e = expected_s.max(0.0);
        match self {
            Timeout::Auto => Some((Self::AUTO_FACTOR * e).max(Self::AUTO_MIN_S)),
            Timeout::Fixed(t) => Some(t + 2.0 * e),
            Timeout::Off => None,
        }
    }

    /// The shortest limit any step gets (the one of a step with no estimate).
    pub fn base_s(self) -> Option<f64> {
        self.limit_s(0.0)
    }
}

/// How sizes grow from `min_bytes` to `max_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Step {
    Factor(f64),
    Bytes(u64),
}

/// Where the CSV goes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CsvTarget {
    /// `results/coll-bench-<UTC time>.csv` under the working directory.
    Default,
    Path(PathBuf),
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BackendKind {
    Mpi,
    Nccl,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Mpi => "mpi",
            BackendKind::Nccl => "nccl",
        }
    }
}

/// Everything a sweep needs. Equal on every rank (checked).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Options {
    pub collectives: Vec<Kind>,
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub step: Step,
    /// Fixed timed iterations per point (`-n`); `None`: chosen from `budget_s`.
    pub iters: Option<u64>,
    /// Fixed warm-up iterations (`-w`); `None`: about a tenth of the budget.
    pub warmup: Option<u64>,
    /// Time budget for the timed iterations of one point, seconds.
    pub budget_s: f64,
    /// Stop a point's timed iterations early once the 95% interval of every rank's median is
    /// narrower than this fraction of it (`--ci-target`, percent on the command line); 0: never.
    pub ci_target: f64,
    pub check: bool,
    pub dtypes: Vec<DType>,
    pub ops: Vec<Op>,
    pub aggregation: Aggregation,
    pub root: usize,
    pub blocking: bool,
    pub backend: BackendKind,
    /// Which implementation of the collectives inside the backend (`native`: the library's own).
    pub implementation: String,
    pub csv: CsvTarget,
    /// Draw the progress bar on stderr even when it is not a terminal (`--progress`).
    pub progress: bool,
    /// Add one row per rank to the CSV and JSON (`--per-rank`).
    pub per_rank: bool,
    /// `--json PATH`: results, options, hosts and versions as JSON.
    pub json: Option<PathBuf>,
    /// `--markdown PATH`: the table as Markdown.
    pub markdown: Option<PathBuf>,
    /// `--plot FILE.svg|FILE.png`: plot the run's CSV at the end.
    pub plot: Option<PathBuf>,
    /// `-T/--timeout`: when a watched step (a batch of calls, an exchange of results) is given up
    /// on, ending the job with exit code 2 (`crate::watchdog`).
    pub timeout: Timeout,
    /// Testing only (hidden flag): sleep this many µs before each timed batch on `.0`, outside
    /// that rank's own timing, so the others wait for it (a rank that arrives late).
    pub debug_slow_rank: Option<(usize, u64)>,
    /// Testing only (hidden flag): corrupt one output element on this rank in each check.
    pub debug_corrupt_rank: Option<usize>,
}

/// Fewest timed iterations when the budget decides, so a slow size still gets a median.
pub const MIN_AUTO_ITERS: u64 = 5;
/// Most timed iterations when the budget decides.
pub const MAX_AUTO_ITERS: u64 = 100_000;
/// Most iterations `-n` accepts (per-iteration samples are kept in memory).
pub const MAX_ITERS: u64 = 10_000_000;

/// The defaults of the command line (`coll-bench` with no arguments).
impl Default for Options {
    fn default() -> Self {
        match crate::cli::parse(&["coll-bench".to_string()]) {
            Ok(crate::cli::Parsed::Run(o)) => *o,
            other => unreachable!("the default command line parses: {other:?}"),
        }
    }
}

impl Options {
    /// The message sizes of the sweep, in bytes.
    pub fn sizes(&self) -> Vec<u64> {
        let mut out = vec![];
        let mut s = self.min_bytes;
        while s <= self.max_bytes {
            out.push(s);
            let next = match self.step {
                Step::Factor(f) => ((s as f64) * f) as u64,
                Step::Bytes(b) => s.saturating_add(b),
            };
            s = if next > s { next } else { s + 1 };
        }
        out
    }

    /// Checks that need the world size.
    pub fn validate_for_world(&self, nranks: usize) -> Result<()> {
        let rooted = self.collectives.iter().any(|k| k.spec().rooted());
        if rooted && self.root >= nranks {
            return Err(Error::usage(format!(
                "-r/--root: {} is not a rank of this job; expected 0..={} ({} ranks)",
                self.root,
                nranks - 1,
                nranks
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(min: u64, max: u64, step: Step) -> Options {
        Options { min_bytes: min, max_bytes: max, step, csv: CsvTarget::Off, ..Options::default() }
    }

    #[test]
    fn factor_and_linear_sweeps() {
        let s = opts(8, 64 << 20, Step::Factor(2.0)).sizes();
        assert_eq!(s.len(), 24);
        assert_eq!((s[0], s[23]), (8, 64 << 20));
        assert_eq!(opts(1024, 4096, Step::Bytes(1024)).sizes(), vec![1024, 2048, 3072, 4096]);
        assert_eq!(opts(10, 100, Step::Factor(3.0)).sizes(), vec![10, 30, 90]);
        assert_eq!(opts(1, 3, Step::Factor(1.1)).sizes(), vec![1, 2, 3]);
    }

    #[test]
    fn root_must_be_a_rank() {
        let mut o = opts(8, 8, Step::Factor(2.0));
        o.root = 2;
        assert!(o.validate_for_world(2).is_ok(), "no rooted collective selected");
        o.collectives.push(Kind::Broadcast);
        let e = o.validate_for_world(2).unwrap_err().to_string();
        assert!(e.contains("-r/--root") && e.contains("0..=1"), "{e}");
        assert!(o.validate_for_world(3).is_ok());
    }

    #[test]
    fn timeout_limits() {
        assert_eq!(Timeout::Auto.limit_s(0.0), Some(300.0));
        assert_eq!(Timeout::Auto.limit_s(1.0), Some(300.0));
        assert_eq!(Timeout::Auto.limit_s(60.0), Some(1200.0));
        assert_eq!(Timeout::Fixed(5.0).limit_s(0.25), Some(5.5));
        assert_eq!(Timeout::Fixed(5.0).limit_s(-1.0), Some(5.0));
        assert_eq!(Timeout::Off.limit_s(10.0), None);
    }

    #[test]
    fn aggregation_flags() {
        for v in 0..4 {
            assert_eq!(Aggregation::from_flag(v).unwrap().flag(), v);
        }
        assert_eq!(Aggregation::from_flag(4), None);
    }
}
