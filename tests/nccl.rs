//! `--backend nccl` on a machine without a GPU: the real binary under a real `mpirun`.
//!
//! Without CUDA every failure is one line from rank 0 and exit 2 (no panic, no hang). Past the
//! missing driver, stand-ins for libcuda and libnccl (src/backend/nccl/fake/*.c, built here with
//! `cc`, loaded through COLL_BENCH_CUDA_LIBRARY / COLL_BENCH_NCCL_LIBRARY) drive every later
//! step: no GPU, too few GPUs, NCCL missing or too old, NCCL errors at bootstrap and mid-run,
//! GPU memory too small, and whole sweeps through the backend's real code (bootstrap, pointers
//! and in-place offsets, grouped send/recv, staging, event timing) with exact results on 1-3
//! ranks. The stand-ins keep "device" memory on the host and move data through shared memory:
//! nothing here runs on a GPU or through the real NCCL.
#![cfg(feature = "nccl")]

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};

/// Variables that steer the backend or the stand-ins: cleared, then set per test.
const STEERING: &[&str] = &[
    "COLL_BENCH_CUDA_LIBRARY",
    "COLL_BENCH_NCCL_LIBRARY",
    "CUDA_VISIBLE_DEVICES",
    "FAKE_CUDA_DEVICES",
    "FAKE_CUDA_FREE_BYTES",
    "FAKE_CUDA_NOT_READY",
    "FAKE_CUDA_TOTAL_BYTES",
    "FAKE_CUDA_CC",
    "FAKE_NCCL_CONNECT_BYTES",
    "FAKE_NCCL_VERSION",
    "FAKE_NCCL_FAIL",
    "FAKE_NCCL_FAIL_RANK",
    "COLL_BENCH_DEBUG_NCCL_SPLIT",
    "FAKE_NCCL_TRACE",
    "FAKE_NCCL_TRACE_BUFFERS",
    "FAKE_NCCL_CONNECT_DELAY_MS",
    "NCCL_RUNTIME_CONNECT",
    "COLL_BENCH_DEBUG_NCCL_NONBLOCKING_TIMING",
    "NCCL_DEBUG",
    "NCCL_DEBUG_SUBSYS",
    "NCCL_DEBUG_FILE",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "COLL_BENCH_NVML_LIBRARY",
    "FAKE_NVML_NVLINKS",
    "FAKE_NVML_NVLINK_MBPS",
    "FAKE_NVML_FAIL",
];

/// `mpirun -n N coll-bench --backend nccl ARGS…` with `env` (and nothing else of ours) set.
fn nccl_run(n: usize, args: &[&str], env: &[(&str, &str)]) -> (Output, tempfile::TempDir) {
    // A guard, not a bar: 3 ranks on 2 cores under MPICH (busy-polling) take minutes.
    nccl_run_within(600, n, args, env)
}

/// As [`nccl_run`], killed after `limit_s` seconds.
fn nccl_run_within(limit_s: u32, n: usize, args: &[&str], env: &[(&str, &str)]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = mpirun_cmd(n, limit_s);
    cmd.args(["--backend", "nccl"]).args(args).current_dir(dir.path());
    for v in STEERING {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the MPI launcher runs (is MPI installed? run ci/setup.sh)");
    (out, dir)
}

fn fake_cuda() -> &'static str {
    fakes().0.to_str().unwrap()
}

fn fake_nccl() -> &'static str {
    fakes().1.to_str().unwrap()
}

/// The stand-ins' environment: the fake libcuda with `gpus` GPUs and the fake libnccl, then
/// `more` (which may replace either library).
fn fake_env<'a>(gpus: &'a str, more: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![
        ("COLL_BENCH_CUDA_LIBRARY", fake_cuda()),
        ("COLL_BENCH_NCCL_LIBRARY", fake_nccl()),
        ("FAKE_CUDA_DEVICES", gpus),
    ];
    for (k, v) in more {
        match env.iter_mut().find(|e| e.0 == *k) {
            Some(e) => e.1 = v,
            None => env.push((k, v)),
        }
    }
    env
}

/// The stand-in libnccl.so.2 built without ncclCommSplit (`-DFAKE_NCCL_NO_SPLIT`), as NCCL
/// before 2.18.
fn fake_nccl_without_split() -> &'static str {
    static LIB: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| build_fake("fake_nccl.c", "no-split/libnccl.so.2", &["-DFAKE_NCCL_NO_SPLIT"])).to_str().unwrap()
}

/// Exit 2 and exactly one line on stderr, from rank 0, containing every needle; no table, no
/// file, no panic.
fn refused(o: &Output, dir: &Path, needles: &[&str]) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stdout:\n{}\nstderr:\n{err}", stdout(o));
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got:\n{err}");
    assert!(lines[0].starts_with("coll-bench: error: "), "{err}");
    for n in needles {
        assert!(lines[0].contains(n), "{n:?} not in {err}");
    }
    assert!(!err.contains("panicked") && !err.contains("backtrace") && !err.contains("RUST_BACKTRACE"), "{err}");
    assert!(stdout(o).is_empty(), "table printed: {}", stdout(o));
    assert!(files(dir).is_empty(), "left {:?}", files(dir));
    lines[0].to_string()
}

/// The CSV's `wrong` cell of an exact run: 0, but empty for in-place all-to-all and sendrecv,
/// which NCCL does not support (timed as nccl-tests, not checked: N/A).
fn wrong_cell(placement: &str, collective: &str) -> &'static str {
    if placement == "in-place" && ["all-to-all", "sendrecv"].contains(&collective) {
        ""
    } else {
        "0"
    }
}

/// Is there a real libcuda the dynamic linker would find? (Then the GPU-less expectations do not
/// hold.)
fn real_library(soname: &str) -> bool {
    let cache = Command::new("ldconfig").arg("-p").output().map(|o| stdout(&o)).unwrap_or_default();
    let in_path = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .any(|d| Path::new(d).join(soname).exists());
    cache.contains(soname) || in_path
}

#[test]
fn no_cuda_driver_is_one_line_naming_libcuda() {
    if real_library("libcuda.so.1") {
        eprintln!("skipped: this machine has libcuda.so.1");
        return;
    }
    let (o, d) = nccl_run(2, &["--csv", "run.csv"], &[]);
    let line = refused(&o, d.path(), &["no CUDA driver", "libcuda.so.1", "COLL_BENCH_CUDA_LIBRARY"]);
    assert!(line.contains("needs an NVIDIA GPU with its driver installed"), "{line}");
}

#[test]
fn a_cuda_override_that_does_not_load_is_named() {
    let (o, d) = nccl_run(2, &["--csv", "run.csv"], &[("COLL_BENCH_CUDA_LIBRARY", "/nonexistent/libcuda.so.1")]);
    refused(&o, d.path(), &["no CUDA driver: COLL_BENCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1 did not load"]);
}

#[test]
fn no_gpu() {
    let env = [("COLL_BENCH_CUDA_LIBRARY", fake_cuda()), ("FAKE_CUDA_DEVICES", "0")];
    let (o, d) = nccl_run(2, &["--csv", "run.csv"], &env);
    refused(&o, d.path(), &["no GPU on ", "CUDA_ERROR_NO_DEVICE"]);
}

#[test]
fn more_ranks_on_a_node_than_gpus() {
    let env = [("COLL_BENCH_CUDA_LIBRARY", fake_cuda()), ("FAKE_CUDA_DEVICES", "2")];
    let (o, d) = nccl_run(3, &["--csv", "run.csv"], &env);
    refused(&o, d.path(), &["3 ranks on ", "only 2 GPU(s) visible", "run at most 2 ranks per node"]);
    // The variable is named when it is what hides the GPUs.
    let env = [
        ("COLL_BENCH_CUDA_LIBRARY", fake_cuda()),
        ("FAKE_CUDA_DEVICES", "4"),
        ("CUDA_VISIBLE_DEVICES", "0,GPU-5d1c0002"),
    ];
    let (o, d) = nccl_run(3, &["--csv", "run.csv"], &env);
    refused(&o, d.path(), &["only 2 GPU(s) visible there (CUDA_VISIBLE_DEVICES=0,GPU-5d1c0002)"]);
}

/// `mpirun -n N sh -c 'CUDA_VISIBLE_DEVICES=VALUE exec coll-bench --backend nccl ARGS…'`: a
/// wrapper that shows each rank its own GPUs, as Slurm's `--gpus-per-task=1` does (`$LOCAL`
/// in VALUE is the rank's node-local rank, from Open MPI's or Hydra's variable).
fn nccl_run_visible(n: usize, value: &str, args: &[&str], env: &[(&str, &str)]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "LOCAL=${{OMPI_COMM_WORLD_LOCAL_RANK:-$MPI_LOCALRANKID}}; CUDA_VISIBLE_DEVICES={value} exec \"$0\" \"$@\""
    );
    let mut cmd = launch_cmd(600);
    cmd.args(["-n", &n.to_string(), "sh", "-c", &script, BIN, "--backend", "nccl"]).args(args).current_dir(dir.path());
    for v in STEERING {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    (cmd.output().expect("the MPI launcher runs"), dir)
}

/// One GPU visible per rank (Slurm `--gpus-per-task=1`, `CUDA_VISIBLE_DEVICES=$LOCAL_RANK`):
/// each rank takes ordinal 0, its own GPU, and the run measures; two ranks of a node shown the
/// same GPU are refused by its UUID before any communicator is made.
#[test]
fn one_gpu_visible_per_rank_takes_ordinal_0_and_a_shared_gpu_is_refused() {
    let env = fake_env("2", &[]);
    let args = ["-c", "1", "-e", "1K", "--budget", "2ms", "--no-csv"];
    let (o, _d) = nccl_run_visible(2, "$LOCAL", &args, &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains(": GPU 0 Fake GPU 0 (PCI 0000:01:00.0; "), "{out}");
    assert!(out.contains(": GPU 0 (CUDA_VISIBLE_DEVICES entry 1) Fake GPU 1 (PCI 0000:02:00.0; "), "{out}");
    let (o, d) = nccl_run_visible(2, "0", &["--csv", "run.csv"], &env);
    refused(
        &o,
        d.path(),
        &["ranks 0 and 1 on ", &format!("would share one GPU (PCI 0000:01:00.0, UUID {GPU0})"), "CUDA_VISIBLE_DEVICES"],
    );
}

/// The stand-in's device 0, as `cuDeviceGetUuid` states it.
const GPU0: &str = "5d1c0000-fa4e-0000-0000-000000000000";

/// Slurm `--gpus-per-task=2`: each rank sees two GPUs of its own (`CUDA_VISIBLE_DEVICES` differs
/// between the ranks of the node), so each takes its first, whatever its local rank, and three
/// ranks on a node are no shortage; two ranks whose first GPUs are one GPU are still refused.
#[test]
fn ranks_shown_two_gpus_of_their_own_take_their_first() {
    let env = fake_env("6", &[]);
    let args = ["-c", "1", "-e", "1K", "--budget", "2ms", "--no-csv"];
    let (o, _d) = nccl_run_visible(3, "$((2*LOCAL)),$((2*LOCAL+1))", &args, &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains(": GPU 0 Fake GPU 0 (PCI 0000:01:00.0; "), "{out}");
    assert!(out.contains(": GPU 0 (CUDA_VISIBLE_DEVICES entry 2) Fake GPU 2 (PCI 0000:03:00.0; "), "{out}");
    assert!(out.contains(": GPU 0 (CUDA_VISIBLE_DEVICES entry 4) Fake GPU 4 (PCI 0000:05:00.0; "), "{out}");
    assert!(stderr(&o).trim().is_empty(), "{}", stderr(&o));
    let (o, d) = nccl_run_visible(2, "0,$((LOCAL+1))", &["--csv", "run.csv"], &env);
    refused(&o, d.path(), &["ranks 0 and 1 on ", &format!("would share one GPU (PCI 0000:01:00.0, UUID {GPU0})")]);
}

