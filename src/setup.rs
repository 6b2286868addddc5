//! One sweep's set-up, on every rank, for every subcommand that sweeps (the sweep itself,
//! `check`'s rules, `tune`, `pairs`' buffers): the backend made from the options, the types it
//! supports kept, the buffers checked against this host's free memory (the one memory-fit check)
//! and allocated, the output paths checked before anything is measured, and the run's context
//! for the reports. Every step is agreed across ranks, so an error on one rank stops all of them.

use crate::backend::mpi::{GroupComm, MpiBackend};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::layout::{Group, Layout};
use crate::memory;
use crate::options::{BackendKind, Options, Policy};
use crate::record::RunInfo;
use crate::sweep::buffer_bytes;
use crate::world::World;
use std::path::Path;

/// The backend `opts` asks for; both are built from the options.
pub fn make_backend(world: &World, opts: &Options) -> Result<Box<dyn Backend>> {
    match opts.backend {
        BackendKind::Mpi => Ok(Box::new(MpiBackend::new(world, opts)?)),
        // Collective inside: agrees across ranks at each step of its bootstrap.
        BackendKind::Nccl => crate::backend::nccl::open::create(world, opts),
    }
}

/// The parent a run's group backends are made from ([`make_group_backend`]), kept for the whole
/// run (`step`, whose layouts each make up to three sets of groups): on NCCL the world's
/// communicator, made once, where the library has `ncclCommSplit` (each group split from it),
/// and none without it (each group joins by its own unique id); on MPI the world's backend.
/// Collective.
pub fn make_parent_backend(world: &World, opts: &Options) -> Result<Box<dyn Backend>> {
    match opts.backend {
        BackendKind::Mpi => make_backend(world, opts),
        BackendKind::Nccl => crate::backend::nccl::open::create_parent(world, opts),
    }
}

/// The host number of every rank, hosts numbered in the order of their first rank.
pub fn host_of_rank(world: &World) -> Vec<usize> {
    let mut out = vec![0; world.size];
    for (h, (_, ranks)) in world.ranks_by_host().iter().enumerate() {
        ranks.iter().for_each(|r| out[*r] = h);
    }
    out
}

/// The groups of `layout` on this world: the same on every rank (computed from the same host
/// map), so refusing a layout needs no agreement; it happens before anything is made.
pub fn groups(world: &World, layout: &Layout) -> Result<Vec<Group>> {
    crate::layout::groups(layout, &host_of_rank(world))
}

/// The groups of `layout` with their hosts, for the reports (the world when it does not fit:
/// it was refused before).
pub fn group_info(world: &World, layout: &Layout) -> Vec<crate::record::GroupInfo> {
    let gs = groups(world, layout).unwrap_or_else(|_| vec![Group { id: 0, ranks: (0..world.size).collect() }]);
    let pairs: Vec<(usize, Vec<usize>)> = gs.into_iter().map(|g| (g.id, g.ranks)).collect();
    crate::record::GroupInfo::of(&pairs, &world.ranks_by_host())
}

/// This rank's place in `groups` for the sweep; refuses a root that is not a rank of every
/// group (`-r` counts within each group).
pub fn member(world: &World, opts: &Options, groups: &[Group]) -> Result<crate::sweep::Member> {
    let group = my_group(world, groups);
    let g = &groups[group];
    let size = g.size();
    let rooted = opts.collectives.iter().any(|k| k.spec().rooted());
    if rooted && opts.root >= size && groups.len() > 1 {
        return Err(crate::error::Error::usage(format!(
            "-r/--root: {} is not a rank of each group (--groups {}: groups of {size} ranks; the root counts within each group); expected 0..={}",
            opts.root,
            opts.groups,
            size - 1
        )));
    }
    if opts.collectives.contains(&crate::collective::Kind::AllToAllV) {
        for p in &opts.patterns {
            p.check_run(size, opts.min_bytes, opts.max_bytes)?;
            if opts.backend == BackendKind::Mpi {
                p.check_mpi_counts(size, &opts.dtypes.iter().map(|d| (d.name(), d.size())).collect::<Vec<_>>())?;
            }
        }
    }
    Ok(crate::sweep::Member {
        group,
        groups: groups.len(),
        rank: g.index_of(world.rank).unwrap_or(0),
        size,
        one_at_a_time: opts.one_group_at_a_time,
    })
}

/// The group of `groups` this rank is in (its index, which is its id).
pub fn my_group(world: &World, groups: &[Group]) -> usize {
    groups.iter().position(|g| g.ranks.contains(&world.rank)).unwrap_or(0)
}

