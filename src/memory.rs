//! Refuse, up front, buffers that cannot fit: being killed by the OOM killer halfway through a
//! sweep is the worst way to learn it.

use crate::error::{Error, Result};
use crate::size::amount;

/// Memory a rank needs beyond its two buffers: the program, MPI's own buffers and the samples.
pub const OVERHEAD_BYTES: u64 = 32 << 20;

/// What one rank needs: its two buffers, the library's reduction scratch where it uses one (the
/// size of the larger buffer: Open MPI 4.1 peaked at 208 MiB per rank for 64 MiB all-reduces,
/// 3.25 times the message), and [`OVERHEAD_BYTES`].
pub fn per_rank_need(send: u64, recv: u64, reduction_scratch: bool) -> u64 {
    let scratch = if reduction_scratch { send.max(recv) } else { 0 };
    send.saturating_add(recv).saturating_add(scratch).saturating_add(OVERHEAD_BYTES)
}

/// Bytes this machine can still give: `MemAvailable`, capped by a cgroup v2 limit if one is set.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let avail_kib: u64 =
        meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?.split_whitespace().nth(1)?.parse().ok()?;
    let mut avail = avail_kib * 1024;
    let cg = |f: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{f}")).ok().and_then(|s| s.trim().parse::<u64>().ok())
    };
    if let (Some(max), Some(cur)) = (cg("memory.max"), cg("memory.current")) {
        avail = avail.min(max.saturating_sub(cur));
    }
    Some(avail)
}

/// Peak resident memory of this process so far, bytes.
pub fn peak_rss_bytes() -> u64 {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above: `ru` is ours and the right size.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_maxrss as u64 * 1024 // kilobytes on Linux
}

/// Check that `local_ranks` ranks, each needing `per_rank` bytes, fit in `available`.
/// `flag` is the size flag to name (`-e/--maxbytes`, or `pairs -e/--bandwidth-bytes`).
pub fn check_fit(flag: &str, per_rank: u64, local_ranks: usize, available: u64, host: &str) -> Result<()> {
    let need = per_rank.saturating_mul(local_ranks as u64);
    if need > available {
        return Err(Error::usage(format!(
            "{flag}: the buffers need {} per rank × {local_ranks} rank(s) on {host} = {}, but only {} is available; expected a smaller {flag} (or fewer ranks per host)",
            amount(per_rank),
            amount(need),
            amount(available)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_does_not_fit() {
        assert!(check_fit("-e/--maxbytes", 1 << 30, 2, 4 << 30, "h").is_ok());
        let e = check_fit("-e/--maxbytes", 3 << 30, 2, 4 << 30, "node7").unwrap_err().to_string();
        assert!(e.contains("-e/--maxbytes") && e.contains("node7") && e.contains("6G"), "{e}");
        assert!(check_fit("-e/--maxbytes", u64::MAX, 8, 1 << 40, "h").is_err());
    }

    #[test]
    fn need_counts_the_reduction_scratch() {
        let m = 64 << 20;
        assert_eq!(per_rank_need(m, m, false), 2 * m + OVERHEAD_BYTES);
        assert_eq!(per_rank_need(m, m, true), 3 * m + OVERHEAD_BYTES);
        assert_eq!(per_rank_need(u64::MAX, 1, true), u64::MAX);
    }

    #[test]
    fn this_machine_reports_memory() {
        assert!(available_bytes().unwrap() > 0);
        assert!(peak_rss_bytes() > 0);
    }
}