/// MIG: one instance per rank, on one GPU (one PCI bus id, a UUID each). NCCL from 2.30.7 tells
/// them apart by UUID, so the sweep runs, exact; an older NCCL would refuse them as one GPU
/// ("Duplicate GPU detected"), so we refuse first and say why; one instance on two ranks is
/// refused whatever the NCCL.
#[test]
fn mig_instances_one_per_rank_run_where_nccl_tells_them_apart() {
    let args = ["-c", "1", "-e", "1K", "--budget", "2ms", "--no-csv"];
    let env = fake_env("1", &[("FAKE_NCCL_VERSION", "23007")]);
    let (o, _d) = nccl_run_visible(2, "MIG-GPU-5d1c0000/$((LOCAL+1))/0", &args, &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    for g in 1..=2 {
        let line = format!(
            ": GPU 0 (CUDA_VISIBLE_DEVICES entry MIG-GPU-5d1c0000/{g}/0) Fake GPU 0 MIG {g}/0 (PCI 0000:01:00.0; "
        );
        assert!(out.contains(&line), "{line} not in\n{out}");
    }
    assert!(stderr(&o).trim().is_empty(), "{}", stderr(&o));
    let env = fake_env("1", &[("FAKE_NCCL_VERSION", "23004")]);
    let (o, d) = nccl_run_visible(2, "MIG-GPU-5d1c0000/$((LOCAL+1))/0", &["--csv", "run.csv"], &env);
    refused(
        &o,
        d.path(),
        &[
            "ranks 0 and 1 on ",
            "are on two instances (MIG) of one GPU (PCI 0000:01:00.0); NCCL 2.30.4 refuses",
            "use NCCL 2.30.7 or newer",
        ],
    );
    let env = fake_env("1", &[("FAKE_NCCL_VERSION", "23007")]);
    let (o, d) = nccl_run_visible(2, "MIG-GPU-5d1c0000/1/0", &["--csv", "run.csv"], &env);
    let mig = "5d1c0000-fa4e-0000-0000-4d0100000000";
    refused(&o, d.path(), &["ranks 0 and 1 on ", &format!("would share one GPU (PCI 0000:01:00.0, UUID {mig})")]);
}

#[test]
fn an_nccl_override_that_does_not_load_is_named() {
    let env = [
        ("COLL_BENCH_CUDA_LIBRARY", fake_cuda()),
        ("FAKE_CUDA_DEVICES", "2"),
        ("COLL_BENCH_NCCL_LIBRARY", "/nonexistent"),
    ];
    let (o, d) = nccl_run(2, &["--csv", "run.csv"], &env);
    refused(&o, d.path(), &["no NCCL: COLL_BENCH_NCCL_LIBRARY=/nonexistent did not load", "libnccl.so.2"]);
    // A library that is not NCCL at all.
    let env = [
        ("COLL_BENCH_CUDA_LIBRARY", fake_cuda()),
        ("FAKE_CUDA_DEVICES", "2"),
        ("COLL_BENCH_NCCL_LIBRARY", fake_cuda()),
    ];
    let (o, d) = nccl_run(2, &["--csv", "run.csv"], &env);
    refused(&o, d.path(), &["is not an NCCL library (it has no ncclGetVersion)"]);
}

#[test]
fn no_nccl_names_every_place_searched() {
    use coll_bench::backend::nccl::search;
    let wheels = search::wheel_files(&search::all_site_dirs(&|k| std::env::var_os(k)), search::NCCL_IN_WHEEL);
    if real_library("libnccl.so.2") || real_library("libnccl.so") || !wheels.is_empty() {
        eprintln!("skipped: this machine has NCCL");
        return;
    }
    let env = [("COLL_BENCH_CUDA_LIBRARY", fake_cuda()), ("FAKE_CUDA_DEVICES", "2")];
    let (o, d) = nccl_run(2, &["--csv", "run.csv"], &env);
    refused(
        &o,
        d.path(),
        &[
            "no NCCL: tried libnccl.so.2 and libnccl.so through the dynamic linker",
            "nvidia/nccl/lib/libnccl.so.2 under ",
            "Python package director",
            "pip install nvidia-nccl-cu12",
            "COLL_BENCH_NCCL_LIBRARY",
        ],
    );
}

#[test]
fn nccl_too_old() {
    let env = fake_env("2", &[("FAKE_NCCL_VERSION", "2708")]);
    let (o, d) = nccl_run(2, &["--csv", "run.csv"], &env);
    refused(&o, d.path(), &["NCCL 2.7.8 at ", "is too old: coll-bench needs NCCL 2.10 or newer"]);
}

#[test]
fn nccl_errors_at_bootstrap() {
    for (fail, needle) in [
        ("uniqueid", "NCCL error in ncclGetUniqueId: unhandled system error"),
        ("init", "NCCL error in ncclCommInitRankConfig: unhandled system error"),
    ] {
        let env = fake_env("2", &[("FAKE_NCCL_FAIL", fail)]);
        let (o, d) = nccl_run(2, &["--csv", "run.csv"], &env);
        let line = refused(&o, d.path(), &[needle, "(code 2): fake NCCL: "]);
        if fail == "init" {
            assert!(line.contains("(rank 0 on ") && line.ends_with(", GPU 0)"), "{line}");
        }
    }
}

#[test]
fn buffers_larger_than_gpu_memory() {
    // NCCL 2.22+, which connects at the first collective: our own check speaks first.
    let env = fake_env("2", &[("FAKE_CUDA_FREE_BYTES", "1000000"), ("FAKE_NCCL_VERSION", "22403")]);
    let (o, d) = nccl_run(2, &["-e", "1M", "--csv", "run.csv"], &env);
    refused(
        &o,
        d.path(),
        &["not even the smallest size fits in GPU memory beside the 2G kept free for NCCL's own buffers"],
    );
    // Before 2.22 NCCL connects at init, where its buffers do not fit: the init's error.
    let env = fake_env("2", &[("FAKE_CUDA_FREE_BYTES", "1000000")]);
    let (o, d) = nccl_run(2, &["-e", "1M", "--csv", "run.csv"], &env);
    refused(
        &o,
        d.path(),
        &["NCCL error in ncclCommInitRankConfig: unhandled cuda error", "allocating the connection buffers"],
    );
}

/// NCCL 2.22+ allocates its own buffers at a communicator's first collective: the stand-in takes
/// FAKE_NCCL_CONNECT_BYTES of the GPU's free memory then, so buffers that fit only without it
/// would fail mid-sweep. The largest size is lowered before measuring, as nccl-tests does, and the
/// header says so; where not even -b fits, one line.
#[test]
fn gpu_memory_is_kept_for_nccls_own_buffers_and_the_largest_size_lowered() {
    // 4 GiB GPU: nccl-tests' reserve is 1 GiB + 1 GiB; 2 GiB + 40 MiB free; NCCL takes 2 GiB.
    let more = [
        ("FAKE_NCCL_VERSION", "22304"),
        ("FAKE_CUDA_TOTAL_BYTES", "4294967296"),
        ("FAKE_CUDA_FREE_BYTES", "2189426688"),
        ("FAKE_NCCL_CONNECT_BYTES", "2147483648"),
        ("FAKE_NCCL_CHANNEL_BYTES", "16777216"),
    ];
    let env = fake_env("2", &more);
    let args = ["all_reduce", "-b", "4M", "-e", "32M", "-f", "2", "-c", "1", "--budget", "2ms", "--csv", "run.csv"];
    let (o, d) = nccl_run(2, &args, &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("-e/--maxbytes: lowered from 32M to "), "{out}");
    assert!(out.contains("2G of 4G kept free per communicator for NCCL's own buffers"), "{out}");
    let csv = std::fs::read_to_string(d.path().join("run.csv")).unwrap();
    assert!(csv.lines().count() > 2, "{csv}");
    assert!(!csv.contains(",33554432,"), "the 32 MiB row ran: {csv}");
    // Not even the smallest size fits beside the reserve: one line, before measuring.
    let env = fake_env("2", &[more[0], more[1], ("FAKE_CUDA_FREE_BYTES", "2147483648"), more[3]]);
    let (o, d) = nccl_run(2, &["all_reduce", "-b", "1M", "-e", "32M", "--csv", "run.csv"], &env);
    refused(&o, d.path(), &["not even the smallest size fits in GPU memory"]);
}

/// fp8 reductions on a GPU below compute capability 9.0: NCCL refuses them (the stand-in too),
/// so fp8 asked alone is one line before measuring, and beside other types it is dropped, said.
#[test]
fn fp8_below_compute_capability_9_is_refused_or_dropped_before_measuring() {
    let env = fake_env("2", &[("FAKE_NCCL_VERSION", "22403"), ("FAKE_CUDA_CC", "8.0")]);
    let (o, d) = nccl_run(2, &["all_reduce", "-d", "fp8e4m3", "-c", "0", "-e", "1K", "--csv", "run.csv"], &env);
    refused(
        &o,
        d.path(),
        &["-d/--datatype: fp8e4m3 needs GPUs of compute capability 9.0 or newer", "the lowest here is 8.0"],
    );
    let args = ["all_reduce", "-d", "float,fp8e5m2", "-c", "0", "-e", "1K", "--budget", "2ms", "--csv", "run.csv"];
    let (o, d) = nccl_run(2, &args, &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("dropped fp8e5m2"), "{out}");
    assert!(out.contains("GPU compute capability 8.0 (the lowest of any rank); fp8 types not run"), "{out}");
    let csv = std::fs::read_to_string(d.path().join("run.csv")).unwrap();
    assert!(csv.contains(",float,") && !csv.contains("fp8e5m2"), "{csv}");
}

/// float16, bfloat16 and the 8-bit floats are checked, within a tolerance from the type and the
/// rank count (the stand-in reduces them as NCCL does, rounding each step; avg on 3 ranks
/// multiplies by a rounded 1/3): every collective, op and placement on 2 and 3 ranks, no wrong
/// element. (A product whose exact value the type cannot hold, fp8e4m3 beyond 16 ranks, is
/// refused before measuring: `verify::narrow_fits`, unit-tested.)
#[test]
fn sixteen_bit_and_fp8_results_are_checked_within_a_tolerance() {
    let env = fake_env("3", &[("FAKE_NCCL_VERSION", "22403")]);
    for n in [2, 3] {
        // Under MPICH: one 16-bit and one 8-bit float (the tolerances do not depend on the
        // launcher; all four run under Open MPI).
        let dtypes = if FAMILY == "mpich" { "bfloat16,fp8e5m2" } else { "half,bfloat16,fp8e4m3,fp8e5m2" };
        let args = [
            "all", "-d", dtypes, "-o", "all", "-b", "8", "-e", "16K", "-f", "8", "--budget", "2ms", "--csv", "run.csv",
        ];
        let (o, d) = nccl_run(n, &args, &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{n} ranks:\n{out}\n{}", stderr(&o));
        assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
        let csv = std::fs::read_to_string(d.path().join("run.csv")).unwrap();
        let mut rd = csv::Reader::from_reader(csv.as_bytes());
        let h = rd.headers().unwrap().clone();
        let col = |name: &str| h.iter().position(|c| c == name).unwrap();
        let (wrong, dtype, placement, coll) = (col("wrong"), col("dtype"), col("placement"), col("collective"));
        let mut seen = std::collections::BTreeSet::new();
        for r in rd.records() {
            let r = r.unwrap();
            assert_eq!(&r[wrong], wrong_cell(&r[placement], &r[coll]), "{r:?}");
            seen.insert(r[dtype].to_string());
        }
        assert!(dtypes.split(',').all(|t| seen.contains(t)), "{seen:?}");
    }
}

#[test]
fn an_asynchronous_nccl_error_mid_run_ends_the_job() {
    let env = fake_env("2", &[("FAKE_CUDA_NOT_READY", "50"), ("FAKE_NCCL_FAIL", "async")]);
    let (o, _d) = nccl_run(2, &["-e", "1K", "--no-csv"], &env);
    let err = stderr(&o);
    // Both ranks see the error; it ends the job as a failed MPI call does: one line, from rank
    // 0, and every rank leaves in order with 2, which Hydra passes on too (when each rank just
    // exited, Hydra killed the other and returned 1 or 9 now and then).
    assert_eq!(o.status.code(), Some(2), "{}\n{err}", stdout(&o));
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    for l in &lines {
        assert!(
            l.starts_with("coll-bench: error: NCCL reported an asynchronous error: remote process exited"),
            "{err}"
        );
        assert!(l.ends_with("; aborting the job"), "{err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

/// A sweep of every collective on `n` ranks with the check on: exit 0, every row right, in both
/// placements.
fn exact_sweep(n: usize, dtypes: &str, ops: &str) {
    let env = fake_env("3", &[]);
    let args =
        ["all", "-d", dtypes, "-o", ops, "-b", "8", "-e", "64K", "-f", "8", "--budget", "2ms", "--csv", "run.csv"];
    let (o, d) = nccl_run(n, &args, &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{n} ranks, {dtypes}, {ops}:\n{out}\n{}", stderr(&o));
    assert!(out.contains("backend: nccl"), "{out}");
    assert!(out.contains("# NCCL 2.18.5 ("), "{out}");
    for r in 0..n {
        assert!(out.contains(&format!(": GPU {r} Fake GPU {r} (PCI 0000:0{}:00.0; ", r + 1)), "{out}");
    }
    assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
    assert!(out.contains("# Out of bounds values : 0 OK"), "{out}");
    let csv = std::fs::read_to_string(d.path().join("run.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let h = rd.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (backend, wrong, placement, collective) = (col("backend"), col("wrong"), col("placement"), col("collective"));
    let mut placements = std::collections::BTreeSet::new();
    let mut collectives = std::collections::BTreeSet::new();
    for r in rd.records() {
        let r = r.unwrap();
        assert_eq!(&r[backend], "nccl");
        // In-place all-to-all and sendrecv: one buffer for both sides, as nccl-tests, and no
        // check (NCCL does not support them in place): N/A, an empty cell.
        assert_eq!(&r[wrong], wrong_cell(&r[placement], &r[collective]), "{r:?}");
        placements.insert(r[placement].to_string());
        collectives.insert(r[collective].to_string());
    }
    assert_eq!(placements.len(), 2, "{placements:?}");
    assert_eq!(collectives.len(), 12, "{collectives:?}");
}

#[test]
fn sweeps_on_one_to_three_ranks_are_exact_for_every_collective_type_and_op() {
    let ints = "int8,uint8,int32,uint32,int64,uint64";
    // The stand-in's arithmetic per type does not depend on the launcher (every type runs
    // under Open MPI): under MPICH one signed and one unsigned integer and both floats.
    let types = if FAMILY == "mpich" { "int8,uint64,float,double".to_string() } else { format!("{ints},float,double") };
    exact_sweep(1, &types, "all");
    exact_sweep(2, &types, "all");
    // 3 ranks: an odd rank count (ping-pong's last rank pairs with itself; sendrecv's ring wraps)
    // and in-place offsets that differ on every rank. Float avg is not exact on 3 ranks (NCCL pre-multiplies).
    // Under MPICH with more ranks than cores, one signed and one unsigned integer and one float
    // (see `oversubscribed_mpich`).
    if oversubscribed_mpich(3) {
        exact_sweep(3, "int8,uint64", "all");
        exact_sweep(3, "double", "sum,prod,min,max");
    } else {
        exact_sweep(3, ints, "all");
        exact_sweep(3, "float,double", "sum,prod,min,max");
    }
}

#[test]
fn float_avg_on_three_ranks_runs_only_without_the_check() {
    let env = fake_env("3", &[]);
    let (o, d) = nccl_run(3, &["-o", "avg", "--csv", "run.csv"], &env);
    refused(&o, d.path(), &["-o/--op: avg of float on 3 ranks cannot be checked exactly", "-c 0"]);
    let (o, _d) = nccl_run(3, &["-o", "avg", "-c", "0", "-e", "4K", "--budget", "2ms", "--no-csv"], &env);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
}

/// With `--groups` float avg is judged by the group's size, the n NCCL divides by there: groups
/// of 2 on 6 ranks run and are checked exactly (judged by the world's 6 they were refused), and
/// groups of 3 are refused naming 3, not the world's 6 (one line, exit 2).
#[test]
fn float_avg_in_groups_is_judged_by_the_group_size() {
    let env = fake_env("6", &[]);
    let args = |layout| {
        let a =
            ["all-reduce", "-d", "float,double", "-o", "avg", "-b", "64", "-e", "1K", "-f", "4", "-n", "2", "-r", "1"];
        let mut a: Vec<&str> = a.to_vec();
        a.extend(["--no-csv", "--groups", layout]);
        a
    };
    let (o, _d) = nccl_run(6, &args("split=div:2"), &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("3 group(s) of 2 rank(s)") && out.contains("# Wrong elements       : 0 OK"), "{out}");
    // float and double at 64 B, 256 B and 1 KiB, every one checked and exact.
    let rows = rows(&o);
    assert_eq!(rows.len(), 6, "{out}");
    assert!(rows.iter().all(|r| r[8] == "0" && r[12] == "0"), "{out}");
    let (o, d) = nccl_run(6, &args("split=div:3"), &env);
    refused(
        &o,
        d.path(),
        &["-o/--op: avg of float in groups of 3 ranks (--groups) cannot be checked exactly (NCCL multiplies each input by 1/3 before summing, which rounds); use groups of a power-of-two size"],
    );
}

#[test]
fn two_ranks_time_16_bit_floats_and_blocking_calls_with_the_check_off() {
    let env = fake_env("2", &[("FAKE_CUDA_NOT_READY", "3")]);
    for blocking in ["0", "1"] {
        let args = [
            "all", "-d", "all", "-o", "sum,avg", "-c", "0", "-e", "16K", "-f", "16", "--budget", "2ms", "-z", blocking,
        ];
        let (o, _d) = nccl_run(2, &args, &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
        // The id made by rank 0 reached rank 1 intact (the stand-in's init checks every byte).
        assert!(out.contains(": GPU 0 Fake GPU 0 (PCI 0000:01:00.0; "), "{out}");
        assert!(out.contains(": GPU 1 Fake GPU 1 (PCI 0000:02:00.0; "), "{out}");
        for t in ["half", "bfloat16", "double"] {
            assert!(rows(&o).iter().any(|r| r[2] == t), "{t} missing:\n{out}");
        }
        assert!(stderr(&o).trim().is_empty(), "{}", stderr(&o));
    }
}

#[test]
fn cuda_visible_devices_names_the_gpu_in_the_header() {
    let env = fake_env("4", &[("CUDA_VISIBLE_DEVICES", "3,GPU-5d1c0001")]);
    let (o, _d) = nccl_run(2, &["-c", "0", "-e", "1K", "--budget", "2ms", "--no-csv"], &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains(": GPU 0 (CUDA_VISIBLE_DEVICES entry 3) Fake GPU 3 (PCI 0000:04:00.0; "), "{out}");
    assert!(out.contains(": GPU 1 (CUDA_VISIBLE_DEVICES entry GPU-5d1c0001) Fake GPU 1 (PCI 0000:02:00.0; "), "{out}");
}

const GPU_VALIDATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ci/gpu-validate.sh");

#[test]
fn gpu_validate_without_a_gpu_is_one_line_and_exit_2() {
    if on_path("nvidia-smi") {
        say_skipped("gpu_validate_without_a_gpu_is_one_line_and_exit_2", "this machine has nvidia-smi");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new("bash").arg(GPU_VALIDATE).env("OUT_DIR", dir.path().join("out")).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}\n{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("ci/gpu-validate.sh: no NVIDIA GPU on this machine"), "{err}");
    assert!(stdout(&o).is_empty() && files(dir.path()).is_empty());
}

/// The script's whole path on the stand-ins: an `nvidia-smi` that lists two fake GPUs, the fake
/// libcuda and libnccl, and an `NCCL_TESTS_DIR` whose `*_perf` print nccl-tests' rows.
#[test]
fn gpu_validate_checks_every_collective_and_compares_with_nccl_tests() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    let perf = dir.path().join("nccl-tests");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&perf).unwrap();
    let script = |p: &Path, text: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(p, text).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script(
        &bin.join("nvidia-smi"),
        "#!/bin/sh\ncase \"$*\" in *driver_version*) echo 550.54;; *) echo 'Fake GPU 0'; echo 'Fake GPU 1';; esac\n",
    );
    for p in ["all_reduce_perf", "all_gather_perf", "alltoall_perf"] {
        script(
            &perf.join(p),
            "#!/bin/sh\n[ \"${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}\" = 0 ] || exit 0\necho '#  size count type redop root time algbw busbw #wrong'\necho '      64      16  float  sum  -1  10.0  0.01  0.50  0'\necho '     512     128  float  sum  -1  10.0  0.05  0.25  0'\n",
        );
    }
    let out_dir = dir.path().join("out");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let o = Command::new("timeout")
        .args(["600", "bash", GPU_VALIDATE])
        .env("PATH", path)
        .env("OUT_DIR", &out_dir)
        .env("NCCL_TESTS_DIR", &perf)
        .env("SIZES", "-b 64 -e 512 -f 8 --budget 1ms")
        .env("DTYPES", "int32,float")
        .env("COLL_BENCH_CUDA_LIBRARY", fake_cuda())
        .env("COLL_BENCH_NCCL_LIBRARY", fake_nccl())
        .env("FAKE_CUDA_DEVICES", "2")
        .env("FAKE_NCCL_VERSION", "22403")
        .env("ALGORITHM_SIZES", "-b 1K -e 1M -f 32 --budget 1ms")
        .env("COLL_BENCH_MPI", FAMILY)
        .output()
        .unwrap();
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.starts_with("# coll-bench --backend nccl on 2 x Fake GPU 0\n"), "{out}");
    // The algorithm check: NCCL's tuning line named, a forced one followed, the user's own kept.
    assert!(out.contains("## algorithm: NCCL's tuning line (ok)"), "{out}");
    assert!(out.contains("algorithm_source library log  (want library log)"), "{out}");
    assert!(out.contains("- NCCL_ALGO=Ring NCCL_PROTO=Simple: ring/simple  (want ring/simple)"), "{out}");
    for n in [1, 2] {
        for run in ["checked", "narrow-checked"] {
            assert!(out.contains(&format!("| {n} | {run} | 0 | ")), "{run} on {n} ranks:\n{out}");
        }
    }
    assert!(!out.contains("# Collective:"), "the runs' tables belong in their .txt files:\n{out}");
    // The launch check: three ways of timing, a row per size with both ratios.
    assert!(out.contains("## launch: all-reduce time per call on 2 rank(s)"), "{out}");
    let launch_rows = out.lines().filter(|l| l.starts_with("| 8 | ") || l.starts_with("| 64 | ")).count();
    assert!(launch_rows >= 2, "{out}");
    // 4 CSVs of the checked runs (beside the 3 of the launch check), every collective in each,
    // no wrong element.
    let csvs: Vec<_> = files(&out_dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with("launch-"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with("algorithm-"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with("mode-"))
        .collect();
    assert_eq!(csvs.len(), 4, "{csvs:?}");
    for c in &csvs {
        let mut rd = csv::Reader::from_path(c).unwrap();
        let h = rd.headers().unwrap().clone();
        let col = |name: &str| h.iter().position(|x| x == name).unwrap();
        let (coll, wrong, placement) = (col("collective"), col("wrong"), col("placement"));
        let mut seen = std::collections::BTreeSet::new();
        for r in rd.records() {
            let r = r.unwrap();
            // Every run is checked (the narrow floats within their tolerance), but in-place
            // all-to-all and sendrecv, which NCCL does not support (N/A, as nccl-tests).
            assert_eq!(&r[wrong], wrong_cell(&r[placement], &r[coll]), "{c:?}: {r:?}");
            seen.insert(r[coll].to_string());
        }
        assert_eq!(seen.len(), 12, "{c:?}: {seen:?}");
    }
    // The ratios, for the sizes both ran; collectives without a *_perf here are named as skipped.
    for coll in ["all-reduce", "all-gather", "all-to-all"] {
        // (Sizes every collective shares out evenly in 16 bytes a rank on 1 and 2 ranks, so the
        // fake rows, the same for every collective, are what nccl-tests prints.)
        for (size, theirs) in [(64, "0.500"), (512, "0.250")] {
            let row = out
                .lines()
                .find(|l| l.starts_with(&format!("| 2 | {coll} | {size} | ")))
                .unwrap_or_else(|| panic!("no ratio for {coll} at {size} B:\n{out}"));
            let f: Vec<&str> = row.split('|').map(str::trim).collect();
            assert_eq!(f[5], theirs, "{row}");
            let ratio: f64 = f[6].parse().unwrap();
            let ours: f64 = f[4].parse().unwrap();
            assert!((ratio - ours / theirs.parse::<f64>().unwrap()).abs() < 0.01, "{row}");
        }
    }
    assert!(stderr(&o).contains("reduce_perf missing; skipped reduce"), "{}", stderr(&o));
    // The launch modes beside nccl-tests' same flags (issue 48): a row per mode, collective and
    // size, its ratio judged against ±2% (the fake rows are not the stand-in's speed: marked).
    assert!(out.contains("## launch modes: coll-bench / nccl-tests busbw with the same flag"), "{out}");
    for mode in ["-G 1", "-m 4"] {
        for coll in ["all-reduce", "all-gather"] {
            let row = out
                .lines()
                .find(|l| l.starts_with(&format!("| {mode} | 2 | {coll} | 64 | ")))
                .unwrap_or_else(|| panic!("no {mode} row for {coll}:\n{out}"));
            let ratio: f64 = row.split('|').map(str::trim).nth(7).unwrap().parse().unwrap();
            assert!(row.ends_with(if (0.98..=1.02).contains(&ratio) { "| ok |" } else { "| outside ±2% |" }), "{row}");
        }
    }
    // -R 2 on an NCCL before 2.27: coll-bench refuses it (nccl-tests would quietly run -R 1), a
    // row says why, and the script does not fail for it.
    for coll in ["all-reduce", "all-gather"] {
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("| -R 2 | 2 | {coll} | - |")))
            .unwrap_or_else(|| panic!("no -R 2 row for {coll}:\n{out}"));
        assert!(row.ends_with("| not run: -R/--register 2: NCCL 2.24.3 has no symmetric windows (ncclCommWindowRegister); expected NCCL 2.27 or newer, or -R 1 or 0 |"), "{row}");
    }
    // nccl-tests built without MPI=1: under mpirun every process runs a 1-rank test and prints
    // its own header; the script says so and fails instead of comparing those rows.
    script(
        &perf.join("all_gather_perf"),
        "#!/bin/sh\necho '# nThread 1 nGpus 1 minBytes 64 maxBytes 512'\necho '      64      16  float  sum  -1  10.0  0.01  0.50  0'\n",
    );
    let o = Command::new("timeout")
        .args(["600", "bash", GPU_VALIDATE])
        .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()))
        .env("OUT_DIR", dir.path().join("out2"))
        .env("NCCL_TESTS_DIR", &perf)
        .env("SIZES", "-b 64 -e 512 -f 8 --budget 1ms")
        .env("DTYPES", "float")
        .env("COLL_BENCH_CUDA_LIBRARY", fake_cuda())
        .env("COLL_BENCH_NCCL_LIBRARY", fake_nccl())
        .env("FAKE_CUDA_DEVICES", "2")
        .env("ALGORITHM_SIZES", "-b 1K -e 1K --budget 1ms")
        .env("COLL_BENCH_MPI", FAMILY)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("all_gather_perf ran as 2 separate 1-rank tests (build nccl-tests with make MPI=1)"),
        "{}",
        stderr(&o)
    );
    assert!(!stdout(&o).contains("| 2 | all-gather | 64 | "), "{}", stdout(&o));
}

/// The library's native gather, scatter and all-to-all, where the library has them: with point-to-
/// point switched off in the stand-in (FAKE_NCCL_FAIL=p2p), only the native calls can produce
/// these results, exact on 1-3 ranks in both placements.
#[test]
fn native_gather_scatter_and_all_to_all_where_the_library_has_them() {
    let native = fake_nccl_native().to_str().unwrap();
    for n in 1..=3 {
        let env = fake_env("3", &[("COLL_BENCH_NCCL_LIBRARY", native), ("FAKE_NCCL_FAIL", "p2p")]);
        let types = if oversubscribed_mpich(n) { "int8,double" } else { "int8,uint8,int32,uint64,float,double" };
        let args = [
            "gather",
            "scatter",
            "all-to-all",
            "-d",
            types,
            "-b",
            "8",
            "-e",
            "64K",
            "-f",
            "8",
            "--budget",
            "2ms",
            "--csv",
            "run.csv",
            // The ceiling pass is point-to-point, which this stand-in has switched off.
            "--no-ceiling",
        ];
        let (o, d) = nccl_run(n, &args, &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{n} ranks:\n{out}\n{}", stderr(&o));
        assert!(
            out.contains("# NCCL: native all-to-all, gather, scatter; init non-blocking (ncclCommInitRankConfig)"),
            "{out}"
        );
        assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
        let csv = std::fs::read_to_string(d.path().join("run.csv")).unwrap();
        let mut rd = csv::Reader::from_reader(csv.as_bytes());
        let h = rd.headers().unwrap().clone();
        let col = |name: &str| h.iter().position(|c| c == name).unwrap();
        let (wrong, placement, coll) = (col("wrong"), col("placement"), col("collective"));
        let mut placements = std::collections::BTreeSet::new();
        for r in rd.records() {
            let r = r.unwrap();
            assert_eq!(&r[wrong], wrong_cell(&r[placement], &r[coll]), "{r:?}");
            placements.insert(r[placement].to_string());
        }
        assert_eq!(placements.len(), 2, "{placements:?}");
    }
    // Without the native calls the same run needs point-to-point, and the header says so.
    // Every rank's call fails at once: one line for the job and exit 2, under Hydra too (every
    // rank leaves its books in order; a rank that just exited made Hydra kill the other and
    // return 1 about one run in ten).
    let env = fake_env("2", &[("FAKE_NCCL_FAIL", "p2p")]);
    let (o, _d) = nccl_run(2, &["gather", "-e", "1K", "--no-csv"], &env);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("NCCL error in ncclSend: invalid usage") && err.contains("fake NCCL: point-to-point is off"),
        "{err}"
    );
    // One rank's call fails while the others wait inside NCCL for it (a GPU gone): the job ends
    // at once, not at -T, in one line naming that rank.
    let env = fake_env("3", &[("FAKE_NCCL_FAIL", "p2p"), ("FAKE_NCCL_FAIL_RANK", "1")]);
    let t0 = std::time::Instant::now();
    let (o, _d) = nccl_run(3, &["gather", "-e", "1K", "--no-csv", "-T", "60"], &env);
    let (took, err) = (t0.elapsed(), stderr(&o));
    assert_eq!(o.status.code(), Some(2), "{}\n{err}", stdout(&o));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("point-to-point is off") && err.contains("(rank 1 on "), "{err}");
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
    let env = fake_env("2", &[]);
    let (o, _d) = nccl_run(2, &["gather", "-e", "1K", "--no-csv"], &env);
    assert!(
        stdout(&o).contains("# NCCL: all-to-all, gather, scatter as grouped send/recv; init non-blocking"),
        "{}",
        stdout(&o)
    );
}

/// A rank whose init fails at once: every rank leaves at once, and the line names that rank.
#[test]
fn an_init_that_fails_on_one_rank_is_named_and_no_rank_hangs() {
    let env = fake_env("3", &[("FAKE_NCCL_FAIL", "init"), ("FAKE_NCCL_FAIL_RANK", "1")]);
    let (o, d) = nccl_run(3, &["--csv", "run.csv"], &env);
    let line = refused(
        &o,
        d.path(),
        &[
            "NCCL error in ncclCommInitRankConfig: unhandled system error",
            "(code 2): fake NCCL: cannot reach the other ranks",
        ],
    );
    assert!(line.contains("(rank 1 on ") && line.ends_with(", GPU 1)"), "{line}");
}

/// A rank whose non-blocking init fails later: every rank leaves at once (see
/// `an_init_that_fails_later_on_one_rank_ends_every_rank_at_once`). One that never completes:
/// the others keep waiting (as with the real NCCL) until -T's limit, then every rank leaves; one
/// line, exit 2, naming the rank whose init failed where one did, else the lowest rank that gave
/// up.
#[test]
fn an_init_that_never_completes_ends_at_the_timeout() {
    let run = |fail: &str, rank: &str| {
        let env = fake_env("3", &[("FAKE_NCCL_FAIL", fail), ("FAKE_NCCL_FAIL_RANK", rank)]);
        let t0 = std::time::Instant::now();
        let (o, d) = nccl_run(3, &["-T", "3", "--csv", "run.csv"], &env);
        // A guard against a hang, not a timing bar (the machine may be loaded).
        let took = t0.elapsed().as_secs_f64();
        assert!(took < 120.0, "took {took:.1} s");
        (o, d)
    };
    // Rank 1's init fails after it started: the line names rank 1.
    let (o, d) = run("init-async", "1");
    let line = refused(
        &o,
        d.path(),
        &[
            "NCCL error in ncclCommInitRankConfig: unhandled system error",
            "fake NCCL: bootstrap: connection to a peer refused (rank 1 on ",
        ],
    );
    assert!(line.ends_with(", GPU 1)"), "{line}");
    // Rank 2's init never completes: every rank gives up at the limit; the lowest says so.
    let (o, d) = run("init-hang", "2");
    let line = refused(
        &o,
        d.path(),
        &["ncclCommInitRankConfig did not finish within 3 s (-T/--timeout): a rank's init failed or cannot reach the others (rank 0 on "],
    );
    assert!(line.ends_with(", GPU 0)"), "{line}");
}

/// Issue 23, point 9: one rank's non-blocking init fails after it started while the others wait
/// for it inside NCCL: they hear of it at once (not when -T, here 600 s, runs out), and every
/// rank leaves with one line from rank 0 naming rank 1 and NCCL's error, exit 2.
#[test]
fn an_init_that_fails_later_on_one_rank_ends_every_rank_at_once() {
    fails_later_on_rank_1(
        "init-async",
        &[
            "NCCL error in ncclCommInitRankConfig: unhandled system error",
            "fake NCCL: bootstrap: connection to a peer refused (rank 1 on ",
        ],
    );
}

/// 3 ranks, `FAKE_NCCL_FAIL=fail` on rank 1 and `-T 600`: one line from rank 0 with every needle,
/// naming rank 1's GPU, exit 2, well before the launcher's 150 s kill (far beyond a few seconds
/// even on a loaded machine, far below -T).
fn fails_later_on_rank_1(fail: &str, needles: &[&str]) {
    let env = fake_env("3", &[("FAKE_NCCL_FAIL", fail), ("FAKE_NCCL_FAIL_RANK", "1")]);
    let t0 = std::time::Instant::now();
    let (o, d) = nccl_run_within(150, 3, &["-T", "600", "--csv", "run.csv"], &env);
    let took = t0.elapsed().as_secs_f64();
    let line = refused(&o, d.path(), needles);
    assert!(line.ends_with(", GPU 1)"), "{line}");
    assert!(took < 150.0, "took {took:.1} s");
}

/// Issue 48, item 2: a split that fails on NCCL's thread on one rank (here the blocking copy's,
/// made on every run from NCCL 2.18) while the others wait for it to join the child: they hear
/// of it at once, as at the world's init, and every rank leaves with one line from rank 0 naming
/// rank 1, exit 2. On 956b049 the split was polled without the alarm: ranks 0 and 2 waited
/// for -T (here 600 s) and the launcher's 150 s kill ended the run.
#[test]
fn a_split_that_fails_later_on_one_rank_ends_every_rank_at_once() {
    fails_later_on_rank_1(
        "split-async",
        &[
            "NCCL error in ncclCommSplit: unhandled system error",
            "fake NCCL: split: bootstrap connection to a peer refused (rank 1 on ",
        ],
    );
}

/// Issue 23, point 9, before NCCL 2.14 (a blocking init): one rank's init fails at once while the
/// others wait inside NCCL's blocking init, where no agreement reaches them. That rank says so in
/// one line (its rank and NCCL's error) and ends the job; the launcher ends the others.
#[test]
fn a_blocking_init_that_fails_on_one_rank_ends_the_job() {
    let env =
        fake_env("3", &[("FAKE_NCCL_VERSION", "21304"), ("FAKE_NCCL_FAIL", "init"), ("FAKE_NCCL_FAIL_RANK", "1")]);
    let (o, d) = nccl_run_within(150, 3, &["--csv", "run.csv"], &env);
    let err = stderr(&o);
    // Open MPI's mpirun passes the 2 on. The others cannot be reached inside NCCL's blocking init
    // to leave Hydra's books in order, so Hydra kills them and returns the worst status, the
    // signal's number (9, or its placeholder 1: README, exit codes). 124/137: timed out.
    let expected: &[i32] = if FAMILY == "mpich" { &[2, 1, 9] } else { &[2] };
    assert!(o.status.code().is_some_and(|c| expected.contains(&c)), "exit {:?}\n{err}", o.status.code());
    // Rank 0, waiting inside NCCL, cannot know why the launcher's SIGTERM came: it may say it
    // was ended by it (report::interrupted), after the failing rank's line.
    let lines: Vec<&str> =
        err.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("coll-bench: interrupted by SIGTERM")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    for n in [
        "coll-bench: error: NCCL error in ncclCommInitRank: unhandled system error",
        "fake NCCL: cannot reach the other ranks (rank 1 on ",
        "the other ranks wait inside NCCL's blocking init: aborting the job",
    ] {
        assert!(lines[0].contains(n), "{n:?} not in {err}");
    }
    // Nothing of coll-bench's on stdout; when Hydra ends the others with SIGKILL (exit 9) it
    // prints its own BAD TERMINATION banner there.
    let out = stdout(&o);
    assert!(!out.contains("# coll-bench") && !out.contains("coll-bench:"), "{out}");
    assert!(files(d.path()).is_empty(), "left {:?}", files(d.path()));
}

/// The stand-ins' trace (`FAKE_NCCL_TRACE`), one list of events per rank process, in order.
fn trace_by_pid(text: &str) -> std::collections::BTreeMap<&str, Vec<&str>> {
    let mut by_pid: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for l in text.lines() {
        let (pid, what) = l.split_once(' ').unwrap();
        by_pid.entry(pid).or_default().push(what);
    }
    by_pid
}

/// The most calls handed to NCCL between two waits of the host for the device.
fn launches_per_sync(events: &[&str]) -> usize {
    let (mut run, mut most) = (0, 0);
    for e in events {
        match *e {
            "launch" => {
                run += 1;
                most = most.max(run);
            }
            "sync" => run = 0,
            _ => {}
        }
    }
    most
}

/// Issue 48's launch modes, as nccl-tests' `BenchTime` runs them. `-G 3 -m 2`: each timed run's
/// batch is captured once (its calls reach NCCL once, at capture: one launch per group of 2
/// calls) and its graph launched 3 times per sample; the stand-in's trace shows the captures and
/// the replays (every replay runs the captured group: one node). `-m 2 -C 1` without a graph:
/// each iteration is one group (one launch, two calls), and the host's launch time is reported.
#[test]
fn graphs_replay_captured_groups_and_groups_launch_once() {
    for (modes, launches, replays) in [(&["-G", "3", "-m", "2"][..], 4, 60), (&["-m", "2", "-C", "1"][..], 20, 0)] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace");
        let env = fake_env("2", &[("FAKE_NCCL_TRACE", trace.to_str().unwrap()), ("FAKE_NCCL_TRACE_BUFFERS", "1")]);
        let mut args = vec!["all-reduce", "-b", "1M", "-e", "1M", "-n", "8", "-w", "2", "-c", "0", "--no-ceiling"];
        args.extend(modes);
        args.extend(["--csv", "r.csv"]);
        let (o, d) = nccl_run(2, &args, &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{modes:?}: {out}\n{}", stderr(&o));
        assert!(out.contains("calls per NCCL group (-m 2; time per call)"), "{out}");
        assert_eq!(out.contains("#wrong  cputime\n"), modes.contains(&"-C"), "{out}");
        let text = std::fs::read_to_string(&trace).unwrap();
        let by_pid = trace_by_pid(&text);
        assert_eq!(by_pid.len(), 2, "{text}");
        for (pid, ev) in &by_pid {
            // Per placement: the warm-up's 2 iterations and the timed 8, each a group of 2.
            let count = |what: &str| ev.iter().filter(|e| **e == what).count();
            assert_eq!(count("launch"), launches, "process {pid} {modes:?}: {ev:?}");
            assert_eq!(ev.iter().filter(|e| e.starts_with("buffers ")).count(), 2 * launches, "process {pid}");
            assert_eq!(count("graph-launch 1"), replays, "process {pid} {modes:?}");
            assert_eq!(ev.iter().filter(|e| e.starts_with("graph-launch")).count(), replays, "process {pid}");
        }
        let rows = csv_rows(&d.path().join("r.csv"));
        assert_eq!(rows.len(), 2, "{rows:?}");
        for r in &rows {
            assert_eq!((r["iters"].as_str(), r["warmup_iters"].as_str()), ("8", "2"), "{r:?}");
            assert_eq!(r["cuda_graph"], if replays > 0 { "3" } else { "0" }, "{r:?}");
            assert_eq!(r["agg_iters"], "2", "{r:?}");
            match modes.contains(&"-C") {
                true => assert!(r["cpu_time_us"].parse::<f64>().unwrap() > 0.0, "{r:?}"),
                false => assert_eq!(r["cpu_time_us"], "", "{r:?}"),
            }
        }
    }
}

/// `-R`: the timed buffers come from ncclMemAlloc and each is registered once (ncclCommRegister,
/// or a symmetric window from NCCL 2.27), before any call, and deregistered after the last call,
/// before the memory is freed; every collective stays exact, with graphs too.
#[test]
fn registered_buffers_are_registered_once_and_deregistered_at_the_end() {
    for (level, version, reg, unreg) in
        [("1", "21905", "register", "deregister"), ("2", "22703", "window", "window-free")]
    {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace");
        let env = fake_env("3", &[("FAKE_NCCL_TRACE", trace.to_str().unwrap()), ("FAKE_NCCL_VERSION", version)]);
        let args = [
            "all-reduce",
            "all-gather",
            "reduce-scatter",
            "sendrecv",
            "-b",
            "8",
            "-e",
            "256K",
            "-f",
            "8",
            "--budget",
            "2ms",
            "-G",
            "1",
            "-R",
            level,
            "--csv",
            "r.csv",
        ];
        let (o, d) = nccl_run(3, &args, &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "-R {level}: {out}\n{}", stderr(&o));
        let said = if level == "1" {
            "registered with ncclCommRegister (-R 1)"
        } else {
            "symmetric windows (ncclCommWindowRegister"
        };
        assert!(out.contains(said), "{out}");
        let text = std::fs::read_to_string(&trace).unwrap();
        let by_pid = trace_by_pid(&text);
        assert_eq!(by_pid.len(), 3, "{text}");
        for (pid, ev) in &by_pid {
            let at = |p: &dyn Fn(&str) -> bool| {
                ev.iter().enumerate().filter(|(_, e)| p(e)).map(|(i, _)| i).collect::<Vec<_>>()
            };
            let (allocs, regs) = (at(&|e| e.starts_with("memalloc ")), at(&|e| e.starts_with(&format!("{reg} "))));
            let (unregs, frees, launches) = (at(&|e| e == unreg), at(&|e| e == "memfree"), at(&|e| e == "launch"));
            assert_eq!(
                (allocs.len(), regs.len(), unregs.len(), frees.len()),
                (2, 2, 2, 2),
                "process {pid} -R {level}: {ev:?}"
            );
            assert!(regs[1] < launches[0] && launches[launches.len() - 1] < unregs[0], "process {pid}: {ev:?}");
            assert!(unregs[1] < frees[0], "process {pid}: {ev:?}");
            let other = if level == "1" { "window " } else { "register " };
            assert!(!ev.iter().any(|e| e.starts_with(other)), "process {pid}: {ev:?}");
        }
        let rows = csv_rows(&d.path().join("r.csv"));
        assert!(!rows.is_empty());
        for r in &rows {
            assert_eq!(r["register"], level, "{r:?}");
            assert_eq!(r["wrong"], wrong_cell(&r["placement"], &r["collective"]), "{r:?}");
        }
    }
}

/// `-R` where the library cannot: refused in one line before anything is timed, naming the
/// version it needs; and a communicator without symmetric-memory support (NCCL then makes a null
/// window) is refused rather than timed unregistered.
#[test]
fn registration_the_library_cannot_do_is_refused() {
    for (level, version, more, needles) in [
        (
            "1",
            "21805",
            None,
            &[
                "-R/--register 1: NCCL 2.18.5 has no ncclMemAlloc and ncclCommRegister",
                "expected NCCL 2.19 or newer, or -R 0",
            ][..],
        ),
        (
            "2",
            "22605",
            None,
            &["-R/--register 2: NCCL 2.26.5 has no symmetric windows", "expected NCCL 2.27 or newer, or -R 1 or 0"][..],
        ),
        (
            "2",
            "22703",
            Some(("FAKE_NCCL_SYMMETRIC", "0")),
            &["-R/--register 2: NCCL 2.27.3 made no symmetric window", "expected -R 1 or 0"][..],
        ),
    ] {
        let mut env = fake_env("2", &[("FAKE_NCCL_VERSION", version)]);
        env.extend(more);
        let (o, d) = nccl_run(2, &["all-reduce", "-b", "8", "-e", "8", "-R", level, "--csv", "r.csv"], &env);
        refused(&o, d.path(), needles);
    }
}

/// A graph needs blocking calls: where the library cannot split a blocking copy off the
/// non-blocking init (NCCL before 2.18), -G is refused before anything is timed.
#[test]
fn a_graph_on_a_non_blocking_communicator_is_refused_up_front() {
    let env = fake_env("2", &[("COLL_BENCH_NCCL_LIBRARY", fake_nccl_without_split()), ("FAKE_NCCL_VERSION", "21705")]);
    let (o, d) = nccl_run(2, &["all-reduce", "-b", "8", "-e", "8", "-G", "1", "--csv", "r.csv"], &env);
    refused(&o, d.path(), &["-G/--cuda-graph: the timed calls run on a non-blocking communicator", "NCCL 2.17.5"]);
}

/// Every moving collective stays exact when its calls are grouped (-m 3: several sends to one
/// peer in one group) and replayed from graphs (-G 2): the check is one plain call, as
/// nccl-tests' `CheckData` after its timed loop (an in-place reduction repeated in a group would
/// not give the expected data).
#[test]
fn grouped_and_graphed_calls_are_exact() {
    let env = fake_env("3", &[]);
    let args = [
        "all-reduce",
        "all-gather",
        "reduce-scatter",
        "broadcast",
        "reduce",
        "gather",
        "scatter",
        "all-to-all",
        "all-to-all-v",
        "sendrecv",
        "barrier",
        "-b",
        "8",
        "-e",
        "64K",
        "-f",
        "64",
        "--budget",
        "2ms",
        "-G",
        "2",
        "-m",
        "3",
        "-d",
        "int32",
        "--csv",
        "r.csv",
    ];
    let (o, d) = nccl_run(3, &args, &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
    let rows = csv_rows(&d.path().join("r.csv"));
    assert!(rows.len() >= 11 * 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r["wrong"], wrong_cell(&r["placement"], &r["collective"]), "{r:?}");
        assert_eq!((r["cuda_graph"].as_str(), r["agg_iters"].as_str()), ("2", "3"), "{r:?}");
    }
}

/// Issue 23, points 2 and 5 (and its speed bar): on NCCL 2.23 semantics, where every call on a
/// non-blocking communicator launches from a thread of its own, the timed calls run on a
/// blocking communicator split from the non-blocking init (no thread per call), and a timed run
/// of 200 calls at 8 B is launched back to back with one wait of the host at its end (launches
/// per sync >= the calls of the run, so >= its batch size); with -z 1 the host waits for each.
/// The header says which.
#[test]
fn timed_calls_run_on_a_blocking_communicator_launched_back_to_back() {
    for blocking in ["0", "1"] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace");
        let env = fake_env("2", &[("FAKE_NCCL_VERSION", "22304"), ("FAKE_NCCL_TRACE", trace.to_str().unwrap())]);
        let args =
            ["all-reduce", "-d", "int32", "-b", "8", "-e", "8", "-n", "200", "-w", "2", "--no-csv", "-z", blocking];
        let (o, _d) = nccl_run(2, &args, &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
        let text = std::fs::read_to_string(&trace).unwrap();
        let by_pid = trace_by_pid(&text);
        assert_eq!(by_pid.len(), 2, "{text}");
        for (pid, ev) in &by_pid {
            let launches = ev.iter().filter(|e| **e == "launch").count();
            assert!(launches >= 2 * 200, "process {pid}: {launches} launches");
            assert_eq!(ev.iter().filter(|e| **e == "thread").count(), 0, "process {pid}: a thread per call");
            let most = launches_per_sync(ev);
            if blocking == "0" {
                assert!(most >= 200, "process {pid}: at most {most} launches per sync");
            } else {
                assert_eq!(most, 1, "process {pid}");
            }
        }
        // Said in the header (after the trace, which shows it).
        let how = if blocking == "0" {
            "; each timed run's calls launched back to back, one host wait at its end"
        } else {
            "; -z 1: the host waits for each call"
        };
        assert!(out.contains(how), "{out}");
        assert!(
            out.contains(
                "# NCCL timing: on a blocking communicator split from the non-blocking init (ncclCommSplit); "
            ),
            "{out}"
        );
    }
    // The knob ci/gpu-validate.sh compares with: timed on the non-blocking communicator, every
    // call (2.23 semantics) launches from a thread of its own.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let env = fake_env(
        "2",
        &[
            ("FAKE_NCCL_VERSION", "22304"),
            ("FAKE_NCCL_TRACE", trace.to_str().unwrap()),
            ("COLL_BENCH_DEBUG_NCCL_NONBLOCKING_TIMING", "1"),
        ],
    );
    let (o, _d) = nccl_run(2, &["all-reduce", "-d", "int32", "-b", "8", "-e", "8", "-n", "20", "--no-csv"], &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("# NCCL timing: on non-blocking communicators (each call may answer ncclInProgress"), "{out}");
    let text = std::fs::read_to_string(&trace).unwrap();
    for (pid, ev) in &trace_by_pid(&text) {
        let threads = ev.iter().filter(|e| **e == "thread").count();
        assert!(threads >= 20, "process {pid}: {threads} threads");
    }
}

/// Issue 48, item 1: the config is the loaded library's own layout (its `nccl.h`'s size and
/// version), and no byte of it is garbage. The stand-in reads it as NCCL's `parseCommConfig`
/// does for the version it claims: 2.26 copies 48 bytes with no reset of `trafficClass`, so
/// 2.18-2.25's padding at byte 44 became the InfiniBand service level (on 956b049: size 48,
/// version 21400, trafficClass whatever the stack held). Both configs (the non-blocking init
/// and the blocking copy's split) are checked on every version where the layout changed.
#[test]
fn the_config_is_the_loaded_librarys_layout_with_no_garbage() {
    for (version, size) in [("21805", 48), ("22602", 48), ("22703", 72), ("23007", 96), ("23203", 120)] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace");
        let env = fake_env("2", &[("FAKE_NCCL_VERSION", version), ("FAKE_NCCL_TRACE", trace.to_str().unwrap())]);
        let args = ["all-reduce", "-d", "int32", "-b", "8", "-e", "8", "-n", "2", "-w", "1", "--no-csv"];
        let (o, _d) = nccl_run(2, &args, &env);
        assert_eq!(o.status.code(), Some(0), "NCCL {version}: {}\n{}", stdout(&o), stderr(&o));
        let text = std::fs::read_to_string(&trace).unwrap();
        let configs: Vec<&str> = text.lines().filter_map(|l| l.split_once(" config ").map(|x| x.1)).collect();
        // Two ranks, each an init and a split.
        assert_eq!(configs.len(), 4, "NCCL {version}: {text}");
        for c in &configs {
            assert!(c.starts_with(&format!("{size} {version} ")), "NCCL {version}: {c}");
            assert!(c.ends_with(" trafficClass=undef"), "NCCL {version}: {c}");
        }
        // The init (non-blocking, shared with its children) and the split (blocking).
        let init = configs.iter().filter(|c| c.contains(" blocking=0 splitShare=1 ")).count();
        let split = configs.iter().filter(|c| c.contains(" blocking=1 splitShare=undef ")).count();
        assert_eq!((init, split), (2, 2), "{configs:?}");
    }
}

