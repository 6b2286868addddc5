//! The MPI backend: collectives on CPU buffers through the MPI library's own calls, reached via
//! `mpi::ffi` (rsmpi's safe layer has no `MPI_IN_PLACE` and would add a layer to the timed path).
//! All FFI detail of the backend stays in this file.
//!
//! Every return code is checked: the communicators have `MPI_ERRORS_RETURN` (the world's, set
//! by [`World::init`], and our duplicates), and a failed call ends the job with one line naming
//! the call, the collective, its size and the library's message ([`crate::mpi_error`]).
//!
//! Another implementation of a collective is one more arm in [`Implementation`] (in
//! `crate::options`), chosen by `--impl`: `ring` (all-reduce, reduce-scatter and
//! all-gather as rings over `MPI_Sendrecv`) and `recursive-doubling` (all-reduce) sit beside the
//! library's own; `coll-bench tune` times them beside the library's algorithms.

use super::{Backend, Buf, Call, HostBuffer};
use crate::collective::{partner, ring_peers, Convention, Kind};
use crate::dtype::{divide_by_ranks, DType, Op};
use crate::error::{Error, Result};
use crate::mpi_error;
use crate::options::Options;
use crate::verify::SENTINEL;
use crate::world::World;
use mpi::ffi;
use std::os::raw::{c_int, c_void};

extern "C" {
    fn collbench_mpi_in_place() -> *mut c_void;
}

pub use crate::options::Implementation;

pub struct MpiBackend {
    comm: ffi::MPI_Comm,
    /// This rank in `comm` (the group's rank on a group communicator).
    rank: usize,
    /// This rank in the world, for the line of a failed call.
    world_rank: usize,
    /// This rank's host, for the line of a failed call.
    host: String,
    nranks: usize,
    blocking: bool,
    implementation: Implementation,
    version: String,
    /// Testing only: sleep before each timed batch, outside this rank's timing.
    arrival_delay: Option<std::time::Duration>,
    send: HostBuffer,
    recv: HostBuffer,
    /// Our own implementations' incoming data.
    scratch: HostBuffer,
    /// Testing only (`--debug-mpi-error`): pass `MPI_DATATYPE_NULL` to every MPI call that takes
    /// a type, so the first one fails with an invalid argument.
    null_datatype: bool,
    /// Running on a `DupComm` (tune): a failed call is an `Error` for the caller to agree on.
    dup: bool,
    /// The group's communicator when running on one (`--groups`), freed with the backend.
    group: Option<GroupComm>,
    /// The library's algorithm variables, read at the first point's [`Backend::algorithm`].
    settings: Option<super::algorithm::Settings>,
}

/// A failed MPI call: its name and the library's code.
struct Failed {
    call: &'static str,
    rc: c_int,
}

/// `Ok` for `MPI_SUCCESS`, else the failure of `call`.
fn ok(call: &'static str, rc: c_int) -> std::result::Result<(), Failed> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Failed { call, rc })
    }
}

type Checked = std::result::Result<(), Failed>;

/// Everything one call needs, resolved before the timed loop.
struct Prepared {
    kind: Kind,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    op: ffi::MPI_Op,
    root: c_int,
    /// ping-pong's partner.
    partner: c_int,
    /// sendrecv's ring neighbours: (to, from).
    ring: (c_int, c_int),
    in_place: bool,
    /// Where the input is, in place too (our own implementations need it; MPI is given
    /// `MPI_IN_PLACE`).
    input: *const c_void,
    /// Avg on MPI: sum, then divide this many bytes at `avg_at` by the rank count.
    avg: Option<(DType, *mut u8, usize)>,
    /// Element type and op, for reductions done here (the ring).
    elem: (DType, Op),
    /// `--impl counts`: every rank's count (all equal) and displacement, for the functions that
    /// take them (`MPI_Reduce_scatter`, `MPI_Allgatherv`); empty otherwise.
    counts: Vec<c_int>,
    displs: Vec<c_int>,
    /// All-to-all-v: what this rank receives from each rank and where (`counts`/`displs` are
    /// what it sends).
    recv_counts: Vec<c_int>,
    recv_displs: Vec<c_int>,
}

fn datatype(d: DType) -> Option<ffi::MPI_Datatype> {
    // SAFETY: reading link-time constants of the MPI library.
    unsafe {
        Some(match d {
            DType::Int8 => ffi::RSMPI_INT8_T,
            DType::Uint8 => ffi::RSMPI_UINT8_T,
            DType::Int32 => ffi::RSMPI_INT32_T,
            DType::Uint32 => ffi::RSMPI_UINT32_T,
            DType::Int64 => ffi::RSMPI_INT64_T,
            DType::Uint64 => ffi::RSMPI_UINT64_T,
            DType::Float32 => ffi::RSMPI_FLOAT,
            DType::Float64 => ffi::RSMPI_DOUBLE,
            DType::Float16 | DType::Bfloat16 | DType::Fp8E4m3 | DType::Fp8E5m2 => return None,
        })
    }
}

fn reduce_op(op: Op) -> ffi::MPI_Op {
    // SAFETY: as above.
    unsafe {
        match op {
            Op::Sum | Op::Avg => ffi::RSMPI_SUM,
            Op::Prod => ffi::RSMPI_PROD,
            Op::Min => ffi::RSMPI_MIN,
            Op::Max => ffi::RSMPI_MAX,
        }
    }
}

