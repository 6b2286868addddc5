//! The typed, validated plan every rank runs, with its defaults (a literal [`Default`]). Filled
//! from the command line by the layer above (`cli`), broadcast from rank 0 and compared on every
//! rank before anything is measured.

use crate::collective::Kind;
use crate::dtype::{DType, Op};
use crate::error::{Error, Result};
use crate::layout::Layout;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How each rank's time is combined into the one reported (`-a`, nccl-tests' numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    Rank0,
    Mean,
    Min,
    Max,
}

impl Aggregation {
    pub fn from_flag(v: u8) -> Option<Aggregation> {
        Some(match v {
            0 => Aggregation::Rank0,
            1 => Aggregation::Mean,
            2 => Aggregation::Min,
            3 => Aggregation::Max,
            _ => return None,
        })
    }
    pub fn flag(self) -> u8 {
        match self {
            Aggregation::Rank0 => 0,
            Aggregation::Mean => 1,
            Aggregation::Min => 2,
            Aggregation::Max => 3,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Aggregation::Rank0 => "rank0",
            Aggregation::Mean => "mean",
            Aggregation::Min => "min",
            Aggregation::Max => "max",
        }
    }
}

/// The `-T` limit of a watched step that is expected to take `e` seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timeout {
    /// No `-T`: max(30 s, 20 × e), so an unattended run cannot hang forever and a stuck rank is
    /// named soon after the step should have ended. (10 s cut a healthy run short: MPICH, 2
    /// ranks on a loaded 2-core machine, a batch planned at 0.5 s still running after 10 s.)
    Auto,
    /// `-T SECONDS`: SECONDS + 2 × e.
    Fixed(f64),
    /// `-T 0`: wait forever.
    Off,
}

impl Timeout {
    /// The floor of the default limit, seconds.
    pub const AUTO_MIN_S: f64 = 30.0;
    /// The default limit, in multiples of a step's expected time.
    pub const AUTO_FACTOR: f64 = 20.0;
    /// The default limit of a set-up that has no estimate (a communicator's creation, NCCL's
    /// init: minutes at scale), seconds.
    pub const AUTO_SETUP_S: f64 = 300.0;

    /// Seconds a step expected to take `expected_s` may take; `None`: no limit.
    pub fn limit_s(self, expected_s: f64) -> Option<f64> {
        let e = expected_s.max(0.0);
        match self {
            Timeout::Auto => Some((Self::AUTO_FACTOR * e).max(Self::AUTO_MIN_S)),
            Timeout::Fixed(t) => Some(t + 2.0 * e),
            Timeout::Off => None,
        }
    }

    /// Seconds a set-up (NCCL's init, a communicator's creation) may take; `None`: no limit.
    pub fn setup_limit_s(self) -> Option<f64> {
        match self {
            Timeout::Auto => Some(Self::AUTO_SETUP_S),
            t => t.limit_s(0.0),
        }
    }

    /// The shortest limit any step gets (the one of a step with no estimate).
    pub fn base_s(self) -> Option<f64> {
        self.limit_s(0.0)
    }
}

/// How sizes grow from `min_bytes` to `max_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Factor(f64),
    Bytes(u64),
}

/// Where the CSV goes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CsvTarget {
    /// `results/coll-bench-<UTC time>.csv` under the working directory.
    Default,
    Path(PathBuf),
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    Mpi,
    Nccl,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Mpi => "mpi",
            BackendKind::Nccl => "nccl",
        }
    }
}

/// Which code runs a collective inside the backend (`--impl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Implementation {
    /// The library's own collective (`MPI_Allreduce`, `ncclAllReduce`, …).
    Native,
    /// Rings over point-to-point `MPI_Sendrecv`: all-reduce as reduce-scatter then all-gather
    /// in n−1 steps each (the textbook bandwidth-optimal algorithm); reduce-scatter and
    /// all-gather as the one ring each.
    Ring,
    /// All-reduce by recursive doubling: log2(n) exchanges of the whole buffer with the rank
    /// whose number differs in one bit (a power-of-two rank count only).
    RecursiveDoubling,
    /// The library's other function for the same collective, the one that takes a count per
    /// rank, given equal counts: reduce-scatter as `MPI_Reduce_scatter` (what OSU's and IMB's
    /// `Reduce_scatter` time), all-gather as `MPI_Allgatherv`. The library's own code either
    /// way; an application calls one or the other.
    Counts,
}

