//! `coll-bench compare BASE.csv NEW.csv`, or `compare BASE.csv… -- NEW.csv…`: did NEW get slower
//! than BASE, by more than repeating the same run on the same machine would explain?
//!
//! Points are matched on (collective, backend, dtype, op, placement, size). Each point is judged
//! on one statistic of each run (`--stat`: the median, default, or the mean — the table's time);
//! a side's value is the geometric mean over its runs, and the change is the ratio new / base.
//!
//! The noise that matters is between runs, not within one: thousands of samples make a run's own
//! interval tiny, while two back-to-back runs of the same sweep differ by far more — mostly all
//! together (the whole run a few percent faster or slower). So a change is judged relative to
//! the rest of the same run ([`classify_all`]):
//! - a series (collective × backend × type × op × placement, three sizes or more) regressed when
//!   its shift (the median over its sizes of ln new/base) minus the run's level (the median over
//!   every series; the other collective's when there are two) is beyond the noise at `--alpha`
//!   (Bonferroni over the series) and the series is slower than `--threshold` in itself. The noise:
//!   with one run per side, the spread (MAD) of the other collectives' series, never below the
//!   series' own jitter between sizes; with several, the between-run spread of each run's relative
//!   level, pooled over the series (Student's t);
//! - a point likewise, but only in a stretch of consecutive sizes (one or two sizes are `lone`),
//!   and only with several runs per side: with one, a stretch of one collective's sizes moves too
//!   much between back-to-back runs to be judged, and is shown as `slower`;
//! - the whole run (the median over series) cannot be told from drift with one run per side: it
//!   fails only beyond `--drift`; with several, by the between-run spread of the runs' levels;
//!   either way only if every collective moved.
//!
//! Exit 1 if a series, a point or the whole run regressed, 0 if none, 2 on error. Points only in
//! one side are listed, never judged. The flags are parsed by `cli::compare`.

mod matching;
mod model;
mod render;
mod stats;
#[cfg(test)]
mod tests;

pub use matching::{match_runs, Matched, Point, Run};
pub use model::{classify_all, Change, Common, Comparison, Judgement, Noise, SeriesJudgement, Settings, Stat, Stretch};
pub use stats::{mad_sigma, median, step_noise, t_for, z_for};

use crate::csvread;
use crate::error::{exit, Error, Result};
use render::render;
use std::io::Write;
use std::path::PathBuf;

/// The accepted form, named by every usage error.
pub const FORM: &str = "coll-bench compare BASE.csv NEW.csv, or BASE.csv... -- NEW.csv... [--stat median|mean] [--threshold PCT] [--alpha P] [--drift PCT]";

/// What `compare` was asked (parsed and checked by `cli::compare`).
#[derive(Clone, Debug, PartialEq)]
pub struct CompareOptions {
    /// The BASE runs and the NEW runs, one sweep per file.
    pub base: Vec<PathBuf>,
    pub new: Vec<PathBuf>,
    pub settings: Settings,
}

/// Run a comparison, print it; returns the exit code.
pub fn main(opts: &CompareOptions) -> i32 {
    match run(opts) {
        Ok((text, code)) => {
            let _ = crate::report::stdout::out().write_all(text.as_bytes());
            code
        }
        Err(e) => {
            eprintln!("coll-bench: error: compare: {e}");
            exit::ERROR
        }
    }
}

fn run(opts: &CompareOptions) -> Result<(String, i32)> {
    let (base_paths, new_paths) = (&opts.base, &opts.new);
    let with_form = |e: Error| Error::usage(format!("{e}; expected {FORM}"));
    let read = |paths: &[PathBuf]| -> Result<Vec<Run>> {
        let mut runs = vec![];
        for p in paths {
            let name = crate::error::shown(p);
            if runs.iter().any(|r: &Run| r.name == name) {
                return Err(Error::usage(format!(
                    "'{name}' is given twice on one side; each run counts once; expected {FORM}"
                )));
            }
            let rows = csvread::read_sweep(p, "compare").map_err(with_form)?;
            // A ratio over a time of zero is no ratio (NaN or infinite): refused, not judged.
            let stat = opts.settings.stat;
            if let Some(r) = rows.iter().find(|r| stat.of(r) <= 0.0) {
                return Err(Error::usage(format!(
                    "'{name}' line {}: column {} is {}, expected a time above zero (compare divides by it)",
                    r.line,
                    stat.column(),
                    stat.of(r)
                )));
            }
            runs.push(Run { rows, name });
        }
        Ok(runs)
    };
    let base = read(base_paths)?;
    let new = read(new_paths)?;
    let m = match_runs(&base, &new).map_err(Error::usage)?;
    if m.points.is_empty() {
        return Err(Error::usage(format!(
            "{} and {} share no point measured in every run (same collective, backend, dtype, op, placement and size); nothing to compare",
            side_name(&base),
            side_name(&new)
        )));
    }
    let settings = opts.settings;
    let c = classify_all(&m.points, base.len(), new.len(), &settings);
    let text = render(&base, &new, &m, &c, &settings);
    Ok((text, if c.regressed() { exit::WRONG } else { exit::OK }))
}

fn side_name(runs: &[Run]) -> String {
    match runs {
        [one] => format!("'{}'", one.name),
        _ => format!(
            "the {} runs {}",
            runs.len(),
            runs.iter().map(|r| format!("'{}'", r.name)).collect::<Vec<_>>().join(" ")
        ),
    }
}