impl MpiBackend {
    /// The backend `opts` asks for (`--impl`, `-z`; testing only: `--debug-slow-rank` makes
    /// this rank arrive late at every timed batch). Built the same way as the nccl backend.
    pub fn new(world: &World, opts: &Options) -> Result<MpiBackend> {
        let (implementation, blocking) = (opts.implementation, opts.blocking);
        let arrival_delay = opts
            .debug_slow_rank
            .filter(|(rank, _)| *rank == world.rank)
            .map(|(_, us)| std::time::Duration::from_micros(us));
        if let Some(why) = implementation.unfit(world.size) {
            return Err(Error::usage(format!("--impl {}: {why}", implementation.name())));
        }
        Ok(MpiBackend {
            comm: world.raw_comm(),
            rank: world.rank,
            world_rank: world.rank,
            host: world.host().to_string(),
            nranks: world.size,
            blocking,
            implementation,
            version: world.library_version.clone(),
            arrival_delay,
            send: HostBuffer::empty(),
            recv: HostBuffer::empty(),
            scratch: HostBuffer::empty(),
            // Testing only (`--debug-mpi-error`): every MPI call of this rank fails.
            null_datatype: opts.debug_mpi_error.contains(&world.rank),
            dup: false,
            group: None,
            // The library's variables, read once here at set-up, before anything is timed:
            // read after the first point (as before), the tool interface's start-up disturbed
            // the second point's calls (all-reduce 16 B: 7 calls of ~4 ms, in 3 of 8 sweeps).
            // Read on rank 0 alone, which alone reports the algorithm: Open MPI's
            // MPI_T_init_thread opens every component, 0.21 s of wall and ~30 ms of CPU a rank,
            // which 64 ranks sharing 2 cores paid together (0.4-0.6 s of start-up; bench/osu-vm.md).
            settings: (!implementation.own() && world.rank == 0)
                .then(|| super::algorithm::Settings::read(&world.library_version)),
        })
    }

    /// Run on the group communicator `g` from now on (`--groups`): this rank's rank and the
    /// rank count become the group's; `--impl` is checked against the group's size.
    pub fn into_group(mut self, g: GroupComm) -> Result<MpiBackend> {
        if let Some(why) = self.implementation.unfit(g.size) {
            return Err(Error::usage(format!("--impl {}: {why} (in each group)", self.implementation.name())));
        }
        self.comm = g.comm;
        self.rank = g.rank;
        self.nranks = g.size;
        self.group = Some(g);
        Ok(self)
    }

    /// Testing only (`--debug-mpi-error`): make every MPI call of this rank fail with an invalid
    /// argument (`MPI_DATATYPE_NULL`), to prove that the failure ends the job with one line.
    pub fn fail_every_call(&mut self) {
        self.null_datatype = true;
    }

    /// Run on `comm` from now on instead of the world's (tune: a fresh duplicate made after
    /// forcing an algorithm, which the library reads when a communicator is created).
    pub fn use_comm(&mut self, comm: &DupComm) {
        self.comm = comm.comm;
        self.dup = true;
    }

