//! The NCCL backend against the real NCCL library, on a machine without a GPU.
//!
//! `ci/nccl-wheel.sh` fetches the `nvidia-nccl-cu12` wheel with pip (once; it is cached under
//! target/nccl-wheel) and installs it into a virtualenv as pip would. Then:
//! - ABI: a C probe, compiled with `cc` against the wheel's `nccl.h`, re-declares every function
//!   we bind with our parameter lists and prints every constant, enum value and struct size we
//!   use (src/backend/nccl/abi.rs); any difference fails, naming the item and both values;
//! - the real library in the real paths: with the virtualenv active and no override, coll-bench
//!   finds libnccl through its search order, loads it, rank 0 makes a real unique id, MPI
//!   broadcasts it and every rank checks it holds the same 128 bytes; then the missing CUDA
//!   driver ends the run as without NCCL (one line, exit 2), saying that NCCL got that far.
//!
//! Where the wheel cannot be fetched, each test prints `SKIPPED: reason` and passes.
#![cfg(feature = "nccl")]

mod common;
use coll_bench::backend::nccl::abi;
use common::wheel::{site_packages, venv_or_skip};
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn include_dir(venv: &Path) -> PathBuf {
    site_packages(venv).join("nvidia/nccl/include")
}

/// Compile the probe against `include` (with the CUDA stand-ins) and run it: Ok(output), or
/// Err(the compiler's diagnostics).
fn run_probe(include: &Path, dir: &Path) -> Result<String, String> {
    let stubs = dir.join("cuda-stubs");
    std::fs::create_dir_all(&stubs).unwrap();
    for (name, text) in abi::CUDA_STUBS {
        std::fs::write(stubs.join(name), text).unwrap();
    }
    compile_and_run(&abi::probe_source().unwrap(), &[&stubs, include], dir)
}

/// Compile the C probe `source` with the include directories `includes` (in `dir`) and run it:
/// Ok(its output), or Err(the compiler's diagnostics).
fn compile_and_run(source: &str, includes: &[&Path], dir: &Path) -> Result<String, String> {
    let (src, exe) = (dir.join("probe.c"), dir.join("probe"));
    std::fs::write(&src, source).unwrap();
    let mut cc = Command::new("cc");
    cc.args(["-std=gnu11", "-Wall", "-Werror", "-fmax-errors=1000"]);
    for inc in includes {
        cc.arg("-I").arg(inc);
    }
    let cc = cc.arg("-o").arg(&exe).arg(&src).output().expect("cc runs (run ci/setup.sh)");
    if !cc.status.success() {
        return Err(stderr(&cc));
    }
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success(), "the probe failed: {}", stderr(&out));
    Ok(stdout(&out))
}

/// Every mismatch between our bindings and the header in `include`, one line each.
fn mismatches(include: &Path) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    match run_probe(include, dir.path()) {
        Ok(out) => (abi::compare(&out), out),
        Err(diag) => {
            let c = abi::conflicts(&diag);
            assert!(!c.is_empty(), "the probe did not compile, and not for a conflicting declaration:\n{diag}");
            (c, String::new())
        }
    }
}

#[test]
fn our_bindings_match_the_real_nccl_h() {
    let Some(venv) = venv_or_skip("our_bindings_match_the_real_nccl_h") else { return };
    let (bad, out) = mismatches(&include_dir(venv));
    assert!(bad.is_empty(), "coll-bench's NCCL bindings differ from the wheel's nccl.h:\n{}", bad.join("\n"));
    // Every value was printed and compared, and the header is the pinned wheel's.
    assert_eq!(out.lines().count(), abi::expected((2, 32, 3)).len() + 2, "{out}");
    assert_eq!(abi::printed(&out, "NCCL_VERSION_CODE"), Some("23203"), "{out}");
    // Group communicators' binding is among them: ncclCommSplit, the rank and count queries,
    // NCCL_SPLIT_NOCOLOR and the config field the split relies on.
    let decls = abi::declarations().unwrap();
    for f in ["ncclCommSplit", "ncclCommCount", "ncclCommUserRank"] {
        assert!(decls.iter().any(|(n, _)| n == f), "{f} is not bound");
    }
    assert_eq!(abi::printed(&out, "NCCL_SPLIT_NOCOLOR"), Some("-1"), "{out}");
    assert!(abi::printed(&out, "offsetof(ncclConfig_t, splitShare)").is_some(), "{out}");
}

