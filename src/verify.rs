//! Exact input patterns and the check of results. Every value is a small integer that each type
//! represents exactly, and sums and products of them stay exact, so results compare bit for bit.
//!
//! - Data that is only moved: `(src·2654435761 + k·40503 + 11) mod M`, with M from
//!   [`DType::pattern_modulus`], so a block from the wrong rank or at the wrong offset shows.
//! - Reduction inputs: for sum/avg/min/max `((5r + 3i + 1) mod 7)` (minus 3 for signed types);
//!   for prod 2 where `(i + 3r) mod 6 = 0`, −1 (signed) where it is 3, else 1. Both depend on i
//!   only through i mod 42, so the expected reduction is a table of 42 values.
//!
//! float16, bfloat16 and the 8-bit floats (no host arithmetic: [`crate::dtype::Narrow`] encodes
//! and decodes them) take the same patterns. Moved data must arrive bit for bit; a reduction is
//! judged within a tolerance derived from the type and the rank count, as nccl-tests judges
//! these types within one: the library rounds to the type after each step (and fp8 sums pass
//! through half), so for n ranks the result may differ from the exact value by the bound of
//! recursive summation, `((1+u)^k - 1)·Σ|x|`, u the type's unit roundoff, k = n-1 steps for sum
//! and prod, n+1 for avg (the 1/n scalar and each product rounded too, as NCCL multiplies each
//! input by 1/n), plus n of the type's smallest step for avg's underflow. Min and max are exact.

use crate::collective::{Cell, Collective, Ctx};
use crate::dtype::{cast_slice, cast_slice_mut, DType, Element, Narrow, Op};
use crate::with_element;

/// The byte the receive buffer is filled with before the check: a value no pattern produces.
pub const SENTINEL: u8 = 0xA5;
/// Bytes past the expected output that must still hold the sentinel after the call.
pub const GUARD_BYTES: usize = 256;
const PERIOD: usize = 42;

/// Input of rank `r` at reduction index `idx`, as an integer.
fn contribution(op: Op, signed: bool, r: u64, idx: u64) -> i64 {
    match op {
        Op::Prod => match (idx + 3 * r) % 6 {
            0 => 2,
            3 if signed => -1,
            _ => 1,
        },
        _ => {
            let v = ((5 * r + 3 * idx + 1) % 7) as i64;
            if signed {
                v - 3
            } else {
                v
            }
        }
    }
}

fn data_value(src: u64, k: u64, modulus: u64) -> i64 {
    (src.wrapping_mul(2_654_435_761).wrapping_add(k.wrapping_mul(40_503)).wrapping_add(11) % modulus) as i64
}

/// Typed values of cells for one rank, dtype and op.
struct Values<T: Element> {
    modulus: u64,
    /// This rank's contributions, by index mod [`PERIOD`].
    inputs: [T; PERIOD],
    reduced: [T; PERIOD],
}

impl<T: Element> Values<T> {
    fn new(op: Op, rank: usize, nranks: usize) -> Self {
        let signed = T::SIGNED;
        let mut reduced = [T::from_i64(0); PERIOD];
        for (idx, slot) in reduced.iter_mut().enumerate() {
            let mut acc = T::from_i64(contribution(op, signed, 0, idx as u64));
            for r in 1..nranks as u64 {
                acc = T::combine(op, acc, T::from_i64(contribution(op, signed, r, idx as u64)));
            }
            if op == Op::Avg {
                acc = acc.div_ranks(nranks);
            }
            *slot = acc;
        }
        let mut inputs = [T::from_i64(0); PERIOD];
        for (idx, slot) in inputs.iter_mut().enumerate() {
            *slot = T::from_i64(contribution(op, signed, rank as u64, idx as u64));
        }
        Values { modulus: T::DTYPE.pattern_modulus(), inputs, reduced }
    }

