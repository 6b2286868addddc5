//! Exact input patterns and the check of results. Every value is a small integer that each type
//! represents exactly, and sums and products of them stay exact, so results compare bit for bit.
//!
//! - Data that is only moved: `(src·2654435761 + k·40503 + 11) mod M`, with M from
//!   [`DType::pattern_modulus`], so a block from the wrong rank or at the wrong offset shows.
//! - Reduction inputs: for sum/avg/min/max `((5r + 3i + 1) mod 7)` (minus 3 for signed types);
//!   for prod 2 where `(i + 3r) mod 6 = 0`, −1 (signed) where it is 3, else 1. Both depend on i
//!   only through i mod 42, so the expected reduction is a table of 42 values.

use crate::collective::{Cell, Collective, Ctx};
use crate::dtype::{cast_slice, cast_slice_mut, DType, Element, Op};
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
    op: Op,
    rank: u64,
    signed: bool,
    modulus: u64,
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
        Values { op, rank: rank as u64, signed, modulus: T::DTYPE.pattern_modulus(), reduced }
    }

    #[inline]
    fn value(&self, cell: Cell) -> T {
        match cell {
            Cell::Data { src, k } => T::from_i64(data_value(src, k, self.modulus)),
            Cell::Contribution { idx } => {
                T::from_i64(contribution(self.op, self.signed, self.rank, idx % PERIOD as u64))
            }
            Cell::Reduced { idx } => self.reduced[idx as usize % PERIOD],
        }
    }
}

fn unsupported(dtype: DType) -> ! {
    panic!("{dtype} has no host arithmetic; the backend must reject it before the check")
}

/// Write this rank's input into `buf` (element offset `at`). Returns the elements written.
pub fn fill_input(coll: &dyn Collective, c: &Ctx, dtype: DType, op: Op, buf: &mut [u8], at: usize) -> usize {
    with_element!(dtype, T => {
        let v = Values::<T>::new(op, c.rank, c.nranks);
        let len = coll.input_len(c);
        let out = &mut cast_slice_mut::<T>(buf)[at..at + len];
        for (i, x) in out.iter_mut().enumerate() {
            *x = v.value(coll.input(c, i));
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
    let wrong = with_element!(dtype, T => {
        let v = Values::<T>::new(op, c.rank, c.nranks);
        let len = coll.output_len(c);
        let out = &cast_slice::<T>(buf)[at..at + len];
        out.iter()
            .enumerate()
            .filter(|(j, x)| !x.same(v.value(coll.expected(c, *j))))
            .count() as u64
    }, else unsupported(dtype));
    let guard_to = (guard_from + GUARD_BYTES).min(buf.len());
    let out_of_bounds = buf[guard_from.min(guard_to)..guard_to].iter().filter(|b| **b != SENTINEL).count() as u64;
    DataErrors { wrong, out_of_bounds }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{Convention, Kind};

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
}
