//! The MPI backend: collectives on CPU buffers through the MPI library's own calls, reached via
//! `mpi::ffi` (rsmpi's safe layer has no `MPI_IN_PLACE` and would add a layer to the timed path).
//! All FFI detail of the backend stays in this file.
//!
//! Another implementation of a collective is one more arm in [`Implementation`] and one more
//! name in `IMPLEMENTATIONS`, chosen by `--impl`: `ring` (all-reduce as a ring over
//! `MPI_Sendrecv`) sits beside the library's own.

use super::{Backend, Buf, Call, HostBuffer};
use crate::check::SENTINEL;
use crate::collective::{partner, Convention, Kind};
use crate::dtype::{divide_by_ranks, DType, Op};
use crate::error::{Error, Result};
use crate::world::World;
use mpi::ffi;
use mpi::raw::AsRaw;
use std::os::raw::{c_int, c_void};

extern "C" {
    fn collbench_mpi_in_place() -> *mut c_void;
}

/// Which code runs a collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Implementation {
    /// The MPI library's own collective (`MPI_Allreduce`, …).
    Native,
    /// A ring over point-to-point `MPI_Sendrecv` (all-reduce only): reduce-scatter then
    /// all-gather in n−1 steps each, the textbook bandwidth-optimal algorithm, to set beside
    /// the library's own.
    Ring,
}

impl Implementation {
    pub fn parse(name: &str) -> Option<Implementation> {
        match name {
            "native" => Some(Implementation::Native),
            "ring" => Some(Implementation::Ring),
            _ => None,
        }
    }

    /// The collectives this implementation provides.
    pub fn provides(self, kind: Kind) -> bool {
        match self {
            Implementation::Native => true,
            Implementation::Ring => kind == Kind::AllReduce,
        }
    }
}

pub struct MpiBackend {
    comm: ffi::MPI_Comm,
    rank: usize,
    nranks: usize,
    blocking: bool,
    implementation: Implementation,
    version: String,
    /// Testing only: sleep before each timed batch, outside this rank's timing.
    arrival_delay: Option<std::time::Duration>,
    send: HostBuffer,
    recv: HostBuffer,
    /// The ring's incoming chunk.
    scratch: HostBuffer,
}

/// Everything one call needs, resolved before the timed loop.
struct Prepared {
    kind: Kind,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dtype: ffi::MPI_Datatype,
    op: ffi::MPI_Op,
    root: c_int,
    partner: c_int,
    in_place: bool,
    /// Avg on MPI: sum, then divide this many bytes at `avg_at` by the rank count.
    avg: Option<(DType, *mut u8, usize)>,
    /// Element type and op, for reductions done here (the ring).
    elem: (DType, Op),
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
    /// `arrival_delay`: testing only — make this rank arrive late at every timed batch.
    pub fn new(
        world: &World,
        implementation: &str,
        blocking: bool,
        arrival_delay: Option<std::time::Duration>,
    ) -> Result<MpiBackend> {
        let implementation = Implementation::parse(implementation).ok_or_else(|| {
            Error::usage(format!("--impl: '{implementation}' is not offered by the mpi backend; expected native"))
        })?;
        Ok(MpiBackend {
            comm: world.comm().as_raw(),
            rank: world.rank,
            nranks: world.size,
            blocking,
            implementation,
            version: world.library_version.clone(),
            arrival_delay,
            send: HostBuffer::empty(),
            recv: HostBuffer::empty(),
            scratch: HostBuffer::empty(),
        })
    }

