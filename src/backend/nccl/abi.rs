//! Our NCCL bindings written out as C, so a test can compile them against a real `nccl.h` (the
//! one in the `nvidia-nccl-cu12` wheel) and compare them value by value: every function we bind
//! is re-declared with our parameter list (the C compiler rejects a re-declaration whose types
//! differ, and names both), and a small program prints the header's value of every constant, enum
//! value and struct size we rely on, next to ours. Nothing here runs in a benchmark.
//!
//! `nccl.h` includes `cuda_runtime.h` and the 16-bit float headers for a few types only; the
//! probe compiles against stand-ins of those ([`CUDA_STUBS`]), so no CUDA toolkit is needed.

use super::ffi::{
    self, Config, NcclApi, NcclComm, NcclOptional, UniqueId, NCCL_IN_PROGRESS, NCCL_SUCCESS, UNIQUE_ID_BYTES,
};
use crate::dtype::{DType, Op};
use std::os::raw::c_int;

/// The CUDA headers `nccl.h` includes, reduced to the types it uses.
pub const CUDA_STUBS: &[(&str, &str)] = &[
    (
        "cuda_runtime.h",
        "#define CUDART_VERSION 12000\ntypedef struct CUstream_st *cudaStream_t;\ntypedef struct CUevent_st *cudaEvent_t;\n",
    ),
    ("cuda_fp16.h", ""),
    ("cuda_bf16.h", ""),
];

/// The C spelling of a Rust type as `stringify!` writes it: pointers unwrapped, each named type
/// spelled by `named` (shared by NCCL's probe and NVML's, `super::nvml`).
pub fn c_spelling(rust: &str, named: &dyn Fn(&str) -> Option<&'static str>) -> Result<String, String> {
    let t = rust.trim();
    if let Some(rest) = t.strip_prefix('*').map(str::trim_start) {
        if let Some(pointee) = rest.strip_prefix("mut ") {
            return Ok(format!("{} *", c_spelling(pointee, named)?));
        }
        if let Some(pointee) = rest.strip_prefix("const ") {
            return Ok(format!("const {} *", c_spelling(pointee, named)?));
        }
    }
    named(t).map(str::to_string).ok_or_else(|| format!("no C spelling for the Rust type {t}"))
}

/// The C spelling of one of our Rust parameter types, as `stringify!` writes it.
pub fn c_type(rust: &str) -> Result<String, String> {
    c_spelling(rust, &|t| {
        Some(match t {
            "c_int" => "int",
            "c_char" => "char",
            "c_void" | "()" => "void",
            "usize" => "size_t",
            "NcclResult" => "ncclResult_t",
            "NcclComm" => "ncclComm_t",
            "CudaStream" => "cudaStream_t",
            "UniqueId" => "ncclUniqueId",
            "NcclDataType" => "ncclDataType_t",
            "NcclRedOp" => "ncclRedOp_t",
            "Config" => "ncclConfig_t",
            "NcclWindow" => "ncclWindow_t",
            _ => return None,
        })
    })
}

/// One function as a C declaration: `ncclResult_t ncclSend(const void *, size_t, …);`.
pub fn c_declaration(name: &str, ret: &str, args: &[&str]) -> Result<String, String> {
    let params: Vec<String> = args.iter().map(|a| c_type(a)).collect::<Result<_, _>>()?;
    let params = if params.is_empty() { "void".to_string() } else { params.join(", ") };
    Ok(format!("{} {name}({params});", c_type(ret)?))
}

/// Every function we bind, as C declarations, in binding order.
pub fn declarations() -> Result<Vec<(String, String)>, String> {
    NcclApi::SIGNATURES
        .iter()
        .chain(NcclOptional::SIGNATURES)
        .map(|(name, ret, args)| Ok((name.to_string(), c_declaration(name, ret, args)?)))
        .collect()
}

/// The NCCL name of each of our data types.
pub fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::Int8 => "ncclInt8",
        DType::Uint8 => "ncclUint8",
        DType::Int32 => "ncclInt32",
        DType::Uint32 => "ncclUint32",
        DType::Int64 => "ncclInt64",
        DType::Uint64 => "ncclUint64",
        DType::Float16 => "ncclFloat16",
        DType::Float32 => "ncclFloat32",
        DType::Float64 => "ncclFloat64",
        DType::Bfloat16 => "ncclBfloat16",
        DType::Fp8E4m3 => "ncclFloat8e4m3",
        DType::Fp8E5m2 => "ncclFloat8e5m2",
    }
}

/// The NCCL name of each reduce op.
pub fn op_name(op: Op) -> &'static str {
    match op {
        Op::Sum => "ncclSum",
        Op::Prod => "ncclProd",
        Op::Max => "ncclMax",
        Op::Min => "ncclMin",
        Op::Avg => "ncclAvg",
    }
}

