//! Launch the real coll-bench binary under a real `mpirun`. MPI is never initialised inside the
//! test process.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_coll-bench");

/// `mpirun -q -n N coll-bench ARGS…` in `dir`, killed after `limit_s` seconds.
pub fn mpirun_in(dir: &Path, n: usize, args: &[&str], limit_s: u32) -> Output {
    Command::new("timeout")
        .arg("--kill-after=5")
        .arg(limit_s.to_string())
        .args(["mpirun", "-q", "--oversubscribe", "--bind-to", "none", "-n", &n.to_string(), BIN])
        .args(args)
        .current_dir(dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun runs (is Open MPI installed? run ci/setup.sh)")
}

pub fn mpirun(n: usize, args: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = mpirun_in(dir.path(), n, args, 600);
    (out, dir)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Data rows of the table: (size, count, type, redop, root, [time, algbw, busbw, wrong] × 2).
pub fn rows(o: &Output) -> Vec<Vec<String>> {
    stdout(o)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// Files under `dir`, recursively.
pub fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
