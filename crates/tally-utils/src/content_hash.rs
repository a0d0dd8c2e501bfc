//! 128-bit hashes of event content, equal for values Python's `==` finds
//! equal: what a streaming resolver compares instead of keeping events.
//!
//! [`ContentHasher`] is two independent folded-multiply lanes. Two values
//! get the same hash when they are equal as stormlog compares them and
//! different hashes otherwise, but for a chance of about 2^-128 per pair.
//!
//! JSON is hashed through a small set of steps ([`ContentHasher::json_null`],
//! [`ContentHasher::json_object_start`], ...) that a decoded
//! `serde_json::Value` and a parser reading JSON text straight from a line
//! both drive, so that a reader that never builds the value still computes
//! the same hash. The steps are prefix-free (objects and arrays end with
//! their length, not start with it), so a reader can hash while it reads.

use std::hash::Hasher;

use serde_json::{Map, Number, Value};

const LANE_A: u64 = 0x9e37_79b9_7f4a_7c15;
const LANE_B: u64 = 0xc2b2_ae3d_27d4_eb4f;
const FINISH_A: u64 = 0x5851_f42d_4c95_7f2d;
const FINISH_B: u64 = 0x1656_67b1_9e37_79f9;

/// Strings this long or shorter are one step of each lane
/// ([`ContentHasher::text`]).
const SHORT_TEXT: usize = 16;
/// The short-string step's keys (odd, from the digits of sqrt(2), sqrt(3),
/// sqrt(5) and ln 2).
const SHORT_KEYS: [u64; 4] =
    [0x6a09_e667_f3bc_c909, 0xbb67_ae85_84ca_a73b, 0x3c6e_f372_fe94_f82b, 0xb172_17f7_d1cf_79ab];
/// Strings this long or longer are hashed four words a step
/// ([`ContentHasher::json_string`]).
const LONG_STRING: usize = 64;
/// The long-string lanes' multipliers (odd, from the digits of e, pi and
/// the golden ratio, as the lanes' own).
const BLOCK_LANES: [u64; 4] =
    [0x9e37_79b9_7f4a_7c15, 0xb7e1_5162_8aed_2a6b, 0x243f_6a88_85a3_08d3, 0xc2b2_ae3d_27d4_eb4f];

const TAG_NULL: u8 = 10;
const TAG_INTEGER: u8 = 11;
const TAG_FLOAT: u8 = 12;
const TAG_STRING: u8 = 13;
const TAG_ARRAY: u8 = 14;
const TAG_OBJECT: u8 = 15;
const TAG_KEY: u8 = 16;
const TAG_ARRAY_END: u8 = 17;
const TAG_OBJECT_END: u8 = 18;

use crate::fast_hash::folded_multiply;

/// A 128-bit content hasher (not a cryptographic one: it keeps apart values
/// that differ by accident, not by design).
///
/// ```
/// use serde_json::json;
/// use tally_utils::content_hash::ContentHasher;
/// let hash = |value: &serde_json::Value| {
///     let mut hasher = ContentHasher::default();
///     hasher.json_value(value);
///     hasher.finish128()
/// };
/// assert_eq!(hash(&json!({"a": 1, "b": [true]})), hash(&json!({"b": [1.0], "a": 1})));
/// assert_ne!(hash(&json!({"a": 1})), hash(&json!({"a": "1"})));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ContentHasher {
    a: u64,
    b: u64,
}

impl Default for ContentHasher {
    fn default() -> Self {
        Self { a: 0x243f_6a88_85a3_08d3, b: 0x1319_8a2e_0370_7344 }
    }
}

impl ContentHasher {
    /// One 64-bit word.
    #[inline]
    pub fn word(&mut self, word: u64) {
        self.a = folded_multiply(self.a ^ word, LANE_A);
        self.b = folded_multiply(self.b ^ word.rotate_left(29), LANE_B);
    }

    /// The 128-bit result.
    pub fn finish128(&self) -> u128 {
        let high = folded_multiply(self.a ^ self.b.rotate_left(17), FINISH_A);
        let low = folded_multiply(self.b ^ self.a.rotate_left(41), FINISH_B);
        (u128::from(high) << 64) | u128::from(low)
    }

    /// A marker that keeps the kinds of what follows apart.
    #[inline]
    pub fn tag(&mut self, tag: u8) {
        self.word(0xa5a5_0000 | u64::from(tag));
    }

    /// A string, length first.
    #[inline]
    pub fn text(&mut self, text: &str) {
        if text.len() <= SHORT_TEXT {
            return self.short(0, text.as_bytes());
        }
        self.word(text.len() as u64);
        self.write(text.as_bytes());
    }

