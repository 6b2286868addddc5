//! What every subcommand's parser shares, below them all: the flag groups defined once, how
//! clap's outcome becomes ours (a usage error is one line; help and version are text to print),
//! and the subcommands' names.

use crate::error::{Error, Result};
use crate::options::{CsvTarget, Timeout};
use clap::Parser;
use std::path::PathBuf;

/// The flags of every subcommand that writes files, defined once: how an output that exists, or
/// a symbolic link at an output path, is treated (`crate::options::Policy`).
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct FileFlags {
    /// Replace output files that already exist (regular files only)
    #[arg(long = "force", visible_alias = "overwrite")]
    pub force: bool,
    /// Write to the file an output path's symbolic link points at (refused by default)
    #[arg(long = "follow-symlinks")]
    pub follow_symlinks: bool,
}

impl FileFlags {
    pub fn policy(self) -> crate::options::Policy {
        crate::options::Policy { force: self.force, follow_symlinks: self.follow_symlinks }
    }
}

/// `--csv PATH` and `--no-csv`, defined once for every subcommand that writes a CSV (the sweep,
/// `tune`, `check`, `pairs`, `step`). Each subcommand's help says what its CSV holds and where it
/// goes by default ([`with_help`] on the id `csv`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CsvFlags {
    /// Write the CSV to PATH [default: results/coll-bench-<UTC time>.csv]
    #[arg(id = "csv", long = "csv", value_name = "PATH", conflicts_with = "no_csv")]
    pub path: Option<PathBuf>,
    /// Write no CSV
    #[arg(id = "no_csv", long = "no-csv")]
    pub off: bool,
}

impl CsvFlags {
    /// `--csv PATH`, `--no-csv` or neither (the subcommand's default path); an empty path is
    /// refused (`flag`: how the subcommand names it, e.g. `step --csv`).
    pub fn target(&self, flag: &str) -> Result<CsvTarget> {
        Ok(match (&self.path, self.off) {
            (_, true) => CsvTarget::Off,
            (Some(p), false) if p.as_os_str().is_empty() => {
                return Err(Error::usage(format!("{flag}: empty path; expected a file path, e.g. results/run.csv")))
            }
            (Some(p), false) => CsvTarget::Path(p.clone()),
            (None, false) => CsvTarget::Default,
        })
    }
}

/// `--json PATH`, defined once for the subcommands that write their results as a JSON file (the
/// sweep, `doctor`, `step`). (`info --json` is another flag: the report on standard output.)
#[derive(clap::Args, Debug, Clone, Default)]
pub struct JsonFlag {
    /// Also write the results as JSON to PATH
    #[arg(id = "json", long = "json", value_name = "PATH")]
    pub path: Option<PathBuf>,
}

/// `-T/--timeout SECONDS`, defined once for the subcommands the watchdog guards (the sweep and
/// those built on it, `step`); its value is read by [`super::values::timeout`] (a floor of
/// 1 s, docs/watchdog.md).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TimeoutFlag {
    /// Stop the whole job (exit 2) when a call has not finished SECONDS after it was expected to,
    /// e.g. a host or link gone or a rank stopped (5, 2.5, 30s); 0: never [default: max(30 s,
    /// 20x the step's expected time)]
    #[arg(id = "timeout", short = 'T', long = "timeout", value_name = "SECONDS", allow_hyphen_values = true)]
    pub value: Option<String>,
}

impl TimeoutFlag {
    /// The limit (`flag`: how the subcommand names it), [`Timeout::Auto`] when not given.
    pub fn limit(&self, flag: &str) -> Result<Timeout> {
        Ok(self.value.as_deref().map(|v| super::values::timeout(flag, v)).transpose()?.unwrap_or(Timeout::Auto))
    }
}

/// `cmd` with the help of its flag `id` replaced: a shared flag says what it means in this
/// subcommand (what its CSV holds, its default path).
pub fn with_help(cmd: clap::Command, id: &'static str, help: impl Into<String>) -> clap::Command {
    let help = help.into();
    cmd.mut_arg(id, |a| a.help(help))
}

/// The options, or help and version text (a usage error is the `Err` beside it).
#[derive(Debug)]
pub enum Clap<T> {
    Args(T),
    Info(String),
}

/// As [`clap_parse`], for a subcommand over files (`sub`): a usage error is one line,
/// `SUB: …; expected FORM` (printed after `coll-bench: error: `).
pub fn clap_parse_files<T: Parser>(sub: &str, form: &str, argv: &[String]) -> Result<Clap<T>> {
    match T::try_parse_from(argv) {
        Ok(a) => Ok(Clap::Args(a)),
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Ok(Clap::Info(e.render().to_string())),
                _ => Err(Error::usage(format!("{sub}: {}; expected {form}", crate::error::clap_message(&e)))),
            }
        }
    }
}

/// Every subcommand's name, in the order the help lists them.
pub const SUBCOMMANDS: [&str; 9] = ["check", "tune", "doctor", "pairs", "step", "info", "plot", "compare", "spec"];

/// The subcommands over files, which need no MPI (run on the launcher's rank 0 only).
pub const FILE_SUBCOMMANDS: [&str; 3] = ["plot", "compare", "spec"];

/// The subcommand `word` is most likely a misspelling of (at most two edits away), if any.
pub fn nearest_subcommand(word: &str) -> Option<&'static str> {
    fn edits(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + usize::from(ca != *cb));
                prev = row[j + 1];
                row[j + 1] = next;
            }
        }
        row[b.len()]
    }
    let word = word.to_ascii_lowercase();
    SUBCOMMANDS.iter().map(|s| (edits(&word, s), *s)).filter(|(d, _)| *d <= 2).min().map(|(_, s)| s)
}

/// Run clap on `argv`: a usage error becomes one line ([`crate::error::clap_message`], then
/// where to look), help and version become [`Clap::Info`].
pub fn clap_parse<T: Parser>(argv: &[String]) -> Result<Clap<T>> {
    clap_parse_with(T::command(), argv)
}

/// As [`clap_parse`], with `T`'s command as `cmd` has changed it (a subcommand that shares
/// another's flags with other defaults says so in its own help: the help and the parse cannot
/// disagree).
pub fn clap_parse_with<T: Parser>(cmd: clap::Command, argv: &[String]) -> Result<Clap<T>> {
    let name = cmd.get_name().to_string();
    match cmd.try_get_matches_from(argv).and_then(|m| T::from_arg_matches(&m)) {
        Ok(a) => Ok(Clap::Args(a)),
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Ok(Clap::Info(e.render().to_string())),
                _ => Err(Error::usage(format!("{} (see {name} --help)", crate::error::clap_message(&e)))),
            }
        }
    }
}
