//! A correlation event borrowed from wherever its text lies: what a
//! resolver reads of an event, without the event.
//!
//! [`CorrelationEvent::view`] gives the view of a built event; a reader can
//! also build one straight from a line's bytes, skipping every allocation a
//! [`CorrelationEvent`] makes (its strings, references and metadata map).
//! A view holds the same validated facts: whoever builds one checks the
//! model's rules first (non-empty strings, `end_ns >= start_ns`, a linked
//! activity's iteration, `metadata.intervals`), as the constructors do.
//!
//! Metadata is carried as a digest: its [`ContentHasher`](tally_utils::content_hash::ContentHasher) hash (see
//! [`metadata_hash`]), the activity name it gives, and an activity's
//! listed busy intervals. Nothing downstream of resolution reads more of it.

use std::borrow::Cow;
use std::sync::Arc;

use crate::{
    ActivityDomain, BusyIntervals, Capabilities, CorrelationContext, CorrelationEvent, EntityRef, EventBody,
    Interval, Metadata, Span, TokenCounts,
};
use tally_utils::content_hash::metadata_hash;

/// An entity reference: both parts non-empty, by construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RefView<'a> {
    producer_id: &'a str,
    id: &'a str,
}

impl<'a> RefView<'a> {
    /// The reference, or `None` when a part is empty.
    pub fn new(producer_id: &'a str, id: &'a str) -> Option<Self> {
        (!producer_id.is_empty() && !id.is_empty()).then_some(Self { producer_id, id })
    }

    /// The producer that minted the ID.
    pub fn producer_id(&self) -> &'a str {
        self.producer_id
    }

    /// The ID.
    pub fn id(&self) -> &'a str {
        self.id
    }

    /// The owned reference.
    pub fn to_entity_ref(&self) -> EntityRef {
        // `new` refused empty parts, the only thing EntityRef::new checks.
        EntityRef::new(self.producer_id, self.id).expect("a RefView's parts are non-empty")
    }
}

impl EntityRef {
    /// The reference as a view.
    pub fn view(&self) -> RefView<'_> {
        RefView { producer_id: self.producer_id(), id: self.id() }
    }
}

/// An `infer.activity_ref` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs, reason = "the fields are those of ActivityRef, documented there")]
pub struct ActivityView<'a> {
    pub activity_ref: RefView<'a>,
    pub activity_kind: &'a str,
    pub activity_domain: ActivityDomain,
    pub iteration_ref: Option<RefView<'a>>,
    pub correlation_scope: Option<RefView<'a>>,
    pub trace_attachment_id: Option<&'a str>,
    pub runtime_correlation_id: Option<u64>,
    pub cuda_correlation_id: Option<u64>,
    pub stream_id: Option<u64>,
    pub graph_id: Option<u64>,
    pub span: Span,
}

/// What an event says, by type; the fields are those of the body types of
/// [`EventBody`], with strings and references borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs, reason = "the fields are those of the body types, documented there")]
pub enum BodyView<'a> {
    Artifact {
        artifact_kind: &'a str,
        created_at_ns: u64,
    },
    Request {
        request_ref: RefView<'a>,
        attempt_ref: Option<RefView<'a>>,
        backend_request_ref: Option<RefView<'a>>,
        span: Span,
        status: Option<&'a str>,
        tokens: TokenCounts,
    },
    Iteration {
        iteration_ref: RefView<'a>,
        batch_ref: Option<RefView<'a>>,
        span: Span,
    },
    Stage {
        stage_ref: RefView<'a>,
        name: &'a str,
        request_ref: Option<RefView<'a>>,
        iteration_ref: Option<RefView<'a>>,
        span: Span,
        tokens: TokenCounts,
    },
    Membership {
        request_ref: RefView<'a>,
        iteration_ref: RefView<'a>,
        role: &'a str,
        attempt_ref: Option<RefView<'a>>,
        tokens: TokenCounts,
    },
    ActivityRef(ActivityView<'a>),
    /// Only views of built events carry capabilities: their lists are rare
    /// and short.
    Capabilities(&'a Capabilities),
    ClockAlignment {
        from_clock_domain: &'a str,
        to_clock_domain: &'a str,
        offset_ns: i64,
        uncertainty_ns: u64,
        validity: Span,
    },
}

/// What is read of an event's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataDigest<'a> {
    /// [`metadata_hash`] of the whole object.
    pub hash: u128,
    /// Its activity name ([`activity_name`]).
    pub name: Option<&'a str>,
    /// An activity's `metadata.intervals`, validated and made absolute;
    /// `None` when absent (or `null` in a v2 row, which means absent).
    pub intervals: Option<Cow<'a, [Interval]>>,
}

