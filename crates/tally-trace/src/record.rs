//! What an import hands its sink: a record built in full, or one activity
//! described by parts borrowed from the import's tables.
//!
//! Nearly every record of a trace is one kernel, copy or memset, or one
//! runtime call. Building each as a [`CorrelationEvent`] costs a dozen
//! allocations (its IDs, references, kind and a metadata map holding the
//! kernel's name) that a resolver reads once through a view and drops. An
//! [`ImportedActivity`] keeps the parts instead: [`ImportedActivity::view`]
//! gives the view a resolver reads, with the metadata's hash computed from
//! the parts in the steps [`ContentHasher::json_map`] takes over the map,
//! and [`ImportedActivity::to_event`] the full event an artifact writer
//! needs. Both come from the one description of the metadata here, and a
//! test holds them equal on every fixture trace and on generated parts.

use std::sync::Arc;

use serde_json::{Map, Value};
use tally_core::view::{ActivityView, BodyView, EventView, MetadataDigest, RefView, activity_name_of};
use tally_core::{
    ActivityDomain, ActivityRef, CorrelationContext, CorrelationEvent, EntityRef, EventBody, Metadata,
    NonEmptyString, Span, ValidationError,
};
use tally_utils::content_hash::ContentHasher;

/// One record of an import.
#[derive(Debug)]
pub enum TraceRecord<'a> {
    /// Built in full: the artifact identity, iterations, the clock
    /// alignment, launch records holding several GPU events, the collector's
    /// capabilities.
    Event(CorrelationEvent),
    /// One GPU event or runtime call.
    Activity(ImportedActivity<'a>),
}

impl TraceRecord<'_> {
    /// What a resolver reads of the record.
    pub fn view(&self) -> EventView<'_> {
        match self {
            TraceRecord::Event(event) => event.view(),
            TraceRecord::Activity(activity) => activity.view(),
        }
    }

    /// The record as a full event.
    pub fn into_event(self) -> Result<CorrelationEvent, ValidationError> {
        match self {
            TraceRecord::Event(event) => Ok(event),
            TraceRecord::Activity(activity) => activity.to_event(),
        }
    }
}

/// A thread ID as the trace wrote it: `metadata.tid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadId<'a> {
    /// A number (almost always).
    Number(u64),
    /// A name (`"Spans"`).
    Text(&'a str),
    /// Not given.
    Unknown,
}

impl ThreadId<'_> {
    /// As JSON.
    pub(crate) fn to_json(self) -> Value {
        match self {
            ThreadId::Number(number) => Value::from(number),
            ThreadId::Text(text) => Value::from(text),
            ThreadId::Unknown => Value::Null,
        }
    }

    fn hash(self, hasher: &mut ContentHasher) {
        match self {
            ThreadId::Number(number) => hasher.json_integer(i128::from(number)),
            ThreadId::Text(text) => hasher.json_string(text),
            ThreadId::Unknown => hasher.json_null(),
        }
    }
}

/// What an imported activity's metadata says, by domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivityMetadata<'a> {
    /// One kernel, copy or memset (a launch record of one GPU event).
    Gpu {
        /// `event_count`: the GPU events of the launch record (1 for one
        /// kernel, copy or memset).
        event_count: u64,
        /// `first_name`: the (first) event's name.
        first_name: &'a str,
        /// `summed_duration_ns`: the events' summed duration.
        summed_duration_ns: u64,
        /// `device_index`: the device ordinal, `null` when the trace gives
        /// none.
        device_index: Option<u32>,
        /// `launch_api`: the runtime call that launched it, when linked.
        launch_api: Option<&'a str>,
        /// `unresolved_reason`: why it is not linked to an iteration.
        unresolved_reason: Option<&'static str>,
        /// `cuda_graph_trace: "graph"`: the record is a CUDA graph's launch
        /// traced as a whole (Nsight's per-graph tracing), spanning the
        /// graph's execution, its kernels unrecorded.
        whole_graph: bool,
    },
    /// One runtime or driver API call.
    Runtime {
        /// `name`: the API's name.
        name: &'a str,
        /// `tid`: the calling thread.
        tid: ThreadId<'a>,
        /// `unresolved_reason`: why it is not linked to an iteration.
        unresolved_reason: Option<&'static str>,
    },
}

