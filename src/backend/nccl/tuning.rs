//! NCCL's own word on the algorithm and protocol of a call: the `NCCL_TUNING` line of its debug
//! output, which comm rank 0 prints as it plans each collective (`src/enqueue.cc`, from 2.24:
//! `AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}`).
//!
//! NCCL reads its debug settings (`NCCL_DEBUG`, `NCCL_DEBUG_SUBSYS`, `NCCL_DEBUG_FILE`) once,
//! and again after `ncclResetDebugInit` (exported from 2.24). So the timed calls run under the
//! user's settings, and one more call after each point's timed calls runs under ours: [`Probe`]
//! sets `NCCL_DEBUG=INFO`, `NCCL_DEBUG_SUBSYS=TUNING` and `NCCL_DEBUG_FILE` (a file in a
//! directory of its own, mode 0700), has NCCL re-read them, and after that call puts the user's
//! settings back and has NCCL re-read those; [`read`] finds the call's line in the file. Nothing
//! is printed inside the timed calls, and nothing of ours stays set while they run.
//!
//! Where this cannot be done the algorithm is `unknown` ([`unavailable`] says why): NCCL before
//! 2.24 (or one without `ncclResetDebugInit`), and a user's own `NCCL_DEBUG_FILE`, which NCCL
//! opens for writing again (`fopen(…, "w")`: emptied) each time it re-reads its settings.

use crate::collective::Kind;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The oldest NCCL that exports `ncclResetDebugInit` (its `nccl.h` declares it from 2.24).
pub const RESET_VERSION: (u32, u32) = (2, 24);

/// The settings [`Probe`] changes for its one call, and puts back.
const VARIABLES: [&str; 3] = ["NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"];

/// NCCL's name for the function a call of `kind` runs (`ncclFuncToString`), where NCCL plans it
/// as a collective and prints a tuning line for it; `None` for grouped send/recv, whose
/// point-to-point transfers have no algorithm. (A barrier is an all-reduce of one int32 here.)
pub fn function(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::AllReduce | Kind::Barrier => Some("AllReduce"),
        Kind::AllGather => Some("AllGather"),
        Kind::ReduceScatter => Some("ReduceScatter"),
        Kind::Broadcast => Some("Broadcast"),
        Kind::Reduce => Some("Reduce"),
        _ => None,
    }
}

/// Why NCCL's tuning line cannot be had for the sweep (`None`: it can): NCCL `version`,
/// whether it exports `ncclResetDebugInit`, and the user's `NCCL_DEBUG_FILE`.
pub fn unavailable(version: (u32, u32, u32), has_reset: bool, debug_file: Option<&OsString>) -> Option<String> {
    let (v, at) = (format!("{}.{}.{}", version.0, version.1, version.2), RESET_VERSION);
    if (version.0, version.1) < at {
        return Some(format!(
            "NCCL {v} reads its debug settings once (ncclResetDebugInit, which re-reads them, came with {}.{})",
            at.0, at.1
        ));
    }
    if !has_reset {
        return Some(format!("NCCL {v} does not export ncclResetDebugInit, which re-reads its debug settings"));
    }
    if debug_file.is_some_and(|f| !f.is_empty()) {
        return Some(
            "NCCL_DEBUG_FILE is set, and NCCL opens it for writing again (emptying it) each time it re-reads its debug settings"
                .to_string(),
        );
    }
    None
}

/// The algorithm NCCL's debug output `log` names for a call of `function` (NCCL's name, from
/// [`function`]) of `bytes` (its count times its type's size, as NCCL prints it), in our
/// spelling: `ring/simple` (algorithm/protocol, lower case), `symmetric/<kernel>`,
/// `copy_engine` or `hierarchical_ce`; the last such line wins. `None` where no line names it.
pub fn read(log: &str, function: &str, bytes: u64) -> Option<String> {
    log.lines().rev().find_map(|l| line(l, function, bytes))
}

