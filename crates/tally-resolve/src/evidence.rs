//! What accounting and reports read of a resolved run, whether it borrows
//! its events ([`CorrelationGraph`]) or kept none ([`crate::StreamedRun`]).

use tally_core::{ActivityDomain, BusyIntervals, ClockKind, EntityRef};

use crate::{CorrelationGraph, TableCounts, UnresolvedReference};

/// One known iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IterationFacts<'g> {
    /// The iteration.
    pub iteration_ref: &'g EntityRef,
    /// `end − start` when its clock is monotonic and both ends are known.
    pub elapsed_ns: Option<u64>,
}

/// One activity, as accounting sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivityFacts<'g> {
    /// The activity's reference. A [`CorrelationGraph`] always gives it; a
    /// [`crate::StreamedRun`] keeps it only for activities that are
    /// unattributed, or GPU activities that cannot be measured, the two
    /// lists a report names them in.
    pub reference: Option<&'g EntityRef>,
    /// Whether it names an iteration (`attribution_status` `linked`).
    pub attributed: bool,
    /// Where it ran.
    pub domain: ActivityDomain,
    /// `(device_uuid, clock_domain, clock_kind)` when its context names a
    /// device and a monotonic or device clock.
    pub device: Option<(&'g str, &'g str, ClockKind)>,
    /// Its busy intervals; `None` without a complete span.
    pub busy: Option<BusyIntervals<'g>>,
    /// The stream, when known.
    pub stream_id: Option<u64>,
    /// The position of its iteration among [`ResolvedEvidence::iteration_facts`],
    /// when it names a known one.
    pub iteration: Option<usize>,
    /// What it is, as written in `activity_kind` (`gpu_kernel`,
    /// `gpu_memcpy`, `cuda_runtime`, ...).
    pub kind: &'g str,
    /// Its name, as [`activity_name`] reads it from the metadata. This and
    /// the two correlation fields are the activity's *labels*: a
    /// [`crate::StreamedRun`] has them only when its resolver kept them
    /// ([`crate::StreamingResolver::keeping_labels`],
    /// [`crate::StreamedRun::labels_kept`]), and reads `None` otherwise.
    pub name: Option<&'g str>,
    /// The clock domain and kind of its context, device or not.
    pub clock: (&'g str, ClockKind),
    /// Its CUDA (CUPTI) correlation ID: a launch call and the work it
    /// launched share it within one `correlation_scope` (a label, see
    /// [`ActivityFacts::name`]).
    pub cuda_correlation_id: Option<u64>,
    /// The scope its correlation IDs are unique in (a label).
    pub correlation_scope: Option<&'g EntityRef>,
}

/// One clock alignment: `to = from + offset_ns`, within `uncertainty_ns`,
/// for `from` timestamps in `[valid_from_ns, valid_to_ns)` (open where
/// absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlignmentFacts<'g> {
    /// The clock timestamps are translated from.
    pub from_clock_domain: &'g str,
    /// The clock they are translated to.
    pub to_clock_domain: &'g str,
    /// Added to a `from` timestamp.
    pub offset_ns: i64,
    /// Half-width of the interval the true offset lies in.
    pub uncertainty_ns: u64,
    /// First `from` timestamp it holds for, inclusive.
    pub valid_from_ns: Option<u64>,
    /// End of its validity, exclusive.
    pub valid_to_ns: Option<u64>,
}

/// The name an activity's metadata gives it (one rule, in tally-core).
pub use tally_core::view::activity_name;

/// One membership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MembershipFacts<'g> {
    /// The member request.
    pub request_ref: &'g EntityRef,
    /// Its attempt, when given.
    pub attempt_ref: Option<&'g EntityRef>,
    /// The iteration.
    pub iteration_ref: &'g EntityRef,
}

/// A resolved run, read through facts: what `tally-gpu-time` accounts and
/// what `tally account` reports. Read-only, and readable from several
/// threads at once (the accounting of a large run shares its devices out).
pub trait ResolvedEvidence: Sync {
    /// The run; `None` when there was no correlation event.
    fn run_id(&self) -> Option<&str>;

    /// The sizes of the entity tables.
    fn counts(&self) -> TableCounts;

    /// The known iterations, in table order.
    fn iteration_facts(&self) -> impl Iterator<Item = IterationFacts<'_>> + '_;

    /// The activities, in table order.
    fn activity_facts(&self) -> impl Iterator<Item = ActivityFacts<'_>> + '_;

    /// The memberships, ordered by `(session_id, producer_id, event_id)`.
    fn membership_facts(&self) -> impl Iterator<Item = MembershipFacts<'_>> + '_;

    /// References to unknown entities, in stormlog's order.
    fn unresolved_references(&self) -> impl Iterator<Item = UnresolvedReference<'_>> + '_;

    /// The distinct clock alignments, in table order.
    fn alignment_facts(&self) -> impl Iterator<Item = AlignmentFacts<'_>> + '_;
}

impl ResolvedEvidence for CorrelationGraph<'_> {
    fn run_id(&self) -> Option<&str> {
        CorrelationGraph::run_id(self)
    }

    fn counts(&self) -> TableCounts {
        CorrelationGraph::counts(self)
    }

    fn iteration_facts(&self) -> impl Iterator<Item = IterationFacts<'_>> + '_ {
        self.iterations().iter().map(|iteration| IterationFacts {
            iteration_ref: &iteration.body.iteration_ref,
            elapsed_ns: iteration.event.elapsed_ns(),
        })
    }

    fn activity_facts(&self) -> impl Iterator<Item = ActivityFacts<'_>> + '_ {
        self.activities().iter().enumerate().map(|(index, activity)| {
            let context = activity.event.context();
            ActivityFacts {
                reference: Some(&activity.body.activity_ref),
                attributed: activity.body.iteration_ref.is_some(),
                domain: activity.body.activity_domain,
                device: context
                    .measured_device()
                    .map(|uuid| (uuid, context.clock_domain.as_str(), context.clock_kind)),
                busy: activity.event.busy_intervals(),
                stream_id: activity.body.stream_id,
                iteration: self.activity_iteration(index),
                kind: activity.body.activity_kind.as_str(),
                name: activity_name(activity.event.metadata()),
                clock: (context.clock_domain.as_str(), context.clock_kind),
                cuda_correlation_id: activity.body.cuda_correlation_id,
                correlation_scope: activity.body.correlation_scope.as_ref(),
            }
        })
    }

    fn membership_facts(&self) -> impl Iterator<Item = MembershipFacts<'_>> + '_ {
        self.memberships().iter().map(|membership| MembershipFacts {
            request_ref: &membership.body.request_ref,
            attempt_ref: membership.body.attempt_ref.as_ref(),
            iteration_ref: &membership.body.iteration_ref,
        })
    }

    fn unresolved_references(&self) -> impl Iterator<Item = UnresolvedReference<'_>> + '_ {
        self.unresolved().iter().copied()
    }

    fn alignment_facts(&self) -> impl Iterator<Item = AlignmentFacts<'_>> + '_ {
        self.alignments().iter().map(|alignment| AlignmentFacts {
            from_clock_domain: alignment.body.from_clock_domain.as_str(),
            to_clock_domain: alignment.body.to_clock_domain.as_str(),
            offset_ns: alignment.body.offset_ns,
            uncertainty_ns: alignment.body.uncertainty_ns,
            valid_from_ns: alignment.body.validity.start_ns(),
            valid_to_ns: alignment.body.validity.end_ns(),
        })
    }
}
