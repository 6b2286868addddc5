//! The NCCL backend: collectives on GPU buffers, one GPU per rank. Built in by default; libcuda
//! and libnccl are loaded at run time (`libloading`), so the same binary builds and runs on
//! machines without CUDA, where `--backend nccl` is a one-line error. All FFI detail stays in
//! this module: `search` (where the libraries are), `cuda` (driver calls), `ffi` (NCCL calls),
//! `gpu` (which GPU a rank takes), `split` (group communicators).
//!
//! Bootstrap, each step agreed across ranks so a failure anywhere is one message from rank 0:
//! 1. every rank: load libcuda, `cuInit`, pick its GPU ([`gpu::select`]: the one at its
//!    node-local rank, or its first where the ranks of a node are shown GPUs of their own,
//!    honouring `CUDA_VISIBLE_DEVICES`); load NCCL and check its version (both tried before
//!    either is agreed on); two ranks of a node on one GPU (one UUID) are refused;
//! 2. where NCCL loaded on every rank — which needs no driver — rank 0 makes the unique id
//!    (`ncclGetUniqueId`), its 128 bytes are broadcast over MPI, and every rank checks it holds
//!    the same 128 bytes as every other (an all-gather);
//! 3. the outcome of step 1 is agreed: the first failure is the message, libcuda's before NCCL's
//!    (on a machine without a driver the message also says that NCCL loaded and its id went
//!    round); then the GPU's primary context is made current, a stream and timing events created;
//! 4. every rank: `ncclCommInitRank` (collective) — skipped for a backend that runs only in
//!    groups ([`WorldComm::ForSplit`]) where the library has no `ncclCommSplit` to split it;
//! 5. every rank's GPU (host, index, name, PCI bus id) is gathered for the header.
//!
//! Timing: on a blocking communicator (split off the non-blocking init where the library can;
//! [`NcclBackend::blocking_copy`]), as nccl-tests. A timed run's calls are launched back to back
//! with a timing event between samples, and the host waits once, for the last event (yielding
//! on every pass, polling `ncclCommGetAsyncError`); a sample is the elapsed GPU time per call.
//! `-z 1` waits for each call and adds an MPI barrier, as nccl-tests' `-z`. An error once the sweep has begun (a failed call, an asynchronous
//! NCCL error) cannot be agreed on — the other ranks may be inside a collective — so the rank
//! aborts its communicator, prints one line and ends with exit code 2, and the launcher ends the
//! rest, as the `-T` watchdog does.
//!
//! In-place conventions are NCCL's (`Convention::Nccl`). Gather, scatter and all-to-all are
//! grouped `ncclSend`/`ncclRecv` where the library has no native call, as in nccl-tests;
//! in-place all-to-all and sendrecv pass one buffer as both sides, as nccl-tests does, and are
//! not checked, as there: NCCL does not support them in place (its `ncclAlltoAll` docs), and a
//! receive may overwrite data not yet sent.
//! Barrier is an all-reduce of one int32 on a scratch buffer. sendrecv is nccl-tests' ring: one
//! `ncclSend` to rank+1 and one `ncclRecv` from rank−1 in a group. ping-pong is OSU's: separate,
//! ordered `ncclSend` and `ncclRecv` calls between pairs (one way = half the round trip); a rank
//! without a partner sends to itself in one group.
//!
//! float16, bfloat16 and the 8-bit floats are checked within a tolerance derived from the type
//! and the rank count ([`crate::verify`]). Avg of float32 and float64 is checked only on a power-of-two rank count (the group's with
//! `--groups`): NCCL computes it as the sum of each input multiplied by 1/n (`ncclDevPreMulSum`),
//! which is exact for our patterns only when 1/n is; otherwise it is refused unless `-c 0` (see
//! [`avg_is_checkable`]).

