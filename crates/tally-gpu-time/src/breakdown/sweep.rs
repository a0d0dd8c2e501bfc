//! Each device clock's work swept into its figures: one sort of its busy
//! intervals and one labelled coverage sweep per device clock, stream and
//! iteration.

use tally_clock::NearestAligner;
use tally_core::EntityRef;
use tally_utils::fast_hash::FastHashMap;
use tally_utils::interval::{LabelCoverage, LabelSweep, Periods, UnionSweep, sort_by_start};

use super::host::HostCalls;
use super::report::{
    Categories, CategoryTime, DeviceBreakdown, IdleBreakdown, IterationBreakdown, KernelRow, LaunchLatency,
    Overlaps, StreamBreakdown,
};
use super::timeline::{self, DeviceTimeline};
use super::work::{DeviceWork, Item};
use crate::category::{Category, MemoryKind};

/// The label of a launch call in flight (linked work not yet started).
const IN_FLIGHT: u8 = 16;
/// The label of a synchronisation call running.
const SYNC: u8 = 32;
/// The label of the busy envelope.
const ENVELOPE: u8 = 64;
/// The label of gaps whose ending work has no linked launch.
const UNEXPLAINED: u8 = 128;
/// The category labels.
const WORK: u8 = 15;

/// The category and overlap figures of one coverage.
struct Figures {
    busy_ns: u64,
    categories: Categories,
    overlap_ns: Overlaps,
    exposed_communication_ns: u64,
    exposed_memory_ns: u64,
}

fn figures(coverage: &LabelCoverage, counts: &[CategoryTime; 4]) -> Figures {
    let mut categories = Categories::default();
    for (index, category) in Category::ALL.into_iter().enumerate() {
        let slot = categories.get_mut(category);
        *slot = counts[index];
        slot.busy_ns = coverage.any(category.bit());
    }
    let (compute, communication, memory) =
        (Category::Compute.bit(), Category::Communication.bit(), Category::Memory.bit());
    Figures {
        busy_ns: coverage.any(WORK),
        categories,
        overlap_ns: Overlaps {
            communication_compute: coverage.all(communication | compute),
            memory_compute: coverage.all(memory | compute),
            communication_memory: coverage.all(communication | memory),
        },
        exposed_communication_ns: coverage.covered(|set| set & communication != 0 && set & compute == 0),
        exposed_memory_ns: coverage.covered(|set| set & memory != 0 && set & compute == 0),
    }
}

fn summed_and_count(counts: &[CategoryTime; 4]) -> (u128, u64) {
    counts.iter().fold((0, 0), |(summed, count), time| (summed + time.summed_ns, count + time.count))
}

/// A stream's or an iteration's row (`$row`, with its own `$field`s): its
/// [`Figures`] and the summed time and count of its `$counts`, the fields
/// both kinds of row share.
macro_rules! scope_row {
    ($row:ident { $($field:ident),* }, $figures:expr, $counts:expr) => {{
        let Figures { busy_ns, categories, overlap_ns, exposed_communication_ns, exposed_memory_ns } = $figures;
        let (summed_ns, count) = summed_and_count($counts);
        $row {
            $($field,)*
            busy_ns, summed_ns, count, categories, overlap_ns, exposed_communication_ns, exposed_memory_ns,
        }
    }};
}

/// Nearest rank: the smallest value with at least `percent`% of the values
/// at or below it.
fn nearest_rank(sorted: &[i64], percent: usize) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (percent * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// One sweep over labelled intervals sorted by start.
fn sweep_sorted(intervals: impl IntoIterator<Item = (u64, u64, u8)>) -> LabelCoverage {
    // Every caller passes a list it sorted by start (or a merge of such
    // lists, smallest head first), so no start precedes the last.
    LabelSweep::of_sorted(intervals).expect("intervals sorted by start")
}

/// Lists each sorted by start, read as one list sorted by start: the
/// smallest head first.
fn merge_by_start<'a>(
    lists: Vec<Box<dyn Iterator<Item = (u64, u64, u8)> + 'a>>,
) -> impl Iterator<Item = (u64, u64, u8)> + 'a {
    let mut lists: Vec<_> = lists.into_iter().map(Iterator::peekable).collect();
    std::iter::from_fn(move || {
        let mut best: Option<(usize, u64)> = None;
        for (index, list) in lists.iter_mut().enumerate() {
            if let Some(&(start, _, _)) = list.peek()
                && best.is_none_or(|(_, smallest)| start < smallest)
            {
                best = Some((index, start));
            }
        }
        lists[best?.0].next()
    })
}

