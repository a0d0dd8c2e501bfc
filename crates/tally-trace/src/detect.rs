//! What an input is, decided by one documented rule for every command, and
//! the input opened once: detection reads a buffered prefix and hands the
//! same stream on, so anything `cat` can read works (FIFOs, `/dev/stdin`,
//! process substitution), and nothing is opened twice.
//!
//! # The rule
//!
//! 1. A format given by the caller (`--input-format artifact|trace`) wins.
//! 2. Else the name decides where it is unambiguous: `.jsonl` and
//!    `.jsonl.gz` are artifacts; `.json`, `.json.gz`, `.sqlite`,
//!    `.xplane.pb` and `.xplane.pb.gz` are traces (any case).
//! 3. Else the content decides: an SQLite database is an Nsight Systems
//!    export; JSON (plain or gzip) is a Chrome trace when it is an object
//!    with a `traceEvents` key (among the keys of its first
//!    [`SNIFF_LIMIT`] bytes, before any `event_type` or `schema_version`,
//!    which mark an artifact record) or an array whose first element is an
//!    object with a `ph` key; a protobuf (plain or gzip) is an XPlane
//!    profile when it opens as an `XSpace` does ([`looks_like_xspace`]).
//!    Everything else is an artifact, and the
//!    artifact reader judges it (so a JSON array, or 100,000 nested arrays,
//!    is rejected as "record must be an object", not read as an empty trace).
//!
//! A trace (by name, or forced) that is not SQLite is an XPlane profile
//! when its name says so, a Kineto trace when its name says JSON, and
//! otherwise whichever its content looks like (Kineto when neither, so a
//! damaged trace gets the JSON reader's error).
//!
//! An Nsight export must be a regular file (SQLite reads by seeking); one
//! arriving through a pipe is rejected with that reason.

use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use tally_utils::sniff::{Compression, read_head};

use crate::error::{TraceError, TraceErrorKind};
use crate::json_stream::{JsonStream, Parsed, StreamError};

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// How far into a document's (decompressed) text the content rule looks.
pub const SNIFF_LIMIT: u64 = 16 << 20;

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
    /// An XPlane profile (`*.xplane.pb`), the `XSpace` protobuf of the
    /// XLA/TSL profiler (JAX, TensorFlow, PyTorch/XLA).
    XPlane {
        /// gzip-compressed.
        gzip: bool,
    },
}

impl TraceFormat {
    /// The prefix of its attachment IDs, as stormlog names them.
    pub fn prefix(self) -> &'static str {
        match self {
            TraceFormat::KinetoJson { .. } => "kineto",
            TraceFormat::NsysSqlite => "nsys",
            TraceFormat::XPlane { .. } => "xplane",
        }
    }
}

tally_core::string_enum!(
    /// What the caller says an input is, overriding the rule's name and
    /// content steps.
    InputKind, "input_format", "input format must be artifact or trace", {
        /// A JSONL correlation artifact (plain or gzip).
        Artifact = "artifact",
        /// A profiler trace (Kineto JSON or XPlane, plain or gzip, or Nsight SQLite).
        Trace = "trace",
    }
);

/// What an input turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// A correlation artifact, for tally-artifact's readers.
    Artifact,
    /// A trace, for the import.
    Trace(TraceFormat),
}

/// An input opened once, with what detection learned of it (its format and
/// its compression), so no reader sniffs it again:
/// [`OpenedInput::into_reader`] yields the input from its first byte, the
/// bytes detection read included.
pub struct OpenedInput {
    path: PathBuf,
    format: InputFormat,
    compression: Compression,
    reader: Box<dyn Read + Send>,
}

impl std::fmt::Debug for OpenedInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedInput")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("compression", &self.compression)
            .finish()
    }
}

impl OpenedInput {
    /// The path as given (`-` for standard input).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What it is.
    pub fn format(&self) -> InputFormat {
        self.format
    }

    /// How its bytes are stored, as its first bytes told: an artifact
    /// reader decompresses by this instead of sniffing again.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Whether it is a trace.
    pub fn is_trace(&self) -> bool {
        matches!(self.format, InputFormat::Trace(_))
    }

    /// The input's bytes from the first (compressed as they are stored).
    pub fn into_reader(self) -> Box<dyn Read + Send> {
        self.reader
    }

    /// The same input read through `wrap`.
    pub(crate) fn map_reader(self, wrap: impl FnOnce(Box<dyn Read + Send>) -> Box<dyn Read + Send>) -> Self {
        Self {
            path: self.path,
            format: self.format,
            compression: self.compression,
            reader: wrap(self.reader),
        }
    }
}

/// Opens `path` (`-` for standard input) once and decides what it is by the
/// module's rule; `forced` is the caller's say.
pub fn open_input(path: &Path, forced: Option<InputKind>) -> Result<OpenedInput, TraceError> {
    let io = |error| TraceError::new(path, TraceErrorKind::Io(error));
    let source: Box<dyn Read + Send> =
        if path.as_os_str() == "-" { Box::new(io::stdin()) } else { Box::new(File::open(path).map_err(io)?) };
    open_reader(path, source, forced)
}

