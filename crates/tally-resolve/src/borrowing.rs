//! The borrowing resolver: stormlog's `resolve_inference_events`, building a
//! [`CorrelationGraph`] that borrows the events it was given (nothing is
//! cloned). Its rules are the crate's (see the crate docs); the streaming
//! resolver ([`crate::StreamingResolver`]) follows them rule for rule.

use std::collections::hash_map::Entry;

use tally_core::{
    ActivityRef, ClockAlignment, CorrelationContext, CorrelationEvent, EntityRef, EventBody, Iteration,
    Membership, Request, Stage,
};
use tally_utils::fast_hash::{FastHashMap, FastHashSet};

use crate::hash::{Prehashed, PrehashedMap, combine, prehash};
use crate::{AsCorrelationEvent, ReferenceKind, ResolveError, Resolved, TableCounts, UnresolvedReference};

/// Key of the request table.
pub type RequestKey<'a> = (&'a EntityRef, Option<&'a EntityRef>);

/// The resolved evidence of one run.
///
/// Tables hold entities in the order stormlog's dicts do (first delivery of
/// each key); memberships and alignments are sorted by `(session_id,
/// producer_id, event_id)`. Lookups by key go through hash maps built once.
#[derive(Debug)]
pub struct CorrelationGraph<'a> {
    run_id: Option<&'a str>,
    requests: Vec<Resolved<'a, Request>>,
    iterations: Vec<Resolved<'a, Iteration>>,
    stages: Vec<Resolved<'a, Stage>>,
    memberships: Vec<Resolved<'a, Membership>>,
    activities: Vec<Resolved<'a, ActivityRef>>,
    alignments: Vec<Resolved<'a, ClockAlignment>>,
    unresolved: Vec<UnresolvedReference<'a>>,
    request_index: PrehashedMap<RequestKey<'a>, u32>,
    iteration_index: PrehashedMap<&'a EntityRef, u32>,
    stage_index: PrehashedMap<&'a EntityRef, u32>,
    activity_index: PrehashedMap<&'a EntityRef, u32>,
    /// For each activity, the row of its iteration, or [`NO_LINK`].
    activity_iteration: Vec<u32>,
}

/// Marker for "no index" in the `u32` links; tables are capped below it.
const TABLE_LIMIT: usize = u32::MAX as usize;

impl<'a> CorrelationGraph<'a> {
    /// The run all correlation events belong to; `None` when there were none.
    pub fn run_id(&self) -> Option<&'a str> {
        self.run_id
    }

    /// Requests, one per `(request_ref, attempt_ref)`.
    pub fn requests(&self) -> &[Resolved<'a, Request>] {
        &self.requests
    }

    /// Iterations, one per `iteration_ref`.
    pub fn iterations(&self) -> &[Resolved<'a, Iteration>] {
        &self.iterations
    }

    /// Stages, one per `stage_ref`.
    pub fn stages(&self) -> &[Resolved<'a, Stage>] {
        &self.stages
    }

    /// Memberships, sorted by `(session_id, producer_id, event_id)`.
    pub fn memberships(&self) -> &[Resolved<'a, Membership>] {
        &self.memberships
    }

    /// Activities, one per `activity_ref`.
    pub fn activities(&self) -> &[Resolved<'a, ActivityRef>] {
        &self.activities
    }

    /// Clock alignments, sorted by `(session_id, producer_id, event_id)`.
    pub fn alignments(&self) -> &[Resolved<'a, ClockAlignment>] {
        &self.alignments
    }

    /// The alignment events, for `tally-clock`'s functions.
    pub fn alignment_events(&self) -> impl Iterator<Item = &'a CorrelationEvent> + '_ {
        self.alignments.iter().map(|entry| entry.event)
    }

    /// References to unknown entities, sorted by `(event_id, kind, ref.id)`.
    pub fn unresolved(&self) -> &[UnresolvedReference<'a>] {
        &self.unresolved
    }

    /// The sizes of the tables.
    pub fn counts(&self) -> TableCounts {
        TableCounts {
            requests: self.requests.len(),
            iterations: self.iterations.len(),
            stages: self.stages.len(),
            memberships: self.memberships.len(),
            activities: self.activities.len(),
            alignments: self.alignments.len(),
        }
    }

    /// The request (or attempt) with this key.
    pub fn request(&self, request: &EntityRef, attempt: Option<&EntityRef>) -> Option<Resolved<'a, Request>> {
        let index = *self.request_index.get(&Prehashed::new((request, attempt)))?;
        Some(self.requests[index as usize])
    }

    /// The position of an iteration in [`CorrelationGraph::iterations`].
    pub fn iteration_index(&self, iteration: &EntityRef) -> Option<usize> {
        self.iteration_index.get(&Prehashed::new(iteration)).map(|&index| index as usize)
    }

    /// The iteration with this reference.
    pub fn iteration(&self, iteration: &EntityRef) -> Option<Resolved<'a, Iteration>> {
        self.iteration_index(iteration).map(|index| self.iterations[index])
    }

    /// The stage with this reference.
    pub fn stage(&self, stage: &EntityRef) -> Option<Resolved<'a, Stage>> {
        let index = *self.stage_index.get(&Prehashed::new(stage))?;
        Some(self.stages[index as usize])
    }

    /// The activity with this reference.
    pub fn activity(&self, activity: &EntityRef) -> Option<Resolved<'a, ActivityRef>> {
        let index = *self.activity_index.get(&Prehashed::new(activity))?;
        Some(self.activities[index as usize])
    }

    /// For the activity at `index` in [`CorrelationGraph::activities`], the
    /// position of its iteration in [`CorrelationGraph::iterations`], when it
    /// is linked to a known one.
    pub fn activity_iteration(&self, index: usize) -> Option<usize> {
        self.activity_iteration.get(index).copied().filter(|&link| link != NO_LINK).map(|link| link as usize)
    }
}

