//! IDL `long double`: an IEEE 754 binary128 value, carried as its 16 bytes.
//!
//! Rust has no 128-bit float, so the value is kept bit-exact and converted
//! to and from `f64` on request.

/// An IEEE 754 quadruple-precision value, bit-exact.
///
/// ```
/// use armillary_giop::LongDouble;
///
/// assert_eq!(LongDouble::from_f64(1.5).to_f64(), 1.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LongDouble {
    bits: u128,
}

const F64_FRACTION_BITS: u32 = 52;
const F128_FRACTION_BITS: u32 = 112;
const F64_BIAS: i32 = 1023;
const F128_BIAS: i32 = 16383;

impl LongDouble {
    /// The value with the given IEEE binary128 bit pattern.
    pub const fn from_bits(bits: u128) -> Self {
        LongDouble { bits }
    }

    /// The IEEE binary128 bit pattern.
    pub const fn to_bits(self) -> u128 {
        self.bits
    }

    /// From big-endian bytes.
    pub const fn from_be_bytes(b: [u8; 16]) -> Self {
        Self::from_bits(u128::from_be_bytes(b))
    }

    /// From little-endian bytes.
    pub const fn from_le_bytes(b: [u8; 16]) -> Self {
        Self::from_bits(u128::from_le_bytes(b))
    }

    /// Big-endian bytes.
    pub const fn to_be_bytes(self) -> [u8; 16] {
        self.bits.to_be_bytes()
    }

    /// Little-endian bytes.
    pub const fn to_le_bytes(self) -> [u8; 16] {
        self.bits.to_le_bytes()
    }

    /// The exact binary128 value of an `f64`.
    pub fn from_f64(v: f64) -> Self {
        let bits = v.to_bits();
        let sign = u128::from(bits >> 63) << 127;
        let exp = ((bits >> F64_FRACTION_BITS) & 0x7ff) as i32;
        let mut frac = bits & ((1 << F64_FRACTION_BITS) - 1);
        let shift = F128_FRACTION_BITS - F64_FRACTION_BITS;
        let (exp128, frac128) = match exp {
            0 if frac == 0 => (0, 0),
            0 => {
                // Subnormal in f64, normal in binary128: normalise.
                let mut e = 1 - F64_BIAS;
                while frac & (1 << F64_FRACTION_BITS) == 0 {
                    frac <<= 1;
                    e -= 1;
                }
                frac &= (1 << F64_FRACTION_BITS) - 1;
                ((e + F128_BIAS) as u128, u128::from(frac) << shift)
            }
            0x7ff => (0x7fff, u128::from(frac) << shift),
            e => (
                (e - F64_BIAS + F128_BIAS) as u128,
                u128::from(frac) << shift,
            ),
        };
        Self::from_bits(sign | (exp128 << F128_FRACTION_BITS) | frac128)
    }

    /// The nearest `f64` (fraction bits beyond 52 are truncated; values out
    /// of `f64` range become infinities or zeros).
    pub fn to_f64(self) -> f64 {
        let sign = ((self.bits >> 127) as u64) << 63;
        let exp = ((self.bits >> F128_FRACTION_BITS) & 0x7fff) as i32;
        let frac = self.bits & ((1u128 << F128_FRACTION_BITS) - 1);
        let shift = F128_FRACTION_BITS - F64_FRACTION_BITS;
        let frac64 = (frac >> shift) as u64;
        let out = match exp {
            0 => 0,
            0x7fff => (0x7ff << F64_FRACTION_BITS) | frac64 | u64::from(frac != 0 && frac64 == 0),
            e => {
                let e64 = e - F128_BIAS + F64_BIAS;
                if e64 >= 0x7ff {
                    0x7ff << F64_FRACTION_BITS
                } else if e64 <= 0 {
                    // Subnormal f64 (or underflow to zero).
                    let full = (1u64 << F64_FRACTION_BITS) | frac64;
                    let s = (1 - e64) as u32;
                    if s > 63 {
                        0
                    } else {
                        full >> s
                    }
                } else {
                    ((e64 as u64) << F64_FRACTION_BITS) | frac64
                }
            }
        };
        f64::from_bits(sign | out)
    }
}

impl From<f64> for LongDouble {
    fn from(v: f64) -> Self {
        Self::from_f64(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f64_round_trips() {
        for v in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(LongDouble::from_f64(v).to_f64().to_bits(), v.to_bits());
        }
        assert!(LongDouble::from_f64(f64::NAN).to_f64().is_nan());
        // 1.0 in binary128: exponent 0x3fff, fraction 0.
        assert_eq!(LongDouble::from_f64(1.0).to_bits(), 0x3fff << 112);
    }
}
