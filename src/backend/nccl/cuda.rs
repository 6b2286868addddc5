//! The few CUDA driver calls the backend needs, bound at run time from libcuda with `libloading`
//! (no CUDA toolkit at build time, and a missing driver is an error message, not a panic), and
//! thin owning wrappers: the primary context, a stream, events with timing, device memory.
//! Signatures follow `cuda.h`; the `_v2` names are the ones `cuda.h` maps the plain names to.

use super::search::{self, Candidate};
use libloading::Library;
use std::ffi::{CStr, OsString};
use std::os::raw::{c_char, c_int, c_uchar, c_uint, c_void};

pub type CuResult = c_int;
pub type CuDevice = c_int;
pub type CuDevicePtr = u64;
pub type CuContext = *mut c_void;
pub type CuStream = *mut c_void;
pub type CuEvent = *mut c_void;
pub type CuGraph = *mut c_void;
pub type CuGraphExec = *mut c_void;
/// `CUuuid` (cuda.h): 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct CuUuid {
    pub bytes: [c_uchar; 16],
}

pub const CUDA_SUCCESS: CuResult = 0;
pub const CUDA_ERROR_NO_DEVICE: CuResult = 100;
pub const CUDA_ERROR_NOT_READY: CuResult = 600;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR` and `_MINOR` (cuda.h).
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
/// `CU_STREAM_NON_BLOCKING`: no implicit synchronisation with the legacy default stream.
const CU_STREAM_NON_BLOCKING: c_uint = 1;
/// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL` (cuda.h `CUstreamCaptureMode`): as nccl-tests captures
/// (`cudaStreamCaptureModeThreadLocal`), so NCCL may still allocate from other threads.
const CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: c_int = 1;
/// `CU_EVENT_DEFAULT`: timing enabled (`CU_EVENT_DISABLE_TIMING` would be 2).
const CU_EVENT_DEFAULT: c_uint = 0;

api! {
    /// libcuda's entry points, as loaded.
    pub struct DriverApi {
        init: "cuInit" => fn(c_uint) -> CuResult,
        driver_get_version: "cuDriverGetVersion" => fn(*mut c_int) -> CuResult,
        device_get_count: "cuDeviceGetCount" => fn(*mut c_int) -> CuResult,
        device_get: "cuDeviceGet" => fn(*mut CuDevice, c_int) -> CuResult,
        device_get_name: "cuDeviceGetName" => fn(*mut c_char, c_int, CuDevice) -> CuResult,
        device_get_pci_bus_id: "cuDeviceGetPCIBusId" => fn(*mut c_char, c_int, CuDevice) -> CuResult,
        device_get_uuid: "cuDeviceGetUuid" => fn(*mut CuUuid, CuDevice) -> CuResult,
        device_total_mem: "cuDeviceTotalMem_v2" => fn(*mut usize, CuDevice) -> CuResult,
        device_get_attribute: "cuDeviceGetAttribute" => fn(*mut c_int, c_int, CuDevice) -> CuResult,
        primary_ctx_retain: "cuDevicePrimaryCtxRetain" => fn(*mut CuContext, CuDevice) -> CuResult,
        primary_ctx_release: "cuDevicePrimaryCtxRelease_v2" => fn(CuDevice) -> CuResult,
        ctx_set_current: "cuCtxSetCurrent" => fn(CuContext) -> CuResult,
        stream_create: "cuStreamCreate" => fn(*mut CuStream, c_uint) -> CuResult,
        stream_destroy: "cuStreamDestroy_v2" => fn(CuStream) -> CuResult,
        stream_synchronize: "cuStreamSynchronize" => fn(CuStream) -> CuResult,
        mem_get_info: "cuMemGetInfo_v2" => fn(*mut usize, *mut usize) -> CuResult,
        mem_alloc: "cuMemAlloc_v2" => fn(*mut CuDevicePtr, usize) -> CuResult,
        mem_free: "cuMemFree_v2" => fn(CuDevicePtr) -> CuResult,
        memcpy_htod_async: "cuMemcpyHtoDAsync_v2" => fn(CuDevicePtr, *const c_void, usize, CuStream) -> CuResult,
        memcpy_dtoh_async: "cuMemcpyDtoHAsync_v2" => fn(*mut c_void, CuDevicePtr, usize, CuStream) -> CuResult,
        memset_d8_async: "cuMemsetD8Async" => fn(CuDevicePtr, c_uchar, usize, CuStream) -> CuResult,
        event_create: "cuEventCreate" => fn(*mut CuEvent, c_uint) -> CuResult,
        event_destroy: "cuEventDestroy_v2" => fn(CuEvent) -> CuResult,
        event_record: "cuEventRecord" => fn(CuEvent, CuStream) -> CuResult,
        event_query: "cuEventQuery" => fn(CuEvent) -> CuResult,
        event_elapsed_time: "cuEventElapsedTime" => fn(*mut f32, CuEvent, CuEvent) -> CuResult,
        get_error_name: "cuGetErrorName" => fn(CuResult, *mut *const c_char) -> CuResult,
        get_error_string: "cuGetErrorString" => fn(CuResult, *mut *const c_char) -> CuResult,
    }
}

