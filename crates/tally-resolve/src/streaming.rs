//! Resolution of a stream of records that are not kept: [`StreamingResolver`]
//! takes one event at a time and keeps only what accounting and reporting
//! need, in a compact form; [`StreamedRun`] is the result.
//!
//! The rules are [`crate::resolve_inference_events`]'s, rule for rule and in
//! the same order (the workspace's property suite checks that the two agree
//! on generated runs, conflicts included). What differs is how an event is
//! compared with one that is gone: event identities and activity references
//! by 128-bit hashes (any two could collide, so the chance is about 2^-128
//! per pair), and content (context, body, metadata with Python's `==`) by a
//! 64-bit fingerprint compared only between events under one key (about
//! 2^-64 per such comparison). Requests, attempts, iterations, stages,
//! memberships and alignments are keyed exactly.

mod intern;
mod run;
mod table;

use std::collections::hash_map::Entry;
use std::sync::{Arc, OnceLock};

use tally_core::view::RefView;
use tally_core::{ActivityDomain, ClockKind, CorrelationContext, EntityRef, Interval};
use tally_utils::chunked::Chunked;
use tally_utils::fast_hash::FastHashMap;
use tally_utils::intern::Interner;

use crate::event_ids::EventIds;
#[cfg(doc)]
use crate::evidence::ActivityFacts;
use crate::prepare::{Busy, PreparedActivity, PreparedBatch, PreparedBody, PreparedEvent};
use crate::{AsCorrelationEvent, ReferenceKind, ResolveError, TableCounts};
use intern::{Classes, Names, Refs};
use run::Memberships;
pub use run::StreamedRun;
use table::KeyIndex;

/// "None" in the `u32` links and slots below.
const NONE: u32 = u32::MAX;
/// Contexts remembered by address; past this many, each is looked at anew.
const CONTEXT_CACHE: usize = 1 << 16;

/// What an activity is and where it ran, one entry shared by every activity
/// with the same device, clock and kind (a handful per run), so a row names
/// all four with one index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ActivityClass {
    /// Device slot, or [`NONE`].
    device: u32,
    /// `activity_kind` and the context's clock domain, in `names`.
    kind: u32,
    clock_domain: u32,
    clock_kind: ClockKind,
}

/// An activity's labels, kept beside its row only when the resolver was
/// asked to ([`StreamingResolver::keeping_labels`]): accounting reads none
/// of them, and interning a kernel name per record is a hash of ~200 bytes.
///
/// 16 bytes where an `Option<u64>` field would make it 24: whether there is
/// a correlation ID is the name's top bit. Names are numbered from 0 and a
/// table of 2^31 distinct names (tens of gigabytes of strings) is out of
/// reach, so a name number never has that bit.
#[derive(Debug, Clone, Copy)]
struct ActivityLabels {
    /// In `names` (low 31 bits; all ones for none), and [`HAS_CORRELATION`].
    name: u32,
    /// Correlation scope slot, or [`NONE`].
    scope: u32,
    correlation: u64,
}

const HAS_CORRELATION: u32 = 1 << 31;

impl ActivityLabels {
    const NONE: Self = Self { name: !HAS_CORRELATION, scope: NONE, correlation: 0 };

    fn new(name: u32, scope: u32, correlation: Option<u64>) -> Self {
        let name = name & !HAS_CORRELATION;
        match correlation {
            Some(correlation) => Self { name: name | HAS_CORRELATION, scope, correlation },
            None => Self { name, scope, correlation: 0 },
        }
    }

    /// In `names`, or `None`.
    fn name(&self) -> Option<u32> {
        let name = self.name & !HAS_CORRELATION;
        (name != !HAS_CORRELATION).then_some(name)
    }

    fn correlation(&self) -> Option<u64> {
        (self.name & HAS_CORRELATION != 0).then_some(self.correlation)
    }
}

/// An alignment's identity: namespace, from and to domains (numbered),
/// offset, uncertainty and validity window.
type AlignmentSlots = (u32, u32, u32, i64, u64, Option<u64>, Option<u64>);