/// Every value we rely on, as (C expression, our value).
pub fn constants() -> Vec<(String, i64)> {
    let size = |n: usize| n as i64;
    let mut out: Vec<(String, i64)> = vec![
        ("ncclSuccess".into(), NCCL_SUCCESS as i64),
        ("ncclInProgress".into(), NCCL_IN_PROGRESS as i64),
        ("NCCL_SPLIT_NOCOLOR".into(), ffi::SPLIT_NOCOLOR as i64),
        ("NCCL_UNIQUE_ID_BYTES".into(), size(UNIQUE_ID_BYTES)),
        ("sizeof(ncclUniqueId)".into(), size(std::mem::size_of::<UniqueId>())),
        ("_Alignof(ncclUniqueId)".into(), size(std::mem::align_of::<UniqueId>())),
        ("sizeof(ncclComm_t)".into(), size(std::mem::size_of::<NcclComm>())),
        ("sizeof(ncclResult_t)".into(), size(std::mem::size_of::<ffi::NcclResult>())),
        ("sizeof(ncclDataType_t)".into(), size(std::mem::size_of::<ffi::NcclDataType>())),
        ("sizeof(ncclRedOp_t)".into(), size(std::mem::size_of::<ffi::NcclRedOp>())),
    ];
    out.push(("NCCL_CONFIG_UNDEF_INT".into(), ffi::CONFIG_UNDEF_INT as i64));
    out.push(("NCCL_API_MAGIC".into(), ffi::API_MAGIC as i64));
    out.push(("NCCL_WIN_COLL_SYMMETRIC".into(), ffi::WIN_COLL_SYMMETRIC as i64));
    out.push(("NCCL_WIN_REQUIRED_ALIGNMENT".into(), ffi::WIN_REQUIRED_ALIGNMENT as i64));
    out.extend(DType::ALL.iter().chain(&DType::FP8).map(|d| (dtype_name(*d).to_string(), ffi::datatype(*d) as i64)));
    out.extend(Op::ALL.iter().map(|o| (op_name(*o).to_string(), ffi::reduce_op(*o) as i64)));
    out
}

/// `ncclConfig_t`'s fields as (C name, our offset, the NCCL version whose `nccl.h` has it first).
pub fn config_fields() -> Vec<(&'static str, usize, (u32, u32, u32))> {
    use std::mem::offset_of;
    let (v14, v17, v18, v26, v27, v28, v29, v30, v31) =
        ((2, 14, 0), (2, 17, 0), (2, 18, 0), (2, 26, 0), (2, 27, 0), (2, 28, 0), (2, 29, 0), (2, 30, 0), (2, 31, 0));
    vec![
        ("size", offset_of!(Config, size), v14),
        ("magic", offset_of!(Config, magic), v14),
        ("version", offset_of!(Config, version), v14),
        ("blocking", offset_of!(Config, blocking), v14),
        ("cgaClusterSize", offset_of!(Config, cga_cluster_size), v17),
        ("minCTAs", offset_of!(Config, min_ctas), v17),
        ("maxCTAs", offset_of!(Config, max_ctas), v17),
        ("netName", offset_of!(Config, net_name), v17),
        ("splitShare", offset_of!(Config, split_share), v18),
        ("trafficClass", offset_of!(Config, traffic_class), v26),
        ("commName", offset_of!(Config, comm_name), v27),
        ("collnetEnable", offset_of!(Config, collnet_enable), v27),
        ("CTAPolicy", offset_of!(Config, cta_policy), v27),
        ("shrinkShare", offset_of!(Config, shrink_share), v27),
        ("nvlsCTAs", offset_of!(Config, nvls_ctas), v27),
        ("nChannelsPerNetPeer", offset_of!(Config, n_channels_per_net_peer), v28),
        ("nvlinkCentricSched", offset_of!(Config, nvlink_centric_sched), v28),
        ("graphUsageMode", offset_of!(Config, graph_usage_mode), v29),
        ("numRmaCtx", offset_of!(Config, num_rma_ctx), v29),
        ("maxP2pPeers", offset_of!(Config, max_p2p_peers), v30),
        ("graphStreamOrdering", offset_of!(Config, graph_stream_ordering), (2, 30, 5)),
        ("launchOrderImplicit", offset_of!(Config, launch_order_implicit), v31),
        ("numRmaSig", offset_of!(Config, num_rma_sig), v31),
        ("rmaEagerInit", offset_of!(Config, rma_eager_init), v31),
        ("hostCftMode", offset_of!(Config, host_cft_mode), v31),
        ("nvlsHostMode", offset_of!(Config, nvls_host_mode), v31),
    ]
}

