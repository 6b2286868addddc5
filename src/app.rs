//! The run, from command line to exit code: parse → world → agree on options → check the
//! launcher, the backend, memory and outputs → sweep → reports. Every phase boundary is an
//! agreement across ranks, so an error on one rank stops all of them, printed once by rank 0.

use crate::backend::mpi::MpiBackend;
use crate::backend::Backend;
use crate::cli::{self, Parsed};
use crate::error::{exit, Error, Result};
use crate::launch;
use crate::memory;
use crate::options::{BackendKind, CsvTarget, Options};
use crate::record::RunInfo;
use crate::report::csv::CsvReport;
use crate::report::json::JsonReport;
use crate::report::markdown::MarkdownReport;
use crate::report::table::TableReport;
use crate::report::Report;
use crate::sweep::{buffer_bytes, Sweep};
use crate::world::{World, MPI_UP};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// The whole program; returns the exit code.
pub fn main() -> i32 {
    install_panic_hook();
    let mut argv: Vec<String> = std::env::args().collect();
    // `coll-bench help [SUBCOMMAND]` is `coll-bench [SUBCOMMAND] --help`.
    if argv.get(1).map(String::as_str) == Some("help") {
        match argv.get(2).map(String::as_str) {
            None | Some("check" | "pairs" | "plot" | "compare") if argv.len() <= 3 => {
                argv = argv.iter().take(1).chain(argv.get(2)).cloned().chain(["--help".to_string()]).collect();
            }
            _ => {
                if launcher_rank().unwrap_or(0) == 0 {
                    let asked = argv[2..].join(" ");
                    eprintln!("coll-bench: error: help: unknown subcommand '{asked}'; expected one of check, pairs, plot, compare, or none (coll-bench help [SUBCOMMAND])");
                }
                return exit::ERROR;
            }
        }
    }
    // Subcommands that read files and need no MPI.
    // Launched under mpirun anyway, they run on the launcher's rank 0 only: one help, one file.
    match argv.get(1).map(String::as_str) {
        Some("plot" | "compare") if launcher_rank().unwrap_or(0) != 0 => return exit::OK,
        Some("plot") => return crate::plot::main(&argv[1..]),
        Some("compare") => return crate::compare::main(&argv[1..]),
        _ => {}
    }
    let parsed = cli::parse(&argv);
    if let Ok(Parsed::Info(text)) = &parsed {
        // --help / --version: print once, without starting MPI.
        if launcher_rank().unwrap_or(0) == 0 {
            print!("{text}");
        }
        return exit::OK;
    }
    // The launcher's view, read before MPI_Init (a singleton Open MPI sets its own variables).
    let env: HashMap<String, String> = std::env::vars().collect();
    let world = match World::init() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("coll-bench: error: {e}");
            return exit::ERROR;
        }
    };
    let code = match run(&world, &env, parsed) {
        Ok(code) => code,
        Err(e) => {
            if world.rank == 0 {
                eprintln!("coll-bench: error: {e}");
            }
            exit::ERROR
        }
    };
    drop(world); // MPI_Finalize
    code
}

fn launcher_rank() -> Option<usize> {
    let env: HashMap<String, String> = std::env::vars().collect();
    launch::from_env(&env).ok().flatten().map(|v| v.rank)
}

/// A panic on one rank would leave the others waiting forever: print one line and abort the job.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("coll-bench: internal error: {msg}{at}; aborting the job");
        if MPI_UP.load(Ordering::SeqCst) {
            // SAFETY: MPI is initialised; MPI_Abort does not return.
            unsafe {
                mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, exit::ERROR);
            }
        }
        std::process::exit(exit::ERROR);
    }));
}

/// What the command line asks every rank to do.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
enum Plan {
    Sweep(Box<Options>),
    Pairs(Box<crate::pairs::PairsOptions>),
    Check(Box<crate::acceptance::CheckOptions>),
}

/// Every rank must run rank 0's plan: rank 0 broadcasts its parse, every rank compares.
fn agree_plan(world: &World, parsed: Result<Parsed>) -> Result<Plan> {
    let mine: Result<Plan> = match parsed {
        Ok(Parsed::Run(o)) => Ok(Plan::Sweep(o)),
        Ok(Parsed::Pairs(o)) => Ok(Plan::Pairs(o)),
        Ok(Parsed::Check(o)) => Ok(Plan::Check(o)),
        Ok(Parsed::Info(_)) => Err(Error::usage("--help/--version given on some ranks only")),
        Err(e) => Err(e),
    };
    let payload = match &mine {
        Ok(o) => {
            let mut v = vec![1u8];
            v.extend(serde_json::to_vec(o).expect("options serialise"));
            v
        }
        Err(_) => vec![0u8],
    };
    let root_payload = world.broadcast_bytes(0, payload.clone());
    if root_payload[0] == 0 {
        // Rank 0's own error is the one to print; every rank returns it.
        let e = if world.rank == 0 { mine.map(|_| ()) } else { Err(Error::usage("")) };
        world.agree(e)?;
        unreachable!("agree returns the error");
    }
    let same = payload == root_payload;
    let local = if same {
        mine
    } else {
        Err(Error::usage(format!(
            "rank {} on {} parsed different options than rank 0 ({}); every rank must be given the same command line",
            world.rank,
            world.host(),
            match &mine {
                Ok(_) => "its plan differs".to_string(),
                Err(e) => e.to_string(),
            }
        )))
    };
    world.agree(local)
}

