//! `coll-bench step`: what one training step of a tp × ep × pp × dp layout sends, run with real
//! buffers, every group of a dimension at the same time; each dimension's time per step in the
//! step and alone, and the total. `--layout all` runs every valid layout of the world and ranks
//! them. The model ([`model`]) says what is sent; [`schedule`] orders the pipeline's transfers
//! (1F1B); [`exec`] runs them on the ranks, on the backend of `--backend` (mpi: host buffers;
//! nccl: device buffers, PP as grouped `ncclSend`/`ncclRecv`); the printing is here. Compute is
//! not modelled and overlap is not assumed.
//!
//! Layouts, rank order and groups are [`crate::layout`]'s (`--layout` is a [`Grid`] of tp, ep, pp
//! and dp; `--layout all` is [`crate::layout::factorizations`] less the layouts whose pp does not
//! divide the layers, with ep splits of dp where the model has experts): tp fastest-varying,
//! then ep, then dp, then pp (Megatron's order), rank = t + tp·(e + ep·(d + dp·p)), so a TP
//! group is tp consecutive ranks (on one host when tp divides the ranks per host).

pub mod exec;
pub mod model;
pub mod schedule;
mod types;

use crate::error::{exit, Error, Result};
use crate::options::CsvTarget;
use crate::size::human;
use crate::world::World;
use model::{Shape, DIMS};
use std::io::Write;
pub use types::{DimResult, LayoutChoice, LayoutResult, StepOptions};

/// The layout of `step --json`; a change that renames or removes a field changes it.
pub const SCHEMA: &str = "coll-bench-step/1";

/// The whole subcommand, on every rank, after the options are agreed.
pub fn run(world: &World, opts: &StepOptions) -> Result<i32> {
    let (shapes, left_out) = layouts(world, opts)?;
    // Output paths checked, then created, before measuring.
    let mut outputs: Vec<(&str, &std::path::Path)> = vec![];
    if let CsvTarget::Path(p) = &opts.csv {
        outputs.push(("step --csv", p));
    }
    if let Some(p) = &opts.json {
        outputs.push(("step --json", p));
    }
    crate::setup::check_outputs(world, &outputs, &[], opts.files)?;
    let need = shapes.iter().map(|s| exec::buffer_need(&opts.model, s)).max().unwrap_or(0);
    crate::setup::fit_memory(world, "step --hidden/--bucket", need + crate::memory::OVERHEAD_BYTES)?;
    let backend = parent_backend(world, opts, need)?;
    let mut backend_lines = backend.describe();
    backend_lines.push(backend.groups_via());
    let now = chrono::Utc::now();
    let (mut csv, json) = create_files(world, opts, &now, &backend_lines)?;
    // `-T`: every part of every step watched (collective: every rank starts it).
    let watchdog = crate::watchdog::Watchdog::start(world, opts.timeout);

    let t0 = mpi::time();
    if world.rank == 0 {
        print_header(world, opts, &shapes, &left_out, &backend_lines);
    }
    let mut results = vec![];
    let mut written: Result<()> = Ok(());
    for shape in &shapes {
        let r = exec::run_layout(world, opts, backend.as_ref(), shape, watchdog.as_ref())?;
        if world.rank == 0 {
            print_layout(&r, opts.model.moe);
            if let (Some(f), Ok(())) = (csv.as_mut(), &written) {
                written = write_csv(f, opts, &r);
            }
        }
        results.push(r);
    }
    if let Some(w) = &watchdog {
        w.disarm();
    }
    let elapsed = mpi::time() - t0;
    if world.rank == 0 {
        print_ranking(&results, elapsed);
        if let (Some(f), Ok(())) = (json, &written) {
            let doc = json_doc(world, opts, &now, &backend_lines, Some(&results));
            let mut bytes = serde_json::to_vec_pretty(&doc).expect("results serialise");
            bytes.push(b'\n');
            let path = f.real_path().to_path_buf();
            written = f.replace_with(&bytes).map(|_| {
                crate::outln!("{}", crate::report::written_line(&path, "JSON"));
            });
        }
        if let (Some(f), Ok(())) = (&csv, &written) {
            crate::outln!("{}", crate::report::written_line(f.real_path(), "CSV"));
        }
    }
    world.agree(written)?;
    let wrong = results.iter().any(|r| r.wrong.unwrap_or(0) > 0);
    Ok(if wrong { exit::WRONG } else { exit::OK })
}