/// The wheel's NCCL is new enough for, and has, ncclCommSplit: the backend binds it (and would
/// make group communicators with it rather than one unique id per group).
#[test]
fn the_real_library_has_ncclcommsplit_and_it_is_bound() {
    let Some(venv) = venv_or_skip("the_real_library_has_ncclcommsplit_and_it_is_bound") else { return };
    let lib = site_packages(venv).join("nvidia/nccl/lib/libnccl.so.2");
    let env = |k: &str| (k == "COLL_BENCH_NCCL_LIBRARY").then(|| lib.clone().into_os_string());
    let nccl = coll_bench::backend::nccl::ffi::load(&env).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(nccl.version, (2, 32, 3));
    assert!(nccl.optional.comm_split.is_some() && nccl.comm_split().is_some());
    // -R 1 and -R 2: NCCL's allocator, registration and symmetric windows, all bound.
    let o = &nccl.optional;
    assert!(o.mem_alloc.is_some() && o.mem_free.is_some() && o.comm_register.is_some() && o.comm_deregister.is_some());
    assert!(o.comm_window_register.is_some() && o.comm_window_deregister.is_some());
    assert_eq!((nccl.cannot_register(1), nccl.cannot_register(2)), (None, None));
}

#[test]
fn the_abi_check_names_a_changed_value_and_a_changed_signature() {
    let Some(venv) = venv_or_skip("the_abi_check_names_a_changed_value_and_a_changed_signature") else { return };
    // The real header with one enum value and one parameter type changed.
    let real = std::fs::read_to_string(include_dir(venv).join("nccl.h")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let value = real.replacen("ncclInProgress              =  7", "ncclInProgress              =  9", 1);
    assert_ne!(value, real, "the header no longer spells ncclInProgress as expected");
    std::fs::write(dir.path().join("nccl.h"), &value).unwrap();
    let (bad, _) = mismatches(dir.path());
    assert_eq!(bad, vec!["ncclInProgress: coll-bench 7, nccl.h 9"]);

    let sig = real.replacen(
        "ncclResult_t  ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,",
        "ncclResult_t  ncclSend(const void* sendbuff, int count, ncclDataType_t datatype, int peer,",
        1,
    );
    assert_ne!(sig, real, "the header no longer spells ncclSend as expected");
    std::fs::write(dir.path().join("nccl.h"), &sig).unwrap();
    let (bad, _) = mismatches(dir.path());
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("ncclSend: coll-bench binds ncclResult_t(const void *, size_t,"), "{bad:?}");
    assert!(bad[0].contains(", nccl.h declares ncclResult_t(const void *, int,"), "{bad:?}");

    // ncclCommSplit's parameter list and the offset of the config's splitShare are compared too.
    let split = real.replacen(
        "ncclResult_t  ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t* config);",
        "ncclResult_t  ncclCommSplit(ncclComm_t comm, int color, long key, ncclComm_t *newcomm, ncclConfig_t* config);",
        1,
    );
    assert_ne!(split, real, "the header no longer spells ncclCommSplit as expected");
    std::fs::write(dir.path().join("nccl.h"), &split).unwrap();
    let (bad, _) = mismatches(dir.path());
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("ncclCommSplit: coll-bench binds ncclResult_t("), "{bad:?}");
    let (ours, theirs) = bad[0].split_once(", nccl.h declares ").unwrap();
    assert!(!ours.contains("long") && theirs.contains("long int"), "{bad:?}");
    let field = real.replacen(
        "  const char *netName;\n  int splitShare;",
        "  const char *netName;\n  int added;\n  int splitShare;",
        1,
    );
    assert_ne!(field, real, "the header no longer spells ncclConfig_t's splitShare as expected");
    std::fs::write(dir.path().join("nccl.h"), &field).unwrap();
    let (bad, _) = mismatches(dir.path());
    // splitShare and every field after it moved, and the struct grew.
    assert!(bad[0].starts_with("offsetof(ncclConfig_t, splitShare): coll-bench "), "{bad:?}");
    assert!(bad.iter().any(|b| b.starts_with("sizeof(ncclConfig_t): coll-bench 120, nccl.h ")), "{bad:?}");
    assert!(
        bad.iter().all(|b| b.starts_with("offsetof(ncclConfig_t, ") || b.starts_with("sizeof(ncclConfig_t)")),
        "{bad:?}"
    );
}

