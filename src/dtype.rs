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

/// A float format with no host type here (float16, bfloat16, the 8-bit floats), encoded and
/// decoded through f64 so their results can be checked within a tolerance ([`crate::verify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Narrow {
    pub exp_bits: u32,
    pub man_bits: u32,
    /// IEEE-like: the all-ones exponent is infinity or NaN. Otherwise (fp8e4m3, "fn") only the
    /// all-ones pattern is NaN and there is no infinity.
    pub ieee: bool,
}

impl DType {
    /// The format of a float type without host arithmetic; `None` for the others.
    pub fn narrow(self) -> Option<Narrow> {
        let f = |exp_bits, man_bits, ieee| Some(Narrow { exp_bits, man_bits, ieee });
        match self {
            DType::Float16 => f(5, 10, true),
            DType::Bfloat16 => f(8, 7, true),
            DType::Fp8E4m3 => f(4, 3, false),
            DType::Fp8E5m2 => f(5, 2, true),
            _ => None,
        }
    }
}

impl Narrow {
    fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }

    /// The largest finite value (65504 for float16, 448 for fp8e4m3, 57344 for fp8e5m2).
    pub fn max(self) -> f64 {
        let m = self.man_bits as i32;
        let top = (1 << self.exp_bits) - 1;
        let (exp_field, mantissa) = if self.ieee { (top - 1, (1 << m) - 1) } else { (top, (1 << m) - 2) };
        (1.0 + mantissa as f64 / f64::from(1 << m)) * 2f64.powi(exp_field - self.bias())
    }

    /// The unit roundoff, half the gap between 1 and the next value: 2^-(mantissa bits + 1).
    pub fn unit_roundoff(self) -> f64 {
        2f64.powi(-(self.man_bits as i32 + 1))
    }

    /// The smallest positive (subnormal) value.
    pub fn min_positive(self) -> f64 {
        2f64.powi(1 - self.bias() - self.man_bits as i32)
    }

    pub fn decode(self, bits: u16) -> f64 {
        let (e, m) = (self.exp_bits, self.man_bits);
        let sign = if (bits >> (e + m)) & 1 == 1 { -1.0 } else { 1.0 };
        let exp_field = ((bits >> m) & ((1 << e) - 1)) as i32;
        let mantissa = (bits & ((1 << m) - 1)) as i32;
        let top = (1 << e) - 1;
        if self.ieee && exp_field == top {
            return if mantissa == 0 { sign * f64::INFINITY } else { f64::NAN };
        }
        if !self.ieee && exp_field == top && mantissa == (1 << m) - 1 {
            return f64::NAN;
        }
        if exp_field == 0 {
            return sign * f64::from(mantissa) * self.min_positive();
        }
        sign * (1.0 + f64::from(mantissa) / f64::from(1 << m)) * 2f64.powi(exp_field - self.bias())
    }

    /// `x` rounded to the nearest value of the format, ties to even (as CUDA's conversions);
    /// beyond the largest finite value: infinity, or NaN where the format has none.
    pub fn encode(self, x: f64) -> u16 {
        let (e, m) = (self.exp_bits, self.man_bits);
        let sign: u16 = if x.is_sign_negative() { 1 << (e + m) } else { 0 };
        let nan = sign | (((1u32 << (e + m)) - 1) as u16);
        if x.is_nan() {
            return nan;
        }
        let a = x.abs();
        let emin = 1 - self.bias();
        let binade = |v: f64| ((v.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let exp = if a == 0.0 { emin } else { binade(a).max(emin) };
        let quantum = 2f64.powi(exp - m as i32);
        let r = (a / quantum).round_ties_even() * quantum;
        if r > self.max() {
            return if self.ieee { sign | ((((1u32 << e) - 1) << m) as u16) } else { nan };
        }
        if r == 0.0 {
            return sign;
        }
        let re = binade(r);
        if re < emin {
            return sign | (r / self.min_positive()) as u16;
        }
        let mantissa = (r / 2f64.powi(re - m as i32)) as u32 - (1 << m);
        sign | ((((re + self.bias()) as u32) << m) | mantissa) as u16
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
    fn narrow_floats_round_trip_and_round_to_nearest_even() {
        let h = DType::Float16.narrow().unwrap();
        assert_eq!(h.encode(1.0), 0x3c00);
        assert_eq!(h.encode(-2.0), 0xc000);
        assert_eq!(h.encode(65504.0), 0x7bff);
        assert_eq!(h.encode(1e6), 0x7c00);
        assert_eq!(h.encode(2049.0), h.encode(2048.0)); // tie to even
        assert_eq!(h.encode(2051.0), h.encode(2052.0));
        assert_eq!(h.decode(0x0001), 2f64.powi(-24));
        let b = DType::Bfloat16.narrow().unwrap();
        assert_eq!(b.encode(1.0), 0x3f80);
        assert_eq!(b.decode(0x4049), 3.140625);
        let e4 = DType::Fp8E4m3.narrow().unwrap();
        assert_eq!(e4.max(), 448.0);
        assert_eq!(e4.encode(448.0), 0x7e);
        assert_eq!(e4.encode(1.0), 0x38);
        assert!(e4.decode(e4.encode(1000.0)).is_nan());
        assert_eq!(e4.decode(e4.encode(17.0)), 16.0);
        let e5 = DType::Fp8E5m2.narrow().unwrap();
        assert_eq!(e5.max(), 57344.0);
        assert_eq!(e5.encode(1.0), 0x3c);
        assert_eq!(e5.decode(e5.encode(9.0)), 8.0);
        for n in [h, b, e4, e5] {
            for v in -8..=8 {
                assert_eq!(n.decode(n.encode(f64::from(v) / 4.0)), f64::from(v) / 4.0, "{n:?} {v}");
            }
        }
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
