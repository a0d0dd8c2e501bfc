//! stormlog's `account_gpu_time`, with per-device details beside it.

use std::cmp::Ordering;

use tally_core::{ActivityDomain, ClockKind, CorrelationContext, EntityRef};
use tally_resolve::{FastHashMap, IterationFacts, ResolvedEvidence};

use tally_core::interval::{IdleGaps, Sweep, UnionSweep, sort_by_start};

/// The clock GPU activity was timed on: a device's own clock or a host
/// monotonic clock, per device. Figures on different device clocks are
/// never added together.
///
/// Ordered by `(device_uuid, clock_domain, clock_kind)` as strings, the
/// order of every list in tally's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceClock<'a> {
    /// The device.
    pub device_uuid: &'a str,
    /// The clock domain the activity's timestamps are on.
    pub clock_domain: &'a str,
    /// `monotonic` or `device`; wall-clock activity is never measured.
    pub clock_kind: ClockKind,
}

impl<'a> DeviceClock<'a> {
    /// A device clock; stormlog's default kind is `monotonic`.
    pub fn new(device_uuid: &'a str, clock_domain: &'a str, clock_kind: ClockKind) -> Self {
        Self { device_uuid, clock_domain, clock_kind }
    }

    /// The device clock of a context whose GPU activity can be measured:
    /// it names a device and its clock is monotonic or a device clock.
    pub fn of_context(context: &'a CorrelationContext) -> Option<Self> {
        let device_uuid = context.measured_device()?;
        Some(Self::new(device_uuid, &context.clock_domain, context.clock_kind))
    }

    fn key(&self) -> (&'a str, &'a str, &'static str) {
        (self.device_uuid, self.clock_domain, self.clock_kind.as_str())
    }
}

impl Ord for DeviceClock<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for DeviceClock<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// stormlog's `GpuTime`: three separate figures, none derived from another.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuTime {
    /// The sum of every busy interval's length; overlaps count twice.
    pub summed_activity_ns: u128,
    /// The length of the union of the busy intervals.
    pub busy_ns: u64,
    /// How many activities contributed.
    pub activity_count: u64,
}

impl GpuTime {
    /// How many activities ran at once on average while the device was
    /// busy: summed over busy. `None` when nothing was busy. A ratio, not a
    /// time, so a float is fine here.
    pub fn overlap_factor(&self) -> Option<f64> {
        (self.busy_ns > 0).then(|| self.summed_activity_ns as f64 / self.busy_ns as f64)
    }
}

/// Busy time of one stream of one device clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamBusy {
    /// The stream.
    pub stream_id: u64,
    /// The stream's own figures.
    pub time: GpuTime,
}

/// What tally reports per device clock beyond stormlog's three figures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceDetail {
    /// Busy time per stream, for activities whose `stream_id` is known,
    /// sorted by stream.
    pub streams: Vec<StreamBusy>,
    /// The most activities running at one instant (intervals are half-open,
    /// so one ending where another starts does not overlap it).
    pub peak_concurrency: u64,
    /// First start and last end of non-empty busy intervals.
    pub envelope: Option<(u64, u64)>,
    /// Idle time inside the envelope.
    pub idle_gaps: IdleGaps,
}

/// One device clock's figures for the whole run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceTotal<'a> {
    /// The device clock.
    pub clock: DeviceClock<'a>,
    /// stormlog's figures.
    pub time: GpuTime,
    /// tally's extras.
    pub detail: DeviceDetail,
}

/// stormlog's `IterationTiming`, for one known iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IterationTiming<'a> {
    /// The iteration.
    pub iteration_ref: &'a EntityRef,
    /// `end − start` when its clock is monotonic and both are known.
    pub elapsed_ns: Option<u64>,
    /// The GPU time of its linked, measured activities per device clock,
    /// sorted by clock; empty when it has none.
    pub gpu: Vec<(DeviceClock<'a>, GpuTime)>,
}

impl<'a> IterationTiming<'a> {
    /// The figures on one device clock.
    pub fn on(&self, clock: &DeviceClock<'_>) -> Option<&GpuTime> {
        self.gpu.iter().find(|(candidate, _)| candidate == clock).map(|(_, time)| time)
    }
}

/// stormlog's `RunAccounting`, with every list sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAccounting<'a> {
    /// The run.
    pub run_id: Option<&'a str>,
    /// Every known iteration, sorted by `(producer_id, id)`.
    pub iterations: Vec<IterationTiming<'a>>,
    /// Per device clock, sorted by clock.
    pub device_totals: Vec<DeviceTotal<'a>>,
    /// Activities of any domain without an iteration link, sorted.
    pub unattributed_activity_refs: Vec<&'a EntityRef>,
    /// GPU activities that cannot be measured (no device, a wall clock, or
    /// an incomplete span), sorted.
    pub unmeasured_gpu_activity_refs: Vec<&'a EntityRef>,
}

