//! The traffic of all-to-all-v (`--pattern`): how many bytes each rank sends each other rank.
//! Four patterns: `uniform` (all-to-all's blocks), `spread=S` (nccl-tests' distance-weighted
//! counts, `alltoallv.cu`), `matrix=FILE` (nccl-tests' traffic-matrix file) and
//! `moe:experts=E,topk=K,skew=Z[,capacity=C][,seed=N]` (tokens routed to their top-k experts
//! under a Zipf popularity). A pattern gives, for one size and rank count, the n×n matrix of
//! element counts; each rank keeps its own row and column ([`PeerCounts`]).

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What `--pattern` accepts, for its error lines.
pub const ACCEPTED: &str =
    "uniform, spread=S (S from 0 to 1), matrix=FILE or moe:experts=E,topk=K,skew=Z[,capacity=C][,seed=N]";

/// Tokens each rank routes in the `moe` pattern: enough that the shares of 256 experts are
/// known to a few percent; the matrix is then scaled to the size.
pub const MOE_TOKENS_PER_RANK: u64 = 4096;

/// The traffic of one all-to-all-v.
#[derive(Clone, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Pattern {
    /// Every rank sends every rank the same block: all-to-all through `MPI_Alltoallv`.
    #[default]
    Uniform,
    /// nccl-tests' `NCCL_TESTS_ALLTOALLV_SPREAD`: a blend, by S, of uniform blocks and blocks
    /// that grow with the distance (j − i) mod n. Every rank still sends and receives the same
    /// total.
    Spread(f64),
    /// nccl-tests' `NCCL_TESTS_ALLTOALLV_MATRIX_FILE`: bytes from row i to column j, its top-left
    /// n×n corner used.
    Matrix(Matrix),
    /// Tokens routed to experts.
    Moe(Moe),
}

/// A traffic-matrix file as read: `dim`×`dim` byte counts, row-major (row = sender).
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub path: PathBuf,
    pub dim: usize,
    pub bytes: Vec<u64>,
}

/// The `moe` pattern's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moe {
    pub experts: usize,
    pub topk: usize,
    /// Zipf exponent of the experts' popularity (0: every expert alike).
    pub skew: f64,
    /// Capacity factor: each rank sends an expert at most C × (its tokens × topk / experts)
    /// tokens; the rest are dropped. `None`: no cap.
    pub capacity: Option<f64>,
    pub seed: u64,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Uniform => f.write_str("uniform"),
            Pattern::Spread(s) => write!(f, "spread={s}"),
            Pattern::Matrix(m) => write!(f, "matrix={}", m.path.display()),
            Pattern::Moe(m) => {
                write!(f, "moe:experts={},topk={},skew={}", m.experts, m.topk, m.skew)?;
                if let Some(c) = m.capacity {
                    write!(f, ",capacity={c}")?;
                }
                write!(f, ",seed={}", m.seed)
            }
        }
    }
}

impl From<Pattern> for String {
    fn from(p: Pattern) -> String {
        p.to_string()
    }
}

impl TryFrom<String> for Pattern {
    type Error = Error;
    fn try_from(s: String) -> Result<Pattern> {
        Pattern::parse(&s)
    }
}

fn bad(text: &str, why: &str) -> Error {
    Error::usage(format!("--pattern: '{text}' {why}; expected {ACCEPTED}"))
}

impl Pattern {
    /// Parse `--pattern`, where the `moe` pattern may list several skews (`skew=0,0.5,1`): one
    /// pattern per skew, in the order given (each a series of the run).
    pub fn parse_list(text: &str) -> Result<Vec<Pattern>> {
        let t = text.trim();
        let Some(rest) = t.strip_prefix("moe:") else { return Ok(vec![Pattern::parse(t)?]) };
        // Bare numbers after `skew=Z` are more skews; every other part is key=value.
        let (mut keys, mut skews): (Vec<&str>, Vec<&str>) = (vec![], vec![]);
        let mut in_skew = false;
        for part in rest.split(',') {
            match part.split_once('=') {
                Some((k, v)) if k.trim() == "skew" => {
                    skews.push(v);
                    in_skew = true;
                }
                Some(_) => {
                    keys.push(part);
                    in_skew = false;
                }
                None if in_skew => skews.push(part),
                None => return Err(bad(text, &format!("has '{part}', not key=value"))),
            }
        }
        if skews.is_empty() {
            return Ok(vec![Pattern::parse(t)?]);
        }
        let mut out: Vec<Pattern> = vec![];
        for z in skews {
            let one = format!("moe:{},skew={}", keys.join(","), z.trim());
            let p = Moe::parse(text, one.strip_prefix("moe:").unwrap_or(&one)).map(Pattern::Moe)?;
            if out.contains(&p) {
                return Err(bad(text, &format!("lists skew {} twice", z.trim())));
            }
            out.push(p);
        }
        Ok(out)
    }

