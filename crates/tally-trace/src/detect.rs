//! Telling a trace from an artifact by content, not by file name.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::error::{TraceError, TraceErrorKind};
use crate::json_stream::{JsonStream, Parsed, StreamError};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// How far into a document the detection looks for `traceEvents`.
const SNIFF_LIMIT: u64 = 16 << 20;

/// The trace formats tally imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// Chrome-trace JSON as the PyTorch profiler (Kineto) writes it.
    KinetoJson {
        /// gzip-compressed.
        gzip: bool,
    },
    /// An Nsight Systems SQLite export.
    NsysSqlite,
}

impl TraceFormat {
    /// The prefix of its attachment IDs, as stormlog names them.
    pub fn prefix(self) -> &'static str {
        match self {
            TraceFormat::KinetoJson { .. } => "kineto",
            TraceFormat::NsysSqlite => "nsys",
        }
    }
}

/// The format an import reads `path` as: SQLite by its header, anything
/// else as Chrome-trace JSON (gzip by its magic bytes), so that a damaged
/// trace gets the JSON reader's error rather than "unknown format".
pub(crate) fn import_format(path: &Path) -> Result<TraceFormat, TraceError> {
    let magic = read_magic(path)?;
    Ok(if magic.starts_with(SQLITE_MAGIC) {
        TraceFormat::NsysSqlite
    } else {
        TraceFormat::KinetoJson { gzip: magic.starts_with(&GZIP_MAGIC) }
    })
}

fn read_magic(path: &Path) -> Result<Vec<u8>, TraceError> {
    let io = |error| TraceError::new(path, TraceErrorKind::Io(error));
    let mut file = File::open(path).map_err(io)?;
    let mut magic = Vec::with_capacity(16);
    file.by_ref().take(16).read_to_end(&mut magic).map_err(io)?;
    Ok(magic)
}

/// Whether `path` holds a trace, and which kind, judged by its content: an
/// SQLite database is taken for an Nsight export; JSON (plain or gzip) is a
/// Chrome trace when it is an array or an object with a `traceEvents` key
/// before any `event_type` key (which marks an artifact record). Anything
/// else, including invalid JSON, is `None`: not recognisably a trace.
///
/// ```no_run
/// use tally_trace::{detect_format, TraceFormat};
/// let format = detect_format("rank0.pt.trace.json.gz".as_ref()).unwrap();
/// assert_eq!(format, Some(TraceFormat::KinetoJson { gzip: true }));
/// ```
pub fn detect_format(path: &Path) -> Result<Option<TraceFormat>, TraceError> {
    let magic = read_magic(path)?;
    if magic.starts_with(SQLITE_MAGIC) {
        return Ok(Some(TraceFormat::NsysSqlite));
    }
    let io = |error| TraceError::new(path, TraceErrorKind::Io(error));
    let file = File::open(path).map_err(io)?;
    let gzip = magic.starts_with(&GZIP_MAGIC);
    let source: Box<dyn Read> = if gzip { Box::new(MultiGzDecoder::new(file)) } else { Box::new(file) };
    match looks_like_chrome_trace(source.take(SNIFF_LIMIT)) {
        Ok(true) => Ok(Some(TraceFormat::KinetoJson { gzip })),
        Ok(false) => Ok(None),
        // A gzip stream that cannot be read is not recognisably anything.
        Err(_) if gzip => Ok(None),
        Err(error) => Err(io(error)),
    }
}

fn looks_like_chrome_trace(source: impl Read) -> io::Result<bool> {
    let mut stream = JsonStream::new(source);
    let outcome = (|| -> Result<bool, StreamError> {
        match stream.peek()? {
            Some(b'[') => return Ok(true),
            Some(b'{') => stream.advance(),
            _ => return Ok(false),
        }
        loop {
            if stream.peek()? != Some(b'"') {
                return Ok(false);
            }
            let key = match stream.owned::<String>()? {
                Parsed::Value(key, _) => key,
                Parsed::Mismatch(..) => return Ok(false),
            };
            match key.as_str() {
                "traceEvents" => return Ok(true),
                "event_type" | "schema_version" => return Ok(false),
                _ => {}
            }
            if stream.peek()? != Some(b':') {
                return Ok(false);
            }
            stream.advance();
            stream.skip()?;
            if stream.peek()? != Some(b',') {
                return Ok(false);
            }
            stream.advance();
        }
    })();
    match outcome {
        Ok(found) => Ok(found),
        Err(StreamError::Io(error)) => Err(error),
        Err(StreamError::Syntax { .. } | StreamError::Eof { .. }) => Ok(false),
    }
}