    fn prepare(&mut self, call: &Call) -> Result<Prepared> {
        let dtype = datatype(call.dtype).ok_or_else(|| {
            Error::usage(format!("-d/--datatype: {} is not supported by the mpi backend", call.dtype))
        })?;
        let l = call.layout;
        let elem = call.dtype.size();
        // SAFETY: a C function returning a constant.
        let in_place_ptr = unsafe { collbench_mpi_in_place() };
        let recv_base = self.recv.as_mut_ptr();
        let send_base = self.send.as_mut_ptr();
        let at = |base: *mut u8, elems: usize| {
            if base.is_null() {
                base
            } else {
                // SAFETY: layouts stay inside the buffers, which `allocate` sized for the largest.
                unsafe { base.add(elems * elem) }
            }
        };
        let is_root = self.rank == call.root;
        // (send pointer, receive pointer) as the MPI call wants them.
        let input = if call.in_place { at(recv_base, l.in_place_input) } else { send_base } as *const c_void;
        let (send, recv): (*const c_void, *mut c_void) = if !call.in_place {
            (send_base as *const c_void, recv_base as *mut c_void)
        } else {
            let input = at(recv_base, l.in_place_input) as *const c_void;
            let output = at(recv_base, l.in_place_output) as *mut c_void;
            match call.kind {
                Kind::AllReduce | Kind::AllGather | Kind::ReduceScatter | Kind::AllToAll | Kind::AllToAllV => {
                    (in_place_ptr, output)
                }
                Kind::Reduce | Kind::Gather if is_root => (in_place_ptr, output),
                Kind::Reduce | Kind::Gather => (input, output),
                Kind::Scatter if is_root => (input, in_place_ptr),
                Kind::Scatter => (input, output),
                Kind::Broadcast | Kind::SendRecv | Kind::PingPong | Kind::Barrier => (input, output),
            }
        };
        // The whole buffer for all-reduce, broadcast, reduce, sendrecv and ping-pong; the per-rank block for
        // the others: nccl-tests' count is MPI's count in both cases.
        let count = l.count;
        let count = c_int::try_from(count).map_err(|_| {
            Error::usage(format!(
                "-e/--maxbytes: {count} elements per call exceed MPI's 32-bit count; lower -e/--maxbytes"
            ))
        })?;
        let avg = if call.op == Op::Avg && call.kind.spec().reduces() {
            let out = if call.in_place { at(recv_base, l.in_place_output) } else { recv_base };
            let has_output = call.kind != Kind::Reduce || is_root;
            has_output.then_some((call.dtype, out, l.recv_count * elem))
        } else {
            None
        };
        // SAFETY: a link-time constant of the MPI library.
        let dtype = if self.null_datatype { unsafe { ffi::RSMPI_DATATYPE_NULL } } else { dtype };
        let ints = |v: &[usize]| {
            v.iter().map(|x| c_int::try_from(*x)).collect::<std::result::Result<Vec<c_int>, _>>().map_err(|_| {
                Error::usage(format!(
                    "-e/--maxbytes: all-to-all-v's counts and displacements exceed MPI's 32-bit counts ({} elements in all); lower -e/--maxbytes",
                    l.send_count.max(l.recv_count)
                ))
            })
        };
        let (recv_counts, recv_displs) = match l.peers {
            Some(p) => (ints(&p.recv)?, ints(&p.recv_displs)?),
            None => (vec![], vec![]),
        };
        let (counts, displs) = if let Some(p) = l.peers {
            (ints(&p.send)?, ints(&p.send_displs)?)
        } else if self.implementation == Implementation::Counts {
            let displs = (0..self.nranks)
                .map(|i| c_int::try_from(i as i64 * count as i64))
                .collect::<std::result::Result<Vec<c_int>, _>>()
                .map_err(|_| {
                    Error::usage(format!(
                        "-e/--maxbytes: {} elements in all exceed MPI's 32-bit displacements; lower -e/--maxbytes",
                        self.nranks as i64 * count as i64
                    ))
                })?;
            (vec![count; self.nranks], displs)
        } else {
            (vec![], vec![])
        };
        Ok(Prepared {
            kind: call.kind,
            send,
            recv,
            count,
            dtype,
            op: reduce_op(call.op),
            root: call.root as c_int,
            partner: partner(self.rank, self.nranks) as c_int,
            ring: {
                let (to, from) = ring_peers(self.rank, self.nranks);
                (to as c_int, from as c_int)
            },
            in_place: call.in_place,
            input,
            avg,
            elem: (call.dtype, call.op),
            counts,
            displs,
            recv_counts,
            recv_displs,
        })
    }

