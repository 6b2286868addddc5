//! Group communicators split off the world's NCCL communicator, for groups of ranks that run
//! their own collectives (the groups feature, `--groups`, builds on [`split`]).
//!
//! Two ways, chosen by what the library has ([`super::ffi::Nccl::comm_split`]):
//! - `ncclCommSplit` (NCCL 2.18 or newer, looked up by symbol): collective over the parent; the
//!   ranks of one colour form a communicator ordered by key, then parent rank; a rank with no
//!   colour (`NCCL_SPLIT_NOCOLOR`) gets none. Non-blocking like the parent, polled within `-T`.
//! - otherwise, one unique id per group: `MPI_Comm_split` with the same colour and key (MPI's
//!   order is NCCL's), the group's first rank makes the id, MPI broadcasts it over the group's
//!   communicator, and every member joins with `ncclCommInitRank(Config)` as the world did.
//!
//! Either way each step is agreed across the whole world (every rank calls [`split`],
//! a rank in no group too), so a failure on one rank is one line from rank 0, never a hang.
//!
//! A hidden test path, `COLL_BENCH_DEBUG_NCCL_SPLIT=N[:R]` (`open::self_test`), splits the world
//! into the groups `rank % N` (rank R in none), keyed so the order differs from the parent's, and
//! checks in every group that each rank sits where colour and key put it (the library's rank and
//! count), an all-gather of the parent ranks in that order, and an exact int32 all-reduce; the
//! header then lists the groups. A failure is one line, exit 2.

use super::comm::{agreed, agreed_ready, unique_id, Alarm, Comm};
use super::ffi::{self, Config, Nccl, NcclComm, UniqueId, NCCL_IN_PROGRESS, NCCL_SUCCESS, UNIQUE_ID_BYTES};
use crate::error::{Error, Result};
use crate::world::World;
use mpi::topology::Color;
use mpi::traits::*;
use std::os::raw::c_int;

/// The hidden test path's variable (see the module doc).
pub const DEBUG_VAR: &str = "COLL_BENCH_DEBUG_NCCL_SPLIT";

/// How group communicators are made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    CommSplit,
    /// One unique id per group; why the library's split is not used.
    UniqueIdPerGroup(String),
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Via::CommSplit => write!(f, "groups by ncclCommSplit"),
            Via::UniqueIdPerGroup(why) => {
                write!(f, "groups by one unique id per group, broadcast over the group's MPI communicator ({why})")
            }
        }
    }
}

/// One rank's communicator in its group.
pub struct Group {
    pub(super) comm: Comm,
    pub color: u32,
    /// This rank's rank and the group's size, as the library reports them.
    pub rank: usize,
    pub size: usize,
}

impl Group {
    /// The raw communicator, for the collectives run in the group.
    pub fn raw(&self) -> NcclComm {
        self.comm.raw
    }

    pub(super) fn into_comm(self) -> Comm {
        self.comm
    }
}

/// The parent ranks of colour `color` in their order in the group: by key, then parent rank
/// (NCCL's and MPI's rule).
pub fn members(colors: &[Option<u32>], keys: &[i32], color: u32) -> Vec<usize> {
    let mut m: Vec<usize> = (0..colors.len()).filter(|r| colors[*r] == Some(color)).collect();
    m.sort_by_key(|r| (keys[*r], *r));
    m
}

/// How [`split`] makes group communicators with this library.
pub fn via(n: &Nccl) -> Via {
    match (n.comm_split(), n.optional.comm_split) {
        (Some(_), _) => Via::CommSplit,
        (None, Some(_)) => Via::UniqueIdPerGroup(format!(
            "NCCL {} predates ncclCommSplit, {}.{}",
            n.version_string(),
            ffi::SPLIT_VERSION.0,
            ffi::SPLIT_VERSION.1
        )),
        (None, None) => Via::UniqueIdPerGroup(format!("the NCCL at {} has no ncclCommSplit", n.location)),
    }
}

