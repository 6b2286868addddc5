//! The sweep's files, one row each ([`FORMATS`]): the flag that names it, what the footer calls
//! it, where the options hold its target, and how it is written (streamed by a report as the
//! run goes, or whole at one moment). From the table come the check of every output before
//! anything is made ([`paths`], through `crate::setup::check_outputs`), the opening of every
//! streamed file ([`open`]: all of them or none) and the footer's names. Every file is written
//! through [`super::outfile`], the one place that names a user's path in an error; standard
//! output through [`super::stdout`]. A new format is its report's file in `report/` and one row
//! here (with its flag in `cli::sweep` and its field in `Options`).

use super::{AppendFile, Policy, Report};
use crate::error::Result;
use crate::options::{CsvTarget, Options, Order};
use std::path::{Path, PathBuf};

/// Where a format goes in this run.
pub enum Target<'a> {
    Off,
    /// A new file under `results/` named after the run (the CSV without `--csv`).
    Default,
    Path(&'a Path),
}

/// The one way a CSV is opened, for every subcommand that writes one: `target`'s path (checked
/// and created as every output is, `outfile`), the default `results/PREFIX-<UTC time>.csv` under
/// the working directory (or `…-1.csv`, `…-2.csv` when taken: created exclusively, so concurrent
/// runs never share a file), or none. `flag` names it in errors
/// (`--csv`, `pairs --csv`).
pub(crate) fn open_csv(
    target: Target<'_>,
    flag: &str,
    prefix: &str,
    now: &chrono::DateTime<chrono::Utc>,
    policy: Policy,
) -> Result<Option<AppendFile>> {
    match target {
        Target::Off => Ok(None),
        Target::Path(p) => AppendFile::create(flag, p, policy).map(Some),
        Target::Default => AppendFile::create_unique(
            flag,
            std::path::Path::new("results"),
            &format!("{prefix}-{}", now.format("%Y%m%dT%H%M%SZ")),
            "csv",
        )
        .map(Some),
    }
}

/// A streamed format's report, made on its opened file.
pub type Reporter = fn(AppendFile, Order) -> Box<dyn Report>;

/// How a format is written.
#[derive(Clone, Copy)]
pub enum Writes {
    /// A report is given every point as it is measured (with the run's `--order`: the table's
    /// formats print a series' block whole under `--order size`).
    Points(Reporter),
    /// Written whole by the run at its moment: `--plot` from the CSV after the end,
    /// `--write-matrix` before the backend is made.
    Whole,
}

/// One file format of the sweep.
pub struct Format {
    pub flag: &'static str,
    /// What the footer's `# Wrote PATH (WHAT)` calls it.
    pub what: &'static str,
    pub target: for<'a> fn(&'a Options) -> Target<'a>,
    pub writes: Writes,
}

/// Every file the sweep can write, in the order they are opened and named in the footer.
pub const FORMATS: &[Format] = &[
    Format { flag: "--csv", what: "CSV", target: csv_target, writes: Writes::Points(csv_report) },
    Format {
        flag: "--json",
        what: "JSON",
        target: |o| path(&o.json),
        writes: Writes::Points(|f, _| Box::new(super::json::JsonReport::new(f))),
    },
    Format {
        flag: "--markdown",
        what: "Markdown",
        target: |o| path(&o.markdown),
        writes: Writes::Points(|f, order| in_series_order(super::markdown::MarkdownReport::new(f), order)),
    },
    Format { flag: "--plot", what: "plot", target: |o| path(&o.plot), writes: Writes::Whole },
    Format { flag: "--write-matrix", what: "traffic matrix", target: |o| path(&o.write_matrix), writes: Writes::Whole },
];

fn csv_target(o: &Options) -> Target<'_> {
    Target::from(&o.csv)
}

impl<'a> From<&'a CsvTarget> for Target<'a> {
    fn from(t: &'a CsvTarget) -> Self {
        match t {
            CsvTarget::Off => Target::Off,
            CsvTarget::Default => Target::Default,
            CsvTarget::Path(p) => Target::Path(p),
        }
    }
}

