//! An NCCL communicator of ours (destroyed on drop, aborted where the run failed, polled while
//! a non-blocking init or split runs) and how every rank agrees on one: a failure on any rank
//! is every rank's error, and the world's init hears at once of a rank whose init failed
//! ([`Alarm`]). Below the backend and the groups' split, which both make communicators.

use super::ffi::{self, Nccl, NcclComm, UniqueId, NCCL_IN_PROGRESS, NCCL_SUCCESS, UNIQUE_ID_BYTES};
use crate::error::{Error, Result};
use crate::world::World;
use std::os::raw::c_int;
use std::time::Duration;

/// An NCCL communicator: destroyed on drop, or aborted where the run failed.
pub(super) struct Comm {
    pub(super) nccl: &'static Nccl,
    pub(super) raw: NcclComm,
    /// A non-blocking init or split still running ([`Comm::wait_ready`]).
    pub(super) pending: bool,
    /// Whether its calls block (`ncclCommInitRank`, or a split with `blocking = 1`): a group end
    /// on a non-blocking communicator may answer `ncclInProgress` and, from NCCL 2.23, launches
    /// from a thread of its own (`src/group.cc`), so timed calls run on blocking ones.
    pub(super) blocking: bool,
    /// A split still being made: the parent, whose `ncclCommGetAsyncError` says when NCCL's
    /// thread is done, and the heap slot it then writes the child into (NCCL sets `*newcomm`
    /// only once the split is complete: `src/init.cc`, `ncclCommInitChildComm`). Leaked where
    /// never completed, as NCCL may still write into it.
    pub(super) filling: Option<(NcclComm, Box<NcclComm>)>,
}

impl Comm {
    /// Start joining the communicator: non-blocking (`ncclCommInitRankConfig`, `blocking = 0`)
    /// where the library can, so a peer that never joins cannot hold this rank forever; else the
    /// blocking `ncclCommInitRank`. An error here is this rank's own, found at once.
    pub(super) fn start(
        nccl: &'static Nccl,
        nranks: usize,
        id: UniqueId,
        rank: usize,
    ) -> std::result::Result<Comm, String> {
        let mut raw: NcclComm = std::ptr::null_mut();
        let Some(init) = nccl.non_blocking_init() else {
            // SAFETY: out-pointer to a local; the id is the one rank 0 made, passed by value.
            let r = unsafe { (nccl.api.comm_init_rank)(&mut raw, nranks as c_int, id, rank as c_int) };
            nccl.check(r, "ncclCommInitRank", std::ptr::null_mut())?;
            return Ok(Comm { nccl, raw, pending: false, blocking: true, filling: None });
        };
        let mut config = ffi::Config::parent(nccl.version);
        // SAFETY: out-pointer and config are locals (NCCL copies the config before returning).
        let r = unsafe { init(&mut raw, nranks as c_int, id, rank as c_int, &mut config) };
        if r != NCCL_SUCCESS && r != NCCL_IN_PROGRESS {
            let e = nccl.check(r, "ncclCommInitRankConfig", raw);
            if !raw.is_null() {
                Comm { nccl, raw, pending: false, blocking: false, filling: None }.abort();
            }
            e?;
        }
        Ok(Comm { nccl, raw, pending: r == NCCL_IN_PROGRESS, blocking: false, filling: None })
    }