/// `--backend nccl` on `n` ranks with the virtualenv active (as `activate` leaves it) and none
/// of our override variables: NCCL found, loaded, its id shared, then no CUDA driver.
fn real_library_bootstrap(n: usize, venv: &Path, version: &str) {
    real_library_bootstrap_of(n, venv, version, &["--backend", "nccl", "--csv", "run.csv"]);
}

/// As [`real_library_bootstrap`], for the command line `args`.
fn real_library_bootstrap_of(n: usize, venv: &Path, version: &str, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let path = format!("{}:{}", venv.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = mpirun_cmd(n, 600);
    cmd.args(args).current_dir(dir.path());
    for v in ["COLL_BENCH_NCCL_LIBRARY", "COLL_BENCH_CUDA_LIBRARY", "LD_LIBRARY_PATH", "CONDA_PREFIX"] {
        cmd.env_remove(v);
    }
    cmd.env("VIRTUAL_ENV", venv).env("PATH", path);
    let o = cmd.output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{n} ranks:\n{}\n{err}", stdout(&o));
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{n} ranks, expected one line:\n{err}");
    let line = lines[0];
    assert!(line.starts_with("coll-bench: error: no CUDA driver: libcuda.so.1 or libcuda.so not found"), "{line}");
    // The library the search found, its version (the header's), and the id check on every rank.
    let lib = site_packages(venv).join("nvidia/nccl/lib/libnccl.so.2");
    let want = format!(
        "(NCCL {version} at {} loaded on every rank; the unique id rank 0 made reached all {n} rank{} intact)",
        lib.display(),
        if n == 1 { "" } else { "s" }
    );
    assert!(line.ends_with(&want), "{line}\nwanted the end: {want}");
    assert!(stdout(&o).is_empty() && files(dir.path()).is_empty(), "{}", stdout(&o));
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn the_real_library_is_found_in_a_virtualenv_and_its_unique_id_reaches_every_rank() {
    let test = "the_real_library_is_found_in_a_virtualenv_and_its_unique_id_reaches_every_rank";
    let Some(venv) = venv_or_skip(test) else { return };
    let have_cuda =
        Command::new("ldconfig").arg("-p").output().map(|o| stdout(&o).contains("libcuda.so")).unwrap_or(false);
    if have_cuda {
        say_skipped(test, "this machine has libcuda, so the run would go past the driver");
        return;
    }
    // The header's version is the one the library reports (checked in the message).
    let dir = tempfile::tempdir().unwrap();
    let out = run_probe(&include_dir(venv), dir.path()).unwrap();
    let version = abi::printed(&out, "version").unwrap();
    assert_eq!(version, "2.32.3");
    for n in 1..=3 {
        real_library_bootstrap(n, venv, version);
    }
    // `step --backend nccl`: the same one line, before anything is measured or written.
    real_library_bootstrap_of(2, venv, version, &["step", "--backend", "nccl", "--layout", "tp=2", "--csv", "s.csv"]);
    real_library_bootstrap_of(2, venv, version, &["step", "--backend", "nccl", "--layout", "all", "--csv", "s.csv"]);
}

#[test]
fn info_reports_the_real_library_of_the_active_virtualenv() {
    let Some(venv) = venv_or_skip("info_reports_the_real_library_of_the_active_virtualenv") else { return };
    let path = format!("{}:{}", venv.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = mpirun_cmd(2, 120);
    cmd.args(["info", "--json"]).env("VIRTUAL_ENV", venv).env("PATH", path);
    for v in ["COLL_BENCH_NCCL_LIBRARY", "LD_LIBRARY_PATH", "CONDA_PREFIX"] {
        cmd.env_remove(v);
    }
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let lib = site_packages(venv).join("nvidia/nccl/lib/libnccl.so.2");
    assert_eq!(j["reports"][0]["fields"]["nccl"], format!("2.32.3 at {}", lib.display()), "{}", stdout(&o));
}

/// Compile the NVML probe (`src/backend/nccl/nvml.rs`) against the nvml.h in `include` and run
/// it: every line that differs from our value, or Err(the compiler's diagnostics).
fn nvml_mismatches(include: &Path) -> Result<(Vec<String>, String), String> {
    use coll_bench::backend::nccl::nvml;
    let dir = tempfile::tempdir().unwrap();
    let out = compile_and_run(&nvml::probe_source().unwrap(), &[include], dir.path())?;
    let bad = nvml::constants()
        .into_iter()
        .filter_map(|(expr, ours)| {
            let theirs = out.lines().find_map(|l| l.strip_prefix(&format!("{expr}=")));
            (theirs != Some(&ours.to_string())).then(|| format!("{expr}: coll-bench {ours}, nvml.h {theirs:?}"))
        })
        .collect();
    Ok((bad, out))
}

/// NVML's functions, constants and `nvmlFieldValue_t` as we bind them, against the nvml.h of the
/// `nvidia-nvml-dev-cu12` wheel (fetched beside NCCL's); a copy of the header with one parameter
/// and one constant changed fails both checks.
#[test]
fn our_nvml_bindings_match_the_real_nvml_h() {
    let test = "our_nvml_bindings_match_the_real_nvml_h";
    let Some(venv) = venv_or_skip(test) else { return };
    let include = site_packages(venv).join("nvidia/nvml_dev/include");
    if !include.join("nvml.h").is_file() {
        say_skipped(test, "pip could not fetch the nvidia-nvml-dev-cu12 wheel (ci/nccl-wheel.sh)");
        return;
    }
    let (bad, out) = nvml_mismatches(&include).unwrap_or_else(|diag| panic!("the NVML probe did not compile:\n{diag}"));
    assert!(bad.is_empty(), "coll-bench's NVML bindings differ from nvml.h:\n{}\n{out}", bad.join("\n"));
    assert_eq!(out.lines().count(), coll_bench::backend::nccl::nvml::constants().len(), "{out}");

    let real = std::fs::read_to_string(include.join("nvml.h")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let param = real.replacen(
        "nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive)",
        "nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned long link, nvmlEnableState_t *isActive)",
        1,
    );
    assert_ne!(param, real, "nvml.h no longer spells nvmlDeviceGetNvLinkState as expected");
    std::fs::write(dir.path().join("nvml.h"), &param).unwrap();
    let diag = nvml_mismatches(dir.path()).expect_err("a changed parameter compiled");
    assert!(diag.contains("conflicting types for") && diag.contains("nvmlDeviceGetNvLinkState"), "{diag}");
    let value = real.replacen("#define NVML_NVLINK_MAX_LINKS 18", "#define NVML_NVLINK_MAX_LINKS 24", 1);
    assert_ne!(value, real, "nvml.h no longer spells NVML_NVLINK_MAX_LINKS as expected");
    std::fs::write(dir.path().join("nvml.h"), &value).unwrap();
    let (bad, _) = nvml_mismatches(dir.path()).unwrap();
    assert_eq!(bad, vec!["NVML_NVLINK_MAX_LINKS: coll-bench 18, nvml.h Some(\"24\")"]);
}
