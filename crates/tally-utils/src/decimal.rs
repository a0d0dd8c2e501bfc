//! An unsigned integer's decimal digits, spelled on the stack: the one
//! spelling that the artifact writer, the trace import's record IDs and
//! the resolver's packed event IDs share, without `format!`'s machinery or
//! an allocation; and read back by the fast scanners of artifacts and
//! traces ([`digit_run`], [`leading_integer`]; [`digits_value`] for text
//! that is all digits), eight digits at a time, since nanosecond
//! timestamps have nineteen and microsecond ones sixteen.

/// Ones in every byte of a word.
const ONES: u64 = u64::MAX / 255;

/// The bytes of `word` that are not ASCII digits, flagged, exact up to and
/// including the first one (bytes after it may be flagged wrongly).
///
/// A digit is 0x30-0x39: high nibble 3, and still 3 with 6 added. Adding
/// carries out of a byte only from a non-digit, and only into the bytes
/// after it, so the first byte flagged is the first non-digit.
#[inline]
fn non_digits(word: u64) -> u64 {
    let high = ONES * 0xf0;
    let threes = ONES * 0x30;
    ((word & high) ^ threes) | ((word.wrapping_add(ONES * 0x06) & high) ^ threes)
}

/// How many ASCII digits `text` starts with.
///
/// ```
/// use tally_utils::decimal::digit_run;
/// assert_eq!(digit_run(b"1669783687464181, "), 16);
/// assert_eq!(digit_run(b"x1"), 0);
/// ```
#[inline]
pub fn digit_run(text: &[u8]) -> usize {
    let mut at = 0;
    while let Some(chunk) = text.get(at..at + 8) {
        let Ok(chunk) = <[u8; 8]>::try_from(chunk) else { break };
        let flagged = non_digits(u64::from_le_bytes(chunk));
        if flagged != 0 {
            return at + (flagged.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + text[at..].iter().take_while(|byte| byte.is_ascii_digit()).count()
}

/// The value of eight digits' bytes, less `'0'` each, in a little-endian
/// word: pairs, then fours, then the eight, one multiply each (the first
/// digit is the lowest byte, and the most significant).
#[inline]
fn eight_digits(word: u64) -> u64 {
    let word = (word * 10 + (word >> 8)) & 0x00ff_00ff_00ff_00ff;
    let word = (word * 100 + (word >> 16)) & 0x0000_ffff_0000_ffff;
    (word * 10_000 + (word >> 32)) & 0xffff_ffff
}

/// Powers of ten up to the eighth.
const TENS: [u64; 9] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

/// The integer that `text` starts with: its value and how many digits it
/// has; `None` when `text` does not start with a digit or the value does
/// not fit in a `u64` (leading zeros are the caller's to refuse). One pass,
/// a word at a time.
///
/// ```
/// use tally_utils::decimal::leading_integer;
/// assert_eq!(leading_integer(b"1796414399449839565, "), Some((1796414399449839565, 19)));
/// assert_eq!(leading_integer(b"7}"), Some((7, 1)));
/// assert_eq!(leading_integer(b"18446744073709551616"), None);
/// ```
#[inline(always)]
pub fn leading_integer(text: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    let mut at = 0;
    while let Some(chunk) = text.get(at..at + 8) {
        let Ok(chunk) = <[u8; 8]>::try_from(chunk) else { break };
        let word = u64::from_le_bytes(chunk);
        let flagged = non_digits(word);
        if flagged == 0 {
            value = value.checked_mul(TENS[8])?.checked_add(eight_digits(word - ONES * 0x30))?;
            at += 8;
            continue;
        }
        let digits = (flagged.trailing_zeros() / 8) as usize;
        if digits == 0 {
            break;
        }
        // The digits moved to the top of the word, zeros (leading zeros,
        // of no value) below them. The subtraction borrows only from the
        // non-digit up, out of the bytes the shift drops: it wraps there.
        let kept = word.wrapping_sub(ONES * 0x30) << (8 * (8 - digits));
        value = value.checked_mul(TENS[digits])?.checked_add(eight_digits(kept))?;
        return Some((value, at + digits));
    }
    for &digit in text.get(at..)? {
        if !digit.is_ascii_digit() {
            break;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))?;
        at += 1;
    }
    (at > 0).then_some((value, at))
}

/// [`leading_integer`] as JSON spells integers: a zero followed by more
/// digits, which JSON forbids, is refused. The artifact and trace scanners
/// read integers through this, so both refuse what serde_json refuses.
///
/// ```
/// use tally_utils::decimal::leading_json_integer;
/// assert_eq!(leading_json_integer(b"0,"), Some((0, 1)));
/// assert_eq!(leading_json_integer(b"42}"), Some((42, 2)));
/// assert_eq!(leading_json_integer(b"007"), None);
/// ```
#[inline(always)]
pub fn leading_json_integer(text: &[u8]) -> Option<(u64, usize)> {
    let (value, digits) = leading_integer(text)?;
    (digits == 1 || text[0] != b'0').then_some((value, digits))
}

/// The value of `digits`, which are all ASCII digits (leading zeros are
/// the caller's to refuse): `None` when there are none, when another byte
/// is among them, or when the value does not fit in a `u64`.
///
/// ```
/// use tally_utils::decimal::digits_value;
/// assert_eq!(digits_value(b"18446744073709551615"), Some(u64::MAX));
/// assert_eq!(digits_value(b"18446744073709551616"), None);
/// assert_eq!(digits_value(b"12a"), None);
/// ```
#[inline]
pub fn digits_value(digits: &[u8]) -> Option<u64> {
    leading_integer(digits).filter(|&(_, length)| length == digits.len()).map(|(value, _)| value)
}

/// The decimal digits of a `u64` (no sign, no leading zeros; `0` for 0).
///
/// ```
/// use tally_utils::decimal::Decimal;
/// assert_eq!(Decimal::new(0).as_str(), "0");
/// assert_eq!(Decimal::new(u64::MAX).as_str(), u64::MAX.to_string());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Decimal {
    bytes: [u8; 20],
    start: usize,
}

impl Decimal {
    /// Spells `value`.
    #[inline]
    pub fn new(mut value: u64) -> Self {
        let mut digits = Self { bytes: [0; 20], start: 20 };
        loop {
            digits.start -= 1;
            digits.bytes[digits.start] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        digits
    }

    /// The digits.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[self.start..]
    }

    /// The digits, as text.
    #[inline]
    pub fn as_str(&self) -> &str {
        // Every byte is an ASCII digit, so the bytes are always UTF-8.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    /// The digits, by value.
    #[inline]
    pub fn into_bytes(self) -> impl Iterator<Item = u8> {
        let Decimal { bytes, start } = self;
        bytes.into_iter().skip(start)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn runs_end_at_the_first_other_byte_wherever_it_falls() {
        for other in 0..=255u8 {
            for at in 0..20 {
                let mut text = vec![b'7'; 24];
                text[at] = other;
                let expected = if other.is_ascii_digit() { text.len() } else { at };
                assert_eq!(digit_run(&text), expected, "byte {other:#x} at {at}");
                // Nineteen digits always fit.
                assert_eq!(digits_value(&text[..19]).is_some(), other.is_ascii_digit() || at >= 19);
                let leading = leading_integer(&text[..19]).map(|(_, length)| length);
                assert_eq!(leading, (at > 0 || other.is_ascii_digit()).then_some(expected.min(19)));
            }
        }
    }

    proptest! {
        /// Read back, every value's spelling is the value; with a digit
        /// more it is ten times the value, or nothing past `u64::MAX`.
        #[test]
        fn values_read_back(value: u64, digit in 0u8..10, zeros in 0usize..12) {
            let spelled = Decimal::new(value);
            prop_assert_eq!(digits_value(spelled.as_bytes()), Some(value));
            prop_assert_eq!(digit_run(spelled.as_bytes()), spelled.as_bytes().len());
            let mut longer = spelled.as_bytes().to_vec();
            longer.push(b'0' + digit);
            let expected = value.checked_mul(10).and_then(|value| value.checked_add(u64::from(digit)));
            prop_assert_eq!(digits_value(&longer), expected);
            let padded = [&vec![b'0'; zeros][..], spelled.as_bytes()].concat();
            prop_assert_eq!(digits_value(&padded), Some(value));
            prop_assert_eq!(leading_integer(&[&padded[..], b", "].concat()), Some((value, padded.len())));
        }
    }
}