impl<'a> RunAccounting<'a> {
    /// The timing of one iteration.
    pub fn iteration(&self, iteration_ref: &EntityRef) -> Option<&IterationTiming<'a>> {
        let index =
            self.iterations.binary_search_by(|timing| timing.iteration_ref.cmp(iteration_ref)).ok()?;
        self.iterations.get(index)
    }

    /// The run total of one device clock.
    pub fn device_total(&self, clock: &DeviceClock<'_>) -> Option<&DeviceTotal<'a>> {
        self.device_totals.iter().find(|total| total.clock == *clock)
    }
}

/// Marks "none" in the `u32` links of [`Item`].
const NONE: u32 = u32::MAX;

/// One busy interval, with the groups it also counts in.
#[derive(Debug, Clone, Copy)]
struct Item {
    start: u64,
    end: u64,
    /// Index into the (iteration, device) accumulators.
    group: u32,
    /// Index into the device's streams.
    stream: u32,
}

#[derive(Debug)]
struct DeviceWork<'a> {
    clock: DeviceClock<'a>,
    /// The device's intervals, gathered only once they have come out of
    /// order of start ([`Swept::Gathered`]).
    items: Vec<Item>,
    time: GpuTime,
    stream_index: FastHashMap<u64, u32>,
    streams: Vec<(u64, GpuTime)>,
    /// The last stream looked up and its slot: a device's activities come
    /// in runs on one stream.
    last_stream: Option<(u64, u32)>,
    swept: Swept,
}

/// How a device's intervals are swept.
///
/// A device's activities nearly always arrive in order of start (a trace is
/// read in order, an artifact is written in it): then its sweeps take each
/// interval as it comes, and nothing is stored or sorted. The first
/// interval out of order drops what was swept, and the device's intervals
/// are gathered in a second pass and sorted, as a device's always were.
#[derive(Debug)]
enum Swept {
    /// Every interval so far came in order: the device's sweep and its
    /// streams' (one per stream slot), and the last start.
    InOrder { sweep: Sweep, streams: Vec<UnionSweep>, last_start: u64 },
    /// Out of order: gathered into `items` in the second pass.
    Gathered,
}

#[derive(Debug)]
struct GroupWork {
    iteration: u32,
    device: u32,
    time: GpuTime,
    sweep: UnionSweep,
}

/// The same device clock by the addresses of its strings: a cheap check
/// that holds for activities sharing a context.
fn same_strings(a: &DeviceClock<'_>, b: &DeviceClock<'_>) -> bool {
    std::ptr::eq(a.device_uuid, b.device_uuid)
        && std::ptr::eq(a.clock_domain, b.clock_domain)
        && a.clock_kind == b.clock_kind
}

fn add(time: &mut GpuTime, summed: u128) {
    time.summed_activity_ns += summed;
    time.activity_count += 1;
}