/// The backend on this rank's group of `groups` (one call per set of groups: the step of a
/// layout makes one per dimension): `MPI_Comm_split` by group, keyed by world rank, for MPI;
/// `ncclCommSplit` (or one unique id per group) for NCCL. With a `parent` that makes groups
/// ([`Backend::group`]: NCCL's from [`make_parent_backend`]) the group comes from it, a single
/// group of every rank too; otherwise a single group of every rank is the world's backend
/// itself. Collective over the world.
pub fn make_group_backend(
    world: &World,
    opts: &Options,
    groups: &[Group],
    parent: Option<&dyn Backend>,
) -> Result<Box<dyn Backend>> {
    let color = my_group(world, groups) as u32;
    let sizes: Vec<usize> = groups.iter().map(Group::size).collect();
    if let Some(made) = parent.and_then(|p| p.group(world, opts, color, &sizes)) {
        return made;
    }
    if groups.len() == 1 && groups[0].size() == world.size {
        return make_backend(world, opts);
    }
    match opts.backend {
        BackendKind::Mpi => {
            let backend = MpiBackend::new(world, opts)?;
            let comm = GroupComm::split(world, color, world.rank);
            Ok(Box::new(backend.into_group(comm)?))
        }
        BackendKind::Nccl => crate::backend::nccl::open::create_in_group(world, opts, color, &sizes),
    }
}

/// Keep the types the backend supports: a list with none of them is refused (the first one's
/// reason); from a list with some, the others are dropped and named in the returned note. The
/// same on every rank (the backend decides by type alone).
pub fn fit_dtypes(backend: &dyn Backend, opts: &mut Options) -> Result<Option<String>> {
    let (kept, dropped): (Vec<_>, Vec<_>) = opts.dtypes.iter().partition(|d| backend.supports(**d).is_ok());
    if kept.is_empty() {
        return opts.dtypes.iter().try_for_each(|d| backend.supports(*d)).map(|_| None);
    }
    opts.dtypes = kept;
    Ok((!dropped.is_empty()).then(|| {
        let names: Vec<&str> = dropped.iter().map(|d| d.name()).collect();
        format!("-d/--datatype: dropped {} (not supported by the {} backend)", names.join(", "), backend.name())
    }))
}

