//! Element types of symmetric buffers and their `SYMM_DTYPE_*` codes.

use symm_sys as sys;

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is one element of a symm buffer (`SYMM_DTYPE_*`).
///
/// Implemented for `i8`..`i64`, `u8`..`u64`, `f32`, `f64`, [`F16`] and
/// [`BF16`]; sealed (the set is the ABI's). Every implementor is plain data:
/// `Copy`, no padding, any bit pattern valid.
pub trait Element: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    /// The `SYMM_DTYPE_*` code.
    const DTYPE: u32;
}

/// Integer element types: the only ones `wait_until`/`test` and the bitwise
/// atomics accept.
pub trait Integer: Element {}

/// Element types of a count buffer of [`Team::alltoallv`](crate::Team::alltoallv):
/// `u64` and `i64` (`SYMM_DTYPE_UINT64`, `SYMM_DTYPE_INT64`), the two the
/// runtime accepts. Counts are read as `u64` whichever it is (a negative `i64`
/// count is a huge one).
pub trait Count: Integer {}

impl Count for u64 {}
impl Count for i64 {}

macro_rules! elements {
    ($($t:ty => $d:ident $(, $int:ident)?;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t { const DTYPE: u32 = sys::$d; }
        $(impl $int for $t {})?
    )*};
}

elements! {
    i8 => SYMM_DTYPE_INT8, Integer;
    i16 => SYMM_DTYPE_INT16, Integer;
    i32 => SYMM_DTYPE_INT32, Integer;
    i64 => SYMM_DTYPE_INT64, Integer;
    u8 => SYMM_DTYPE_UINT8, Integer;
    u16 => SYMM_DTYPE_UINT16, Integer;
    u32 => SYMM_DTYPE_UINT32, Integer;
    u64 => SYMM_DTYPE_UINT64, Integer;
    F16 => SYMM_DTYPE_FLOAT16;
    BF16 => SYMM_DTYPE_BFLOAT16;
    f32 => SYMM_DTYPE_FLOAT32;
    f64 => SYMM_DTYPE_FLOAT64;
}

/// IEEE 754 binary16 (`SYMM_DTYPE_FLOAT16`), stored as its bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F16(pub u16);

/// bfloat16 (`SYMM_DTYPE_BFLOAT16`): the top 16 bits of an `f32`, stored as
/// its bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BF16(pub u16);

impl BF16 {
    /// Rounds an `f32` to nearest-even (NaN stays NaN).
    pub fn from_f32(x: f32) -> BF16 {
        let b = x.to_bits();
        if x.is_nan() {
            return BF16(((b >> 16) as u16) | 0x40);
        }
        let round = 0x7FFF + ((b >> 16) & 1);
        BF16((b.wrapping_add(round) >> 16) as u16)
    }

    /// The exact `f32` value.
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

impl F16 {
    /// Rounds an `f32` to nearest-even binary16 (overflow gives infinity, NaN
    /// stays NaN).
    pub fn from_f32(x: f32) -> F16 {
        let b = x.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        let exp = ((b >> 23) & 0xFF) as i32;
        let man = b & 0x7F_FFFF;
        if exp == 0xFF {
            return F16(sign | 0x7C00 | if man != 0 { 0x200 } else { 0 });
        }
        let e = exp - 127 + 15;
        if e >= 0x1F {
            return F16(sign | 0x7C00);
        }
        if e <= 0 {
            // Subnormal or zero: shift the full significand into place.
            if e < -10 {
                return F16(sign);
            }
            let m = man | 0x80_0000;
            let shift = (14 - e) as u32;
            let half = 1u32 << (shift - 1);
            let rest = m & ((1u32 << shift) - 1);
            let mut v = m >> shift;
            if rest > half || (rest == half && (v & 1) == 1) {
                v += 1;
            }
            return F16(sign | v as u16);
        }
        let mut v = ((e as u32) << 10) | (man >> 13);
        let rest = man & 0x1FFF;
        if rest > 0x1000 || (rest == 0x1000 && (v & 1) == 1) {
            v += 1; // may carry into the exponent: still correct (up to infinity)
        }
        F16(sign | v as u16)
    }

    /// The exact `f32` value.
    pub fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1F;
        let man = h & 0x3FF;
        let bits = if exp == 0x1F {
            sign | 0x7F80_0000 | (man << 13)
        } else if exp == 0 {
            if man == 0 {
                sign
            } else {
                // Subnormal: value = man * 2^-24.
                let v = man as f32 * f32::from_bits(0x3380_0000);
                return if sign != 0 { -v } else { v };
            }
        } else {
            sign | ((exp + 127 - 15) << 23) | (man << 13)
        };
        f32::from_bits(bits)
    }
}

/// Size in bytes of one element of `dtype` (`symm_dtype_size`; 0 for an
/// unknown dtype). Answered by the loader, no runtime needed.
pub fn dtype_size(dtype: u32) -> u32 {
    // SAFETY: a pure function of its integer argument.
    unsafe { sys::symm_dtype_size(dtype) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_round_trips() {
        for &x in &[
            0.0f32,
            -0.0,
            1.0,
            -2.5,
            65504.0,
            6.1035156e-5,
            5.9604645e-8,
            0.333,
        ] {
            let h = F16::from_f32(x);
            let back = h.to_f32();
            assert!(
                (back - x).abs() <= x.abs() * 1e-3 + 6e-8,
                "{x} -> {h:?} -> {back}"
            );
        }
        assert_eq!(F16::from_f32(1.0).0, 0x3C00);
        assert_eq!(F16::from_f32(65536.0).0, 0x7C00);
        assert!(F16::from_f32(f32::NAN).to_f32().is_nan());
        assert_eq!(BF16::from_f32(1.0).0, 0x3F80);
        assert_eq!(BF16::from_f32(3.0).to_f32(), 3.0);
    }

    #[test]
    fn dtype_sizes_match_the_loader() {
        assert_eq!(dtype_size(<i8 as Element>::DTYPE), 1);
        assert_eq!(dtype_size(<F16 as Element>::DTYPE), 2);
        assert_eq!(dtype_size(<BF16 as Element>::DTYPE), 2);
        assert_eq!(dtype_size(<u32 as Element>::DTYPE), 4);
        assert_eq!(dtype_size(<f64 as Element>::DTYPE), 8);
        assert_eq!(dtype_size(0), 0);
    }
}
