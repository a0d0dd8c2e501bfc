//! Input sniffing: the first bytes of a stream, read however the stream
//! hands them out, and what they say about its compression. The one gzip
//! detector of the workspace: tally-trace's input detection and
//! tally-artifact's readers both ask it, and an input opened once carries
//! its answer on, so no stream is sniffed twice.

use std::io::{self, Read};

/// The two bytes every gzip member starts with (RFC 1952).
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// How a stream's bytes are stored, as its first bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// As they are.
    #[default]
    Plain,
    /// gzip (every member of a multi-member stream).
    Gzip,
}

impl Compression {
    /// What a stream starting with `head` is: gzip when it starts with
    /// [`GZIP_MAGIC`] (told by content, never by a file name), else plain.
    pub fn of_head(head: &[u8]) -> Self {
        if head.starts_with(&GZIP_MAGIC) { Compression::Gzip } else { Compression::Plain }
    }

    /// Whether it is gzip.
    pub fn is_gzip(self) -> bool {
        self == Compression::Gzip
    }
}

/// Reads up to `length` bytes from the start of `source`, fewer only at its
/// end: a pipe may deliver one byte at a time, and an interrupted read is
/// retried. The bytes read are the stream's; the caller puts them back in
/// front of the rest.
pub fn read_head(source: &mut dyn Read, length: usize) -> io::Result<Vec<u8>> {
    let mut head = vec![0u8; length];
    let mut filled = 0;
    while filled < head.len() {
        match source.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(count) => filled += count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    head.truncate(filled);
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out one byte per call, interrupted before each.
    struct Trickle<'a> {
        bytes: &'a [u8],
        interrupt: bool,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            self.interrupt = !self.interrupt;
            if self.interrupt {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let Some((&first, rest)) = self.bytes.split_first() else { return Ok(0) };
            buffer[0] = first;
            self.bytes = rest;
            Ok(1)
        }
    }

    #[test]
    fn the_head_is_read_whole_however_the_stream_trickles() {
        let mut source = Trickle { bytes: b"\x1f\x8b\x08rest", interrupt: false };
        assert_eq!(read_head(&mut source, 2).expect("no error"), b"\x1f\x8b");
        let mut short = Trickle { bytes: b"\x1f", interrupt: false };
        assert_eq!(read_head(&mut short, 16).expect("no error"), b"\x1f");
    }

    #[test]
    fn gzip_is_told_by_both_magic_bytes() {
        assert_eq!(Compression::of_head(b"\x1f\x8b\x08"), Compression::Gzip);
        assert_eq!(Compression::of_head(b"\x1f\x8b"), Compression::Gzip);
        for plain in [&b""[..], b"\x1f", b"\x1f\x8c", b"{\"a\": 1}"] {
            assert_eq!(Compression::of_head(plain), Compression::Plain, "{plain:?}");
        }
        assert!(Compression::Gzip.is_gzip() && !Compression::Plain.is_gzip());
    }
}
