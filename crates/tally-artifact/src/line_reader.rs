//! The sequential reader: [`ArtifactReader`], one record at a time, in file
//! order, on the calling thread.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use tally_core::InferenceRecord;

use crate::decode::RecordDecoder;
use crate::error::{ArtifactError, ErrorKind};
use crate::lines::Lines;
#[cfg(doc)]
use crate::open::decompressed;
use crate::open::{Sniffed, open_artifact, source_name};
use crate::read::{DEFAULT_MAX_RECORD_BYTES, too_long};

/// Reads an artifact one record at a time, in file order, on the calling
/// thread: for callers that must not hold the whole artifact and want each
/// record's line. An iterator of `(line, record)`; it ends after the first
/// error.
///
/// ```
/// use tally_artifact::ArtifactReader;
/// let text = b"\n{\"schema_version\": 1, \"event_type\": \"infer.session\"}\n";
/// let mut reader = ArtifactReader::new(&text[..], "mem");
/// let (line, record) = reader.next().unwrap().unwrap();
/// assert_eq!((line, record.schema_version()), (2, 1));
/// assert!(reader.next().is_none());
/// ```
pub struct ArtifactReader<R> {
    reader: R,
    decoder: RecordDecoder,
    buffer: Vec<u8>,
    /// Text after the last bare `\r` of a buffer that reached the record
    /// limit without a `\n`: the start of the next line.
    pending: Vec<u8>,
    position: usize,
    line: u64,
    done: bool,
    max_record: usize,
}

impl ArtifactReader<BufReader<Sniffed<Box<dyn Read + Send>>>> {
    /// Opens a path (or `-` for standard input), plain or gzip.
    pub fn open(path: &Path) -> Result<Self, ArtifactError> {
        Ok(Self::new(open_artifact(path)?, source_name(path)))
    }
}

impl<R: BufRead> ArtifactReader<R> {
    /// Reads `reader`, naming it `source_name` in errors. Wrap gzip data in
    /// [`decompressed`] first.
    pub fn new(reader: R, source_name: impl Into<String>) -> Self {
        Self {
            reader,
            decoder: RecordDecoder::new(source_name),
            buffer: Vec::new(),
            pending: Vec::new(),
            position: 0,
            line: 0,
            done: false,
            max_record: DEFAULT_MAX_RECORD_BYTES,
        }
    }

    /// The longest line accepted ([`DEFAULT_MAX_RECORD_BYTES`] unless set);
    /// a longer one ends the reading with an [`ErrorKind::Limit`] error.
    pub fn with_max_record_bytes(mut self, max_record_bytes: usize) -> Self {
        self.max_record = max_record_bytes.max(1);
        self
    }

    fn too_long(&mut self, line: u64) -> Option<Result<(u64, InferenceRecord), ArtifactError>> {
        let error = ArtifactError::at_line(
            self.decoder.source_name(),
            line,
            ErrorKind::Limit,
            too_long(self.max_record),
        );
        self.fail(error)
    }

    /// Physical lines read so far.
    pub fn lines_read(&self) -> u64 {
        self.line
    }

    fn fail(&mut self, error: ArtifactError) -> Option<Result<(u64, InferenceRecord), ArtifactError>> {
        self.done = true;
        Some(Err(error))
    }
}

impl<R: BufRead> Iterator for ArtifactReader<R> {
    type Item = Result<(u64, InferenceRecord), ArtifactError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if self.position >= self.buffer.len() {
                self.buffer.clear();
                self.position = 0;
                self.buffer.append(&mut self.pending);
                // One byte past the limit tells a line that is too long.
                let room = (self.max_record + 1).saturating_sub(self.buffer.len()).max(1) as u64;
                match (&mut self.reader).take(room).read_until(b'\n', &mut self.buffer) {
                    Ok(0) if self.buffer.is_empty() => {
                        self.done = true;
                        return None;
                    }
                    Ok(_) => {}
                    Err(error) => {
                        let error = ArtifactError::io(self.decoder.source_name(), &error);
                        return self.fail(error);
                    }
                }
                if self.buffer.len() > self.max_record && self.buffer.last() != Some(&b'\n') {
                    // No `\n` within the limit; a bare `\r` may still end
                    // the lines before it.
                    match memchr::memrchr(b'\r', &self.buffer) {
                        Some(at) if at + 1 < self.buffer.len() => {
                            self.pending = self.buffer.split_off(at + 1)
                        }
                        _ => return self.too_long(self.line + 1),
                    }
                }
            }
            // `read_until` stops after `\n`; a bare `\r` inside splits further.
            let rest = &self.buffer[self.position..];
            let mut lines = Lines::new(rest);
            let (line, terminated) = lines.next()?;
            self.position += rest.len() - lines.remaining();
            self.line += 1;
            let line_number = self.line;
            if line.len() > self.max_record {
                return self.too_long(line_number);
            }
            match self.decoder.decode(line, terminated, line_number) {
                Ok(Some(record)) => return Some(Ok((line_number, record))),
                Ok(None) => {}
                Err((kind, reason)) => {
                    let error = ArtifactError::at_line(self.decoder.source_name(), line_number, kind, reason);
                    return self.fail(error);
                }
            }
        }
        None
    }
}