    /// A string of at most [`SHORT_TEXT`] bytes with `salt` (a tag, or 0
    /// for none) as one step of each lane, where a word at a time would be
    /// a chain of three to five multiplications: keys and most values of
    /// event content are short, and each record hashes a dozen of them.
    ///
    /// The bytes are read as two words (overlapping where there are fewer
    /// than sixteen) which with the length and the salt determine the
    /// string; two independent multiplications fold them into one word per
    /// lane, so the lanes still hold 128 bits between them.
    #[inline]
    fn short(&mut self, salt: u8, bytes: &[u8]) {
        let length = bytes.len();
        let (low, high) = match length {
            8.. => (word_at(bytes, 0), word_at(bytes, length - 8)),
            4..8 => (half_at(bytes, 0), half_at(bytes, length - 4)),
            1..4 => (
                u64::from(bytes[0]) | u64::from(bytes[length / 2]) << 8 | u64::from(bytes[length - 1]) << 16,
                0,
            ),
            0 => (0, 0),
        };
        let head = (u64::from(salt) << 8) | length as u64;
        let first = folded_multiply(low ^ SHORT_KEYS[0] ^ head, high ^ SHORT_KEYS[1]);
        let second = folded_multiply(low ^ SHORT_KEYS[2], high ^ SHORT_KEYS[3] ^ head.rotate_left(32));
        self.a = folded_multiply(self.a ^ first, LANE_A);
        self.b = folded_multiply(self.b ^ second, LANE_B);
    }

    /// An optional value: a tag for absence, or a tag and the value.
    #[inline]
    pub fn option<T>(&mut self, value: Option<T>, each: impl FnOnce(&mut Self, T)) {
        match value {
            None => self.tag(0),
            Some(value) => {
                self.tag(1);
                each(self, value);
            }
        }
    }

    /// JSON `null`.
    #[inline]
    pub fn json_null(&mut self) {
        self.tag(TAG_NULL);
    }

    /// A JSON integer, or a boolean or float that Python finds equal to it.
    #[inline]
    pub fn json_integer(&mut self, value: i128) {
        self.tag(TAG_INTEGER);
        self.word(value as u64);
        self.word((value >> 64) as u64);
    }

    /// A JSON number that is not an integer (a float holding an integer
    /// hashes as [`ContentHasher::json_integer`], as Python compares it).
    pub fn json_float(&mut self, value: f64) {
        if value.fract() == 0.0 && value.abs() < 1.7e38 {
            // No fraction and inside i128: converts exactly.
            return self.json_integer(value as i128);
        }
        self.tag(TAG_FLOAT);
        self.word(value.to_bits());
    }

    /// A JSON string.
    ///
    /// A string of 16 bytes or fewer (most values of event content) is one
    /// step of each lane, its tag with it. A string of 64 bytes or more (a
    /// kernel's name, often 200) is read 32 bytes a step into four lanes,
    /// one word each, folded
    /// into both halves at its end: four independent multiplications where
    /// a word at a time waits on the last. A word then reaches one lane of
    /// 64 bits before the fold, so two long strings that differ collide
    /// with a chance near 2^-64: what the resolver's fingerprints keep of
    /// any hash anyway (they are 64 bits).
    #[inline]
    pub fn json_string(&mut self, text: &str) {
        if text.len() <= SHORT_TEXT {
            return self.short(TAG_STRING, text.as_bytes());
        }
        self.tag(TAG_STRING);
        if text.len() < LONG_STRING {
            self.text(text);
            return;
        }
        self.lanes(text);
    }

    /// The length, then 32 bytes a step into four lanes, folded into both
    /// halves at the end, then the remainder.
    #[inline]
    fn lanes(&mut self, text: &str) {
        self.word(text.len() as u64);
        let mut lanes = [self.a, self.b, self.a.rotate_left(32) ^ LANE_B, self.b.rotate_left(32) ^ LANE_A];
        let mut blocks = text.as_bytes().chunks_exact(32);
        for block in &mut blocks {
            for ((lane, word), multiplier) in lanes.iter_mut().zip(block.chunks_exact(8)).zip(BLOCK_LANES) {
                *lane = folded_multiply(*lane ^ word_at(word, 0), multiplier);
            }
        }
        for lane in lanes {
            self.word(lane);
        }
        self.write(blocks.remainder());
    }

    /// The start of a JSON array; its items follow, then
    /// [`ContentHasher::json_array_end`].
    #[inline]
    pub fn json_array_start(&mut self) {
        self.tag(TAG_ARRAY);
    }

    /// The end of a JSON array of `len` items.
    #[inline]
    pub fn json_array_end(&mut self, len: usize) {
        self.tag(TAG_ARRAY_END);
        self.word(len as u64);
    }

    /// The start of a JSON object; its members follow in ascending key
    /// order (bytewise, as `serde_json::Map` sorts them), each a
    /// [`ContentHasher::json_key`] and a value, then
    /// [`ContentHasher::json_object_end`]. Python's dict equality ignores
    /// order; a reader that meets keys out of order must sort them first.
    #[inline]
    pub fn json_object_start(&mut self) {
        self.tag(TAG_OBJECT);
    }

