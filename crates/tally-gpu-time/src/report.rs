//! The accounting report: one owned, serializable value holding what
//! `tally account --format json` prints, the schema of
//! `tests/conformance/README.md`, key for key and in that order.
//!
//! It is built by one function, [`AccountingReport::of`], from a resolved
//! run and its accounting; the command line, tally-distributed's rank
//! accounting and anything else that reports GPU time use it, so the rows
//! are defined here and nowhere else. Keys may be added later, never
//! renamed.

use serde::{Deserialize, Serialize, Serializer};
use tally_core::{ClockKind, EntityRef};
use tally_resolve::{ReferenceKind, ResolvedEvidence, TableCounts};

use crate::{DeviceClock, DeviceTotal, GpuTime, RunAccounting, account_gpu_time};

/// GPU time of one device clock: stormlog's three figures with the clock
/// they were measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuTimeRow {
    /// The device.
    pub device_uuid: String,
    /// The clock domain of the activities' timestamps.
    pub clock_domain: String,
    /// `monotonic` or `device`.
    pub clock_kind: ClockKind,
    /// The sum of the busy intervals' lengths; overlaps count twice.
    pub summed_activity_ns: u128,
    /// The length of their union.
    pub busy_ns: u64,
    /// How many activities contributed.
    pub activity_count: u64,
}

impl GpuTimeRow {
    /// The device clock the figures were measured on.
    pub fn clock(&self) -> DeviceClock<'_> {
        DeviceClock::new(&self.device_uuid, &self.clock_domain, self.clock_kind)
    }

    fn of(clock: &DeviceClock<'_>, time: &GpuTime) -> Self {
        Self {
            device_uuid: clock.device_uuid.to_owned(),
            clock_domain: clock.clock_domain.to_owned(),
            clock_kind: clock.clock_kind,
            summed_activity_ns: time.summed_activity_ns,
            busy_ns: time.busy_ns,
            activity_count: time.activity_count,
        }
    }
}

/// One known iteration: its elapsed time and its GPU time per device clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationRow {
    /// The iteration.
    #[serde(serialize_with = "ordered_ref")]
    pub iteration_ref: EntityRef,
    /// `end − start` when its clock is monotonic and both ends are known.
    pub elapsed_ns: Option<u64>,
    /// Its linked, measured activities per device clock, sorted by clock.
    pub gpu: Vec<GpuTimeRow>,
}

/// A reference to an entity no event reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnresolvedRow {
    /// The event that holds the reference.
    pub event_id: String,
    /// What it pointed at.
    pub kind: ReferenceKind,
    /// The missing entity.
    #[serde(rename = "ref", serialize_with = "ordered_ref")]
    pub reference: EntityRef,
}

/// Busy time of one stream, inside a [`DeviceDetailRow`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamRow {
    /// The stream.
    pub stream_id: u64,
    /// The stream's summed time.
    pub summed_activity_ns: u128,
    /// The stream's busy time.
    pub busy_ns: u64,
    /// Its activities.
    pub activity_count: u64,
}

/// tally's figures per device clock beyond stormlog's (`--detail`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceDetailRow {
    /// The device.
    pub device_uuid: String,
    /// The clock domain.
    pub clock_domain: String,
    /// The clock kind.
    pub clock_kind: ClockKind,
    /// Summed over busy: a ratio, not a time, so a float; `None` when
    /// nothing was busy.
    pub overlap_factor: Option<f64>,
    /// The most activities running at one instant.
    pub peak_concurrency: u64,
    /// First start of a non-empty busy interval.
    pub envelope_start_ns: Option<u64>,
    /// Last end of one.
    pub envelope_end_ns: Option<u64>,
    /// How many idle gaps separate the busy periods.
    pub idle_gap_count: u64,
    /// Their total length.
    pub idle_ns: u64,
    /// The longest.
    pub longest_idle_gap_ns: u64,
    /// Busy time per stream whose `stream_id` is known, sorted by stream.
    pub streams: Vec<StreamRow>,
}

impl DeviceDetailRow {
    fn of(total: &DeviceTotal<'_>) -> Self {
        let detail = &total.detail;
        Self {
            device_uuid: total.clock.device_uuid.to_owned(),
            clock_domain: total.clock.clock_domain.to_owned(),
            clock_kind: total.clock.clock_kind,
            overlap_factor: total.time.overlap_factor(),
            peak_concurrency: detail.peak_concurrency,
            envelope_start_ns: detail.envelope.map(|(start, _)| start),
            envelope_end_ns: detail.envelope.map(|(_, end)| end),
            idle_gap_count: detail.idle_gaps.count,
            idle_ns: detail.idle_gaps.total_ns,
            longest_idle_gap_ns: detail.idle_gaps.longest_ns,
            streams: detail
                .streams
                .iter()
                .map(|stream| StreamRow {
                    stream_id: stream.stream_id,
                    summed_activity_ns: stream.time.summed_activity_ns,
                    busy_ns: stream.time.busy_ns,
                    activity_count: stream.time.activity_count,
                })
                .collect(),
        }
    }
}

