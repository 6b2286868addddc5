//! Backends run one collective call on their own buffers and time it. The driver (`crate::sweep`)
//! never sees a library: it asks a backend to allocate, to fill or read its buffers through a
//! host view, and to run a timed batch. `mpi` runs on CPU buffers; the NCCL backend plugs in here.

pub mod algorithm;
pub mod host;
pub mod mpi;
pub mod mpit;
/// GPU collectives through NCCL (`--backend nccl`); a stand-in that refuses it in a build
/// without the `nccl` feature.
#[cfg(feature = "nccl")]
pub mod nccl;
#[cfg(not(feature = "nccl"))]
#[path = "nccl/disabled.rs"]
pub mod nccl;
/// Open MPI 4.1's `coll_tuned` fixed decision rules, generated from its C source.
pub mod ompi_fixed;
/// Open MPI's dynamic rules file: read and applied as Open MPI 4.1 does.
pub mod ompi_rules;
/// A simulated backend for one rank, without MPI, for unit tests.
#[cfg(test)]
pub(crate) mod sim;

pub use host::HostBuffer;

use crate::collective::{Convention, Kind, Layout};
use crate::dtype::{DType, Op};
use crate::error::Result;
use std::sync::atomic::{AtomicU64, Ordering};

/// Samples the timed loops of this process have taken so far: the watchdog's sign of progress
/// (`crate::watchdog`: a step still taking samples is slow, not stuck). One relaxed add per
/// sample, beside the clock read that ends it; a backend whose samples come only at the end of
/// its batch (NCCL's events) shows none inside it.
static SAMPLES: AtomicU64 = AtomicU64::new(0);

/// One sample taken ([`SAMPLES`]).
pub fn sample_taken() {
    SAMPLES.fetch_add(1, Ordering::Relaxed);
}

/// Samples taken so far ([`SAMPLES`]).
pub fn samples_taken() -> u64 {
    SAMPLES.load(Ordering::Relaxed)
}

/// One call: which collective, on what, where.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub kind: Kind,
    pub dtype: DType,
    pub op: Op,
    pub root: usize,
    pub layout: Layout,
    pub in_place: bool,
}

/// The two buffers of a rank. In place, only `Recv` is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buf {
    Send,
    Recv,
}

/// A library that runs collectives.
pub trait Backend {
    fn name(&self) -> &'static str;
    /// Where in-place data lives for this library.
    fn convention(&self) -> Convention;
    /// Lines for the header: library name and version and the like.
    fn describe(&self) -> Vec<String>;
    /// Reject, up front, a data type this backend cannot run.
    fn supports(&self, dtype: DType) -> Result<()>;
    /// The most bytes of send and receive buffer together this rank can hold, and what is kept
    /// back (for the note when the largest size is lowered to fit); `None`: no limit of the
    /// backend's own (host memory is checked apart). Called before `allocate`.
    fn buffer_limit(&mut self) -> Result<Option<(u64, String)>> {
        Ok(None)
    }
    /// Allocate both buffers once, at the largest size (bytes).
    fn allocate(&mut self, send_bytes: usize, recv_bytes: usize) -> Result<()>;
    /// Let `f` write the first `len` bytes of a buffer through a host view.
    fn write(&mut self, buf: Buf, len: usize, f: &mut dyn FnMut(&mut [u8])) -> Result<()>;
    /// Let `f` read the first `len` bytes of a buffer through a host view.
    fn read(&mut self, buf: Buf, len: usize, f: &mut dyn FnMut(&[u8])) -> Result<()>;
    /// Run `iters` iterations back to back in batches of `batch` (which divides `iters`);
    /// `samples` (cleared first) gets one entry per batch: its time per iteration, in seconds.
    /// An iteration is one call, or with `-m N` (NCCL) N calls in one group: the sweep divides
    /// by N. Batching keeps the clock's own cost (tens of ns) out of sub-microsecond calls. For
    /// ping-pong the time is one way.
    fn run(&mut self, call: &Call, iters: usize, batch: usize, samples: &mut Vec<f64>) -> Result<()>;
    /// One call launched plainly, as `run(call, 1, 1, samples)` without `-m`'s group or `-G`'s
    /// graph: the check pass.
    fn run_plain(&mut self, call: &Call, samples: &mut Vec<f64>) -> Result<()> {
        self.run(call, 1, 1, samples)
    }
    /// The host's seconds per call spent launching the last `run`'s timed calls, from the first
    /// launch to the return of the last (`-C`, nccl-tests' cputime); `None` where the backend's
    /// calls are not launched apart from running (MPI).
    fn launch_seconds(&self) -> Option<f64> {
        None
    }
    /// Why the result of `call` is not checked on this backend (the row says N/A, as
    /// nccl-tests'), or `None`: it is, where the check is on.
    fn unchecked(&self, call: &Call) -> Option<&'static str> {
        let _ = call;
        None
    }
    /// The library function one call of `kind` times, for the header (`MPI_Reduce_scatter_block`
    /// for reduce-scatter on MPI); `None` where this backend does not say.
    fn timed_function(&self, kind: Kind) -> Option<&'static str> {
        let _ = kind;
        None
    }
    /// The algorithm the library runs for `call` and how that is known (one of
    /// [`crate::record::ALGORITHM_SOURCES`]): asked once per point, after its timed calls, never
    /// inside them. `unknown` where the library cannot tell.
    fn algorithm(&mut self, call: &Call) -> (String, &'static str) {
        let _ = call;
        (crate::record::UNKNOWN_ALGORITHM.to_string(), "not reported")
    }
    /// How this backend makes a group's communicator (`--groups`, `step`), for the header:
    /// "groups by …".
    fn groups_via(&self) -> String {
        "groups by MPI_Comm_split".to_string()
    }
    /// A backend on this rank's group of colour `color` (`sizes`: every group's size, the same
    /// list on every rank), made from this one, which stays as it is: a run's parent kept for all
    /// its groups (`step`). `None` where this backend makes none that way (a new backend is made
    /// for the group instead). Collective over the world where it is `Some`.
    fn group(
        &self,
        world: &crate::world::World,
        opts: &crate::options::Options,
        color: u32,
        sizes: &[usize],
    ) -> Option<Result<Box<dyn Backend>>> {
        let _ = (world, opts, color, sizes);
        None
    }
    /// One exchange between neighbours (a pipeline's stages, `step`): the first `bytes` of the
    /// send buffer go to rank `to` while the first `bytes` of the receive buffer come from rank
    /// `from`, both at once (ranks of this backend's communicator; `None`: that side is left
    /// out). Returns the seconds it took on this rank. A failed call ends the job, as in `run`.
    fn exchange(&mut self, to: Option<usize>, from: Option<usize>, bytes: usize) -> Result<f64> {
        let _ = (to, from, bytes);
        Err(crate::error::Error::setup(format!("the {} backend has no neighbour exchange", self.name())))
    }
}