    /// A member's key.
    #[inline]
    pub fn json_key(&mut self, key: &str) {
        if key.len() <= SHORT_TEXT {
            return self.short(TAG_KEY, key.as_bytes());
        }
        self.tag(TAG_KEY);
        self.text(key);
    }

    /// The end of a JSON object of `len` members.
    #[inline]
    pub fn json_object_end(&mut self, len: usize) {
        self.tag(TAG_OBJECT_END);
        self.word(len as u64);
    }

    /// A decoded JSON value, as Python's `==` sees it.
    pub fn json_value(&mut self, value: &Value) {
        match value {
            Value::Null => self.json_null(),
            Value::Bool(flag) => self.json_integer(i128::from(*flag)),
            Value::Number(number) => self.json_number(number),
            Value::String(text) => self.json_string(text),
            Value::Array(items) => {
                self.json_array_start();
                for item in items {
                    self.json_value(item);
                }
                self.json_array_end(items.len());
            }
            Value::Object(map) => self.json_map(map),
        }
    }

    /// A decoded JSON object, whatever its key order.
    pub fn json_map(&mut self, map: &Map<String, Value>) {
        self.json_object_start();
        // serde_json's map iterates sorted unless its preserve_order feature
        // is on somewhere in the build; either way the hash is of sorted keys.
        // Sorted is what it is here, so the entries are sorted into a list
        // only when they come out of order (every record's metadata is
        // hashed, and the list was an allocation each).
        let sorted = map.keys().zip(map.keys().skip(1)).all(|(a, b)| a <= b);
        if sorted {
            for (key, item) in map {
                self.json_key(key);
                self.json_value(item);
            }
        } else {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (key, item) in entries {
                self.json_key(key);
                self.json_value(item);
            }
        }
        self.json_object_end(map.len());
    }

    /// The same normalisation as [`crate::json_eq::python_json_eq`].
    fn json_number(&mut self, number: &Number) {
        if let Some(unsigned) = number.as_u64() {
            return self.json_integer(i128::from(unsigned));
        }
        if let Some(signed) = number.as_i64() {
            return self.json_integer(i128::from(signed));
        }
        self.json_float(number.as_f64().unwrap_or(f64::NAN));
    }
}

impl Hasher for ContentHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.word(word_at(chunk, 0));
        }
        let rest = chunks.remainder();
        // The remainder's length keeps "a" and "a\0" apart.
        self.word(tail_word(bytes, rest.len()) ^ ((rest.len() as u64) << 59));
    }

    fn write_u8(&mut self, value: u8) {
        self.word(u64::from(value));
    }

    fn write_u32(&mut self, value: u32) {
        self.word(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.word(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.word(value as u64);
    }

    fn finish(&self) -> u64 {
        self.finish128() as u64
    }
}

/// The eight bytes at `at`, little-endian.
#[inline]
fn word_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// The four bytes at `at`, little-endian.
#[inline]
fn half_at(bytes: &[u8], at: usize) -> u64 {
    let mut half = [0u8; 4];
    half.copy_from_slice(&bytes[at..at + 4]);
    u64::from(u32::from_le_bytes(half))
}

/// The last `rest` bytes of `bytes` (fewer than eight) as a little-endian
/// word, zero above them: what copying them into a zeroed word gives,
/// without the copy of a variable length (a call to `memcpy` per string).
#[inline]
fn tail_word(bytes: &[u8], rest: usize) -> u64 {
    let length = bytes.len();
    match rest {
        0 => 0,
        // The last eight bytes, the `rest` wanted at their top.
        _ if length >= 8 => word_at(bytes, length - 8) >> (8 * (8 - rest)),
        // Two halves that overlap: a byte in both is the same byte.
        4.. => half_at(bytes, length - rest) | (half_at(bytes, length - 4) << (8 * (rest - 4))),
        _ => bytes[length - rest..].iter().rev().fold(0, |word, &byte| (word << 8) | u64::from(byte)),
    }
}

/// The hash of one JSON object's members ([`ContentHasher::json_map`] on a
/// fresh hasher): what an event view carries of its metadata.
pub fn metadata_hash(map: &Map<String, Value>) -> u128 {
    let mut hasher = ContentHasher::default();
    hasher.json_map(map);
    hasher.finish128()
}

#[cfg(test)]
mod tests {
    use super::tail_word;

    /// The tail is the remainder copied into a zeroed word, for every
    /// length of text and of remainder.
    #[test]
    fn tail_words_are_the_zero_padded_remainder() {
        let text: Vec<u8> = (1..=40u8).map(|byte| byte.wrapping_mul(37)).collect();
        for length in 0..text.len() {
            let bytes = &text[..length];
            let rest = length % 8;
            let mut word = [0u8; 8];
            word[..rest].copy_from_slice(&bytes[length - rest..]);
            assert_eq!(tail_word(bytes, rest), u64::from_le_bytes(word), "length {length}");
        }
    }
}
