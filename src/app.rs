//! The run, from command line to exit code: parse ([`crate::cli`]) → world → check the
//! launcher → agree on the plan → dispatch to a subcommand (the sweep's run:
//! [`crate::sweep_run`]). Every phase boundary is an agreement across ranks, so an error on one
//! rank stops all of them, printed once by rank 0.

use crate::cli::{self, Clap, FileCommand, Plan};
use crate::error::{exit, Error, Result};
use crate::launch;
use crate::world::{World, MPI_UP};
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::Ordering;

/// coll-bench's own large blocks are mappings of their own, so they never move the C library's
/// malloc thresholds under the MPI library ([`crate::memory::OwnHeap`] says why). Here, at the
/// top, so every program built on the crate gets it.
#[global_allocator]
static OWN_HEAP: crate::memory::OwnHeap = crate::memory::OwnHeap;

/// The whole program; returns the exit code.
pub fn main() -> i32 {
    install_panic_hook();
    let mut argv: Vec<String> = match utf8_args() {
        Ok(a) => a,
        Err(line) => {
            // No MPI yet: print once (the launcher's rank 0, or a run without a launcher).
            if launcher_rank().unwrap_or(0) == 0 {
                eprintln!("coll-bench: error: {line}");
            }
            return exit::ERROR;
        }
    };
    // `coll-bench help [SUBCOMMAND]` is `coll-bench [SUBCOMMAND] --help`.
    if argv.get(1).map(String::as_str) == Some("help") {
        let named = argv.get(2).map(String::as_str);
        match named {
            _ if named.is_none_or(|n| cli::SUBCOMMANDS.contains(&n))
                && (argv.len() <= 3 || argv[2..] == ["spec", "from-run"]) =>
            {
                argv = argv.iter().take(1).chain(&argv[2..]).cloned().chain(["--help".to_string()]).collect();
            }
            _ => {
                if launcher_rank().unwrap_or(0) == 0 {
                    let asked = argv[2..].join(" ");
                    let known = cli::SUBCOMMANDS.join(", ");
                    eprintln!("coll-bench: error: help: unknown subcommand '{asked}'; expected one of {known}, spec from-run, or none (coll-bench help [SUBCOMMAND])");
                }
                return exit::ERROR;
            }
        }
    }
    // Subcommands that read files and need no MPI.
    // Launched under mpirun anyway, they run on the launcher's rank 0 only: one help, one file.
    if argv.get(1).is_some_and(|s| cli::FILE_SUBCOMMANDS.contains(&s.as_str())) && launcher_rank().unwrap_or(0) != 0 {
        return exit::OK;
    }
    if let Some(parsed) = cli::parse_files(&argv) {
        // SIGINT/SIGTERM: exit 130/143 with one line, and no placeholder left (outfile::claim).
        crate::report::interrupted::arm(0, None);
        let code = match parsed {
            Ok(Clap::Args(FileCommand::Plot(o))) => crate::plot::main(&o),
            Ok(Clap::Args(FileCommand::Spec(o))) => crate::acceptance::from_run::main(&o),
            Ok(Clap::Args(FileCommand::Compare(o))) => crate::compare::main(&o),
            Ok(Clap::Info(text)) => {
                let _ = crate::report::stdout::out().write_all(text.as_bytes());
                exit::OK
            }
            Err(e) => {
                eprintln!("coll-bench: error: {e}");
                exit::ERROR
            }
        };
        // A file claimed and not written (an error after the claim) leaves no placeholder.
        crate::report::outfile::release_claims();
        return stdout_outcome(code);
    }
    // --one-rank (any subcommand that starts MPI): a run of one rank without a launcher is meant
    // (launch::alone); taken out here, the one place it is read.
    let one_rank = argv.iter().any(|a| a == launch::ONE_RANK_FLAG);
    argv.retain(|a| a != launch::ONE_RANK_FLAG);
    // Old flag spellings: the new ones, with a note each (once, and only for a line that parses).
    let renamed = cli::renamed_flags(&mut argv);
    let parsed = cli::parse(&argv);
    if parsed.is_ok() && launcher_rank().unwrap_or(0) == 0 {
        renamed.iter().for_each(|note| eprintln!("{note}"));
    }
    if let Ok(Clap::Info(text)) = &parsed {
        // --help / --version: print once, without starting MPI.
        if launcher_rank().unwrap_or(0) == 0 {
            let _ = crate::report::stdout::out().write_all(text.as_bytes());
            return stdout_outcome(exit::OK);
        }
        return exit::OK;
    }
    // The launcher's view, read before MPI_Init (a singleton Open MPI sets its own variables).
    let env = environment();
    // tune: what the MPI library reads only at start-up (after `env`, which must show the
    // launcher's view only).
    if matches!(parsed, Ok(Clap::Args(Plan::Tune(_) | Plan::Doctor(_)))) {
        if let Err(line) = crate::tune::prepare_environment(&argv) {
            if launcher_rank().unwrap_or(0) == 0 {
                eprintln!("coll-bench: error: {line}");
            }
            return exit::ERROR;
        }
    }
    // Before MPI_Init and any thread: the heap the MPI library runs on (`--malloc`; by default
    // the allocator an application gets, untouched: backend::host::set_heap says why).
    let malloc = match &parsed {
        Ok(Clap::Args(Plan::Sweep(o))) => o.malloc,
        Ok(Clap::Args(Plan::Tune(o))) => o.sweep.malloc,
        Ok(Clap::Args(Plan::Doctor(o))) => o.sweep.malloc,
        _ => crate::options::Malloc::Default,
    };
    crate::backend::host::set_heap(malloc);
    // srun's tasks without a PMI (no --mpi): an Open MPI build would abort inside MPI_Init, with
    // a banner on every task; said here in one line instead (by the step's task 0), exit 2.
    if let Some(line) = launch::srun_without_pmi(&env, env!("COLL_BENCH_MPI_FAMILY"), open_mpi_has_slurm_pmi()) {
        if launcher_rank().unwrap_or(0) == 0 {
            eprintln!("coll-bench: error: {line}");
        }
        return exit::ERROR;
    }
    // Hydra's PMI socket, read while the process is single-threaded (see `end_under_hydra`).
    let hydra = crate::watchdog::pmi::Pmi::from_env();
    let world = match World::init() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("coll-bench: error: {e}");
            return exit::ERROR;
        }
    };
    // SIGINT/SIGTERM: exit 130/143 with one line (after MPI_Init, which may install its own).
    crate::report::interrupted::arm(world.rank, None);
    let outcome = run(&world, &env, parsed, one_rank);
    // A file claimed and not written (an error after the claim) leaves no placeholder.
    crate::report::outfile::release_claims();
    crate::report::interrupted::ended();
    let mut code = match outcome {
        Ok(code) => code,
        Err(e) => {
            // A world of one that the launcher started many times over (N one-rank jobs: a PMI
            // missing, another MPI's launcher) says it once, from the launcher's rank 0.
            if world.rank == 0 && (world.size > 1 || launcher_rank().unwrap_or(0) == 0) {
                eprintln!("coll-bench: error: {e}");
            }
            exit::ERROR
        }
    };
    let rank = world.rank;
    if rank == 0 {
        // The table and verdict leave this process before any rank can end the job.
        code = stdout_outcome(code);
    }
    if let Some(pmi) = hydra {
        end_under_hydra(&world, pmi, job_exit_code(rank, code));
    }
    drop(world); // MPI_Finalize
    job_exit_code(rank, code)
}