/// A correlation event, borrowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventView<'a> {
    /// The capture context, shared.
    pub context: &'a Arc<CorrelationContext>,
    /// The event's ID (non-empty).
    pub event_id: &'a str,
    /// Its metadata's digest.
    pub metadata: MetadataDigest<'a>,
    /// What it says.
    pub body: BodyView<'a>,
}

impl EventView<'_> {
    /// The busy intervals of a GPU activity, as
    /// [`CorrelationEvent::busy_intervals`] gives them.
    pub fn busy_intervals(&self) -> Option<BusyIntervals<'_>> {
        let BodyView::ActivityRef(activity) = &self.body else {
            return None;
        };
        match &self.metadata.intervals {
            Some(list) => Some(BusyIntervals::Listed(list)),
            None => {
                let (start, end) = activity.span.bounds()?;
                // A validated span has end >= start.
                Interval::new(start, end).map(BusyIntervals::Span)
            }
        }
    }
}

/// An activity's name from its metadata: `name` (stormlog's runtime calls
/// and native producers), else `first_name` (the first GPU event of an
/// imported launch record, which with one record per kernel is the
/// kernel's own name); `None` when neither is a non-empty string. The one
/// rule every resolver and reader uses.
pub fn activity_name(metadata: &Metadata) -> Option<&str> {
    activity_name_of(
        metadata.get("name").and_then(|value| value.as_str()),
        metadata.get("first_name").and_then(|value| value.as_str()),
    )
}

/// [`activity_name`] from the two candidate strings, for a reader that
/// found them itself.
pub fn activity_name_of<'a>(name: Option<&'a str>, first_name: Option<&'a str>) -> Option<&'a str> {
    name.filter(|name| !name.is_empty()).or(first_name.filter(|name| !name.is_empty()))
}

fn reference(value: &Option<EntityRef>) -> Option<RefView<'_>> {
    value.as_ref().map(EntityRef::view)
}

impl CorrelationEvent {
    /// The event as a view.
    pub fn view(&self) -> EventView<'_> {
        let metadata = MetadataDigest {
            hash: metadata_hash(self.metadata().as_map()),
            name: activity_name(self.metadata()),
            intervals: match self.busy_intervals() {
                Some(BusyIntervals::Listed(list)) => Some(Cow::Borrowed(list)),
                _ => None,
            },
        };
        let body = match self.body() {
            EventBody::Artifact(body) => {
                BodyView::Artifact { artifact_kind: &body.artifact_kind, created_at_ns: body.created_at_ns }
            }
            EventBody::Request(body) => BodyView::Request {
                request_ref: body.request_ref.view(),
                attempt_ref: reference(&body.attempt_ref),
                backend_request_ref: reference(&body.backend_request_ref),
                span: body.span,
                status: body.status.as_ref().map(|status| status.as_str()),
                tokens: body.tokens,
            },
            EventBody::Iteration(body) => BodyView::Iteration {
                iteration_ref: body.iteration_ref.view(),
                batch_ref: reference(&body.batch_ref),
                span: body.span,
            },
            EventBody::Stage(body) => BodyView::Stage {
                stage_ref: body.stage_ref.view(),
                name: &body.name,
                request_ref: reference(&body.request_ref),
                iteration_ref: reference(&body.iteration_ref),
                span: body.span,
                tokens: body.tokens,
            },
            EventBody::Membership(body) => BodyView::Membership {
                request_ref: body.request_ref.view(),
                iteration_ref: body.iteration_ref.view(),
                role: &body.role,
                attempt_ref: reference(&body.attempt_ref),
                tokens: body.tokens,
            },
            EventBody::ActivityRef(body) => BodyView::ActivityRef(ActivityView {
                activity_ref: body.activity_ref.view(),
                activity_kind: &body.activity_kind,
                activity_domain: body.activity_domain,
                iteration_ref: reference(&body.iteration_ref),
                correlation_scope: reference(&body.correlation_scope),
                trace_attachment_id: body.trace_attachment_id.as_ref().map(|id| id.as_str()),
                runtime_correlation_id: body.runtime_correlation_id,
                cuda_correlation_id: body.cuda_correlation_id,
                stream_id: body.stream_id,
                graph_id: body.graph_id,
                span: body.span,
            }),
            EventBody::Capabilities(body) => BodyView::Capabilities(body),
            EventBody::ClockAlignment(body) => BodyView::ClockAlignment {
                from_clock_domain: &body.from_clock_domain,
                to_clock_domain: &body.to_clock_domain,
                offset_ns: body.offset_ns,
                uncertainty_ns: body.uncertainty_ns,
                validity: body.validity,
            },
        };
        EventView { context: self.context_arc(), event_id: self.event_id(), metadata, body }
    }
}