pub(crate) fn make_backend(world: &World, opts: &Options) -> Result<Box<dyn Backend>> {
    match opts.backend {
        BackendKind::Mpi => {
            let delay = opts
                .debug_slow_rank
                .filter(|(rank, _)| *rank == world.rank)
                .map(|(_, us)| std::time::Duration::from_micros(us));
            Ok(Box::new(MpiBackend::new(world, &opts.implementation, opts.blocking, delay)?))
        }
        // Collective inside: agrees across ranks at each step of its bootstrap.
        BackendKind::Nccl => crate::backend::nccl::create(world, opts),
    }
}

/// The backend for `opts`, with its types checked, its buffers checked against this host's free
/// memory and allocated. Every step is agreed across ranks.
pub(crate) fn ready_backend(world: &World, opts: &Options) -> Result<Box<dyn Backend>> {
    let mut backend = world.agree(make_backend(world, opts))?;
    world.agree(opts.dtypes.iter().try_for_each(|d| backend.supports(*d)))?;
    if opts.backend == BackendKind::Mpi {
        world.agree(crate::backend::mpi::known_faults(world, opts))?;
    }
    let (send, recv) = buffer_bytes(opts, world.size, world.rank, backend.convention());
    // MPI libraries reduce large messages through a scratch buffer of the message's size.
    let scratch = opts.backend == BackendKind::Mpi && opts.collectives.iter().any(|k| k.spec().reduces());
    let per_rank = memory::per_rank_need(send as u64, recv as u64, scratch);
    let fit = match memory::available_bytes() {
        Some(avail) => memory::check_fit(per_rank, world.local_size, avail, world.host()),
        None => Ok(()),
    };
    world.agree(fit)?;
    world.agree(backend.allocate(send, recv))?;
    Ok(backend)
}

fn csv_path(opts: &Options, timestamp: &chrono::DateTime<chrono::Utc>) -> Option<PathBuf> {
    match &opts.csv {
        CsvTarget::Off => None,
        CsvTarget::Path(p) => Some(p.clone()),
        CsvTarget::Default => Some(crate::report::default_results_path("coll-bench", timestamp)),
    }
}

fn run(world: &World, env: &HashMap<String, String>, parsed: Result<Parsed>) -> Result<i32> {
    let launcher = launch::from_env(env).and_then(|v| match v {
        Some(v) => launch::cross_check(&world.view(), &v),
        None => Ok(()),
    });
    world.agree(launcher.map_err(Error::setup))?;

    let opts = match agree_plan(world, parsed)? {
        Plan::Sweep(o) => *o,
        Plan::Pairs(o) => return crate::pairs::run(world, &o),
        Plan::Check(o) => return crate::acceptance::run(world, &o),
    };
    world.agree(opts.validate_for_world(world.size))?;

    let mut backend = ready_backend(world, &opts)?;

    let now = chrono::Utc::now();
    let info = RunInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        timestamp: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        backend: backend.name().to_string(),
        backend_details: backend.describe(),
        mpi_library: world.library_version.clone(),
        ranks: world.size,
        hosts: world.ranks_by_host(),
        options: opts.clone(),
        pids: world.all_gather(std::process::id()),
    };

    let csv_file = csv_path(&opts, &now);
    // Outputs last, so no file is left behind by a run that never started.
    let reports: Result<Vec<Box<dyn Report>>> = if world.rank == 0 {
        let mut reports: Vec<Box<dyn Report>> = vec![Box::new(TableReport::new(std::io::stdout()))];
        match csv_file.as_ref().map(|p| CsvReport::create(p)).transpose() {
            Ok(Some(csv)) => {
                reports.push(Box::new(csv));
                Ok(reports)
            }
            Ok(None) => Ok(reports),
            Err(e) => Err(e),
        }
        .and_then(|mut reports| {
            if let Some(p) = &opts.json {
                reports.push(Box::new(JsonReport::create(p)?));
            }
            if let Some(p) = &opts.markdown {
                reports.push(Box::new(MarkdownReport::create(p)?));
            }
            if let Some(p) = &opts.plot {
                // Make sure it can be written (directory included); it is drawn at the end.
                crate::report::create_file("--plot", p)?;
                let _ = std::fs::remove_file(p);
            }
            let total: usize = crate::sweep::plan(&opts)
                .iter()
                .map(|(kind, _, _)| crate::sweep::sizes_for(kind.spec(), &opts).len())
                .sum();
            if let Some(bar) = crate::report::progress::ProgressReport::new(total as u64, opts.progress) {
                reports.push(Box::new(bar));
            }
            Ok(reports)
        })
    } else {
        Ok(vec![])
    };
    let mut reports = world.agree(reports)?;
    let begun: Result<()> = reports.iter_mut().try_for_each(|r| r.begin(&info));
    world.agree(begun)?;

    let mut sweep = Sweep::new(world, backend.as_mut(), &opts);
    let mut totals = sweep.run(&mut |p| reports.iter_mut().try_for_each(|r| r.point(&info, p)))?;
    totals.peak_rss_bytes = world.max_u64(memory::peak_rss_bytes());
    let mut ended: Result<()> = reports.iter_mut().try_for_each(|r| r.end(&info, &totals));
    drop(reports); // closes the CSV
    if let (Some(plot), Some(csv), 0, Ok(())) = (&opts.plot, &csv_file, world.rank, &ended) {
        ended = crate::plot::plot_run(csv, plot);
    }
    world.agree(ended)?;
    Ok(if totals.failed() { exit::WRONG } else { exit::OK })
}
