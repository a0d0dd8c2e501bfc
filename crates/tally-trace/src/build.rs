//! From the rows of one trace to correlation events, for both formats.
//!
//! Follows stormlog's `capture_trace`: GPU work is grouped per launch (or
//! kept per event), linked to the iteration whose range holds its launch
//! call, and given one context per device and launching process. tally adds
//! what stormlog leaves out: the runtime calls themselves, the iterations of
//! ProfilerStep-like ranges, a device UUID for every device the trace names
//! (synthesized when the trace does not say which GPU it was), and a clock
//! alignment stating that the trace puts device and host timestamps on one
//! timeline.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tally_core::fast_hash::FastHashMap;
use tally_core::{
    ActivityDomain, ClockAlignment, ClockKind, CollectionMode, CorrelationContext, CorrelationEvent,
    EntityRef, EventBody, Iteration, Metadata, NonEmptyString, Provenance, Span,
};

use tally_core::interval::{UnionSweep, merge_intervals};

use crate::collect::{Collected, GpuEvent, NONE_U32, NONE_U64, Rows, RuntimeRow, SpanScope, ThreadKeys};
use crate::error::{SinkError, TraceErrorKind};
use crate::parallel::RecordBatcher;
use crate::record::{ActivityMetadata, ImportedActivity, ThreadId, TraceRecord};
use crate::{Detail, ImportOptions, ranges};

/// Launch APIs whose GPU work is a CUDA graph's.
const GRAPH_LAUNCH_APIS: [&str; 2] = ["cudaGraphLaunch", "cuGraphLaunch"];

/// What a reader learnt about a trace besides its rows.
#[derive(Debug, Default)]
pub(crate) struct TraceInfo {
    /// `kineto` or `nsys`, stormlog's `source`.
    pub(crate) source: &'static str,
    /// Added to every timestamp.
    pub(crate) base_ns: u64,
    pub(crate) host: Option<String>,
    pub(crate) trace_id: Option<String>,
    pub(crate) rank: Option<u64>,
    pub(crate) local_rank: Option<u64>,
    pub(crate) world_size: Option<NonZeroU64>,
    pub(crate) engine_version: Option<String>,
    pub(crate) backend: &'static str,
    pub(crate) backend_version: Option<String>,
    /// Device names by ordinal (`deviceProperties`).
    pub(crate) device_names: BTreeMap<u32, String>,
    /// Device names by UUID (Nsight's `TARGET_INFO_GPU`).
    pub(crate) names_by_uuid: BTreeMap<String, String>,
    /// How far apart two timestamps of the trace can be told, in ns: the
    /// uncertainty of placing device work on the host timeline.
    pub(crate) resolution_ns: u64,
    /// Format-specific entries for the summary.
    pub(crate) extra: Map<String, Value>,
}

/// One trace file's identity in the run.
#[derive(Debug, Clone)]
pub(crate) struct FileIdentity {
    /// stormlog's `trace_attachment_id`: `kineto:<name>:<digest>`.
    pub(crate) attachment_id: NonEmptyString,
    /// The producer of every event from this file.
    pub(crate) producer_id: NonEmptyString,
    /// The resolved path.
    pub(crate) path: String,
}

/// Why a GPU event or runtime call is not linked to an iteration; stormlog's
/// words where stormlog has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Unlinked {
    NoLaunch,
    AmbiguousLaunch,
    Outside,
    Ambiguous,
}

impl Unlinked {
    fn gpu_reason(self) -> &'static str {
        match self {
            Unlinked::NoLaunch => "no_launch_record",
            Unlinked::AmbiguousLaunch => "launch_in_several_processes",
            Unlinked::Outside => "launch_outside_iteration_range",
            Unlinked::Ambiguous => "ambiguous_iteration_range",
        }
    }

    fn runtime_reason(self) -> &'static str {
        match self {
            Unlinked::Outside => "outside_iteration_range",
            _ => "ambiguous_iteration_range",
        }
    }
}

/// An iteration index, or why there is none, in 32 bits.
type Link = u32;
const OUTSIDE: Link = u32::MAX;
const AMBIGUOUS: Link = u32::MAX - 1;
const NO_LAUNCH: Link = u32::MAX - 2;
const AMBIGUOUS_LAUNCH: Link = u32::MAX - 3;

fn unlinked(link: Link) -> Option<Unlinked> {
    match link {
        OUTSIDE => Some(Unlinked::Outside),
        AMBIGUOUS => Some(Unlinked::Ambiguous),
        NO_LAUNCH => Some(Unlinked::NoLaunch),
        AMBIGUOUS_LAUNCH => Some(Unlinked::AmbiguousLaunch),
        _ => None,
    }
}

/// The iteration ranges of one process or thread, sorted for lookups.
#[derive(Default)]
struct SpanList {
    /// (start, end, iteration), by start, longest first.
    items: Vec<(u64, u64, u32)>,
    longest: u64,
}

