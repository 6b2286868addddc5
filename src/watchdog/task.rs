//! What the watchdog watches: the call, the sweep's phase, and where `coll-bench step` is. Below
//! every other file of the watchdog (the messages describe it, `Watchdog` arms it), so none of
//! them needs the module's root for it.

use crate::backend::Call;
use crate::layout::Dim;

/// What the sweep is doing while the watchdog is armed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    WarmUp,
    Timed,
    Check,
    /// The exchanges of timings and check results after a batch (small collectives).
    Results,
    /// A part of `coll-bench step`'s pass (`Task::calls` is 1).
    Step(StepTask),
}

/// Where `coll-bench step` is, for the message: the pass (armed once per pass, so the same
/// sequence of steps on every rank, whatever its stage's program) and the part of it this rank
/// is in (re-armed per call, `Watchdog::rearm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepTask {
    /// The layout's tp, ep, pp and dp.
    pub layout: [usize; 4],
    pub pass: StepPass,
    /// The pass runs this dimension's calls alone (the others idle).
    pub alone: Option<Dim>,
    pub part: StepPart,
    /// The rank that armed it (the message says where it waits).
    pub rank: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepPass {
    /// The layout's groups: communicators and buffers.
    SetUp,
    WarmUp,
    /// Timed step `i` (from 1) of `of`.
    Timed {
        i: u64,
        of: u64,
    },
    Check,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepPart {
    /// The barrier that starts the pass.
    Barrier,
    /// A collective of tp or dp: the task's call.
    Coll(Dim),
    /// PP's exchange of the call's bytes with the neighbouring stages (world ranks).
    Pp { to: Option<usize>, from: Option<usize> },
    /// The exchange of results (and whatever runs until the next pass is armed).
    Results,
}

/// The call being watched, for the message.
#[derive(Clone, Copy, Debug)]
pub struct Task {
    pub call: Call,
    pub phase: Phase,
    /// Calls in the batch.
    pub calls: u64,
}