    /// `MPI_Sendrecv` on our communicator: `scount` elements of `dtype` from `send` to rank `to`,
    /// `rcount` into `recv` from rank `from`, both with `tag`. The one place our own
    /// implementations exchange data. SAFETY: the buffers hold those counts.
    #[allow(clippy::too_many_arguments)]
    unsafe fn sendrecv(
        &self,
        send: *const c_void,
        scount: c_int,
        to: c_int,
        recv: *mut c_void,
        rcount: c_int,
        from: c_int,
        dtype: ffi::MPI_Datatype,
        tag: c_int,
    ) -> Checked {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            let status = ffi::RSMPI_STATUS_IGNORE;
            ok(
                "MPI_Sendrecv",
                ffi::MPI_Sendrecv(send, scount, dtype, to, tag, recv, rcount, dtype, from, tag, self.comm, status),
            )
        }
    }

    /// Ring all-reduce into `p.recv`. SAFETY: as `call_once`; `scratch` holds a chunk.
    unsafe fn ring_all_reduce(&self, p: &Prepared) -> Checked {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            let (dtype, op) = p.elem;
            let elem = dtype.size();
            let count = p.count as usize;
            let n = self.nranks;
            let recv = p.recv as *mut u8;
            if !p.in_place && count > 0 {
                std::ptr::copy_nonoverlapping(p.send as *const u8, recv, count * elem);
            }
            if n == 1 || count == 0 {
                return Ok(());
            }
            let chunk = |c: usize| (c * count / n, (c + 1) * count / n); // [start, end) in elements
            let (right, left) = (((self.rank + 1) % n) as c_int, ((self.rank + n - 1) % n) as c_int);
            let scratch = self.scratch.raw();
            // Reduce-scatter: after n−1 steps this rank holds the whole reduction of chunk rank+1.
            for step in 0..n - 1 {
                let (s0, s1) = chunk((self.rank + n - step) % n);
                let (r0, r1) = chunk((self.rank + n - step - 1) % n);
                let (send, recv_at) = (recv.add(s0 * elem) as *const c_void, scratch as *mut c_void);
                self.sendrecv(send, (s1 - s0) as c_int, right, recv_at, (r1 - r0) as c_int, left, p.dtype, 1)?;
                let acc = std::slice::from_raw_parts_mut(recv.add(r0 * elem), (r1 - r0) * elem);
                crate::dtype::combine_into(dtype, op, acc, std::slice::from_raw_parts(scratch, (r1 - r0) * elem));
            }
            // All-gather of the reduced chunks, straight into place.
            for step in 0..n - 1 {
                let (s0, s1) = chunk((self.rank + 1 + n - step) % n);
                let (r0, r1) = chunk((self.rank + n - step) % n);
                let (send, recv_at) = (recv.add(s0 * elem) as *const c_void, recv.add(r0 * elem) as *mut c_void);
                self.sendrecv(send, (s1 - s0) as c_int, right, recv_at, (r1 - r0) as c_int, left, p.dtype, 2)?;
            }
            Ok(())
        }
    }

    /// Ring reduce-scatter (`MPI_Reduce_scatter_block`'s contract): block b of the result is the
    /// reduction of every rank's input block b; this rank keeps block `rank`. The partial sum
    /// travels the ring: at each step a rank adds its own input block to what it received and
    /// passes it on. SAFETY: as `call_once`; `scratch` holds two blocks.
    unsafe fn ring_reduce_scatter(&self, p: &Prepared) -> Checked {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            let (dtype, op) = p.elem;
            let elem = dtype.size();
            let count = p.count as usize;
            let n = self.nranks;
            let bytes = count * elem;
            let input = p.input as *const u8;
            let out = p.recv as *mut u8;
            if count == 0 {
                return Ok(());
            }
            if n == 1 {
                std::ptr::copy(input, out, bytes);
                return Ok(());
            }
            let (right, left) = (((self.rank + 1) % n) as c_int, ((self.rank + n - 1) % n) as c_int);
            let (mut acc, mut inc) = (self.scratch.raw(), self.scratch.raw().add(bytes));
            // Step s sends the partial sum of block (rank − s − 1) and receives that of (rank − s − 2).
            for step in 0..n - 1 {
                let send_block = (self.rank + 2 * n - step - 1) % n;
                let recv_block = (self.rank + 2 * n - step - 2) % n;
                let send: *const u8 = if step == 0 { input.add(send_block * bytes) } else { acc };
                self.sendrecv(send as *const c_void, p.count, right, inc as *mut c_void, p.count, left, p.dtype, 3)?;
                let sum = std::slice::from_raw_parts_mut(inc, bytes);
                crate::dtype::combine_into(
                    dtype,
                    op,
                    sum,
                    std::slice::from_raw_parts(input.add(recv_block * bytes), bytes),
                );
                std::mem::swap(&mut acc, &mut inc);
            }
            std::ptr::copy_nonoverlapping(acc, out, bytes);
            Ok(())
        }
    }

    /// Ring all-gather: n−1 steps, each passing on the block received the step before.
    /// SAFETY: as `call_once`.
    unsafe fn ring_all_gather(&self, p: &Prepared) -> Checked {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            let elem = p.elem.0.size();
            let count = p.count as usize;
            let n = self.nranks;
            let bytes = count * elem;
            let out = p.recv as *mut u8;
            if count == 0 {
                return Ok(());
            }
            if !p.in_place {
                std::ptr::copy_nonoverlapping(p.input as *const u8, out.add(self.rank * bytes), bytes);
            }
            let (right, left) = (((self.rank + 1) % n) as c_int, ((self.rank + n - 1) % n) as c_int);
            for step in 0..n - 1 {
                let send_block = (self.rank + n - step) % n;
                let recv_block = (self.rank + 2 * n - step - 1) % n;
                let (send, recv) =
                    (out.add(send_block * bytes) as *const c_void, out.add(recv_block * bytes) as *mut c_void);
                self.sendrecv(send, p.count, right, recv, p.count, left, p.dtype, 4)?;
            }
            Ok(())
        }
    }

    /// Recursive-doubling all-reduce (power-of-two rank counts): exchange the whole buffer with
    /// rank ^ 1, rank ^ 2, … and combine. SAFETY: as `call_once`; `scratch` holds a buffer.
    unsafe fn recursive_doubling_all_reduce(&self, p: &Prepared) -> Checked {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            let (dtype, op) = p.elem;
            let bytes = p.count as usize * dtype.size();
            let recv = p.recv as *mut u8;
            if !p.in_place && bytes > 0 {
                std::ptr::copy_nonoverlapping(p.send as *const u8, recv, bytes);
            }
            if bytes == 0 {
                return Ok(());
            }
            let scratch = self.scratch.raw();
            let mut mask = 1;
            while mask < self.nranks {
                let peer = (self.rank ^ mask) as c_int;
                self.sendrecv(recv as *const c_void, p.count, peer, scratch as *mut c_void, p.count, peer, p.dtype, 5)?;
                let acc = std::slice::from_raw_parts_mut(recv, bytes);
                crate::dtype::combine_into(dtype, op, acc, std::slice::from_raw_parts(scratch, bytes));
                mask <<= 1;
            }
            Ok(())
        }
    }

    /// The MPI function [`Self::call_once`] times for `kind` (keep the two in step: the
    /// header names it, and a failed call's line names the function that failed).
    fn function(&self, kind: Kind) -> &'static str {
        match (self.implementation, kind) {
            (Implementation::Ring | Implementation::RecursiveDoubling, _) => "MPI_Sendrecv (coll-bench's own --impl)",
            (Implementation::Counts, Kind::ReduceScatter | Kind::AllGather) => {
                Implementation::counts_functions(kind).expect("counts provides both").1
            }
            (_, Kind::AllReduce) => "MPI_Allreduce",
            (_, Kind::AllGather) => "MPI_Allgather",
            (_, Kind::ReduceScatter) => "MPI_Reduce_scatter_block",
            (_, Kind::Broadcast) => "MPI_Bcast",
            (_, Kind::Reduce) => "MPI_Reduce",
            (_, Kind::Gather) => "MPI_Gather",
            (_, Kind::Scatter) => "MPI_Scatter",
            (_, Kind::AllToAll) => "MPI_Alltoall",
            (_, Kind::AllToAllV) => "MPI_Alltoallv",
            (_, Kind::Barrier) => "MPI_Barrier",
            (_, Kind::SendRecv) => "MPI_Sendrecv (MPI_Sendrecv_replace in place)",
            (_, Kind::PingPong) => "MPI_Send + MPI_Recv (ping-pong)",
        }
    }

    /// One call of the collective. SAFETY: the pointers in `p` point into our buffers, which
    /// `allocate` sized for the largest layout.
    unsafe fn call_once(&self, p: &Prepared) -> Checked {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            let c = self.comm;
            // `--impl` is ours for the collectives; point-to-point (the ceiling pass's sendrecv)
            // is the library's whatever it says.
            let implementation = if p.kind == Kind::SendRecv { Implementation::Native } else { self.implementation };
            match (implementation, p.kind) {
                (Implementation::Ring, Kind::AllReduce) => self.ring_all_reduce(p)?,
                (Implementation::Ring, Kind::ReduceScatter) => self.ring_reduce_scatter(p)?,
                (Implementation::Ring, Kind::AllGather) => self.ring_all_gather(p)?,
                (Implementation::RecursiveDoubling, Kind::AllReduce) => self.recursive_doubling_all_reduce(p)?,
                (Implementation::Counts, Kind::ReduceScatter) => {
                    let rc = ffi::MPI_Reduce_scatter(p.send, p.recv, p.counts.as_ptr(), p.dtype, p.op, c);
                    ok("MPI_Reduce_scatter", rc)?;
                }
                (Implementation::Counts, Kind::AllGather) => {
                    let (counts, displs) = (p.counts.as_ptr(), p.displs.as_ptr());
                    let rc = ffi::MPI_Allgatherv(p.send, p.count, p.dtype, p.recv, counts, displs, p.dtype, c);
                    ok("MPI_Allgatherv", rc)?;
                }
                (Implementation::Ring | Implementation::RecursiveDoubling | Implementation::Counts, _) => {
                    unreachable!("--impl is refused up front for collectives it does not provide")
                }
                (Implementation::Native, Kind::AllReduce) => {
                    ok("MPI_Allreduce", ffi::MPI_Allreduce(p.send, p.recv, p.count, p.dtype, p.op, c))?;
                }
                (Implementation::Native, Kind::AllGather) => {
                    ok("MPI_Allgather", ffi::MPI_Allgather(p.send, p.count, p.dtype, p.recv, p.count, p.dtype, c))?;
                }
                (Implementation::Native, Kind::ReduceScatter) => {
                    let rc = ffi::MPI_Reduce_scatter_block(p.send, p.recv, p.count, p.dtype, p.op, c);
                    ok("MPI_Reduce_scatter_block", rc)?;
                }
                (Implementation::Native, Kind::Broadcast) => {
                    // One buffer in MPI: the root sends from its send buffer (out of place) and the
                    // others receive into their receive buffers.
                    let buf = if self.rank as c_int == p.root { p.send as *mut c_void } else { p.recv };
                    ok("MPI_Bcast", ffi::MPI_Bcast(buf, p.count, p.dtype, p.root, c))?;
                }
                (Implementation::Native, Kind::Reduce) => {
                    ok("MPI_Reduce", ffi::MPI_Reduce(p.send, p.recv, p.count, p.dtype, p.op, p.root, c))?;
                }
                (Implementation::Native, Kind::Gather) => {
                    let rc = ffi::MPI_Gather(p.send, p.count, p.dtype, p.recv, p.count, p.dtype, p.root, c);
                    ok("MPI_Gather", rc)?;
                }
                (Implementation::Native, Kind::Scatter) => {
                    let rc = ffi::MPI_Scatter(p.send, p.count, p.dtype, p.recv, p.count, p.dtype, p.root, c);
                    ok("MPI_Scatter", rc)?;
                }
                (Implementation::Native, Kind::AllToAll) => {
                    ok("MPI_Alltoall", ffi::MPI_Alltoall(p.send, p.count, p.dtype, p.recv, p.count, p.dtype, c))?;
                }
                (Implementation::Native, Kind::AllToAllV) => {
                    let (sc, sd) = (p.counts.as_ptr(), p.displs.as_ptr());
                    let (rc, rd) = (p.recv_counts.as_ptr(), p.recv_displs.as_ptr());
                    let r = ffi::MPI_Alltoallv(p.send, sc, sd, p.dtype, p.recv, rc, rd, p.dtype, c);
                    ok("MPI_Alltoallv", r)?;
                }
                (Implementation::Native, Kind::Barrier) => ok("MPI_Barrier", ffi::MPI_Barrier(c))?,
                (Implementation::Native, Kind::SendRecv) => {
                    // nccl-tests' ring: send to rank+1 and receive from rank−1 at once; in place, one
                    // buffer sent and then overwritten (MPI's own in-place form).
                    let (to, from) = p.ring;
                    if p.in_place {
                        let status = ffi::RSMPI_STATUS_IGNORE;
                        let rc = ffi::MPI_Sendrecv_replace(p.recv, p.count, p.dtype, to, 8, from, 8, c, status);
                        ok("MPI_Sendrecv_replace", rc)?;
                    } else {
                        self.sendrecv(p.send, p.count, to, p.recv, p.count, from, p.dtype, 8)?;
                    }
                }
                (Implementation::Native, Kind::PingPong) => {
                    let me = self.rank as c_int;
                    let status = ffi::RSMPI_STATUS_IGNORE;
                    if p.partner == me {
                        if p.in_place {
                            let rc = ffi::MPI_Sendrecv_replace(p.recv, p.count, p.dtype, me, 0, me, 0, c, status);
                            ok("MPI_Sendrecv_replace", rc)?;
                        } else {
                            self.sendrecv(p.send, p.count, me, p.recv, p.count, me, p.dtype, 0)?;
                        }
                    } else if me % 2 == 0 {
                        ok("MPI_Send", ffi::MPI_Send(p.send, p.count, p.dtype, p.partner, 0, c))?;
                        ok("MPI_Recv", ffi::MPI_Recv(p.recv, p.count, p.dtype, p.partner, 0, c, status))?;
                    } else {
                        ok("MPI_Recv", ffi::MPI_Recv(p.recv, p.count, p.dtype, p.partner, 0, c, status))?;
                        ok("MPI_Send", ffi::MPI_Send(p.send, p.count, p.dtype, p.partner, 0, c))?;
                    }
                }
            }
            if let Some((dtype, ptr, len)) = p.avg {
                divide_by_ranks(dtype, std::slice::from_raw_parts_mut(ptr, len), self.nranks);
            }
            Ok(())
        }
    }

    /// The line for `f`, failed in `call`.
    fn failure(&self, call: &Call, f: &Failed) -> String {
        let message = mpi_error::error_string(f.rc);
        mpi_error::line(f.call, &describe(call), self.world_rank, &self.host, &message)
    }

    fn buffer(&mut self, buf: Buf) -> &mut HostBuffer {
        match buf {
            Buf::Send => &mut self.send,
            Buf::Recv => &mut self.recv,
        }
    }
}

