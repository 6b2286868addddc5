//! Which GPU a rank drives: the one at its node-local rank among the GPUs the CUDA driver shows,
//! which are those `CUDA_VISIBLE_DEVICES` lets through, or its first where each rank is shown
//! GPUs of its own. The driver applies the variable itself (device ordinal 0 is its first
//! entry); we parse it only to name the GPU in the header and to explain a shortage. Pure
//! functions, so the rules are unit-tested without a GPU.

use std::collections::HashMap;

/// A GPU's UUID as `cuDeviceGetUuid_v2` states it: the same for every process that sees the
/// device, whatever its ordinal there; a MIG instance has its own.
pub type Uuid = [u8; 16];

/// `5d1c0000-fa4e-0000-0000-000000000000` (nvidia-smi's prefix, `GPU-` or `MIG-`, is not in the
/// bytes).
pub fn uuid_text(u: &Uuid) -> String {
    let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// What `CUDA_VISIBLE_DEVICES` makes visible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Visible {
    /// Unset: every GPU, in the driver's order.
    All,
    /// Set: these entries (indices like `2`, or UUIDs like `GPU-8f1c…`, `MIG-…`), in order.
    Listed(Vec<String>),
}

/// The variable as the CUDA driver reads it: comma-separated entries, each a non-negative index
/// or a `GPU-`/`MIG-` UUID; the first invalid entry hides itself and everything after it, and an
/// empty value hides every GPU.
pub fn parse_visible(value: Option<&str>) -> Visible {
    let Some(value) = value else { return Visible::All };
    let mut out = vec![];
    for entry in value.split(',').map(str::trim) {
        let index = !entry.is_empty() && entry.bytes().all(|b| b.is_ascii_digit());
        let uuid = ["GPU-", "MIG-"]
            .iter()
            .any(|p| entry.len() > p.len() && entry.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p)));
        if !(index || uuid) {
            break;
        }
        out.push(entry.to_string());
    }
    Visible::Listed(out)
}

/// The GPU chosen for a rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The CUDA device ordinal (among visible GPUs).
    pub ordinal: usize,
    /// Its `CUDA_VISIBLE_DEVICES` entry, when the variable is set.
    pub entry: Option<String>,
}

impl Selection {
    /// "GPU 1" or "GPU 1 (CUDA_VISIBLE_DEVICES entry 3)".
    pub fn label(&self) -> String {
        match &self.entry {
            Some(e) if *e != self.ordinal.to_string() => {
                format!("GPU {} (CUDA_VISIBLE_DEVICES entry {e})", self.ordinal)
            }
            _ => format!("GPU {}", self.ordinal),
        }
    }
}

/// Whether every rank of node `node` sees the same GPUs in the same order, from every rank's
/// `(node, the UUIDs of the GPUs it sees, by ordinal)`. A rank that sees none is left out (its
/// own error is the message).
pub fn sees_alike(node: usize, seen: &[(usize, Vec<Uuid>)]) -> bool {
    let mut sets = seen.iter().filter(|(n, s)| *n == node && !s.is_empty()).map(|(_, s)| s);
    let first = sets.next();
    sets.all(|s| Some(s) == first)
}

/// One GPU per rank. Where every rank of the node sees the same GPUs (`alike`, [`sees_alike`]),
/// local rank `local_rank` of `local_size` on `host` takes device ordinal `local_rank` of the
/// `device_count` the driver reports, and a node with more ranks than visible GPUs is an error
/// on every rank of the node (the message names the count and the variable). Where the ranks of
/// a node see different GPUs (Slurm's `--gpus-per-task=N`, a wrapper setting
/// `CUDA_VISIBLE_DEVICES` per rank), or a rank sees exactly one, the GPUs a rank sees are its
/// own: it takes the first, ordinal 0, as nccl-tests does with one GPU per process; [`shared_gpu`]
/// then refuses two ranks of a node on one.
pub fn select(
    local_rank: usize,
    local_size: usize,
    visible: &Visible,
    device_count: usize,
    alike: bool,
    host: &str,
) -> Result<Selection, String> {
    let cvd = match visible {
        Visible::All => String::new(),
        Visible::Listed(v) => format!(" (CUDA_VISIBLE_DEVICES={})", v.join(",")),
    };
    if device_count == 0 {
        return Err(match visible {
            Visible::Listed(v) if v.is_empty() => format!(
                "no GPU visible on {host}: CUDA_VISIBLE_DEVICES is set but lists no valid device; unset it or list the GPUs to use"
            ),
            _ => format!("no GPU on {host}: the CUDA driver reports 0 devices{cvd}"),
        });
    }
    if device_count == 1 || !alike {
        let entry = match visible {
            Visible::All => None,
            Visible::Listed(v) => v.first().cloned(),
        };
        return Ok(Selection { ordinal: 0, entry });
    }
    if local_size > device_count {
        return Err(format!(
            "{local_size} ranks on {host} but only {device_count} GPU(s) visible there{cvd}; the nccl backend drives one GPU per rank: run at most {device_count} ranks per node, or make more GPUs visible"
        ));
    }
    // local_rank < local_size <= device_count.
    let ordinal = local_rank;
    let entry = match visible {
        Visible::All => None,
        Visible::Listed(v) => v.get(ordinal).cloned(),
    };
    Ok(Selection { ordinal, entry })
}

