//! The eight correlation event types and the legacy record.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::context::string_enum;
use crate::{
    CorrelationContext, EntityRef, EventType, Interval, NonEmptyString, RecordMember, Span, ValidationError,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Schema version of embedded correlation records.
pub const CORRELATION_SCHEMA_VERSION: u32 = 2;
/// Schema version of an activity whose `metadata.intervals` list its busy time.
pub const ACTIVITY_INTERVALS_SCHEMA_VERSION: u32 = 3;
/// Schema version of artifact rows that reference an interned context.
pub const CONTEXT_REFERENCE_SCHEMA_VERSION: u32 = 4;

string_enum!(
    /// Where an activity ran.
    ActivityDomain, "activity_domain", "activity_domain must be gpu, runtime, cpu, or unknown", {
        /// Device work: kernels, copies, sets. Only these count as GPU time.
        Gpu = "gpu",
        /// Runtime or driver calls on the host (launches).
        Runtime = "runtime",
        /// Host CPU work.
        Cpu = "cpu",
        /// Not stated.
        Unknown = "unknown",
    }
);

/// The JSON object of an event's `metadata`, compared as Python compares it.
#[derive(Debug, Clone, Default)]
pub struct Metadata(Map<String, Value>);

impl Metadata {
    /// Wraps a JSON object.
    pub fn new(map: Map<String, Value>) -> Self {
        Self(map)
    }

    /// The object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// One key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Whether `key` is present (even with `null`).
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Gives the object back.
    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }
}

impl PartialEq for Metadata {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().all(|(key, value)| {
                other.0.get(key).is_some_and(|theirs| tally_utils::json_eq::python_json_eq(value, theirs))
            })
    }
}

impl Eq for Metadata {}

impl From<Map<String, Value>> for Metadata {
    fn from(map: Map<String, Value>) -> Self {
        Self(map)
    }
}

/// `infer.artifact`: names the artifact and when it was created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactIdentity {
    /// What the artifact holds, e.g. `inference_correlation`.
    pub artifact_kind: NonEmptyString,
    /// Creation time in wall-clock nanoseconds.
    pub created_at_ns: u64,
}

/// Token and cache counts a request, stage or membership may report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    /// Prompt tokens.
    pub input_tokens: Option<u64>,
    /// Generated tokens.
    pub output_tokens: Option<u64>,
    /// KV-cache bytes.
    pub kv_bytes: Option<u64>,
}

/// `infer.request`: one logical request; attempts are separate identities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The request.
    pub request_ref: EntityRef,
    /// The attempt, when the request was retried.
    pub attempt_ref: Option<EntityRef>,
    /// The engine's own ID for it.
    pub backend_request_ref: Option<EntityRef>,
    /// When it started and ended.
    pub span: Span,
    /// Outcome, e.g. `ok`.
    pub status: Option<NonEmptyString>,
    /// Token counts.
    pub tokens: TokenCounts,
}

/// `infer.iteration`: one engine iteration, recorded once for all members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iteration {
    /// The iteration.
    pub iteration_ref: EntityRef,
    /// The batch it ran.
    pub batch_ref: Option<EntityRef>,
    /// When it started and ended.
    pub span: Span,
}

/// `infer.stage`: a named stage of a request, an iteration, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// The stage.
    pub stage_ref: EntityRef,
    /// Its name, e.g. `prefill`.
    pub name: NonEmptyString,
    /// The request it belongs to.
    pub request_ref: Option<EntityRef>,
    /// The iteration it belongs to.
    pub iteration_ref: Option<EntityRef>,
    /// When it started and ended.
    pub span: Span,
    /// Token counts.
    pub tokens: TokenCounts,
}

/// `infer.membership`: one request's role in one shared iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// The member request.
    pub request_ref: EntityRef,
    /// The iteration.
    pub iteration_ref: EntityRef,
    /// Its role, e.g. `decode`.
    pub role: NonEmptyString,
    /// The attempt, when known.
    pub attempt_ref: Option<EntityRef>,
    /// Token counts.
    pub tokens: TokenCounts,
}

