//! The NCCL functions the backend calls, bound at run time from the library found by
//! [`super::search`], with the C signatures of `nccl.h`. C enums are passed as `int`; the unique
//! id is 128 `char`s, which are signed on x86_64 and unsigned on aarch64, so it is held as bytes
//! (same size and alignment, same by-value passing).

use super::search::{self, Candidate};
use crate::dtype::{DType, Op};
use libloading::Library;
use std::ffi::{CStr, OsString};
use std::os::raw::{c_char, c_int, c_uint, c_void};

pub type NcclResult = c_int;
pub type NcclComm = *mut c_void;
pub type CudaStream = *mut c_void;
/// `ncclDataType_t` and `ncclRedOp_t`: C enums, passed as `int` (their size is checked against a
/// real `nccl.h` by the ABI test).
pub type NcclDataType = c_int;
pub type NcclRedOp = c_int;
/// `ncclWindow_t`: a symmetric memory window (NCCL 2.27), opaque.
pub type NcclWindow = *mut c_void;

pub const NCCL_SUCCESS: NcclResult = 0;
/// `ncclInProgress`: a non-blocking operation still running (not an error).
pub const NCCL_IN_PROGRESS: NcclResult = 7;
pub const UNIQUE_ID_BYTES: usize = 128;

/// The oldest NCCL with the 8-bit float types (as PyTorch gates them).
pub const FP8_VERSION: (u32, u32) = (2, 24);

/// The oldest NCCL we accept: 2.10 brought `ncclAvg` and `ncclBfloat16`.
pub const MIN_VERSION: (u32, u32) = (2, 10);

/// `ncclUniqueId`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UniqueId {
    pub internal: [u8; UNIQUE_ID_BYTES],
}

