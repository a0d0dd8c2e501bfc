//! Events made ready for the streaming resolver: what
//! [`crate::StreamingResolver`] needs of each event, hashed and copied into
//! one batch, so that this part of the work runs wherever the events were
//! decoded (on many threads at once) and the resolver's own, serial part
//! only looks up and keeps.
//!
//! A [`PreparedBatch`] owns everything it holds (the strings the resolver
//! may keep are copied into one buffer, contexts are shared), so it outlives
//! the text or the events it was prepared from.

use std::sync::Arc;

use hashbrown::HashTable;
use tally_core::view::{ActivityView, BodyView, EventView, RefView};
use tally_core::{ActivityDomain, BusyIntervals, CorrelationContext, Interval, Span};
use tally_utils::content_hash::ContentHasher;
use tally_utils::fast_hash::FastHasher;

use crate::AsCorrelationEvent;
use crate::fingerprint::{content_fingerprint, context_fingerprint, reference};

/// Bytes of kept strings a batch makes room for per event (an activity
/// row's references, kind and name come to about that).
const TEXT_PER_EVENT: usize = 96;

/// A string in a batch's text: start and length.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Str {
    pub(crate) start: usize,
    pub(crate) len: usize,
}

/// A reference in a batch's text.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RefStr {
    pub(crate) producer: Str,
    pub(crate) id: Str,
}

/// An activity's busy time as prepared.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Busy {
    /// No complete span.
    Unknown,
    /// `[start, end)`.
    Span(u64, u64),
    /// Listed intervals: first index and count in the batch's intervals.
    Listed(usize, usize),
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct PreparedActivity {
    /// The 128-bit hash of the activity reference.
    pub(crate) key: u128,
    /// The activity reference, where a report lists the activity by it
    /// ([`listed_by_reference`]); most activities are not, and their
    /// reference is never copied.
    pub(crate) reference: Option<RefStr>,
    pub(crate) kind: Str,
    pub(crate) domain: ActivityDomain,
    pub(crate) iteration: Option<RefStr>,
    /// The labels, copied only into a batch that keeps them
    /// ([`PreparedBatch::without_labels`]).
    pub(crate) scope: Option<RefStr>,
    pub(crate) name: Option<Str>,
    pub(crate) cuda_correlation_id: Option<u64>,
    pub(crate) stream_id: Option<u64>,
    pub(crate) busy: Busy,
}

/// What the resolver keeps of a body.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PreparedBody {
    Request {
        request: RefStr,
        attempt: Option<RefStr>,
    },
    Iteration {
        iteration: RefStr,
        span: Span,
    },
    Stage {
        stage: RefStr,
        request: Option<RefStr>,
        iteration: Option<RefStr>,
    },
    Membership {
        request: RefStr,
        attempt: Option<RefStr>,
        iteration: RefStr,
        role: Str,
    },
    Activity(PreparedActivity),
    Alignment {
        from: Str,
        to: Str,
        offset_ns: i64,
        uncertainty_ns: u64,
        validity: Span,
    },
    /// Artifact identities and capabilities: deduplicated, never tabled.
    Untabled,
}

/// One prepared event.
#[derive(Debug, Clone)]
pub(crate) struct PreparedEvent {
    /// Its position in the stream, as errors report it.
    pub(crate) record: usize,
    /// Index into the batch's contexts.
    pub(crate) context: u32,
    /// The 128-bit hash of (session, producer, event ID).
    pub(crate) key: u128,
    /// The content fingerprint (compared only between deliveries under one
    /// key).
    pub(crate) fingerprint: u64,
    pub(crate) event_id: Str,
    pub(crate) body: PreparedBody,
}

impl PreparedEvent {
    fn identity(&self) -> EventIdentity {
        EventIdentity {
            key: self.key,
            fingerprint: self.fingerprint,
            record: self.record,
            tabled: !matches!(self.body, PreparedBody::Untabled),
        }
    }
}

/// A context of the batch: the context, its fingerprint, and the hasher
/// state after its namespace (session and producer), from which each event
/// key goes on.
#[derive(Debug, Clone)]
pub(crate) struct PreparedContext {
    pub(crate) context: Arc<CorrelationContext>,
    pub(crate) fingerprint: u128,
    namespace: ContentHasher,
}

