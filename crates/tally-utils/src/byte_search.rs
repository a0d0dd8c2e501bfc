//! Finding the first byte of a set, eight bytes at a time in a `u64`, for
//! the scanners and writers that look for quotes, backslashes and control
//! characters in long plain runs of JSON text (the workspace has no unsafe
//! code, so no SIMD intrinsics).
//!
//! Each test below sets the high bit of the bytes of a word that are in
//! its set (its other bits are noise, cleared once by [`first_flagged`]
//! for any `|` of tests). The subtraction it uses can borrow out of a byte that is in the
//! set into the next one, so a byte after a flagged one may be flagged
//! wrongly, but never a byte before: the lowest flag of a word, and of any
//! `|` of such tests, is exact. [`first_flagged`] reads only that one.
//!
//! ```
//! use tally_utils::byte_search::{equal_to, first_flagged};
//! let quote = |word| equal_to(word, b'"');
//! assert_eq!(first_flagged(b"plain text, then \" a quote", quote, |byte| byte == b'"'), 17);
//! assert_eq!(first_flagged(b"no quote", quote, |byte| byte == b'"'), 8);
//! ```

/// Ones in every byte of a word.
const ONES: u64 = u64::MAX / 255;
/// The high bit of every byte of a word.
const HIGH: u64 = ONES << 7;

/// The bytes of `word` equal to `byte`, flagged (exact up to the first).
#[inline(always)]
pub fn equal_to(word: u64, byte: u8) -> u64 {
    let difference = word ^ (ONES * u64::from(byte));
    difference.wrapping_sub(ONES) & !difference
}

/// The bytes of `word` below `bound` (at most 0x80), flagged (exact up to
/// the first); bytes from 0x80 up are never flagged.
#[inline(always)]
pub fn below(word: u64, bound: u8) -> u64 {
    word.wrapping_sub(ONES * u64::from(bound)) & !word
}

/// The bytes of `word` from 0x80 up (every byte of a non-ASCII character
/// in UTF-8), flagged (exactly).
#[inline(always)]
pub fn non_ascii(word: u64) -> u64 {
    word
}

/// Where the first byte of `bytes` is that `flags` flags in its word
/// (built from these tests; the word's bytes in order, little-endian),
/// judged by `is_hit` one byte at a time over the last few bytes, which
/// fill no word; `bytes.len()` when there is none.
#[inline(always)]
pub fn first_flagged(bytes: &[u8], flags: impl Fn(u64) -> u64, is_hit: impl Fn(u8) -> bool) -> usize {
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let Ok(chunk) = <[u8; 8]>::try_from(chunk) else { break };
        let found = flags(u64::from_le_bytes(chunk)) & HIGH;
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while bytes.get(at).is_some_and(|&byte| !is_hit(byte)) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Bytes at and around the edges of every test: the sought bytes, their
    /// neighbours, and the bytes whose borrows could mislead.
    fn awkward_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop::sample::select(vec![
                0x00, 0x01, 0x1f, 0x20, 0x21, b'"', 0x23, b'\\', 0x5b, 0x5d, b'a', 0x7e, 0x7f, 0x80, 0xa2,
                0xdc, 0xff,
            ]),
            0..40,
        )
    }

    proptest! {
        /// Every combination the callers use finds what a byte-at-a-time
        /// search finds, wherever the byte falls in a word.
        #[test]
        fn finds_the_first_byte_of_the_set(bytes in awkward_bytes()) {
            let quote_or_backslash = |byte: u8| byte == b'"' || byte == b'\\';
            let special = |byte: u8| byte < 0x20 || quote_or_backslash(byte);
            let escaped = |byte: u8| special(byte) || byte >= 0x7f;
            prop_assert_eq!(
                first_flagged(&bytes, |word| equal_to(word, b'"') | equal_to(word, b'\\'), quote_or_backslash),
                bytes.iter().position(|&byte| quote_or_backslash(byte)).unwrap_or(bytes.len())
            );
            prop_assert_eq!(
                first_flagged(&bytes, |word| below(word, 0x20) | equal_to(word, b'"') | equal_to(word, b'\\'), special),
                bytes.iter().position(|&byte| special(byte)).unwrap_or(bytes.len())
            );
            let escaped_flags = |word| {
                non_ascii(word) | below(word, 0x20) | equal_to(word, b'"') | equal_to(word, b'\\') | equal_to(word, 0x7f)
            };
            prop_assert_eq!(
                first_flagged(&bytes, escaped_flags, escaped),
                bytes.iter().position(|&byte| escaped(byte)).unwrap_or(bytes.len())
            );
        }
    }
}