/// Layouts left out of `--layout all`, each with why.
type LeftOut = Vec<(Shape, String)>;

/// The layouts to run (`--layout` one, or every valid one) and those left out; refused before
/// anything is opened or measured.
fn layouts(world: &World, opts: &StepOptions) -> Result<(Vec<Shape>, LeftOut)> {
    let per_host = world.ranks_by_host().iter().map(|(_, r)| r.len()).min().unwrap_or(1);
    let (shapes, left_out) = match &opts.layout {
        LayoutChoice::One(grid) => {
            let shape = grid.resolve_for("step --layout", world.size).map(|g| Shape::of(&g));
            let shape = shape.and_then(|s| match opts.model.refuse(&s) {
                Some(why) => Err(Error::usage(format!(
                    "step --layout: {why}; expected pp dividing --layers, and ep above 1 only with --experts, dividing them"
                ))),
                None => Ok(s),
            });
            let shape = shape.and_then(|s| match opts.model.empty(&s) {
                Some(why) => Err(Error::usage(format!(
                    "step --layout {s}: {why}; expected at least tp tokens a micro-batch, or no --sequence-parallel"
                ))),
                None => Ok(s),
            });
            let shape = shape.and_then(|s| match exec::nccl_unfit(opts, &s) {
                Some(why) => Err(Error::usage(format!("step --layout {s}: {why}"))),
                None => Ok(s),
            });
            (vec![world.agree(shape)?], vec![])
        }
        LayoutChoice::All => {
            let (valid, mut left) = model::layouts(world.size, per_host, opts.tp_across_hosts, &opts.model);
            let mut ok = Vec::new();
            for s in valid {
                match exec::nccl_unfit(opts, &s) {
                    Some(why) => left.push((s, why)),
                    None => ok.push(s),
                }
            }
            (ok, left)
        }
    };
    if shapes.is_empty() {
        return world.agree(Err(Error::usage(format!(
            "step --layout all: no valid layout of {} ranks ({} left out); expected --layers divisible by some pp, or --tp-across-hosts",
            world.size,
            left_out.len()
        ))));
    }
    Ok((shapes, left_out))
}

/// The backend on the world, once, before any file is created or anything measured: a missing
/// GPU or library is one line here; its description goes in the header. It is the parent every
/// layout's groups are made from (on NCCL its one world communicator, where the library can
/// split it), kept to the end of the run and dropped after them. On NCCL, `need` bytes (the
/// largest layout's buffers, every dimension's at once) are allocated once on the device and
/// freed, so a step that cannot fit is refused here, not mid-run.
fn parent_backend(world: &World, opts: &StepOptions, need: u64) -> Result<Box<dyn crate::backend::Backend>> {
    let mut backend = world.agree(crate::setup::make_parent_backend(world, &exec::backend_options(opts)))?;
    if opts.backend == crate::options::BackendKind::Nccl {
        let fit = backend.allocate((need / 2) as usize, (need - need / 2) as usize).map_err(|e| match e {
            Error::Setup(m) => Error::setup(m.replace(
                "lower -e/--maxbytes",
                "lower step --hidden, --seq, --micro-batch or --bucket (buffers of the largest layout)",
            )),
            e => e,
        });
        world.agree(fit)?;
        // Freed again: the parent keeps no buffers while the groups hold theirs.
        world.agree(backend.allocate(0, 0))?;
    }
    Ok(backend)
}

