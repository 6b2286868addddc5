//! The ceiling pass, before the sweep: sendrecv around the ring of each group's ranks at the
//! run's largest size (at most [`Ceiling::MAX_BYTES`]; [`super::buffer_bytes`] makes room for
//! it, so the transfer does not depend on which collectives the run measures),
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
        // Its own counts, never the user's -w/-n (a `-n 100000` for the sweep would hold the pass
        // for minutes before anything is printed): a bounded budget per repeat, and repeats to
        // know its spread. Past the first, only while the pass is short (a slow link's one
        // repeat can take seconds): the decision is agreed, so every rank repeats alike.
        // The data are checked once, after the first repeat (as any point's, `-c`).
        let mut repeats = vec![];
        let mut wrong = 0;
        while repeats.len() < Ceiling::REPEATS as usize {
            if !repeats.is_empty() && self.world.max_f64(started.elapsed().as_secs_f64()) > Ceiling::REPEAT_WITHIN_S {
                break;
            }
            self.limits = Some(super::Limits {
                warmup: None,
                iters: None,
                budget_s: opts.budget_s.min(Ceiling::REPEAT_BUDGET_S),
                check: opts.check && repeats.is_empty(),
            });
            let m = self.measure(&call, Placement::OutOfPlace);
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    self.limits = None;
                    return Err(e);
                }
            };
            wrong += m.wrong.unwrap_or(0);
            repeats.push(m);
        }
        self.limits = None;
        if let Some(w) = &self.watchdog {
            w.disarm();
        }
        if wrong > 0 {
            notes.push(format!("the ceiling pass's sendrecv of {bytes} B delivered {wrong} wrong elements"));
        }
        let (time_us, gbps, spread_pct) =
            median_and_spread(&repeats.iter().map(|m| (m.time_us, m.busbw_gbps)).collect::<Vec<_>>());
        // The hosts' nominal rates are added by the caller, on the world ([`crate::nic::beside`]).
        Ok(Some(Ceiling {
            gbps,
            source: "measured",
            size_bytes: bytes,
            time_us,
            links,
            nominal: vec![],
            host_pairs: vec![],
            seconds: started.elapsed().as_secs_f64(),
            repeats: repeats.len() as u32,
            spread_pct,
        }))
    }
}

/// The repeats' (time µs, busbw) of the median time (of two, the faster), and their spread:
/// (slowest - fastest) / that time, percent (0 for one repeat).
fn median_and_spread(repeats: &[(f64, f64)]) -> (f64, f64, f64) {
    let mut by_time = repeats.to_vec();
    by_time.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (time_us, gbps) = by_time[(by_time.len() - 1) / 2];
    let spread = (by_time[by_time.len() - 1].0 - by_time[0].0) / time_us * 100.0;
    (time_us, gbps, if spread.is_finite() { spread } else { 0.0 })
}

#[cfg(test)]
mod tests {
    use super::{median_and_spread, transfer_bytes};

    #[test]
    fn the_ceiling_is_the_median_repeat_and_its_spread_the_range() {
        let (t, g, s) = median_and_spread(&[(120.0, 8.0), (100.0, 10.0), (110.0, 9.0)]);
        assert_eq!((t, g), (110.0, 9.0));
        assert!((s - 20.0 / 110.0 * 100.0).abs() < 1e-9, "{s}");
        // Two: the faster; one: no spread.
        assert_eq!(median_and_spread(&[(200.0, 5.0), (100.0, 10.0)]), (100.0, 10.0, 100.0));
        assert_eq!(median_and_spread(&[(100.0, 10.0)]), (100.0, 10.0, 0.0));
        // A machine busy during one repeat: the median keeps the quiet value, the spread says so.
        let (_, g, s) = median_and_spread(&[(70.0, 14.0), (9000.0, 0.11), (72.0, 13.6)]);
        assert_eq!(g, 13.6);
        assert!(s > crate::record::Ceiling::UNCERTAIN_PCT);
    }

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
                repeats: 3,
                spread_pct: 0.0,
            }
            .shown_gbps()
        };
        assert_eq!(shown(14.333068), "14.33");
        assert_eq!(shown(5.4321), "5.43");
        assert_eq!(shown(0.65049), "0.650");
        assert_eq!(shown(0.0062168), "0.00622");
    }
}
