//! Embedded JSON records (schema 1, 2 and 3) to events and back, with
//! stormlog's `parse_inference_record` rules.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::event::{
    ACTIVITY_INTERVALS_SCHEMA_VERSION, CONTEXT_REFERENCE_SCHEMA_VERSION, CORRELATION_SCHEMA_VERSION,
};
use crate::fields::{Fields, json_integer};
use crate::schema;
use crate::{
    ActivityDomain, ActivityRef, ArtifactIdentity, Capabilities, ClockAlignment, CorrelationContext,
    CorrelationEvent, EntityRef, EventBody, EventType, InferenceRecord, Iteration, LegacyRecord, Membership,
    Metadata, NonEmptyString, Request, Span, Stage, TokenCounts, ValidationError,
};

/// The `schema_version` of a record: 1 when absent, an error when not an
/// integer (booleans included).
pub fn record_schema_version(record: &Map<String, Value>) -> Result<i128, ValidationError> {
    match record.get("schema_version") {
        None => Ok(1),
        Some(value) => json_integer(value)
            .ok_or_else(|| ValidationError::new("schema_version", "schema_version must be an integer")),
    }
}

/// Parses one embedded record (schema 1, 2 or 3), as stormlog's
/// `parse_inference_record` does: v1 records are kept opaque, v2/v3 records
/// are validated completely. A v4 row needs its artifact's context
/// definitions; `tally-artifact` expands it first.
///
/// ```
/// use serde_json::json;
/// use tally_core::{parse_inference_record, EventType};
/// let record = json!({
///     "schema_version": 2, "event_type": "infer.iteration", "event_id": "e1",
///     "context": {"run_id": "r", "session_id": "s", "producer_id": "p", "source": "t",
///                 "clock_domain": "host", "clock_kind": "monotonic",
///                 "collection_mode": "active", "provenance": "observed"},
///     "iteration_ref": {"producer_id": "p", "id": "it-1"},
///     "start_ns": 100, "end_ns": 250
/// });
/// let event = parse_inference_record(record).unwrap();
/// assert_eq!(event.as_event().unwrap().event_type(), EventType::Iteration);
/// assert_eq!(event.as_event().unwrap().elapsed_ns(), Some(150));
/// ```
pub fn parse_inference_record(record: Value) -> Result<InferenceRecord, ValidationError> {
    let Value::Object(record) = record else {
        return Err(ValidationError::new("record", "record must be an object"));
    };
    parse_record_map(record, |map| {
        let context = map.remove("context").unwrap_or(Value::Null);
        CorrelationContext::from_json(context).map(Arc::new)
    })
}

/// Like [`parse_inference_record`], with the context supplied by the caller
/// (a reader that interns contexts, or a v4 decoder); `context_of` receives
/// the record and must remove and return its context.
pub fn parse_record_map(
    mut record: Map<String, Value>,
    context_of: impl FnOnce(&mut Map<String, Value>) -> Result<Arc<CorrelationContext>, ValidationError>,
) -> Result<InferenceRecord, ValidationError> {
    let version = record_schema_version(&record)?;
    if version == i128::from(CONTEXT_REFERENCE_SCHEMA_VERSION) {
        return Err(ValidationError::new(
            "schema_version",
            "v4 requires load_inference_artifact or a sequence decoder",
        ));
    }
    let event_type = match record.get("event_type") {
        Some(Value::String(text)) if text.starts_with("infer.") => text.clone(),
        _ => return Err(ValidationError::new("event_type", "event_type must name an inference event")),
    };
    if version == 1 {
        return Ok(InferenceRecord::Legacy(LegacyRecord::new(record)));
    }
    let allowed: &[i128] = if event_type == EventType::ActivityRef.as_str() {
        &[CORRELATION_SCHEMA_VERSION as i128, ACTIVITY_INTERVALS_SCHEMA_VERSION as i128]
    } else {
        &[CORRELATION_SCHEMA_VERSION as i128]
    };
    if !allowed.contains(&version) {
        return Err(ValidationError::new(
            "schema_version",
            format!("unsupported inference schema_version: {version}"),
        ));
    }
    let event_type = EventType::parse(&event_type).map_err(|_| {
        ValidationError::new(
            "event_type",
            format!("unsupported inference event_type: {}", crate::shown(&event_type)),
        )
    })?;
    record.remove("schema_version");
    record.remove("event_type");
    if !matches!(record.get("context"), Some(Value::Object(_))) {
        return Err(ValidationError::new("context", "context must be an object"));
    }
    let context = context_of(&mut record)?;
    check_reference_fields(&record)?;
    let event = parse_event(event_type, context, record)?;
    check_declared_version(&event, version)?;
    Ok(InferenceRecord::Event(event))
}

/// Every reference field stormlog knows, in the order its
/// `_parse_ref_fields` reads them.
const REFERENCE_FIELDS: [&str; 8] = [
    "request_ref",
    "attempt_ref",
    "backend_request_ref",
    "iteration_ref",
    "batch_ref",
    "stage_ref",
    "activity_ref",
    "correlation_scope",
];

