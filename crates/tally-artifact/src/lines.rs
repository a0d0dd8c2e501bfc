//! Lines as stormlog sees them: Python's text mode with universal newlines
//! ends a line at `\n`, `\r\n` or a bare `\r`, and `line.strip()` empty
//! means a blank line to skip.

/// Lines of a byte block, each without its terminator, with whether it had
/// one (only the last line of a file may lack it).
pub(crate) struct Lines<'a> {
    rest: &'a [u8],
}

impl<'a> Lines<'a> {
    pub(crate) fn new(block: &'a [u8]) -> Self {
        Self { rest: block }
    }

    /// Bytes not yet split off.
    pub(crate) fn remaining(&self) -> usize {
        self.rest.len()
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (&'a [u8], bool);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match memchr::memchr2(b'\n', b'\r', self.rest) {
            Some(end) => {
                let line = &self.rest[..end];
                let width =
                    if self.rest[end] == b'\r' && self.rest.get(end + 1) == Some(&b'\n') { 2 } else { 1 };
                self.rest = &self.rest[end + width..];
                Some((line, true))
            }
            None => {
                let line = self.rest;
                self.rest = &[];
                Some((line, false))
            }
        }
    }
}

/// Where a block can be cut so that every line before the cut is complete
/// and no `\r\n` is split: just past the last terminator whose extent is
/// known. `None` when the block holds no complete line yet.
pub(crate) fn complete_prefix(block: &[u8]) -> Option<usize> {
    let mut end = block.len();
    loop {
        let at = memchr::memrchr2(b'\n', b'\r', &block[..end])?;
        if block[at] == b'\r' && at + 1 == block.len() {
            // A `\r` at the very end may be the first half of `\r\n`.
            end = at;
            continue;
        }
        return Some(at + 1);
    }
}

/// Whether Python's `line.strip()` leaves nothing: every character is
/// whitespace as `str.isspace` defines it (which is wider than JSON's).
#[inline]
pub(crate) fn is_blank(line: &[u8]) -> bool {
    match line.first() {
        None => return true,
        Some(b'{') => return false,
        Some(_) => {}
    }
    if line.iter().all(|byte| matches!(byte, b' ' | b'\t' | b'\x0b' | b'\x0c' | 0x1c..=0x1f)) {
        return true;
    }
    match std::str::from_utf8(line) {
        Ok(text) => text.chars().all(python_isspace),
        Err(_) => false,
    }
}

/// `str.isspace` of CPython 3.11, listed in full: Rust's `is_whitespace`
/// lacks U+001C..U+001F, which Python counts.
fn python_isspace(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{20}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(block: &[u8]) -> Vec<(&[u8], bool)> {
        Lines::new(block).collect()
    }

    #[test]
    fn universal_newlines() {
        assert_eq!(
            lines(b"a\nb\r\nc\rd"),
            vec![(&b"a"[..], true), (b"b", true), (b"c", true), (b"d", false)]
        );
        assert_eq!(lines(b"a\n\n"), vec![(&b"a"[..], true), (b"", true)]);
        assert_eq!(lines(b"\r\r\n"), vec![(&b""[..], true), (b"", true)]);
        assert!(lines(b"").is_empty());
    }

    #[test]
    fn cut_points() {
        assert_eq!(complete_prefix(b"abc"), None);
        assert_eq!(complete_prefix(b"a\nbc"), Some(2));
        assert_eq!(complete_prefix(b"a\nb\r"), Some(2));
        assert_eq!(complete_prefix(b"a\nb\r\n"), Some(5));
        assert_eq!(complete_prefix(b"a\rb"), Some(2));
        assert_eq!(complete_prefix(b"\r"), None);
    }

    #[test]
    fn python_blank_lines() {
        for blank in ["", " ", "\t \x0c\x0b", "\u{a0}", "\u{2028}\u{3000}", "\u{1c}\u{85}"] {
            assert!(is_blank(blank.as_bytes()), "{blank:?}");
        }
        for text in ["{}", " x", "\u{200b}", "\u{feff}", "\u{180e}", "\0"] {
            assert!(!is_blank(text.as_bytes()), "{text:?}");
        }
        assert!(!is_blank(b"\xff"));
    }
}