/// `all-reduce of 1024 B (float, sum, out-of-place)`: the call, for the line of a failure.
fn describe(call: &Call) -> String {
    let placement = if call.in_place { "in-place" } else { "out-of-place" };
    let spec = call.kind.spec();
    if !spec.sized() {
        return format!("{} ({placement})", call.kind.name());
    }
    let bytes = call.layout.alg_count * call.dtype.size();
    let op = if spec.reduces() { format!(", {}", call.op) } else { String::new() };
    format!("{} of {bytes} B ({}{op}, {placement})", call.kind.name(), call.dtype)
}

/// A duplicate of the world's communicator (`MPI_Comm_dup`), freed when dropped. Collective.
/// Errors on it return to the caller (`MPI_ERRORS_RETURN`): an algorithm the library refuses
/// for this communicator (Open MPI's two-process ones on more ranks) is reported, not fatal.
pub struct DupComm {
    comm: ffi::MPI_Comm,
    /// For the line if freeing it fails.
    rank: usize,
    host: String,
}

impl DupComm {
    pub fn of_world(world: &World) -> DupComm {
        // SAFETY: MPI is initialised; `c` is written by MPI_Comm_dup.
        let (rc, c) = unsafe {
            let mut c: ffi::MPI_Comm = std::mem::zeroed();
            let rc = ffi::MPI_Comm_dup(world.raw_comm(), &mut c);
            (rc, c)
        };
        world.check(rc, "MPI_Comm_dup", "the duplicate communicator of a forced algorithm");
        // (A duplicate inherits the world's MPI_ERRORS_RETURN; set it anyway, it is what we rely on.)
        world.check(mpi_error::return_errors(c), "MPI_Comm_set_errhandler", "the duplicate communicator");
        DupComm { comm: c, rank: world.rank, host: world.host().to_string() }
    }
}

