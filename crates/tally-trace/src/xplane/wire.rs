//! A streaming reader of the protobuf wire format over a seekable file,
//! through one bounded buffer: the containers of a profile (the space, its
//! planes, their lines) are walked field by field and never held, and only
//! small messages are handed to prost whole. Every length and count is
//! checked against its enclosing message and a limit, so a hostile file is
//! refused with the byte offset and the rule it breaks, never a panic or an
//! allocation of what a length field claims.

use std::io::{self, Read, Seek, SeekFrom};

/// The buffer: the largest message decoded whole fits in it.
const BUFFER: usize = 4 << 20;
/// The longest small message (an event, a stat, a stat metadata entry)
/// decoded whole.
pub(crate) const MAX_MESSAGE: u64 = BUFFER as u64;
/// The longest name (of a plane, line or event) kept.
pub(crate) const MAX_NAME: u64 = 1 << 20;

/// A rule of the wire format or of tally's limits that a profile broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum XPlaneRule {
    /// A varint longer than 10 bytes or beyond 64 bits.
    #[error("a varint is longer than 10 bytes or beyond 64 bits")]
    VarintOverflow,
    /// The data ends inside a field.
    #[error("the data ends inside a field: truncated file?")]
    Truncated,
    /// A length-delimited field runs past the end of the message holding it.
    #[error("a length of {length} bytes runs past the end of its message at byte {end}")]
    LengthPastEnd {
        /// The length the field gives.
        length: u64,
        /// Where the enclosing message (or the file) ends.
        end: u64,
    },
    /// A field of the schema written with another wire type.
    #[error("field {field} of {message} has wire type {found}, not {expected}")]
    WrongWireType {
        /// The message.
        message: &'static str,
        /// The field number.
        field: u32,
        /// The wire type found.
        found: u8,
        /// The wire type the schema gives.
        expected: u8,
    },
    /// Wire type 6 or 7, which protobuf does not define.
    #[error("wire type {0} is not a protobuf wire type")]
    InvalidWireType(u8),
    /// A group (wire type 3 or 4): xplane.proto has none.
    #[error("a group (wire type {0}): xplane.proto has none")]
    Group(u8),
    /// Field number 0, which protobuf does not allow.
    #[error("field number 0")]
    FieldZero,
    /// A message or string longer than tally reads.
    #[error("{what} of {length} bytes is longer than the limit of {limit} bytes")]
    TooLarge {
        /// What it is.
        what: &'static str,
        /// Its length.
        length: u64,
        /// The limit.
        limit: u64,
    },
    /// More entries than tally keeps (a metadata map, the planes).
    #[error("{what} has more than {limit} entries")]
    TooMany {
        /// What it is.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// A small message prost cannot decode (a bad string, a bad nested field).
    #[error("{message} does not decode: {reason}")]
    Decode {
        /// The message.
        message: &'static str,
        /// prost's description.
        reason: String,
    },
    /// A line's id, name or timestamp after its first event: tally reads
    /// each line once, in field order (as every protobuf writer orders it).
    #[error("field {0} of an XLine comes after its events")]
    LineHeaderAfterEvents(u32),
}

/// Why reading stopped: the file, or a rule at a byte.
#[derive(Debug)]
pub(crate) enum WireError {
    Io(io::Error),
    Rule { offset: u64, rule: XPlaneRule },
}

impl From<io::Error> for WireError {
    fn from(error: io::Error) -> Self {
        WireError::Io(error)
    }
}

pub(crate) type WireResult<T> = Result<T, WireError>;

pub(crate) fn fail<T>(offset: u64, rule: XPlaneRule) -> WireResult<T> {
    Err(WireError::Rule { offset, rule })
}

/// Wire types.
pub(crate) const VARINT: u8 = 0;
pub(crate) const I64: u8 = 1;
pub(crate) const LEN: u8 = 2;
pub(crate) const I32: u8 = 5;

/// A seekable source read through one buffer.
pub(crate) struct Wire<R> {
    source: R,
    buffer: Vec<u8>,
    /// File offset of `buffer[0]`.
    start: u64,
    /// Valid bytes in the buffer.
    filled: usize,
    /// The cursor, in the buffer.
    at: usize,
    /// The file's length.
    size: u64,
}

