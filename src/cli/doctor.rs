//! `coll-bench doctor [OPTIONS] [COLLECTIVE]...`: the sweep's flags that apply to one size, and
//! doctor's own.

use super::common::Clap;
use super::sweep::Args;
use crate::collective::Kind;
use crate::doctor::{DoctorOptions, DEFAULT_MIN_PCT};
use crate::error::{Error, Result};
use crate::options::{BackendKind, CsvTarget, Implementation};
use crate::tune::algorithms::TUNABLE;
use clap::CommandFactory;

/// `coll-bench doctor`: is every collective near what the links carry, and if not, why.
#[derive(clap::Parser, Debug)]
#[command(
    name = "coll-bench doctor",
    bin_name = "coll-bench doctor",
    version,
    allow_negative_numbers = true,
    about = "Measure each collective against the ceiling of its links at one large size and rank the causes of any \
             shortfall: a link, a host, the algorithm, noise",
    after_help = "\
Launch with MPI, on the layout you will run: mpirun -n 16 -H node1:8,node2:8 coll-bench doctor [OPTIONS] [COLLECTIVE]...
It runs the ceiling pass and the sweep at -e only, point-to-point pairs between hosts (more than one host), and
every algorithm the library offers for a collective below the bar (as tune does).
Example: mpirun -n 4 -H node1:2,node2:2 coll-bench doctor -e 16M --json doctor.json
Exit codes: 0 every collective within --min-pct-of-ceiling of its ceiling and no link or host slower than its peers,
1 a shortfall (or a wrong result), 2 usage or setup error."
)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub sweep: Args,
    /// The bar: every collective's bus bandwidth at least PCT percent of the ceiling
    #[arg(long = "min-pct-of-ceiling", value_name = "PCT", default_value = "50")]
    pub min_pct_of_ceiling: String,
}

/// The sweep's arguments (clap ids) doctor refuses: not in its help.
const NOT_DOCTOR_ARGS: [&str; 13] = [
    "csv",
    "no_csv",
    "markdown",
    "plot",
    "no_ceiling",
    "per_rank",
    "stepfactor",
    "stepbytes",
    "backend",
    "implementation",
    "write_matrix",
    "pattern",
    "per_group",
];

