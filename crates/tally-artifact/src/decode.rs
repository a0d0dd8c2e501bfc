//! One artifact line to one record, with stormlog's
//! `CorrelationRecordDecoder` rules: the exact path over `serde_json::Value`
//! that decides every case, and the typed fast path in front of it.

use std::sync::Arc;

use serde_json::{Map, Value};
use tally_core::{
    CONTEXT_REFERENCE_SCHEMA_VERSION, CorrelationContext, EventType, InferenceRecord, parse_record_map,
};
use tally_utils::json_eq::python_json_eq;

use crate::error::{ArtifactError, ErrorKind};
use crate::lines::is_blank;
use crate::registry::{Interner, Registry};

/// `event_type` of a v4 context definition row.
pub const CONTEXT_EVENT_TYPE: &str = "infer.context";

/// Which decoder decided a record line: the typed fast path, or the exact
/// `serde_json::Value` path (taken for what the fast path declines, and for
/// every error). The results are the same; the split is what tells whether
/// the fast path earns its keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecodePath {
    Fast,
    Exact,
}

/// How many record lines each decoder path decided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecodeStats {
    /// Record lines the typed fast path decided.
    pub fast: u64,
    /// Record lines the exact path decided (the fast path declined them).
    pub exact: u64,
}

impl DecodeStats {
    pub(crate) fn count(&mut self, path: DecodePath) {
        match path {
            DecodePath::Fast => self.fast += 1,
            DecodePath::Exact => self.exact += 1,
        }
    }

    /// Every record line decided.
    pub fn total(&self) -> u64 {
        self.fast + self.exact
    }
}

/// What one non-blank line holds.
#[derive(Debug)]
#[allow(clippy::large_enum_variant, reason = "records dominate; a definition is rare and short-lived")]
pub(crate) enum Row {
    /// An event or a legacy record, whether it was a v4 reference row, and
    /// which path decided it.
    Record(InferenceRecord, bool, DecodePath),
    /// A v4 definition, not yet registered.
    Definition(String, Arc<CorrelationContext>),
}

/// A line's failure before it has a source name: kind and reason.
pub(crate) type LineError = (ErrorKind, String);

fn invalid(reason: impl Into<String>) -> LineError {
    (ErrorKind::Invalid, reason.into())
}

/// The JSON of a non-blank line, or why it is not JSON.
pub(crate) fn parse_json(line: &[u8], terminated: bool) -> Result<Value, LineError> {
    // Python reads `-0` as the integer 0; serde_json as a float.
    let text = tally_utils::json_text::pythonic_json_bytes(line);
    serde_json::from_slice(&text).map_err(|error| {
        let reason = if let Err(bad) = std::str::from_utf8(line) {
            format!("not UTF-8: invalid byte at column {}", bad.valid_up_to() + 1)
        } else if error.is_eof() && !terminated {
            format!("truncated last line: {error}")
        } else {
            format!("invalid JSON: {error}")
        };
        (ErrorKind::Syntax, reason)
    })
}

/// Whether JSON text could hold a definition row: a string equal to
/// `infer.context` is written either literally or with at least one `\u`
/// escape of one of its own characters (`i n f e r . c o t x`: code points
/// U+002E and U+0063..U+0078, so `\u002`, `\u006` or `\u007`); no other
/// escape can produce them. Every definition passes; ordinary rows, even
/// with `ensure_ascii` escapes of non-ASCII text, do not, which lets a
/// parallel reader find the definitions without decoding every line twice.
///
/// Escapes are found by their backslash, which ordinary rows seldom hold: a
/// search for `\u00` as a whole was led by its digits, which they hold in
/// every number.
#[inline]
pub(crate) fn may_define(text: &[u8], literal: &memchr::memmem::Finder<'_>) -> bool {
    literal.find(text).is_some()
        || memchr::memchr_iter(b'\\', text).any(|at| {
            text[at..].starts_with(b"\\u00") && matches!(text.get(at + 4), Some(b'2' | b'6' | b'7'))
        })
}

/// The finder of [`CONTEXT_EVENT_TYPE`] in artifact text. Its search is led
/// by two of its bytes, ranked by how rare they are: by default by their
/// frequency in ordinary text, where every byte of `infer.context` but the
/// `x` is common in artifacts too (`infer.` starts every row's type). The
/// `.` and the `x` six bytes after it meet by chance far less often.
pub(crate) fn context_finder() -> memchr::memmem::Finder<'static> {
    struct ArtifactRank;
    impl memchr::arch::all::packedpair::HeuristicFrequencyRank for ArtifactRank {
        fn rank(&self, byte: u8) -> u8 {
            match byte {
                b'.' => 0,
                b'x' => 1,
                _ => 255,
            }
        }
    }
    memchr::memmem::FinderBuilder::new()
        .build_forward_with_ranker(ArtifactRank, CONTEXT_EVENT_TYPE.as_bytes())
}

