//! What one rank sees of its host, typed: each reader returns its fact as a value whose
//! `Display` is the text `info` prints and compares across ranks (`absent` where the host does
//! not have it), and whose serde form is its part of `info --json` (snake_case keys, numbers as
//! numbers, `null` where absent): [`Fact`] holds both, made from the one value. The readers take
//! the root of `/proc` and `/sys` and the environment as parameters, so they are unit-tested on
//! a fake tree.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;

pub const ABSENT: &str = "absent";

/// The variables reported (those in effect whose names start with one of these).
pub const ENV_PREFIXES: &[&str] = &["NCCL_", "UCX_", "OMPI_MCA_", "FI_"];

/// The fields every rank reports, in order (the environment's variables follow, as `env NAME`).
pub const FIELDS: &[&str] = &[
    "coll-bench",
    "MPI library",
    "launcher",
    "CPU model",
    "cores",
    "NUMA nodes",
    "memory",
    "locked-memory limit",
    "network interfaces",
    "InfiniBand",
    "NCCL",
    "CUDA driver",
    "GPUs",
];

/// One fact as `info` reports it: its field, its text, its JSON keys and values, all from one
/// typed value ([`Fact::new`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub field: String,
    pub text: String,
    pub json: serde_json::Map<String, Value>,
}

impl Fact {
    /// `value`'s text and, under `key`, its serde form; a value that serialises to an object
    /// (several keys, as `cores`) gives its own keys instead.
    pub fn new<T: fmt::Display + Serialize>(field: &str, key: &str, value: &T) -> Fact {
        let json = match serde_json::to_value(value).expect("a fact serialises") {
            Value::Object(m) => m,
            v => std::iter::once((key.to_string(), v)).collect(),
        };
        Fact { field: field.to_string(), text: value.to_string(), json }
    }
}

/// Text a host may not have: `absent` (with why, where there is a reason) in the text, `null`
/// in the JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Found {
    Is(String),
    /// Why, or empty.
    Absent(String),
}

impl Found {
    fn of(v: Option<String>) -> Found {
        v.map_or(Found::Absent(String::new()), Found::Is)
    }

    /// As `info --json` gives it.
    fn json(&self) -> Value {
        match self {
            Found::Is(s) => Value::from(s.as_str()),
            Found::Absent(_) => Value::Null,
        }
    }
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Is(s) => f.write_str(s),
            Found::Absent(why) if why.is_empty() => f.write_str(ABSENT),
            Found::Absent(why) => write!(f, "{ABSENT} ({why})"),
        }
    }
}

/// A [`Found`] as a fact of its own (its JSON the text or `null`).
struct Plain<'a>(&'a Found);

impl fmt::Display for Plain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Plain<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.json().serialize(s)
    }
}

/// A count or amount the host may not give: the number, or `absent` (`null`), with a unit in
/// the text.
struct Count(Option<u64>, &'static str);

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n}{}", self.1),
            None => f.write_str(ABSENT),
        }
    }
}

impl Serialize for Count {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// A list the host may not have: its items `; `-joined, or `absent`; in the JSON an array.
#[derive(Serialize)]
#[serde(transparent)]
pub struct List<T>(pub Vec<T>);

impl<T: fmt::Display> fmt::Display for List<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str(ABSENT);
        }
        for (i, x) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            x.fmt(f)?;
        }
        Ok(())
    }
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// `model name` from `/proc/cpuinfo` (x86), else `Model`/`CPU part` (Arm), else absent.
pub fn cpu_model(proc_root: &Path) -> Found {
    let Some(text) = read(&proc_root.join("cpuinfo")) else { return Found::of(None) };
    for key in ["model name", "Model", "cpu model", "CPU part"] {
        let found = text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        });
        if let Some(v) = found.filter(|v| !v.is_empty()) {
            return Found::Is(v);
        }
    }
    Found::of(None)
}

/// The ranges of a CPU list like `0-3,8,10-11` (the format of `/sys/devices/system/cpu/online`
/// and of `Cpus_allowed_list`), each as (first, last); `None` for anything else.
fn cpu_ranges(list: &str) -> Option<Vec<(usize, usize)>> {
    let mut out = vec![];
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        if b < a {
            return None;
        }
        out.push((a, b));
    }
    Some(out)
}

/// CPUs in a list like `0-3,8,10-11`.
pub fn count_cpu_list(list: &str) -> Option<usize> {
    cpu_ranges(list).map(|r| r.iter().map(|(a, b)| b - a + 1).sum())
}