optional_api! {
    /// libcuda's entry points of newer drivers, used where the driver has them.
    pub struct DriverOptional {
        /// CUDA 11.4: a MIG instance's own UUID, where `cuDeviceGetUuid` gives its GPU's (so
        /// instances of one GPU would look alike). What NCCL asks for (through
        /// `cuGetProcAddress`) to tell GPUs apart.
        device_get_uuid_v2: "cuDeviceGetUuid_v2" => fn(*mut CuUuid, CuDevice) -> CuResult,
        /// CUDA graphs (`-G`): capture (cuda.h maps `cuStreamBeginCapture` to `_v2` from
        /// CUDA 10.1), instantiate (`cuGraphInstantiateWithFlags`, CUDA 11.4), launch, destroy.
        stream_begin_capture: "cuStreamBeginCapture_v2" => fn(CuStream, c_int) -> CuResult,
        stream_end_capture: "cuStreamEndCapture" => fn(CuStream, *mut CuGraph) -> CuResult,
        graph_instantiate: "cuGraphInstantiateWithFlags" => fn(*mut CuGraphExec, CuGraph, u64) -> CuResult,
        graph_launch: "cuGraphLaunch" => fn(CuGraphExec, CuStream) -> CuResult,
        graph_exec_destroy: "cuGraphExecDestroy" => fn(CuGraphExec) -> CuResult,
        graph_destroy: "cuGraphDestroy" => fn(CuGraph) -> CuResult,
    }
}

/// The loaded driver. Leaked on purpose (`&'static`): libcuda is never unloaded while NCCL's
/// threads may still reference it.
pub struct Driver {
    api: DriverApi,
    optional: DriverOptional,
    /// The file that was loaded, for the header.
    pub location: String,
}

/// Open libcuda (override variable, else `libcuda.so.1`, `libcuda.so`) and bind its entry points.
/// Calls nothing in it yet.
pub fn load(env: &dyn Fn(&str) -> Option<OsString>) -> Result<&'static Driver, String> {
    let value = env(search::CUDA_VAR);
    let cands = search::candidates(search::CUDA_VAR, value.as_deref(), search::CUDA_NAMES, &[]);
    // SAFETY: loading the CUDA driver runs its initialisers, which have no preconditions of ours;
    // nothing is called in it until its symbols are checked (`DriverApi::load`).
    let opened = search::open_first(&cands, |c| unsafe { Library::new(c.target()) }.map_err(|e| e.to_string()));
    let (lib, which) = match opened {
        Ok(x) => x,
        Err(tried) => {
            return Err(match &tried[0].0 {
                Candidate::Override { var, path } => {
                    format!("no CUDA driver: {}", search::override_failed(var, path, &tried[0].1, "libcuda.so.1"))
                }
                _ => search::cuda_not_found(&tried),
            })
        }
    };
    let lib: &'static Library = Box::leak(Box::new(lib));
    // SAFETY: the signatures above are those of cuda.h.
    let api = unsafe { DriverApi::load(lib) }.map_err(|missing| {
        format!(
            "the CUDA driver at {} is too old or not a CUDA driver (missing {missing}); coll-bench needs a driver for CUDA 11 or newer",
            which.target().to_string_lossy()
        )
    })?;
    // SAFETY: as above.
    let optional = unsafe { DriverOptional::load(lib) };
    let location =
        super::ffi::library_path(api.init as usize).unwrap_or_else(|| which.target().to_string_lossy().into_owned());
    Ok(Box::leak(Box::new(Driver { api, optional, location })))
}