impl SpanList {
    fn finish(&mut self) {
        self.items
            .sort_unstable_by_key(|&(start, end, iteration)| (start, std::cmp::Reverse(end), iteration));
        self.longest = self.items.iter().map(|&(start, end, _)| end - start).max().unwrap_or(0);
    }

    /// Iterations whose range `[start, end)` holds `ts`. Only ranges that
    /// start no earlier than the longest range's length before `ts` can, so
    /// the scan stops there.
    fn holding(&self, ts: u64, found: &mut Vec<u32>) {
        let after = self.items.partition_point(|&(start, _, _)| start <= ts);
        let earliest = ts.saturating_sub(self.longest);
        for &(start, end, iteration) in self.items[..after].iter().rev() {
            if start < earliest {
                break;
            }
            if ts < end && !found.contains(&iteration) {
                found.push(iteration);
            }
        }
    }
}

/// Runtime calls by correlation ID, as their indices sorted by key. A Kineto
/// trace's GPU events do not say which process launched them, so an ID that
/// runtime calls of two processes used links nowhere; Nsight's rows name
/// their process, so there the key includes it. A sorted index takes four
/// bytes a call, a fraction of a hash map's.
struct LaunchIndex {
    order: Vec<u32>,
    per_process: bool,
}

impl LaunchIndex {
    fn new(runtime: &Rows<RuntimeRow>, gpu: &Rows<GpuEvent>) -> Self {
        let per_process = gpu.iter().any(|row| row.pid != NONE_U64);
        let mut order: Vec<u32> =
            (0..runtime.len() as u32).filter(|&index| runtime[index as usize].correlation != 0).collect();
        let key = |index: u32| {
            let row = &runtime[index as usize];
            (if per_process { row.pid } else { 0 }, row.correlation, index)
        };
        order.sort_unstable_by_key(|&index| key(index));
        Self { order, per_process }
    }

    /// The runtime call that launched `row`: `Ok(index)`, or why none.
    fn launch(&self, runtime: &Rows<RuntimeRow>, row: &GpuEvent) -> Result<u32, Unlinked> {
        if row.correlation == 0 {
            return Err(Unlinked::NoLaunch);
        }
        let process = if self.per_process { row.pid } else { 0 };
        let key = |index: u32| {
            let call = &runtime[index as usize];
            (if self.per_process { call.pid } else { 0 }, call.correlation)
        };
        let first = self.order.partition_point(|&index| key(index) < (process, row.correlation));
        // A correlation ID has one call or a few: walking them is cheaper
        // than a second search over the whole index.
        let count =
            self.order[first..].iter().take_while(|&&index| key(index) == (process, row.correlation)).count();
        let calls = &self.order[first..first + count];
        // Later calls win, as in stormlog's dict.
        let Some(&chosen) = calls.last() else {
            return Err(Unlinked::NoLaunch);
        };
        let pid = runtime[chosen as usize].pid;
        if calls.iter().any(|&index| runtime[index as usize].pid != pid) {
            return Err(Unlinked::AmbiguousLaunch);
        }
        Ok(chosen)
    }
}

/// Where a device's UUID came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UuidSource {
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
struct DeviceTally {
    name: Option<String>,
    uuid: Option<(String, UuidSource)>,
}

/// A device's busy, launch-span and summed time, in ns.
#[derive(Debug, Default, Clone, Copy)]
struct DeviceFigures {
    busy: u64,
    launch_span: u64,
    /// A sum of `u64` durations: exact in 128 bits, checked when written.
    summed: u128,
}

/// Per device, from the rows sorted by start through an index (four bytes
/// a row, not a copy of the intervals): the union of the events, and the
/// union of the events with the spans of multi-event launch records.
fn device_figures(
    gpu: &Rows<GpuEvent>,
    grouped: &[u32],
    runs: &[(u32, u32)],
) -> BTreeMap<(u64, u32), DeviceFigures> {
    // The spans of launch records that hold several events (`runs` of
    // `grouped`, as [`groups`] gives them), by device: with the events
    // themselves, they make the launch span.
    let mut group_spans: Vec<((u64, u32), u64, u64)> = runs
        .iter()
        .filter(|&&(_, length)| length > 1)
        .map(|&(position, length)| {
            let members = &grouped[position as usize..(position + length) as usize];
            let first = &gpu[members[0] as usize];
            let start = members.iter().map(|&index| gpu[index as usize].start).min().unwrap_or(first.start);
            let end = members.iter().map(|&index| gpu[index as usize].end).max().unwrap_or(first.end);
            ((first.pid, first.device), start, end)
        })
        .collect();
    // Sums are u128 here; they are checked where they are written.
    let mut order: Vec<u32> = (0..gpu.len() as u32).collect();
    order.sort_unstable_by_key(|&index| {
        let row = &gpu[index as usize];
        (row.pid, row.device, row.start)
    });
    group_spans.sort_unstable();
    let mut figures: BTreeMap<(u64, u32), DeviceFigures> = BTreeMap::new();
    let mut position = 0;
    let mut spans = group_spans.iter().peekable();
    while position < order.len() {
        let first = &gpu[order[position] as usize];
        let key = (first.pid, first.device);
        let (mut busy, mut launch_span, mut summed) = (UnionSweep::default(), UnionSweep::default(), 0u128);
        while let Some(&index) = order.get(position).filter(|&&index| {
            let row = &gpu[index as usize];
            (row.pid, row.device) == key
        }) {
            let row = &gpu[index as usize];
            while let Some(&&(_, start, end)) =
                spans.peek().filter(|(span_key, start, _)| *span_key == key && *start <= row.start)
            {
                launch_span.push(start, end);
                spans.next();
            }
            busy.push(row.start, row.end);
            launch_span.push(row.start, row.end);
            summed += u128::from(row.end - row.start);
            position += 1;
        }
        while let Some(&&(_, start, end)) = spans.peek().filter(|(span_key, _, _)| *span_key == key) {
            launch_span.push(start, end);
            spans.next();
        }
        figures.insert(key, DeviceFigures { busy: busy.finish(), launch_span: launch_span.finish(), summed });
    }
    figures
}

