//! The fast path: a line straight into typed fields with serde, no
//! intermediate `serde_json::Value` for the record (only for metadata).
//!
//! It decides only what it is sure of. It returns a record when the line is
//! an ordinary valid v2/v3 row or v4 reference row, built with the same
//! constructors the exact path uses; anything else (a v1 record, a
//! definition, duplicate keys, which Python resolves to the last value, an
//! unknown or misplaced field, any invalid value) returns `None`, and the
//! exact path decides and words the error. A property suite checks that
//! the two paths agree on valid and mutated records.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::num::NonZeroU64;
use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};
use tally_core::{
    ActivityDomain, ActivityRef, ArtifactIdentity, Capabilities, ClockAlignment, ClockKind, CollectionMode,
    CorrelationContext, CorrelationEvent, EntityRef, EventBody, EventType, InferenceRecord, Iteration,
    Membership, Metadata, NonEmptyString, Provenance, Request, Span, Stage, TokenCounts,
};

use crate::registry::{Interner, Registry};

/// A JSON field: absent, `null`, or a value.
#[derive(Debug, Default)]
enum Field<T> {
    #[default]
    Absent,
    Null,
    Present(T),
}

impl<T> Field<T> {
    fn take(&mut self) -> Field<T> {
        std::mem::take(self)
    }

    fn is_absent(&self) -> bool {
        matches!(self, Field::Absent)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            None => Field::Null,
            Some(value) => Field::Present(value),
        })
    }
}

/// A string borrowed from the line when it has no escapes.
#[derive(Debug)]
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(value)))
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(value.to_owned())))
            }
            fn visit_string<E: de::Error>(self, value: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(value)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// A struct of `Field`s read from a JSON object only (never from an array,
/// which serde's derive would also accept), refusing duplicate and unknown
/// keys so the exact path handles those.
macro_rules! raw_object {
    ($name:ident { $($field:ident : $ty:ty),+ $(,)? }) => {
        #[derive(Debug, Default)]
        struct $name<'a> {
            $($field: Field<$ty>,)+
            _line: PhantomData<&'a str>,
        }

        impl<'a> $name<'a> {
            /// Whether every field was taken (or never there).
            fn all_taken(&self) -> bool {
                true $(&& self.$field.is_absent())+
            }
        }

        impl<'de> Deserialize<'de> for $name<'de> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct ObjectVisitor;
                impl<'de> Visitor<'de> for ObjectVisitor {
                    type Value = $name<'de>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("an object")
                    }
                    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<$name<'de>, M::Error> {
                        let mut out = $name::default();
                        while let Some(key) = map.next_key::<Text<'de>>()? {
                            match &*key.0 {
                                $(stringify!($field) => {
                                    if !out.$field.is_absent() {
                                        return Err(de::Error::custom("duplicate key"));
                                    }
                                    out.$field = map.next_value()?;
                                })+
                                _ => return Err(de::Error::custom("unknown key")),
                            }
                        }
                        Ok(out)
                    }
                }
                deserializer.deserialize_map(ObjectVisitor)
            }
        }
    };
}

raw_object!(RawRef { producer_id: String, id: String });

raw_object!(RawContext {
    run_id: Text<'a>,
    session_id: Text<'a>,
    producer_id: Text<'a>,
    source: Text<'a>,
    clock_domain: Text<'a>,
    clock_kind: Text<'a>,
    collection_mode: Text<'a>,
    provenance: Text<'a>,
    source_version: Text<'a>,
    engine: Text<'a>,
    engine_version: Text<'a>,
    backend: Text<'a>,
    backend_version: Text<'a>,
    host: Text<'a>,
    pid: u64,
    device_uuid: Text<'a>,
    rank: u64,
    local_rank: u64,
    world_size: u64,
});

