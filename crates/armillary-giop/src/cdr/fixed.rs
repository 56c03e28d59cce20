//! IDL `fixed<digits, scale>`: exact decimal numbers, encoded as packed
//! decimal (two digits per octet, the last half-octet the sign).

use std::fmt;
use std::str::FromStr;

/// The most digits an IDL fixed-point type can have.
pub const MAX_DIGITS: u16 = 31;

/// An exact decimal number: `unscaled × 10^-scale`, up to 31 digits.
///
/// ```
/// use armillary_giop::Fixed;
///
/// let price: Fixed = "-123.45".parse().unwrap();
/// assert_eq!(price.unscaled(), -12345);
/// assert_eq!(price.scale(), 2);
/// assert_eq!(price.to_string(), "-123.45");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fixed {
    unscaled: i128,
    scale: u16,
}

/// Why a fixed-point value is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FixedError {
    /// More digits than the type (or IDL, 31) allows.
    #[error("more than {0} digits")]
    TooManyDigits(u16),
    /// The scale is larger than the number of digits.
    #[error("scale {scale} exceeds {digits} digits")]
    ScaleExceedsDigits {
        /// The type's digits.
        digits: u16,
        /// The type's scale.
        scale: u16,
    },
    /// Converting to the type's scale would drop non-zero fractional digits.
    #[error("value has more fractional digits than scale {0}")]
    Inexact(u16),
    /// A half-octet that is not a decimal digit, or a bad sign half-octet.
    #[error("invalid packed decimal half-octet {0:#x}")]
    BadNibble(u8),
    /// Text that is not a decimal number.
    #[error("not a decimal number")]
    Syntax,
}

fn pow10(n: u16) -> Option<i128> {
    10i128.checked_pow(u32::from(n))
}

impl Fixed {
    /// `unscaled × 10^-scale`.
    pub fn new(unscaled: i128, scale: u16) -> Result<Self, FixedError> {
        if scale > MAX_DIGITS || unscaled.unsigned_abs() >= 10u128.pow(u32::from(MAX_DIGITS)) {
            return Err(FixedError::TooManyDigits(MAX_DIGITS));
        }
        Ok(Fixed { unscaled, scale })
    }

    /// The digits as an integer, without the decimal point.
    pub fn unscaled(&self) -> i128 {
        self.unscaled
    }

    /// How many of the digits are after the decimal point.
    pub fn scale(&self) -> u16 {
        self.scale
    }

    /// How many octets a `fixed<digits, _>` takes on the wire.
    pub fn encoded_len(digits: u16) -> usize {
        (usize::from(digits) + 2) / 2
    }

    /// The same value at another scale, exactly.
    pub fn rescale(&self, scale: u16) -> Result<Fixed, FixedError> {
        if scale >= self.scale {
            let factor = pow10(scale - self.scale).ok_or(FixedError::TooManyDigits(MAX_DIGITS))?;
            let unscaled = self
                .unscaled
                .checked_mul(factor)
                .ok_or(FixedError::TooManyDigits(MAX_DIGITS))?;
            Fixed::new(unscaled, scale)
        } else {
            let factor = pow10(self.scale - scale).ok_or(FixedError::Inexact(scale))?;
            if self.unscaled % factor != 0 {
                return Err(FixedError::Inexact(scale));
            }
            Fixed::new(self.unscaled / factor, scale)
        }
    }

    /// Packed-decimal octets for a `fixed<digits, scale>`.
    pub fn to_cdr(&self, digits: u16, scale: u16) -> Result<Vec<u8>, FixedError> {
        if digits > MAX_DIGITS {
            return Err(FixedError::TooManyDigits(MAX_DIGITS));
        }
        if scale > digits {
            return Err(FixedError::ScaleExceedsDigits { digits, scale });
        }
        let v = self.rescale(scale)?;
        let magnitude = v.unscaled.unsigned_abs();
        if magnitude >= 10u128.pow(u32::from(digits)) {
            return Err(FixedError::TooManyDigits(digits));
        }
        let len = Self::encoded_len(digits);
        let mut nibbles = vec![0u8; len * 2];
        nibbles[len * 2 - 1] = if v.unscaled < 0 { 0xd } else { 0xc };
        let mut rest = magnitude;
        for slot in nibbles[..len * 2 - 1].iter_mut().rev() {
            *slot = (rest % 10) as u8;
            rest /= 10;
        }
        Ok(nibbles
            .chunks_exact(2)
            .map(|p| (p[0] << 4) | p[1])
            .collect())
    }