/// Rank 0's CSV and JSON (none elsewhere), each whole from the start, so a run ended by the
/// watchdog (`-T`) leaves whole files: the CSV's header (then whole rows), the JSON's run with
/// `"complete": false` (replaced by the whole document at the end). From here on SIGINT/SIGTERM
/// make rank 0 name them (report::interrupted).
fn create_files(
    world: &World,
    opts: &StepOptions,
    now: &chrono::DateTime<chrono::Utc>,
    backend_lines: &[String],
) -> Result<(Option<crate::report::AppendFile>, Option<crate::report::AppendFile>)> {
    let created = if world.rank == 0 {
        let csv =
            crate::report::outputs::open_csv((&opts.csv).into(), "step --csv", "coll-bench-step", now, opts.files)
                .and_then(|c| {
                    c.map(|f| with_head(f, |f| crate::report::csv::append_record(f, "step --csv", CSV_HEAD)))
                        .transpose()
                });
        csv.and_then(|c| {
            let j = opts
                .json
                .as_ref()
                .map(|p| crate::report::AppendFile::create("step --json", p, opts.files))
                .transpose()
                .and_then(|j| {
                    let run = json_doc(world, opts, now, backend_lines, None);
                    let mut line = serde_json::to_vec(&run).expect("the run serialises");
                    line.push(b'\n');
                    j.map(|f| with_head(f, |f| f.append(&line))).transpose()
                });
            match j {
                Ok(j) => Ok(Some((c, j))),
                Err(e) => {
                    c.into_iter().for_each(crate::report::AppendFile::remove);
                    Err(e)
                }
            }
        })
    } else {
        Ok(None)
    };
    let (csv, json) = world.agree(created)?.unwrap_or((None, None));
    let files: Vec<(std::path::PathBuf, &str)> = [(csv.as_ref(), "CSV"), (json.as_ref(), "JSON")]
        .into_iter()
        .filter_map(|(f, what)| f.map(|f: &crate::report::AppendFile| (f.real_path().to_path_buf(), what)))
        .collect();
    crate::report::interrupted::arm(world.rank, Some(&files));
    Ok((csv, json))
}

/// `f` with its first record written by `write`; removed when that fails.
fn with_head(
    mut f: crate::report::AppendFile,
    write: impl FnOnce(&mut crate::report::AppendFile) -> Result<()>,
) -> Result<crate::report::AppendFile> {
    match write(&mut f) {
        Ok(()) => Ok(f),
        Err(e) => {
            f.remove();
            Err(e)
        }
    }
}

/// The JSON document: the run, and with `results` the layouts (`"complete": true`); without,
/// the run alone, the file's content while the layouts run (`"complete": false`).
fn json_doc(
    world: &World,
    opts: &StepOptions,
    now: &chrono::DateTime<chrono::Utc>,
    backend_lines: &[String],
    results: Option<&[LayoutResult]>,
) -> serde_json::Value {
    let mut options = serde_json::to_value(opts).expect("the options serialise");
    if let Some(o) = options.as_object_mut() {
        o.retain(|k, _| !k.starts_with("debug_"));
        // As the sweep's `run.options.csv`: "default", {"path": PATH} or "off".
        let csv = match &opts.csv {
            CsvTarget::Default => serde_json::json!("default"),
            CsvTarget::Path(p) => serde_json::json!({ "path": p }),
            CsvTarget::Off => serde_json::json!("off"),
        };
        o.insert("csv".into(), csv);
    }
    // The sweep's skeleton: schema, tool, complete, run (hosts as {"name", "ranks"}), results.
    let hosts: Vec<serde_json::Value> = world
        .ranks_by_host()
        .into_iter()
        .map(|(name, ranks)| serde_json::json!({ "name": name, "ranks": ranks }))
        .collect();
    let mut doc = serde_json::json!({
        "schema": SCHEMA,
        "tool": "coll-bench",
        "complete": results.is_some(),
        "run": {
            "version": env!("CARGO_PKG_VERSION"),
            "timestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "backend": opts.backend.name(),
            "backend_details": backend_lines,
            "mpi_library": world.library_version,
            "ranks": world.size,
            "hosts": hosts,
            "options": options,
            "compute_modelled": false,
            "overlap_assumed": false,
        },
    });
    if let (Some(r), Some(o)) = (results, doc.as_object_mut()) {
        o.insert("layouts".into(), serde_json::json!(r));
    }
    doc
}