    /// `f(t, value)` for the `len` cells from `first` on, stepped one at a time ([`Cell::step`]):
    /// each cell's value (moved data: [`data_value`]; an input: [`contribution`]; a reduction: the
    /// table), without per-element arithmetic. Moved data steps its
    /// residue by `40503 mod M` (exact while `src·2654435761 + k·40503 + 11` stays below 2^64,
    /// which every run of a real buffer does; else element by element); inputs and reductions
    /// walk their tables of [`PERIOD`].
    #[inline]
    fn each(&self, first: Cell, len: usize, mut f: impl FnMut(usize, T)) {
        // Generic, not a closure over `dyn FnMut`: no indirect call per element.
        #[inline]
        fn walk<T: Copy>(table: &[T; PERIOD], idx: u64, len: usize, f: &mut impl FnMut(usize, T)) {
            let mut p = (idx % PERIOD as u64) as usize;
            for t in 0..len {
                f(t, table[p]);
                p += 1;
                if p == PERIOD {
                    p = 0;
                }
            }
        }
        match first {
            Cell::Data { src, k } => {
                let m = self.modulus;
                let fits = (k.checked_add(len as u64))
                    .and_then(|end| end.checked_mul(40_503))
                    .and_then(|x| x.checked_add(src.checked_mul(2_654_435_761)?))
                    .and_then(|x| x.checked_add(11))
                    .is_some();
                if !fits {
                    for t in 0..len {
                        f(t, T::from_i64(data_value(src, k + t as u64, m)));
                    }
                    return;
                }
                let step = 40_503 % m;
                let mut r = data_value(src, k, m) as u64;
                for t in 0..len {
                    f(t, T::from_i64(r as i64));
                    r += step;
                    if r >= m {
                        r -= m;
                    }
                }
            }
            Cell::Contribution { idx } => walk(&self.inputs, idx, len, &mut f),
            Cell::Reduced { idx } => walk(&self.reduced, idx, len, &mut f),
        }
    }
}

/// The exact reduction over `n` ranks at pattern index `idx` and the tolerance it is judged
/// with (module doc), for a narrow float type of format `f`.
fn narrow_reduced(f: Narrow, op: Op, n: usize, idx: u64) -> (f64, f64) {
    let xs: Vec<f64> = (0..n as u64).map(|r| contribution(op, true, r, idx) as f64).collect();
    let mass: f64 = xs.iter().map(|x| x.abs()).sum();
    let steps = |k: usize| (1.0 + f.unit_roundoff()).powi(k as i32) - 1.0;
    let nf = n as f64;
    match op {
        Op::Sum => (xs.iter().sum(), steps(n - 1) * mass),
        Op::Avg => (xs.iter().sum::<f64>() / nf, steps(n + 1) * mass / nf + nf * f.min_positive()),
        Op::Prod => {
            let p: f64 = xs.iter().product();
            (p, steps(n - 1) * p.abs())
        }
        Op::Min => (xs.iter().cloned().fold(f64::INFINITY, f64::min), 0.0),
        Op::Max => (xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max), 0.0),
    }
}

/// Whether a narrow float type's check can judge `op` on `n` ranks: every exact result of the
/// patterns must be finite in the type (prod multiplies up to ⌈n/2⌉ twos, sums reach 3n).
pub fn narrow_fits(dtype: DType, op: Op, n: usize) -> std::result::Result<(), String> {
    let Some(f) = dtype.narrow() else { return Ok(()) };
    let worst = (0..PERIOD as u64).map(|i| narrow_reduced(f, op, n, i).0.abs()).fold(0.0, f64::max);
    if worst > f.max() {
        return Err(format!(
            "-o/--op: {op} of {dtype} on {n} ranks reaches {worst} in the check's pattern, beyond {dtype}'s largest value {}; use fewer ranks, another op, or -c 0",
            f.max()
        ));
    }
    Ok(())
}

/// The value of `cell` for a narrow type: (exact value, tolerance).
fn narrow_value(f: Narrow, dtype: DType, op: Op, c: &Ctx, cell: Cell) -> (f64, f64) {
    match cell {
        Cell::Data { src, k } => (data_value(src, k, dtype.pattern_modulus()) as f64, 0.0),
        Cell::Contribution { idx } => (contribution(op, true, c.rank as u64, idx % PERIOD as u64) as f64, 0.0),
        Cell::Reduced { idx } => narrow_reduced(f, op, c.nranks, idx % PERIOD as u64),
    }
}

