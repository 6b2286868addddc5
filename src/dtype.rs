//! Data types and reduction operators, with the one dispatch point (`with_element!`) that turns a
//! run-time [`DType`] into a Rust element type.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Element types a sweep can run. Names follow nccl-tests (`float` is float32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Int8,
    Uint8,
    Int32,
    Uint32,
    Int64,
    Uint64,
    #[serde(rename = "half")]
    Float16,
    Bfloat16,
    #[serde(rename = "float")]
    Float32,
    #[serde(rename = "double")]
    Float64,
    /// 8-bit float, 4 exponent and 3 mantissa bits (NCCL's `ncclFloat8e4m3`).
    Fp8E4m3,
    /// 8-bit float, 5 exponent and 2 mantissa bits (NCCL's `ncclFloat8e5m2`).
    Fp8E5m2,
}

impl DType {
    /// The 8-bit floats: named explicitly (`-d fp8e4m3,fp8e5m2`), not part of `all`, which keeps
    /// to the ten types nccl-tests has always had.
    pub const FP8: [DType; 2] = [DType::Fp8E4m3, DType::Fp8E5m2];

    pub const ALL: [DType; 10] = [
        DType::Int8,
        DType::Uint8,
        DType::Int32,
        DType::Uint32,
        DType::Int64,
        DType::Uint64,
        DType::Float16,
        DType::Float32,
        DType::Float64,
        DType::Bfloat16,
    ];

    /// The name shown in tables and CSV (nccl-tests' spelling).
    pub fn name(self) -> &'static str {
        match self {
            DType::Int8 => "int8",
            DType::Uint8 => "uint8",
            DType::Int32 => "int32",
            DType::Uint32 => "uint32",
            DType::Int64 => "int64",
            DType::Uint64 => "uint64",
            DType::Float16 => "half",
            DType::Bfloat16 => "bfloat16",
            DType::Float32 => "float",
            DType::Float64 => "double",
            DType::Fp8E4m3 => "fp8e4m3",
            DType::Fp8E5m2 => "fp8e5m2",
        }
    }

    /// Parse a type name; accepts nccl-tests' names and the usual aliases.
    pub fn parse(s: &str) -> Option<DType> {
        Some(match s.to_ascii_lowercase().as_str() {
            "int8" | "i8" | "char" => DType::Int8,
            "uint8" | "u8" => DType::Uint8,
            "int32" | "i32" | "int" => DType::Int32,
            "uint32" | "u32" => DType::Uint32,
            "int64" | "i64" => DType::Int64,
            "uint64" | "u64" => DType::Uint64,
            "float16" | "f16" | "half" => DType::Float16,
            "bfloat16" | "bf16" => DType::Bfloat16,
            "float32" | "f32" | "float" => DType::Float32,
            "float64" | "f64" | "double" => DType::Float64,
            "fp8e4m3" | "f8e4m3" | "float8e4m3" => DType::Fp8E4m3,
            "fp8e5m2" | "f8e5m2" | "float8e5m2" => DType::Fp8E5m2,
            _ => return None,
        })
    }

    pub const ACCEPTED: &'static str =
        "int8, uint8, int32, uint32, int64, uint64, float16 (half), bfloat16, float32 (float), float64 (double), fp8e4m3, fp8e5m2 or all";

    pub fn size(self) -> usize {
        match self {
            DType::Int8 | DType::Uint8 | DType::Fp8E4m3 | DType::Fp8E5m2 => 1,
            DType::Float16 | DType::Bfloat16 => 2,
            DType::Int32 | DType::Uint32 | DType::Float32 => 4,
            DType::Int64 | DType::Uint64 | DType::Float64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::Float16 | DType::Bfloat16 | DType::Float32 | DType::Float64 | DType::Fp8E4m3 | DType::Fp8E5m2
        )
    }

    /// Largest value of the exact test patterns for this type (values stay below it), chosen so
    /// every value, every sum of a few of them, and every product of the prod pattern is exactly
    /// representable: integers below 2^24 for float32, below 2^11 for float16, 2^8 for bfloat16.
    pub fn pattern_modulus(self) -> u64 {
        match self {
            DType::Int8 | DType::Uint8 => 101,
            // Integers up to 2^(mantissa bits + 1) are exact: 16 for e4m3, 8 for e5m2.
            DType::Fp8E4m3 => 16,
            DType::Fp8E5m2 => 8,
            DType::Bfloat16 => 251,
            DType::Float16 => 2039,
            _ => 16_777_213,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reduction operators. `Avg` is the sum divided by the number of ranks, as NCCL defines it
/// (integer types truncate toward zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Sum,
    Prod,
    Min,
    Max,
    Avg,
}

impl Op {
    pub const ALL: [Op; 5] = [Op::Sum, Op::Prod, Op::Max, Op::Min, Op::Avg];
    pub const ACCEPTED: &'static str = "sum, prod, min, max, avg or all";

    pub fn name(self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Prod => "prod",
            Op::Min => "min",
            Op::Max => "max",
            Op::Avg => "avg",
        }
    }

    pub fn parse(s: &str) -> Option<Op> {
        Some(match s.to_ascii_lowercase().as_str() {
            "sum" => Op::Sum,
            "prod" | "product" => Op::Prod,
            "min" => Op::Min,
            "max" => Op::Max,
            "avg" | "mean" => Op::Avg,
            _ => return None,
        })
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the check needs from an element type: exact construction from small integers,
/// the reduction arithmetic of the wire (wrapping for integers), and bitwise comparison.
pub trait Element: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    /// Whether negative values exist (the patterns use them where they do).
    const SIGNED: bool;
    fn from_i64(v: i64) -> Self;
    /// `a op b` for the associative ops (Avg accumulates as Sum).
    fn combine(op: Op, a: Self, b: Self) -> Self;
    /// `self / n`, the final step of Avg.
    fn div_ranks(self, n: usize) -> Self;
    /// Bit-for-bit equality (floats compare by representation).
    fn same(self, other: Self) -> bool;
}

macro_rules! int_element {
    ($t:ty, $d:expr, $signed:expr) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            const SIGNED: bool = $signed;
            #[inline]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline]
            fn combine(op: Op, a: Self, b: Self) -> Self {
                match op {
                    Op::Sum | Op::Avg => a.wrapping_add(b),
                    Op::Prod => a.wrapping_mul(b),
                    Op::Min => a.min(b),
                    Op::Max => a.max(b),
                }
            }
            #[inline]
            fn div_ranks(self, n: usize) -> Self {
                // NCCL's `FuncSumPostDiv` (src/device/reduce_kernel.h): the sum, wrapped to the
                // type, divided by the rank count as a number, not as a value of the type (which
                // would be negative for int8 from 128 ranks, zero for uint8 at 256), truncating
                // toward zero. |quotient| <= |sum|, so it fits the type; i128 holds both.
                (self as i128 / n.max(1) as i128) as $t
            }
            #[inline]
            fn same(self, other: Self) -> bool {
                self == other
            }
        }
    };
}

