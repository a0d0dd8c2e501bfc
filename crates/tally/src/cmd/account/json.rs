//! `tally account --format json`: the object issue 3 specifies, key for key.
//! Later keys may be added, never renamed; `--detail` adds `device_detail`.

use std::io::{self, Write};

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use tally_core::EntityRef;
use tally_gpu_time::{DeviceClock, DeviceTotal, GpuTime, IterationTiming, RunAccounting};
use tally_resolve::{ResolvedEvidence, UnresolvedReference};

#[derive(Serialize)]
struct Report<'r, 'a> {
    run_id: Option<&'a str>,
    counts: Counts,
    device_totals: Rows<'r, 'a, DeviceTotal<'a>>,
    iterations: Rows<'r, 'a, IterationTiming<'a>>,
    unattributed_activity_refs: Rows<'r, 'a, &'a EntityRef>,
    unmeasured_gpu_activity_refs: Rows<'r, 'a, &'a EntityRef>,
    unresolved: Rows<'r, 'a, UnresolvedReference<'a>>,
}

#[derive(Serialize)]
struct Counts {
    requests: usize,
    iterations: usize,
    stages: usize,
    memberships: usize,
    activities: usize,
    alignments: usize,
}

#[derive(Serialize)]
struct Ref<'a> {
    producer_id: &'a str,
    id: &'a str,
}

impl<'a> Ref<'a> {
    fn of(reference: &'a EntityRef) -> Self {
        Self { producer_id: reference.producer_id(), id: reference.id() }
    }
}

#[derive(Serialize)]
struct GpuRow<'a> {
    device_uuid: &'a str,
    clock_domain: &'a str,
    clock_kind: &'static str,
    summed_activity_ns: u128,
    busy_ns: u64,
    activity_count: u64,
}

impl<'a> GpuRow<'a> {
    fn of(clock: &DeviceClock<'a>, time: &GpuTime) -> Self {
        Self {
            device_uuid: clock.device_uuid,
            clock_domain: clock.clock_domain,
            clock_kind: clock.clock_kind.as_str(),
            summed_activity_ns: time.summed_activity_ns,
            busy_ns: time.busy_ns,
            activity_count: time.activity_count,
        }
    }
}

/// A borrowed list, serialized item by item without building JSON values.
struct Rows<'r, 'a, T>(&'r [T], std::marker::PhantomData<&'a ()>);

fn rows<'r, 'a, T>(items: &'r [T]) -> Rows<'r, 'a, T> {
    Rows(items, std::marker::PhantomData)
}

impl<'a> Serialize for Rows<'_, 'a, DeviceTotal<'a>> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|total| GpuRow::of(&total.clock, &total.time)))
    }
}

impl<'a> Serialize for Rows<'_, 'a, &'a EntityRef> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|reference| Ref::of(reference)))
    }
}

#[derive(Serialize)]
struct IterationRow<'a> {
    iteration_ref: Ref<'a>,
    elapsed_ns: Option<u64>,
    gpu: Vec<GpuRow<'a>>,
}

impl<'a> Serialize for Rows<'_, 'a, IterationTiming<'a>> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for timing in self.0 {
            seq.serialize_element(&IterationRow {
                iteration_ref: Ref::of(timing.iteration_ref),
                elapsed_ns: timing.elapsed_ns,
                gpu: timing.gpu.iter().map(|(clock, time)| GpuRow::of(clock, time)).collect(),
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct UnresolvedRow<'a> {
    event_id: &'a str,
    kind: &'static str,
    #[serde(rename = "ref")]
    reference: Ref<'a>,
}

impl<'a> Serialize for Rows<'_, 'a, UnresolvedReference<'a>> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|item| UnresolvedRow {
            event_id: item.event_id,
            kind: item.kind.as_str(),
            reference: Ref::of(item.reference),
        }))
    }
}

/// tally's per-device extras, under `device_detail` with `--detail`.
#[derive(Serialize)]
struct DetailRow<'a> {
    device_uuid: &'a str,
    clock_domain: &'a str,
    clock_kind: &'static str,
    /// summed / busy: a ratio, not a time, so a float.
    overlap_factor: Option<f64>,
    peak_concurrency: u64,
    envelope_start_ns: Option<u64>,
    envelope_end_ns: Option<u64>,
    idle_gap_count: u64,
    idle_ns: u64,
    longest_idle_gap_ns: u64,
    streams: Vec<StreamRow>,
}

#[derive(Serialize)]
struct StreamRow {
    stream_id: u64,
    summed_activity_ns: u128,
    busy_ns: u64,
    activity_count: u64,
}

struct DetailRows<'r, 'a>(&'r [DeviceTotal<'a>]);

impl Serialize for DetailRows<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|total| {
            let detail = &total.detail;
            DetailRow {
                device_uuid: total.clock.device_uuid,
                clock_domain: total.clock.clock_domain,
                clock_kind: total.clock.clock_kind.as_str(),
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
        }))
    }
}

/// Writes the report, pretty-printed, with a final newline.
pub(crate) fn write(
    out: &mut impl Write,
    graph: &impl ResolvedEvidence,
    accounting: &RunAccounting<'_>,
    detail: bool,
) -> io::Result<()> {
    let counts = graph.counts();
    let unresolved: Vec<UnresolvedReference<'_>> = graph.unresolved_references().collect();
    let report = Report {
        run_id: accounting.run_id,
        counts: Counts {
            requests: counts.requests,
            iterations: counts.iterations,
            stages: counts.stages,
            memberships: counts.memberships,
            activities: counts.activities,
            alignments: counts.alignments,
        },
        device_totals: rows(&accounting.device_totals),
        iterations: rows(&accounting.iterations),
        unattributed_activity_refs: rows(&accounting.unattributed_activity_refs),
        unmeasured_gpu_activity_refs: rows(&accounting.unmeasured_gpu_activity_refs),
        unresolved: rows(&unresolved),
    };
    let mut serializer = serde_json::Serializer::pretty(&mut *out);
    if detail {
        // The detail rows have their own shape; serialize them as an extra
        // key after the keys.
        DetailedReport { report, device_detail: DetailRows(&accounting.device_totals) }
            .serialize(&mut serializer)
            .map_err(io::Error::other)?;
    } else {
        report.serialize(&mut serializer).map_err(io::Error::other)?;
    }
    out.write_all(b"\n")
}

#[derive(Serialize)]
struct DetailedReport<'r, 'a> {
    #[serde(flatten)]
    report: Report<'r, 'a>,
    device_detail: DetailRows<'r, 'a>,
}
