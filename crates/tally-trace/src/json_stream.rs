//! A pull reader over one large JSON document, a value at a time.
//!
//! The document is read in chunks into one buffer. The caller walks the
//! structure it cares about (the top-level object, then the `traceEvents`
//! array) byte by byte, and hands each value it wants to serde_json as a
//! slice of the buffer, so strings and numbers are borrowed, not copied.
//! When a value runs past the buffered bytes, serde_json reports an end of
//! input; the reader then reads more and parses the value again. Only one
//! value and one chunk are ever held, whatever the size of the document.

use std::io::{self, Read, Seek, SeekFrom};

use serde::de::DeserializeOwned;

/// Bytes read at once (kept in L2 between the read and the scan); doubled
/// while a long value does not fit.
pub(crate) const CHUNK: usize = 1 << 18;

/// How a value could not be read.
#[derive(Debug)]
pub(crate) enum StreamError {
    /// The source failed.
    Io(io::Error),
    /// Not JSON: serde_json's message, at an absolute byte offset.
    Syntax { offset: u64, message: String },
    /// The document ended inside a value or before one.
    Eof { offset: u64 },
    /// A value is longer than the stream's limit (its first byte's offset).
    TooLarge { offset: u64, limit: usize },
}

/// The outcome of parsing one value with [`JsonStream::value`].
pub(crate) enum Parsed<T> {
    /// The value, and how many bytes it took.
    Value(T, usize),
    /// Valid JSON of the wrong shape for the caller: its message, and how
    /// many bytes the value took, so the caller can skip it.
    Mismatch(String, usize),
}

pub(crate) struct JsonStream<R> {
    source: R,
    buffer: Vec<u8>,
    /// First byte not yet consumed.
    start: usize,
    /// End of the bytes read.
    end: usize,
    /// Absolute offset of `buffer[0]` in the document.
    base: u64,
    eof: bool,
    /// Bytes to read at once now; grows while one value does not fit.
    chunk: usize,
    /// What `chunk` returns to once a value fits.
    base_chunk: usize,
    /// The longest value held to parse it; one past it is an error, and
    /// the buffer holds at most a chunk more, so memory stays within about
    /// the limit whatever the document.
    max_value: usize,
    /// An absolute offset the stream reads up to and no further while it
    /// may be where another thread started reading ([`JsonStream::pause_at`]).
    pause_at: u64,
    /// Set by [`JsonStream::peek_element`] while it looks for an element.
    at_element: bool,
    /// The stream stopped at `pause_at`, before an element.
    paused: bool,
}

/// What [`JsonStream::peek_element`] found.
pub(crate) enum Element {
    /// A byte that is not whitespace: the element's first (or whatever
    /// stands in its place).
    Byte,
    /// The end of the document.
    End,
    /// The pause offset, reached where an element starts.
    Paused,
}

/// The longest single value (an event, a header value) a stream holds by
/// default: 64 MiB. A Kineto event is a few hundred bytes.
pub(crate) const DEFAULT_MAX_VALUE: usize = 64 << 20;

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\r' | b'\t')
}

impl<R: Read> JsonStream<R> {
    pub(crate) fn new(source: R) -> Self {
        Self::with_chunk(source, CHUNK)
    }

    /// A stream that reads `chunk` bytes at a time; tests use tiny chunks to
    /// cut values everywhere.
    pub(crate) fn with_chunk(source: R, chunk: usize) -> Self {
        let chunk = chunk.max(1);
        Self {
            source,
            buffer: Vec::new(),
            start: 0,
            end: 0,
            base: 0,
            eof: false,
            chunk,
            base_chunk: chunk,
            max_value: DEFAULT_MAX_VALUE,
            pause_at: u64::MAX,
            at_element: false,
            paused: false,
        }
    }

    /// Reads no further than `offset` while the stream looks for an element
    /// there: [`JsonStream::peek_element`] at `offset` answers
    /// [`Element::Paused`]. Any other read that reaches `offset` (the bytes
    /// there are not an element's start after all) lifts the pause, and the
    /// stream reads on as if it had never been set.
    pub(crate) fn pause_at(&mut self, offset: u64) {
        self.pause_at = offset;
    }

