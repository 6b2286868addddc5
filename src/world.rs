//! The MPI world: initialisation, the node split, hosts, agreement on success or failure across
//! ranks, and the reductions of timings. Everything here is collective: every rank calls the same
//! functions in the same order.
//!
//! MPI errors return to us here (`MPI_ERRORS_RETURN` on the world and the node split) and every
//! call's code is checked: a failure ends the job with one line ([`crate::mpi_error`]). So the
//! collectives below call the library through `mpi::ffi`, not rsmpi's safe layer, which
//! discards return codes.

use crate::error::{Error, Result};
use crate::launch::View;
use crate::mpi_error;
use crate::options::Aggregation;
use mpi::environment::Universe;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once MPI is initialised, so the panic hook knows whether it can abort the job.
pub static MPI_UP: AtomicBool = AtomicBool::new(false);

const NAME_LEN: usize = 256;

/// This process's place in the job.
pub struct World {
    // Field order is drop order: communicators are freed before the universe finalises MPI.
    /// The node split (`MPI_Comm_split_type`, shared memory); only its rank, size and lowest rank
    /// are used, but the communicator must live until it is freed, before MPI_Finalize.
    #[allow(dead_code)]
    node: OwnedComm,
    world: SimpleCommunicator,
    universe: Universe,
    pub rank: usize,
    pub size: usize,
    pub local_rank: usize,
    pub local_size: usize,
    /// Host name of every rank, indexed by rank.
    pub hosts: Vec<String>,
    /// The node of every rank, indexed by rank: the lowest world rank of its node split. Two
    /// ranks share a node exactly when these are equal; processor names can repeat across hosts
    /// (containers, cloned images), so they cannot tell.
    pub nodes: Vec<usize>,
    pub library_version: String,
}

/// Where each rank's bytes lie in one buffer of the byte-gathers and -scatters: the counts and
/// displacements MPI's v-collectives take.
struct Packing {
    counts: Vec<c_int>,
    displs: Vec<c_int>,
}

impl Packing {
    fn of(counts: Vec<c_int>) -> Packing {
        let displs = counts.iter().scan(0, |at, c| Some(std::mem::replace(at, *at + c))).collect();
        Packing { counts, displs }
    }

    /// Room for every rank's bytes, and one byte more: never empty (`World::mpi_ptr`).
    fn buffer(&self) -> Vec<u8> {
        vec![0u8; self.counts.iter().map(|c| *c as usize).sum::<usize>() + 1]
    }

    /// Each rank's bytes out of a received buffer, indexed by rank.
    fn split(&self, all: &[u8]) -> Vec<Vec<u8>> {
        self.counts.iter().zip(&self.displs).map(|(c, d)| all[*d as usize..(*d + *c) as usize].to_vec()).collect()
    }
}