    /// Parse `--pattern`; a matrix file is read here, so a bad one is refused before anything runs.
    pub fn parse(text: &str) -> Result<Pattern> {
        let t = text.trim();
        if t == "uniform" {
            return Ok(Pattern::Uniform);
        }
        if let Some(v) = t.strip_prefix("spread=") {
            return match v.trim().parse::<f64>() {
                Ok(s) if (0.0..=1.0).contains(&s) => Ok(Pattern::Spread(s)),
                _ => Err(bad(text, "has a spread that is not a number from 0 to 1")),
            };
        }
        if let Some(path) = t.strip_prefix("matrix=") {
            if path.is_empty() {
                return Err(bad(text, "names no file"));
            }
            return Ok(Pattern::Matrix(Matrix::read(Path::new(path))?));
        }
        if let Some(rest) = t.strip_prefix("moe:") {
            return Moe::parse(text, rest).map(Pattern::Moe);
        }
        Err(bad(text, "is not a pattern"))
    }

    /// Refuse what only the run's rank count and sizes can tell, before anything is measured:
    /// a matrix smaller than the ranks, and (as nccl-tests) a matrix run over more than one size
    /// or with buffers smaller than its busiest rank.
    pub fn check_run(&self, nranks: usize, min_bytes: u64, max_bytes: u64) -> Result<()> {
        let Pattern::Matrix(m) = self else { return Ok(()) };
        if m.dim < nranks {
            return Err(Error::usage(format!(
                "--pattern: the matrix in {} is {}x{}, smaller than the {nranks} ranks that run it; expected at least {nranks}x{nranks}",
                crate::error::shown(&m.path),
                m.dim,
                m.dim
            )));
        }
        if min_bytes != max_bytes {
            return Err(Error::usage(format!(
                "--pattern matrix=FILE: the file gives the bytes, so the run has one size; expected -b/--minbytes equal to -e/--maxbytes (got {min_bytes} and {max_bytes})"
            )));
        }
        let counts = full_counts(self, (max_bytes) as usize, 1, nranks);
        let busiest = busiest(&counts, nranks) as u64;
        if busiest > max_bytes {
            return Err(Error::usage(format!(
                "-e/--maxbytes: the matrix in {} has a rank that moves {busiest} bytes; expected -b and -e of at least {busiest}",
                crate::error::shown(&m.path)
            )));
        }
        Ok(())
    }

