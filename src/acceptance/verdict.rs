//! What one check concludes: its outcome (PASS, FAIL, NOISY, SKIP) and its line of the verdict
//! table. Below the files that write it (`junit`) and the module's root that makes it.

use serde::Serialize;

/// PASS, FAIL, NOISY or SKIP of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Outcome {
    Pass,
    Fail,
    /// Measured, but the measurement cannot carry a verdict: the machine changed speed under
    /// it (the line says what disagreed and what to do).
    Noisy,
    Skip,
}

impl Outcome {
    /// As the verdict table, the per-rule line and JUnit write it.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Noisy => "NOISY",
            Outcome::Skip => "SKIP",
        }
    }
}

/// One line of the verdict table (one JUnit testcase).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckResult {
    pub rule: String,
    pub line: usize,
    pub collective: String,
    pub check: &'static str,
    pub measured: String,
    pub required: String,
    pub outcome: Outcome,
    /// The measured value as a number and its name with unit (`busbw_gbps`, `time_us`, `median_us`,
    /// `wrong_elements`, `slow_ranks`), for CI systems that chart it; `None` when nothing was
    /// measured (a skipped rule).
    pub value: Option<(&'static str, f64)>,
    /// Ranks that stood out during this rule's sweeps: (rank, host, measurements, of).
    pub slow_ranks: Vec<(usize, String, usize, usize)>,
    pub seconds: f64,
}