/// This rank's communicator in the group of `color` (`None`: in no group, and no
/// communicator), ordered by `key` then world rank. Collective over the world: every rank
/// calls it, with its own colour and key; any rank's failure, or a group whose init outlives
/// `limit_s`, is every rank's error.
pub fn split(
    nccl: &'static Nccl,
    parent: NcclComm,
    world: &World,
    place: &dyn Fn(String) -> String,
    (color, key): (Option<u32>, i32),
    limit_s: Option<f64>,
) -> Result<Option<Group>> {
    let started = match nccl.comm_split() {
        Some(f) => start_split(nccl, f, parent, color, key),
        None => by_unique_id(world, nccl, color, key)?,
    };
    let what = if matches!(via(nccl), Via::CommSplit) { "ncclCommSplit" } else { "ncclCommInitRankConfig" };
    let comm = agreed(world, started.map_err(place))?;
    // As the world's init: a rank whose split fails on NCCL's thread tells the others at
    // once, who would otherwise wait for it to join the child until -T's limit.
    let mut alarm = Alarm::open(world);
    let comm = agreed_ready(world, comm, limit_s, place, what, Some(&mut alarm));
    alarm.close(world);
    let comm = comm?;
    // A split is complete only now: the child (or none, for NCCL_SPLIT_NOCOLOR) is known.
    let comm = match (comm, color) {
        (Some(c), Some(color)) if c.raw.is_null() => {
            Err(format!("ncclCommSplit returned no communicator for colour {color}"))
        }
        (Some(c), None) if c.raw.is_null() => Ok(None),
        (Some(c), None) => {
            c.abort();
            Err("ncclCommSplit returned a communicator for NCCL_SPLIT_NOCOLOR".to_string())
        }
        (c, _) => Ok(c),
    };
    let comm = agreed(world, comm.map_err(place))?;
    // The library's rank and count, agreed on by every rank (one in no group too).
    let placed = match &comm {
        Some(c) => query(c, c.nccl.api.comm_user_rank).and_then(|r| Ok((r, query(c, c.nccl.api.comm_count)?))),
        None => Ok((0, 0)),
    };
    match (world.agree(placed.map_err(|e| Error::setup(place(e)))), comm, color) {
        (Ok((rank, size)), Some(comm), Some(color)) => Ok(Some(Group { comm, color, rank, size })),
        (Ok(_), _, _) => Ok(None),
        (Err(e), comm, _) => {
            if let Some(c) = comm {
                c.abort();
            }
            Err(e)
        }
    }
}

/// `ncclCommUserRank` or `ncclCommCount` of a communicator.
fn query(
    comm: &Comm,
    f: unsafe extern "C" fn(NcclComm, *mut c_int) -> ffi::NcclResult,
) -> std::result::Result<usize, String> {
    let mut v: c_int = -1;
    // SAFETY: a live comm of ours and an out-pointer to a local.
    let r = unsafe { f(comm.raw, &mut v) };
    comm.nccl.check(r, "ncclCommUserRank/ncclCommCount", comm.raw)?;
    usize::try_from(v).map_err(|_| format!("NCCL reported {v} for a group communicator's rank or size"))
}

/// `ncclCommSplit` on this rank (its own error, if any; the caller agrees on it).
fn start_split(
    nccl: &'static Nccl,
    split: unsafe extern "C" fn(NcclComm, c_int, c_int, *mut NcclComm, *mut Config) -> ffi::NcclResult,
    parent: NcclComm,
    color: Option<u32>,
    key: i32,
) -> std::result::Result<Option<Comm>, String> {
    let c = match color {
        Some(c) => c_int::try_from(c).map_err(|_| format!("the group colour {c} does not fit NCCL's int"))?,
        None => ffi::SPLIT_NOCOLOR,
    };
    // On a non-blocking parent NCCL returns at once and its thread writes the child here later
    // (NVIDIA/nccl issue 1472): the slot lives on the heap until the parent says the split is
    // done ([`Comm::wait_ready`]), and is leaked where it never is.
    let mut slot: Box<NcclComm> = Box::new(std::ptr::null_mut());
    let mut config = Config::split(nccl.version);
    // SAFETY: the parent comm is ours and ready; the out-pointer is the heap slot above, which
    // outlives NCCL's use of it; the config is a local (NCCL copies it before returning); the
    // signature is nccl.h's (checked by the ABI test).
    let r = unsafe { split(parent, c, key, &mut *slot, &mut config) };
    if let Err(e) = nccl.check(if r == NCCL_IN_PROGRESS { NCCL_SUCCESS } else { r }, "ncclCommSplit", parent) {
        Box::leak(slot);
        return Err(e);
    }
    // Polled through the parent until NCCL has filled the slot (at once on a blocking parent);
    // the split config's child is blocking.
    Ok(Some(Comm { nccl, raw: std::ptr::null_mut(), pending: true, blocking: true, filling: Some((parent, slot)) }))
}

