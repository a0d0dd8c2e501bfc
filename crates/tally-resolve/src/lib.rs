#![doc = include_str!("../README.md")]
//!
//! Order-independent resolution of correlation evidence, as stormlog 0.4.3's
//! `resolve_inference_events` does it.
//!
//! Evidence arrives from several producers, in any order, sometimes twice.
//! [`resolve_inference_events`], the borrowing resolver, turns such a stream into a
//! [`CorrelationGraph`]:
//!
//! 1. **Deduplication** by `(session_id, producer_id, event_id)`: a repeated
//!    delivery must be equal to the first (Python equality, so `1 == 1.0`),
//!    else the stream is rejected with [`ResolveError::ConflictingEventIdentity`].
//!    All correlation events share one `run_id`
//!    ([`ResolveError::MultipleRunIds`]); legacy v1 records take no part.
//! 2. **Entity tables**: requests by `(request_ref, attempt_ref)`, iterations,
//!    stages and activities by their reference, memberships by
//!    `(request_ref, attempt_ref, iteration_ref, role)`, alignments by their
//!    session, producer and every value. Two events for one entity must be equal
//!    apart from `event_id` ([`ResolveError::ConflictingEntityIdentity`]); the
//!    one with the smallest `event_id` is kept.
//! 3. **Unresolved references**: memberships, stages and activities that name
//!    a request, attempt or iteration nobody reported.
//!
//! The graph borrows the events; nothing is cloned. Errors carry the
//! position of the offending record in the input, so a reader that knows
//! where each record came from can name the file and line.
//!
//! Where the events need not outlive resolution, the streaming resolver [`StreamingResolver`] takes them
//! one at a time and keeps a compact [`StreamedRun`] instead (what
//! accounting and reports need), so an artifact is resolved in a fraction of
//! the memory its events would take; it compares events it no longer holds
//! by content fingerprints (see its module docs). Both implement
//! [`ResolvedEvidence`], which is what `tally-gpu-time` accounts.
//!
//! ```
//! use serde_json::json;
//! use tally_core::parse_inference_record;
//! use tally_resolve::resolve_inference_events;
//!
//! let context = json!({"run_id": "r", "session_id": "s", "producer_id": "engine",
//!     "source": "doc", "clock_domain": "host", "clock_kind": "monotonic",
//!     "collection_mode": "active", "provenance": "observed"});
//! let membership = json!({"schema_version": 2, "event_type": "infer.membership",
//!     "event_id": "m1", "context": context,
//!     "request_ref": {"producer_id": "engine", "id": "req-1"},
//!     "iteration_ref": {"producer_id": "engine", "id": "step-1"}, "role": "decode"});
//! let records = vec![
//!     parse_inference_record(membership.clone()).unwrap(),
//!     parse_inference_record(membership).unwrap(), // delivered twice
//! ];
//! let graph = resolve_inference_events(&records).unwrap();
//! assert_eq!(graph.memberships().len(), 1);
//! let kinds: Vec<&str> = graph.unresolved().iter().map(|u| u.kind.as_str()).collect();
//! assert_eq!(kinds, ["iteration", "request"]);
//! ```
//!
//! # Differences from stormlog
//!
//! - Where stormlog keeps the *last* of several equal deliveries in its
//!   deduplication table, tally keeps the first. They are equal, so nothing
//!   observable changes except which of `1` and `1.0` a metadata value shows.
//! - Entity tables keep stormlog's dict order (first delivery of each key),
//!   so the one order-dependent detail of stormlog's output, the order of two
//!   unresolved references that tie on `(event_id, kind, ref.id)`, is the
//!   same as stormlog's.

mod borrowing;
mod event_ids;
mod evidence;
mod fingerprint;
mod hash;
mod prepare;
mod streaming;
mod wire;

use tally_core::{CorrelationEvent, EntityRef, InferenceRecord};

pub use borrowing::{CorrelationGraph, RequestKey, resolve_inference_events};
pub use evidence::{
    ActivityFacts, AlignmentFacts, IterationFacts, MembershipFacts, ResolvedEvidence, activity_name,
};
pub use prepare::{EventIdentity, PreparedBatch};
pub use streaming::{StreamedRun, StreamingResolver, resolve_streaming};