/// The largest `-e/--maxbytes` (at least `-b`, or `min_bytes - 1` where even that does not fit)
/// whose buffers, send and receive together, hold at most `limit` bytes (they grow with it).
fn largest_fitting(opts: &Options, nranks: usize, rank: usize, conv: crate::collective::Convention, limit: u64) -> u64 {
    let fits = |max: u64| {
        let mut o = opts.clone();
        o.max_bytes = max;
        let (s, r) = buffer_bytes(&o, nranks, rank, conv);
        (s + r) as u64 <= limit
    };
    let (mut lo, mut hi) = (opts.min_bytes, opts.max_bytes);
    if !fits(lo) {
        return lo.saturating_sub(1);
    }
    // fits(lo) and !fits(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Refuse buffers of `per_rank` bytes that this host's ranks together would not fit in its
/// free memory (`flag` names what to make smaller); agreed.
pub fn fit_memory(world: &World, flag: &str, per_rank: impl Into<u128>) -> Result<()> {
    let fit = match memory::available_bytes() {
        Some(avail) => memory::check_fit(flag, per_rank.into(), world.local_size, avail, world.host()),
        None => Ok(()),
    };
    world.agree(fit)
}

/// The backend for `opts`, with its types checked (unsupported ones dropped from a list that
/// has others: the note says which), its buffers checked against this host's free memory and
/// allocated. Every step is agreed across ranks.
pub fn ready_backend(world: &World, opts: &mut Options) -> Result<(Box<dyn Backend>, Option<String>)> {
    let groups = groups(world, &opts.groups)?;
    let m = member(world, opts, &groups)?;
    let mut backend = world.agree(make_group_backend(world, opts, &groups, None))?;
    let mut note = world.agree(fit_dtypes(backend.as_ref(), opts))?;
    if opts.backend == BackendKind::Mpi {
        world.agree(crate::backend::mpi::known_faults(world, opts))?;
    }
    let (send, recv) = buffer_bytes(opts, m.size, m.rank, backend.convention());
    // The backend's own limit (GPU memory less what NCCL needs for itself): the largest size is
    // lowered to fit, on every rank alike, as nccl-tests does, and the note says so.
    let fit = world.agree(backend.buffer_limit())?;
    let mine = match &fit {
        Some((limit, _)) if (send + recv) as u64 > *limit => {
            largest_fitting(opts, m.size, m.rank, backend.convention(), *limit)
        }
        _ => opts.max_bytes,
    };
    let lowered = u64::MAX - world.max_u64(u64::MAX - mine);
    if lowered < opts.max_bytes {
        let kept = fit.map(|f| f.1).unwrap_or_default();
        if lowered < opts.min_bytes {
            return Err(Error::setup(format!(
                "-b/--minbytes: not even the smallest size fits in GPU memory beside the {kept}; lower -b/--minbytes and -e/--maxbytes"
            )));
        }
        let was = opts.max_bytes;
        opts.max_bytes = lowered;
        let lowered_note = format!(
            "-e/--maxbytes: lowered from {} to {} to fit in GPU memory beside the {kept}",
            crate::size::amount(was),
            crate::size::amount(lowered)
        );
        note = Some(match note {
            Some(n) => format!("{n}; {lowered_note}"),
            None => lowered_note,
        });
    }
    let opts = &*opts;
    let (send, recv) = buffer_bytes(opts, m.size, m.rank, backend.convention());
    // MPI libraries reduce large messages through a scratch buffer of the message's size.
    let scratch = opts.backend == BackendKind::Mpi && opts.collectives.iter().any(|k| k.spec().reduces());
    fit_memory(world, "-e/--maxbytes", memory::per_rank_need(send as u64, recv as u64, scratch))?;
    world.agree(backend.allocate(send, recv))?;
    Ok((backend, note))
}

/// The context of one sweep, for its reports (collective: every rank gives its pid).
pub fn run_info(
    world: &World,
    backend: &dyn Backend,
    opts: &Options,
    now: &chrono::DateTime<chrono::Utc>,
    notes: Vec<String>,
) -> RunInfo {
    RunInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        timestamp: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        backend: backend.name().to_string(),
        backend_details: backend.describe().into_iter().chain(timed_functions(backend, opts)).collect(),
        mpi_library: world.library_version.clone(),
        ranks: world.size,
        hosts: world.ranks_by_host(),
        options: opts.clone(),
        pids: world.all_gather(std::process::id()),
        notes,
        groups: group_info(world, &opts.groups),
        ceiling: None,
    }
}

/// The header's line naming the library function each collective of the run times
/// (`timed: all-reduce MPI_Allreduce, reduce-scatter MPI_Reduce_scatter_block`), where the
/// backend says.
pub fn timed_functions(backend: &dyn Backend, opts: &Options) -> Option<String> {
    let named: Vec<String> = opts
        .collectives
        .iter()
        .filter_map(|k| backend.timed_function(*k).map(|f| format!("{} {f}", k.name())))
        .collect();
    (!named.is_empty()).then(|| format!("timed: {}", named.join(", ")))
}

/// Output paths checked on rank 0, which writes them, before anything is allocated or
/// measured: nothing is created; `inputs` (files the run reads) may not be among them. Agreed.
pub fn check_outputs(world: &World, outputs: &[(&str, &Path)], inputs: &[(&str, &Path)], files: Policy) -> Result<()> {
    world.agree(if world.rank == 0 { crate::report::outfile::check(outputs, inputs, files) } else { Ok(()) })
}

/// Claim the files written whole at the end (`outfile::claim`, rank 0), once checked: a second
/// run given one of the paths is refused at its start.
pub fn claim_outputs(world: &World, outputs: &[(&str, &Path)], files: Policy) -> Result<()> {
    world.agree(if world.rank == 0 {
        outputs.iter().try_for_each(|(flag, path)| crate::report::outfile::claim(flag, path, files))
    } else {
        Ok(())
    })
}

/// The sweep's output paths, with their flags ([`crate::report::outputs::FORMATS`]).
pub fn sweep_outputs(opts: &Options) -> Vec<(&'static str, &Path)> {
    crate::report::outputs::paths(opts)
}

/// The files a sweep reads while it runs: `--pattern matrix=FILE` (no output may be it).
pub fn sweep_inputs(opts: &Options) -> Vec<(&'static str, &Path)> {
    opts.patterns
        .iter()
        .filter_map(|p| match p {
            crate::collective::traffic::Pattern::Matrix(m) => Some(("--pattern matrix", m.path.as_path())),
            _ => None,
        })
        .collect()
}
