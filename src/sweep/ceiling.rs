//! The ceiling pass, before the sweep: sendrecv around the ring of each group's ranks at the
//! run's largest size that fits the buffers it already has (at most [`Ceiling::MAX_BYTES`]),
//! timed as any point is (warm-up, budget, every rank's mean combined by `-a`, watched by `-T`).
//! Its bus bandwidth is what each link carries one way with every link busy, the bandwidth
//! nccl-tests' busbw is meant to be read against; the reports give every point's busbw as a
//! percentage of it. Nothing is allocated for it and nothing is printed here.

use super::{buffer_bytes, Sweep};
use crate::backend::Call;
use crate::collective::Kind;
use crate::dtype::{DType, Op};
use crate::error::Result;
use crate::record::{Ceiling, Placement};
use crate::verify::GUARD_BYTES;

/// The transfer size of the pass: the largest of `sizes` that fits `room` bytes (every rank's
/// smallest buffer) and [`Ceiling::MAX_BYTES`]; `None` when none does.
pub fn transfer_bytes(sizes: &[u64], room: u64) -> Option<u64> {
    sizes.iter().copied().filter(|&s| s > 0 && s <= room.min(Ceiling::MAX_BYTES)).max()
}

impl Sweep<'_> {
    /// Measure the ceiling, on every rank alike (collective over the world); `None` with
    /// `--no-ceiling`, groups of one rank, a plan with no collective that moves data, or buffers
    /// too small for any of its sizes. `links` is what the reports call the ring's links
    /// (`within hosts` or `between hosts`: [`crate::record::RunInfo::ring_crosses_hosts`]).
    /// The data are checked as any point's (`-c`): wrong elements add a line to `notes`.
    pub fn ceiling(&mut self, links: &'static str, notes: &mut Vec<String>) -> Result<Option<Ceiling>> {
        let started = std::time::Instant::now();
        let opts = self.opts;
        let sized = opts.collectives.iter().any(|k| k.spec().sized());
        if !opts.ceiling || self.member.size < 2 || !sized {
            return Ok(None);
        }
        let (n, rank) = (self.member.size, self.member.rank);
        let (send, recv) = buffer_bytes(opts, n, rank, self.backend.convention());
        let mine = send.min(recv.saturating_sub(GUARD_BYTES)) as f64;
        // Every rank must send what its neighbour receives: the smallest room of any rank.
        let room = -self.world.max_f64(-mine);
        let Some(bytes) = transfer_bytes(&opts.sizes(), room as u64) else { return Ok(None) };
        let spec = Kind::SendRecv.spec();
        let layout = spec.layout(bytes as usize, 1, n, rank, self.backend.convention());
        let call = Call { kind: Kind::SendRecv, dtype: DType::Uint8, op: Op::Sum, root: 0, layout, in_place: false };
        let m = self.measure(&call, Placement::OutOfPlace)?;
        if let Some(w) = &self.watchdog {
            w.disarm();
        }
        if let Some(w) = m.wrong.filter(|&w| w > 0) {
            notes.push(format!("the ceiling pass's sendrecv of {bytes} B delivered {w} wrong elements"));
        }
        // The hosts' nominal rates are added by the caller, on the world ([`crate::nic::beside`]).
        Ok(Some(Ceiling {
            gbps: m.busbw_gbps,
            source: "measured",
            size_bytes: bytes,
            time_us: m.time_us,
            links,
            nominal: vec![],
            host_pairs: vec![],
            seconds: started.elapsed().as_secs_f64(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::transfer_bytes;

    #[test]
    fn the_pass_takes_the_largest_size_that_fits_up_to_256_mib() {
        let sizes: Vec<u64> = (0..=30).map(|i| 1u64 << i).collect();
        assert_eq!(transfer_bytes(&sizes, 64 << 20), Some(64 << 20));
        assert_eq!(transfer_bytes(&sizes, (64 << 20) - 1), Some(32 << 20));
        assert_eq!(transfer_bytes(&sizes, 1 << 40), Some(256 << 20));
        assert_eq!(transfer_bytes(&[0, 8], 4), None);
        assert_eq!(transfer_bytes(&[0], 1 << 20), None);
    }

    #[test]
    fn the_header_shows_three_significant_digits() {
        let shown = |gbps| {
            crate::record::Ceiling {
                gbps,
                source: "measured",
                size_bytes: 1,
                time_us: 1.0,
                links: "",
                nominal: vec![],
                host_pairs: vec![],
                seconds: 0.5,
            }
            .shown_gbps()
        };
        assert_eq!(shown(14.333068), "14.33");
        assert_eq!(shown(5.4321), "5.43");
        assert_eq!(shown(0.65049), "0.650");
        assert_eq!(shown(0.0062168), "0.00622");
    }
}