    /// Goes on reading past the pause offset it stopped at.
    pub(crate) fn unpause(&mut self) {
        self.paused = false;
        self.pause_at = u64::MAX;
    }

    /// The longest value this stream will hold.
    pub(crate) fn with_max_value(mut self, max_value: usize) -> Self {
        self.max_value = max_value.max(1);
        self
    }

    /// Absolute offset of the next unconsumed byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Reads at least one more chunk unless the source is exhausted; returns
    /// whether anything was read.
    fn fill(&mut self) -> Result<bool, StreamError> {
        if self.eof || self.paused {
            return Ok(false);
        }
        let read_to = self.base + self.end as u64;
        if read_to >= self.pause_at {
            if self.at_element {
                self.paused = true;
                return Ok(false);
            }
            self.pause_at = u64::MAX;
        }
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        let room = usize::try_from(self.pause_at - read_to).map_or(self.chunk, |room| room.min(self.chunk));
        // No more than a chunk past the limit: a value cut there is past it
        // and an error, so a doubled chunk would only hold more of it (a
        // buffer of up to twice the limit, and its growth's copy).
        let room = room.min(self.max_value.saturating_sub(self.end).max(self.base_chunk));
        let wanted = self.end + room;
        if self.buffer.len() < wanted {
            // A value cut by the chunk's end leaves a few hundred bytes
            // before the next chunk, so the buffer is made room for both
            // at once: growing by doubling from one chunk copied and first
            // touched four chunks' worth of pages per stream.
            if self.buffer.capacity() < wanted {
                let extra = if self.chunk == self.base_chunk { self.base_chunk / 4 } else { 0 };
                self.buffer.reserve_exact(wanted + extra - self.buffer.len());
            }
            self.buffer.resize(wanted, 0);
        }
        let before = self.end;
        // Decoders return small pieces; gather a good part of a chunk so a
        // value spanning the boundary is parsed again rarely.
        while self.end - before < (room / 2).max(1) {
            match self.source.read(&mut self.buffer[self.end..wanted]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(read) => self.end += read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(StreamError::Io(error)),
            }
        }
        Ok(self.end > before)
    }