/// `[start, end)` in nanoseconds.
type Window = (u64, u64);

/// The gaps between the busy periods of start-sorted items (empty items
/// cover nothing), and the envelope: first start to last end.
fn busy_gaps(items: &[Item]) -> (Vec<Window>, Option<Window>) {
    let mut gaps = Vec::new();
    let mut periods = Periods::default();
    let mut first = None;
    for item in items.iter().filter(|item| item.end > item.start) {
        first.get_or_insert(item.start);
        if let Some((_, end)) = periods.push(item.start, item.end) {
            gaps.push((end, item.start));
        }
    }
    (gaps, first.zip(periods.finish().map(|(_, end)| end)))
}

pub(super) fn finish_device<'a>(
    work: DeviceWork<'a>,
    host: &HostCalls<'a>,
    aligner: &NearestAligner<'a>,
    iteration_refs: Option<&[&EntityRef]>,
    columns: Option<u32>,
) -> (DeviceBreakdown, Option<DeviceTimeline>) {
    let DeviceWork {
        clock,
        mut items,
        mut kernels,
        mut memory,
        streams,
        iteration_counts,
        mut latencies,
        uncertainty,
        mut in_flight,
        unlinked,
        launching_scopes,
        ..
    } = work;
    let device_domain = clock.clock_domain;
    let kernel_labels: Vec<u8> = kernels.iter().map(|entry| entry.category.bit()).collect();
    let label = |item: &Item| kernel_labels[item.kernel as usize];

    latencies.sort_unstable();
    let launch_latency = LaunchLatency {
        linked: latencies.len() as u64,
        unlinked,
        min_ns: latencies.first().copied(),
        median_ns: latencies.get(latencies.len().saturating_sub(1) / 2).copied(),
        p90_ns: nearest_rank(&latencies, 90),
        p99_ns: nearest_rank(&latencies, 99),
        max_ns: latencies.last().copied(),
        summed_ns: latencies.iter().map(|&latency| i128::from(latency)).sum(),
        clock_uncertainty_ns: uncertainty,
    };
    let latency_bins = columns.map(|_| timeline::latency_bins(&latencies));
    drop(latencies);
    let mut sync_windows: Vec<(u64, u64)> = host
        .syncs
        .iter()
        .filter(|call| launching_scopes.contains(&call.scope))
        .filter_map(|call| {
            let domain = host.domains[call.domain as usize];
            let (start, _) = aligner.translate(call.start, domain, device_domain)?;
            let (end, _) = aligner.translate(call.end, domain, device_domain)?;
            Some((start, end))
        })
        .collect();
    sync_windows.sort_unstable();

    // One sort of the busy intervals feeds the kernels' and memory kinds'
    // unions, the gaps and the device's coverage.
    sort_by_start(&mut items, |item| item.start);
    let mut memory_sweeps = [UnionSweep::default(); MemoryKind::ALL.len()];
    for item in &items {
        kernels[item.kernel as usize].sweep.push(item.start, item.end);
        if let Some(sweep) = memory_sweeps.get_mut(usize::from(item.memory)) {
            sweep.push(item.start, item.end);
        }
    }
    for kind in MemoryKind::ALL {
        memory.get_mut(kind).busy_ns = memory_sweeps[kind as usize].finish();
    }
    let (gaps, envelope) = busy_gaps(&items);
    // A gap is explained when the work ending it was linked to its launch.
    let mut linked_starts: Vec<u64> = in_flight.iter().map(|&(_, start)| start).collect();
    linked_starts.sort_unstable();
    let unexplained: Vec<(u64, u64)> =
        gaps.iter().copied().filter(|(_, end)| linked_starts.binary_search(end).is_err()).collect();
    drop(linked_starts);
    in_flight.sort_unstable();

    let labelled = merge_by_start(vec![
        Box::new(items.iter().map(|item| (item.start, item.end, label(item)))),
        Box::new(in_flight.iter().map(|&(start, end)| (start, end, IN_FLIGHT))),
        Box::new(sync_windows.iter().map(|&(start, end)| (start, end, SYNC))),
        Box::new(envelope.into_iter().map(|(start, end)| (start, end, ENVELOPE))),
        Box::new(unexplained.iter().map(|&(start, end)| (start, end, UNEXPLAINED))),
    ]);
    let idle_set = |set: u8| set & ENVELOPE != 0 && set & WORK == 0;
    // The idle cause of a label set, in the order of precedence the idle
    // breakdown below reads.
    let cause = |set: u8| {
        if !idle_set(set) {
            None
        } else if set & IN_FLIGHT != 0 {
            Some(timeline::LAUNCH_QUEUED)
        } else if set & SYNC != 0 {
            Some(timeline::SYNC_WAIT)
        } else if set & UNEXPLAINED != 0 {
            Some(timeline::UNKNOWN)
        } else {
            Some(timeline::HOST_BOUND)
        }
    };
    let (coverage, timeline_columns) = match columns {
        None => (sweep_sorted(labelled), None),
        Some(count) => {
            // The same sweep, its stretches also binned into columns.
            let mut binner = timeline::Binner::new(envelope, count);
            let mut observe = |from: u64, to: u64, set: u8| {
                timeline::count_stretch(&mut binner, from, to, set, WORK, cause(set));
            };
            let mut sweep = LabelSweep::new();
            for (start, end, labels) in labelled {
                // As in `sweep_sorted`: the lists are sorted by start.
                sweep.push_observed(start, end, labels, &mut observe).expect("intervals sorted by start");
            }
            let coverage = sweep.finish_observed(&mut observe);
            (coverage, Some(binner.finish()))
        }
    };
    drop((in_flight, sync_windows, unexplained));
    let idle = IdleBreakdown {
        envelope_ns: envelope.map_or(0, |(start, end)| end - start),
        idle_ns: coverage.covered(idle_set),
        gap_count: gaps.len() as u64,
        longest_gap_ns: gaps.iter().map(|(start, end)| end - start).max().unwrap_or(0),
        launch_queued_ns: coverage.covered(|set| idle_set(set) && set & IN_FLIGHT != 0),
        sync_wait_ns: coverage.covered(|set| idle_set(set) && set & (IN_FLIGHT | SYNC) == SYNC),
        unknown_ns: coverage
            .covered(|set| idle_set(set) && set & (IN_FLIGHT | SYNC | UNEXPLAINED) == UNEXPLAINED),
        host_bound_ns: coverage.covered(|set| idle_set(set) && set & (IN_FLIGHT | SYNC | UNEXPLAINED) == 0),
    };
    drop(gaps);

    let mut device_counts = [CategoryTime::default(); 4];
    for entry in &kernels {
        let slot = &mut device_counts[entry.category as usize];
        slot.count += entry.count;
        slot.summed_ns += entry.summed;
    }
    let device = figures(&coverage, &device_counts);
    drop(coverage);
    let (summed_ns, count) = summed_and_count(&device_counts);

    // Streams and iterations: their own coverage over their own intervals,
    // read from the items sorted again in place (no copy per stream).
    // A stream's envelope spans all of its intervals, empty ones too (as
    // HTA's per-stream idle time reads them).
    let mut stream_coverage: Vec<Option<((u64, u64), LabelCoverage)>> = vec![None; streams.len()];
    items.sort_unstable_by_key(|item| (item.stream, item.start));
    for run in items.chunk_by(|a, b| a.stream == b.stream) {
        if let Some(slot) = stream_coverage.get_mut(run[0].stream as usize) {
            let envelope = (run[0].start, run.iter().map(|item| item.end).max().unwrap_or(run[0].end));
            *slot =
                Some((envelope, sweep_sorted(run.iter().map(|item| (item.start, item.end, label(item))))));
        }
    }
    let mut iteration_figures: FastHashMap<u32, Figures> = FastHashMap::default();
    if iteration_refs.is_some() {
        items.sort_unstable_by_key(|item| (item.iteration, item.start));
        for run in items.chunk_by(|a, b| a.iteration == b.iteration) {
            let iteration = run[0].iteration;
            if let Some(counts) = iteration_counts.get(&iteration) {
                let coverage = sweep_sorted(run.iter().map(|item| (item.start, item.end, label(item))));
                iteration_figures.insert(iteration, figures(&coverage, counts));
            }
        }
    }
    drop(items);
    let mut stream_rows: Vec<StreamBreakdown> = streams
        .iter()
        .zip(stream_coverage)
        .map(|((stream_id, counts), coverage)| {
            let (envelope, coverage) = coverage.unzip();
            let (envelope_start_ns, envelope_end_ns) = envelope.unzip();
            let figures = figures(&coverage.unwrap_or_else(|| LabelSweep::new().finish()), counts);
            let stream_id = *stream_id;
            scope_row!(StreamBreakdown { stream_id, envelope_start_ns, envelope_end_ns }, figures, counts)
        })
        .collect();
    stream_rows.sort_unstable_by_key(|row| row.stream_id);
    let iterations = iteration_refs.map(|iteration_refs| {
        let mut rows: Vec<IterationBreakdown> = iteration_counts
            .iter()
            .map(|(iteration, counts)| {
                let figures = iteration_figures
                    .remove(iteration)
                    .unwrap_or_else(|| figures(&LabelSweep::new().finish(), counts));
                let iteration_ref = iteration_refs[*iteration as usize].clone();
                scope_row!(IterationBreakdown { iteration_ref }, figures, counts)
            })
            .collect();
        rows.sort_unstable_by(|a, b| a.iteration_ref.cmp(&b.iteration_ref));
        rows
    });

    let busy = device.busy_ns;
    let mut kernel_rows: Vec<KernelRow> = kernels
        .into_iter()
        .map(|mut entry| {
            // min, max and the lower median in linear time: a selection,
            // not a sort of every kernel's durations.
            let durations = &mut entry.durations;
            let (min_ns, max_ns) =
                (durations.iter().copied().min().unwrap_or(0), durations.iter().copied().max().unwrap_or(0));
            let median_ns = if durations.is_empty() {
                0
            } else {
                let middle = (durations.len() - 1) / 2;
                *durations.select_nth_unstable(middle).1
            };
            KernelRow {
                name: entry.name,
                category: entry.category,
                count: entry.count,
                summed_ns: entry.summed,
                busy_ns: entry.sweep.finish(),
                share_of_busy: if busy == 0 { 0.0 } else { entry.sweep.finish() as f64 / busy as f64 },
                min_ns,
                median_ns,
                max_ns,
            }
        })
        .collect();
    kernel_rows.sort_by(|a, b| {
        b.summed_ns
            .cmp(&a.summed_ns)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.category.cmp(&b.category))
    });

    let timeline = timeline_columns
        .zip(latency_bins)
        .map(|(columns, latency_bins)| DeviceTimeline { columns, latency_bins });
    let row = DeviceBreakdown {
        device_uuid: clock.device_uuid.to_owned(),
        clock_domain: clock.clock_domain.to_owned(),
        clock_kind: clock.clock_kind,
        busy_ns: device.busy_ns,
        summed_ns,
        count,
        categories: device.categories,
        overlap_ns: device.overlap_ns,
        exposed_communication_ns: device.exposed_communication_ns,
        exposed_memory_ns: device.exposed_memory_ns,
        memory,
        envelope_start_ns: envelope.map(|(start, _)| start),
        envelope_end_ns: envelope.map(|(_, end)| end),
        idle,
        launch_latency,
        kernels: kernel_rows,
        streams: stream_rows,
        iterations,
    };
    (row, timeline)
}
