//! JSON text exactly as Python's `json.dumps(value, sort_keys=True)` writes
//! it, the way stormlog writes every artifact line.
//!
//! The defaults of `json.dumps` matter byte for byte: `", "` and `": "`
//! separators, `ensure_ascii=True` (every character outside `' '..='~'`
//! escaped as `\uXXXX` with lowercase hex, astral characters as surrogate
//! pairs), keys sorted by code point at every level, and floats as Python's
//! `repr` prints them (`1e+16`, `1e-05`, `0.0001`, `1.0`).
//!
//! ```
//! use serde_json::json;
//! use tally_artifact::pyjson::{to_python_json, Separators};
//! let value = json!({"b": [1.0, 1e16, "é"], "a": null});
//! assert_eq!(to_python_json(&value, Separators::DEFAULT), r#"{"a": null, "b": [1.0, 1e+16, "\u00e9"]}"#);
//! assert_eq!(to_python_json(&value, Separators::COMPACT), r#"{"a":null,"b":[1.0,1e+16,"\u00e9"]}"#);
//! ```

use serde_json::{Map, Number, Value};
use tally_core::RecordMember;
use tally_utils::byte_search::{below, equal_to, first_flagged, non_ascii};

/// The item and key separators of `json.dumps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Separators {
    item: &'static str,
    key: &'static str,
}

impl Separators {
    /// `json.dumps`' default: `", "` and `": "`.
    pub const DEFAULT: Separators = Separators { item: ", ", key: ": " };
    /// `separators=(",", ":")`.
    pub const COMPACT: Separators = Separators { item: ",", key: ":" };

    pub(crate) fn item(self) -> &'static [u8] {
        self.item.as_bytes()
    }

    pub(crate) fn key(self) -> &'static [u8] {
        self.key.as_bytes()
    }
}

/// `json.dumps(value, sort_keys=True, separators=...)` as a string.
pub fn to_python_json(value: &Value, separators: Separators) -> String {
    let mut out = Vec::new();
    write_value(&mut out, value, separators);
    // Only ASCII is written: ensure_ascii escapes everything else.
    String::from_utf8(out).unwrap_or_default()
}

/// Appends one JSON value.
pub fn write_value(out: &mut Vec<u8>, value: &Value, separators: Separators) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.extend_from_slice(separators.item());
                }
                write_value(out, item, separators);
            }
            out.push(b']');
        }
        Value::Object(map) => write_map(out, map, separators),
    }
}

/// Appends one JSON object with its keys sorted.
pub fn write_map(out: &mut Vec<u8>, map: &Map<String, Value>, separators: Separators) {
    out.push(b'{');
    let sorted = map.keys().zip(map.keys().skip(1)).all(|(a, b)| a < b);
    if sorted {
        write_entries(out, map.iter(), separators);
    } else {
        // serde_json keeps keys sorted unless a crate in the build turns on
        // its `preserve_order` feature; sort_keys must hold either way.
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        write_entries(out, entries.into_iter(), separators);
    }
    out.push(b'}');
}

fn write_entries<'a>(
    out: &mut Vec<u8>,
    entries: impl Iterator<Item = (&'a String, &'a Value)>,
    separators: Separators,
) {
    for (index, (key, value)) in entries.enumerate() {
        if index > 0 {
            out.extend_from_slice(separators.item());
        }
        write_str(out, key);
        out.extend_from_slice(separators.key());
        write_value(out, value, separators);
    }
}

/// Appends one member of an event's record form, as [`write_value`] writes
/// the member's JSON ([`RecordMember::to_json`]), without building it.
pub fn write_record_member(out: &mut Vec<u8>, member: RecordMember<'_>, separators: Separators) {
    match member {
        RecordMember::Null => out.extend_from_slice(b"null"),
        RecordMember::Bool(true) => out.extend_from_slice(b"true"),
        RecordMember::Bool(false) => out.extend_from_slice(b"false"),
        RecordMember::Unsigned(value) => write_u64(out, value),
        RecordMember::Signed(value) => write_i64(out, value),
        RecordMember::Text(text) => write_str(out, text),
        RecordMember::Ref(reference) => {
            // `EntityRef::to_json`'s two keys, sorted.
            out.extend_from_slice(b"{\"id\"");
            out.extend_from_slice(separators.key());
            write_str(out, reference.id());
            out.extend_from_slice(separators.item());
            out.extend_from_slice(b"\"producer_id\"");
            out.extend_from_slice(separators.key());
            write_str(out, reference.producer_id());
            out.push(b'}');
        }
        RecordMember::Context(context) => write_value(out, &context.to_json(), separators),
        RecordMember::Names(names) => {
            out.push(b'[');
            for (index, name) in names.iter().enumerate() {
                if index > 0 {
                    out.extend_from_slice(separators.item());
                }
                write_str(out, name);
            }
            out.push(b']');
        }
        RecordMember::Metadata(map) => write_map(out, map, separators),
    }
}

/// Appends an integer or float as Python writes it.
pub fn write_number(out: &mut Vec<u8>, number: &Number) {
    if let Some(unsigned) = number.as_u64() {
        write_u64(out, unsigned);
    } else if let Some(signed) = number.as_i64() {
        write_i64(out, signed);
    } else if let Some(float) = number.as_f64() {
        write_f64(out, float);
    }
}

