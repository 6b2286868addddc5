//! `coll-bench tune [OPTIONS] [COLLECTIVE]...`: the sweep's flags and tune's own.

use super::common::Clap;
use super::sweep::Args;
use crate::collective::Kind;
use crate::error::{Error, Result};
use crate::options::Implementation;
use crate::tune::algorithms::TUNABLE;
use crate::tune::TuneOptions;
use clap::CommandFactory;

/// tune's default `--budget`: many candidates per size, so shorter than the sweep's.
const TUNE_BUDGET: &str = "20ms";
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
The sweep's flags apply (-b, -e, -f, -d and -o: the first type and op, --csv, --plot, ...), with tune's defaults above.
Example: mpirun -n 2 coll-bench tune reduce-scatter -b 64K -e 4M --write-rules rs.rules
Then:    mpirun -n 2 coll-bench tune --verify rs.rules   (the file's choices against the library's default, in one run)
Exit codes: 0 ok, 1 a wrong result (that algorithm is disqualified) or --verify missed, 2 usage or setup error."
)]
pub struct TuneArgs {
    #[command(flatten)]
    pub sweep: Args,
    /// Write the library's own tuning file (Open MPI dynamic rules; MPICH CVAR lines) to FILE
    #[arg(long = "write-rules", value_name = "FILE")]
    pub write_rules: Option<PathBuf>,
    /// Time FILE's choices (from --write-rules) against the library's default, interleaved in
    /// one run, at the sizes it was tuned at (run without the file applied)
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
    // The sweep's flags with tune's own defaults, in the help and in the parse alike.
    let cmd = TuneArgs::command()
        .mut_arg("collectives", |a| {
            a.help(
                "Collectives to tune: all-reduce, all-gather, reduce-scatter, broadcast, all-to-all, reduce \
                 [default: the first five]",
            )
        })
        .mut_arg("budget", |a| {
            a.help("Time budget for the timed iterations of each candidate, size and placement (e.g. 20ms, 1s)")
                .default_value(TUNE_BUDGET)
        })
        .mut_arg("csv", |a| a.help("Write results as CSV to PATH [default: results/coll-bench-tune-<UTC time>.csv]"));
    // The sweep's flags tune refuses (below) are not in its help.
    let cmd = ["json", "markdown", "progress", "no_ceiling", "backend", "implementation", "write_matrix", "pattern"]
        .iter()
        .chain(super::sweep::LaunchFlags::IDS.iter())
        .fold(cmd, |cmd, id| cmd.mut_arg(*id, |a| a.hide(true)));
    let a: TuneArgs = match super::common::clap_parse_with(cmd, argv)? {
        Clap::Args(a) => a,
        Clap::Info(t) => return Ok(Clap::Info(t)),
    };
    if let Some(flag) = a.sweep.launch.given() {
        return Err(Error::usage(format!(
            "tune {flag}: a launch mode of the sweep's nccl backend; tune tunes the MPI library; expected no {flag}"
        )));
    }
    let named = !a.sweep.collectives.is_empty();
    let sweep_only = [
        a.sweep.json.path.is_some(),
        a.sweep.markdown.is_some(),
        a.sweep.progress,
        a.sweep.no_ceiling,
        a.sweep.write_matrix.is_some(),
    ];
    if sweep_only.contains(&true) {
        return Err(Error::usage(
            "tune: --json, --markdown, --progress, --no-ceiling and --write-matrix are the sweep's; tune writes --csv, --plot and --write-rules",
        ));
    }
    if a.sweep.pattern != "uniform" {
        return Err(Error::usage(
            "tune --pattern: shapes all-to-all-v, which tune does not tune; expected no --pattern",
        ));
    }
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
    if a.write_rules.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
        return Err(Error::usage("tune --write-rules: empty path; expected a file path, e.g. results/tune.rules"));
    }
    sweep.dtypes.truncate(1);
    sweep.ops.truncate(1);
    Ok(Clap::Args(TuneOptions {
        sweep,
        write_rules: a.write_rules,
        verify: a.verify,
        in_place: a.in_place,
        no_skip: a.no_skip,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn help_states_the_defaults_tune_runs_with() {
        let Clap::Info(help) = parse(&args(&["tune", "--help"])).unwrap() else { panic!("help") };
        assert!(help.contains("[default: the first five]") && !help.contains("the first three"), "{help}");
        assert!(help.contains("[default: 20ms]") && !help.contains("50ms"), "{help}");
        assert!(help.contains("results/coll-bench-tune-<UTC time>.csv"), "{help}");
        // What tune refuses is not offered.
        for flag in [
            "--json",
            "--markdown",
            "--progress",
            "--no-ceiling",
            "--backend",
            "--impl",
            "--cuda-graph",
            "--agg-iters",
            "--cpu-time",
            "--register",
        ] {
            assert!(!help.contains(flag), "{flag} in tune's help: {help}");
        }
        let Clap::Args(o) = parse(&args(&["tune"])).unwrap() else { panic!("args") };
        assert_eq!(o.sweep.budget_s, crate::tune::DEFAULT_BUDGET_S);
        assert_eq!(o.sweep.collectives.len(), 5);
        let Clap::Args(o) = parse(&args(&["tune", "--budget", "1s"])).unwrap() else { panic!("args") };
        assert_eq!(o.sweep.budget_s, 1.0);
    }
}