/// What is kept of the event held for an entity: its event identity's row,
/// whose first delivery (the event itself: a redelivery is never put)
/// holds its fingerprint and record in `delivered`, and its event ID.
///
/// A content fingerprint is only ever compared with the fingerprint of an
/// event under the same key, so 64 bits leave a chance of 2^-64 per such
/// comparison; keys themselves, where any two could collide, keep 128.
/// Eight bytes, where the fingerprint and record beside the ID made every
/// table row 16 bytes larger.
#[derive(Debug, Clone, Copy)]
struct Held {
    /// Row in `seen` and `delivered`.
    seen: u32,
    event_id: u32,
}

#[derive(Debug)]
struct IterationRow {
    held: Held,
    slot: u32,
    elapsed_ns: Option<u64>,
}

#[derive(Debug)]
struct StageRow {
    held: Held,
    request: u32,
    iteration: u32,
}

#[derive(Debug, Clone, Copy)]
struct MembershipRow {
    held: Held,
    namespace: u32,
    request: u32,
    attempt: u32,
    iteration: u32,
}

/// 48 bytes: a listed activity keeps its intervals' place in the span's
/// two words, which it does not use, where two more fields made every row 8
/// bytes larger.
#[derive(Debug)]
struct ActivityRow {
    held: Held,
    /// By `busy`: `[start, end)` of a [`RowBusy::Span`]; the first index
    /// in the interval arena and the count of a [`RowBusy::Listed`]
    /// (`metadata.intervals`); both zero when unknown.
    start: u64,
    end: u64,
    /// Meaningful when `has_stream`.
    stream_id: u64,
    /// Iteration reference slot.
    iteration: u32,
    /// Index in `kept_refs`, for activities a report lists by reference.
    reference: u32,
    /// Its device, clock and kind, in `classes` (one index where three
    /// would make every row 8 bytes larger).
    class: u32,
    domain: ActivityDomain,
    busy: RowBusy,
    has_stream: bool,
}

// The size is a feature: a row per GPU activity and runtime call.
const _: () = assert!(size_of::<ActivityRow>() == 48);

/// What an activity row's `start` and `end` hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowBusy {
    /// No complete span: nothing.
    Unknown,
    /// Its span.
    Span,
    /// Where its listed intervals lie.
    Listed,
}

/// What is worth knowing once about a shared context.
#[derive(Debug, Clone, Copy)]
struct ContextInfo {
    namespace: u32,
    same_run: bool,
    device: u32,
    monotonic: bool,
    clock_domain: u32,
    clock_kind: ClockKind,
}

impl ContextInfo {
    fn class(&self, kind: u32) -> ActivityClass {
        ActivityClass {
            device: self.device,
            kind,
            clock_domain: self.clock_domain,
            clock_kind: self.clock_kind,
        }
    }
}

/// Resolves a stream of records one at a time, keeping no event.
///
/// ```
/// use serde_json::json;
/// use tally_core::parse_inference_record;
/// use tally_resolve::{ResolvedEvidence, StreamingResolver};
///
/// let iteration = parse_inference_record(json!({"schema_version": 2,
///     "event_type": "infer.iteration", "event_id": "e1",
///     "context": {"run_id": "r", "session_id": "s", "producer_id": "p", "source": "doc",
///                 "clock_domain": "host", "clock_kind": "monotonic",
///                 "collection_mode": "active", "provenance": "observed"},
///     "iteration_ref": {"producer_id": "p", "id": "step-1"}, "start_ns": 5, "end_ns": 9})).unwrap();
/// let mut resolver = StreamingResolver::new();
/// for (index, record) in [iteration.clone(), iteration].iter().enumerate() {
///     resolver.push(index, record).unwrap(); // the record may be dropped now
/// }
/// let run = resolver.finish().unwrap();
/// assert_eq!(run.counts().iterations, 1);
/// assert_eq!(run.iteration_facts().next().unwrap().elapsed_ns, Some(4));
/// ```
#[derive(Debug, Default)]
pub struct StreamingResolver {
    run: Option<(Box<str>, usize)>,
    context_slots: FastHashMap<usize, u32>,
    contexts: Vec<(Arc<CorrelationContext>, ContextInfo)>,
    namespaces: FastHashMap<(String, String), u32>,
    namespace_names: Vec<(Box<str>, Box<str>)>,
    /// Event identities: (namespace, event_id) hashes, with the fingerprint
    /// and record of each first delivery in `delivered`.
    seen: KeyIndex,
    delivered: Chunked<(u64, usize)>,
    devices: FastHashMap<(String, String, ClockKind), u32>,
    device_names: Vec<(Box<str>, Box<str>, ClockKind)>,
    request_refs: Refs,
    attempt_refs: Refs,
    iteration_refs: Refs,
    stage_refs: Refs,
    roles: Interner,
    /// Activity kinds and names and clock domains.
    names: Names,
    classes: Classes,
    /// Whether `activity_labels` is kept.
    keep_labels: bool,
    /// Row `i` labels activity row `i`, when `keep_labels`.
    activity_labels: Chunked<ActivityLabels>,
    scopes: Refs,
    event_ids: EventIds,
    requests: FastHashMap<(u32, u32), u32>,
    request_rows: Vec<Held>,
    request_slots: Vec<u32>,
    iteration_of_slot: Vec<u32>,
    iteration_rows: Vec<IterationRow>,
    stage_of_slot: Vec<u32>,
    stage_rows: Vec<StageRow>,
    memberships: FastHashMap<(u32, u32, u32, u32), u32>,
    membership_rows: Vec<MembershipRow>,
    /// Activity-reference hashes; row `i` of the index is activity row `i`.
    activities: KeyIndex,
    activity_rows: Chunked<ActivityRow>,
    alignments: FastHashMap<AlignmentSlots, u32>,
    alignment_rows: Vec<(Held, AlignmentSlots)>,
    intervals: Vec<Interval>,
    kept_refs: Vec<EntityRef>,
    last_iteration: Option<(Arc<EntityRef>, u32)>,
    entity_conflict: Option<ResolveError>,
    /// The one-event batch of [`StreamingResolver::push`], reused.
    scratch: PreparedBatch,
}