    /// Poll a non-blocking init until it is done, fails, or outlives `limit_s` (from `-T`).
    /// The error says whether it timed out (`true`: waiting for others) or failed here.
    /// A split is polled through its parent until NCCL's thread has filled the slot, then the
    /// child itself. `alarm`: the world's init, where another rank's failure ends the wait.
    pub(super) fn wait_ready(
        &mut self,
        limit_s: Option<f64>,
        what: &str,
        mut alarm: Option<&mut Alarm>,
    ) -> std::result::Result<(), (bool, String)> {
        let t0 = std::time::Instant::now();
        while self.pending {
            let polled = self.filling.as_ref().map_or(self.raw, |f| f.0);
            let mut state: c_int = NCCL_SUCCESS;
            // SAFETY: our comm (or the parent of our split), an out-pointer to a local.
            let r = unsafe { (self.nccl.api.comm_get_async_error)(polled, &mut state) };
            self.nccl.check(r, "ncclCommGetAsyncError", polled).map_err(|e| (false, e))?;
            match state {
                NCCL_SUCCESS => match self.filling.take() {
                    // The split is done: the child is in the slot (null for NCCL_SPLIT_NOCOLOR);
                    // then the child itself is polled.
                    Some((_, slot)) => {
                        self.raw = *slot;
                        self.pending = !self.raw.is_null();
                    }
                    None => self.pending = false,
                },
                NCCL_IN_PROGRESS => {
                    if alarm.as_mut().is_some_and(|a| a.raised()) {
                        return Err((true, format!("{what} given up: it failed on another rank")));
                    }
                    if limit_s.is_some_and(|l| t0.elapsed().as_secs_f64() > l) {
                        return Err((true, format!(
                            "{what} did not finish within {} s (-T/--timeout): a rank's init failed or cannot reach the others",
                            limit_s.unwrap_or(0.0)
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                _ => {
                    let text = self.nccl.error_text(state, polled);
                    return Err((false, format!("NCCL error in {what}: {text}")));
                }
            }
        }
        Ok(())
    }

    /// The error NCCL met in the background, if any.
    pub(super) fn async_error(&self) -> std::result::Result<(), String> {
        let mut state: c_int = NCCL_SUCCESS;
        // SAFETY: our comm, an out-pointer to a local.
        let r = unsafe { (self.nccl.api.comm_get_async_error)(self.raw, &mut state) };
        self.nccl.check(r, "ncclCommGetAsyncError", self.raw)?;
        if state != NCCL_SUCCESS && state != NCCL_IN_PROGRESS {
            return Err(format!("NCCL reported an asynchronous error: {}", self.nccl.error_text(state, self.raw)));
        }
        Ok(())
    }

    pub(super) fn abort(mut self) {
        if !self.raw.is_null() {
            // SAFETY: our comm; not used again (drop sees null).
            unsafe { (self.nccl.api.comm_abort)(self.raw) };
        }
        self.raw = std::ptr::null_mut();
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        if let Some((_, slot)) = self.filling.take() {
            // NCCL's thread may still write the child here.
            Box::leak(slot);
        }
        if !self.raw.is_null() {
            // SAFETY: our comm; the backend waits for its stream before dropping it.
            unsafe { (self.nccl.api.comm_destroy)(self.raw) };
        }
    }
}

/// Agree on a communicator: where another rank failed, abort ours (so we leave without waiting
/// for it) and return the agreed error. Collective.
pub(super) fn agreed_comm(world: &World, comm: std::result::Result<Comm, String>) -> Result<Comm> {
    agreed(world, comm.map(Some))?.ok_or_else(|| Error::setup("NCCL returned no communicator"))
}

/// As [`agreed_comm`], where a rank may hold no communicator (`None`: a rank in no group).
pub(super) fn agreed(world: &World, comm: std::result::Result<Option<Comm>, String>) -> Result<Option<Comm>> {
    let status = world.agree(comm.as_ref().map(|_| ()).map_err(|e| Error::setup(e.clone())));
    match (status, comm) {
        (Ok(()), Ok(c)) => Ok(c),
        (Err(e), c) => {
            if let Ok(Some(c)) = c {
                c.abort();
            }
            Err(e)
        }
        (Ok(()), Err(e)) => Err(Error::setup(e)),
    }
}

/// Wait for a non-blocking init (`what`: the call that started it) within `limit_s` (from `-T`)
/// and agree on the outcome; where any rank failed or gave up, abort ours and return the agreed
/// error. A rank whose init failed is the cause; those that gave up waiting for it are not: agree
/// on failures first, then on time-outs. Collective (a rank without a communicator takes part).
pub(super) fn agreed_ready(
    world: &World,
    mut comm: Option<Comm>,
    limit_s: Option<f64>,
    place: &dyn Fn(String) -> String,
    what: &str,
    mut alarm: Option<&mut Alarm>,
) -> Result<Option<Comm>> {
    let waited = comm.as_mut().map_or(Ok(()), |c| c.wait_ready(limit_s, what, alarm.as_deref_mut()));
    if let (Err((false, _)), Some(a)) = (&waited, alarm) {
        // The others may be waiting for this rank's init: tell them, so they stop at once.
        a.raise();
    }
    let (failed, timed_out) = match waited {
        Ok(()) => (Ok(()), Ok(())),
        Err((false, e)) => (Err(Error::setup(place(e))), Ok(())),
        Err((true, e)) => (Ok(()), Err(Error::setup(place(e)))),
    };
    if let Err(e) = world.agree(failed).and_then(|()| world.agree(timed_out)) {
        if let Some(c) = comm {
            c.abort();
        }
        return Err(e);
    }
    Ok(comm)
}

/// The world's init, where one rank's failure reaches the others at once (they would otherwise
/// wait for it until `-T` runs out, as NCCL's init on their side never ends): a one-byte
/// message to every other rank on a communicator of its own, which every rank polls while it
/// waits ([`Comm::wait_ready`]). [`Alarm::close`] (collective) takes every message sent and
/// frees the communicator.
pub(super) struct Alarm {
    comm: mpi::ffi::MPI_Comm,
    rank: usize,
    size: usize,
    /// The receive posted at the start, for the first message from any rank.
    recv: mpi::ffi::MPI_Request,
    inbox: Box<u8>,
    /// Whether it went off (a message arrived).
    heard: bool,
    sends: Vec<mpi::ffi::MPI_Request>,
    outbox: Box<u8>,
}

/// The tag of [`Alarm`]'s messages.
pub(super) const ALARM_TAG: c_int = 23;

impl Alarm {
    /// Collective over the world.
    pub(super) fn open(world: &World) -> Alarm {
        let mut comm = std::mem::MaybeUninit::<mpi::ffi::MPI_Comm>::uninit();
        // SAFETY: MPI is initialised; out-pointers to locals; the receive's buffer is on the
        // heap and lives until `close` has completed it.
        unsafe {
            mpi::ffi::MPI_Comm_dup(world.raw_comm(), comm.as_mut_ptr());
            let comm = comm.assume_init();
            let mut inbox = Box::new(0u8);
            let mut recv = std::mem::MaybeUninit::<mpi::ffi::MPI_Request>::uninit();
            mpi::ffi::MPI_Irecv(
                (&mut *inbox as *mut u8).cast(),
                1,
                mpi::ffi::RSMPI_UINT8_T,
                mpi::ffi::RSMPI_ANY_SOURCE,
                ALARM_TAG,
                comm,
                recv.as_mut_ptr(),
            );
            Alarm {
                comm,
                rank: world.rank,
                size: world.size,
                recv: recv.assume_init(),
                inbox,
                heard: false,
                sends: Vec::new(),
                outbox: Box::new(1),
            }
        }
    }

    /// This rank's init failed: tell every other rank (once).
    pub(super) fn raise(&mut self) {
        if !self.sends.is_empty() {
            return;
        }
        for p in (0..self.size).filter(|p| *p != self.rank) {
            let mut req = std::mem::MaybeUninit::<mpi::ffi::MPI_Request>::uninit();
            // SAFETY: the buffer is on the heap and lives until `close` waits for the send.
            unsafe {
                mpi::ffi::MPI_Isend(
                    (&*self.outbox as *const u8).cast(),
                    1,
                    mpi::ffi::RSMPI_UINT8_T,
                    p as c_int,
                    ALARM_TAG,
                    self.comm,
                    req.as_mut_ptr(),
                );
                self.sends.push(req.assume_init());
            }
        }
    }

    /// Whether another rank's init failed.
    pub(super) fn raised(&mut self) -> bool {
        if !self.heard {
            let mut flag: c_int = 0;
            // SAFETY: our pending receive.
            unsafe { mpi::ffi::MPI_Test(&mut self.recv, &mut flag, mpi::ffi::RSMPI_STATUS_IGNORE) };
            self.heard = flag != 0;
        }
        self.heard
    }

    /// Collective over the world: every message sent is received (each rank that raised the
    /// alarm sent one to every other), the receive no message matched is cancelled, every
    /// send completed, the communicator freed.
    pub(super) fn close(mut self, world: &World) {
        let raisers = world.sum_u64(!self.sends.is_empty() as u64);
        let mine = raisers - (!self.sends.is_empty()) as u64;
        // SAFETY: our requests and communicator; the buffers live in `self` until here.
        unsafe {
            if mine == 0 {
                mpi::ffi::MPI_Cancel(&mut self.recv);
            }
            mpi::ffi::MPI_Wait(&mut self.recv, mpi::ffi::RSMPI_STATUS_IGNORE);
            for _ in 1..mine {
                mpi::ffi::MPI_Recv(
                    (&mut *self.inbox as *mut u8).cast(),
                    1,
                    mpi::ffi::RSMPI_UINT8_T,
                    mpi::ffi::RSMPI_ANY_SOURCE,
                    ALARM_TAG,
                    self.comm,
                    mpi::ffi::RSMPI_STATUS_IGNORE,
                );
            }
            for r in &mut self.sends {
                mpi::ffi::MPI_Wait(r, mpi::ffi::RSMPI_STATUS_IGNORE);
            }
            mpi::ffi::MPI_Comm_free(&mut self.comm);
        }
    }
}

/// Rank 0's part of step 2.
pub(super) fn unique_id(nccl: &Nccl) -> std::result::Result<[u8; UNIQUE_ID_BYTES], String> {
    let mut id = UniqueId { internal: [0u8; UNIQUE_ID_BYTES] };
    // SAFETY: out-pointer to a local of the right size.
    let r = unsafe { (nccl.api.get_unique_id)(&mut id) };
    nccl.check(r, "ncclGetUniqueId", std::ptr::null_mut())?;
    Ok(id.internal)
}