/// `infer.activity_ref`: a trace activity and its optional iteration link.
///
/// The attribution status is not stored: it is `linked` exactly when
/// `iteration_ref` is present, so a contradiction cannot be represented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityRef {
    /// The activity.
    pub activity_ref: EntityRef,
    /// What it is, e.g. `kernel`.
    pub activity_kind: NonEmptyString,
    /// Where it ran.
    pub activity_domain: ActivityDomain,
    /// The iteration it is attributed to.
    pub iteration_ref: Option<EntityRef>,
    /// Scope in which the correlation IDs are unique.
    pub correlation_scope: Option<EntityRef>,
    /// The trace file it came from.
    pub trace_attachment_id: Option<NonEmptyString>,
    /// Runtime correlation ID.
    pub runtime_correlation_id: Option<u64>,
    /// CUDA (CUPTI) correlation ID.
    pub cuda_correlation_id: Option<u64>,
    /// Stream.
    pub stream_id: Option<u64>,
    /// CUDA graph.
    pub graph_id: Option<u64>,
    /// When it started and ended.
    pub span: Span,
}

impl ActivityRef {
    /// `linked` or `unresolved`, as written in `attribution_status`.
    pub fn attribution_status(&self) -> &'static str {
        attribution_status(self.iteration_ref.as_ref())
    }
}

/// The rule of `attribution_status`: `linked` when the activity names an
/// iteration. The record writer reads it from the schema's path to the
/// iteration reference, so it is stated here once for both.
pub(crate) fn attribution_status(iteration_ref: Option<&EntityRef>) -> &'static str {
    if iteration_ref.is_some() { "linked" } else { "unresolved" }
}

/// `infer.capabilities`: availability and outcome of one capture component.
///
/// Invariant: collected ⊆ enabled ⊆ supported, no duplicates, and all empty
/// when unavailable; hence private fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    pub(crate) component: NonEmptyString,
    pub(crate) available: bool,
    pub(crate) supported: Vec<NonEmptyString>,
    pub(crate) enabled: Vec<NonEmptyString>,
    pub(crate) collected: Vec<NonEmptyString>,
}

impl Capabilities {
    /// Validates the subset and availability rules.
    pub fn new(
        component: NonEmptyString,
        available: bool,
        supported: Vec<NonEmptyString>,
        enabled: Vec<NonEmptyString>,
        collected: Vec<NonEmptyString>,
    ) -> Result<Self, ValidationError> {
        for (name, list) in [("supported", &supported), ("enabled", &enabled), ("collected", &collected)] {
            let mut sorted: Vec<&NonEmptyString> = list.iter().collect();
            sorted.sort_unstable();
            if sorted.windows(2).any(|pair| pair[0] == pair[1]) {
                return Err(ValidationError::new(name, format!("{name} must not contain duplicates")));
            }
        }
        let subset = |small: &[NonEmptyString], large: &[NonEmptyString]| {
            small.iter().all(|item| large.contains(item))
        };
        if !subset(&collected, &enabled) || !subset(&enabled, &supported) {
            return Err(ValidationError::new(
                "collected",
                "collected must be enabled and enabled must be supported",
            ));
        }
        let reports_any = !(supported.is_empty() && enabled.is_empty() && collected.is_empty());
        if !available && reports_any {
            return Err(ValidationError::new(
                "available",
                "unavailable components cannot report capabilities",
            ));
        }
        Ok(Self { component, available, supported, enabled, collected })
    }

    /// The component, e.g. `cupti`.
    pub fn component(&self) -> &NonEmptyString {
        &self.component
    }
    /// Whether it could run at all.
    pub fn available(&self) -> bool {
        self.available
    }
    /// What it supports.
    pub fn supported(&self) -> &[NonEmptyString] {
        &self.supported
    }
    /// What was switched on.
    pub fn enabled(&self) -> &[NonEmptyString] {
        &self.enabled
    }
    /// What was actually collected.
    pub fn collected(&self) -> &[NonEmptyString] {
        &self.collected
    }
}

/// `infer.clock_alignment`: `to = from + offset`, within `uncertainty`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockAlignment {
    /// The clock timestamps are translated from.
    pub from_clock_domain: NonEmptyString,
    /// The clock they are translated to.
    pub to_clock_domain: NonEmptyString,
    /// Offset added to a `from` timestamp; any sign.
    pub offset_ns: i64,
    /// Half-width of the interval the true offset lies in.
    pub uncertainty_ns: u64,
    /// When the alignment holds, on the `from` clock: `valid_from_ns`
    /// inclusive, `valid_to_ns` exclusive, open where absent.
    pub validity: Span,
}

/// What one event says, by type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs, reason = "each variant is the struct of the same name")]
pub enum EventBody {
    Artifact(ArtifactIdentity),
    Request(Request),
    Iteration(Iteration),
    Stage(Stage),
    Membership(Membership),
    ActivityRef(ActivityRef),
    Capabilities(Capabilities),
    ClockAlignment(ClockAlignment),
}

