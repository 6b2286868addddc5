//! The watchdog's one line. With the side channel, the rank that reports speaks for the job:
//! who did not answer, whether they reached the step the others wait in, and who waited, e.g.
//! `rank 1 (node2) never reached all-reduce of 65536 B (float, out-of-place, 40 timed calls),
//! step 17; ranks 0,2-3 (node1, node2) waited 5.2 s; aborting the job`. Without it, each rank
//! says what it waits in and on whom (`own_view`).

use super::task::{Phase, StepPart, StepPass, StepTask, Task};
use super::transport::State;
use crate::collective::{partner, ring_peers, Kind};
use crate::world::rank_list;
use std::collections::BTreeMap;

/// What a step is: `all-reduce of 65536 B (float, out-of-place, 40 timed calls)`.
pub fn describe(task: &Task) -> String {
    let c = &task.call;
    let placement = if c.in_place { "in-place" } else { "out-of-place" };
    let what = if c.kind.spec().sized() {
        let bytes = c.layout.alg_count * c.dtype.size();
        format!("{} of {bytes} B ({}, {placement}", c.kind.name(), c.dtype.name())
    } else {
        format!("{} ({placement}", c.kind.name())
    };
    match task.phase {
        Phase::WarmUp => format!("{what}, warm-up)"),
        Phase::Timed if task.calls > 1 => format!("{what}, {} timed calls)", task.calls),
        Phase::Timed => format!("{what})"),
        Phase::Check => format!("{what}, check call)"),
        Phase::Results => format!("the exchange of results after {what})"),
        Phase::Step(t) => describe_step(task, &t),
    }
}

/// Where `coll-bench step` is: the pass, and where the rank that armed it waits, e.g. `timed
/// step 2 of 5 of layout tp=2, pp=1, dp=2 (rank 0 waits in tp all-reduce of 524288 B, float)`.
/// The pass is what every rank shares (its step number); the part is this rank's own.
fn describe_step(task: &Task, t: &StepTask) -> String {
    let [tp, ep, pp, dp] = t.layout;
    // As step prints a layout: ep only where above 1.
    let layout = match ep {
        1 => format!("layout tp={tp}, pp={pp}, dp={dp}"),
        _ => format!("layout tp={tp}, ep={ep}, pp={pp}, dp={dp}"),
    };
    let alone = t.alone.map(|d| format!(", {d} alone")).unwrap_or_default();
    let pass = match t.pass {
        StepPass::SetUp => return format!("the set-up of {layout} (its groups' communicators and buffers)"),
        StepPass::WarmUp => format!("the warm-up step of {layout}{alone}"),
        StepPass::Timed { i, of } => format!("timed step {i} of {of} of {layout}{alone}"),
        StepPass::Check => format!("the check step of {layout}"),
    };
    let c = &task.call;
    let bytes = c.layout.alg_count * c.dtype.size();
    let part = match t.part {
        StepPart::Barrier => "the barrier that starts it".to_string(),
        StepPart::Coll(d) => format!("{d} {} of {bytes} B, {}", c.kind.name(), c.dtype.name()),
        StepPart::Pp { to: Some(to), from: Some(from) } => {
            format!("pp sendrecv of {bytes} B, to rank {to}, from rank {from}")
        }
        StepPart::Pp { to: Some(to), from: None } => format!("pp send of {bytes} B to rank {to}"),
        StepPart::Pp { to: None, from: Some(from) } => format!("pp receive of {bytes} B from rank {from}"),
        StepPart::Pp { to: None, from: None } => "pp, nothing to exchange".to_string(),
        StepPart::Results => "the exchange of results after it".to_string(),
    };
    format!("{pass} (rank {} waits in {part})", t.rank)
}