    fn prepare(&mut self, call: &Call) -> Result<Prepared> {
        let dtype = datatype(call.dtype).ok_or_else(|| {
            Error::usage(format!("-d/--datatype: {} is not supported by the mpi backend", call.dtype))
        })?;
        let l = call.layout;
        let elem = call.dtype.size();
        let in_place_ptr = unsafe { collbench_mpi_in_place() };
        let recv_base = self.recv.as_mut_ptr();
        let send_base = self.send.as_mut_ptr();
        let at = |base: *mut u8, elems: usize| if base.is_null() { base } else { unsafe { base.add(elems * elem) } };
        let is_root = self.rank == call.root;
        // (send pointer, receive pointer) as the MPI call wants them.
        let (send, recv): (*const c_void, *mut c_void) = if !call.in_place {
            (send_base as *const c_void, recv_base as *mut c_void)
        } else {
            let input = at(recv_base, l.in_place_input) as *const c_void;
            let output = at(recv_base, l.in_place_output) as *mut c_void;
            match call.kind {
                Kind::AllReduce | Kind::AllGather | Kind::ReduceScatter | Kind::AllToAll => (in_place_ptr, output),
                Kind::Reduce | Kind::Gather if is_root => (in_place_ptr, output),
                Kind::Reduce | Kind::Gather => (input, output),
                Kind::Scatter if is_root => (input, in_place_ptr),
                Kind::Scatter => (input, output),
                Kind::Broadcast | Kind::SendRecv | Kind::Barrier => (input, output),
            }
        };
        // The whole buffer for all-reduce, broadcast, reduce and sendrecv; the per-rank block for
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
        Ok(Prepared {
            kind: call.kind,
            send,
            recv,
            count,
            dtype,
            op: reduce_op(call.op),
            root: call.root as c_int,
            partner: partner(self.rank, self.nranks) as c_int,
            in_place: call.in_place,
            avg,
            elem: (call.dtype, call.op),
        })
    }

    /// Ring all-reduce into `p.recv`. SAFETY: as `call_once`; `scratch` holds a chunk.
    unsafe fn ring_all_reduce(&self, p: &Prepared) {
        let (dtype, op) = p.elem;
        let elem = dtype.size();
        let count = p.count as usize;
        let n = self.nranks;
        let recv = p.recv as *mut u8;
        if !p.in_place && count > 0 {
            std::ptr::copy_nonoverlapping(p.send as *const u8, recv, count * elem);
        }
        if n == 1 || count == 0 {
            return;
        }
        let chunk = |c: usize| (c * count / n, (c + 1) * count / n); // [start, end) in elements
        let (right, left) = (((self.rank + 1) % n) as c_int, ((self.rank + n - 1) % n) as c_int);
        let status = ffi::RSMPI_STATUS_IGNORE;
        let scratch = self.scratch.raw();
        // Reduce-scatter: after n−1 steps this rank holds the whole reduction of chunk rank+1.
        for step in 0..n - 1 {
            let (s0, s1) = chunk((self.rank + n - step) % n);
            let (r0, r1) = chunk((self.rank + n - step - 1) % n);
            ffi::MPI_Sendrecv(
                recv.add(s0 * elem) as *const c_void,
                (s1 - s0) as c_int,
                p.dtype,
                right,
                1,
                scratch as *mut c_void,
                (r1 - r0) as c_int,
                p.dtype,
                left,
                1,
                self.comm,
                status,
            );
            let acc = std::slice::from_raw_parts_mut(recv.add(r0 * elem), (r1 - r0) * elem);
            crate::dtype::combine_into(dtype, op, acc, std::slice::from_raw_parts(scratch, (r1 - r0) * elem));
        }
        // All-gather of the reduced chunks, straight into place.
        for step in 0..n - 1 {
            let (s0, s1) = chunk((self.rank + 1 + n - step) % n);
            let (r0, r1) = chunk((self.rank + n - step) % n);
            ffi::MPI_Sendrecv(
                recv.add(s0 * elem) as *const c_void,
                (s1 - s0) as c_int,
                p.dtype,
                right,
                2,
                recv.add(r0 * elem) as *mut c_void,
                (r1 - r0) as c_int,
                p.dtype,
                left,
                2,
                self.comm,
                status,
            );
        }
    }