fn print_header(world: &World, opts: &StepOptions, shapes: &[Shape], left_out: &[(Shape, String)], backend: &[String]) {
    let m = &opts.model;
    let mut out = crate::report::stdout::out();
    let params = match m.params {
        Some(p) => format!("{p} params (--params)"),
        None => format!("{} params (12 · layers · hidden²)", m.param_count()),
    };
    let _ = writeln!(
        out,
        "# coll-bench {} step: {} ranks on {} host(s); model: {} layers, hidden {}, {params}; seq {}, micro-batch {}, {} micro-batches, {}; dp {} (bucket {}){}",
        env!("CARGO_PKG_VERSION"),
        world.size,
        world.ranks_by_host().len(),
        m.layers,
        m.hidden,
        m.seq,
        m.micro_batch,
        m.micro_batches,
        opts.dtype,
        m.dp_style.name(),
        human(m.bucket),
        if m.sequence_parallel { "; sequence parallel" } else { "" }
    );
    let _ = writeln!(out, "# Backend: {}", opts.backend.name());
    for line in backend {
        let _ = writeln!(out, "# {line}");
    }
    let _ = writeln!(out, "# Communication only: compute is not modelled and overlap is not assumed (every call waits for the one before).");
    let _ =
        writeln!(out, "# Ranks: tp fastest-varying, then ep, then dp, then pp (rank = t + tp·(e + ep·(d + dp·p))).");
    if let Some(e) = m.moe {
        let capacity = e.capacity.map_or("no capacity cap".to_string(), |c| format!("capacity factor {c}"));
        let _ = writeln!(
            out,
            "# Experts: {} per layer, top-{}, router skew {} (Zipf), {capacity}; on layouts with ep > 1, per layer and micro-batch a dispatch and a combine all-to-all-v forward and both again backward, over each ep group, of micro-batch × seq{} × top-k × hidden elements for the mean rank (pattern {}).",
            e.experts,
            e.topk,
            e.skew,
            if m.sequence_parallel { " / tp" } else { "" },
            e.pattern()
        );
        let _ = writeln!(out, "# Not modelled with experts: the dense layers' gradients reduced over ep × dp ranks (DP reduces each rank's gradient shard, params / (tp · pp), over its dp group), and the experts' weights in --params.");
    }
    let wire = exec::wire_dtype(opts.dtype, opts.backend, opts.check);
    let why = match opts.backend {
        crate::options::BackendKind::Mpi => "MPI has no standard 16-bit float",
        crate::options::BackendKind::Nccl => "the exact check has no 16-bit float arithmetic; -c 0 moves the real type",
    };
    if wire != opts.dtype {
        let _ = writeln!(
            out,
            "# {} on the {} backend: the same bytes are moved as float ({why}); counts and bytes are the model's.",
            opts.dtype,
            opts.backend.name()
        );
    } else if opts.backend == crate::options::BackendKind::Nccl && opts.dtype.size() == 2 {
        let _ = writeln!(
            out,
            "# {} on the nccl backend: moved and reduced as {} (NCCL's own type).",
            opts.dtype, opts.dtype
        );
    }
    if opts.backend == crate::options::BackendKind::Nccl {
        let _ = writeln!(out, "# PP transfers: ncclSend + ncclRecv in one ncclGroupStart/ncclGroupEnd per exchange (uint8), on each pipeline's communicator.");
    }
    if let LayoutChoice::All = opts.layout {
        let list: Vec<String> = shapes.iter().map(|s| s.to_string()).collect();
        let _ = writeln!(out, "# Layouts ({}): {}", shapes.len(), list.join("; "));
        for (s, why) in left_out {
            let _ = writeln!(out, "# Left out: {s}: {why}");
        }
    }
    let _ = writeln!(
        out,
        "#  dim  groups×size  calls/step  bytes/step   time/step (ms)  busbw (GB/s)  alone (ms)  alone busbw (GB/s)"
    );
    let _ = out.flush();
}