impl Drop for DupComm {
    fn drop(&mut self) {
        // SAFETY: a communicator we created; every rank drops it at the same point.
        let rc = unsafe { ffi::MPI_Comm_free(&mut self.comm) };
        mpi_error::check(rc, "MPI_Comm_free", self.rank, &self.host, || "the duplicate communicator's release".into());
    }
}

/// One group's communicator (`MPI_Comm_split` of the world by colour, ordered by key), with
/// `MPI_ERRORS_RETURN` like every communicator of ours, freed (collectively over the group) when
/// dropped. This rank's rank and the group's size are MPI's.
pub struct GroupComm {
    comm: ffi::MPI_Comm,
    pub rank: usize,
    pub size: usize,
    /// For the line if freeing it fails.
    world_rank: usize,
    host: String,
}

impl GroupComm {
    /// This rank's communicator in the group of `color`, ordered by `key`. Collective over the
    /// world: every rank calls it, with its own colour and key. A failed call ends the job with
    /// one line ([`crate::mpi_error`]).
    pub fn split(world: &World, color: u32, key: usize) -> GroupComm {
        let during = "the split of the world into groups (--groups)";
        let color = c_int::try_from(color).unwrap_or(c_int::MAX);
        // SAFETY: MPI is initialised; `c` is written by MPI_Comm_split.
        let (rc, c) = unsafe {
            let mut c: ffi::MPI_Comm = std::mem::zeroed();
            let rc = ffi::MPI_Comm_split(world.raw_comm(), color, key as c_int, &mut c);
            (rc, c)
        };
        world.check(rc, "MPI_Comm_split", during);
        world.check(mpi_error::return_errors(c), "MPI_Comm_set_errhandler", during);
        let (mut rank, mut size) = (0 as c_int, 0 as c_int);
        // SAFETY: a live communicator and out-pointers to locals.
        world.check(unsafe { ffi::MPI_Comm_rank(c, &mut rank) }, "MPI_Comm_rank", during);
        // SAFETY: as above.
        world.check(unsafe { ffi::MPI_Comm_size(c, &mut size) }, "MPI_Comm_size", during);
        GroupComm {
            comm: c,
            rank: rank as usize,
            size: size as usize,
            world_rank: world.rank,
            host: world.host().into(),
        }
    }