/// Appends an unsigned integer.
#[inline]
pub fn write_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(tally_utils::decimal::Decimal::new(value).as_bytes());
}

/// Appends a signed integer.
pub fn write_i64(out: &mut Vec<u8>, value: i64) {
    if value < 0 {
        out.push(b'-');
    }
    write_u64(out, value.unsigned_abs());
}

/// Appends a float as Python's `repr` (and so `json.dumps`) writes it: the
/// shortest digits that round-trip, positional when the decimal exponent is
/// in `-4..16`, else `d.ddde+XX`; `NaN`, `Infinity` and `-Infinity` as
/// `json.dumps` spells them.
pub fn write_f64(out: &mut Vec<u8>, value: f64) {
    if value.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if value.is_infinite() {
        out.extend_from_slice(if value > 0.0 { b"Infinity" } else { b"-Infinity" });
        return;
    }
    // Rust's `{:e}` prints the shortest round-trip digits, as Python's repr
    // does (both pick the closest candidate); only the layout differs.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    if value.is_sign_negative() {
        out.push(b'-');
    }
    let point = exponent + 1;
    let count = digits.len() as i32;
    if !(-4 < point && point <= 16) {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        if exponent.abs() < 10 {
            out.push(b'0');
        }
        write_u64(out, u64::from(exponent.unsigned_abs()));
    } else if point <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-point) as usize));
        out.extend_from_slice(&digits);
    } else if point >= count {
        out.extend_from_slice(&digits);
        out.extend(std::iter::repeat_n(b'0', (point - count) as usize));
        out.extend_from_slice(b".0");
    } else {
        out.extend_from_slice(&digits[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[point as usize..]);
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends a string with `ensure_ascii=True` escaping.
#[inline]
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    let bytes = text.as_bytes();
    // Runs of printable ASCII are copied whole; only the rest is escaped.
    let mut start = 0;
    let mut index = plain_run(bytes);
    while let Some(&byte) = bytes.get(index) {
        out.extend_from_slice(&bytes[start..index]);
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                // `index` starts a character: every byte before it was
                // consumed whole, and `text` is valid UTF-8.
                let c = text[index..].chars().next().map_or(0, u32::from);
                if c >= 0x10000 {
                    let v = c - 0x10000;
                    escape_unit(out, 0xD800 | (v >> 10));
                    escape_unit(out, 0xDC00 | (v & 0x3FF));
                } else {
                    escape_unit(out, c);
                }
            }
        }
        start = index + utf8_width(byte);
        index = start + plain_run(&bytes[start..]);
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Whether `byte` is written as it is: printable ASCII but the quote and
/// the backslash.
fn is_plain(byte: u8) -> bool {
    (b' '..=b'~').contains(&byte) && byte != b'"' && byte != b'\\'
}

/// How many bytes at the start of `bytes` are plain ([`is_plain`]), found
/// eight at a time: names and IDs are mostly long plain runs, and a byte at
/// a time was most of an import's writing.
fn plain_run(bytes: &[u8]) -> usize {
    let escaped = |word| {
        non_ascii(word)
            | below(word, 0x20)
            | equal_to(word, b'"')
            | equal_to(word, b'\\')
            | equal_to(word, 0x7f)
    };
    first_flagged(bytes, escaped, |byte| !is_plain(byte))
}

fn utf8_width(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

fn escape_unit(out: &mut Vec<u8>, unit: u32) {
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((unit >> shift) & 0xF) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(value: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, value);
        String::from_utf8(out).unwrap_or_default()
    }

    fn string(text: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, text);
        String::from_utf8(out).unwrap_or_default()
    }

    // Expected texts are Python 3.11's `repr` of the same floats.
    #[test]
    fn floats_as_python_repr() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.2345e-7, "1.2345e-07"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (-2.5, "-2.5"),
            (9007199254740993.0, "9007199254740992.0"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for &(value, expected) in cases {
            assert_eq!(float(value), expected, "{value:e}");
        }
    }

    #[test]
    fn strings_with_ensure_ascii() {
        assert_eq!(string("plain"), "\"plain\"");
        assert_eq!(string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(string("\n\r\t\u{8}\u{c}\u{1}\u{7f}"), r#""\n\r\t\b\f\u0001\u007f""#);
        assert_eq!(string("é€"), r#""\u00e9\u20ac""#);
        assert_eq!(string("x😀y"), r#""x\ud83d\ude00y""#);
        assert_eq!(string(""), "\"\"");
    }

    /// `json.dumps`' escaping of one string, a character at a time.
    fn escaped_by_chars(text: &str) -> String {
        let mut out = String::from("\"");
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                ' '..='~' => out.push(c),
                _ => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
        out.push('"');
        out
    }

    proptest::proptest! {
        /// The word-at-a-time search for plain runs finds every byte to
        /// escape, wherever it falls in a word.
        #[test]
        fn strings_escape_as_a_character_at_a_time(
            text in proptest::string::string_regex("[ -~\"\\\\\u{0}-\u{1f}\u{7f}\u{80}-\u{ff}é€😀\u{2028}]{0,40}").expect("a valid character class"),
        ) {
            proptest::prop_assert_eq!(string(&text), escaped_by_chars(&text));
        }
    }
}
