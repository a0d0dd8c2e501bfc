//! Exact conversion of a JSON number's text to integer nanoseconds.
//!
//! Chrome traces write `ts` and `dur` in microseconds, with up to three
//! decimals since PyTorch 2.3 (`4458676983543.183`). A 16-digit microsecond
//! timestamp with three decimals has 19 significant digits, more than an f64
//! holds (about 15.9), so reading it as a float and multiplying by 1000 moves
//! it by up to a few hundred nanoseconds. This module reads the decimal text
//! itself: the digits become an integer and the decimal point only moves it.

/// Why a number's text could not become nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalError {
    /// Not a JSON number (nor a quoted one).
    NotANumber,
    /// Below zero.
    Negative,
    /// Above `u64::MAX` nanoseconds (the year 2554 as a Unix time).
    OutOfRange,
}

impl std::fmt::Display for DecimalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DecimalError::NotANumber => "not a number",
            DecimalError::Negative => "negative",
            DecimalError::OutOfRange => "beyond 2^64 nanoseconds",
        })
    }
}

/// A converted value and whether it had to be rounded to a whole nanosecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nanos {
    /// The value in nanoseconds.
    pub value: u64,
    /// True when the text had digits below one nanosecond (more than three
    /// decimals of a microsecond); the value is then rounded half to even.
    pub rounded: bool,
}

/// Most significant digits kept exactly; `10^38 < 2^128`.
const KEPT_DIGITS: u32 = 38;

/// Converts the JSON text of a microsecond value (`"1682725898236567"`,
/// `"4.928"`, `"1.5e3"`, also the same inside quotes) to nanoseconds.
///
/// ```
/// use tally_trace::decimal::micros_to_nanos;
/// assert_eq!(micros_to_nanos("1712195495505583.123").unwrap().value, 1_712_195_495_505_583_123);
/// assert_eq!(micros_to_nanos("4.928").unwrap().value, 4928);
/// assert!(micros_to_nanos("-1").is_err());
/// ```
pub fn micros_to_nanos(text: &str) -> Result<Nanos, DecimalError> {
    scaled(text, 3)
}

/// Converts the JSON text of an integer or decimal nanosecond value
/// (`baseTimeNanoseconds`), rounding any fraction half to even.
pub fn nanos_text(text: &str) -> Result<Nanos, DecimalError> {
    scaled(text, 0)
}

/// Parses `text` and multiplies it by `10^shift`, exactly.
#[inline]
fn scaled(text: &str, shift: u32) -> Result<Nanos, DecimalError> {
    // Nearly every value in a trace is a plain integer of microseconds:
    // read a word of digits at a time, and scale it in a `u64`.
    if let Some((value, digits)) = tally_utils::decimal::leading_integer(text.as_bytes())
        && digits == text.len()
    {
        let value = 10u64.checked_pow(shift).and_then(|scale| value.checked_mul(scale));
        return value.map(|value| Nanos { value, rounded: false }).ok_or(DecimalError::OutOfRange);
    }
    scaled_digit_by_digit(text, shift)
}

/// [`scaled`] of any number's text, a digit at a time.
fn scaled_digit_by_digit(text: &str, shift: u32) -> Result<Nanos, DecimalError> {
    let text = text.trim();
    let text = match text.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')) {
        Some(inner) => inner,
        None => text,
    };
    let bytes = text.as_bytes();
    let mut index = 0;
    let negative = bytes.first() == Some(&b'-');
    if negative {
        index += 1;
    }
    let mut digits = Digits::default();
    let integer_start = index;
    while let Some(&byte) = bytes.get(index).filter(|byte| byte.is_ascii_digit()) {
        digits.push(byte - b'0', false);
        index += 1;
    }
    if index == integer_start {
        return Err(DecimalError::NotANumber);
    }
    if bytes.get(index) == Some(&b'.') {
        index += 1;
        let fraction_start = index;
        while let Some(&byte) = bytes.get(index).filter(|byte| byte.is_ascii_digit()) {
            digits.push(byte - b'0', true);
            index += 1;
        }
        if index == fraction_start {
            return Err(DecimalError::NotANumber);
        }
    }
    let mut exponent: i64 = 0;
    if matches!(bytes.get(index), Some(b'e' | b'E')) {
        index += 1;
        let exponent_negative = match bytes.get(index) {
            Some(b'-') => {
                index += 1;
                true
            }
            Some(b'+') => {
                index += 1;
                false
            }
            _ => false,
        };
        let exponent_start = index;
        while let Some(&byte) = bytes.get(index).filter(|byte| byte.is_ascii_digit()) {
            // Saturating: an exponent beyond a billion is out of range or zero
            // either way, and the saturated value still says which.
            exponent = exponent.saturating_mul(10).saturating_add(i64::from(byte - b'0'));
            index += 1;
        }
        if index == exponent_start {
            return Err(DecimalError::NotANumber);
        }
        if exponent_negative {
            exponent = -exponent;
        }
    }
    if index != bytes.len() {
        return Err(DecimalError::NotANumber);
    }
    if digits.mantissa == 0 && !digits.sticky {
        return Ok(Nanos { value: 0, rounded: false });
    }
    if negative {
        return Err(DecimalError::Negative);
    }
    let power = exponent.saturating_add(i64::from(shift)).saturating_add(digits.power);
    digits.into_nanos(power)
}

/// The significant digits read so far: `mantissa * 10^power`, with `sticky`
/// set when non-zero digits beyond [`KEPT_DIGITS`] were dropped.
#[derive(Default)]
struct Digits {
    mantissa: u128,
    count: u32,
    power: i64,
    sticky: bool,
}

