//! A minimal protobuf wire-format reader over a seekable stream.
//!
//! Only what reading an ONNX model's structure needs: varints, keys,
//! length-delimited fields and skipping. Large payloads (`raw_data`) are
//! skipped by seeking, so a model of gigabytes is read with a few kilobytes
//! of memory. Every length is checked against the enclosing message's end,
//! so a damaged file gives an error, never a panic or a huge allocation.

use std::io::{Read, Seek, SeekFrom};

/// Skips shorter than this are read through the buffer instead of seeking,
/// which would discard it.
const READ_THROUGH: u64 = 8 * 1024;

/// Protobuf wire types; groups (3, 4) are not used by ONNX and are rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireType {
    Varint,
    Fixed64,
    Len,
    Fixed32,
}

/// What went wrong at a byte offset.
#[derive(Debug)]
pub(crate) enum WireError {
    Io(std::io::Error),
    /// The data ends inside a field, or a length runs past its message.
    Truncated {
        offset: u64,
    },
    /// Not valid protobuf at this offset.
    Malformed {
        offset: u64,
        what: String,
    },
}

impl From<std::io::Error> for WireError {
    fn from(error: std::io::Error) -> Self {
        WireError::Io(error)
    }
}

pub(crate) type WireResult<T> = Result<T, WireError>;

pub(crate) struct Wire<R> {
    inner: R,
    pos: u64,
    scratch: Vec<u8>,
}

