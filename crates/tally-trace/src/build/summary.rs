//! What an import says of one trace besides its records: the figures its
//! activity records add up on each emitting thread ([`Tally`]), checked and
//! written out with the trace's counts and each device's figures, and the
//! capabilities the trace shows.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU64;

use serde_json::{Map, Value, json};

use super::figures::DeviceFigures;
use super::{DeviceDetails, SUPPORTED, Shared};
use crate::collect::{GpuEvent, NONE_U32, NONE_U64, Rows, RuntimeRow, ThreadKeys};
use crate::error::TraceErrorKind;

/// Where a device's UUID came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UuidSource {
    Trace,
    Option,
    Synthesized,
}

impl UuidSource {
    fn as_str(self) -> &'static str {
        match self {
            UuidSource::Trace => "trace",
            UuidSource::Option => "option",
            UuidSource::Synthesized => "synthesized",
        }
    }
}

/// What the summary says of a device besides its figures.
pub(super) struct DeviceTally {
    pub(super) name: Option<String>,
    pub(super) uuid: Option<(String, UuidSource)>,
    pub(super) details: DeviceDetails,
}

/// The figures of a trace's summary that its activity records add up, per
/// emitting thread; [`Tally::merge`] adds two.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) devices: BTreeMap<(u64, u32), DeviceTally>,
    pub(super) unresolved: BTreeMap<&'static str, u64>,
    pub(super) runtime_unresolved: BTreeMap<&'static str, u64>,
    pub(super) linked_events: u64,
    pub(super) graph_events: u64,
}

impl Tally {
    pub(super) fn merge(&mut self, other: Tally) {
        for (key, tally) in other.devices {
            // A device's entry is made from its first row the same way on
            // any thread.
            self.devices.entry(key).or_insert(tally);
        }
        for (reason, count) in other.unresolved {
            *self.unresolved.entry(reason).or_default() += count;
        }
        for (reason, count) in other.runtime_unresolved {
            *self.runtime_unresolved.entry(reason).or_default() += count;
        }
        self.linked_events += other.linked_events;
        self.graph_events += other.graph_events;
    }
}

/// What a trace's summary is made of.
pub(super) struct SummaryCounts {
    pub(super) iterations: usize,
    pub(super) gpu_events: usize,
    pub(super) runtime_calls: usize,
    pub(super) processes: BTreeSet<u64>,
    pub(super) activity_records: u64,
    pub(super) tally: Tally,
    pub(super) figures: BTreeMap<(u64, u32), DeviceFigures>,
}

impl Shared<'_> {
    /// The summary, once every record is made: its figures checked to fit.
    pub(super) fn summary_of(&self, counts: SummaryCounts) -> Result<Map<String, Value>, TraceErrorKind> {
        if let Some(((pid, device), too_large)) =
            counts.figures.iter().find(|(_, figures)| figures.summed > u128::from(u64::MAX))
        {
            return Err(TraceErrorKind::SumOutOfRange {
                what: format!("the summed GPU time of process {pid}, device {device}"),
                total_ns: too_large.summed,
            });
        }
        Ok(self.summary(counts))
    }

    pub(super) fn capabilities(&self, gpu: &Rows<GpuEvent>) -> BTreeSet<&'static str> {
        let found = [
            !gpu.is_empty(),
            gpu.iter().any(|row| row.correlation != 0),
            !self.collected.spans.is_empty(),
            gpu.iter().any(|row| row.graph_id != 0),
            gpu.iter().any(|row| row.stream != NONE_U64),
        ];
        SUPPORTED.iter().zip(found).filter(|(_, found)| *found).map(|(name, _)| *name).collect()
    }

    fn summary(&self, parts: SummaryCounts) -> Map<String, Value> {
        let collected = self.collected;
        let info = self.info;
        let processes = &parts.processes;
        let mut devices = Map::new();
        for ((pid, device), tally) in parts.tally.devices {
            let key = match (ThreadKeys::as_number(pid), device) {
                (Some(pid), NONE_U32) => format!("{pid}/None"),
                (Some(pid), device) => format!("{pid}/{device}"),
                (None, NONE_U32) => "None".to_owned(),
                (None, device) => device.to_string(),
            };
            let DeviceFigures { busy, launch_span: spans, summed } =
                parts.figures.get(&(pid, device)).copied().unwrap_or_default();
            let (uuid, source) = match tally.uuid {
                Some((uuid, source)) => (Value::from(uuid), Value::from(source.as_str())),
                None => (Value::Null, Value::Null),
            };
            devices.insert(
                key,
                json!({
                    "name": tally.name,
                    "device_uuid": uuid,
                    "device_uuid_source": source,
                    "compute_capability": tally.details.compute_capability,
                    "total_memory_bytes": tally.details.total_memory_bytes,
                    "busy_ns": busy,
                    "launch_span_ns": spans,
                    // Checked to fit before the summary is built.
                    "summed_ns": u64::try_from(summed).unwrap_or(u64::MAX),
                }),
            );
        }
        let mut summary = Map::new();
        let mut put = |key: &str, value: Value| {
            summary.insert(key.to_owned(), value);
        };
        put("format", Value::from(info.source));
        put("detail", Value::from(self.options.detail.as_str()));
        put("path", Value::from(self.file.path.clone()));
        put("trace_attachment_id", Value::from(self.file.attachment_id.as_str()));
        put("producer_id", Value::from(self.file.producer_id.as_str()));
        put("trace_id", json!(info.trace_id));
        put("host", json!(info.host));
        put("rank", json!(info.rank));
        put("world_size", json!(info.world_size.map(NonZeroU64::get)));
        put("processes", json!(processes));
        put("engine_version", json!(info.engine_version));
        put("backend", Value::from(info.backend));
        put("backend_version", json!(info.backend_version));
        put("base_time_ns", Value::from(info.base_ns));
        put("trace_events", Value::from(collected.events_read));
        put("gpu_events", Value::from(parts.gpu_events));
        put("runtime_calls", Value::from(parts.runtime_calls));
        put("iterations", Value::from(parts.iterations));
        put("activity_records", Value::from(parts.activity_records));
        put("linked_gpu_events", Value::from(parts.tally.linked_events));
        put("unresolved_gpu_events", json!(parts.tally.unresolved));
        put("unresolved_runtime_calls", json!(parts.tally.runtime_unresolved));
        put("graph_gpu_events", Value::from(parts.tally.graph_events));
        put("devices", Value::Object(devices));
        put("event_loss", Value::Null);
        put("event_loss_note", Value::from("the trace does not report dropped CUPTI records"));
        put("skipped_events", json!(collected.skipped));
        put(
            "skipped_examples",
            json!(collected.examples.iter().map(ToString::to_string).collect::<Vec<_>>()),
        );
        put("ignored_events", json!(collected.ignored));
        put("rounded_timestamps", Value::from(collected.rounded_timestamps));
        put("not_imported", json!(collected.not_imported));
        put("notes", json!(collected.notes));
        for (key, value) in &info.extra {
            summary.insert(key.clone(), value.clone());
        }
        summary
    }
}

/// The processes that made runtime calls, for the summary. Inserted one by
/// one: a set collected from the rows would first gather every row's pid
/// (megabytes for a large trace) to sort them.
pub(super) fn processes(runtime: &Rows<RuntimeRow>) -> BTreeSet<u64> {
    let mut processes = BTreeSet::new();
    let mut last = None;
    for pid in runtime.iter().filter_map(|row| ThreadKeys::as_number(row.pid)) {
        if last != Some(pid) {
            processes.insert(pid);
            last = Some(pid);
        }
    }
    processes
}