/// [`open_input`] of a stream already open, named `path` (in errors, in
/// the attachment ID, and for the name rule). An Nsight export needs a
/// regular file at `path`.
pub fn open_reader(
    path: &Path,
    mut source: Box<dyn Read + Send>,
    forced: Option<InputKind>,
) -> Result<OpenedInput, TraceError> {
    let io = |error| TraceError::new(path, TraceErrorKind::Io(error));
    let magic = read_head(&mut source, SQLITE_MAGIC.len()).map_err(io)?;
    let compression = Compression::of_head(&magic);
    let gzip = compression.is_gzip();
    let sqlite = magic.starts_with(SQLITE_MAGIC);
    let replay = |source: Box<dyn Read + Send>, prefix: Vec<u8>| -> Box<dyn Read + Send> {
        Box::new(Cursor::new(prefix).chain(source))
    };
    let kind = match forced.or_else(|| kind_by_name(path)) {
        Some(kind) => kind,
        None if sqlite => InputKind::Trace,
        None => {
            // Read the prefix through a recorder, so the stream can be
            // replayed whole however far detection looked.
            let (chrome, source) =
                sniff(replay(source, magic), gzip, |head| looks_like_chrome_trace(head)).map_err(io)?;
            let (xspace, source) = if chrome {
                (false, source)
            } else {
                sniff(source, gzip, |head| Ok(looks_like_xspace(head))).map_err(io)?
            };
            let format = match (chrome, xspace) {
                (true, _) => InputFormat::Trace(TraceFormat::KinetoJson { gzip }),
                (false, true) => InputFormat::Trace(TraceFormat::XPlane { gzip }),
                (false, false) => InputFormat::Artifact,
            };
            return Ok(OpenedInput { path: path.to_path_buf(), format, compression, reader: source });
        }
    };
    let format = match kind {
        InputKind::Artifact => InputFormat::Artifact,
        InputKind::Trace if sqlite => {
            let regular =
                path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file());
            if !regular {
                return Err(TraceError::new(
                    path,
                    TraceErrorKind::NotNsysExport(
                        "an Nsight Systems export must be a regular file: SQLite cannot read it from a pipe"
                            .into(),
                    ),
                ));
            }
            InputFormat::Trace(TraceFormat::NsysSqlite)
        }
        InputKind::Trace if name_ends(path, &[".xplane.pb", ".xplane.pb.gz"]) => {
            InputFormat::Trace(TraceFormat::XPlane { gzip })
        }
        InputKind::Trace if name_ends(path, &[".json", ".json.gz"]) => {
            InputFormat::Trace(TraceFormat::KinetoJson { gzip })
        }
        // Anything else a trace is read as an XPlane profile if it opens as
        // one, else as Chrome-trace JSON, so that a damaged trace gets the
        // JSON reader's error.
        InputKind::Trace => {
            let (xspace, source) =
                sniff(replay(source, magic), gzip, |head| Ok(looks_like_xspace(head))).map_err(io)?;
            let format = if xspace { TraceFormat::XPlane { gzip } } else { TraceFormat::KinetoJson { gzip } };
            return Ok(OpenedInput {
                path: path.to_path_buf(),
                format: InputFormat::Trace(format),
                compression,
                reader: source,
            });
        }
    };
    Ok(OpenedInput { path: path.to_path_buf(), format, compression, reader: replay(source, magic) })
}

/// Runs `test` on the (decompressed) head of `source`, at most
/// [`SNIFF_LIMIT`] bytes, and returns its answer with the stream whole
/// again. A gzip stream that cannot be read is no trace (`false`): the
/// artifact reader reports what is wrong with it.
fn sniff(
    source: Box<dyn Read + Send>,
    gzip: bool,
    test: impl FnOnce(&mut dyn Read) -> io::Result<bool>,
) -> io::Result<(bool, Box<dyn Read + Send>)> {
    let mut recorder = Recorder { inner: source, recorded: Vec::new() };
    let answer = if gzip {
        let mut decoder = MultiGzDecoder::new(&mut recorder);
        test(&mut (&mut decoder).take(SNIFF_LIMIT)).unwrap_or(false)
    } else {
        test(&mut (&mut recorder).take(SNIFF_LIMIT))?
    };
    let Recorder { inner, recorded } = recorder;
    Ok((answer, Box::new(Cursor::new(recorded).chain(inner))))
}

/// Whether the file name ends with one of `endings` (any case).
fn name_ends(path: &Path, endings: &[&str]) -> bool {
    let Some(name) = path.file_name() else { return false };
    let name = name.to_string_lossy().to_ascii_lowercase();
    endings.iter().any(|ending| name.ends_with(ending))
}

/// How much of a protobuf's head [`looks_like_xspace`] reads.
const XSPACE_HEAD: u64 = 64 << 10;