impl World {
    /// Initialise MPI and learn the world: ranks, node split, hosts.
    pub fn init() -> Result<World> {
        let universe = mpi::initialize()
            .ok_or_else(|| Error::setup("MPI could not be initialised (was it initialised already?)"))?;
        MPI_UP.store(true, Ordering::SeqCst);
        let world = universe.world();
        // (Errors are still fatal in these three: MPI's default until the handler is set.)
        let rank = world.rank() as usize;
        let size = world.size() as usize;
        let name = mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into());
        let during = |what: &str| format!("the start-up ({what})");
        let rc = mpi_error::return_errors(world.as_raw());
        mpi_error::check(rc, "MPI_Comm_set_errhandler", rank, &name, || during("MPI_ERRORS_RETURN on the world"));
        let node = OwnedComm::split_shared(&world, rank, &name);
        let (mut local_rank, mut local_size) = (0 as c_int, 0 as c_int);
        // SAFETY: a live communicator; out-parameters are locals.
        let rc = unsafe { ffi::MPI_Comm_rank(node.0, &mut local_rank) };
        mpi_error::check(rc, "MPI_Comm_rank", rank, &name, || during("the node split"));
        // SAFETY: as above.
        let rc = unsafe { ffi::MPI_Comm_size(node.0, &mut local_size) };
        mpi_error::check(rc, "MPI_Comm_size", rank, &name, || during("the node split"));
        let (local_rank, local_size) = (local_rank as usize, local_size as usize);
        let (me, mut lowest) = (rank as u64, 0u64);
        // SAFETY: one u64 in and out, at locals.
        let rc = unsafe {
            ffi::MPI_Allreduce(
                (&me as *const u64).cast(),
                (&mut lowest as *mut u64).cast(),
                1,
                ffi::RSMPI_UINT64_T,
                ffi::RSMPI_MIN,
                node.0,
            )
        };
        mpi_error::check(rc, "MPI_Allreduce", rank, &name, || during("the node split"));
        let mut nodes = vec![0u64; size];
        // SAFETY: one u64 from each rank into `size` of them.
        let rc = unsafe {
            ffi::MPI_Allgather(
                (&lowest as *const u64).cast(),
                1,
                ffi::RSMPI_UINT64_T,
                nodes.as_mut_ptr().cast(),
                1,
                ffi::RSMPI_UINT64_T,
                world.as_raw(),
            )
        };
        mpi_error::check(rc, "MPI_Allgather", rank, &name, || during("the node split"));
        let nodes = nodes.into_iter().map(|n| n as usize).collect();

