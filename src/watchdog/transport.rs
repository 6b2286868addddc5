//! What the watchdog's announcement and inquiry logic needs of a network: send a packet to a
//! rank, take the next one for this rank, without blocking. The UDP side channel
//! (`channel::Channel`) is one; the in-memory network of `sim` (tests: thousands of simulated
//! ranks in one process) is the other, so both run the same logic (`tree`, `inquiry`).

use super::channel::{Kind, Packet, State};

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
