//! Opening an artifact's bytes: a file, or standard input for `-`, read
//! decompressed when it is gzip (told by its magic bytes, not its name:
//! tally-utils' one detector, asked here or already asked by whoever opened
//! the input).

use std::fs::File;
use std::io::{self, BufReader, Chain, Cursor, Read};
use std::path::Path;

pub use tally_utils::sniff::Compression;
use tally_utils::sniff::{GZIP_MAGIC, read_head};

use crate::error::ArtifactError;

const BUFFER: usize = 1 << 20;

/// The name errors use for a path (`-` for standard input).
pub(crate) fn source_name(path: &Path) -> String {
    path.display().to_string()
}

/// A byte stream whose first bytes were read to tell gzip from plain text.
pub struct Sniffed<R: Read> {
    inner: SniffedInner<R>,
}

/// The sniffed head put back in front of the rest of the stream.
type Rejoined<R> = Chain<Cursor<Vec<u8>>, R>;

enum SniffedInner<R: Read> {
    Plain(Rejoined<R>),
    Gzip(Box<flate2::bufread::MultiGzDecoder<BufReader<Rejoined<R>>>>),
}

impl<R: Read> Sniffed<R> {
    /// Whether the stream is gzip data.
    pub fn is_gzip(&self) -> bool {
        matches!(self.inner, SniffedInner::Gzip(_))
    }
}

impl<R: Read> Read for Sniffed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.inner {
            SniffedInner::Plain(reader) => reader.read(buf),
            SniffedInner::Gzip(reader) => reader.read(buf),
        }
    }
}

/// Wraps a byte stream so that gzip data (told by its magic bytes, not by a
/// file name; every member of a multi-member file) reads decompressed, and
/// anything else reads as is.
pub fn decompressed<R: Read>(mut reader: R) -> io::Result<Sniffed<R>> {
    let head = read_head(&mut reader, GZIP_MAGIC.len())?;
    let compression = Compression::of_head(&head);
    Ok(rejoined(Cursor::new(head).chain(reader), compression))
}

/// Wraps a byte stream whose compression is already known (an input opened
/// and sniffed once, as `tally_trace::open_input` does): [`decompressed`]
/// without reading anything.
pub fn decompressed_as<R: Read>(reader: R, compression: Compression) -> Sniffed<R> {
    rejoined(Cursor::new(Vec::new()).chain(reader), compression)
}

fn rejoined<R: Read>(stream: Rejoined<R>, compression: Compression) -> Sniffed<R> {
    let inner = match compression {
        Compression::Gzip => SniffedInner::Gzip(Box::new(flate2::bufread::MultiGzDecoder::new(
            BufReader::with_capacity(BUFFER, stream),
        ))),
        Compression::Plain => SniffedInner::Plain(stream),
    };
    Sniffed { inner }
}

pub(crate) fn open_raw(path: &Path) -> Result<Box<dyn Read + Send>, ArtifactError> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(io::stdin()));
    }
    File::open(path)
        .map(|file| Box::new(file) as Box<dyn Read + Send>)
        .map_err(|error| ArtifactError::io(&source_name(path), &error))
}

/// Opens an artifact: a file, or standard input for `-`; decompressed when
/// it is gzip.
pub fn open_artifact(path: &Path) -> Result<BufReader<Sniffed<Box<dyn Read + Send>>>, ArtifactError> {
    let sniffed =
        decompressed(open_raw(path)?).map_err(|error| ArtifactError::io(&source_name(path), &error))?;
    Ok(BufReader::with_capacity(BUFFER, sniffed))
}
