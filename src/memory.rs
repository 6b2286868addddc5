//! Refuse, up front, buffers that cannot fit: being killed by the OOM killer halfway through a
//! sweep is the worst way to learn it.

use crate::error::{Error, Result};
use crate::size::amount;

/// Memory a rank needs beyond its two buffers: the program, MPI's own buffers and the samples.
pub const OVERHEAD_BYTES: u64 = 32 << 20;

/// What one rank needs: its two buffers, the library's reduction scratch where it uses one (the
/// size of the larger buffer: Open MPI 4.1 peaked at 208 MiB per rank for 64 MiB all-reduces,
/// 3.25 times the message), and [`OVERHEAD_BYTES`].
/// In u128, so no sum of u64 sizes wraps or saturates and a refusal can say the true need.
pub fn per_rank_need(send: u64, recv: u64, reduction_scratch: bool) -> u128 {
    let scratch = if reduction_scratch { send.max(recv) } else { 0 };
    send as u128 + recv as u128 + scratch as u128 + OVERHEAD_BYTES as u128
}

/// Bytes this machine can still give: `MemAvailable`, capped by a cgroup v2 limit if one is set.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let avail_kib: u64 =
        meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?.split_whitespace().nth(1)?.parse().ok()?;
    let mut avail = avail_kib * 1024;
    let cg = |f: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{f}")).ok().and_then(|s| s.trim().parse::<u64>().ok())
    };
    if let (Some(max), Some(cur)) = (cg("memory.max"), cg("memory.current")) {
        avail = avail.min(max.saturating_sub(cur));
    }
    Some(avail)
}

/// Peak resident memory of this process so far, bytes.
pub fn peak_rss_bytes() -> u64 {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above: `ru` is ours and the right size.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_maxrss as u64 * 1024 // kilobytes on Linux
}

/// Minor page faults of the calling thread so far (`getrusage(RUSAGE_THREAD)`'s `ru_minflt`:
/// the thread that makes the library's calls, not the watchdog's); 0 where the system does not
/// say.
pub fn minor_faults() -> u64 {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    #[cfg(target_os = "linux")]
    let who = libc::RUSAGE_THREAD;
    #[cfg(not(target_os = "linux"))]
    let who = libc::RUSAGE_SELF;
    // SAFETY: as above: `ru` is ours and the right size.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_minflt as u64
}

/// What one minor page fault costs on this host, µs: the fastest of a few rounds of what a
/// library's per-call temporary buffer goes through under a default allocator — a fresh
/// anonymous mapping of 8 MiB written once per page, then unmapped — divided by the faults it
/// took. Measured once per process, by the first caller (a few milliseconds; `mmap` directly,
/// so the C library's heap is left as it was). `None` where it cannot be measured.
pub fn fault_cost_us() -> Option<f64> {
    static COST: std::sync::OnceLock<Option<f64>> = std::sync::OnceLock::new();
    *COST.get_or_init(|| (0..3).filter_map(|_| fault_round(8 << 20)).min_by(f64::total_cmp))
}

fn fault_round(len: usize) -> Option<f64> {
    let page = 4096;
    let (f0, t0) = (minor_faults(), std::time::Instant::now());
    // SAFETY: a private anonymous mapping of `len` bytes, written within its bounds and unmapped
    // here; nothing else sees it.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return None;
        }
        let b = p as *mut u8;
        for at in (0..len).step_by(page) {
            std::ptr::write_volatile(b.add(at), 1);
        }
        libc::munmap(p, len);
    }
    let (faults, s) = (minor_faults().saturating_sub(f0), t0.elapsed().as_secs_f64());
    (faults > 0).then(|| s * 1e6 / faults as f64)
}

/// coll-bench's own allocator (the binary's `#[global_allocator]`): allocations from
/// [`OWN_MAPPING_BYTES`] on (the buffers, long sample lists) are mappings of their own
/// (`mmap`/`munmap`/`mremap`), smaller ones go to the C library's `malloc`.
///
/// Why: glibc moves its mmap threshold up to the size of any mapped chunk it frees (up to
/// 32 MiB), and with it the trim threshold. Were coll-bench's own large blocks (a `--budget 1s`
/// sample list, a buffer re-made between runs) `malloc`ed and freed, the MPI library's per-call
/// temporaries of that size would then come from the heap instead of fresh mappings, with
/// fewer page faults than in an application. Mapped here, they leave the heap and its
/// thresholds as a plain loop around the MPI call would.
pub struct OwnHeap;

