//! A 64-byte aligned host buffer whose allocation failure is an error, not an abort.

use crate::error::{Error, Result};
use std::alloc::{alloc, dealloc, Layout};

pub struct HostBuffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain memory owned by this value.
unsafe impl Send for HostBuffer {}

const ALIGN: usize = 64;

impl HostBuffer {
    pub fn empty() -> HostBuffer {
        HostBuffer { ptr: std::ptr::null_mut(), len: 0 }
    }

    /// Allocate `len` bytes and touch every page (filled with `fill`), so first-touch page faults
    /// happen here and not in a timed iteration.
    pub fn new(len: usize, fill: u8) -> Result<HostBuffer> {
        if len == 0 {
            return Ok(HostBuffer::empty());
        }
        let layout =
            Layout::from_size_align(len, ALIGN).map_err(|_| Error::setup(format!("cannot allocate {len} bytes")))?;
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc(layout) };
        if ptr.is_null() {
            return Err(Error::setup(format!(
                "cannot allocate a buffer of {}; lower -e/--maxbytes",
                crate::size::human(len as u64)
            )));
        }
        // SAFETY: freshly allocated, len bytes.
        unsafe { std::ptr::write_bytes(ptr, fill, len) };
        Ok(HostBuffer { ptr, len })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    /// The raw pointer, for FFI writes into a buffer that no Rust reference borrows.
    pub fn raw(&self) -> *mut u8 {
        self.ptr
    }

    pub fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: owned allocation of len bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: owned allocation of len bytes, borrowed uniquely.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: allocated in `new` with this layout.
            unsafe { dealloc(self.ptr, Layout::from_size_align_unchecked(self.len, ALIGN)) }
        }
    }
}

/// What [`steady_heap`] did, for the run's header (`None` before it ran).
static HEAP: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The environment variables through which a user sets glibc's malloc thresholds: when one is
/// set, [`steady_heap`] leaves the allocator as the user asked.
pub const MALLOC_VARIABLES: [&str; 4] =
    ["MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"];

/// Make the process's heap keep what it frees (glibc: `M_MMAP_MAX` 0 and `M_TRIM_THRESHOLD`
/// at its maximum, see mallopt(3)), on every rank before `MPI_Init`.
///
/// Why: MPI libraries allocate a temporary buffer of the message's size inside some collectives
/// on every call (Open MPI 4.1's reduce-scatter-block algorithms: `malloc`, reduce, `free`).
/// With glibc's default, dynamic thresholds, whether that buffer is served from memory the heap
/// already holds or from fresh pages (a new mapping, or the top of the heap given back and taken
/// again) depends on the process's allocation history: it changes from one job to the next, with
/// the sizes and placements run before, and between tune and the sweep. Fresh pages cost a page
/// fault each on every call: 2 ranks, reduce-scatter of 128 KiB measured ~10 µs or ~50 µs by
/// that alone (results/tune-vm.md). With the heap kept, every job measures the steady state, so
/// tune's choice holds in the sweep. Returns the line for the run's header.
pub fn steady_heap() -> String {
    HEAP.get_or_init(|| {
        if let Some(v) = MALLOC_VARIABLES.iter().find(|v| std::env::var_os(v).is_some()) {
            return format!("malloc: as set by {v} (coll-bench leaves it alone)");
        }
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // SAFETY: mallopt only changes glibc's malloc parameters; called before any other
            // thread starts (before MPI_Init).
            let ok = unsafe { libc::mallopt(libc::M_MMAP_MAX, 0) == 1 && libc::mallopt(libc::M_TRIM_THRESHOLD, -1) == 1 };
            if ok {
                return "malloc: freed memory kept in the heap (M_MMAP_MAX 0, M_TRIM_THRESHOLD max), so the MPI library's per-call temporary buffers cost no page faults; set MALLOC_MMAP_MAX_ or MALLOC_TRIM_THRESHOLD_ to choose otherwise".to_string();
            }
            "malloc: glibc's defaults (mallopt refused M_MMAP_MAX/M_TRIM_THRESHOLD)".to_string()
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        {
            "malloc: the C library's defaults (not glibc)".to_string()
        }
    })
    .clone()
}

/// The job environment that gives an application the allocator [`steady_heap`] sets (glibc reads
/// these at start-up): what tune's file needs beside it for the library's algorithms to take the
/// times tune measured.
pub const KEPT_HEAP_ENV: &str = "MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295";

/// Whether [`steady_heap`] kept the heap (it ran, and no malloc variable of the user's stopped it).
pub fn heap_kept() -> bool {
    HEAP.get().is_some_and(|h| h.starts_with("malloc: freed memory kept"))
}

/// The line [`steady_heap`] returned, once it has run.
pub fn heap_note() -> Option<String> {
    HEAP.get().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_filled() {
        let b = HostBuffer::new(1000, 0xA5).unwrap();
        assert_eq!(b.as_ptr() as usize % 64, 0);
        assert!(b.bytes().iter().all(|x| *x == 0xA5));
        assert!(HostBuffer::new(0, 0).unwrap().is_empty());
    }
}
