//! The command line: every flag of every MPI subcommand, turned into typed, validated options
//! before anything runs. One file per subcommand's parser ([`sweep`] for the sweep itself,
//! `check`, `tune`, `pairs`, `info`, and `compare`, which reads files and needs no MPI); the
//! options types belong to the subcommands, which never see a flag. Values are taken as text and
//! checked here, so every bad value gives one line naming the flag and the accepted form.
//!
//! (`plot` and `spec` read files, need no MPI, and still parse their own flags.)

mod check;
pub mod compare;
mod info;
mod pairs;
pub mod sweep;
mod tune;
mod values;

pub use sweep::Args;

use crate::error::{Error, Result};
use crate::options::Options;
use clap::Parser;

/// What parsing the command line led to.
#[derive(Debug)]
pub enum Parsed {
    Run(Box<Options>),
    /// `coll-bench pairs …`
    Pairs(Box<crate::pairs::PairsOptions>),
    /// `coll-bench check SPEC.toml …`
    Check(Box<crate::acceptance::CheckOptions>),
    /// `coll-bench info …`
    HostInfo(Box<crate::info::InfoOptions>),
    /// `coll-bench tune …`
    Tune(Box<crate::tune::TuneOptions>),
    /// `--help` or `--version`: the text to print (once) and exit 0.
    Info(String),
}

/// Help and version text, or one line naming what was wrong.
pub enum Clap<T> {
    Args(T),
    Info(String),
}

/// Run clap on `argv`: a usage error becomes one line ([`crate::error::clap_message`], then
/// where to look), help and version become [`Clap::Info`].
pub fn clap_parse<T: Parser>(argv: &[String]) -> Result<Clap<T>> {
    match T::try_parse_from(argv) {
        Ok(a) => Ok(Clap::Args(a)),
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Ok(Clap::Info(e.render().to_string())),
                _ => {
                    let name = T::command().get_name().to_string();
                    Err(Error::usage(format!("{} (see {name} --help)", crate::error::clap_message(&e))))
                }
            }
        }
    }
}

/// Parse and validate `argv` (including the program name).
pub fn parse(argv: &[String]) -> Result<Parsed> {
    fn boxed<T>(c: Clap<T>, f: impl FnOnce(T) -> Parsed) -> Parsed {
        match c {
            Clap::Args(o) => f(o),
            Clap::Info(t) => Parsed::Info(t),
        }
    }
    Ok(match argv.get(1).map(String::as_str) {
        Some("pairs") => boxed(pairs::parse(&argv[1..])?, |o| Parsed::Pairs(Box::new(o))),
        Some("tune") => boxed(tune::parse(&argv[1..])?, |o| Parsed::Tune(Box::new(o))),
        Some("check") => boxed(check::parse(&argv[1..])?, |o| Parsed::Check(Box::new(o))),
        Some("info") => boxed(info::parse(&argv[1..])?, |o| Parsed::HostInfo(Box::new(o))),
        _ => boxed(sweep::parse(argv)?, |o| Parsed::Run(Box::new(o))),
    })
}
