//! A GPU's NVLinks as the driver states them, through NVML (`libnvidia-ml.so.1`, part of every
//! NVIDIA driver; `COLL_BENCH_NVML_LIBRARY` names another file): how many links are active
//! (`nvmlDeviceGetNvLinkState`) and their common speed (`nvmlDeviceGetFieldValues`,
//! `NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON`), for the header. A nominal rate, never the ceiling.
//! Loaded only to ask this, and only by the nccl backend; where NVML cannot be loaded or does not
//! know the device, the header says so and nothing else changes.

use super::search::{self, Candidate};
use libloading::Library;
use std::ffi::{CString, OsString};
use std::os::raw::{c_char, c_int, c_uint, c_void};

pub const NVML_VAR: &str = "COLL_BENCH_NVML_LIBRARY";
pub const NVML_NAMES: &[&str] = &["libnvidia-ml.so.1", "libnvidia-ml.so"];

/// nvml.h's types, by name (the ABI probe, [`probe_source`], spells each as the header does).
pub type NvmlReturn = c_int;
pub type NvmlDevice = *mut c_void;
pub type NvmlEnableState = c_int;

/// `nvmlReturn_t` values we tell apart (nvml.h).
pub const NVML_SUCCESS: c_int = 0;
pub const NVML_ERROR_INVALID_ARGUMENT: c_int = 2;
pub const NVML_ERROR_NOT_SUPPORTED: c_int = 3;
/// `NVML_NVLINK_MAX_LINKS`: the most links a device has (nvml.h, CUDA 12.9: 18).
pub const NVLINK_MAX_LINKS: c_uint = 18;
/// `NVML_FEATURE_ENABLED`.
pub const FEATURE_ENABLED: c_int = 1;
/// `NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON`: the common speed of the active links, MB/s.
pub const FI_NVLINK_SPEED_MBPS_COMMON: c_uint = 90;

/// `nvmlFieldValue_t` (nvml.h): 40 bytes, the value a union of 8.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FieldValue {
    pub field_id: c_uint,
    pub scope_id: c_uint,
    pub timestamp: i64,
    pub latency_usec: i64,
    pub value_type: c_int,
    pub nvml_return: c_int,
    /// `nvmlValue_t`; the speed field is an `unsigned int` (`uiVal`), in its first 4 bytes.
    pub value: u64,
}

api! {
    /// NVML's entry points we call.
    pub struct NvmlApi {
        init: "nvmlInit_v2" => fn() -> NvmlReturn,
        shutdown: "nvmlShutdown" => fn() -> NvmlReturn,
        handle_by_bus_id: "nvmlDeviceGetHandleByPciBusId_v2" => fn(*const c_char, *mut NvmlDevice) -> NvmlReturn,
        nvlink_state: "nvmlDeviceGetNvLinkState" => fn(NvmlDevice, c_uint, *mut NvmlEnableState) -> NvmlReturn,
        field_values: "nvmlDeviceGetFieldValues" => fn(NvmlDevice, c_int, *mut FieldValue) -> NvmlReturn,
    }
}

/// A GPU's NVLinks: the active links and their common speed (MB/s each way, where NVML says).
#[derive(Clone, Debug, PartialEq)]
pub struct NvLinks {
    pub active: u32,
    pub mbps: Option<u32>,
}

impl NvLinks {
    /// `NVLink 18 links × 26.56 GB/s, 478.12 GB/s nominal`; `no NVLink` with none active.
    pub fn shown(&self) -> String {
        match (self.active, self.mbps) {
            (0, _) => "no NVLink active".to_string(),
            (n, Some(m)) => format!(
                "NVLink {n} links × {} GB/s, {} GB/s nominal",
                crate::record::shown_gbps(m as f64 / 1000.0),
                crate::record::shown_gbps(n as f64 * m as f64 / 1000.0)
            ),
            (n, None) => format!("NVLink {n} links active (speed not stated)"),
        }
    }
}

/// The NVLinks of the GPU at `bus_id`, or why NVML does not say (one short phrase).
pub fn nvlinks(env: &dyn Fn(&str) -> Option<OsString>, bus_id: &str) -> Result<NvLinks, String> {
    let value = env(NVML_VAR);
    let cands = search::candidates(NVML_VAR, value.as_deref(), NVML_NAMES, &[]);
    // SAFETY: loading NVML runs its initialisers, which have no preconditions of ours; nothing is
    // called in it until its symbols are checked (`NvmlApi::load`).
    let opened = search::open_first(&cands, |c| unsafe { Library::new(c.target()) }.map_err(|e| e.to_string()));
    let (lib, _) = opened.map_err(|tried| match &tried[0].0 {
        Candidate::Override { path, .. } => format!("NVML not loaded from {}", path.display()),
        _ => "NVML not loaded".to_string(),
    })?;
    // Kept loaded (as libcuda): the driver's libraries are never unloaded under its threads.
    let lib: &'static Library = Box::leak(Box::new(lib));
    // SAFETY: the signatures above are nvml.h's.
    let api = unsafe { NvmlApi::load(lib) }.map_err(|missing| format!("NVML lacks {missing}"))?;
    // SAFETY: plain calls into NVML, out-pointers to locals, the bus id a C string we own.
    unsafe {
        if (api.init)() != NVML_SUCCESS {
            return Err("NVML did not start".to_string());
        }
        let answer = query(&api, bus_id);
        (api.shutdown)();
        answer
    }
}