/// stormlog's `account_gpu_time`: summed activity, interval union and
/// iteration elapsed time, kept apart per device clock, with tally's
/// per-device details.
///
/// Every activity without an iteration link is unattributed. Only GPU
/// activities count further: measured when their context names a device, a
/// monotonic or device clock, and both ends; busy in `[start, end)` or in
/// their `metadata.intervals`. Each run total and each known iteration's
/// row gets the three figures of [`GpuTime`].
///
/// Works on any [`ResolvedEvidence`]: a [`tally_resolve::CorrelationGraph`]
/// that borrows its events, or a [`tally_resolve::StreamedRun`] that kept
/// none.
pub fn account_gpu_time<G: ResolvedEvidence + ?Sized>(graph: &G) -> RunAccounting<'_> {
    let mut devices: Vec<DeviceWork<'_>> = Vec::new();
    let mut device_index: FastHashMap<DeviceClock<'_>, u32> = FastHashMap::default();
    let mut groups: Vec<GroupWork> = Vec::new();
    let mut group_index: FastHashMap<(u32, u32), u32> = FastHashMap::default();
    let mut unattributed = Vec::new();
    let mut unmeasured = Vec::new();
    // Activities of one producer share one context, and its strings: remember
    // the last device clock by address to skip hashing it again.
    let mut last_clock: Option<(DeviceClock<'_>, u32)> = None;
    // Likewise the last (iteration, device) group: an iteration's kernels
    // arrive together, and the lookup was a hash probe per activity.
    let mut last_group: Option<((u32, u32), u32)> = None;
    for activity in graph.activity_facts() {
        if !activity.attributed {
            unattributed.extend(activity.reference);
        }
        if activity.domain != ActivityDomain::Gpu {
            continue;
        }
        let measurable = activity.device.zip(activity.busy);
        let Some(((uuid, domain, kind), busy)) = measurable else {
            unmeasured.extend(activity.reference);
            continue;
        };
        let clock = DeviceClock::new(uuid, domain, kind);
        let device = match last_clock {
            Some((known, device)) if same_strings(&known, &clock) => device,
            _ => {
                let device = *device_index.entry(clock).or_insert_with(|| {
                    devices.push(DeviceWork {
                        clock,
                        items: Vec::new(),
                        time: GpuTime::default(),
                        stream_index: FastHashMap::default(),
                        streams: Vec::new(),
                        last_stream: None,
                        swept: Swept::InOrder { sweep: Sweep::default(), streams: Vec::new(), last_start: 0 },
                    });
                    // At most one device per activity, and activities are
                    // fewer than u32::MAX (tally-resolve caps its tables).
                    (devices.len() - 1) as u32
                });
                last_clock = Some((clock, device));
                device
            }
        };
        let work = &mut devices[device as usize];
        let intervals = busy.as_slice();
        let summed: u128 = intervals.iter().map(|interval| u128::from(interval.duration_ns())).sum();
        add(&mut work.time, summed);
        let stream = match activity.stream_id {
            None => NONE,
            Some(stream_id) => {
                let stream = match work.last_stream {
                    Some((known, stream)) if known == stream_id => stream,
                    _ => {
                        let stream = stream_slot(&mut work.stream_index, &mut work.streams, stream_id);
                        work.last_stream = Some((stream_id, stream));
                        stream
                    }
                };
                add(&mut work.streams[stream as usize].1, summed);
                stream
            }
        };
        let group = match activity.iteration {
            None => NONE,
            Some(iteration) => {
                let key = (iteration as u32, device);
                let group = match last_group {
                    Some((known, group)) if known == key => group,
                    _ => {
                        let next = groups.len() as u32;
                        let group = *group_index.entry(key).or_insert(next);
                        if group == next {
                            groups.push(GroupWork {
                                iteration: iteration as u32,
                                device,
                                time: GpuTime::default(),
                                sweep: UnionSweep::default(),
                            });
                        }
                        last_group = Some((key, group));
                        group
                    }
                };
                add(&mut groups[group as usize].time, summed);
                group
            }
        };
        if let Swept::InOrder { sweep, streams, last_start } = &mut work.swept {
            if streams.len() < work.streams.len() {
                streams.resize(work.streams.len(), UnionSweep::default());
            }
            for interval in intervals {
                let (start, end) = (interval.start_ns(), interval.end_ns());
                if start < *last_start {
                    work.swept = Swept::Gathered;
                    break;
                }
                *last_start = start;
                sweep.push(start, end);
                if stream != NONE {
                    streams[stream as usize].push(start, end);
                }
                if group != NONE {
                    groups[group as usize].sweep.push(start, end);
                }
            }
        }
    }
    gather_out_of_order(graph, &mut devices, &device_index, &mut groups, &group_index);
    drop(group_index);
    drop(device_index);

    let clocks: Vec<DeviceClock<'_>> = devices.iter().map(|work| work.clock).collect();
    let mut device_totals = Vec::with_capacity(devices.len());
    for work in devices {
        device_totals.push(finish_device(work, &mut groups));
    }
    device_totals.sort_by(|a, b| a.clock.cmp(&b.clock));

    let iterations = iteration_timings(graph, groups, &clocks);
    unattributed.sort_unstable();
    unmeasured.sort_unstable();
    RunAccounting {
        run_id: graph.run_id(),
        iterations,
        device_totals,
        unattributed_activity_refs: unattributed,
        unmeasured_gpu_activity_refs: unmeasured,
    }
}