/// Capabilities stormlog's trace collector reports.
pub(crate) const SUPPORTED: [&str; 5] =
    ["gpu_activity", "cuda_correlation", "iteration_ranges", "cuda_graph_ids", "streams"];

/// What building one file's events produced besides the events.
pub(crate) struct FileOutcome {
    pub(crate) summary: Map<String, Value>,
    pub(crate) collected: BTreeSet<&'static str>,
    pub(crate) events: u64,
}

/// What every record of one trace is made from, read-only once the rows are
/// read: the trace's tables and identity, the import's options, and the
/// contexts made so far (shared, so that every thread emitting records
/// gives them one `Arc` per context).
struct Shared<'a> {
    collected: &'a Collected,
    info: &'a TraceInfo,
    file: &'a FileIdentity,
    options: &'a ImportOptions,
    uuids: &'a BTreeMap<u32, String>,
    device_clock_domain: NonEmptyString,
    host_clock_domain: NonEmptyString,
    made: Mutex<MadeContexts>,
}

/// Contexts by (device, process) and by process.
#[derive(Default)]
struct MadeContexts {
    devices: FastHashMap<(u32, u64), Arc<CorrelationContext>>,
    hosts: FastHashMap<u64, Arc<CorrelationContext>>,
}

/// The figures of a trace's summary that its activity records add up, per
/// emitting thread; [`Tally::merge`] adds two.
#[derive(Default)]
struct Tally {
    devices: BTreeMap<(u64, u32), DeviceTally>,
    unresolved: BTreeMap<&'static str, u64>,
    runtime_unresolved: BTreeMap<&'static str, u64>,
    linked_events: u64,
    graph_events: u64,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
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

/// What a GPU group's record is found from: the rows, the launch index and
/// each runtime call's iteration, and the groups as ranges of `order`.
struct GpuGroups<'a> {
    gpu: &'a Rows<GpuEvent>,
    runtime: &'a Rows<RuntimeRow>,
    launches: &'a LaunchIndex,
    runtime_links: &'a [Link],
    order: &'a [u32],
}

/// Where one thread's records go: each counted and passed on.
type Out<'o> = dyn FnMut(TraceRecord<'_>) -> Result<(), TraceErrorKind> + 'o;

/// One thread's making of records: the contexts it has looked up, the
/// activity IDs it spells, and its share of the summary's figures.
struct Emitter<'a> {
    shared: &'a Shared<'a>,
    contexts: FastHashMap<(u32, u64), Arc<CorrelationContext>>,
    host_contexts: FastHashMap<u64, Arc<CorrelationContext>>,
    spelled: Spelled<'a>,
    tally: Tally,
}

/// What consecutive activity records share, spelled once and lent to each
/// record: its event ID's buffer and the last correlation scope.
struct Spelled<'a> {
    file: &'a FileIdentity,
    activity_count: u64,
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
        self.activity_id.push_str(tally_core::decimal::Decimal::new(self.activity_count).as_str());
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

pub(crate) fn build(
    collected: &mut Collected,
    info: &TraceInfo,
    file: &FileIdentity,
    options: &ImportOptions,
    uuids: &BTreeMap<u32, String>,
    sink: &mut dyn FnMut(TraceRecord<'_>) -> Result<(), SinkError>,
) -> Result<FileOutcome, TraceErrorKind> {
    // The rows are moved out of `collected` and handed over by value, so
    // that the GPU rows are freed once their records are built (before the
    // runtime calls' records grow the consumer's tables) and the runtime
    // rows block by block as theirs are: the peak is then one table, not
    // both.
    let gpu = std::mem::take(&mut collected.gpu);
    let runtime = std::mem::take(&mut collected.runtime);
    let shared = Shared::new(collected, info, file, options, uuids)?;
    let mut events = 0u64;
    let mut out = |record: TraceRecord<'_>| -> Result<(), TraceErrorKind> {
        events += 1;
        sink(record).map_err(TraceErrorKind::Sink)
    };
    let made = in_order(&shared, gpu, runtime, &mut out)?;
    Ok(FileOutcome { summary: made.summary, collected: made.capabilities, events })
}