macro_rules! float_element {
    ($t:ty, $d:expr) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            const SIGNED: bool = true;
            #[inline]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline]
            fn combine(op: Op, a: Self, b: Self) -> Self {
                match op {
                    Op::Sum | Op::Avg => a + b,
                    Op::Prod => a * b,
                    Op::Min => a.min(b),
                    Op::Max => a.max(b),
                }
            }
            #[inline]
            fn div_ranks(self, n: usize) -> Self {
                self / (n as $t)
            }
            #[inline]
            fn same(self, other: Self) -> bool {
                self.to_bits() == other.to_bits()
            }
        }
    };
}

int_element!(i8, DType::Int8, true);
int_element!(u8, DType::Uint8, false);
int_element!(i32, DType::Int32, true);
int_element!(u32, DType::Uint32, false);
int_element!(i64, DType::Int64, true);
int_element!(u64, DType::Uint64, false);
float_element!(f32, DType::Float32);
float_element!(f64, DType::Float64);

/// Run `$body` with `$t` bound to the Rust type of `$dtype`; `$unsupported` for the types with no
/// host arithmetic here (float16, bfloat16, the 8-bit floats).
#[macro_export]
macro_rules! with_element {
    ($dtype:expr, $t:ident => $body:expr, else $unsupported:expr) => {
        match $dtype {
            $crate::dtype::DType::Int8 => {
                type $t = i8;
                $body
            }
            $crate::dtype::DType::Uint8 => {
                type $t = u8;
                $body
            }
            $crate::dtype::DType::Int32 => {
                type $t = i32;
                $body
            }
            $crate::dtype::DType::Uint32 => {
                type $t = u32;
                $body
            }
            $crate::dtype::DType::Int64 => {
                type $t = i64;
                $body
            }
            $crate::dtype::DType::Uint64 => {
                type $t = u64;
                $body
            }
            $crate::dtype::DType::Float32 => {
                type $t = f32;
                $body
            }
            $crate::dtype::DType::Float64 => {
                type $t = f64;
                $body
            }
            $crate::dtype::DType::Float16
            | $crate::dtype::DType::Bfloat16
            | $crate::dtype::DType::Fp8E4m3
            | $crate::dtype::DType::Fp8E5m2 => $unsupported,
        }
    };
}

