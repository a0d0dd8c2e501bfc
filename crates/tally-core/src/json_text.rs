//! Where Python's `json` reads JSON text otherwise than serde_json, and the
//! readers of every crate must read it as Python does.

/// Rewrites each integer `-0` outside strings as ` 0` (the sign becomes a
/// space, so byte offsets and columns stay), and returns how many there
/// were. Python reads `-0` as the integer 0, so stormlog accepts
/// `"start_ns": -0`; serde_json reads it as the float `-0.0`, which no
/// integer field accepts. `-0.0` and `-0e0` are floats to both and stay.
///
/// ```
/// let mut text = br#"{"start_ns": -0, "note": "-0", "x": -0.0, "y": [-0]}"#.to_vec();
/// assert_eq!(tally_core::integer_negative_zeros(&mut text), 2);
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

/// Whether `text` may hold an integer `-0` at all: a cheap test before
/// copying a line to rewrite it.
pub fn may_hold_negative_zero(text: &[u8]) -> bool {
    text.windows(2).any(|pair| pair == b"-0")
}