api! {
    /// libnccl's entry points, as loaded.
    pub struct NcclApi {
        get_version: "ncclGetVersion" => fn(*mut c_int) -> NcclResult,
        get_unique_id: "ncclGetUniqueId" => fn(*mut UniqueId) -> NcclResult,
        comm_init_rank: "ncclCommInitRank" => fn(*mut NcclComm, c_int, UniqueId, c_int) -> NcclResult,
        comm_destroy: "ncclCommDestroy" => fn(NcclComm) -> NcclResult,
        comm_abort: "ncclCommAbort" => fn(NcclComm) -> NcclResult,
        comm_get_async_error: "ncclCommGetAsyncError" => fn(NcclComm, *mut NcclResult) -> NcclResult,
        get_error_string: "ncclGetErrorString" => fn(NcclResult) -> *const c_char,
        all_reduce: "ncclAllReduce" => fn(*const c_void, *mut c_void, usize, NcclDataType, NcclRedOp, NcclComm, CudaStream) -> NcclResult,
        all_gather: "ncclAllGather" => fn(*const c_void, *mut c_void, usize, NcclDataType, NcclComm, CudaStream) -> NcclResult,
        reduce_scatter: "ncclReduceScatter" => fn(*const c_void, *mut c_void, usize, NcclDataType, NcclRedOp, NcclComm, CudaStream) -> NcclResult,
        broadcast: "ncclBroadcast" => fn(*const c_void, *mut c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
        reduce: "ncclReduce" => fn(*const c_void, *mut c_void, usize, NcclDataType, NcclRedOp, c_int, NcclComm, CudaStream) -> NcclResult,
        send: "ncclSend" => fn(*const c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
        recv: "ncclRecv" => fn(*mut c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
        group_start: "ncclGroupStart" => fn() -> NcclResult,
        group_end: "ncclGroupEnd" => fn() -> NcclResult,
        comm_count: "ncclCommCount" => fn(NcclComm, *mut c_int) -> NcclResult,
        comm_user_rank: "ncclCommUserRank" => fn(NcclComm, *mut c_int) -> NcclResult,
    }
}

optional_api! {
    /// Entry points of newer NCCLs, used where the library has them.
    pub struct NcclOptional {
        /// NCCL 2.13: the detail behind the last error of a comm.
        get_last_error: "ncclGetLastError" => fn(NcclComm) -> *const c_char,
        /// NCCL 2.14: init with a config (non-blocking).
        comm_init_rank_config: "ncclCommInitRankConfig" => fn(*mut NcclComm, c_int, UniqueId, c_int, *mut Config) -> NcclResult,
        /// NCCL 2.28.3 and newer (nccl.h declares them from then): native all-to-all, gather and scatter.
        all_to_all: "ncclAlltoAll" => fn(*const c_void, *mut c_void, usize, NcclDataType, NcclComm, CudaStream) -> NcclResult,
        gather: "ncclGather" => fn(*const c_void, *mut c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
        scatter: "ncclScatter" => fn(*const c_void, *mut c_void, usize, NcclDataType, c_int, NcclComm, CudaStream) -> NcclResult,
        /// NCCL 2.18: split a communicator by colour and key (used only from [`SPLIT_VERSION`]).
        comm_split: "ncclCommSplit" => fn(NcclComm, c_int, c_int, *mut NcclComm, *mut Config) -> NcclResult,
        /// NCCL 2.24: re-read the debug settings (used only from [`super::tuning::RESET_VERSION`]).
        reset_debug_init: "ncclResetDebugInit" => fn() -> (),
        /// NCCL 2.19: memory from NCCL's allocator (cuMem, where the driver has it) and buffers
        /// registered with a communicator (`-R 1`; used only from [`REGISTER_VERSION`]).
        mem_alloc: "ncclMemAlloc" => fn(*mut *mut c_void, usize) -> NcclResult,
        mem_free: "ncclMemFree" => fn(*mut c_void) -> NcclResult,
        comm_register: "ncclCommRegister" => fn(NcclComm, *mut c_void, usize, *mut *mut c_void) -> NcclResult,
        comm_deregister: "ncclCommDeregister" => fn(NcclComm, *mut c_void) -> NcclResult,
        /// NCCL 2.27: symmetric memory windows (`-R 2`; used only from [`WINDOW_VERSION`]).
        comm_window_register: "ncclCommWindowRegister" => fn(NcclComm, *mut c_void, usize, *mut NcclWindow, c_int) -> NcclResult,
        comm_window_deregister: "ncclCommWindowDeregister" => fn(NcclComm, NcclWindow) -> NcclResult,
    }
}

/// `NCCL_CONFIG_UNDEF_INT`: "library default" for an int field of the config.
pub const CONFIG_UNDEF_INT: c_int = c_int::MIN;
/// `NCCL_API_MAGIC`, the config's `magic`.
pub const API_MAGIC: c_uint = 0xcafe_beef;
/// The newest config layout we know, NCCL 2.32.3's (`ncclConfig_v23100`): a library newer than
/// that gets this version, so it keeps its defaults for fields we do not know.
pub const CONFIG_NEWEST: (u32, u32, u32) = (2, 32, 3);
/// The oldest NCCL whose init we run non-blocking (`ncclCommInitRankConfig` with `blocking = 0`).
pub const NON_BLOCKING_INIT: (u32, u32) = (2, 14);

/// The oldest NCCL whose `ncclCommSplit` we call (it came with 2.18, as did the config's
/// `splitShare`); older libraries, or one without the symbol, get a group communicator from one
/// unique id per group instead ([`super::split`]).
pub const SPLIT_VERSION: (u32, u32) = (2, 18);
/// The oldest NCCL whose `ncclMemAlloc` and `ncclCommRegister` we call (`-R 1`; nccl-tests
/// ignores its `-R` below it).
pub const REGISTER_VERSION: (u32, u32) = (2, 19);
/// The oldest NCCL whose `ncclCommWindowRegister` we call (`-R 2`; nccl-tests falls back to
/// `-R 1` below it, we refuse).
pub const WINDOW_VERSION: (u32, u32) = (2, 27);
/// `NCCL_WIN_COLL_SYMMETRIC`: a window the symmetric collective kernels may use.
pub const WIN_COLL_SYMMETRIC: c_int = 0x01;
/// `NCCL_WIN_REQUIRED_ALIGNMENT`: a window's offset in its allocation is a multiple of it.
pub const WIN_REQUIRED_ALIGNMENT: usize = 4096;

/// `NCCL_SPLIT_NOCOLOR`: the colour of a rank that joins no group (its new comm is null).
pub const SPLIT_NOCOLOR: c_int = -1;

/// `ncclConfig_t` in its newest layout we know (NCCL 2.32.3's `nccl.h`); every older layout is a
/// prefix of it (the ABI test checks the offsets against the wheel's `nccl.h`). Every byte is a
/// field, the tail padding included, and every field we do not set is `NCCL_CONFIG_UNDEF_INT` (or
/// null), so whatever `size` bytes a library copies hold no garbage: NCCL 2.18-2.30 copy
/// `min(size, their sizeof)` bytes over their defaults with no check of `size` (`src/init.cc`,
/// `parseCommConfig`), and 2.26 reads the 4 bytes at 44, padding in 2.18-2.25's layout, as
/// `trafficClass`, which reaches the network plugin (the InfiniBand service level).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub size: usize,
    pub magic: c_uint,
    pub version: c_uint,
    pub blocking: c_int,
    /// 2.17
    pub cga_cluster_size: c_int,
    pub min_ctas: c_int,
    pub max_ctas: c_int,
    pub net_name: *const c_char,
    /// 2.18
    pub split_share: c_int,
    /// 2.26
    pub traffic_class: c_int,
    /// 2.27
    pub comm_name: *const c_char,
    pub collnet_enable: c_int,
    pub cta_policy: c_int,
    pub shrink_share: c_int,
    pub nvls_ctas: c_int,
    /// 2.28
    pub n_channels_per_net_peer: c_int,
    pub nvlink_centric_sched: c_int,
    /// 2.29
    pub graph_usage_mode: c_int,
    pub num_rma_ctx: c_int,
    /// 2.30
    pub max_p2p_peers: c_int,
    pub graph_stream_ordering: c_int,
    /// 2.31 (`ncclConfig_v23100`)
    pub launch_order_implicit: c_int,
    pub num_rma_sig: c_int,
    pub rma_eager_init: c_int,
    pub host_cft_mode: c_int,
    pub nvls_host_mode: c_int,
    /// The C struct's tail padding (to its 8-byte alignment), written so no byte is undefined.
    pub tail: c_int,
}

/// `NCCL_VERSION(X,Y,Z)` as `nccl.h` computes it from 2.9 on.
pub fn version_code(v: (u32, u32, u32)) -> c_uint {
    v.0 * 10_000 + v.1 * 100 + v.2
}

/// `sizeof(ncclConfig_t)` in the `nccl.h` of NCCL `v` (x86_64 and aarch64 alike): what a program
/// built against that header passes as `size`. Layouts changed at 2.17, 2.18, 2.27, 2.28, 2.29,
/// 2.30 and 2.31 (2.26 filled 2.18's padding, 2.30.5 2.30.3's).
pub fn config_size(v: (u32, u32, u32)) -> usize {
    match (v.0, v.1) {
        (..=2, ..=16) => 24,
        (2, 17) => 40,
        (2, 18..=26) => 48,
        (2, 27) => 72,
        (2, 28) => 80,
        (2, 29) => 88,
        (2, 30) => 96,
        _ => std::mem::size_of::<Config>(),
    }
}

impl Config {
    /// `NCCL_CONFIG_INITIALIZER` as the `nccl.h` of the loaded library `v` writes it (its `size`
    /// and `version`; a library newer than [`CONFIG_NEWEST`] gets that one's), with
    /// `blocking = 0`.
    pub fn non_blocking(v: (u32, u32, u32)) -> Config {
        let v = v.min(CONFIG_NEWEST);
        let u = CONFIG_UNDEF_INT;
        Config {
            size: config_size(v),
            magic: API_MAGIC,
            version: version_code(v),
            blocking: 0,
            cga_cluster_size: u,
            min_ctas: u,
            max_ctas: u,
            net_name: std::ptr::null(),
            split_share: u,
            traffic_class: u,
            comm_name: std::ptr::null(),
            collnet_enable: u,
            cta_policy: u,
            shrink_share: u,
            nvls_ctas: u,
            n_channels_per_net_peer: u,
            nvlink_centric_sched: u,
            graph_usage_mode: u,
            num_rma_ctx: u,
            max_p2p_peers: u,
            graph_stream_ordering: u,
            launch_order_implicit: u,
            num_rma_sig: u,
            rma_eager_init: u,
            host_cft_mode: u,
            nvls_host_mode: u,
            tail: u,
        }
    }

    /// The config of the world's communicator (non-blocking), which exists to be split: the
    /// blocking copy the timed calls run on, and the groups. `splitShare = 1` from 2.18, so its
    /// children share its resources (NCCL reads the parent's setting, `src/init.cc`): proxy
    /// thread, connections and buffers. The parent runs no call of its own after the split, so
    /// nothing is shared in use, and NCCL's init work and, where it connects at init (before
    /// 2.22, or `NCCL_RUNTIME_CONNECT=0`), its buffers are not doubled.
    pub fn parent(v: (u32, u32, u32)) -> Config {
        let share = (v.0, v.1) >= SPLIT_VERSION;
        Config { split_share: if share { 1 } else { CONFIG_UNDEF_INT }, ..Config::non_blocking(v) }
    }

    /// The config of a communicator split off a parent: blocking (the timed calls run on it,
    /// as nccl-tests' run on blocking communicators; the split itself still runs on NCCL's
    /// thread and is polled, since the job belongs to the non-blocking parent's group). Whether
    /// it shares the parent's resources is the parent's `splitShare` ([`Config::parent`]); its
    /// own only applies to splits of it, which are not made.
    pub fn split(v: (u32, u32, u32)) -> Config {
        Config { blocking: 1, ..Config::non_blocking(v) }
    }
}

/// The loaded library. Leaked on purpose (`&'static`): never unloaded under NCCL's own threads.
pub struct Nccl {
    pub api: NcclApi,
    pub optional: NcclOptional,
    pub version: (u32, u32, u32),
    /// The file that was loaded, for the header.
    pub location: String,
}

/// `ncclGetVersion`'s code as (major, minor, patch): `X*10000 + Y*100 + Z` since 2.9,
/// `X*1000 + Y*100 + Z` before.
pub fn decode_version(code: i32) -> (u32, u32, u32) {
    let c = code.max(0) as u32;
    if c >= 10_000 {
        (c / 10_000, (c % 10_000) / 100, c % 100)
    } else {
        (c / 1000, (c % 1000) / 100, c % 100)
    }
}

/// NCCL's `ncclDataType_t`.
pub fn datatype(d: DType) -> c_int {
    match d {
        DType::Int8 => 0,
        DType::Uint8 => 1,
        DType::Int32 => 2,
        DType::Uint32 => 3,
        DType::Int64 => 4,
        DType::Uint64 => 5,
        DType::Float16 => 6,
        DType::Float32 => 7,
        DType::Float64 => 8,
        DType::Bfloat16 => 9,
        DType::Fp8E4m3 => 10,
        DType::Fp8E5m2 => 11,
    }
}

/// NCCL's `ncclRedOp_t` (avg is native: `ncclAvg`).
pub fn reduce_op(op: Op) -> c_int {
    match op {
        Op::Sum => 0,
        Op::Prod => 1,
        Op::Max => 2,
        Op::Min => 3,
        Op::Avg => 4,
    }
}

/// The file a loaded symbol lives in (`dladdr`), to show which library the linker picked.
pub fn library_path(symbol: usize) -> Option<String> {
    // SAFETY: dladdr only looks the address up; the returned name is owned by the loader.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(symbol as *const c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        Some(CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned())
    }
}

/// Find, open and check NCCL: the library from the search order of [`super::search`], its
/// version (at least [`MIN_VERSION`]), then every function we call.
pub fn load(env: &dyn Fn(&str) -> Option<OsString>) -> Result<&'static Nccl, String> {
    // SAFETY: loading NCCL runs its initialisers, which have no preconditions of ours; nothing is
    // called in it until its version and every symbol are checked below.
    let open = |c: &Candidate| unsafe { Library::new(c.target()) }.map_err(|e| e.to_string());
    let value = env(search::NCCL_VAR);
    let first = search::candidates(search::NCCL_VAR, value.as_deref(), search::NCCL_NAMES, &[]);
    let (lib, which) = match search::open_first(&first, open) {
        Ok(x) => x,
        Err(tried) => {
            if let Candidate::Override { var, path } = &tried[0].0 {
                return Err(format!("no NCCL: {}", search::override_failed(var, path, &tried[0].1, "libnccl.so.2")));
            }
            // Only now look through Python's package directories (this runs python3).
            let dirs = search::all_site_dirs(env);
            let files = search::wheel_files(&dirs, search::NCCL_IN_WHEEL);
            let wheels: Vec<Candidate> = files.into_iter().map(Candidate::File).collect();
            match search::open_first(&wheels, open) {
                Ok(x) => x,
                Err(more) => {
                    let all: Vec<_> = tried.into_iter().chain(more).collect();
                    return Err(search::nccl_not_found(&all, dirs.len()));
                }
            }
        }
    };
    from_library(lib, &which.target().to_string_lossy())
}

/// Check and bind an opened library (`shown`: how it was named, for messages).
pub fn from_library(lib: Library, shown: &str) -> Result<&'static Nccl, String> {
    let lib: &'static Library = Box::leak(Box::new(lib));
    // SAFETY: ncclGetVersion(int*) in every NCCL.
    let get_version = unsafe { lib.get::<unsafe extern "C" fn(*mut c_int) -> NcclResult>(b"ncclGetVersion\0") }
        .map(|s| *s)
        .map_err(|_| {
            format!(
                "{shown} is not an NCCL library (it has no ncclGetVersion); point {} at libnccl.so.2",
                search::NCCL_VAR
            )
        })?;
    let location = library_path(get_version as usize).unwrap_or_else(|| shown.to_string());
    let mut code: c_int = 0;
    // SAFETY: out-pointer to a local.
    let r = unsafe { get_version(&mut code) };
    if r != NCCL_SUCCESS {
        return Err(format!("NCCL at {location}: ncclGetVersion failed with code {r}"));
    }
    let version = decode_version(code);
    if (version.0, version.1) < MIN_VERSION {
        return Err(format!(
            "NCCL {}.{}.{} at {location} is too old: coll-bench needs NCCL {}.{} or newer (ncclAvg, bfloat16); install a newer one (pip install nvidia-nccl-cu12) or point {} at it",
            version.0,
            version.1,
            version.2,
            MIN_VERSION.0,
            MIN_VERSION.1,
            search::NCCL_VAR
        ));
    }
    // SAFETY: the signatures above are those of nccl.h.
    let api = unsafe { NcclApi::load(lib) }
        .map_err(|missing| format!("NCCL at {location} is incomplete: missing {missing}"))?;
    // SAFETY: the signatures are those of nccl.h, where the library has them.
    let optional = unsafe { NcclOptional::load(lib) };
    Ok(Box::leak(Box::new(Nccl { api, optional, version, location })))
}