impl EventBody {
    /// The span, for the types that have one.
    pub fn span(&self) -> Option<&Span> {
        match self {
            EventBody::Request(body) => Some(&body.span),
            EventBody::Iteration(body) => Some(&body.span),
            EventBody::Stage(body) => Some(&body.span),
            EventBody::ActivityRef(body) => Some(&body.span),
            _ => None,
        }
    }
}

/// One validated correlation event: context, identity, metadata and body.
///
/// Immutable: every rule, including those across fields (a stage references
/// a request or an iteration; an activity's `metadata.intervals` lie sorted
/// and disjoint inside its span), is checked by [`CorrelationEvent::new`].
/// Contexts are shared: the thousands of records one producer writes hold one
/// [`CorrelationContext`].
#[derive(Debug, Clone)]
pub struct CorrelationEvent {
    context: Arc<CorrelationContext>,
    event_id: NonEmptyString,
    metadata: Metadata,
    body: EventBody,
    /// Parsed `metadata.intervals` of an activity, in absolute nanoseconds;
    /// derived from `metadata` at construction, so equality ignores it.
    intervals: Option<Box<[Interval]>>,
}

impl PartialEq for CorrelationEvent {
    fn eq(&self, other: &Self) -> bool {
        self.event_id == other.event_id && self.same_entity_as(other)
    }
}

impl Eq for CorrelationEvent {}

impl CorrelationEvent {
    /// Validates the cross-field rules and builds the event.
    pub fn new(
        context: Arc<CorrelationContext>,
        event_id: NonEmptyString,
        metadata: Metadata,
        body: EventBody,
    ) -> Result<Self, ValidationError> {
        if let EventBody::Stage(stage) = &body
            && stage.request_ref.is_none()
            && stage.iteration_ref.is_none()
        {
            return Err(ValidationError::new("request_ref", "stage must reference a request or iteration"));
        }
        let intervals = match &body {
            EventBody::ActivityRef(activity) => match metadata.get("intervals") {
                None | Some(Value::Null) => None,
                Some(raw) => Some(crate::busy_intervals::parse_busy_intervals(raw, &activity.span)?),
            },
            _ => None,
        };
        Ok(Self { context, event_id, metadata, body, intervals })
    }

    /// The capture context.
    pub fn context(&self) -> &CorrelationContext {
        &self.context
    }

    /// The shared context handle, to build sibling events cheaply.
    pub fn context_arc(&self) -> &Arc<CorrelationContext> {
        &self.context
    }

    /// The event's ID, unique per (session, producer).
    pub fn event_id(&self) -> &NonEmptyString {
        &self.event_id
    }

    /// Free-form metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// What the event says.
    pub fn body(&self) -> &EventBody {
        &self.body
    }

    /// Its type.
    pub fn event_type(&self) -> EventType {
        self.body.event_type()
    }

    /// 3 for an activity whose metadata names `intervals`, else 2.
    pub fn schema_version(&self) -> u32 {
        match self.body {
            EventBody::ActivityRef(_) if self.metadata.contains_key("intervals") => {
                ACTIVITY_INTERVALS_SCHEMA_VERSION
            }
            _ => CORRELATION_SCHEMA_VERSION,
        }
    }

    /// A duration only where it is one: a span with both ends on a monotonic
    /// clock. Wall and device spans have no unqualified duration.
    pub fn elapsed_ns(&self) -> Option<u64> {
        if self.context.clock_kind != crate::ClockKind::Monotonic {
            return None;
        }
        self.body.span()?.duration_ns()
    }

