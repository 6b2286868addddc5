//! Launch the real coll-bench binary under a real `mpirun`. MPI is never initialised inside the
//! test process.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// A small 4-rank step whose rank 2 flips a bit of what it receives: it must end with exit 1 and
/// its table's "elements WRONG".
pub const CORRUPTED_STEP: &[&str] = &[
    "step",
    "--layout",
    "tp=2,pp=2",
    "--hidden",
    "128",
    "--seq",
    "128",
    "--no-csv",
    "-w",
    "0",
    "-n",
    "1",
    "--sequence-parallel",
    "--debug-corrupt-rank",
    "2",
];

pub mod wheel;

pub const BIN: &str = env!("CARGO_BIN_EXE_coll-bench");

/// The MPI family the binary is linked against (`openmpi`, `mpich`), recorded by build.rs; the
/// tests launch it with that family's launcher, so one source tests both builds.
pub const FAMILY: &str = env!("COLL_BENCH_MPI_FAMILY");

pub fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file())).unwrap_or(false)
}

/// The launcher and its flags for this build, able to run as root with more ranks than cores:
/// see [`launcher_of`].
pub fn launcher() -> Vec<&'static str> {
    launcher_of(FAMILY)
}

/// The launcher and its flags for an MPI family (`openmpi`, `mpich`): Open MPI's
/// `mpirun -q --oversubscribe --bind-to none` (`-q`: no banner when a rank fails), or MPICH's
/// Hydra `mpiexec` (no root check, oversubscribes and leaves binding off by default). Debian's
/// per-family names (`mpirun.openmpi`, `mpiexec.mpich`) first, as both may be installed.
pub fn launcher_of(family: &str) -> Vec<&'static str> {
    match family {
        "mpich" => vec![if on_path("mpiexec.mpich") { "mpiexec.mpich" } else { "mpiexec" }],
        _ => vec![
            if on_path("mpirun.openmpi") { "mpirun.openmpi" } else { "mpirun" },
            "-q",
            "--oversubscribe",
            "--bind-to",
            "none",
        ],
    }
}

/// `timeout LIMIT LAUNCHER…` with the environment Open MPI needs as root; add `-n N PROGRAM ARGS…`
/// (or use [`mpirun_cmd`], which adds `-n N coll-bench`).
pub fn launch_cmd(limit_s: u32) -> Command {
    launch_cmd_of(FAMILY, limit_s)
}

