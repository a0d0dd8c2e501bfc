//! The records of one trace made one by one: the iterations, the clock
//! alignment, a record per GPU group and per runtime call, each with its
//! context (one `Arc` per device and process, shared by every emitting
//! thread) and its activity ID spelled into a reused buffer.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tally_core::{
    ActivityDomain, ClockAlignment, ClockKind, CollectionMode, CorrelationContext, CorrelationEvent,
    EntityRef, EventBody, Iteration, Metadata, NonEmptyString, Provenance, Span,
};
use tally_utils::fast_hash::FastHashMap;
use tally_utils::interval::merge_intervals;

use super::link::{AMBIGUOUS_LAUNCH, LaunchIndex, Link, NO_LAUNCH, Unlinked, unlinked};
use super::summary::{DeviceTally, Tally, UuidSource};
use super::{DeviceDetails, FileIdentity, Shared};
use crate::collect::{
    GpuEvent, GpuKind, LABEL_KEYS, NONE_U32, NONE_U64, Rows, RuntimeRow, SpanScope, ThreadKeys,
};
use crate::error::TraceErrorKind;
use crate::record::{ActivityMetadata, ImportedActivity, ThreadId, TraceRecord};

/// Launch APIs whose GPU work is a CUDA graph's.
const GRAPH_LAUNCH_APIS: [&str; 2] = ["cudaGraphLaunch", "cuGraphLaunch"];

/// Contexts by (device, process) and by process.
#[derive(Default)]
pub(super) struct MadeContexts {
    devices: FastHashMap<(u32, u64), Arc<CorrelationContext>>,
    hosts: FastHashMap<u64, Arc<CorrelationContext>>,
}

/// What a GPU group's record is found from: the rows, the launch index and
/// each runtime call's iteration, and the groups as ranges of `order`.
pub(super) struct GpuGroups<'a> {
    pub(super) gpu: &'a Rows<GpuEvent>,
    pub(super) runtime: &'a Rows<RuntimeRow>,
    pub(super) launches: &'a LaunchIndex,
    pub(super) runtime_links: &'a [Link],
    pub(super) order: &'a [u32],
}

/// Where one thread's records go: each counted and passed on.
pub(super) type Out<'o> = dyn FnMut(TraceRecord<'_>) -> Result<(), TraceErrorKind> + 'o;

/// One thread's making of records: the contexts it has looked up, the
/// activity IDs it spells, and its share of the summary's figures.
pub(super) struct Emitter<'a> {
    shared: &'a Shared<'a>,
    contexts: FastHashMap<(u32, u64), Arc<CorrelationContext>>,
    host_contexts: FastHashMap<u64, Arc<CorrelationContext>>,
    pub(super) spelled: Spelled<'a>,
    pub(super) tally: Tally,
    /// Where the last launch lookup landed in the launch index.
    launch_hint: usize,
    /// The current group's rows, in a buffer reused from group to group.
    members: Vec<GpuEvent>,
}

/// What consecutive activity records share, spelled once and lent to each
/// record: its event ID's buffer and the last correlation scope.
pub(super) struct Spelled<'a> {
    file: &'a FileIdentity,
    pub(super) activity_count: u64,
    /// The last activity's event ID (and reference ID), spelled into one
    /// buffer again and again.
    activity_id: String,
    /// The correlation scope last spelled, by process.
    last_scope: Option<(u64, EntityRef)>,
}