fn print_layout(r: &LayoutResult, moe: Option<model::Experts>) {
    let mut out = crate::report::stdout::out();
    let _ = writeln!(out, "# Layout {}", r.shape);
    if let (true, Some(e)) = (r.shape.ep > 1, moe) {
        let i = e.pattern().imbalance(r.shape.ep);
        let _ = writeln!(
            out,
            "#   ep traffic: the dispatch's busiest rank sends {:.2}x and receives {:.2}x the mean (the combine the reverse){}",
            i.sent,
            i.received,
            if i.dropped > 0.0 { format!("; {:.1}% of token copies dropped at the capacity", i.dropped * 100.0) } else { String::new() }
        );
    }
    let grid = r.shape.grid();
    for (dim, groups) in DIMS.iter().map(|d| (d, grid.groups_of(*d))) {
        if groups[0].size() > 1 {
            let list: Vec<String> = groups.iter().map(|g| format!("[{}]", crate::world::rank_list(&g.ranks))).collect();
            let _ = writeln!(out, "#   {dim} groups: {}", list.join(" "));
        }
    }
    for d in &r.dims {
        let _ = writeln!(
            out,
            "{:>6}  {:>11}  {:>10}  {:>10}  {:>15.3}  {:>12.3}  {:>10.3}  {:>18.3}",
            d.dim.name(),
            format!("{}×{}", d.group_count, d.group_size),
            d.calls,
            human(d.bytes),
            d.time_s * 1e3,
            d.busbw_gbps,
            d.alone_s * 1e3,
            d.alone_busbw_gbps
        );
    }
    if r.dims.is_empty() {
        let _ = writeln!(out, "#   (one rank: nothing to send)");
    }
    let wrong = match r.wrong {
        Some(0) => "all data correct".to_string(),
        Some(n) => format!("{n} elements WRONG"),
        None => "not checked (-c 0)".to_string(),
    };
    let _ = writeln!(out, "#   total communication per step: {:.3} ms; {wrong}", r.step_s * 1e3);
    if r.dims.len() > 1 {
        let _ = writeln!(out, "#   ({OVERLAP})");
    }
    let _ = out.flush();
}

/// Why the dimensions' times do not add up to the step's: said under every layout of several
/// dimensions and under the ranking.
pub const OVERLAP: &str = "the dimensions' times need not add up to the step's: each is its slowest rank's, \
the step's the slowest rank's whole step (with the barrier before each call), and PP's includes waiting for the neighbouring stage's other calls \
(the pipeline's bubble)";

/// "tp=2, dp=2: 4.1 ms/step (tp 1.2, dp 2.9); …", fastest first.
pub fn ranking_line(results: &[LayoutResult]) -> Vec<String> {
    let mut sorted: Vec<&LayoutResult> = results.iter().collect();
    sorted.sort_by(|a, b| a.step_s.total_cmp(&b.step_s));
    sorted
        .iter()
        .map(|r| {
            let name: Vec<String> =
                DIMS.iter().filter(|d| r.shape.size(**d) > 1).map(|d| format!("{d}={}", r.shape.size(*d))).collect();
            let name = if name.is_empty() { "tp=1, pp=1, dp=1".to_string() } else { name.join(", ") };
            let split: Vec<String> = r.dims.iter().map(|d| format!("{} {:.2}", d.dim, d.time_s * 1e3)).collect();
            format!("{name}: {:.2} ms/step ({})", r.step_s * 1e3, split.join(", "))
        })
        .collect()
}