impl Driver {
    /// `cuInit`, with "no GPU" told apart from other failures.
    pub fn init(&self, host: &str) -> Result<(), String> {
        // SAFETY: plain call into the driver.
        let r = unsafe { (self.api.init)(0) };
        match r {
            CUDA_SUCCESS => Ok(()),
            CUDA_ERROR_NO_DEVICE => Err(format!(
                "no GPU on {host}: the CUDA driver ({}) found no device (cuInit: {})",
                self.location,
                self.error_text(r)
            )),
            _ => Err(format!("the CUDA driver on {host} did not start: cuInit: {}", self.error_text(r))),
        }
    }

    /// "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected".
    pub fn error_text(&self, r: CuResult) -> String {
        let mut name: *const c_char = std::ptr::null();
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: the driver returns pointers to static strings, or an error for unknown codes.
        unsafe {
            let ok_name = (self.api.get_error_name)(r, &mut name) == CUDA_SUCCESS && !name.is_null();
            let ok_text = (self.api.get_error_string)(r, &mut text) == CUDA_SUCCESS && !text.is_null();
            match (ok_name, ok_text) {
                (true, true) => format!(
                    "{} ({r}): {}",
                    CStr::from_ptr(name).to_string_lossy(),
                    search::one_line(&CStr::from_ptr(text).to_string_lossy())
                ),
                (true, false) => format!("{} ({r})", CStr::from_ptr(name).to_string_lossy()),
                _ => format!("CUDA error {r}"),
            }
        }
    }

    /// `Err("WHAT: CUDA_ERROR_… (n): text")` unless `r` is success.
    pub fn check(&self, r: CuResult, what: &str) -> Result<(), String> {
        if r == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(format!("{what}: {}", self.error_text(r)))
        }
    }

    pub fn version(&self) -> Result<(u32, u32), String> {
        let mut v: c_int = 0;
        // SAFETY: out-pointer to a local.
        self.check(unsafe { (self.api.driver_get_version)(&mut v) }, "cuDriverGetVersion")?;
        Ok(((v / 1000) as u32, ((v % 1000) / 10) as u32))
    }

    pub fn device_count(&self) -> Result<usize, String> {
        let mut n: c_int = 0;
        // SAFETY: out-pointer to a local.
        self.check(unsafe { (self.api.device_get_count)(&mut n) }, "cuDeviceGetCount")?;
        Ok(n.max(0) as usize)
    }

    pub fn device(&self, ordinal: usize) -> Result<CuDevice, String> {
        let mut d: CuDevice = 0;
        // SAFETY: out-pointer to a local.
        self.check(unsafe { (self.api.device_get)(&mut d, ordinal as c_int) }, "cuDeviceGet")?;
        Ok(d)
    }

    fn string(
        &self,
        what: &str,
        f: unsafe extern "C" fn(*mut c_char, c_int, CuDevice) -> CuResult,
        d: CuDevice,
    ) -> Result<String, String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the driver writes at most len bytes, NUL-terminated.
        self.check(unsafe { f(buf.as_mut_ptr(), buf.len() as c_int - 1, d) }, what)?;
        // SAFETY: NUL-terminated within the buffer (its last byte was never written).
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().trim().to_string())
    }

    pub fn device_name(&self, d: CuDevice) -> Result<String, String> {
        self.string("cuDeviceGetName", self.api.device_get_name, d)
    }

    pub fn pci_bus_id(&self, d: CuDevice) -> Result<String, String> {
        self.string("cuDeviceGetPCIBusId", self.api.device_get_pci_bus_id, d)
    }

    /// The device's UUID: a MIG instance's own where the driver can tell (`cuDeviceGetUuid_v2`).
    pub fn uuid(&self, d: CuDevice) -> Result<[u8; 16], String> {
        let mut u = CuUuid::default();
        let get = self.optional.device_get_uuid_v2.unwrap_or(self.api.device_get_uuid);
        // SAFETY: out-pointer to a local `CUuuid`; `d` came from cuDeviceGet.
        self.check(unsafe { get(&mut u, d) }, "cuDeviceGetUuid")?;
        Ok(u.bytes)
    }

    /// The device's memory in bytes (needs no context).
    pub fn total_mem(&self, d: CuDevice) -> Result<usize, String> {
        let mut bytes = 0usize;
        // SAFETY: out-pointer to a local.
        self.check(unsafe { (self.api.device_total_mem)(&mut bytes, d) }, "cuDeviceTotalMem")?;
        Ok(bytes)
    }

    /// The device's compute capability (major, minor), e.g. (9, 0) for a Hopper.
    pub fn compute_capability(&self, d: CuDevice) -> Result<(u32, u32), String> {
        let (mut major, mut minor): (c_int, c_int) = (0, 0);
        let get = self.api.device_get_attribute;
        // SAFETY: out-pointer to a local; `d` came from cuDeviceGet.
        let r = unsafe { get(&mut major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) };
        self.check(r, "cuDeviceGetAttribute")?;
        // SAFETY: as above.
        let r = unsafe { get(&mut minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) };
        self.check(r, "cuDeviceGetAttribute")?;
        Ok((major.max(0) as u32, minor.max(0) as u32))
    }

    /// Free and total bytes of the current context's device.
    pub fn mem_info(&self) -> Result<(usize, usize), String> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: out-pointers to locals.
        self.check(unsafe { (self.api.mem_get_info)(&mut free, &mut total) }, "cuMemGetInfo")?;
        Ok((free, total))
    }
}

