//! The heap kept against the C library's defaults, measured in doctor's own run before it gives
//! any allocator advice. For each collective whose point page-faulted, its point is measured
//! again under the defaults and then with freed memory kept for the library's temporaries, back
//! to back, so that a change of the machine's speed between doctor's phases is not taken for the
//! heap's. It runs right after the sweep, on its buffers: the page faults depend on the process's
//! allocation history (docs/sweep.md, "The heap"), and doctor's later phases change it (measured:
//! after tune's algorithms the same reduce-scatter took no faults).
//!
//! The kept heap is made without touching glibc's parameters: `mallopt` at run time would stop
//! glibc's dynamic mmap threshold for the rest of the process (mallopt(3)), and putting the
//! defaults back after it made the library's `MPI_Reduce_scatter` page-fault in doctor's later
//! phases (750-890 µs against 195-230 µs in a bare loop, bench/heap-judgements-vm.md). Instead a
//! free region of the heap is held below a pinned chunk ([`Pin`]): the library's temporaries are
//! served from it and freed back into it, never trimmed at the heap top nor mapped afresh —
//! what `MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295` give an application for the
//! whole run. Unpinning frees the pin, the region joins the top again and glibc trims it as
//! before. A kept run that still page-faults (the region did not serve the temporaries) is not a
//! measurement of the kept heap, and is dropped.

use crate::collective::Kind;
use crate::error::Result;
use crate::options::Options;
use crate::record::Point;
use crate::sweep::Sweep;
use crate::world::World;
use serde::Serialize;

/// Minor page faults per call below this are not a cause (nor measured again here).
pub const FAULTS_NOTED: f64 = 16.0;

/// The pieces the free region is made of, and the pin: below glibc's smallest mmap threshold
/// (128 KiB), so each comes from the heap, and above its tcache and fastbin sizes, so freed
/// neighbours merge (and the freed pin merges the region with the heap top again).
const PIECE: usize = 64 * 1024;

/// A free region of the heap held below a pinned chunk (main arena, this thread's allocations).
struct Pin(*mut libc::c_void);

impl Pin {
    /// Hold about `bytes` free below a pin: pieces taken one after another (from the heap top,
    /// where no free chunk fits them), the last one kept as the pin, so it lies above the others;
    /// `None` where malloc refuses.
    fn hold(bytes: usize) -> Option<Pin> {
        let n = bytes.div_ceil(PIECE) + 1;
        let mut pieces: Vec<*mut libc::c_void> = Vec::with_capacity(n);
        // SAFETY: plain malloc/free of blocks this function owns; each freed once (the pin by
        // `drop`).
        unsafe {
            for _ in 0..n {
                let p = libc::malloc(PIECE);
                if p.is_null() {
                    pieces.iter().for_each(|p| libc::free(*p));
                    return None;
                }
                pieces.push(p);
            }
            let pin = pieces.pop()?;
            pieces.iter().for_each(|p| libc::free(*p));
            Some(Pin(pin))
        }
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        // SAFETY: the pin was malloc'd by `hold` and is freed only here.
        unsafe { libc::free(self.0) }
    }
}

/// One collective's point under the defaults and with the heap kept, back to back (median time
/// per call, µs; minor page faults per call, the rank with most).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeapKept {
    pub collective: Kind,
    pub size_bytes: u64,
    pub default_us: f64,
    pub default_faults_per_call: Option<f64>,
    pub kept_us: f64,
    pub kept_faults_per_call: Option<f64>,
}

impl HeapKept {
    /// The kept heap's gain: the default's time over the kept one's.
    pub fn speedup(&self) -> f64 {
        self.default_us / self.kept_us
    }
}

/// `kinds` at `opts`' size on `backend` (out of place, no ceiling pass) under the defaults, then
/// with the heap kept (a free region of twice the message and 1 MiB, where the host's available
/// memory holds it for every local rank four times over); none where the heap is already kept
/// (`--malloc kept`). A collective whose kept run still page-faults is left out. Collective.
pub fn measure(
    world: &World,
    backend: &mut dyn crate::backend::Backend,
    opts: &Options,
    kinds: &[Kind],
) -> Result<Vec<HeapKept>> {
    if kinds.is_empty() || crate::backend::host::heap_kept() {
        return Ok(vec![]);
    }
    let region = 2 * opts.max_bytes as usize + (1 << 20);
    let fits = crate::memory::available_bytes()
        .is_some_and(|a| (region as u64).saturating_mul(4 * world.local_size as u64) <= a);
    if world.sum_u64(u64::from(fits)) != world.size as u64 {
        return Ok(vec![]);
    }
    let mut o = opts.clone();
    o.collectives = kinds.to_vec();
    let run = |backend: &mut dyn crate::backend::Backend| -> Result<Vec<Point>> {
        let mut points = vec![];
        Sweep::new(world, backend, &o).out_of_place_only().run(&mut |p| {
            points.push(p.without_rank_times());
            Ok(())
        })?;
        Ok(points)
    };
    let default = run(backend)?;
    let pin = Pin::hold(region);
    let held = world.sum_u64(u64::from(pin.is_some())) == world.size as u64;
    let kept = if held { run(backend) } else { Ok(vec![]) };
    drop(pin);
    let kept = kept?;
    Ok(default
        .iter()
        .filter_map(|d| {
            let k = kept.iter().find(|k| k.collective == d.collective)?;
            // Still faulting: the region did not serve the temporaries.
            if k.out_of_place.minor_faults_per_call.is_some_and(|f| f >= FAULTS_NOTED) {
                return None;
            }
            Some(HeapKept {
                collective: d.collective,
                size_bytes: d.size_bytes,
                default_us: d.out_of_place.summary.median_us,
                default_faults_per_call: d.out_of_place.minor_faults_per_call,
                kept_us: k.out_of_place.summary.median_us,
                kept_faults_per_call: k.out_of_place.minor_faults_per_call,
            })
        })
        .collect())
}