/// The definition a line holds, checked as far as it can be without the
/// registry; `None` when the line is not a definition (including lines that
/// are not JSON: their error is reported where they are decoded).
pub(crate) fn definition_of(
    line: &[u8],
    interner: &mut Interner,
) -> Option<Result<(String, Arc<CorrelationContext>), String>> {
    if is_blank(line) {
        return None;
    }
    let Ok(Value::Object(record)) = serde_json::from_slice::<Value>(line) else {
        return None;
    };
    if !is_definition(&record) {
        return None;
    }
    Some(match expand(record, 0, &Registry::default(), interner) {
        Ok(Row::Definition(id, context)) => Ok((id, context)),
        Ok(Row::Record(..)) => Err("infer.context row decoded as an event".to_owned()),
        Err((_, reason)) => Err(reason),
    })
}

fn is_definition(record: &Map<String, Value>) -> bool {
    matches!(record.get("event_type"), Some(Value::String(kind)) if kind == CONTEXT_EVENT_TYPE)
}

/// stormlog's `_expand` followed by `parse_inference_record`, on a decoded
/// line: the exact rules, every check in stormlog's order.
pub(crate) fn expand(
    mut record: Map<String, Value>,
    line: u64,
    registry: &Registry,
    interner: &mut Interner,
) -> Result<Row, LineError> {
    let version = record.get("schema_version");
    let definition = is_definition(&record);
    // Python's `version == 4`, which 4.0 also satisfies.
    let four = Value::from(CONTEXT_REFERENCE_SCHEMA_VERSION);
    let transport =
        definition || record.contains_key("context_id") || version.is_some_and(|v| python_json_eq(v, &four));
    if !transport {
        return parse_record_map(record, |map| {
            let context = map.remove("context").unwrap_or(Value::Null);
            Ok(interner.intern(CorrelationContext::from_json(context)?))
        })
        .map(|record| Row::Record(record, false, DecodePath::Exact))
        .map_err(|error| invalid(error.message()));
    }
    // `type(version) is int`: neither 4.0 nor a boolean.
    if !matches!(version, Some(Value::Number(n)) if n.as_u64() == Some(u64::from(CONTEXT_REFERENCE_SCHEMA_VERSION)))
    {
        return Err(invalid("context transport requires schema_version 4"));
    }
    let id = match record.get("context_id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => return Err(invalid("context_id must be a non-empty string")),
    };
    if definition {
        let exact = record.len() == 4
            && ["schema_version", "event_type", "context_id", "context"]
                .iter()
                .all(|key| record.contains_key(*key));
        if !exact {
            return Err(invalid("infer.context requires exactly version, type, ID, context"));
        }
        let context = match record.remove("context") {
            Some(context @ Value::Object(_)) => {
                CorrelationContext::from_json(context).map_err(|error| invalid(error.message()))?
            }
            _ => return Err(invalid("context must be an object")),
        };
        return Ok(Row::Definition(id, interner.intern(context)));
    }
    if record.contains_key("context") {
        return Err(invalid("v4 event must have context_id and no context"));
    }
    let context = match registry.lookup(&id, line) {
        Some(context) => Arc::clone(context),
        None => return Err(invalid(format!("unknown context_id: {}", tally_core::shown(&id)))),
    };
    let activity = matches!(record.get("event_type"), Some(Value::String(kind)) if kind == EventType::ActivityRef.as_str());
    let intervals = match record.get("metadata") {
        Some(Value::Object(metadata)) if activity => metadata.get("intervals"),
        _ => None,
    };
    if intervals == Some(&Value::Null) {
        return Err(invalid("metadata.intervals must be a non-empty list of [offset_ns, duration_ns] pairs"));
    }
    let embedded_version = if intervals.is_some() { 3 } else { 2 };
    record.remove("context_id");
    // parse_record_map wants an object under `context`; the closure below
    // swaps this placeholder for the registered context.
    record.insert("context".into(), Value::Object(Map::new()));
    record.insert("schema_version".into(), Value::from(embedded_version));
    parse_record_map(record, |map| {
        map.remove("context");
        Ok(context)
    })
    .map(|record| Row::Record(record, true, DecodePath::Exact))
    .map_err(|error| invalid(error.message()))
}