impl<R: Read + Seek> Wire<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self { inner, pos: 0, scratch: Vec::new() }
    }

    /// Offset of the next byte.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    fn byte(&mut self, end: u64) -> WireResult<u8> {
        if self.pos >= end {
            return Err(WireError::Truncated { offset: self.pos });
        }
        let mut one = [0u8; 1];
        match self.inner.read_exact(&mut one) {
            Ok(()) => {
                self.pos += 1;
                Ok(one[0])
            }
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(WireError::Truncated { offset: self.pos })
            }
            Err(error) => Err(error.into()),
        }
    }

    /// A base-128 varint of at most ten bytes.
    pub(crate) fn varint(&mut self, end: u64) -> WireResult<u64> {
        let start = self.pos;
        let mut value = 0u64;
        for index in 0..10 {
            let byte = self.byte(end)?;
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::Malformed { offset: start, what: "varint longer than ten bytes".to_owned() })
    }

    /// A field key: field number and wire type.
    pub(crate) fn key(&mut self, end: u64) -> WireResult<(u32, WireType)> {
        let offset = self.pos;
        let key = self.varint(end)?;
        let field = u32::try_from(key >> 3).unwrap_or(0);
        if field == 0 {
            return Err(WireError::Malformed { offset, what: "field number 0".to_owned() });
        }
        let wire = match key & 7 {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            5 => WireType::Fixed32,
            other => {
                return Err(WireError::Malformed { offset, what: format!("unsupported wire type {other}") });
            }
        };
        Ok((field, wire))
    }

    /// Reads a length prefix and returns where the field's payload ends,
    /// checked against the enclosing `end`.
    pub(crate) fn len_end(&mut self, end: u64) -> WireResult<u64> {
        let offset = self.pos;
        let length = self.varint(end)?;
        match self.pos.checked_add(length) {
            Some(field_end) if field_end <= end => Ok(field_end),
            _ => Err(WireError::Truncated { offset }),
        }
    }

    /// Moves to `target` (at or after the current position).
    pub(crate) fn skip_to(&mut self, target: u64) -> WireResult<()> {
        let distance = target.saturating_sub(self.pos);
        if distance == 0 {
            return Ok(());
        }
        if distance < READ_THROUGH {
            let length = usize::try_from(distance).unwrap_or(0);
            self.scratch.resize(length, 0);
            let offset = self.pos;
            self.inner.read_exact(&mut self.scratch).map_err(|error| {
                if error.kind() == std::io::ErrorKind::UnexpectedEof {
                    WireError::Truncated { offset }
                } else {
                    error.into()
                }
            })?;
        } else {
            self.inner.seek(SeekFrom::Start(target))?;
        }
        self.pos = target;
        Ok(())
    }

    /// Skips one field's payload of wire type `wire`.
    pub(crate) fn skip(&mut self, wire: WireType, end: u64) -> WireResult<()> {
        let width = match wire {
            WireType::Varint => {
                self.varint(end)?;
                return Ok(());
            }
            WireType::Fixed64 => 8,
            WireType::Fixed32 => 4,
            WireType::Len => {
                let field_end = self.len_end(end)?;
                return self.skip_to(field_end);
            }
        };
        match self.pos.checked_add(width) {
            Some(target) if target <= end => self.skip_to(target),
            _ => Err(WireError::Truncated { offset: self.pos }),
        }
    }

    /// The payload of a length-delimited field ending at `field_end`, keeping
    /// at most `limit` bytes (the rest is skipped).
    pub(crate) fn bytes(&mut self, field_end: u64, limit: usize) -> WireResult<Vec<u8>> {
        let length = field_end.saturating_sub(self.pos);
        let keep = usize::try_from(length).map_or(limit, |length| length.min(limit));
        let mut buffer = vec![0u8; keep];
        let offset = self.pos;
        self.inner.read_exact(&mut buffer).map_err(|error| {
            if error.kind() == std::io::ErrorKind::UnexpectedEof {
                WireError::Truncated { offset }
            } else {
                error.into()
            }
        })?;
        self.pos += keep as u64;
        self.skip_to(field_end)?;
        Ok(buffer)
    }

    /// A string field, lossily decoded, kept to `limit` bytes.
    pub(crate) fn string(&mut self, end: u64, limit: usize) -> WireResult<String> {
        let field_end = self.len_end(end)?;
        let bytes = self.bytes(field_end, limit)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A repeated varint field's values: packed (one length-delimited run)
    /// or not (one value). At most `limit` values in all.
    pub(crate) fn varints_into(
        &mut self,
        wire: WireType,
        end: u64,
        out: &mut Vec<u64>,
        limit: usize,
    ) -> WireResult<()> {
        let offset = self.pos;
        let too_many = || WireError::Malformed { offset, what: format!("more than {limit} values") };
        match wire {
            WireType::Varint => {
                if out.len() >= limit {
                    return Err(too_many());
                }
                out.push(self.varint(end)?);
            }
            WireType::Len => {
                let field_end = self.len_end(end)?;
                while self.pos < field_end {
                    if out.len() >= limit {
                        return Err(too_many());
                    }
                    out.push(self.varint(field_end)?);
                }
            }
            other => {
                return Err(WireError::Malformed {
                    offset,
                    what: format!("wire type {other:?} for a varint field"),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    #[test]
    fn varint_bounds_and_errors() {
        let mut wire = Wire::new(Cursor::new(vec![0xac, 0x02, 0x80]));
        assert_eq!(wire.varint(3).ok(), Some(300));
        assert!(matches!(wire.varint(3), Err(WireError::Truncated { offset: 3 })));
        let mut eleven = Wire::new(Cursor::new(vec![0xff; 11]));
        assert!(matches!(eleven.varint(11), Err(WireError::Malformed { .. })));
    }

    #[test]
    fn length_past_message_end_is_truncation() {
        // field 1, LEN, length 5, but only 2 bytes follow.
        let mut wire = Wire::new(Cursor::new(vec![0x0a, 0x05, 1, 2]));
        assert_eq!(wire.key(4).ok(), Some((1, WireType::Len)));
        assert!(matches!(wire.len_end(4), Err(WireError::Truncated { offset: 1 })));
    }

    #[test]
    fn groups_are_rejected() {
        let mut wire = Wire::new(Cursor::new(vec![0x0b]));
        assert!(matches!(wire.key(1), Err(WireError::Malformed { .. })));
    }
}