/// The NCCL from which two ranks of a node are told apart by their GPUs' UUIDs (`init.cc`,
/// "Multiple Ranks are using the same GPU/Partition"); before it, by host and PCI bus id
/// ("Duplicate GPU detected"), which refuses two MIG instances of one GPU.
pub const NCCL_BY_UUID: (u32, u32, u32) = (2, 30, 7);

/// A rank's GPU, as the check for sharing compares them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub rank: usize,
    /// Its node ([`crate::world::World::nodes`]): the shared-memory split, not the host name.
    pub node: usize,
    pub host: String,
    pub uuid: String,
    pub bus_id: String,
}

/// Two ranks of one node on the same GPU (the same UUID), or, where `nccl` (the version loaded)
/// predates [`NCCL_BY_UUID`], on one PCI bus id (MIG instances of one GPU, which that NCCL
/// refuses): the message for the first such pair, or `None`.
pub fn shared_gpu(ranks: &[Held], nccl: Option<(u32, u32, u32)>) -> Option<String> {
    let by_bus = nccl.filter(|v| *v < NCCL_BY_UUID);
    let (mut uuids, mut buses) = (HashMap::new(), HashMap::new());
    for b in ranks {
        if let Some(a) = uuids.insert((b.node, &b.uuid), b) {
            return Some(format!(
                "ranks {} and {} on {} would share one GPU (PCI {}, UUID {}); the nccl backend drives one GPU per rank: show each rank its own GPU or MIG instance (CUDA_VISIBLE_DEVICES, or Slurm's --gpus-per-task=1)",
                a.rank, b.rank, a.host, a.bus_id, a.uuid
            ));
        }
        if let (Some(v), Some(a)) = (by_bus, buses.insert((b.node, &b.bus_id), b)) {
            let dotted = |v: (u32, u32, u32)| format!("{}.{}.{}", v.0, v.1, v.2);
            let (old, new) = (dotted(v), dotted(NCCL_BY_UUID));
            return Some(format!(
                "ranks {} and {} on {} are on two instances (MIG) of one GPU (PCI {}); NCCL {old} refuses ranks of a node on one PCI bus id (from {new} it tells them apart by UUID): use NCCL {new} or newer, or show each rank a whole GPU of its own",
                a.rank, b.rank, a.host, a.bus_id
            ));
        }
    }
    None
}

/// A GPU's PCIe link as the kernel's PCI driver states it (`/sys/bus/pci/devices/<bus id>/`):
/// the negotiated speed and width, and the most the device and its slot can do. A nominal rate,
/// never the ceiling (that is measured).
#[derive(Clone, Debug, PartialEq)]
pub struct PcieLink {
    /// GT/s per lane, and lanes: `current_link_speed`, `current_link_width`.
    pub speed_gts: f64,
    pub width: u32,
    /// `max_link_speed`, `max_link_width` (absent on some kernels: then the current ones).
    pub max_speed_gts: f64,
    pub max_width: u32,
}

impl PcieLink {
    /// GB/s one way: lanes × GT/s × the line code's payload (8b/10b below 8 GT/s, 128b/130b to
    /// 32 GT/s, FLIT 242/256 at 64 GT/s) / 8.
    pub fn gbps(&self) -> f64 {
        Self::rate(self.speed_gts, self.width)
    }