/// stormlog turns every reference field of a record into an `EntityRef`
/// before it builds the event, whatever the event type, so a malformed
/// reference is reported before any other field, and before a field the
/// event type does not have is refused.
fn check_reference_fields(record: &Map<String, Value>) -> Result<(), ValidationError> {
    for name in REFERENCE_FIELDS {
        match record.get(name) {
            None | Some(Value::Null) => {}
            Some(value) => {
                EntityRef::from_json(value.clone(), name)?;
            }
        }
    }
    Ok(())
}

fn check_declared_version(event: &CorrelationEvent, version: i128) -> Result<(), ValidationError> {
    let actual = event.schema_version();
    if i128::from(actual) == version {
        return Ok(());
    }
    let event_type = event.event_type();
    let message = if version == i128::from(ACTIVITY_INTERVALS_SCHEMA_VERSION) {
        format!("{event_type} schema_version {version} requires metadata.intervals")
    } else {
        format!("{event_type} with metadata.intervals requires schema_version {actual}")
    };
    Err(ValidationError::new("schema_version", message))
}

fn tokens(fields: &mut Fields) -> Result<TokenCounts, ValidationError> {
    Ok(TokenCounts {
        input_tokens: fields.optional_u64("input_tokens")?,
        output_tokens: fields.optional_u64("output_tokens")?,
        kv_bytes: fields.optional_u64("kv_bytes")?,
    })
}

fn span(fields: &mut Fields, start: &'static str, end: &'static str) -> Result<Span, ValidationError> {
    let start_ns = fields.optional_u64(start)?;
    let end_ns = fields.optional_u64(end)?;
    Span::new(start_ns, end_ns)
}

/// A clock alignment's validity window. stormlog checks it with the same
/// `_span` as every other span, so its messages name `start_ns` and
/// `end_ns`, not `valid_from_ns` and `valid_to_ns`; tally says what it says.
fn validity(fields: &mut Fields) -> Result<Span, ValidationError> {
    let start_ns = fields.optional_u64_shown_as("valid_from_ns", "start_ns")?;
    let end_ns = fields.optional_u64_shown_as("valid_to_ns", "end_ns")?;
    Span::new(start_ns, end_ns)
}

fn parse_event(
    event_type: EventType,
    context: Arc<CorrelationContext>,
    record: Map<String, Value>,
) -> Result<CorrelationEvent, ValidationError> {
    let mut fields = Fields::new(record);
    let event_id = fields.required_string("event_id")?;
    let metadata = match fields.take("metadata") {
        None => Metadata::default(),
        Some(Value::Object(map)) => Metadata::new(map),
        Some(_) => return Err(ValidationError::new("metadata", "metadata must be an object")),
    };
    let body = parse_body(event_type, &mut fields)?;
    fields.finish(event_type.as_str())?;
    CorrelationEvent::new(context, event_id, metadata, body)
}

/// The body of an `event_type` record, its members taken from `fields`.
pub(crate) fn parse_body(event_type: EventType, fields: &mut Fields) -> Result<EventBody, ValidationError> {
    Ok(match event_type {
        EventType::Artifact => EventBody::Artifact(ArtifactIdentity {
            artifact_kind: fields.required_string("artifact_kind")?,
            created_at_ns: fields.required_u64("created_at_ns")?,
        }),
        EventType::Request => EventBody::Request(Request {
            request_ref: fields.required_ref("request_ref")?,
            attempt_ref: fields.optional_ref("attempt_ref")?,
            backend_request_ref: fields.optional_ref("backend_request_ref")?,
            span: span(fields, "start_ns", "end_ns")?,
            status: fields.optional_string("status")?,
            tokens: tokens(fields)?,
        }),
        EventType::Iteration => EventBody::Iteration(Iteration {
            iteration_ref: fields.required_ref("iteration_ref")?,
            batch_ref: fields.optional_ref("batch_ref")?,
            span: span(fields, "start_ns", "end_ns")?,
        }),
        EventType::Stage => EventBody::Stage(Stage {
            stage_ref: fields.required_ref("stage_ref")?,
            name: fields.required_string("name")?,
            request_ref: fields.optional_ref("request_ref")?,
            iteration_ref: fields.optional_ref("iteration_ref")?,
            span: span(fields, "start_ns", "end_ns")?,
            tokens: tokens(fields)?,
        }),
        EventType::Membership => EventBody::Membership(Membership {
            request_ref: fields.required_ref("request_ref")?,
            iteration_ref: fields.required_ref("iteration_ref")?,
            role: fields.required_string("role")?,
            attempt_ref: fields.optional_ref("attempt_ref")?,
            tokens: tokens(fields)?,
        }),
        EventType::ActivityRef => EventBody::ActivityRef(parse_activity(fields)?),
        EventType::Capabilities => {
            let component = fields.required_string("component")?;
            let available = fields.required_bool("available")?;
            let supported = fields.name_list("supported")?;
            let enabled = fields.name_list("enabled")?;
            let collected = fields.name_list("collected")?;
            EventBody::Capabilities(Capabilities::new(component, available, supported, enabled, collected)?)
        }
        EventType::ClockAlignment => EventBody::ClockAlignment(ClockAlignment {
            from_clock_domain: fields.required_string("from_clock_domain")?,
            to_clock_domain: fields.required_string("to_clock_domain")?,
            offset_ns: fields.required_i64("offset_ns")?,
            uncertainty_ns: fields.required_u64("uncertainty_ns")?,
            validity: validity(fields)?,
        }),
    })
}