/// [`build`] into `batcher`'s batches, passed to `send` in the records'
/// order. With more than one emitter, the GPU groups' records are made on
/// `emitters` threads: each
/// takes every `emitters`-th chunk of them, spells their IDs from their
/// place and batches them, and this thread passes the chunks on in order,
/// then makes the runtime calls' records itself. The records, their numbers
/// and order, the records sent before an error, the first error and the
/// summary are [`build`]'s (only where batches end may differ), and so is
/// the memory: the GPU rows are freed once their records are made, the
/// runtime rows as theirs are.
#[allow(clippy::too_many_arguments, reason = "build's arguments, and where the batches go")]
pub(crate) fn build_batched<R: RecordBatcher>(
    collected: &mut Collected,
    info: &TraceInfo,
    file: &FileIdentity,
    options: &ImportOptions,
    uuids: &BTreeMap<u32, String>,
    batcher: &R,
    emitters: usize,
    send: &mut dyn FnMut(R::Batch) -> Result<(), SinkError>,
) -> Result<FileOutcome, TraceErrorKind> {
    let gpu = std::mem::take(&mut collected.gpu);
    let runtime = std::mem::take(&mut collected.runtime);
    let shared = Shared::new(collected, info, file, options, uuids)?;
    let mut batched = Batched::new(batcher, send, 0);
    let made = if emitters > 1 {
        in_parallel(&shared, gpu, runtime, &mut batched, emitters)
    } else {
        in_order(&shared, gpu, runtime, &mut |record| batched.add(record))
    };
    let events = batched.finish(&made)?;
    let made = made?;
    Ok(FileOutcome { summary: made.summary, collected: made.capabilities, events })
}

/// Records made on the batching thread, batched and sent as batches fill.
struct Batched<'b, R: RecordBatcher> {
    batcher: &'b R,
    send: &'b mut dyn FnMut(R::Batch) -> Result<(), SinkError>,
    batch: R::Batch,
    filled: bool,
    /// Records so far, made here or by the emitters.
    records: u64,
}

impl<'b, R: RecordBatcher> Batched<'b, R> {
    /// Batches whose first record follows `records` others.
    fn new(batcher: &'b R, send: &'b mut dyn FnMut(R::Batch) -> Result<(), SinkError>, records: u64) -> Self {
        Self { batcher, send, batch: batcher.batch(), filled: false, records }
    }

    fn add(&mut self, record: TraceRecord<'_>) -> Result<(), TraceErrorKind> {
        self.records += 1;
        self.filled = true;
        if self.batcher.add(&mut self.batch, self.records, record).map_err(TraceErrorKind::Sink)? {
            self.filled = false;
            (self.send)(std::mem::replace(&mut self.batch, self.batcher.batch()))
                .map_err(TraceErrorKind::Sink)?;
        }
        Ok(())
    }

    /// Sends the last batch once the records' making ended with `made`,
    /// and gives the number of records. The records before an error go
    /// too (they came first, and a consumer that refuses one of them has
    /// the first word), unless the sink or batcher refused already.
    fn finish<T>(self, made: &Result<T, TraceErrorKind>) -> Result<u64, TraceErrorKind> {
        if self.filled && !matches!(made, Err(TraceErrorKind::Sink(_))) {
            (self.send)(self.batch).map_err(TraceErrorKind::Sink)?;
        }
        Ok(self.records)
    }

    /// Sends what is batched so far, so that batches made elsewhere come
    /// after it.
    fn flush(&mut self) -> Result<(), TraceErrorKind> {
        if std::mem::take(&mut self.filled) {
            (self.send)(std::mem::replace(&mut self.batch, self.batcher.batch()))
                .map_err(TraceErrorKind::Sink)?;
        }
        Ok(())
    }
}

/// What a build made besides its records.
struct Made {
    summary: Map<String, Value>,
    capabilities: BTreeSet<&'static str>,
}

/// What the activity records are made from, found before the first one:
/// the iterations, each runtime call's iteration, the launch index and the
/// GPU groups.
struct Plan {
    iterations: Vec<EntityRef>,
    runtime_links: Vec<Link>,
    launches: LaunchIndex,
    order: Vec<u32>,
    runs: Vec<(u32, u32)>,
}

