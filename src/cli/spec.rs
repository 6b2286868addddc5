//! `coll-bench spec from-run RUN.csv [RUN.csv ...] [--margin PCT] [-o SPEC.toml]` → [`FromRunOptions`].

use super::common::Clap;
use crate::acceptance::from_run::{FromRunOptions, FORM};
use crate::error::{Error, Result};
use std::path::PathBuf;

#[derive(clap::Parser, Debug)]
#[command(
    name = "coll-bench spec",
    bin_name = "coll-bench spec",
    about = "Write acceptance specs for `coll-bench check`",
    after_help = "Runs without MPI (no mpirun needed).\n\
Example: coll-bench spec from-run results/good.csv --margin 30% -o gate.toml\n\
Then: mpirun -n 16 coll-bench check gate.toml --junit verdicts.xml"
)]
pub struct SpecArgs {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// A spec from known-good runs' CSVs: each requirement is the runs' value with a margin
    #[command(after_help = "Example: coll-bench spec from-run results/good.csv --margin 30% -o gate.toml\n\
Several runs (or a check CSV's repeats): coll-bench spec from-run mon.csv tue.csv wed.csv -o gate.toml\n\
Bandwidth rules require busbw >= baseline / (1 + margin) over the sizes where it has levelled off;\n\
latency rules require the median time per call <= baseline x (1 + margin) at the smallest size.\n\
The baseline is each size's median over the runs' rows; a rule's margin widens to 3x the spread\n\
measured there (between runs, or within one run's row) where that is wider. Out-of-place rows only.")]
    FromRun(FromRunArgs),
}

#[derive(clap::Args, Debug)]
struct FromRunArgs {
    /// CSVs written by coll-bench (a sweep's --csv, or check's), one per run; per-rank rows are ignored
    #[arg(value_name = "RUN.csv", required = true, num_args = 1..)]
    runs: Vec<PathBuf>,
    /// How much slower than the baseline still passes, in percent (`30%` or `30`)
    #[arg(long, value_name = "PCT", default_value = "30%", allow_hyphen_values = true)]
    margin: String,
    /// Write the spec here [default: standard output]
    #[arg(short = 'o', long = "output", value_name = "SPEC.toml")]
    output: Option<PathBuf>,
    #[command(flatten)]
    files: super::common::FileFlags,
}

/// Parse `spec …` (`argv[0]` is "spec"). A bad flag is one line, `spec: …; expected FORM`; a
/// bad margin `spec from-run: --margin: …`.
pub fn parse(argv: &[String]) -> Result<Clap<FromRunOptions>> {
    Ok(match super::common::clap_parse_files::<SpecArgs>("spec", FORM, argv)? {
        Clap::Args(SpecArgs { command: Command::FromRun(a) }) => Clap::Args(FromRunOptions {
            margin: margin(&a.margin).map_err(|e| Error::usage(format!("spec from-run: {e}")))?,
            margin_text: a.margin,
            runs: a.runs,
            output: a.output,
            policy: a.files.policy(),
        }),
        Clap::Info(t) => Clap::Info(t),
    })
}

/// `30%`, `30` or `7.5%` → 0.30, 0.30, 0.075; a positive, finite number of percent.
fn margin(v: &str) -> Result<f64> {
    let bad = || Error::usage(format!("--margin: '{v}' is not a margin; expected a positive percentage, e.g. 30%"));
    let pct: f64 = v.trim().trim_end_matches('%').trim().parse().map_err(|_| bad())?;
    if !(pct.is_finite() && pct > 0.0) {
        return Err(bad());
    }
    Ok(pct / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Policy;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn margins_take_percent() {
        assert_eq!(margin("30%").unwrap(), 0.3);
        assert_eq!(margin("7.5").unwrap(), 0.075);
        for bad in ["", "-5%", "0", "thirty", "NaN%", "inf"] {
            let e = margin(bad).unwrap_err().to_string();
            assert!(e.starts_with("--margin: ") && e.contains("e.g. 30%"), "{e}");
        }
    }

    #[test]
    fn from_run_is_handed_down_typed() {
        let Clap::Args(o) = parse(&argv(&["spec", "from-run", "r.csv", "--margin", "10", "-o", "g.toml"])).unwrap()
        else {
            panic!("help?")
        };
        assert_eq!(o.runs, [PathBuf::from("r.csv")]);
        assert_eq!((o.margin, o.margin_text.as_str()), (0.1, "10"));
        assert_eq!(o.output, Some(PathBuf::from("g.toml")));
        assert_eq!(o.policy, Policy::default());
        let Clap::Args(o) = parse(&argv(&["spec", "from-run", "r.csv"])).unwrap() else { panic!("help?") };
        assert_eq!((o.margin, o.output), (0.3, None));
        let Clap::Args(o) = parse(&argv(&["spec", "from-run", "a.csv", "b.csv", "--margin", "20%", "c.csv"])).unwrap()
        else {
            panic!("help?")
        };
        assert_eq!(o.runs, ["a.csv", "b.csv", "c.csv"].map(PathBuf::from));
        let e = parse(&argv(&["spec", "from-run"])).unwrap_err().to_string();
        assert!(e.starts_with("spec: ") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn bad_input_is_one_line() {
        let e = parse(&argv(&["spec", "from-run", "r.csv", "--margin", "-5%"])).unwrap_err().to_string();
        assert!(e.starts_with("spec from-run: --margin: '-5%' is not a margin"), "{e}");
        let e = parse(&argv(&["spec", "to-run"])).unwrap_err().to_string();
        assert!(e.starts_with("spec: ") && e.ends_with(&format!("; expected {FORM}")) && !e.contains('\n'), "{e}");
    }
}