    /// Refuse a matrix whose counts or displacements, in elements of one of `types` (each a
    /// type's name and size in bytes), do not fit the `int`s of `MPI_Alltoallv` (the mpi
    /// backend's calls), by the matrix's name: its cells give the counts, whatever -e.
    pub fn check_mpi_counts(&self, nranks: usize, types: &[(&str, usize)]) -> Result<()> {
        let Pattern::Matrix(m) = self else { return Ok(()) };
        let limit = i32::MAX as u64;
        for &(name, size) in types {
            let counts = full_counts(self, 0, size, nranks);
            for r in 0..nranks {
                for (what, cells) in [
                    ("sends", (0..nranks).map(|j| counts[r * nranks + j] as u64).collect::<Vec<_>>()),
                    ("receives", (0..nranks).map(|i| counts[i * nranks + r] as u64).collect::<Vec<_>>()),
                ] {
                    // The largest int of the call: a count, or the displacement of the last block.
                    let last_displ: u64 = cells[..nranks - 1].iter().sum();
                    let largest = cells.iter().copied().max().unwrap_or(0).max(last_displ);
                    if largest > limit {
                        let elems: u64 = cells.iter().sum();
                        return Err(Error::usage(format!(
                            "--pattern matrix: {}: rank {r} {what} {elems} {} elements ({} bytes), past the {limit} of MPI's 32-bit counts and displacements; expected a matrix whose ranks each move less (or the nccl backend)",
                            crate::error::shown(&m.path),
                            name,
                            elems * size as u64
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// The traffic's imbalance on `nranks` ranks (size aside): the largest rank total over the
    /// mean, sent and received, with the share of token copies dropped (`moe` with a capacity).
    pub fn imbalance(&self, nranks: usize) -> Imbalance {
        let (w, dropped) = weights(self, nranks);
        let mut imb = Imbalance::of(&w, nranks);
        imb.dropped = dropped;
        imb
    }
}

impl Moe {
    fn parse(text: &str, rest: &str) -> Result<Moe> {
        let (mut experts, mut topk, mut skew, mut capacity, mut seed) = (None, None, None, None, 1u64);
        for part in rest.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| bad(text, &format!("has '{part}', not key=value")))?;
            let v = v.trim();
            let whole = || v.parse::<usize>().ok();
            let real = || v.parse::<f64>().ok().filter(|x| x.is_finite());
            match k.trim() {
                "experts" => {
                    experts = Some(
                        whole()
                            .filter(|e| *e >= 1)
                            .ok_or_else(|| bad(text, "has experts that is not a whole number of at least 1"))?,
                    )
                }
                "topk" => {
                    topk = Some(
                        whole()
                            .filter(|e| *e >= 1)
                            .ok_or_else(|| bad(text, "has topk that is not a whole number of at least 1"))?,
                    )
                }
                "skew" => {
                    skew = Some(
                        real()
                            .filter(|z| *z >= 0.0)
                            .ok_or_else(|| bad(text, "has a skew that is not a number of at least 0"))?,
                    )
                }
                "capacity" => {
                    capacity = Some(
                        real()
                            .filter(|c| *c > 0.0)
                            .ok_or_else(|| bad(text, "has a capacity that is not a number above 0"))?,
                    )
                }
                "seed" => seed = v.parse::<u64>().map_err(|_| bad(text, "has a seed that is not a whole number"))?,
                other => return Err(bad(text, &format!("has an unknown key '{other}'"))),
            }
        }
        let experts = experts.ok_or_else(|| bad(text, "gives no experts="))?;
        let topk = topk.ok_or_else(|| bad(text, "gives no topk="))?;
        if topk > experts {
            return Err(bad(text, &format!("routes each token to topk={topk} of only {experts} experts")));
        }
        Ok(Moe { experts, topk, skew: skew.unwrap_or(0.0), capacity, seed })
    }

    /// Token copies from rank i to rank j (row-major n×n), and the share of copies dropped.
    fn tokens(&self, nranks: usize) -> (Vec<f64>, f64) {
        let (e, k, n) = (self.experts, self.topk, nranks);
        let mut rng = SplitMix(self.seed);
        // Popularity: Zipf in expert order (expert 0 the most popular). With experts laid
        // out in order, E/n a rank, the hottest share the first ranks: the router's imbalance
        // as it lands when placement ignores popularity, the same for every seed.
        let order: Vec<usize> = (0..e).collect();
        let weight: Vec<f64> = (0..e).map(|x| 1.0 / ((x + 1) as f64).powf(self.skew)).collect();
        let total: f64 = weight.iter().sum();
        let mut cumulative = Vec::with_capacity(e);
        let mut acc = 0.0;
        for w in &weight {
            acc += w / total;
            cumulative.push(acc);
        }
        // Expert x lives on rank x·n/E: spread evenly, E/n a rank when n divides E.
        let home = |x: usize| x * n / e;
        let cap = self.capacity.map(|c| (c * (MOE_TOKENS_PER_RANK * k as u64) as f64 / e as f64).ceil() as u64);
        let mut m = vec![0.0; n * n];
        let mut dropped = 0u64;
        let mut chosen = Vec::with_capacity(k);
        for src in 0..n {
            let mut load = vec![0u64; e];
            for _ in 0..MOE_TOKENS_PER_RANK {
                chosen.clear();
                while chosen.len() < k {
                    let u = rng.unit();
                    let x = cumulative.partition_point(|c| *c < u).min(e - 1);
                    if !chosen.contains(&x) {
                        chosen.push(x);
                    } else if chosen.len() * 2 >= e || weight[x] / total > 0.5 {
                        // Few left or one dominant expert: take the next unchosen in order of
                        // popularity, so a heavy skew cannot loop for long.
                        let next = order.iter().find(|y| !chosen.contains(y)).copied().expect("topk <= experts");
                        chosen.push(next);
                    }
                }
                for &x in &chosen {
                    if cap.is_some_and(|c| load[x] >= c) {
                        dropped += 1;
                    } else {
                        load[x] += 1;
                        m[src * n + home(x)] += 1.0;
                    }
                }
            }
        }
        let copies = (MOE_TOKENS_PER_RANK * k as u64 * n as u64) as f64;
        (m, dropped as f64 / copies)
    }
}

/// A rank's largest total over the mean, sent (rows) and received (columns); 1 when nothing moves.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Imbalance {
    pub sent: f64,
    pub received: f64,
    /// Share of the token copies dropped by the capacity (0 without one).
    pub dropped: f64,
}

impl Imbalance {
    fn of(m: &[f64], n: usize) -> Imbalance {
        let rows: Vec<f64> = (0..n).map(|i| (0..n).map(|j| m[i * n + j]).sum()).collect();
        let cols: Vec<f64> = (0..n).map(|j| (0..n).map(|i| m[i * n + j]).sum()).collect();
        let ratio = |v: &[f64]| {
            let mean = v.iter().sum::<f64>() / n.max(1) as f64;
            if mean > 0.0 {
                v.iter().cloned().fold(0.0, f64::max) / mean
            } else {
                1.0
            }
        };
        Imbalance { sent: ratio(&rows), received: ratio(&cols), dropped: 0.0 }
    }
}

/// The pattern's matrix before it is fitted to a size (any scale), and the share dropped.
fn weights(p: &Pattern, n: usize) -> (Vec<f64>, f64) {
    match p {
        // Fitted to a size of 16·n² bytes, so each block is one 16-byte unit or more.
        Pattern::Uniform | Pattern::Spread(_) | Pattern::Matrix(_) => {
            let size = 1usize << 30;
            (full_counts(p, size, 1, n).into_iter().map(|c| c as f64).collect(), 0.0)
        }
        Pattern::Moe(_) => {
            let (w, dropped) = cached_tokens(p, n);
            (w.to_vec(), dropped)
        }
    }
}

/// The n×n element counts (row-major, row = sender) of `p` for a size of `elems` elements of
/// `elem` bytes: every block a whole number of 16-byte units, as nccl-tests aligns them.
pub fn full_counts(p: &Pattern, elems: usize, elem: usize, n: usize) -> Vec<usize> {
    let unit_elems = (16 / elem.max(1)).max(1);
    let align = |bytes: usize| (bytes & !15usize) / elem.max(1);
    match p {
        Pattern::Uniform => vec![super::share::per_rank(elems, elem, n); n * n],
        Pattern::Spread(s) => {
            // nccl-tests' AlltoAllvGetPeerBytesDistanceWeighted (alltoallv.cu:359-368), on its
            // total: paramcount × nranks × eltSize (:396-397).
            let total = super::share::per_rank(elems, elem, n) * n * elem;
            let mut out = vec![0; n * n];
            if n == 1 {
                out[0] = align(total);
                return out;
            }
            let sum_distances = (n * (n - 1) / 2) as f64;
            for i in 0..n {
                for j in 0..n {
                    let d = ((j + n - i) % n) as f64;
                    let uniform = total as f64 / n as f64;
                    let dist = d * total as f64 / sum_distances;
                    out[i * n + j] = align(((1.0 - s) * uniform + s * dist) as usize);
                }
            }
            out
        }
        Pattern::Matrix(m) => {
            let mut out = vec![0; n * n];
            for i in 0..n.min(m.dim) {
                for j in 0..n.min(m.dim) {
                    out[i * n + j] = align(m.bytes[i * m.dim + j] as usize);
                }
            }
            out
        }
        Pattern::Moe(_) => {
            // Fitted so the mean rank sends the size: each block its share, rounded down to
            // whole units.
            let (w, _) = cached_tokens(p, n);
            let sum: f64 = w.iter().sum();
            if sum <= 0.0 {
                return vec![0; n * n];
            }
            let units = (elems / unit_elems * n) as f64;
            w.iter().map(|x| ((x / sum * units).floor() as usize) * unit_elems).collect()
        }
    }
}

fn cached_tokens(p: &Pattern, n: usize) -> (std::sync::Arc<Vec<f64>>, f64) {
    type Cache = HashMap<(String, usize), (std::sync::Arc<Vec<f64>>, f64)>;
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    let Pattern::Moe(m) = p else { unreachable!("tokens of the moe pattern") };
    let key = (p.to_string(), n);
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    cache
        .entry(key)
        .or_insert_with(|| {
            let (w, d) = m.tokens(n);
            (std::sync::Arc::new(w), d)
        })
        .clone()
}

/// `p` at `bytes` bytes a rank on `n` ranks in nccl-tests' matrix format: one line per sender,
/// the bytes to each receiver, separated by spaces (what [`Matrix::read`] and nccl-tests'
/// `NCCL_TESTS_ALLTOALLV_MATRIX_FILE` read back).
pub fn matrix_text(p: &Pattern, bytes: usize, n: usize) -> String {
    let m = full_counts(p, bytes, 1, n);
    let mut out = String::new();
    for row in m.chunks(n.max(1)) {
        let cells: Vec<String> = row.iter().map(|b| b.to_string()).collect();
        out.push_str(&cells.join(" "));
        out.push('\n');
    }
    out
}

/// The largest total any rank sends or receives, in elements.
fn busiest(counts: &[usize], n: usize) -> usize {
    let row = |i: usize| (0..n).map(|j| counts[i * n + j]).sum::<usize>();
    let col = |j: usize| (0..n).map(|i| counts[i * n + j]).sum::<usize>();
    (0..n).map(|r| row(r).max(col(r))).max().unwrap_or(0)
}

/// One rank's share of an all-to-all-v, in elements: what it sends each peer and where in its
/// send buffer, what it receives from each and where (contiguous, in rank order, as nccl-tests
/// and an application's `MPI_Alltoallv` lay them out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerCounts {
    pub send: Vec<usize>,
    pub send_displs: Vec<usize>,
    pub recv: Vec<usize>,
    pub recv_displs: Vec<usize>,
    /// The busiest rank's total, sent or received (nccl-tests' `AlltoAllvComputeMaxCounts`):
    /// the bytes behind algbw.
    pub busiest: usize,
    /// The traffic's imbalance at this size (every rank alike), in thousandths (kept whole so
    /// the layout stays `Eq`).
    pub imbalance_milli: (u64, u64),
    /// Share of the token copies dropped by the `moe` pattern's capacity, in millionths.
    pub dropped_ppm: u64,
    /// The size the row reports, in elements: the mean rank's whole send buffer (nccl-tests'
    /// paramcount × nranks; a matrix's: its mean row, whatever -b and -e, which only have to
    /// hold its busiest rank, as in nccl-tests).
    pub nominal: usize,
}

impl PeerCounts {
    pub fn send_total(&self) -> usize {
        self.send.iter().sum()
    }
    pub fn recv_total(&self) -> usize {
        self.recv.iter().sum()
    }
    /// The peer whose block holds element `i` of a buffer laid out by `counts`/`displs`, and
    /// the element's index in that block.
    pub fn locate(counts: &[usize], displs: &[usize], i: usize) -> (usize, usize) {
        let (mut lo, mut hi) = (0, counts.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if displs[mid] + counts[mid] <= i {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo, i - displs[lo])
    }
    /// The traffic's imbalance at this size (the same on every rank).
    pub fn imbalance(&self) -> Imbalance {
        Imbalance {
            sent: self.imbalance_milli.0 as f64 / 1000.0,
            received: self.imbalance_milli.1 as f64 / 1000.0,
            dropped: self.dropped_ppm as f64 / 1e6,
        }
    }
}

/// Rank `rank`'s counts for `p` at `elems` elements of `elem` bytes on `n` ranks. Made once per
/// pattern, size, type and rank count in a process and kept for the process's life (a layout is
/// a plain copyable value that the timed loop and the check share).
pub fn peer_counts(p: &Pattern, elems: usize, elem: usize, n: usize, rank: usize) -> &'static PeerCounts {
    peer_counts_of(p, elems, elem, n, rank, false)
}

/// [`peer_counts`], of the transposed matrix when `transposed` (rank i sends rank j what `p` has
/// j send i): `step`'s combine, which returns each token to the rank that dispatched it.
pub fn peer_counts_of(
    p: &Pattern,
    elems: usize,
    elem: usize,
    n: usize,
    rank: usize,
    transposed: bool,
) -> &'static PeerCounts {
    type Cache = HashMap<(String, usize, usize, usize, usize, bool), &'static PeerCounts>;
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    let key = (p.to_string(), elems, elem, n, rank, transposed);
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    cache.entry(key).or_insert_with(|| {
        let mut m = full_counts(p, elems, elem, n);
        if transposed {
            m = (0..n * n).map(|x| m[(x % n) * n + x / n]).collect();
        }
        let send: Vec<usize> = (0..n).map(|j| m[rank * n + j]).collect();
        let recv: Vec<usize> = (0..n).map(|i| m[i * n + rank]).collect();
        let displs = |c: &[usize]| {
            c.iter()
                .scan(0usize, |acc, x| {
                    let at = *acc;
                    *acc += x;
                    Some(at)
                })
                .collect::<Vec<_>>()
        };
        let imb = Imbalance::of(&m.iter().map(|x| *x as f64).collect::<Vec<_>>(), n);
        let milli = |x: f64| (x * 1000.0).round() as u64;
        Box::leak(Box::new(PeerCounts {
            send_displs: displs(&send),
            recv_displs: displs(&recv),
            send,
            recv,
            busiest: busiest(&m, n),
            imbalance_milli: (milli(imb.sent), milli(imb.received)),
            dropped_ppm: match p {
                Pattern::Moe(_) => (cached_tokens(p, n).1 * 1e6).round() as u64,
                _ => 0,
            },
            nominal: match p {
                Pattern::Matrix(_) => m.iter().sum::<usize>() / n.max(1),
                _ => super::share::per_rank(elems, elem, n) * n,
            },
        }))
    })
}

/// The largest matrix file read: 16 MiB, a 1024×1024 matrix of 15-digit counts, far beyond any
/// hand-written or generated traffic; reading stops there, so a huge or endless file costs
/// bounded time and memory.
pub const MATRIX_MAX_FILE_BYTES: u64 = 16 << 20;

/// At most this many characters of a bad value are quoted in an error, so a huge token cannot
/// make a huge line.
const QUOTED_CHARS: usize = 32;

/// `tok` as an error quotes it: control characters escaped, cut to [`QUOTED_CHARS`] with "…".
fn quoted(tok: &str) -> String {
    let mut out: String = tok.chars().take(QUOTED_CHARS).flat_map(char::escape_default).collect();
    if tok.chars().nth(QUOTED_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// Why a matrix cell is not a byte count, or its value. Whole numbers only: a fraction of a byte
/// means a wrong file, and parsing through f64 would round counts above 2^53. A whole number
/// written as a float (`100.0`, `1e3`) is taken where f64 holds it exactly.
fn cell(tok: &str) -> std::result::Result<u64, &'static str> {
    if let Ok(v) = tok.parse::<u64>() {
        return Ok(v);
    }
    let digits = tok.strip_prefix('+').unwrap_or(tok);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("is larger than 18446744073709551615, the largest byte count");
    }
    match tok.parse::<f64>() {
        Ok(v) if v.is_finite() && v < 0.0 => Err("is negative; expected byte counts of 0 or more"),
        Ok(v) if v.is_finite() && v.fract() != 0.0 => Err("is not a whole number of bytes"),
        Ok(v) if v.is_finite() && v < (1u64 << 53) as f64 => Ok(v as u64),
        Ok(v) if v.is_finite() => Err("is too large to be exact as a float; expected it written as a whole number"),
        _ => Err("is not a number of bytes"),
    }
}

impl Matrix {
    /// Read nccl-tests' format: whitespace-separated byte counts, one row per line (blank lines
    /// skipped), row i = what rank i sends; square; whole numbers, none negative; every row's
    /// and column's sum a 64-bit count. Only a regular file of at most
    /// [`MATRIX_MAX_FILE_BYTES`] is read: a device, FIFO or directory could never end or be
    /// matrix text.
    pub fn read(path: &Path) -> Result<Matrix> {
        use std::io::Read;
        let shown = crate::error::shown(path);
        let flag = format!("--pattern matrix={shown}");
        let cannot = |why: String| {
            Error::usage(format!("{flag}: cannot read it: {why}; expected a readable file of byte counts"))
        };
        // Checked before opening: opening a FIFO would wait for a writer.
        let meta = std::fs::metadata(path).map_err(|e| cannot(e.to_string()))?;
        if !meta.is_file() {
            return Err(Error::usage(format!(
                "{flag}: is {}, not a regular file; expected a file of byte counts",
                file_kind(&meta)
            )));
        }
        let cap = MATRIX_MAX_FILE_BYTES;
        let mut raw = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(cap + 1).read_to_end(&mut raw))
            .map_err(|e| cannot(e.to_string()))?;
        if raw.len() as u64 > cap {
            return Err(Error::usage(format!(
                "{flag}: is larger than {} MiB; expected a matrix file of at most {} MiB (whitespace-separated byte counts)",
                cap >> 20,
                cap >> 20
            )));
        }
        let text = String::from_utf8(raw).map_err(|_| cannot("it is not text (not UTF-8)".to_string()))?;
        let mut rows: Vec<Vec<u64>> = vec![];
        for (line_no, line) in text.lines().enumerate() {
            let mut row = vec![];
            for (col, tok) in line.split_whitespace().enumerate() {
                let v = cell(tok).map_err(|why| {
                    Error::usage(format!(
                        "--pattern matrix: {shown} line {}: '{}' (column {}) {why}{}",
                        line_no + 1,
                        quoted(tok),
                        col + 1,
                        if why.contains("; expected") {
                            ""
                        } else {
                            "; expected whitespace-separated whole byte counts, one row per sender"
                        }
                    ))
                })?;
                row.push(v);
            }
            if !row.is_empty() {
                rows.push(row);
            }
        }
        if rows.is_empty() {
            return Err(Error::usage(format!(
                "--pattern matrix: {shown} holds no numbers; expected a square matrix of byte counts"
            )));
        }
        let dim = rows.len();
        if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != dim) {
            return Err(Error::usage(format!(
                "--pattern matrix: {shown} is not square: {dim} rows, but row {} has {} values; expected {dim}",
                i + 1,
                r.len()
            )));
        }
        let bytes: Vec<u64> = rows.into_iter().flatten().collect();
        // Every sum the run makes (a rank's row or column, over any corner) is at most its whole
        // row's or column's: checked once here, so no later sum can wrap.
        for i in 0..dim {
            for (what, sum) in [
                ("row", (0..dim).try_fold(0u64, |a, j| a.checked_add(bytes[i * dim + j]))),
                ("column", (0..dim).try_fold(0u64, |a, j| a.checked_add(bytes[j * dim + i]))),
            ] {
                if sum.is_none() {
                    return Err(Error::usage(format!(
                        "--pattern matrix: {shown}: {what} {} sums to more than 18446744073709551615 bytes, more than any rank can send; expected smaller byte counts",
                        i + 1
                    )));
                }
            }
        }
        Ok(Matrix { path: path.to_path_buf(), dim, bytes })
    }
}

/// What a path that is not a regular file is, for the refusal.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// splitmix64: a small generator whose stream is fixed forever, so one seed gives every rank,
/// and every version, the same matrix.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// nccl-tests' AlltoAllvGetPeerBytesDistanceWeighted (src/alltoallv.cu:359-368 at a0b82b2),
    /// on the total of its AlltoAllvGetCollByteCount (:396-397), as C computes them.
    fn nccl_tests_spread(i: usize, j: usize, n: usize, count: usize, elt: usize, spread: f64) -> usize {
        let paramcount = (count / n) & !(16 / elt - 1);
        let total_bytes = paramcount * n * elt;
        if n == 1 {
            return (total_bytes & !15) / elt;
        }
        let distance = (j + n - i) % n;
        let sum_distances = n * (n - 1) / 2;
        let uniform = total_bytes as f64 / n as f64;
        let dist = distance as f64 * total_bytes as f64 / sum_distances as f64;
        let bytes = (1.0 - spread) * uniform + spread * dist;
        ((bytes as usize) & !15) / elt
    }

