//! `coll-bench pairs [OPTIONS]`.

use super::common::Clap;
use crate::duration;
use crate::error::{Error, Result};
use crate::pairs::PairsOptions;
use crate::size::{parse_size, SIZE_FORM};

/// Measure point-to-point latency and bandwidth between every pair of ranks.
#[derive(clap::Parser, Debug)]
#[command(
    name = "coll-bench pairs",
    bin_name = "coll-bench pairs",
    version,
    allow_negative_numbers = true,
    after_help = "Launch with MPI, at least 2 ranks: mpirun -n N coll-bench pairs [OPTIONS]\n\
Example: mpirun -n 16 --map-by ppr:8:node coll-bench pairs --top 5 --csv pairs.csv"
)]
pub struct PairsArgs {
    /// Message size for latency
    #[arg(short = 'b', long = "latency-bytes", value_name = "SIZE", default_value = "8")]
    pub latency_bytes: String,
    /// Message size for bandwidth
    #[arg(short = 'e', long = "bandwidth-bytes", value_name = "SIZE", default_value = "4M")]
    pub bandwidth_bytes: String,
    /// Time budget per pair and size (e.g. 20ms)
    #[arg(long = "budget", value_name = "TIME", default_value = "20ms", allow_hyphen_values = true)]
    pub budget: String,
    /// How many of the slowest pairs to list
    #[arg(long = "top", value_name = "K", default_value = "5")]
    pub top: usize,
    /// Run the pairs one at a time instead of in tournament rounds (for comparison)
    #[arg(long = "sequential")]
    pub sequential: bool,
    #[command(flatten)]
    pub csv: super::common::CsvFlags,
    #[command(flatten)]
    pub files: super::common::FileFlags,
}

/// Parse `pairs …` (`argv[0]` is "pairs").
pub fn parse(argv: &[String]) -> Result<Clap<PairsOptions>> {
    let cmd = super::common::with_help(
        <PairsArgs as clap::CommandFactory>::command(),
        "csv",
        "Write the matrix as CSV to PATH [default: results/coll-bench-pairs-<UTC time>.csv]",
    );
    let a: PairsArgs = match super::common::clap_parse_with(cmd, argv)? {
        Clap::Args(a) => a,
        Clap::Info(t) => return Ok(Clap::Info(t)),
    };
    let size = |flag: &str, v: &str| {
        parse_size(v).map_err(|why| Error::usage(format!("pairs {flag}: {why}; expected {SIZE_FORM}")))
    };
    let budget_s = duration::parse("pairs --budget", &a.budget, duration::POSITIVE)?;
    if a.top == 0 {
        return Err(Error::usage("pairs --top: 0; expected a positive number of pairs"));
    }
    Ok(Clap::Args(PairsOptions {
        latency_bytes: size("-b/--latency-bytes", &a.latency_bytes)?,
        bandwidth_bytes: size("-e/--bandwidth-bytes", &a.bandwidth_bytes)?,
        budget_s,
        top: a.top,
        sequential: a.sequential,
        csv: a.csv.target("pairs --csv")?,
        files: a.files.policy(),
    }))
}