impl Digits {
    fn push(&mut self, digit: u8, fractional: bool) {
        if self.count == 0 && digit == 0 {
            // Leading zeros carry no precision; a fractional one still moves
            // the decimal point.
            if fractional {
                self.power -= 1;
            }
            return;
        }
        if self.count < KEPT_DIGITS {
            self.mantissa = self.mantissa * 10 + u128::from(digit);
            self.count += 1;
            if fractional {
                self.power -= 1;
            }
        } else {
            // A dropped integer digit still scales the value up by ten.
            if !fractional {
                self.power += 1;
            }
            self.sticky |= digit != 0;
        }
    }

    fn into_nanos(self, power: i64) -> Result<Nanos, DecimalError> {
        if power >= 0 {
            let scale = u32::try_from(power).ok().and_then(|power| 10u128.checked_pow(power));
            let value = scale.and_then(|scale| self.mantissa.checked_mul(scale));
            let value = value.and_then(|value| u64::try_from(value).ok()).ok_or(DecimalError::OutOfRange)?;
            return Ok(Nanos { value, rounded: self.sticky });
        }
        let divisor = u32::try_from(-power).ok().and_then(|power| 10u128.checked_pow(power));
        let Some(divisor) = divisor else {
            // Below 10^-38 of the unit: the mantissa (< 10^38) is less than
            // half of the divisor, so the value rounds to zero.
            return Ok(Nanos { value: 0, rounded: true });
        };
        let quotient = self.mantissa / divisor;
        let remainder = self.mantissa % divisor;
        // divisor is a power of ten of at least 10, so half is exact.
        let half = divisor / 2;
        let round_up = remainder > half || (remainder == half && (self.sticky || quotient % 2 == 1));
        let value = quotient + u128::from(round_up);
        let value = u64::try_from(value).map_err(|_| DecimalError::OutOfRange)?;
        Ok(Nanos { value, rounded: remainder != 0 || self.sticky })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The integer shortcut gives what the digit-by-digit reading
        /// gives, out-of-range values, leading zeros and all.
        #[test]
        fn plain_integers_read_as_any_number(digits in "[0-9]{1,24}", shift in prop::sample::select(vec![0u32, 3])) {
            prop_assert_eq!(scaled(&digits, shift), scaled_digit_by_digit(&digits, shift));
        }
    }

    fn ns(text: &str) -> u64 {
        micros_to_nanos(text).unwrap_or_else(|error| panic!("{text}: {error}")).value
    }

    #[test]
    fn integers_and_three_decimals_are_exact() {
        assert_eq!(ns("0"), 0);
        assert_eq!(ns("68.0"), 68_000);
        assert_eq!(ns("1682725898236567"), 1_682_725_898_236_567_000);
        assert_eq!(ns("4458676983543.183"), 4_458_676_983_543_183);
        assert_eq!(ns("1712195495505583.999"), 1_712_195_495_505_583_999);
        // 17 digits of microseconds: beyond i64 nanoseconds, within u64.
        assert_eq!(ns("17121954955055839.5"), 17_121_954_955_055_839_500);
        assert_eq!(ns("\"12.5\""), 12_500);
        assert_eq!(ns("1.5e3"), 1_500_000);
        assert_eq!(ns("15E-1"), 1_500);
        assert_eq!(ns("0.000001e6"), 1_000);
        assert_eq!(ns("-0"), 0);
        assert_eq!(ns("-0.000"), 0);
    }

    #[test]
    fn sub_nanosecond_digits_round_half_to_even() {
        assert_eq!(micros_to_nanos("0.0005"), Ok(Nanos { value: 0, rounded: true }));
        assert_eq!(micros_to_nanos("0.0015"), Ok(Nanos { value: 2, rounded: true }));
        assert_eq!(micros_to_nanos("0.00150000000000000000000000000000000000000000001").unwrap().value, 2);
        assert_eq!(micros_to_nanos("0.0025").unwrap().value, 2);
        assert_eq!(micros_to_nanos("0.00250000000000000000000000000000000000000000001").unwrap().value, 3);
        assert_eq!(micros_to_nanos("1.0004").unwrap().value, 1000);
        assert_eq!(micros_to_nanos("1e-40"), Ok(Nanos { value: 0, rounded: true }));
        assert_eq!(micros_to_nanos("2.000"), Ok(Nanos { value: 2000, rounded: false }));
    }

    #[test]
    fn bad_text_is_refused() {
        for text in ["", "-", "1.", ".5", "1e", "1e+", "abc", "1,5", "0x10", "1 2", "\"\"", "NaN", "true"] {
            assert_eq!(micros_to_nanos(text), Err(DecimalError::NotANumber), "{text:?}");
        }
        assert_eq!(micros_to_nanos("-0.001"), Err(DecimalError::Negative));
        assert_eq!(micros_to_nanos("18446744073709552"), Err(DecimalError::OutOfRange));
        assert_eq!(micros_to_nanos("1e400"), Err(DecimalError::OutOfRange));
        assert_eq!(nanos_text("18446744073709551615").map(|n| n.value), Ok(u64::MAX));
        assert_eq!(nanos_text("18446744073709551616"), Err(DecimalError::OutOfRange));
        assert_eq!(
            micros_to_nanos("123456789012345678901234567890123456789012345"),
            Err(DecimalError::OutOfRange)
        );
    }
}