/// A stateful line decoder: stormlog's `CorrelationRecordDecoder` over JSON
/// text. Feed it an artifact's lines in order; it keeps the v4 definitions
/// and interns contexts so identical contexts share one `Arc`.
///
/// ```
/// use tally_artifact::RecordDecoder;
/// let mut decoder = RecordDecoder::new("mem");
/// let context = r#"{"run_id": "r", "session_id": "s", "producer_id": "p", "source": "t",
///     "clock_domain": "host", "clock_kind": "monotonic", "collection_mode": "active",
///     "provenance": "observed"}"#.replace('\n', "");
/// let definition = format!(
///     r#"{{"schema_version": 4, "event_type": "infer.context", "context_id": "c1", "context": {context}}}"#
/// );
/// assert!(decoder.decode_line(definition.as_bytes(), 1).unwrap().is_none());
/// let row = r#"{"schema_version": 4, "context_id": "c1", "event_type": "infer.iteration",
///     "event_id": "e1", "iteration_ref": {"producer_id": "p", "id": "i1"}}"#.replace('\n', "");
/// let record = decoder.decode_line(row.as_bytes(), 2).unwrap().unwrap();
/// assert_eq!(record.schema_version(), 2);
/// let unknown = row.replace("c1", "c2");
/// let error = decoder.decode_line(unknown.as_bytes(), 3).unwrap_err();
/// assert_eq!(error.to_string(), "mem: line 3: unknown context_id: c2");
/// ```
#[derive(Debug, Clone)]
pub struct RecordDecoder {
    source_name: String,
    registry: Registry,
    interner: Interner,
    fast: bool,
    stats: DecodeStats,
}

impl RecordDecoder {
    /// A decoder for the artifact named `source_name` (used in errors).
    pub fn new(source_name: impl Into<String>) -> Self {
        Self {
            source_name: source_name.into(),
            registry: Registry::default(),
            interner: Interner::default(),
            fast: true,
            stats: DecodeStats::default(),
        }
    }

    /// How many record lines so far each decoder path decided.
    pub fn stats(&self) -> DecodeStats {
        self.stats
    }

    /// Turns the typed fast path off, so every line takes the exact
    /// `serde_json::Value` path (for tests and comparisons; same results).
    pub fn exact_only(mut self) -> Self {
        self.fast = false;
        self
    }

    /// Decodes one line (with or without its terminator) that is line
    /// `line` of the artifact: `None` for a blank line or a definition.
    pub fn decode_line(
        &mut self,
        line: &[u8],
        line_number: u64,
    ) -> Result<Option<InferenceRecord>, ArtifactError> {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let terminated = text.len() < line.len();
        self.decode(text, terminated, line_number)
            .map_err(|(kind, reason)| ArtifactError::at_line(&self.source_name, line_number, kind, reason))
    }

    pub(crate) fn source_name(&self) -> &str {
        &self.source_name
    }

    pub(crate) fn decode(
        &mut self,
        line: &[u8],
        terminated: bool,
        line_number: u64,
    ) -> Result<Option<InferenceRecord>, LineError> {
        match decode_row(line, terminated, line_number, &self.registry, &mut self.interner, self.fast)? {
            None => Ok(None),
            Some(Row::Record(record, _, path)) => {
                self.stats.count(path);
                Ok(Some(record))
            }
            Some(Row::Definition(id, context)) => {
                self.registry.define(&id, &context, line_number).map_err(invalid)?;
                Ok(None)
            }
        }
    }
}

/// A non-blank line to its row: the fast path when it can decide, else the
/// exact path. `None` for a blank line.
#[inline]
pub(crate) fn decode_row(
    line: &[u8],
    terminated: bool,
    line_number: u64,
    registry: &Registry,
    interner: &mut Interner,
    fast: bool,
) -> Result<Option<Row>, LineError> {
    if is_blank(line) {
        return Ok(None);
    }
    if fast && let Some((record, compact)) = crate::fast::decode(line, line_number, registry, interner) {
        return Ok(Some(Row::Record(record, compact, DecodePath::Fast)));
    }
    let value = parse_json(line, terminated)?;
    let Value::Object(record) = value else {
        return Err(invalid("record must be an object"));
    };
    expand(record, line_number, registry, interner).map(Some)
}
