//! The partial's bytes (docs/partials.md): a fixed header, then the body,
//! serde's postcard encoding of the sources and the prepared events,
//! compressed with zlib (its Adler-32 catches a damaged body).
//!
//! ```text
//! offset  size  field
//!      0    10  magic "TALLYPART\0"
//!     10     2  format version, little-endian (1)
//!     12     4  flags, little-endian (0: none defined)
//!     16     8  the body's length before compression
//!     24     8  the body's length as stored (the rest of the file)
//!     32     …  zlib(postcard(Body))
//! ```
//!
//! Reading is bounded like every input: the declared lengths are checked
//! against the file and [`ReadLimits`] before anything is allocated, and
//! the decompressed body is cut at its declared length.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use serde::{Deserialize, Serialize};
use tally_ingest::RunError;
use tally_resolve::PreparedBatch;

use crate::Partial;

/// The first bytes of every partial.
pub const MAGIC: &[u8; 10] = b"TALLYPART\0";

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;

/// The header's length.
const HEADER: usize = 32;

/// How much a partial may take to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// The largest body accepted, in bytes before compression; the events
    /// it decodes into take about as much again.
    pub max_body_bytes: u64,
}

impl ReadLimits {
    /// The default largest body: 2 GiB, the partial of some tens of
    /// gigabytes of traces.
    pub const DEFAULT_MAX_BODY_BYTES: u64 = 2 << 30;
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self { max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES }
    }
}

/// Why a partial could not be made, read or written.
#[derive(Debug, thiserror::Error)]
pub enum PartialError {
    /// The file could not be opened, read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The bytes are not a partial this build reads.
    #[error("{input}: byte {offset}: {rule}")]
    Format {
        /// The file (or what the caller named the bytes).
        input: String,
        /// Where in the file the rule is broken.
        offset: u64,
        /// The rule.
        rule: String,
    },
    /// Reading the inputs of a partial failed (the error names the file
    /// and line).
    #[error(transparent)]
    Run(#[from] RunError),
}

/// What the body holds.
#[derive(Serialize, Deserialize)]
struct Body {
    /// The version of tally that wrote it, for a reader's messages.
    tally_version: String,
    sources: Vec<String>,
    batch: PreparedBatch,
}

/// Whether `head` (a file's first bytes) starts a partial.
pub fn is_partial(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// Whether the file at `path` is a partial, from its first bytes (`-`,
/// standard input, never is).
pub fn sniff_path(path: &Path) -> Result<bool, PartialError> {
    if path == Path::new("-") {
        return Ok(false);
    }
    let io = |error| PartialError::Io { path: path.to_path_buf(), error };
    let mut file = File::open(path).map_err(io)?;
    let mut head = [0u8; MAGIC.len()];
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]).map_err(io)? {
            0 => break,
            read => filled += read,
        }
    }
    Ok(is_partial(&head[..filled]))
}

impl Partial {
    /// The partial's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, PartialError> {
        let body = Body {
            tally_version: env!("CARGO_PKG_VERSION").to_owned(),
            sources: self.sources.clone(),
            batch: self.batch.clone(),
        };
        let encoded = postcard::to_allocvec(&body).map_err(|error| PartialError::Format {
            input: "partial".into(),
            offset: HEADER as u64,
            rule: format!("the body cannot be encoded: {error}"),
        })?;
        let mut compressed = ZlibEncoder::new(Vec::with_capacity(encoded.len() / 3), Compression::fast());
        // Writing into a vector cannot fail.
        compressed.write_all(&encoded).expect("writing into memory");
        let compressed = compressed.finish().expect("writing into memory");
        let mut bytes = Vec::with_capacity(HEADER + compressed.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&(encoded.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&(compressed.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&compressed);
        Ok(bytes)
    }

    /// Writes the partial to `path` whole or not at all: into a temporary
    /// file beside it, renamed over `path` once complete.
    pub fn write(&self, path: &Path) -> Result<(), PartialError> {
        let bytes = self.to_bytes()?;
        let io = |error| PartialError::Io { path: path.to_path_buf(), error };
        let directory = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name =
            path.file_name().map_or_else(|| "partial".into(), |name| name.to_string_lossy().into_owned());
        let temporary = directory.join(format!(".{name}.{}.tmp", std::process::id()));
        let written = File::create(&temporary)
            .and_then(|mut file| file.write_all(&bytes).and_then(|()| file.sync_all()))
            .and_then(|()| std::fs::rename(&temporary, path));
        if let Err(error) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(io(error));
        }
        Ok(())
    }

    /// Reads a partial back from its bytes; `source` names them in errors.
    pub fn from_bytes(bytes: &[u8], source: &str) -> Result<Partial, PartialError> {
        Self::from_bytes_limited(bytes, source, &ReadLimits::default())
    }

