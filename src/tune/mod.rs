//! `coll-bench tune`: for each collective × size, time every algorithm the MPI library reports
//! (forced through its control variable and a fresh communicator) and coll-bench's own
//! implementations, exactly as the sweep times and checks; report the fastest per size and the
//! speed-up over the library's default; write the library's own tuning file (`--write-rules`);
//! and, with `--verify FILE`, time that file's choices against the library's default in one run.
//!
//! algorithms.rs: what the library reports; choose.rs: the choice per size; rules.rs: the file.

pub mod algorithms;
pub mod choose;
mod collective;
mod discover;
pub mod measure;
mod model;
pub mod rules;
mod table;

use crate::backend::mpi::Implementation;
use crate::backend::mpit::Tool;
use crate::collective::{Convention, Kind};
use crate::error::{exit, Error, Result};
use crate::options::{CsvTarget, Options};
use crate::record::RunInfo;
use crate::report::csv::CsvReport;
use crate::report::Report;
use crate::sweep::buffer_bytes;
use crate::world::World;
use algorithms::Library;
use discover::discover;
pub use model::{MedianFastest, OtherCall, TuneOptions, SKIP_RULE, VERIFY_TOLERANCE};
use std::path::{Path, PathBuf};
use table::say;

/// tune's time budget per size, placement and candidate when `--budget` is not given (the
/// sweep's is 50 ms): 20 ms still gives hundreds of calls at small sizes.
pub const DEFAULT_BUDGET_S: f64 = 0.02;

