//! The one pass over the GPU activities: each read into its device clock's
//! work (busy intervals, kernel rows, streams, iterations), classified once
//! per spelling, and linked to its launch as it is read.

use tally_clock::{DirectAlignment, NearestAligner};
use tally_core::{ActivityDomain, EntityRef};
use tally_resolve::ResolvedEvidence;
use tally_utils::fast_hash::{FastHashMap, FastHashSet};
use tally_utils::interval::UnionSweep;

use super::BreakdownOptions;
use super::host::HostCalls;
use super::report::{Breakdown, CategoryTime, DeviceBreakdown, MemoryKinds};
use super::sweep::finish_device;
use super::timeline::DeviceTimeline;
use crate::DeviceClock;
use crate::category::{Category, MemoryKind};

const NONE: u32 = u32::MAX;

/// One busy interval.
#[derive(Debug, Clone, Copy)]
pub(super) struct Item {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) kernel: u32,
    pub(super) stream: u32,
    pub(super) iteration: u32,
    /// The [`MemoryKind`] index, or [`NO_MEMORY`].
    pub(super) memory: u8,
}

const NO_MEMORY: u8 = u8::MAX;

#[derive(Debug)]
pub(super) struct KernelWork {
    pub(super) name: String,
    pub(super) category: Category,
    pub(super) count: u64,
    pub(super) summed: u128,
    pub(super) durations: Vec<u64>,
    pub(super) sweep: UnionSweep,
}

/// An activity's `activity_kind` and name.
type KindAndName<'a> = (&'a str, Option<&'a str>);

/// Where an activity's kind and name lie: address and length of each. The
/// strings are borrowed from the evidence for the whole breakdown, so one
/// spelling is one pair of contents throughout.
type Spelling = (usize, usize, usize, usize);

/// Entries of a device's [`DeviceWork::spelled`] at most.
const MAX_SPELLINGS: usize = 1 << 12;

fn spelling(kind: &str, name: Option<&str>) -> Spelling {
    let (name_at, name_len) = name.map_or((0, 0), |name| (name.as_ptr() as usize, name.len()));
    (kind.as_ptr() as usize, kind.len(), name_at, name_len)
}

#[derive(Debug)]
pub(super) struct DeviceWork<'a> {
    pub(super) clock: DeviceClock<'a>,
    pub(super) items: Vec<Item>,
    /// Rows by (kind, name), the evidence classified once...
    kernel_index: FastHashMap<KindAndName<'a>, (u32, Option<MemoryKind>)>,
    /// The same rows by where the strings lie ([`spelling`]): a resolver
    /// that interns names hands out one string per name, and four words
    /// hash faster than a kernel's name of ~200 bytes. Bounded, as facts
    /// with a string per activity would give every activity its own entry.
    spelled: FastHashMap<Spelling, (u32, Option<MemoryKind>)>,
    /// ...and by what they are shown as, (name or kind, category): two kinds
    /// of one name and category are one row, whatever the record order.
    row_index: FastHashMap<(&'a str, Category), u32>,
    pub(super) kernels: Vec<KernelWork>,
    pub(super) memory: MemoryKinds,
    stream_index: FastHashMap<u64, u32>,
    pub(super) streams: Vec<(u64, [CategoryTime; 4])>,
    pub(super) iteration_counts: FastHashMap<u32, [CategoryTime; 4]>,
    /// Work start minus launch start, of each activity linked to its launch.
    pub(super) latencies: Vec<i64>,
    /// The largest uncertainty of the alignments the links used.
    pub(super) uncertainty: u64,
    /// `(launch start, work start)` of each linked activity, on this
    /// device's clock: the launch in flight.
    pub(super) in_flight: Vec<(u64, u64)>,
    /// Activities no launch call explains (no correlation ID, or no call of
    /// theirs that reaches this clock).
    pub(super) unlinked: u64,
    /// The scopes (numbered in [`HostCalls`]) whose launches ran work here.
    pub(super) launching_scopes: FastHashSet<u32>,
}