/// The fallback: the group's MPI communicator carries its first rank's unique id; every member
/// starts joining (its own error, if any, is returned inside; the id is agreed here). Collective
/// over the world.
fn by_unique_id(
    world: &World,
    nccl: &'static Nccl,
    color: Option<u32>,
    key: i32,
) -> Result<std::result::Result<Option<Comm>, String>> {
    let mpi_color = match color.map(i32::try_from) {
        Some(Ok(c)) => Color::with_value(c),
        Some(Err(_)) => return Err(Error::usage(format!("the group colour {color:?} does not fit MPI's int"))),
        None => Color::undefined(),
    };
    let sub = world.comm().split_by_color_with_key(mpi_color, key);
    let first = sub.as_ref().is_some_and(|s| s.rank() == 0);
    let id = if first { unique_id(nccl) } else { Ok([0u8; UNIQUE_ID_BYTES]) };
    let mut id = world.agree(id.map_err(Error::setup))?;
    let Some(sub) = sub else { return Ok(Ok(None)) };
    sub.process_at_rank(0).broadcast_into(&mut id[..]);
    let id = UniqueId { internal: id };
    Ok(Comm::start(nccl, sub.size() as usize, id, sub.rank() as usize).map(Some))
}

/// The hidden test path's groups: `rank % modulus`, rank `nocolor` in none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub modulus: usize,
    pub nocolor: Option<usize>,
}

impl Spec {
    /// `N` or `N:R`, with 1 <= N and R a rank of the world.
    pub fn parse(text: &str, size: usize) -> std::result::Result<Spec, String> {
        let bad = || {
            format!("{DEBUG_VAR}={text}: expected N or N:R (groups rank % N, N >= 1; rank R, below {size}, in none)")
        };
        let (n, r) = match text.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (text, None),
        };
        let modulus: usize = n.trim().parse().ok().filter(|n| *n >= 1).ok_or_else(bad)?;
        let nocolor = match r {
            Some(r) => Some(r.trim().parse::<usize>().ok().filter(|r| *r < size).ok_or_else(bad)?),
            None => None,
        };
        Ok(Spec { modulus, nocolor })
    }

    pub fn color(&self, rank: usize) -> Option<u32> {
        (self.nocolor != Some(rank)).then_some((rank % self.modulus) as u32)
    }

    /// Pairs of ranks share a key, in reverse order: the group's order is neither the parent's
    /// nor its reverse, and ties fall to the parent rank.
    pub fn key(&self, rank: usize, size: usize) -> i32 {
        ((size - 1 - rank) / 2) as i32
    }
}

/// The self-test's all-reduce input: element `i` of world rank `r`.
pub(super) fn check_value(r: usize, i: usize) -> i32 {
    ((r + 1) * (i % 7 + 1)) as i32
}

/// Ranks in the order given: `2,0,3`.
pub(super) fn rank_list_ordered(ranks: &[usize]) -> String {
    let s: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
    if s.is_empty() {
        "none".to_string()
    } else {
        s.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_ordered_by_key_then_parent_rank() {
        let colors = [Some(0), Some(1), Some(0), Some(1), None, Some(0)];
        let keys = [5, 0, 5, 0, 0, 1];
        assert_eq!(members(&colors, &keys, 0), vec![5, 0, 2]);
        assert_eq!(members(&colors, &keys, 1), vec![1, 3]);
        assert!(members(&colors, &keys, 7).is_empty());
    }

    #[test]
    fn the_test_spec_parses_and_keys_reorder_the_groups() {
        assert_eq!(Spec::parse("2", 4), Ok(Spec { modulus: 2, nocolor: None }));
        assert_eq!(Spec::parse("2:3", 4), Ok(Spec { modulus: 2, nocolor: Some(3) }));
        for bad in ["0", "x", "2:4", "2:", "-1", ""] {
            let e = Spec::parse(bad, 4).unwrap_err();
            assert!(e.starts_with(&format!("{DEBUG_VAR}={bad}: expected N or N:R")), "{e}");
        }
        let s = Spec { modulus: 1, nocolor: None };
        let colors: Vec<Option<u32>> = (0..4).map(|r| s.color(r)).collect();
        let keys: Vec<i32> = (0..4).map(|r| s.key(r, 4)).collect();
        // Keys 1,1,0,0: the later pair first, each pair in parent order.
        assert_eq!(members(&colors, &keys, 0), vec![2, 3, 0, 1]);
        let s = Spec { modulus: 2, nocolor: Some(2) };
        let colors: Vec<Option<u32>> = (0..3).map(|r| s.color(r)).collect();
        assert_eq!(colors, vec![Some(0), Some(1), None]);
    }

    #[test]
    fn the_way_groups_are_made_is_named() {
        assert_eq!(Via::CommSplit.to_string(), "groups by ncclCommSplit");
        assert!(Via::UniqueIdPerGroup("x".into()).to_string().ends_with("over the group's MPI communicator (x)"));
    }
}