/// The device's primary context, retained and made current on this thread (the context the CUDA
/// runtime inside NCCL then uses). Released on drop.
pub struct Context {
    drv: &'static Driver,
    dev: CuDevice,
}

impl Context {
    pub fn retain(drv: &'static Driver, dev: CuDevice) -> Result<Context, String> {
        let mut ctx: CuContext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; `dev` came from cuDeviceGet.
        drv.check(unsafe { (drv.api.primary_ctx_retain)(&mut ctx, dev) }, "cuDevicePrimaryCtxRetain")?;
        let c = Context { drv, dev };
        // SAFETY: a context the driver just gave us.
        drv.check(unsafe { (drv.api.ctx_set_current)(ctx) }, "cuCtxSetCurrent")?;
        Ok(c)
    }

    /// The same device's primary context retained once more (a group backend made beside its
    /// parent's, each releasing its own retain).
    pub fn again(&self) -> Result<Context, String> {
        Context::retain(self.drv, self.dev)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: balances the retain.
        unsafe { (self.drv.api.primary_ctx_release)(self.dev) };
    }
}

/// A non-blocking stream: every operation of the backend is ordered on it.
pub struct Stream {
    drv: &'static Driver,
    pub raw: CuStream,
}

impl Stream {
    pub fn new(drv: &'static Driver) -> Result<Stream, String> {
        let mut raw: CuStream = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; a context is current.
        drv.check(unsafe { (drv.api.stream_create)(&mut raw, CU_STREAM_NON_BLOCKING) }, "cuStreamCreate")?;
        Ok(Stream { drv, raw })
    }

    pub fn memset(&self, dst: CuDevicePtr, byte: u8, len: usize) -> Result<(), String> {
        // SAFETY: `dst` points to at least `len` bytes of device memory (the caller's buffer).
        self.drv.check(unsafe { (self.drv.api.memset_d8_async)(dst, byte, len, self.raw) }, "cuMemsetD8Async")
    }

    /// Host → device, ordered on the stream; the host memory must stay until the stream is waited.
    pub fn copy_to_device(&self, dst: CuDevicePtr, src: &[u8]) -> Result<(), String> {
        // SAFETY: `dst` holds `src.len()` bytes (the caller's buffer).
        self.drv.check(
            unsafe { (self.drv.api.memcpy_htod_async)(dst, src.as_ptr() as *const c_void, src.len(), self.raw) },
            "cuMemcpyHtoDAsync",
        )
    }