/// The CPUs of a list like `0-3,8,10-11`, each one; `None` also for a range of more than 65 536
/// (no kernel has that many: a garbled list, not one to expand).
pub fn cpu_list(list: &str) -> Option<Vec<usize>> {
    let ranges = cpu_ranges(list)?;
    if ranges.iter().any(|(a, b)| b - a > 1 << 16) {
        return None;
    }
    Some(ranges.into_iter().flat_map(|(a, b)| a..=b).collect())
}

/// Online CPUs, and how many this process may run on (`cores_online`, `cores_usable`: the
/// online count where this rank may use every one).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cores {
    pub online: Option<usize>,
    pub usable: Option<usize>,
}

impl fmt::Display for Cores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.online, self.usable) {
            (Some(o), Some(u)) if o != u => write!(f, "{o} online, {u} usable by this rank"),
            (Some(o), _) => write!(f, "{o} online"),
            (None, Some(u)) => write!(f, "{u} usable by this rank"),
            (None, None) => f.write_str(ABSENT),
        }
    }
}

impl Serialize for Cores {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("cores_online", &self.online)?;
        m.serialize_entry("cores_usable", &self.usable.or(self.online))?;
        m.end()
    }
}

pub fn cores(sys_root: &Path) -> Cores {
    let online = read(&sys_root.join("devices/system/cpu/online")).and_then(|l| count_cpu_list(&l));
    let usable = std::thread::available_parallelism().map(|n| n.get()).ok();
    Cores { online, usable }
}

/// `nodeN` directories under `/sys/devices/system/node`.
pub fn numa_nodes(sys_root: &Path) -> Option<u64> {
    let Ok(rd) = std::fs::read_dir(sys_root.join("devices/system/node")) else { return None };
    let n = rd
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("node").is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .count();
    (n > 0).then_some(n as u64)
}

/// `MemTotal`, in whole GiB (so hosts that differ by a few reserved MiB read the same).
pub fn memory(proc_root: &Path) -> Option<u64> {
    let kib = read(&proc_root.join("meminfo")).and_then(|t| {
        t.lines().find_map(|l| l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
    });
    kib.map(|k| (k as f64 / (1024.0 * 1024.0)).round() as u64)
}

/// A resource limit: bytes, or `unlimited` (both in the text and the JSON).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    Bytes(u64),
    Unlimited,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Bytes(b) => f.write_str(&crate::size::amount(*b)),
            Limit::Unlimited => f.write_str("unlimited"),
        }
    }
}

impl Serialize for Limit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Limit::Bytes(b) => s.serialize_u64(*b),
            Limit::Unlimited => s.serialize_str("unlimited"),
        }
    }
}

/// `ulimit -l` as this rank has it: the soft limit and the hard one (`8M (hard unlimited)` where
/// they differ); absent where the call fails.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LockedMemory(pub Option<(Limit, Limit)>);

impl fmt::Display for LockedMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str(ABSENT),
            Some((soft, hard)) if soft == hard => soft.fmt(f),
            Some((soft, hard)) => write!(f, "{soft} (hard {hard})"),
        }
    }
}

impl Serialize for LockedMemory {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("locked_memory_bytes", &self.0.map(|l| l.0))?;
        m.serialize_entry("locked_memory_hard_bytes", &self.0.map(|l| l.1))?;
        m.end()
    }
}

pub fn locked_memory() -> LockedMemory {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: out-pointer to a local.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return LockedMemory(None);
    }
    let limit = |v: libc::rlim_t| if v == libc::RLIM_INFINITY { Limit::Unlimited } else { Limit::Bytes(v) };
    LockedMemory(Some((limit(r.rlim_cur), limit(r.rlim_max))))
}

/// A network interface: `NAME STATE SPEEDMb/s mtu N` in the text.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Interface {
    pub name: String,
    pub state: String,
    pub speed_mbit_per_s: Option<u64>,
    pub mtu: Option<u64>,
}

impl fmt::Display for Interface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.state)?;
        if let Some(s) = self.speed_mbit_per_s {
            write!(f, " {s}Mb/s")?;
        }
        if let Some(m) = self.mtu {
            write!(f, " mtu {m}")?;
        }
        Ok(())
    }
}

