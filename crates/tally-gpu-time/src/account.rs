//! stormlog's `account_gpu_time`, with per-device details beside it.

use std::cmp::Ordering;

use tally_core::{ActivityDomain, ClockKind, CorrelationContext, EntityRef};
use tally_resolve::{IterationFacts, ResolvedEvidence};
use tally_utils::fast_hash::FastHashMap;

use tally_utils::interval::{IdleGaps, Sweep, UnionSweep, sort_by_start};

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
    /// Index into the device's (iteration) groups.
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
    /// The device's share of each iteration, by the iteration's index.
    groups: Vec<GroupWork>,
    group_index: FastHashMap<u32, u32>,
    /// The last iteration looked up and its group: an iteration's kernels
    /// arrive together.
    last_group: Option<(u32, u32)>,
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

impl<'a> DeviceWork<'a> {
    fn new(clock: DeviceClock<'a>) -> Self {
        Self {
            clock,
            items: Vec::new(),
            time: GpuTime::default(),
            stream_index: FastHashMap::default(),
            streams: Vec::new(),
            last_stream: None,
            groups: Vec::new(),
            group_index: FastHashMap::default(),
            last_group: None,
            swept: Swept::InOrder { sweep: Sweep::default(), streams: Vec::new(), last_start: 0 },
        }
    }

    /// The stream slot of `stream_id`, made on first sight.
    fn stream(&mut self, stream_id: u64) -> u32 {
        match self.last_stream {
            Some((known, stream)) if known == stream_id => stream,
            _ => {
                let stream = stream_slot(&mut self.stream_index, &mut self.streams, stream_id);
                self.last_stream = Some((stream_id, stream));
                stream
            }
        }
    }

    /// The group of iteration `iteration` on this device, made on first
    /// sight.
    fn group(&mut self, iteration: u32) -> u32 {
        match self.last_group {
            Some((known, group)) if known == iteration => group,
            _ => {
                let next = self.groups.len() as u32;
                let group = *self.group_index.entry(iteration).or_insert(next);
                if group == next {
                    self.groups.push(GroupWork {
                        iteration,
                        time: GpuTime::default(),
                        sweep: UnionSweep::default(),
                    });
                }
                self.last_group = Some((iteration, group));
                group
            }
        }
    }
}

/// A device's share of one iteration.
#[derive(Debug)]
struct GroupWork {
    iteration: u32,
    time: GpuTime,
    sweep: UnionSweep,
}

/// The devices' numbers, by clock: the first [`RECENT_CLOCKS`] clocks met
/// are also remembered by the addresses of their strings, which the
/// activities of one producer share (one context), so that the activities
/// of a few interleaved devices skip hashing the strings.
#[derive(Default)]
struct DeviceNumbers<'a> {
    index: FastHashMap<DeviceClock<'a>, u32>,
    recent: Vec<(DeviceClock<'a>, u32)>,
}

impl<'a> DeviceNumbers<'a> {
    /// The number of `clock`'s device; `new` numbers a device met for the
    /// first time.
    #[inline]
    fn number(&mut self, clock: DeviceClock<'a>, new: impl FnOnce() -> u32) -> u32 {
        if let Some(&(_, device)) = self.recent.iter().find(|(known, _)| same_strings(known, &clock)) {
            return device;
        }
        let device = *self.index.entry(clock).or_insert_with(new);
        if self.recent.len() < RECENT_CLOCKS && device != NONE {
            self.recent.push((clock, device));
        }
        device
    }
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

/// Activities from which the accounting runs on two threads when a second
/// core is there: below it a thread costs more than it saves.
const PARALLEL_ACTIVITIES: usize = 1 << 16;

/// Device clocks remembered by address in [`Part::account`]: a run's
/// devices are few, and the first ones met are nearly all of them.
const RECENT_CLOCKS: usize = 8;

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
/// none. A large run's devices are shared out between two threads, each
/// reading every activity and accounting those of its own devices.
pub fn account_gpu_time<G: ResolvedEvidence + ?Sized>(graph: &G) -> RunAccounting<'_> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = if graph.counts().activities >= PARALLEL_ACTIVITIES { cores.min(2) } else { 1 };
    account_gpu_time_on(graph, threads)
}

