//! A case: the input files of one check (and, by kind, a share model or
//! alignment queries), as JSON records, and the writer that puts them on
//! disk in the form the case chose.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use tally_artifact::pyjson::{Separators, to_python_json};
use tally_artifact::{ArtifactEncoder, Form};
use tally_core::parse_inference_record;

use crate::ConformError;

/// What a case asks of an implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The accounting object of the inputs, or a rejection.
    Account,
    /// The verdict on a share model against the inputs' accounting.
    Shares,
    /// The answers to timestamp translations through the inputs' alignments.
    Align,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 3] = [Kind::Account, Kind::Shares, Kind::Align];

    /// The kind's name in the protocol and the report.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Account => "account",
            Kind::Shares => "shares",
            Kind::Align => "align",
        }
    }

    /// The kind named `name`, if any.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One input artifact of a case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseFile {
    /// The file's name inside the case's folder.
    pub name: String,
    /// Embedded (v2/v3) or compact (v4).
    pub form: Form,
    /// Gzip-compressed.
    pub gzip: bool,
    /// The records, in file order. One that is not a valid record is
    /// written as it is, embedded (`json.dumps(sort_keys=True)`).
    pub records: Vec<Value>,
    /// Keep only this many hundredths (1-99) of the last line's bytes: a
    /// truncated write.
    pub truncate_last_line: Option<u8>,
}

impl CaseFile {
    /// The file's bytes: each record encoded in the file's form (valid ones
    /// through tally-artifact's encoder, others as they are), then the
    /// truncation and the compression.
    pub fn encode(&self) -> Result<Vec<u8>, ConformError> {
        let mut encoder = ArtifactEncoder::new(self.form);
        let mut out = Vec::new();
        for value in &self.records {
            match parse_inference_record(value.clone()) {
                Ok(record) => encoder
                    .encode(&record, &mut out)
                    .map_err(|error| ConformError::Encode(format!("{}: {error}", self.name)))?,
                Err(_) => {
                    out.extend_from_slice(to_python_json(value, Separators::DEFAULT).as_bytes());
                    out.push(b'\n');
                }
            }
        }
        if let Some(keep) = self.truncate_last_line {
            truncate_last_line(&mut out, keep);
        }
        if !self.gzip {
            return Ok(out);
        }
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gzip.write_all(&out)
            .map_err(|error| ConformError::Encode(format!("{}: gzip: {error}", self.name)))?;
        gzip.finish().map_err(|error| ConformError::Encode(format!("{}: gzip: {error}", self.name)))
    }
}

/// Cuts the last line to `keep` hundredths of its bytes (at least one byte,
/// at least one byte less), dropping its newline: what a writer killed
/// mid-line leaves. The cut falls on a character boundary, so the file
/// stays UTF-8 and the line fails as JSON, not as text.
fn truncate_last_line(out: &mut Vec<u8>, keep: u8) {
    let body_end = if out.last() == Some(&b'\n') { out.len() - 1 } else { out.len() };
    let start = out[..body_end].iter().rposition(|&byte| byte == b'\n').map_or(0, |at| at + 1);
    let length = body_end - start;
    if length < 2 {
        return;
    }
    let mut cut = (length * usize::from(keep) / 100).clamp(1, length - 1);
    // ASCII only (ensure_ascii), but a compact row is ours too: stay on a boundary.
    while cut > 1 && (out[start + cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    out.truncate(start + cut);
}

/// One check: its kind, its input artifacts, and the kind's extra input.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// What is asked.
    pub kind: Kind,
    /// The artifacts of one run, resolved together in this order.
    pub files: Vec<CaseFile>,
    /// For [`Kind::Shares`]: the share model document.
    pub model: Option<Value>,
    /// For [`Kind::Align`]: `[{"timestamp_ns", "from", "to"}]`.
    pub queries: Option<Value>,
    /// What the case holds, in a few words (`valid run`, `conflicting
    /// event identity`, ...).
    pub note: String,
}

/// Where a written case's files are: what an implementation is given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Inputs {
    /// What is asked.
    pub kind: Kind,
    /// The artifacts, in order.
    pub inputs: Vec<PathBuf>,
    /// The share model ([`Kind::Shares`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<PathBuf>,
    /// The alignment queries ([`Kind::Align`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queries: Option<PathBuf>,
}

/// The share model's file name beside the inputs.
pub const MODEL_FILE: &str = "model.json";
/// The alignment queries' file name beside the inputs.
pub const QUERIES_FILE: &str = "queries.json";

impl Case {
    /// The records of every file, context definitions not counted: the
    /// size a shrunk case is judged by.
    pub fn record_count(&self) -> usize {
        self.files.iter().map(|file| file.records.len()).sum()
    }

    /// Writes the case's files into `dir` (which must exist) and says where
    /// they are. Each file is written whole; for files that must appear
    /// atomically, see [`Case::write_atomically`].
    pub fn write(&self, dir: &Path) -> Result<Inputs, ConformError> {
        self.write_with(dir, |path, bytes| {
            std::fs::write(path, bytes).map_err(|error| ConformError::io(path, error))
        })
    }

    /// [`Case::write`] through a temporary file renamed into place for each
    /// file, for folders others read (a finding under the output folder).
    pub fn write_atomically(&self, dir: &Path) -> Result<Inputs, ConformError> {
        self.write_with(dir, write_atomically)
    }

    fn write_with(
        &self,
        dir: &Path,
        mut put: impl FnMut(&Path, &[u8]) -> Result<(), ConformError>,
    ) -> Result<Inputs, ConformError> {
        let mut inputs = Vec::with_capacity(self.files.len());
        for file in &self.files {
            let path = dir.join(&file.name);
            put(&path, &file.encode()?)?;
            inputs.push(path);
        }
        let mut document = |name: &str, value: &Option<Value>| -> Result<Option<PathBuf>, ConformError> {
            let Some(value) = value else { return Ok(None) };
            let path = dir.join(name);
            put(&path, pretty(value).as_bytes())?;
            Ok(Some(path))
        };
        let model = document(MODEL_FILE, &self.model)?;
        let queries = document(QUERIES_FILE, &self.queries)?;
        Ok(Inputs { kind: self.kind, inputs, model, queries })
    }
}

/// A JSON value pretty-printed with two spaces and a final newline, as the
/// corpus writes its documents.
pub fn pretty(value: &Value) -> String {
    // Invariant: a `Value` always serializes (its keys are strings).
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value serializes");
    text.push('\n');
    text
}

/// Writes `bytes` to `path` through tally-artifact's [`tally_artifact::AtomicFile`].
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ConformError> {
    let mut file = tally_artifact::AtomicFile::create(path).map_err(|error| ConformError::io(path, error))?;
    file.write_all(bytes).map_err(|error| ConformError::io(path, error))?;
    file.commit().map_err(|error| ConformError::io(path, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_line_loses_at_least_a_byte_and_keeps_at_least_one() {
        for keep in [1u8, 50, 99] {
            let mut out = b"{\"a\": 1}\n{\"bb\": 22}\n".to_vec();
            truncate_last_line(&mut out, keep);
            let last = &out[9..];
            assert!(!last.is_empty() && last.len() < 10, "{keep}: {:?}", String::from_utf8_lossy(&out));
            assert!(out.starts_with(b"{\"a\": 1}\n"));
        }
    }

    #[test]
    fn kinds_parse_their_names() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.name()), Some(kind));
        }
        assert_eq!(Kind::parse("bogus"), None);
    }
}
