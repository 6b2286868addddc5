//! What the watchdog's announcement and inquiry logic needs of a network: send a packet to a
//! rank, take the next one for this rank, without blocking. The UDP side channel
//! (`channel::Channel`) is one; the in-memory network of `sim` (tests: thousands of simulated
//! ranks in one process) is the other, so both run the same logic (`tree`, `inquiry`). The
//! packets and their kinds live here, below both, so neither network names the other.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The sender arms step `step` (main thread, before the calls).
    Arrive = 1,
    /// "A step has hung somewhere: where are you?" Carries the sender's own state.
    Query = 2,
    /// The answer to a query: the sender's state.
    State = 3,
    /// The sender has printed the job's line and ends; the receiver may end quietly.
    Done = 4,
    /// An MPI call failed on the sender, whose line is the description: rank 0 prints it and
    /// ends every rank (`End`, `Bye`, then `Finish` or `Done`).
    Failed = 5,
    /// Rank 0 has printed a failed call's line: answer `Bye` and wait for `Finish` (or `Done`).
    End = 6,
    /// The answer to `End`: the sender is alive and will end when told.
    Bye = 7,
    /// Every rank said `Bye`: leave the launcher's books (`pmi`) and end with exit code 2.
    Finish = 8,
    /// With an inquiry's `Query` or `State`: the last step each rank the sender hears in the
    /// announcement tree announced to it (`tree::send_heard`).
    Heard = 9,
}

/// One rank's state as it reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct State {
    /// Steps armed so far (the same sequence on every rank).
    pub step: u64,
    /// Whether that step is still being watched (not between points).
    pub armed: bool,
    /// Seconds since it was armed.
    pub elapsed_s: f64,
    /// What the step is, e.g. `all-reduce of 64 B (float, out-of-place, 40 timed calls)`.
    pub desc: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Packet {
    pub kind: Kind,
    pub from: usize,
    pub to: usize,
    pub state: State,
}

pub trait Transport {
    /// This rank.
    fn rank(&self) -> usize;
    /// Ranks in the job.
    fn size(&self) -> usize;
    /// Send `state` as a `kind` packet to rank `to`; a packet may be lost, as on a wire.
    fn send(&self, to: usize, kind: Kind, state: &State);
    /// The next packet for this rank, if one is waiting. Never blocks.
    fn recv(&self) -> Option<Packet>;
}