/// Consecutive events prepared for [`crate::StreamingResolver::push_prepared`],
/// in stream order.
///
/// ```
/// use serde_json::json;
/// use tally_core::parse_inference_record;
/// use tally_resolve::{PreparedBatch, ResolvedEvidence, StreamingResolver};
///
/// let iteration = parse_inference_record(json!({"schema_version": 2,
///     "event_type": "infer.iteration", "event_id": "e1",
///     "context": {"run_id": "r", "session_id": "s", "producer_id": "p", "source": "doc",
///                 "clock_domain": "host", "clock_kind": "monotonic",
///                 "collection_mode": "active", "provenance": "observed"},
///     "iteration_ref": {"producer_id": "p", "id": "step-1"}, "start_ns": 5, "end_ns": 9})).unwrap();
/// // Preparing may run on any thread; the batch owns what it holds.
/// let mut batch = PreparedBatch::default();
/// batch.push_record(0, &iteration);
/// batch.push_record(1, &iteration);
/// let mut resolver = StreamingResolver::new();
/// resolver.push_prepared(&batch).unwrap();
/// assert_eq!(resolver.finish().unwrap().counts().iterations, 1);
/// ```
#[derive(Debug, Clone)]
pub struct PreparedBatch {
    pub(crate) text: String,
    pub(crate) contexts: Vec<PreparedContext>,
    pub(crate) intervals: Vec<Interval>,
    pub(crate) events: Vec<PreparedEvent>,
    /// Whether activities' labels (name and correlation scope) are
    /// copied: only a resolver that keeps labels reads them.
    pub(crate) labels: bool,
    /// The last few contexts described, kept when the batch is emptied: a
    /// reused batch meets the same contexts again, and describing one
    /// hashes all of its fields (1% of `tally account`'s time).
    described: Vec<PreparedContext>,
    /// Each distinct string's place in `text`, for a batch that stores
    /// each string once ([`PreparedBatch::interning`]): a partial result
    /// holds a whole run's events, whose references, kinds and names
    /// repeat.
    interned: Option<HashTable<Str>>,
}

/// What identifies one prepared event to the resolver's deduplication: the
/// hash of its `(session_id, producer_id, event_id)`, its content
/// fingerprint, and its position in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventIdentity {
    /// The 128-bit hash of (session, producer, event ID).
    pub key: u128,
    /// The content fingerprint: two deliveries under one key are the same
    /// event when their fingerprints agree, a conflict when not.
    pub fingerprint: u64,
    /// The position in the stream, as errors report it.
    pub record: usize,
    /// Whether the resolver tables the event: artifact identities and
    /// capabilities are only deduplicated.
    pub tabled: bool,
}

/// Contexts a batch remembers past [`PreparedBatch::clear`].
const DESCRIBED: usize = 8;

impl Default for PreparedBatch {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl PreparedBatch {
    /// An empty batch with room for about `events` events.
    pub fn with_capacity(events: usize) -> Self {
        Self {
            text: String::with_capacity(events * TEXT_PER_EVENT),
            contexts: Vec::new(),
            intervals: Vec::new(),
            events: Vec::with_capacity(events),
            labels: true,
            described: Vec::new(),
            interned: None,
        }
    }

    /// The same batch, storing each distinct string once: for a batch that
    /// keeps a whole run's events (a partial result), where references,
    /// kinds and names repeat; a batch resolved and emptied chunk by chunk
    /// gains nothing by it.
    pub fn interning(mut self) -> Self {
        if self.interned.is_none() {
            self.interned = Some(HashTable::new());
        }
        self
    }

    /// Each event's identity, in order.
    pub fn identities(&self) -> impl ExactSizeIterator<Item = EventIdentity> + '_ {
        self.events.iter().map(PreparedEvent::identity)
    }

    /// Copies the events of `other` onto the end of this batch, in their
    /// order, each at the position `record` gives for its position in
    /// `other`; their strings, contexts and intervals are copied with them.
    /// A batch that keeps labels takes none from a batch without.
    pub fn append(&mut self, other: &PreparedBatch, mut record: impl FnMut(usize) -> usize) {
        let mut contexts: Vec<Option<u32>> = vec![None; other.contexts.len()];
        for event in &other.events {
            let context = match contexts[event.context as usize] {
                Some(context) => context,
                None => {
                    let added = self.add_context(Arc::clone(&other.contexts[event.context as usize].context));
                    contexts[event.context as usize] = Some(added);
                    added
                }
            };
            // Not interned: an event ID is all but always new (a
            // redelivery's is the one exception), so looking it up would
            // only cost.
            let event_id = self.push_text(other.get(event.event_id));
            let body = self.copy_body(other, &event.body);
            self.events.push(PreparedEvent {
                record: record(event.record),
                context,
                key: event.key,
                fingerprint: event.fingerprint,
                event_id,
                body,
            });
        }
    }