/// A deduplicated event and the position of its first delivery.
type Unique<'a> = (usize, &'a CorrelationEvent);

/// Deduplicates and resolves a stream of records; see the crate docs.
///
/// Accepts anything that iterates over references to [`InferenceRecord`](tally_core::InferenceRecord)s
/// or [`CorrelationEvent`]s.
pub fn resolve_inference_events<'a, R>(
    records: impl IntoIterator<Item = &'a R>,
) -> Result<CorrelationGraph<'a>, ResolveError>
where
    R: AsCorrelationEvent + 'a,
{
    // First every event's keys are hashed, in one pass that reads each
    // event's strings once; the tables then probe by stored hash. Counting
    // the entities per table sizes every table once: growing one would
    // rehash all its keys.
    let mut sizes = [0usize; 6];
    let delivered: Vec<Delivered<'a>> = records
        .into_iter()
        .enumerate()
        .filter_map(|(record, item)| item.as_correlation_event().map(|event| (record, event)))
        .map(|(record, event)| {
            let delivered = Delivered::new(record, event);
            if let Some(table) = table_of(event.body()) {
                sizes[table] += 1;
            }
            delivered
        })
        .collect();
    let mut dedup = Dedup::with_capacity(delivered.len());
    let mut builder = Builder::with_sizes(sizes);
    // One pass: an event goes into its table as soon as it is found new.
    // stormlog deduplicates the whole stream before it builds tables, so an
    // entity conflict is reported only when the rest of the stream holds no
    // event conflict; the tables see the events in stormlog's order, so the
    // first entity conflict is stormlog's.
    let mut entity_conflict = None;
    for item in &delivered {
        if dedup.is_new(item)? && entity_conflict.is_none() {
            entity_conflict = builder.put(item).err();
        }
    }
    if let Some(conflict) = entity_conflict {
        return Err(conflict);
    }
    drop(delivered);
    Ok(builder.finish(dedup.run.map(|(run_id, _)| run_id)))
}

/// One delivered event with its keys' hashes.
struct Delivered<'a> {
    record: usize,
    event: &'a CorrelationEvent,
    /// Of the `event_id` (the namespace is mixed in later).
    id_hash: u64,
    /// Of the entity key, for the event's table.
    key_hash: u64,
    /// Of an activity's `iteration_ref`.
    link_hash: u64,
}

impl<'a> Delivered<'a> {
    fn new(record: usize, event: &'a CorrelationEvent) -> Self {
        let id_hash = prehash(event.event_id().as_str());
        let (key_hash, link_hash) = match event.body() {
            EventBody::Request(body) => (prehash(&request_key(body)), 0),
            EventBody::Iteration(body) => (prehash(&&body.iteration_ref), 0),
            EventBody::Stage(body) => (prehash(&&body.stage_ref), 0),
            EventBody::Membership(body) => (prehash(&membership_key(body)), 0),
            EventBody::ActivityRef(body) => {
                (prehash(&&body.activity_ref), body.iteration_ref.as_ref().map_or(0, |it| prehash(&it)))
            }
            EventBody::ClockAlignment(body) => (prehash(&alignment_key(event, body)), 0),
            EventBody::Artifact(_) | EventBody::Capabilities(_) => (0, 0),
        };
        Self { record, event, id_hash, key_hash, link_hash }
    }
}

