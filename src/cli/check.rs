//! `coll-bench check SPEC.toml [OPTIONS]`.

use super::common::Clap;
use crate::acceptance::CheckOptions;
use crate::error::Result;
use std::path::PathBuf;

/// Judge the cluster against an acceptance spec.
#[derive(clap::Parser, Debug)]
#[command(
    name = "coll-bench check",
    bin_name = "coll-bench check",
    version,
    after_help = "Launch with MPI: mpirun -n N coll-bench check SPEC.toml [OPTIONS]\n\
Example: mpirun -n 16 --map-by ppr:8:node coll-bench check ci/acceptance/multi-node.toml --junit verdicts.xml\n\
Exit codes: 0 every rule passed, 1 a rule failed, 3 none failed but one could not be judged (NOISY: the machine changed speed under it), 2 usage or setup error."
)]
pub struct CheckArgs {
    /// The acceptance spec (TOML; see ci/acceptance/ and docs/check.md)
    #[arg(value_name = "SPEC.toml")]
    pub spec: PathBuf,
    /// Also write the verdicts as JUnit XML
    #[arg(long = "junit", value_name = "FILE")]
    pub junit: Option<PathBuf>,
    #[command(flatten)]
    pub csv: super::common::CsvFlags,
    #[command(flatten)]
    pub files: super::common::FileFlags,
    /// Show a progress bar on stderr over every rule's points (automatic when rank 0's stderr
    /// is a terminal; under mpirun it is a pipe, so ask)
    #[arg(long = "progress")]
    pub progress: bool,
    /// Testing only: RANK:MICROSECONDS — that rank arrives late at every timed batch
    #[arg(long = "debug-slow-rank", value_name = "RANK:US", hide = true)]
    pub debug_slow_rank: Option<String>,
}

/// Parse `check …` (`argv[0]` is "check").
pub fn parse(argv: &[String]) -> Result<Clap<CheckOptions>> {
    let cmd = super::common::with_help(
        <CheckArgs as clap::CommandFactory>::command(),
        "csv",
        "Write every measurement behind the verdicts to this CSV (the sweep's columns, then rule and repeat) \
         [default: results/coll-bench-check-<UTC time>.csv, never an existing file]",
    );
    Ok(match super::common::clap_parse_with::<CheckArgs>(cmd, argv)? {
        Clap::Args(a) => Clap::Args(CheckOptions {
            spec: a.spec,
            junit: a.junit,
            csv: a.csv.target("check --csv")?,
            files: a.files.policy(),
            progress: a.progress,
            debug_slow_rank: a.debug_slow_rank.as_deref().map(super::values::slow_rank).transpose()?,
        }),
        Clap::Info(t) => Clap::Info(t),
    })
}