    /// The batch's index of a context, by value (a batch holds a handful):
    /// for contexts read back or copied from another batch, which are
    /// other allocations.
    pub(crate) fn add_context(&mut self, context: Arc<CorrelationContext>) -> u32 {
        if let Some(at) = self.contexts.iter().position(|known| *known.context == *context) {
            return at as u32;
        }
        self.contexts.push(describe(context));
        (self.contexts.len() - 1) as u32
    }

    /// Adds a context known to be new to the batch (a batch read back
    /// finds equal ones by hash, not one by one).
    pub(crate) fn push_context(&mut self, context: Arc<CorrelationContext>) -> u32 {
        self.contexts.push(describe(context));
        (self.contexts.len() - 1) as u32
    }

    fn copy_str(&mut self, other: &PreparedBatch, text: Str) -> Str {
        self.str(other.get(text))
    }

    fn copy_ref(&mut self, other: &PreparedBatch, value: RefStr) -> RefStr {
        RefStr { producer: self.copy_str(other, value.producer), id: self.copy_str(other, value.id) }
    }

    fn copy_optional(&mut self, other: &PreparedBatch, value: Option<RefStr>) -> Option<RefStr> {
        value.map(|value| self.copy_ref(other, value))
    }

    fn copy_body(&mut self, other: &PreparedBatch, body: &PreparedBody) -> PreparedBody {
        match *body {
            PreparedBody::Request { request, attempt } => PreparedBody::Request {
                request: self.copy_ref(other, request),
                attempt: self.copy_optional(other, attempt),
            },
            PreparedBody::Iteration { iteration, span } => {
                PreparedBody::Iteration { iteration: self.copy_ref(other, iteration), span }
            }
            PreparedBody::Stage { stage, request, iteration } => PreparedBody::Stage {
                stage: self.copy_ref(other, stage),
                request: self.copy_optional(other, request),
                iteration: self.copy_optional(other, iteration),
            },
            PreparedBody::Membership { request, attempt, iteration, role } => PreparedBody::Membership {
                request: self.copy_ref(other, request),
                attempt: self.copy_optional(other, attempt),
                iteration: self.copy_ref(other, iteration),
                role: self.copy_str(other, role),
            },
            PreparedBody::Activity(activity) => {
                let labels = self.labels && other.labels;
                let busy = match activity.busy {
                    Busy::Listed(first, count) => {
                        let at = self.intervals.len();
                        self.intervals.extend_from_slice(&other.intervals[first..first + count]);
                        Busy::Listed(at, count)
                    }
                    busy => busy,
                };
                PreparedBody::Activity(PreparedActivity {
                    key: activity.key,
                    reference: self.copy_optional(other, activity.reference),
                    kind: self.copy_str(other, activity.kind),
                    domain: activity.domain,
                    iteration: self.copy_optional(other, activity.iteration),
                    scope: self.copy_optional(other, activity.scope.filter(|_| labels)),
                    name: activity.name.filter(|_| labels).map(|name| self.copy_str(other, name)),
                    cuda_correlation_id: activity.cuda_correlation_id,
                    stream_id: activity.stream_id,
                    busy,
                })
            }
            PreparedBody::Alignment { from, to, offset_ns, uncertainty_ns, validity } => {
                PreparedBody::Alignment {
                    from: self.copy_str(other, from),
                    to: self.copy_str(other, to),
                    offset_ns,
                    uncertainty_ns,
                    validity,
                }
            }
            PreparedBody::Untabled => PreparedBody::Untabled,
        }
    }

    /// The same batch, preparing activities without their labels (name
    /// and correlation scope), for a resolver that does not keep them
    /// ([`crate::StreamingResolver::keeping_labels`]): copying them was a
    /// tenth of preparing an activity. A resolver that keeps labels reads
    /// none from such a batch.
    pub fn without_labels(mut self) -> Self {
        self.labels = false;
        self
    }

    /// Whether activities are prepared with their labels.
    pub fn keeps_labels(&self) -> bool {
        self.labels
    }

    /// Makes room for about `events` more events.
    pub fn reserve(&mut self, events: usize) {
        self.text.reserve(events * TEXT_PER_EVENT);
        self.events.reserve(events);
    }