/// As [`launch_cmd`], with `family`'s launcher.
pub fn launch_cmd_of(family: &str, limit_s: u32) -> Command {
    let mut c = Command::new("timeout");
    c.arg("--kill-after=5").arg(limit_s.to_string()).args(launcher_of(family));
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

/// `timeout LIMIT LAUNCHER… -n N coll-bench`: the one command line that starts `n` ranks of the
/// binary under this build's launcher, killed after `limit_s` seconds; add coll-bench's
/// arguments, the environment and the directory.
pub fn mpirun_cmd(n: usize, limit_s: u32) -> Command {
    let mut c = launch_cmd(limit_s);
    c.args(["-n", &n.to_string(), BIN]);
    c
}

/// `mpirun -q -n N coll-bench ARGS…` (or Hydra's `mpiexec -n N …`) in `dir`, killed after
/// `limit_s` seconds.
pub fn mpirun_in(dir: &Path, n: usize, args: &[&str], limit_s: u32) -> Output {
    mpirun_env(dir, n, args, &[], limit_s)
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map(|c| c.get()).unwrap_or(1)
}

/// Whether `n` ranks of this build would busy-poll more cores than the machine has under MPICH
/// (see `skip_timing_test`): there every MPI call a point makes costs a scheduler quantum, about
/// 50-80 ms a point on 3-4 ranks over 2 cores against under 5 ms with Open MPI. Correctness tests
/// that sweep a wide type × op matrix keep every collective, op, size and placement there but
/// narrow the types (all types are checked on 1 and 2 ranks of the same build), so the MPICH
/// pass of `ci/test.sh` stays within the CI time.
pub fn oversubscribed_mpich(n: usize) -> bool {
    FAMILY == "mpich" && n > cores()
}

/// Why a timing-sensitive test with `n` ranks cannot judge this build on this machine, if it
/// cannot: MPICH 4.0.2 as Debian builds it (ch4:ucx) polls without ever yielding the CPU (its
/// library does not call `sched_yield`, and no control variable makes it: docs/install.md,
/// "MPICH's ranks never yield"), so with more ranks than cores every call costs a scheduler
/// quantum (4-5 ms for an 8 B all-reduce on 4 ranks over 2 cores against 0.8 us on 2, bare C
/// loop), which buries the differences these tests look for. (ci/test.sh runs the MPICH tests one
/// at a time for the same reason.)
/// Prints `SKIPPED: test: reason` past the harness's capture.
pub fn skip_timing_test(test: &str, n: usize) -> bool {
    let cores = cores();
    if oversubscribed_mpich(n) {
        say_skipped(
            test,
            &format!(
                "{n} ranks on {cores} cores under MPICH, whose busy-polling turns every call into a \
                 scheduler quantum (ms); this test needs ranks <= cores there"
            ),
        );
        return true;
    }
    false
}

/// Say that `test` (its function's name) cannot run here: one `SKIPPED: test: why` line on
/// stderr, past the harness's capture, which ci/test.sh counts. Written whole in one `write`
/// (`eprintln!` writes a formatted line in pieces, and another test's output, or the harness's
/// `ok`, can land between them: seen in a fresh run, where the line was then not counted), and
/// on one line whatever `why` holds.
pub fn say_skipped(test: &str, why: &str) {
    use std::io::Write;
    let line = format!("SKIPPED: {test}: {}\n", why.trim().replace('\n', " "));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// As `mpirun_in`, with extra environment variables for the ranks.
pub fn mpirun_env(dir: &Path, n: usize, args: &[&str], env: &[(&str, &str)], limit_s: u32) -> Output {
    let mut c = mpirun_cmd(n, limit_s);
    c.args(args).current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the MPI launcher runs (is MPI installed? run ci/setup.sh)")
}

pub fn mpirun(n: usize, args: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = mpirun_in(dir.path(), n, args, 600);
    (out, dir)
}

/// Whether `code` is the launcher's exit code for a job whose watchdog ended a hang (a rank
/// stopped or stuck; every other rank exits with 2 by itself). Open MPI's mpirun returns the
/// first failing rank's code: 2. MPICH's Hydra kills the stopped rank with SIGKILL and returns
/// the bitwise OR of every rank's wait status: 9 (or 2 when it counts the killed rank as 0).
/// Under Hydra 4.0.x it may also return 1, reporting "Hangup (signal 1)" on stdout for a rank
/// that exited with 2 by itself: no SIGHUP is sent; the 1 is the proxy's placeholder status for
/// "PMI socket closed before `cmd=finalize`" (a hang ends with `_exit(2)` and no finalize, so
/// that Hydra ends the stopped rank). Hydra 4.0.2's proxy (`pm/pmiserv/pmip_cb.c`) writes that
/// placeholder over the real status when `waitpid` reaped the rank before the socket's close was
/// handled, then counts the rank it kills as 0 (its "forced cleanup"): 1 | 0 = 1, which
/// `mpiexec` reads as signal 1. MPICH removed the placeholder in 4.1 (commit ed7e86a2, "hydra:
/// remove forced_cleanup in proxy", which names this race). So 1 is let through only with that
/// banner on `stdout`; coll-bench's own line stays the check (README, exit codes).
pub fn is_hang_exit_code(code: Option<i32>, stdout: &str) -> bool {
    let hydra_placeholder = FAMILY == "mpich" && stdout.contains("TERMINATED WITH THE EXIT STRING: Hangup (signal 1)");
    let expected: &[i32] = match (FAMILY, hydra_placeholder) {
        ("mpich", true) => &[1],
        ("mpich", false) => &[2, 9],
        _ => &[2],
    };
    code.is_some_and(|c| expected.contains(&c))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The launcher's and the ranks' stderr, less Open MPI's libevent warnings (`[warn] Epoll MOD(1)
/// on fd 25 failed. … Bad file descriptor`): its event loop, not coll-bench, prints them when a
/// descriptor it watches is closed under it as a job ends, in normal ends too (open-mpi/ompi
/// issues 2004 and 5520: "event lib not cleanly shutting down"). Seen once in ~75 fresh-machine
/// runs, after a usage error in `step`, where it made a test's one line two.
pub fn stderr(o: &Output) -> String {
    let text = String::from_utf8_lossy(&o.stderr);
    let libevent = |l: &str| l.starts_with("[warn] Epoll ") && l.contains(" failed.");
    text.split_inclusive('\n').filter(|l| !libevent(l)).collect()
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

/// The stand-ins for libcuda and libnccl (src/backend/nccl/fake/*.c), built with `cc` once per
/// test process: (libcuda.so.1, libnccl.so.2, and libnccl.so.2 with newer NCCLs' native
/// all-to-all, gather and scatter).
pub fn fakes() -> &'static (PathBuf, PathBuf) {
    let f = all_fakes();
    // A reference to the first two of the three.
    static PAIR: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    PAIR.get_or_init(|| (f.0.clone(), f.1.clone()))
}

/// The stand-in libnccl.so.2 that also exports ncclAlltoAll, ncclGather and ncclScatter.
pub fn fake_nccl_native() -> &'static Path {
    &all_fakes().2
}

/// One stand-in library, `src/backend/nccl/fake/C` built with `flags` as `LIB` (a path under the
/// build's own scratch directory: one per target directory, gone with `cargo clean`). Rebuilt by
/// each test process that asks for it: built beside its name and renamed over it, so a process
/// beside this one loads a whole file, old or new.
pub fn build_fake(c: &str, lib: &str, flags: &[&str]) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fakes").join(lib);
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let part = out.with_extension(format!("part{}", std::process::id()));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/backend/nccl/fake");
    let ok = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
        .args(flags)
        .arg("-o")
        .arg(&part)
        .arg(src.join(c))
        .status()
        .expect("cc runs (run ci/setup.sh)");
    assert!(ok.success(), "building {c} as {lib} failed");
    std::fs::rename(&part, &out).unwrap();
    out
}

fn all_fakes() -> &'static (PathBuf, PathBuf, PathBuf) {
    static FAKES: OnceLock<(PathBuf, PathBuf, PathBuf)> = OnceLock::new();
    FAKES.get_or_init(|| {
        (
            build_fake("fake_cuda.c", "libcuda.so.1", &[]),
            build_fake("fake_nccl.c", "libnccl.so.2", &[]),
            build_fake("fake_nccl.c", "native/libnccl.so.2", &["-DFAKE_NCCL_NATIVE"]),
        )
    })
}