impl Spelled<'_> {
    /// Spells the next activity's event ID (also its reference's ID),
    /// stormlog's `<trace_key>/<count>`, into `activity_id`.
    fn next_activity_id(&mut self) {
        self.activity_count += 1;
        // Spelled by hand into a reused buffer: `format!` cost more than
        // the rest of the record's ID and reference together.
        self.activity_id.clear();
        self.activity_id.push_str(&self.file.attachment_id);
        self.activity_id.push('/');
        self.activity_id.push_str(tally_utils::decimal::Decimal::new(self.activity_count).as_str());
    }

    /// Spells the correlation scope of process `pid` into `last_scope`
    /// unless it is there: one per process, asked for by every record.
    fn spell_scope(&mut self, pid: u64, threads: &ThreadKeys) -> Result<(), TraceErrorKind> {
        if pid == NONE_U64 || self.last_scope.as_ref().is_some_and(|(last, _)| *last == pid) {
            return Ok(());
        }
        let process = match threads.id(pid) {
            ThreadId::Number(number) => number.to_string(),
            ThreadId::Text(text) => text.to_owned(),
            ThreadId::Unknown => "unknown".to_owned(),
        };
        let id = NonEmptyString::new(format!("process/{process}"))?;
        self.last_scope = Some((pid, EntityRef::from_parts(self.file.producer_id.clone(), id)));
        Ok(())
    }

    /// The next activity of process `pid` (its ID and scope spelled first),
    /// with what varies from one to the next.
    fn activity<'r>(
        &'r self,
        context: &'r Arc<CorrelationContext>,
        pid: u64,
        what: ActivityParts<'r>,
    ) -> ImportedActivity<'r> {
        let ActivityParts {
            kind,
            domain,
            iteration_ref,
            cuda_correlation,
            stream_id,
            graph_id,
            span,
            metadata,
        } = what;
        ImportedActivity {
            context,
            producer_id: &self.file.producer_id,
            event_id: &self.activity_id,
            activity_kind: kind,
            activity_domain: domain,
            iteration_ref,
            correlation_scope: self
                .last_scope
                .as_ref()
                .filter(|(last, _)| pid != NONE_U64 && *last == pid)
                .map(|(_, scope)| scope),
            trace_attachment_id: &self.file.attachment_id,
            // CUPTI never uses 0.
            cuda_correlation_id: (cuda_correlation != 0).then_some(cuda_correlation),
            stream_id,
            graph_id,
            span,
            metadata,
        }
    }
}

/// What varies from one activity record to the next.
struct ActivityParts<'r> {
    kind: &'static str,
    domain: ActivityDomain,
    iteration_ref: Option<&'r EntityRef>,
    /// 0 when absent.
    cuda_correlation: u64,
    stream_id: Option<u64>,
    graph_id: Option<u64>,
    span: Span,
    metadata: ActivityMetadata<'r>,
}

impl Shared<'_> {
    fn absolute(&self, relative: u64) -> Result<u64, TraceErrorKind> {
        self.info
            .base_ns
            .checked_add(relative)
            .ok_or(TraceErrorKind::TimestampOutOfRange { relative_ns: relative, base_ns: self.info.base_ns })
    }

    fn span(&self, start: u64, end: u64) -> Result<Span, TraceErrorKind> {
        Ok(Span::new(Some(self.absolute(start)?), Some(self.absolute(end)?))?)
    }

    fn context(&self, clock_domain: NonEmptyString, clock_kind: ClockKind, pid: u64) -> CorrelationContext {
        let info = self.info;
        let text = |value: &Option<String>| value.as_deref().and_then(|text| NonEmptyString::new(text).ok());
        let mut context = CorrelationContext::new(
            self.options.run_id.clone(),
            self.options.session_id.clone(),
            self.file.producer_id.clone(),
            static_text(info.source),
            clock_domain,
            clock_kind,
            CollectionMode::Imported,
            Provenance::Observed,
        );
        context.source_version = Some(static_text(env!("CARGO_PKG_VERSION")));
        context.engine = info.engine_version.as_ref().map(|_| static_text("vllm"));
        context.engine_version = text(&info.engine_version);
        context.backend = Some(static_text(info.backend));
        context.backend_version = text(&info.backend_version);
        context.host = text(&info.host);
        context.pid = ThreadKeys::as_number(pid);
        context.rank = info.rank;
        context.local_rank = info.local_rank;
        context.world_size = info.world_size;
        context
    }

    /// A device's UUID: the trace's own (Nsight's per row, Kineto's per
    /// ordinal from `deviceProperties`), `--device-uuid`'s, or one made up
    /// from the trace and ordinal so that accounting can tell devices apart
    /// (two ranks' device 0 are two GPUs unless the traces say otherwise).
    fn device_uuid(&self, row: &GpuEvent) -> Option<(String, UuidSource)> {
        if let Some(uuid) = self.collected.strings.get(row.device_uuid) {
            return Some((uuid.to_owned(), UuidSource::Trace));
        }
        if row.device == NONE_U32 {
            return None;
        }
        if let Some(uuid) = self.info.device_uuids.get(&row.device) {
            return Some((uuid.clone(), UuidSource::Trace));
        }
        if let Some(uuid) = self.uuids.get(&row.device) {
            return Some((uuid.clone(), UuidSource::Option));
        }
        let process = match ThreadKeys::as_number(row.pid) {
            Some(pid) if row.pid != NONE_U64 => format!(":pid{pid}"),
            _ => String::new(),
        };
        Some((format!("{}{process}:device{}", self.file.attachment_id, row.device), UuidSource::Synthesized))
    }

    /// The device's name: Nsight's for the GPU its UUID names, else the
    /// trace header's for the ordinal.
    fn device_name(&self, row: &GpuEvent) -> Option<String> {
        match self.collected.strings.get(row.device_uuid) {
            Some(uuid) => self.info.names_by_uuid.get(uuid).cloned(),
            None => self.info.device_names.get(&row.device).cloned(),
        }
    }

    /// The device's compute capability and memory, found as its name is.
    fn device_details(&self, row: &GpuEvent) -> Option<DeviceDetails> {
        match self.collected.strings.get(row.device_uuid) {
            Some(uuid) => self.info.details_by_uuid.get(uuid).cloned(),
            None => self.info.device_details.get(&row.device).cloned(),
        }
    }
}