    /// The bytes its buffers have room for: what keeping it for reuse
    /// holds.
    pub fn capacity_bytes(&self) -> usize {
        self.text.capacity()
            + self.contexts.capacity() * size_of::<PreparedContext>()
            + self.intervals.capacity() * size_of::<Interval>()
            + self.events.capacity() * size_of::<PreparedEvent>()
    }

    /// Events prepared.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether none was prepared.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Empties the batch, keeping its buffers.
    pub fn clear(&mut self) {
        if let Some(interned) = &mut self.interned {
            interned.clear();
        }
        self.text.clear();
        self.contexts.clear();
        self.intervals.clear();
        self.events.clear();
    }

    /// Sets each event's content fingerprint to what `fingerprint` gives
    /// for its identity: for events whose content differs where it does
    /// not matter (a trace import's own records, stamped with the time of
    /// the import), so that their deliveries from several imports are one.
    pub fn map_fingerprints(&mut self, mut fingerprint: impl FnMut(EventIdentity) -> u64) {
        for event in &mut self.events {
            event.fingerprint = fingerprint(event.identity());
        }
    }

    /// Moves every event's position `by` further down the stream: for a
    /// batch prepared before its place in the whole stream was known (a
    /// trace's records numbered within the trace, on the thread importing
    /// it).
    pub fn shift_records(&mut self, by: usize) {
        for event in &mut self.events {
            event.record = event.record.saturating_add(by);
        }
    }

    /// Prepares the record at position `record` of the stream (a record
    /// that takes no part, such as a legacy one, adds nothing).
    pub fn push_record(&mut self, record: usize, item: &(impl AsCorrelationEvent + ?Sized)) {
        if let Some(event) = item.as_correlation_event() {
            self.push(record, &event.view());
        }
    }

    /// Prepares the event at position `record` of the stream.
    pub fn push(&mut self, record: usize, event: &EventView<'_>) {
        let context = self.context(event.context);
        let prepared = &self.contexts[context as usize];
        let fingerprint = content_fingerprint(event, prepared.fingerprint);
        let key = prepared.event_key(event.event_id);
        let event_id = self.str(event.event_id);
        let body = self.body(event);
        self.events.push(PreparedEvent { record, context, key, fingerprint, event_id, body });
    }

    /// The batch's index of a context, by address (a batch holds a handful).
    fn context(&mut self, context: &Arc<CorrelationContext>) -> u32 {
        if let Some(at) = self.contexts.iter().rposition(|known| Arc::ptr_eq(&known.context, context)) {
            return at as u32;
        }
        let described = match self.described.iter().rposition(|known| Arc::ptr_eq(&known.context, context)) {
            Some(at) => self.described[at].clone(),
            None => {
                let described = describe(Arc::clone(context));
                if self.described.len() == DESCRIBED {
                    self.described.remove(0);
                }
                self.described.push(described.clone());
                described
            }
        };
        self.contexts.push(described);
        (self.contexts.len() - 1) as u32
    }

    /// Copies `text` into the batch's text, without interning it.
    pub(crate) fn push_text(&mut self, text: &str) -> Str {
        let start = self.text.len();
        self.text.push_str(text);
        Str { start, len: text.len() }
    }

    fn str(&mut self, text: &str) -> Str {
        let Some(interned) = &mut self.interned else {
            return self.push_text(text);
        };
        let stored = &self.text;
        let hash = text_hash(text);
        let found = interned.find(hash, |known| &stored[known.start..known.start + known.len] == text);
        if let Some(&known) = found {
            return known;
        }
        let start = self.text.len();
        self.text.push_str(text);
        let added = Str { start, len: text.len() };
        let stored = &self.text;
        interned.insert_unique(hash, added, |known| text_hash(&stored[known.start..known.start + known.len]));
        added
    }

    fn reference(&mut self, value: RefView<'_>) -> RefStr {
        RefStr { producer: self.str(value.producer_id()), id: self.str(value.id()) }
    }

    fn optional(&mut self, value: Option<RefView<'_>>) -> Option<RefStr> {
        value.map(|value| self.reference(value))
    }