impl Implementation {
    pub const ALL: [Implementation; 4] =
        [Implementation::Native, Implementation::Ring, Implementation::RecursiveDoubling, Implementation::Counts];
    /// The accepted names, for error messages.
    pub const ACCEPTED: &'static str = "native or ring or recursive-doubling or counts";

    /// A name as given on the command line (any case).
    pub fn parse(name: &str) -> Option<Implementation> {
        Self::ALL.into_iter().find(|i| i.name().eq_ignore_ascii_case(name))
    }

    pub fn name(self) -> &'static str {
        match self {
            Implementation::Native => "native",
            Implementation::Ring => "ring",
            Implementation::RecursiveDoubling => "recursive-doubling",
            Implementation::Counts => "counts",
        }
    }

    /// For `--impl counts`: the MPI function the native implementation calls for `kind` and the
    /// one `counts` calls instead (`None` where it does not provide `kind`).
    pub fn counts_functions(kind: Kind) -> Option<(&'static str, &'static str)> {
        match kind {
            Kind::ReduceScatter => Some(("MPI_Reduce_scatter_block", "MPI_Reduce_scatter")),
            Kind::AllGather => Some(("MPI_Allgather", "MPI_Allgatherv")),
            _ => None,
        }
    }

    /// Whether the code is coll-bench's own (over `MPI_Sendrecv`) rather than the library's.
    pub fn own(self) -> bool {
        matches!(self, Implementation::Ring | Implementation::RecursiveDoubling)
    }

    /// The collectives this implementation provides.
    pub fn provides(self, kind: Kind) -> bool {
        match self {
            Implementation::Native => true,
            Implementation::Ring => matches!(kind, Kind::AllReduce | Kind::ReduceScatter | Kind::AllGather),
            Implementation::RecursiveDoubling => kind == Kind::AllReduce,
            Implementation::Counts => matches!(kind, Kind::ReduceScatter | Kind::AllGather),
        }
    }

    /// Why this implementation cannot run on `nranks` ranks, if it cannot.
    pub fn unfit(self, nranks: usize) -> Option<String> {
        (self == Implementation::RecursiveDoubling && !nranks.is_power_of_two())
            .then(|| format!("recursive doubling needs a power-of-two rank count, not {nranks}"))
    }
}

/// Which heap the MPI library runs on (`--malloc`): what it allocates per call (temporary
/// buffers of the message's size in some collectives) costs page faults or not depending on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Malloc {
    /// The C library's allocator as the job's environment sets it, untouched: what an
    /// application gets (no `mallopt`, no environment change).
    #[default]
    Default,
    /// glibc told to keep freed memory in the heap (`mallopt`: `M_MMAP_MAX` 0, `M_TRIM_THRESHOLD`
    /// at its maximum) before `MPI_Init`: the library's per-call temporaries cost no page faults.
    /// What an application gets only with `MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295`.
    Kept,
}

impl Malloc {
    /// The accepted names, for error messages.
    pub const ACCEPTED: &'static str =
        "default (the allocator an application gets) or kept (freed memory kept in the heap)";

    /// A name as given on the command line (any case).
    pub fn parse(name: &str) -> Option<Malloc> {
        [Malloc::Default, Malloc::Kept].into_iter().find(|m| m.name().eq_ignore_ascii_case(name.trim()))
    }

    /// The one spelling: flag, header, CSV and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Malloc::Default => "default",
            Malloc::Kept => "kept",
        }
    }
}

/// How the NCCL backend launches its timed calls, and on what memory: nccl-tests' `-G`, `-m`,
/// `-C` and `-R`
/// (docs/gpu.md "Launch modes"). The MPI backend has none of them: every field at its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchModes {
    /// `-G/--cuda-graph N`: each timed batch of calls captured once into a CUDA graph, which is
    /// then launched N times per sample; 0: calls launched on the stream one by one.
    pub cuda_graph: u32,
    /// `-m/--agg-iters N`: N calls per `ncclGroupStart`/`ncclGroupEnd` (one launch); an
    /// iteration is such a group, and the time is per call.
    pub agg_iters: u32,
    /// `-C/--cpu-time 1`: also report the host's time to launch a call (`cpu_time_us`).
    pub cpu_time: bool,
    /// `-R/--register N`: the timed buffers from NCCL's allocator (`ncclMemAlloc`) and
    /// registered with the communicator: 1 `ncclCommRegister`, 2 symmetric windows
    /// (`ncclCommWindowRegister`); 0: plain `cuMemAlloc` buffers, not registered.
    pub register: u32,
}