impl Nccl {
    /// "unhandled system error (code 2)", with NCCL's own detail where it has one.
    pub(crate) fn error_text(&self, r: NcclResult, comm: NcclComm) -> String {
        // SAFETY: NCCL returns static strings (or null for codes it does not know).
        let text = unsafe {
            let p = (self.api.get_error_string)(r);
            if p.is_null() {
                "unknown error".to_string()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        let detail = match self.optional.get_last_error {
            // SAFETY: a null comm is accepted (the last error of the thread).
            Some(f) => unsafe {
                let p = f(comm);
                if p.is_null() {
                    String::new()
                } else {
                    search::one_line(&CStr::from_ptr(p).to_string_lossy())
                }
            },
            None => String::new(),
        };
        if detail.is_empty() {
            format!("{} (code {r})", search::one_line(&text))
        } else {
            format!("{} (code {r}): {detail}", search::one_line(&text))
        }
    }

    /// `Err("NCCL error in WHAT: text")` unless `r` is success.
    pub(crate) fn check(&self, r: NcclResult, what: &str, comm: NcclComm) -> Result<(), String> {
        if r == NCCL_SUCCESS {
            Ok(())
        } else {
            Err(format!("NCCL error in {what}: {}", self.error_text(r, comm)))
        }
    }

    pub fn version_string(&self) -> String {
        format!("{}.{}.{}", self.version.0, self.version.1, self.version.2)
    }

    /// `ncclCommInitRankConfig`, where the library has it and is new enough to run it
    /// non-blocking.
    pub fn non_blocking_init(
        &self,
    ) -> Option<unsafe extern "C" fn(*mut NcclComm, c_int, UniqueId, c_int, *mut Config) -> NcclResult> {
        self.optional.comm_init_rank_config.filter(|_| (self.version.0, self.version.1) >= NON_BLOCKING_INIT)
    }

    /// `ncclCommSplit`, where the library has it and is new enough ([`SPLIT_VERSION`]).
    pub fn comm_split(
        &self,
    ) -> Option<unsafe extern "C" fn(NcclComm, c_int, c_int, *mut NcclComm, *mut Config) -> NcclResult> {
        self.optional.comm_split.filter(|_| (self.version.0, self.version.1) >= SPLIT_VERSION)
    }

    /// `ncclResetDebugInit`, where the library has it and is new enough
    /// ([`super::tuning::RESET_VERSION`]).
    pub fn reset_debug_init(&self) -> Option<unsafe extern "C" fn()> {
        self.optional.reset_debug_init.filter(|_| (self.version.0, self.version.1) >= super::tuning::RESET_VERSION)
    }

    /// Why `-R level` cannot run on this library, if it cannot: 1 needs NCCL's allocator and
    /// `ncclCommRegister` ([`REGISTER_VERSION`]), 2 also its windows ([`WINDOW_VERSION`]).
    pub fn cannot_register(&self, level: u32) -> Option<String> {
        let o = &self.optional;
        let v = (self.version.0, self.version.1);
        let allocator = o.mem_alloc.is_some() && o.mem_free.is_some();
        let (need, have) = match level {
            0 => return None,
            1 => (REGISTER_VERSION, allocator && o.comm_register.is_some() && o.comm_deregister.is_some()),
            _ => (WINDOW_VERSION, allocator && o.comm_window_register.is_some() && o.comm_window_deregister.is_some()),
        };
        let what =
            if level == 1 { "ncclMemAlloc and ncclCommRegister" } else { "symmetric windows (ncclCommWindowRegister)" };
        (v < need || !have).then(|| {
            format!(
                "-R/--register {level}: NCCL {} has no {what}; expected NCCL {}.{} or newer, or -R {}",
                self.version_string(),
                need.0,
                need.1,
                if level == 2 && v >= REGISTER_VERSION { "1 or 0" } else { "0" }
            )
        })
    }

    /// How gather, scatter and all-to-all run: "native all-to-all, gather, scatter", or which
    /// of them are grouped send/recv.
    pub fn collectives_note(&self) -> String {
        let o = &self.optional;
        let all =
            [("all-to-all", o.all_to_all.is_some()), ("gather", o.gather.is_some()), ("scatter", o.scatter.is_some())];
        let native: Vec<&str> = all.iter().filter(|(_, n)| *n).map(|(k, _)| *k).collect();
        let grouped: Vec<&str> = all.iter().filter(|(_, n)| !*n).map(|(k, _)| *k).collect();
        match (native.is_empty(), grouped.is_empty()) {
            (true, _) => format!("{} as grouped send/recv", grouped.join(", ")),
            (_, true) => format!("native {}", native.join(", ")),
            _ => format!("native {}; {} as grouped send/recv", native.join(", "), grouped.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let m: HashMap<String, OsString> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn versions_decode_in_both_schemes() {
        assert_eq!(decode_version(21805), (2, 18, 5));
        assert_eq!(decode_version(22703), (2, 27, 3));
        assert_eq!(decode_version(21000), (2, 10, 0));
        assert_eq!(decode_version(2708), (2, 7, 8));
        assert_eq!(decode_version(2406), (2, 4, 6));
    }

    #[test]
    fn types_and_ops_follow_nccl_h() {
        let codes: Vec<c_int> = DType::ALL.iter().map(|d| datatype(*d)).collect();
        // int8 uint8 int32 uint32 int64 uint64 half float double bfloat16, in DType::ALL's order.
        assert_eq!(codes, vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!([Op::Sum, Op::Prod, Op::Max, Op::Min, Op::Avg].map(reduce_op), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_unique_id_is_128_bytes_like_nccl_unique_id() {
        assert_eq!(std::mem::size_of::<UniqueId>(), 128);
        assert_eq!(std::mem::align_of::<UniqueId>(), std::mem::align_of::<c_char>());
    }

    #[test]
    fn an_override_that_does_not_exist_is_named() {
        let e = load(&env(&[(search::NCCL_VAR, "/nonexistent")])).err().unwrap();
        assert!(e.starts_with("no NCCL: COLL_BENCH_NCCL_LIBRARY=/nonexistent did not load: /nonexistent: cannot open shared object file"), "{e}");
        assert!(e.ends_with("point it at libnccl.so.2, or unset it to search the usual places"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn an_override_that_is_not_nccl_is_named() {
        // libm is on every glibc system and has no ncclGetVersion.
        let e = load(&env(&[(search::NCCL_VAR, "libm.so.6")])).err().unwrap();
        assert_eq!(
            e,
            "libm.so.6 is not an NCCL library (it has no ncclGetVersion); point COLL_BENCH_NCCL_LIBRARY at libnccl.so.2"
        );
    }

    #[test]
    fn a_cuda_override_that_does_not_exist_is_named() {
        let e = super::super::cuda::load(&env(&[(search::CUDA_VAR, "/nonexistent/libcuda.so.1")])).err().unwrap();
        assert!(
            e.starts_with("no CUDA driver: COLL_BENCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1 did not load:"),
            "{e}"
        );
        assert!(e.contains("point it at libcuda.so.1"), "{e}");
    }

    #[test]
    fn a_library_that_is_not_the_driver_is_named() {
        let e = super::super::cuda::load(&env(&[(search::CUDA_VAR, "libm.so.6")])).err().unwrap();
        assert!(e.starts_with("the CUDA driver at libm.so.6 is too old or not a CUDA driver (missing cuInit:"), "{e}");
    }
}
