//! The command line: nccl-tests' flags where they exist, turned into a validated [`Options`]
//! before anything runs. Values are taken as text and checked here, so every bad value gives one
//! line naming the flag and the accepted form.

use crate::collective::Kind;
use crate::dtype::{DType, Op};
use crate::error::{Error, Result};
use crate::options::{Aggregation, BackendKind, CsvTarget, Options, Step, Timeout, MAX_ITERS};
use crate::size::{parse_size, SIZE_FORM};
use clap::Parser;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Subcommands (`coll-bench help SUBCOMMAND` for each one's flags):
  (none)   the sweep: time collectives across message sizes (this help)
  check    judge the cluster against an acceptance spec (TOML); exit 1 when a rule fails
  tune     which algorithm the MPI library should use per collective and size; writes its tuning file
  pairs    point-to-point latency and bandwidth between every pair of ranks; names the slow pairs
  info     what every host has (MPI, CPU, memory, network, NCCL, GPUs); names the hosts that differ
  plot     draw bus bandwidth and time against size from CSVs (SVG or PNG); no MPI needed
  compare  compare runs' CSVs point by point; exit 1 on a slowdown beyond run-to-run noise; no MPI needed
  spec     `spec from-run RUN.csv --margin 30%`: an acceptance spec from a known-good run; no MPI needed

Examples:
  mpirun -n 8 -H node1:4,node2:4 coll-bench all-reduce -b 8 -e 256M --csv ar.csv
  mpirun -n 16 --map-by ppr:8:node coll-bench check ci/acceptance/multi-node.toml --junit verdicts.xml

Launch with MPI: mpirun -n 8 -H node1,node2 coll-bench [OPTIONS] [COLLECTIVE]...
Columns: size (B), count (elements), type, redop, root, then for out-of-place and in-place:
time (us, per iteration, combined across ranks by -a), algbw and busbw (GB/s, 1 GB = 1e9 B), #wrong.
Exit codes: 0 ok, 1 wrong data, 2 usage or setup error, or a call that outlived -T.";

/// Measure collective communication: all-reduce, all-gather, reduce-scatter and more, over MPI.
#[derive(Parser, Debug)]
#[command(name = "coll-bench", version, about, after_help = AFTER_HELP, allow_negative_numbers = true)]
pub struct Args {
    /// Collectives to run: all-reduce, all-gather, reduce-scatter, broadcast, reduce, gather,
    /// scatter, all-to-all, sendrecv, barrier, or all [default: the first three]
    #[arg(value_name = "COLLECTIVE")]
    pub collectives: Vec<String>,
    /// Smallest message size (K/M/G suffixes are binary)
    #[arg(short = 'b', long = "minbytes", value_name = "SIZE", default_value = "8")]
    pub minbytes: String,
    /// Largest message size
    #[arg(short = 'e', long = "maxbytes", value_name = "SIZE", default_value = "64M")]
    pub maxbytes: String,
    /// Multiply the size by this factor at each step [default: 2]
    #[arg(short = 'f', long = "stepfactor", value_name = "FACTOR")]
    pub stepfactor: Option<String>,
    /// Add this many bytes at each step instead of multiplying
    #[arg(short = 'i', long = "stepbytes", value_name = "SIZE")]
    pub stepbytes: Option<String>,
    /// Timed iterations per size [default: as many as fit the time budget]
    #[arg(short = 'n', long = "iters", value_name = "N")]
    pub iters: Option<String>,
    /// Warm-up iterations per size [default: about a tenth of the time budget]
    #[arg(short = 'w', long = "warmup_iters", value_name = "N")]
    pub warmup: Option<String>,
    /// Time budget for the timed iterations of each size and placement (e.g. 50ms, 1s)
    #[arg(long = "budget", value_name = "TIME", default_value = "50ms")]
    pub budget: String,
    /// Stop a size's timed iterations early once the 95% interval of the median is narrower than
    /// this many percent of it on every rank (e.g. 1); 0, the default, spends the whole budget
    #[arg(long = "ci-target", value_name = "PCT", default_value = "0")]
    pub ci_target: String,
    /// Check results (0 or 1)
    #[arg(short = 'c', long = "check", value_name = "0|1", default_value = "1")]
    pub check: String,
    /// Data type(s), comma-separated, or all
    #[arg(short = 'd', long = "datatype", value_name = "TYPE", default_value = "float")]
    pub datatype: String,
    /// Reduction op(s), comma-separated, or all
    #[arg(short = 'o', long = "op", value_name = "OP", default_value = "sum")]
    pub op: String,
    /// Combine ranks' times: 0 rank 0, 1 mean, 2 min, 3 max
    #[arg(short = 'a', long = "average", value_name = "0-3", default_value = "1")]
    pub average: String,
    /// Root rank of broadcast, reduce, gather and scatter
    #[arg(short = 'r', long = "root", value_name = "RANK", default_value = "0")]
    pub root: String,
    /// Synchronise all ranks after every call (0 or 1)
    #[arg(short = 'z', long = "blocking", value_name = "0|1", default_value = "0")]
    pub blocking: String,
    /// Communication backend: mpi (CPU buffers) or nccl (GPU buffers, one GPU per rank)
    #[arg(long = "backend", value_name = "NAME", default_value = "mpi")]
    pub backend: String,
    /// Implementation of the collectives within the backend: native (the library's own), ring
    /// (all-reduce, reduce-scatter, all-gather over MPI_Sendrecv) or recursive-doubling (all-reduce)
    #[arg(long = "impl", value_name = "NAME", default_value = "native")]
    pub implementation: String,
    /// Write results as CSV to PATH [default: results/coll-bench-<UTC time>.csv]
    #[arg(long = "csv", value_name = "PATH", conflicts_with = "no_csv")]
    pub csv: Option<PathBuf>,
    /// Write no CSV
    #[arg(long = "no-csv")]
    pub no_csv: bool,
    /// Show a progress bar on stderr (automatic when rank 0's stderr is a terminal; under mpirun
    /// it is a pipe, so ask for it)
    #[arg(long = "progress")]
    pub progress: bool,
    /// Add one CSV/JSON row per rank (each rank's own mean time)
    #[arg(long = "per-rank")]
    pub per_rank: bool,
    /// Also write the results as JSON (results, options, hosts, versions)
    #[arg(long = "json", value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Also write the table as Markdown
    #[arg(long = "markdown", value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// At the end, plot the run's CSV (bus bandwidth and time against size) to FILE.svg or FILE.png
    #[arg(long = "plot", value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Stop the whole job (exit 2) when a call has not finished SECONDS after it was expected to,
    /// e.g. a host or link gone or a rank stopped (5, 2.5, 30s); 0: never [default: max(5 min,
    /// 20x the step's expected time)]
    #[arg(short = 'T', long = "timeout", value_name = "SECONDS")]
    pub timeout: Option<String>,
    /// Replace output files that already exist (regular files only)
    #[arg(long = "force", visible_alias = "overwrite")]
    pub force: bool,
    /// Write to the file an output path's symbolic link points at (refused by default)
    #[arg(long = "follow-symlinks")]
    pub follow_symlinks: bool,
    /// Refuse a plan of more points (collective × type × op × size) than this; 0: no limit
    #[arg(long = "max-points", value_name = "N", default_value = "10000")]
    pub max_points: String,
    /// Refuse a plan estimated (from the budget) to take longer than this (e.g. 1h, 90m); 0: no limit
    #[arg(long = "max-time", value_name = "TIME", default_value = "1h")]
    pub max_time: String,
    /// Testing only: RANK:MICROSECONDS — that rank sleeps before each timed batch, outside its
    /// own timing, so the others wait for it.
    #[arg(long = "debug-slow-rank", value_name = "RANK:US", hide = true)]
    pub debug_slow_rank: Option<String>,
    /// Testing only: corrupt one output element on this rank after each check call, to prove
    /// that wrong data is caught and gives exit code 1.
    #[arg(long = "debug-corrupt-rank", value_name = "RANK", hide = true)]
    pub debug_corrupt_rank: Option<usize>,
    /// Testing only: RANK[,RANK…] — these ranks pass an invalid argument (MPI_DATATYPE_NULL) to
    /// the mpi backend's calls, to prove that a failed MPI call ends the job with one line.
    #[arg(long = "debug-mpi-error", value_name = "RANKS", hide = true, value_delimiter = ',')]
    pub debug_mpi_error: Vec<usize>,
}

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

/// Run clap on `argv`: a usage error becomes one line (clap's first line, without its usage
/// block), help and version become [`Clap::Info`].
pub fn clap_parse<T: Parser>(argv: &[String]) -> Result<Clap<T>> {
    match T::try_parse_from(argv) {
        Ok(a) => Ok(Clap::Args(a)),
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Ok(Clap::Info(e.render().to_string())),
                _ => {
                    let text = e.render().to_string();
                    let first = text.lines().next().unwrap_or("bad command line").trim_start_matches("error: ");
                    let name = T::command().get_name().to_string();
                    Err(Error::usage(format!("{first} (see {name} --help)")))
                }
            }
        }
    }
}