    /// Device → host, ordered on the stream; read `dst` only after waiting for the stream.
    pub fn copy_to_host(&self, dst: &mut [u8], src: CuDevicePtr) -> Result<(), String> {
        // SAFETY: `src` holds `dst.len()` bytes (the caller's buffer).
        self.drv.check(
            unsafe { (self.drv.api.memcpy_dtoh_async)(dst.as_mut_ptr() as *mut c_void, src, dst.len(), self.raw) },
            "cuMemcpyDtoHAsync",
        )
    }

    /// Block until everything queued has run (used only outside the timed path, and on drop).
    pub fn synchronize(&self) -> Result<(), String> {
        // SAFETY: our stream.
        self.drv.check(unsafe { (self.drv.api.stream_synchronize)(self.raw) }, "cuStreamSynchronize")
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: our stream; destroying it lets queued work finish first.
        unsafe { (self.drv.api.stream_destroy)(self.raw) };
    }
}

/// The graph entry points, where the driver has every one of them (CUDA 11.4 and newer).
#[derive(Clone, Copy)]
struct GraphApi {
    begin: unsafe extern "C" fn(CuStream, c_int) -> CuResult,
    end: unsafe extern "C" fn(CuStream, *mut CuGraph) -> CuResult,
    instantiate: unsafe extern "C" fn(*mut CuGraphExec, CuGraph, u64) -> CuResult,
    launch: unsafe extern "C" fn(CuGraphExec, CuStream) -> CuResult,
    exec_destroy: unsafe extern "C" fn(CuGraphExec) -> CuResult,
    destroy: unsafe extern "C" fn(CuGraph) -> CuResult,
}

impl Driver {
    fn graph_api(&self) -> Option<GraphApi> {
        let o = &self.optional;
        Some(GraphApi {
            begin: o.stream_begin_capture?,
            end: o.stream_end_capture?,
            instantiate: o.graph_instantiate?,
            launch: o.graph_launch?,
            exec_destroy: o.graph_exec_destroy?,
            destroy: o.graph_destroy?,
        })
    }

    /// `Err` naming what is missing where this driver cannot capture and launch graphs.
    pub fn can_graph(&self) -> Result<(), String> {
        match self.graph_api() {
            Some(_) => Ok(()),
            None => Err(format!(
                "the CUDA driver at {} has no graph capture (cuStreamBeginCapture_v2, cuGraphInstantiateWithFlags, cuGraphLaunch: CUDA 11.4 or newer)",
                self.location
            )),
        }
    }
}

/// A CUDA graph captured from a stream and instantiated: the calls `capture`'s closure queued,
/// replayed by each `launch`. Both the graph and its executable are destroyed on drop.
pub struct Graph {
    api: GraphApi,
    drv: &'static Driver,
    graph: CuGraph,
    exec: CuGraphExec,
}

impl Graph {
    /// Capture what `queue` puts on `s` (thread-local mode, as nccl-tests), then instantiate it.
    /// The capture is ended even where `queue` fails, so the stream is usable again.
    pub fn capture(s: &Stream, queue: &mut dyn FnMut() -> Result<(), String>) -> Result<Graph, String> {
        let drv = s.drv;
        let api = drv.graph_api().ok_or_else(|| drv.can_graph().unwrap_err())?;
        // SAFETY: our stream.
        drv.check(unsafe { (api.begin)(s.raw, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) }, "cuStreamBeginCapture")?;
        let queued = queue();
        let mut graph: CuGraph = std::ptr::null_mut();
        // SAFETY: our stream, capturing; out-pointer to a local.
        let ended = drv.check(unsafe { (api.end)(s.raw, &mut graph) }, "cuStreamEndCapture");
        let mut g = Graph { api, drv, graph, exec: std::ptr::null_mut() };
        queued?;
        ended?;
        // SAFETY: out-pointer to a local; the graph just captured.
        drv.check(unsafe { (api.instantiate)(&mut g.exec, g.graph, 0) }, "cuGraphInstantiateWithFlags")?;
        Ok(g)
    }