    /// One call of the collective. SAFETY: the pointers in `p` point into our buffers, which
    /// `allocate` sized for the largest layout.
    unsafe fn call_once(&self, p: &Prepared) {
        let c = self.comm;
        match (self.implementation, p.kind) {
            (Implementation::Ring, Kind::AllReduce) => self.ring_all_reduce(p),
            (Implementation::Ring, _) => unreachable!("--impl ring is refused up front for other collectives"),
            (Implementation::Native, Kind::AllReduce) => {
                ffi::MPI_Allreduce(p.send, p.recv, p.count, p.dtype, p.op, c);
            }
            (Implementation::Native, Kind::AllGather) => {
                ffi::MPI_Allgather(p.send, p.count, p.dtype, p.recv, p.count, p.dtype, c);
            }
            (Implementation::Native, Kind::ReduceScatter) => {
                ffi::MPI_Reduce_scatter_block(p.send, p.recv, p.count, p.dtype, p.op, c);
            }
            (Implementation::Native, Kind::Broadcast) => {
                // One buffer in MPI: the root sends from its send buffer (out of place) and the
                // others receive into their receive buffers.
                let buf = if self.rank as c_int == p.root { p.send as *mut c_void } else { p.recv };
                ffi::MPI_Bcast(buf, p.count, p.dtype, p.root, c);
            }
            (Implementation::Native, Kind::Reduce) => {
                ffi::MPI_Reduce(p.send, p.recv, p.count, p.dtype, p.op, p.root, c);
            }
            (Implementation::Native, Kind::Gather) => {
                ffi::MPI_Gather(p.send, p.count, p.dtype, p.recv, p.count, p.dtype, p.root, c);
            }
            (Implementation::Native, Kind::Scatter) => {
                ffi::MPI_Scatter(p.send, p.count, p.dtype, p.recv, p.count, p.dtype, p.root, c);
            }
            (Implementation::Native, Kind::AllToAll) => {
                ffi::MPI_Alltoall(p.send, p.count, p.dtype, p.recv, p.count, p.dtype, c);
            }
            (Implementation::Native, Kind::Barrier) => {
                ffi::MPI_Barrier(c);
            }
            (Implementation::Native, Kind::SendRecv) => {
                let me = self.rank as c_int;
                let status = ffi::RSMPI_STATUS_IGNORE;
                if p.partner == me {
                    if p.in_place {
                        ffi::MPI_Sendrecv_replace(p.recv, p.count, p.dtype, me, 0, me, 0, c, status);
                    } else {
                        ffi::MPI_Sendrecv(p.send, p.count, p.dtype, me, 0, p.recv, p.count, p.dtype, me, 0, c, status);
                    }
                } else if me % 2 == 0 {
                    ffi::MPI_Send(p.send, p.count, p.dtype, p.partner, 0, c);
                    ffi::MPI_Recv(p.recv, p.count, p.dtype, p.partner, 0, c, status);
                } else {
                    ffi::MPI_Recv(p.recv, p.count, p.dtype, p.partner, 0, c, status);
                    ffi::MPI_Send(p.send, p.count, p.dtype, p.partner, 0, c);
                }
            }
        }
        if let Some((dtype, ptr, len)) = p.avg {
            divide_by_ranks(dtype, std::slice::from_raw_parts_mut(ptr, len), self.nranks);
        }
    }

    fn buffer(&mut self, buf: Buf) -> &mut HostBuffer {
        match buf {
            Buf::Send => &mut self.send,
            Buf::Recv => &mut self.recv,
        }
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
            Implementation::Ring => "ring (all-reduce over MPI_Sendrecv)",
        };
        vec![format!("MPI library: {}", self.version), format!("implementation: {imp}")]
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
        if self.implementation == Implementation::Ring {
            // One chunk: at most ⌈count / n⌉ elements of at most 8 bytes.
            self.scratch = HostBuffer::new(recv_bytes / self.nranks + 64, 0)?;
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

    fn run(&mut self, call: &Call, iters: usize, batch: usize, samples: &mut Vec<f64>) -> Result<()> {
        let p = self.prepare(call)?;
        let batch = batch.max(1);
        // Ping-pong pairs time a round trip; report one way.
        let round_trip = if call.kind == Kind::SendRecv && p.partner != self.rank as c_int { 2.0 } else { 1.0 };
        let scale = 1.0 / (batch as f64 * round_trip);
        samples.clear();
        samples.reserve(iters / batch);
        // SAFETY: MPI is initialised and the pointers are ours (see `call_once`).
        unsafe {
            ffi::MPI_Barrier(self.comm);
            let mut t0 = ffi::RSMPI_Wtime();
            for _ in 0..iters / batch {
                if let Some(d) = self.arrival_delay {
                    std::thread::sleep(d);
                    t0 = ffi::RSMPI_Wtime();
                }
                for _ in 0..batch {
                    self.call_once(&p);
                    if self.blocking {
                        ffi::MPI_Barrier(self.comm);
                    }
                }
                let t1 = ffi::RSMPI_Wtime();
                samples.push((t1 - t0) * scale);
                t0 = t1;
            }
        }
        Ok(())
    }
}
