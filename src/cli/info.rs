//! `coll-bench info [OPTIONS]`.

use super::common::Clap;
use crate::error::Result;
use crate::info::InfoOptions;

/// Show, per host, what the hosts of this job really have: coll-bench and MPI versions, the
/// launcher, CPU, memory, locked-memory limit, network interfaces, InfiniBand ports, NCCL, the
/// CUDA driver and GPUs, and the NCCL_/UCX_/OMPI_MCA_/FI_ variables; then the hosts that differ.
#[derive(clap::Parser, Debug)]
#[command(
    name = "coll-bench info",
    bin_name = "coll-bench info",
    version,
    after_help = "Launch with MPI (one rank per host is enough), or alone for this host only.\n\
Example: mpirun -n 16 --map-by ppr:1:node coll-bench info --strict\n\
Exit codes: 0 ok (differences are reported), 1 with --strict when a host differs from the majority, 2 usage or setup error."
)]
pub struct InfoArgs {
    /// Print one JSON document on standard output instead of the text report
    #[arg(long = "json")]
    pub json: bool,
    /// Exit 1 when any host (or rank) differs from the majority on any field
    #[arg(long = "strict")]
    pub strict: bool,
}

/// Parse `info …` (`argv[0]` is "info").
pub fn parse(argv: &[String]) -> Result<Clap<InfoOptions>> {
    Ok(match super::common::clap_parse::<InfoArgs>(argv)? {
        Clap::Args(a) => Clap::Args(InfoOptions { json: a.json, strict: a.strict }),
        Clap::Info(t) => Clap::Info(t),
    })
}
