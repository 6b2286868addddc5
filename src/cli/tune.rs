//! `coll-bench tune [OPTIONS] [COLLECTIVE]...`: the sweep's flags and tune's own.

use super::{Args, Clap};
use crate::collective::Kind;
use crate::error::{Error, Result};
use crate::options::Implementation;
use crate::tune::algorithms::TUNABLE;
use crate::tune::{TuneOptions, DEFAULT_BUDGET_S};
use std::path::PathBuf;

/// `coll-bench tune`: which algorithm this MPI should use at each size.
#[derive(clap::Parser, Debug)]
#[command(
    name = "coll-bench tune",
    bin_name = "coll-bench tune",
    version,
    allow_negative_numbers = true,
    about = "Time every algorithm the MPI library offers (and coll-bench's own) per collective and size; \
             write the library's tuning file",
    after_help = "\
Launch with MPI, on the layout you will run: mpirun -n 16 -H node1:8,node2:8 coll-bench tune [OPTIONS] [COLLECTIVE]...
Collectives: all-reduce, all-gather, reduce-scatter, broadcast, all-to-all, reduce [default: the first five].
The sweep's flags apply (-b, -e, -f, --budget [default here: 20ms], -d and -o: the first type and op, --csv, --plot, ...).
Example: mpirun -n 2 coll-bench tune reduce-scatter -b 64K -e 4M --write-rules rs.rules
Then:    mpirun -n 2 coll-bench tune --verify rs.rules   (the library's default with the file applied)
Exit codes: 0 ok, 1 a wrong result (that algorithm is disqualified) or --verify missed, 2 usage or setup error."
)]
pub struct TuneArgs {
    #[command(flatten)]
    pub sweep: Args,
    /// Write the library's own tuning file (Open MPI dynamic rules; MPICH CVAR lines) to FILE
    #[arg(long = "write-rules", value_name = "FILE")]
    pub write_rules: Option<PathBuf>,
    /// Time the library's default with FILE (from --write-rules) applied, at the sizes it was
    /// tuned at, against the times recorded in it
    #[arg(long = "verify", value_name = "FILE", conflicts_with = "write_rules")]
    pub verify: Option<PathBuf>,
    /// Time in place too (reported, not chosen on: the library's file selects one algorithm for
    /// both placements); by default candidates are timed out of place only
    #[arg(long = "in-place")]
    pub in_place: bool,
    /// Run every algorithm at every size (no skip rule)
    #[arg(long = "no-skip")]
    pub no_skip: bool,
}

/// Parse `tune …` (`argv[0]` is "tune").
pub fn parse(argv: &[String]) -> Result<Clap<TuneOptions>> {
    let a: TuneArgs = match super::clap_parse(argv)? {
        Clap::Args(a) => a,
        Clap::Info(t) => return Ok(Clap::Info(t)),
    };
    let named = !a.sweep.collectives.is_empty();
    let (json, markdown, progress) = (a.sweep.json.is_some(), a.sweep.markdown.is_some(), a.sweep.progress);
    let mut sweep = a.sweep.into_options().map_err(|e| Error::usage(format!("tune {e}")))?;
    if !named {
        sweep.collectives =
            vec![Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter, Kind::Broadcast, Kind::AllToAll];
    }
    if let Some(k) = sweep.collectives.iter().find(|k| !TUNABLE.contains(k)) {
        return Err(Error::usage(format!(
            "tune COLLECTIVE: {k} cannot be tuned (its library choice does not depend on the size, or it has none); \
             expected all-reduce, all-gather, reduce-scatter, broadcast, all-to-all or reduce"
        )));
    }
    if sweep.backend != crate::options::BackendKind::Mpi || sweep.implementation != Implementation::Native {
        return Err(Error::usage(
            "tune: --backend and --impl are chosen by tune (it tunes the MPI library and runs coll-bench's own implementations itself)",
        ));
    }
    if json || markdown || progress {
        return Err(Error::usage(
            "tune: --json, --markdown and --progress are the sweep's; tune writes --csv, --plot and --write-rules",
        ));
    }
    if a.write_rules.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
        return Err(Error::usage("tune --write-rules: empty path; expected a file path, e.g. results/tune.rules"));
    }
    sweep.dtypes.truncate(1);
    sweep.ops.truncate(1);
    // Many candidates per size: a shorter budget than the sweep's, unless one is given.
    if !argv.iter().any(|a| a == "--budget" || a.starts_with("--budget=")) {
        sweep.budget_s = DEFAULT_BUDGET_S;
    }
    Ok(Clap::Args(TuneOptions {
        sweep,
        write_rules: a.write_rules,
        verify: a.verify,
        in_place: a.in_place,
        no_skip: a.no_skip,
    }))
}