/// Why a stream of evidence cannot be resolved. Each names the 0-based
/// position of the offending record in the input sequence (legacy records
/// count), and the position of the earlier record it clashes with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// A correlation event names another run than the first one did.
    #[error("correlation artifact contains multiple run_id values")]
    MultipleRunIds {
        /// The event with the second run_id.
        record: usize,
        /// The first correlation event, which set the run_id.
        earlier: usize,
    },
    /// Two deliveries of one `(session_id, producer_id, event_id)` differ.
    #[error("conflicting event identity")]
    ConflictingEventIdentity {
        /// The later delivery.
        record: usize,
        /// The first delivery.
        earlier: usize,
    },
    /// Two events describe one entity differently.
    #[error("conflicting entity identity")]
    ConflictingEntityIdentity {
        /// The event that disagrees (its first delivery).
        record: usize,
        /// The event the table held for that entity (its first delivery).
        earlier: usize,
    },
    /// More distinct events than the tables' `u32` indices can number.
    #[error("more than 4294967294 distinct correlation events")]
    TooManyEvents {
        /// The first event past the limit.
        record: usize,
    },
}

impl ResolveError {
    /// The offending record's position in the input.
    pub fn record(&self) -> usize {
        match *self {
            ResolveError::MultipleRunIds { record, .. }
            | ResolveError::ConflictingEventIdentity { record, .. }
            | ResolveError::ConflictingEntityIdentity { record, .. }
            | ResolveError::TooManyEvents { record } => record,
        }
    }

    /// A short, stable name of the broken rule, as the conformance corpus
    /// spells it: `multiple-run-ids`, `conflicting-event-identity` or
    /// `conflicting-entity-identity`.
    pub fn rule(&self) -> &'static str {
        match self {
            ResolveError::MultipleRunIds { .. } => "multiple-run-ids",
            ResolveError::ConflictingEventIdentity { .. } => "conflicting-event-identity",
            ResolveError::ConflictingEntityIdentity { .. } => "conflicting-entity-identity",
            ResolveError::TooManyEvents { .. } => "too-many-events",
        }
    }
}

/// Anything a stream of evidence may hold: a record that may be a
/// correlation event. Lets [`resolve_inference_events`] take records as an
/// artifact reader returns them or bare events.
pub trait AsCorrelationEvent {
    /// The correlation event, or `None` for a record that takes no part.
    fn as_correlation_event(&self) -> Option<&CorrelationEvent>;
}

impl AsCorrelationEvent for InferenceRecord {
    fn as_correlation_event(&self) -> Option<&CorrelationEvent> {
        self.as_event()
    }
}

impl AsCorrelationEvent for CorrelationEvent {
    fn as_correlation_event(&self) -> Option<&CorrelationEvent> {
        Some(self)
    }
}

/// Shared events (as the Python package holds them) resolve as themselves.
impl<T: AsCorrelationEvent + ?Sized> AsCorrelationEvent for std::sync::Arc<T> {
    fn as_correlation_event(&self) -> Option<&CorrelationEvent> {
        (**self).as_correlation_event()
    }
}

/// One entity of the graph: the event kept for it and its typed body.
#[derive(Debug)]
pub struct Resolved<'a, T> {
    /// The event (the smallest `event_id` of those describing the entity).
    pub event: &'a CorrelationEvent,
    /// Its body, of the table's type.
    pub body: &'a T,
    /// The position in the input of the event's first delivery.
    pub record: usize,
}

impl<T> Clone for Resolved<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Resolved<'_, T> {}

tally_core::string_enum!(
    /// What a reference pointed at that nobody reported. The variants are
    /// declared in the order of their strings, so ordering by kind is
    /// ordering by its name.
    ReferenceKind, "kind", "reference kind must be attempt, iteration or request", {
        /// A membership's attempt of a known request.
        Attempt = "attempt",
        /// A membership's, stage's or activity's iteration.
        Iteration = "iteration",
        /// A membership's or stage's request.
        Request = "request",
    }
);

/// A reference to an entity no event reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnresolvedReference<'a> {
    /// The referring event.
    pub event_id: &'a str,
    /// What was referenced.
    pub kind: ReferenceKind,
    /// The unknown reference.
    pub reference: &'a EntityRef,
}

/// The sizes of the entity tables (the `counts` of an accounting report).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableCounts {
    /// Distinct `(request_ref, attempt_ref)` keys.
    pub requests: usize,
    /// Distinct iterations.
    pub iterations: usize,
    /// Distinct stages.
    pub stages: usize,
    /// Distinct memberships.
    pub memberships: usize,
    /// Distinct activities.
    pub activities: usize,
    /// Distinct clock alignments.
    pub alignments: usize,
}