/// Parse `doctor …` (`argv[0]` is "doctor").
pub fn parse(argv: &[String]) -> Result<Clap<DoctorOptions>> {
    // doctor measures at one size: -b would be a second; said before clap sees it.
    if let Some(flag) = argv.iter().skip(1).take_while(|a| *a != "--").find(|a| {
        let a = a.as_str();
        a == "-b" || (a.starts_with("-b") && !a.starts_with("--")) || a == "--minbytes" || a.starts_with("--minbytes=")
    }) {
        return Err(Error::usage(format!(
            "doctor {}: doctor measures at one size; expected -e/--maxbytes SIZE only (e.g. -e 64M)",
            flag.split('=').next().unwrap_or(flag)
        )));
    }
    let cmd = DoctorArgs::command()
        .mut_arg("collectives", |a| {
            a.help(
                "Collectives to diagnose: all-reduce, all-gather, reduce-scatter, broadcast, all-to-all, reduce \
                 [default: the first three]",
            )
        })
        .mut_arg("maxbytes", |a| a.help("The size every collective is measured at (e.g. 64M)"))
        .mut_arg("json", |a| a.help("Write doctor's findings as JSON to PATH"))
        .mut_arg("max_time", |a| {
            a.default_value("2m").help(
                "The time doctor fits its measurements in: it measures below -e where -e would not fit, and says so \
                 (e.g. 5m; 0: no limit, always -e)",
            )
        })
        .mut_arg("progress", |a| a.help("A line on stderr as each of doctor's phases starts"))
        .mut_arg("minbytes", |a| a.hide(true));
    // The sweep's flags doctor refuses (below) are not in its help.
    let cmd = NOT_DOCTOR_ARGS
        .iter()
        .chain(super::sweep::LaunchFlags::IDS.iter())
        .fold(cmd, |cmd, id| cmd.mut_arg(*id, |a| a.hide(true)));
    let a: DoctorArgs = match super::common::clap_parse_with(cmd, argv)? {
        Clap::Args(a) => a,
        Clap::Info(t) => return Ok(Clap::Info(t)),
    };
    let min_pct = match a.min_pct_of_ceiling.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => p,
        _ => {
            return Err(Error::usage(format!(
                "doctor --min-pct-of-ceiling: '{}' is not a percentage; expected a number above 0 and at most 100, e.g. {DEFAULT_MIN_PCT}",
                a.min_pct_of_ceiling
            )))
        }
    };
    if let Some(flag) =
        [("-f/--stepfactor", a.sweep.stepfactor.is_some()), ("-i/--stepbytes", a.sweep.stepbytes.is_some())]
            .iter()
            .find(|(_, given)| *given)
    {
        return Err(Error::usage(format!(
            "doctor {}: doctor measures at one size; expected -e/--maxbytes SIZE only (e.g. -e 64M)",
            flag.0
        )));
    }
    if let Some(flag) = a.sweep.launch.given() {
        return Err(Error::usage(format!(
            "doctor {flag}: a launch mode of the sweep's nccl backend; doctor diagnoses the MPI library; expected no {flag}"
        )));
    }
    let named = !a.sweep.collectives.is_empty();
    let json = a.sweep.json.path.clone();
    let not_doctor = [
        ("--csv", a.sweep.csv.path.is_some()),
        ("--no-csv", a.sweep.csv.off),
        ("--markdown", a.sweep.markdown.is_some()),
        ("--plot", a.sweep.plot.is_some()),
        ("--no-ceiling", a.sweep.no_ceiling),
        ("--per-rank", a.sweep.per_rank),
        ("--write-matrix", a.sweep.write_matrix.is_some()),
        ("--per-group", a.sweep.per_group),
    ];
    if let Some((flag, _)) = not_doctor.iter().find(|(_, given)| *given) {
        return Err(Error::usage(format!(
            "doctor {flag}: the sweep's, not doctor's; expected doctor's outputs: the page on stdout and --json PATH"
        )));
    }
    if a.sweep.pattern != "uniform" {
        return Err(Error::usage(
            "doctor --pattern: shapes all-to-all-v, which doctor does not diagnose (it has no algorithms to weigh); expected no --pattern",
        ));
    }
    if json.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
        return Err(Error::usage("doctor --json: empty path; expected a file path, e.g. results/doctor.json"));
    }
    let max_time_s = crate::duration::parse("doctor --max-time", &a.sweep.max_time, crate::duration::OR_ZERO)?;
    let progress = a.sweep.progress;
    // doctor fits its run in --max-time; the sweep's refusal of a long plan is not doctor's.
    let mut a = a;
    a.sweep.max_time = "0".into();
    let mut sweep = a.sweep.into_options().map_err(|e| Error::usage(format!("doctor {e}")))?;
    if !named {
        sweep.collectives = vec![Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter];
    }
    if let Some(k) = sweep.collectives.iter().find(|k| !TUNABLE.contains(k)) {
        return Err(Error::usage(format!(
            "doctor COLLECTIVE: {k} has no algorithms to weigh; expected all-reduce, all-gather, reduce-scatter, \
             broadcast, all-to-all or reduce"
        )));
    }
    if sweep.backend != BackendKind::Mpi || sweep.implementation != Implementation::Native {
        return Err(Error::usage(
            "doctor: --backend and --impl: doctor diagnoses the MPI library's own collectives; expected neither flag",
        ));
    }
    sweep.min_bytes = sweep.max_bytes;
    sweep.dtypes.truncate(1);
    sweep.ops.truncate(1);
    sweep.csv = CsvTarget::Off;
    sweep.json = None;
    sweep.ceiling = true;
    sweep.progress = false;
    Ok(Clap::Args(DoctorOptions { sweep, min_pct_of_ceiling: min_pct, json, max_time_s, progress }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn doctor_measures_at_one_size_with_its_own_defaults() {
        let Clap::Args(o) = parse(&args(&["doctor"])).unwrap() else { panic!("args") };
        assert_eq!((o.sweep.min_bytes, o.sweep.max_bytes), (64 << 20, 64 << 20));
        assert_eq!(o.sweep.collectives, [Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter]);
        assert_eq!(o.min_pct_of_ceiling, DEFAULT_MIN_PCT);
        assert_eq!(o.sweep.csv, CsvTarget::Off);
        let Clap::Args(o) = parse(&args(&["doctor", "-e", "1M", "--min-pct-of-ceiling", "80", "all-reduce"])).unwrap()
        else {
            panic!("args")
        };
        assert_eq!((o.sweep.min_bytes, o.sweep.max_bytes, o.min_pct_of_ceiling), (1 << 20, 1 << 20, 80.0));
        let Clap::Info(help) = parse(&args(&["doctor", "--help"])).unwrap() else { panic!("help") };
        assert!(help.contains("--min-pct-of-ceiling") && help.contains("[default: the first three]"), "{help}");
        // What doctor refuses is not offered.
        let launch = ["--cuda-graph", "--agg-iters", "--cpu-time", "--register"];
        for flag in ["--csv", "--no-csv", "--markdown", "--plot", "--per-rank", "--stepfactor", "--stepbytes", "--impl"]
            .iter()
            .chain(&launch)
        {
            assert!(!help.contains(flag), "{flag} in doctor's help: {help}");
        }
    }

    #[test]
    fn what_doctor_does_not_take_is_one_line() {
        for (a, want) in [
            (&["doctor", "-b", "8"][..], "doctor -b: doctor measures at one size"),
            (&["doctor", "--minbytes=8"][..], "doctor --minbytes: doctor measures at one size"),
            (&["doctor", "--csv", "x.csv"][..], "doctor --csv: the sweep's"),
            (&["doctor", "--min-pct-of-ceiling", "0"][..], "doctor --min-pct-of-ceiling: '0' is not a percentage"),
            (&["doctor", "--min-pct-of-ceiling", "abc"][..], "expected a number above 0 and at most 100"),
            (&["doctor", "barrier"][..], "doctor COLLECTIVE: barrier has no algorithms"),
            (&["doctor", "--impl", "ring"][..], "doctor: --backend and --impl"),
            (&["doctor", "-f", "4"][..], "doctor -f/--stepfactor: doctor measures at one size"),
            (&["doctor", "-i", "1M"][..], "doctor -i/--stepbytes: doctor measures at one size"),
        ] {
            let e = parse(&args(a)).unwrap_err().to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{a:?}: {e}");
        }
    }
}