/// The second pass over the activities, for the devices whose intervals
/// came out of order: each of their intervals gathered with its stream and
/// group slots (made by the first pass), and their groups' sweeps started
/// over.
fn gather_out_of_order<G: ResolvedEvidence + ?Sized>(
    graph: &G,
    devices: &mut [DeviceWork<'_>],
    device_index: &FastHashMap<DeviceClock<'_>, u32>,
    groups: &mut [GroupWork],
    group_index: &FastHashMap<(u32, u32), u32>,
) {
    if devices.iter().all(|work| matches!(work.swept, Swept::InOrder { .. })) {
        return;
    }
    for group in groups.iter_mut() {
        if matches!(devices[group.device as usize].swept, Swept::Gathered) {
            group.sweep = UnionSweep::default();
        }
    }
    for activity in graph.activity_facts() {
        if activity.domain != ActivityDomain::Gpu {
            continue;
        }
        let Some(((uuid, domain, kind), busy)) = activity.device.zip(activity.busy) else { continue };
        // The first pass gave every measurable activity's device, stream
        // and group a slot.
        let Some(&device) = device_index.get(&DeviceClock::new(uuid, domain, kind)) else { continue };
        let work = &mut devices[device as usize];
        if matches!(work.swept, Swept::InOrder { .. }) {
            continue;
        }
        let stream = activity.stream_id.and_then(|id| work.stream_index.get(&id).copied()).unwrap_or(NONE);
        let group = activity
            .iteration
            .and_then(|iteration| group_index.get(&(iteration as u32, device)).copied())
            .unwrap_or(NONE);
        work.items.extend(busy.as_slice().iter().map(|interval| Item {
            start: interval.start_ns(),
            end: interval.end_ns(),
            group,
            stream,
        }));
    }
}

/// One device's figures: from its sweeps when its intervals came in order,
/// else from its gathered intervals, sorted once and swept for the device,
/// its streams and its iterations together.
fn finish_device<'a>(work: DeviceWork<'a>, groups: &mut [GroupWork]) -> DeviceTotal<'a> {
    let DeviceWork { clock, mut items, mut time, streams, swept, .. } = work;
    let (sweep, mut stream_sweeps) = match swept {
        Swept::InOrder { sweep, streams, .. } => (sweep, streams),
        Swept::Gathered => {
            sort_by_start(&mut items, |item| item.start);
            let mut sweep = Sweep::default();
            let mut stream_sweeps = vec![UnionSweep::default(); streams.len()];
            for item in &items {
                sweep.push(item.start, item.end);
                if item.stream != NONE {
                    stream_sweeps[item.stream as usize].push(item.start, item.end);
                }
                if item.group != NONE {
                    groups[item.group as usize].sweep.push(item.start, item.end);
                }
            }
            (sweep, stream_sweeps)
        }
    };
    drop(items);
    stream_sweeps.resize(streams.len(), UnionSweep::default());
    let result = sweep.finish();
    time.busy_ns = result.busy_ns;
    let mut streams: Vec<StreamBusy> = streams
        .into_iter()
        .zip(stream_sweeps)
        .map(|((stream_id, mut time), sweep)| {
            time.busy_ns = sweep.finish();
            StreamBusy { stream_id, time }
        })
        .collect();
    streams.sort_unstable_by_key(|stream| stream.stream_id);
    let detail = DeviceDetail {
        streams,
        peak_concurrency: result.peak_concurrency,
        envelope: result.envelope,
        idle_gaps: result.gaps,
    };
    DeviceTotal { clock, time, detail }
}

fn iteration_timings<'a, G: ResolvedEvidence + ?Sized>(
    graph: &'a G,
    groups: Vec<GroupWork>,
    clocks: &[DeviceClock<'a>],
) -> Vec<IterationTiming<'a>> {
    let mut rows_of: Vec<Vec<(DeviceClock<'a>, GpuTime)>> = Vec::new();
    let facts: Vec<IterationFacts<'a>> = graph.iteration_facts().collect();
    rows_of.resize_with(facts.len(), Vec::new);
    for group in groups {
        let mut time = group.time;
        time.busy_ns = group.sweep.finish();
        rows_of[group.iteration as usize].push((clocks[group.device as usize], time));
    }
    let mut timings: Vec<IterationTiming<'a>> = facts
        .into_iter()
        .zip(rows_of)
        .map(|(iteration, mut gpu)| {
            gpu.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            IterationTiming { iteration_ref: iteration.iteration_ref, elapsed_ns: iteration.elapsed_ns, gpu }
        })
        .collect();
    timings.sort_unstable_by(|a, b| a.iteration_ref.cmp(b.iteration_ref));
    timings
}

/// The position of `stream_id`'s row in `streams`, in first-seen order: a
/// new stream gets a default row at the end. The per-device stream tables
/// of the accounting and of the breakdown are kept this way.
#[inline]
pub(crate) fn stream_slot<T: Default>(
    index: &mut FastHashMap<u64, u32>,
    streams: &mut Vec<(u64, T)>,
    stream_id: u64,
) -> u32 {
    // A device's streams number far below u32::MAX (one per CUDA stream).
    let next = streams.len() as u32;
    let stream = *index.entry(stream_id).or_insert(next);
    if stream == next {
        streams.push((stream_id, T::default()));
    }
    stream
}
