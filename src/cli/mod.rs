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
pub use common::{FILE_SUBCOMMANDS, SUBCOMMANDS};
pub use sweep::Args;

use crate::error::Result;
use crate::options::Options;

/// What the command line asks every rank to do: one subcommand that runs on the MPI world and
/// its options (rank 0's is broadcast and compared on every rank: `app`). `--help` and
/// `--version` are [`Clap::Info`] beside it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Plan {
    /// The sweep: `coll-bench [COLLECTIVE…] …`
    Sweep(Box<Options>),
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

/// Parse and validate `argv` (including the program name): the plan, or help or version text.
pub fn parse(argv: &[String]) -> Result<Clap<Plan>> {
    fn plan<T>(c: Clap<T>, f: impl FnOnce(Box<T>) -> Plan) -> Clap<Plan> {
        match c {
            Clap::Args(o) => Clap::Args(f(Box::new(o))),
            Clap::Info(t) => Clap::Info(t),
        }
    }
    Ok(match argv.get(1).map(String::as_str) {
        Some("pairs") => plan(pairs::parse(&argv[1..])?, Plan::Pairs),
        Some("tune") => plan(tune::parse(&argv[1..])?, Plan::Tune),
        Some("doctor") => plan(doctor::parse(&argv[1..])?, Plan::Doctor),
        Some("check") => plan(check::parse(&argv[1..])?, Plan::Check),
        Some("step") => plan(step::parse(&argv[1..])?, Plan::Step),
        Some("info") => plan(info::parse(&argv[1..])?, Plan::HostInfo),
        _ => plan(sweep::parse(argv)?, Plan::Sweep),
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

    /// Every flag a subcommand's help lists, the long and the short name alike (`(short, long,
    /// value name)`), read from the help text as a user reads it.
    fn flags_in_help(help: &str) -> Vec<(Option<String>, String, Option<String>)> {
        let mut out = vec![];
        for line in help.lines() {
            let t = line.trim_start();
            if !t.starts_with('-') || line.len() - t.len() < 2 {
                continue;
            }
            let mut words = t.split_whitespace();
            let (mut short, mut long, mut value) = (None, None, None);
            for w in words.by_ref() {
                let w = w.trim_end_matches(',');
                if let Some(v) = w.strip_prefix('<') {
                    value = Some(v.trim_end_matches('>').to_string());
                    break;
                } else if w.starts_with("--") {
                    long = Some(w.to_string());
                } else if w.starts_with('-') && w.len() == 2 {
                    short = Some(w.to_string());
                } else {
                    break;
                }
            }
            if let Some(long) = long {
                out.push((short, long, value));
            }
        }
        out
    }

    /// A value a flag takes, for a run that gives it alone: by flag where its value name does not
    /// say enough, else by value name (the first of listed alternatives).
    fn sample(long: &str, value: &str) -> String {
        let by_flag = match long {
            "--json" => "out.json",
            "--csv" => "out.csv",
            "--markdown" => "out.md",
            "--plot" | "--output" => "out.svg",
            "--junit" => "out.xml",
            "--write-matrix" => "out.matrix",
            "--write-rules" | "--verify" => "out.rules",
            "--pattern" => "uniform",
            "--layout" => "dp=*",
            "--groups" => "world",
            "--backend" => "mpi",
            "--impl" => "native",
            "--placement" => "out-of-place",
            "--x-axis" => "size",
            "--title" => "t",
            "--width" | "--height" => "800",
            "--skew" => "0.5",
            "--capacity" => "1.5",
            "--top" => "3",
            "--max-points" => "100000",
            "--max-time" => "2h",
            _ => "",
        };
        if !by_flag.is_empty() {
            return by_flag.to_string();
        }
        match value {
            "SIZE" => "1M".into(),
            "TIME" => "10ms".into(),
            "SECONDS" => "5".into(),
            "PCT" => "50".into(),
            "P" => "0.05".into(),
            "TYPE" => "float".into(),
            "OP" => "sum".into(),
            "RANK" => "0".into(),
            "STAT" => "median".into(),
            // Listed alternatives: the last (a flag's default is usually the first).
            v if v.contains('|') => v.rsplit('|').next().unwrap().to_string(),
            _ => "2".into(),
        }
    }

    /// The help of every subcommand lists only what it accepts: each flag it shows, long and short,
    /// given with a value where it takes one (and what it needs beside it, e.g. `-G` the nccl
    /// backend), parses. A flag a subcommand takes from the sweep and refuses is hidden from its
    /// help (tune's and doctor's `--write-matrix`, step's `-C`).
    #[test]
    fn every_flag_in_a_subcommands_help_is_accepted_by_it() {
        let argv = |a: &[&str]| -> Vec<String> { a.iter().map(|s| s.to_string()).collect() };
        // (subcommand, the arguments it needs besides the flag, whether it is over files)
        let subs: [(&str, &[&str], bool); 10] = [
            ("", &[], false),
            ("check", &["spec.toml"], false),
            ("tune", &[], false),
            ("doctor", &[], false),
            ("pairs", &[], false),
            ("step", &[], false),
            ("info", &[], false),
            ("plot", &["a.csv"], true),
            ("compare", &["a.csv", "b.csv"], true),
            ("spec", &["from-run", "a.csv"], true),
        ];
        let mut refused = vec![];
        for (sub, needs, files) in subs {
            let mut head: Vec<&str> = vec!["coll-bench"];
            if !sub.is_empty() {
                head.push(sub);
            }
            if sub == "spec" {
                head.push("from-run");
            }
            let help_argv = argv(&[&head[..], &["--help"]].concat());
            let help = match if files {
                parse_files(&help_argv).unwrap()
            } else {
                parse(&help_argv).map(|p| match p {
                    Clap::Info(t) => Clap::Info(t),
                    Clap::Args(_) => Clap::Info(String::new()),
                })
            } {
                Ok(Clap::Info(t)) => t,
                other => panic!("{sub} --help: {:?}", other.err()),
            };
            let flags = flags_in_help(&help);
            assert!(flags.iter().any(|(_, l, _)| l == "--help"), "{sub}: no flags read from its help:\n{help}");
            for (short, long, value) in flags {
                if long == "--help" || long == "--version" {
                    continue;
                }
                for name in [Some(long.clone()), short.clone()].into_iter().flatten() {
                    let mut a: Vec<String> = argv(&head);
                    a.extend(needs.iter().skip(usize::from(sub == "spec")).map(|s| s.to_string()));
                    if sub == "plot" && long != "--output" {
                        a.extend(argv(&["-o", "p.svg"]));
                    }
                    // What a flag needs beside it, in any subcommand that lists it.
                    a.extend(argv(match long.as_str() {
                        "--cuda-graph" | "--agg-iters" | "--cpu-time" | "--register" => &["--backend", "nccl"],
                        "--write-matrix" => &["all-to-all-v"],
                        "--topk" | "--skew" | "--capacity" => &["--experts", "4"],
                        _ => &[],
                    }));
                    a.push(name.clone());
                    if let Some(v) = &value {
                        a.push(sample(&long, v));
                    }
                    let ok = if files {
                        parse_files(&a).unwrap().map(|_| ()).map_err(|e| e.to_string())
                    } else {
                        parse(&a).map(|_| ()).map_err(|e| e.to_string())
                    };
                    if let Err(e) = ok {
                        refused.push(format!("{}: {e}", a[1..].join(" ")));
                    }
                }
            }
        }
        assert!(refused.is_empty(), "flags in a subcommand's help that it refuses:\n{}", refused.join("\n"));
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
