//! The pipeline's point-to-point transfers in 1F1B order, as Megatron-LM's
//! `forward_backward_pipelining_without_interleaving` makes them: stage s of P first runs
//! min(P − s − 1, M) forward passes (warm-up), then alternates one forward and one backward
//! (steady state), then runs the remaining backward passes (cool-down). Each of its
//! communications is one exchange that sends and receives at once (Megatron batches the isend
//! and irecv; here `MPI_Sendrecv`), so neighbouring stages meet exchange for exchange.

use serde::Serialize;

/// Which way a transfer goes: activations to the next stage, or gradients to the previous one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Dir {
    Forward,
    Backward,
}

/// One transfer: micro-batch `mb` going `dir`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Transfer {
    pub dir: Dir,
    pub mb: u64,
}

/// One exchange of a stage: what it sends (to the next stage when forward, the previous when
/// backward) and what it receives, either possibly absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Exchange {
    pub send: Option<Transfer>,
    pub recv: Option<Transfer>,
}

/// One slot of a stage's step: a forward or backward pass (where TP's calls go), or an exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Slot {
    Forward,
    Backward,
    Exchange(Exchange),
}

/// The exchanges of stage `s` of `p` stages for `m` micro-batches, in order.
pub fn one_f_one_b(s: usize, p: usize, m: u64) -> Vec<Exchange> {
    slots(s, p, m)
        .into_iter()
        .filter_map(|x| match x {
            Slot::Exchange(e) => Some(e),
            _ => None,
        })
        .collect()
}