impl Default for LaunchModes {
    fn default() -> Self {
        LaunchModes { cuda_graph: 0, agg_iters: 1, cpu_time: false, register: 0 }
    }
}

impl LaunchModes {
    /// Whether any mode differs from plain stream launches.
    pub fn any(&self) -> bool {
        *self != LaunchModes::default()
    }

    /// The header's words, e.g. "calls launched on the stream; 4 calls per NCCL group (-m 4; time
    /// per call)".
    pub fn describe(&self) -> String {
        let mut parts = vec![match self.cuda_graph {
            0 => "calls launched on the stream".to_string(),
            1 => "each batch captured as a CUDA graph, launched once per sample (-G 1)".to_string(),
            n => format!("each batch captured as a CUDA graph, launched {n} times per sample (-G {n})"),
        }];
        if self.agg_iters > 1 {
            parts.push(format!("{} calls per NCCL group (-m {}; time per call)", self.agg_iters, self.agg_iters));
        }
        if self.cpu_time {
            parts.push("the host's launch time per call in cpu_time_us (-C 1)".to_string());
        }
        match self.register {
            0 => {}
            1 => parts.push("buffers from ncclMemAlloc, registered with ncclCommRegister (-R 1)".to_string()),
            _ => parts.push(
                "buffers from ncclMemAlloc in symmetric windows (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC; -R 2)"
                    .to_string(),
            ),
        }
        parts.join("; ")
    }
}

/// The order points are measured in (`--order`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Every size of one collective (and type and op), then the next collective: nccl-tests'
    /// order, the table's rows as they are measured.
    #[default]
    Collective,
    /// Every collective at one size, then the next size: a machine that changes speed during the
    /// run slows a band of sizes of every collective alike, which `compare` of one run per side
    /// can then tell from one collective's regression. The table is printed at the end.
    Size,
}

impl Order {
    /// The accepted names, for error messages.
    pub const ACCEPTED: &'static str =
        "collective (each collective's sizes in turn) or size (every collective at one size, then the next size)";

    /// A name as given on the command line (any case).
    pub fn parse(name: &str) -> Option<Order> {
        [Order::Collective, Order::Size].into_iter().find(|m| m.name().eq_ignore_ascii_case(name.trim()))
    }

    /// The one spelling: flag, header and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Order::Collective => "collective",
            Order::Size => "size",
        }
    }
}

/// What the user allowed output files to be (`--force`/`--overwrite`, `--follow-symlinks`);
/// `crate::report::outfile` applies it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub force: bool,
    pub follow_symlinks: bool,
}