/// View a byte buffer as elements. The buffers come from [`crate::backend::HostBuffer`], which is
/// 64-byte aligned, so the cast is always aligned.
pub fn cast_slice<T: Element>(bytes: &[u8]) -> &[T] {
    let n = bytes.len() / std::mem::size_of::<T>();
    if n == 0 {
        return &[];
    }
    assert_eq!(bytes.as_ptr() as usize % std::mem::align_of::<T>(), 0);
    // SAFETY: aligned (asserted), in bounds, and every bit pattern is a valid T for these types.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const T, n) }
}

pub fn cast_slice_mut<T: Element>(bytes: &mut [u8]) -> &mut [T] {
    let n = bytes.len() / std::mem::size_of::<T>();
    if n == 0 {
        return &mut [];
    }
    assert_eq!(bytes.as_ptr() as usize % std::mem::align_of::<T>(), 0);
    // SAFETY: as in `cast_slice`, and the borrow is unique.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut T, n) }
}

/// Divide every element of `bytes` (of type `dtype`) by `n`: the last step of Avg on backends
/// whose library has no average (MPI).
pub fn divide_by_ranks(dtype: DType, bytes: &mut [u8], n: usize) {
    with_element!(dtype, T => {
        for x in cast_slice_mut::<T>(bytes) {
            *x = x.div_ranks(n);
        }
    }, else unreachable!("{dtype} has no host arithmetic"))
}