/// Parse and validate `argv` (including the program name).
pub fn parse(argv: &[String]) -> Result<Parsed> {
    if argv.get(1).map(String::as_str) == Some("pairs") {
        return Ok(match crate::pairs::parse(&argv[1..])? {
            Clap::Args(o) => Parsed::Pairs(Box::new(o)),
            Clap::Info(t) => Parsed::Info(t),
        });
    }
    if argv.get(1).map(String::as_str) == Some("tune") {
        return Ok(match crate::tune::parse(&argv[1..])? {
            Clap::Args(o) => Parsed::Tune(Box::new(o)),
            Clap::Info(t) => Parsed::Info(t),
        });
    }
    if argv.get(1).map(String::as_str) == Some("check") {
        return Ok(match crate::acceptance::parse(&argv[1..])? {
            Clap::Args(o) => Parsed::Check(Box::new(o)),
            Clap::Info(t) => Parsed::Info(t),
        });
    }
    if argv.get(1).map(String::as_str) == Some("info") {
        return Ok(match crate::info::parse(&argv[1..])? {
            Clap::Args(o) => Parsed::HostInfo(Box::new(o)),
            Clap::Info(t) => Parsed::Info(t),
        });
    }
    match clap_parse::<Args>(argv)? {
        Clap::Args(args) => args.into_options().map(|o| Parsed::Run(Box::new(o))),
        Clap::Info(t) => Ok(Parsed::Info(t)),
    }
}