impl StreamingResolver {
    /// An empty resolver.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same resolver, also keeping each activity's name, CUDA
    /// correlation ID and correlation scope ([`ActivityFacts::name`],
    /// [`ActivityFacts::cuda_correlation_id`],
    /// [`ActivityFacts::correlation_scope`]), which the overlap breakdown
    /// reads and accounting does not. Without it they read `None`, and each
    /// activity costs neither the time to intern them nor their memory.
    pub fn keeping_labels(mut self) -> Self {
        self.keep_labels = true;
        self
    }

    /// An empty resolver with room for about `records` records, so its
    /// tables are allocated once instead of growing (each growth holds the
    /// old and the new table at once, and some allocators keep the old one
    /// resident a while).
    pub fn with_capacity(records: usize) -> Self {
        let mut resolver = Self::default();
        resolver.seen.reserve(records);
        resolver.event_ids.reserve(records);
        resolver.activities.reserve(records);
        resolver
    }

    /// Takes the record at position `record` of the stream (legacy records
    /// take no part). Fails at once on a second run_id or a conflicting
    /// redelivery; a conflicting entity is reported by [`StreamingResolver::finish`],
    /// as stormlog deduplicates the whole stream before it builds tables.
    pub fn push(
        &mut self,
        record: usize,
        item: &(impl AsCorrelationEvent + ?Sized),
    ) -> Result<(), ResolveError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.push_record(record, item);
        let result = self.push_prepared(&scratch);
        self.scratch = scratch;
        result
    }

    /// Takes a batch of prepared events, in order: [`StreamingResolver::push`]
    /// of each, with the hashing and copying already done where the batch was
    /// prepared. Stops at the first rejection.
    pub fn push_prepared(&mut self, batch: &PreparedBatch) -> Result<(), ResolveError> {
        // The tables are far larger than the caches and each event probes
        // them at random: touching every slot the batch will probe first
        // lets the processor fetch them side by side, instead of one
        // dependent miss after another.
        let mut touched = 0u64;
        for event in &batch.events {
            touched ^= self.seen.slot_at(event.key);
            if let PreparedBody::Activity(activity) = &event.body {
                touched ^= self.activities.slot_at(activity.key);
            }
        }
        // Opaque to the optimizer, so the early reads are not removed.
        std::hint::black_box(touched);
        if self.run.is_none()
            && let Some(first) = batch.events.first()
        {
            let context = &batch.contexts[first.context as usize].context;
            self.run = Some((context.run_id.as_str().into(), first.record));
        }
        // A batch holds a handful of contexts, numbered in the order the
        // events first name them: looked up once each, in that order.
        let infos: Vec<ContextInfo> =
            batch.contexts.iter().map(|prepared| self.context(&prepared.context)).collect();
        for event in &batch.events {
            self.apply(batch, event, infos[event.context as usize])?;
        }
        Ok(())
    }

    fn apply(
        &mut self,
        batch: &PreparedBatch,
        event: &PreparedEvent,
        info: ContextInfo,
    ) -> Result<(), ResolveError> {
        let record = event.record;
        if !info.same_run {
            let earlier = self.run.as_ref().map_or(record, |(_, earlier)| *earlier);
            return Err(ResolveError::MultipleRunIds { record, earlier });
        }
        let fingerprint = event.fingerprint;
        // Rows are numbered by u32, with u32::MAX for "none".
        if self.seen.len() >= u32::MAX as usize - 1 {
            return Err(ResolveError::TooManyEvents { record });
        }
        let seen = match self.seen.find_or_add(event.key) {
            Ok(row) => {
                let (known, earlier) = self.delivered[row as usize];
                if known != fingerprint {
                    return Err(ResolveError::ConflictingEventIdentity { record, earlier });
                }
                return Ok(());
            }
            Err(seen) => {
                self.delivered.push((fingerprint, record));
                seen
            }
        };
        if self.entity_conflict.is_none()
            && let Err(conflict) = self.put(batch, event, info, seen)
        {
            self.entity_conflict = Some(conflict);
        }
        Ok(())
    }

    /// The info of a context, cached by address while the context is held
    /// here (so the address cannot be reused by another).
    fn context(&mut self, context: &Arc<CorrelationContext>) -> ContextInfo {
        let address = Arc::as_ptr(context) as usize;
        if let Some(&slot) = self.context_slots.get(&address) {
            return self.contexts[slot as usize].1;
        }
        let info = self.describe(context);
        if self.contexts.len() < CONTEXT_CACHE {
            self.context_slots.insert(address, self.contexts.len() as u32);
            self.contexts.push((Arc::clone(context), info));
        }
        info
    }

    fn describe(&mut self, context: &CorrelationContext) -> ContextInfo {
        let next = self.namespace_names.len() as u32;
        let names = (context.session_id.to_string(), context.producer_id.to_string());
        let namespace = match self.namespaces.entry(names) {
            Entry::Occupied(slot) => *slot.get(),
            Entry::Vacant(slot) => {
                self.namespace_names
                    .push((context.session_id.as_str().into(), context.producer_id.as_str().into()));
                *slot.insert(next)
            }
        };
        let device = match context.measured_device() {
            Some(uuid) => {
                let key = (uuid.to_string(), context.clock_domain.to_string(), context.clock_kind);
                let next = self.device_names.len() as u32;
                match self.devices.entry(key) {
                    Entry::Occupied(slot) => *slot.get(),
                    Entry::Vacant(slot) => {
                        self.device_names.push((
                            uuid.into(),
                            context.clock_domain.as_str().into(),
                            context.clock_kind,
                        ));
                        *slot.insert(next)
                    }
                }
            }
            _ => NONE,
        };
        ContextInfo {
            namespace,
            same_run: self.run.as_ref().is_some_and(|(run, _)| **run == *context.run_id.as_str()),
            device,
            monotonic: context.clock_kind == ClockKind::Monotonic,
            clock_domain: self.names.number(&context.clock_domain),
            clock_kind: context.clock_kind,
        }
    }

    fn held(&mut self, seen: u32, event_id: &str) -> Held {
        Held { seen, event_id: self.event_ids.push(event_id) }
    }

    fn iteration_slot(&mut self, reference: RefView<'_>) -> u32 {
        if let Some((known, slot)) = &self.last_iteration
            && known.view() == reference
        {
            return *slot;
        }
        let slot = self.iteration_refs.slot(reference);
        self.last_iteration = Some((Arc::clone(&self.iteration_refs.refs[slot as usize]), slot));
        slot
    }

    fn put(
        &mut self,
        batch: &PreparedBatch,
        event: &PreparedEvent,
        info: ContextInfo,
        seen: u32,
    ) -> Result<(), ResolveError> {
        let event_id = batch.get(event.event_id);
        let new = Held { seen, event_id: NONE };
        match &event.body {
            PreparedBody::Request { request, attempt } => {
                let request = self.request_refs.slot(batch.get_ref(*request));
                let attempt = attempt.map_or(NONE, |a| self.attempt_refs.slot(batch.get_ref(a)));
                let next = self.request_rows.len() as u32;
                match self.requests.entry((request, attempt)) {
                    Entry::Occupied(slot) => {
                        let row = *slot.get() as usize;
                        keep_smallest(
                            &mut self.request_rows[row],
                            new,
                            event_id,
                            &mut self.event_ids,
                            &self.delivered,
                        )
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(next);
                        let held = self.held(seen, event_id);
                        self.request_rows.push(held);
                        self.request_slots.push(request);
                        Ok(())
                    }
                }
            }
            PreparedBody::Iteration { iteration, span } => {
                let slot = self.iteration_slot(batch.get_ref(*iteration)) as usize;
                grow(&mut self.iteration_of_slot, slot);
                match self.iteration_of_slot[slot] {
                    NONE => {
                        self.iteration_of_slot[slot] = self.iteration_rows.len() as u32;
                        let held = self.held(seen, event_id);
                        let elapsed_ns = if info.monotonic { span.duration_ns() } else { None };
                        self.iteration_rows.push(IterationRow { held, slot: slot as u32, elapsed_ns });
                        Ok(())
                    }
                    row => keep_smallest(
                        &mut self.iteration_rows[row as usize].held,
                        new,
                        event_id,
                        &mut self.event_ids,
                        &self.delivered,
                    ),
                }
            }
            PreparedBody::Stage { stage, request, iteration } => {
                let slot = self.stage_refs.slot(batch.get_ref(*stage)) as usize;
                grow(&mut self.stage_of_slot, slot);
                match self.stage_of_slot[slot] {
                    NONE => {
                        self.stage_of_slot[slot] = self.stage_rows.len() as u32;
                        let request = request.map_or(NONE, |r| self.request_refs.slot(batch.get_ref(r)));
                        let iteration = iteration.map_or(NONE, |i| self.iteration_slot(batch.get_ref(i)));
                        let held = self.held(seen, event_id);
                        self.stage_rows.push(StageRow { held, request, iteration });
                        Ok(())
                    }
                    row => keep_smallest(
                        &mut self.stage_rows[row as usize].held,
                        new,
                        event_id,
                        &mut self.event_ids,
                        &self.delivered,
                    ),
                }
            }
            PreparedBody::Membership { request, attempt, iteration, role } => {
                let request = self.request_refs.slot(batch.get_ref(*request));
                let attempt = attempt.map_or(NONE, |a| self.attempt_refs.slot(batch.get_ref(a)));
                let iteration = self.iteration_slot(batch.get_ref(*iteration));
                let role = self.roles.intern(batch.get(*role));
                let next = self.membership_rows.len() as u32;
                match self.memberships.entry((request, attempt, iteration, role)) {
                    Entry::Occupied(slot) => {
                        let row = *slot.get() as usize;
                        keep_smallest(
                            &mut self.membership_rows[row].held,
                            new,
                            event_id,
                            &mut self.event_ids,
                            &self.delivered,
                        )
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(next);
                        let held = self.held(seen, event_id);
                        let namespace = info.namespace;
                        self.membership_rows.push(MembershipRow {
                            held,
                            namespace,
                            request,
                            attempt,
                            iteration,
                        });
                        Ok(())
                    }
                }
            }
            PreparedBody::Activity(activity) => match self.activities.find_or_add(activity.key) {
                Ok(row) => keep_smallest(
                    &mut self.activity_rows[row as usize].held,
                    new,
                    event_id,
                    &mut self.event_ids,
                    &self.delivered,
                ),
                Err(_) => {
                    let held = self.held(seen, event_id);
                    let row = self.activity_row(held, batch, activity, info);
                    self.activity_rows.push(row);
                    Ok(())
                }
            },
            PreparedBody::Alignment { from, to, offset_ns, uncertainty_ns, validity } => {
                let from = self.names.number(batch.get(*from));
                let to = self.names.number(batch.get(*to));
                let key = (
                    info.namespace,
                    from,
                    to,
                    *offset_ns,
                    *uncertainty_ns,
                    validity.start_ns(),
                    validity.end_ns(),
                );
                let next = self.alignment_rows.len() as u32;
                match self.alignments.entry(key) {
                    Entry::Occupied(slot) => {
                        let row = *slot.get() as usize;
                        keep_smallest(
                            &mut self.alignment_rows[row].0,
                            new,
                            event_id,
                            &mut self.event_ids,
                            &self.delivered,
                        )
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(next);
                        let held = self.held(seen, event_id);
                        self.alignment_rows.push((held, key));
                        Ok(())
                    }
                }
            }
            PreparedBody::Untabled => Ok(()),
        }
    }

    fn activity_row(
        &mut self,
        held: Held,
        batch: &PreparedBatch,
        activity: &PreparedActivity,
        info: ContextInfo,
    ) -> ActivityRow {
        let iteration = activity.iteration.map_or(NONE, |i| self.iteration_slot(batch.get_ref(i)));
        let (start, end, busy) = match activity.busy {
            Busy::Span(from, to) => (from, to, RowBusy::Span),
            Busy::Listed(first, count) => {
                let at = self.intervals.len() as u64;
                self.intervals.extend_from_slice(&batch.intervals[first..first + count]);
                (at, count as u64, RowBusy::Listed)
            }
            Busy::Unknown => (0, 0, RowBusy::Unknown),
        };
        let kind = self.names.number(batch.get(activity.kind));
        if self.keep_labels {
            let labels = ActivityLabels::new(
                activity.name.map_or(NONE, |name| self.names.number(batch.get(name))),
                activity.scope.map_or(NONE, |scope| self.scopes.slot(batch.get_ref(scope))),
                activity.cuda_correlation_id,
            );
            self.activity_labels.push(labels);
        }
        // Prepared only where a report lists the activity by reference.
        let reference = match activity.reference {
            Some(reference) => {
                self.kept_refs.push(batch.get_ref(reference).to_entity_ref());
                (self.kept_refs.len() - 1) as u32
            }
            None => NONE,
        };
        ActivityRow {
            held,
            start,
            end,
            stream_id: activity.stream_id.unwrap_or(0),
            has_stream: activity.stream_id.is_some(),
            iteration,
            reference,
            class: self.classes.number(info.class(kind)),
            domain: activity.domain,
            busy,
        }
    }

    /// The resolved run, or the first conflicting entity when the stream
    /// held one (and no conflicting redelivery).
    pub fn finish(mut self) -> Result<StreamedRun, ResolveError> {
        if let Some(conflict) = self.entity_conflict.take() {
            return Err(conflict);
        }
        let total_slots = self.iteration_refs.refs.len();
        grow(&mut self.iteration_of_slot, total_slots.saturating_sub(1));
        let iteration_of_slot = std::mem::take(&mut self.iteration_of_slot);
        let mut known_requests = vec![false; self.request_refs.refs.len()];
        for &request in &self.request_slots {
            known_requests[request as usize] = true;
        }
        // Memberships are put in stormlog's order, (session, producer,
        // event_id), when they are first read ([`Memberships::sorted`]):
        // accounting never reads them, and the sort was a quarter of the
        // serial tail of `tally account`. Namespaces are few (and numbered
        // in u32, see `describe`): ranked once, they compare as integers.
        let names = &self.namespace_names;
        let mut by_name: Vec<u32> = (0..names.len() as u32).collect();
        by_name.sort_unstable_by(|&a, &b| names[a as usize].cmp(&names[b as usize]));
        let mut rank = vec![0u32; names.len()];
        for (place, &namespace) in by_name.iter().enumerate() {
            rank[namespace as usize] = place as u32;
        }
        let event_ids = &self.event_ids;
        let iteration_known = |slot: u32| slot != NONE && iteration_of_slot[slot as usize] != NONE;
        let mut missing: Vec<Missing> = Vec::new();
        for row in &self.membership_rows {
            let id = row.held.event_id;
            if !known_requests[row.request as usize] {
                missing.push(Missing { event_id: id, kind: ReferenceKind::Request, slot: row.request });
            } else if row.attempt != NONE && !self.requests.contains_key(&(row.request, row.attempt)) {
                missing.push(Missing { event_id: id, kind: ReferenceKind::Attempt, slot: row.attempt });
            }
            if !iteration_known(row.iteration) {
                missing.push(Missing { event_id: id, kind: ReferenceKind::Iteration, slot: row.iteration });
            }
        }
        for row in &self.stage_rows {
            let id = row.held.event_id;
            if row.request != NONE && !known_requests[row.request as usize] {
                missing.push(Missing { event_id: id, kind: ReferenceKind::Request, slot: row.request });
            }
            if row.iteration != NONE && !iteration_known(row.iteration) {
                missing.push(Missing { event_id: id, kind: ReferenceKind::Iteration, slot: row.iteration });
            }
        }
        // Activities are most of the rows, and read only to find an
        // unknown iteration: when every iteration referenced is known,
        // there is none to find.
        if iteration_of_slot.contains(&NONE) {
            for row in self.activity_rows.iter() {
                if row.iteration != NONE && !iteration_known(row.iteration) {
                    let id = row.held.event_id;
                    missing.push(Missing {
                        event_id: id,
                        kind: ReferenceKind::Iteration,
                        slot: row.iteration,
                    });
                }
            }
        }
        let reference = |item: &Missing| match item.kind {
            ReferenceKind::Request => self.request_refs.get(item.slot),
            ReferenceKind::Attempt => self.attempt_refs.get(item.slot),
            ReferenceKind::Iteration => self.iteration_refs.get(item.slot),
        };
        missing.sort_by(|a, b| {
            (event_ids.get(a.event_id), a.kind, reference(a).id()).cmp(&(
                event_ids.get(b.event_id),
                b.kind,
                reference(b).id(),
            ))
        });
        let unresolved_ids: Vec<Box<str>> =
            missing.iter().map(|item| event_ids.get(item.event_id).to_text().into_boxed_str()).collect();
        let counts = TableCounts {
            requests: self.request_rows.len(),
            iterations: self.iteration_rows.len(),
            stages: self.stage_rows.len(),
            memberships: self.membership_rows.len(),
            activities: self.activity_rows.len(),
            alignments: self.alignment_rows.len(),
        };
        Ok(StreamedRun {
            run_id: self.run.map(|(run, _)| run),
            counts,
            device_names: self.device_names,
            request_refs: self.request_refs.refs,
            attempt_refs: self.attempt_refs.refs,
            iteration_refs: self.iteration_refs.refs,
            unresolved_ids,
            iteration_of_slot,
            iteration_rows: self.iteration_rows,
            memberships: Memberships {
                rows: self.membership_rows,
                rank,
                event_ids: self.event_ids,
                sorted: OnceLock::new(),
            },
            activity_rows: self.activity_rows,
            intervals: self.intervals,
            kept_refs: self.kept_refs,
            missing,
            names: self.names.into_names(),
            classes: self.classes.classes,
            activity_labels: self.keep_labels.then_some(self.activity_labels),
            scopes: self.scopes.refs,
            alignments: self.alignment_rows.into_iter().map(|(_, key)| key).collect(),
        })
    }
}