/// Before `MPI_Init`, on every rank: what the library reads only at start-up. Open MPI forces
/// algorithms only with `coll_tuned_use_dynamic_rules` on (read-only once MPI runs), which
/// changes nothing else (algorithm 0 is its default decision). A variable the user set is left
/// alone. `--verify FILE` is read here, so that an unreadable file is one line before MPI
/// starts; it is not applied: verify forces the file's algorithms size by size, as tune did,
/// beside the library's default in the same run (a file applied to the job would make the
/// default the file's). Returns one line on an unreadable `--verify` file.
pub fn prepare_environment(argv: &[String]) -> std::result::Result<(), String> {
    if std::env::var_os("OMPI_MCA_coll_tuned_use_dynamic_rules").is_none() {
        // SAFETY (edition 2021: safe): single-threaded, before MPI_Init starts any thread.
        std::env::set_var("OMPI_MCA_coll_tuned_use_dynamic_rules", "1");
    }
    let verify = argv
        .iter()
        .position(|a| a == "--verify")
        .and_then(|i| argv.get(i + 1))
        .map(PathBuf::from)
        .or_else(|| argv.iter().find_map(|a| a.strip_prefix("--verify=")).map(PathBuf::from));
    if let Some(path) = verify {
        rules::read(&path).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The tune CSV: the sweep's columns plus these.
/// `skipped`: empty for a cell that was run, else `skipped: ` and the skip rule's reason (the
/// row then has no numbers).
pub const EXTRA_COLUMNS: [&str; 3] = ["algorithm_id", "is_default", "skipped"];

fn check_outputs(o: &TuneOptions) -> Result<()> {
    let mut outputs: Vec<(&str, &Path)> = vec![];
    if let CsvTarget::Path(p) = &o.sweep.csv {
        outputs.push(("--csv", p));
    }
    if let Some(p) = &o.write_rules {
        outputs.push(("--write-rules", p));
    }
    if let Some(p) = &o.sweep.plot {
        outputs.push(("--plot", p));
    }
    let inputs: Vec<(&str, &Path)> = o.verify.iter().map(|p| ("--verify", p.as_path())).collect();
    crate::report::outfile::check(&outputs, &inputs, o.sweep.files)?;
    // The files written whole at the end, claimed now (the CSV is created as the run opens it).
    outputs
        .iter()
        .filter(|(flag, _)| *flag != "--csv")
        .try_for_each(|(flag, path)| crate::report::outfile::claim(flag, path, o.sweep.files))
}

pub fn run(world: &World, o: &TuneOptions) -> Result<i32> {
    let library = Library::of(&world.library_version);
    let verify = match &o.verify {
        Some(p) => Some(world.agree(rules::read(p))?),
        None => None,
    };
    let opts = options_for(world, o, verify.as_ref())?;
    let tool = world.agree(Tool::init())?;
    let all_vars = tool.cvars(&|n| n.contains("algorithm") || n.contains("ALGORITHM"));
    let now = chrono::Utc::now();
    let info = run_info(world, &opts, &now);
    let job = collective::Job {
        world,
        o,
        opts: &opts,
        tool: &tool,
        library,
        verify: verify.as_ref(),
        info: &info,
        quiet: false,
    };
    job.check_verify(&all_vars)?;
    let mut csv = open_csv(world, &opts, &now, &info)?;
    let csv_path = csv.as_ref().map(|c| c.path().to_path_buf());
    print_header(world, &opts, o, verify.is_some());
    if let Some(path) = job.applied_rules_file().filter(|_| !job.quiet) {
        say(world, &format!("# note: a rules file is applied to this job (coll_tuned_dynamic_rules_filename={path}): `default` below is the library's choice with it, not its built-in rules"));
    }

    let mut found = collective::Found::default();
    for &kind in &opts.collectives {
        job.tune(kind, &all_vars, &mut csv, &mut found)?;
    }

    let collective::Found { any_wrong, missed, collective_rules, environment, measured, .. } = found;
    let mut ended: Result<()> = Ok(());
    if let (Some(path), 0) = (&o.write_rules, world.rank) {
        let file = rules::RulesFile { library, collectives: collective_rules, environment, measured };
        ended = write_rules(world, path, &opts, &info, library, file);
    }
    drop(csv);
    if let (Some(plot), Some(csv), 0, Ok(())) = (&opts.plot, &csv_path, world.rank, &ended) {
        ended = crate::plot::plot_run(csv, plot, opts.files);
    }
    world.agree(ended)?;
    // The verdict is rank 0's (it holds the medians).
    let missed = world.max_u64(u64::from(missed && world.rank == 0)) > 0;
    Ok(if any_wrong || missed { exit::WRONG } else { exit::OK })
}

/// What [`alternatives`] measured: per collective and size, the library's default against the
/// fastest algorithm it can select, and against the library's other function where it has one.
pub struct Alternatives {
    pub algorithms: Vec<rules::Measured>,
    pub median_fastest: Vec<MedianFastest>,
    pub calls: Vec<OtherCall>,
}

/// For `doctor`: each of `opts`' collectives at its sizes, every algorithm the library can be
/// made to run (and its other function for the collective) timed against its default as tune
/// times them (interleaved rounds, no skip rule), printing nothing but WRONG lines; per
/// collective and size, the default's time and the fastest the library can select
/// (`algorithm` `default` where none beats it). `go_on(kind)` is asked before each collective,
/// on every rank, and must answer alike on every rank (doctor's time limit): `false` leaves that
/// collective out. Collective; the environment must have been prepared
/// ([`prepare_environment`]) before `MPI_Init`.
pub fn alternatives(world: &World, opts: &Options, go_on: &mut dyn FnMut(Kind) -> bool) -> Result<Alternatives> {
    let o = TuneOptions { sweep: opts.clone(), write_rules: None, verify: None, in_place: false, no_skip: true };
    let opts = options_for(world, &o, None)?;
    let library = Library::of(&world.library_version);
    let tool = world.agree(Tool::init())?;
    let all_vars = tool.cvars(&|n| n.contains("algorithm") || n.contains("ALGORITHM"));
    let info = run_info(world, &opts, &chrono::Utc::now());
    let job =
        collective::Job { world, o: &o, opts: &opts, tool: &tool, library, verify: None, info: &info, quiet: true };
    let mut found = collective::Found::default();
    for &kind in &opts.collectives {
        if go_on(kind) {
            job.tune(kind, &all_vars, &mut None, &mut found)?;
        }
    }
    Ok(Alternatives { algorithms: found.measured, median_fastest: found.median_fastest, calls: found.calls })
}

/// For `doctor`'s plan: how many candidates [`alternatives`] weighs for each of `kinds` on this
/// world (the default, the library's algorithms, its other function), as tune discovers them.
pub fn candidate_counts(world: &World, kinds: &[Kind]) -> Result<Vec<(Kind, usize)>> {
    let library = Library::of(&world.library_version);
    let tool = world.agree(Tool::init())?;
    let all_vars = tool.cvars(&|n| n.contains("algorithm") || n.contains("ALGORITHM"));
    Ok(kinds.iter().map(|&k| (k, discover(&tool, library, k, world.size, &all_vars).candidates.len())).collect())
}

/// The sweep's options as tune runs them, checked on every rank before anything is measured:
/// with `--verify`, the file's collectives and sizes; the outputs, the library's known faults and
/// the memory the largest collective needs (once for the library, once per coll-bench
/// implementation, with its scratch).
fn options_for(world: &World, o: &TuneOptions, verify: Option<&rules::RulesFile>) -> Result<Options> {
    let mut opts = o.sweep.clone();
    if let Some(v) = verify {
        let mut kinds: Vec<Kind> = vec![];
        for m in &v.measured {
            if !kinds.contains(&m.kind) {
                kinds.push(m.kind);
            }
        }
        if kinds.is_empty() {
            return world.agree(Err(Error::usage("tune --verify: the file records no measurements to compare with")));
        }
        opts.collectives = kinds;
        opts.min_bytes = v.measured.iter().map(|m| m.size_bytes).min().unwrap_or(8);
        opts.max_bytes = v.measured.iter().map(|m| m.size_bytes).max().unwrap_or(8);
        opts.step = crate::options::Step::Factor(2.0);
    }
    world.agree(opts.validate_for_world(world.size))?;
    world.agree(crate::backend::mpi::known_faults(world, &opts))?;
    world.agree(if world.rank == 0 { check_outputs(o) } else { Ok(()) })?;
    let (send, recv) = buffer_bytes(&opts, world.size, world.rank, Convention::Mpi);
    let runs = |i: &Implementation| opts.collectives.iter().any(|k| i.provides(*k)) && i.unfit(world.size).is_none();
    let own = [Implementation::Ring, Implementation::RecursiveDoubling].iter().filter(|i| runs(i)).count() as u64;
    // `counts` is the library's code on buffers of its own, no scratch.
    let counts = u64::from(runs(&Implementation::Counts));
    let need = u128::from(1 + counts) * crate::memory::per_rank_need(send as u64, recv as u64, false)
        + u128::from(own) * crate::memory::per_rank_need(send as u64, recv as u64, true);
    crate::setup::fit_memory(world, "-e/--maxbytes", need)?;
    Ok(opts)
}

fn run_info(world: &World, opts: &Options, now: &chrono::DateTime<chrono::Utc>) -> RunInfo {
    RunInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        timestamp: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        backend: "mpi".into(),
        backend_details: std::iter::once(format!("MPI library: {}", world.library_version))
            .chain(crate::backend::host::heap_note())
            .collect(),
        mpi_library: world.library_version.clone(),
        ranks: world.size,
        hosts: world.ranks_by_host(),
        options: opts.clone(),
        pids: world.all_gather(std::process::id()),
        notes: vec![],
        groups: crate::setup::group_info(world, &crate::layout::Layout::World),
        ceiling: None,
    }
}

/// Rank 0's CSV (none elsewhere), its header written; from here on SIGINT/SIGTERM make rank 0
/// name it (report::interrupted).
fn open_csv(
    world: &World,
    opts: &Options,
    now: &chrono::DateTime<chrono::Utc>,
    info: &RunInfo,
) -> Result<Option<CsvReport>> {
    let csv = if world.rank == 0 {
        let made = crate::report::outputs::open_csv((&opts.csv).into(), "--csv", "coll-bench-tune", now, opts.files);
        made.map(|f| f.map(|f| CsvReport::with_extra_columns(f, &EXTRA_COLUMNS)))
    } else {
        Ok(None)
    };
    let mut csv = world.agree(csv)?;
    let files: Vec<(PathBuf, &str)> = csv.iter().map(|c| (c.path().to_path_buf(), "CSV")).collect();
    crate::report::interrupted::arm(world.rank, Some(&files));
    match csv.as_mut() {
        Some(c) => world.agree(c.begin(info))?,
        None => world.agree(Ok(()))?,
    }
    Ok(csv)
}

/// The run's header lines (rank 0).
fn print_header(world: &World, opts: &Options, o: &TuneOptions, verify: bool) {
    let hosts = world.ranks_by_host();
    say(world, &format!("# coll-bench {} tune", env!("CARGO_PKG_VERSION")));
    say(world, &format!("# MPI library: {}", world.library_version));
    if let Some(heap) = crate::backend::host::heap_note() {
        say(world, &format!("# {heap}"));
    }
    say(
        world,
        &format!(
            "# ranks: {} on {} host(s): {}",
            world.size,
            hosts.len(),
            hosts.iter().map(|(h, r)| format!("{h}:{}", r.len())).collect::<Vec<_>>().join(", ")
        ),
    );
    say(
        world,
        &format!(
            "# type {}, op {}; out of place{}; timed and checked as the sweep does, candidates interleaved size by size",
            opts.dtypes[0], opts.ops[0], if o.in_place { " and in place (reported, not chosen on)" } else { "" }
        ),
    );
    if verify {
        say(world, "# --verify: the file's choice at each size it records, against the library's default, in one run (the file is read as the library reads it; tune forces its algorithms as it did when tuning)");
    }
}

/// Rank 0: write the rules file (`--write-rules`) and say how to apply and verify it.
fn write_rules(
    world: &World,
    path: &Path,
    opts: &Options,
    info: &RunInfo,
    library: Library,
    file: rules::RulesFile,
) -> Result<()> {
    let hosts = world.ranks_by_host();
    let abs = std::fs::canonicalize(path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))
        .map(|d| d.join(path.file_name().unwrap_or_default()))
        .unwrap_or_else(|_| path.to_path_buf());
    let header = vec![
        format!("written by coll-bench {} tune at {}", env!("CARGO_PKG_VERSION"), info.timestamp),
        format!("MPI library: {}", world.library_version),
        format!("tuned on {} ranks, {} host(s); the best algorithm depends on ranks per host and host count: tune on the layout you run", world.size, hosts.len()),
    ];
    // Only a run that asked for the kept heap says anything about the allocator: its times
    // hold for a job with the same heap; whether that heap helps is the comparison of a
    // `--malloc default` run with this one, not something this run measured.
    let heap = crate::backend::host::heap_kept().then(|| format!(
        "measured with --malloc kept (freed memory kept in the heap): these times hold for a job whose heap keeps it too ({}); under the allocator's defaults the library's per-call temporary buffers can page-fault, so compare with a tune run without --malloc kept before exporting it",
        crate::backend::host::KEPT_HEAP_ENV
    ));
    let header: Vec<String> = header.into_iter().chain(heap.clone()).collect();
    let text = file.text(&crate::error::shown(&abs), &header);
    crate::report::outfile::replace("--write-rules", path, text.as_bytes(), opts.files)?;
    say(world, &format!("# rules written to {}", crate::error::shown(path)));
    match library {
        Library::OpenMpi => say(
            world,
            &format!(
                "# apply: mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename {} ...",
                crate::error::shown(&abs)
            ),
        ),
        _ => say(
            world,
            "# apply: export the file's MPIR_CVAR_... lines in the job's environment (one algorithm for every size)",
        ),
    }
    if let Some(h) = &heap {
        say(world, &format!("# {h}"));
    }
    say(world, &format!("# verify: mpirun ... coll-bench tune --verify {}", crate::error::shown(path)));
    Ok(())
}

