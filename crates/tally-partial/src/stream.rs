//! The partial's bytes, written and read as a stream (docs/partials.md), so
//! that making, merging and resolving partials holds one chunk of events
//! at a time, whatever the number of files or partials.
//!
//! ```text
//! offset  size  field
//!      0    10  magic "TALLYPART\0"
//!     10     2  format version, little-endian (1)
//!     12     4  flags, little-endian (0: none defined)
//!     16     …  one zlib stream of frames, each a little-endian u32 length
//!               and that many bytes of postcard(Frame); the last frame is
//!               the end (the sources, the event count), and nothing
//!               follows the zlib stream
//! ```
//!
//! A batch frame is tally-resolve's `PreparedBatch` (checked on reading:
//! every offset, index and span); its events' positions name the partial's
//! sources, which the end frame lists (they are known only once every input
//! is read). Reading is bounded: a frame longer than
//! [`ReadLimits::max_frame_bytes`] is refused before it is read, and a
//! frame holds one chunk of at most [`CHUNK_EVENTS`] events as written.

use std::io::{BufRead, Read, Write};

use flate2::Compression;
use flate2::bufread::ZlibDecoder;
use flate2::write::ZlibEncoder;
use serde::{Deserialize, Serialize};
use tally_ingest::{PreparedSink, RunError, origin};
use tally_resolve::{PreparedBatch, ResolveError};
use tally_trace::Detail;

/// The first bytes of every partial.
pub const MAGIC: &[u8; 10] = b"TALLYPART\0";

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;

/// The header's length.
pub(crate) const HEADER: u64 = 16;

/// Events a written chunk holds at most: a frame of some megabytes, large
/// enough that its contexts and the frame's cost are nothing per event,
/// small enough that a reader holds little.
pub const CHUNK_EVENTS: usize = 16 * 1024;

/// The room a written chunk takes at most, in bytes (its text and
/// events), for chunks of long strings.
const CHUNK_BYTES: usize = 32 << 20;

/// How much reading a partial may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// The longest frame accepted, in bytes before compression: a chunk of
    /// 16 Ki events as this build writes it is 150-350 KB. The events a
    /// frame decodes into are bounded by the batch's own cap (128 Ki
    /// events, about 40 MB), whatever its bytes.
    pub max_frame_bytes: u64,
}

impl ReadLimits {
    /// The default longest frame: 16 MiB, fifty times the largest chunk
    /// this build writes.
    pub const DEFAULT_MAX_FRAME_BYTES: u64 = 16 << 20;
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self { max_frame_bytes: Self::DEFAULT_MAX_FRAME_BYTES }
    }
}

/// Why a partial could not be made, read or written.
#[derive(Debug, thiserror::Error)]
pub enum PartialError {
    /// A file could not be opened, read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The bytes are not a partial this build reads.
    #[error("{input}: byte {offset}: {rule}")]
    Format {
        /// The file (or what the caller named the bytes).
        input: String,
        /// Where the rule is broken: a byte of the file, or for the
        /// compressed stream the byte its decoder had read up to.
        offset: u64,
        /// The rule.
        rule: String,
    },
    /// Reading the inputs failed, or the evidence broke a resolution rule
    /// (the error names the original file and line).
    #[error(transparent)]
    Run(#[from] RunError),
    /// Inputs whose traces were imported differently (one record per
    /// launch, one per kernel) cannot be read as one run: their figures
    /// differ.
    #[error(
        "{input}: its traces were imported one record per {found}, but the inputs before it per {expected}; make every partial of the run with the same detail"
    )]
    TraceDetail {
        /// The partial that disagrees.
        input: String,
        /// How the inputs before it were imported.
        expected: Detail,
        /// How it was.
        found: Detail,
    },
}

/// One frame of the stream.
#[derive(Serialize, Deserialize)]
pub(crate) enum Frame {
    /// A chunk of prepared events.
    Batch(PreparedBatch),
    /// The end: what the events' positions name, and how many there were.
    End(Trailer),
}

/// The end frame.
#[derive(Serialize, Deserialize)]
pub(crate) struct Trailer {
    /// The version of tally that wrote it, for a reader's messages.
    pub(crate) tally_version: String,
    /// The sources, in order: an event's position names one by index.
    pub(crate) sources: Vec<String>,
    /// The events in all the batch frames.
    pub(crate) events: u64,
    /// How the partial's traces were imported (one record per launch or
    /// per kernel), if it holds any: figures differ between the two, so
    /// partials are read together only when they agree.
    pub(crate) traces: Option<Detail>,
}

