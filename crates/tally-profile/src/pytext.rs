//! Python's spelling of what ends up in profile text and errors: `repr()` of
//! a string (vertebrae writes `{key!r}` into a warning), `str()` of an
//! `OSError` (vertebrae writes it as an artifact's `reason`), and the
//! message of a failed unpacking (vertebrae unpacks shapes and pairs).

use std::io;

/// Python's `repr(text)` for a `str`: single quotes unless the text holds a
/// single quote and no double quote, with Python's escapes.
///
/// Python decides what is printable from the Unicode database; this knows
/// controls, separators, format characters, private use and noncharacters,
/// but treats code points unassigned in Python's Unicode version as printable.
///
/// ```
/// use tally_profile::python_repr;
/// assert_eq!(python_repr("emb/raw"), "'emb/raw'");
/// assert_eq!(python_repr("it's"), "\"it's\"");
/// assert_eq!(python_repr("a\tb\u{7f}é"), "'a\\tb\\x7fé'");
/// ```
pub fn python_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for ch in text.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            _ if ch == quote => {
                out.push('\\');
                out.push(ch);
            }
            _ if printable(ch) => out.push(ch),
            _ => {
                let code = u32::from(ch);
                if code < 0x100 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code < 0x10000 {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
        }
    }
    out.push(quote);
    out
}

fn printable(ch: char) -> bool {
    let code = u32::from(ch);
    if code < 0x80 {
        return (0x20..0x7f).contains(&code);
    }
    !matches!(code,
        // Cc
        0x80..=0x9f
        // Zs other than the ASCII space
        | 0xa0 | 0x1680 | 0x2000..=0x200a | 0x202f | 0x205f | 0x3000
        // Zl, Zp
        | 0x2028 | 0x2029
        // Cf
        | 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890 | 0x891 | 0x8e2 | 0x180e
        | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f | 0xfeff
        | 0xfff9..=0xfffb | 0x110bd | 0x110cd | 0x13430..=0x1343f | 0x1bca0..=0x1bca3
        | 0x1d173..=0x1d17a | 0xe0001 | 0xe0020..=0xe007f
        // Co
        | 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd
        // noncharacters
        | 0xfdd0..=0xfdef | 0xfffe | 0xffff)
}

/// Python's `ValueError` message for unpacking `got` values into `expected`
/// names (`rows, cols = shape`), as Python 3.11 to 3.13 write it (3.14 adds
/// ", got N" when there are too many).
///
/// ```
/// use tally_profile::python_unpack_message;
/// assert_eq!(python_unpack_message(2, 1), "not enough values to unpack (expected 2, got 1)");
/// assert_eq!(python_unpack_message(2, 3), "too many values to unpack (expected 2)");
/// ```
pub fn python_unpack_message(expected: usize, got: usize) -> String {
    if got < expected {
        format!("not enough values to unpack (expected {expected}, got {got})")
    } else {
        format!("too many values to unpack (expected {expected})")
    }
}

/// The C library's message for an OS error, as Python's `OSError.strerror`.
pub(crate) fn strerror(error: &io::Error) -> String {
    let text = error.to_string();
    match error.raw_os_error() {
        // std formats OS errors as "<strerror> (os error <n>)".
        Some(code) => text.strip_suffix(&format!(" (os error {code})")).unwrap_or(&text).to_owned(),
        None => text,
    }
}

/// `str(OSError)` for an error about `filename`:
/// `[Errno 13] Permission denied: '/models/x.bin'`.
pub(crate) fn os_error_text(error: &io::Error, filename: &str) -> String {
    match error.raw_os_error() {
        Some(code) => format!("[Errno {code}] {}: {}", strerror(error), python_repr(filename)),
        None => error.to_string(),
    }
}