/// Issue 48, item 4: in-place all-to-all and sendrecv are the call nccl-tests times, one buffer
/// as both sides (`alltoall.cu`, `sendrecv.cu`), with no device copy before each call, and are
/// not checked, as there (NCCL does not support them in place): the stand-in sees every timed
/// in-place group's receives overlap its sends, out of place none, and the in-place rows' wrong
/// cell is N/A. On 956b049 each in-place call first copied the buffer to the send buffer (timed
/// with the call), so no group overlapped.
#[test]
fn in_place_all_to_all_and_sendrecv_pass_one_buffer_as_nccl_tests() {
    for kind in ["all-to-all", "sendrecv"] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace");
        let env = fake_env("2", &[("FAKE_NCCL_TRACE", trace.to_str().unwrap())]);
        let args = [kind, "-b", "1K", "-e", "1K", "-n", "50", "-w", "1", "--no-csv"];
        let (o, _d) = nccl_run(2, &args, &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
        let row = rows(&o).into_iter().next().unwrap_or_else(|| panic!("{out}"));
        // #wrong out of place, then in place.
        assert_eq!((row[8].as_str(), row[12].as_str()), ("0", "N/A"), "{out}");
        assert!(out.contains("# NCCL in place: all-to-all and sendrecv are timed with one buffer"), "{out}");
        let text = std::fs::read_to_string(&trace).unwrap();
        let by_pid = trace_by_pid(&text);
        assert_eq!(by_pid.len(), 2, "{text}");
        for (pid, ev) in &by_pid {
            // In place: every call (50 timed, the warm-up) overlaps; out of place: none (the
            // launches are about twice the in-place calls).
            let overlaps = ev.iter().filter(|e| **e == "overlap").count();
            let launches = ev.iter().filter(|e| **e == "launch").count();
            assert!(overlaps >= 50 && 2 * overlaps <= launches + 2, "{kind}, process {pid}: {overlaps} of {launches}");
        }
    }
}