fn narrow_get(buf: &[u8], size: usize, i: usize) -> u16 {
    match size {
        1 => u16::from(buf[i]),
        _ => u16::from_le_bytes([buf[2 * i], buf[2 * i + 1]]),
    }
}

fn unsupported(dtype: DType) -> ! {
    panic!("{dtype} has no host arithmetic; the backend must reject it before the check")
}

/// Write this rank's input into `buf` (element offset `at`). Returns the elements written.
pub fn fill_input(coll: &dyn Collective, c: &Ctx, dtype: DType, op: Op, buf: &mut [u8], at: usize) -> usize {
    if let Some(f) = dtype.narrow() {
        let (len, size) = (coll.input_len(c), dtype.size());
        for i in 0..len {
            let bits = f.encode(narrow_value(f, dtype, op, c, coll.input(c, i)).0);
            let j = at + i;
            match size {
                1 => buf[j] = bits as u8,
                _ => buf[2 * j..2 * j + 2].copy_from_slice(&bits.to_le_bytes()),
            }
        }
        return len;
    }
    with_element!(dtype, T => {
        let v = Values::<T>::new(op, c.rank, c.nranks);
        let len = coll.input_len(c);
        let out = &mut cast_slice_mut::<T>(buf)[at..at + len];
        // Run by run (Collective::input_run), as nccl-tests fills a slice at a time.
        let mut i = 0;
        while i < len {
            let run = coll.input_run(c, i).clamp(1, len - i);
            let slice = &mut out[i..i + run];
            v.each(coll.input(c, i), run, |t, x| slice[t] = x);
            i += run;
        }
        len
    }, else unsupported(dtype))
}

/// Outcome of checking one call on one rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataErrors {
    /// Output elements that differ from the expected value.
    pub wrong: u64,
    /// Bytes in the guard zone past the output (and input) that the call overwrote.
    pub out_of_bounds: u64,
}