/// Whether `head` (a file's first bytes) starts a partial.
pub fn is_partial(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// Writes a partial: the header, then each chunk of events as a frame, then
/// the end frame, through one zlib stream. Takes batches as a
/// [`PreparedSink`] (their positions already the partial's), keeping one
/// chunk.
pub struct PartialWriter<W: Write> {
    encoder: ZlibEncoder<W>,
    chunk: PreparedBatch,
    frame: Vec<u8>,
    events: u64,
    /// The first write that failed, while the writer was a sink (which
    /// can only stop for the resolver's reasons).
    failed: Option<std::io::Error>,
    traces: Option<Detail>,
}

impl<W: Write> PartialWriter<W> {
    /// Starts a partial on `out`: writes the header.
    pub fn new(mut out: W) -> std::io::Result<Self> {
        out.write_all(MAGIC)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        Ok(Self {
            encoder: ZlibEncoder::new(out, Compression::fast()),
            chunk: PreparedBatch::with_capacity(0).interning(),
            frame: Vec::new(),
            events: 0,
            failed: None,
            traces: None,
        })
    }

    /// Adds a batch's events, each at the position `record` gives for its
    /// own.
    pub fn append(
        &mut self,
        batch: &PreparedBatch,
        record: impl FnMut(usize) -> usize,
    ) -> std::io::Result<()> {
        self.chunk.append(batch, record);
        self.events += batch.len() as u64;
        if self.chunk.len() >= CHUNK_EVENTS || self.chunk.capacity_bytes() >= CHUNK_BYTES {
            self.flush_chunk()?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> std::io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.chunk, PreparedBatch::with_capacity(0).interning());
        let frame = Frame::Batch(chunk);
        self.write_frame(&frame)?;
        if let Frame::Batch(mut chunk) = frame {
            chunk.clear();
            self.chunk = chunk;
        }
        Ok(())
    }

    fn write_frame(&mut self, frame: &Frame) -> std::io::Result<()> {
        self.frame.clear();
        let encoded = postcard::to_extend(frame, std::mem::take(&mut self.frame))
            .map_err(|error| std::io::Error::other(format!("a frame cannot be encoded: {error}")))?;
        let length = u32::try_from(encoded.len()).map_err(|_| {
            std::io::Error::other("a frame of more than 4 GiB (a chunk's events are far fewer)")
        })?;
        self.encoder.write_all(&length.to_le_bytes())?;
        self.encoder.write_all(&encoded)?;
        self.frame = encoded;
        Ok(())
    }

    /// Records how the partial's traces were imported, if it holds any.
    pub fn set_traces(&mut self, traces: Option<Detail>) {
        self.traces = traces;
    }

    /// Ends the partial with its sources (those its events' positions
    /// name) and returns the output.
    pub fn finish(mut self, sources: Vec<String>) -> std::io::Result<W> {
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        self.flush_chunk()?;
        let trailer = Trailer {
            tally_version: env!("CARGO_PKG_VERSION").to_owned(),
            sources,
            events: self.events,
            traces: self.traces,
        };
        self.write_frame(&Frame::End(trailer))?;
        let mut out = self.encoder.finish()?;
        out.flush()?;
        Ok(out)
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }
}

/// The content fingerprint a partial gives a trace import's own records
/// (its artifact identity, stamped with the time of the import, and its
/// capabilities with the summary of the traces imported together): they
/// describe one import and take no part in accounting but the run's ID,
/// and with their own fingerprints two partials' imports of one run would
/// conflict where one import does not. (A 64-bit content hash of the
/// records' own is as unlikely to be this.)
pub const IMPORT_FINGERPRINT: u64 = 0x7461_6c6c_7969_6d70;

/// A sink that gives a trace import's own records [`IMPORT_FINGERPRINT`]
/// before passing them on: wherever a run is read with partials, or into
/// one.
pub(crate) struct ImportsAsOne<'s> {
    pub(crate) inner: &'s mut dyn PreparedSink,
    /// The sources that are trace imports.
    imported: Vec<usize>,
}

impl<'s> ImportsAsOne<'s> {
    pub(crate) fn new(inner: &'s mut dyn PreparedSink) -> Self {
        Self { inner, imported: Vec::new() }
    }
}

impl PreparedSink for ImportsAsOne<'_> {
    fn source(&mut self, index: usize, imported: bool) {
        if imported {
            self.imported.push(index);
        }
        self.inner.source(index, imported);
    }

    fn push(&mut self, batch: &mut PreparedBatch) -> Result<(), ResolveError> {
        if !self.imported.is_empty() {
            let imported = &self.imported;
            batch.map_fingerprints(|identity| {
                if !identity.tabled && imported.contains(&origin(identity.record).0) {
                    IMPORT_FINGERPRINT
                } else {
                    identity.fingerprint
                }
            });
        }
        self.inner.push(batch)
    }
}

impl<W: Write> PreparedSink for PartialWriter<W> {
    fn push(&mut self, batch: &mut PreparedBatch) -> Result<(), ResolveError> {
        // A sink stops only for the resolver's reasons: an output that
        // cannot be written is kept, and `finish` reports it.
        if self.failed.is_none()
            && let Err(error) = self.append(batch, |record| record)
        {
            self.failed = Some(error);
        }
        Ok(())
    }
}

/// Reads a partial's frames one at a time, checking each. The input is
/// buffered, so that what follows the compressed stream is left in it.
pub struct PartialReader<R: BufRead> {
    decoder: ZlibDecoder<R>,
    name: String,
    limits: ReadLimits,
    frame: Vec<u8>,
    /// The largest source index an event named so far.
    most_source: Option<usize>,
    events: u64,
    ended: bool,
}