    /// [`Partial::from_bytes`] within `limits`.
    pub fn from_bytes_limited(
        bytes: &[u8],
        source: &str,
        limits: &ReadLimits,
    ) -> Result<Partial, PartialError> {
        let header = bytes.get(..HEADER).unwrap_or(bytes);
        let (body_len, stored_len) = check_header(header, source, limits)?;
        let stored = &bytes[HEADER..];
        if stored.len() as u64 != stored_len {
            return Err(broken(
                source,
                bytes.len() as u64,
                format!(
                    "the body should be {stored_len} bytes as stored, but the file has {} after the header (truncated or extended)",
                    stored.len()
                ),
            ));
        }
        decode(stored, body_len, source)
    }
}

fn broken(source: &str, offset: u64, rule: impl Into<String>) -> PartialError {
    PartialError::Format { input: source.to_owned(), offset, rule: rule.into() }
}

/// Checks the header: the body's declared lengths, before compression and
/// as stored.
fn check_header(header: &[u8], source: &str, limits: &ReadLimits) -> Result<(u64, u64), PartialError> {
    if !is_partial(header) {
        return Err(broken(source, 0, "not a tally partial (no TALLYPART header)"));
    }
    if header.len() < HEADER {
        return Err(broken(
            source,
            header.len() as u64,
            format!("the header is cut short ({} of {HEADER} bytes)", header.len()),
        ));
    }
    let word = |at: usize, size: usize| -> u64 {
        let mut buffer = [0u8; 8];
        buffer[..size].copy_from_slice(&header[at..at + size]);
        u64::from_le_bytes(buffer)
    };
    let version = word(10, 2);
    if version != u64::from(FORMAT_VERSION) {
        return Err(broken(
            source,
            10,
            format!(
                "format version {version}, but this tally reads version {FORMAT_VERSION} (make the partial again with this tally)"
            ),
        ));
    }
    let flags = word(12, 4);
    if flags != 0 {
        return Err(broken(source, 12, format!("unknown flags {flags:#x}")));
    }
    let body_len = word(16, 8);
    if body_len > limits.max_body_bytes {
        return Err(broken(
            source,
            16,
            format!(
                "the body is {body_len} bytes, over the limit of {} (raise the limit to read it)",
                limits.max_body_bytes
            ),
        ));
    }
    Ok((body_len, word(24, 8)))
}

/// Decompresses the stored body, cut at its declared length, and decodes it.
fn decode(stored: impl Read, body_len: u64, source: &str) -> Result<Partial, PartialError> {
    // Room for what the header declares, but never more up front than a
    // damaged header could make us allocate for nothing.
    let mut body = Vec::with_capacity(body_len.min(64 << 20) as usize);
    let mut decoder = ZlibDecoder::new(stored).take(body_len + 1);
    decoder
        .read_to_end(&mut body)
        .map_err(|error| broken(source, HEADER as u64, format!("the body is damaged: {error}")))?;
    if body.len() as u64 != body_len {
        return Err(broken(
            source,
            HEADER as u64,
            format!(
                "the body decompresses to {}{} bytes, but the header says {body_len}",
                body.len(),
                if body.len() as u64 > body_len { " or more" } else { "" }
            ),
        ));
    }
    let (decoded, rest): (Body, &[u8]) = postcard::take_from_bytes(&body)
        .map_err(|error| broken(source, HEADER as u64, format!("the body does not decode: {error}")))?;
    if !rest.is_empty() {
        return Err(broken(
            source,
            HEADER as u64,
            format!(
                "{} bytes follow the body's end at byte {} of {body_len}",
                rest.len(),
                body_len as usize - rest.len()
            ),
        ));
    }
    check_positions(&decoded, source)?;
    Ok(Partial { sources: decoded.sources, batch: decoded.batch.interning() })
}

/// Every event names one of the partial's sources.
fn check_positions(body: &Body, source: &str) -> Result<(), PartialError> {
    for (number, identity) in body.batch.identities().enumerate() {
        let (file, _) = tally_ingest::origin(identity.record);
        if file >= body.sources.len() {
            return Err(broken(
                source,
                HEADER as u64,
                format!(
                    "prepared event {number} names source {file}, but the partial lists {}",
                    body.sources.len()
                ),
            ));
        }
    }
    Ok(())
}

/// Reads a partial from a file within `limits`.
pub(crate) fn read_file(path: &Path, limits: &ReadLimits) -> Result<Partial, PartialError> {
    let io = |error| PartialError::Io { path: path.to_path_buf(), error };
    let source = path.display().to_string();
    let mut file = File::open(path).map_err(io)?;
    let mut header = Vec::with_capacity(HEADER);
    (&mut file).take(HEADER as u64).read_to_end(&mut header).map_err(io)?;
    let (body_len, stored_len) = check_header(&header, &source, limits)?;
    let size = file.metadata().map_err(io)?.len();
    let after = size.saturating_sub(HEADER as u64);
    if after != stored_len {
        return Err(broken(
            &source,
            size,
            format!(
                "the body should be {stored_len} bytes as stored, but the file has {after} after the header (truncated or extended)"
            ),
        ));
    }
    decode(std::io::BufReader::new(file), body_len, &source)
}