fn parse_activity(fields: &mut Fields) -> Result<ActivityRef, ValidationError> {
    let activity_ref = fields.required_ref("activity_ref")?;
    let activity_kind = fields.required_string("activity_kind")?;
    // stormlog's order: the domain before the attribution status.
    let activity_domain = ActivityDomain::from_index(fields.defaulted_choice(
        "activity_domain",
        &["gpu", "runtime", "cpu", "unknown"],
        3,
        "activity_domain must be gpu, runtime, cpu, or unknown",
    )?);
    let linked = fields.required_choice(
        "attribution_status",
        &["unresolved", "linked"],
        "attribution_status must be linked or unresolved",
    )? == 1;
    let iteration_ref = fields.optional_ref("iteration_ref")?;
    if iteration_ref.is_some() != linked {
        return Err(ValidationError::new(
            "attribution_status",
            "attribution_status must match the iteration link",
        ));
    }
    let correlation_scope = fields.optional_ref("correlation_scope")?;
    Ok(ActivityRef {
        activity_ref,
        activity_kind,
        activity_domain,
        iteration_ref,
        correlation_scope,
        trace_attachment_id: fields.optional_string("trace_attachment_id")?,
        runtime_correlation_id: fields.optional_u64("runtime_correlation_id")?,
        cuda_correlation_id: fields.optional_u64("cuda_correlation_id")?,
        stream_id: fields.optional_u64("stream_id")?,
        graph_id: fields.optional_u64("graph_id")?,
        span: span(fields, "start_ns", "end_ns")?,
    })
}

/// One member's value in an event's record form, borrowed from the event:
/// what [`CorrelationEvent::to_record`] holds under that key, without
/// building it. A writer reads these to write the record's JSON straight
/// from the event ([`CorrelationEvent::for_each_record_member`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RecordMember<'a> {
    /// `null`: an absent optional value.
    Null,
    /// A boolean.
    Bool(bool),
    /// A non-negative integer.
    Unsigned(u64),
    /// A signed integer.
    Signed(i64),
    /// A string.
    Text(&'a str),
    /// An entity reference: `{"id": ..., "producer_id": ...}`.
    Ref(&'a EntityRef),
    /// The event's context, embedded ([`CorrelationContext::to_json`]).
    Context(&'a Arc<CorrelationContext>),
    /// A list of names.
    Names(&'a [NonEmptyString]),
    /// The event's metadata object.
    Metadata(&'a Map<String, Value>),
}

impl RecordMember<'_> {
    /// The member as a JSON value, as the record map holds it.
    pub fn to_json(self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(value) => Value::Bool(value),
            Self::Unsigned(value) => Value::from(value),
            Self::Signed(value) => Value::from(value),
            Self::Text(text) => Value::String(text.to_owned()),
            Self::Ref(reference) => reference.to_json(),
            Self::Context(context) => context.to_json(),
            Self::Names(names) => {
                Value::Array(names.iter().map(|name| Value::String(name.to_string())).collect())
            }
            Self::Metadata(map) => Value::Object(map.clone()),
        }
    }
}

/// The members of `event`'s record form, each with its key, in the order of
/// their keys by code point: the order of `json.dumps(sort_keys=True)`, so
/// that a writer can write them as they come. Which members each type has
/// is the schema's ([`crate::schema::members`]; tally-artifact's
/// `direct_lines_are_the_record_maps_lines` holds the order: its map writer
/// sorts, the direct one does not).
pub(crate) fn for_each_record_member<'e>(
    event: &'e CorrelationEvent,
    mut put: impl FnMut(&'static str, RecordMember<'e>),
) {
    let own = schema::values(event.body());
    // In the order of `schema::EVERY`.
    let every = [
        RecordMember::Context(event.context_arc()),
        RecordMember::Text(event.event_id().as_str()),
        RecordMember::Text(event.event_type().as_str()),
        RecordMember::Metadata(event.metadata().as_map()),
        RecordMember::Unsigned(u64::from(event.schema_version())),
    ];
    for &(key, at) in schema::record_order(event.event_type()) {
        put(key, if at < schema::MOST { own[at] } else { every[at - schema::MOST] });
    }
}

pub(crate) fn event_to_record(event: &CorrelationEvent) -> Map<String, Value> {
    let mut record = Map::new();
    for_each_record_member(event, |key, member| {
        record.insert(key.to_owned(), member.to_json());
    });
    record
}
