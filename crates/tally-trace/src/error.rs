//! The error of an import: which file, and what is wrong with it.

use std::path::{Path, PathBuf};

use tally_core::ValidationError;

/// An error a sink (the caller's consumer of events) returned.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// A trace could not be imported.
///
/// Every variant names the file; messages say what was expected, so a person
/// can tell a truncated download from a file of another format.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct TraceError {
    path: PathBuf,
    kind: TraceErrorKind,
}

impl TraceError {
    pub(crate) fn new(path: &Path, kind: TraceErrorKind) -> Self {
        Self { path: path.to_path_buf(), kind }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What went wrong.
    pub fn kind(&self) -> &TraceErrorKind {
        &self.kind
    }
}

/// What went wrong with a trace file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceErrorKind {
    /// Reading the file failed.
    #[error("cannot read: {0}")]
    Io(#[source] std::io::Error),
    /// The gzip stream ended early or is corrupt.
    #[error("truncated or corrupt gzip stream: {0}")]
    Gzip(#[source] std::io::Error),
    /// The JSON text is not valid JSON.
    #[error("invalid JSON at byte {offset}: {message}")]
    Json {
        /// Byte offset in the (decompressed) JSON text.
        offset: u64,
        /// serde_json's description.
        message: String,
    },
    /// The JSON text ends inside a value.
    #[error("the trace ends inside a value at byte {offset}: truncated file?")]
    Truncated {
        /// Byte offset of the end of the (decompressed) text.
        offset: u64,
    },
    /// Valid input, but not a Chrome trace.
    #[error("not a Chrome trace: {0}")]
    NotChromeTrace(String),
    /// Not an Nsight Systems SQLite export, or one without the data needed.
    #[error("not a usable Nsight Systems SQLite export: {0}")]
    NotNsysExport(String),
    /// An XPlane profile (`*.xplane.pb`) breaks a rule of the protobuf wire
    /// format or one of tally's limits on it.
    #[error("invalid XPlane protobuf at byte {offset}: {rule}")]
    XPlane {
        /// Byte offset in the (decompressed) file.
        offset: u64,
        /// The rule.
        rule: crate::xplane::XPlaneRule,
    },
    /// SQLite refused a query.
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A value of the trace header is unusable (e.g. `baseTimeNanoseconds`).
    #[error("{0}")]
    Header(String),
    /// A single JSON value (an event, a header value) is longer than
    /// [`crate::ImportOptions::max_event_bytes`].
    #[error("the JSON value at byte {offset} is longer than the event limit of {limit} bytes")]
    ValueTooLarge {
        /// Byte offset of the value's start in the (decompressed) text.
        offset: u64,
        /// The limit.
        limit: usize,
    },
    /// A timestamp plus the trace's base time passes `u64::MAX` nanoseconds.
    #[error("timestamp {relative_ns} ns plus base time {base_ns} ns is beyond 2^64 ns")]
    TimestampOutOfRange {
        /// The timestamp as the trace wrote it, in ns.
        relative_ns: u64,
        /// The trace's base time.
        base_ns: u64,
    },
    /// An event broke a rule of the event model (a bug of the importer or a
    /// name the model refuses, such as an empty one).
    #[error("cannot build an event: {0}")]
    Model(#[from] ValidationError),
    /// The caller's sink refused an event.
    #[error("{0}")]
    Sink(SinkError),
    /// A sum of durations passes what a record can hold (2^64 − 1 ns; the
    /// artifact format's integers are 64-bit).
    #[error("{what} is {total_ns} ns, beyond the 2^64 ns a record can hold")]
    SumOutOfRange {
        /// What was summed.
        what: String,
        /// The exact sum.
        total_ns: u128,
    },
    /// A device UUID assignment does not fit this import.
    #[error("device UUIDs: {0}")]
    DeviceUuid(crate::DeviceUuidError),
}
