//! Where a run gets its NCCL backend: the world's ([`create`]), a group's ([`create_in_group`]),
//! or the parent of a run's groups ([`create_parent`]); and the hidden test path of group
//! communicators (`COLL_BENCH_DEBUG_NCCL_SPLIT`, [`self_test`]). Above the backend, which
//! never names this file.

use super::cuda::{self, DeviceBuffer};
use super::ffi;
use super::split::{check_value, members, rank_list_ordered, Group, Spec, DEBUG_VAR};
use super::{NcclBackend, RunsOn, WorldComm};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::world::World;

/// The backend, ready to run: see the module doc for the bootstrap.
pub fn create(world: &World, opts: &Options) -> Result<Box<dyn Backend>> {
    let env = |k: &str| std::env::var_os(k);
    let mut backend = NcclBackend::new(world, opts, &env, RunsOn::World(world.size), WorldComm::Always)?;
    world.agree(backend.can_launch().map_err(Error::setup))?;
    // The hidden test path of group communicators (see `split`).
    if let Some(spec) = env(DEBUG_VAR) {
        let lines = self_test(&backend, world, &spec.to_string_lossy(), opts.timeout.setup_limit_s())?;
        backend.details.extend(lines);
    }
    Ok(Box::new(backend))
}

/// The backend in this rank's group of colour `color` (`--groups`; `sizes`: every group's size,
/// the same list on every rank): the world's backend (with the world's communicator only where
/// it is the parent of `ncclCommSplit`), then [`NcclBackend::into_group`]. Collective over the
/// world.
pub fn create_in_group(world: &World, opts: &Options, color: u32, sizes: &[usize]) -> Result<Box<dyn Backend>> {
    let env = |k: &str| std::env::var_os(k);
    let backend = NcclBackend::new(world, opts, &env, RunsOn::Groups(sizes), WorldComm::ForSplit)?;
    let backend = backend.into_group(world, color, opts.timeout.setup_limit_s())?;
    world.agree(backend.can_launch().map_err(Error::setup))?;
    Ok(Box::new(backend))
}

/// The parent of a run's group backends (`step`), kept for the whole run: the world's backend,
/// whose communicator is made once, only where the library has `ncclCommSplit` (every group is
/// split from it, [`Backend::group`]); without it each group's communicator comes from its own
/// unique id and no world communicator is made. Its own collectives are never run. Collective.
pub fn create_parent(world: &World, opts: &Options) -> Result<Box<dyn Backend>> {
    let env = |k: &str| std::env::var_os(k);
    let backend = NcclBackend::new(world, opts, &env, RunsOn::Groups(&[]), WorldComm::ForSplit)?;
    // The groups' calls run on split communicators, blocking (else on non-blocking ones from
    // their own unique ids): refused here, before any file or group is made.
    world.agree(backend.can_launch_on(Some(backend.nccl.comm_split().is_some())).map_err(Error::setup))?;
    Ok(Box::new(backend))
}

/// The hidden test path (see the module doc): the header lines, the same on every rank.
pub fn self_test(b: &NcclBackend, world: &World, text: &str, limit_s: Option<f64>) -> Result<Vec<String>> {
    let spec = world.agree(Spec::parse(text, world.size).map_err(Error::usage))?;
    let colors: Vec<Option<u32>> = (0..world.size).map(|r| spec.color(r)).collect();
    let keys: Vec<i32> = (0..world.size).map(|r| spec.key(r, world.size)).collect();
    let group = b.split(world, colors[world.rank], keys[world.rank], limit_s)?;
    let place = |e: String| format!("{DEBUG_VAR}: {e} (rank {} on {}, GPU {})", world.rank, b.host, b.ordinal);
    let expected = group.as_ref().map(|g| members(&colors, &keys, g.color)).unwrap_or_default();
    // Every rank placed right before any collective runs in a group (else they could not meet).
    let placed = match &group {
        None => Ok(None),
        Some(g) => place_in_group(b, g, world.rank, &expected).map(|bufs| Some((g, bufs))),
    };
    let placed = world.agree(placed.map_err(|e| Error::setup(place(e))))?;
    let checked = match &placed {
        None => Ok(()),
        Some((g, bufs)) => run_in_group(b, g, bufs, &expected),
    };
    world.agree(checked.map_err(|e| Error::setup(place(e))))?;
    drop(placed);
    drop(group);
    let mut lines = vec![format!(
        "NCCL split test ({DEBUG_VAR}={text}): {}; in every group the ranks in colour-then-key order, an all-gather of their world ranks and an int32 all-reduce exact",
        b.split_via()
    )];
    let mut seen: Vec<u32> = colors.iter().flatten().copied().collect();
    seen.sort_unstable();
    seen.dedup();
    for c in seen {
        let m = members(&colors, &keys, c);
        let order: Vec<String> = m.iter().map(|r| r.to_string()).collect();
        lines.push(format!("NCCL split group {c}: world ranks {} (in group order)", order.join(",")));
    }
    if let Some(r) = spec.nocolor {
        lines.push(format!("NCCL split: world rank {r} in no group (NCCL_SPLIT_NOCOLOR)"));
    }
    Ok(lines)
}

