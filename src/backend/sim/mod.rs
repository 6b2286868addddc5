//! A simulated backend for one rank, in process, without MPI (as hyperfine's mock executor): for
//! unit tests of the sweep driver, batching, the iteration budget, the adaptive stop, the check
//! pass and the reports. Built only with `cfg(test)`: no flag reaches it.
//!
//! - Time: each call takes `latency_s + bytes / bandwidth` (bytes: the collective's algbw bytes,
//!   `alg_count × element size`), times a per-call factor from [`Noise`] (none, a seeded
//!   generator, or a scripted list), plus `first_call_extra_s` on the first call of each distinct
//!   call (collective, type, op, layout, placement). No clock is read: a sample is the sum of its
//!   batch's simulated times over the batch.
//! - Data: each run performs the collective on one rank for real, moving every output element
//!   from the input element that the collective's own description (`Collective::input` /
//!   `expected`) says it comes from; an output without a source stays as it was. [`Corrupt`]
//!   spoils the result on request.
//! - Every run is logged ([`Run`]), so tests see the batches the driver asked for.

use super::{Backend, Buf, Call};
use crate::collective::{Cell, Convention, Ctx};
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::collections::HashMap;

/// Per-call factors on the model time.
#[derive(Clone, Debug)]
pub(crate) enum Noise {
    None,
    /// Call × (1 + spread·u), u uniform in [0, 1) from a generator seeded with `seed`.
    Uniform {
        seed: u64,
        spread: f64,
    },
    /// The i-th call of the backend's life (counted from 0) × `factors[i % len]`.
    Script(Vec<f64>),
}

/// A wrong result on request, applied after every run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Corrupt {
    None,
    /// Flip a bit of output element `j` (of the collective's output, where it has one that long).
    Element(usize),
    /// Overwrite the byte `k` bytes past the end of the output (into the check's guard zone).
    PastEnd(usize),
}

/// One `Backend::run` as the driver asked for it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Run {
    pub call: String,
    pub in_place: bool,
    pub iters: usize,
    pub batch: usize,
    /// The samples it returned.
    pub samples: Vec<f64>,
}

pub(crate) struct SimBackend {
    pub latency_s: f64,
    /// Bytes per second.
    pub bandwidth: f64,
    pub first_call_extra_s: f64,
    pub noise: Noise,
    pub corrupt: Corrupt,
    /// Types `supports` refuses.
    pub unsupported: Vec<DType>,
    pub convention: Convention,
    pub log: Vec<Run>,
    send: Vec<u64>,
    recv: Vec<u64>,
    calls: u64,
    rng: u64,
    seen: Vec<String>,
}

impl SimBackend {
    /// Calls of `latency_s + bytes / bandwidth`, no noise, correct data.
    pub fn new(latency_s: f64, bandwidth: f64) -> SimBackend {
        SimBackend {
            latency_s,
            bandwidth,
            first_call_extra_s: 0.0,
            noise: Noise::None,
            corrupt: Corrupt::None,
            unsupported: vec![],
            convention: Convention::Mpi,
            log: vec![],
            send: vec![],
            recv: vec![],
            calls: 0,
            rng: 0,
            seen: vec![],
        }
    }

    pub fn with_noise(mut self, noise: Noise) -> SimBackend {
        if let Noise::Uniform { seed, .. } = noise {
            self.rng = seed;
        }
        self.noise = noise;
        self
    }

    /// Calls made so far (what [`Noise::Script`] counts).
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The model's time of one call, before noise.
    pub fn model_s(&self, call: &Call) -> f64 {
        self.latency_s + alg_bytes(call) as f64 / self.bandwidth
    }

    fn factor(&mut self) -> f64 {
        let i = self.calls;
        self.calls += 1;
        match &self.noise {
            Noise::None => 1.0,
            Noise::Uniform { spread, .. } => {
                let spread = *spread;
                1.0 + spread * uniform(&mut self.rng)
            }
            Noise::Script(f) if f.is_empty() => 1.0,
            Noise::Script(f) => f[i as usize % f.len()],
        }
    }