fn csv_report(f: AppendFile, _: Order) -> Box<dyn Report> {
    Box::new(super::csv::CsvReport::new(f))
}

fn path(p: &Option<PathBuf>) -> Target<'_> {
    p.as_deref().map_or(Target::Off, Target::Path)
}

/// `--order size`: the table and the Markdown print each series' block whole, at the end.
pub fn in_series_order<R: Report + 'static>(r: R, order: Order) -> Box<dyn Report> {
    match order {
        Order::Collective => Box::new(r),
        Order::Size => Box::new(super::series_order::InSeriesOrder::new(r)),
    }
}

/// The row of `flag`.
pub fn format(flag: &str) -> &'static Format {
    FORMATS.iter().find(|f| f.flag == flag).expect("a format of the table")
}

/// Every output path the user named, with its flag: what is checked before anything is made.
pub fn paths(opts: &Options) -> Vec<(&'static str, &Path)> {
    FORMATS
        .iter()
        .filter_map(|f| match (f.target)(opts) {
            Target::Path(p) => Some((f.flag, p)),
            _ => None,
        })
        .collect()
}

/// A streamed file, opened: its report, and where the data goes (a followed link's target).
pub struct Opened {
    pub format: &'static Format,
    pub path: PathBuf,
    pub report: Box<dyn Report>,
}

/// The files written whole at their moment (`--plot`, `--write-matrix`), with their flags: claimed
/// when the run starts (`outfile::claim`).
pub fn whole(opts: &Options) -> Vec<(&'static str, &Path)> {
    FORMATS
        .iter()
        .filter(|f| matches!(f.writes, Writes::Whole))
        .filter_map(|f| match (f.target)(opts) {
            Target::Path(p) => Some((f.flag, p)),
            _ => None,
        })
        .collect()
}

/// Open every streamed file of the run (rank 0): all of them, or, when one cannot be, none
/// (those already created are removed). `now` names the default CSV.
pub fn open(opts: &Options, now: &chrono::DateTime<chrono::Utc>) -> Result<Vec<Opened>> {
    let mut files: Vec<(&'static Format, Reporter, AppendFile)> = vec![];
    for f in FORMATS {
        let Writes::Points(report) = f.writes else { continue };
        match open_csv((f.target)(opts), f.flag, "coll-bench", now, opts.files) {
            Ok(Some(file)) => files.push((f, report, file)),
            Ok(None) => {}
            Err(e) => {
                files.into_iter().for_each(|(_, _, file)| file.remove());
                return Err(e);
            }
        }
    }
    Ok(files
        .into_iter()
        .map(|(format, report, file)| Opened {
            format,
            path: file.real_path().to_path_buf(),
            report: report(file, opts.order),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_output_flag_is_one_row_and_opening_is_all_or_none() {
        let mut flags: Vec<&str> = FORMATS.iter().map(|f| f.flag).collect();
        flags.sort();
        flags.dedup();
        assert_eq!(flags.len(), FORMATS.len(), "one row per flag");
        let d = tempfile::tempdir().unwrap();
        // A directory where the Markdown should go: the CSV and JSON made first are removed.
        let mut o = Options {
            csv: CsvTarget::Path(d.path().join("r.csv")),
            json: Some(d.path().join("r.json")),
            markdown: Some(d.path().to_path_buf()),
            plot: Some(d.path().join("r.svg")),
            ..Options::default()
        };
        assert_eq!(paths(&o).iter().map(|(f, _)| *f).collect::<Vec<_>>(), ["--csv", "--json", "--markdown", "--plot"]);
        let e = open(&o, &chrono::Utc::now()).err().expect("a directory is refused").to_string();
        assert!(e.starts_with("--markdown: "), "{e}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "nothing left behind");
        o.markdown = Some(d.path().join("r.md"));
        let opened = open(&o, &chrono::Utc::now()).unwrap();
        assert_eq!(opened.iter().map(|x| x.format.what).collect::<Vec<_>>(), ["CSV", "JSON", "Markdown"]);
        assert_eq!(format("--plot").what, "plot");
    }
}