impl Plan {
    /// The plan, the iteration records and the clock alignment emitted on
    /// the way (they come first, on `emitter`'s thread); with `beside`, the
    /// GPU rows are grouped on a thread of their own meanwhile.
    fn make(
        shared: &Shared<'_>,
        emitter: &mut Emitter<'_>,
        gpu: &Rows<GpuEvent>,
        runtime: &Rows<RuntimeRow>,
        out: &mut Out<'_>,
        beside: bool,
    ) -> Result<Self, TraceErrorKind> {
        let ((iterations, runtime_links, launches), (order, runs)) = if beside {
            std::thread::scope(|scope| {
                let grouped = scope.spawn(|| groups(gpu, shared.options.detail));
                let linked = Self::linked(shared, emitter, gpu, runtime, out);
                // Grouping only sorts; a panic there is a bug, passed on.
                let grouped = grouped.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                linked.map(|linked| (linked, grouped))
            })?
        } else {
            (Self::linked(shared, emitter, gpu, runtime, out)?, groups(gpu, shared.options.detail))
        };
        Ok(Self { iterations, runtime_links, launches, order, runs })
    }

    /// The iterations (their records emitted), each runtime call's
    /// iteration and the launch index (the clock alignment emitted after).
    #[allow(clippy::type_complexity, reason = "three parts of the plan")]
    fn linked(
        shared: &Shared<'_>,
        emitter: &mut Emitter<'_>,
        gpu: &Rows<GpuEvent>,
        runtime: &Rows<RuntimeRow>,
        out: &mut Out<'_>,
    ) -> Result<(Vec<EntityRef>, Vec<Link>, LaunchIndex), TraceErrorKind> {
        let (iterations, span_iteration) = shared.iterations()?;
        emitter.emit_iterations(&iterations, &span_iteration, out)?;
        let (process_spans, thread_spans) = span_lists(shared.collected, &span_iteration);
        let mut found = Vec::new();
        let mut link_at = |pid: u64, tid: u64, ts: u64| -> Link {
            found.clear();
            if let Some(list) = process_spans.get(&pid) {
                list.holding(ts, &mut found);
            }
            if let Some(list) = thread_spans.get(&(pid, tid)) {
                list.holding(ts, &mut found);
            }
            // Two ranges naming one iteration are one iteration.
            let mut distinct = found.iter().map(|&index| &iterations[index as usize]).collect::<Vec<_>>();
            distinct.sort_unstable();
            distinct.dedup();
            match distinct.len() {
                0 => OUTSIDE,
                1 => found[0],
                _ => AMBIGUOUS,
            }
        };
        let runtime_links: Vec<Link> =
            runtime.iter().map(|row| link_at(row.pid, row.tid, row.start)).collect();
        let launches = LaunchIndex::new(runtime, gpu);
        if !gpu.is_empty() {
            emitter.emit_alignment(out)?;
        }
        Ok((iterations, runtime_links, launches))
    }
}

/// The records of one trace made on this thread in their order: the GPU
/// rows freed once their records are made, the runtime rows as theirs are.
fn in_order(
    shared: &Shared<'_>,
    gpu: Rows<GpuEvent>,
    runtime: Rows<RuntimeRow>,
    out: &mut Out<'_>,
) -> Result<Made, TraceErrorKind> {
    let mut emitter = Emitter::new(shared);
    let Plan { iterations, runtime_links, launches, order, runs } =
        Plan::make(shared, &mut emitter, &gpu, &runtime, out, false)?;
    let groups = GpuGroups {
        gpu: &gpu,
        runtime: &runtime,
        launches: &launches,
        runtime_links: &runtime_links,
        order: &order,
    };
    for &run in &runs {
        emitter.gpu_group(&groups, run, &iterations, out)?;
    }
    drop(launches);
    let figures = device_figures(&gpu, &order, &runs);
    drop((order, runs));
    runtime_calls_then_summary(shared, emitter, gpu, runtime, &runtime_links, &iterations, figures, out)
}

/// The rest of a build once the GPU groups' records are made: the runtime
/// calls' records, in order on this thread (`emitter`'s activity count is
/// the groups'), then the summary. The GPU rows are freed first, each
/// block of runtime rows once its records are made.
#[allow(clippy::too_many_arguments, reason = "what both builds hold at this point")]
fn runtime_calls_then_summary(
    shared: &Shared<'_>,
    mut emitter: Emitter<'_>,
    gpu: Rows<GpuEvent>,
    runtime: Rows<RuntimeRow>,
    runtime_links: &[Link],
    iterations: &[EntityRef],
    figures: BTreeMap<(u64, u32), DeviceFigures>,
    out: &mut Out<'_>,
) -> Result<Made, TraceErrorKind> {
    let capabilities = shared.capabilities(&gpu);
    let gpu_events = gpu.len();
    drop(gpu);
    let processes = processes(&runtime);
    let runtime_calls = runtime.len();
    for (row, &link) in runtime.into_rows().zip(runtime_links) {
        emitter.emit_runtime(&row, link, iterations, out)?;
    }
    let summary = shared.summary_of(SummaryCounts {
        iterations: iterations.len(),
        gpu_events,
        runtime_calls,
        processes,
        activity_records: emitter.spelled.activity_count,
        tally: emitter.tally,
        figures,
    })?;
    Ok(Made { summary, capabilities })
}

