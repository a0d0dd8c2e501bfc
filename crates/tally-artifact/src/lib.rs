#![doc = include_str!("../README.md")]
//!
//! Reading and writing stormlog's JSONL inference artifacts (schema 1-4).
//!
//! An artifact is one JSON object per line: embedded correlation records
//! (schema 2, and 3 for an activity with `metadata.intervals`), opaque v1
//! records, and the v4 transport form in which `infer.context` rows define
//! contexts once and events name them by `context_id`. The rules are those
//! of stormlog 0.4.3's `CorrelationRecordDecoder` and
//! `load_inference_artifact`:
//!
//! - lines end at `\n`, `\r\n` or `\r` (Python's universal newlines); a line
//!   that is all whitespace (Python's `str.isspace`) is skipped, and line
//!   numbers stay physical;
//! - a row is a transport row when its `event_type` is `infer.context`, it
//!   has a `context_id` key, or its `schema_version` equals 4; a transport row
//!   needs `schema_version` exactly the integer 4 and a non-empty
//!   `context_id`; a definition has exactly the keys `schema_version`,
//!   `event_type`, `context_id`, `context`, and redefining an ID with another
//!   context is an error ("conflicting context definition"); a reference
//!   needs an ID defined on an earlier line ("unknown context_id") and no
//!   `context` of its own, and cannot say `"intervals": null`;
//! - every other row is parsed by [`tally_core::parse_inference_record`]'s
//!   rules; a duplicated key takes its last value, as Python's `json` does.
//!
//! Every rejection is an [`ArtifactError`] naming the source, the 1-based
//! line, and the reason. Reading never holds the whole file as one string:
//! [`read_artifact`] decodes windows of lines in parallel (whole windows
//! dealt out to decoding threads; an input of one window on the calling
//! thread, with no thread started),
//! [`ArtifactReader`] streams one record at a time, and identical contexts
//! share one `Arc`. Gzip input is recognised by its magic bytes.
//!
//! Writing ([`write_artifact`], [`ArtifactWriter`]) produces exactly the
//! bytes stormlog writes for the same records (`json.dumps(row,
//! sort_keys=True)` per line, see [`pyjson`]), in embedded or compact
//! ([`Form`]) form, through a temporary file renamed into place.
//!
//! ```
//! use tally_artifact::{encode_artifact, read_artifact_from, Form};
//! let text = concat!(
//!     r#"{"schema_version": 2, "event_type": "infer.iteration", "event_id": "e1", "#,
//!     r#""context": {"run_id": "r", "session_id": "s", "producer_id": "p", "source": "t", "#,
//!     r#""clock_domain": "host", "clock_kind": "monotonic", "collection_mode": "active", "#,
//!     r#""provenance": "observed"}, "iteration_ref": {"producer_id": "p", "id": "i1"}}"#, "\n",
//! );
//! let records = read_artifact_from(text.as_bytes(), "example.jsonl").unwrap();
//! let compact = encode_artifact(&records, Form::Compact).unwrap();
//! assert_eq!(read_artifact_from(&compact[..], "compact").unwrap(), records);
//! ```
//!
//! # Where tally differs from stormlog
//!
//! JSON is parsed by `serde_json`, not Python's `json`:
//!
//! - integers beyond the 64-bit range are read as floats, so such a value is
//!   rejected where the model wants an integer (a time, an ID) and is
//!   rewritten as a float in metadata; stormlog keeps Python's exact integer;
//! - `NaN`, `Infinity` and `-Infinity` (which Python's `json` accepts) and
//!   floats beyond the `f64` range are JSON errors;
//! - strings with unpaired UTF-16 surrogate escapes (`"\ud800"`) are JSON
//!   errors, and nesting deeper than 128 levels is refused;
//! - stormlog fails with a bare `UnicodeDecodeError` on bytes that are not
//!   UTF-8, and cannot read gzip at all; tally names the line, and reads gzip.
//!
//! Rejections carry tally's own wording where Python's is an interpreter
//! message (a `TypeError` from a dataclass, a `JSONDecodeError`); the
//! accepted records, the rejected lines and the model's rule messages are
//! the same.

mod decode;
mod error;
mod fast;
mod line_reader;
mod lines;
mod open;
pub mod pyjson;
mod read;
mod registry;
mod view_cursor;
mod view_rows;
mod windows;
mod write;

pub use decode::{CONTEXT_EVENT_TYPE, DecodeStats, RecordDecoder};
pub use error::{ArtifactError, ErrorKind};
pub use line_reader::ArtifactReader;
pub use open::{Compression, Sniffed, decompressed, decompressed_as, open_artifact};
pub use read::{
    DEFAULT_MAX_RECORD_BYTES, LineSink, ReadOptions, ReadStats, RecordBatch, read_artifact,
    read_artifact_from, read_batches, read_events, read_mapped, read_sniffed_batches,
};
pub use write::{
    ArtifactEncoder, ArtifactWriter, AtomicFile, EncodeError, Form, context_id, encode_artifact,
    stays_embedded, write_artifact,
};