/// The `step --layout all` output of 4 ranks on one host: every tp × pp × dp = 4 layout listed
/// (6), each with all its data correct, and ranked; the ranked lines.
pub fn four_rank_layouts_ranked(out: &str) -> Vec<&str> {
    let listed = "# Layouts (6): tp=1, pp=1, dp=4; tp=1, pp=2, dp=2; tp=1, pp=4, dp=1; tp=2, pp=1, dp=2; tp=2, pp=2, dp=1; tp=4, pp=1, dp=1";
    assert!(out.contains(listed), "{out}");
    assert_eq!(out.matches("; all data correct").count(), 6, "{out}");
    let ranked: Vec<&str> = out.lines().filter(|l| l.starts_with("#   ") && l.contains(" ms/step (")).collect();
    assert_eq!(ranked.len(), 6, "{out}");
    ranked
}

/// nccl-tests' size and count columns (its `GetCollByteCount` of each collective, v2.19.6) for a
/// requested size of `bytes` with `elem`-byte elements on `n` ranks: (max(sendBytes,
/// expectedBytes), paramcount). The collectives that share a size out among the ranks round
/// each rank's count down to whole 16 bytes, `(count/nranks) & ~(16/eltSize-1)`.
pub fn nccl_tests_columns(collective: &str, bytes: u64, elem: u64, n: u64) -> (u64, u64) {
    let count = bytes / elem;
    match collective {
        "all-gather" | "reduce-scatter" | "all-to-all" | "gather" | "scatter" => {
            let base = (count / n) & !(16 / elem - 1);
            (base * n * elem, base)
        }
        "all-reduce" | "broadcast" | "reduce" | "sendrecv" | "ping-pong" => (count * elem, count),
        other => panic!("no nccl-tests geometry for {other}"),
    }
}