/// Each interface under `/sys/class/net` but loopback, sorted by name.
pub fn interfaces(sys_root: &Path) -> List<Interface> {
    let Ok(rd) = std::fs::read_dir(sys_root.join("class/net")) else { return List(vec![]) };
    let mut names: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.retain(|n| n != "lo");
    names.sort();
    List(
        names
            .into_iter()
            .map(|name| {
                let dir = sys_root.join("class/net").join(&name);
                Interface {
                    state: read(&dir.join("operstate")).unwrap_or_else(|| "unknown".into()),
                    // Reading `speed` fails (EINVAL) on interfaces that are down or have no link speed.
                    speed_mbit_per_s: read(&dir.join("speed")).and_then(|s| s.parse::<u64>().ok()).filter(|s| *s > 0),
                    mtu: read(&dir.join("mtu")).and_then(|m| m.parse().ok()),
                    name,
                }
            })
            .collect(),
    )
}

/// An InfiniBand port: `DEVICE/PORT STATE RATE` in the text (the rate as the kernel gives it,
/// `100 Gb/sec (4X EDR)`; its number in the JSON).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Port {
    pub device: String,
    pub port: Option<u64>,
    pub state: String,
    pub rate_gbit_per_s: Option<f64>,
    #[serde(skip)]
    pub port_name: String,
    #[serde(skip)]
    pub rate: String,
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{} {}", self.device, self.port_name, self.state)?;
        if !self.rate.is_empty() {
            write!(f, " {}", self.rate)?;
        }
        Ok(())
    }
}

/// Each port under `/sys/class/infiniband`, sorted.
pub fn infiniband(sys_root: &Path) -> List<Port> {
    let Ok(rd) = std::fs::read_dir(sys_root.join("class/infiniband")) else { return List(vec![]) };
    let mut devs: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    devs.sort();
    let mut items = vec![];
    for d in devs {
        let ports = sys_root.join("class/infiniband").join(&d).join("ports");
        let mut nums: Vec<String> = std::fs::read_dir(&ports)
            .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        nums.sort();
        for p in nums {
            let dir = ports.join(&p);
            // "4: ACTIVE" → "ACTIVE"; "100 Gb/sec (4X EDR)" as is.
            let state = read(&dir.join("state"))
                .map(|s| s.split_once(':').map(|(_, v)| v.trim().to_string()).unwrap_or(s))
                .unwrap_or_else(|| "unknown".into());
            let rate = read(&dir.join("rate")).unwrap_or_default();
            items.push(Port {
                device: d.clone(),
                port: p.parse().ok(),
                state,
                rate_gbit_per_s: rate.split(' ').next().and_then(|r| r.parse().ok()),
                port_name: p,
                rate,
            });
        }
    }
    List(items)
}

/// The `NCCL_*`, `UCX_*`, `OMPI_MCA_*` and `FI_*` variables set, sorted by name, less the
/// launcher's bookkeeping ([`launcher_internal`]).
pub fn variables(env: &HashMap<String, String>) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| ENV_PREFIXES.iter().any(|p| k.starts_with(p)) && !launcher_internal(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    v.sort();
    v
}

/// The launcher by its variables, with its view of the job (not this rank's number, which
/// differs on every rank by design), then the Slurm job and step it runs in, if any ([`slurm`]).
pub fn launcher(env: &HashMap<String, String>, world_size: usize) -> String {
    let mut s = launcher_alone(env);
    if let Some(job) = slurm(env, world_size) {
        s.push_str("; ");
        s.push_str(&job);
    }
    s
}

/// The Slurm job and step (`SLURM_JOB_ID`, `SLURM_STEP_ID`), and, where srun started the ranks
/// itself (no `mpirun` between: no `OMPI_COMM_WORLD_SIZE`), the step's task and node counts
/// cross-checked with MPI's world: `Slurm job 12 step 0: 4 tasks on 2 nodes, 2 on this node,
/// = MPI's world` or `… ≠ MPI's world of 1`. Inside an allocation, a `mpirun`'s ranks are
/// counted by mpirun, not by the step that started its daemons. None outside Slurm.
pub fn slurm(env: &HashMap<String, String>, world_size: usize) -> Option<String> {
    let job = env.get("SLURM_JOB_ID")?;
    let mut s = format!("Slurm job {job}");
    let Some(step) = env.get("SLURM_STEP_ID") else {
        s.push_str(" (its batch script, no step)");
        return Some(s);
    };
    s.push_str(&format!(" step {step}"));
    if env.contains_key("OMPI_COMM_WORLD_SIZE") {
        s.push_str(" (mpirun's daemons; mpirun started the ranks)");
        return Some(s);
    }
    let num = |k: &str| env.get(k).and_then(|v| v.trim().parse::<usize>().ok());
    if let Some(tasks) = num("SLURM_STEP_NUM_TASKS").or(num("SLURM_NTASKS")) {
        s.push_str(&format!(": {tasks} task{}", if tasks == 1 { "" } else { "s" }));
        if let Some(nodes) = num("SLURM_STEP_NUM_NODES").or(num("SLURM_NNODES")) {
            s.push_str(&format!(" on {nodes} node{}", if nodes == 1 { "" } else { "s" }));
        }
        if let (Some(node), Some(per_node)) = (num("SLURM_NODEID"), env.get("SLURM_STEP_TASKS_PER_NODE")) {
            if let Some(here) = tasks_on_node(per_node, node) {
                s.push_str(&format!(", {here} on this node"));
            }
        }
        if tasks == world_size {
            s.push_str(", = MPI's world");
        } else {
            s.push_str(&format!(", ≠ MPI's world of {world_size}"));
        }
    }
    Some(s)
}