raw_object!(RawRow {
    schema_version: u64,
    event_type: Text<'a>,
    context_id: Text<'a>,
    context: RawContext<'a>,
    event_id: String,
    metadata: Map<String, Value>,
    artifact_kind: String,
    created_at_ns: u64,
    request_ref: RawRef<'a>,
    attempt_ref: RawRef<'a>,
    backend_request_ref: RawRef<'a>,
    start_ns: u64,
    end_ns: u64,
    status: String,
    input_tokens: u64,
    output_tokens: u64,
    kv_bytes: u64,
    iteration_ref: RawRef<'a>,
    batch_ref: RawRef<'a>,
    stage_ref: RawRef<'a>,
    name: String,
    role: String,
    activity_ref: RawRef<'a>,
    activity_kind: String,
    attribution_status: Text<'a>,
    activity_domain: Text<'a>,
    correlation_scope: RawRef<'a>,
    trace_attachment_id: String,
    runtime_correlation_id: u64,
    cuda_correlation_id: u64,
    stream_id: u64,
    graph_id: u64,
    component: String,
    available: bool,
    supported: Vec<String>,
    enabled: Vec<String>,
    collected: Vec<String>,
    from_clock_domain: String,
    to_clock_domain: String,
    offset_ns: i64,
    uncertainty_ns: u64,
    valid_from_ns: u64,
    valid_to_ns: u64,
});

/// The record on `line`, and whether it was a v4 reference row, when the
/// fast path can decide it alone.
#[inline]
pub(crate) fn decode(
    line: &[u8],
    line_number: u64,
    registry: &Registry,
    interner: &mut Interner,
) -> Option<(InferenceRecord, bool)> {
    // Only an object: serde would read a struct from an array too.
    let first = line.iter().find(|byte| !matches!(byte, b' ' | b'\t' | b'\r' | b'\n'))?;
    if *first != b'{' {
        return None;
    }
    // An integer `-0` is 0 to Python but `-0.0` to serde: the exact path
    // reads it as Python does (found by the artifact_line fuzz target).
    if memchr::memmem::find_iter(line, b"-0").any(|at| tally_utils::json_text::is_negative_zero_at(line, at))
    {
        return None;
    }
    let mut scratch = std::mem::take(&mut interner.scratch);
    let result = match splice_known_context(line, interner, &mut scratch) {
        Some(context) => decode_text(&scratch, line_number, registry, interner, Some(context)),
        None => {
            let result = decode_text(line, line_number, registry, interner, None);
            if let Some((InferenceRecord::Event(event), false)) = &result {
                remember_context(line, event.context_arc(), interner);
            }
            result
        }
    };
    interner.scratch = scratch;
    result
}

/// How many context texts a decoder remembers.
const RAW_CONTEXTS: usize = 4;

/// Embedded rows repeat the same context text on every line. When `line`
/// carries, as its top-level `context`, exactly the bytes of the context
/// decoded last, writes the line with that value replaced by `null` into
/// `out` and returns the context: those bytes were already checked and
/// decoded, and re-parsing them was half the cost of an embedded row.
fn splice_known_context(
    line: &[u8],
    interner: &Interner,
    out: &mut Vec<u8>,
) -> Option<Arc<CorrelationContext>> {
    if interner.raw_contexts.is_empty() {
        return None;
    }
    static CONTEXT_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"context\""));
    CONTEXT_KEY.find(line)?;
    let start = top_level_value(line, b"\"context\"")?;
    let (raw, context) = interner.raw_contexts.iter().find(|(raw, _)| line[start..].starts_with(raw))?;
    out.clear();
    out.extend_from_slice(&line[..start]);
    out.extend_from_slice(b"null");
    out.extend_from_slice(&line[start + raw.len()..]);
    Some(Arc::clone(context))
}

/// Keeps the text of `line`'s top-level `context` object for
/// [`splice_known_context`]; `line` decoded to `context`.
fn remember_context(line: &[u8], context: &Arc<CorrelationContext>, interner: &mut Interner) {
    let Some(start) = top_level_value(line, b"\"context\"") else {
        return;
    };
    if let Some(end) = object_end(line, start) {
        let known = &mut interner.raw_contexts;
        known.retain(|(_, value)| !Arc::ptr_eq(value, context));
        known.truncate(RAW_CONTEXTS - 1);
        known.insert(0, (line[start..end].to_vec(), Arc::clone(context)));
    }
}