/// Every combined row of the CSV `csv` (a sweep on `n` ranks over the requested `sizes`, in
/// order) has nccl-tests' size and count (see [`nccl_tests_columns`]); returns the collectives
/// seen.
pub fn assert_nccl_tests_geometry(csv: &str, n: u64, sizes: &[u64]) -> std::collections::BTreeSet<String> {
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let h = rd.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap_or_else(|| panic!("no {name} column"));
    let (coll, dtype, op, placement) = (col("collective"), col("dtype"), col("op"), col("placement"));
    let (size, count, elem, rank) = (col("size_bytes"), col("count_elements"), col("elem_bytes"), col("rank"));
    // Rows of one collective × type × op × placement come in size order.
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    for r in rd.records() {
        let r = r.unwrap();
        if !r[rank].is_empty() {
            continue;
        }
        let key = format!("{} {} {} {}", &r[coll], &r[dtype], &r[op], &r[placement]);
        let i = seen.entry(key.clone()).or_default();
        let requested = sizes[*i];
        *i += 1;
        let e: u64 = r[elem].parse().unwrap();
        let want = nccl_tests_columns(&r[coll], requested, e, n);
        let got: (u64, u64) = (r[size].parse().unwrap(), r[count].parse().unwrap());
        assert_eq!(got, want, "{key} at {requested} B on {n} ranks: (size, count)");
    }
    assert!(seen.values().all(|k| *k == sizes.len()), "{seen:?}");
    seen.keys().map(|k| k.split(' ').next().unwrap().to_string()).collect()
}

/// A tmpfs of `size` (e.g. "64k") mounted at `dir` (created), unmounted when dropped; `None`
/// (and the test says it skipped, naming `test`) where mounting is not allowed.
pub fn small_disk(test: &str, dir: &Path, size: &str) -> Option<SmallDisk> {
    std::fs::create_dir(dir).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !mounted {
        say_skipped(test, "cannot mount a tmpfs here (not root, or no mount permission)");
        return None;
    }
    Some(SmallDisk(dir.to_path_buf()))
}

/// A mounted tmpfs ([`small_disk`]), unmounted on drop.
pub struct SmallDisk(std::path::PathBuf);

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A CSV file's rows as maps from column name to value.
pub fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut rd = csv::Reader::from_path(path).unwrap();
    let h = rd.headers().unwrap().clone();
    rd.records()
        .map(|r| h.iter().zip(r.unwrap().iter()).map(|(k, v)| (k.to_string(), v.to_string())).collect())
        .collect()
}

/// docs/output.md: the contract the outputs are held to.
pub const OUTPUT_MD: &str = include_str!("../../docs/output.md");

/// The names of the table rows (`| \`name\` |`) of one `## ` section of docs/output.md, in order.
pub fn documented(heading: &str) -> Vec<String> {
    let start = OUTPUT_MD
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("docs/output.md has no section {heading:?}"));
    let rest = &OUTPUT_MD[start + heading.len() + 2..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |").map(|(name, _)| name.to_string()))
        .collect()
}
