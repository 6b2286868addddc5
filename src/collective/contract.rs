//! What each collective's module supplies to the generic driver and the check (the
//! [`Collective`] trait), and the types it speaks in: which collective ([`Kind`]), whose
//! in-place convention, one rank's counts ([`Layout`]), the abstract value of an element
//! ([`Cell`]). Below every collective's file, which uses it; the module's root joins a [`Kind`]
//! to its file (`Kind::spec`).

use super::traffic;
use serde::{Deserialize, Serialize};

/// The collectives coll-bench knows, in the order `all` runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    Gather,
    Scatter,
    AllToAll,
    /// All-to-all with a count per pair of ranks, from `--pattern` (`MPI_Alltoallv`).
    AllToAllV,
    /// nccl-tests' sendrecv: each rank sends to rank+1 and receives from rank−1, at once.
    #[serde(rename = "sendrecv")]
    SendRecv,
    /// OSU's latency test: pairs 0↔1, 2↔3, … send and answer in turn; one way. (Was `sendrecv`.)
    PingPong,
    Barrier,
}

impl Kind {
    pub const ALL: [Kind; 12] = [
        Kind::AllReduce,
        Kind::AllGather,
        Kind::ReduceScatter,
        Kind::Broadcast,
        Kind::Reduce,
        Kind::Gather,
        Kind::Scatter,
        Kind::AllToAll,
        Kind::AllToAllV,
        Kind::SendRecv,
        Kind::PingPong,
        Kind::Barrier,
    ];
    /// What runs when no collective is named.
    pub const CORE: [Kind; 3] = [Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter];
    pub const ACCEPTED: &'static str = "all-reduce, all-gather, reduce-scatter, broadcast, reduce, gather, scatter, all-to-all, all-to-all-v, sendrecv, ping-pong, barrier or all";

    /// Accepts `all-reduce`, `all_reduce`, `allreduce` and the like.
    pub fn parse(s: &str) -> Option<Kind> {
        let key: String = s.chars().filter(|c| *c != '-' && *c != '_').collect::<String>().to_ascii_lowercase();
        Some(match key.as_str() {
            "allreduce" => Kind::AllReduce,
            "allgather" => Kind::AllGather,
            "reducescatter" => Kind::ReduceScatter,
            "broadcast" | "bcast" => Kind::Broadcast,
            "reduce" => Kind::Reduce,
            "gather" => Kind::Gather,
            "scatter" => Kind::Scatter,
            "alltoall" => Kind::AllToAll,
            "alltoallv" => Kind::AllToAllV,
            "sendrecv" => Kind::SendRecv,
            "pingpong" => Kind::PingPong,
            "barrier" => Kind::Barrier,
            _ => return None,
        })
    }
}

/// Where a library expects in-place data. MPI and NCCL agree except for reduce-scatter (MPI
/// leaves the result at the start of the buffer, NCCL at this rank's block) and the out-of-place
/// broadcast root (NCCL copies into the root's receive buffer, MPI has only one buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Convention {
    Mpi,
    Nccl,
}

/// Element counts of one rank for one size. Offsets and counts are in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Layout {
    /// The count shown in the table (nccl-tests' "paramcount": per rank for all-gather & co.).
    pub count: usize,
    /// Elements read from the send buffer.
    pub send_count: usize,
    /// Elements the receive buffer must hold.
    pub recv_count: usize,
    /// Elements behind algbw: algbw = alg_count × element size / time.
    pub alg_count: usize,
    /// All-to-all-v: this rank's count for each peer ([`traffic::PeerCounts`]); `None` for the
    /// others, whose blocks are all `count`.
    pub peers: Option<&'static traffic::PeerCounts>,
    /// In place (one buffer): where this rank's input lies…
    pub in_place_input: usize,
    /// …and where its output lands.
    pub in_place_output: usize,
}

impl Layout {
    /// The "size" column: the larger of the bytes sent and received by one rank.
    /// All-to-all-v: the mean rank's bytes sent, as nccl-tests' size.
    pub fn size_bytes(&self, elem: usize) -> usize {
        if let Some(p) = self.peers {
            return p.nominal * elem;
        }
        self.send_count.max(self.recv_count) * elem
    }
    /// Elements the single in-place buffer must hold.
    pub fn in_place_extent(&self) -> usize {
        (self.in_place_input + self.send_count).max(self.in_place_output + self.recv_count)
    }
}

/// Which rank, of how many, around which root, for what layout.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    pub rank: usize,
    pub nranks: usize,
    pub root: usize,
    pub in_place: bool,
    pub convention: Convention,
    pub layout: Layout,
}

/// The abstract value of one element; `crate::verify` turns it into a typed value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// Data moved unchanged: element `k` of the block that source `src` owns.
    Data { src: u64, k: u64 },
    /// This rank's contribution to reduction index `idx`.
    Contribution { idx: u64 },
    /// The reduction over all ranks of index `idx`.
    Reduced { idx: u64 },
}

impl Cell {
    /// The cell `t` elements further along a run of cells that step one at a time: block and
    /// source kept, element or reduction index `t` further ([`Collective::input_run`]).
    pub fn step(self, t: u64) -> Cell {
        match self {
            Cell::Data { src, k } => Cell::Data { src, k: k + t },
            Cell::Contribution { idx } => Cell::Contribution { idx: idx + t },
            Cell::Reduced { idx } => Cell::Reduced { idx: idx + t },
        }
    }
}

/// What one collective supplies to the generic driver.
pub trait Collective: Sync {
    fn kind(&self) -> Kind;
    /// Canonical name, as typed on the command line and written to the CSV.
    fn name(&self) -> &'static str;
    /// Does it take a reduction operator?
    fn reduces(&self) -> bool {
        false
    }
    /// Does it have a root?
    fn rooted(&self) -> bool {
        false
    }
    /// Is it measured in place too? (false for all-to-all-v: MPI's in-place form needs a
    /// symmetric matrix, and nccl-tests leaves it unchecked)
    fn has_in_place(&self) -> bool {
        true
    }
    /// Does it move data whose size is swept? (false for barrier)
    fn sized(&self) -> bool {
        true
    }
    /// Counts for `elems` elements in total (size / element size) of `elem` bytes each on
    /// `nranks` ranks; a per-rank block is [`super::share::per_rank`] elements, as in nccl-tests.
    fn layout(&self, elems: usize, elem: usize, nranks: usize, rank: usize, convention: Convention) -> Layout;
    /// busbw = algbw × factor (nccl-tests' doc/PERFORMANCE.md).
    fn bus_factor(&self, nranks: usize) -> f64;
    /// Elements of input this rank provides (0 where the rank is not a source).
    fn input_len(&self, c: &Ctx) -> usize {
        c.layout.send_count
    }
    fn input(&self, c: &Ctx, i: usize) -> Cell;
    /// How many input elements from `i` on are `input(c, i)` stepped one at a time
    /// ([`Cell::step`]): the check fills and compares such a run in one pass (nccl-tests' slices),
    /// without asking per element. At least 1; `usize::MAX` for "to the end". The default, 1,
    /// asks per element (all-to-all-v, whose blocks follow its traffic pattern).
    fn input_run(&self, _c: &Ctx, _i: usize) -> usize {
        1
    }
    /// Elements of output this rank checks (0 where the library defines none).
    fn output_len(&self, c: &Ctx) -> usize {
        c.layout.recv_count
    }
    fn expected(&self, c: &Ctx, j: usize) -> Cell;
    /// As [`Collective::input_run`], for the expected output from element `j` on.
    fn expected_run(&self, _c: &Ctx, _j: usize) -> usize {
        1
    }
}
