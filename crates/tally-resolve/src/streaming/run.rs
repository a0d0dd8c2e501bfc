//! The resolved run: [`StreamedRun`], what [`StreamingResolver`] keeps of
//! a stream, and the facts accounting and reports read of it.

use std::sync::{Arc, OnceLock};

use tally_core::{BusyIntervals, ClockKind, EntityRef, Interval};
use tally_utils::chunked::Chunked;

#[cfg(doc)]
use super::StreamingResolver;
use super::{
    ActivityClass, ActivityLabels, ActivityRow, AlignmentSlots, IterationRow, MembershipRow, Missing, NONE,
    RowBusy,
};
use crate::event_ids::EventIds;
use crate::evidence::{ActivityFacts, AlignmentFacts, IterationFacts, MembershipFacts, ResolvedEvidence};
use crate::{ReferenceKind, TableCounts, UnresolvedReference};

/// A run resolved by [`StreamingResolver`]: what accounting and reports need, and
/// nothing of the events themselves.
#[derive(Debug)]
pub struct StreamedRun {
    pub(super) run_id: Option<Box<str>>,
    pub(super) counts: TableCounts,
    pub(super) device_names: Vec<(Box<str>, Box<str>, ClockKind)>,
    pub(super) request_refs: Vec<Arc<EntityRef>>,
    pub(super) attempt_refs: Vec<Arc<EntityRef>>,
    pub(super) iteration_refs: Vec<Arc<EntityRef>>,
    /// The event ID of each of `missing`, in its order.
    pub(super) unresolved_ids: Vec<Box<str>>,
    pub(super) iteration_of_slot: Vec<u32>,
    pub(super) iteration_rows: Vec<IterationRow>,
    pub(super) memberships: Memberships,
    pub(super) activity_rows: Chunked<ActivityRow>,
    pub(super) intervals: Vec<Interval>,
    pub(super) kept_refs: Vec<EntityRef>,
    pub(super) missing: Vec<Missing>,
    pub(super) names: Vec<Box<str>>,
    pub(super) classes: Vec<ActivityClass>,
    /// Row `i` labels activity row `i`; `None` unless the resolver kept
    /// labels.
    pub(super) activity_labels: Option<Chunked<ActivityLabels>>,
    pub(super) scopes: Vec<Arc<EntityRef>>,
    pub(super) alignments: Vec<AlignmentSlots>,
}

/// A run's memberships as they arrived, and what puts them in stormlog's
/// order when they are first read.
#[derive(Debug)]
pub(super) struct Memberships {
    pub(super) rows: Vec<MembershipRow>,
    /// Each namespace's place among the namespaces sorted by name.
    pub(super) rank: Vec<u32>,
    pub(super) event_ids: EventIds,
    pub(super) sorted: OnceLock<Vec<MembershipRow>>,
}

impl Memberships {
    /// The rows in stormlog's order, (session, producer, event_id), sorted
    /// on the first call.
    fn sorted(&self) -> &[MembershipRow] {
        self.sorted.get_or_init(|| {
            let (rank, event_ids) = (&self.rank, &self.event_ids);
            let mut rows = self.rows.clone();
            rows.sort_by(|a, b| {
                (rank[a.namespace as usize], event_ids.get(a.held.event_id))
                    .cmp(&(rank[b.namespace as usize], event_ids.get(b.held.event_id)))
            });
            rows
        })
    }
}

impl StreamedRun {
    /// Whether activities carry their names, CUDA correlation IDs and
    /// correlation scopes ([`StreamingResolver::keeping_labels`]).
    pub fn labels_kept(&self) -> bool {
        self.activity_labels.is_some()
    }
}

impl ResolvedEvidence for StreamedRun {
    fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    fn counts(&self) -> TableCounts {
        self.counts
    }

    fn iteration_facts(&self) -> impl Iterator<Item = IterationFacts<'_>> + '_ {
        self.iteration_rows.iter().map(|row| IterationFacts {
            iteration_ref: &self.iteration_refs[row.slot as usize],
            elapsed_ns: row.elapsed_ns,
        })
    }

    fn activity_facts(&self) -> impl Iterator<Item = ActivityFacts<'_>> + '_ {
        let no_labels = ActivityLabels::NONE;
        let mut labels = self.activity_labels.as_ref().map(Chunked::iter);
        self.activity_rows.iter().map(move |row| {
            // Pushed beside each row, so there is one per row when kept.
            let labels = labels.as_mut().and_then(Iterator::next).copied().unwrap_or(no_labels);
            let class = self.classes[row.class as usize];
            let busy = match row.busy {
                RowBusy::Unknown => None,
                RowBusy::Span => Interval::new(row.start, row.end).map(BusyIntervals::Span),
                RowBusy::Listed => {
                    let first = row.start as usize;
                    self.intervals.get(first..first + row.end as usize).map(BusyIntervals::Listed)
                }
            };
            let device = (class.device != NONE).then(|| {
                let (uuid, domain, kind) = &self.device_names[class.device as usize];
                (&**uuid, &**domain, *kind)
            });
            let iteration = (row.iteration != NONE)
                .then(|| self.iteration_of_slot[row.iteration as usize])
                .filter(|&link| link != NONE)
                .map(|link| link as usize);
            ActivityFacts {
                reference: (row.reference != NONE).then(|| &self.kept_refs[row.reference as usize]),
                attributed: row.iteration != NONE,
                domain: row.domain,
                device,
                busy,
                stream_id: row.has_stream.then_some(row.stream_id),
                iteration,
                kind: &self.names[class.kind as usize],
                name: labels.name().map(|name| &*self.names[name as usize]),
                clock: (&self.names[class.clock_domain as usize], class.clock_kind),
                cuda_correlation_id: labels.correlation(),
                correlation_scope: (labels.scope != NONE).then(|| &*self.scopes[labels.scope as usize]),
            }
        })
    }

    fn membership_facts(&self) -> impl Iterator<Item = MembershipFacts<'_>> + '_ {
        self.memberships.sorted().iter().map(|row| MembershipFacts {
            request_ref: &self.request_refs[row.request as usize],
            attempt_ref: (row.attempt != NONE).then(|| &*self.attempt_refs[row.attempt as usize]),
            iteration_ref: &self.iteration_refs[row.iteration as usize],
        })
    }

    fn alignment_facts(&self) -> impl Iterator<Item = AlignmentFacts<'_>> + '_ {
        self.alignments.iter().map(|&(_, from, to, offset_ns, uncertainty_ns, valid_from_ns, valid_to_ns)| {
            AlignmentFacts {
                from_clock_domain: &self.names[from as usize],
                to_clock_domain: &self.names[to as usize],
                offset_ns,
                uncertainty_ns,
                valid_from_ns,
                valid_to_ns,
            }
        })
    }

    fn unresolved_references(&self) -> impl Iterator<Item = UnresolvedReference<'_>> + '_ {
        self.missing.iter().zip(&self.unresolved_ids).map(|(item, event_id)| UnresolvedReference {
            event_id,
            kind: item.kind,
            reference: match item.kind {
                ReferenceKind::Request => &self.request_refs[item.slot as usize],
                ReferenceKind::Attempt => &self.attempt_refs[item.slot as usize],
                ReferenceKind::Iteration => &self.iteration_refs[item.slot as usize],
            },
        })
    }
}