/// The GPU-time accounting of one resolved run, owned and serializable:
/// the object `tally account --format json` prints (see
/// `tests/conformance/README.md`). Device clocks of different ranks or
/// devices stay separate rows; nothing here adds figures across clocks.
///
/// ```
/// use tally_gpu_time::AccountingReport;
/// let records: Vec<tally_core::InferenceRecord> = Vec::new();
/// let graph = tally_resolve::resolve_inference_events(&records)?;
/// let report = AccountingReport::from_resolved(&graph, false);
/// assert_eq!(report.run_id, None);
/// assert!(report.device_totals.is_empty() && report.device_detail.is_none());
/// # Ok::<(), tally_resolve::ResolveError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountingReport {
    /// The run; `None` when there was no correlation event.
    pub run_id: Option<String>,
    /// The sizes of the resolved entity tables.
    pub counts: TableCounts,
    /// One row per device clock, sorted by clock.
    pub device_totals: Vec<GpuTimeRow>,
    /// Every known iteration, sorted by reference.
    pub iterations: Vec<IterationRow>,
    /// Activities of any domain without an iteration link, sorted.
    #[serde(serialize_with = "ordered_refs")]
    pub unattributed_activity_refs: Vec<EntityRef>,
    /// GPU activities that cannot be measured, sorted.
    #[serde(serialize_with = "ordered_refs")]
    pub unmeasured_gpu_activity_refs: Vec<EntityRef>,
    /// References to entities no event reported, in stormlog's order.
    pub unresolved: Vec<UnresolvedRow>,
    /// tally's per-device extras, present when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_detail: Option<Vec<DeviceDetailRow>>,
}

impl AccountingReport {
    /// The report of `graph`, whose accounting is `accounting`
    /// (`account_gpu_time(graph)`); `detail` adds `device_detail`.
    pub fn of<G: ResolvedEvidence + ?Sized>(graph: &G, accounting: &RunAccounting<'_>, detail: bool) -> Self {
        let references = |list: &[&EntityRef]| list.iter().map(|reference| (*reference).clone()).collect();
        Self {
            run_id: accounting.run_id.map(str::to_owned),
            counts: graph.counts(),
            device_totals: accounting
                .device_totals
                .iter()
                .map(|total| GpuTimeRow::of(&total.clock, &total.time))
                .collect(),
            iterations: accounting
                .iterations
                .iter()
                .map(|timing| IterationRow {
                    iteration_ref: timing.iteration_ref.clone(),
                    elapsed_ns: timing.elapsed_ns,
                    gpu: timing.gpu.iter().map(|(clock, time)| GpuTimeRow::of(clock, time)).collect(),
                })
                .collect(),
            unattributed_activity_refs: references(&accounting.unattributed_activity_refs),
            unmeasured_gpu_activity_refs: references(&accounting.unmeasured_gpu_activity_refs),
            unresolved: graph
                .unresolved_references()
                .map(|item| UnresolvedRow {
                    event_id: item.event_id.to_owned(),
                    kind: item.kind,
                    reference: item.reference.clone(),
                })
                .collect(),
            device_detail: detail.then(|| accounting.device_totals.iter().map(DeviceDetailRow::of).collect()),
        }
    }

    /// Accounts `graph` ([`account_gpu_time`]) and reports it.
    pub fn from_resolved<G: ResolvedEvidence + ?Sized>(graph: &G, detail: bool) -> Self {
        Self::of(graph, &account_gpu_time(graph), detail)
    }
}

/// A reference as the report writes it: `producer_id` before `id`, the
/// order of the corpus (an artifact's records sort their keys instead).
#[derive(Serialize)]
struct OrderedRef<'a> {
    producer_id: &'a str,
    id: &'a str,
}

impl<'a> OrderedRef<'a> {
    fn of(reference: &'a EntityRef) -> Self {
        Self { producer_id: reference.producer_id(), id: reference.id() }
    }
}

fn ordered_ref<S: Serializer>(reference: &EntityRef, serializer: S) -> Result<S::Ok, S::Error> {
    OrderedRef::of(reference).serialize(serializer)
}

fn ordered_refs<S: Serializer>(references: &[EntityRef], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(references.iter().map(OrderedRef::of))
}