fn print_ranking(results: &[LayoutResult], elapsed: f64) {
    let mut out = crate::report::stdout::out();
    if results.len() > 1 {
        let _ = writeln!(out, "# Ranked by communication time per step (ms per dimension in brackets):");
        for (i, line) in ranking_line(results).iter().enumerate() {
            let _ = writeln!(out, "#   {}. {line}", i + 1);
        }
        if results.iter().any(|r| r.dims.len() > 1) {
            let _ = writeln!(out, "# ({OVERLAP})");
        }
    }
    let _ = writeln!(out, "# Took {elapsed:.2} s");
    let _ = out.flush();
}

/// `step --csv`'s columns (times in µs, as every file's: docs/output.md).
pub const CSV_HEAD: [&str; 28] = [
    "tp",
    "pp",
    "dp",
    "dim",
    "group_size",
    "group_count",
    "calls_per_step",
    "bytes_per_step",
    "time_per_step_us",
    "busbw_gbps",
    "alone_time_per_step_us",
    "alone_busbw_gbps",
    "step_us",
    "wrong",
    "layers",
    "hidden",
    "seq",
    "micro_batches",
    "dtype",
    "backend",
    "ep",
    "experts",
    "topk",
    "skew",
    "capacity",
    "cuda_graph",
    "agg_iters",
    "register",
];

/// One row per dimension of `r` (the header is written when the file is created).
fn write_csv(f: &mut crate::report::AppendFile, opts: &StepOptions, r: &LayoutResult) -> Result<()> {
    let nccl = opts.backend == crate::options::BackendKind::Nccl;
    let nccl_only = |v: u32| if nccl { v.to_string() } else { String::new() };
    let mut record = |fields: &[String]| crate::report::csv::append_record(f, "step --csv", fields);
    let m = &opts.model;
    for d in &r.dims {
        record(&[
            r.shape.tp.to_string(),
            r.shape.pp.to_string(),
            r.shape.dp.to_string(),
            d.dim.name().to_string(),
            d.group_size.to_string(),
            d.group_count.to_string(),
            d.calls.to_string(),
            d.bytes.to_string(),
            (d.time_s * 1e6).to_string(),
            d.busbw_gbps.to_string(),
            (d.alone_s * 1e6).to_string(),
            d.alone_busbw_gbps.to_string(),
            (r.step_s * 1e6).to_string(),
            r.wrong.map_or(String::new(), |w| w.to_string()),
            m.layers.to_string(),
            m.hidden.to_string(),
            m.seq.to_string(),
            m.micro_batches.to_string(),
            opts.dtype.name().to_string(),
            opts.backend.name().to_string(),
            r.shape.ep.to_string(),
            m.moe.map_or(String::new(), |e| e.experts.to_string()),
            m.moe.map_or(String::new(), |e| e.topk.to_string()),
            m.moe.map_or(String::new(), |e| e.skew.to_string()),
            m.moe.and_then(|e| e.capacity).map_or(String::new(), |c| c.to_string()),
            nccl_only(opts.launch.cuda_graph),
            nccl_only(opts.launch.agg_iters),
            nccl_only(opts.launch.register),
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON names the layout as the command line does, not by the enum's variant.
    #[test]
    fn layout_choice_is_written_as_on_the_command_line() {
        let grid = match "tp=2,pp=2,dp=*".parse::<crate::layout::Layout>().unwrap() {
            crate::layout::Layout::Named(g, None) => g,
            other => panic!("{other:?}"),
        };
        let one = LayoutChoice::One(grid);
        let text = serde_json::to_string(&one).unwrap();
        assert!(!text.contains("One") && text.starts_with("\"tp=2") && text.contains("dp=*"), "{text}");
        assert_eq!(serde_json::from_str::<LayoutChoice>(&text).unwrap(), one);
        assert_eq!(serde_json::to_string(&LayoutChoice::All).unwrap(), "\"all\"");
        assert_eq!(serde_json::from_str::<LayoutChoice>("\"all\"").unwrap(), LayoutChoice::All);
        assert!(serde_json::from_str::<LayoutChoice>("\"rail\"").is_err());
    }
}
