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