/// `acc[i] = acc[i] op inc[i]` over the elements of two byte buffers of type `dtype` (Avg sums;
/// its division comes last).
pub fn combine_into(dtype: DType, op: Op, acc: &mut [u8], inc: &[u8]) {
    with_element!(dtype, T => {
        for (a, b) in cast_slice_mut::<T>(acc).iter_mut().zip(cast_slice::<T>(inc)) {
            *a = T::combine(op, *a, *b);
        }
    }, else unreachable!("{dtype} has no host arithmetic"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combine_into_reduces_element_by_element() {
        let mut a = [1i32, 5, -3];
        let b = [4i32, 2, -7];
        // SAFETY: the bytes of a three-i32 array, borrowed mutably for the slice's life.
        let bytes = |v: &mut [i32]| unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, 12) };
        let mut bb = b;
        combine_into(DType::Int32, Op::Max, bytes(&mut a), bytes(&mut bb));
        assert_eq!(a, [4, 5, -3]);
        combine_into(DType::Int32, Op::Sum, bytes(&mut a), bytes(&mut bb));
        assert_eq!(a, [8, 7, -10]);
    }

    #[test]
    fn names_round_trip() {
        for d in DType::ALL.into_iter().chain(DType::FP8) {
            assert_eq!(DType::parse(d.name()), Some(d));
        }
        for o in Op::ALL {
            assert_eq!(Op::parse(o.name()), Some(o));
        }
        assert_eq!(DType::parse("float32"), Some(DType::Float32));
        assert_eq!(DType::parse("f64"), Some(DType::Float64));
        assert_eq!(DType::parse("quad"), None);
        assert_eq!(Op::parse("xor"), None);
    }

    #[test]
    fn integer_arithmetic_wraps_like_the_wire() {
        assert_eq!(i8::combine(Op::Sum, 100, 100), -56);
        assert_eq!(u8::combine(Op::Prod, 16, 32), 0);
        assert_eq!((-7i32).div_ranks(2), -3);
        assert_eq!(f32::combine(Op::Min, 1.0, -2.0), -2.0);
        assert_eq!(7.0f64.div_ranks(2), 3.5);
    }

    /// Integer avg at any rank count, for every type: the wrapped sum divided by n as NCCL's
    /// `FuncSumPostDiv` does (truncating toward zero, n never cast to the type), against the same
    /// arithmetic done in i128. At 128 ranks int8 once divided by -128, at 256 uint8 by 0 (a panic).
    #[test]
    fn integer_avg_divides_by_the_rank_count_at_any_scale() {
        fn check<T: Element + Into<i128> + TryFrom<i128> + std::fmt::Debug + PartialEq>(n: usize)
        where
            <T as TryFrom<i128>>::Error: std::fmt::Debug,
        {
            // Every value of an 8-bit type; the extremes and a spread of the wider ones.
            let bits = 8 * std::mem::size_of::<T>() as u32;
            let (lo, hi): (i128, i128) =
                if T::SIGNED { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
            let step = if bits == 8 { 1 } else { (hi - lo) / 997 };
            let mut x = lo;
            while x <= hi {
                let v = T::try_from(x).unwrap();
                let want = T::try_from(x / n as i128).unwrap();
                assert_eq!(v.div_ranks(n), want, "{:?} {x} / {n}", T::DTYPE);
                x += step;
            }
            for x in [lo, lo + 1, -1, 0, 1, hi - 1, hi] {
                if let Ok(v) = T::try_from(x) {
                    assert_eq!(v.div_ranks(n), T::try_from(x / n as i128).unwrap(), "{:?} {x} / {n}", T::DTYPE);
                }
            }
        }
        for n in [1, 2, 3, 127, 128, 255, 256, 1000, 1 << 20] {
            check::<i8>(n);
            check::<u8>(n);
            check::<i32>(n);
            check::<u32>(n);
            check::<i64>(n);
            check::<u64>(n);
        }
        // The cases that were wrong: int8 at 128 ranks divided by -128, at 1000 by -24.
        assert_eq!((-128i8).div_ranks(128), -1);
        assert_eq!(127i8.div_ranks(128), 0);
        assert_eq!((-100i8).div_ranks(1000), 0);
        assert_eq!(255u8.div_ranks(255), 1);
        assert_eq!(255u8.div_ranks(256), 0);
        assert_eq!(u64::MAX.div_ranks(1000), u64::MAX / 1000);
        assert_eq!(i64::MIN.div_ranks(1000), i64::MIN / 1000);
    }

    /// The whole avg as the check computes it, at the rank counts where the type's own width
    /// cannot hold n: every type's expected avg is the i128 sum of every rank's contribution,
    /// wrapped to the type, divided by n.
    #[test]
    fn divide_by_ranks_at_scale_for_every_type() {
        for n in [127usize, 128, 255, 256, 1000] {
            for d in [DType::Int8, DType::Uint8, DType::Int32, DType::Uint32, DType::Int64, DType::Uint64] {
                with_element!(d, T => {
                    // n ranks of the value 1 sum to n (wrapped to the type): then / n.
                    let sum = (0..n).fold(T::from_i64(0), |a, _| T::combine(Op::Avg, a, T::from_i64(1)));
                    let mut buf = [0u64; 1];
                    // SAFETY: the bytes of one u64, aligned for every integer type.
                    let b = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut u8, 8) };
                    let w = std::mem::size_of::<T>();
                    cast_slice_mut::<T>(&mut b[..w])[0] = sum;
                    divide_by_ranks(d, &mut b[..w], n);
                    let m = 1i128 << (8 * w);
                    let wrapped = if T::SIGNED && n as i128 % m >= m / 2 { n as i128 % m - m } else { n as i128 % m };
                    let got = cast_slice::<T>(&b[..w])[0];
                    assert!(got.same(T::from_i64((wrapped / n as i128) as i64)), "{d} on {n} ranks");
                }, else unreachable!());
            }
        }
    }

    #[test]
    fn divide_by_ranks_divides_every_element() {
        let mut v = [6.0f32, 9.0, -3.0];
        // SAFETY: the bytes of `v`, three f32s.
        let bytes = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, 12) };
        divide_by_ranks(DType::Float32, bytes, 3);
        assert_eq!(v, [2.0, 3.0, -1.0]);
    }
}