    /// Decodes packed-decimal octets as a value of the given scale.
    pub fn from_cdr(bytes: &[u8], scale: u16) -> Result<Fixed, FixedError> {
        let Some((&last, digits)) = bytes.split_last() else {
            return Err(FixedError::Syntax);
        };
        if bytes.len() * 2 - 1 > usize::from(MAX_DIGITS) + 1 {
            return Err(FixedError::TooManyDigits(MAX_DIGITS));
        }
        let mut value: i128 = 0;
        let mut push = |n: u8| -> Result<(), FixedError> {
            if n > 9 {
                return Err(FixedError::BadNibble(n));
            }
            value = value * 10 + i128::from(n);
            Ok(())
        };
        for b in digits {
            push(b >> 4)?;
            push(b & 0xf)?;
        }
        push(last >> 4)?;
        let negative = match last & 0xf {
            0xd | 0xb => true,
            0xc | 0xa | 0xe | 0xf => false,
            n => return Err(FixedError::BadNibble(n)),
        };
        Fixed::new(if negative { -value } else { value }, scale)
    }

    /// An approximation as `f64`.
    pub fn to_f64(&self) -> f64 {
        self.unscaled as f64 / 10f64.powi(i32::from(self.scale))
    }
}

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.unscaled < 0 { "-" } else { "" };
        let digits = self.unscaled.unsigned_abs().to_string();
        let scale = usize::from(self.scale);
        if scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (int, frac) = padded.split_at(padded.len() - scale);
        write!(f, "{sign}{int}.{frac}")
    }
}

impl FromStr for Fixed {
    type Err = FixedError;

    /// Parses `[-+]digits[.digits][d|D]`, as IDL fixed literals are written.
    fn from_str(s: &str) -> Result<Self, FixedError> {
        let s = s.trim().trim_end_matches(['d', 'D']);
        let (negative, s) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        if int.is_empty() && frac.is_empty()
            || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
        {
            return Err(FixedError::Syntax);
        }
        let int = int.trim_start_matches('0');
        let frac = frac.trim_end_matches('0');
        if int.len() + frac.len() > usize::from(MAX_DIGITS) {
            return Err(FixedError::TooManyDigits(MAX_DIGITS));
        }
        let mut value: i128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            value = value * 10 + i128::from(b - b'0');
        }
        Fixed::new(if negative { -value } else { value }, frac.len() as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_decimal_matches_the_spec_example() {
        // fixed<5,2> 123.45 → 0x01 0x23 0x45 0x0C... with an even digit
        // count a leading zero half-octet is added: 5 digits + sign = 6.
        let v: Fixed = "123.45".parse().unwrap();
        assert_eq!(v.to_cdr(5, 2).unwrap(), vec![0x12, 0x34, 0x5c]);
        let v: Fixed = "-1.5".parse().unwrap();
        assert_eq!(v.to_cdr(4, 2).unwrap(), vec![0x00, 0x15, 0x0d]);
        assert_eq!(
            Fixed::from_cdr(&[0x00, 0x15, 0x0d], 2).unwrap().to_string(),
            "-1.50"
        );
        assert_eq!(
            "1.234".parse::<Fixed>().unwrap().to_cdr(4, 2),
            Err(FixedError::Inexact(2))
        );
        assert_eq!(
            "123.4".parse::<Fixed>().unwrap().to_cdr(3, 1),
            Err(FixedError::TooManyDigits(3))
        );
        assert!(Fixed::from_cdr(&[0xa1, 0x0c], 0).is_err());
        assert_eq!("0.05".parse::<Fixed>().unwrap().to_string(), "0.05");
    }
}