    #[test]
    fn spread_counts_are_nccl_tests_counts() {
        for n in 1..=8 {
            for s in [0.0, 0.25, 0.5, 0.9, 1.0] {
                for elt in [1, 2, 4, 8] {
                    for bytes in [64usize, 1000, 4096, 1 << 20, 3 << 20] {
                        let count = bytes / elt;
                        let got = full_counts(&Pattern::Spread(s), count, elt, n);
                        for i in 0..n {
                            for j in 0..n {
                                let want = nccl_tests_spread(i, j, n, count, elt, s);
                                assert_eq!(got[i * n + j], want, "n={n} s={s} elt={elt} {bytes} B {i}→{j}");
                            }
                        }
                    }
                }
            }
        }
        // By hand: 4 ranks, 4096 B, S=1: distances 1, 2, 3 of 6 → 682.7, 1365.3, 2048 B, rounded
        // down to 16: 672, 1360, 2048; nothing to itself. Every rank sends and receives 4080 B.
        let c = full_counts(&Pattern::Spread(1.0), 4096, 1, 4);
        assert_eq!(&c[0..4], &[0, 672, 1360, 2048]);
        assert_eq!(&c[4..8], &[2048, 0, 672, 1360]);
        let imb = Imbalance::of(&c.iter().map(|x| *x as f64).collect::<Vec<_>>(), 4);
        assert_eq!((imb.sent, imb.received), (1.0, 1.0));
    }