impl<R: Read + Seek> Wire<R> {
    pub(crate) fn new(source: R, size: u64) -> Self {
        Self { source, buffer: vec![0; BUFFER], start: 0, filled: 0, at: 0, size }
    }

    /// The file's length.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The offset of the next byte.
    pub(crate) fn position(&self) -> u64 {
        self.start + self.at as u64
    }

    /// Makes at least `need` (≤ the buffer) bytes available from the
    /// cursor, or as many as the file has.
    fn fill(&mut self, need: usize) -> io::Result<usize> {
        if self.filled - self.at >= need {
            return Ok(self.filled - self.at);
        }
        self.buffer.copy_within(self.at..self.filled, 0);
        self.start += self.at as u64;
        self.filled -= self.at;
        self.at = 0;
        while self.filled < need {
            match self.source.read(&mut self.buffer[self.filled..]) {
                Ok(0) => break,
                Ok(count) => self.filled += count,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(self.filled)
    }

    /// Moves the cursor to `offset`.
    pub(crate) fn seek(&mut self, offset: u64) -> io::Result<()> {
        if offset >= self.start && offset <= self.start + self.filled as u64 {
            // Within the buffer: `offset - start` ≤ `filled`, a usize.
            self.at = usize::try_from(offset - self.start).unwrap_or(self.filled);
            return Ok(());
        }
        self.source.seek(SeekFrom::Start(offset))?;
        self.start = offset;
        self.filled = 0;
        self.at = 0;
        Ok(())
    }

    /// A varint ending before `end`.
    pub(crate) fn varint(&mut self, end: u64) -> WireResult<u64> {
        let offset = self.position();
        let available = self.fill(10)?;
        let limit = available.min(usize::try_from(end.saturating_sub(offset)).unwrap_or(usize::MAX));
        let bytes = &self.buffer[self.at..self.at + limit];
        let mut value = 0u64;
        for (index, &byte) in bytes.iter().enumerate() {
            if index == 9 && byte > 1 {
                return fail(offset, XPlaneRule::VarintOverflow);
            }
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte < 0x80 {
                self.at += index + 1;
                return Ok(value);
            }
            if index == 9 {
                return fail(offset, XPlaneRule::VarintOverflow);
            }
        }
        fail(offset, XPlaneRule::Truncated)
    }

    /// A field's key: its number and wire type.
    pub(crate) fn key(&mut self, end: u64) -> WireResult<(u32, u8)> {
        let offset = self.position();
        let key = self.varint(end)?;
        let wire = (key & 7) as u8;
        let Ok(field) = u32::try_from(key >> 3) else {
            return fail(offset, XPlaneRule::VarintOverflow);
        };
        match (field, wire) {
            (0, _) => fail(offset, XPlaneRule::FieldZero),
            (_, 3 | 4) => fail(offset, XPlaneRule::Group(wire)),
            (_, 6 | 7) => fail(offset, XPlaneRule::InvalidWireType(wire)),
            _ => Ok((field, wire)),
        }
    }

    /// A length-delimited field's length, checked against `end`; returns
    /// where the field's bytes end.
    pub(crate) fn length(&mut self, end: u64) -> WireResult<u64> {
        let offset = self.position();
        let length = self.varint(end)?;
        let start = self.position();
        match start.checked_add(length) {
            Some(stop) if stop <= end => Ok(stop),
            _ => fail(offset, XPlaneRule::LengthPastEnd { length, end }),
        }
    }

    /// Skips a field's value.
    pub(crate) fn skip(&mut self, wire: u8, end: u64) -> WireResult<()> {
        let offset = self.position();
        let stop = match wire {
            VARINT => return self.varint(end).map(drop),
            I64 => offset + 8,
            I32 => offset + 4,
            _ => self.length(end)?,
        };
        if stop > end {
            return fail(offset, XPlaneRule::Truncated);
        }
        self.seek(stop)?;
        Ok(())
    }

    /// Checks a schema field's wire type.
    pub(crate) fn expect(
        &self,
        message: &'static str,
        field: u32,
        found: u8,
        expected: u8,
        key_offset: u64,
    ) -> WireResult<()> {
        if found == expected {
            Ok(())
        } else {
            fail(key_offset, XPlaneRule::WrongWireType { message, field, found, expected })
        }
    }

    /// The bytes up to `stop` (at most [`MAX_MESSAGE`]), in the buffer.
    pub(crate) fn bytes(&mut self, stop: u64, what: &'static str, limit: u64) -> WireResult<&[u8]> {
        let offset = self.position();
        let length = stop - offset;
        if length > limit.min(MAX_MESSAGE) {
            return fail(offset, XPlaneRule::TooLarge { what, length, limit: limit.min(MAX_MESSAGE) });
        }
        // length ≤ MAX_MESSAGE, the buffer's size.
        let length = usize::try_from(length).unwrap_or(BUFFER);
        if self.fill(length)? < length {
            return fail(offset, XPlaneRule::Truncated);
        }
        let bytes = &self.buffer[self.at..self.at + length];
        self.at += length;
        Ok(bytes)
    }

    /// A small message ending at `stop`, decoded by prost.
    pub(crate) fn message<M: prost::Message + Default>(
        &mut self,
        stop: u64,
        what: &'static str,
    ) -> WireResult<M> {
        let offset = self.position();
        let bytes = self.bytes(stop, what, MAX_MESSAGE)?;
        M::decode(bytes)
            .or_else(|error| fail(offset, XPlaneRule::Decode { message: what, reason: error.to_string() }))
    }

    /// A string ending at `stop`, at most `limit` bytes.
    pub(crate) fn string(&mut self, stop: u64, what: &'static str, limit: u64) -> WireResult<String> {
        let offset = self.position();
        let bytes = self.bytes(stop, what, limit)?;
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(text.to_owned()),
            Err(error) => fail(offset, XPlaneRule::Decode { message: what, reason: error.to_string() }),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn wire(bytes: &[u8]) -> Wire<Cursor<Vec<u8>>> {
        Wire::new(Cursor::new(bytes.to_vec()), bytes.len() as u64)
    }

    fn rule<T: std::fmt::Debug>(result: WireResult<T>) -> (u64, XPlaneRule) {
        match result {
            Err(WireError::Rule { offset, rule }) => (offset, rule),
            other => panic!("expected a rule, got {other:?}"),
        }
    }

    #[test]
    fn varints_decode_and_overflow_is_refused() {
        assert_eq!(wire(&[0x96, 0x01]).varint(2).unwrap(), 150);
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(wire(&max).varint(10).unwrap(), u64::MAX);
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(rule(wire(&over).varint(10)), (0, XPlaneRule::VarintOverflow));
        let long = [0x80; 12];
        assert_eq!(rule(wire(&long).varint(12)), (0, XPlaneRule::VarintOverflow));
        assert_eq!(rule(wire(&[0x80, 0x80]).varint(2)), (0, XPlaneRule::Truncated));
        // A varint may not run past its message's end, even where the file goes on.
        assert_eq!(rule(wire(&[0x80, 0x01]).varint(1)), (0, XPlaneRule::Truncated));
    }

    #[test]
    fn keys_and_lengths_are_checked() {
        assert_eq!(rule(wire(&[0x00]).key(1)), (0, XPlaneRule::FieldZero));
        assert_eq!(rule(wire(&[0x0b]).key(1)), (0, XPlaneRule::Group(3)));
        assert_eq!(rule(wire(&[0x0e]).key(1)), (0, XPlaneRule::InvalidWireType(6)));
        let mut reader = wire(&[0x0a, 0x05, 1, 2]);
        assert_eq!(reader.key(4).unwrap(), (1, LEN));
        assert_eq!(rule(reader.length(4)), (1, XPlaneRule::LengthPastEnd { length: 5, end: 4 }));
        let huge = [0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        let mut reader = wire(&huge);
        reader.key(11).unwrap();
        assert_eq!(rule(reader.length(11)), (1, XPlaneRule::LengthPastEnd { length: u64::MAX, end: 11 }));
    }

    #[test]
    fn skipping_seeks_past_values_and_bounds_them() {
        let mut reader = wire(&[0x09, 1, 2, 3, 4, 5, 6, 7, 8, 0x10, 0x01]);
        let (_, wire_type) = reader.key(11).unwrap();
        reader.skip(wire_type, 11).unwrap();
        assert_eq!(reader.position(), 9);
        assert_eq!(reader.key(11).unwrap(), (2, VARINT));
        let mut short = wire(&[0x0d, 1, 2]);
        let (_, wire_type) = short.key(3).unwrap();
        assert_eq!(rule(short.skip(wire_type, 3)), (1, XPlaneRule::Truncated));
    }
}