/// # Safety
/// NVML is initialised.
unsafe fn query(api: &NvmlApi, bus_id: &str) -> Result<NvLinks, String> {
    let id = CString::new(bus_id).map_err(|_| "a bus id with a NUL".to_string())?;
    let mut dev: *mut c_void = std::ptr::null_mut();
    // SAFETY: the caller's contract; out-pointers to locals.
    unsafe {
        if (api.handle_by_bus_id)(id.as_ptr(), &mut dev) != NVML_SUCCESS {
            return Err(format!("NVML does not know the GPU at {bus_id}"));
        }
        let mut active = 0;
        for link in 0..NVLINK_MAX_LINKS {
            let mut state: c_int = 0;
            match (api.nvlink_state)(dev, link, &mut state) {
                NVML_SUCCESS if state == FEATURE_ENABLED => active += 1,
                NVML_SUCCESS => {}
                // No NVLink on the device, or no link of that number: the count is complete.
                NVML_ERROR_NOT_SUPPORTED | NVML_ERROR_INVALID_ARGUMENT => break,
                r => return Err(format!("nvmlDeviceGetNvLinkState answered {r}")),
            }
        }
        let mut field = FieldValue { field_id: FI_NVLINK_SPEED_MBPS_COMMON, ..FieldValue::default() };
        let asked = (api.field_values)(dev, 1, &mut field);
        let mbps = (active > 0 && asked == NVML_SUCCESS && field.nvml_return == NVML_SUCCESS)
            .then_some(field.value as u32)
            .filter(|m| *m > 0);
        Ok(NvLinks { active, mbps })
    }
}

/// The C spelling of one of our NVML parameter types, as `stringify!` writes it.
fn c_type(rust: &str) -> Result<String, String> {
    super::abi::c_spelling(rust, &|t| {
        Some(match t {
            "c_int" => "int",
            "c_uint" => "unsigned int",
            "c_char" => "char",
            "NvmlReturn" => "nvmlReturn_t",
            "NvmlDevice" => "nvmlDevice_t",
            "NvmlEnableState" => "nvmlEnableState_t",
            "FieldValue" => "nvmlFieldValue_t",
            _ => return None,
        })
    })
}

/// What we rely on of nvml.h, as (C expression, our value): constants and the layout of
/// `nvmlFieldValue_t`.
pub fn constants() -> Vec<(&'static str, i64)> {
    vec![
        ("NVML_SUCCESS", NVML_SUCCESS as i64),
        ("NVML_ERROR_INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT as i64),
        ("NVML_ERROR_NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED as i64),
        ("NVML_NVLINK_MAX_LINKS", NVLINK_MAX_LINKS as i64),
        ("NVML_FEATURE_ENABLED", FEATURE_ENABLED as i64),
        ("NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON", FI_NVLINK_SPEED_MBPS_COMMON as i64),
        ("sizeof(nvmlFieldValue_t)", std::mem::size_of::<FieldValue>() as i64),
        ("offsetof(nvmlFieldValue_t, valueType)", std::mem::offset_of!(FieldValue, value_type) as i64),
        ("offsetof(nvmlFieldValue_t, nvmlReturn)", std::mem::offset_of!(FieldValue, nvml_return) as i64),
        ("offsetof(nvmlFieldValue_t, value)", std::mem::offset_of!(FieldValue, value) as i64),
        ("sizeof(nvmlEnableState_t)", std::mem::size_of::<NvmlEnableState>() as i64),
        ("sizeof(nvmlValue_t)", 8),
    ]
}

/// The ABI probe, as for NCCL ([`super::abi`]): nvml.h, our declaration of every function we
/// bind (the compiler rejects one that differs), and a `main` printing `EXPR=VALUE` for each
/// of [`constants`].
pub fn probe_source() -> Result<String, String> {
    let mut s = String::from("#include <stdio.h>\n#include <stddef.h>\n#include <nvml.h>\n\n");
    for (name, ret, args) in NvmlApi::SIGNATURES {
        let params: Vec<String> = args.iter().map(|a| c_type(a)).collect::<Result<_, _>>()?;
        let params = if params.is_empty() { "void".to_string() } else { params.join(", ") };
        s.push_str(&format!("{} {name}({params});\n", c_type(ret)?));
    }
    s.push_str("\nint main(void) {\n");
    for (expr, _) in constants() {
        s.push_str(&format!("    printf(\"{expr}=%lld\\n\", (long long)({expr}));\n"));
    }
    s.push_str("    return 0;\n}\n");
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_value_is_nvml_h_s_layout() {
        assert_eq!(std::mem::size_of::<FieldValue>(), 40);
        assert_eq!(std::mem::offset_of!(FieldValue, value_type), 24);
        assert_eq!(std::mem::offset_of!(FieldValue, value), 32);
    }

    #[test]
    fn links_are_shown_with_their_rate() {
        assert_eq!(
            NvLinks { active: 18, mbps: Some(26_562) }.shown(),
            "NVLink 18 links × 26.56 GB/s, 478.12 GB/s nominal"
        );
        assert_eq!(NvLinks { active: 0, mbps: None }.shown(), "no NVLink active");
        assert_eq!(NvLinks { active: 4, mbps: None }.shown(), "NVLink 4 links active (speed not stated)");
    }
}
