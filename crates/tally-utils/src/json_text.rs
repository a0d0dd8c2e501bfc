//! Where Python's `json` reads JSON text otherwise than serde_json, and the
//! readers of every crate must read it as Python does.

use std::borrow::Cow;

/// Rewrites each integer `-0` outside strings as ` 0` (the sign becomes a
/// space, so byte offsets and columns stay), and returns how many there
/// were. Python reads `-0` as the integer 0, so stormlog accepts
/// `"start_ns": -0`; serde_json reads it as the float `-0.0`, which no
/// integer field accepts. `-0.0` and `-0e0` are floats to both and stay.
///
/// ```
/// let mut text = br#"{"start_ns": -0, "note": "-0", "x": -0.0, "y": [-0]}"#.to_vec();
/// assert_eq!(tally_utils::json_text::integer_negative_zeros(&mut text), 2);
/// assert_eq!(&text[..], br#"{"start_ns":  0, "note": "-0", "x": -0.0, "y": [ 0]}"#);
/// ```
pub fn integer_negative_zeros(text: &mut [u8]) -> usize {
    let mut count = 0;
    let mut in_string = false;
    let mut escaped = false;
    let mut index = 0;
    while index < text.len() {
        let byte = text[index];
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if byte == b'"' {
            in_string = true;
        } else if byte == b'-'
            && text.get(index + 1) == Some(&b'0')
            && !text
                .get(index + 2)
                .is_some_and(|next| next.is_ascii_digit() || matches!(next, b'.' | b'e' | b'E'))
        {
            text[index] = b' ';
            count += 1;
        }
        index += 1;
    }
    count
}

/// `text` with each integer `-0` as Python reads it (see
/// [`integer_negative_zeros`]): borrowed when it holds none, which is
/// nearly always. Every reader of a JSON document parses what this gives.
///
/// ```
/// assert_eq!(tally_utils::json_text::pythonic_json_text(r#"{"n": -0}"#), r#"{"n":  0}"#);
/// assert!(matches!(tally_utils::json_text::pythonic_json_text("{}"), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn pythonic_json_text(text: &str) -> Cow<'_, str> {
    match pythonic_json_bytes(text.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        // Only ASCII `-` bytes became spaces: still the same valid UTF-8.
        Cow::Owned(bytes) => Cow::Owned(String::from_utf8(bytes).unwrap_or_else(|_| text.to_owned())),
    }
}

/// [`pythonic_json_text`] of JSON bytes (an artifact line, which may not be
/// UTF-8 at all: the parser then says where).
pub fn pythonic_json_bytes(text: &[u8]) -> Cow<'_, [u8]> {
    if !may_hold_negative_zero(text) {
        return Cow::Borrowed(text);
    }
    let mut copy = text.to_vec();
    integer_negative_zeros(&mut copy);
    Cow::Owned(copy)
}

/// Whether `text` may hold an integer `-0` at all: a cheap test before
/// copying a line to rewrite it. It may say yes for a `-0` inside a string
/// (the rewrite then changes nothing); it never says no for a real one.
pub fn may_hold_negative_zero(text: &[u8]) -> bool {
    (0..text.len().saturating_sub(1)).any(|at| is_negative_zero_at(text, at))
}

/// Whether the `-` at `at` starts what would be an integer `-0` outside a
/// string: `-0` after `:`, `[`, `,` or whitespace (or at the start), and
/// before a byte that ends a number. A reader that finds `-0` with a fast
/// substring search uses this to tell a dash in `"2024-06-01"` from a
/// number.
///
/// ```
/// assert!(tally_utils::json_text::is_negative_zero_at(b"{\"a\": -0}", 6));
/// assert!(!tally_utils::json_text::is_negative_zero_at(b"\"2024-06-01\"", 5));
/// assert!(!tally_utils::json_text::is_negative_zero_at(b"[-0.5]", 1));
/// ```
pub fn is_negative_zero_at(text: &[u8], at: usize) -> bool {
    if text.get(at) != Some(&b'-') || text.get(at + 1) != Some(&b'0') {
        return false;
    }
    let after_ends_number =
        !text.get(at + 2).is_some_and(|next| next.is_ascii_digit() || matches!(next, b'.' | b'e' | b'E'));
    let before_starts_value =
        at == 0 || matches!(text[at - 1], b':' | b'[' | b',' | b' ' | b'\t' | b'\r' | b'\n');
    after_ends_number && before_starts_value
}