/// What the probe must print for a header of version `v` (its `NCCL_VERSION_CODE`, decoded):
/// [`constants`], the offset of every config field that header has, and the config's size as
/// [`ffi::config_size`] has it for that version (what we pass as `size`).
pub fn expected(v: (u32, u32, u32)) -> Vec<(String, i64)> {
    let mut out = constants();
    for (field, at, since) in config_fields() {
        if since <= v {
            out.push((format!("offsetof(ncclConfig_t, {field})"), at as i64));
        }
    }
    out.push(("sizeof(ncclConfig_t)".into(), ffi::config_size(v) as i64));
    out
}

/// The probe: the header, our declarations, and a `main` that prints `EXPR=VALUE` for each of
/// [`constants`], then the header's version.
pub fn probe_source() -> Result<String, String> {
    // NCCL_OS_LINUX: nccl.h (2.28+) declares ncclResetDebugInit only where it is defined (its
    // build defines it; a user's does not, and gets an empty macro of that name instead).
    let mut s = String::from("#include <stdio.h>\n#include <stddef.h>\n#define NCCL_OS_LINUX 1\n#include <nccl.h>\n\n");
    s.push_str("/* coll-bench's bindings (src/backend/nccl/ffi.rs) */\n");
    for (_, decl) in declarations()? {
        s.push_str(&decl);
        s.push('\n');
    }
    s.push_str("\nint main(void) {\n");
    let print = |expr: &str| format!("    printf(\"%s=%lld\\n\", \"{expr}\", (long long)({expr}));\n");
    for (expr, _) in constants() {
        s.push_str(&print(&expr));
    }
    for (field, _, since) in config_fields() {
        let guard = format!("NCCL_VERSION_CODE >= NCCL_VERSION({},{},{})", since.0, since.1, since.2);
        s.push_str(&format!("#if {guard}\n{}#endif\n", print(&format!("offsetof(ncclConfig_t, {field})"))));
    }
    s.push_str(&print("sizeof(ncclConfig_t)"));
    s.push_str("    printf(\"NCCL_VERSION_CODE=%d\\n\", NCCL_VERSION_CODE);\n");
    s.push_str("    printf(\"version=%d.%d.%d\\n\", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);\n    return 0;\n}\n");
    Ok(s)
}

/// The functions whose re-declaration the compiler rejected, with both parameter lists, from its
/// diagnostics (GCC: "conflicting types for 'F'; have 'OURS'", then "previous declaration of 'F'
/// with type 'THEIRS'"; Clang: "conflicting types for 'F'" and "previous declaration is here").
pub fn conflicts(diagnostics: &str) -> Vec<String> {
    let quoted = |line: &str, after: &str| -> Option<String> {
        let rest = &line[line.find(after)? + after.len()..];
        let rest = rest.trim_start_matches(['\'', '‘']);
        let end = rest.find(['\'', '’']).unwrap_or(rest.len());
        Some(rest[..end].to_string())
    };
    let lines: Vec<&str> = diagnostics.lines().collect();
    let mut out = vec![];
    for (i, l) in lines.iter().enumerate() {
        if !l.contains("conflicting types for") {
            continue;
        }
        let Some(name) = quoted(l, "conflicting types for ") else { continue };
        let ours = quoted(l, "; have ").unwrap_or_else(|| "(see the compiler's message)".into());
        let theirs = lines[i + 1..]
            .iter()
            .find(|n| n.contains("previous declaration"))
            .and_then(|n| quoted(n, "with type "))
            .unwrap_or_else(|| "(see the compiler's message)".into());
        out.push(format!("{name}: coll-bench binds {ours}, nccl.h declares {theirs}"));
    }
    out
}

/// The mismatches between the probe's output and our values: "EXPR: coll-bench A, nccl.h B",
/// and the items the probe did not print.
pub fn compare(probe_output: &str) -> Vec<String> {
    let printed: Vec<(&str, &str)> = probe_output.lines().filter_map(|l| l.split_once('=')).collect();
    let code = self::printed(probe_output, "NCCL_VERSION_CODE").and_then(|c| c.parse::<i32>().ok());
    let Some(code) = code else {
        return vec!["NCCL_VERSION_CODE: not printed by the probe".to_string()];
    };
    expected(ffi::decode_version(code))
        .into_iter()
        .filter_map(|(expr, ours)| match printed.iter().find(|(e, _)| *e == expr) {
            Some((_, v)) if v.trim().parse::<i64>() == Ok(ours) => None,
            Some((_, v)) => Some(format!("{expr}: coll-bench {ours}, nccl.h {}", v.trim())),
            None => Some(format!("{expr}: coll-bench {ours}, nccl.h (not printed by the probe)")),
        })
        .collect()
}

/// A probe output line's value (`NCCL_VERSION_CODE`, `version`).
pub fn printed<'a>(probe_output: &'a str, key: &str) -> Option<&'a str> {
    probe_output.lines().filter_map(|l| l.split_once('=')).find(|(k, _)| *k == key).map(|(_, v)| v.trim())
}