    /// Queue one replay of the graph on `s`.
    pub fn launch(&self, s: &Stream) -> Result<(), String> {
        // SAFETY: our instantiated graph and stream.
        self.drv.check(unsafe { (self.api.launch)(self.exec, s.raw) }, "cuGraphLaunch")
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: ours; the driver lets queued launches finish.
        unsafe {
            if !self.exec.is_null() {
                (self.api.exec_destroy)(self.exec);
            }
            if !self.graph.is_null() {
                (self.api.destroy)(self.graph);
            }
        }
    }
}

/// An event with timing enabled.
pub struct Event {
    drv: &'static Driver,
    raw: CuEvent,
}

impl Event {
    pub fn new(drv: &'static Driver) -> Result<Event, String> {
        let mut raw: CuEvent = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; a context is current.
        drv.check(unsafe { (drv.api.event_create)(&mut raw, CU_EVENT_DEFAULT) }, "cuEventCreate")?;
        Ok(Event { drv, raw })
    }

    pub fn record(&self, s: &Stream) -> Result<(), String> {
        // SAFETY: our event and stream.
        self.drv.check(unsafe { (self.drv.api.event_record)(self.raw, s.raw) }, "cuEventRecord")
    }

    /// Has the work before the record finished? (`Err` for a failure of that work.)
    pub fn done(&self) -> Result<bool, String> {
        // SAFETY: our event.
        match unsafe { (self.drv.api.event_query)(self.raw) } {
            CUDA_SUCCESS => Ok(true),
            CUDA_ERROR_NOT_READY => Ok(false),
            r => Err(format!("cuEventQuery: {}", self.drv.error_text(r))),
        }
    }

    /// Seconds from `start` to `self`, both recorded and done.
    pub fn seconds_since(&self, start: &Event) -> Result<f64, String> {
        let mut ms = 0f32;
        self.drv.check(
            // SAFETY: out-pointer to a local; both events are ours and complete.
            unsafe { (self.drv.api.event_elapsed_time)(&mut ms, start.raw, self.raw) },
            "cuEventElapsedTime",
        )?;
        Ok(ms as f64 * 1e-3)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: our event.
        unsafe { (self.drv.api.event_destroy)(self.raw) };
    }
}

/// Device memory, freed on drop. Zero bytes: no allocation, a null pointer.
pub struct DeviceBuffer {
    drv: &'static Driver,
    pub ptr: CuDevicePtr,
    pub len: usize,
    /// How it is freed where not by `cuMemFree`: memory from another allocator (NCCL's
    /// `ncclMemAlloc`), with that allocator's free.
    free: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
}

impl DeviceBuffer {
    pub fn empty(drv: &'static Driver) -> DeviceBuffer {
        DeviceBuffer { drv, ptr: 0, len: 0, free: None }
    }

    pub fn new(drv: &'static Driver, len: usize) -> Result<DeviceBuffer, String> {
        if len == 0 {
            return Ok(DeviceBuffer::empty(drv));
        }
        let mut ptr: CuDevicePtr = 0;
        // SAFETY: out-pointer to a local; a context is current.
        drv.check(unsafe { (drv.api.mem_alloc)(&mut ptr, len) }, "cuMemAlloc")?;
        Ok(DeviceBuffer { drv, ptr, len, free: None })
    }

    /// Device memory another allocator gave (`ptr`, `len` bytes), freed by its `free`, which does
    /// not wait for the device as `cuMemFree` does: the owner waits for the work using it first.
    pub fn adopt(
        drv: &'static Driver,
        ptr: CuDevicePtr,
        len: usize,
        free: unsafe extern "C" fn(*mut c_void) -> c_int,
    ) -> DeviceBuffer {
        DeviceBuffer { drv, ptr, len, free: Some(free) }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        match self.free {
            // SAFETY: allocated by the allocator whose free this is; its owner waited for its work.
            Some(free) => unsafe {
                free(self.ptr as *mut c_void);
            },
            // SAFETY: allocated by cuMemAlloc; cuMemFree waits for work using it.
            None => unsafe {
                (self.drv.api.mem_free)(self.ptr);
            },
        }
    }
}