/// glibc's default (initial) mmap threshold: from this size on, a block is a mapping of its own.
pub const OWN_MAPPING_BYTES: usize = 128 * 1024;

const PAGE: usize = 4096;

fn mapped(layout: std::alloc::Layout) -> bool {
    layout.size() >= OWN_MAPPING_BYTES && layout.align() <= PAGE
}

// SAFETY: blocks at or above OWN_MAPPING_BYTES are fresh private anonymous mappings (page
// aligned, which covers every alignment `mapped` accepts), unmapped with the size they were
// made with (the layout given back is the one allocated, GlobalAlloc's contract); everything
// else is the system allocator's, handed back to it.
unsafe impl std::alloc::GlobalAlloc for OwnHeap {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        let p = unsafe {
            if !mapped(layout) {
                std::alloc::System.alloc(layout)
            } else {
                let prot = libc::PROT_READ | libc::PROT_WRITE;
                let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
                let p = libc::mmap(std::ptr::null_mut(), layout.size(), prot, flags, -1, 0);
                if p == libc::MAP_FAILED {
                    std::ptr::null_mut()
                } else {
                    p.cast()
                }
            }
        };
        #[cfg(test)]
        if !p.is_null() {
            tally::moved(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            if mapped(layout) {
                self.alloc(layout) // a fresh anonymous mapping reads as zeros
            } else {
                let p = std::alloc::System.alloc_zeroed(layout);
                #[cfg(test)]
                if !p.is_null() {
                    tally::moved(layout.size() as isize);
                }
                p
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        #[cfg(test)]
        tally::moved(-(layout.size() as isize));
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            if mapped(layout) {
                libc::munmap(ptr.cast(), layout.size());
            } else {
                std::alloc::System.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds this function's contract (its doc comment).
        unsafe {
            let new = std::alloc::Layout::from_size_align_unchecked(new_size, layout.align());
            let in_place = |p: *mut u8| {
                #[cfg(test)]
                if !p.is_null() {
                    tally::moved(new_size as isize - layout.size() as isize);
                }
                p
            };
            match (mapped(layout), mapped(new)) {
                (false, false) => in_place(std::alloc::System.realloc(ptr, layout, new_size)),
                (true, true) => {
                    let p = libc::mremap(ptr.cast(), layout.size(), new_size, libc::MREMAP_MAYMOVE);
                    if p == libc::MAP_FAILED {
                        std::ptr::null_mut()
                    } else {
                        in_place(p.cast())
                    }
                }
                // alloc and dealloc count for themselves.
                _ => {
                    let p = self.alloc(new);
                    if !p.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    p
                }
            }
        }
    }
}

/// Unit tests only: the bytes this thread holds from the allocator, so a test can bound what a
/// piece of code keeps (the sweep's reports at thousands of simulated ranks). Counted per
/// thread (tests run side by side); a block freed by another thread than the one that made it
/// is counted on each side, which the tests that read it avoid.
#[cfg(test)]
pub(crate) mod tally {
    use std::cell::Cell;

    thread_local! {
        // (live bytes, highest live bytes since `reset_peak`): const-initialised, no destructor,
        // so the allocator may touch it at any time without allocating.
        static LIVE: Cell<(isize, isize)> = const { Cell::new((0, 0)) };
    }

    pub(crate) fn moved(bytes: isize) {
        let _ = LIVE.try_with(|c| {
            let (live, peak) = c.get();
            let live = live + bytes;
            c.set((live, peak.max(live)));
        });
    }

    /// Bytes this thread holds now (relative to an arbitrary origin: compare two readings).
    pub(crate) fn live() -> isize {
        LIVE.with(|c| c.get().0)
    }

    /// The highest `live` since the last `reset_peak`.
    pub(crate) fn peak() -> isize {
        LIVE.with(|c| c.get().1)
    }

    pub(crate) fn reset_peak() {
        LIVE.with(|c| c.set((c.get().0, c.get().0)));
    }
}

/// Check that `local_ranks` ranks, each needing `per_rank` bytes, fit in `available`.
/// `flag` is the size flag to name (`-e/--maxbytes`, or `pairs -e/--bandwidth-bytes`).
/// `per_rank` is u128 (as [`per_rank_need`]), so the message says the true size, never a
/// saturated 2^64.
pub fn check_fit(flag: &str, per_rank: u128, local_ranks: usize, available: u64, host: &str) -> Result<()> {
    let need = per_rank.saturating_mul(local_ranks as u128);
    if need > available as u128 {
        return Err(Error::usage(format!(
            "{flag}: the buffers need {} per rank × {local_ranks} rank(s) on {host} = {}, but only {} is available; expected a smaller {flag} (or fewer ranks per host)",
            wide_amount(per_rank),
            wide_amount(need),
            amount(available)
        )));
    }
    Ok(())
}

/// [`amount`] of a need that may pass 2^64 bytes: past it, approximate in T.
fn wide_amount(bytes: u128) -> String {
    match u64::try_from(bytes) {
        Ok(b) => amount(b),
        Err(_) => format!("~{:.1}T", bytes as f64 / (1u64 << 40) as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Large blocks are mappings of their own, never the C library's: its count of mapped
    /// chunks does not move (so freeing them cannot move its thresholds); small ones are its.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn own_heap_maps_large_blocks_itself() {
        use std::alloc::{GlobalAlloc, Layout};
        let h = OwnHeap;
        // SAFETY: mallinfo2 only reads glibc's counters.
        let mapped_by_malloc = || unsafe { libc::mallinfo2().hblks };
        let before = mapped_by_malloc();
        let big = Layout::from_size_align(1 << 20, 64).unwrap();
        // SAFETY: non-zero layouts, each block freed with the layout it was made with; bytes
        // written within the block.
        unsafe {
            let p = h.alloc_zeroed(big);
            assert!(!p.is_null() && p as usize % 64 == 0);
            assert_eq!(*p.add((1 << 20) - 1), 0);
            *p.add(12345) = 7;
            let q = h.realloc(p, big, 3 << 20);
            assert_eq!(*q.add(12345), 7);
            assert_eq!(mapped_by_malloc(), before, "glibc mapped a large block");
            // Down to a small block: copied into malloc's heap, the mapping gone.
            let r = h.realloc(q, Layout::from_size_align(3 << 20, 64).unwrap(), 100);
            assert_eq!(*r.add(99), 0);
            h.dealloc(r, Layout::from_size_align(100, 64).unwrap());
        }
        assert_eq!(mapped_by_malloc(), before);
    }

    #[test]
    fn refuses_what_does_not_fit() {
        assert!(check_fit("-e/--maxbytes", 1 << 30, 2, 4 << 30, "h").is_ok());
        let e = check_fit("-e/--maxbytes", 3 << 30, 2, 4 << 30, "node7").unwrap_err().to_string();
        assert!(e.contains("-e/--maxbytes") && e.contains("node7") && e.contains("6G"), "{e}");
        assert!(check_fit("-e/--maxbytes", u64::MAX as u128, 8, 1 << 40, "h").is_err());
        // Past 2^64 bytes: the true size, not a saturated 16777216T (15·2^60 B = 15·2^20 T).
        let e = check_fit("-e/--maxbytes", per_rank_need(15 << 60, 15 << 60, false), 2, 1 << 40, "h")
            .unwrap_err()
            .to_string();
        assert!(e.contains("need ~31457280.0T per rank × 2 rank(s) on h = ~62914560.0T"), "{e}");
    }

    #[test]
    fn need_counts_the_reduction_scratch() {
        let m = 64 << 20;
        assert_eq!(per_rank_need(m, m, false), (2 * m + OVERHEAD_BYTES) as u128);
        assert_eq!(per_rank_need(m, m, true), (3 * m + OVERHEAD_BYTES) as u128);
        assert_eq!(per_rank_need(u64::MAX, 1, true), 2 * u64::MAX as u128 + 1 + OVERHEAD_BYTES as u128);
    }

    #[test]
    fn this_machine_reports_memory() {
        assert!(available_bytes().unwrap() > 0);
        assert!(peak_rss_bytes() > 0);
    }
}