/// One line of NCCL's debug output, where it is the tuning line of that call.
fn line(text: &str, function: &str, bytes: u64) -> Option<String> {
    // "host:pid:tid [dev] NCCL INFO " then the message.
    let (_, message) = text.split_once(" NCCL INFO ")?;
    let (head, rest) = message.split_once(": ")?;
    let (size, rest) = rest.split_once(" Bytes -> ")?;
    if size.trim().parse::<u64>().ok()? != bytes {
        return None;
    }
    let (name, path) = match head.split_once(" [") {
        Some((name, path)) => (name, path.strip_suffix(']')?),
        None => (head, ""),
    };
    if name != function {
        return None;
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let lower = |s: &str| s.to_ascii_lowercase();
    match (path, words.as_slice()) {
        // 2.24 and later: "Algo RING proto SIMPLE channel{Lo..Hi}={0..31}".
        ("", ["Algo", algo, "proto", proto, ..]) if !algo.starts_with(|c: char| c.is_ascii_digit()) => {
            Some(format!("{}/{}", lower(algo), lower(proto)))
        }
        // 2.27 and later: NCCL's symmetric kernels, "Kernel AllReduce_AGxLL_R nchannels …".
        ("Symmetric", ["Kernel", kernel, ..]) => Some(format!("symmetric/{kernel}")),
        // 2.29 and later: the copy engines ("cudaMemcpy…"), 2.30's hierarchical variant.
        ("Copy Engine", _) => Some("copy_engine".to_string()),
        ("Hierarchical CE", _) => Some("hierarchical_ce".to_string()),
        _ => None,
    }
}

/// NCCL's debug settings for one call: [`Probe::arm`] sets ours, [`Probe::disarm`] puts the
/// user's back and returns what NCCL wrote. Its directory (mode 0700, a name no one else has:
/// `create_dir` refuses one that exists, link or not) is removed when it is dropped.
pub struct Probe {
    dir: PathBuf,
    file: PathBuf,
    reset: unsafe extern "C" fn(),
    saved: Vec<(&'static str, Option<OsString>)>,
}

impl Probe {
    /// A probe that has NCCL re-read its settings through `reset` (`ncclResetDebugInit`).
    pub fn new(reset: unsafe extern "C" fn()) -> std::io::Result<Probe> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let mut last = None;
        for attempt in 0..100u32 {
            let nanos =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
            let dir = base.join(format!("coll-bench-nccl-{}-{nanos:x}-{attempt}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    let file = dir.join("tuning.log");
                    return Ok(Probe { dir, file, reset, saved: Vec::new() });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free directory name")))
    }

    /// The file NCCL writes to while armed.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Set our debug settings and have NCCL re-read them (it does at its next log call).
    pub fn arm(&mut self) {
        self.saved = VARIABLES.iter().map(|v| (*v, std::env::var_os(v))).collect();
        // Setting the environment while other threads may read it: NCCL's own threads read
        // theirs at start-up, and the probe runs between calls, with NCCL idle (the stream
        // synchronised), as `ncclResetDebugInit`'s callers are meant to.
        std::env::set_var("NCCL_DEBUG", "INFO");
        std::env::set_var("NCCL_DEBUG_SUBSYS", "TUNING");
        std::env::set_var("NCCL_DEBUG_FILE", &self.file);
        // SAFETY: `ncclResetDebugInit` takes nothing and only marks NCCL's settings for re-reading.
        unsafe { (self.reset)() };
    }

    /// Put the user's settings back, have NCCL re-read them, and return what it wrote while
    /// armed (empty if nothing). NCCL closes our file when it re-reads (at its next log call);
    /// its lines are written as they come (line-buffered), so they are all there already.
    pub fn disarm(&mut self) -> String {
        for (name, value) in self.saved.drain(..) {
            match value {
                Some(v) => std::env::set_var(name, v),
                None => std::env::remove_var(name),
            }
        }
        // SAFETY: as in `arm`.
        unsafe { (self.reset)() };
        std::fs::read_to_string(&self.file).unwrap_or_default()
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.saved.is_empty() {
            self.disarm();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as NCCL prints them (`src/debug.cc`'s prefix, `src/enqueue.cc`'s and
    /// `src/scheduler/symmetric_sched.cc`'s formats, 2.24 to 2.30).
    const LOG: &str = "\
node1:4242:4242 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}
node1:4242:4242 [0] NCCL INFO AllReduce: 8 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..0}
node1:4242:4242 [0] NCCL INFO AllGather: 65536 Bytes -> Algo NVLS_TREE proto LL128 channel{Lo..Hi}={0..15}
node1:4242:4242 [0] NCCL INFO ReduceScatter [Symmetric]: 4096 Bytes -> Kernel ReduceScatter_LL nchannels 8 nthreads 512 nWorks 1
node1:4242:4242 [0] NCCL INFO AllGather [Copy Engine]: 33554432 Bytes -> cudaMemcpy; CE synchronization with NVLS
node1:4242:4242 [0] NCCL INFO Broadcast: 100 Bytes -> Algo 1 proto 2 time 12.500000
node1:4242:4242 [0] NCCL INFO Channel 00/02 : 0 1
";

    #[test]
    fn each_form_of_the_tuning_line_is_read() {
        assert_eq!(read(LOG, "AllReduce", 1_048_576).as_deref(), Some("ring/simple"));
        assert_eq!(read(LOG, "AllReduce", 8).as_deref(), Some("tree/ll"));
        assert_eq!(read(LOG, "AllGather", 65_536).as_deref(), Some("nvls_tree/ll128"));
        assert_eq!(read(LOG, "ReduceScatter", 4096).as_deref(), Some("symmetric/ReduceScatter_LL"));
        assert_eq!(read(LOG, "AllGather", 33_554_432).as_deref(), Some("copy_engine"));
    }

    #[test]
    fn another_call_size_or_format_is_no_answer() {
        // Another function, another size, 2.23's numbered form (never probed), other lines.
        assert_eq!(read(LOG, "Reduce", 1_048_576), None);
        assert_eq!(read(LOG, "AllReduce", 1_048_577), None);
        assert_eq!(read(LOG, "Broadcast", 100), None);
        assert_eq!(read("", "AllReduce", 8), None);
        assert_eq!(read("AllReduce: 8 Bytes -> Algo RING proto LL", "AllReduce", 8), None);
    }

    #[test]
    fn the_last_line_of_the_call_wins() {
        let two = format!(
            "{LOG}x:1:1 [0] NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL128 channel{{Lo..Hi}}={{0..1}}\n"
        );
        assert_eq!(read(&two, "AllReduce", 8).as_deref(), Some("ring/ll128"));
    }

    #[test]
    fn functions_are_ncclfunctostring_names() {
        assert_eq!(function(Kind::AllReduce), Some("AllReduce"));
        assert_eq!(function(Kind::Barrier), Some("AllReduce"));
        assert_eq!(function(Kind::ReduceScatter), Some("ReduceScatter"));
        assert_eq!(function(Kind::AllToAll), None);
        assert_eq!(function(Kind::PingPong), None);
    }

    #[test]
    fn why_not_names_the_version_the_symbol_or_the_users_file() {
        assert!(unavailable((2, 23, 4), true, None).unwrap().contains("NCCL 2.23.4 reads its debug settings once"));
        assert!(unavailable((2, 24, 3), false, None).unwrap().contains("does not export ncclResetDebugInit"));
        let file = OsString::from("/tmp/nccl.%h.%p");
        assert!(unavailable((2, 32, 3), true, Some(&file)).unwrap().starts_with("NCCL_DEBUG_FILE is set"));
        assert_eq!(unavailable((2, 32, 3), true, Some(&OsString::new())), None);
        assert_eq!(unavailable((2, 24, 3), true, None), None);
    }
}
