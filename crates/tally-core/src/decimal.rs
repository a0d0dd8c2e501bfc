//! An unsigned integer's decimal digits, spelled on the stack: the one
//! spelling that the artifact writer, the trace import's record IDs and
//! the resolver's packed event IDs share, without `format!`'s machinery or
//! an allocation.

/// The decimal digits of a `u64` (no sign, no leading zeros; `0` for 0).
///
/// ```
/// use tally_core::decimal::Decimal;
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