    /// The raw communicator (the NCCL backend's barriers in a group).
    pub fn raw(&self) -> ffi::MPI_Comm {
        self.comm
    }
}

impl Drop for GroupComm {
    fn drop(&mut self) {
        // SAFETY: a communicator we created; every member drops it at the same point.
        let rc = unsafe { ffi::MPI_Comm_free(&mut self.comm) };
        mpi_error::check(rc, "MPI_Comm_free", self.world_rank, &self.host, || {
            "the release of a group communicator".into()
        });
    }
}

/// Refuse, up front, a sweep that would crash inside the MPI library itself, with what to do
/// instead. Known: MPICH 4.0 (ch4 device collectives) segfaults in an in-place `MPI_Reduce` at
/// a root other than 0 from 2744 B on (reproduced with a bare C program, Debian's MPICH 4.0.2);
/// `MPIR_CVAR_DEVICE_COLLECTIVES=none` avoids it.
pub fn known_faults(world: &World, opts: &crate::options::Options) -> Result<()> {
    let mpich_4_0 = world
        .library_version
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(3)
        .any(|w| w[0] == "MPICH" && w[1] == "Version:" && w[2].starts_with("4.0"));
    let device_collectives_off = std::env::var("MPIR_CVAR_DEVICE_COLLECTIVES").is_ok_and(|v| v == "none");
    if mpich_4_0
        && !device_collectives_off
        && world.size > 1
        && opts.root != 0
        && opts.collectives.contains(&Kind::Reduce)
        && opts.max_bytes >= 2744
    {
        return Err(Error::usage(format!(
            "-r/--root {}: MPICH 4.0 crashes (segfault) in an in-place reduce at a root other than 0 from 2744 B on; \
             use -r 0, or set MPIR_CVAR_DEVICE_COLLECTIVES=none to measure it without the device collectives",
            opts.root
        )));
    }
    Ok(())
}

impl Backend for MpiBackend {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn convention(&self) -> Convention {
        Convention::Mpi
    }

    fn describe(&self) -> Vec<String> {
        let imp = match self.implementation {
            Implementation::Native => "native (the MPI library's own collectives)",
            Implementation::Ring => "ring (all-reduce, reduce-scatter, all-gather over MPI_Sendrecv)",
            Implementation::RecursiveDoubling => "recursive-doubling (all-reduce over MPI_Sendrecv)",
            Implementation::Counts => "counts (the library's MPI_Reduce_scatter and MPI_Allgatherv, equal counts)",
        };
        let mut d = vec![format!("MPI library: {}", self.version), format!("implementation: {imp}")];
        d.extend(super::host::heap_note());
        d
    }