        let mut mine = [0u8; NAME_LEN];
        let n = name.len().min(NAME_LEN - 1);
        mine[..n].copy_from_slice(&name.as_bytes()[..n]);
        let mut all = vec![0u8; NAME_LEN * size];
        // SAFETY: `mine` holds NAME_LEN bytes and `all` NAME_LEN per rank.
        let rc = unsafe {
            ffi::MPI_Allgather(
                mine.as_ptr().cast(),
                NAME_LEN as c_int,
                ffi::RSMPI_UINT8_T,
                all.as_mut_ptr().cast(),
                NAME_LEN as c_int,
                ffi::RSMPI_UINT8_T,
                world.as_raw(),
            )
        };
        mpi_error::check(rc, "MPI_Allgather", rank, &name, || during("host names"));
        let hosts = all
            .chunks(NAME_LEN)
            .map(|c| {
                let end = c.iter().position(|b| *b == 0).unwrap_or(c.len());
                String::from_utf8_lossy(&c[..end]).into_owned()
            })
            .collect();
        let library_version = mpi::environment::library_version()
            .map(|v| {
                v.trim_matches(|c: char| c == '\0' || c.is_whitespace()).lines().next().unwrap_or("").trim().to_string()
            })
            .unwrap_or_else(|_| "unknown MPI".into());
        Ok(World { node, world, universe, rank, size, local_rank, local_size, hosts, nodes, library_version })
    }

    /// rsmpi's handle. Its safe calls discard MPI's return codes, which errors return here:
    /// call the checked methods below (or `raw_comm` and `check`) instead.
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.world
    }

    /// The world's communicator as the library's handle (errors return: check every code).
    pub fn raw_comm(&self) -> ffi::MPI_Comm {
        self.world.as_raw()
    }

    /// End the job with one line if `rc`, the code of `call`, is an error (`during`: what the
    /// call was for, e.g. "the agreement on options").
    pub fn check(&self, rc: c_int, call: &str, during: &str) {
        mpi_error::check(rc, call, self.rank, self.host(), || during.to_string());
    }

    /// `MPI_Allreduce` of `n` elements of `dtype` at `x` into `y`.
    fn all_reduce(&self, x: *const c_void, y: *mut c_void, n: usize, dtype: ffi::MPI_Datatype, op: ffi::MPI_Op) {
        // SAFETY: the callers pass pointers to `n` elements of `dtype`.
        let rc = unsafe { ffi::MPI_Allreduce(x, y, n as c_int, dtype, op, self.raw_comm()) };
        self.check(rc, "MPI_Allreduce", "an exchange of results between ranks");
    }

    pub fn universe(&self) -> &Universe {
        &self.universe
    }

    pub fn host(&self) -> &str {
        &self.hosts[self.rank]
    }

    /// MPI's view of this process, for the launcher cross-check.
    pub fn view(&self) -> View {
        View {
            source: "MPI".into(),
            rank: self.rank,
            size: Some(self.size),
            local_rank: Some(self.local_rank),
            local_size: Some(self.local_size),
            vars: vec![],
        }
    }

    /// Distinct hosts in order of their first rank, each with its ranks.
    pub fn ranks_by_host(&self) -> Vec<(String, Vec<usize>)> {
        crate::layout::by_first_rank(self.hosts.iter().map(String::as_str))
            .into_iter()
            .map(|(h, ranks)| (h.to_string(), ranks))
            .collect()
    }

    /// Agree across ranks: if any rank has an error, every rank returns the error of the lowest
    /// such rank (so rank 0 can print it once). Collective.
    pub fn agree<T>(&self, local: Result<T>) -> Result<T> {
        let mine = if local.is_err() { self.rank as i32 } else { self.size as i32 };
        let mut first = 0i32;
        // SAFETY: link-time constants of the MPI library.
        let (int, min) = unsafe { (ffi::RSMPI_INT32_T, ffi::RSMPI_MIN) };
        self.all_reduce((&mine as *const i32).cast(), (&mut first as *mut i32).cast(), 1, int, min);
        if first as usize == self.size {
            return local;
        }
        let (kind, text) = match &local {
            Err(Error::Usage(m)) => (0u8, m.clone()),
            Err(Error::Setup(m)) => (1u8, m.clone()),
            Ok(_) => (0, String::new()),
        };
        let mut payload = vec![kind];
        payload.extend_from_slice(text.as_bytes());
        let payload = self.broadcast_bytes(first as usize, payload);
        let text = String::from_utf8_lossy(&payload[1..]).into_owned();
        Err(if payload[0] == 0 { Error::Usage(text) } else { Error::Setup(text) })
    }

    /// Broadcast a byte string of any length from `root`. Collective.
    pub fn broadcast_bytes(&self, root: usize, mut bytes: Vec<u8>) -> Vec<u8> {
        let mut len = bytes.len() as u64;
        // SAFETY: one u64, then `len` bytes, at buffers of that size.
        let rc = unsafe {
            ffi::MPI_Bcast((&mut len as *mut u64).cast(), 1, ffi::RSMPI_UINT64_T, root as c_int, self.raw_comm())
        };
        self.check(rc, "MPI_Bcast", "a broadcast from one rank");
        bytes.resize(len as usize, 0);
        if len > 0 {
            // SAFETY: as above.
            let rc = unsafe {
                ffi::MPI_Bcast(
                    bytes.as_mut_ptr().cast(),
                    len as c_int,
                    ffi::RSMPI_UINT8_T,
                    root as c_int,
                    self.raw_comm(),
                )
            };
            self.check(rc, "MPI_Bcast", "a broadcast from one rank");
        }
        bytes
    }

    pub fn max_f64(&self, x: f64) -> f64 {
        let mut y = 0.0f64;
        // SAFETY: link-time constants of the MPI library.
        let (dt, op) = unsafe { (ffi::RSMPI_DOUBLE, ffi::RSMPI_MAX) };
        self.all_reduce((&x as *const f64).cast(), (&mut y as *mut f64).cast(), 1, dt, op);
        y
    }

    pub fn max_u64(&self, x: u64) -> u64 {
        let mut y = 0u64;
        // SAFETY: link-time constants of the MPI library.
        let (dt, op) = unsafe { (ffi::RSMPI_UINT64_T, ffi::RSMPI_MAX) };
        self.all_reduce((&x as *const u64).cast(), (&mut y as *mut u64).cast(), 1, dt, op);
        y
    }

    pub fn sum_u64(&self, x: u64) -> u64 {
        let mut y = 0u64;
        // SAFETY: link-time constants of the MPI library.
        let (dt, op) = unsafe { (ffi::RSMPI_UINT64_T, ffi::RSMPI_SUM) };
        self.all_reduce((&x as *const u64).cast(), (&mut y as *mut u64).cast(), 1, dt, op);
        y
    }

    /// Every rank's value, on every rank.
    pub fn all_gather<T: Equivalence + Default + Clone>(&self, x: T) -> Vec<T> {
        let mut all = vec![T::default(); self.size];
        let dt = T::equivalent_datatype().as_raw();
        // SAFETY: one `T` from each rank, described by its own datatype, into `size` of them.
        let rc = unsafe {
            ffi::MPI_Allgather((&x as *const T).cast(), 1, dt, all.as_mut_ptr().cast(), 1, dt, self.raw_comm())
        };
        self.check(rc, "MPI_Allgather", "an exchange of values between ranks");
        all
    }

    /// Every rank's `mine` (the same length on every rank), concatenated in rank order.
    pub fn all_gather_same(&self, mine: &[u8]) -> Vec<u8> {
        let mut all = vec![0u8; mine.len() * self.size];
        // SAFETY: `mine.len()` bytes from each rank into `size` times as many.
        let rc = unsafe {
            ffi::MPI_Allgather(
                mine.as_ptr().cast(),
                mine.len() as c_int,
                ffi::RSMPI_UINT8_T,
                all.as_mut_ptr().cast(),
                mine.len() as c_int,
                ffi::RSMPI_UINT8_T,
                self.raw_comm(),
            )
        };
        self.check(rc, "MPI_Allgather", "an exchange of records between ranks");
        all
    }

    /// Send `buf` to `peer` (tag 0). Point-to-point.
    pub fn send_bytes(&self, peer: usize, buf: &[u8]) {
        // SAFETY: `buf.len()` bytes at a live buffer.
        let rc = unsafe {
            ffi::MPI_Send(
                buf.as_ptr().cast(),
                buf.len() as c_int,
                ffi::RSMPI_UINT8_T,
                peer as c_int,
                0,
                self.raw_comm(),
            )
        };
        self.check(rc, "MPI_Send", &format!("a message to rank {peer}"));
    }

    /// Receive exactly `buf.len()` bytes from `peer` (tag 0). Point-to-point.
    pub fn recv_bytes(&self, peer: usize, buf: &mut [u8]) {
        // SAFETY: room for `buf.len()` bytes; the status is ignored.
        let rc = unsafe {
            ffi::MPI_Recv(
                buf.as_mut_ptr().cast(),
                buf.len() as c_int,
                ffi::RSMPI_UINT8_T,
                peer as c_int,
                0,
                self.raw_comm(),
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        self.check(rc, "MPI_Recv", &format!("a message from rank {peer}"));
    }

    /// Send `send` to `to` and receive `recv.len()` bytes from `from` at once (`MPI_Sendrecv`,
    /// tag 1, so it never matches [`World::send_bytes`]); None on a side skips it
    /// (`MPI_PROC_NULL`). Point-to-point.
    pub fn sendrecv_bytes(&self, to: Option<usize>, send: &[u8], from: Option<usize>, recv: &mut [u8]) {
        // SAFETY: a constant of the MPI library, read only.
        let null = unsafe { ffi::RSMPI_PROC_NULL };
        let peer = |p: Option<usize>| p.map_or(null, |p| p as c_int);
        let (scount, rcount) = (if to.is_some() { send.len() } else { 0 }, if from.is_some() { recv.len() } else { 0 });
        // SAFETY: `scount` bytes at a live buffer, room for `rcount` bytes; the status is ignored.
        let rc = unsafe {
            ffi::MPI_Sendrecv(
                send.as_ptr().cast(),
                scount as c_int,
                ffi::RSMPI_UINT8_T,
                peer(to),
                1,
                recv.as_mut_ptr().cast(),
                rcount as c_int,
                ffi::RSMPI_UINT8_T,
                peer(from),
                1,
                self.raw_comm(),
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        self.check(rc, "MPI_Sendrecv", &format!("an exchange with ranks {to:?} (to) and {from:?} (from)"));
    }

    /// Every rank's `mine` (the same length everywhere) on every rank, in rank order.
    /// Collective.
    pub fn all_gather_f64(&self, mine: &[f64]) -> Vec<f64> {
        let mut all = vec![0.0f64; mine.len() * self.size];
        // SAFETY: `mine.len()` doubles from each rank into `size` times as many.
        let rc = unsafe {
            ffi::MPI_Allgather(
                mine.as_ptr().cast(),
                mine.len() as c_int,
                ffi::RSMPI_DOUBLE,
                all.as_mut_ptr().cast(),
                mine.len() as c_int,
                ffi::RSMPI_DOUBLE,
                self.raw_comm(),
            )
        };
        self.check(rc, "MPI_Allgather", "an exchange of values between ranks");
        all
    }

    /// Every rank's `mine` (the same length everywhere) on rank 0, in rank order; other ranks get
    /// an empty vector. Collective.
    pub fn gather_f64(&self, mine: &[f64]) -> Vec<f64> {
        let mut all = vec![0.0f64; if self.rank == 0 { mine.len() * self.size } else { 0 }];
        let recv = if self.rank == 0 { all.as_mut_ptr().cast() } else { std::ptr::null_mut() };
        // SAFETY: `mine.len()` doubles from each rank; the receive buffer (significant on rank 0
        // only) holds `size` times as many.
        let rc = unsafe {
            ffi::MPI_Gather(
                mine.as_ptr().cast(),
                mine.len() as c_int,
                ffi::RSMPI_DOUBLE,
                recv,
                mine.len() as c_int,
                ffi::RSMPI_DOUBLE,
                0,
                self.raw_comm(),
            )
        };
        self.check(rc, "MPI_Gather", "the gathering of results on rank 0");
        all
    }

    /// Every rank's byte string (of any length), on every rank, indexed by rank. Collective.
    pub fn all_gather_bytes(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let packing = Packing::of(self.all_gather(bytes.len() as c_int));
        let mut all = packing.buffer();
        // SAFETY: this rank's `bytes`; `all` holds every rank's count at its displacement.
        let rc = unsafe {
            ffi::MPI_Allgatherv(
                Self::mpi_ptr(bytes).cast(),
                bytes.len() as c_int,
                ffi::RSMPI_UINT8_T,
                all.as_mut_ptr().cast(),
                packing.counts.as_ptr(),
                packing.displs.as_ptr(),
                ffi::RSMPI_UINT8_T,
                self.raw_comm(),
            )
        };
        self.check(rc, "MPI_Allgatherv", "an exchange of records between ranks");
        packing.split(&all)
    }

    /// A buffer's address for MPI: an empty slice's is dangling (1 for bytes), which Open MPI
    /// takes for `MPI_IN_PLACE` (`(void *) 1`), so an empty buffer passes a real byte instead.
    fn mpi_ptr(bytes: &[u8]) -> *const u8 {
        static ONE: u8 = 0;
        if bytes.is_empty() {
            &ONE
        } else {
            bytes.as_ptr()
        }
    }

    /// Every rank's byte string (of any length) on rank 0, indexed by rank; other ranks get an
    /// empty vector. Collective. O(n) at rank 0 and O(1) elsewhere, where `all_gather_bytes`
    /// is O(n) on every rank (O(n²) over the job).
    pub fn gather_bytes(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let root = self.rank == 0;
        let len = bytes.len() as c_int;
        let mut counts = vec![0 as c_int; if root { self.size } else { 0 }];
        // SAFETY: one int from each rank; the receive buffer (significant on rank 0) holds `size`.
        let rc = unsafe {
            ffi::MPI_Gather(
                (&len as *const c_int).cast(),
                1,
                ffi::RSMPI_INT32_T,
                if root { counts.as_mut_ptr().cast() } else { std::ptr::null_mut() },
                1,
                ffi::RSMPI_INT32_T,
                0,
                self.raw_comm(),
            )
        };
        self.check(rc, "MPI_Gather", "the gathering of records' lengths on rank 0");
        let packing = Packing::of(counts);
        let mut all = packing.buffer();
        // SAFETY: this rank's `bytes`; on rank 0 `all` holds every rank's count at its
        // displacement (the counts and displacements are significant on rank 0 only).
        let rc = unsafe {
            ffi::MPI_Gatherv(
                Self::mpi_ptr(bytes).cast(),
                len,
                ffi::RSMPI_UINT8_T,
                all.as_mut_ptr().cast(),
                packing.counts.as_ptr(),
                packing.displs.as_ptr(),
                ffi::RSMPI_UINT8_T,
                0,
                self.raw_comm(),
            )
        };
        self.check(rc, "MPI_Gatherv", "the gathering of records on rank 0");
        packing.split(&all)
    }

    /// Rank 0's `parts[r]` to each rank r (`parts` is read on rank 0 only, one per rank).
    /// Collective.
    pub fn scatter_bytes(&self, parts: &[Vec<u8>]) -> Vec<u8> {
        let root = self.rank == 0;
        assert!(!root || parts.len() == self.size, "scatter_bytes: one part per rank");
        let packing = Packing::of(if root { parts.iter().map(|p| p.len() as c_int).collect() } else { vec![] });
        let mut len: c_int = 0;
        // SAFETY: one int to each rank from rank 0's `counts` (significant there only).
        let rc = unsafe {
            ffi::MPI_Scatter(
                packing.counts.as_ptr().cast(),
                1,
                ffi::RSMPI_INT32_T,
                (&mut len as *mut c_int).cast(),
                1,
                ffi::RSMPI_INT32_T,
                0,
                self.raw_comm(),
            )
        };
        self.check(rc, "MPI_Scatter", "the sending of records' lengths from rank 0");
        // One byte more than sent: never empty (`mpi_ptr`).
        let mut all: Vec<u8> = if root { parts.concat() } else { vec![] };
        all.push(0);
        // One byte more than received: never empty (`mpi_ptr`).
        let mut mine = vec![0u8; len as usize + 1];
        // SAFETY: rank 0 sends each rank its count at its displacement in `all`; every rank
        // receives its `len` bytes.
        let rc = unsafe {
            ffi::MPI_Scatterv(
                all.as_ptr().cast(),
                packing.counts.as_ptr(),
                packing.displs.as_ptr(),
                ffi::RSMPI_UINT8_T,
                mine.as_mut_ptr().cast(),
                len,
                ffi::RSMPI_UINT8_T,
                0,
                self.raw_comm(),
            )
        };
        self.check(rc, "MPI_Scatterv", "the sending of records from rank 0");
        mine.truncate(len as usize);
        mine
    }

    /// Combine per-iteration samples across ranks element by element with `agg`; the result is
    /// valid on rank 0 only (other ranks get an empty vector). Collective.
    pub fn combine_samples(&self, agg: Aggregation, samples: &[f64]) -> Vec<f64> {
        if agg == Aggregation::Rank0 {
            return if self.rank == 0 { samples.to_vec() } else { vec![] };
        }
        // SAFETY: link-time constants of the MPI library.
        let op = unsafe {
            match agg {
                Aggregation::Mean => ffi::RSMPI_SUM,
                Aggregation::Min => ffi::RSMPI_MIN,
                _ => ffi::RSMPI_MAX,
            }
        };
        let mut out = vec![0.0; if self.rank == 0 { samples.len() } else { 0 }];
        let recv = if self.rank == 0 { out.as_mut_ptr().cast() } else { std::ptr::null_mut() };
        // SAFETY: `samples.len()` doubles in and, on rank 0, out.
        let rc = unsafe {
            ffi::MPI_Reduce(
                samples.as_ptr().cast(),
                recv,
                samples.len() as c_int,
                ffi::RSMPI_DOUBLE,
                op,
                0,
                self.raw_comm(),
            )
        };
        self.check(rc, "MPI_Reduce", "the combination of timings on rank 0");
        if agg == Aggregation::Mean {
            out.iter_mut().for_each(|x| *x /= self.size as f64);
        }
        out
    }

    pub fn barrier(&self) {
        // SAFETY: a live communicator.
        let rc = unsafe { ffi::MPI_Barrier(self.raw_comm()) };
        self.check(rc, "MPI_Barrier", "a barrier between phases");
    }

    /// Stop every rank of the job now. For errors that cannot be agreed on.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

/// A communicator we created, freed (collectively) when dropped, with errors returned.
struct OwnedComm(ffi::MPI_Comm, usize, String);

impl OwnedComm {
    /// This host's ranks (`MPI_COMM_TYPE_SHARED`). Collective.
    fn split_shared(world: &SimpleCommunicator, rank: usize, host: &str) -> OwnedComm {
        // SAFETY: `c` is written by MPI_Comm_split_type; the constants are the library's.
        let (rc, c) = unsafe {
            let mut c: ffi::MPI_Comm = std::mem::zeroed();
            let rc = ffi::MPI_Comm_split_type(
                world.as_raw(),
                ffi::RSMPI_COMM_TYPE_SHARED,
                rank as c_int,
                ffi::RSMPI_INFO_NULL,
                &mut c,
            );
            (rc, c)
        };
        mpi_error::check(rc, "MPI_Comm_split_type", rank, host, || "the start-up (the node split)".into());
        let rc = mpi_error::return_errors(c);
        mpi_error::check(rc, "MPI_Comm_set_errhandler", rank, host, || "the start-up (the node split)".into());
        OwnedComm(c, rank, host.to_string())
    }
}

impl Drop for OwnedComm {
    fn drop(&mut self) {
        // SAFETY: a communicator we created; every rank drops it at the same point.
        let rc = unsafe { ffi::MPI_Comm_free(&mut self.0) };
        mpi_error::check(rc, "MPI_Comm_free", self.1, &self.2, || "the release of the node split".into());
    }
}

/// Ranks as ranges: `0-3,8,10-11`.
pub fn rank_list(ranks: &[usize]) -> String {
    let mut parts = vec![];
    let mut i = 0;
    while i < ranks.len() {
        let start = ranks[i];
        let mut end = start;
        while i + 1 < ranks.len() && ranks[i + 1] == end + 1 {
            i += 1;
            end = ranks[i];
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    parts.join(",")
}

/// Combine one value per rank with `agg`.
pub fn aggregate(agg: Aggregation, per_rank: &[f64]) -> f64 {
    match agg {
        Aggregation::Rank0 => per_rank[0],
        Aggregation::Mean => per_rank.iter().sum::<f64>() / per_rank.len() as f64,
        Aggregation::Min => per_rank.iter().copied().fold(f64::INFINITY, f64::min),
        Aggregation::Max => per_rank.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists_compress() {
        assert_eq!(rank_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(rank_list(&[5]), "5");
        assert_eq!(rank_list(&[]), "");
    }

    #[test]
    fn aggregation_policies() {
        let v = [4.0, 1.0, 7.0];
        assert_eq!(aggregate(Aggregation::Rank0, &v), 4.0);
        assert_eq!(aggregate(Aggregation::Mean, &v), 4.0);
        assert_eq!(aggregate(Aggregation::Min, &v), 1.0);
        assert_eq!(aggregate(Aggregation::Max, &v), 7.0);
    }
}