/// Issue 48, item 7: nccl-tests' buffer rotation. Each call of a run moves both buffers by one
/// message within their allocation (sized for the largest message), so mid-size messages do not
/// run L2-hot: at 1 KiB in a sweep to 64 KiB, 64 places for both pointers, one message apart
/// in place and out of place; at the largest size one place each. On 956b049 every call used
/// one place.
#[test]
fn each_call_moves_its_buffers_by_one_message_as_nccl_tests() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let env = fake_env("2", &[("FAKE_NCCL_TRACE", trace.to_str().unwrap()), ("FAKE_NCCL_TRACE_BUFFERS", "1")]);
    let args = ["all-reduce", "-d", "int32", "-b", "1K", "-e", "64K", "-f", "64", "-n", "200", "-w", "5", "--no-csv"];
    let (o, _d) = nccl_run(2, &args, &env);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("the buffers moved by one message from call to call"), "{}", stdout(&o));
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut offsets_by_rank = vec![];
    for (pid, ev) in &trace_by_pid(&text) {
        let places = |bytes: u64| {
            let mut p: Vec<(u64, u64)> = ev
                .iter()
                .filter_map(|e| e.strip_prefix("buffers "))
                .map(|e| e.split(' ').collect::<Vec<_>>())
                .filter(|f| f[0].parse::<u64>().unwrap() == bytes)
                .map(|f| {
                    let hex = |x: &str| u64::from_str_radix(x.trim_start_matches("0x"), 16).unwrap();
                    (hex(f[1]), hex(f[2]))
                })
                .collect();
            p.sort();
            p.dedup();
            p
        };
        // Out of place and in place (all-reduce in place: one pointer for both), each rotated.
        for in_place in [false, true] {
            let small: Vec<(u64, u64)> = places(1024).into_iter().filter(|(s, r)| (s == r) == in_place).collect();
            assert_eq!(small.len(), 64, "process {pid}, in place {in_place}: {small:?}");
            let (s0, r0) = small[0];
            let offsets: Vec<(u64, u64)> = small.iter().map(|(s, r)| (s - s0, r - r0)).collect();
            assert!(offsets.iter().enumerate().all(|(i, o)| *o == (1024 * i as u64, 1024 * i as u64)), "{offsets:?}");
            offsets_by_rank.push(offsets);
        }
        assert_eq!(places(64 * 1024).len(), 2, "process {pid}");
    }
    assert_eq!(offsets_by_rank.len(), 4);
}

