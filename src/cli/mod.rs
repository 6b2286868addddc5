//! The command line: every flag of every subcommand, turned into typed, validated options
//! before anything runs. One file per subcommand's parser ([`sweep`] for the sweep itself,
//! `check`, `tune`, `doctor`, `pairs`, `info`, `step`, and `plot`, `spec` and `compare`, which read files and
//! need no MPI: [`parse_files`]); the options types belong to the subcommands, which never see a
//! flag. Values are taken as text and checked here, so every bad value gives one line naming the
//! flag and the accepted form.

mod check;
mod common;
mod compare;
mod doctor;
mod info;
mod pairs;
mod plot;
mod spec;
pub mod step;
pub mod sweep;
mod tune;
mod values;

pub use common::Clap;
use common::SUBCOMMANDS;
pub use sweep::Args;

use crate::error::Result;
use crate::options::Options;

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
    /// `coll-bench step …`
    Step(Box<crate::step::StepOptions>),
    /// `coll-bench doctor …`
    Doctor(Box<crate::doctor::DoctorOptions>),
    /// `--help` or `--version`: the text to print (once) and exit 0.
    Info(String),
}

/// A subcommand over files, run without MPI on the launcher's rank 0 only.
#[derive(Debug)]
pub enum FileCommand {
    /// `coll-bench plot …`
    Plot(Box<crate::plot::PlotOptions>),
    /// `coll-bench spec from-run …`
    Spec(Box<crate::acceptance::from_run::FromRunOptions>),
    /// `coll-bench compare …`
    Compare(Box<crate::compare::CompareOptions>),
}

/// Parse `argv` if it names a subcommand over files (`plot`, `spec`, `compare`); `None` for the others.
pub fn parse_files(argv: &[String]) -> Option<Result<Clap<FileCommand>>> {
    fn boxed<T>(c: Result<Clap<T>>, f: impl FnOnce(T) -> FileCommand) -> Result<Clap<FileCommand>> {
        c.map(|c| match c {
            Clap::Args(o) => Clap::Args(f(o)),
            Clap::Info(t) => Clap::Info(t),
        })
    }
    match argv.get(1).map(String::as_str) {
        Some("plot") => Some(boxed(plot::parse(&argv[1..]), |o| FileCommand::Plot(Box::new(o)))),
        Some("spec") => Some(boxed(spec::parse(&argv[1..]), |o| FileCommand::Spec(Box::new(o)))),
        Some("compare") => Some(boxed(compare::parse(&argv[1..]), |o| FileCommand::Compare(Box::new(o)))),
        _ => None,
    }
}

/// Flags renamed so that one concept has one spelling (issue 26): (subcommands it applies to,
/// `""` for the sweep; the old spelling; the new one). The old spelling keeps working for one
/// release, with a note on stderr naming the new one ([`renamed_flags`]).
pub const RENAMED_FLAGS: &[(&[&str], &str, &str)] = &[
    (&["", "tune", "step"], "--warmup_iters", "--warmup-iters"),
    (&["step"], "--dtype", "--datatype"),
    (&["step"], "--layouts", "--layout"),
];

/// Rewrite the old spellings of [`RENAMED_FLAGS`] in `argv` (as `--old V` or `--old=V`) to the new
/// ones; returns one note per old spelling met, for stderr (printed by the caller once, and only
/// when the line parses, so that a bad value stays one line).
pub fn renamed_flags(argv: &mut [String]) -> Vec<String> {
    let sub = match argv.get(1).map(String::as_str) {
        Some(s) if SUBCOMMANDS.contains(&s) => s.to_string(),
        _ => String::new(),
    };
    let mut notes = vec![];
    for arg in argv.iter_mut().skip(1) {
        if arg == "--" {
            break;
        }
        for (subs, old, new) in RENAMED_FLAGS {
            if !subs.contains(&sub.as_str()) {
                continue;
            }
            let rest = match arg.strip_prefix(old) {
                Some(r) if r.is_empty() || r.starts_with('=') => r.to_string(),
                _ => continue,
            };
            let cmd = if sub.is_empty() { "coll-bench".to_string() } else { format!("coll-bench {sub}") };
            let note = format!("coll-bench: note: {cmd} {old} is now {new}; the old spelling goes in the next release");
            if !notes.contains(&note) {
                notes.push(note);
            }
            *arg = format!("{new}{rest}");
        }
    }
    notes
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
        Some("doctor") => boxed(doctor::parse(&argv[1..])?, |o| Parsed::Doctor(Box::new(o))),
        Some("check") => boxed(check::parse(&argv[1..])?, |o| Parsed::Check(Box::new(o))),
        Some("step") => boxed(step::parse(&argv[1..])?, |o| Parsed::Step(Box::new(o))),
        Some("info") => boxed(info::parse(&argv[1..])?, |o| Parsed::HostInfo(Box::new(o))),
        _ => boxed(sweep::parse(argv)?, |o| Parsed::Run(Box::new(o))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::nearest_subcommand;

    /// The old spellings still parse, to the new flags, with one note each naming the new one;
    /// other subcommands' flags of the same name are left alone.
    #[test]
    fn old_flag_spellings_are_rewritten_with_a_note() {
        let argv = |a: &[&str]| -> Vec<String> { a.iter().map(|s| s.to_string()).collect() };
        let mut a = argv(&["coll-bench", "all-reduce", "--warmup_iters", "3", "-n", "2"]);
        let notes = renamed_flags(&mut a);
        assert_eq!(a, argv(&["coll-bench", "all-reduce", "--warmup-iters", "3", "-n", "2"]));
        assert_eq!(notes, ["coll-bench: note: coll-bench --warmup_iters is now --warmup-iters; the old spelling goes in the next release"]);
        let mut a = argv(&["coll-bench", "step", "--dtype=bf16", "--layouts", "all", "--warmup_iters=0"]);
        let notes = renamed_flags(&mut a);
        assert_eq!(a, argv(&["coll-bench", "step", "--datatype=bf16", "--layout", "all", "--warmup-iters=0"]));
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].contains("coll-bench step --dtype is now --datatype"), "{notes:?}");
        // Not a renamed flag there, a longer flag, or a value after `--`: untouched.
        for a in [
            &["coll-bench", "--dtype", "x"][..],
            &["coll-bench", "step", "--dtypes"],
            &["coll-bench", "pairs", "--", "--layouts"],
        ] {
            let mut v = argv(a);
            assert!(renamed_flags(&mut v).is_empty() && v == argv(a), "{a:?}");
        }
        match parse(&argv(&["coll-bench", "-w", "3", "--warmup-iters", "4"])) {
            Err(e) => assert!(e.to_string().contains("--warmup-iters"), "{e}"),
            Ok(_) => panic!("-w and --warmup-iters are one flag"),
        }
    }

    #[test]
    fn a_misspelt_subcommand_is_named() {
        assert_eq!(nearest_subcommand("chekc"), Some("check"));
        assert_eq!(nearest_subcommand("Tunee"), Some("tune"));
        assert_eq!(nearest_subcommand("steps"), Some("step"));
        assert_eq!(nearest_subcommand("allscatter"), None);
        assert_eq!(nearest_subcommand("all-reduce"), None);
        let e = parse(&["coll-bench".to_string(), "chekc".to_string(), "x.toml".to_string()]).unwrap_err();
        assert!(e.to_string().contains("did you mean the subcommand 'check'?"), "{e}");
    }
}