/// Everything a sweep needs. Equal on every rank (checked).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Options {
    pub collectives: Vec<Kind>,
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub step: Step,
    /// Fixed timed iterations per point (`-n`); `None`: chosen from `budget_s`.
    pub iters: Option<u64>,
    /// Fixed warm-up iterations (`-w`); `None`: about a tenth of the budget.
    pub warmup: Option<u64>,
    /// Time budget for the timed iterations of one point, seconds.
    pub budget_s: f64,
    /// Stop a point's timed iterations early once the 95% interval of every rank's median is
    /// narrower than this fraction of it (`--ci-target`, percent on the command line); 0: never.
    pub ci_target: f64,
    pub check: bool,
    pub dtypes: Vec<DType>,
    pub ops: Vec<Op>,
    pub aggregation: Aggregation,
    pub root: usize,
    /// `--pattern`: the traffic of all-to-all-v, one series per pattern (several where a `moe`
    /// pattern lists several skews).
    pub patterns: Vec<crate::collective::traffic::Pattern>,
    pub blocking: bool,
    /// `-G`, `-m`, `-C`: how the NCCL backend launches its timed calls.
    pub launch: LaunchModes,
    pub backend: BackendKind,
    /// Which implementation of the collectives inside the backend (`native`: the library's own).
    pub implementation: Implementation,
    /// `--malloc`: the heap the MPI library runs on (set before `MPI_Init`).
    pub malloc: Malloc,
    /// `--order`: each collective's sizes in turn, or every collective at one size in turn.
    pub order: Order,
    /// Measure the ceiling (sendrecv around the ring) before the sweep; `--no-ceiling` skips it.
    pub ceiling: bool,
    pub csv: CsvTarget,
    /// Draw the progress bar on stderr even when it is not a terminal (`--progress`).
    pub progress: bool,
    /// Add one row per rank to the CSV and JSON (`--per-rank`).
    pub per_rank: bool,
    /// `--groups LAYOUT`: which ranks run each collective together (default: the world).
    pub groups: Layout,
    /// `--one-group-at-a-time`: the groups run in turn instead of all at once.
    pub one_group_at_a_time: bool,
    /// `--per-group`: add one row per group to the CSV and JSON.
    pub per_group: bool,
    /// `--json PATH`: results, options, hosts and versions as JSON.
    pub json: Option<PathBuf>,
    /// `--markdown PATH`: the table as Markdown.
    pub markdown: Option<PathBuf>,
    /// `--write-matrix PATH`: all-to-all-v's traffic as an nccl-tests matrix file.
    pub write_matrix: Option<PathBuf>,
    /// `--plot FILE.svg|FILE.png`: plot the run's CSV at the end.
    pub plot: Option<PathBuf>,
    /// `-T/--timeout`: when a watched step (a batch of calls, an exchange of results) is given up
    /// on, ending the job with exit code 2 (`crate::watchdog`).
    pub timeout: Timeout,
    /// What output files may be (`--force`/`--overwrite`, `--follow-symlinks`).
    pub files: Policy,
    /// `--max-points`: refuse a plan of more points than this (0: no limit).
    pub max_points: u64,
    /// `--max-time`: refuse a plan estimated to take longer than this many seconds (0: no limit).
    pub max_time_s: f64,
    /// Testing only (hidden flag): sleep this many µs before each timed batch on `.0`, outside
    /// that rank's own timing, so the others wait for it (a rank that arrives late).
    pub debug_slow_rank: Option<(usize, u64)>,
    /// Testing only (hidden flag): corrupt one output element on this rank in each check.
    pub debug_corrupt_rank: Option<usize>,
    /// Testing only (hidden flag): the ranks whose MPI calls in the mpi backend get an invalid
    /// argument, so the first one fails (`crate::mpi_error`).
    pub debug_mpi_error: Vec<usize>,
}

/// Fewest timed iterations when the budget decides, so a slow size still gets a median.
pub const MIN_AUTO_ITERS: u64 = 5;
/// Most timed iterations when the budget decides.
pub const MAX_AUTO_ITERS: u64 = 100_000;
/// Most iterations `-n` accepts (per-iteration samples are kept in memory).
pub const MAX_ITERS: u64 = 10_000_000;

/// The defaults of the command line (`coll-bench` with no arguments); `cli`'s tests check that
/// parsing an empty command line gives exactly this.
impl Default for Options {
    fn default() -> Self {
        Options {
            collectives: Kind::CORE.to_vec(),
            min_bytes: 8,
            max_bytes: 64 << 20,
            step: Step::Factor(2.0),
            iters: None,
            warmup: None,
            budget_s: 0.05,
            ci_target: 0.0,
            check: true,
            dtypes: vec![DType::Float32],
            ops: vec![Op::Sum],
            aggregation: Aggregation::Mean,
            root: 0,
            patterns: vec![crate::collective::traffic::Pattern::Uniform],
            blocking: false,
            launch: LaunchModes::default(),
            backend: BackendKind::Mpi,
            implementation: Implementation::Native,
            malloc: Malloc::Default,
            order: Order::Collective,
            ceiling: true,
            csv: CsvTarget::Default,
            progress: false,
            per_rank: false,
            groups: Layout::World,
            one_group_at_a_time: false,
            per_group: false,
            json: None,
            markdown: None,
            write_matrix: None,
            plot: None,
            timeout: Timeout::Auto,
            files: Policy::default(),
            max_points: 10_000,
            max_time_s: 3600.0,
            debug_slow_rank: None,
            debug_corrupt_rank: None,
            debug_mpi_error: vec![],
        }
    }
}