/// Issue 48, the stand-ins' strictness: as NCCL 2.22+, a communicator's first collective
/// connects it on the host, inside the call, waiting for every rank's first collective (here
/// 300 ms more, FAKE_NCCL_CONNECT_DELAY_MS), while the work of every call runs on the stream after
/// the call has returned. The first point's first call carries the connection (its GPU time
/// spans it, as the stream waited for the launch), the warm-up absorbs it, and no later point
/// connects again.
#[test]
fn the_first_collective_connects_inside_the_call_and_the_warm_up_absorbs_it() {
    let env = fake_env("2", &[("FAKE_NCCL_VERSION", "22403"), ("FAKE_NCCL_CONNECT_DELAY_MS", "300")]);
    let args = ["all-reduce", "-d", "int32", "-b", "8", "-e", "64", "-f", "8", "--budget", "20ms", "--csv", "run.csv"];
    let (o, d) = nccl_run(2, &args, &env);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let csv = std::fs::read_to_string(d.path().join("run.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let h = rd.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (size, placement, first, time) = (col("size_bytes"), col("placement"), col("first_call_us"), col("time_us"));
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let at = |bytes: &str, p: &str| rows.iter().find(|r| &r[size] == bytes && &r[placement] == p).unwrap().clone();
    let us = |r: &csv::StringRecord, c: usize| r[c].parse::<f64>().unwrap_or_else(|_| panic!("{r:?}"));
    let first_row = at("8", "out-of-place");
    assert!(us(&first_row, first) >= 250_000.0, "{first_row:?}");
    assert!(us(&first_row, time) < 50_000.0, "{first_row:?}");
    for r in [at("8", "in-place"), at("64", "out-of-place"), at("64", "in-place")] {
        assert!(us(&r, first) < 100_000.0, "{r:?}");
    }
}

/// Issue 48, item 6: the blocking copy the timed calls run on shares the world communicator's
/// resources (the parent made with splitShare = 1, which NCCL reads from the parent), so NCCL's
/// buffers are not made twice where it connects at init (before 2.22, or
/// NCCL_RUNTIME_CONNECT=0): one connection per rank, not two. From 2.22 the parent, which runs
/// no call, never connects: one either way. On 956b049 (no sharing) the trace had two per rank
/// where NCCL connects at init.
#[test]
fn the_blocking_copy_shares_the_world_communicators_buffers() {
    for (version, runtime_connect) in [("21805", None), ("22403", Some("0")), ("22403", None)] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace");
        let mut more = vec![("FAKE_NCCL_VERSION", version), ("FAKE_NCCL_TRACE", trace.to_str().unwrap())];
        if let Some(v) = runtime_connect {
            more.push(("NCCL_RUNTIME_CONNECT", v));
        }
        let env = fake_env("2", &more);
        let args = ["all-reduce", "-d", "int32", "-b", "8", "-e", "8", "-n", "2", "-w", "1", "--no-csv"];
        let (o, _d) = nccl_run(2, &args, &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
        assert!(out.contains("on a blocking communicator split from the non-blocking init"), "{out}");
        let text = std::fs::read_to_string(&trace).unwrap();
        for (pid, ev) in &trace_by_pid(&text) {
            let connects = ev.iter().filter(|e| **e == "connect").count();
            assert_eq!(connects, 1, "NCCL {version}, NCCL_RUNTIME_CONNECT={runtime_connect:?}, process {pid}: {ev:?}");
        }
    }
}

/// Issue 23, point 6: the wait for the device yields on every pass (as nccl-tests), so NCCL's
/// proxy thread gets the core: one rank under strace, each event answering "not ready" 3000
/// times after its record, makes at least that many sched_yield calls (the old wait spun 100 000
/// times before sleeping, without a system call).
#[test]
fn the_wait_for_the_device_yields_on_every_pass() {
    if !on_path("strace") {
        say_skipped("the_wait_for_the_device_yields_on_every_pass", "no strace");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let counts = dir.path().join("strace.txt");
    let mut cmd = launch_cmd(300);
    cmd.args(["-n", "1", "strace", "-f", "-qq", "-c", "-e", "trace=sched_yield", "-o"])
        .arg(&counts)
        .args([BIN, "--backend", "nccl", "all-reduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "--no-csv"])
        .current_dir(dir.path());
    for v in STEERING {
        cmd.env_remove(v);
    }
    for (k, v) in fake_env("1", &[("FAKE_CUDA_NOT_READY", "3000")]) {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let table = std::fs::read_to_string(&counts).unwrap();
    let calls: u64 = table
        .lines()
        .find(|l| l.trim_end().ends_with(" sched_yield"))
        .and_then(|l| l.split_whitespace().nth(3))
        .map_or(0, |c| c.parse().unwrap());
    assert!(calls >= 3000, "{calls} sched_yield calls:\n{table}");
}

/// NCCL before 2.14 has no non-blocking init: the blocking one, and the header says so.
#[test]
fn an_nccl_before_2_14_initialises_blocking() {
    let env = fake_env("2", &[("FAKE_NCCL_VERSION", "21304")]);
    let (o, _d) = nccl_run(2, &["-e", "1K", "--budget", "2ms", "--no-csv"], &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("# NCCL 2.13.4 (") && out.contains("; init blocking (ncclCommInitRank)"), "{out}");
}

/// The 8-bit floats: on an NCCL that has them (2.24+), every collective times them with -c 0;
/// with the check on, or on an older NCCL, one line says why not.
#[test]
fn fp8_types_run_with_the_check_off_on_an_nccl_that_has_them() {
    let env = fake_env("2", &[("FAKE_NCCL_VERSION", "22403")]);
    let args = [
        "all",
        "-d",
        "fp8e4m3,fp8e5m2",
        "-o",
        "sum,max",
        "-c",
        "0",
        "-e",
        "4K",
        "-f",
        "8",
        "--budget",
        "2ms",
        "--csv",
        "run.csv",
    ];
    let (o, d) = nccl_run(2, &args, &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let csv = std::fs::read_to_string(d.path().join("run.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let h = rd.headers().unwrap().clone();
    let (dtype, coll) =
        (h.iter().position(|c| c == "dtype").unwrap(), h.iter().position(|c| c == "collective").unwrap());
    let mut seen = std::collections::BTreeSet::new();
    for r in rd.records() {
        let r = r.unwrap();
        seen.insert((r[dtype].to_string(), r[coll].to_string()));
    }
    // Both types in every collective (barrier, which moves no data of a type, runs once).
    assert_eq!(seen.iter().filter(|(_, c)| c != "barrier").count(), 22, "{seen:?}");
    assert!(seen.iter().any(|(_, c)| c == "barrier"), "{seen:?}");

    let old = [env[0], env[1], env[2], ("FAKE_NCCL_VERSION", "22304")];
    let (o, d) = nccl_run(2, &["-d", "fp8e5m2", "-c", "0", "--csv", "run.csv"], &old);
    refused(&o, d.path(), &["-d/--datatype: fp8e5m2 needs NCCL 2.24 or newer (this is 2.23.4)"]);
}

/// `mpirun -n N coll-bench check SPEC …` in a directory of its own, with `env` (and nothing else
/// of ours) set; the spec is written to another directory, so the run's directory shows what
/// the run left.
fn check_run(n: usize, spec: &str, args: &[&str], env: &[(&str, &str)]) -> (Output, tempfile::TempDir) {
    let (dir, specs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let path = specs.path().join("spec.toml");
    std::fs::write(&path, spec).unwrap();
    let mut cmd = launch_cmd(600);
    cmd.arg("-n").arg(n.to_string()).arg(BIN).arg("check").arg(&path).args(args).current_dir(dir.path());
    for v in STEERING {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the MPI launcher runs (is MPI installed? run ci/setup.sh)");
    (out, dir)
}

const NCCL_SPEC: &str = r#"
[settings]
repeats = 1
budget = "2ms"

[[rule]]
name = "gpu all-reduce"
collective = "all-reduce"
backend = "nccl"
sizes = "1K..64K"
plateau = "16K..64K"
min_busbw_gbps = 0.000001
"#;

#[test]
fn a_check_rule_on_the_nccl_backend_is_measured_and_judged() {
    let env = [
        ("COLL_BENCH_CUDA_LIBRARY", fake_cuda()),
        ("COLL_BENCH_NCCL_LIBRARY", fake_nccl()),
        ("FAKE_CUDA_DEVICES", "2"),
    ];
    let (o, d) = check_run(2, NCCL_SPEC, &["--csv", "m.csv"], &env);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("# 2 passed, 0 failed, 0 skipped: PASS"), "{out}");
    assert!(!err.contains("does not have"), "{err}");
    let csv = std::fs::read_to_string(d.path().join("m.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let h = rd.headers().unwrap().clone();
    let (backend, wrong) =
        (h.iter().position(|c| c == "backend").unwrap(), h.iter().position(|c| c == "wrong").unwrap());
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 14, "7 sizes × 2 placements: {csv}");
    assert!(rows.iter().all(|r| &r[backend] == "nccl" && &r[wrong] == "0"), "{csv}");
}

#[test]
fn a_check_rule_on_the_nccl_backend_without_a_cuda_driver_is_the_backends_one_line() {
    if real_library("libcuda.so.1") {
        eprintln!("skipped: this machine has libcuda.so.1");
        return;
    }
    let (o, d) = check_run(2, NCCL_SPEC, &[], &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{}\n{err}", stdout(&o));
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got:\n{err}");
    assert!(lines[0].starts_with("coll-bench: error: ") && lines[0].contains("no CUDA driver"), "{err}");
    assert!(!err.contains("does not have yet") && !err.contains("panicked"), "{err}");
    assert!(files(d.path()).is_empty(), "left {:?}", files(d.path()));
}

/// The hidden test path of group communicators (src/backend/nccl/split.rs) on `n` ranks:
/// `COLL_BENCH_DEBUG_NCCL_SPLIT=spec` splits the world into the groups `rank % N` (rank R in none
/// with `N:R`), keyed (world size - 1 - rank) / 2 so a group's order is neither the world's nor
/// its reverse; every rank checks its place, an all-gather of the world ranks in group order and
/// an exact int32 all-reduce in its group; then the usual run on the whole world.
fn split_run(n: usize, spec: &str, env: &[(&str, &str)]) -> (Output, tempfile::TempDir) {
    let mut env = env.to_vec();
    env.push(("COLL_BENCH_DEBUG_NCCL_SPLIT", spec));
    nccl_run(n, &["-e", "1K", "--budget", "2ms", "--csv", "run.csv"], &env)
}

/// Exit 0, the header naming how the groups were made and each group's world ranks in group
/// order (worked out by hand from colour, key, then world rank), and the world's run exact.
fn split_ok(n: usize, spec: &str, env: &[(&str, &str)], via: &str, groups: &[&str], nocolor: Option<usize>) {
    let (o, d) = split_run(n, spec, env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{n} ranks, {spec}:\n{out}\n{}", stderr(&o));
    let head = format!("# NCCL split test (COLL_BENCH_DEBUG_NCCL_SPLIT={spec}): {via}; in every group the ranks in colour-then-key order, an all-gather of their world ranks and an int32 all-reduce exact\n");
    assert!(out.contains(&head), "{n} ranks, {spec}: no line\n{head}in\n{out}");
    let listed: Vec<&str> = out.lines().filter(|l| l.starts_with("# NCCL split group ")).collect();
    let want: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(c, m)| format!("# NCCL split group {c}: world ranks {m} (in group order)"))
        .collect();
    assert_eq!(listed, want, "{n} ranks, {spec}:\n{out}");
    match nocolor {
        Some(r) => {
            assert!(out.contains(&format!("# NCCL split: world rank {r} in no group (NCCL_SPLIT_NOCOLOR)\n")), "{out}")
        }
        None => assert!(!out.contains("in no group"), "{out}"),
    }
    assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
    assert!(d.path().join("run.csv").exists());
    assert!(stderr(&o).trim().is_empty(), "{}", stderr(&o));
}

/// ncclCommSplit where the library has it (the stand-in claims NCCL 2.18.5): on 2-4 ranks, groups
/// by colour ordered by key then world rank, a rank with NCCL_SPLIT_NOCOLOR in none, and in every
/// group the library's rank and count, an all-gather and an exact all-reduce.
#[test]
fn group_communicators_by_ncclcommsplit_are_ordered_and_exact_in_every_group() {
    let env = fake_env("4", &[]);
    let via = "groups by ncclCommSplit";
    split_ok(2, "2", &env, via, &["0", "1"], None);
    // Keys 1,1,0,0 (4 ranks) and 1,0,0 (3 ranks): the later ranks first, ties by world rank.
    split_ok(4, "1", &env, via, &["2,3,0,1"], None);
    split_ok(4, "2", &env, via, &["2,0", "3,1"], None);
    split_ok(3, "1", &env, via, &["1,2,0"], None);
    split_ok(3, "2:2", &env, via, &["0", "1"], Some(2));
}

/// Without ncclCommSplit (a stand-in built without the symbol, or an NCCL older than 2.18, whose
/// symbol is not used): one unique id per group over the group's MPI communicator, the same
/// groups in the same order, the same checks.
#[test]
fn group_communicators_without_ncclcommsplit_come_from_one_unique_id_per_group() {
    let lib = fake_nccl_without_split();
    let env = fake_env("4", &[("COLL_BENCH_NCCL_LIBRARY", lib)]);
    let via = format!(
        "groups by one unique id per group, broadcast over the group's MPI communicator (the NCCL at {lib} has no ncclCommSplit)"
    );
    split_ok(4, "2", &env, &via, &["2,0", "3,1"], None);
    split_ok(3, "1:0", &env, &via, &["1,2"], Some(0));
    // The stand-in's ncclCommSplit would ignore the key (see the next test): not called on an
    // NCCL that predates it, the order is MPI's, and right.
    let env = fake_env("4", &[("FAKE_NCCL_VERSION", "21704"), ("FAKE_NCCL_FAIL", "split-key")]);
    let via = "groups by one unique id per group, broadcast over the group's MPI communicator (NCCL 2.17.4 predates ncclCommSplit, 2.18)";
    split_ok(4, "1", &env, via, &["2,3,0,1"], None);
}

/// The check can fail: a library whose split ignores the key puts world rank 0 first; every rank
/// leaves with one line from rank 0, exit 2. A malformed spec is refused the same way.
#[test]
fn a_split_in_the_wrong_order_or_a_bad_split_spec_is_one_line() {
    let env = fake_env("4", &[("FAKE_NCCL_FAIL", "split-key")]);
    let (o, d) = split_run(4, "1", &env);
    let line = refused(
        &o,
        d.path(),
        &["COLL_BENCH_DEBUG_NCCL_SPLIT: group 0: world rank 0 is rank 0 of 4 there; colour then key put it at 2 of 4 (order 2,3,0,1) (rank 0 on "],
    );
    assert!(line.ends_with(", GPU 0)"), "{line}");
    for bad in ["0", "2:7", "x"] {
        let (o, d) = split_run(2, bad, &fake_env("2", &[]));
        refused(&o, d.path(), &[&format!("COLL_BENCH_DEBUG_NCCL_SPLIT={bad}: expected N or N:R")]);
    }
}

/// `--groups` on the NCCL backend makes the world's communicator once on every rank where it is
/// the parent of ncclCommSplit, then the rank's group's by one split, ends the world's as soon as
/// the group's is made and the group's at the end; without ncclCommSplit it makes no world
/// communicator, only the group's (one init of the group's size): the stand-in's trace of every
/// communicator made and ended, rank by rank.
#[test]
fn groups_make_at_most_one_world_communicator_and_end_every_communicator() {
    for (lib, made) in [
        (fake_nccl(), vec!["init 4", "split", "destroy", "destroy"]),
        (fake_nccl_without_split(), vec!["init 2", "destroy"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace");
        let env = fake_env("4", &[("COLL_BENCH_NCCL_LIBRARY", lib), ("FAKE_NCCL_TRACE", trace.to_str().unwrap())]);
        let args =
            ["all-reduce", "-d", "int32", "-e", "64", "-n", "2", "-r", "1", "--no-csv", "--groups", "tp=2,dp=2:dp"];
        let (o, _d) = nccl_run(4, &args, &env);
        assert_eq!(o.status.code(), Some(0), "{lib}:\n{}\n{}", stdout(&o), stderr(&o));
        let text = std::fs::read_to_string(&trace).unwrap();
        let mut by_pid: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for l in text.lines() {
            let (pid, what) = l.split_once(' ').unwrap();
            // Communicators made and ended only (not the calls' launches, threads and waits).
            if !matches!(what, "launch" | "thread" | "sync" | "connect") && !what.starts_with("config ") {
                by_pid.entry(pid).or_default().push(what);
            }
        }
        assert_eq!(by_pid.len(), 4, "{lib}: four rank processes expected:\n{text}");
        for (pid, events) in &by_pid {
            assert_eq!(events, &made[..], "{lib}, process {pid}:\n{text}");
        }
    }
}

/// `--groups` on the NCCL backend (stand-ins, 4 ranks): the world's communicator split by group
/// (ncclCommSplit, or one unique id per group without it), every collective exact in its group,
/// all at once and one group at a time; the header names how the groups were made.
#[test]
fn groups_run_every_collective_exactly_on_nccl() {
    let lib = fake_nccl_without_split();
    let mpich = oversubscribed_mpich(4);
    for (way, (env, via)) in [
        (fake_env("4", &[]), "# groups by ncclCommSplit".to_string()),
        (
            fake_env("4", &[("COLL_BENCH_NCCL_LIBRARY", lib)]),
            format!("# groups by one unique id per group, broadcast over the group's MPI communicator (the NCCL at {lib} has no ncclCommSplit)"),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let layouts = [("tp=2,dp=2:dp", None), ("split=div:2", Some("--one-group-at-a-time"))];
        for (nth, (layout, extra)) in layouts.into_iter().enumerate() {
            // Under MPICH with more ranks than cores (every call a scheduler quantum): each way
            // of making groups with one layout each (split: tp×dp, one id per group: div one at
            // a time), not all four pairs; which collectives a group runs does not depend on the
            // launcher (all four run under Open MPI).
            if mpich && nth != way {
                continue;
            }
            // (and sizes 8 and 64 only: one group at a time runs the sweep once per group)
            let largest = if mpich { "64" } else { "1K" };
            let mut args =
                vec!["all", "-d", "int32", "-o", "sum", "-e", largest, "-f", "8", "-n", "2", "-r", "1", "--no-csv", "--groups", layout];
            args.extend(extra);
            let (o, _d) = nccl_run(4, &args, &env);
            let out = stdout(&o);
            assert_eq!(o.status.code(), Some(0), "{layout}:\n{out}\n{}", stderr(&o));
            assert!(out.lines().any(|l| l == via), "{layout}: no line {via}\n{out}");
            let listed: Vec<&str> =
                out.lines().filter_map(|l| l.strip_prefix("#   group ")).map(|l| l.split(" on ").next().unwrap()).collect();
            let want = if layout == "split=div:2" { ["  0: ranks 0-1", "  1: ranks 2-3"] } else { ["  0: ranks 0,2", "  1: ranks 1,3"] };
            assert_eq!(listed, want, "{layout}:\n{out}");
            assert!(out.contains("# Wrong elements       : 0 OK"), "{layout}:\n{out}");
            // (In place, all-to-all and sendrecv are N/A: NCCL does not support them in place;
            // all-to-all-v is measured out of place only: "-".)
            assert!(
                rows(&o).iter().all(|r| r[8] == "0" && (r[12] == "0" || r[12] == "N/A" || r[12] == "-")),
                "{layout}:\n{out}"
            );
            assert!(rows(&o).iter().any(|r| r[12] == "0"), "{layout}:\n{out}");
        }
    }
}

/// `mpirun -n N coll-bench step --backend nccl ARGS…` with `env` (and nothing else of ours) set.
fn step_run(n: usize, args: &[&str], env: &[(&str, &str)]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = mpirun_cmd(n, 600);
    cmd.args(["step", "--backend", "nccl"]).args(args).current_dir(dir.path());
    for v in STEERING {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    (cmd.output().expect("the MPI launcher runs"), dir)
}

/// The step's table rows: (dim, groups×size, calls, bytes).
fn step_dims(out: &str) -> Vec<(String, String, u64, String)> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 8).then(|| (f[0].to_string(), f[1].to_string(), f[2].parse().unwrap(), f[3].to_string()))
        })
        .collect()
}

/// A small model for the stand-ins (whose channels carry at most 1 MiB a message): 4 layers,
/// hidden 64, seq 128, 4 micro-batches, bf16: activations 1·128·64·2 B = 16 KiB; parameters
/// 12·4·64² = 196 608 (384 KiB of bf16).
const SMALL: [&str; 8] = ["--hidden", "64", "--seq", "128", "-w", "0", "-n", "1"];

#[test]
fn step_on_nccl_tp_dp_and_pp_dp_are_exact() {
    let env = fake_env("4", &[]);
    let (o, dir) = step_run(4, &[&["--layout", "tp=2,dp=2", "--csv", "s.csv"][..], &SMALL].concat(), &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.lines().any(|l| l == "# Backend: nccl"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("# NCCL 2.18.5 (") && l.contains("CUDA driver")), "{out}");
    assert_eq!(out.matches("# rank ").count(), 4, "every rank's GPU: {out}");
    assert!(out.lines().any(|l| l == "# groups by ncclCommSplit"), "{out}");
    // Checked, so bf16 travels as float (the same bytes), and the header says so.
    assert!(out.contains("# bfloat16 on the nccl backend: the same bytes are moved as float"), "{out}");
    assert!(out.contains("tp groups: [0-1] [2-3]") && out.contains("dp groups: [0,2] [1,3]"), "{out}");
    // TP: 4 all-reduces × 4 layers × 4 micro-batches = 64 × 16 KiB; DP: the shard of
    // 196 608 / 2 parameters × 2 B = 192 KiB in one bucket.
    assert_eq!(
        step_dims(&out),
        [("tp".into(), "2×2".into(), 64, "1M".into()), ("dp".into(), "2×2".into(), 1, "192K".into())]
    );
    assert!(out.contains("; all data correct"), "{out}");
    let mut rd = csv::Reader::from_path(dir.path().join("s.csv")).unwrap();
    assert_eq!(rd.headers().unwrap().iter().nth(19), Some("backend"));
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| &r[13] == "0" && &r[19] == "nccl"), "{rows:?}");

    // PP over grouped ncclSend/ncclRecv, every transfer checked; DP zero.
    let (o, _d) = step_run(4, &[&["--layout", "pp=2,dp=2", "--dp", "zero", "--no-csv"][..], &SMALL].concat(), &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# PP transfers: ncclSend + ncclRecv in one ncclGroupStart/ncclGroupEnd"), "{out}");
    assert!(out.contains("pp groups: [0,2] [1,3]") && out.contains("dp groups: [0-1] [2-3]"), "{out}");
    // PP: 4 forward + 4 backward transfers of 16 KiB; DP zero: a reduce-scatter and an
    // all-gather of the 192 KiB shard.
    assert_eq!(
        step_dims(&out),
        [("pp".into(), "2×2".into(), 8, "128K".into()), ("dp".into(), "2×2".into(), 2, "384K".into())]
    );
    assert!(out.contains("; all data correct"), "{out}");

    // EP: each dispatch and combine as grouped ncclSend/ncclRecv of the router's unequal
    // counts over the ep group, every token checked: 4 layers × 4 micro-batches × 4 calls of
    // 128 tokens × 2 × 64 × 2 B = 32 KiB.
    let moe = ["--layout", "tp=2,ep=2", "--experts", "4", "--skew", "1.5", "--no-csv"];
    let (o, _d) = step_run(4, &[&moe[..], &SMALL].concat(), &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("ep groups: [0,2] [1,3]"), "{out}");
    assert_eq!(
        step_dims(&out),
        [("tp".into(), "2×2".into(), 64, "1M".into()), ("ep".into(), "2×2".into(), 64, "2M".into())]
    );
    assert!(out.contains("; all data correct"), "{out}");

    // Groups from one unique id each (an NCCL without ncclCommSplit): the same calls, exact.
    let env_old = fake_env("4", &[("COLL_BENCH_NCCL_LIBRARY", fake_nccl_without_split())]);
    let (o, _d) = step_run(4, &[&["--layout", "tp=2,pp=2", "--no-csv"][..], &SMALL].concat(), &env_old);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# groups by one unique id per group, broadcast over the group's MPI communicator"), "{out}");
    assert_eq!(
        step_dims(&out),
        [("tp".into(), "2×2".into(), 32, "512K".into()), ("pp".into(), "2×2".into(), 8, "128K".into())]
    );
    assert!(out.contains("; all data correct"), "{out}");

    // With the check off, bf16 moves as NCCL's own type.
    let (o, _d) = step_run(4, &[&["--layout", "tp=2,pp=2", "-c", "0", "--no-csv"][..], &SMALL].concat(), &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# bfloat16 on the nccl backend: moved and reduced as bfloat16 (NCCL's own type)."), "{out}");
    assert!(out.contains("; not checked (-c 0)"), "{out}");
}

/// The check can fail on nccl too: a rank that flips a bit of what it receives (TP collectives
/// and PP transfers read back from the device) makes the run exit 1.
/// The launch modes in a step (`-G`, `-m`, `-R`): every phase's calls replayed from graphs in
/// groups of 2 on windows, each group's two buffers registered once and deregistered at the end
/// (the parent's, which only prove the fit, not at all), the data exact, the CSV saying so; `-C`
/// is the sweep's.
#[test]
fn step_on_nccl_takes_the_launch_modes() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let env = fake_env("4", &[("FAKE_NCCL_TRACE", trace.to_str().unwrap()), ("FAKE_NCCL_VERSION", "22703")]);
    let modes = ["--layout", "tp=2,dp=2", "-G", "2", "-m", "2", "-R", "2", "--csv", "s.csv"];
    let (o, d) = step_run(4, &[&modes[..], &SMALL].concat(), &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("; all data correct"), "{out}");
    let rows = csv_rows(&d.path().join("s.csv"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!((&r["cuda_graph"][..], &r["agg_iters"][..], &r["register"][..]), ("2", "2", "2"), "{r:?}");
    }
    let text = std::fs::read_to_string(&trace).unwrap();
    let by_pid = trace_by_pid(&text);
    assert_eq!(by_pid.len(), 4, "{text}");
    for (pid, ev) in &by_pid {
        let count = |p: &dyn Fn(&str) -> bool| ev.iter().filter(|e| p(e)).count();
        // The parent's two buffers twice (the fit, then the smallest, kept to the end), then
        // two per group (tp, dp); every one freed.
        assert_eq!(count(&|e| e.starts_with("memalloc ")), 8, "process {pid}: {ev:?}");
        assert_eq!(count(&|e| e == "memfree"), 8, "process {pid}: {ev:?}");
        assert_eq!(count(&|e| e.starts_with("window ")), 4, "process {pid}: {ev:?}");
        assert_eq!(count(&|e| e == "window-free"), 4, "process {pid}: {ev:?}");
        assert!(count(&|e| e.starts_with("graph-launch")) > 0, "process {pid}: {ev:?}");
    }
    let (o, d) = step_run(2, &["--layout", "tp=2", "-C", "1", "--csv", "s.csv"], &fake_env("2", &[]));
    refused(&o, d.path(), &["step -C/--cpu-time: the sweep's"]);
}

#[test]
fn step_on_nccl_a_corrupted_phase_is_wrong() {
    let env = fake_env("4", &[]);
    for layout in ["tp=2,pp=2", "pp=4"] {
        let args = [&["--layout", layout, "--sequence-parallel", "--no-csv", "--debug-corrupt-rank", "2"][..], &SMALL];
        let (o, _d) = step_run(4, &args.concat(), &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{layout}: {out}{}", stderr(&o));
        assert!(out.contains(" elements WRONG"), "{layout}: {out}");
    }
}

#[test]
fn step_on_nccl_layouts_all_runs_every_layout() {
    let env = fake_env("4", &[]);
    let (o, _d) = step_run(4, &[&["--layout", "all", "--no-csv"][..], &SMALL].concat(), &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    four_rank_layouts_ranked(&out);
}

/// `step --layout all` on NCCL (stand-ins, 4 ranks, 6 layouts): where the library has
/// ncclCommSplit, one world communicator per rank for the whole run, made first and ended last,
/// every group of every layout split from it; without it, no world communicator at all, each
/// group joining by its own unique id (an init of 4 only for a group of all 4 ranks); every
/// communicator made is destroyed, none aborted. The stand-in's trace, rank by rank.
#[test]
fn step_on_nccl_makes_one_world_communicator_for_the_whole_run() {
    for (lib, split) in [(fake_nccl(), true), (fake_nccl_without_split(), false)] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace");
        let env = fake_env("4", &[("COLL_BENCH_NCCL_LIBRARY", lib), ("FAKE_NCCL_TRACE", trace.to_str().unwrap())]);
        let (o, _d) = step_run(4, &[&["--layout", "all", "--no-csv"][..], &SMALL].concat(), &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{lib}:\n{out}{}", stderr(&o));
        four_rank_layouts_ranked(&out);
        // One set of groups per dimension of each layout (a table row), each rank in one group
        // of each: by hand, dp=4: 1; pp=2,dp=2: 2; pp=4: 1; tp=2,dp=2: 2; tp=2,pp=2: 2; tp=4: 1.
        let dims = step_dims(&out);
        assert_eq!(dims.len(), 9, "{lib}:\n{out}");
        let whole = dims.iter().filter(|d| d.1 == "1×4").count();
        assert_eq!(whole, 3, "{lib}: groups of all 4 ranks:\n{out}");
        let text = std::fs::read_to_string(&trace).unwrap();
        let mut by_pid: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for l in text.lines() {
            let (pid, what) = l.split_once(' ').unwrap();
            // Communicators made and ended only (not the calls' launches, threads and waits).
            if !matches!(what, "launch" | "thread" | "sync" | "connect") && !what.starts_with("config ") {
                by_pid.entry(pid).or_default().push(what);
            }
        }
        assert_eq!(by_pid.len(), 4, "{lib}: four rank processes expected:\n{text}");
        for (pid, ev) in &by_pid {
            let count = |w: &str| ev.iter().filter(|e| **e == w).count();
            let inits = ev.iter().filter(|e| e.starts_with("init ")).count();
            let ctx = format!("{lib}, process {pid}: {ev:?}");
            assert_eq!(count("abort"), 0, "{ctx}");
            if split {
                assert_eq!((ev.first(), ev.last()), (Some(&"init 4"), Some(&"destroy")), "{ctx}");
                assert_eq!((inits, count("split"), count("destroy")), (1, 9, 10), "{ctx}");
            } else {
                assert_eq!((inits, count("init 4"), count("split"), count("destroy")), (9, 3, 0, 9), "{ctx}");
            }
        }
    }
}

/// Refused before anything is measured or written, one line, exit 2: no GPU; a DDP average on a
/// dp that is not a power of two (NCCL's 1/n rounds), which `--layout all` leaves out instead.
#[test]
fn step_on_nccl_refusals_are_one_line() {
    let env = [("COLL_BENCH_CUDA_LIBRARY", fake_cuda()), ("FAKE_CUDA_DEVICES", "0")];
    let (o, d) = step_run(2, &["--layout", "tp=2", "--csv", "s.csv"], &env);
    refused(&o, d.path(), &["no GPU on ", "CUDA_ERROR_NO_DEVICE"]);

    // GPU memory too small for the largest layout's buffers (default model: 12 MiB and more), on
    // an NCCL that connects at the first collective (before 2.22 the init itself fails).
    let env = fake_env("2", &[("FAKE_CUDA_FREE_BYTES", "1000000"), ("FAKE_NCCL_VERSION", "22403")]);
    let (o, d) = step_run(2, &["--layout", "all", "--csv", "s.csv"], &env);
    refused(&o, d.path(), &["do not fit on GPU ", "lower step --hidden, --seq, --micro-batch or --bucket"]);

    let env = fake_env("3", &[]);
    let (o, d) = step_run(3, &[&["--layout", "dp=3", "--csv", "s.csv"][..], &SMALL].concat(), &env);
    refused(
        &o,
        d.path(),
        &["step --layout tp=1, pp=1, dp=3: ddp's average of float gradients over dp=3 ranks cannot be checked exactly on nccl", "expected a power-of-two dp, --dp zero, or -c 0"],
    );
    let (o, _d) = step_run(3, &[&["--layout", "all", "--no-csv"][..], &SMALL].concat(), &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# Layouts (1): tp=3, pp=1, dp=1"), "{out}");
    assert!(out.contains("# Left out: tp=1, pp=1, dp=3: ddp's average of float gradients over dp=3 ranks"), "{out}");
}

/// 7 ranks on the stand-ins: every row's size and count are nccl-tests' (per-rank counts rounded
/// down to whole 16 bytes, so every in-place pointer NCCL is given is 16-byte aligned), and the
/// data is right at those counts.
#[test]
fn seven_ranks_share_sizes_out_as_nccl_tests() {
    let env = fake_env("7", &[]);
    // Under MPICH with more ranks than cores one type: int8, whose counts nccl-tests aligns the
    // most (16 elements); the wider types' alignment runs under Open MPI.
    let types = if oversubscribed_mpich(7) { "int8" } else { "int8,int32,double" };
    let sizes = [100u64, 400, 1600, 6400, 25_600];
    let colls = "all-gather reduce-scatter all-to-all gather scatter all-reduce broadcast sendrecv ping-pong";
    let mut args: Vec<&str> = colls.split(' ').collect();
    args.extend(["-d", types, "-o", "sum", "-b", "100", "-e", "25600", "-f", "4", "-n", "1", "-w", "0"]);
    args.extend(["--csv", "run.csv"]);
    let (o, d) = nccl_run(7, &args, &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
    let csv = std::fs::read_to_string(d.path().join("run.csv")).unwrap();
    let seen = assert_nccl_tests_geometry(&csv, 7, &sizes);
    assert_eq!(seen.len(), 9, "{seen:?}");
}

/// The CSV's (collective, size_bytes, algorithm, algorithm_source) of each out-of-place row.
fn algorithms(csv_path: &Path) -> Vec<(String, u64, String, String)> {
    let text = std::fs::read_to_string(csv_path).unwrap();
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let h = rd.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (c, s, a, src, pl) =
        (col("collective"), col("size_bytes"), col("algorithm"), col("algorithm_source"), col("placement"));
    rd.records()
        .map(|r| r.unwrap())
        .filter(|r| &r[pl] == "out-of-place")
        .map(|r| (r[c].to_string(), r[s].parse().unwrap(), r[a].to_string(), r[src].to_string()))
        .collect()
}

/// NCCL 2.24+ names each point's algorithm and protocol in its tuning line, printed for one more
/// call after the timed ones (the stand-in chooses by size as its doc says: all-reduce on Tree
/// below 256 KiB, LL below 64 KiB, LL128 below 1 MiB); grouped send/recv has none. A user's own
/// debug settings (here INFO with TUNING, to stdout) are back in force for every timed call: their
/// lines keep coming to the end of the run.
#[test]
fn nccl_names_each_points_algorithm_from_its_tuning_line() {
    let env = fake_env("2", &[("FAKE_NCCL_VERSION", "22403")]);
    let args = [
        "all-reduce",
        "all-gather",
        "all-to-all",
        "-b",
        "1K",
        "-e",
        "4M",
        "-f",
        "32",
        "--budget",
        "2ms",
        "--csv",
        "run.csv",
    ];
    let (o, d) = nccl_run(2, &args, &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("# NCCL algorithm: its tuning line (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=TUNING"), "{out}");
    assert!(!out.contains("NCCL INFO"), "the probe's lines went to its file, not stdout:\n{out}");
    let rows = algorithms(&d.path().join("run.csv"));
    let want = |coll: &str, size: u64| -> (&str, &str) {
        match (coll, size) {
            ("all-to-all", _) => ("unknown", "not reported"),
            // The stand-in's rule, applied to NCCL's bytes: all-gather's are one rank's share.
            ("all-reduce", s) if s < 65_536 => ("tree/ll", "library log"),
            ("all-reduce", s) if s < 262_144 => ("tree/ll128", "library log"),
            ("all-reduce", s) if s < 1_048_576 => ("ring/ll128", "library log"),
            ("all-gather", s) if s / 2 < 65_536 => ("ring/ll", "library log"),
            ("all-gather", s) if s / 2 < 1_048_576 => ("ring/ll128", "library log"),
            _ => ("ring/simple", "library log"),
        }
    };
    assert_eq!(rows.len(), 3 * 3, "{rows:?}");
    for (coll, size, algo, source) in &rows {
        assert_eq!((algo.as_str(), source.as_str()), want(coll, *size), "{coll} at {size} B: {rows:?}");
    }
    // The table says it too, as a comment line where it changes.
    assert!(out.contains("#  algorithm: tree/ll (library log)"), "{out}");

    // The user's own settings: INFO and TUNING to stdout, for every timed call to the end.
    let mut mine = env.clone();
    mine.extend([("NCCL_DEBUG", "INFO"), ("NCCL_DEBUG_SUBSYS", "TUNING")]);
    let (o, d) =
        nccl_run(2, &["all-reduce", "-b", "1K", "-e", "4M", "-f", "32", "--budget", "2ms", "--csv", "run.csv"], &mine);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let lines =
        |bytes: u64| out.lines().filter(|l| l.contains(&format!(" NCCL INFO AllReduce: {bytes} Bytes -> "))).count();
    // Warm-up, timed and check calls at the largest size, all logged where the user asked.
    assert!(lines(1 << 20) > 3, "{out}");
    assert!(lines(1024) > 3, "{out}");
    let rows = algorithms(&d.path().join("run.csv"));
    assert!(rows.iter().all(|r| r.3 == "library log"), "{rows:?}");
}

/// A forced algorithm or protocol (NCCL_ALGO, NCCL_PROTO, read by NCCL at init) is what the
/// column names; NCCL before 2.24, or a user's NCCL_DEBUG_FILE (NCCL would empty it), says why
/// there is no name, and never calls ncclResetDebugInit (the stand-in aborts where it is called
/// on a version without it).
#[test]
fn a_forced_nccl_algorithm_is_named_and_an_old_nccl_says_why_not() {
    let base = fake_env("2", &[("FAKE_NCCL_VERSION", "22700")]);
    let mut forced = base.clone();
    forced.extend([("NCCL_ALGO", "ring"), ("NCCL_PROTO", "Simple")]);
    let args = ["all-reduce", "-b", "1K", "-e", "1M", "-f", "32", "--budget", "2ms", "--csv", "run.csv"];
    let (o, d) = nccl_run(2, &args, &forced);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let rows = algorithms(&d.path().join("run.csv"));
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows.iter().all(|r| r.2 == "ring/simple" && r.3 == "library log"), "{rows:?}");

    let old = [base[0], base[1], base[2], ("FAKE_NCCL_VERSION", "22304")];
    let (o, d) = nccl_run(2, &args, &old);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(
        out.contains("# NCCL algorithm: not reported: NCCL 2.23.4 reads its debug settings once (ncclResetDebugInit, which re-reads them, came with 2.24)"),
        "{out}"
    );
    assert!(algorithms(&d.path().join("run.csv")).iter().all(|r| r.2 == "unknown" && r.3 == "not reported"));

    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("nccl.%p.log");
    let mut own = base.clone();
    own.extend([("NCCL_DEBUG", "INFO"), ("NCCL_DEBUG_SUBSYS", "TUNING"), ("NCCL_DEBUG_FILE", log.to_str().unwrap())]);
    let (o, d) = nccl_run(2, &args, &own);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("# NCCL algorithm: not reported: NCCL_DEBUG_FILE is set"), "{out}");
    assert!(algorithms(&d.path().join("run.csv")).iter().all(|r| r.2 == "unknown"));
    // The user's file has every call's line, from the first size to the last: never reopened.
    let written: String =
        std::fs::read_dir(logs.path()).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect();
    assert!(written.contains("AllReduce: 1024 Bytes -> Algo TREE proto LL"), "{written}");
    assert!(written.contains("AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE"), "{written}");
}

/// The NVML stand-in (`src/backend/nccl/fake/fake_nvml.c`), built once.
fn fake_nvml() -> &'static str {
    static LIB: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| build_fake("fake_nvml.c", "nvml/libnvidia-ml.so.1", &[])).to_str().unwrap()
}

/// Each rank's line in the header states its GPU's NVLinks as NVML does (active links × their
/// common speed), or that it has none, or that NVML could not be asked; the run goes on either
/// way.
#[test]
fn the_header_states_each_gpus_nvlinks_as_nvml_does() {
    let nvml = fake_nvml();
    let args = ["all-reduce", "-b", "1K", "-e", "1K", "--no-csv"];
    let cases: [(&[(&str, &str)], &str); 4] = [
        (
            &[("COLL_BENCH_NVML_LIBRARY", nvml), ("FAKE_NVML_NVLINKS", "18")],
            "; NVLink 18 links × 26.56 GB/s, 478.12 GB/s nominal)",
        ),
        (&[("COLL_BENCH_NVML_LIBRARY", nvml)], "; no NVLink active)"),
        (&[("COLL_BENCH_NVML_LIBRARY", nvml), ("FAKE_NVML_FAIL", "init")], "; NVML did not start)"),
        (
            &[("COLL_BENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")],
            "; NVML not loaded from /nonexistent/libnvidia-ml.so.1)",
        ),
    ];
    for (more, want) in cases {
        let env = fake_env("2", more);
        let (o, _d) = nccl_run(2, &args, &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
        for r in 0..2 {
            let line = out
                .lines()
                .find(|l| l.contains(&format!("rank {r} on ")) && l.contains(&format!("(PCI 0000:0{}:00.0; ", r + 1)))
                .unwrap_or_else(|| panic!("no line for rank {r}:\n{out}"));
            assert!(line.ends_with(want), "{more:?}: {line}");
        }
    }
}

/// Issue 50: all-to-all-v through grouped ncclSend/ncclRecv, as nccl-tests' alltoallv.cu (one
/// group, a send and a receive per peer with a count, zero counts left out): exact on the
/// stand-in, whose receive refuses a size that differs from the send, under a skewed moe
/// pattern and a matrix in which rank 1 sends nothing and rank 2 receives nothing.
#[test]
fn all_to_all_v_runs_as_grouped_sends_and_receives_with_their_counts() {
    let files = tempfile::tempdir().unwrap();
    let matrix = files.path().join("m.txt");
    std::fs::write(&matrix, "4096 0 512\n0 0 0\n1000 2000 0\n").unwrap();
    let matrix = format!("matrix={}", matrix.display());
    for (pattern, sizes) in [
        ("moe:experts=6,topk=2,skew=1.2,seed=5", ["-b", "64", "-e", "256K"]),
        (matrix.as_str(), ["-b", "8K", "-e", "8K"]),
    ] {
        let env = fake_env("3", &[]);
        let mut args = vec!["all-to-all-v", "--pattern", pattern, "-d", "int32,half", "-f", "16", "--budget", "2ms"];
        args.extend(sizes);
        args.extend(["--csv", "run.csv"]);
        let (o, d) = nccl_run(3, &args, &env);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{pattern}:\n{out}\n{}", stderr(&o));
        assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
        assert!(out.contains(&format!("# pattern: {pattern} (all-to-all-v; ")), "{out}");
        let csv = std::fs::read_to_string(d.path().join("run.csv")).unwrap();
        assert!(!csv.contains("in-place"), "{csv}");
        assert!(csv.lines().skip(1).all(|l| l.contains(",all-to-all-v,")), "{csv}");
    }
}