/// Step 3 of the rule for a protobuf, conservatively: an `XSpace` opens
/// with its first plane (field 1, key `0x0a`, a length), and that plane
/// with its ID (key `0x08`, a varint) or its name (key `0x12`, a length
/// within the plane, then that many bytes of UTF-8). After an ID the next
/// key must be one of the plane's fields 2 to 6, length-delimited and
/// within the plane. No JSON text passes: `0x08` and `0x12` are control
/// characters JSON does not allow where the key would be.
pub(crate) fn looks_like_xspace(source: &mut dyn Read) -> bool {
    let mut head = Vec::new();
    if source.take(XSPACE_HEAD).read_to_end(&mut head).is_err() {
        return false;
    }
    let whole = (head.len() as u64) < XSPACE_HEAD;
    let varint = |at: &mut usize| -> Option<u64> {
        let mut value = 0u64;
        for shift in 0..10 {
            let byte = *head.get(*at)?;
            *at += 1;
            value |= u64::from(byte & 0x7f) << (7 * shift);
            if byte < 0x80 {
                return Some(value);
            }
        }
        None
    };
    let mut at = 0;
    if head.first() != Some(&0x0a) {
        return false;
    }
    at += 1;
    let Some(plane) = varint(&mut at) else { return false };
    let plane_end = (at as u64).saturating_add(plane);
    if plane < 2 || (whole && plane_end > head.len() as u64) {
        return false;
    }
    let mut key = head.get(at).copied();
    if key == Some(0x08) {
        at += 1;
        if varint(&mut at).is_none() {
            return false;
        }
        key = head.get(at).copied();
        if !matches!(key, Some(0x12 | 0x1a | 0x22 | 0x2a | 0x32)) {
            return false;
        }
    }
    let Some(key) = key.filter(|key| matches!(key, 0x12 | 0x1a | 0x22 | 0x2a | 0x32)) else {
        return false;
    };
    at += 1;
    let Some(length) = varint(&mut at) else { return false };
    if (at as u64).saturating_add(length) > plane_end {
        return false;
    }
    if key == 0x12 {
        // The name, when it is within the head read.
        let Some(name) = usize::try_from(length).ok().and_then(|length| head.get(at..at + length)) else {
            return !whole && length > 0 && length <= XSPACE_HEAD;
        };
        return std::str::from_utf8(name).is_ok();
    }
    true
}

/// Step 2 of the rule: the name, where it is unambiguous.
fn kind_by_name(path: &Path) -> Option<InputKind> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    if name.ends_with(".jsonl") || name.ends_with(".jsonl.gz") {
        Some(InputKind::Artifact)
    } else if [".json", ".json.gz", ".sqlite", ".xplane.pb", ".xplane.pb.gz"]
        .iter()
        .any(|ending| name.ends_with(ending))
    {
        Some(InputKind::Trace)
    } else {
        None
    }
}

/// A reader that keeps a copy of everything read through it.
struct Recorder {
    inner: Box<dyn Read + Send>,
    recorded: Vec<u8>,
}

impl Read for Recorder {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let count = self.inner.read(buffer)?;
        self.recorded.extend_from_slice(&buffer[..count]);
        Ok(count)
    }
}

/// Whether `path` holds a trace, and which kind, by the module's rule (no
/// format forced). `None` for an artifact.
///
/// ```no_run
/// use tally_trace::{detect_format, TraceFormat};
/// let format = detect_format("rank0.pt.trace.json.gz".as_ref()).unwrap();
/// assert_eq!(format, Some(TraceFormat::KinetoJson { gzip: true }));
/// ```
pub fn detect_format(path: &Path) -> Result<Option<TraceFormat>, TraceError> {
    Ok(match open_input(path, None)?.format {
        InputFormat::Trace(format) => Some(format),
        InputFormat::Artifact => None,
    })
}

/// Step 3 of the rule for JSON text.
fn looks_like_chrome_trace(source: impl Read) -> io::Result<bool> {
    let mut stream = JsonStream::new(source);
    let outcome = (|| -> Result<bool, StreamError> {
        match stream.peek()? {
            Some(b'[') => {
                stream.advance();
                if stream.peek()? != Some(b'{') {
                    return Ok(false);
                }
                stream.advance();
                return first_keys_hold(&mut stream, |key| (key == "ph").then_some(true));
            }
            Some(b'{') => stream.advance(),
            _ => return Ok(false),
        }
        first_keys_hold(&mut stream, |key| match key {
            "traceEvents" => Some(true),
            "event_type" | "schema_version" => Some(false),
            _ => None,
        })
    })();
    match outcome {
        Ok(found) => Ok(found),
        Err(StreamError::Io(error)) => Err(error),
        Err(StreamError::Syntax { .. } | StreamError::Eof { .. } | StreamError::TooLarge { .. }) => Ok(false),
    }
}

/// Walks the keys of the object just opened, skipping values, until
/// `decide` says something about a key; `false` at the object's end.
fn first_keys_hold<R: Read>(
    stream: &mut JsonStream<R>,
    decide: impl Fn(&str) -> Option<bool>,
) -> Result<bool, StreamError> {
    loop {
        if stream.peek()? != Some(b'"') {
            return Ok(false);
        }
        let key = match stream.owned::<String>()? {
            Parsed::Value(key, _) => key,
            Parsed::Mismatch(..) => return Ok(false),
        };
        if let Some(answer) = decide(&key) {
            return Ok(answer);
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
}