impl ActivityMetadata<'_> {
    /// The members, in key order (the order [`ContentHasher::json_map`]
    /// hashes them in): the one description both forms are made from.
    fn members(&self, mut member: impl FnMut(&'static str, Member<'_>)) {
        match *self {
            ActivityMetadata::Gpu {
                event_count,
                first_name,
                summed_duration_ns,
                device_index,
                launch_api,
                unresolved_reason,
                whole_graph,
            } => {
                if whole_graph {
                    member("cuda_graph_trace", Member::Text("graph"));
                }
                member(
                    "device_index",
                    device_index.map_or(Member::Null, |index| Member::Integer(u64::from(index))),
                );
                member("event_count", Member::Integer(event_count));
                member("first_name", Member::Text(first_name));
                if let Some(api) = launch_api {
                    member("launch_api", Member::Text(api));
                }
                member("summed_duration_ns", Member::Integer(summed_duration_ns));
                if let Some(reason) = unresolved_reason {
                    member("unresolved_reason", Member::Text(reason));
                }
            }
            ActivityMetadata::Runtime { name, tid, unresolved_reason } => {
                member("name", Member::Text(name));
                member("tid", Member::Thread(tid));
                if let Some(reason) = unresolved_reason {
                    member("unresolved_reason", Member::Text(reason));
                }
            }
        }
    }

    fn name(&self) -> Option<&str> {
        match *self {
            ActivityMetadata::Gpu { first_name, .. } => activity_name_of(None, Some(first_name)),
            ActivityMetadata::Runtime { name, .. } => activity_name_of(Some(name), None),
        }
    }

    fn hash(&self) -> u128 {
        let mut hasher = ContentHasher::default();
        hasher.json_object_start();
        let mut len = 0;
        self.members(|key, value| {
            len += 1;
            hasher.json_key(key);
            match value {
                Member::Null => hasher.json_null(),
                Member::Integer(number) => hasher.json_integer(i128::from(number)),
                Member::Text(text) => hasher.json_string(text),
                Member::Thread(tid) => tid.hash(&mut hasher),
            }
        });
        hasher.json_object_end(len);
        hasher.finish128()
    }

    fn to_map(self) -> Map<String, Value> {
        let mut map = Map::new();
        self.members(|key, value| {
            let value = match value {
                Member::Null => Value::Null,
                Member::Integer(number) => Value::from(number),
                Member::Text(text) => Value::from(text),
                Member::Thread(tid) => tid.to_json(),
            };
            map.insert(key.into(), value);
        });
        map
    }
}

/// One metadata member's value.
#[derive(Clone, Copy)]
enum Member<'a> {
    Null,
    Integer(u64),
    Text(&'a str),
    Thread(ThreadId<'a>),
}

/// One GPU event or runtime call of an import, by its parts: an
/// `infer.activity_ref` whose activity reference is `(producer_id,
/// event_id)`.
#[derive(Debug, Clone, Copy)]
pub struct ImportedActivity<'a> {
    /// The capture context.
    pub context: &'a Arc<CorrelationContext>,
    /// The producer (the trace's), also the activity reference's.
    pub producer_id: &'a str,
    /// The event ID, also the activity reference's ID; not empty.
    pub event_id: &'a str,
    /// `gpu_kernel`, `cuda_runtime`, ...
    pub activity_kind: &'static str,
    /// GPU work or a runtime call.
    pub activity_domain: ActivityDomain,
    /// The iteration its launch falls in.
    pub iteration_ref: Option<&'a EntityRef>,
    /// The scope its CUDA correlation ID is unique in.
    pub correlation_scope: Option<&'a EntityRef>,
    /// The trace it came from; not empty.
    pub trace_attachment_id: &'a str,
    /// CUPTI's correlation ID.
    pub cuda_correlation_id: Option<u64>,
    /// The stream it ran on.
    pub stream_id: Option<u64>,
    /// The CUDA graph it belongs to.
    pub graph_id: Option<u64>,
    /// When it ran.
    pub span: Span,
    /// What its metadata says.
    pub metadata: ActivityMetadata<'a>,
}

impl ImportedActivity<'_> {
    /// The view a resolver reads: what [`CorrelationEvent::view`] gives of
    /// [`ImportedActivity::to_event`], without building the event.
    pub fn view(&self) -> EventView<'_> {
        EventView {
            context: self.context,
            event_id: self.event_id,
            metadata: MetadataDigest {
                hash: self.metadata.hash(),
                name: self.metadata.name(),
                intervals: None,
            },
            body: BodyView::ActivityRef(ActivityView {
                // The builder never makes an activity with an empty producer
                // or ID (both are checked when its first event is built, and
                // an ID is the trace's attachment ID and a number).
                activity_ref: RefView::new(self.producer_id, self.event_id)
                    .unwrap_or_else(|| unreachable!("an imported activity's reference parts are non-empty")),
                activity_kind: self.activity_kind,
                activity_domain: self.activity_domain,
                iteration_ref: self.iteration_ref.map(EntityRef::view),
                correlation_scope: self.correlation_scope.map(EntityRef::view),
                trace_attachment_id: Some(self.trace_attachment_id),
                runtime_correlation_id: None,
                cuda_correlation_id: self.cuda_correlation_id,
                stream_id: self.stream_id,
                graph_id: self.graph_id,
                span: self.span,
            }),
        }
    }

    /// The full event.
    pub fn to_event(self) -> Result<CorrelationEvent, ValidationError> {
        self.to_event_with(Map::new())
    }

    /// The full event, its metadata with `extra`'s members too (a launch
    /// record of several GPU events lists their streams and intervals).
    pub(crate) fn to_event_with(
        self,
        extra: Map<String, Value>,
    ) -> Result<CorrelationEvent, ValidationError> {
        let text = |value: &str, field: &'static str| NonEmptyString::for_field(value, field);
        let event_id = text(self.event_id, "event_id")?;
        let body = EventBody::ActivityRef(ActivityRef {
            activity_ref: EntityRef::from_parts(text(self.producer_id, "producer_id")?, event_id.clone()),
            activity_kind: text(self.activity_kind, "activity_kind")?,
            activity_domain: self.activity_domain,
            iteration_ref: self.iteration_ref.cloned(),
            correlation_scope: self.correlation_scope.cloned(),
            trace_attachment_id: Some(text(self.trace_attachment_id, "trace_attachment_id")?),
            runtime_correlation_id: None,
            cuda_correlation_id: self.cuda_correlation_id,
            stream_id: self.stream_id,
            graph_id: self.graph_id,
            span: self.span,
        });
        let mut metadata = self.metadata.to_map();
        metadata.extend(extra);
        CorrelationEvent::new(self.context.clone(), event_id, Metadata::new(metadata), body)
    }
}