    #[test]
    fn a_matrix_file_is_read_as_nccl_tests_reads_it() {
        let dir = std::env::temp_dir().join(format!("coll-bench-matrix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        // The example of alltoallv.cu's header comment (lines 71-74), with a blank line.
        let p = file("example.txt", "100  200  150\n50   100  75\n\n300  150  200\n");
        let m = Matrix::read(&p).unwrap();
        assert_eq!((m.dim, m.bytes.len()), (3, 9));
        let pat = Pattern::Matrix(m);
        // Aligned down to 16 bytes per block.
        assert_eq!(full_counts(&pat, 1024, 1, 3), vec![96, 192, 144, 48, 96, 64, 288, 144, 192]);
        // Fewer ranks: the top-left corner.
        assert_eq!(full_counts(&pat, 1024, 4, 2), vec![24, 48, 12, 24]);
        assert!(pat.check_run(3, 1024, 1024).is_ok());
        let e = |r: Result<()>| r.unwrap_err().to_string();
        assert!(e(pat.check_run(4, 1024, 1024)).contains("3x3, smaller than the 4 ranks"));
        assert!(e(pat.check_run(3, 512, 1024)).contains("expected -b/--minbytes equal to -e/--maxbytes"));
        // Rank 2 sends 624 bytes (288 + 144 + 192).
        assert!(e(pat.check_run(3, 600, 600)).contains("moves 624 bytes"));
        for (name, text, want) in [
            ("ragged.txt", "1 2\n3\n", "is not square"),
            ("wide.txt", "1 2 3\n4 5 6\n", "is not square"),
            ("negative.txt", "1 -2\n3 4\n", "is negative"),
            ("comma.txt", "1,2\n3,4\n", "is not a number of bytes"),
            ("empty.txt", "\n \n", "holds no numbers"),
        ] {
            let got = Matrix::read(&file(name, text)).unwrap_err().to_string();
            assert!(got.contains(want), "{name}: {got}");
        }
        assert!(Pattern::parse(&format!("matrix={}", dir.join("absent.txt").display())).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Cells are whole numbers read exactly (not through f64), and a bad one is quoted short.
    #[test]
    fn matrix_cells_are_exact_whole_numbers() {
        assert_eq!(cell("9007199254740993"), Ok(9_007_199_254_740_993));
        assert_eq!(cell("18446744073709551615"), Ok(u64::MAX));
        assert_eq!((cell("100.0"), cell("1e3"), cell("+7")), (Ok(100), Ok(1000), Ok(7)));
        assert!(cell("18446744073709551616").unwrap_err().contains("larger than 18446744073709551615"));
        assert!(cell("16.5").unwrap_err().contains("not a whole number"));
        assert!(cell("-1").unwrap_err().contains("negative"));
        assert!(cell("1e300").unwrap_err().contains("too large to be exact"));
        assert!(cell("nan").unwrap_err().contains("not a number"));
        assert_eq!(quoted(&"9".repeat(1 << 20)), format!("{}…", "9".repeat(QUOTED_CHARS)));
        assert_eq!(quoted("a\u{1b}b"), "a\\u{1b}b");
    }

    #[test]
    fn moe_skew_makes_ranks_receive_unequally_and_the_seed_fixes_the_matrix() {
        let moe = |skew: f64, capacity: Option<f64>, seed: u64| {
            Pattern::Moe(Moe { experts: 8, topk: 2, skew, capacity, seed })
        };
        let flat = moe(0.0, None, 1).imbalance(4);
        assert!(flat.sent < 1.01 && flat.received < 1.1, "{flat:?}");
        let skewed = moe(1.5, None, 1).imbalance(4);
        assert!(skewed.received >= 2.0 && skewed.sent < 1.01, "{skewed:?}");
        // Growing with the skew.
        let mid = moe(0.75, None, 1).imbalance(4);
        assert!(flat.received < mid.received && mid.received < skewed.received, "{mid:?}");
        // The same seed, the same matrix on every rank; another seed, other draws.
        assert_eq!(full_counts(&moe(1.0, None, 3), 1 << 16, 4, 4), full_counts(&moe(1.0, None, 3), 1 << 16, 4, 4));
        assert_ne!(full_counts(&moe(1.0, None, 3), 1 << 16, 4, 4), full_counts(&moe(1.0, None, 4), 1 << 16, 4, 4));
        // A capacity drops copies and caps the hot rank.
        let capped = moe(1.5, Some(1.0), 1).imbalance(4);
        assert!(capped.dropped > 0.1 && capped.received < skewed.received, "{capped:?}");
        assert_eq!(skewed.dropped, 0.0);
        // The mean rank sends the size (rounded down to whole 16-byte blocks).
        let c = full_counts(&moe(1.5, None, 1), 1 << 18, 4, 4);
        let mean = c.iter().sum::<usize>() as f64 / 4.0;
        assert!(mean <= (1 << 18) as f64 && mean > (1 << 18) as f64 * 0.99, "{mean}");
        // Fewer experts than ranks: some ranks receive nothing.
        let c = full_counts(&Pattern::Moe(Moe { experts: 2, topk: 1, skew: 0.0, capacity: None, seed: 1 }), 4096, 4, 4);
        assert!((0..4).filter(|j| (0..4).all(|i| c[i * 4 + j] == 0)).count() == 2, "{c:?}");
    }

    #[test]
    fn a_list_of_skews_is_a_pattern_each() {
        let l = Pattern::parse_list("moe:experts=8,topk=2,skew=0,0.5,1.5,capacity=2").unwrap();
        let text: Vec<String> = l.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            text,
            [
                "moe:experts=8,topk=2,skew=0,capacity=2,seed=1",
                "moe:experts=8,topk=2,skew=0.5,capacity=2,seed=1",
                "moe:experts=8,topk=2,skew=1.5,capacity=2,seed=1"
            ]
        );
        assert_eq!(Pattern::parse_list("spread=0.5").unwrap(), [Pattern::Spread(0.5)]);
        assert_eq!(Pattern::parse_list("moe:experts=8,topk=2").unwrap().len(), 1);
        for (bad, why) in [
            ("moe:experts=8,topk=2,skew=0,-1", "skew that is not a number of at least 0"),
            ("moe:experts=8,topk=2,skew=1,1", "lists skew 1 twice"),
            ("moe:experts=8,1,topk=2", "has '1', not key=value"),
        ] {
            let e = Pattern::parse_list(bad).unwrap_err().to_string();
            assert!(e.starts_with("--pattern") && e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn patterns_parse_and_bad_ones_name_the_flag() {
        assert_eq!(Pattern::parse("uniform").unwrap(), Pattern::Uniform);
        assert_eq!(Pattern::parse("spread=0.5").unwrap(), Pattern::Spread(0.5));
        let m = Pattern::parse("moe:experts=8,topk=2,skew=1.5,capacity=1.25,seed=7").unwrap();
        assert_eq!(m, Pattern::Moe(Moe { experts: 8, topk: 2, skew: 1.5, capacity: Some(1.25), seed: 7 }));
        assert_eq!(m.to_string(), "moe:experts=8,topk=2,skew=1.5,capacity=1.25,seed=7");
        assert_eq!(Pattern::parse(&m.to_string()).unwrap(), m);
        assert_eq!(Pattern::parse("moe:experts=8,topk=2").unwrap().to_string(), "moe:experts=8,topk=2,skew=0,seed=1");
        for (bad, why) in [
            ("zipf", "is not a pattern"),
            ("spread=1.5", "from 0 to 1"),
            ("spread=-0.1", "from 0 to 1"),
            ("moe:experts=8,topk=9", "topk=9 of only 8 experts"),
            ("moe:experts=8,topk=2,skew=-1", "skew that is not a number of at least 0"),
            ("moe:experts=8,topk=2,capacity=0", "capacity that is not a number above 0"),
            ("moe:experts=8,topk=2,capacity=-1", "capacity that is not a number above 0"),
            ("moe:experts=0,topk=1", "experts that is not a whole number"),
            ("moe:topk=2", "gives no experts="),
            ("moe:experts=8,topk=2,hot=1", "unknown key 'hot'"),
            ("matrix=", "names no file"),
            ("moe:experts=8,0.5", "has '0.5', not key=value"),
        ] {
            let e = Pattern::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("--pattern") && e.contains(why), "{bad}: {e}");
        }
    }
}