    fn body(&mut self, event: &EventView<'_>) -> PreparedBody {
        match event.body {
            BodyView::Request { request_ref, attempt_ref, .. } => PreparedBody::Request {
                request: self.reference(request_ref),
                attempt: self.optional(attempt_ref),
            },
            BodyView::Iteration { iteration_ref, span, .. } => {
                PreparedBody::Iteration { iteration: self.reference(iteration_ref), span }
            }
            BodyView::Stage { stage_ref, request_ref, iteration_ref, .. } => PreparedBody::Stage {
                stage: self.reference(stage_ref),
                request: self.optional(request_ref),
                iteration: self.optional(iteration_ref),
            },
            BodyView::Membership { request_ref, iteration_ref, role, attempt_ref, .. } => {
                PreparedBody::Membership {
                    request: self.reference(request_ref),
                    attempt: self.optional(attempt_ref),
                    iteration: self.reference(iteration_ref),
                    role: self.str(role),
                }
            }
            BodyView::ActivityRef(activity) => {
                let intervals = event.busy_intervals();
                let listed = listed_by_reference(&activity, event.context, intervals.is_some());
                let busy = match intervals {
                    None => Busy::Unknown,
                    Some(BusyIntervals::Span(interval)) => Busy::Span(interval.start_ns(), interval.end_ns()),
                    Some(BusyIntervals::Listed(list)) => {
                        let first = self.intervals.len();
                        self.intervals.extend_from_slice(list);
                        Busy::Listed(first, list.len())
                    }
                };
                let labels = self.labels;
                PreparedBody::Activity(PreparedActivity {
                    key: reference_key(activity.activity_ref),
                    reference: listed.then(|| self.reference(activity.activity_ref)),
                    kind: self.str(activity.activity_kind),
                    domain: activity.activity_domain,
                    iteration: self.optional(activity.iteration_ref),
                    scope: self.optional(activity.correlation_scope.filter(|_| labels)),
                    name: event.metadata.name.filter(|_| labels).map(|name| self.str(name)),
                    cuda_correlation_id: activity.cuda_correlation_id,
                    stream_id: activity.stream_id,
                    busy,
                })
            }
            BodyView::ClockAlignment {
                from_clock_domain,
                to_clock_domain,
                offset_ns,
                uncertainty_ns,
                validity,
            } => PreparedBody::Alignment {
                from: self.str(from_clock_domain),
                to: self.str(to_clock_domain),
                offset_ns,
                uncertainty_ns,
                validity,
            },
            BodyView::Artifact { .. } | BodyView::Capabilities(_) => PreparedBody::Untabled,
        }
    }

    /// The text of a prepared string.
    pub(crate) fn get(&self, text: Str) -> &str {
        // Every Str was cut from this batch's text by `str`, at char
        // boundaries, and the text only grows until `clear` drops both.
        &self.text[text.start..text.start + text.len]
    }

    /// A prepared reference as a view.
    pub(crate) fn get_ref(&self, value: RefStr) -> RefView<'_> {
        // Both parts were copied from a RefView, whose parts are non-empty.
        RefView::new(self.get(value.producer), self.get(value.id)).expect("prepared from a RefView")
    }
}

impl PreparedContext {
    /// The key of this context's event `event_id`: the hash of (session,
    /// producer, event ID).
    pub(crate) fn event_key(&self, event_id: &str) -> u128 {
        let mut key = self.namespace;
        key.text(event_id);
        key.finish128()
    }
}

/// The key of an activity reference: its 128-bit hash.
pub(crate) fn reference_key(value: RefView<'_>) -> u128 {
    let mut key = ContentHasher::default();
    reference(&mut key, value);
    key.finish128()
}

/// A context's description: its fingerprint, and the hasher after its
/// namespace (session and producer), from which each event key goes on.
fn describe(context: Arc<CorrelationContext>) -> PreparedContext {
    let mut namespace = ContentHasher::default();
    namespace.text(&context.session_id);
    namespace.text(&context.producer_id);
    let fingerprint = context_fingerprint(&context);
    PreparedContext { context, fingerprint, namespace }
}

/// The hash a [`PreparedBatch::interning`] batch finds a string by.
fn text_hash(text: &str) -> u64 {
    use std::hash::Hasher;
    let mut hasher = FastHasher::default();
    hasher.write(text.as_bytes());
    hasher.finish()
}

/// Whether a report lists an activity by its reference: one without an
/// iteration (unattributed), or a GPU activity that cannot be measured (no
/// device clock in its context, or no complete span: `measurable`).
fn listed_by_reference(activity: &ActivityView<'_>, context: &CorrelationContext, measurable: bool) -> bool {
    let gpu = activity.activity_domain == ActivityDomain::Gpu;
    activity.iteration_ref.is_none() || (gpu && (context.measured_device().is_none() || !measurable))
}