impl<'a> Emitter<'a> {
    pub(super) fn new(shared: &'a Shared<'a>) -> Self {
        Self {
            shared,
            contexts: FastHashMap::default(),
            host_contexts: FastHashMap::default(),
            spelled: Spelled {
                file: shared.file,
                activity_count: 0,
                activity_id: String::new(),
                last_scope: None,
            },
            tally: Tally::default(),
            launch_hint: 0,
            members: Vec::new(),
        }
    }

    fn host_context(&mut self, pid: u64) -> Arc<CorrelationContext> {
        if let Some(context) = self.host_contexts.get(&pid) {
            return context.clone();
        }
        let shared = self.shared;
        // A poisoned lock means another emitter panicked, which the scope
        // reports; the map itself is whole.
        let mut made = shared.made.lock().unwrap_or_else(|poison| poison.into_inner());
        let context = made
            .hosts
            .entry(pid)
            // Kineto converts its host clock to Unix time by one offset
            // taken at start, and Nsight counts from the session start:
            // differences are durations, so the clock is monotonic.
            .or_insert_with(|| {
                Arc::new(shared.context(shared.host_clock_domain.clone(), ClockKind::Monotonic, pid))
            })
            .clone();
        self.host_contexts.insert(pid, context.clone());
        context
    }

    fn device_context(
        &mut self,
        row: &GpuEvent,
        pid: u64,
    ) -> Result<Arc<CorrelationContext>, TraceErrorKind> {
        let key = (row.device, pid);
        if let Some(context) = self.contexts.get(&key) {
            return Ok(context.clone());
        }
        let shared = self.shared;
        let mut made = shared.made.lock().unwrap_or_else(|poison| poison.into_inner());
        let context = match made.devices.get(&key) {
            Some(context) => context.clone(),
            None => {
                let mut context = shared.context(shared.device_clock_domain.clone(), ClockKind::Device, pid);
                context.device_uuid =
                    shared.device_uuid(row).map(|(uuid, _)| NonEmptyString::new(uuid)).transpose()?;
                let context = Arc::new(context);
                made.devices.insert(key, context.clone());
                context
            }
        };
        self.contexts.insert(key, context.clone());
        Ok(context)
    }

    pub(super) fn emit_iterations(
        &mut self,
        iterations: &[EntityRef],
        span_iteration: &[u32],
        out: &mut Out<'_>,
    ) -> Result<(), TraceErrorKind> {
        let collected = self.shared.collected;
        for (span, &iteration) in collected.spans.iter().zip(span_iteration) {
            if span.scope != SpanScope::Process {
                continue;
            }
            let reference = iterations[iteration as usize].clone();
            let mut metadata = Map::new();
            metadata.insert("name".into(), Value::from(collected.name(span.name)));
            metadata.insert("tid".into(), collected.threads.id(span.tid).to_json());
            let event_id = NonEmptyString::new(format!(
                "{}/iteration:{}",
                self.shared.file.attachment_id,
                reference.id()
            ))?;
            let body = EventBody::Iteration(Iteration {
                iteration_ref: reference,
                batch_ref: None,
                span: self.shared.span(span.start, span.end)?,
            });
            let event =
                CorrelationEvent::new(self.host_context(span.pid), event_id, Metadata::new(metadata), body)?;
            out(TraceRecord::Event(event))?;
        }
        Ok(())
    }