    fn timed_function(&self, kind: Kind) -> Option<&'static str> {
        Some(self.function(kind))
    }

    fn algorithm(&mut self, call: &Call) -> (String, &'static str) {
        if self.implementation.own() {
            return (format!("{}(coll-bench)", self.implementation.name()), "coll-bench");
        }
        if self.implementation == Implementation::Counts {
            // The decision tables coll-bench carries are those of the functions it times by
            // default (MPI_Reduce_scatter_block, MPI_Allgather): not these.
            return (crate::record::UNKNOWN_ALGORITHM.to_string(), "not reported");
        }
        // Read at set-up on rank 0 alone (`new`): the other ranks report nothing.
        let Some(settings) = self.settings.as_ref() else {
            return (crate::record::UNKNOWN_ALGORITHM.to_string(), "not reported");
        };
        settings.decide(call.kind, self.nranks, (call.layout.count * call.dtype.size()) as u64)
    }

    fn supports(&self, dtype: DType) -> Result<()> {
        match datatype(dtype) {
            Some(_) => Ok(()),
            None => Err(Error::usage(format!(
                "-d/--datatype: {dtype} is not supported by the mpi backend (MPI has no standard 16- or 8-bit float type); expected int8, uint8, int32, uint32, int64, uint64, float32 or float64"
            ))),
        }
    }

    fn allocate(&mut self, send_bytes: usize, recv_bytes: usize) -> Result<()> {
        // Free first so the peak never holds old and new buffers together.
        self.send = HostBuffer::empty();
        self.recv = HostBuffer::empty();
        self.scratch = HostBuffer::empty();
        self.send = HostBuffer::new(send_bytes, 0)?;
        self.recv = HostBuffer::new(recv_bytes, SENTINEL)?;
        if self.implementation.own() {
            // Recursive doubling receives a whole buffer; the rings at most two blocks.
            self.scratch = HostBuffer::new(send_bytes.max(recv_bytes) + 64, 0)?;
        }
        Ok(())
    }

    fn write(&mut self, buf: Buf, len: usize, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        let b = self.buffer(buf);
        f(&mut b.bytes_mut()[..len]);
        Ok(())
    }

    fn read(&mut self, buf: Buf, len: usize, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let b = self.buffer(buf);
        f(&b.bytes()[..len]);
        Ok(())
    }

    /// `MPI_Sendrecv` of bytes on our communicator (`MPI_PROC_NULL` for a side left out), timed
    /// with `MPI_Wtime`.
    fn exchange(&mut self, to: Option<usize>, from: Option<usize>, bytes: usize) -> Result<f64> {
        let (scount, rcount) = (if to.is_some() { bytes } else { 0 }, if from.is_some() { bytes } else { 0 });
        assert!(scount <= self.send.len() && rcount <= self.recv.len(), "exchange of {bytes} B beyond the buffers");
        // SAFETY: constants of the MPI library, read only.
        let (null, dtype) = unsafe {
            (ffi::RSMPI_PROC_NULL, if self.null_datatype { ffi::RSMPI_DATATYPE_NULL } else { ffi::RSMPI_UINT8_T })
        };
        let peer = |p: Option<usize>| p.map_or(null, |p| p as c_int);
        let (send, recv) = (self.send.bytes().as_ptr().cast(), self.recv.bytes_mut().as_mut_ptr().cast());
        // SAFETY: `scount` bytes at our send buffer, room for `rcount` in our receive buffer
        // (checked above); MPI is initialised.
        let (t, r) = unsafe {
            let t0 = ffi::RSMPI_Wtime();
            let r = self.sendrecv(send, scount as c_int, peer(to), recv, rcount as c_int, peer(from), dtype, 7);
            (ffi::RSMPI_Wtime() - t0, r)
        };
        if let Err(f) = r {
            let what = format!("an exchange of {bytes} B with ranks {to:?} (to) and {from:?} (from)");
            let line = mpi_error::line(f.call, &what, self.world_rank, &self.host, &mpi_error::error_string(f.rc));
            mpi_error::fail(&line);
        }
        Ok(t)
    }

    fn run(&mut self, call: &Call, iters: usize, batch: usize, samples: &mut Vec<f64>) -> Result<()> {
        let p = self.prepare(call)?;
        let batch = batch.max(1);
        // Ping-pong pairs time a round trip; report one way.
        let round_trip = if call.kind == Kind::PingPong && p.partner != self.rank as c_int { 2.0 } else { 1.0 };
        let scale = 1.0 / (batch as f64 * round_trip);
        samples.clear();
        samples.reserve(iters / batch);
        // SAFETY: MPI is initialised and the pointers are ours (see `call_once`).
        let timed = unsafe {
            (|| -> Checked {
                ok("MPI_Barrier", ffi::MPI_Barrier(self.comm))?;
                let mut t0 = ffi::RSMPI_Wtime();
                for _ in 0..iters / batch {
                    if let Some(d) = self.arrival_delay {
                        std::thread::sleep(d);
                        t0 = ffi::RSMPI_Wtime();
                    }
                    for _ in 0..batch {
                        self.call_once(&p)?;
                        if self.blocking {
                            ok("MPI_Barrier", ffi::MPI_Barrier(self.comm))?;
                        }
                    }
                    let t1 = ffi::RSMPI_Wtime();
                    samples.push((t1 - t0) * scale);
                    super::sample_taken();
                    t0 = t1;
                }
                Ok(())
            })()
        };
        self.settle(call, timed)
    }

    /// The check's one call: no barrier in front (nothing is timed against the other ranks;
    /// at 128 ranks a barrier costs as much as the call), its time the one sample.
    fn run_plain(&mut self, call: &Call, samples: &mut Vec<f64>) -> Result<()> {
        let p = self.prepare(call)?;
        samples.clear();
        // SAFETY: as in `run`.
        let done = unsafe {
            let t0 = ffi::RSMPI_Wtime();
            self.call_once(&p).map(|()| samples.push(ffi::RSMPI_Wtime() - t0))
        };
        self.settle(call, done)
    }
}

impl MpiBackend {
    /// What a failed call becomes.
    fn settle(&self, call: &Call, done: Checked) -> Result<()> {
        match done {
            Ok(()) => Ok(()),
            // tune: the library refusing a forced algorithm on this communicator refuses it on
            // every rank; the candidate is left out (an error agreed on, as before).
            Err(f) if self.dup => Err(Error::setup(self.failure(call, &f))),
            // A failed call ends the job here (one line, exit code 2): the other ranks may be
            // blocked in the same collective, so it cannot be agreed on like an `Error`.
            Err(f) => mpi_error::fail(&self.failure(call, &f)),
        }
    }
}