/// What a partial's frames give, one at a time.
pub enum Item {
    /// A chunk of events.
    Batch(PreparedBatch),
    /// The end: the sources the events' positions name.
    End {
        /// The sources, in order.
        sources: Vec<String>,
        /// The events in all the chunks.
        events: u64,
        /// How its traces were imported, if it holds any.
        traces: Option<Detail>,
    },
}

impl<R: BufRead> PartialReader<R> {
    /// Reads and checks the header of a partial on `input`; `name` names it
    /// in errors.
    pub fn new(mut input: R, name: &str, limits: ReadLimits) -> Result<Self, PartialError> {
        let mut header = Vec::with_capacity(HEADER as usize);
        (&mut input)
            .take(HEADER)
            .read_to_end(&mut header)
            .map_err(|error| broken(name, 0, format!("the header cannot be read: {error}")))?;
        check_header(&header, name)?;
        Ok(Self {
            decoder: ZlibDecoder::new(input),
            name: name.to_owned(),
            limits,
            frame: Vec::new(),
            most_source: None,
            events: 0,
            ended: false,
        })
    }

    /// Where the decoder is in the file.
    fn offset(&self) -> u64 {
        HEADER + self.decoder.total_in()
    }

    fn fail(&self, rule: impl Into<String>) -> PartialError {
        broken(&self.name, self.offset(), rule)
    }

    /// The next frame; after the end, an error.
    pub fn next_item(&mut self) -> Result<Item, PartialError> {
        if self.ended {
            return Err(self.fail("read past the end frame"));
        }
        let mut length = [0u8; 4];
        self.read_exact(&mut length, "a frame's length")?;
        let length = u64::from(u32::from_le_bytes(length));
        if length > self.limits.max_frame_bytes {
            return Err(self.fail(format!(
                "a frame of {length} bytes, over the limit of {} (raise the limit to read it)",
                self.limits.max_frame_bytes
            )));
        }
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        frame.resize(length as usize, 0);
        self.read_exact(&mut frame, "a frame")?;
        let decoded = postcard::from_bytes::<Frame>(&frame);
        self.frame = frame;
        match decoded.map_err(|error| self.fail(format!("a frame does not decode: {error}")))? {
            Frame::Batch(batch) => {
                for identity in batch.identities() {
                    let source = origin(identity.record).0;
                    self.most_source = Some(self.most_source.map_or(source, |most| most.max(source)));
                }
                self.events += batch.len() as u64;
                Ok(Item::Batch(batch))
            }
            Frame::End(trailer) => {
                self.ended = true;
                if let Some(most) = self.most_source
                    && most >= trailer.sources.len()
                {
                    return Err(self.fail(format!(
                        "an event names source {most}, but the partial lists {}",
                        trailer.sources.len()
                    )));
                }
                if trailer.events != self.events {
                    return Err(self.fail(format!(
                        "the end frame counts {} events, but the frames held {}",
                        trailer.events, self.events
                    )));
                }
                // Nothing may follow: not in the compressed stream, nor
                // after it.
                let mut rest = [0u8; 1];
                let more = self.decoder.read(&mut rest).map_err(|error| {
                    self.fail(format!(
                        "the compressed stream is truncated or damaged after the end frame: {error}"
                    ))
                })?;
                if more != 0 {
                    return Err(self.fail("data follows the end frame"));
                }
                Ok(Item::End { sources: trailer.sources, events: trailer.events, traces: trailer.traces })
            }
        }
    }

    fn read_exact(&mut self, buffer: &mut [u8], what: &str) -> Result<(), PartialError> {
        match self.decoder.read_exact(buffer) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(self.fail(format!("truncated: the stream ends inside {what}, before the end frame")))
            }
            Err(error) => Err(self.fail(format!("the compressed stream is damaged: {error}"))),
        }
    }

    /// The input after the compressed stream: for the caller to check that
    /// nothing follows.
    pub fn into_inner(self) -> R {
        self.decoder.into_inner()
    }
}

pub(crate) fn broken(input: &str, offset: u64, rule: impl Into<String>) -> PartialError {
    PartialError::Format { input: input.to_owned(), offset, rule: rule.into() }
}

/// Checks the header's magic, version and flags.
fn check_header(header: &[u8], name: &str) -> Result<(), PartialError> {
    if !is_partial(header) {
        return Err(broken(name, 0, "not a tally partial (no TALLYPART header)"));
    }
    if header.len() < HEADER as usize {
        return Err(broken(
            name,
            header.len() as u64,
            format!("the header is cut short ({} of {HEADER} bytes)", header.len()),
        ));
    }
    let version = u16::from_le_bytes([header[10], header[11]]);
    if version != FORMAT_VERSION {
        return Err(broken(
            name,
            10,
            format!(
                "format version {version}, but this tally reads version {FORMAT_VERSION} (make the partial again with this tally)"
            ),
        ));
    }
    let flags = u32::from_le_bytes([header[12], header[13], header[14], header[15]]);
    if flags != 0 {
        return Err(broken(name, 12, format!("unknown flags {flags:#x}")));
    }
    Ok(())
}