fn request_key(body: &Request) -> RequestKey<'_> {
    (&body.request_ref, body.attempt_ref.as_ref())
}

fn membership_key(body: &Membership) -> MembershipKey<'_> {
    (&body.request_ref, body.attempt_ref.as_ref(), &body.iteration_ref, &body.role)
}

fn alignment_key<'a>(event: &'a CorrelationEvent, body: &'a ClockAlignment) -> AlignmentKey<'a> {
    let context = event.context();
    (
        context.session_id.as_str(),
        context.producer_id.as_str(),
        body.from_clock_domain.as_str(),
        body.to_clock_domain.as_str(),
        body.offset_ns,
        body.uncertainty_ns,
        body.validity.start_ns(),
        body.validity.end_ns(),
    )
}

/// stormlog's `_deduplicate_events`, one event at a time.
struct Dedup<'a> {
    run: Option<(&'a str, usize)>,
    /// Events are keyed by (session_id, producer_id, event_id). The first two
    /// come from contexts, which readers share between events, so they are
    /// numbered once per context and the key compares one string, not three.
    namespaces: FastHashMap<(&'a str, &'a str), u32>,
    last_context: Option<(&'a CorrelationContext, u32)>,
    /// Each distinct event's row in `events`.
    seen: PrehashedMap<(u32, &'a str), u32>,
    /// Each distinct event and the position of its first delivery.
    events: Vec<Unique<'a>>,
}

impl<'a> Dedup<'a> {
    fn with_capacity(capacity: usize) -> Self {
        let mut seen = PrehashedMap::default();
        seen.reserve(capacity);
        Self {
            run: None,
            namespaces: FastHashMap::default(),
            last_context: None,
            seen,
            events: Vec::with_capacity(capacity),
        }
    }

    /// Whether the event is delivered for the first time; an error when it
    /// names another run or repeats an event ID with other content.
    fn is_new(&mut self, item: &Delivered<'a>) -> Result<bool, ResolveError> {
        let (index, event) = (item.record, item.event);
        let context = event.context();
        match self.run {
            None => self.run = Some((&context.run_id, index)),
            Some((run_id, earlier)) if run_id != context.run_id.as_str() => {
                return Err(ResolveError::MultipleRunIds { record: index, earlier });
            }
            Some(_) => {}
        }
        let namespace = match self.last_context {
            Some((known, namespace)) if std::ptr::eq(known, context) => namespace,
            _ => {
                let next = self.namespaces.len() as u32;
                let namespace = *self
                    .namespaces
                    .entry((context.session_id.as_str(), context.producer_id.as_str()))
                    .or_insert(next);
                self.last_context = Some((context, namespace));
                namespace
            }
        };
        let key =
            Prehashed::with_hash(combine(item.id_hash, namespace), (namespace, event.event_id().as_str()));
        match self.seen.entry(key) {
            Entry::Occupied(slot) => {
                let (earlier, previous) = self.events[*slot.get() as usize];
                if previous != event {
                    return Err(ResolveError::ConflictingEventIdentity { record: index, earlier });
                }
                Ok(false)
            }
            Entry::Vacant(slot) => {
                if self.events.len() >= TABLE_LIMIT {
                    // Refuse rather than wrap the u32 links; four billion
                    // events would not fit in memory anyway.
                    return Err(ResolveError::TooManyEvents { record: index });
                }
                slot.insert(self.events.len() as u32);
                self.events.push((index, event));
                Ok(true)
            }
        }
    }
}

/// Which entity table an event goes to.
fn table_of(body: &EventBody) -> Option<usize> {
    match body {
        EventBody::Request(_) => Some(0),
        EventBody::Iteration(_) => Some(1),
        EventBody::Stage(_) => Some(2),
        EventBody::Membership(_) => Some(3),
        EventBody::ActivityRef(_) => Some(4),
        EventBody::ClockAlignment(_) => Some(5),
        EventBody::Artifact(_) | EventBody::Capabilities(_) => None,
    }
}

/// Alignment identity: session, producer, domains, offset, uncertainty and
/// validity window.
type AlignmentKey<'a> = (&'a str, &'a str, &'a str, &'a str, i64, u64, Option<u64>, Option<u64>);
/// Membership identity.
type MembershipKey<'a> = (&'a EntityRef, Option<&'a EntityRef>, &'a EntityRef, &'a str);

struct Builder<'a> {
    requests: Table<'a, RequestKey<'a>, Request>,
    iterations: Table<'a, &'a EntityRef, Iteration>,
    stages: Table<'a, &'a EntityRef, Stage>,
    memberships: Table<'a, MembershipKey<'a>, Membership>,
    activities: Table<'a, &'a EntityRef, ActivityRef>,
    alignments: Table<'a, AlignmentKey<'a>, ClockAlignment>,
    /// Per activity row, its iteration's row, or [`NO_LINK`] (unknown so far).
    activity_iteration: Vec<u32>,
    /// The last iteration an activity was linked to: a trace lists an
    /// iteration's activities together.
    last_link: Option<(&'a EntityRef, u32)>,
}

/// No iteration row (yet).
const NO_LINK: u32 = u32::MAX;

struct Table<'a, K, T> {
    index: PrehashedMap<K, u32>,
    rows: Vec<Resolved<'a, T>>,
}

impl<'a, K: Eq, T> Table<'a, K, T> {
    fn with_capacity(capacity: usize) -> Self {
        let mut index = PrehashedMap::default();
        index.reserve(capacity);
        Self { index, rows: Vec::with_capacity(capacity) }
    }

    /// stormlog's `_put_entity`: a second event for a key must describe the
    /// same entity; the smallest `event_id` wins. Returns whether the key was
    /// new.
    fn put(&mut self, hash: u64, key: K, entry: Resolved<'a, T>) -> Result<bool, ResolveError> {
        match self.index.entry(Prehashed::with_hash(hash, key)) {
            Entry::Occupied(slot) => {
                let held = &mut self.rows[*slot.get() as usize];
                if !held.event.same_entity_as(entry.event) {
                    return Err(ResolveError::ConflictingEntityIdentity {
                        record: entry.record,
                        earlier: held.record,
                    });
                }
                if entry.event.event_id() < held.event.event_id() {
                    *held = entry;
                }
                Ok(false)
            }
            Entry::Vacant(slot) => {
                // Fewer rows than deduplicated events, which are capped.
                slot.insert(self.rows.len() as u32);
                self.rows.push(entry);
                Ok(true)
            }
        }
    }
}

impl<'a> Builder<'a> {
    fn with_sizes(sizes: [usize; 6]) -> Self {
        Self {
            requests: Table::with_capacity(sizes[0]),
            iterations: Table::with_capacity(sizes[1]),
            stages: Table::with_capacity(sizes[2]),
            memberships: Table::with_capacity(sizes[3]),
            activities: Table::with_capacity(sizes[4]),
            alignments: Table::with_capacity(sizes[5]),
            activity_iteration: Vec::with_capacity(sizes[4]),
            last_link: None,
        }
    }

    /// The row of a known iteration; only known ones are remembered, since
    /// an iteration may be delivered after its activities.
    fn link(&mut self, hash: u64, iteration: &'a EntityRef) -> u32 {
        if let Some((known, row)) = self.last_link
            && (std::ptr::eq(known, iteration) || known == iteration)
        {
            return row;
        }
        match self.iterations.index.get(&Prehashed::with_hash(hash, iteration)) {
            Some(&row) => {
                self.last_link = Some((iteration, row));
                row
            }
            None => NO_LINK,
        }
    }

    fn put(&mut self, item: &Delivered<'a>) -> Result<(), ResolveError> {
        let (record, event, hash) = (item.record, item.event, item.key_hash);
        match event.body() {
            EventBody::Request(body) => {
                self.requests.put(hash, request_key(body), Resolved { event, body, record }).map(drop)
            }
            EventBody::Iteration(body) => {
                self.iterations.put(hash, &body.iteration_ref, Resolved { event, body, record }).map(drop)
            }
            EventBody::Stage(body) => {
                self.stages.put(hash, &body.stage_ref, Resolved { event, body, record }).map(drop)
            }
            EventBody::Membership(body) => {
                self.memberships.put(hash, membership_key(body), Resolved { event, body, record }).map(drop)
            }
            EventBody::ActivityRef(body) => {
                if self.activities.put(hash, &body.activity_ref, Resolved { event, body, record })? {
                    // A new row; a re-report has the same iteration_ref.
                    let link = match &body.iteration_ref {
                        Some(iteration) => self.link(item.link_hash, iteration),
                        None => NO_LINK,
                    };
                    self.activity_iteration.push(link);
                }
                Ok(())
            }
            EventBody::ClockAlignment(body) => self
                .alignments
                .put(hash, alignment_key(event, body), Resolved { event, body, record })
                .map(drop),
            EventBody::Artifact(_) | EventBody::Capabilities(_) => Ok(()),
        }
    }

    fn finish(self, run_id: Option<&'a str>) -> CorrelationGraph<'a> {
        let Builder {
            requests,
            iterations,
            stages,
            memberships,
            activities,
            alignments,
            mut activity_iteration,
            ..
        } = self;
        let mut memberships = memberships.rows;
        let mut alignments = alignments.rows;
        memberships.sort_by(|a, b| event_order(a.event, b.event));
        alignments.sort_by(|a, b| event_order(a.event, b.event));
        // Activities delivered before their iteration.
        for (link, activity) in activity_iteration.iter_mut().zip(&activities.rows) {
            if *link == NO_LINK
                && let Some(iteration) = &activity.body.iteration_ref
                && let Some(&row) = iterations.index.get(&Prehashed::new(iteration))
            {
                *link = row;
            }
        }
        let mut graph = CorrelationGraph {
            run_id,
            requests: requests.rows,
            iterations: iterations.rows,
            stages: stages.rows,
            memberships,
            activities: activities.rows,
            alignments,
            unresolved: Vec::new(),
            request_index: requests.index,
            iteration_index: iterations.index,
            stage_index: stages.index,
            activity_index: activities.index,
            activity_iteration,
        };
        graph.unresolved = find_unresolved(&graph);
        graph
    }
}

fn event_order(a: &CorrelationEvent, b: &CorrelationEvent) -> std::cmp::Ordering {
    let (left, right) = (a.context(), b.context());
    (left.session_id.as_str(), left.producer_id.as_str(), a.event_id().as_str()).cmp(&(
        right.session_id.as_str(),
        right.producer_id.as_str(),
        b.event_id().as_str(),
    ))
}

/// stormlog's `_find_unresolved`: memberships (in their sorted order), then
/// stages, then activities, stably sorted by `(event_id, kind, ref.id)`.
fn find_unresolved<'a>(graph: &CorrelationGraph<'a>) -> Vec<UnresolvedReference<'a>> {
    let known_requests: FastHashSet<&EntityRef> =
        graph.requests.iter().map(|r| &r.body.request_ref).collect();
    let mut missing = Vec::new();
    let mut push = |event: &'a CorrelationEvent, kind, reference| {
        missing.push(UnresolvedReference { event_id: event.event_id().as_str(), kind, reference });
    };
    for membership in &graph.memberships {
        let body = membership.body;
        if !known_requests.contains(&body.request_ref) {
            push(membership.event, ReferenceKind::Request, &body.request_ref);
        } else if let Some(attempt) = &body.attempt_ref
            && !graph.request_index.contains_key(&Prehashed::new((&body.request_ref, Some(attempt))))
        {
            push(membership.event, ReferenceKind::Attempt, attempt);
        }
        if !graph.iteration_index.contains_key(&Prehashed::new(&body.iteration_ref)) {
            push(membership.event, ReferenceKind::Iteration, &body.iteration_ref);
        }
    }
    for stage in &graph.stages {
        if let Some(request) = &stage.body.request_ref
            && !known_requests.contains(request)
        {
            push(stage.event, ReferenceKind::Request, request);
        }
        if let Some(iteration) = &stage.body.iteration_ref
            && !graph.iteration_index.contains_key(&Prehashed::new(iteration))
        {
            push(stage.event, ReferenceKind::Iteration, iteration);
        }
    }
    for (index, activity) in graph.activities.iter().enumerate() {
        if let Some(iteration) = &activity.body.iteration_ref
            && graph.activity_iteration[index] == NO_LINK
        {
            push(activity.event, ReferenceKind::Iteration, iteration);
        }
    }
    missing
        .sort_by(|a, b| (a.event_id, a.kind, a.reference.id()).cmp(&(b.event_id, b.kind, b.reference.id())));
    missing
}