/// Elements of the self-test's all-reduce.
const CHECK_COUNT: usize = 1024;

/// The self-test's device buffers on one rank of a group, filled.
struct CheckBuffers {
    send: DeviceBuffer,
    recv: DeviceBuffer,
    rank_in: DeviceBuffer,
    gathered: DeviceBuffer,
}

/// One rank's first check of its group, before any collective runs in it: its place (the
/// library's rank and count against colour, key, world rank), then its buffers.
fn place_in_group(
    b: &NcclBackend,
    g: &Group,
    me: usize,
    expected: &[usize],
) -> std::result::Result<CheckBuffers, String> {
    let want = expected.iter().position(|r| *r == me).unwrap_or(usize::MAX);
    if (g.rank, g.size) != (want, expected.len()) {
        return Err(format!(
            "group {}: world rank {me} is rank {} of {} there; colour then key put it at {want} of {} (order {})",
            g.color,
            g.rank,
            g.size,
            expected.len(),
            rank_list_ordered(expected)
        ));
    }
    let len = CHECK_COUNT * 4;
    let bufs = CheckBuffers {
        send: DeviceBuffer::new(b.drv, len)?,
        recv: DeviceBuffer::new(b.drv, len)?,
        rank_in: DeviceBuffer::new(b.drv, 4)?,
        gathered: DeviceBuffer::new(b.drv, 4 * g.size)?,
    };
    let mine: Vec<u8> = (0..CHECK_COUNT).flat_map(|i| check_value(me, i).to_ne_bytes()).collect();
    b.stream.copy_to_device(bufs.send.ptr, &mine)?;
    b.stream.copy_to_device(bufs.rank_in.ptr, &(me as i32).to_ne_bytes())?;
    b.wait_stream()?;
    Ok(bufs)
}

/// The collectives in the group, once every rank is placed right: an all-reduce and an
/// all-gather of world ranks, checked exactly. An NCCL or CUDA error here cannot be agreed on
/// (the group's other ranks may be inside a collective): it ends the job, as in a sweep.
fn run_in_group(
    b: &NcclBackend,
    g: &Group,
    bufs: &CheckBuffers,
    expected: &[usize],
) -> std::result::Result<(), String> {
    let a = &b.nccl.api;
    let (int32, sum) = (ffi::datatype(crate::dtype::DType::Int32), ffi::reduce_op(crate::dtype::Op::Sum));
    let ptr = |d: cuda::CuDevicePtr| d as usize as *mut std::os::raw::c_void;
    let mut sums = vec![0u8; CHECK_COUNT * 4];
    let mut ranks = vec![0u8; 4 * g.size];
    let ran = (|| {
        let (s, c) = (b.stream.raw, g.raw());
        // SAFETY: the buffers are ours and sized for these counts; the group's comm and our
        // stream are live.
        let r = unsafe { (a.all_reduce)(ptr(bufs.send.ptr), ptr(bufs.recv.ptr), CHECK_COUNT, int32, sum, c, s) };
        b.settle_on(c, r, "ncclAllReduce")?;
        // SAFETY: as above; `gathered` holds one int32 per group member.
        let r = unsafe { (a.all_gather)(ptr(bufs.rank_in.ptr), ptr(bufs.gathered.ptr), 1, int32, c, s) };
        b.settle_on(c, r, "ncclAllGather")?;
        b.stream.copy_to_host(&mut sums, bufs.recv.ptr)?;
        b.stream.copy_to_host(&mut ranks, bufs.gathered.ptr)?;
        b.wait_stream()
    })();
    if let Err(e) = ran {
        b.fatal(format!("{DEBUG_VAR}: group {}: {e}", g.color));
    }
    let got: Vec<usize> = ranks.chunks(4).map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]) as usize).collect();
    if got != expected {
        return Err(format!(
            "group {}: the all-gather of world ranks gave {}, expected {}",
            g.color,
            rank_list_ordered(&got),
            rank_list_ordered(expected)
        ));
    }
    for (i, c) in sums.chunks(4).enumerate() {
        let v = i32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
        let want: i32 = expected.iter().map(|r| check_value(*r, i)).sum();
        if v != want {
            return Err(format!("group {}: all-reduce element {i} is {v}, expected {want}", g.color));
        }
    }
    Ok(())
}
