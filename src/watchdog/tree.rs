//! The announcement tree: where each rank sends "I arrived at step N" (`Kind::Arrive`), so that
//! no rank receives more than `FAN_IN` announcements per step, whatever the number of ranks n.
//!
//! Ranks form a `CHILDREN`-ary tree by rank: rank r's parent is (r − 1) / `CHILDREN`; rank 0 is
//! the root and announces to rank 1 instead (so whichever of the two reports a hang knows the
//! other's last step, as before the tree). Rank 1 thus hears `CHILDREN` + 1 = `FAN_IN` ranks per
//! step, every other parent `CHILDREN`, a leaf none; the sender's cost stays one `sendto` per
//! step. Up to 32 ranks every rank is a child of rank 0: the same packets as before the tree.
//!
//! Nothing is forwarded up the tree while the job runs: no rank needs the job's view until a step
//! is given up on, and then the inquiry (`inquiry`) asks every rank anyway. What a parent heard
//! of its children travels with its inquiry packets instead (`Kind::Heard`, with every `Query`
//! and `State` it sends), so the rank that reports learns, for every silent rank whose parent
//! answers, the last step that rank announced, as rank 0 knew it for every rank before the tree:
//! it can still say "rank r never reached step s" or "reached it but never finished it".
//!
//! A stuck parent: its children are live and answer the inquiry themselves (their arrivals are
//! not needed); the parent is silent, and its own last step comes from its parent's `Heard`, so
//! it is named as before. Only a silent rank whose parent is silent too (two stuck ranks, one
//! the other's parent, or rank 0 and rank 1 both stuck) has no known last step: the line says it
//! "stopped answering (stopped, dead or cut off)", its rank and host still named.

use super::transport::Transport;
use super::transport::{Kind, State};

/// Children of each parent in the tree.
pub const CHILDREN: usize = 31;
/// The most announcements any rank receives per step (rank 1: its children and rank 0; the
/// simulation checks it).
#[cfg(test)]
pub const FAN_IN: usize = CHILDREN + 1;

/// Rank r's parent (none for rank 0).
pub fn parent(r: usize) -> Option<usize> {
    (r > 0).then(|| (r - 1) / CHILDREN)
}

/// Rank r's children among n ranks.
pub fn children(r: usize, n: usize) -> std::ops::Range<usize> {
    let first = (r * CHILDREN + 1).min(n);
    first..(first + CHILDREN).min(n)
}

/// Where rank r of n sends its announcements: its parent; rank 0's go to rank 1.
pub fn announce_to(r: usize, n: usize) -> Option<usize> {
    match parent(r) {
        Some(p) => Some(p),
        None => (n > 1).then_some(1),
    }
}

/// The ranks whose announcements rank r receives: its children, and rank 0 for rank 1.
pub fn hears(r: usize, n: usize) -> impl Iterator<Item = usize> {
    let root = (r == 1 && n > 1).then_some(0);
    root.into_iter().chain(children(r, n))
}

/// "I arrived at `step`", to this rank's parent (rank 0: to rank 1). Never blocks.
pub fn announce(t: &dyn Transport, step: u64) {
    if let Some(to) = announce_to(t.rank(), t.size()) {
        t.send(to, Kind::Arrive, &State { step, armed: true, ..State::default() });
    }
}

/// Send rank `to` what this rank heard of the ranks it hears (`arrivals`: the last step each
/// rank announced to this one), if it heard any: `Kind::Heard`, the pairs as text in the
/// description, `RANK:STEP` separated by spaces (at most `FAN_IN` pairs: a few hundred bytes).
pub fn send_heard(t: &dyn Transport, to: usize, arrivals: &[Option<u64>]) {
    let pairs: Vec<String> = hears(t.rank(), t.size())
        .filter_map(|r| arrivals.get(r).copied().flatten().map(|s| format!("{r}:{s}")))
        .collect();
    if !pairs.is_empty() {
        t.send(to, Kind::Heard, &State { desc: pairs.join(" "), ..State::default() });
    }
}

/// Record that `rank` armed `step` (announcements may arrive out of order).
pub fn note_arrival(arrivals: &mut [Option<u64>], rank: usize, step: u64) {
    if let Some(a) = arrivals.get_mut(rank) {
        *a = Some(a.map_or(step, |s| s.max(step)));
    }
}

/// Note what a `Heard` packet says into `arrivals` (malformed pairs are skipped).
pub fn note_heard(arrivals: &mut [Option<u64>], heard: &State) {
    for pair in heard.desc.split(' ') {
        if let Some((r, s)) = pair.split_once(':') {
            if let (Ok(r), Ok(s)) = (r.parse::<usize>(), s.parse::<u64>()) {
                note_arrival(arrivals, r, s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_but_0_has_one_parent_and_is_its_child() {
        for n in [1, 2, 31, 32, 33, 64, 1000, 4096] {
            let mut heard_by = vec![0usize; n];
            for r in 0..n {
                assert!(children(r, n).len() <= CHILDREN);
                for c in children(r, n) {
                    assert_eq!(parent(c), Some(r), "n {n}");
                }
                for h in hears(r, n) {
                    heard_by[h] += 1;
                }
                assert!(hears(r, n).count() <= FAN_IN);
                if let Some(to) = announce_to(r, n) {
                    assert!(hears(to, n).any(|h| h == r), "rank {r} of {n} announces to {to}, who does not hear it");
                }
            }
            // Every rank is heard by exactly one other (none with one rank).
            assert!(heard_by.iter().all(|&k| k == (n > 1) as usize), "n {n}: {heard_by:?}");
        }
        // Up to 32 ranks, every rank announces to rank 0 (and rank 0 to rank 1), as before.
        assert!((1..32).all(|r| announce_to(r, 32) == Some(0)));
        assert_eq!(announce_to(32, 64), Some(1));
    }

    #[test]
    fn heard_round_trips_through_text() {
        let mut a = vec![None; 70];
        a[0] = Some(3);
        a[40] = Some(17);
        let s = State {
            desc: hears(1, 70).filter_map(|r| a[r].map(|s| format!("{r}:{s}"))).collect::<Vec<_>>().join(" "),
            ..State::default()
        };
        let mut b = vec![None; 70];
        b[40] = Some(18);
        note_heard(&mut b, &State { desc: format!("{} junk 9:x 99999:1", s.desc), ..State::default() });
        assert_eq!((b[0], b[40], b[9]), (Some(3), Some(18), None));
    }
}
