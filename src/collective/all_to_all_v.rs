//! All-to-all-v: rank s sends rank d its own count, from the traffic matrix of `--pattern`
//! ([`super::traffic`]). Blocks lie contiguous in rank order on both sides. The size is the
//! bytes a rank sends on average (nccl-tests' total); algbw's bytes are the busiest rank's,
//! sent or received (nccl-tests' `AlltoAllvGetBw`), with all-to-all's bus factor.
use super::traffic::{peer_counts, Pattern, PeerCounts};
use super::{Cell, Collective, Convention, Ctx, Kind, Layout};

pub struct AllToAllV;

/// The layout of `pattern` at `elems` elements (the whole send buffer of the mean rank).
pub fn layout(pattern: &Pattern, elems: usize, elem: usize, n: usize, rank: usize) -> Layout {
    let peers = peer_counts(pattern, elems, elem, n, rank);
    Layout {
        count: peers.nominal / n.max(1),
        send_count: peers.send_total(),
        recv_count: peers.recv_total(),
        alg_count: peers.busiest,
        in_place_input: 0,
        in_place_output: 0,
        peers: Some(peers),
    }
}

fn peers(c: &Ctx) -> &'static PeerCounts {
    c.layout.peers.expect("an all-to-all-v layout carries its counts")
}

impl Collective for AllToAllV {
    fn kind(&self) -> Kind {
        Kind::AllToAllV
    }
    fn name(&self) -> &'static str {
        "all-to-all-v"
    }
    /// Without a pattern: uniform (the sweep passes `--pattern` through [`super::layout_of`]).
    fn layout(&self, elems: usize, elem: usize, n: usize, rank: usize, _c: Convention) -> Layout {
        layout(&Pattern::Uniform, elems, elem, n, rank)
    }
    fn has_in_place(&self) -> bool {
        false
    }
    fn bus_factor(&self, n: usize) -> f64 {
        super::one_pass(n)
    }
    fn input(&self, c: &Ctx, i: usize) -> Cell {
        let p = peers(c);
        let (dest, k) = PeerCounts::locate(&p.send, &p.send_displs, i);
        Cell::Data { src: (c.rank * c.nranks + dest) as u64, k: k as u64 }
    }
    fn expected(&self, c: &Ctx, j: usize) -> Cell {
        let p = peers(c);
        let (source, k) = PeerCounts::locate(&p.recv, &p.recv_displs, j);
        Cell::Data { src: (source * c.nranks + c.rank) as u64, k: k as u64 }
    }
}