    /// The intervals in which a GPU activity kept its device busy: its
    /// `metadata.intervals` when present, else `[start, end)`; `None` for
    /// other events and for an activity without a complete span.
    pub fn busy_intervals(&self) -> Option<BusyIntervals<'_>> {
        let EventBody::ActivityRef(activity) = &self.body else {
            return None;
        };
        match &self.intervals {
            Some(list) => Some(BusyIntervals::Listed(list)),
            None => {
                let (start, end) = activity.span.bounds()?;
                // A validated span has end >= start.
                Interval::new(start, end).map(BusyIntervals::Span)
            }
        }
    }

    /// Equal apart from `event_id`: stormlog's test for two deliveries
    /// describing one entity.
    pub fn same_entity_as(&self, other: &Self) -> bool {
        (Arc::ptr_eq(&self.context, &other.context) || self.context == other.context)
            && self.body == other.body
            && self.metadata == other.metadata
    }

    /// The embedded JSON record stormlog writes for this event.
    pub fn to_record(&self) -> Map<String, Value> {
        crate::record::event_to_record(self)
    }

    /// Calls `put` with each member of [`CorrelationEvent::to_record`],
    /// borrowed from the event instead of built, in the order of the keys by
    /// code point (the order `json.dumps(sort_keys=True)` writes them in).
    ///
    /// ```
    /// use tally_core::{RecordMember, parse_inference_record};
    /// let record = serde_json::json!({
    ///     "schema_version": 2, "event_type": "infer.artifact", "event_id": "a", "metadata": {},
    ///     "artifact_kind": "inference_jsonl", "created_at_ns": 5,
    ///     "context": {"run_id": "r", "session_id": "s", "producer_id": "p", "source": "t",
    ///                 "clock_domain": "host", "clock_kind": "monotonic",
    ///                 "collection_mode": "active", "provenance": "observed"}});
    /// let event = parse_inference_record(record).unwrap().as_event().unwrap().clone();
    /// let mut keys = Vec::new();
    /// event.for_each_record_member(|key, member| {
    ///     if key == "created_at_ns" {
    ///         assert_eq!(member, RecordMember::Unsigned(5));
    ///     }
    ///     keys.push(key);
    /// });
    /// assert_eq!(keys, ["artifact_kind", "context", "created_at_ns", "event_id", "event_type",
    ///                   "metadata", "schema_version"]);
    /// ```
    pub fn for_each_record_member<'e>(&'e self, put: impl FnMut(&'static str, RecordMember<'e>)) {
        crate::record::for_each_record_member(self, put);
    }
}

/// The busy intervals of one activity, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyIntervals<'a> {
    /// The whole span.
    Span(Interval),
    /// The listed `metadata.intervals`.
    Listed(&'a [Interval]),
}

impl BusyIntervals<'_> {
    /// The intervals as a slice.
    pub fn as_slice(&self) -> &[Interval] {
        match self {
            BusyIntervals::Span(interval) => std::slice::from_ref(interval),
            BusyIntervals::Listed(list) => list,
        }
    }
}

/// A v1 record, kept exactly as read: it predates correlation and carries no
/// context.
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyRecord {
    raw: Map<String, Value>,
}

impl LegacyRecord {
    pub(crate) fn new(raw: Map<String, Value>) -> Self {
        Self { raw }
    }

    /// The record as read.
    pub fn raw(&self) -> &Map<String, Value> {
        &self.raw
    }

    /// Its `event_type`.
    pub fn event_type(&self) -> &str {
        // A legacy record is only accepted with a string event_type.
        self.raw.get("event_type").and_then(Value::as_str).unwrap_or_default()
    }
}

/// One line of an artifact: a correlation event or an opaque v1 record.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant, reason = "events dominate; boxing them costs an allocation each")]
pub enum InferenceRecord {
    /// A v2/v3 correlation event.
    Event(CorrelationEvent),
    /// A v1 record, carried unchanged.
    Legacy(LegacyRecord),
}

impl InferenceRecord {
    /// The correlation event, if this is one.
    pub fn as_event(&self) -> Option<&CorrelationEvent> {
        match self {
            InferenceRecord::Event(event) => Some(event),
            InferenceRecord::Legacy(_) => None,
        }
    }

    /// The schema version it is written with (1 for legacy records).
    pub fn schema_version(&self) -> u32 {
        match self {
            InferenceRecord::Event(event) => event.schema_version(),
            InferenceRecord::Legacy(_) => 1,
        }
    }

    /// The embedded JSON record.
    pub fn to_record(&self) -> Map<String, Value> {
        match self {
            InferenceRecord::Event(event) => event.to_record(),
            InferenceRecord::Legacy(legacy) => legacy.raw.clone(),
        }
    }
}

impl Serialize for InferenceRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_record().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for InferenceRecord {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        crate::parse_inference_record(value).map_err(serde::de::Error::custom)
    }
}

impl Serialize for CorrelationEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_record().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CorrelationEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match crate::parse_inference_record(value).map_err(serde::de::Error::custom)? {
            InferenceRecord::Event(event) => Ok(event),
            InferenceRecord::Legacy(_) => {
                Err(serde::de::Error::custom("a v1 record is not a correlation event"))
            }
        }
    }
}