/// [`account_gpu_time`] on `threads` threads (at least one) whatever the
/// run's size: the devices are dealt out in the order they are first met,
/// and each thread reads every activity and accounts its own devices'. The
/// accounting is the same for any number of threads.
pub fn account_gpu_time_on<G: ResolvedEvidence + ?Sized>(graph: &G, threads: usize) -> RunAccounting<'_> {
    let parts = threads.max(1);
    // The last part also lists the unattributed and unmeasured activities
    // and sorts the lists, beside the others' devices.
    let mut accounted: Vec<Part<'_>> = std::thread::scope(|scope| {
        let others: Vec<_> =
            (1..parts).map(|part| scope.spawn(move || Part::account(graph, part, parts))).collect();
        let mut accounted = vec![Part::account(graph, 0, parts)];
        // Accounting only reads and adds; a panic there is a bug, passed on.
        accounted.extend(
            others
                .into_iter()
                .map(|other| other.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))),
        );
        accounted
    });
    let listed = accounted.len() - 1;
    let mut unattributed = std::mem::take(&mut accounted[listed].unattributed);
    let mut unmeasured = std::mem::take(&mut accounted[listed].unmeasured);
    // Each device's groups go with its clock, in whatever order.
    let finished: Vec<(DeviceTotal<'_>, Vec<GroupWork>)> =
        accounted.into_iter().flat_map(|part| part.finished).collect();
    let clocks: Vec<DeviceClock<'_>> = finished.iter().map(|(total, _)| total.clock).collect();
    let (mut device_totals, groups): (Vec<DeviceTotal<'_>>, Vec<Vec<GroupWork>>) =
        finished.into_iter().unzip();
    device_totals.sort_by(|a, b| a.clock.cmp(&b.clock));
    // The lists are sorted beside the iterations' rows, which sort too.
    let iterations = if parts > 1 {
        std::thread::scope(|scope| {
            let sorted = scope.spawn(|| {
                unattributed.sort_unstable();
                unmeasured.sort_unstable();
            });
            let iterations = iteration_timings(graph, groups, &clocks);
            // Sorting references cannot panic.
            sorted.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            iterations
        })
    } else {
        unattributed.sort_unstable();
        unmeasured.sort_unstable();
        iteration_timings(graph, groups, &clocks)
    };
    RunAccounting {
        run_id: graph.run_id(),
        iterations,
        device_totals,
        unattributed_activity_refs: unattributed,
        unmeasured_gpu_activity_refs: unmeasured,
    }
}

/// What one thread accounts: the devices numbered `part`, `part + parts`,
/// ... in the order every thread first meets them (each reads every
/// activity in one order), finished; and, for the last part, the lists of
/// unattributed and unmeasured activities, not yet sorted.
struct Part<'a> {
    finished: Vec<(DeviceTotal<'a>, Vec<GroupWork>)>,
    unattributed: Vec<&'a EntityRef>,
    unmeasured: Vec<&'a EntityRef>,
}

impl<'a> Part<'a> {
    fn account<G: ResolvedEvidence + ?Sized>(graph: &'a G, part: usize, parts: usize) -> Self {
        // Every device met, numbered in first-seen order; `None` for
        // another part's.
        let mut devices: Vec<Option<DeviceWork<'a>>> = Vec::new();
        let mut numbers = DeviceNumbers::default();
        let mut unattributed = Vec::new();
        let mut unmeasured = Vec::new();
        let lists = part == parts - 1;
        for activity in graph.activity_facts() {
            if lists && !activity.attributed {
                unattributed.extend(activity.reference);
            }
            if activity.domain != ActivityDomain::Gpu {
                continue;
            }
            let Some(((uuid, domain, kind), busy)) = activity.device.zip(activity.busy) else {
                if lists {
                    unmeasured.extend(activity.reference);
                }
                continue;
            };
            let clock = DeviceClock::new(uuid, domain, kind);
            let device = numbers.number(clock, || {
                let number = devices.len();
                devices.push((number % parts == part).then(|| DeviceWork::new(clock)));
                // At most one device per activity, and activities are fewer
                // than u32::MAX (tally-resolve caps its tables).
                number as u32
            });
            let Some(work) = &mut devices[device as usize] else { continue };
            let intervals = busy.as_slice();
            let summed: u128 = intervals.iter().map(|interval| u128::from(interval.duration_ns())).sum();
            add(&mut work.time, summed);
            let stream = match activity.stream_id {
                None => NONE,
                Some(stream_id) => {
                    let stream = work.stream(stream_id);
                    add(&mut work.streams[stream as usize].1, summed);
                    stream
                }
            };
            let group = match activity.iteration {
                None => NONE,
                Some(iteration) => {
                    let group = work.group(iteration as u32);
                    add(&mut work.groups[group as usize].time, summed);
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
                        work.groups[group as usize].sweep.push(start, end);
                    }
                }
            }
        }
        gather_out_of_order(graph, &mut devices, &mut numbers);
        let finished = devices.into_iter().flatten().map(finish_device).collect();
        Part { finished, unattributed, unmeasured }
    }
}