    fn rate(gts: f64, width: u32) -> f64 {
        let payload = if gts < 8.0 {
            0.8
        } else if gts < 64.0 {
            128.0 / 130.0
        } else {
            242.0 / 256.0
        };
        gts * payload * width as f64 / 8.0
    }

    /// Whether it runs below what it could (a slower speed or fewer lanes than its maximum: a
    /// card in the wrong slot, a riser, power saving that did not lift).
    pub fn degraded(&self) -> bool {
        self.speed_gts < self.max_speed_gts || self.width < self.max_width
    }

    /// `PCIe 16 GT/s x16, 31.51 GB/s nominal` (and `, below its 32 GT/s x16` where degraded).
    pub fn shown(&self) -> String {
        let mut s = format!(
            "PCIe {} GT/s x{}, {} GB/s nominal",
            self.speed_gts,
            self.width,
            crate::record::shown_gbps(self.gbps())
        );
        if self.degraded() {
            s.push_str(&format!(", below its {} GT/s x{}", self.max_speed_gts, self.max_width));
        }
        s
    }
}

/// The PCIe link of the device at `bus_id` (`0000:3B:00.0`, as CUDA names it) under `sys_root`
/// (`/sys`); `None` where the kernel states none (no such device, a virtual one, no speed).
pub fn pcie_link(sys_root: &std::path::Path, bus_id: &str) -> Option<PcieLink> {
    let dir = sys_root.join("bus/pci/devices").join(bus_id.to_ascii_lowercase());
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    // "16.0 GT/s PCIe", "8 GT/s", "Unknown"; a width of 0 where the link is down.
    let speed = |f: &str| read(f)?.split_whitespace().next()?.parse::<f64>().ok().filter(|s| *s > 0.0);
    let width = |f: &str| read(f)?.trim().parse::<u32>().ok().filter(|w| *w > 0);
    let (speed_gts, width_now) = (speed("current_link_speed")?, width("current_link_width")?);
    Some(PcieLink {
        speed_gts,
        width: width_now,
        max_speed_gts: speed("max_link_speed").unwrap_or(speed_gts),
        max_width: width("max_link_width").unwrap_or(width_now),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(v: &[&str]) -> Visible {
        Visible::Listed(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn unset_means_every_gpu_and_empty_means_none() {
        assert_eq!(parse_visible(None), Visible::All);
        assert_eq!(parse_visible(Some("")), listed(&[]));
    }

    #[test]
    fn indices_and_uuids_are_entries() {
        assert_eq!(parse_visible(Some("0,1")), listed(&["0", "1"]));
        assert_eq!(parse_visible(Some(" 2 , 3 ")), listed(&["2", "3"]));
        assert_eq!(
            parse_visible(Some("GPU-8f1c2d3e-aaaa-bbbb-cccc-0123456789ab,1")),
            listed(&["GPU-8f1c2d3e-aaaa-bbbb-cccc-0123456789ab", "1"])
        );
        assert_eq!(parse_visible(Some("MIG-GPU-1234/1/0")), listed(&["MIG-GPU-1234/1/0"]));
        assert_eq!(parse_visible(Some("gpu-abc")), listed(&["gpu-abc"]));
    }

    #[test]
    fn the_first_invalid_entry_hides_the_rest() {
        assert_eq!(parse_visible(Some("1,foo,2")), listed(&["1"]));
        assert_eq!(parse_visible(Some("-1")), listed(&[]));
        assert_eq!(parse_visible(Some("3,,4")), listed(&["3"]));
        assert_eq!(parse_visible(Some("GPU-")), listed(&[]));
    }

    #[test]
    fn each_local_rank_takes_its_own_ordinal() {
        for r in 0..4 {
            let s = select(r, 4, &Visible::All, 8, true, "n1").unwrap();
            assert_eq!(s, Selection { ordinal: r, entry: None });
            assert_eq!(s.label(), format!("GPU {r}"));
        }
        let s = select(1, 2, &listed(&["6", "GPU-abc"]), 2, true, "n1").unwrap();
        assert_eq!(s, Selection { ordinal: 1, entry: Some("GPU-abc".into()) });
        assert_eq!(s.label(), "GPU 1 (CUDA_VISIBLE_DEVICES entry GPU-abc)");
        let s = select(0, 2, &listed(&["6", "7"]), 2, true, "n1").unwrap();
        assert_eq!(s.label(), "GPU 0 (CUDA_VISIBLE_DEVICES entry 6)");
        let s = select(0, 1, &listed(&["0"]), 1, true, "n1").unwrap();
        assert_eq!(s.label(), "GPU 0");
    }

    #[test]
    fn more_local_ranks_than_gpus_is_an_error_on_every_rank_of_the_node() {
        for r in 0..3 {
            let e = select(r, 3, &listed(&["0", "1"]), 2, true, "n7").unwrap_err();
            assert_eq!(
                e,
                "3 ranks on n7 but only 2 GPU(s) visible there (CUDA_VISIBLE_DEVICES=0,1); the nccl backend drives one GPU per rank: run at most 2 ranks per node, or make more GPUs visible"
            );
        }
        let e = select(0, 3, &Visible::All, 2, true, "n7").unwrap_err();
        assert!(e.starts_with("3 ranks on n7 but only 2 GPU(s) visible there;"), "{e}");
    }

    /// Slurm `--gpus-per-task=1` or `CUDA_VISIBLE_DEVICES=$LOCAL_RANK`: every rank sees one GPU,
    /// its own, at ordinal 0; the UUIDs then tell whether two ranks were given the same one.
    #[test]
    fn one_visible_gpu_is_ordinal_0_for_any_local_rank() {
        for r in 0..4 {
            assert_eq!(select(r, 4, &Visible::All, 1, true, "n1").unwrap(), Selection { ordinal: 0, entry: None });
        }
        let s = select(3, 4, &listed(&["3"]), 1, true, "n1").unwrap();
        assert_eq!(s.label(), "GPU 0 (CUDA_VISIBLE_DEVICES entry 3)");
    }

    fn held(v: &[(usize, usize, &str, &str, &str)]) -> Vec<Held> {
        v.iter()
            .map(|(rank, node, host, uuid, bus)| Held {
                rank: *rank,
                node: *node,
                host: host.to_string(),
                uuid: uuid.to_string(),
                bus_id: bus.to_string(),
            })
            .collect()
    }

    /// Two ranks of a node on one GPU (one UUID) are refused, named with the host, bus id and
    /// UUID; the node is the shared-memory split, so the same host name and bus id on two nodes
    /// is no sharing.
    #[test]
    fn one_uuid_on_two_ranks_of_a_node_is_refused() {
        let nccl = Some(NCCL_BY_UUID);
        let two_nodes = held(&[
            (0, 0, "a", "u1", "0000:01:00.0"),
            (1, 0, "a", "u2", "0000:02:00.0"),
            (2, 2, "a", "u1", "0000:01:00.0"),
        ]);
        assert_eq!(shared_gpu(&two_nodes, nccl), None);
        assert_eq!(shared_gpu(&two_nodes, Some((2, 18, 5))), None);
        let e = shared_gpu(
            &held(&[
                (0, 0, "a", "u1", "0000:01:00.0"),
                (1, 1, "b", "u1", "0000:01:00.0"),
                (2, 0, "a", "u1", "0000:01:00.0"),
            ]),
            nccl,
        );
        assert_eq!(
            e.unwrap(),
            "ranks 0 and 2 on a would share one GPU (PCI 0000:01:00.0, UUID u1); the nccl backend drives one GPU per rank: show each rank its own GPU or MIG instance (CUDA_VISIBLE_DEVICES, or Slurm's --gpus-per-task=1)"
        );
        let same = held(&[(0, 0, "a", "u1", "0000:01:00.0"), (1, 0, "a", "u1", "0000:01:00.0")]);
        assert!(shared_gpu(&same, None).unwrap().starts_with("ranks 0 and 1 on a would share one GPU"));
    }

    /// MIG instances of one GPU: one bus id, UUIDs of their own. NCCL from 2.30.7 tells them
    /// apart by UUID; before, it refuses them as one GPU, and so do we, saying why.
    #[test]
    fn mig_instances_of_one_gpu_are_accepted_where_nccl_compares_uuids() {
        let mig = held(&[(0, 0, "a", "m1", "0000:01:00.0"), (1, 0, "a", "m2", "0000:01:00.0")]);
        assert_eq!(shared_gpu(&mig, Some(NCCL_BY_UUID)), None);
        assert_eq!(shared_gpu(&mig, Some((2, 32, 3))), None);
        assert_eq!(shared_gpu(&mig, None), None);
        assert_eq!(
            shared_gpu(&mig, Some((2, 30, 4))).unwrap(),
            "ranks 0 and 1 on a are on two instances (MIG) of one GPU (PCI 0000:01:00.0); NCCL 2.30.4 refuses ranks of a node on one PCI bus id (from 2.30.7 it tells them apart by UUID): use NCCL 2.30.7 or newer, or show each rank a whole GPU of its own"
        );
    }

    #[test]
    fn uuids_are_written_as_nvidia_smi_writes_them_without_the_prefix() {
        let mut u = [0u8; 16];
        u[0] = 0x5d;
        u[15] = 0xab;
        assert_eq!(uuid_text(&u), "5d000000-0000-0000-0000-0000000000ab");
    }

    /// Slurm `--gpus-per-task=2`: the ranks of a node each see two GPUs of their own, so each
    /// takes its first, however many ranks the node has; where they all see the same GPUs, local
    /// rank r takes ordinal r as before, and a shortage is still an error.
    #[test]
    fn ranks_shown_gpus_of_their_own_take_their_first() {
        let (a, b, c, d) = ([1u8; 16], [2u8; 16], [3u8; 16], [4u8; 16]);
        let own = [(0, vec![a, b]), (0, vec![c, d]), (2, vec![a, b]), (2, vec![a, b])];
        assert!(!sees_alike(0, &own));
        assert!(sees_alike(2, &own));
        // A rank that sees no GPU is left out; its own error is the message.
        assert!(sees_alike(0, &[(0, vec![a, b]), (0, vec![]), (0, vec![a, b])]));
        // The same GPUs in another order are another set: each rank takes its own first.
        assert!(!sees_alike(0, &[(0, vec![a, b]), (0, vec![b, a])]));
        for r in 0..4 {
            let s = select(r, 4, &listed(&["2", "3"]), 2, false, "n1").unwrap();
            assert_eq!(s, Selection { ordinal: 0, entry: Some("2".into()) });
        }
        assert_eq!(select(1, 2, &Visible::All, 2, true, "n1").unwrap().ordinal, 1);
        assert!(select(2, 4, &Visible::All, 2, true, "n1").is_err());
    }

    #[test]
    fn no_gpu_names_the_variable_when_it_hides_them() {
        let e = select(0, 1, &listed(&[]), 0, true, "n1").unwrap_err();
        assert!(e.contains("CUDA_VISIBLE_DEVICES is set but lists no valid device"), "{e}");
        let e = select(0, 1, &Visible::All, 0, true, "n1").unwrap_err();
        assert_eq!(e, "no GPU on n1: the CUDA driver reports 0 devices");
    }

    #[test]
    fn the_pcie_link_is_read_from_the_kernels_pci_files() {
        let root = std::env::temp_dir().join(format!("coll-bench-pci-sys-{}", std::process::id()));
        let dev = root.join("bus/pci/devices/0000:3b:00.0");
        std::fs::create_dir_all(&dev).unwrap();
        let put = |f: &str, t: &str| std::fs::write(dev.join(f), t).unwrap();
        assert_eq!(pcie_link(&root, "0000:3B:00.0"), None);
        put("current_link_speed", "16.0 GT/s PCIe\n");
        put("current_link_width", "16\n");
        let link = pcie_link(&root, "0000:3B:00.0").unwrap();
        assert!((link.gbps() - 31.5077).abs() < 1e-3, "{link:?}");
        assert_eq!(link.shown(), "PCIe 16 GT/s x16, 31.51 GB/s nominal");
        // Negotiated below its maximum: said.
        put("max_link_speed", "32.0 GT/s PCIe\n");
        put("current_link_width", "8\n");
        put("max_link_width", "16\n");
        let link = pcie_link(&root, "0000:3b:00.0").unwrap();
        assert!(link.degraded());
        assert_eq!(link.shown(), "PCIe 16 GT/s x8, 15.75 GB/s nominal, below its 32 GT/s x16");
        // Gen 2 (8b/10b) and a link that is down.
        put("current_link_speed", "5.0 GT/s PCIe\n");
        assert!((pcie_link(&root, "0000:3b:00.0").unwrap().gbps() - 4.0).abs() < 1e-9);
        put("current_link_width", "0\n");
        assert_eq!(pcie_link(&root, "0000:3b:00.0"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
