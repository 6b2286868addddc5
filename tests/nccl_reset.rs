//! The real NCCL re-reads its debug settings after `ncclResetDebugInit`, as the sweep's
//! algorithm probe (`src/backend/nccl/tuning.rs`) needs, and stops writing to the probe's file
//! once the user's settings are back: checked without a GPU against the `nvidia-nccl-cu12` wheel
//! (`ci/nccl-wheel.sh`), whose `ncclGetUniqueId(NULL)` logs one WARN line per call.
//!
//! A test binary of its own: the probe sets the process's environment, which the other NCCL
//! tests' launches would inherit.
#![cfg(feature = "nccl")]

mod common;
use coll_bench::backend::nccl::tuning::Probe;
use common::wheel::{site_packages, venv_or_skip};
use std::os::raw::{c_int, c_void};

#[test]
fn the_real_nccl_rereads_its_debug_settings_for_the_probe_and_then_the_users() {
    let Some(venv) = venv_or_skip("the_real_nccl_rereads_its_debug_settings_for_the_probe_and_then_the_users") else {
        return;
    };
    for v in ["NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"] {
        std::env::remove_var(v);
    }
    let path = site_packages(venv).join("nvidia/nccl/lib/libnccl.so.2");
    // SAFETY: the wheel's libnccl, whose nccl.h declares these two functions so.
    let (lib, get_id, reset) = unsafe {
        let lib = libloading::Library::new(&path).unwrap();
        let get_id = *lib.get::<unsafe extern "C" fn(*mut c_void) -> c_int>(b"ncclGetUniqueId\0").unwrap();
        let reset = *lib.get::<unsafe extern "C" fn()>(b"ncclResetDebugInit\0").unwrap();
        (lib, get_id, reset)
    };
    // SAFETY: a null out-pointer is refused by NCCL (ncclInvalidArgument) with a WARN line.
    let refused = || unsafe { get_id(std::ptr::null_mut()) };
    // NCCL reads the (empty) settings at its first message: nothing is logged anywhere.
    assert_ne!(refused(), 0);

    let mut probe = Probe::new(reset).unwrap();
    probe.arm();
    assert_ne!(refused(), 0);
    let log = probe.disarm();
    assert!(log.contains(" NCCL WARN "), "NCCL did not re-read its settings after ncclResetDebugInit: {log:?}");
    assert_eq!(log.lines().filter(|l| l.contains(" NCCL WARN ")).count(), 1, "{log}");
    assert_eq!(std::env::var_os("NCCL_DEBUG"), None, "the user's (unset) NCCL_DEBUG is back");

    // The user's settings again: the next messages go nowhere, and the probe's file is closed.
    assert_ne!(refused(), 0);
    assert_ne!(refused(), 0);
    let after = std::fs::read_to_string(probe.file()).unwrap();
    assert_eq!(after, log, "NCCL kept writing to the probe's file after the user's settings were back");

    // Armed again (as at the next point), the same: one line, in a file emptied by NCCL's "w".
    probe.arm();
    assert_ne!(refused(), 0);
    let again = probe.disarm();
    assert_eq!(again.lines().filter(|l| l.contains(" NCCL WARN ")).count(), 1, "{again}");
    let dir = probe.file().parent().unwrap().to_path_buf();
    drop(probe);
    assert!(!dir.exists(), "the probe's directory is removed");
    drop(lib);
}