/// An unresolved reference, by slot.
#[derive(Debug, Clone, Copy)]
struct Missing {
    event_id: u32,
    kind: ReferenceKind,
    slot: u32,
}

fn grow(slots: &mut Vec<u32>, index: usize) {
    if slots.len() <= index {
        slots.resize(index + 1, NONE);
    }
}

/// stormlog's `_put_entity` for a key already held: the same entity, and the
/// smallest event ID wins.
fn keep_smallest(
    held: &mut Held,
    new: Held,
    event_id: &str,
    event_ids: &mut EventIds,
    delivered: &Chunked<(u64, usize)>,
) -> Result<(), ResolveError> {
    let (kept, earlier) = delivered[held.seen as usize];
    let (fingerprint, record) = delivered[new.seen as usize];
    if kept != fingerprint {
        return Err(ResolveError::ConflictingEntityIdentity { record, earlier });
    }
    if event_ids.get(held.event_id).cmp_text(event_id) == std::cmp::Ordering::Greater {
        *held = Held { event_id: event_ids.push(event_id), ..new };
    }
    Ok(())
}

/// Resolves records without keeping them: [`StreamingResolver`] over a sequence.
pub fn resolve_streaming<'a, R>(records: impl IntoIterator<Item = &'a R>) -> Result<StreamedRun, ResolveError>
where
    R: AsCorrelationEvent + 'a,
{
    let mut resolver = StreamingResolver::new().keeping_labels();
    for (index, record) in records.into_iter().enumerate() {
        resolver.push(index, record)?;
    }
    resolver.finish()
}