/// `code`, or exit 2 with one line where standard output could not be written: it is an output
/// like any file (report::stdout; a closed pipe is not a failure). Flushed first.
fn stdout_outcome(code: i32) -> i32 {
    let _ = crate::report::stdout::out().flush();
    let code = match crate::report::stdout::failed() {
        Some(why) => {
            eprintln!("coll-bench: error: writing to standard output failed: {why}; the output is incomplete");
            exit::ERROR
        }
        None => code,
    };
    let _ = std::io::stderr().flush();
    code
}

/// The end of a job under Hydra (MPICH's `mpiexec`, also Intel MPI's and MVAPICH's) or Slurm's
/// `srun --mpi=pmi2`, which gives its tasks a PMI socket too (`watchdog::pmi`): every rank
/// passes one barrier (all MPI traffic of the run is over), says `cmd=finalize` to its proxy,
/// and exits with `code`, without `MPI_Finalize`. MPICH 4.0's ch4:ucx finalize closes its UCX
/// endpoints and then waits in a blocking PMI barrier, which stops that rank progressing UCX; a
/// peer still waiting for its disconnect to be acknowledged then waits forever (seen on the
/// test bed across hosts: the table printed, four ranks in `read` on the PMI socket, two in
/// `ucp_worker_progress`, until the time limit; MPICH removed that barrier in 4.2, pull request
/// pmodels/mpich#6596). A rank that has said `cmd=finalize` is off the proxy's books, so its
/// exit code is its own and nobody is killed for it (watchdog::pmi).
fn end_under_hydra(world: &World, pmi: crate::watchdog::pmi::Pmi, code: i32) {
    world.barrier();
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // Whether or not the acknowledgement came, `cmd=finalize` has been said: MPI_Finalize would
    // say it a second time.
    let _ = pmi.finalize();
    // SAFETY: ends the process at once; every output file was closed by the subcommand.
    unsafe { libc::_exit(code) }
}