/// The second pass over the activities, for the devices whose intervals
/// came out of order: each of their intervals gathered with its stream and
/// group slots (made by the first pass), and their groups' sweeps started
/// over.
fn gather_out_of_order<'a, G: ResolvedEvidence + ?Sized>(
    graph: &'a G,
    devices: &mut [Option<DeviceWork<'a>>],
    numbers: &mut DeviceNumbers<'a>,
) {
    let gathered = |work: &Option<DeviceWork<'_>>| {
        work.as_ref().is_some_and(|work| matches!(work.swept, Swept::Gathered))
    };
    if !devices.iter().any(gathered) {
        return;
    }
    for work in devices.iter_mut().flatten() {
        if matches!(work.swept, Swept::Gathered) {
            for group in &mut work.groups {
                group.sweep = UnionSweep::default();
            }
        }
    }
    for activity in graph.activity_facts() {
        if activity.domain != ActivityDomain::Gpu {
            continue;
        }
        let Some(((uuid, domain, kind), busy)) = activity.device.zip(activity.busy) else { continue };
        // The first pass numbered every measurable activity's device and
        // gave its stream and group a slot, so no number is made here.
        let device = numbers.number(DeviceClock::new(uuid, domain, kind), || NONE);
        if device == NONE {
            continue;
        }
        let Some(work) = &mut devices[device as usize] else { continue };
        if matches!(work.swept, Swept::InOrder { .. }) {
            continue;
        }
        let stream = activity.stream_id.and_then(|id| work.stream_index.get(&id).copied()).unwrap_or(NONE);
        let group = activity
            .iteration
            .and_then(|iteration| work.group_index.get(&(iteration as u32)).copied())
            .unwrap_or(NONE);
        work.items.extend(busy.as_slice().iter().map(|interval| Item {
            start: interval.start_ns(),
            end: interval.end_ns(),
            group,
            stream,
        }));
    }
}

/// One device's figures and its groups with their busy time: from its
/// sweeps when its intervals came in order, else from its gathered
/// intervals, sorted once and swept for the device, its streams and its
/// iterations together.
fn finish_device(work: DeviceWork<'_>) -> (DeviceTotal<'_>, Vec<GroupWork>) {
    let DeviceWork { clock, mut items, mut time, streams, mut groups, swept, .. } = work;
    let (sweep, stream_sweeps) = match swept {
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
    // The in-order sweep grows its stream sweeps with the device's streams
    // before each activity's intervals.
    debug_assert_eq!(stream_sweeps.len(), streams.len());
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
    for group in &mut groups {
        group.time.busy_ns = std::mem::take(&mut group.sweep).finish();
    }
    (DeviceTotal { clock, time, detail }, groups)
}

/// Each known iteration's timing; `groups[d]` are device `d`'s finished
/// groups, whose clock is `clocks[d]`.
fn iteration_timings<'a, G: ResolvedEvidence + ?Sized>(
    graph: &'a G,
    groups: Vec<Vec<GroupWork>>,
    clocks: &[DeviceClock<'a>],
) -> Vec<IterationTiming<'a>> {
    let mut rows_of: Vec<Vec<(DeviceClock<'a>, GpuTime)>> = Vec::new();
    let facts: Vec<IterationFacts<'a>> = graph.iteration_facts().collect();
    rows_of.resize_with(facts.len(), Vec::new);
    for (device_groups, clock) in groups.into_iter().zip(clocks) {
        for group in device_groups {
            rows_of[group.iteration as usize].push((*clock, group.time));
        }
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