/// A struct of C function pointers bound from a library by name: `load` fails with the first
/// missing symbol.
macro_rules! api {
    ($(#[$m:meta])* pub struct $name:ident {
        $($field:ident : $sym:literal => fn($($arg:ty),* $(,)?) -> $ret:ty,)*
    }) => {
        $(#[$m])*
        pub struct $name {
            $(pub $field: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }
        impl $name {
            /// Every entry point as (C name, return type, parameter types), the types as written
            /// here (for the ABI probe, [`crate::backend::nccl::abi`]).
            pub const SIGNATURES: &'static [(&'static str, &'static str, &'static [&'static str])] =
                &[$(($sym, stringify!($ret), &[$(stringify!($arg)),*])),*];

            /// Bind every entry point, or name the first one missing.
            ///
            /// # Safety
            /// The library must export these symbols with these C signatures.
            pub unsafe fn load(lib: &'static libloading::Library) -> Result<Self, String> {
                // SAFETY: the caller upholds this function's contract (its doc comment).
                unsafe {
                    Ok($name {
                        $($field: *lib
                            .get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!($sym, "\0").as_bytes())
                            .map_err(|e| format!("{}: {}", $sym, crate::backend::nccl::search::one_line(&e.to_string())))?,)*
                    })
                }
            }
        }
    };
}

/// As [`api!`], for entry points that only some versions of the library have: each field is an
/// `Option`, `None` where the symbol is missing.
macro_rules! optional_api {
    ($(#[$m:meta])* pub struct $name:ident {
        $($(#[$fm:meta])* $field:ident : $sym:literal => fn($($arg:ty),* $(,)?) -> $ret:ty,)*
    }) => {
        $(#[$m])*
        #[derive(Clone, Copy)]
        pub struct $name {
            $($(#[$fm])* pub $field: Option<unsafe extern "C" fn($($arg),*) -> $ret>,)*
        }
        impl $name {
            /// Every entry point as (C name, return type, parameter types), as for [`api!`].
            pub const SIGNATURES: &'static [(&'static str, &'static str, &'static [&'static str])] =
                &[$(($sym, stringify!($ret), &[$(stringify!($arg)),*])),*];

            /// Bind the entry points the library has.
            ///
            /// # Safety
            /// Where the library exports these symbols, it must be with these C signatures.
            pub unsafe fn load(lib: &'static libloading::Library) -> Self {
                // SAFETY: the caller upholds this function's contract (its doc comment).
                unsafe {
                    $name {
                        $($field: lib
                            .get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!($sym, "\0").as_bytes())
                            .ok()
                            .map(|s| *s),)*
                    }
                }
            }
        }
    };
}

pub mod abi;
mod comm;
pub mod cuda;
pub mod ffi;
pub mod gpu;
pub mod nvml;
pub mod open;
pub mod register;
pub mod search;
pub mod split;
pub mod tuning;

use super::{Backend, Buf, Call, HostBuffer};
use crate::collective::{partner, ring_peers, Convention, Kind};
use crate::dtype::{DType, Op};
use crate::error::{exit, Error, Result};
use crate::options::{LaunchModes, Options};
use crate::verify::SENTINEL;
use crate::world::World;
use comm::{agreed_comm, agreed_ready, unique_id, Alarm, Comm};
use cuda::{Context, CuDevicePtr, DeviceBuffer, Driver, Event, Graph, Stream};
use ffi::{Nccl, NcclComm, UniqueId, NCCL_IN_PROGRESS, NCCL_SUCCESS, UNIQUE_ID_BYTES};
use std::ffi::OsString;
use std::io::Write;
use std::os::raw::{c_int, c_void};

/// NCCL reduces the 8-bit floats only on GPUs of compute capability 9.0 or newer: below it,
/// `ncclAllReduce`, `ncclReduce` and `ncclReduceScatter` of them return `ncclInvalidArgument`
/// (NCCL's `src/enqueue.cc`); nccl-tests drops the types there (`common.cu`), and so do we.
const FP8_REDUCE_CC: u32 = 90;

/// Bytes of a GPU of `total` bytes kept free for NCCL's own buffers, which NCCL 2.22 and newer
/// allocates at a communicator's first collective (connection and NVLS buffers): nccl-tests'
/// rule (`common.cu`), 1 GiB per 16 GiB of the GPU's memory, at most 4 GiB, plus 1 GiB.
pub fn nccl_reserve(total: u64) -> u64 {
    const GIB: u64 = 1 << 30;
    (total.div_ceil(16 * GIB) * GIB).min(4 * GIB) + GIB
}

/// The smallest device allocation, so no NCCL call ever sees a null pointer (count-0 calls at the
/// smallest sizes still pass their buffers).
const MIN_ALLOC: usize = 256;
/// Bytes of one rank's header record.
const RECORD: usize = 512;

/// A hidden variable for `ci/gpu-validate.sh`'s comparison: where set, the timed calls run on
/// the non-blocking world communicator, as before the blocking copy
/// ([`NcclBackend::blocking_copy`]).
pub const NON_BLOCKING_TIMING_VAR: &str = "COLL_BENCH_DEBUG_NCCL_NONBLOCKING_TIMING";

/// Whether [`NcclBackend::new`] makes the world's communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorldComm {
    /// Always: the collectives run on the world.
    Always,
    /// Only as the parent of `ncclCommSplit`, where the library has it: the backend runs in
    /// groups, which without it need no world communicator (one unique id per group).
    ForSplit,
}

/// What each rank sets up on its own (bootstrap steps 1 and 3).
struct Local {
    drv: &'static Driver,
    nccl: &'static Nccl,
    selection: gpu::Selection,
    name: String,
    bus_id: String,
    driver_version: (u32, u32),
    // Drop order: events and stream before the context.
    start: Event,
    end: Event,
    sync: Event,
    stream: Stream,
    ctx: Context,
}

/// This rank's GPU, found through libcuda (step 1).
struct Gpu {
    drv: &'static Driver,
    dev: cuda::CuDevice,
    selection: gpu::Selection,
    name: String,
    bus_id: String,
    uuid: gpu::Uuid,
    driver_version: (u32, u32),
    /// Compute capability as major·10 + minor (90: Hopper).
    cc: u32,
    /// The device's memory in bytes.
    total_mem: usize,
}

/// What step 1 finds through libcuda before a GPU is chosen.
struct Seen {
    drv: &'static Driver,
    visible: gpu::Visible,
    /// The UUID of every GPU this rank sees, by ordinal.
    uuids: Vec<gpu::Uuid>,
}

/// Step 1's libcuda part, first half: libcuda → `cuInit` → the GPUs this rank sees. The first
/// failure is the message (no libcuda, no GPU, a CUDA error).
fn see_gpus(world: &World, env: &dyn Fn(&str) -> Option<OsString>) -> std::result::Result<Seen, String> {
    let drv = cuda::load(env)?;
    drv.init(world.host())?;
    let count = drv.device_count()?;
    let cvd = env("CUDA_VISIBLE_DEVICES");
    let visible = gpu::parse_visible(cvd.as_deref().map(|v| v.to_str().unwrap_or("")));
    let uuids = (0..count).map(|o| drv.uuid(drv.device(o)?)).collect::<std::result::Result<_, _>>()?;
    Ok(Seen { drv, visible, uuids })
}

/// Step 1's libcuda part, second half: the GPU of this rank (`alike`: whether every rank of its
/// node sees the same GPUs, [`gpu::select`]). The first failure is the message (too few GPUs, a
/// CUDA error).
fn open_gpu(world: &World, seen: Seen, alike: bool) -> std::result::Result<Gpu, String> {
    let Seen { drv, visible, uuids } = seen;
    let selection = gpu::select(world.local_rank, world.local_size, &visible, uuids.len(), alike, world.host())?;
    let dev = drv.device(selection.ordinal)?;
    let name = drv.device_name(dev)?;
    let bus_id = drv.pci_bus_id(dev)?;
    let uuid = uuids[selection.ordinal];
    let driver_version = drv.version()?;
    let (major, minor) = drv.compute_capability(dev)?;
    let total_mem = drv.total_mem(dev)?;
    Ok(Gpu { drv, dev, selection, name, bus_id, uuid, driver_version, cc: major * 10 + minor, total_mem })
}

/// Step 3's local part: the GPU's context made current, a stream and the timing events.
fn open_local(g: Gpu, nccl: &'static Nccl) -> std::result::Result<Local, String> {
    let drv = g.drv;
    let ctx = Context::retain(drv, g.dev)?;
    let stream = Stream::new(drv)?;
    let (start, end, sync) = (Event::new(drv)?, Event::new(drv)?, Event::new(drv)?);
    let Gpu { selection, name, bus_id, driver_version, .. } = g;
    Ok(Local { drv, nccl, selection, name, bus_id, driver_version, start, end, sync, stream, ctx })
}

/// Step 2, where NCCL loaded on every rank: rank 0's unique id, broadcast over MPI and checked
/// byte for byte on every rank. Returns the id and a note for messages ("NCCL 2.32.3 at PATH
/// loaded on every rank; the unique id rank 0 made reached all 3 ranks intact"). Collective.
fn share_unique_id(world: &World, nccl: &'static Nccl) -> Result<(UniqueId, String)> {
    let id = if world.rank == 0 { unique_id(nccl) } else { Ok([0u8; UNIQUE_ID_BYTES]) };
    let id = world.agree(id.map_err(Error::setup))?;
    let bytes = world.broadcast_bytes(0, id.to_vec());
    let mut id = UniqueId { internal: [0u8; UNIQUE_ID_BYTES] };
    let received = bytes.len() == UNIQUE_ID_BYTES;
    if received {
        id.internal.copy_from_slice(&bytes);
    }
    let all = world.all_gather_same(&id.internal[..]);
    let differ: Vec<usize> =
        all.chunks(UNIQUE_ID_BYTES).enumerate().filter(|(_, c)| *c != &id.internal[..]).map(|(r, _)| r).collect();
    let checked = if !received {
        Err(format!("the NCCL unique id reached rank {} as {} bytes, not {UNIQUE_ID_BYTES}", world.rank, bytes.len()))
    } else if !differ.is_empty() {
        Err(format!(
            "the NCCL unique id rank 0 made is not the same on rank {} as on rank(s) {}",
            world.rank,
            crate::world::rank_list(&differ)
        ))
    } else if id.internal.iter().all(|b| *b == 0) {
        Err("ncclGetUniqueId returned an all-zero unique id".to_string())
    } else {
        Ok(())
    };
    world.agree(checked.map_err(Error::setup))?;
    let note = format!(
        "NCCL {} at {} loaded on every rank; the unique id rank 0 made reached all {} rank{} intact",
        nccl.version_string(),
        nccl.location,
        world.size,
        if world.size == 1 { "" } else { "s" }
    );
    Ok((id, note))
}

pub struct NcclBackend {
    /// `-R`: the registrations of `send` and `recv`, undone first of all (before the
    /// communicators they belong to and the memory they cover).
    registered: Vec<register::Registered>,
    /// Whether this backend's collectives run (false for a parent of groups, `step`'s, whose
    /// buffers only prove the fit: they are not registered).
    runs_calls: bool,
    /// The blocking communicator the timed calls run on, where the world's is non-blocking and
    /// the library can split ([`NcclBackend::blocking_copy`]); else they run on `comm`.
    timed: Option<Comm>,
    // Field order is drop order: the communicators first, then device memory, then the events,
    // the stream and the context. The MPI world outlives all of it (it is dropped after the
    // backend, in `app::main`). None: a parent made without one (`WorldComm::ForSplit` on a
    // library without ncclCommSplit), which runs no collective.
    comm: Option<Comm>,
    send: DeviceBuffer,
    recv: DeviceBuffer,
    /// One int32 for barrier.
    scratch: DeviceBuffer,
    start: Event,
    end: Event,
    sync: Event,
    /// GPU events between the samples of a timed run (grown as needed); destroyed, as the
    /// others, before the stream and the context they belong to.
    marks: Vec<Event>,
    stream: Stream,
    _ctx: Context,
    /// Host view for `write` and `read`.
    staging: HostBuffer,
    drv: &'static Driver,
    nccl: &'static Nccl,
    mpi_comm: mpi::ffi::MPI_Comm,
    rank: usize,
    nranks: usize,
    host: String,
    ordinal: usize,
    /// The lowest compute capability of the communicator's GPUs (major·10 + minor).
    min_cc: u32,
    /// Bytes of this GPU kept free for NCCL's own buffers ([`nccl_reserve`]).
    reserve: u64,
    blocking: bool,
    /// `-G`, `-m`, `-C`: how the timed calls are launched.
    launch: LaunchModes,
    /// The host's seconds per call spent launching the last timed run's calls (`-C`).
    launch_s: Option<f64>,
    details: Vec<String>,
    /// The group's MPI communicator when running in a group (`--groups`): `mpi_comm` for the
    /// barriers of `-z`. Dropped after the NCCL communicator (field order).
    group_mpi: Option<super::mpi::GroupComm>,
    /// How each point's algorithm is asked of NCCL ([`tuning`]): `Err` says why it cannot be;
    /// `Ok(Some)` on comm rank 0 once its probe is made (at the first point), `Ok(None)` before
    /// and on the other ranks.
    tuning: std::result::Result<Option<tuning::Probe>, String>,
}

/// In-place all-to-all and sendrecv, which NCCL does not support: one buffer as both sides, as
/// nccl-tests times them, and not checked.
fn one_buffer_in_place(call: &Call) -> bool {
    call.in_place && matches!(call.kind, Kind::AllToAll | Kind::SendRecv)
}

/// Everything one call needs, resolved before the timed loop. Device addresses.
#[derive(Clone, Copy)]
struct Prepared {
    kind: Kind,
    send: CuDevicePtr,
    recv: CuDevicePtr,
    count: usize,
    /// Bytes of one rank's block (grouped send/recv).
    block: u64,
    dtype: c_int,
    op: c_int,
    root: c_int,
    /// ping-pong's partner.
    partner: usize,
    /// sendrecv's ring neighbours: (to, from).
    ring: (usize, usize),
    /// nccl-tests' rotation (`common.cu`, `startColl`): call `i` of a run moves both buffers by
    /// `shift · (i mod steps)` bytes, `shift` the larger of the bytes the call sends and
    /// receives, as many steps as fit in the buffers (allocated for the largest size), so
    /// mid-size messages are not L2-hot from one call to the next, as an application's are not.
    shift: u64,
    steps: u64,
    /// All-to-all-v: this rank's count for each peer.
    peers: Option<&'static crate::collective::traffic::PeerCounts>,
    /// Bytes of one element.
    elem: u64,
}

impl Prepared {
    /// Call `i` of a run, rotated.
    fn at(&self, i: usize) -> Prepared {
        let by = self.shift * (i as u64 % self.steps);
        Prepared { send: self.send + by, recv: self.recv + by, ..*self }
    }
}

impl NcclBackend {
    /// `MPI_Barrier` on the world; a failure ends the job with one line (`crate::mpi_error`).
    fn mpi_barrier(&self, call: &Call) {
        // SAFETY: MPI is initialised (the World outlives the backend).
        let rc = unsafe { mpi::ffi::MPI_Barrier(self.mpi_comm) };
        crate::mpi_error::check(rc, "MPI_Barrier", self.rank, &self.host, || {
            format!("the barrier around a timed batch of {}", call.kind.name())
        });
    }

    /// Steps 1-4 of the bootstrap; collective. `runs_on`: where the collectives will run (the
    /// world, or the groups it is then split into), for the check of float avg.
    pub fn new(
        world: &World,
        opts: &Options,
        env: &dyn Fn(&str) -> Option<OsString>,
        runs_on: RunsOn,
        make: WorldComm,
    ) -> Result<NcclBackend> {
        if opts.implementation != crate::options::Implementation::Native {
            return Err(Error::usage(format!(
                "--impl: '{}' is not offered by the nccl backend; expected native",
                opts.implementation.name()
            )));
        }
        avg_is_checkable(&opts.ops, &opts.dtypes, opts.check, runs_on).map_err(Error::usage)?;
        // Step 1: both libraries tried before either is agreed on.
        // The GPUs each rank sees, so that each knows whether the ranks of its node share one set
        // (local rank r then takes ordinal r) or each has its own (then each takes its first).
        let seen = see_gpus(world, env);
        let mine: Vec<u8> = seen.as_ref().map_or(vec![], |s| s.uuids.iter().flatten().copied().collect());
        let sets: Vec<(usize, Vec<gpu::Uuid>)> = world
            .all_gather_bytes(&mine)
            .into_iter()
            .zip(&world.nodes)
            .map(|(b, n)| (*n, b.chunks_exact(16).map(|u| u.try_into().unwrap_or_default()).collect()))
            .collect();
        let gpu = seen.and_then(|s| open_gpu(world, s, gpu::sees_alike(world.nodes[world.rank], &sets)));
        let nccl = ffi::load(env);
        // One GPU per rank: where each rank sees GPUs of its own every rank takes ordinal 0, so the
        // UUIDs (gathered from every rank) tell whether two ranks of a node were given the same
        // (and the bus ids whether an NCCL that compares those would refuse two MIG instances).
        let held = gpu.as_ref().map_or(String::new(), |g| format!("{}\n{}", g.bus_id, gpu::uuid_text(&g.uuid)));
        let ranks: Vec<gpu::Held> = world
            .all_gather_bytes(held.as_bytes())
            .into_iter()
            .enumerate()
            .filter_map(|(r, c)| {
                let text = String::from_utf8_lossy(&c).into_owned();
                let (bus_id, uuid) = text.split_once('\n')?;
                let (node, host) = (world.nodes[r], world.hosts[r].clone());
                Some(gpu::Held { rank: r, node, host, uuid: uuid.to_string(), bus_id: bus_id.to_string() })
            })
            .collect();
        let gpu = match (gpu, gpu::shared_gpu(&ranks, nccl.as_ref().ok().map(|n| n.version))) {
            (Ok(_), Some(e)) => Err(e),
            (g, _) => g,
        };
        // Step 2: NCCL needs no driver for its unique id.
        let loaded = world.sum_u64(nccl.is_ok() as u64) as usize == world.size;
        let shared = match &nccl {
            Ok(n) if loaded => Some(share_unique_id(world, n)?),
            _ => None,
        };
        // Step 3.
        let gpu = world.agree(gpu.map_err(Error::setup)).map_err(|e| match (e, &shared) {
            (Error::Setup(m), Some((_, note))) => Error::setup(format!("{m} ({note})")),
            (e, _) => e,
        })?;
        let nccl = world.agree(nccl.map_err(Error::setup))?;
        let Some((id, _)) = shared else {
            return Err(Error::setup("NCCL loaded on every rank, yet its unique id was not shared"));
        };
        // The lowest compute capability and memory of any rank's GPU (fp8, memory headroom).
        let min_cc = world.all_gather(gpu.cc).into_iter().min().unwrap_or(0);
        let min_total = world.all_gather(gpu.total_mem as u64).into_iter().min().unwrap_or(0);
        let reserve = nccl_reserve(gpu.total_mem as u64);
        let local = world.agree(open_local(gpu, nccl).map_err(Error::setup))?;

        // Step 4: start joining (an immediate failure is agreed on at once, naming its rank), then
        // wait for the non-blocking init within -T's limit, so a peer that never joins cannot
        // hang the others.
        // (Skipped where only groups run and the library cannot split: see `WorldComm`.)
        let host = world.host().to_string();
        let limit_s = opts.timeout.setup_limit_s();
        let comm = if make == WorldComm::Always || local.nccl.comm_split().is_some() {
            let place = |e: String| format!("{e} (rank {} on {host}, {})", world.rank, local.selection.label());
            let started = Comm::start(local.nccl, world.size, id, world.rank).map_err(place);
            if let (Err(e), None) = (&started, local.nccl.non_blocking_init()) {
                // The others are inside NCCL's blocking init, which never ends without this rank:
                // no agreement can reach them. One line, and the launcher ends the job.
                init_failed(e);
            }
            let mut alarm = Alarm::open(world);
            let made = agreed_comm(world, started).and_then(|comm| {
                agreed_ready(world, Some(comm), limit_s, &place, "ncclCommInitRankConfig", Some(&mut alarm))?
                    .ok_or_else(|| Error::setup("NCCL returned no communicator"))
            });
            alarm.close(world);
            Some(made?)
        } else {
            None
        };

        let nvlinks = nvml::nvlinks(env, &local.bus_id).map_or_else(|why| why, |l| l.shown());
        let mut details = describe_all(world, &local, &nvlinks);
        details.push(format!(
            "GPU compute capability {}.{} (the lowest of any rank){}",
            min_cc / 10,
            min_cc % 10,
            if min_cc < FP8_REDUCE_CC { "; fp8 types not run (NCCL reduces them only from 9.0)" } else { "" }
        ));
        details.push(format!(
            "GPU memory: {} of {} kept free per communicator for NCCL's own buffers (as nccl-tests: 1 GiB per 16 GiB, at most 4 GiB, plus 1 GiB)",
            crate::size::amount(nccl_reserve(min_total)),
            crate::size::amount(min_total)
        ));
        let drv = local.drv;
        let mut backend = NcclBackend {
            registered: Vec::new(),
            runs_calls: make == WorldComm::Always,
            timed: None,
            comm,
            send: DeviceBuffer::empty(drv),
            recv: DeviceBuffer::empty(drv),
            scratch: DeviceBuffer::empty(drv),
            start: local.start,
            end: local.end,
            sync: local.sync,
            stream: local.stream,
            _ctx: local.ctx,
            staging: HostBuffer::empty(),
            drv,
            nccl: local.nccl,
            mpi_comm: world.raw_comm(),
            rank: world.rank,
            nranks: world.size,
            host,
            ordinal: local.selection.ordinal,
            min_cc,
            reserve,
            blocking: opts.blocking,
            launch: opts.launch,
            launch_s: None,
            details,
            group_mpi: None,
            marks: Vec::new(),
            tuning: match tuning::unavailable(
                local.nccl.version,
                local.nccl.reset_debug_init().is_some(),
                env("NCCL_DEBUG_FILE").as_ref(),
            ) {
                Some(why) => Err(why),
                None => Ok(None),
            },
        };
        if make == WorldComm::Always {
            if env(NON_BLOCKING_TIMING_VAR).is_some() {
                backend
                    .details
                    .push(format!("NCCL: {NON_BLOCKING_TIMING_VAR} is set: timed on the non-blocking communicator"));
            } else {
                backend.timed = backend.blocking_copy(world, limit_s)?;
            }
        }
        Ok(backend)
    }

    /// A blocking communicator of the world's ranks, split from the non-blocking one (so the
    /// split keeps `-T`'s deadline: on a non-blocking parent NCCL splits from a thread and we
    /// poll), for the timed calls: nccl-tests times on blocking communicators, and on a
    /// non-blocking one every call may answer `ncclInProgress` and, from NCCL 2.23, launches from
    /// a thread of its own. `None` where the world's is already blocking or the library cannot
    /// split (then the calls run on the world's; [`NcclBackend::timing_note`] says which).
    /// Collective.
    fn blocking_copy(&self, world: &World, limit_s: Option<f64>) -> Result<Option<Comm>> {
        if self.comm.as_ref().is_none_or(|c| c.blocking) || self.nccl.comm_split().is_none() {
            return Ok(None);
        }
        Ok(self.split(world, Some(0), world.rank as i32, limit_s)?.map(|g| g.into_comm()))
    }

    /// `Err` saying why the launch modes asked for cannot run here: `-R` needs NCCL's allocator
    /// and registration (2.19) or windows (2.27); a graph (`-G`) needs a
    /// driver that captures and a blocking communicator (on a non-blocking one NCCL 2.23 and
    /// newer launch from a thread of their own, outside the capture). Before anything is timed.
    fn can_launch(&self) -> std::result::Result<(), String> {
        self.can_launch_on(self.calls_comm().map(|c| c.blocking))
    }

    /// [`NcclBackend::can_launch`] for the timed calls on a communicator that is blocking or not
    /// (`None`: none).
    fn can_launch_on(&self, blocking: Option<bool>) -> std::result::Result<(), String> {
        if let Some(why) = self.nccl.cannot_register(self.launch.register) {
            return Err(why);
        }
        if self.launch.cuda_graph == 0 {
            return Ok(());
        }
        self.drv.can_graph().map_err(|e| format!("-G/--cuda-graph: {e}; expected -G 0"))?;
        match blocking {
            Some(false) => Err(format!(
                "-G/--cuda-graph: the timed calls run on a non-blocking communicator (NCCL {} has no ncclCommSplit for a blocking copy, or {NON_BLOCKING_TIMING_VAR} is set), whose launches NCCL makes from a thread of its own; expected NCCL 2.18 or newer, or -G 0",
                self.nccl.version_string()
            )),
            _ => Ok(()),
        }
    }

    /// The header's line on the communicator the timed calls run on and how they are timed.
    fn timing_note(&self) -> String {
        let on = match (&self.timed, self.comm.as_ref().map(|c| c.blocking)) {
            (Some(_), _) => "a blocking communicator split from the non-blocking init (ncclCommSplit)".to_string(),
            (None, Some(true)) => "blocking communicators".to_string(),
            (None, _) => "non-blocking communicators (each call may answer ncclInProgress and, from NCCL 2.23, launches from a thread of its own)".to_string(),
        };
        let how = if self.blocking {
            "-z 1: the host waits for each call, then an MPI barrier (as nccl-tests -z 1)"
        } else {
            "each timed run's calls launched back to back, one host wait at its end, a GPU event between samples, the buffers moved by one message from call to call within their allocation (as nccl-tests)"
        };
        let launch = if self.launch.any() { format!("; launch: {}", self.launch.describe()) } else { String::new() };
        format!("NCCL timing: on {on}; {how}{launch}")
    }

    /// An error once the sweep has begun: abort the communicators (so peers stop waiting on
    /// them), then end the job as a failed MPI call does (`mpi_error::fail`): while a watchdog
    /// runs, one line for the job from rank 0 and every rank leaves in order with exit 2 (under
    /// Hydra, a rank that just exits is taken for crashed: the others are killed and `mpiexec`
    /// may return 1 or 9); else this rank prints its line and ends, and the launcher ends the
    /// others.
    fn fatal(&self, msg: String) -> ! {
        if let Some(c) = &self.timed {
            // SAFETY: our comm; the process ends right after.
            unsafe { (self.nccl.api.comm_abort)(c.raw) };
        }
        if let Some(c) = &self.comm {
            // SAFETY: our comm; the process ends right after.
            unsafe { (self.nccl.api.comm_abort)(c.raw) };
        }
        crate::mpi_error::fail(&format!(
            "{msg} (rank {} on {}, GPU {}); aborting the job",
            self.rank, self.host, self.ordinal
        ))
    }

    /// Wait for `ev` (recorded on our stream), watching NCCL's asynchronous error.
    /// Yields on every pass, as nccl-tests' `testStreamSynchronize`: with one core per rank,
    /// NCCL's proxy thread must get it to make progress.
    fn wait(&self, ev: &Event) -> std::result::Result<(), String> {
        let mut spins = 0u64;
        loop {
            if ev.done()? {
                return Ok(());
            }
            spins += 1;
            if spins % 16 == 0 {
                if let Some(c) = self.calls_comm() {
                    c.async_error()?;
                }
            }
            std::thread::yield_now();
        }
    }

    /// Wait for everything queued on the stream so far.
    fn wait_stream(&self) -> std::result::Result<(), String> {
        self.sync.record(&self.stream)?;
        self.wait(&self.sync)
    }

    fn device(&self, buf: Buf) -> CuDevicePtr {
        match buf {
            Buf::Send => self.send.ptr,
            Buf::Recv => self.recv.ptr,
        }
    }

    fn prepare(&self, call: &Call) -> Result<Prepared> {
        self.supports(call.dtype)?;
        let l = call.layout;
        let elem = call.dtype.size() as u64;
        let at = |base: CuDevicePtr, elems: usize| base + elems as u64 * elem;
        let (send, recv) = match (call.kind, call.in_place) {
            (Kind::Barrier, _) => (self.scratch.ptr, self.scratch.ptr),
            (_, false) => (self.send.ptr, self.recv.ptr),
            (_, true) => (at(self.recv.ptr, l.in_place_input), at(self.recv.ptr, l.in_place_output)),
        };
        // In-place all-to-all and sendrecv: one buffer for both sides, as nccl-tests passes it
        // (`alltoall.cu`, `sendrecv.cu`); NCCL does not support them in place, so their results
        // are not checked ([`Backend::unchecked`]).
        let send = if one_buffer_in_place(call) { recv } else { send };
        let elem_b = elem as usize;
        let (send_touch, recv_touch, room) = match (call.kind, call.in_place) {
            (Kind::Barrier, _) => (0, 0, 0),
            (_, false) => (l.send_count * elem_b, l.recv_count * elem_b, self.send.len.min(self.recv.len)),
            (_, true) => (0, l.in_place_extent() * elem_b, self.recv.len),
        };
        let shift = send_touch.max(recv_touch) as u64;
        let steps = (room as u64).checked_div(shift).unwrap_or(1).max(1);
        Ok(Prepared {
            kind: call.kind,
            send,
            recv,
            count: if call.kind == Kind::Barrier { 1 } else { l.count },
            block: l.count as u64 * elem,
            dtype: if call.kind == Kind::Barrier { ffi::datatype(DType::Int32) } else { ffi::datatype(call.dtype) },
            op: ffi::reduce_op(call.op),
            root: call.root as c_int,
            partner: partner(self.rank, self.nranks),
            ring: ring_peers(self.rank, self.nranks),
            shift,
            steps,
            peers: l.peers,
            elem,
        })
    }

    /// `Ok` once NCCL has taken call `what` (result `r`): on a non-blocking communicator any call
    /// may answer `ncclInProgress`, and the next call may come only once `ncclCommGetAsyncError`
    /// no longer says so. (A wait that never ends is the watchdog's, armed around each batch.)
    fn settle(&self, r: c_int, what: &str) -> std::result::Result<(), String> {
        self.settle_on(self.raw(), r, what)
    }

    /// The communicator our calls run on (null in a parent made without one, which runs no
    /// collective): the blocking copy where there is one.
    fn raw(&self) -> NcclComm {
        self.calls_comm().map_or(std::ptr::null_mut(), |c| c.raw)
    }

    fn calls_comm(&self) -> Option<&Comm> {
        self.timed.as_ref().or(self.comm.as_ref())
    }

    /// The communicator groups are split from: the world's (non-blocking where the library
    /// can, so a split keeps `-T`'s deadline).
    fn parent_raw(&self) -> NcclComm {
        self.comm.as_ref().map_or(std::ptr::null_mut(), |c| c.raw)
    }

    /// As [`NcclBackend::settle`], for a call on communicator `c` (ours, or a group's).
    fn settle_on(&self, c: NcclComm, r: c_int, what: &str) -> std::result::Result<(), String> {
        if r != NCCL_IN_PROGRESS {
            return self.nccl.check(r, what, c);
        }
        loop {
            let mut state: c_int = NCCL_SUCCESS;
            // SAFETY: our comm, an out-pointer to a local.
            let q = unsafe { (self.nccl.api.comm_get_async_error)(c, &mut state) };
            self.nccl.check(q, "ncclCommGetAsyncError", c)?;
            match state {
                NCCL_SUCCESS => return Ok(()),
                NCCL_IN_PROGRESS => std::thread::yield_now(),
                _ => {
                    let text = self.nccl.error_text(state, c);
                    return Err(format!("NCCL reported an asynchronous error: {text} (after {what})"));
                }
            }
        }
    }

    /// Enqueue gather, scatter or all-to-all through the library's own call, where it has one.
    fn call_native(&self, p: &Prepared) -> Option<std::result::Result<(), String>> {
        let o = &self.nccl.optional;
        let (c, s) = (self.raw(), self.stream.raw);
        let ptr = |d: CuDevicePtr| d as usize as *mut c_void;
        let check = |r, what| self.settle(r, what);
        // SAFETY: as in `call_once`; the signatures are nccl.h's (checked by the ABI test).
        unsafe {
            match p.kind {
                Kind::Gather => {
                    o.gather.map(|f| check(f(ptr(p.send), ptr(p.recv), p.count, p.dtype, p.root, c, s), "ncclGather"))
                }
                Kind::Scatter => {
                    o.scatter.map(|f| check(f(ptr(p.send), ptr(p.recv), p.count, p.dtype, p.root, c, s), "ncclScatter"))
                }
                Kind::AllToAll => {
                    o.all_to_all.map(|f| check(f(ptr(p.send), ptr(p.recv), p.count, p.dtype, c, s), "ncclAlltoAll"))
                }
                _ => None,
            }
        }
    }

    /// Enqueue one call on the stream.
    fn call_once(&self, p: &Prepared) -> std::result::Result<(), String> {
        if let Some(r) = self.call_native(p) {
            return r;
        }
        let a = &self.nccl.api;
        let (c, s) = (self.raw(), self.stream.raw);
        let ptr = |d: CuDevicePtr| d as usize as *mut c_void;
        let me = self.rank as c_int;
        let check = |r, what| self.settle(r, what);
        // SAFETY: the addresses lie in our device buffers, which `allocate` sized for the largest
        // layout; the comm and stream are ours.
        unsafe {
            match p.kind {
                Kind::AllReduce | Kind::Barrier => {
                    check((a.all_reduce)(ptr(p.send), ptr(p.recv), p.count, p.dtype, p.op, c, s), "ncclAllReduce")
                }
                Kind::AllGather => {
                    check((a.all_gather)(ptr(p.send), ptr(p.recv), p.count, p.dtype, c, s), "ncclAllGather")
                }
                Kind::ReduceScatter => check(
                    (a.reduce_scatter)(ptr(p.send), ptr(p.recv), p.count, p.dtype, p.op, c, s),
                    "ncclReduceScatter",
                ),
                Kind::Broadcast => {
                    check((a.broadcast)(ptr(p.send), ptr(p.recv), p.count, p.dtype, p.root, c, s), "ncclBroadcast")
                }
                Kind::Reduce => {
                    check((a.reduce)(ptr(p.send), ptr(p.recv), p.count, p.dtype, p.op, p.root, c, s), "ncclReduce")
                }
                Kind::Gather => {
                    check((a.group_start)(), "ncclGroupStart")?;
                    check((a.send)(ptr(p.send), p.count, p.dtype, p.root, c, s), "ncclSend")?;
                    if me == p.root {
                        for r in 0..self.nranks {
                            let dst = ptr(p.recv + r as u64 * p.block);
                            check((a.recv)(dst, p.count, p.dtype, r as c_int, c, s), "ncclRecv")?;
                        }
                    }
                    check((a.group_end)(), "ncclGroupEnd")
                }
                Kind::Scatter => {
                    check((a.group_start)(), "ncclGroupStart")?;
                    if me == p.root {
                        for r in 0..self.nranks {
                            let src = ptr(p.send + r as u64 * p.block);
                            check((a.send)(src, p.count, p.dtype, r as c_int, c, s), "ncclSend")?;
                        }
                    }
                    check((a.recv)(ptr(p.recv), p.count, p.dtype, p.root, c, s), "ncclRecv")?;
                    check((a.group_end)(), "ncclGroupEnd")
                }
                Kind::AllToAll => {
                    check((a.group_start)(), "ncclGroupStart")?;
                    for r in 0..self.nranks {
                        let off = r as u64 * p.block;
                        check((a.send)(ptr(p.send + off), p.count, p.dtype, r as c_int, c, s), "ncclSend")?;
                        check((a.recv)(ptr(p.recv + off), p.count, p.dtype, r as c_int, c, s), "ncclRecv")?;
                    }
                    check((a.group_end)(), "ncclGroupEnd")
                }
                Kind::AllToAllV => {
                    // As nccl-tests' alltoallv.cu: one group, per peer a send then a receive,
                    // zero counts skipped, blocks contiguous in rank order.
                    let v = p.peers.expect("an all-to-all-v call carries its counts");
                    let elem = p.elem;
                    check((a.group_start)(), "ncclGroupStart")?;
                    for r in 0..self.nranks {
                        if v.send[r] > 0 {
                            let src = ptr(p.send + v.send_displs[r] as u64 * elem);
                            check((a.send)(src, v.send[r], p.dtype, r as c_int, c, s), "ncclSend")?;
                        }
                        if v.recv[r] > 0 {
                            let dst = ptr(p.recv + v.recv_displs[r] as u64 * elem);
                            check((a.recv)(dst, v.recv[r], p.dtype, r as c_int, c, s), "ncclRecv")?;
                        }
                    }
                    check((a.group_end)(), "ncclGroupEnd")
                }
                Kind::SendRecv => {
                    let (to, from) = (p.ring.0 as c_int, p.ring.1 as c_int);
                    check((a.group_start)(), "ncclGroupStart")?;
                    check((a.send)(ptr(p.send), p.count, p.dtype, to, c, s), "ncclSend")?;
                    check((a.recv)(ptr(p.recv), p.count, p.dtype, from, c, s), "ncclRecv")?;
                    check((a.group_end)(), "ncclGroupEnd")
                }
                Kind::PingPong => {
                    let peer = p.partner as c_int;
                    if p.partner == self.rank {
                        check((a.group_start)(), "ncclGroupStart")?;
                        check((a.send)(ptr(p.send), p.count, p.dtype, peer, c, s), "ncclSend")?;
                        check((a.recv)(ptr(p.recv), p.count, p.dtype, peer, c, s), "ncclRecv")?;
                        check((a.group_end)(), "ncclGroupEnd")
                    } else if self.rank % 2 == 0 {
                        check((a.send)(ptr(p.send), p.count, p.dtype, peer, c, s), "ncclSend")?;
                        check((a.recv)(ptr(p.recv), p.count, p.dtype, peer, c, s), "ncclRecv")
                    } else {
                        check((a.recv)(ptr(p.recv), p.count, p.dtype, peer, c, s), "ncclRecv")?;
                        check((a.send)(ptr(p.send), p.count, p.dtype, peer, c, s), "ncclSend")
                    }
                }
            }
        }
    }

    /// Undo `-R`'s registrations and free the buffers, once the work using them is done
    /// (`ncclMemFree`, unlike `cuMemFree`, does not wait for it).
    fn release_buffers(&mut self) {
        if self.launch.register > 0 {
            let _ = self.stream.synchronize();
        }
        self.registered.clear();
        self.send = DeviceBuffer::empty(self.drv);
        self.recv = DeviceBuffer::empty(self.drv);
        self.scratch = DeviceBuffer::empty(self.drv);
    }

    /// The send, receive and barrier buffers, if they fit beside NCCL's reserve: from
    /// `ncclMemAlloc` with `-R`, else `cuMemAlloc`.
    fn new_buffers(
        &self,
        send_len: usize,
        recv_len: usize,
        place: &str,
    ) -> Result<(DeviceBuffer, DeviceBuffer, DeviceBuffer)> {
        let drv = self.drv;
        let (free, total) = drv.mem_info().map_err(|e| Error::setup(format!("{e} on {place}")))?;
        let need = send_len + recv_len + MIN_ALLOC;
        if need as u64 + self.reserve > free as u64 {
            return Err(Error::setup(format!(
                "buffers of {} do not fit on {}: {} free of {}, {} of it kept for NCCL's own buffers; lower -e/--maxbytes",
                crate::size::amount(need as u64),
                place,
                crate::size::amount(free as u64),
                crate::size::amount(total as u64),
                crate::size::amount(self.reserve)
            )));
        }
        let nccl = self.nccl;
        let timed = |len| match self.launch.register {
            0 => DeviceBuffer::new(drv, len),
            _ => register::alloc(nccl, drv, len),
        };
        let at = |e: String| Error::setup(format!("{e} on {place}"));
        let send = timed(send_len).map_err(at)?;
        let recv = timed(recv_len).map_err(at)?;
        let scratch = DeviceBuffer::new(drv, MIN_ALLOC).map_err(at)?;
        Ok((send, recv, scratch))
    }

    /// Whether `ok` holds on every rank of this backend's MPI communicator (the group's in a
    /// group). Collective; a failed MPI call ends the job with one line.
    fn all_ok(&self, ok: bool) -> bool {
        let mine: i32 = ok.into();
        let mut all: i32 = 0;
        // SAFETY: MPI is initialised (the World outlives the backend); pointers to locals.
        let rc = unsafe {
            mpi::ffi::MPI_Allreduce(
                (&mine as *const i32).cast(),
                (&mut all as *mut i32).cast(),
                1,
                mpi::ffi::RSMPI_INT32_T,
                mpi::ffi::RSMPI_MIN,
                self.mpi_comm,
            )
        };
        crate::mpi_error::check(rc, "MPI_Allreduce", self.rank, &self.host, || {
            "the agreement on the registered buffers of -R".to_string()
        });
        all == 1
    }

    /// Host staging of at least `len` bytes.
    fn staging(&mut self, len: usize) -> Result<()> {
        if self.staging.len() < len {
            self.staging = HostBuffer::empty();
            self.staging = HostBuffer::new(len, 0)?;
        }
        Ok(())
    }

    /// Copy the first `len` bytes of a device buffer into the staging buffer.
    fn fetch(&mut self, buf: Buf, len: usize) -> std::result::Result<(), String> {
        let dev = self.device(buf);
        self.stream.copy_to_host(&mut self.staging.bytes_mut()[..len], dev)?;
        self.wait_stream()
    }
}

/// The communicators the collectives run on, for [`avg_is_checkable`]: the world (its size), or
/// the groups of `--groups` (each group's size; a layout's groups all have the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunsOn<'a> {
    World(usize),
    Groups(&'a [usize]),
}

/// NCCL's avg of a float type multiplies every input by 1/n before summing, n the ranks of the
/// communicator it runs on (a group's with `--groups`, not the world's), so where n is not a
/// power of two the result is rounded, differs from the exact sum / n by an ulp (about 4 in 10
/// elements of our patterns on 3 ranks) and depends on NCCL's summation order: the exact check
/// cannot judge it. Integer avg (sum, then divide) is exact everywhere.
///
/// The narrow floats (float16, bfloat16, fp8) are judged within a tolerance instead
/// ([`crate::verify`]), on any rank count, where their exact results stay finite in the type.
pub fn avg_is_checkable(ops: &[Op], dtypes: &[DType], check: bool, on: RunsOn) -> std::result::Result<(), String> {
    if check {
        let counts: Vec<usize> = match on {
            RunsOn::World(n) => vec![n],
            RunsOn::Groups(sizes) => sizes.to_vec(),
        };
        for d in dtypes.iter().filter(|d| d.narrow().is_some()) {
            for op in ops {
                for &n in &counts {
                    crate::verify::narrow_fits(*d, *op, n)?;
                }
            }
        }
    }
    let exact_float = |d: &&DType| d.is_float() && d.narrow().is_none();
    let Some(d) = dtypes.iter().find(exact_float).filter(|_| check && ops.contains(&Op::Avg)) else {
        return Ok(());
    };
    let (n, on, instead) = match on {
        RunsOn::World(n) => (n, format!("on {n} ranks"), "a power-of-two rank count"),
        RunsOn::Groups(sizes) => match sizes.iter().find(|n| !n.is_power_of_two()) {
            Some(&n) => (n, format!("in groups of {n} ranks (--groups)"), "groups of a power-of-two size"),
            None => return Ok(()),
        },
    };
    if n.is_power_of_two() {
        return Ok(());
    }
    Err(format!(
        "-o/--op: avg of {d} {on} cannot be checked exactly (NCCL multiplies each input by 1/{n} before summing, which rounds); use {instead}, integer types, other ops, or -c 0"
    ))
}

/// This rank's blocking init failed (`e` names the rank): one line, and the job ends (the
/// launcher ends the other ranks, which wait inside NCCL for this one and cannot be reached).
fn init_failed(e: &str) -> ! {
    crate::error::ending();
    let line = format!("coll-bench: error: {e}; the other ranks wait inside NCCL's blocking init: aborting the job\n");
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.flush();
    // SAFETY: ends the process without unwinding through MPI or NCCL state.
    unsafe { libc::_exit(exit::ERROR) }
}

/// Step 4: the header lines, the same on every rank. Collective.
/// `nvlinks`: this rank's GPU's NVLinks as NVML states them ([`nvml`]), or why it does not.
fn describe_all(world: &World, local: &Local, nvlinks: &str) -> Vec<String> {
    let link = gpu::pcie_link(std::path::Path::new("/sys"), &local.bus_id)
        .map_or_else(|| "PCIe link not stated".to_string(), |l| l.shown());
    let mine = format!(
        "rank {} on {}: {} {} (PCI {}; {link}; {nvlinks})",
        world.rank,
        world.host(),
        local.selection.label(),
        local.name,
        local.bus_id
    );
    let mut rec = [0u8; RECORD];
    let n = mine.len().min(RECORD - 1);
    rec[..n].copy_from_slice(&mine.as_bytes()[..n]);
    let all = world.all_gather_same(&rec[..]);
    let mut lines = vec![
        format!(
            "NCCL {} ({}), CUDA driver {}.{} ({})",
            local.nccl.version_string(),
            local.nccl.location,
            local.driver_version.0,
            local.driver_version.1,
            local.drv.location
        ),
        format!(
            "NCCL: {}; init {}",
            local.nccl.collectives_note(),
            if local.nccl.non_blocking_init().is_some() {
                "non-blocking (ncclCommInitRankConfig)"
            } else {
                "blocking (ncclCommInitRank)"
            }
        ),
    ];
    lines.extend(all.chunks(RECORD).map(|c| {
        let end = c.iter().position(|b| *b == 0).unwrap_or(c.len());
        String::from_utf8_lossy(&c[..end]).into_owned()
    }));
    lines
}

impl NcclBackend {
    /// Run in the group of `color` from now on (`--groups`): the group's communicator
    /// ([`NcclBackend::split`], keyed by world rank) replaces the world's, this rank's rank and
    /// the rank count become the group's, and `-z`'s barriers run on the group's MPI
    /// communicator. Collective over the world; every rank is in a group.
    pub fn into_group(self, world: &World, color: u32, limit_s: Option<f64>) -> Result<NcclBackend> {
        let group = self.split(world, Some(color), world.rank as i32, limit_s)?;
        self.in_group(world, color, group)
    }

    /// As [`NcclBackend::into_group`], leaving this backend (the parent) as it is: the group's
    /// communicator split from this one's (or made from the group's own unique id), on a new
    /// backend of its own (stream, events, buffers) on the same GPU, dropped before the parent.
    /// Collective over the world.
    pub fn group_from(
        &self,
        world: &World,
        opts: &crate::options::Options,
        color: u32,
        limit_s: Option<f64>,
    ) -> Result<NcclBackend> {
        let child = world.agree(self.sibling(opts).map_err(Error::setup))?;
        let group = self.split(world, Some(color), world.rank as i32, limit_s)?;
        child.in_group(world, color, group)
    }

    /// A backend on this one's GPU without a communicator: the context retained again, its own
    /// stream, timing events and (empty) buffers.
    fn sibling(&self, opts: &crate::options::Options) -> std::result::Result<NcclBackend, String> {
        let drv = self.drv;
        let ctx = self._ctx.again()?;
        let stream = cuda::Stream::new(drv)?;
        let (start, end, sync) = (cuda::Event::new(drv)?, cuda::Event::new(drv)?, cuda::Event::new(drv)?);
        Ok(NcclBackend {
            registered: Vec::new(),
            runs_calls: true,
            timed: None,
            comm: None,
            send: DeviceBuffer::empty(drv),
            recv: DeviceBuffer::empty(drv),
            scratch: DeviceBuffer::empty(drv),
            start,
            end,
            sync,
            stream,
            _ctx: ctx,
            staging: crate::backend::HostBuffer::empty(),
            drv,
            nccl: self.nccl,
            mpi_comm: self.mpi_comm,
            rank: self.rank,
            nranks: self.nranks,
            host: self.host.clone(),
            ordinal: self.ordinal,
            // The world's lowest capability (as nccl-tests, which takes it over every rank).
            min_cc: self.min_cc,
            // The group's communicator has buffers of its own (splitShare = 0).
            reserve: self.reserve,
            blocking: opts.blocking,
            launch: opts.launch,
            launch_s: None,
            details: self.details.clone(),
            group_mpi: None,
            marks: Vec::new(),
            // The group's own probe, made at its first point (on the group's rank 0).
            tuning: self.tuning.as_ref().map(|_| None).map_err(String::clone),
        })
    }

    /// Run in `group` (this rank's, of colour `color`) from now on: its communicator replaces
    /// ours, this rank's rank and the rank count become the group's, and `-z`'s barriers run on
    /// the group's MPI communicator. Collective over the world.
    fn in_group(mut self, world: &World, color: u32, group: Option<split::Group>) -> Result<NcclBackend> {
        let group = world.agree(group.ok_or_else(|| Error::setup("NCCL split returned no group communicator")))?;
        let mpi = crate::backend::mpi::GroupComm::split(world, color, world.rank);
        self.details.push(format!("{}", self.split_via()));
        let split::Group { comm, rank, size, .. } = group;
        self.timed = None;
        self.runs_calls = true;
        self.comm = Some(comm);
        self.rank = rank;
        self.nranks = size;
        self.mpi_comm = mpi.raw();
        self.group_mpi = Some(mpi);
        Ok(self)
    }
}

impl NcclBackend {
    /// How [`NcclBackend::split`] makes group communicators with this library.
    pub fn split_via(&self) -> split::Via {
        split::via(self.nccl)
    }

    /// This rank's communicator in the group of `color` (`None`: in no group, and no
    /// communicator), ordered by `key` then world rank ([`split::split`], from this backend's
    /// communicator). Collective over the world.
    pub fn split(
        &self,
        world: &World,
        color: Option<u32>,
        key: i32,
        limit_s: Option<f64>,
    ) -> Result<Option<split::Group>> {
        let place = |e: String| format!("{e} (rank {} on {}, GPU {})", world.rank, self.host, self.ordinal);
        split::split(self.nccl, self.parent_raw(), world, &place, (color, key), limit_s)
    }
}

impl Drop for NcclBackend {
    fn drop(&mut self) {
        // Let queued work finish before the registrations, the communicator and the buffers go
        // (in that order: the fields' order).
        let _ = self.stream.synchronize();
    }
}

impl Backend for NcclBackend {
    fn name(&self) -> &'static str {
        "nccl"
    }

    fn unchecked(&self, call: &Call) -> Option<&'static str> {
        one_buffer_in_place(call).then_some(
            "NCCL does not support all-to-all and sendrecv in place: timed with one buffer as both sides, as nccl-tests, and not checked (N/A)",
        )
    }

    fn convention(&self) -> Convention {
        Convention::Nccl
    }

    fn describe(&self) -> Vec<String> {
        let mut lines = self.details.clone();
        lines.push(self.timing_note());
        lines.push("NCCL in place: all-to-all and sendrecv are timed with one buffer as both sides, as nccl-tests times them, and not checked (N/A): NCCL does not support them in place".to_string());
        lines.push(match &self.tuning {
            Ok(_) => "NCCL algorithm: its tuning line (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=TUNING, to a file of rank 0's) for one more call after each point's timed calls, which run under your settings (ncclResetDebugInit)".to_string(),
            Err(why) => format!("NCCL algorithm: not reported: {why}"),
        });
        lines
    }

    /// One more call after the timed ones, with NCCL's tuning line on (comm rank 0 arms the
    /// probe; every rank makes the call): the algorithm and protocol NCCL planned for it.
    fn algorithm(&mut self, call: &Call) -> (String, &'static str) {
        let unknown = || (crate::record::UNKNOWN_ALGORITHM.to_string(), "not reported");
        let (Some(function), Ok(_)) = (tuning::function(call.kind), &self.tuning) else {
            return unknown();
        };
        let Ok(p) = self.prepare(call) else { return unknown() };
        if let (0, Ok(slot @ None), Some(reset)) = (self.rank, &mut self.tuning, self.nccl.reset_debug_init()) {
            // Where no directory can be made, this rank still makes the call below.
            *slot = tuning::Probe::new(reset).ok();
        }
        // Held here for the call (it needs `self`), then put back.
        let mut probe = match &mut self.tuning {
            Ok(slot) if self.rank == 0 => slot.take(),
            _ => None,
        };
        if let Some(probe) = probe.as_mut() {
            probe.arm();
        }
        let done = self.call_once(&p).and_then(|()| self.wait_stream());
        let log = probe.as_mut().map(|probe| probe.disarm()).unwrap_or_default();
        if let Ok(slot) = &mut self.tuning {
            *slot = probe;
        }
        if let Err(e) = done {
            self.fatal(format!("{e} (in the call after the timed ones that asks NCCL its algorithm)"));
        }
        // The bytes NCCL prints: the call's count times its type's size (a barrier: one int32).
        let bytes = if call.kind == Kind::Barrier { 4 } else { p.block };
        match tuning::read(&log, function, bytes) {
            Some(name) => (name, "library log"),
            None => unknown(),
        }
    }

    fn supports(&self, dtype: DType) -> Result<()> {
        let v = self.nccl.version;
        match dtype {
            DType::Fp8E4m3 | DType::Fp8E5m2 if (v.0, v.1) < ffi::FP8_VERSION => Err(Error::usage(format!(
                "-d/--datatype: {dtype} needs NCCL {}.{} or newer (this is {}); expected int8, uint8, int32, uint32, int64, uint64, half, bfloat16, float32 or float64",
                ffi::FP8_VERSION.0,
                ffi::FP8_VERSION.1,
                self.nccl.version_string()
            ))),
            DType::Fp8E4m3 | DType::Fp8E5m2 if self.min_cc < FP8_REDUCE_CC => Err(Error::usage(format!(
                "-d/--datatype: {dtype} needs GPUs of compute capability 9.0 or newer (NCCL refuses 8-bit float reductions below it; the lowest here is {}.{}); expected int8, uint8, int32, uint32, int64, uint64, half, bfloat16, float32 or float64",
                self.min_cc / 10,
                self.min_cc % 10
            ))),
            _ => Ok(()),
        }
    }

    fn buffer_limit(&mut self) -> Result<Option<(u64, String)>> {
        // Our own buffers go first (allocate frees them too), so free memory is measured without.
        self.release_buffers();
        let place = format!("GPU {} of rank {} on {}", self.ordinal, self.rank, self.host);
        let (free, _) = self.drv.mem_info().map_err(|e| Error::setup(format!("{e} on {place}")))?;
        let limit = (free as u64).saturating_sub(self.reserve + 3 * MIN_ALLOC as u64);
        Ok(Some((limit, format!("{} kept free for NCCL's own buffers", crate::size::amount(self.reserve)))))
    }

    fn allocate(&mut self, send_bytes: usize, recv_bytes: usize) -> Result<()> {
        // Free first so the peak never holds old and new buffers together.
        self.release_buffers();
        let (send_len, recv_len) = (send_bytes.max(MIN_ALLOC), recv_bytes.max(MIN_ALLOC));
        let place = format!("GPU {} of rank {} on {}", self.ordinal, self.rank, self.host);
        let made = self.new_buffers(send_len, recv_len, &place);
        let level = self.launch.register;
        // Registering a window is collective: every rank goes on only if every rank has its
        // buffers (the caller's agreement then carries the failing rank's error to all).
        if level > 0 && !self.all_ok(made.is_ok()) {
            return made.map(|_| ());
        }
        (self.send, self.recv, self.scratch) = made?;
        if level > 0 && self.runs_calls {
            let (nccl, comm) = (self.nccl, self.raw());
            let settle = |r: c_int, what: &str| self.settle(r, what);
            let regs = [&self.send, &self.recv]
                .into_iter()
                .map(|b| register::register(nccl, comm, b, level, &settle))
                .collect::<std::result::Result<Vec<_>, String>>()
                .map_err(|e| Error::setup(format!("-R/--register {level}: {e} on {place}")))?;
            let made_none = regs.iter().any(|r| r.is_null());
            self.registered = regs;
            if level == 2 && !self.all_ok(!made_none) {
                return Err(Error::usage(format!(
                    "-R/--register 2: NCCL {} made no symmetric window on some rank (a communicator without symmetric-memory support: NVLink peer access between all its GPUs and cuMem are needed); expected -R 1 or 0",
                    self.nccl.version_string()
                )));
            }
        }
        let filled = self
            .stream
            .memset(self.send.ptr, 0, send_len)
            .and_then(|_| self.stream.memset(self.recv.ptr, SENTINEL, recv_len))
            .and_then(|_| self.stream.memset(self.scratch.ptr, 0, MIN_ALLOC))
            .and_then(|_| self.wait_stream());
        filled.map_err(|e| Error::setup(format!("{e} on {place}")))
    }

    fn write(&mut self, buf: Buf, len: usize, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        self.staging(len)?;
        if let Err(e) = self.fetch(buf, len) {
            self.fatal(e);
        }
        f(&mut self.staging.bytes_mut()[..len]);
        let dev = self.device(buf);
        if let Err(e) = self.stream.copy_to_device(dev, &self.staging.bytes()[..len]).and_then(|_| self.wait_stream()) {
            self.fatal(e);
        }
        Ok(())
    }

    fn read(&mut self, buf: Buf, len: usize, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        self.staging(len)?;
        if let Err(e) = self.fetch(buf, len) {
            self.fatal(e);
        }
        f(&self.staging.bytes()[..len]);
        Ok(())
    }

    fn groups_via(&self) -> String {
        self.split_via().to_string()
    }

    fn group(&self, world: &World, opts: &Options, color: u32, sizes: &[usize]) -> Option<Result<Box<dyn Backend>>> {
        let made = avg_is_checkable(&opts.ops, &opts.dtypes, opts.check, RunsOn::Groups(sizes))
            .map_err(Error::usage)
            .and_then(|()| self.group_from(world, opts, color, opts.timeout.setup_limit_s()))
            .and_then(|b| world.agree(b.can_launch().map_err(Error::setup)).map(|()| b));
        Some(made.map(|b| Box::new(b) as Box<dyn Backend>))
    }

    /// `ncclSend` to `to` and `ncclRecv` from `from` of `bytes` as uint8, in one
    /// `ncclGroupStart`/`ncclGroupEnd` (so neighbours that both send and receive cannot
    /// deadlock, as nccl-tests' sendrecv), timed by events on our stream.
    fn exchange(&mut self, to: Option<usize>, from: Option<usize>, bytes: usize) -> Result<f64> {
        assert!(bytes <= self.send.len && bytes <= self.recv.len, "exchange of {bytes} B beyond the buffers");
        let timed = (|| -> std::result::Result<f64, String> {
            let a = &self.nccl.api;
            let (c, s) = (self.raw(), self.stream.raw);
            let ptr = |d: CuDevicePtr| d as usize as *mut c_void;
            let dtype = ffi::datatype(DType::Uint8);
            self.start.record(&self.stream)?;
            // SAFETY: `bytes` lie in our device buffers (checked above); the comm and stream are
            // ours; the peers are ranks of our communicator.
            unsafe {
                self.settle((a.group_start)(), "ncclGroupStart")?;
                if let Some(to) = to {
                    self.settle((a.send)(ptr(self.send.ptr), bytes, dtype, to as c_int, c, s), "ncclSend")?;
                }
                if let Some(from) = from {
                    self.settle((a.recv)(ptr(self.recv.ptr), bytes, dtype, from as c_int, c, s), "ncclRecv")?;
                }
                self.settle((a.group_end)(), "ncclGroupEnd")?;
            }
            self.end.record(&self.stream)?;
            self.wait(&self.end)?;
            self.end.seconds_since(&self.start)
        })();
        match timed {
            Ok(t) => Ok(t),
            Err(e) => self.fatal(format!("{e} (in a neighbour exchange of {bytes} B, to {to:?}, from {from:?})")),
        }
    }

    fn run(&mut self, call: &Call, iters: usize, batch: usize, samples: &mut Vec<f64>) -> Result<()> {
        // The barriers around the timed calls go through MPI: a failure ends the job.
        let p = self.prepare(call)?;
        let batch = batch.max(1);
        let agg = self.launch.agg_iters.max(1) as usize;
        let launches = self.launch.cuda_graph as usize;
        // Ping-pong pairs time a round trip; report one way. A sample is `batch` iterations
        // (each `agg` calls in one NCCL group), replayed `launches` times from a graph.
        let round_trip = if call.kind == Kind::PingPong && p.partner != self.rank { 2.0 } else { 1.0 };
        let scale = 1.0 / (batch as f64 * round_trip * launches.max(1) as f64);
        let n = iters / batch;
        samples.clear();
        samples.reserve(n);
        // nccl-tests' timing loop (`common.cu`, `BenchTime`): every call launched back to back,
        // the host waits once at the end (a wait per sample would add each launch's cost instead
        // of overlapping it); a GPU event between samples splits the run into them. -z 1: the
        // host waits for each iteration. -m: an iteration is `agg` calls in one group. -G: one
        // sample's batch captured once into a graph, then launched `launches` times per sample.
        while self.marks.len() < n + 1 {
            match Event::new(self.drv) {
                Ok(e) => self.marks.push(e),
                Err(e) => self.fatal(e),
            }
        }
        let iteration = |me: &Self, i: usize| -> std::result::Result<(), String> {
            let api = &me.nccl.api;
            if agg > 1 {
                // SAFETY: plain call into NCCL.
                me.settle(unsafe { (api.group_start)() }, "ncclGroupStart")?;
            }
            for a in 0..agg {
                me.call_once(&p.at(i * agg + a))?;
            }
            if agg > 1 {
                // SAFETY: plain call into NCCL; the group started above.
                me.settle(unsafe { (api.group_end)() }, "ncclGroupEnd")?;
            }
            Ok(())
        };
        let graph = match launches {
            0 => None,
            _ => match Graph::capture(&self.stream, &mut || (0..batch).try_for_each(|b| iteration(self, b))) {
                Ok(g) => Some(g),
                Err(e) => self.fatal(format!("capturing a CUDA graph (-G): {e}")),
            },
        };
        self.mpi_barrier(call);
        let timed = (|| -> std::result::Result<f64, String> {
            let t0 = std::time::Instant::now();
            self.marks[0].record(&self.stream)?;
            for s in 0..n {
                match &graph {
                    Some(g) => (0..launches).try_for_each(|_| g.launch(&self.stream))?,
                    None => {
                        for b in 0..batch {
                            iteration(self, s * batch + b)?;
                            if self.blocking {
                                self.wait_stream()?;
                                self.mpi_barrier(call);
                            }
                        }
                    }
                }
                self.marks[s + 1].record(&self.stream)?;
            }
            let launched = t0.elapsed().as_secs_f64();
            self.wait(&self.marks[n])?;
            for s in 0..n {
                samples.push(self.marks[s + 1].seconds_since(&self.marks[s])? * scale);
            }
            Ok(launched)
        })();
        drop(graph);
        match timed {
            Ok(launched) => {
                let calls = (n * batch * agg * launches.max(1)).max(1);
                self.launch_s = Some(launched / calls as f64);
            }
            Err(e) => self.fatal(e),
        }
        Ok(())
    }

    fn launch_seconds(&self) -> Option<f64> {
        self.launch_s
    }

    fn run_plain(&mut self, call: &Call, samples: &mut Vec<f64>) -> Result<()> {
        let modes = std::mem::take(&mut self.launch);
        let r = self.run(call, 1, 1, samples);
        self.launch = modes;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_avg_is_checked_only_on_a_power_of_two_rank_count() {
        let floats = [DType::Int32, DType::Float32];
        for n in [1, 2, 4, 8, 16] {
            assert_eq!(avg_is_checkable(&Op::ALL, &floats, true, RunsOn::World(n)), Ok(()));
        }
        let e = avg_is_checkable(&[Op::Sum, Op::Avg], &floats, true, RunsOn::World(3)).unwrap_err();
        assert_eq!(
            e,
            "-o/--op: avg of float on 3 ranks cannot be checked exactly (NCCL multiplies each input by 1/3 before summing, which rounds); use a power-of-two rank count, integer types, other ops, or -c 0"
        );
        assert!(avg_is_checkable(&[Op::Avg], &[DType::Float64], true, RunsOn::World(6)).is_err());
        // Integers, other ops, or no check: fine on any count.
        assert_eq!(avg_is_checkable(&[Op::Avg], &[DType::Int8, DType::Uint64], true, RunsOn::World(3)), Ok(()));
        assert_eq!(avg_is_checkable(&[Op::Sum, Op::Max], &floats, true, RunsOn::World(3)), Ok(()));
        assert_eq!(avg_is_checkable(&[Op::Avg], &floats, false, RunsOn::World(3)), Ok(()));
    }

    /// In groups the count is the group's, which NCCL divides by: groups of 2 on a world of 6
    /// (or 2 of 4, 4 of 12) are exact; groups of 3 on a world of 6 are not, and the line says 3.
    #[test]
    fn float_avg_in_groups_follows_the_group_size_not_the_world_size() {
        let floats = [DType::Float32];
        for sizes in [&[2, 2, 2][..], &[2, 2], &[4, 4, 4], &[1, 1, 1]] {
            assert_eq!(avg_is_checkable(&[Op::Avg], &floats, true, RunsOn::Groups(sizes)), Ok(()), "{sizes:?}");
        }
        let e = avg_is_checkable(&[Op::Avg], &[DType::Float64], true, RunsOn::Groups(&[3, 3])).unwrap_err();
        assert_eq!(
            e,
            "-o/--op: avg of double in groups of 3 ranks (--groups) cannot be checked exactly (NCCL multiplies each input by 1/3 before summing, which rounds); use groups of a power-of-two size, integer types, other ops, or -c 0"
        );
        assert_eq!(avg_is_checkable(&[Op::Avg], &[DType::Int32], true, RunsOn::Groups(&[3, 3])), Ok(()));
        assert_eq!(avg_is_checkable(&[Op::Avg], &floats, false, RunsOn::Groups(&[3, 3])), Ok(()));
    }
}