/// The slots of stage `s` of `p` stages for `m` micro-batches, in order: m forward and m
/// backward passes with the exchanges between them (none when p = 1).
pub fn slots(s: usize, p: usize, m: u64) -> Vec<Slot> {
    let first = s == 0;
    let last = s + 1 == p;
    let fwd = |mb| Transfer { dir: Dir::Forward, mb };
    let bwd = |mb| Transfer { dir: Dir::Backward, mb };
    // What a stage sends forward it does not send from the last stage, and so on.
    let send_f = |mb| (!last).then(|| fwd(mb));
    let recv_f = |mb| (!first).then(|| fwd(mb));
    let send_b = |mb| (!first).then(|| bwd(mb));
    let recv_b = |mb| (!last).then(|| bwd(mb));
    let warmup = ((p - s - 1) as u64).min(m);
    let remaining = m - warmup;
    let mut out = vec![];
    let push = |out: &mut Vec<Slot>, send: Option<Transfer>, recv: Option<Transfer>| {
        if send.is_some() || recv.is_some() {
            out.push(Slot::Exchange(Exchange { send, recv }));
        }
    };
    // Forward micro-batches f, backward micro-batches b, counted as they are issued.
    let (mut f, mut b) = (0u64, 0u64);
    for _ in 0..warmup {
        push(&mut out, None, recv_f(f));
        out.push(Slot::Forward);
        push(&mut out, send_f(f), None);
        f += 1;
    }
    if remaining > 0 {
        push(&mut out, None, recv_f(f));
    }
    for i in 0..remaining {
        out.push(Slot::Forward);
        // Micro-batch f's output goes on while the gradient of b comes back.
        push(&mut out, send_f(f), recv_b(b));
        f += 1;
        out.push(Slot::Backward);
        if i + 1 == remaining {
            push(&mut out, send_b(b), None);
        } else {
            push(&mut out, send_b(b), recv_f(f));
        }
        b += 1;
    }
    for _ in 0..warmup {
        push(&mut out, None, recv_b(b));
        out.push(Slot::Backward);
        push(&mut out, send_b(b), None);
        b += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(send: Option<(Dir, u64)>, recv: Option<(Dir, u64)>) -> Exchange {
        let t = |(dir, mb)| Transfer { dir, mb };
        Exchange { send: send.map(t), recv: recv.map(t) }
    }

    #[test]
    fn every_stage_runs_each_micro_batch_forward_and_backward() {
        for p in 1..=4 {
            for s in 0..p {
                let v = slots(s, p, 5);
                assert_eq!(v.iter().filter(|x| **x == Slot::Forward).count(), 5);
                assert_eq!(v.iter().filter(|x| **x == Slot::Backward).count(), 5);
            }
        }
        assert!(slots(0, 1, 3).iter().all(|x| !matches!(x, Slot::Exchange(_))));
    }

    #[test]
    fn two_stages_two_micro_batches_by_hand() {
        use Dir::*;
        // Stage 0: F0 out; F1 out while B0 comes in; B1 in.
        assert_eq!(
            one_f_one_b(0, 2, 2),
            vec![x(Some((Forward, 0)), None), x(Some((Forward, 1)), Some((Backward, 0))), x(None, Some((Backward, 1)))]
        );
        // Stage 1 meets it exchange for exchange.
        assert_eq!(
            one_f_one_b(1, 2, 2),
            vec![x(None, Some((Forward, 0))), x(Some((Backward, 0)), Some((Forward, 1))), x(Some((Backward, 1)), None)]
        );
    }

    /// Every stage sends each micro-batch forward once (but the last) and backward once (but the
    /// first); what stage s sends, s+1 receives in the same order, and the k-th exchange of s
    /// that sends forward is matched, in the order of s+1's receives.
    #[test]
    fn neighbours_match_and_every_micro_batch_goes_both_ways() {
        for p in 1..=5 {
            for m in 1..=7u64 {
                let all: Vec<Vec<Exchange>> = (0..p).map(|s| one_f_one_b(s, p, m)).collect();
                for s in 0..p {
                    let sends_f: Vec<u64> =
                        all[s].iter().filter_map(|e| e.send).filter(|t| t.dir == Dir::Forward).map(|t| t.mb).collect();
                    let sends_b: Vec<u64> =
                        all[s].iter().filter_map(|e| e.send).filter(|t| t.dir == Dir::Backward).map(|t| t.mb).collect();
                    let want: Vec<u64> = (0..m).collect();
                    assert_eq!(sends_f, if s + 1 < p { want.clone() } else { vec![] }, "p={p} m={m} s={s}");
                    assert_eq!(sends_b, if s > 0 { want.clone() } else { vec![] }, "p={p} m={m} s={s}");
                    if s + 1 < p {
                        let recv_f: Vec<u64> = all[s + 1]
                            .iter()
                            .filter_map(|e| e.recv)
                            .filter(|t| t.dir == Dir::Forward)
                            .map(|t| t.mb)
                            .collect();
                        assert_eq!(recv_f, sends_f);
                    }
                }
            }
        }
    }

    /// Blocking exchanges cannot deadlock: simulate every stage stepping through its list, an
    /// exchange completing only when each side it names is met by the neighbour's matching
    /// exchange (both posted), and check that all stages finish.
    #[test]
    fn blocking_exchanges_finish() {
        for p in 1..=6 {
            for m in 1..=8u64 {
                let all: Vec<Vec<Exchange>> = (0..p).map(|s| one_f_one_b(s, p, m)).collect();
                let mut at = vec![0usize; p];
                // An exchange is met when the neighbour's current exchange receives what it
                // sends and sends what it receives (a rendezvous: stricter than MPI, whose
                // small sends complete eagerly). Advance every met stage together.
                let met = |at: &[usize], s: usize| {
                    let Some(e) = all[s].get(at[s]) else { return false };
                    let peer = |t: Transfer, sending: bool| match (t.dir, sending) {
                        (Dir::Forward, true) | (Dir::Backward, false) => s + 1,
                        _ => s - 1,
                    };
                    e.send.is_none_or(|t| all[peer(t, true)].get(at[peer(t, true)]).and_then(|x| x.recv) == Some(t))
                        && e.recv
                            .is_none_or(|t| all[peer(t, false)].get(at[peer(t, false)]).and_then(|x| x.send) == Some(t))
                };
                loop {
                    let ready: Vec<usize> = (0..p).filter(|&s| met(&at, s)).collect();
                    if ready.is_empty() {
                        break;
                    }
                    for s in ready {
                        at[s] += 1;
                    }
                }
                for s in 0..p {
                    assert_eq!(at[s], all[s].len(), "p={p} m={m}: stage {s} stuck at {}", at[s]);
                }
            }
        }
    }
}
