//! What each record links to: the runtime call that launched a GPU event
//! (the launch index), the iteration whose range holds a runtime call (the
//! span lists), the iterations themselves, and the GPU rows grouped into
//! records (per launch, or one per event).

use tally_core::{EntityRef, NonEmptyString};
use tally_utils::fast_hash::FastHashMap;

use super::Shared;
use super::emit::{Emitter, Out};
use crate::collect::{Collected, GpuEvent, NONE_U64, Rows, RuntimeRow, SpanScope};
use crate::error::TraceErrorKind;
use crate::{Detail, ranges};

/// Why a GPU event or runtime call is not linked to an iteration; stormlog's
/// words where stormlog has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Unlinked {
    NoLaunch,
    AmbiguousLaunch,
    Outside,
    Ambiguous,
}

impl Unlinked {
    pub(super) fn gpu_reason(self) -> &'static str {
        match self {
            Unlinked::NoLaunch => "no_launch_record",
            Unlinked::AmbiguousLaunch => "launch_in_several_processes",
            Unlinked::Outside => "launch_outside_iteration_range",
            Unlinked::Ambiguous => "ambiguous_iteration_range",
        }
    }

    pub(super) fn runtime_reason(self) -> &'static str {
        match self {
            Unlinked::Outside => "outside_iteration_range",
            _ => "ambiguous_iteration_range",
        }
    }
}

/// An iteration index, or why there is none, in 32 bits.
pub(super) type Link = u32;
const OUTSIDE: Link = u32::MAX;
const AMBIGUOUS: Link = u32::MAX - 1;
pub(super) const NO_LAUNCH: Link = u32::MAX - 2;
pub(super) const AMBIGUOUS_LAUNCH: Link = u32::MAX - 3;

pub(super) fn unlinked(link: Link) -> Option<Unlinked> {
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
pub(super) struct LaunchIndex {
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
    /// `hint` is where the previous lookup of the same caller landed in the
    /// index: GPU rows come in file order, whose correlation IDs mostly
    /// rise, so the search gallops out from there (a few neighbouring
    /// probes) instead of bisecting the whole index (a cache miss a step).
    pub(super) fn launch(
        &self,
        runtime: &Rows<RuntimeRow>,
        row: &GpuEvent,
        hint: &mut usize,
    ) -> Result<u32, Unlinked> {
        if row.correlation == 0 {
            return Err(Unlinked::NoLaunch);
        }
        let process = if self.per_process { row.pid } else { 0 };
        let key = |index: u32| {
            let call = &runtime[index as usize];
            (if self.per_process { call.pid } else { 0 }, call.correlation)
        };
        let wanted = (process, row.correlation);
        let first = gallop(&self.order, (*hint).min(self.order.len()), |&index| key(index) < wanted);
        *hint = first;
        // A correlation ID has one call or a few: walking them is cheaper
        // than a second search over the whole index.
        let count = self.order[first..].iter().take_while(|&&index| key(index) == wanted).count();
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

/// `items.partition_point(before)` (`before` true for a prefix of `items`)
/// found by galloping from `from`: steps of 1, 2, 4, ... away from it until
/// the boundary is passed, then a binary search of the last step. Costs
/// the logarithm of the distance from `from`, at most about twice a plain
/// binary search's.
fn gallop<T>(items: &[T], from: usize, before: impl Fn(&T) -> bool) -> usize {
    let (mut low, mut high);
    if from < items.len() && before(&items[from]) {
        // The boundary is after `from`.
        (low, high) = (from + 1, from + 1);
        let mut step = 1;
        while high < items.len() && before(&items[high]) {
            low = high + 1;
            high = (high + step).min(items.len());
            step *= 2;
        }
    } else {
        // The boundary is at or before `from`.
        (low, high) = (from, from);
        let mut step = 1;
        while low > 0 && !before(&items[low - 1]) {
            high = low - 1;
            low = low.saturating_sub(step);
            step *= 2;
        }
    }
    low + items[low..high].partition_point(before)
}

/// The iterations (their records emitted), each runtime call's
/// iteration and the launch index (the clock alignment emitted after).
#[allow(clippy::type_complexity, reason = "three parts of the plan")]
pub(super) fn linked(
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
    let runtime_links: Vec<Link> = runtime.iter().map(|row| link_at(row.pid, row.tid, row.start)).collect();
    let launches = LaunchIndex::new(runtime, gpu);
    if !gpu.is_empty() {
        emitter.emit_alignment(out)?;
    }
    Ok((iterations, runtime_links, launches))
}

impl Shared<'_> {
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
pub(super) fn groups(gpu: &Rows<GpuEvent>, detail: Detail) -> (Vec<u32>, Vec<(u32, u32)>) {
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
            // The hint carried from one lookup to the next, as a build does,
            // and also a stale one far off.
            let mut hint = 0;
            for event in gpu.iter() {
                let expected = launch_by_scan(&rows, event, per_process);
                prop_assert_eq!(index.launch(&runtime, event, &mut hint), expected);
                let mut far = calls.len() * 2;
                prop_assert_eq!(index.launch(&runtime, event, &mut far), expected);
            }
        }

        /// Galloping from anywhere finds the boundary a binary search finds.
        #[test]
        fn gallop_finds_the_partition_point(
            mut items in prop::collection::vec(0u32..50, 0..200),
            wanted in 0u32..52,
            from in 0usize..220,
        ) {
            items.sort_unstable();
            prop_assert_eq!(
                gallop(&items, from.min(items.len()), |&item| item < wanted),
                items.partition_point(|&item| item < wanted)
            );
        }
    }
}