/// `rank 1 (node2)`, `ranks 0,2-3 (node1, node2)`.
fn who(ranks: &[usize], hosts: &[String]) -> String {
    let mut on: Vec<&str> = vec![];
    for &r in ranks {
        let h = hosts.get(r).map(String::as_str).unwrap_or("?");
        if !on.contains(&h) {
            on.push(h);
        }
    }
    let s = if ranks.len() == 1 { "" } else { "s" };
    format!("rank{s} {} ({})", rank_list(ranks), on.join(", "))
}

/// The job's line, as the reporting rank sees it: `answers` holds every rank that answered
/// (itself included), `arrivals` the last step each rank announced to this one, if any.
pub fn job_line(answers: &BTreeMap<usize, State>, arrivals: &[Option<u64>], hosts: &[String]) -> String {
    let n = hosts.len();
    let live: Vec<usize> = answers.keys().copied().collect();
    let silent: Vec<usize> = (0..n).filter(|r| !answers.contains_key(r)).collect();
    // The step the job waits in: the earliest any answering rank is in.
    let (step, desc) = answers
        .values()
        .min_by_key(|s| s.step)
        .map(|s| (s.step, s.desc.clone()))
        .unwrap_or((0, "an unknown step".into()));
    let waited = answers.values().map(|s| s.elapsed_s).fold(0.0, f64::max);
    let (mut never, mut unfinished, mut unknown) = (vec![], vec![], vec![]);
    for &r in &silent {
        match arrivals.get(r).copied().flatten() {
            Some(a) if a < step => never.push(r),
            Some(a) if a == step => unfinished.push(r),
            _ => unknown.push(r),
        }
    }
    let mut parts = vec![];
    let mut named = false;
    if !never.is_empty() {
        parts.push(format!("{} never reached {desc}, step {step}", who(&never, hosts)));
        named = true;
    }
    if !unfinished.is_empty() {
        let it = if named { "it".to_string() } else { format!("{desc}, step {step},") };
        parts.push(format!("{} reached {it} but never finished it", who(&unfinished, hosts)));
        named = true;
    }
    if !unknown.is_empty() {
        parts.push(format!("{} stopped answering (stopped, dead or cut off)", who(&unknown, hosts)));
    }
    let place = if named { String::new() } else { format!(" in {desc}, step {step}") };
    if silent.is_empty() {
        parts.push(format!(
            "every rank answered, so none is stopped or cut off; {} waited {} s{place} (a message lost inside MPI?)",
            who(&live, hosts),
            seconds(waited)
        ));
    } else {
        parts.push(format!("{} waited {} s{place}", who(&live, hosts), seconds(waited)));
    }
    format!("{}; aborting the job", parts.join("; "))
}

/// One rank's own view, when there is no side channel (one rank, or no socket): the step, this
/// rank and the ranks its call depends on.
pub fn own_view(task: &Task, limit_s: f64, rank: usize, hosts: &[String]) -> String {
    let what = describe(task);
    let host = hosts.get(rank).map(String::as_str).unwrap_or("?");
    let peers = peers(task, rank, hosts.len());
    let waiting = if peers.is_empty() { String::new() } else { format!("; waiting on {}", who(&peers, hosts)) };
    format!("{what} did not finish within {} s on rank {rank} ({host}){waiting}; aborting the job", seconds(limit_s))
}

/// The ranks this rank's call depends on.
fn peers(task: &Task, rank: usize, n: usize) -> Vec<usize> {
    let c = &task.call;
    let others = || (0..n).filter(|&r| r != rank).collect::<Vec<_>>();
    match task.phase {
        Phase::Results => return others(),
        // A step's call waits on its group (not known here) or its pipeline neighbours.
        Phase::Step(StepTask { part: StepPart::Coll(_), .. }) => return vec![],
        Phase::Step(StepTask { part: StepPart::Pp { to, from }, .. }) => {
            let mut p: Vec<usize> = to.into_iter().chain(from).collect();
            p.sort_unstable();
            p.dedup();
            return p;
        }
        Phase::Step(_) => return others(),
        _ => {}
    }
    match c.kind {
        Kind::SendRecv => {
            let (to, from) = ring_peers(rank, n);
            let mut p: Vec<usize> = [to, from].into_iter().filter(|&r| r != rank).collect();
            p.sort_unstable();
            p.dedup();
            p
        }
        Kind::PingPong => {
            let p = partner(rank, n);
            if p == rank {
                vec![]
            } else {
                vec![p]
            }
        }
        Kind::Broadcast | Kind::Scatter | Kind::Reduce | Kind::Gather if rank != c.root => vec![c.root],
        _ => others(),
    }
}

