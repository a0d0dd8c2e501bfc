//! The fields of each stormlog event class over tally-core's events:
//! which fields a class has (required, optional, holding a reference), and
//! each field's value read from the Rust event.

use std::sync::LazyLock;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use tally_core::{
    ActivityRef, CorrelationEvent as CoreEvent, EntityRef as CoreRef, EventBody, EventType, NonEmptyString,
};

use crate::model::PyEntityRef;

/// One value of an event field, borrowed from the event.
pub(crate) enum FieldValue<'a> {
    Reference(Option<&'a CoreRef>),
    Count(Option<u64>),
    Signed(i64),
    Text(Option<&'a str>),
    Flag(bool),
    Names(&'a [NonEmptyString]),
}

impl FieldValue<'_> {
    pub(crate) fn to_python<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            FieldValue::Reference(Some(reference)) => PyEntityRef::wrap(py, reference)?,
            FieldValue::Reference(None) | FieldValue::Count(None) | FieldValue::Text(None) => {
                py.None().into_bound(py)
            }
            FieldValue::Count(Some(count)) => count.into_pyobject(py)?.into_any(),
            FieldValue::Signed(value) => value.into_pyobject(py)?.into_any(),
            FieldValue::Text(Some(text)) => PyString::new(py, text).into_any(),
            FieldValue::Flag(flag) => pyo3::types::PyBool::new(py, *flag).to_owned().into_any(),
            FieldValue::Names(names) => PyList::new(py, names.iter().map(|name| name.as_str()))?.into_any(),
        })
    }
}

/// The event-specific field `name` of `event`, as stormlog names it.
pub(crate) fn field<'a>(event: &'a CoreEvent, name: &str) -> Option<FieldValue<'a>> {
    use FieldValue::*;
    let text = |value: &'a Option<NonEmptyString>| Text(value.as_deref());
    Some(match (event.body(), name) {
        (EventBody::Artifact(body), "artifact_kind") => Text(Some(&body.artifact_kind)),
        (EventBody::Artifact(body), "created_at_ns") => Count(Some(body.created_at_ns)),
        (EventBody::Request(body), "request_ref") => Reference(Some(&body.request_ref)),
        (EventBody::Request(body), "attempt_ref") => Reference(body.attempt_ref.as_ref()),
        (EventBody::Request(body), "backend_request_ref") => Reference(body.backend_request_ref.as_ref()),
        (EventBody::Request(body), "status") => text(&body.status),
        (EventBody::Iteration(body), "iteration_ref") => Reference(Some(&body.iteration_ref)),
        (EventBody::Iteration(body), "batch_ref") => Reference(body.batch_ref.as_ref()),
        (EventBody::Stage(body), "stage_ref") => Reference(Some(&body.stage_ref)),
        (EventBody::Stage(body), "name") => Text(Some(&body.name)),
        (EventBody::Stage(body), "request_ref") => Reference(body.request_ref.as_ref()),
        (EventBody::Stage(body), "iteration_ref") => Reference(body.iteration_ref.as_ref()),
        (EventBody::Membership(body), "request_ref") => Reference(Some(&body.request_ref)),
        (EventBody::Membership(body), "iteration_ref") => Reference(Some(&body.iteration_ref)),
        (EventBody::Membership(body), "role") => Text(Some(&body.role)),
        (EventBody::Membership(body), "attempt_ref") => Reference(body.attempt_ref.as_ref()),
        (EventBody::ActivityRef(body), name) => return activity_field(body, name),
        (EventBody::Capabilities(body), "component") => Text(Some(body.component())),
        (EventBody::Capabilities(body), "available") => Flag(body.available()),
        (EventBody::Capabilities(body), "supported") => Names(body.supported()),
        (EventBody::Capabilities(body), "enabled") => Names(body.enabled()),
        (EventBody::Capabilities(body), "collected") => Names(body.collected()),
        (EventBody::ClockAlignment(body), "from_clock_domain") => Text(Some(&body.from_clock_domain)),
        (EventBody::ClockAlignment(body), "to_clock_domain") => Text(Some(&body.to_clock_domain)),
        (EventBody::ClockAlignment(body), "offset_ns") => Signed(body.offset_ns),
        (EventBody::ClockAlignment(body), "uncertainty_ns") => Count(Some(body.uncertainty_ns)),
        (EventBody::ClockAlignment(body), "valid_from_ns") => Count(body.validity.start_ns()),
        (EventBody::ClockAlignment(body), "valid_to_ns") => Count(body.validity.end_ns()),
        (body, "start_ns") => Count(body.span()?.start_ns()),
        (body, "end_ns") => Count(body.span()?.end_ns()),
        (EventBody::Request(body), tokens) => token_field(&body.tokens, tokens)?,
        (EventBody::Stage(body), tokens) => token_field(&body.tokens, tokens)?,
        (EventBody::Membership(body), tokens) => token_field(&body.tokens, tokens)?,
        _ => return None,
    })
}

