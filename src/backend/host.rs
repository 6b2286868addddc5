//! A 64-byte aligned host buffer whose allocation failure is an error, not an abort.

use crate::error::{Error, Result};
use crate::options::Malloc;
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

/// What [`set_heap`] did, for the run's header (`None` before it ran).
static HEAP: std::sync::OnceLock<(Malloc, String)> = std::sync::OnceLock::new();

/// The environment variables through which a user sets glibc's malloc thresholds (an
/// application launched the same way gets them too).
pub const MALLOC_VARIABLES: [&str; 4] =
    ["MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"];

/// The heap the MPI library runs on (`--malloc`), on every rank before `MPI_Init` and before any
/// other thread starts. Returns the line for the run's header.
///
/// [`Malloc::Default`] changes nothing: the library allocates as it does in an application. MPI
/// libraries allocate a temporary buffer of the message's size inside some collectives on
/// every call (Open MPI 4.1's all-reduce and reduce-scatter-block: `malloc`, reduce, `free`);
/// under glibc's defaults one above its mmap threshold (at most 32 MiB) is a fresh mapping,
/// page-faulted on every call, and one below it may be given back at the top of the heap and
/// taken again (whether, depends on the process's allocation history). An application pays
/// those faults too, so they are in the number (`minor_faults_per_call` counts them).
///
/// [`Malloc::Kept`] keeps freed memory in the heap (glibc: `M_MMAP_MAX` 0 and `M_TRIM_THRESHOLD`
/// at its maximum, see mallopt(3)): the temporaries cost no page faults, the time is the
/// algorithm's and the same in every job. An application gets it only by exporting
/// [`KEPT_HEAP_ENV`].
pub fn set_heap(malloc: Malloc) -> String {
    HEAP.get_or_init(|| (malloc, heap_line(malloc))).1.clone()
}

fn heap_line(malloc: Malloc) -> String {
    let user = MALLOC_VARIABLES.iter().find(|v| std::env::var_os(v).is_some());
    match malloc {
        Malloc::Default => match user {
            Some(v) => format!("malloc: default: the C library's allocator as {v} in the environment sets it, as an application launched the same way gets it (--malloc kept to keep freed memory in the heap)"),
            None => "malloc: default: the C library's allocator untouched, as an application gets it (--malloc kept to keep freed memory in the heap)".to_string(),
        },
        Malloc::Kept => {
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            {
                // SAFETY: mallopt only changes glibc's malloc parameters; called before any other
                // thread starts (before MPI_Init).
                let ok = unsafe {
                    libc::mallopt(libc::M_MMAP_MAX, 0) == 1 && libc::mallopt(libc::M_TRIM_THRESHOLD, -1) == 1
                };
                let over = user.map(|v| format!(", over {v} in the environment")).unwrap_or_default();
                if ok {
                    return format!("malloc: kept: freed memory kept in the heap (mallopt M_MMAP_MAX 0, M_TRIM_THRESHOLD max{over}), so the MPI library's per-call temporary buffers cost no page faults; an application gets this only with {KEPT_HEAP_ENV}");
                }
                "malloc: kept asked, but mallopt refused M_MMAP_MAX/M_TRIM_THRESHOLD: the C library's allocator as it was".to_string()
            }
            #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
            {
                "malloc: kept asked, but the C library is not glibc: its allocator as it was".to_string()
            }
        }
    }
}

/// The job environment that gives an application the allocator [`Malloc::Kept`] sets (glibc
/// reads these at start-up).
pub const KEPT_HEAP_ENV: &str = "MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295";

/// Whether [`set_heap`] kept the heap (`--malloc kept`, and mallopt took it).
pub fn heap_kept() -> bool {
    HEAP.get().is_some_and(|(m, line)| *m == Malloc::Kept && line.starts_with("malloc: kept: "))
}

/// The line [`set_heap`] returned, once it has run.
pub fn heap_note() -> Option<String> {
    HEAP.get().map(|(_, line)| line.clone())
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