    /// The trace writes device timestamps on its host timeline (CUPTI and
    /// roctracer convert them), so the device clock is the host clock to
    /// within the trace's time resolution.
    pub(super) fn emit_alignment(&mut self, out: &mut Out<'_>) -> Result<(), TraceErrorKind> {
        let shared = self.shared;
        let mut context = shared.context(shared.host_clock_domain.clone(), ClockKind::Monotonic, NONE_U64);
        context.pid = None;
        let mut metadata = Map::new();
        metadata.insert(
            "basis".into(),
            Value::from(
                "the trace writes device timestamps on its host timeline; uncertainty is its resolution",
            ),
        );
        let body = EventBody::ClockAlignment(ClockAlignment {
            from_clock_domain: shared.device_clock_domain.clone(),
            to_clock_domain: shared.host_clock_domain.clone(),
            offset_ns: 0,
            uncertainty_ns: shared.info.resolution_ns,
            validity: Span::UNKNOWN,
        });
        let event_id = NonEmptyString::new(format!("{}/clock_alignment", shared.file.attachment_id))?;
        let event = CorrelationEvent::new(Arc::new(context), event_id, Metadata::new(metadata), body)?;
        out(TraceRecord::Event(event))
    }

    /// Emits the record of GPU group `run` (a range of `groups.order`) and
    /// adds it to the tally.
    pub(super) fn gpu_group(
        &mut self,
        groups: &GpuGroups<'_>,
        (position, length): (u32, u32),
        iterations: &[EntityRef],
        out: &mut Out<'_>,
    ) -> Result<(), TraceErrorKind> {
        let GpuGroups { gpu, runtime, launches, runtime_links, order } = *groups;
        let collected = self.shared.collected;
        let group = &order[position as usize..(position + length) as usize];
        let mut members = std::mem::take(&mut self.members);
        members.clear();
        members.extend(group.iter().map(|&index| gpu[index as usize]));
        let first = members[0];
        let launch = launches.launch(runtime, &first, &mut self.launch_hint);
        let link = match launch {
            Ok(index) => runtime_links[index as usize],
            Err(Unlinked::AmbiguousLaunch) => AMBIGUOUS_LAUNCH,
            Err(_) => NO_LAUNCH,
        };
        let launch_row = launch.ok().map(|index| runtime[index as usize]);
        let tally = &mut self.tally;
        match unlinked(link) {
            None => tally.linked_events += members.len() as u64,
            Some(reason) => *tally.unresolved.entry(reason.gpu_reason()).or_default() += members.len() as u64,
        }
        let launch_name = launch_row.map(|row| collected.name(row.name));
        tally.graph_events += members
            .iter()
            .filter(|row| {
                row.graph_id != 0
                    || row.graph_node
                    || launch_name
                        .is_some_and(|name| GRAPH_LAUNCH_APIS.iter().any(|api| name.starts_with(api)))
            })
            .count() as u64;
        let pid = launch_row.map_or(first.pid, |row| row.pid);
        let labels = collected.labels_of(group[0] as usize);
        let emitted =
            self.emit_gpu_group(&members, link, launch_row.map(|row| row.name), pid, iterations, labels, out);
        self.members = members;
        emitted?;
        let device_key = (first.pid, first.device);
        if let std::collections::btree_map::Entry::Vacant(entry) = self.tally.devices.entry(device_key) {
            entry.insert(DeviceTally {
                name: self.shared.device_name(&first),
                uuid: self.shared.device_uuid(&first),
                details: self.shared.device_details(&first).unwrap_or_default(),
            });
        }
        Ok(())
    }