/// `c_int` is what the C enums are passed as.
const _: () = assert!(std::mem::size_of::<c_int>() == 4);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_types_are_spelled_in_c() {
        assert_eq!(c_type("*mut NcclComm").unwrap(), "ncclComm_t *");
        assert_eq!(c_type("* const c_void").unwrap(), "const void *");
        assert_eq!(c_type("*mut *const c_char").unwrap(), "const char * *");
        assert!(c_type("f32").unwrap_err().contains("f32"));
        assert_eq!(
            c_declaration(
                "ncclSend",
                "NcclResult",
                &["*const c_void", "usize", "NcclDataType", "c_int", "NcclComm", "CudaStream"]
            )
            .unwrap(),
            "ncclResult_t ncclSend(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);"
        );
        assert_eq!(c_declaration("ncclGroupStart", "NcclResult", &[]).unwrap(), "ncclResult_t ncclGroupStart(void);");
        // Every binding has a C spelling.
        let decls = declarations().unwrap();
        assert!(decls.iter().any(|(n, d)| n == "ncclCommInitRank"
            && d == "ncclResult_t ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int);"));
    }

    #[test]
    fn compiler_conflicts_name_the_function_and_both_lists() {
        let gcc = "p.c:4:14: error: conflicting types for ‘ncclSend’; have ‘ncclResult_t(const void *, size_t,  int,  int)’ {aka …}\n    4 | x\nnccl.h:739:15: note: previous declaration of ‘ncclSend’ with type ‘ncclResult_t(const void *, size_t,  ncclDataType_t,  int)’ {aka …}\n";
        assert_eq!(
            conflicts(gcc),
            vec!["ncclSend: coll-bench binds ncclResult_t(const void *, size_t,  int,  int), nccl.h declares ncclResult_t(const void *, size_t,  ncclDataType_t,  int)"]
        );
        assert!(conflicts("p.c:1: error: something else").is_empty());
    }

    #[test]
    fn values_are_compared_one_by_one() {
        let header = (2, 26, 2);
        let mut out: String = expected(header).iter().map(|(e, v)| format!("{e}={v}\n")).collect();
        out.push_str("NCCL_VERSION_CODE=22602\n");
        assert!(compare(&out).is_empty(), "{:?}", compare(&out));
        // 2.26's header has trafficClass (where 2.18-2.25 had padding) and no 2.27 field.
        assert!(out.contains("offsetof(ncclConfig_t, trafficClass)=44\n"), "{out}");
        assert!(out.contains("sizeof(ncclConfig_t)=48\n") && !out.contains("commName"), "{out}");
        out = out.replace("ncclInProgress=7", "ncclInProgress=9");
        out = out.replace("ncclAvg=4\n", "");
        assert_eq!(
            compare(&out),
            vec!["ncclInProgress: coll-bench 7, nccl.h 9", "ncclAvg: coll-bench 4, nccl.h (not printed by the probe)"]
        );
        assert_eq!(printed("version=2.32.3\nx=1\n", "version"), Some("2.32.3"));
        assert_eq!(compare("x=1\n"), vec!["NCCL_VERSION_CODE: not printed by the probe"]);
    }

    #[test]
    fn the_config_has_no_padding_and_each_version_its_own_size() {
        // Every byte is a field (so none is left undefined for a library to read).
        let fields = config_fields();
        let ptr = std::mem::size_of::<*const u8>();
        let sum: usize = fields
            .iter()
            .map(|(f, _, _)| match *f {
                "size" => 8,
                "netName" | "commName" => ptr,
                _ => 4,
            })
            .sum::<usize>()
            + 4; // the tail word
        assert_eq!(sum, std::mem::size_of::<Config>());
        assert_eq!(std::mem::size_of::<Config>(), 120);
        let size = |v| ffi::config_size(v);
        assert_eq!(
            [
                (2, 14, 3),
                (2, 17, 1),
                (2, 18, 3),
                (2, 25, 1),
                (2, 26, 2),
                (2, 27, 3),
                (2, 28, 3),
                (2, 29, 2),
                (2, 30, 7),
                (2, 32, 3)
            ]
            .map(size),
            [24, 40, 48, 48, 48, 72, 80, 88, 96, 120]
        );
        // A library newer than our newest layout gets that layout and its version.
        let c = ffi::Config::non_blocking((2, 40, 1));
        assert_eq!((c.size, c.version), (120, 23203));
        let c = ffi::Config::non_blocking((2, 26, 5));
        assert_eq!((c.size, c.version, c.traffic_class, c.blocking), (48, 22605, ffi::CONFIG_UNDEF_INT, 0));
    }
}