fn size_flag(flag: &str, v: &str) -> Result<u64> {
    parse_size(v).map_err(|why| Error::usage(format!("{flag}: {why}; expected {SIZE_FORM}")))
}

fn bool_flag(flag: &str, v: &str) -> Result<bool> {
    match v.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(Error::usage(format!("{flag}: '{v}' is not allowed; expected 0 or 1"))),
    }
}

fn count_flag(flag: &str, v: &str, min: u64) -> Result<u64> {
    let n: u64 = v.trim().parse().map_err(|_| {
        Error::usage(format!("{flag}: '{v}' is not a count; expected a whole number from {min} to {MAX_ITERS}"))
    })?;
    if n < min || n > MAX_ITERS {
        return Err(Error::usage(format!(
            "{flag}: {n} is out of range; expected a whole number from {min} to {MAX_ITERS}"
        )));
    }
    Ok(n)
}

/// Parse a comma-separated list with `all` meaning every item.
fn list<T: Copy>(flag: &str, v: &str, all: &[T], parse: impl Fn(&str) -> Option<T>, accepted: &str) -> Result<Vec<T>> {
    let mut out: Vec<T> = vec![];
    for item in v.split(',').map(str::trim) {
        if item.eq_ignore_ascii_case("all") {
            out.extend_from_slice(all);
        } else {
            match parse(item) {
                Some(x) => out.push(x),
                None => return Err(Error::usage(format!("{flag}: unknown value '{item}'; expected {accepted}"))),
            }
        }
    }
    Ok(out)
}