    fn bytes(&mut self, buf: Buf) -> &mut [u8] {
        let words = match buf {
            Buf::Send => &mut self.send,
            Buf::Recv => &mut self.recv,
        };
        // SAFETY: the Vec<u64> owns len × 8 initialised bytes; u8 has no alignment need, and the
        // slice borrows `words` uniquely for its lifetime.
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut u8, words.len() * 8) }
    }

    /// The collective on one rank: each output element from the input element it comes from.
    fn perform(&mut self, call: &Call) {
        let spec = call.kind.spec();
        let l = call.layout;
        let elem = call.dtype.size();
        let c = Ctx {
            rank: 0,
            nranks: 1,
            root: call.root,
            in_place: call.in_place,
            convention: self.convention,
            layout: l,
        };
        let (input_at, output_at) = if call.in_place { (l.in_place_input, l.in_place_output) } else { (0, 0) };
        let input_buf = if call.in_place { Buf::Recv } else { Buf::Send };
        let input: Vec<u8> = {
            let len = spec.input_len(&c);
            self.bytes(input_buf)[input_at * elem..(input_at + len) * elem].to_vec()
        };
        let mut source: HashMap<(u8, u64, u64), usize> = HashMap::new();
        for i in 0..input.len() / elem.max(1) {
            source.insert(key(spec.input(&c, i)), i);
        }
        let out_len = spec.output_len(&c);
        let corrupt = self.corrupt;
        let out = self.bytes(Buf::Recv);
        for j in 0..out_len {
            if let Some(&i) = source.get(&key(spec.expected(&c, j))) {
                let at = (output_at + j) * elem;
                out[at..at + elem].copy_from_slice(&input[i * elem..(i + 1) * elem]);
            }
        }
        match corrupt {
            Corrupt::None => {}
            Corrupt::Element(j) if j < out_len => out[(output_at + j) * elem] ^= 0x10,
            Corrupt::Element(_) => {}
            Corrupt::PastEnd(k) => {
                let end = if call.in_place { l.in_place_extent() } else { l.recv_count };
                out[end * elem + k] = 0;
            }
        }
    }
}

/// A cell as a key: a reduction over one rank is that rank's contribution.
fn key(cell: Cell) -> (u8, u64, u64) {
    match cell {
        Cell::Data { src, k } => (0, src, k),
        Cell::Contribution { idx } | Cell::Reduced { idx } => (1, idx, 0),
    }
}

fn alg_bytes(call: &Call) -> usize {
    call.layout.alg_count * call.dtype.size()
}

/// splitmix64, as a float in [0, 1).
fn uniform(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

impl Backend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }
    fn convention(&self) -> Convention {
        self.convention
    }
    fn describe(&self) -> Vec<String> {
        vec![format!("sim: {} s + bytes / {} B/s per call", self.latency_s, self.bandwidth)]
    }
    fn supports(&self, dtype: DType) -> Result<()> {
        if self.unsupported.contains(&dtype) {
            return Err(Error::usage(format!("the sim backend does not run {dtype}")));
        }
        Ok(())
    }
    fn allocate(&mut self, send_bytes: usize, recv_bytes: usize) -> Result<()> {
        self.send = vec![0; send_bytes.div_ceil(8)];
        self.recv = vec![0; recv_bytes.div_ceil(8)];
        Ok(())
    }
    fn write(&mut self, buf: Buf, len: usize, f: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        f(&mut self.bytes(buf)[..len]);
        Ok(())
    }
    fn read(&mut self, buf: Buf, len: usize, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        f(&self.bytes(buf)[..len]);
        Ok(())
    }
    fn run(&mut self, call: &Call, iters: usize, batch: usize, samples: &mut Vec<f64>) -> Result<()> {
        if batch == 0 || iters % batch != 0 {
            return Err(Error::setup(format!("sim: a batch of {batch} does not divide {iters} calls")));
        }
        let model = self.model_s(call);
        let id = format!("{} {:?} {:?} {:?} {}", call.kind, call.dtype, call.op, call.layout, call.in_place);
        samples.clear();
        for _ in 0..iters / batch {
            let mut t = 0.0;
            for _ in 0..batch {
                t += model * self.factor();
                if !self.seen.contains(&id) {
                    self.seen.push(id.clone());
                    t += self.first_call_extra_s;
                }
            }
            samples.push(t / batch as f64);
        }
        self.perform(call);
        self.log.push(Run { call: id, in_place: call.in_place, iters, batch, samples: samples.clone() });
        Ok(())
    }
}