    /// The next byte that is not whitespace, without consuming it; `None` at
    /// the end of the document.
    pub(crate) fn peek(&mut self) -> Result<Option<u8>, StreamError> {
        loop {
            while self.start < self.end {
                let byte = self.buffer[self.start];
                if !is_whitespace(byte) {
                    return Ok(Some(byte));
                }
                self.start += 1;
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// [`JsonStream::peek`] where an array's element starts: there, and only
    /// there, the stream may stop at its pause offset.
    pub(crate) fn peek_element(&mut self) -> Result<Element, StreamError> {
        self.at_element = true;
        let peeked = self.peek();
        self.at_element = false;
        Ok(match peeked? {
            Some(_) => Element::Byte,
            None if self.paused => Element::Paused,
            None => Element::End,
        })
    }

    /// Consumes the byte [`JsonStream::peek`] returned.
    pub(crate) fn advance(&mut self) {
        self.start += 1;
    }

    /// An error about the next unconsumed byte.
    pub(crate) fn syntax(&self, message: impl Into<String>) -> StreamError {
        StreamError::Syntax { offset: self.offset(), message: message.into() }
    }

    /// Parses the next value (after [`JsonStream::peek`]) with `parse`,
    /// which gets the buffered bytes from the value's first byte and returns
    /// what it made of them. The value's bytes are then consumed.
    ///
    /// `parse` may run more than once for one value (when it is cut by the
    /// end of the buffer), so it must not have effects before it succeeds.
    pub(crate) fn value<T>(
        &mut self,
        mut parse: impl FnMut(&[u8]) -> Result<Parsed<T>, serde_json::Error>,
    ) -> Result<Parsed<T>, StreamError> {
        loop {
            if !self.eof && !self.value_is_delimited()? {
                continue;
            }
            let slice = &self.buffer[self.start..self.end];
            match parse(slice) {
                Ok(parsed) => {
                    let used = match &parsed {
                        Parsed::Value(_, used) | Parsed::Mismatch(_, used) => *used,
                    };
                    // A value that happened to fit the buffer is held to the
                    // limit all the same.
                    if used > self.max_value {
                        return Err(StreamError::TooLarge { offset: self.offset(), limit: self.max_value });
                    }
                    self.start += used;
                    // The growth was for one long value; later reads need
                    // no more than the usual chunk.
                    self.chunk = self.base_chunk;
                    return Ok(parsed);
                }
                Err(error) if error.is_eof() => {
                    if self.eof {
                        return Err(StreamError::Eof { offset: self.base + self.end as u64 });
                    }
                    if self.end - self.start > self.max_value {
                        return Err(StreamError::TooLarge { offset: self.offset(), limit: self.max_value });
                    }
                    // Grow so that a huge value is re-parsed a logarithmic
                    // number of times, not once per chunk; a value cut by
                    // the chunk's end needs only the next chunk.
                    if self.end - self.start > self.base_chunk / 8 {
                        self.chunk = self.chunk.saturating_mul(2);
                    }
                    self.fill()?;
                }
                Err(error) => {
                    let at = offset_in(slice, error.line(), error.column());
                    // A number cut after its `.`, `e` or `-` is "invalid
                    // number" to serde_json, not an end of input: an error
                    // at the last bytes may be the cut, so read on first.
                    if !self.eof && at + 2 >= slice.len() as u64 {
                        self.chunk = self.chunk.saturating_mul(2);
                        self.fill()?;
                        continue;
                    }
                    let offset = self.offset() + at;
                    return Err(StreamError::Syntax { offset, message: strip_position(&error) });
                }
            }
        }
    }

    /// A number, `true`, `false` or `null` at the end of the buffer may go
    /// on in the next chunk; objects, arrays and strings end with their own
    /// closing byte, so serde_json notices when they are cut. Returns false
    /// after reading more, to have the caller look again.
    fn value_is_delimited(&mut self) -> Result<bool, StreamError> {
        let Some(&first) = self.buffer.get(self.start).filter(|_| self.start < self.end) else {
            self.fill()?;
            return Ok(self.eof);
        };
        if matches!(first, b'{' | b'[' | b'"') {
            return Ok(true);
        }
        let rest = &self.buffer[self.start..self.end];
        let delimited = rest.iter().any(|&byte| is_whitespace(byte) || matches!(byte, b',' | b']' | b'}'));
        if delimited {
            return Ok(true);
        }
        self.fill()?;
        Ok(false)
    }

    /// Parses the next value as `T`, owned.
    pub(crate) fn owned<T: DeserializeOwned>(&mut self) -> Result<Parsed<T>, StreamError> {
        self.value(|slice| parse_one::<T>(slice))
    }

    /// Skips the next value, whatever it is.
    pub(crate) fn skip(&mut self) -> Result<(), StreamError> {
        self.owned::<serde::de::IgnoredAny>().map(|_| ())
    }
}

impl<R: Read + Seek> JsonStream<R> {
    /// Moves to the absolute `offset` of the source, dropping what was
    /// buffered (and any pause): the next byte read is the one there.
    pub(crate) fn resume_at(&mut self, offset: u64) -> Result<(), StreamError> {
        self.source.seek(SeekFrom::Start(offset)).map_err(StreamError::Io)?;
        self.base = offset;
        self.start = 0;
        self.end = 0;
        self.eof = false;
        self.unpause();
        Ok(())
    }
}

/// Parses one value at the start of `slice`; a value of valid JSON that does
/// not fit `T` is a [`Parsed::Mismatch`] carrying its length.
pub(crate) fn parse_one<'de, T: serde::Deserialize<'de>>(
    slice: &'de [u8],
) -> Result<Parsed<T>, serde_json::Error> {
    let mut stream = serde_json::Deserializer::from_slice(slice).into_iter::<T>();
    match stream.next() {
        Some(Ok(value)) => Ok(Parsed::Value(value, stream.byte_offset())),
        Some(Err(error)) if error.is_data() => {
            let message = strip_position(&error);
            let mut skip = serde_json::Deserializer::from_slice(slice).into_iter::<serde::de::IgnoredAny>();
            match skip.next() {
                Some(Ok(_)) => Ok(Parsed::Mismatch(message, skip.byte_offset())),
                Some(Err(error)) => Err(error),
                // The slice starts with a value (the caller peeked at it), so
                // the stream yields one; a serde error would be reported above.
                None => Err(serde::de::Error::custom("empty value")),
            }
        }
        Some(Err(error)) => Err(error),
        None => Err(serde::de::Error::custom("expected a value")),
    }
}

/// serde_json's message without its " at line L column C" tail, which is
/// relative to a slice and would mislead.
fn strip_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

/// The byte offset of serde_json's 1-based line and column in `slice`.
fn offset_in(slice: &[u8], line: usize, column: usize) -> u64 {
    let mut offset = 0usize;
    for _ in 1..line {
        match slice[offset..].iter().position(|&byte| byte == b'\n') {
            Some(newline) => offset += newline + 1,
            None => return slice.len() as u64,
        }
    }
    (offset + column.saturating_sub(1)).min(slice.len()) as u64
}

/// A reader that returns one byte per call, the worst case for values cut
/// by the end of the buffer.
#[cfg(test)]
pub(crate) struct Trickle<'a>(pub(crate) &'a [u8]);

#[cfg(test)]
impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match (self.0.split_first(), buf.first_mut()) {
            (Some((&byte, rest)), Some(slot)) => {
                *slot = byte;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use super::*;

    fn numbers(text: &str) -> Vec<u64> {
        let mut stream = JsonStream::with_chunk(Trickle(text.as_bytes()), 4);
        let mut out = Vec::new();
        assert_eq!(stream.peek().unwrap(), Some(b'['));
        stream.advance();
        loop {
            match stream.peek().unwrap() {
                Some(b']') => break,
                Some(b',') => stream.advance(),
                Some(_) => match stream.owned::<u64>().unwrap() {
                    Parsed::Value(value, _) => out.push(value),
                    Parsed::Mismatch(message, _) => panic!("{message}"),
                },
                None => panic!("unexpected end"),
            }
        }
        out
    }

    #[test]
    fn values_cut_by_the_buffer_are_read_whole() {
        assert_eq!(numbers("[1, 22,333 ,4444444444,\n5]"), vec![1, 22, 333, 4_444_444_444, 5]);
    }

    #[test]
    fn truncated_and_invalid_input_are_told_apart() {
        let mut stream = JsonStream::new(Trickle(b"{\"a\": [1, 2"));
        assert_eq!(stream.peek().unwrap(), Some(b'{'));
        assert!(matches!(stream.skip(), Err(StreamError::Eof { offset: 11 })));
        let mut stream = JsonStream::new(&b"   {\"a\": [1, 2}"[..]);
        stream.peek().unwrap();
        match stream.skip() {
            Err(StreamError::Syntax { offset, .. }) => assert_eq!(offset, 14),
            other => panic!("{:?}", other.err()),
        }
    }

    #[test]
    fn a_mismatched_value_is_skipped_whole() {
        let mut stream = JsonStream::new(&b"{\"x\": [1, {\"y\": 2}]} 7"[..]);
        stream.peek().unwrap();
        match stream.owned::<u64>().unwrap() {
            Parsed::Mismatch(message, used) => {
                assert_eq!(used, 20);
                assert!(message.contains("invalid type"), "{message}");
            }
            Parsed::Value(..) => panic!("an object is not a number"),
        }
        assert_eq!(stream.peek().unwrap(), Some(b'7'));
    }
}
