//! `-R/--register`: the timed buffers from NCCL's allocator, registered with the communicator
//! the calls run on, as nccl-tests' `-R` (`src/common.cu`: `ncclMemAlloc`, then
//! `ncclCommRegister` for `-R 1` or `ncclCommWindowRegister(…, NCCL_WIN_COLL_SYMMETRIC)` for
//! `-R 2`, on the whole buffer, once; deregistered before the memory is freed).
//!
//! NCCL's rules, read in its source (`src/register/register.cc`, `src/dev_runtime.cc`,
//! `src/allocator.cc`) and kept by the stand-in (`fake/fake_nccl.c`):
//! - `ncclMemAlloc` gives cuMem memory (plain `cudaMalloc` where the driver has no cuMem);
//!   symmetric windows and NVLS registration need it, so both levels allocate through it.
//! - `ncclCommRegister` is local (no peer takes part); it takes any device memory, and a handle
//!   NCCL does not know is refused at `ncclCommDeregister` (`ncclInvalidUsage`).
//! - `ncclCommWindowRegister` is collective: every rank of the communicator registers its
//!   windows in the same order (NCCL exchanges them at the group's end; a call outside a group is
//!   a group of its own). It needs cuMem memory (`cuMemRetainAllocationHandle`) at an offset in
//!   its allocation that is a multiple of `NCCL_WIN_REQUIRED_ALIGNMENT`, and where the
//!   communicator has no symmetric-memory support it returns success with a null window.

use super::cuda::{DeviceBuffer, Driver};
use super::ffi::{Nccl, NcclComm, NcclWindow, WIN_COLL_SYMMETRIC};
use std::os::raw::{c_int, c_void};

/// One buffer's registration with a communicator, undone when dropped (before the communicator
/// and the memory go: [`super::NcclBackend`]'s field order).
pub struct Registered {
    nccl: &'static Nccl,
    comm: NcclComm,
    handle: Handle,
}

enum Handle {
    /// `ncclCommRegister`'s handle (null where NCCL skipped the registration, e.g.
    /// `NCCL_LOCAL_REGISTER=0`: it then deregisters nothing).
    Local(*mut c_void),
    /// A symmetric window (`-R 2`).
    Window(NcclWindow),
}

impl Registered {
    /// Whether NCCL made nothing: a null window (no symmetric-memory support on this
    /// communicator) or a skipped local registration.
    pub fn is_null(&self) -> bool {
        match self.handle {
            Handle::Local(h) => h.is_null(),
            Handle::Window(w) => w.is_null(),
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let o = &self.nccl.optional;
        // SAFETY: a handle this communicator gave; the backend waited for the work using it.
        unsafe {
            match self.handle {
                Handle::Local(h) => {
                    if let Some(f) = o.comm_deregister {
                        f(self.comm, h);
                    }
                }
                Handle::Window(w) => {
                    if let (Some(f), false) = (o.comm_window_deregister, w.is_null()) {
                        f(self.comm, w);
                    }
                }
            }
        }
    }
}

/// `len` bytes of device memory from `ncclMemAlloc`, freed by `ncclMemFree`. Only where
/// [`Nccl::cannot_register`] found the functions.
pub(super) fn alloc(nccl: &'static Nccl, drv: &'static Driver, len: usize) -> Result<DeviceBuffer, String> {
    let (Some(mem_alloc), Some(mem_free)) = (nccl.optional.mem_alloc, nccl.optional.mem_free) else {
        return Err("NCCL has no ncclMemAlloc".to_string());
    };
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: an out-pointer to a local; the GPU's context is current.
    nccl.check(unsafe { mem_alloc(&mut ptr, len) }, "ncclMemAlloc", std::ptr::null_mut())?;
    Ok(DeviceBuffer::adopt(drv, ptr as u64, len, mem_free))
}

/// Register `buf` with `comm`: `level` 1 `ncclCommRegister`, 2 a symmetric window (collective:
/// every rank of `comm` calls this for the same buffers in the same order). `settle` waits out
/// `ncclInProgress` on a non-blocking communicator.
pub(super) fn register(
    nccl: &'static Nccl,
    comm: NcclComm,
    buf: &DeviceBuffer,
    level: u32,
    settle: &dyn Fn(c_int, &str) -> Result<(), String>,
) -> Result<Registered, String> {
    let o = &nccl.optional;
    let ptr = buf.ptr as *mut c_void;
    if level == 1 {
        let f = o.comm_register.ok_or("NCCL has no ncclCommRegister")?;
        let mut h: *mut c_void = std::ptr::null_mut();
        // SAFETY: our comm and device memory of `buf.len` bytes; an out-pointer to a local.
        settle(unsafe { f(comm, ptr, buf.len, &mut h) }, "ncclCommRegister")?;
        return Ok(Registered { nccl, comm, handle: Handle::Local(h) });
    }
    let f = o.comm_window_register.ok_or("NCCL has no ncclCommWindowRegister")?;
    let mut w: NcclWindow = std::ptr::null_mut();
    let out: *mut NcclWindow = &mut w;
    // SAFETY: as above. NCCL fills the window at its group's end: this call's return on a
    // blocking communicator, NCCL's thread before `settle` returns on a non-blocking one; so it
    // is read through the pointer NCCL holds, after both.
    settle(unsafe { f(comm, ptr, buf.len, out, WIN_COLL_SYMMETRIC as c_int) }, "ncclCommWindowRegister")?;
    // SAFETY: `out` points at `w`, alive and written by NCCL only before `settle` returned.
    let w = unsafe { out.read_volatile() };
    Ok(Registered { nccl, comm, handle: Handle::Window(w) })
}