impl Options {
    fn next_size(&self, s: u64) -> u64 {
        let next = match self.step {
            Step::Factor(f) => ((s as f64) * f) as u64,
            Step::Bytes(b) => s.saturating_add(b),
        };
        if next > s {
            next
        } else {
            s.saturating_add(1)
        }
    }

    /// The message sizes of the sweep, in bytes.
    pub fn sizes(&self) -> Vec<u64> {
        let mut out = vec![];
        let mut s = self.min_bytes;
        while s <= self.max_bytes {
            out.push(s);
            if s == u64::MAX {
                break;
            }
            s = self.next_size(s);
        }
        out
    }

    /// How many sizes the sweep has, counted without listing them; stops counting past `cap`.
    pub fn size_count(&self, cap: u64) -> u64 {
        if let Step::Bytes(b) = self.step {
            return (self.max_bytes - self.min_bytes) / b.max(1) + 1;
        }
        let (mut n, mut s) = (0u64, self.min_bytes);
        while s <= self.max_bytes && n <= cap {
            n += 1;
            if s == u64::MAX {
                break;
            }
            s = self.next_size(s);
        }
        n
    }

    /// The collective × type × op combinations of the run, in the order they run (the sweep
    /// runs exactly these; [`Options::point_count`] counts their sizes).
    pub fn plan(&self) -> Vec<(Kind, DType, Option<Op>, usize)> {
        let mut out = vec![];
        for &kind in &self.collectives {
            let spec = kind.spec();
            let dtypes: &[DType] = if spec.sized() { &self.dtypes } else { &self.dtypes[..1] };
            // all-to-all-v: a series per pattern (the index into `patterns`).
            let patterns = if kind == Kind::AllToAllV { self.patterns.len().max(1) } else { 1 };
            for &dtype in dtypes {
                for pattern in 0..patterns {
                    if spec.reduces() {
                        for &op in &self.ops {
                            out.push((kind, dtype, Some(op), pattern));
                        }
                    } else {
                        out.push((kind, dtype, None, pattern));
                    }
                }
            }
        }
        out
    }

    /// The pattern of a plan entry's index (uniform where there is none).
    pub fn pattern(&self, index: usize) -> &crate::collective::traffic::Pattern {
        static UNIFORM: crate::collective::traffic::Pattern = crate::collective::traffic::Pattern::Uniform;
        self.patterns.get(index).unwrap_or(&UNIFORM)
    }

    /// Points of the plan (collective × type × op × size, as the table's rows), counting at
    /// most a little past `cap`: the progress bar's total and the `--max-points` limit.
    pub fn point_count(&self, cap: u64) -> u64 {
        let sizes = self.size_count(cap);
        self.plan().iter().map(|(k, _, _, _)| if k.spec().sized() { sizes } else { 1 }).fold(0u64, u64::saturating_add)
    }

    /// The plan's duration estimated from the budget: per point and placement a warm-up of a
    /// tenth of the budget and the budget itself. `None` with fixed `-n` (it depends on the call).
    pub fn estimated_s(&self, points: u64) -> Option<f64> {
        match self.iters {
            Some(_) => None,
            None => Some(points as f64 * 2.0 * 1.1 * self.budget_s),
        }
    }

    /// Refuse a plan nobody can mean: more than `--max-points` points, or an estimate beyond
    /// `--max-time`.
    pub fn check_plan_limits(&self) -> Result<()> {
        let cap = if self.max_points == 0 { u64::MAX - 1 } else { self.max_points };
        let points = self.point_count(cap);
        let est = self.estimated_s(points);
        let shown = est.map(|s| format!(", estimated {}", human_duration(s))).unwrap_or_default();
        if self.max_points > 0 && points > self.max_points {
            // Geometric steps are counted one by one, up to just past the limit.
            let more = if points > cap && matches!(self.step, Step::Factor(_)) { "more than " } else { "" };
            return Err(Error::usage(format!(
                "the plan has {more}{points} points (collective × type × op × size){shown}, over --max-points {}; expected fewer sizes (-b/-e/-f/-i), or --max-points N to allow it",
                self.max_points
            )));
        }
        if let Some(s) = est.filter(|s| self.max_time_s > 0.0 && *s > self.max_time_s) {
            return Err(Error::usage(format!(
                "the plan of {points} points is estimated to take {} (from --budget {}), over --max-time {}; expected a smaller --budget or fewer sizes, or --max-time TIME to allow it",
                human_duration(s),
                human_duration(self.budget_s),
                human_duration(self.max_time_s)
            )));
        }
        Ok(())
    }

