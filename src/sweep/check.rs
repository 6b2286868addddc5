//! The check pass of one call, as nccl-tests' `CheckData` around its `BenchTime`: the receive
//! buffer filled with [`SENTINEL`] (in place: the input written into it), the send buffer given
//! the rank's known input, one call (the caller's: it is timed and watched as its own), then
//! every output element compared with its expected value and the guard zone past the output
//! read back. The sweep, `tune` and `step` all check through [`Check`]; they differ only in
//! when they fill the send buffer (tune: once per backend and size, [`Check::prepare`]'s
//! `fill_send`) and in how they count (step adds the guard's bytes to the wrong elements).

use crate::backend::{Backend, Buf, Call};
use crate::collective::{Collective, Convention, Ctx};
use crate::error::Result;
use crate::verify::{fill_input, verify, DataErrors, GUARD_BYTES, SENTINEL};

/// One call's check on one rank: where its input and output lie in the two buffers.
pub struct Check {
    spec: &'static dyn Collective,
    ctx: Ctx,
    call: Call,
    /// The output's first element in the receive buffer.
    out_at: usize,
    /// The guard zone's first byte: just past the output (in place: past the whole extent).
    guard_from: usize,
}

impl Check {
    /// The check of `call` on rank `rank` of `nranks` (its group's) on a backend of `convention`.
    pub fn new(call: &Call, rank: usize, nranks: usize, convention: Convention) -> Check {
        let l = call.layout;
        let elem = call.dtype.size();
        let ctx = Ctx { rank, nranks, root: call.root, in_place: call.in_place, convention, layout: l };
        let (out_at, guard_from) =
            if call.in_place { (l.in_place_output, l.in_place_extent() * elem) } else { (0, l.recv_count * elem) };
        Check { spec: call.kind.spec(), ctx, call: *call, out_at, guard_from }
    }

    /// Bytes of the receive buffer the check writes and reads: the output and its guard.
    fn recv_len(&self) -> usize {
        self.guard_from + GUARD_BYTES
    }

    /// Before the call: the receive buffer's sentinel (and in place its input); out of place,
    /// the send buffer's input where `fill_send` (a caller that checks one size many times
    /// fills it once).
    pub fn prepare(&self, backend: &mut dyn Backend, fill_send: bool) -> Result<()> {
        let (spec, c, call) = (self.spec, &self.ctx, &self.call);
        let l = call.layout;
        backend.write(Buf::Recv, self.recv_len(), &mut |b| {
            b.fill(SENTINEL);
            if call.in_place {
                fill_input(spec, c, call.dtype, call.op, b, l.in_place_input);
            }
        })?;
        if !call.in_place && fill_send {
            backend.write(Buf::Send, l.send_count * call.dtype.size(), &mut |b| {
                fill_input(spec, c, call.dtype, call.op, b, 0);
            })?;
        }
        Ok(())
    }

    /// Testing only (`--debug-corrupt-rank`): flip a bit of this rank's first output element,
    /// as a broken link would, where the rank has output.
    pub fn corrupt(&self, backend: &mut dyn Backend) -> Result<()> {
        if self.spec.output_len(&self.ctx) == 0 {
            return Ok(());
        }
        let at = self.out_at * self.call.dtype.size();
        backend.write(Buf::Recv, self.recv_len(), &mut |b| b[at] ^= 0x40)
    }

    /// After the call: the output against the expected values, and the guard zone.
    pub fn verify(&self, backend: &mut dyn Backend) -> Result<DataErrors> {
        let (spec, c, call) = (self.spec, &self.ctx, &self.call);
        let (out_at, guard_from) = (self.out_at, self.guard_from);
        let mut verdict = DataErrors::default();
        backend.read(Buf::Recv, self.recv_len(), &mut |b| {
            verdict = verify(spec, c, call.dtype, call.op, b, out_at, guard_from);
        })?;
        Ok(verdict)
    }
}
