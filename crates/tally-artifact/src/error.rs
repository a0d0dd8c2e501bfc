//! The one error type of the crate: where an artifact went wrong, and why.

use std::fmt;

/// What kind of failure an [`ArtifactError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file or stream could not be opened, read or written.
    Io,
    /// A line is not JSON (invalid, truncated, not UTF-8).
    Syntax,
    /// A line is JSON but breaks a rule of the format or the event model.
    Invalid,
    /// A record cannot be written in the form asked for.
    Unwritable,
    /// A line is longer than the record limit
    /// ([`crate::ReadOptions::max_record_bytes`]): read no further, so that
    /// endless input (`/dev/zero`, a gzip bomb without line ends) cannot
    /// take the machine's memory.
    Limit,
}

/// An artifact could not be read or written.
///
/// Displays as `"{source}: line {n}: {reason}"`, or `"{source}: {reason}"`
/// when no line is involved (I/O). `source` is the path, or `-` for standard
/// input and output.
///
/// ```
/// use tally_artifact::read_artifact_from;
/// let error = read_artifact_from(&b"{\"schema_version\": 7}\n"[..], "mem").unwrap_err();
/// assert_eq!(error.line(), Some(1));
/// assert_eq!(error.to_string(), format!("mem: line 1: {}", error.reason()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ArtifactError {
    source_name: String,
    line: Option<u64>,
    reason: String,
    kind: ErrorKind,
}

impl ArtifactError {
    /// An error at `line` (1-based) of `source_name`.
    pub fn at_line(
        source_name: impl Into<String>,
        line: u64,
        kind: ErrorKind,
        reason: impl Into<String>,
    ) -> Self {
        Self { source_name: source_name.into(), line: Some(line), reason: reason.into(), kind }
    }

    /// An error about the whole source (no line).
    pub fn whole(source_name: impl Into<String>, kind: ErrorKind, reason: impl Into<String>) -> Self {
        Self { source_name: source_name.into(), line: None, reason: reason.into(), kind }
    }

    pub(crate) fn io(source_name: &str, error: &std::io::Error) -> Self {
        Self::whole(source_name, ErrorKind::Io, error.to_string())
    }

    /// The 1-based physical line, when the error is about one line.
    pub fn line(&self) -> Option<u64> {
        self.line
    }

    /// Why, without source or line: e.g. `end_ns must be >= start_ns`.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The path, or `-` for standard input or output.
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for ArtifactError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}: line {line}: {}", self.source_name, self.reason),
            None => write!(f, "{}: {}", self.source_name, self.reason),
        }
    }
}