fn token_field<'a>(tokens: &tally_core::TokenCounts, name: &str) -> Option<FieldValue<'a>> {
    Some(FieldValue::Count(match name {
        "input_tokens" => tokens.input_tokens,
        "output_tokens" => tokens.output_tokens,
        "kv_bytes" => tokens.kv_bytes,
        _ => return None,
    }))
}

fn activity_field<'a>(body: &'a ActivityRef, name: &str) -> Option<FieldValue<'a>> {
    use FieldValue::*;
    Some(match name {
        "activity_ref" => Reference(Some(&body.activity_ref)),
        "activity_kind" => Text(Some(&body.activity_kind)),
        "attribution_status" => Text(Some(body.attribution_status())),
        "activity_domain" => Text(Some(body.activity_domain.as_str())),
        "iteration_ref" => Reference(body.iteration_ref.as_ref()),
        "correlation_scope" => Reference(body.correlation_scope.as_ref()),
        "trace_attachment_id" => Text(body.trace_attachment_id.as_deref()),
        "runtime_correlation_id" => Count(body.runtime_correlation_id),
        "cuda_correlation_id" => Count(body.cuda_correlation_id),
        "stream_id" => Count(body.stream_id),
        "graph_id" => Count(body.graph_id),
        "start_ns" => Count(body.span.start_ns()),
        "end_ns" => Count(body.span.end_ns()),
        _ => return None,
    })
}

/// The stormlog fields of each event type after the common three (context,
/// event_id, metadata), in declaration order, and which are required: read
/// from the class's declaration in [`crate::dataclass::CLASSES`], the one
/// table of stormlog's fields.
pub(crate) struct EventFields {
    pub(crate) class: &'static str,
    pub(crate) required: Vec<&'static str>,
    pub(crate) optional: Vec<&'static str>,
    /// The fields holding an `EntityRef`.
    pub(crate) references: Vec<&'static str>,
}

/// Each event type and the class stormlog writes it as.
const EVENT_CLASSES: [(EventType, &str); 8] = [
    (EventType::Artifact, "ArtifactIdentityEvent"),
    (EventType::Request, "RequestEvent"),
    (EventType::Iteration, "IterationEvent"),
    (EventType::Stage, "StageEvent"),
    (EventType::Membership, "MembershipEvent"),
    (EventType::ActivityRef, "ActivityReferenceEvent"),
    (EventType::Capabilities, "CapabilityEvent"),
    (EventType::ClockAlignment, "ClockAlignmentEvent"),
];

static EVENT_FIELDS: LazyLock<Vec<(EventType, EventFields)>> = LazyLock::new(|| {
    EVENT_CLASSES
        .iter()
        .filter_map(|&(event_type, name)| {
            let class = crate::dataclass::CLASSES.iter().find(|class| class.name == name)?;
            let own = class.fields;
            let names = |keep: &dyn Fn(&crate::dataclass::Field) -> bool| {
                own.iter().filter(|field| keep(field)).map(|field| field.name).collect()
            };
            Some((
                event_type,
                EventFields {
                    class: name,
                    required: names(&|field| matches!(field.default, crate::dataclass::Default::Required)),
                    optional: names(&|field| !matches!(field.default, crate::dataclass::Default::Required)),
                    references: names(&|field| field.annotation.starts_with("EntityRef")),
                },
            ))
        })
        .collect()
});

/// The fields of `event_type`'s class.
pub(crate) fn fields_of(event_type: EventType) -> &'static EventFields {
    let found = EVENT_FIELDS.iter().find(|(known, _)| *known == event_type).map(|(_, fields)| fields);
    // EVENT_CLASSES names every event type, and each name is a class of
    // CLASSES (the dataclass tests check every class against stormlog's).
    found.expect("every event type has its class in dataclass::CLASSES")
}
