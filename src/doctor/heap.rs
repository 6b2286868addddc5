//! The heap kept against the C library's defaults, measured in doctor's own run before it gives
//! any allocator advice. For each collective whose point page-faulted, its point is measured
//! again under the defaults and then with freed memory kept in the heap (glibc's `mallopt` at
//! run time: `M_MMAP_MAX` 0 and `M_TRIM_THRESHOLD` at its maximum, what `--malloc kept` sets
//! before `MPI_Init` and what [`crate::backend::host::KEPT_HEAP_ENV`] gives an application),
//! back to back, so that a change of the machine's speed between doctor's phases is not taken
//! for the heap's. It runs right after the sweep, on its buffers: the page faults depend on the
//! process's allocation history (docs/sweep.md, "The heap"), and doctor's later phases change it
//! (measured: after tune's algorithms the same reduce-scatter took no faults). The defaults are
//! put back after; setting either parameter stops glibc's dynamic mmap threshold for the rest of
//! the process (mallopt(3)), at the value it has reached, which the later phases run with.

use crate::collective::Kind;
use crate::error::Result;
use crate::options::Options;
use crate::record::Point;
use crate::sweep::Sweep;
use crate::world::World;
use serde::Serialize;

/// glibc's defaults of the two parameters (mallopt(3): `M_TRIM_THRESHOLD` 128 KiB,
/// `M_MMAP_MAX` 65 536), put back after the kept measurement.
const DEFAULT_TRIM_THRESHOLD: i32 = 128 * 1024;
const DEFAULT_MMAP_MAX: i32 = 65536;

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

/// Keep freed memory in the heap (`true`) or put glibc's defaults back; whether mallopt took
/// it. Collective-free; every rank calls it at the same step.
fn keep(on: bool) -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let (mmap_max, trim) = if on { (0, -1) } else { (DEFAULT_MMAP_MAX, DEFAULT_TRIM_THRESHOLD) };
        // SAFETY: mallopt only changes glibc's malloc parameters (it takes the arena lock); no
        // MPI call is in flight on this rank while it runs.
        unsafe { libc::mallopt(libc::M_MMAP_MAX, mmap_max) == 1 && libc::mallopt(libc::M_TRIM_THRESHOLD, trim) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = on;
        false
    }
}

/// `kinds` at `opts`' size on `backend` (out of place, no ceiling pass) under the defaults, then
/// with the heap kept; none where the heap is already kept (`--malloc kept`) or mallopt refuses on some
/// rank. Collective.
pub fn measure(
    world: &World,
    backend: &mut dyn crate::backend::Backend,
    opts: &Options,
    kinds: &[Kind],
) -> Result<Vec<HeapKept>> {
    if kinds.is_empty() || crate::backend::host::heap_kept() {
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
    let took = world.sum_u64(u64::from(keep(true))) == world.size as u64;
    let kept = if took { run(backend) } else { Ok(vec![]) };
    keep(false);
    let kept = kept?;
    Ok(default
        .iter()
        .filter_map(|d| {
            let k = kept.iter().find(|k| k.collective == d.collective)?;
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
