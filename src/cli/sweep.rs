//! The sweep's flags (`coll-bench [OPTIONS] [COLLECTIVE]...`): nccl-tests' flags where they
//! exist, turned into a validated [`Options`]. tune takes the same flags (its parser flattens
//! [`Args`] in).

use super::common::Clap;
use super::values::{bool_flag, count_flag, dedup, list, size_flag, slow_rank};
use crate::collective::Kind;
use crate::dtype::{DType, Op};
use crate::duration;
use crate::error::{Error, Result};
use crate::options::{Aggregation, BackendKind, Implementation, LaunchModes, Malloc, Options, Order, Step};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Subcommands (`coll-bench help SUBCOMMAND` for each one's flags):
  (none)   the sweep: time collectives across message sizes (this help)
  check    judge the cluster against an acceptance spec (TOML); exit 1 when a rule fails
  tune     which algorithm the MPI library should use per collective and size; writes its tuning file
  doctor   each collective against the ceiling of its links; ranks the causes of a shortfall; exit 1 on one
  pairs    point-to-point latency and bandwidth between every pair of ranks; names the slow pairs
  step     one training step's communication for a tp × ep × pp × dp layout; --layout all ranks them
  info     what every host has (MPI, CPU, memory, network, NCCL, GPUs); names the hosts that differ
  plot     draw bus bandwidth and time against size from CSVs (SVG or PNG); no MPI needed
  compare  compare runs' CSVs; exit 1 when a collective slowed beyond run-to-run noise; no MPI needed
  spec     `spec from-run RUN.csv --margin 30%`: an acceptance spec from a known-good run; no MPI needed

Examples:
  mpirun -n 8 -H node1:4,node2:4 coll-bench all-reduce -b 8 -e 256M --csv ar.csv
  mpirun -n 16 --map-by ppr:8:node coll-bench check ci/acceptance/multi-node.toml --junit verdicts.xml

Launch with MPI: mpirun -n 8 -H node1,node2 coll-bench [OPTIONS] [COLLECTIVE]...
Started without a launcher it refuses (one rank measures no communication); --one-rank, before or
after the subcommand, runs one rank alone on purpose.
Columns: size (B), count (elements), type, redop, root, then for out-of-place and in-place:
time (us, per iteration, combined across ranks by -a), algbw and busbw (GB/s, 1 GB = 1e9 B), #wrong.
Exit codes: 0 ok, 1 wrong data, 2 usage or setup error, or a call that outlived -T,
130/143 interrupted (SIGINT/SIGTERM).";

/// Measure collective communication: all-reduce, all-gather, reduce-scatter and more, over MPI.
#[derive(clap::Parser, Debug)]
#[command(name = "coll-bench", version, about, after_help = AFTER_HELP, allow_negative_numbers = true)]
pub struct Args {
    /// Collectives to run: all-reduce, all-gather, reduce-scatter, broadcast, reduce, gather,
    /// scatter, all-to-all, all-to-all-v (its traffic: --pattern), sendrecv, ping-pong, barrier,
    /// or all [default: the first three].
    /// sendrecv is nccl-tests' ring (each rank sends to rank+1 and receives from rank-1 at once);
    /// ping-pong is OSU's latency test between pairs 0-1, 2-3, ... (one way), which sendrecv
    /// meant before
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
    #[arg(short = 'w', long = "warmup-iters", value_name = "N")]
    pub warmup: Option<String>,
    /// Time budget for the timed iterations of each size and placement (e.g. 50ms, 1s)
    #[arg(long = "budget", value_name = "TIME", default_value = "50ms", allow_hyphen_values = true)]
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
    /// Traffic of all-to-all-v: uniform, spread=S (nccl-tests' distance-weighted counts, S 0-1),
    /// matrix=FILE (nccl-tests' traffic-matrix file, bytes, row = sender) or
    /// moe:experts=E,topk=K,skew=Z[,capacity=C][,seed=N] (tokens routed to their top-k experts)
    #[arg(long = "pattern", value_name = "PATTERN", default_value = "uniform")]
    pub pattern: String,
    /// Synchronise all ranks after every call (0 or 1)
    #[arg(short = 'z', long = "blocking", value_name = "0|1", default_value = "0")]
    pub blocking: String,
    #[command(flatten)]
    pub launch: LaunchFlags,
    /// Communication backend: mpi (CPU buffers) or nccl (GPU buffers, one GPU per rank)
    #[arg(long = "backend", value_name = "NAME", default_value = "mpi")]
    pub backend: String,
    /// Implementation of the collectives within the backend: native (the library's own), ring
    /// (all-reduce, reduce-scatter, all-gather over MPI_Sendrecv), recursive-doubling (all-reduce)
    /// or counts (the library's MPI_Reduce_scatter and MPI_Allgatherv, equal counts)
    #[arg(long = "impl", value_name = "NAME", default_value = "native")]
    pub implementation: String,
    /// Heap the MPI library runs on: default (the C library's allocator as the environment sets
    /// it, what an application gets) or kept (freed memory kept in the heap: mallopt before
    /// MPI_Init, so the library's per-call temporary buffers cost no page faults)
    #[arg(long = "malloc", value_name = "default|kept", default_value = "default")]
    pub malloc: String,
    /// Order of measurement: collective (each collective's sizes in turn, rows printed as
    /// measured) or size (every collective at one size, then the next: a machine changing speed
    /// mid-run then slows every collective alike, so `compare` of one run per side tells it from
    /// a regression; the table is printed at the end)
    #[arg(long = "order", value_name = "collective|size", default_value = "collective")]
    pub order: String,
    /// Skip the ceiling pass: by default the run first times sendrecv around the ring of its
    /// ranks at its largest size (at most 256 MiB) and gives every point's bus bandwidth as a
    /// percentage of it (%ceil, pct_of_ceiling)
    #[arg(long = "no-ceiling")]
    pub no_ceiling: bool,
    #[command(flatten)]
    pub csv: super::common::CsvFlags,
    /// Show a progress bar on stderr (automatic when rank 0's stderr is a terminal; under mpirun
    /// it is a pipe, so ask for it)
    #[arg(long = "progress")]
    pub progress: bool,
    /// Add one CSV/JSON row per rank (each rank's own mean time)
    #[arg(long = "per-rank")]
    pub per_rank: bool,
    /// Which ranks run each collective together, all groups at once: world, node, rail,
    /// split=mod:N, split=div:N, or tp=T,pp=P,dp=D (one * allowed; order=…, :DIM)
    #[arg(long = "groups", value_name = "LAYOUT", default_value = "world")]
    pub groups: String,
    /// Run the groups of --groups in turn instead of all at once (to see contention)
    #[arg(long = "one-group-at-a-time")]
    pub one_group_at_a_time: bool,
    /// Add one CSV/JSON row per group (--groups)
    #[arg(long = "per-group")]
    pub per_group: bool,
    #[command(flatten)]
    pub json: super::common::JsonFlag,
    /// Also write the table as Markdown
    #[arg(long = "markdown", value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Write all-to-all-v's traffic at the largest size as an nccl-tests matrix file (bytes,
    /// row = sender), before measuring: replay it with --pattern matrix=FILE, or give it to
    /// nccl-tests' alltoallv_perf (NCCL_TESTS_ALLTOALLV_MATRIX_FILE)
    #[arg(long = "write-matrix", value_name = "FILE")]
    pub write_matrix: Option<PathBuf>,
    /// At the end, plot the run's CSV (bus bandwidth and time against size) to FILE.svg or FILE.png
    #[arg(long = "plot", value_name = "FILE")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub timeout: super::common::TimeoutFlag,
    #[command(flatten)]
    pub files: super::common::FileFlags,
    /// Refuse a plan of more points (collective × type × op × size) than this; 0: no limit
    #[arg(long = "max-points", value_name = "N", default_value = "10000")]
    pub max_points: String,
    /// Refuse a plan estimated (from the budget) to take longer than this (e.g. 1h, 90m); 0: no limit
    #[arg(long = "max-time", value_name = "TIME", default_value = "1h", allow_hyphen_values = true)]
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

/// How the NCCL backend launches its timed calls and on what memory (nccl-tests' `-G`, `-m`,
/// `-C`, `-R`); the mpi backend refuses them.
#[derive(clap::Args, Debug, Clone)]
pub struct LaunchFlags {
    /// With --backend nccl: capture each timed batch of calls into a CUDA graph and launch it N
    /// times per sample (nccl-tests -G N); 0: launch the calls on the stream
    #[arg(short = 'G', long = "cuda-graph", value_name = "N", default_value = "0")]
    pub cuda_graph: String,
    /// With --backend nccl: N calls per ncclGroupStart/ncclGroupEnd, one launch (nccl-tests -m N);
    /// -n and -w then count groups, and the time is per call
    #[arg(short = 'm', long = "agg-iters", value_name = "N", default_value = "1")]
    pub agg_iters: String,
    /// With --backend nccl: also report the host's time to launch one call, cpu_time_us
    /// (nccl-tests -C 1), beside the time the GPU took (0 or 1)
    #[arg(short = 'C', long = "cpu-time", value_name = "0|1", default_value = "0")]
    pub cpu_time: String,
    /// With --backend nccl: the buffers from ncclMemAlloc and registered with the communicator:
    /// 1 ncclCommRegister (NCCL 2.19+), 2 symmetric windows (NCCL 2.27+); 0: cuMemAlloc, not
    /// registered (nccl-tests -R)
    #[arg(short = 'R', long = "register", value_name = "0|1|2", default_value = "0")]
    pub register: String,
}

impl LaunchFlags {
    /// The clap ids, for subcommands that take the sweep's flags but not these (hidden there).
    pub const IDS: [&'static str; 4] = ["cuda_graph", "agg_iters", "cpu_time", "register"];

    /// The first of these flags given a value other than its default, for subcommands that
    /// refuse them.
    pub fn given(&self) -> Option<&'static str> {
        [
            (&self.cuda_graph, "0", "-G/--cuda-graph"),
            (&self.agg_iters, "1", "-m/--agg-iters"),
            (&self.cpu_time, "0", "-C/--cpu-time"),
            (&self.register, "0", "-R/--register"),
        ]
        .into_iter()
        .find(|(v, default, _)| v.trim() != *default)
        .map(|(_, _, flag)| flag)
    }

    /// The modes, refused for any backend but NCCL and in combinations that cannot run.
    pub fn modes(&self, backend: BackendKind, blocking: bool, collectives: &[Kind]) -> Result<LaunchModes> {
        let graph = count_flag("-G/--cuda-graph", &self.cuda_graph, 0)?;
        let agg = count_flag("-m/--agg-iters", &self.agg_iters, 1)?;
        let cpu_time = bool_flag("-C/--cpu-time", &self.cpu_time)?;
        let too_many = |flag: &str, n: u64, min: u64| {
            Error::usage(format!(
                "{flag}: {n} is out of range; expected a whole number from {min} to {MAX_LAUNCH_COUNT}"
            ))
        };
        if graph > MAX_LAUNCH_COUNT {
            return Err(too_many("-G/--cuda-graph", graph, 0));
        }
        if agg > MAX_LAUNCH_COUNT {
            return Err(too_many("-m/--agg-iters", agg, 1));
        }
        let register = match self.register.trim() {
            "0" => 0,
            "1" => 1,
            "2" => 2,
            other => {
                return Err(Error::usage(format!(
                    "-R/--register: '{other}' is not a registration level; expected 0 (none), 1 (ncclCommRegister) or 2 (symmetric windows)"
                )))
            }
        };
        let modes = LaunchModes { cuda_graph: graph as u32, agg_iters: agg as u32, cpu_time, register };
        if backend != BackendKind::Nccl {
            let given = [
                (graph > 0, "-G/--cuda-graph"),
                (agg > 1, "-m/--agg-iters"),
                (cpu_time, "-C/--cpu-time"),
                (register > 0, "-R/--register"),
            ];
            if let Some((_, flag)) = given.iter().find(|g| g.0) {
                return Err(Error::usage(format!(
                    "{flag}: a launch mode of the nccl backend (CUDA streams, NCCL groups, registered buffers); the {} backend has none; expected --backend nccl",
                    backend.name()
                )));
            }
        }
        if graph > 0 && blocking {
            return Err(Error::usage(
                "-G/--cuda-graph with -z 1: a captured graph cannot wait for each call; expected -z 0 with -G",
            ));
        }
        if agg > 1 && collectives.contains(&Kind::PingPong) {
            return Err(Error::usage(
                "-m/--agg-iters: ping-pong's sends and receives take turns, and one NCCL group would run them at once; expected -m 1 with ping-pong",
            ));
        }
        Ok(modes)
    }
}

/// The most graph launches per sample (`-G`) or calls per group (`-m`): NCCL queues at most
/// 4096 operations in one group here and there, and a larger count only multiplies the run.
pub const MAX_LAUNCH_COUNT: u64 = 1024;

/// Parse the sweep's command line (`argv[0]` is the program).
pub fn parse(argv: &[String]) -> Result<Clap<Options>> {
    let cmd = super::common::with_help(
        <Args as clap::CommandFactory>::command(),
        "csv",
        "Write results as CSV to PATH [default: results/coll-bench-<UTC time>.csv]",
    );
    Ok(match super::common::clap_parse_with::<Args>(cmd, argv)? {
        Clap::Args(args) => Clap::Args(args.into_options()?),
        Clap::Info(t) => Clap::Info(t),
    })
}

impl Args {
    /// The validated options, in the flags' order: what to run, over which sizes, how long, on
    /// which data, on which backend, written where; then the plan's limits.
    pub fn into_options(self) -> Result<Options> {
        let collectives = collectives(&self.collectives)?;
        let (min_bytes, max_bytes, step) = self.sizes()?;
        let iters = self.iters.as_deref().map(|v| count_flag("-n/--iters", v, 1)).transpose()?;
        let warmup = self.warmup.as_deref().map(|v| count_flag("-w/--warmup-iters", v, 0)).transpose()?;
        let budget_s = duration::parse("--budget", &self.budget, duration::POSITIVE)?;
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
        smallest_fits_types(&collectives, min_bytes, &dtypes)?;
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
        let patterns = crate::collective::traffic::Pattern::parse_list(&self.pattern)?;
        if patterns != [crate::collective::traffic::Pattern::Uniform] && !collectives.contains(&Kind::AllToAllV) {
            return Err(Error::usage(format!(
                "--pattern: '{}' shapes all-to-all-v only, which this run does not measure; expected all-to-all-v among the collectives",
                self.pattern
            )));
        }
        if self.write_matrix.is_some() && !collectives.contains(&Kind::AllToAllV) {
            return Err(Error::usage(
                "--write-matrix: writes all-to-all-v's traffic, which this run does not measure; expected all-to-all-v among the collectives",
            ));
        }
        if self.write_matrix.is_some() && patterns.len() > 1 {
            return Err(Error::usage(format!(
                "--write-matrix: writes one pattern's matrix, and --pattern '{}' gives {}; expected one skew",
                self.pattern,
                patterns.len()
            )));
        }
        let (backend, implementation) = backend(&self.backend, &self.implementation, &collectives)?;
        let launch = self.launch.modes(backend, blocking, &collectives)?;
        let malloc = Malloc::parse(&self.malloc).ok_or_else(|| {
            Error::usage(format!("--malloc: unknown heap '{}'; expected {}", self.malloc, Malloc::ACCEPTED))
        })?;
        let order = Order::parse(&self.order).ok_or_else(|| {
            Error::usage(format!("--order: unknown order '{}'; expected {}", self.order, Order::ACCEPTED))
        })?;
        let csv = self.csv.target("--csv")?;
        let debug_slow_rank = self.debug_slow_rank.as_deref().map(slow_rank).transpose()?;
        let timeout = self.timeout.limit("-T/--timeout")?;
        self.check_paths()?;
        let max_points: u64 = self.max_points.trim().parse().map_err(|_| {
            Error::usage(format!(
                "--max-points: '{}' is not a count; expected a whole number (0: no limit)",
                self.max_points
            ))
        })?;
        let max_time_s = duration::parse("--max-time", &self.max_time, duration::OR_ZERO)?;
        let groups: crate::layout::Layout = self.groups.parse()?;
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
            patterns,
            blocking,
            launch,
            backend,
            implementation,
            malloc,
            order,
            ceiling: !self.no_ceiling,
            csv,
            progress: self.progress,
            per_rank: self.per_rank,
            groups,
            one_group_at_a_time: self.one_group_at_a_time,
            per_group: self.per_group,
            json: self.json.path,
            markdown: self.markdown,
            write_matrix: self.write_matrix,
            plot: self.plot,
            timeout,
            files: self.files.policy(),
            max_points,
            max_time_s,
            debug_slow_rank,
            debug_corrupt_rank: self.debug_corrupt_rank,
            debug_mpi_error: self.debug_mpi_error.clone(),
        };
        opts.check_plan_limits()?;
        Ok(opts)
    }

    /// `-b`, `-e` and the step (`-f` or `-i`).
    fn sizes(&self) -> Result<(u64, u64, Step)> {
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
        Ok((min_bytes, max_bytes, step))
    }

    /// `--plot`: a format it can draw, and a CSV to draw from.
    fn check_paths(&self) -> Result<()> {
        if let Some(p) = &self.plot {
            crate::plot::check_output(p)?;
            if self.csv.off {
                return Err(Error::usage("--plot draws the run's CSV; expected --plot without --no-csv"));
            }
        }
        // An empty path, a directory, a link, a file already there: refused for every output
        // in one place (`report::outfile::check`, through `report::outputs::paths`).
        Ok(())
    }
}

/// The COLLECTIVE arguments (`all` for every one); none: the core three.
fn collectives(names: &[String]) -> Result<Vec<Kind>> {
    let mut collectives = vec![];
    for name in names {
        if name.eq_ignore_ascii_case("all") {
            collectives.extend(Kind::ALL);
        } else {
            match Kind::parse(name) {
                Some(k) => collectives.push(k),
                None => {
                    let hint = match super::common::nearest_subcommand(name) {
                        Some(sub) => format!("; did you mean the subcommand '{sub}'?"),
                        None => format!(" (or a subcommand first: {})", super::common::SUBCOMMANDS.join(", ")),
                    };
                    return Err(Error::usage(format!(
                        "COLLECTIVE: unknown collective '{name}'; expected {}{hint}",
                        Kind::ACCEPTED
                    )));
                }
            }
        }
    }
    if collectives.is_empty() {
        collectives = Kind::CORE.to_vec();
    }
    Ok(collectives)
}

/// A sized collective's smallest size must hold one element of every type.
fn smallest_fits_types(collectives: &[Kind], min_bytes: u64, dtypes: &[DType]) -> Result<()> {
    if collectives.iter().any(|k| k.spec().sized()) {
        if let Some(d) = dtypes.iter().copied().filter(|d| d.size() as u64 > min_bytes).max_by_key(|d| d.size()) {
            return Err(Error::usage(format!(
                "-b/--minbytes: {min_bytes} B is less than one {d} element ({} B), which would time calls on no data; expected at least {} B, or a smaller -d/--datatype",
                d.size(),
                d.size()
            )));
        }
    }
    Ok(())
}

/// `--backend` and `--impl`, parsed once: an implementation of our own runs on the mpi backend
/// and provides only some collectives.
fn backend(backend: &str, implementation: &str, collectives: &[Kind]) -> Result<(BackendKind, Implementation)> {
    let backend = super::values::backend_kind(backend)?;
    let imp = Implementation::parse(implementation).ok_or_else(|| {
        Error::usage(format!(
            "--impl: unknown implementation '{implementation}'; expected {}",
            Implementation::ACCEPTED
        ))
    })?;
    if imp != Implementation::Native {
        let name = imp.name();
        if backend != BackendKind::Mpi {
            return Err(Error::usage(format!("--impl {name}: runs on the mpi backend; expected --backend mpi")));
        }
        if let Some(k) = collectives.iter().find(|k| !imp.provides(**k)) {
            let offered: Vec<&str> = Kind::ALL.iter().filter(|k| imp.provides(**k)).map(|k| k.name()).collect();
            return Err(Error::usage(format!(
                "--impl {name}: implements {} only, not {k}; expected those, or --impl native",
                offered.join(", ")
            )));
        }
    }
    Ok((backend, imp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{CsvTarget, Timeout};

    fn run(args: &[&str]) -> Result<Options> {
        let mut argv = vec!["coll-bench".to_string()];
        argv.extend(args.iter().map(|s| s.to_string()));
        match parse(&argv)? {
            Clap::Args(o) => Ok(o),
            Clap::Info(_) => panic!("not a sweep"),
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
    fn launch_modes_parse_for_nccl_only() {
        let o = run(&["--backend", "nccl", "-G", "2", "-m", "4", "-C", "1", "-R", "2"]).unwrap();
        assert_eq!(o.launch, LaunchModes { cuda_graph: 2, agg_iters: 4, cpu_time: true, register: 2 });
        assert!(o
            .launch
            .describe()
            .ends_with("symmetric windows (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC; -R 2)"));
        assert_eq!(run(&["--backend", "nccl", "--register", "1"]).unwrap().launch.register, 1);
        assert!(err(&["--backend", "nccl", "-R", "3"]).starts_with("-R/--register: '3' is not a registration level"));
        assert!(err(&["-R", "1"]).starts_with("-R/--register: a launch mode of the nccl backend"));
        assert!(o.launch.describe().contains("launched 2 times per sample (-G 2); 4 calls per NCCL group"));
        assert_eq!(run(&["--backend", "nccl"]).unwrap().launch, LaunchModes::default());
        assert!(!LaunchModes::default().any());
        assert!(err(&["-G", "1"]).starts_with("-G/--cuda-graph: a launch mode of the nccl backend"));
        assert!(err(&["--backend", "nccl", "-m", "0"]).starts_with("-m/--agg-iters: 0 is out of range"));
        assert!(err(&["--backend", "nccl", "-m", "1025"]).contains("from 1 to 1024"));
        assert!(err(&["--backend", "nccl", "-G", "1", "-z", "1"]).starts_with("-G/--cuda-graph with -z 1"));
        assert!(err(&["--backend", "nccl", "-m", "2", "all"]).starts_with("-m/--agg-iters: ping-pong's"));
        assert!(run(&["--backend", "nccl", "-m", "2", "all-reduce", "sendrecv"]).is_ok());
    }

    #[test]
    fn an_empty_command_line_gives_the_literal_defaults() {
        assert_eq!(run(&[]).unwrap(), Options::default());
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
            (&["-w", "x"], "-w/--warmup-iters"),
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
            (&["--budget", "-5ms"], "--budget: '-5ms' is not a positive duration"),
            (&["--max-time", "-1h"], "--max-time: '-1h'"),
            (&["-T", "-5s"], "-T/--timeout"),
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
        assert_eq!(run(&["-T", "1500ms"]).unwrap().timeout, Timeout::Fixed(1.5));
        assert_eq!(run(&["-T", "0s"]).unwrap().timeout, Timeout::Off);
        for bad in ["-1", "x", "1e9", "inf", "", "1ns", "500ms", "0.99"] {
            let e = err(&["-T", bad]);
            assert!(e.starts_with("-T/--timeout: ") && e.contains("expected seconds"), "{bad:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn durations_take_hours_and_limits_can_be_lifted() {
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
            Clap::Info(t) => assert!(t.contains("--minbytes") && t.contains("Exit codes")),
            _ => panic!(),
        }
    }
}