/// Tasks on node `node` from Slurm's compressed per-node counts (`2(x3),1`: 2, 2, 2, 1).
pub fn tasks_on_node(per_node: &str, node: usize) -> Option<usize> {
    let mut i = 0;
    for part in per_node.split(',') {
        let (count, times) = match part.split_once("(x") {
            Some((c, t)) => (c.trim().parse::<usize>().ok()?, t.trim_end_matches(')').parse::<usize>().ok()?),
            None => (part.trim().parse::<usize>().ok()?, 1),
        };
        if node < i + times {
            return Some(count);
        }
        i += times;
    }
    None
}

fn launcher_alone(env: &HashMap<String, String>) -> String {
    match crate::launch::from_env(env) {
        Ok(Some(v)) => {
            let name = v.source.trim_end_matches(" environment");
            let mut s = name.to_string();
            if let Some(n) = v.size {
                s.push_str(&format!(", {n} rank{}", if n == 1 { "" } else { "s" }));
            }
            if let Some(l) = v.local_size {
                s.push_str(&format!(", {l} on this host"));
            }
            s
        }
        Ok(None) => "none (started without a launcher)".into(),
        Err(e) => format!("unreadable ({e})"),
    }
}

/// NCCL as the nccl backend would find it: `VERSION at PATH`, or absent.
#[cfg(feature = "nccl")]
pub fn nccl(env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Found {
    Found::of(crate::backend::nccl::ffi::load(env).ok().map(|n| format!("{} at {}", n.version_string(), n.location)))
}

#[cfg(not(feature = "nccl"))]
pub fn nccl(_env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Found {
    Found::Absent("built without the nccl feature".into())
}

/// The CUDA driver (`VERSION at PATH`) and its GPUs (`N: NAME (BUS ID, MEMORY)`; one item
/// `unreadable (WHY)` where they cannot be listed), or absent.
#[cfg(feature = "nccl")]
pub fn cuda(env: &dyn Fn(&str) -> Option<std::ffi::OsString>, host: &str) -> (Found, Vec<String>) {
    use crate::backend::nccl::cuda;
    let Ok(drv) = cuda::load(env) else { return (Found::of(None), vec![]) };
    let driver = match drv.version() {
        Ok((a, b)) => format!("{a}.{b} at {}", drv.location),
        Err(e) => format!("at {} ({e})", drv.location),
    };
    if drv.init(host).is_err() {
        return (Found::Is(driver), vec![]);
    }
    let gpus = (|| -> Result<Vec<String>, String> {
        let n = drv.device_count()?;
        let mut items = vec![];
        for i in 0..n {
            let d = drv.device(i)?;
            let mem = crate::size::human(drv.total_mem(d)? as u64);
            items.push(format!("{i}: {} ({}, {mem})", drv.device_name(d)?, drv.pci_bus_id(d)?));
        }
        Ok(items)
    })();
    (Found::Is(driver), gpus.unwrap_or_else(|e| vec![format!("unreadable ({e})")]))
}

#[cfg(not(feature = "nccl"))]
pub fn cuda(_env: &dyn Fn(&str) -> Option<std::ffi::OsString>, _host: &str) -> (Found, Vec<String>) {
    (Found::of(None), vec![])
}

/// The variables that steer where NCCL and libcuda are found (and which GPUs are seen): ranks of
/// one host with the same values find the same libraries, so one of them looks for all.
pub const LIBRARY_VARS: &[&str] = &[
    "COLL_BENCH_NCCL_LIBRARY",
    "COLL_BENCH_CUDA_LIBRARY",
    "LD_LIBRARY_PATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "HOME",
    "PATH",
    "CUDA_VISIBLE_DEVICES",
];

/// NCCL, the CUDA driver and the GPUs, as [`nccl`] and [`cuda`] find them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Libraries {
    pub nccl: Found,
    pub cuda_driver: Found,
    pub gpus: Vec<String>,
}

/// [`Libraries`] as this rank finds them: the slow part (the NCCL search runs python3 to list
/// its package directories, and loads the library).
pub fn libraries(env: &HashMap<String, String>, host: &str) -> Libraries {
    let getenv = |k: &str| env.get(k).map(std::ffi::OsString::from);
    let (cuda_driver, gpus) = cuda(&getenv, host);
    Libraries { nccl: nccl(&getenv), cuda_driver, gpus }
}

/// Launcher bookkeeping that Open MPI's mpirun puts in each rank's environment (its session,
/// this rank's number, the daemon's address): not settings, and different on every rank or host.
pub fn launcher_internal(name: &str) -> bool {
    ["OMPI_MCA_orte_", "OMPI_MCA_ess"].iter().any(|p| name.starts_with(p))
        || ["OMPI_MCA_pmix", "OMPI_MCA_initial_wdir", "OMPI_MCA_shmem_RUNTIME_QUERY_hint"].contains(&name)
}

/// Everything this rank sees, in [`FIELDS`] order (`libs`: from [`libraries`]), then `env NAME`
/// for each variable (text only: its JSON is the `env` object, by name).
pub fn collect(mpi_library: &str, env: &HashMap<String, String>, libs: &Libraries, world_size: usize) -> Vec<Fact> {
    let proc_root = Path::new("/proc");
    let sys_root = Path::new("/sys");
    let build = Found::Is(format!(
        "{}, built against {} ({})",
        env!("CARGO_PKG_VERSION"),
        env!("COLL_BENCH_MPI_FAMILY"),
        env!("COLL_BENCH_MPICC")
    ));
    let mpi = Found::Is(mpi_library.to_string());
    let launcher = Found::Is(launcher(env, world_size));
    let mut out = vec![
        Fact::new(FIELDS[0], "coll_bench", &Plain(&build)),
        Fact::new(FIELDS[1], "mpi_library", &Plain(&mpi)),
        Fact::new(FIELDS[2], "launcher", &Plain(&launcher)),
        Fact::new(FIELDS[3], "cpu_model", &Plain(&cpu_model(proc_root))),
        Fact::new(FIELDS[4], "cores", &cores(sys_root)),
        Fact::new(FIELDS[5], "numa_nodes", &Count(numa_nodes(sys_root), "")),
        Fact::new(FIELDS[6], "memory_gib", &Count(memory(proc_root), " GiB")),
        Fact::new(FIELDS[7], "locked_memory", &locked_memory()),
        Fact::new(FIELDS[8], "network_interfaces", &interfaces(sys_root)),
        Fact::new(FIELDS[9], "infiniband", &infiniband(sys_root)),
        Fact::new(FIELDS[10], "nccl", &Plain(&libs.nccl)),
        Fact::new(FIELDS[11], "cuda_driver", &Plain(&libs.cuda_driver)),
        Fact::new(FIELDS[12], "gpus", &List(libs.gpus.clone())),
    ];
    out.extend(variables(env).into_iter().map(|(k, v)| Fact {
        field: format!("env {k}"),
        text: v,
        json: serde_json::Map::new(),
    }));
    out
}

/// The CPUs this process may run on (`Cpus_allowed_list` of `proc_root/self/status`); empty
/// where it does not say.
pub fn allowed_cpus(proc_root: &Path) -> Vec<usize> {
    std::fs::read_to_string(proc_root.join("self/status"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:").and_then(cpu_list)))
        .unwrap_or_default()
}

/// The kernel's boot id (`proc_root/sys/kernel/random/boot_id`): processes that read the same
/// one run on one machine, whatever their host names (network namespaces, containers).
pub fn boot_id(proc_root: &Path) -> Option<String> {
    std::fs::read_to_string(proc_root.join("sys/kernel/random/boot_id"))
        .ok()
        .map(|b| b.trim().to_string())
        .filter(|b| !b.is_empty())
}

/// The most crowded host of the run, where its ranks outnumber the cores they may run on; hosts
/// of one machine (the same kernel boot id: network namespaces, containers) count together.
/// Collective; the answer is rank 0's (`None` elsewhere).
pub fn crowded(world: &crate::world::World) -> Option<crate::record::Crowded> {
    let proc_root = Path::new("/proc");
    let allowed: Vec<String> = allowed_cpus(proc_root).iter().map(|c| c.to_string()).collect();
    let boot = boot_id(proc_root).unwrap_or_default();
    let all = world.all_gather_bytes(format!("{boot}\t{}", allowed.join(",")).as_bytes());
    if world.rank != 0 {
        return None;
    }
    let views: Vec<(String, String, Vec<usize>)> = all
        .iter()
        .zip(&world.hosts)
        .map(|(b, host)| {
            let text = String::from_utf8_lossy(b);
            let (machine, list) = text.split_once('\t').unwrap_or(("", ""));
            let machine = if machine.is_empty() { host.clone() } else { machine.to_string() };
            (machine, host.clone(), cpu_list(list).unwrap_or_default())
        })
        .collect();
    most_crowded(&views)
}

/// [`crowded`]'s sum over each rank's (machine, host, allowed CPUs).
fn most_crowded(views: &[(String, String, Vec<usize>)]) -> Option<crate::record::Crowded> {
    let mut machines: Vec<(&str, Vec<&str>, usize, Vec<usize>)> = vec![];
    for (machine, host, cpus) in views {
        let at = match machines.iter().position(|m| m.0 == machine) {
            Some(i) => i,
            None => {
                machines.push((machine, vec![], 0, vec![]));
                machines.len() - 1
            }
        };
        let m = &mut machines[at];
        if !m.1.contains(&host.as_str()) {
            m.1.push(host);
        }
        m.2 += 1;
        for c in cpus {
            if !m.3.contains(c) {
                m.3.push(*c);
            }
        }
    }
    machines
        .into_iter()
        .filter(|m| !m.3.is_empty() && m.2 > m.3.len())
        .max_by(|a, b| (a.2 as f64 / a.3.len() as f64).total_cmp(&(b.2 as f64 / b.3.len() as f64)))
        .map(|m| crate::record::Crowded { host: m.1.join("+"), ranks: m.2, cores: m.3.len() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn a_host_is_read_from_proc_and_sys() {
        let t = tempfile::tempdir().unwrap();
        let (proc_root, sys_root) = (t.path().join("proc"), t.path().join("sys"));
        put(&proc_root, "cpuinfo", "processor\t: 0\nmodel name\t: AMD EPYC 7763 64-Core Processor\n\nprocessor\t: 1\n");
        put(&proc_root, "meminfo", "MemTotal:       24591308 kB\nMemFree:  1 kB\n");
        put(&sys_root, "devices/system/cpu/online", "0-3,8,10-11\n");
        fs::create_dir_all(sys_root.join("devices/system/node/node0")).unwrap();
        fs::create_dir_all(sys_root.join("devices/system/node/node1")).unwrap();
        fs::create_dir_all(sys_root.join("devices/system/node/possible-not-a-node")).unwrap();
        put(&sys_root, "class/net/eth0/operstate", "up\n");
        put(&sys_root, "class/net/eth0/speed", "25000\n");
        put(&sys_root, "class/net/eth0/mtu", "9000\n");
        put(&sys_root, "class/net/eth1/operstate", "down\n");
        put(&sys_root, "class/net/eth1/speed", "-1\n");
        put(&sys_root, "class/net/lo/operstate", "unknown\n");
        put(&sys_root, "class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
        put(&sys_root, "class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)\n");

        assert_eq!(cpu_model(&proc_root).to_string(), "AMD EPYC 7763 64-Core Processor");
        assert_eq!(Count(memory(&proc_root), " GiB").to_string(), "23 GiB");
        assert_eq!(cores(&sys_root).online, Some(7));
        assert_eq!(numa_nodes(&sys_root), Some(2));
        assert_eq!(interfaces(&sys_root).to_string(), "eth0 up 25000Mb/s mtu 9000; eth1 down");
        assert_eq!(infiniband(&sys_root).to_string(), "mlx5_0/1 ACTIVE 100 Gb/sec (4X EDR)");
        // And the same values as JSON (serde), no text read back.
        let json = |f: Fact| serde_json::Value::Object(f.json);
        use serde_json::json;
        assert_eq!(
            json(Fact::new("network interfaces", "network_interfaces", &interfaces(&sys_root))),
            json!({"network_interfaces": [
                {"name": "eth0", "state": "up", "speed_mbit_per_s": 25000, "mtu": 9000},
                {"name": "eth1", "state": "down", "speed_mbit_per_s": null, "mtu": null},
            ]})
        );
        assert_eq!(
            json(Fact::new("InfiniBand", "infiniband", &infiniband(&sys_root))),
            json!({"infiniband": [{"device": "mlx5_0", "port": 1, "state": "ACTIVE", "rate_gbit_per_s": 100.0}]})
        );

        // A host without them.
        let empty = t.path().join("nothing");
        for v in [
            cpu_model(&empty).to_string(),
            Count(memory(&empty), " GiB").to_string(),
            Count(numa_nodes(&empty), "").to_string(),
            interfaces(&empty).to_string(),
            infiniband(&empty).to_string(),
        ] {
            assert_eq!(v, ABSENT);
        }
        assert_eq!(json(Fact::new("InfiniBand", "infiniband", &infiniband(&empty))), json!({"infiniband": []}));
    }

    /// `info --json`: snake_case keys, numbers as numbers, `null` where absent (issue 26: was the
    /// display label with the text, `"cores": "2 online"`); each from the typed value that also
    /// writes the text (issue 49: the JSON was parsed back from the text).
    #[test]
    fn each_fact_writes_its_text_and_its_json_from_one_value() {
        use serde_json::json;
        let both = |f: Fact| (f.text, serde_json::Value::Object(f.json));
        let cores = |online, usable| Fact::new("cores", "cores", &Cores { online, usable });
        assert_eq!(
            both(cores(Some(7), Some(4))),
            ("7 online, 4 usable by this rank".into(), json!({"cores_online": 7, "cores_usable": 4}))
        );
        assert_eq!(both(cores(Some(2), Some(2))), ("2 online".into(), json!({"cores_online": 2, "cores_usable": 2})));
        assert_eq!(
            both(cores(None, Some(4))),
            ("4 usable by this rank".into(), json!({"cores_online": null, "cores_usable": 4}))
        );
        assert_eq!(
            both(Fact::new("memory", "memory_gib", &Count(Some(23), " GiB"))),
            ("23 GiB".into(), json!({"memory_gib": 23}))
        );
        assert_eq!(
            both(Fact::new("NUMA nodes", "numa_nodes", &Count(None, ""))),
            (ABSENT.into(), json!({"numa_nodes": null}))
        );
        let locked = |l| both(Fact::new("locked-memory limit", "locked_memory", &LockedMemory(l)));
        assert_eq!(
            locked(Some((Limit::Bytes(8 << 20), Limit::Unlimited))),
            (
                "8M (hard unlimited)".into(),
                json!({"locked_memory_bytes": 8 << 20, "locked_memory_hard_bytes": "unlimited"})
            )
        );
        assert_eq!(
            locked(Some((Limit::Bytes(1610612736), Limit::Bytes(1610612736)))).1,
            json!({"locked_memory_bytes": 1610612736u64, "locked_memory_hard_bytes": 1610612736u64})
        );
        assert_eq!(
            locked(None),
            (ABSENT.into(), json!({"locked_memory_bytes": null, "locked_memory_hard_bytes": null}))
        );
        let found = |f: Found| both(Fact::new("NCCL", "nccl", &Plain(&f)));
        assert_eq!(
            found(Found::Absent("built without the nccl feature".into())),
            ("absent (built without the nccl feature)".into(), json!({"nccl": null}))
        );
        assert_eq!(found(Found::Is("2.21.5 at /x".into())), ("2.21.5 at /x".into(), json!({"nccl": "2.21.5 at /x"})));
        assert_eq!(
            both(Fact::new("GPUs", "gpus", &List(vec!["0: A (x, 16G)".to_string(), "1: B (y, 16G)".into()]))),
            ("0: A (x, 16G); 1: B (y, 16G)".into(), json!({"gpus": ["0: A (x, 16G)", "1: B (y, 16G)"]}))
        );
        // Every field of a rank's report has its keys, each snake_case; the variables none.
        let libs =
            Libraries { nccl: Found::Absent(String::new()), cuda_driver: Found::Absent(String::new()), gpus: vec![] };
        let env: HashMap<String, String> = [("NCCL_DEBUG".to_string(), "INFO".to_string())].into();
        let all = collect("MPI x", &env, &libs, 1);
        assert_eq!(all.iter().map(|f| f.field.as_str()).take(FIELDS.len()).collect::<Vec<_>>(), FIELDS);
        for f in &all[..FIELDS.len()] {
            assert!(!f.json.is_empty(), "{}", f.field);
            for k in f.json.keys() {
                assert!(k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{k}");
            }
        }
        assert_eq!((all[FIELDS.len()].field.as_str(), all[FIELDS.len()].json.len()), ("env NCCL_DEBUG", 0));
    }

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(count_cpu_list("0-3,8,10-11\n"), Some(7));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
        assert_eq!(cpu_list("0-3,8,10-11"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(cpu_list("3-1"), None);
        assert_eq!(cpu_list("0-99999"), None);
        assert_eq!(count_cpu_list("0-99999"), Some(100_000));
    }

    #[test]
    fn only_the_networking_variables_are_reported_sorted() {
        let env: HashMap<String, String> = [
            ("NCCL_DEBUG", "INFO"),
            ("PATH", "/bin"),
            ("FI_PROVIDER", "efa"),
            ("OMPI_MCA_btl", "tcp,self"),
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_MCA_ess_base_vpid", "3"),
            ("OMPI_MCA_orte_hnp_uri", "1.0;tcp://10.0.0.1:5"),
            ("UCX_TLS", "rc"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let names: Vec<String> = variables(&env).into_iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["FI_PROVIDER", "NCCL_DEBUG", "OMPI_MCA_btl", "UCX_TLS"]);
    }

    #[test]
    fn the_launcher_is_named_with_its_view_of_the_job() {
        let env = |v: &[(&str, &str)]| -> HashMap<String, String> {
            v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let ompi = env(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]);
        assert_eq!(launcher(&ompi, 4), "Open MPI, 4 ranks, 2 on this host");
        assert_eq!(launcher(&env(&[]), 1), "none (started without a launcher)");
    }

    #[test]
    fn the_slurm_job_and_step_are_named_and_counted_against_the_world() {
        let env = |v: &[(&str, &str)]| -> HashMap<String, String> {
            v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let step = env(&[
            ("SLURM_JOB_ID", "12"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_STEP_NUM_NODES", "2"),
            ("SLURM_STEP_TASKS_PER_NODE", "3,1"),
            ("SLURM_NODEID", "1"),
            ("PMIX_RANK", "3"),
        ]);
        assert_eq!(launcher(&step, 4), "PMIx; Slurm job 12 step 0: 4 tasks on 2 nodes, 1 on this node, = MPI's world");
        assert_eq!(
            slurm(&step, 1).unwrap(),
            "Slurm job 12 step 0: 4 tasks on 2 nodes, 1 on this node, ≠ MPI's world of 1"
        );
        let mut mpirun = step.clone();
        mpirun.insert("OMPI_COMM_WORLD_SIZE".into(), "8".into());
        assert_eq!(slurm(&mpirun, 8).unwrap(), "Slurm job 12 step 0 (mpirun's daemons; mpirun started the ranks)");
        assert_eq!(slurm(&env(&[("SLURM_JOB_ID", "7")]), 1).unwrap(), "Slurm job 7 (its batch script, no step)");
        assert_eq!(slurm(&env(&[]), 1), None);
        assert_eq!(tasks_on_node("2(x3),1", 2), Some(2));
        assert_eq!(tasks_on_node("2(x3),1", 3), Some(1));
        assert_eq!(tasks_on_node("2(x3),1", 4), None);
    }

    #[test]
    fn a_machine_is_crowded_when_its_ranks_outnumber_their_cores() {
        let v = |m: &str, h: &str, c: &[usize]| (m.to_string(), h.to_string(), c.to_vec());
        // taskset -c 0 around 4 ranks.
        assert_eq!(
            most_crowded(&[v("a", "vm", &[0]), v("a", "vm", &[0]), v("a", "vm", &[0]), v("a", "vm", &[0])]),
            Some(crate::record::Crowded { host: "vm".into(), ranks: 4, cores: 1 })
        );
        // Two ranks, each bound to its own core: not crowded.
        assert_eq!(most_crowded(&[v("a", "vm", &[0]), v("a", "vm", &[1])]), None);
        // Three namespace hosts of one 2-core machine.
        assert_eq!(
            most_crowded(&[v("b", "n1", &[0, 1]), v("b", "n2", &[0, 1]), v("b", "n3", &[0, 1])]),
            Some(crate::record::Crowded { host: "n1+n2+n3".into(), ranks: 3, cores: 2 })
        );
        // Unknown bindings say nothing.
        assert_eq!(most_crowded(&[v("c", "x", &[]), v("c", "x", &[])]), None);
    }
}