/// Where the value of the top-level member `key` (quoted, unescaped) starts
/// in a JSON object's text: nesting and strings are tracked, so a nested
/// member or a string holding the same characters never matches. `None`
/// when absent or when the text is too malformed to tell (the full parse
/// then decides).
fn top_level_value(text: &[u8], key: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = 0;
    while at < text.len() {
        match text[at] {
            b'"' => {
                let start = at;
                at = string_end(text, at)?;
                if depth == 1 && &text[start..at] == key {
                    let mut next = skip_space(text, at);
                    if text.get(next) == Some(&b':') {
                        next = skip_space(text, next + 1);
                        return Some(next);
                    }
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            _ => {}
        }
        at += 1;
    }
    None
}

/// The index just past the string that starts at `start` (a `"`).
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    loop {
        at += memchr::memchr2(b'"', b'\\', text.get(at..)?)?;
        if text[at] == b'\\' {
            at += 2;
        } else {
            return Some(at + 1);
        }
    }
}

fn skip_space(text: &[u8], mut at: usize) -> usize {
    while matches!(text.get(at), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        at += 1;
    }
    at
}

/// The index just past the object that starts at `start` (a `{`).
fn object_end(text: &[u8], start: usize) -> Option<usize> {
    if text.get(start) != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    let mut at = start;
    while at < text.len() {
        match text[at] {
            b'"' => {
                at = string_end(text, at)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

fn decode_text(
    line: &[u8],
    line_number: u64,
    registry: &Registry,
    interner: &mut Interner,
    known_context: Option<Arc<CorrelationContext>>,
) -> Option<(InferenceRecord, bool)> {
    // One UTF-8 check of the whole line is cheaper than serde_json's check
    // of each string that `from_slice` does.
    let text = std::str::from_utf8(line).ok()?;
    let mut row: RawRow<'_> = serde_json::from_str(text).ok()?;
    let event_type = match row.event_type.take() {
        Field::Present(text) => EventType::parse(&text.0).ok()?,
        _ => return None,
    };
    let Field::Present(version) = row.schema_version.take() else {
        return None;
    };
    let metadata = match row.metadata.take() {
        Field::Absent => Map::new(),
        Field::Present(map) => map,
        Field::Null => return None,
    };
    let intervals = match metadata.get("intervals") {
        _ if event_type != EventType::ActivityRef => None,
        None => None,
        Some(Value::Null) => Some(true),
        Some(_) => Some(false),
    };
    let declared = if intervals.is_some() { 3 } else { 2 };
    let context = match (version, row.context_id.take(), row.context.take(), known_context) {
        (4, Field::Present(id), Field::Absent, None) => {
            // v4 cannot carry null intervals: the exact path says so.
            if intervals == Some(true) {
                return None;
            }
            Arc::clone(registry.lookup(&id.0, line_number)?)
        }
        (2 | 3, Field::Absent, Field::Present(raw), None) if version == declared => intern(raw, interner)?,
        // The `null` spliced in for a context already decoded.
        (2 | 3, Field::Absent, Field::Null, Some(known)) if version == declared => known,
        _ => return None,
    };
    let event_id = required_string(row.event_id.take())?;
    let body = body(event_type, &mut row)?;
    if !row.all_taken() {
        return None;
    }
    let event = CorrelationEvent::new(context, event_id, Metadata::new(metadata), body).ok()?;
    Some((InferenceRecord::Event(event), version == 4))
}

fn body(event_type: EventType, row: &mut RawRow<'_>) -> Option<EventBody> {
    Some(match event_type {
        EventType::Artifact => EventBody::Artifact(ArtifactIdentity {
            artifact_kind: required_string(row.artifact_kind.take())?,
            created_at_ns: required(row.created_at_ns.take())?,
        }),
        EventType::Request => EventBody::Request(Request {
            request_ref: required_ref(row.request_ref.take())?,
            attempt_ref: optional_ref(row.attempt_ref.take())?,
            backend_request_ref: optional_ref(row.backend_request_ref.take())?,
            span: span(row.start_ns.take(), row.end_ns.take())?,
            status: optional_string(row.status.take())?,
            tokens: tokens(row)?,
        }),
        EventType::Iteration => EventBody::Iteration(Iteration {
            iteration_ref: required_ref(row.iteration_ref.take())?,
            batch_ref: optional_ref(row.batch_ref.take())?,
            span: span(row.start_ns.take(), row.end_ns.take())?,
        }),
        EventType::Stage => EventBody::Stage(Stage {
            stage_ref: required_ref(row.stage_ref.take())?,
            name: required_string(row.name.take())?,
            request_ref: optional_ref(row.request_ref.take())?,
            iteration_ref: optional_ref(row.iteration_ref.take())?,
            span: span(row.start_ns.take(), row.end_ns.take())?,
            tokens: tokens(row)?,
        }),
        EventType::Membership => EventBody::Membership(Membership {
            request_ref: required_ref(row.request_ref.take())?,
            iteration_ref: required_ref(row.iteration_ref.take())?,
            role: required_string(row.role.take())?,
            attempt_ref: optional_ref(row.attempt_ref.take())?,
            tokens: tokens(row)?,
        }),
        EventType::ActivityRef => {
            let linked = match row.attribution_status.take() {
                Field::Present(Text(status)) if status == "linked" => true,
                Field::Present(Text(status)) if status == "unresolved" => false,
                _ => return None,
            };
            let activity_domain = match row.activity_domain.take() {
                Field::Absent => ActivityDomain::Unknown,
                Field::Present(text) => ActivityDomain::parse(&text.0).ok()?,
                Field::Null => return None,
            };
            let iteration_ref = optional_ref(row.iteration_ref.take())?;
            if iteration_ref.is_some() != linked {
                return None;
            }
            EventBody::ActivityRef(ActivityRef {
                activity_ref: required_ref(row.activity_ref.take())?,
                activity_kind: required_string(row.activity_kind.take())?,
                activity_domain,
                iteration_ref,
                correlation_scope: optional_ref(row.correlation_scope.take())?,
                trace_attachment_id: optional_string(row.trace_attachment_id.take())?,
                runtime_correlation_id: optional(row.runtime_correlation_id.take())?,
                cuda_correlation_id: optional(row.cuda_correlation_id.take())?,
                stream_id: optional(row.stream_id.take())?,
                graph_id: optional(row.graph_id.take())?,
                span: span(row.start_ns.take(), row.end_ns.take())?,
            })
        }
        EventType::Capabilities => EventBody::Capabilities(
            Capabilities::new(
                required_string(row.component.take())?,
                required(row.available.take())?,
                names(row.supported.take())?,
                names(row.enabled.take())?,
                names(row.collected.take())?,
            )
            .ok()?,
        ),
        EventType::ClockAlignment => EventBody::ClockAlignment(ClockAlignment {
            from_clock_domain: required_string(row.from_clock_domain.take())?,
            to_clock_domain: required_string(row.to_clock_domain.take())?,
            offset_ns: required(row.offset_ns.take())?,
            uncertainty_ns: required(row.uncertainty_ns.take())?,
            validity: span(row.valid_from_ns.take(), row.valid_to_ns.take())?,
        }),
    })
}

// Each helper returns `None` when the exact path must decide, and
// `Some(None)` for an optional field that is absent or null.

fn required<T>(field: Field<T>) -> Option<T> {
    match field {
        Field::Present(value) => Some(value),
        _ => None,
    }
}

fn optional<T>(field: Field<T>) -> Option<Option<T>> {
    match field {
        Field::Present(value) => Some(Some(value)),
        _ => Some(None),
    }
}

fn required_string(field: Field<String>) -> Option<NonEmptyString> {
    NonEmptyString::new(required(field)?).ok()
}

fn optional_string(field: Field<String>) -> Option<Option<NonEmptyString>> {
    match field {
        Field::Present(text) => NonEmptyString::new(text).ok().map(Some),
        _ => Some(None),
    }
}

fn to_ref(mut raw: RawRef<'_>) -> Option<EntityRef> {
    let producer = required_string(raw.producer_id.take())?;
    let id = required_string(raw.id.take())?;
    raw.all_taken().then(|| EntityRef::from_parts(producer, id))
}

fn required_ref(field: Field<RawRef<'_>>) -> Option<EntityRef> {
    to_ref(required(field)?)
}

fn optional_ref(field: Field<RawRef<'_>>) -> Option<Option<EntityRef>> {
    match field {
        Field::Present(raw) => to_ref(raw).map(Some),
        _ => Some(None),
    }
}

fn span(start: Field<u64>, end: Field<u64>) -> Option<Span> {
    Span::new(optional(start)?, optional(end)?).ok()
}

fn tokens(row: &mut RawRow<'_>) -> Option<TokenCounts> {
    Some(TokenCounts {
        input_tokens: optional(row.input_tokens.take())?,
        output_tokens: optional(row.output_tokens.take())?,
        kv_bytes: optional(row.kv_bytes.take())?,
    })
}

fn names(field: Field<Vec<String>>) -> Option<Vec<NonEmptyString>> {
    match field {
        Field::Absent => Some(Vec::new()),
        Field::Null => None,
        Field::Present(items) => items.into_iter().map(|item| NonEmptyString::new(item).ok()).collect(),
    }
}

/// Whether a raw context equals a known one, field by field. A match proves
/// the raw context valid, since the known one is.
fn same_context(raw: &RawContext<'_>, known: &CorrelationContext) -> bool {
    fn text(field: &Field<Text<'_>>, known: &str) -> bool {
        matches!(field, Field::Present(Text(value)) if value == known)
    }
    fn optional_text(field: &Field<Text<'_>>, known: &Option<NonEmptyString>) -> bool {
        match (field, known) {
            (Field::Present(Text(value)), Some(known)) => value == known.as_str(),
            (Field::Absent | Field::Null, None) => true,
            _ => false,
        }
    }
    fn number(field: &Field<u64>, known: Option<u64>) -> bool {
        match (field, known) {
            (Field::Present(value), Some(known)) => *value == known,
            (Field::Absent | Field::Null, None) => true,
            _ => false,
        }
    }
    text(&raw.run_id, &known.run_id)
        && text(&raw.session_id, &known.session_id)
        && text(&raw.producer_id, &known.producer_id)
        && text(&raw.source, &known.source)
        && text(&raw.clock_domain, &known.clock_domain)
        && text(&raw.clock_kind, known.clock_kind.as_str())
        && text(&raw.collection_mode, known.collection_mode.as_str())
        && text(&raw.provenance, known.provenance.as_str())
        && optional_text(&raw.source_version, &known.source_version)
        && optional_text(&raw.engine, &known.engine)
        && optional_text(&raw.engine_version, &known.engine_version)
        && optional_text(&raw.backend, &known.backend)
        && optional_text(&raw.backend_version, &known.backend_version)
        && optional_text(&raw.host, &known.host)
        && number(&raw.pid, known.pid)
        && optional_text(&raw.device_uuid, &known.device_uuid)
        && number(&raw.rank, known.rank)
        && number(&raw.local_rank, known.local_rank)
        && number(&raw.world_size, known.world_size.map(NonZeroU64::get))
}

fn intern(raw: RawContext<'_>, interner: &mut Interner) -> Option<Arc<CorrelationContext>> {
    if let Some(known) = interner.find_recent(|known| same_context(&raw, known)) {
        return Some(known);
    }
    Some(interner.intern(build_context(raw)?))
}

fn build_context(mut raw: RawContext<'_>) -> Option<CorrelationContext> {
    fn text(field: Field<Text<'_>>) -> Option<NonEmptyString> {
        NonEmptyString::new(required(field)?.0.into_owned()).ok()
    }
    fn optional_text(field: Field<Text<'_>>) -> Option<Option<NonEmptyString>> {
        match field {
            Field::Present(Text(value)) => NonEmptyString::new(value.into_owned()).ok().map(Some),
            _ => Some(None),
        }
    }
    let mut context = CorrelationContext::new(
        text(raw.run_id.take())?,
        text(raw.session_id.take())?,
        text(raw.producer_id.take())?,
        text(raw.source.take())?,
        text(raw.clock_domain.take())?,
        ClockKind::parse(&required(raw.clock_kind.take())?.0).ok()?,
        CollectionMode::parse(&required(raw.collection_mode.take())?.0).ok()?,
        Provenance::parse(&required(raw.provenance.take())?.0).ok()?,
    );
    context.source_version = optional_text(raw.source_version.take())?;
    context.engine = optional_text(raw.engine.take())?;
    context.engine_version = optional_text(raw.engine_version.take())?;
    context.backend = optional_text(raw.backend.take())?;
    context.backend_version = optional_text(raw.backend_version.take())?;
    context.host = optional_text(raw.host.take())?;
    context.pid = optional(raw.pid.take())?;
    context.device_uuid = optional_text(raw.device_uuid.take())?;
    context.rank = optional(raw.rank.take())?;
    context.local_rank = optional(raw.local_rank.take())?;
    context.world_size = match raw.world_size.take() {
        Field::Present(size) => Some(NonZeroU64::new(size)?),
        _ => None,
    };
    raw.all_taken().then_some(context)
}