    /// Checks that need the world size.
    pub fn validate_for_world(&self, nranks: usize) -> Result<()> {
        let rooted = self.collectives.iter().any(|k| k.spec().rooted());
        if rooted && self.root >= nranks {
            return Err(Error::usage(format!(
                "-r/--root: {} is not a rank of this job; expected 0..={} ({} ranks)",
                self.root,
                nranks - 1,
                nranks
            )));
        }
        Ok(())
    }
}

/// Seconds as a person reads them: `850 ms`, `12.5 s`, `3.2 min`, `30.1 h`.
pub fn human_duration(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(min: u64, max: u64, step: Step) -> Options {
        Options { min_bytes: min, max_bytes: max, step, csv: CsvTarget::Off, ..Options::default() }
    }

    #[test]
    fn factor_and_linear_sweeps() {
        let s = opts(8, 64 << 20, Step::Factor(2.0)).sizes();
        assert_eq!(s.len(), 24);
        assert_eq!((s[0], s[23]), (8, 64 << 20));
        assert_eq!(opts(1024, 4096, Step::Bytes(1024)).sizes(), vec![1024, 2048, 3072, 4096]);
        assert_eq!(opts(10, 100, Step::Factor(3.0)).sizes(), vec![10, 30, 90]);
        assert_eq!(opts(1, 3, Step::Factor(1.1)).sizes(), vec![1, 2, 3]);
        for o in
            [opts(8, 64 << 20, Step::Factor(2.0)), opts(10, 100, Step::Factor(3.0)), opts(8, 1 << 20, Step::Bytes(8))]
        {
            assert_eq!(o.size_count(u64::MAX - 1), o.sizes().len() as u64);
        }
        assert_eq!(opts(8, 1 << 40, Step::Bytes(1)).size_count(10), (1 << 40) - 7, "closed form, no listing");
    }

    #[test]
    fn plan_limits_name_the_count_the_estimate_and_the_flag() {
        let mut o = opts(8, 1 << 40, Step::Bytes(1));
        let e = o.check_plan_limits().unwrap_err().to_string();
        assert!(e.contains("points") && e.contains("--max-points 10000") && e.contains(" h,"), "{e}");
        o.max_points = 0;
        let e = o.check_plan_limits().unwrap_err().to_string();
        assert!(e.contains("--max-time 60.0 min"), "{e}");
        o.max_time_s = 0.0;
        assert!(o.check_plan_limits().is_ok());
    }

    #[test]
    fn root_must_be_a_rank() {
        let mut o = opts(8, 8, Step::Factor(2.0));
        o.root = 2;
        assert!(o.validate_for_world(2).is_ok(), "no rooted collective selected");
        o.collectives.push(Kind::Broadcast);
        let e = o.validate_for_world(2).unwrap_err().to_string();
        assert!(e.contains("-r/--root") && e.contains("0..=1"), "{e}");
        assert!(o.validate_for_world(3).is_ok());
    }

    #[test]
    fn timeout_limits() {
        assert_eq!(Timeout::Auto.limit_s(0.0), Some(30.0));
        assert_eq!(Timeout::Auto.limit_s(0.5), Some(30.0));
        assert_eq!(Timeout::Auto.limit_s(60.0), Some(1200.0));
        assert_eq!(Timeout::Auto.setup_limit_s(), Some(300.0));
        assert_eq!(Timeout::Fixed(5.0).setup_limit_s(), Some(5.0));
        assert_eq!(Timeout::Fixed(5.0).limit_s(0.25), Some(5.5));
        assert_eq!(Timeout::Fixed(5.0).limit_s(-1.0), Some(5.0));
        assert_eq!(Timeout::Off.limit_s(10.0), None);
    }

    #[test]
    fn aggregation_flags() {
        for v in 0..4 {
            assert_eq!(Aggregation::from_flag(v).unwrap().flag(), v);
        }
        assert_eq!(Aggregation::from_flag(4), None);
    }
}