/// Whether the Open MPI this process loaded has its components for Slurm's PMI-1/PMI-2 libraries
/// (`mca_pmix_s1`, `mca_pmix_s2`: built `--with-pmi`), which let it start under `srun` without
/// `--mpi`. Looked for where Open MPI keeps its components, next to the loaded `libmpi`
/// (`LIBDIR/openmpi/` upstream, `LIBDIR/openmpi/lib/openmpi3/` on Debian).
fn open_mpi_has_slurm_pmi() -> bool {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return false };
    let Some(libmpi) = maps.lines().filter_map(|l| l.split_whitespace().nth(5)).find(|p| p.contains("/libmpi.so"))
    else {
        return false;
    };
    let Some(dir) = std::path::Path::new(libmpi).parent() else { return false };
    ["openmpi", "openmpi/lib/openmpi3"]
        .iter()
        .any(|sub| ["mca_pmix_s1.so", "mca_pmix_s2.so"].iter().any(|c| dir.join(sub).join(c).exists()))
}

/// The exit code of one rank at the job's end. A verdict (exit 1: wrong data, a failed rule) is
/// the same on every rank, and rank 0 carries it alone: a launcher (Open MPI's mpirun, Slurm)
/// that sees a rank end with a non-zero code may end the whole job at once, before it has
/// forwarded what rank 0 printed, so a user whose cluster corrupts data could lose the table
/// that says which elements were wrong. Errors (exit 2) stay on every rank: rank 0 may not know
/// another rank's.
fn job_exit_code(rank: usize, code: i32) -> i32 {
    if rank != 0 && code == exit::WRONG {
        exit::OK
    } else {
        code
    }
}

/// The command line as UTF-8, or one line naming the argument that is not.
fn utf8_args() -> std::result::Result<Vec<String>, String> {
    std::env::args_os()
        .enumerate()
        .map(|(i, a)| {
            a.into_string().map_err(|a| {
                format!(
                    "argument {i} ('{}') is not valid UTF-8; expected UTF-8 text (rename the file or use another path)",
                    crate::error::shown(std::path::Path::new(&a))
                )
            })
        })
        .collect()
}

/// The environment as text; a variable that is not UTF-8 (Open MPI copies the command line into
/// one) is read lossily instead of panicking.
fn environment() -> HashMap<String, String> {
    std::env::vars_os().map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned())).collect()
}

fn launcher_rank() -> Option<usize> {
    let env = environment();
    // torchrun's RANK is not an MPI launcher's: a process it started is a world of one whatever
    // RANK says, and must say why on its own (a stray RANK=5 would otherwise silence the line).
    launch::from_env(&env).ok().flatten().filter(|v| !v.source.starts_with("torchrun")).map(|v| v.rank)
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
        crate::error::ending();
        // `println!` to a standard output that cannot take it (a full disk, /dev/full): the
        // user's output is lost, which is an error of theirs to fix, not an internal one.
        match msg.strip_prefix("failed printing to stdout: ") {
            Some(why) => {
                eprintln!("coll-bench: error: writing to standard output failed: {why}; the output is incomplete")
            }
            None => eprintln!("coll-bench: internal error: {msg}{at}; aborting the job"),
        }
        if MPI_UP.load(Ordering::SeqCst) {
            // SAFETY: MPI is initialised; MPI_Abort does not return.
            unsafe {
                mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, exit::ERROR);
            }
        }
        std::process::exit(exit::ERROR);
    }));
}

/// Every rank must run rank 0's plan: rank 0 broadcasts its parse, every rank compares.
fn agree_plan(world: &World, parsed: Result<Clap<Plan>>) -> Result<Plan> {
    let mine: Result<Plan> = match parsed {
        Ok(Clap::Args(plan)) => Ok(plan),
        Ok(Clap::Info(_)) => Err(Error::usage("--help/--version given on some ranks only")),
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

fn run(world: &World, env: &HashMap<String, String>, parsed: Result<Clap<Plan>>, one_rank: bool) -> Result<i32> {
    let view = launch::from_env(env);
    let launcher = view.clone().and_then(|v| match v {
        // torchrun's variables without an MPI launcher: said so, not blamed on a different MPI.
        Some(v) if v.source.starts_with("torchrun") && world.size == 1 => launch::alone(1, Some(&v), one_rank),
        Some(v) => launch::cross_check(&world.view(), &v),
        None => Ok(()),
    });
    world.agree(launcher.map_err(Error::setup))?;

    let plan = agree_plan(world, parsed)?;
    // One rank, no launcher: nothing but `info` measures anything worth having.
    if !matches!(plan, Plan::HostInfo(_)) {
        let launcher = view.as_ref().ok().and_then(Option::as_ref);
        world.agree(launch::alone(world.size, launcher, one_rank).map_err(Error::usage))?;
    }
    let opts = match plan {
        Plan::Sweep(o) => *o,
        Plan::Pairs(o) => return crate::pairs::run(world, &o),
        Plan::Check(o) => return crate::acceptance::run(world, &o),
        Plan::HostInfo(o) => return crate::info::run(world, &o, env),
        Plan::Tune(o) => return crate::tune::run(world, &o),
        Plan::Step(o) => return crate::step::run(world, &o),
        Plan::Doctor(o) => return crate::doctor::run(world, &o),
    };
    crate::sweep_run::run(world, opts)
}