/// Compare the output in `buf` (starting at element `at`) with the expected values, and check that
/// the guard zone from byte `guard_from` on still holds [`SENTINEL`].
pub fn verify(
    coll: &dyn Collective,
    c: &Ctx,
    dtype: DType,
    op: Op,
    buf: &[u8],
    at: usize,
    guard_from: usize,
) -> DataErrors {
    let wrong = if let Some(f) = dtype.narrow() {
        let (len, size) = (coll.output_len(c), dtype.size());
        // The table of reductions, once (their tolerance takes a pass over the ranks).
        let table: Vec<(f64, f64)> = (0..PERIOD as u64).map(|i| narrow_reduced(f, op, c.nranks, i)).collect();
        (0..len)
            .filter(|j| {
                let got = f.decode(narrow_get(buf, size, at + j));
                let (want, tol) = match coll.expected(c, *j) {
                    Cell::Reduced { idx } => table[idx as usize % PERIOD],
                    cell => narrow_value(f, dtype, op, c, cell),
                };
                // Moved data and inputs are exact integers of the type: bit for bit in effect.
                got.is_nan() || (got - want).abs() > tol
            })
            .count() as u64
    } else {
        with_element!(dtype, T => {
        let v = Values::<T>::new(op, c.rank, c.nranks);
        let len = coll.output_len(c);
        let out = &cast_slice::<T>(buf)[at..at + len];
        // Run by run (Collective::expected_run), as nccl-tests checks a slice at a time.
        let (mut j, mut wrong) = (0, 0u64);
        while j < len {
            let run = coll.expected_run(c, j).clamp(1, len - j);
            let slice = &out[j..j + run];
            v.each(coll.expected(c, j), run, |t, x| wrong += u64::from(!slice[t].same(x)));
            j += run;
        }
        wrong
    }, else unsupported(dtype))
    };
    let guard_to = (guard_from + GUARD_BYTES).min(buf.len());
    let out_of_bounds = buf[guard_from.min(guard_to)..guard_to].iter().filter(|b| **b != SENTINEL).count() as u64;
    DataErrors { wrong, out_of_bounds }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::traffic::{Matrix, Moe, Pattern};
    use crate::collective::{Convention, Kind};

    /// The runs each collective declares (`input_run`, `expected_run`) are runs: every cell in
    /// one is the first stepped (`Cell::step`), on 1 to 8 ranks, every rank, both placements
    /// and conventions, sizes with whole and partial blocks; and walking a run (`Values::each`)
    /// gives each cell's own value, the wide-data fallback included.
    #[test]
    fn declared_runs_are_runs_and_walk_to_each_cells_value() {
        let check_runs = |what: &str, len: usize, cell: &dyn Fn(usize) -> Cell, run: &dyn Fn(usize) -> usize| {
            let mut i = 0;
            while i < len {
                let r = run(i).clamp(1, len - i);
                let first = cell(i);
                for t in 0..r {
                    assert_eq!(cell(i + t), first.step(t as u64), "{what}: element {} in the run from {i}", i + t);
                }
                i += r;
            }
        };
        for kind in Kind::ALL {
            let spec = kind.spec();
            for n in 1..=8 {
                for elems in [0, 1, 7, 64, 1000, 4099] {
                    for rank in 0..n {
                        for convention in [Convention::Mpi, Convention::Nccl] {
                            for in_place in [false, true] {
                                let layout = crate::collective::layout_of(
                                    kind,
                                    &Pattern::Uniform,
                                    elems,
                                    4,
                                    n,
                                    rank,
                                    convention,
                                );
                                let c = Ctx { rank, nranks: n, root: n / 2, in_place, convention, layout };
                                let what = format!("{kind} n={n} elems={elems} rank={rank} {convention:?} {in_place}");
                                check_runs(&what, spec.input_len(&c), &|i| spec.input(&c, i), &|i| {
                                    spec.input_run(&c, i)
                                });
                                check_runs(&what, spec.output_len(&c), &|j| spec.expected(&c, j), &|j| {
                                    spec.expected_run(&c, j)
                                });
                            }
                        }
                    }
                }
            }
        }
        fn walk<T: Element + PartialEq + std::fmt::Debug>(op: Op) {
            let (rank, n) = (3, 5);
            let v = Values::<T>::new(op, rank, n);
            // Each cell on its own, from the pattern's formulas (the reduction: its table).
            let value = |cell: Cell| match cell {
                Cell::Data { src, k } => T::from_i64(data_value(src, k, T::DTYPE.pattern_modulus())),
                Cell::Contribution { idx } => {
                    T::from_i64(contribution(op, T::SIGNED, rank as u64, idx % PERIOD as u64))
                }
                Cell::Reduced { idx } => v.reduced[idx as usize % PERIOD],
            };
            let firsts = [
                Cell::Data { src: 2, k: 0 },
                Cell::Data { src: 7, k: 16_777_200 },
                Cell::Data { src: u64::MAX / 3, k: 5 },
                Cell::Contribution { idx: 40 },
                Cell::Reduced { idx: 1000 },
            ];
            for first in firsts {
                let mut got = vec![];
                v.each(first, 100, |t, x| got.push((t, x)));
                let want: Vec<(usize, T)> = (0..100).map(|t| (t, value(first.step(t as u64)))).collect();
                assert_eq!(got, want, "{first:?}");
            }
        }
        for op in [Op::Sum, Op::Prod, Op::Max] {
            walk::<f32>(op);
            walk::<i32>(op);
            walk::<u8>(op);
            walk::<f64>(op);
        }
    }

    #[test]
    fn patterns_fit_every_type_exactly() {
        for d in DType::ALL {
            let m = d.pattern_modulus() as i64;
            for src in [0u64, 1, 7, 1000, 1 << 20] {
                for k in [0u64, 1, 99, 1 << 30] {
                    let v = data_value(src, k, m as u64);
                    assert!((0..m).contains(&v));
                }
            }
        }
        assert!(DType::Float32.pattern_modulus() < 1 << 24);
        assert!(DType::Float16.pattern_modulus() < 1 << 11);
        assert!(DType::Int8.pattern_modulus() < 128);
    }

    /// The expected integer avg at rank counts the narrow types cannot hold, every type: the sum
    /// of every rank's contribution, done in i128 and wrapped to the type as the wire wraps it,
    /// divided by n (NCCL's `FuncSumPostDiv`, and MPI's sum then our division).
    #[test]
    fn integer_avg_is_expected_right_at_any_rank_count() {
        fn check<T: Element + TryFrom<i128> + PartialEq + std::fmt::Debug>(n: usize) {
            let v = Values::<T>::new(Op::Avg, 0, n);
            let bits = 8 * std::mem::size_of::<T>() as u32;
            for idx in 0..PERIOD {
                let sum: i128 = (0..n as u64).map(|r| contribution(Op::Avg, T::SIGNED, r, idx as u64) as i128).sum();
                let m = 1i128 << bits;
                let mut wrapped = sum.rem_euclid(m);
                if T::SIGNED && wrapped >= m / 2 {
                    wrapped -= m;
                }
                let want = T::try_from(wrapped / n as i128).ok().unwrap();
                assert_eq!(v.reduced[idx], want, "{} avg on {n} ranks, index {idx} (sum {sum})", T::DTYPE);
            }
        }
        for n in [127, 128, 255, 256, 1000] {
            check::<i8>(n);
            check::<u8>(n);
            check::<i32>(n);
            check::<u32>(n);
            check::<i64>(n);
            check::<u64>(n);
        }
    }

    #[test]
    fn avg_of_float_sums_is_exact() {
        let v = Values::<f32>::new(Op::Avg, 0, 3);
        // index 0: contributions of ranks 0,1,2 are (1,6,4) - 3 = (-2, 3, 1): sum 2, avg 2/3.
        assert_eq!(v.reduced[0], 2.0f32 / 3.0);
        let v = Values::<i32>::new(Op::Avg, 0, 3);
        assert_eq!(v.reduced[0], 0);
    }

    /// Simulate an all-reduce on 3 ranks in plain Rust: the check passes on the right answer
    /// and counts each corrupted element.
    #[test]
    fn check_detects_corruption() {
        let n = 3;
        for dtype in [DType::Int32, DType::Float32, DType::Float64, DType::Uint8] {
            for op in Op::ALL {
                let coll = Kind::AllReduce.spec();
                let elems = 100;
                let mut inputs = vec![];
                for rank in 0..n {
                    let layout = coll.layout(elems, dtype.size(), n, rank, Convention::Mpi);
                    let c = Ctx { rank, nranks: n, root: 0, in_place: false, convention: Convention::Mpi, layout };
                    let mut buf = vec![0u64; elems]; // 8-byte aligned
                                                     // SAFETY: the bytes of `buf`, which holds `elems` u64s; any bytes are valid u8s.
                    let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut u8, elems * 8) };
                    fill_input(coll, &c, dtype, op, bytes, 0);
                    inputs.push(buf);
                }
                with_element!(dtype, T => {
                    let view = |b: &Vec<u64>| -> Vec<T> {
                        // SAFETY: as above, read only.
                        let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr() as *const u8, elems * 8) };
                        cast_slice::<T>(bytes)[..elems].to_vec()
                    };
                    let ins: Vec<Vec<T>> = inputs.iter().map(view).collect();
                    let mut out: Vec<T> = ins[0].clone();
                    for input in ins.iter().skip(1) {
                        for (o, x) in out.iter_mut().zip(input) {
                            *o = T::combine(op, *o, *x);
                        }
                    }
                    if op == Op::Avg {
                        for o in out.iter_mut() { *o = o.div_ranks(n); }
                    }
                    let mut recv = vec![0u64; 2 * elems];
                    // SAFETY: the bytes of `recv`, which holds 2 × `elems` u64s.
                    let rb = unsafe { std::slice::from_raw_parts_mut(recv.as_mut_ptr() as *mut u8, 2 * elems * 8) };
                    rb.fill(SENTINEL);
                    cast_slice_mut::<T>(rb)[..elems].copy_from_slice(&out);
                    let layout = coll.layout(elems, dtype.size(), n, 1, Convention::Mpi);
                    let c = Ctx { rank: 1, nranks: n, root: 0, in_place: false, convention: Convention::Mpi, layout };
                    let size = std::mem::size_of::<T>();
                    assert_eq!(verify(coll, &c, dtype, op, rb, 0, elems * size), DataErrors::default(), "{dtype} {op}");
                    let s = cast_slice_mut::<T>(rb);
                    s[5] = T::combine(Op::Sum, s[5], T::from_i64(1));
                    s[77] = T::combine(Op::Sum, s[77], T::from_i64(1));
                    rb[elems * size + 3] = 0;
                    assert_eq!(verify(coll, &c, dtype, op, rb, 0, elems * size), DataErrors { wrong: 2, out_of_bounds: 1 }, "{dtype} {op}");
                }, else unreachable!());
            }
        }
    }

    /// The narrow floats on 3 ranks: an all-reduce rounded to the type after every step, as
    /// the library does (avg: each input times 1/n in the type), passes; one step off fails.
    #[test]
    fn narrow_floats_are_checked_within_the_tolerance_and_a_wrong_value_fails() {
        let n = 3;
        let elems = 84;
        for dtype in [DType::Float16, DType::Bfloat16, DType::Fp8E4m3, DType::Fp8E5m2] {
            let f = dtype.narrow().unwrap();
            let size = dtype.size();
            for op in Op::ALL {
                let coll = Kind::AllReduce.spec();
                let ctx = |rank| Ctx {
                    rank,
                    nranks: n,
                    root: 0,
                    in_place: false,
                    convention: Convention::Nccl,
                    layout: coll.layout(elems, size, n, rank, Convention::Nccl),
                };
                let inputs: Vec<Vec<u8>> = (0..n)
                    .map(|r| {
                        let mut b = vec![0u8; elems * size];
                        fill_input(coll, &ctx(r), dtype, op, &mut b, 0);
                        b
                    })
                    .collect();
                let scalar = f.decode(f.encode(1.0 / n as f64));
                let pre = |x: f64| if op == Op::Avg { f.decode(f.encode(x * scalar)) } else { x };
                let mut out = vec![SENTINEL; elems * size + GUARD_BYTES];
                for i in 0..elems {
                    let mut acc = pre(f.decode(narrow_get(&inputs[0], size, i)));
                    for input in &inputs[1..] {
                        let x = pre(f.decode(narrow_get(input, size, i)));
                        let r = match op {
                            Op::Sum | Op::Avg => acc + x,
                            Op::Prod => acc * x,
                            Op::Min => acc.min(x),
                            Op::Max => acc.max(x),
                        };
                        acc = f.decode(f.encode(r));
                    }
                    let bits = f.encode(acc);
                    match size {
                        1 => out[i] = bits as u8,
                        _ => out[2 * i..2 * i + 2].copy_from_slice(&bits.to_le_bytes()),
                    }
                }
                let c = ctx(1);
                assert_eq!(verify(coll, &c, dtype, op, &out, 0, elems * size), DataErrors::default(), "{dtype} {op}");
                // Element 4 made 4 (a whole unit at least, never within the tolerance) wrong.
                let v = f.decode(narrow_get(&out, size, 4));
                let bad = f.encode(v + 4.0);
                match size {
                    1 => out[4] = bad as u8,
                    _ => out[8..10].copy_from_slice(&bad.to_le_bytes()),
                }
                assert_eq!(verify(coll, &c, dtype, op, &out, 0, elems * size).wrong, 1, "{dtype} {op}");
            }
        }
        assert!(narrow_fits(DType::Fp8E4m3, Op::Prod, 16).is_ok());
        assert!(narrow_fits(DType::Fp8E4m3, Op::Prod, 20).unwrap_err().contains("beyond fp8e4m3's largest value 448"));
        assert!(narrow_fits(DType::Float32, Op::Prod, 1000).is_ok());
    }

    #[test]
    fn moved_data_from_the_wrong_rank_is_wrong() {
        let coll = Kind::AllGather.spec();
        let n = 4;
        let layout = coll.layout(64, 4, n, 2, Convention::Mpi);
        let c = Ctx { rank: 2, nranks: n, root: 0, in_place: false, convention: Convention::Mpi, layout };
        let mut recv = vec![0u64; 64];
        // SAFETY: the bytes of `recv`, 64 u64s.
        let rb = unsafe { std::slice::from_raw_parts_mut(recv.as_mut_ptr() as *mut u8, 512) };
        rb.fill(SENTINEL);
        // Every rank's block is rank 0's data: blocks 1..3 are wrong.
        for src_block in 0..n {
            let c0 = Ctx { rank: 0, ..c };
            fill_input(coll, &c0, DType::Int32, Op::Sum, rb, src_block * layout.count);
        }
        let v = verify(coll, &c, DType::Int32, Op::Sum, rb, 0, 64 * 4);
        assert!(v.wrong >= 3 * layout.count as u64 - 3, "{v:?}");
    }

    fn a2av_patterns(n: usize) -> Vec<Pattern> {
        // A matrix with a zero row and a zero column (rank 1 sends nothing, rank 2 receives
        // nothing), and blocks that are not whole 16-byte units (rounded down, as nccl-tests).
        let mut bytes = vec![0u64; n * n];
        for i in 0..n {
            for j in 0..n {
                bytes[i * n + j] = if i == 1 % n || j == 2 % n { 0 } else { (100 * (i + 1) + 37 * j) as u64 };
            }
        }
        vec![
            Pattern::Uniform,
            Pattern::Spread(0.0),
            Pattern::Spread(0.5),
            Pattern::Spread(1.0),
            Pattern::Matrix(Matrix { path: "m.txt".into(), dim: n, bytes }),
            Pattern::Moe(Moe { experts: 8, topk: 2, skew: 1.5, capacity: None, seed: 1 }),
            Pattern::Moe(Moe { experts: 3, topk: 3, skew: 0.0, capacity: Some(0.5), seed: 9 }),
        ]
    }

    /// MPI_Alltoallv in plain Rust on `n` ranks: every pattern's check passes on the exchanged
    /// data, in every element size, and counts a corrupted element and a write past the end.
    #[test]
    fn all_to_all_v_is_exact_on_1_to_8_ranks_in_every_pattern() {
        let coll = Kind::AllToAllV.spec();
        for n in 1..=8 {
            for p in a2av_patterns(n) {
                for dtype in [DType::Uint8, DType::Float16, DType::Int32, DType::Float64] {
                    let size = dtype.size();
                    let elems = 3000 / size;
                    let ctx = |rank| Ctx {
                        rank,
                        nranks: n,
                        root: 0,
                        in_place: false,
                        convention: Convention::Mpi,
                        layout: crate::collective::layout_of(
                            Kind::AllToAllV,
                            &p,
                            elems,
                            size,
                            n,
                            rank,
                            Convention::Mpi,
                        ),
                    };
                    let inputs: Vec<Vec<u8>> = (0..n)
                        .map(|r| {
                            let c = ctx(r);
                            let mut b = vec![0u8; c.layout.send_count * size];
                            fill_input(coll, &c, dtype, Op::Sum, &mut b, 0);
                            b
                        })
                        .collect();
                    for r in 0..n {
                        let c = ctx(r);
                        let mine = c.layout.peers.unwrap();
                        let recv_len = c.layout.recv_count * size;
                        let mut out = vec![SENTINEL; recv_len + GUARD_BYTES];
                        for (s, input) in inputs.iter().enumerate() {
                            let theirs = ctx(s).layout.peers.unwrap();
                            assert_eq!(theirs.send[r], mine.recv[s], "{p} n={n}: {s}→{r} counts agree");
                            let from = theirs.send_displs[r] * size;
                            let to = mine.recv_displs[s] * size;
                            let len = mine.recv[s] * size;
                            out[to..to + len].copy_from_slice(&input[from..from + len]);
                        }
                        let at = format!("{p} n={n} rank {r} {dtype}");
                        assert_eq!(verify(coll, &c, dtype, Op::Sum, &out, 0, recv_len), DataErrors::default(), "{at}");
                        if recv_len > 0 {
                            out[recv_len - 1] ^= 0x40;
                            out[recv_len + 5] = 0;
                            let got = verify(coll, &c, dtype, Op::Sum, &out, 0, recv_len);
                            assert_eq!(got, DataErrors { wrong: 1, out_of_bounds: 1 }, "{at}");
                        }
                    }
                }
            }
        }
    }
}