/// GPU groups a chunk holds, in [`in_parallel`]: a few batches, so that
/// emitters work well apart and each chunk's batches are few.
const CHUNK_GROUPS: usize = 2048;

/// A chunk's batches and how the chunk ended.
type Chunk<B> = (Vec<B>, Result<(), TraceErrorKind>);

/// The records of one trace, the GPU groups' made on `emitters` threads
/// ([`build_batched`]).
fn in_parallel<R: RecordBatcher>(
    shared: &Shared<'_>,
    gpu: Rows<GpuEvent>,
    runtime: Rows<RuntimeRow>,
    batched: &mut Batched<'_, R>,
    emitters: usize,
) -> Result<Made, TraceErrorKind> {
    // The first records (iterations, the alignment) on this thread.
    let mut first = Emitter::new(shared);
    let Plan { iterations, runtime_links, launches, order, runs } =
        Plan::make(shared, &mut first, &gpu, &runtime, &mut |record| batched.add(record), true)?;
    batched.flush()?;
    let batcher = batched.batcher;
    let groups = GpuGroups {
        gpu: &gpu,
        runtime: &runtime,
        launches: &launches,
        runtime_links: &runtime_links,
        order: &order,
    };
    let chunks = runs.len().div_ceil(CHUNK_GROUPS);
    let before = batched.records;
    let stop = AtomicBool::new(false);
    let (tallies, passed, figures) = std::thread::scope(|scope| {
        // The summary's device figures need no record: made beside them.
        let figures = scope.spawn(|| device_figures(&gpu, &order, &runs));
        let mut receivers = Vec::with_capacity(emitters);
        let mut handles = Vec::with_capacity(emitters);
        for which in 0..emitters.min(chunks) {
            let (sender, receiver) = std::sync::mpsc::sync_channel::<Chunk<R::Batch>>(2);
            receivers.push(receiver);
            let (groups, runs, iterations, stop) = (&groups, &runs, &iterations, &stop);
            handles.push(scope.spawn(move || {
                let mut emitter = Emitter::new(shared);
                for chunk in (which..chunks).step_by(emitters) {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let from = chunk * CHUNK_GROUPS;
                    let to = (from + CHUNK_GROUPS).min(runs.len());
                    // An activity's ID is its place among the activities.
                    emitter.spelled.activity_count = from as u64;
                    let mut batches = Vec::new();
                    let mut keep = |batch| {
                        batches.push(batch);
                        Ok(())
                    };
                    let mut chunk_batched = Batched::new(batcher, &mut keep, before + from as u64);
                    let made = runs[from..to].iter().try_for_each(|&run| {
                        emitter.gpu_group(groups, run, iterations, &mut |record| chunk_batched.add(record))
                    });
                    // Keeping a batch cannot fail.
                    let _ = chunk_batched.finish(&made);
                    let failed = made.is_err();
                    if sender.send((batches, made)).is_err() || failed {
                        break;
                    }
                }
                emitter.tally
            }));
        }
        // The chunks in order: chunk `c` comes from emitter `c % emitters`.
        let mut passed: Result<(), TraceErrorKind> = Ok(());
        'chunks: for chunk in 0..chunks {
            let Ok((batches, made)) = receivers[chunk % receivers.len()].recv() else {
                // An emitter that stopped early panicked: the scope passes
                // its panic on.
                break;
            };
            for batch in batches {
                if let Err(error) = (batched.send)(batch) {
                    passed = Err(TraceErrorKind::Sink(error));
                    break 'chunks;
                }
            }
            if let Err(error) = made {
                passed = Err(error);
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        drop(receivers);
        // Emitters and the figures only read and add; a panic there is a
        // bug, passed on.
        let tallies: Vec<Tally> = handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect();
        let figures = figures.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (tallies, passed, figures)
    });
    // The emitters' records were sent past this thread's count.
    batched.records += runs.len() as u64;
    passed?;
    let mut emitter = first;
    for tally in tallies {
        emitter.tally.merge(tally);
    }
    drop((order, runs, launches));
    emitter.spelled.activity_count = batched.records - before;
    let out: &mut Out<'_> = &mut |record| batched.add(record);
    runtime_calls_then_summary(shared, emitter, gpu, runtime, &runtime_links, &iterations, figures, out)
}

/// What a trace's summary is made of.
struct SummaryCounts {
    iterations: usize,
    gpu_events: usize,
    runtime_calls: usize,
    processes: BTreeSet<u64>,
    activity_records: u64,
    tally: Tally,
    figures: BTreeMap<(u64, u32), DeviceFigures>,
}

impl<'a> Shared<'a> {
    fn new(
        collected: &'a Collected,
        info: &'a TraceInfo,
        file: &'a FileIdentity,
        options: &'a ImportOptions,
        uuids: &'a BTreeMap<u32, String>,
    ) -> Result<Self, TraceErrorKind> {
        let host = info.host.as_deref().unwrap_or("unknown-host");
        let device_clock_domain =
            NonEmptyString::new(format!("{}:{host}:{}", info.source, file.attachment_id))?;
        let host_clock_domain = NonEmptyString::new(format!("{device_clock_domain}:host"))?;
        Ok(Self {
            collected,
            info,
            file,
            options,
            uuids,
            device_clock_domain,
            host_clock_domain,
            made: Mutex::new(MadeContexts::default()),
        })
    }

    /// The summary, once every record is made: its figures checked to fit.
    fn summary_of(&self, counts: SummaryCounts) -> Result<Map<String, Value>, TraceErrorKind> {
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

    /// A device's UUID: the trace's own, `--device-uuid`'s, or one made up
    /// from the trace and ordinal so that accounting can tell devices apart.
    fn device_uuid(&self, row: &GpuEvent) -> Option<(String, UuidSource)> {
        if let Some(uuid) = self.collected.strings.get(row.device_uuid) {
            return Some((uuid.to_owned(), UuidSource::Trace));
        }
        if row.device == NONE_U32 {
            return None;
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

    /// The iteration each span names, and the list of iterations.
    /// ProfilerStep-like names are unique per trace in practice; a name that
    /// repeats (two processes, or a restarted step) gets `~2`, `~3`, ... in
    /// file order, since two ranges are two iterations.
    fn iterations(&self) -> Result<(Vec<EntityRef>, Vec<u32>), TraceErrorKind> {
        let mut iterations: Vec<EntityRef> = Vec::new();
        let mut by_ref: FastHashMap<EntityRef, u32> = FastHashMap::default();
        let mut seen_names: FastHashMap<u32, u32> = FastHashMap::default();
        let mut span_iteration = Vec::with_capacity(self.collected.spans.len());
        for span in &self.collected.spans {
            let name = self.collected.name(span.name);
            let reference = match span.scope {
                SpanScope::Thread => match ranges::parse_iteration_range(name) {
                    Some(reference) => reference,
                    // The collector only keeps parseable ranges as thread spans.
                    None => continue,
                },
                SpanScope::Process => {
                    let count = seen_names.entry(span.name).or_default();
                    *count += 1;
                    let id = if *count == 1 { name.to_owned() } else { format!("{name}~{count}") };
                    EntityRef::from_parts(self.file.producer_id.clone(), NonEmptyString::new(id)?)
                }
            };
            let index = match (span.scope, by_ref.get(&reference)) {
                (SpanScope::Thread, Some(&index)) => index,
                _ => {
                    let index = iterations.len() as u32;
                    by_ref.insert(reference.clone(), index);
                    iterations.push(reference);
                    index
                }
            };
            span_iteration.push(index);
        }
        Ok((iterations, span_iteration))
    }

    fn capabilities(&self, gpu: &Rows<GpuEvent>) -> BTreeSet<&'static str> {
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

impl<'a> Emitter<'a> {
    fn new(shared: &'a Shared<'a>) -> Self {
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

    fn emit_iterations(
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
    fn emit_alignment(&mut self, out: &mut Out<'_>) -> Result<(), TraceErrorKind> {
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
    fn gpu_group(
        &mut self,
        groups: &GpuGroups<'_>,
        (position, length): (u32, u32),
        iterations: &[EntityRef],
        out: &mut Out<'_>,
    ) -> Result<(), TraceErrorKind> {
        let GpuGroups { gpu, runtime, launches, runtime_links, order } = *groups;
        let collected = self.shared.collected;
        let group = &order[position as usize..(position + length) as usize];
        let members: Vec<GpuEvent> = group.iter().map(|&index| gpu[index as usize]).collect();
        let first = members[0];
        let launch = launches.launch(runtime, &first);
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
        self.emit_gpu_group(&members, link, launch_row.map(|row| row.name), pid, iterations, out)?;
        let device_key = (first.pid, first.device);
        if let std::collections::btree_map::Entry::Vacant(entry) = self.tally.devices.entry(device_key) {
            entry.insert(DeviceTally {
                name: self.shared.device_name(&first),
                uuid: self.shared.device_uuid(&first),
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
    fn emit_runtime(
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

/// The processes that made runtime calls, for the summary. Inserted one by
/// one: a set collected from the rows would first gather every row's pid
/// (megabytes for a large trace) to sort them.
fn processes(runtime: &Rows<RuntimeRow>) -> BTreeSet<u64> {
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

/// A string known to be non-empty at compile time.
fn static_text(text: &'static str) -> NonEmptyString {
    // Only called with non-empty literals.
    NonEmptyString::new(text).unwrap_or_else(|_| unreachable!("empty literal"))
}

/// Span lists per process (ProfilerStep-like ranges) and per thread
/// (stormlog ranges).
#[allow(clippy::type_complexity, reason = "two plain maps")]
fn span_lists(
    collected: &Collected,
    span_iteration: &[u32],
) -> (FastHashMap<u64, SpanList>, FastHashMap<(u64, u64), SpanList>) {
    let mut process: FastHashMap<u64, SpanList> = FastHashMap::default();
    let mut thread: FastHashMap<(u64, u64), SpanList> = FastHashMap::default();
    for (span, &iteration) in collected.spans.iter().zip(span_iteration) {
        let list = match span.scope {
            SpanScope::Process => process.entry(span.pid).or_default(),
            SpanScope::Thread => thread.entry((span.pid, span.tid)).or_default(),
        };
        list.items.push((span.start, span.end, iteration));
    }
    process.values_mut().chain(thread.values_mut()).for_each(SpanList::finish);
    (process, thread)
}

/// GPU rows grouped into records, in order of first appearance (stormlog's
/// dict order): per launch, device and kind, or one per event. Returned flat:
/// the row order, and each group as a range of it.
fn groups(gpu: &Rows<GpuEvent>, detail: Detail) -> (Vec<u32>, Vec<(u32, u32)>) {
    let count = gpu.len() as u32;
    let mut order: Vec<u32> = (0..count).collect();
    if detail == Detail::Kernel {
        return (order, (0..count).map(|index| (index, 1)).collect());
    }
    let key = |index: u32| {
        let row = &gpu[index as usize];
        // Rows without a correlation stay alone, like stormlog's
        // ("uncorrelated", index) key.
        let launch = if row.correlation == 0 { (1, u64::from(index)) } else { (0, row.correlation) };
        (row.device, row.kind, row.pid, launch)
    };
    order.sort_unstable_by_key(|&index| (key(index), index));
    let mut runs: Vec<(u32, u32)> = Vec::new();
    let mut previous = None;
    for (position, &index) in order.iter().enumerate() {
        let group_key = key(index);
        match runs.last_mut() {
            Some(run) if previous == Some(group_key) => run.1 += 1,
            _ => {
                runs.push((position as u32, 1));
                previous = Some(group_key);
            }
        }
    }
    // Within a run rows are by index, so a run's first row is its earliest.
    runs.sort_unstable_by_key(|&(position, _)| order[position as usize]);
    (order, runs)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::collect::{GpuKind, RuntimeKind};

    fn call((correlation, pid): (u64, u64)) -> RuntimeRow {
        RuntimeRow { start: 0, end: 0, correlation, pid, tid: 0, name: 0, kind: RuntimeKind::Runtime }
    }

    fn gpu_event(correlation: u64, pid: u64) -> GpuEvent {
        GpuEvent {
            start: 0,
            end: 0,
            correlation,
            stream: 0,
            graph_id: 0,
            pid,
            name: 0,
            device: 0,
            device_uuid: 0,
            graph_node: false,
            kind: GpuKind::Kernel,
        }
    }

    /// The launch as a search of every call finds it: the last call with
    /// the event's correlation ID (and process, where events name one),
    /// ambiguous when such calls come from more than one process.
    fn launch_by_scan(calls: &[RuntimeRow], event: &GpuEvent, per_process: bool) -> Result<u32, Unlinked> {
        if event.correlation == 0 {
            return Err(Unlinked::NoLaunch);
        }
        let matching: Vec<u32> = (0..calls.len() as u32)
            .filter(|&index| {
                let call = &calls[index as usize];
                call.correlation == event.correlation && (!per_process || call.pid == event.pid)
            })
            .collect();
        let Some(&chosen) = matching.last() else { return Err(Unlinked::NoLaunch) };
        match matching.iter().all(|&index| calls[index as usize].pid == calls[chosen as usize].pid) {
            true => Ok(chosen),
            false => Err(Unlinked::AmbiguousLaunch),
        }
    }

    proptest! {
        /// Through the fences or not, the index finds the launch a scan of
        /// every call finds, for traces far longer than one fence and with
        /// correlation IDs repeated across processes.
        #[test]
        fn launches_are_found_as_a_scan_finds_them(
            calls in prop::collection::vec((0u64..300, 0u64..3), 0..400),
            events in prop::collection::vec((0u64..320, 0u64..3), 1..40),
            per_process: bool,
        ) {
            let mut runtime = Rows::default();
            for &row in &calls {
                runtime.push(call(row));
            }
            let mut gpu = Rows::default();
            for &(correlation, pid) in &events {
                gpu.push(gpu_event(correlation, if per_process { pid } else { NONE_U64 }));
            }
            let index = LaunchIndex::new(&runtime, &gpu);
            let rows: Vec<RuntimeRow> = calls.iter().copied().map(call).collect();
            for event in gpu.iter() {
                prop_assert_eq!(index.launch(&runtime, event), launch_by_scan(&rows, event, per_process));
            }
        }
    }
}
