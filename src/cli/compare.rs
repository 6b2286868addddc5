//! `coll-bench compare BASE.csv NEW.csv`, or `compare BASE.csv… -- NEW.csv…` (no MPI).

use super::common::Clap;
use crate::compare::{CompareOptions, Settings, Stat, FORM};
use crate::error::{Error, Result};
use std::path::PathBuf;

/// Did NEW get slower than BASE, by more than repeating the same run explains?
#[derive(clap::Parser, Debug)]
#[command(
    name = "coll-bench compare",
    bin_name = "coll-bench compare",
    allow_negative_numbers = true,
    about = "Compare coll-bench CSVs; exit 1 if a collective of NEW got slower than BASE by more than run-to-run noise explains",
    after_help = "Runs without MPI (no mpirun needed). Each series (collective x type x op x placement) is judged by \
its shift over its sizes relative to the other collectives of the same runs, so a whole run that drifts is not \
a regression. A shift of the whole run cannot be told from drift with one run per side: it fails only beyond \
--drift; give several runs per side, separated by --, to judge it on run-to-run noise.\n\
Examples:\n  coll-bench compare last-week.csv today.csv --threshold 10\n  \
coll-bench compare base-1.csv base-2.csv base-3.csv -- new-1.csv new-2.csv new-3.csv\n\
Exit codes: 0 no regression, 1 at least one, 2 error."
)]
pub struct CompareArgs {
    /// BASE.csv NEW.csv; or, with `--`, the BASE runs (one sweep per file)
    #[arg(value_name = "CSV", required = true)]
    pub files: Vec<PathBuf>,
    /// The NEW runs, after `--` (flags go before it)
    #[arg(value_name = "NEW.csv", last = true)]
    pub new: Vec<PathBuf>,
    /// The statistic judged: each run's median time per call, or its mean (the table's time)
    #[arg(long, value_name = "median|mean", default_value = "median")]
    pub stat: String,
    /// Smallest change, in percent, that counts: a slowdown within it is never a regression
    #[arg(long, value_name = "PCT", default_value = "5")]
    pub threshold: String,
    /// False-alarm level for the whole comparison (shared out over its series, and its points)
    #[arg(long, value_name = "P", default_value = "0.05")]
    pub alpha: String,
    /// With one run per side, a shift of the whole run (every collective) fails only beyond
    /// this many percent: it cannot be told from drift between the runs
    #[arg(long, value_name = "PCT", default_value = "25")]
    pub drift: String,
}

/// A percentage flag: a number >= 0, with or without `%`.
fn percent(flag: &str, v: &str) -> Result<f64> {
    match v.trim().trim_end_matches('%').parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(Error::usage(format!(
            "compare: {flag}: '{v}' is not a percentage; expected a number >= 0, e.g. {flag} 5"
        ))),
    }
}

/// Parse `compare …` (`argv[0]` is "compare"). Every error is one line starting `compare: `
/// and naming the accepted form.
pub fn parse(argv: &[String]) -> Result<Clap<CompareOptions>> {
    use clap::Parser;
    let a = match CompareArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Ok(Clap::Info(e.render().to_string())),
                _ => Err(Error::usage(format!("compare: {}; expected {FORM}", crate::error::clap_message(&e)))),
            };
        }
    };
    let threshold_pct = percent("--threshold", &a.threshold)?;
    let drift_pct = percent("--drift", &a.drift)?;
    let alpha = match a.alpha.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => v,
        _ => {
            return Err(Error::usage(format!(
            "compare: --alpha: '{}' is not a significance level; expected a number between 0 and 1, e.g. --alpha 0.05",
            a.alpha
        )))
        }
    };
    let stat = Stat::parse(&a.stat).ok_or_else(|| {
        Error::usage(format!("compare: --stat: '{}' is not a statistic (median or mean); expected {FORM}", a.stat))
    })?;
    let (base, new) = if a.new.is_empty() {
        match &a.files[..] {
            [b, n] => (vec![b.clone()], vec![n.clone()]),
            [_] => return Err(Error::usage(format!("compare: one CSV given, the NEW run is missing; expected {FORM}"))),
            _ => {
                return Err(Error::usage(format!(
                    "compare: {} CSVs without '--': with more than one run per side, put '--' between the BASE and the NEW runs; expected {FORM}",
                    a.files.len()
                )))
            }
        }
    } else {
        (a.files, a.new)
    };
    Ok(Clap::Args(CompareOptions { base, new, settings: Settings { stat, threshold_pct, alpha, drift_pct } }))
}