/// The breakdown of a resolved run (see the module docs): one pass over its
/// runtime calls, one over its GPU activities, then one sort and one
/// coverage sweep per device clock.
pub fn breakdown<G: ResolvedEvidence + ?Sized>(graph: &G, options: &BreakdownOptions) -> Breakdown {
    breakdown_and_timelines(graph, options, None).0
}

/// [`breakdown`], and with `columns`, each device clock's
/// [`DeviceTimeline`] of that many columns (at most), read from the same
/// sweep: one per entry of `devices`, in its order. What `tally report`
/// draws; the breakdown is the same either way.
pub fn breakdown_with_timelines<G: ResolvedEvidence + ?Sized>(
    graph: &G,
    options: &BreakdownOptions,
    columns: u32,
) -> (Breakdown, Vec<DeviceTimeline>) {
    let (result, timelines) = breakdown_and_timelines(graph, options, Some(columns));
    (result, timelines.into_iter().map(Option::unwrap_or_default).collect())
}

fn breakdown_and_timelines<G: ResolvedEvidence + ?Sized>(
    graph: &G,
    options: &BreakdownOptions,
    columns: Option<u32>,
) -> (Breakdown, Vec<Option<DeviceTimeline>>) {
    let mut host = HostCalls::read(graph);
    let aligner = NearestAligner::new(graph.alignment_facts().map(|fact| {
        let (domains, window) =
            ((fact.from_clock_domain, fact.to_clock_domain), (fact.valid_from_ns, fact.valid_to_ns));
        DirectAlignment::new(domains, fact.offset_ns, fact.uncertainty_ns, window)
    }));
    let mut devices: Vec<DeviceWork<'_>> = Vec::new();
    let mut device_index: FastHashMap<DeviceClock<'_>, u32> = FastHashMap::default();

    for activity in graph.activity_facts() {
        if activity.domain != ActivityDomain::Gpu {
            continue;
        }
        let Some(busy) = activity.busy else { continue };
        let Some((uuid, domain, kind)) = activity.device else { continue };
        let clock = DeviceClock::new(uuid, domain, kind);
        let device = *device_index.entry(clock).or_insert_with(|| {
            devices.push(DeviceWork {
                clock,
                items: Vec::new(),
                kernel_index: FastHashMap::default(),
                spelled: FastHashMap::default(),
                row_index: FastHashMap::default(),
                kernels: Vec::new(),
                memory: MemoryKinds::default(),
                stream_index: FastHashMap::default(),
                streams: Vec::new(),
                iteration_counts: FastHashMap::default(),
                latencies: Vec::new(),
                uncertainty: 0,
                in_flight: Vec::new(),
                unlinked: 0,
                launching_scopes: FastHashSet::default(),
            });
            // Fewer devices than activities, and activities are fewer
            // than u32::MAX (tally-resolve caps its tables).
            (devices.len() - 1) as u32
        });
        let work = &mut devices[device as usize];
        let spelled = spelling(activity.kind, activity.name);
        let known = work.spelled.get(&spelled).copied().or_else(|| {
            let known = work.kernel_index.get(&(activity.kind, activity.name)).copied()?;
            if work.spelled.len() < MAX_SPELLINGS {
                work.spelled.insert(spelled, known);
            }
            Some(known)
        });
        let (kernel, memory) = match known {
            Some(known) => known,
            None => {
                let classified = options.rules.classify(activity.kind, activity.name);
                let shown = activity.name.unwrap_or(activity.kind);
                let next = work.kernels.len() as u32;
                let kernel = *work.row_index.entry((shown, classified.category)).or_insert(next);
                if kernel == next {
                    work.kernels.push(KernelWork {
                        name: shown.to_owned(),
                        category: classified.category,
                        count: 0,
                        summed: 0,
                        durations: Vec::new(),
                        sweep: UnionSweep::default(),
                    });
                }
                work.kernel_index.insert((activity.kind, activity.name), (kernel, classified.memory));
                if work.spelled.len() < MAX_SPELLINGS {
                    work.spelled.insert(spelled, (kernel, classified.memory));
                }
                (kernel, classified.memory)
            }
        };
        let intervals = busy.as_slice();
        let summed: u64 = intervals.iter().map(|interval| interval.duration_ns()).sum();
        let entry = &mut work.kernels[kernel as usize];
        entry.count += 1;
        entry.summed += u128::from(summed);
        entry.durations.push(summed);
        if let Some(kind) = memory {
            let slot = work.memory.get_mut(kind);
            slot.summed_ns += u128::from(summed);
            slot.count += 1;
        }
        let category = entry.category as usize;
        let add = |counts: &mut [CategoryTime; 4]| {
            counts[category].summed_ns += u128::from(summed);
            counts[category].count += 1;
        };
        let stream = match activity.stream_id {
            None => NONE,
            Some(stream_id) => {
                let stream =
                    crate::account::stream_slot(&mut work.stream_index, &mut work.streams, stream_id);
                add(&mut work.streams[stream as usize].1);
                stream
            }
        };
        let iteration = match activity.iteration {
            Some(iteration) if options.by_iteration => {
                add(work.iteration_counts.entry(iteration as u32).or_default());
                iteration as u32
            }
            _ => NONE,
        };
        let start = intervals.first().map_or(0, |interval| interval.start_ns());
        let linked = activity.cuda_correlation_id.and_then(|correlation| {
            let scope = host.find_scope(activity.correlation_scope)?;
            let launch = host.launch(scope, correlation)?;
            let (at, uncertainty) =
                aligner.translate(launch.start, host.domains[launch.domain as usize], domain)?;
            Some((scope, at, uncertainty))
        });
        match linked {
            Some((scope, launch, uncertainty)) => {
                let latency = i128::from(start) - i128::from(launch);
                work.latencies.push(i64::try_from(latency).unwrap_or(if latency < 0 {
                    i64::MIN
                } else {
                    i64::MAX
                }));
                work.uncertainty = work.uncertainty.max(uncertainty);
                work.in_flight.push((launch, start));
                work.launching_scopes.insert(scope);
            }
            None => work.unlinked += 1,
        }
        work.items.extend(intervals.iter().map(|interval| Item {
            start: interval.start_ns(),
            end: interval.end_ns(),
            kernel,
            stream,
            iteration,
            memory: memory.map_or(NO_MEMORY, |kind| kind as u8),
        }));
    }
    drop(device_index);

    let iteration_refs: Vec<&EntityRef> = if options.by_iteration {
        graph.iteration_facts().map(|facts| facts.iteration_ref).collect()
    } else {
        Vec::new()
    };
    let mut rows: Vec<(DeviceBreakdown, Option<DeviceTimeline>)> = devices
        .into_iter()
        .map(|work| {
            finish_device(work, &host, &aligner, options.by_iteration.then_some(&iteration_refs[..]), columns)
        })
        .collect();
    rows.sort_by(|(a, _), (b, _)| {
        (&a.device_uuid, &a.clock_domain, a.clock_kind.as_str()).cmp(&(
            &b.device_uuid,
            &b.clock_domain,
            b.clock_kind.as_str(),
        ))
    });
    let (rows, timelines): (Vec<DeviceBreakdown>, Vec<Option<DeviceTimeline>>) = rows.into_iter().unzip();
    let result = Breakdown {
        run_id: graph.run_id().map(str::to_owned),
        category_patterns: options
            .rules
            .patterns()
            .map(|(pattern, category)| format!("{}={}", category.as_str(), pattern.as_str()))
            .collect(),
        devices: rows,
    };
    (result, timelines)
}