fn dedup<T: PartialEq + Copy>(v: Vec<T>) -> Vec<T> {
    let mut out = vec![];
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

impl Args {
    pub fn into_options(self) -> Result<Options> {
        let mut collectives = vec![];
        for name in &self.collectives {
            if name.eq_ignore_ascii_case("all") {
                collectives.extend(Kind::ALL);
            } else {
                match Kind::parse(name) {
                    Some(k) => collectives.push(k),
                    None => {
                        return Err(Error::usage(format!(
                            "COLLECTIVE: unknown collective '{name}'; expected {}",
                            Kind::ACCEPTED
                        )))
                    }
                }
            }
        }
        if collectives.is_empty() {
            collectives = Kind::CORE.to_vec();
        }

        let min_bytes = size_flag("-b/--minbytes", &self.minbytes)?;
        let max_bytes = size_flag("-e/--maxbytes", &self.maxbytes)?;
        if min_bytes > max_bytes {
            return Err(Error::usage(format!(
                "-b/--minbytes ({min_bytes}) is larger than -e/--maxbytes ({max_bytes}); expected minbytes <= maxbytes"
            )));
        }
        let step = match (&self.stepfactor, &self.stepbytes) {
            (Some(_), Some(_)) => {
                return Err(Error::usage(
                    "-f/--stepfactor and -i/--stepbytes both given; expected one of them (a factor > 1, or a size)",
                ))
            }
            (None, Some(b)) => Step::Bytes(size_flag("-i/--stepbytes", b)?),
            (f, None) => {
                let text = f.as_deref().unwrap_or("2");
                let factor: f64 = text.trim().parse().map_err(|_| {
                    Error::usage(format!(
                        "-f/--stepfactor: '{text}' is not a number; expected a factor greater than 1, e.g. 2"
                    ))
                })?;
                if !factor.is_finite() || factor <= 1.0 {
                    return Err(Error::usage(format!(
                        "-f/--stepfactor: {text} is not greater than 1; expected a factor greater than 1, e.g. 2"
                    )));
                }
                Step::Factor(factor)
            }
        };
        let iters = self.iters.as_deref().map(|v| count_flag("-n/--iters", v, 1)).transpose()?;
        let warmup = self.warmup.as_deref().map(|v| count_flag("-w/--warmup_iters", v, 0)).transpose()?;
        let budget_s = parse_budget(&self.budget)?;
        let ci_target = match self.ci_target.trim().parse::<f64>() {
            Ok(p) if (0.0..=100.0).contains(&p) => p / 100.0,
            _ => {
                return Err(Error::usage(format!(
                    "--ci-target: '{}' is not a percentage; expected a number from 0 to 100, e.g. 1",
                    self.ci_target
                )))
            }
        };
        let check = bool_flag("-c/--check", &self.check)?;
        let blocking = bool_flag("-z/--blocking", &self.blocking)?;
        let dtypes = dedup(list("-d/--datatype", &self.datatype, &DType::ALL, DType::parse, DType::ACCEPTED)?);
        if collectives.iter().any(|k| k.spec().sized()) {
            if let Some(d) = dtypes.iter().copied().filter(|d| d.size() as u64 > min_bytes).max_by_key(|d| d.size()) {
                return Err(Error::usage(format!(
                    "-b/--minbytes: {min_bytes} B is less than one {d} element ({} B), which would time calls on no data; expected at least {} B, or a smaller -d/--datatype",
                    d.size(),
                    d.size()
                )));
            }
        }
        let ops = dedup(list("-o/--op", &self.op, &Op::ALL, Op::parse, Op::ACCEPTED)?);
        let aggregation = self.average.trim().parse::<u8>().ok().and_then(Aggregation::from_flag).ok_or_else(|| {
            Error::usage(format!(
                "-a/--average: '{}' is not allowed; expected 0 (rank 0), 1 (mean), 2 (min) or 3 (max)",
                self.average
            ))
        })?;
        let root: usize = self.root.trim().parse().map_err(|_| {
            Error::usage(format!("-r/--root: '{}' is not a rank; expected a whole number from 0 to ranks-1", self.root))
        })?;
        let backend = match self.backend.to_ascii_lowercase().as_str() {
            "mpi" => BackendKind::Mpi,
            "nccl" => BackendKind::Nccl,
            other => return Err(Error::usage(format!("--backend: unknown backend '{other}'; expected mpi or nccl"))),
        };
        let implementation = self.implementation.to_ascii_lowercase();
        if !crate::backend::IMPLEMENTATIONS.contains(&implementation.as_str()) {
            return Err(Error::usage(format!(
                "--impl: unknown implementation '{}'; expected {}",
                self.implementation,
                crate::backend::IMPLEMENTATIONS.join(" or ")
            )));
        }
        if let Some(imp) = crate::backend::mpi::Implementation::parse(&implementation)
            .filter(|i| *i != crate::backend::mpi::Implementation::Native)
        {
            if backend != BackendKind::Mpi {
                return Err(Error::usage(format!(
                    "--impl {implementation}: runs on the mpi backend; expected --backend mpi"
                )));
            }
            if let Some(k) = collectives.iter().find(|k| !imp.provides(**k)) {
                let offered: Vec<&str> = Kind::ALL.iter().filter(|k| imp.provides(**k)).map(|k| k.name()).collect();
                return Err(Error::usage(format!(
                    "--impl {implementation}: implements {} only, not {k}; expected those, or --impl native",
                    offered.join(", ")
                )));
            }
        }
        let csv = match (self.csv, self.no_csv) {
            (_, true) => CsvTarget::Off,
            (Some(p), false) if p.as_os_str().is_empty() => {
                return Err(Error::usage("--csv: empty path; expected a file path, e.g. results/run.csv"))
            }
            (Some(p), false) => CsvTarget::Path(p),
            (None, false) => CsvTarget::Default,
        };
        let debug_slow_rank = self.debug_slow_rank.as_deref().map(parse_slow_rank).transpose()?;
        let timeout = self.timeout.as_deref().map(parse_timeout).transpose()?.unwrap_or(Timeout::Auto);
        if let Some(p) = &self.plot {
            crate::plot::check_output(p)?;
            if self.no_csv {
                return Err(Error::usage("--plot draws the run's CSV; expected --plot without --no-csv"));
            }
        }
        for (flag, p) in [("--json", &self.json), ("--markdown", &self.markdown), ("--plot", &self.plot)] {
            if p.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                return Err(Error::usage(format!("{flag}: empty path; expected a file path")));
            }
        }
        let max_points: u64 = self.max_points.trim().parse().map_err(|_| {
            Error::usage(format!(
                "--max-points: '{}' is not a count; expected a whole number (0: no limit)",
                self.max_points
            ))
        })?;
        let max_time_s = parse_duration("--max-time", &self.max_time, true)?;
        let opts = Options {
            collectives: dedup(collectives),
            min_bytes,
            max_bytes,
            step,
            iters,
            warmup,
            budget_s,
            ci_target,
            check,
            dtypes,
            ops,
            aggregation,
            root,
            blocking,
            backend,
            implementation,
            csv,
            progress: self.progress,
            per_rank: self.per_rank,
            json: self.json,
            markdown: self.markdown,
            plot: self.plot,
            timeout,
            files: crate::report::Policy { force: self.force, follow_symlinks: self.follow_symlinks },
            max_points,
            max_time_s,
            debug_slow_rank,
            debug_corrupt_rank: self.debug_corrupt_rank,
            debug_mpi_error: self.debug_mpi_error,
        };
        opts.check_plan_limits()?;
        Ok(opts)
    }
}