    /// Emits one record for a launch group: by its parts when it holds one
    /// GPU event (nearly always), built in full otherwise.
    #[allow(clippy::too_many_arguments, reason = "the record's parts, found by the caller")]
    fn emit_gpu_group(
        &mut self,
        members: &[GpuEvent],
        link: Link,
        launch_name: Option<u32>,
        pid: u64,
        iterations: &[EntityRef],
        labels: Option<&[u32; 3]>,
        out: &mut Out<'_>,
    ) -> Result<(), TraceErrorKind> {
        let first = members[0];
        let start = self.shared.absolute(members.iter().map(|row| row.start).min().unwrap_or(first.start))?;
        let end = self.shared.absolute(members.iter().map(|row| row.end).max().unwrap_or(first.end))?;
        let context = self.device_context(&first, pid)?;
        let summed: u128 = members.iter().map(|row| u128::from(row.end - row.start)).sum();
        let summed = u64::try_from(summed).map_err(|_| TraceErrorKind::SumOutOfRange {
            what: format!("the summed duration of the {} GPU events of one launch", members.len()),
            total_ns: summed,
        })?;
        let collected = self.shared.collected;
        self.spelled.spell_scope(pid, &collected.threads)?;
        self.spelled.next_activity_id();
        let metadata = ActivityMetadata::Gpu {
            event_count: members.len() as u64,
            summed_duration_ns: summed,
            first_name: collected.name(first.name),
            device_index: (first.device != NONE_U32).then_some(first.device),
            launch_api: launch_name.map(|name| collected.name(name)),
            unresolved_reason: unlinked(link).map(Unlinked::gpu_reason),
            // Nsight traced the launch per graph: the span is the whole
            // graph's, its kernels unrecorded.
            whole_graph: first.kind == GpuKind::Graph,
        };
        // One event (the common case) has one stream and one graph; a group
        // names them only when all its events share them.
        let (mut stream_id, mut graph_id) = (
            (first.stream != NONE_U64).then_some(first.stream),
            (first.graph_id != 0).then_some(first.graph_id),
        );
        let mut extra = Map::new();
        if members.len() > 1 {
            let streams: BTreeSet<u64> = members.iter().map(|row| row.stream).collect();
            let named: Vec<u64> = streams.iter().copied().filter(|&stream| stream != NONE_U64).collect();
            if named.len() > 1 {
                extra.insert("streams".into(), Value::from(named));
            }
            if streams.len() > 1 {
                stream_id = None;
            }
            if members.iter().any(|row| row.graph_id != first.graph_id) {
                graph_id = None;
            }
            let mut busy: Vec<(u64, u64)> = members.iter().map(|row| (row.start, row.end)).collect();
            let merged = merge_intervals(&mut busy);
            let origin = merged[0].0;
            let intervals: Vec<Value> =
                merged.iter().map(|&(start, end)| json!([start - origin, end - start])).collect();
            let busy_ns: u64 = merged.iter().map(|&(start, end)| end - start).sum();
            extra.insert("intervals".into(), Value::Array(intervals));
            extra.insert("busy_ns".into(), Value::from(busy_ns));
        }
        // The XLA op, module and framework op of a kernel (XPlane), from the
        // group's first event.
        for (key, &name) in LABEL_KEYS.iter().zip(labels.into_iter().flatten()) {
            if name != NONE_U32 {
                extra.insert((*key).into(), Value::from(collected.name(name)));
            }
        }
        let span = Span::new(Some(start), Some(end))?;
        let activity = self.spelled.activity(
            &context,
            pid,
            ActivityParts {
                kind: first.kind.activity_kind(),
                domain: ActivityDomain::Gpu,
                iteration_ref: iterations.get(link as usize),
                cuda_correlation: first.correlation,
                stream_id,
                graph_id,
                span,
                metadata,
            },
        );
        let record = if extra.is_empty() {
            TraceRecord::Activity(activity)
        } else {
            TraceRecord::Event(activity.to_event_with(extra)?)
        };
        out(record)
    }

    /// Emits one record for a runtime call.
    pub(super) fn emit_runtime(
        &mut self,
        row: &RuntimeRow,
        link: Link,
        iterations: &[EntityRef],
        out: &mut Out<'_>,
    ) -> Result<(), TraceErrorKind> {
        if let Some(reason) = unlinked(link) {
            *self.tally.runtime_unresolved.entry(reason.runtime_reason()).or_default() += 1;
        }
        let context = self.host_context(row.pid);
        let span = self.shared.span(row.start, row.end)?;
        let collected = self.shared.collected;
        self.spelled.spell_scope(row.pid, &collected.threads)?;
        self.spelled.next_activity_id();
        let metadata = ActivityMetadata::Runtime {
            name: collected.name(row.name),
            tid: collected.threads.id(row.tid),
            unresolved_reason: unlinked(link).map(Unlinked::runtime_reason),
        };
        let activity = self.spelled.activity(
            &context,
            row.pid,
            ActivityParts {
                kind: row.kind.activity_kind(),
                domain: ActivityDomain::Runtime,
                iteration_ref: iterations.get(link as usize),
                cuda_correlation: row.correlation,
                stream_id: None,
                graph_id: None,
                span,
                metadata,
            },
        );
        out(TraceRecord::Activity(activity))
    }
}

/// A string known to be non-empty at compile time.
fn static_text(text: &'static str) -> NonEmptyString {
    // Only called with non-empty literals.
    NonEmptyString::new(text).unwrap_or_else(|_| unreachable!("empty literal"))
}