#[cfg(test)]
mod tests {

    /// csvread's columns are the writers': each name `csvread::read` looks for is one the sweep's
    /// CSV (or tune's) writes, so a renamed column fails here, not in a user's `compare`.
    #[test]
    fn every_column_read_is_one_the_writers_write() {
        let read = crate::csvread::columns_read();
        assert!(read.len() >= 20, "{read:?}");
        let written: Vec<&str> =
            crate::report::csv::COLUMNS.iter().chain(super::EXTRA_COLUMNS.iter()).copied().collect();
        let unknown: Vec<&&str> = read.iter().filter(|c| !written.contains(c)).collect();
        assert!(unknown.is_empty(), "read, never written: {unknown:?}");
        // And a row the writer's header names, read back by it.
        let mut w = csv::Writer::from_writer(vec![]);
        w.write_record(crate::report::csv::COLUMNS).unwrap();
        let values: Vec<String> = crate::report::csv::COLUMNS
            .iter()
            .map(|c| match *c {
                "backend" => "mpi".into(),
                "collective" => "all-reduce".into(),
                "dtype" => "float".into(),
                "op" => "sum".into(),
                "placement" => "in-place".into(),
                "rank" | "group" | "stddev_us" | "algorithm" | "order" | "pattern" => String::new(),
                "timestamp" => "t".into(),
                _ => "3".into(),
            })
            .collect();
        w.write_record(&values).unwrap();
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), w.into_inner().unwrap()).unwrap();
        let rows = crate::csvread::read(f.path()).unwrap();
        assert_eq!(
            (rows[0].key.size_bytes, rows[0].batch_iters, rows[0].ranks, rows[0].budget_s),
            (3, 3, Some(3), Some(3.0))
        );
        assert_eq!(rows[0].key.placement, "in-place");
    }
    #[test]
    fn times_show_three_significant_digits() {
        let cases = [(0.0412, "0.0412"), (1.384, "1.38"), (9.1234, "9.12"), (91.14, "91.1"), (634.8, "635")];
        for (t, s) in cases {
            assert_eq!(super::table::shown_us(t), s);
        }
        assert_eq!(super::table::shown_us(12345.6), "12346");
        assert_eq!(super::table::shown_us(0.0), "0");
        assert_eq!(super::table::shown_us(f64::NAN), "-");
    }
}