/// `RANK:MICROSECONDS` of the hidden `--debug-slow-rank` flag.
pub fn parse_slow_rank(v: &str) -> Result<(usize, u64)> {
    v.split_once(':')
        .and_then(|(r, us)| Some((r.parse().ok()?, us.parse().ok()?)))
        .ok_or_else(|| Error::usage(format!("--debug-slow-rank: '{v}' is not RANK:MICROSECONDS")))
}

pub fn parse_budget(v: &str) -> Result<f64> {
    parse_duration("--budget", v, false)
}

/// A duration flag: seconds (`0.5`) or with a unit (`50ms`, `2s`, `10m`, `1000h`); positive,
/// or zero where `zero_ok` (meaning "no limit").
pub fn parse_duration(flag: &str, v: &str, zero_ok: bool) -> Result<f64> {
    let want = if zero_ok {
        "a duration, e.g. 50ms, 2s, 10m or 1h (0: no limit)"
    } else {
        "a positive duration, e.g. 50ms, 2s, 10m or 1h"
    };
    let bad = || {
        Error::usage(format!(
            "{flag}: '{v}' is not {}; expected {want}",
            if zero_ok { "a duration" } else { "a positive duration" }
        ))
    };
    let secs = seconds(v).ok_or_else(bad)?;
    if !(secs.is_finite() && (secs > 0.0 || (zero_ok && secs == 0.0))) {
        return Err(bad());
    }
    Ok(secs)
}