pub fn seconds(s: f64) -> String {
    if (s - s.round()).abs() < 0.05 {
        format!("{}", s.round())
    } else {
        format!("{s:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Call;
    use crate::collective::Layout;
    use crate::dtype::{DType, Op};

    fn task(kind: Kind, phase: Phase, calls: u64) -> Task {
        let layout = Layout { alg_count: 16384, ..Layout::default() };
        let call = Call { kind, dtype: DType::Float32, op: Op::Sum, root: 0, layout, in_place: false };
        Task { call, phase, calls }
    }

    fn hosts() -> Vec<String> {
        ["n1", "n2", "n1", "n2"].iter().map(|s| s.to_string()).collect()
    }

    fn state(step: u64, elapsed_s: f64) -> State {
        State { step, armed: true, elapsed_s, desc: describe(&task(Kind::AllReduce, Phase::Timed, 40)) }
    }

    #[test]
    fn own_view_names_call_rank_host_and_peers() {
        let m = own_view(&task(Kind::AllReduce, Phase::Timed, 1), 5.0, 3, &hosts());
        assert_eq!(
            m,
            "all-reduce of 65536 B (float, out-of-place) did not finish within 5 s on rank 3 (n2); waiting on ranks 0-2 (n1, n2); aborting the job"
        );
        let m = own_view(&task(Kind::PingPong, Phase::Check, 1), 2.5, 2, &hosts());
        assert!(m.starts_with("ping-pong of 65536 B (float, out-of-place, check call) did not finish within 2.5 s on rank 2 (n1); waiting on rank 3 (n2);"), "{m}");
        // The ring: the rank sends to the next and receives from the previous.
        let m = own_view(&task(Kind::SendRecv, Phase::Check, 1), 2.5, 0, &hosts());
        assert!(m.contains("on rank 0 (n1); waiting on ranks 1,3 (n2)"), "{m}");
        let m = own_view(&task(Kind::Broadcast, Phase::Timed, 40), 5.0, 1, &hosts());
        assert!(m.contains("(float, out-of-place, 40 timed calls)") && m.contains("waiting on rank 0 (n1)"), "{m}");
        let m = own_view(&task(Kind::Barrier, Phase::Results, 1), 5.0, 0, &hosts());
        assert!(m.starts_with("the exchange of results after barrier (out-of-place) did not finish"), "{m}");
    }

    fn step_task(part: StepPart, pass: StepPass, alone: Option<crate::layout::Dim>) -> Task {
        let layout = Layout { alg_count: 131072, ..Layout::default() };
        let call = Call { kind: Kind::AllReduce, dtype: DType::Float32, op: Op::Sum, root: 0, layout, in_place: false };
        Task { call, phase: Phase::Step(StepTask { layout: [2, 1, 1, 2], pass, alone, part, rank: 2 }), calls: 1 }
    }

    #[test]
    fn a_step_names_its_pass_layout_dimension_call_and_size() {
        use crate::layout::Dim;
        let timed = StepPass::Timed { i: 2, of: 5 };
        assert_eq!(
            describe(&step_task(StepPart::Coll(Dim::Tp), timed, None)),
            "timed step 2 of 5 of layout tp=2, pp=1, dp=2 (rank 2 waits in tp all-reduce of 524288 B, float)"
        );
        assert_eq!(
            describe(&step_task(StepPart::Coll(Dim::Dp), StepPass::WarmUp, Some(Dim::Dp))),
            "the warm-up step of layout tp=2, pp=1, dp=2, dp alone (rank 2 waits in dp all-reduce of 524288 B, float)"
        );
        let mut t = step_task(StepPart::Pp { to: Some(3), from: Some(1) }, StepPass::Check, None);
        t.call.dtype = DType::Uint8;
        assert_eq!(
            describe(&t),
            "the check step of layout tp=2, pp=1, dp=2 (rank 2 waits in pp sendrecv of 131072 B, to rank 3, from rank 1)"
        );
        t.phase = Phase::Step(StepTask { part: StepPart::Pp { to: None, from: Some(0) }, ..step_task_of(&t) });
        assert!(describe(&t).ends_with("(rank 2 waits in pp receive of 131072 B from rank 0)"), "{}", describe(&t));
        // own view: a PP exchange waits on its neighbour, a collective on a group not known here.
        assert!(own_view(&t, 5.0, 2, &hosts()).contains("; waiting on rank 0 (n1); aborting the job"));
        let m = own_view(&step_task(StepPart::Coll(Dim::Tp), timed, None), 5.0, 2, &hosts());
        assert!(m.ends_with("did not finish within 5 s on rank 2 (n1); aborting the job"), "{m}");
        assert_eq!(
            describe(&step_task(StepPart::Barrier, StepPass::SetUp, None)),
            "the set-up of layout tp=2, pp=1, dp=2 (its groups' communicators and buffers)"
        );
        assert!(describe(&step_task(StepPart::Results, timed, None))
            .ends_with("(rank 2 waits in the exchange of results after it)"));
    }

    fn step_task_of(t: &Task) -> StepTask {
        match t.phase {
            Phase::Step(s) => s,
            _ => panic!("not a step"),
        }
    }

    #[test]
    fn the_job_line_names_who_did_not_answer() {
        let answers: BTreeMap<usize, State> = [(0, state(17, 5.0)), (2, state(17, 5.21)), (3, state(18, 4.0))].into();
        // Rank 1 announced step 16 only: it never reached 17.
        let m = job_line(&answers, &[None, Some(16), Some(17), Some(18)], &hosts());
        assert_eq!(
            m,
            "rank 1 (n2) never reached all-reduce of 65536 B (float, out-of-place, 40 timed calls), step 17; ranks 0,2-3 (n1, n2) waited 5.2 s; aborting the job"
        );
        // It announced 17: it got there and stopped inside.
        let m = job_line(&answers, &[None, Some(17), None, None], &hosts());
        assert!(m.starts_with("rank 1 (n2) reached all-reduce of 65536 B (float, out-of-place, 40 timed calls), step 17, but never finished it; ranks 0,2-3 (n1, n2) waited 5.2 s;"), "{m}");
        // Nothing known (rank 0 reports the others, only rank 1 hears rank 0).
        let answers: BTreeMap<usize, State> = [(1, state(17, 5.0)), (3, state(17, 5.0))].into();
        let m = job_line(&answers, &[Some(17), None, None, None], &hosts());
        assert_eq!(
            m,
            "rank 0 (n1) reached all-reduce of 65536 B (float, out-of-place, 40 timed calls), step 17, but never finished it; rank 2 (n1) stopped answering (stopped, dead or cut off); ranks 1,3 (n2) waited 5 s; aborting the job"
        );
        let m = job_line(&answers, &[None; 4], &hosts());
        assert_eq!(
            m,
            "ranks 0,2 (n1) stopped answering (stopped, dead or cut off); ranks 1,3 (n2) waited 5 s in all-reduce of 65536 B (float, out-of-place, 40 timed calls), step 17; aborting the job"
        );
        let all: BTreeMap<usize, State> = (0..4).map(|r| (r, state(17, 6.0))).collect();
        let m = job_line(&all, &[None; 4], &hosts());
        assert!(
            m.starts_with(
                "every rank answered, so none is stopped or cut off; ranks 0-3 (n1, n2) waited 6 s in all-reduce"
            ),
            "{m}"
        );
        assert!(!m.contains('\n'));
    }
}