/// Seconds from plain seconds (`0.5`) or a duration with a unit (`50ms`, `2s`, `1h`); unchecked.
fn seconds(v: &str) -> Option<f64> {
    let v = v.trim();
    v.parse::<f64>().ok().or_else(|| humantime::parse_duration(v).ok().map(|d| d.as_secs_f64()))
}

/// `-T/--timeout`: seconds (`5`, `2.5`) or a duration (`30s`, `1m`), above 0, at most a day;
/// `0` turns the watchdog off.
fn parse_timeout(v: &str) -> Result<Timeout> {
    let bad = || {
        Error::usage(format!(
            "-T/--timeout: '{v}' is not a duration; expected seconds up to a day, e.g. 5, 2.5 or 30s, or 0 for no limit"
        ))
    };
    let secs = seconds(v).ok_or_else(bad)?;
    if secs == 0.0 {
        return Ok(Timeout::Off);
    }
    if !(secs.is_finite() && secs > 0.0 && secs <= 86400.0) {
        return Err(bad());
    }
    Ok(Timeout::Fixed(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Options> {
        let mut argv = vec!["coll-bench".to_string()];
        argv.extend(args.iter().map(|s| s.to_string()));
        match parse(&argv)? {
            Parsed::Run(o) => Ok(*o),
            _ => panic!("not a sweep"),
        }
    }

    fn err(args: &[&str]) -> String {
        run(args).unwrap_err().to_string()
    }

    #[test]
    fn defaults_are_the_core_three_8b_to_64m_factor_2() {
        let o = run(&[]).unwrap();
        assert_eq!(o.collectives, Kind::CORE.to_vec());
        assert_eq!((o.min_bytes, o.max_bytes, o.step), (8, 64 << 20, Step::Factor(2.0)));
        assert_eq!((o.dtypes.clone(), o.ops.clone()), (vec![DType::Float32], vec![Op::Sum]));
        assert!(o.check && !o.blocking);
        assert_eq!(o.aggregation, Aggregation::Mean);
        assert_eq!(o.csv, CsvTarget::Default);
    }

    #[test]
    fn nccl_tests_flags() {
        let o = run(&[
            "-b",
            "1K",
            "-e",
            "1M",
            "-f",
            "4",
            "-n",
            "10",
            "-w",
            "0",
            "-c",
            "0",
            "-d",
            "all",
            "-o",
            "all",
            "-a",
            "3",
            "-r",
            "1",
            "-z",
            "1",
            "all-gather",
            "broadcast",
        ])
        .unwrap();
        assert_eq!(o.collectives, vec![Kind::AllGather, Kind::Broadcast]);
        assert_eq!((o.min_bytes, o.max_bytes, o.step), (1024, 1 << 20, Step::Factor(4.0)));
        assert_eq!((o.iters, o.warmup, o.check, o.blocking), (Some(10), Some(0), false, true));
        assert_eq!(o.dtypes.len(), 10);
        assert_eq!(o.ops.len(), 5);
        assert_eq!((o.aggregation, o.root), (Aggregation::Max, 1));
        let o = run(&["-i", "1K", "-b", "1K", "-e", "4K", "all"]).unwrap();
        assert_eq!(o.step, Step::Bytes(1024));
        assert_eq!(o.collectives.len(), Kind::ALL.len());
    }

    #[test]
    fn every_bad_value_names_its_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["-b", "0"], "-b/--minbytes"),
            (&["-b", "-8"], "-b/--minbytes"),
            (&["-e", "12Q"], "-e/--maxbytes"),
            (&["-b", "2M", "-e", "1M"], "larger than -e/--maxbytes"),
            (&["-f", "1"], "-f/--stepfactor"),
            (&["-f", "0.5"], "-f/--stepfactor"),
            (&["-f", "x"], "-f/--stepfactor"),
            (&["-i", "0"], "-i/--stepbytes"),
            (&["-n", "0"], "-n/--iters"),
            (&["-n", "-3"], "-n/--iters"),
            (&["-w", "x"], "-w/--warmup_iters"),
            (&["-c", "2"], "-c/--check"),
            (&["-z", "yes"], "-z/--blocking"),
            (&["-d", "float128"], "-d/--datatype"),
            (&["-o", "xor"], "-o/--op"),
            (&["-a", "4"], "-a/--average"),
            (&["-r", "-1"], "-r/--root"),
            (&["all-reduce", "allscatter"], "COLLECTIVE: unknown collective 'allscatter'"),
            (&["--backend", "gloo"], "--backend"),
            (
                &["--impl", "ring", "broadcast"],
                "--impl ring: implements all-reduce, all-gather, reduce-scatter only, not broadcast",
            ),
            (
                &["--impl", "recursive-doubling"],
                "--impl recursive-doubling: implements all-reduce only, not all-gather",
            ),
            (&["--impl", "ring", "all-reduce", "--backend", "nccl"], "--impl ring: runs on the mpi backend"),
            (&["--budget", "0s"], "--budget"),
            (&["--ci-target", "-1"], "--ci-target"),
            (&["--ci-target", "lots"], "--ci-target"),
            (&["--csv", ""], "--csv"),
            (&["-b", "1", "-e", "3", "-d", "int64"], "-b/--minbytes: 1 B is less than one int64 element (8 B)"),
            (&["-b", "4", "-d", "int8,float64"], "one double element"),
            (&["-i", "1", "-b", "8", "-e", "1M"], "over --max-points 10000"),
            (&["--budget", "1000h"], "over --max-time"),
            (&["--max-points", "x"], "--max-points"),
            (&["--max-time", "soon"], "--max-time"),
            (&["--frobnicate"], "--frobnicate"),
        ];
        for (args, needle) in cases {
            let e = err(args);
            assert!(e.contains(needle), "{args:?}: {e}");
            assert!(!e.contains('\n'), "{args:?}: more than one line: {e}");
        }
    }

    #[test]
    fn timeout_flag() {
        assert_eq!(run(&[]).unwrap().timeout, Timeout::Auto, "a generous limit by default");
        assert_eq!(run(&["-T", "0"]).unwrap().timeout, Timeout::Off);
        assert_eq!(run(&["-T", "5"]).unwrap().timeout, Timeout::Fixed(5.0));
        assert_eq!(run(&["--timeout", "2.5"]).unwrap().timeout, Timeout::Fixed(2.5));
        assert_eq!(run(&["--timeout=30s"]).unwrap().timeout, Timeout::Fixed(30.0));
        assert_eq!(run(&["-T", "500ms"]).unwrap().timeout, Timeout::Fixed(0.5));
        assert_eq!(run(&["-T", "0s"]).unwrap().timeout, Timeout::Off);
        for bad in ["-1", "x", "1e9", "inf", ""] {
            let e = err(&["-T", bad]);
            assert!(e.starts_with("-T/--timeout: ") && e.contains("expected seconds"), "{bad:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn durations_take_hours_and_limits_can_be_lifted() {
        assert_eq!(parse_budget("2h").unwrap(), 7200.0);
        let o = run(&["--budget", "1000h", "--max-time", "0", "barrier"]).unwrap();
        assert_eq!(o.budget_s, 3.6e6);
        assert!(run(&["-i", "1", "-b", "8", "-e", "64K", "--max-points", "0", "--max-time", "0"]).is_ok());
        let o = run(&["--force", "--follow-symlinks"]).unwrap();
        assert!(o.files.force && o.files.follow_symlinks);
        assert!(run(&["--overwrite"]).unwrap().files.force);
    }

    #[test]
    fn help_is_info() {
        let argv: Vec<String> = ["coll-bench", "--help"].iter().map(|s| s.to_string()).collect();
        match parse(&argv).unwrap() {
            Parsed::Info(t) => assert!(t.contains("--minbytes") && t.contains("Exit codes")),
            _ => panic!(),
        }
    }
}
