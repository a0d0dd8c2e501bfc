//! The overlap breakdown of GPU time (issue 17): per device clock, which
//! work overlapped which, which kernels took the time, why the device sat
//! idle, and how long launches waited; the object `tally breakdown --format
//! json` prints.
//!
//! Every figure is integer nanoseconds read from one
//! [`LabelCoverage`] per device clock (and per stream and per iteration):
//! each busy interval is labelled with its [category](crate::category), the
//! coverage measures the time of each label set, and a busy time, an
//! intersection or an exposed time is a sum over sets. So, by construction
//! rather than by care: every intersection is at most both operands, the
//! union of the categories' busy times is the device's busy time, and
//! exposed plus overlapped communication is communication's busy time. The
//! figures depend on the resolved evidence only, so they are the same for
//! any order and any repetition of the records.
//!
//! # What is measured
//!
//! The same activities as [`crate::account_gpu_time`]: GPU activities whose
//! context names a device and a monotonic or device clock, with both ends;
//! busy in `[start, end)` or in their `metadata.intervals`. `busy_ns` here
//! is the accounting's `busy_ns`, and `summed_ns` its
//! `summed_activity_ns`.
//!
//! - **Categories**: `busy_ns` (union), `summed_ns`, `count` per category;
//!   memory also per [`MemoryKind`].
//! - **Overlaps**: `communication&compute` (communication hidden behind
//!   compute), `memory&compute`, `communication&memory`;
//!   `exposed_communication_ns` is communication with no compute running,
//!   `exposed_memory_ns` likewise.
//! - **Kernels**: per name (the activity's name, else its kind) and
//!   category: count, summed, busy (the union of that kernel's intervals),
//!   share of the device's busy time, and min, median (the lower middle
//!   value) and max of its activities' durations (an activity's duration is
//!   its summed busy time), sorted by summed time, longest first.
//! - **Idle time** inside the busy envelope (first start to last end), each
//!   idle instant given the first cause that holds: `launch_queued_ns` (a
//!   launch call linked to work on this device had started and the work had
//!   not: launch latency or queueing), `sync_wait_ns` (a synchronisation
//!   call, [`crate::category::is_synchronization`], of a process that
//!   launched work here was running), `unknown_ns` (the work that ends the
//!   gap has no linked launch, so the host's part cannot be told), and
//!   `host_bound_ns` (nothing launched: the host had not issued the next
//!   work yet).
//! - **Launch latency**: runtime call start to the start of the work it
//!   launched, for GPU activities whose `cuda_correlation_id` and
//!   `correlation_scope` match a runtime activity's (the earliest such call
//!   when several match). The call's timestamp is put on the device's clock
//!   domain by a direct clock alignment (the one of least uncertainty that
//!   covers it; the uncertainty is reported) or used as is on the same
//!   domain; without one the work counts as unlinked.
//!   Percentiles are nearest-rank.
//!
//! Per stream (activities with a `stream_id`) and, when asked, per
//! iteration (activities linked to a known one), the same category and
//! overlap figures.
//!
//! # Beside HTA
//!
//! Holistic Trace Analysis (HTA, 0.5.0) answers some of these questions on
//! Kineto traces. `crates/tally/tests/breakdown.rs` runs its analyses live
//! (`breakdown/hta_live.py`, on `TALLY_HTA_PYTHON`: `.venv-hta`, which
//! `cargo xtask test` makes) on ten traces of
//! `crates/tally-trace/tests/fixtures/kineto` and compares each figure
//! with tally's over the same work: tally runs on a copy of the trace that
//! holds only the kernels, copies and sets HTA kept, with HTA's kernel type
//! of each name given as `--category-pattern`s. Over that selection, the
//! figures agree exactly on whole-microsecond traces (sampled ranks 0 and
//! 1, queue-length, diff-test, alexnet, inference) and within HTA's
//! rounding elsewhere; the remaining differences are definitions:
//!
//! - **Float rounding.** HTA reads timestamps as float64 microseconds and,
//!   when any is fractional, rounds every event inward (`ceil(ts)`,
//!   `floor(ts + dur)`), so each kernel loses up to 2 µs; a union or sum of
//!   kernels is smaller by up to the sum of their losses, and the test
//!   allows exactly that sum, computed from the decimal text. On
//!   `nccl-distributed` (2516 kept events, 2515.9 µs of rounding in all)
//!   HTA's compute time is 75 169 µs against tally's 76 935.828, exactly the
//!   compute kernels' 1766.8 µs of rounding, and its overlap 14.31% against
//!   tally's 14.76% over the same kernels (the many short compute kernels
//!   under the collectives lose most). tally keeps the decimal text
//!   exactly, in nanoseconds. Sums past 2^53 µs lose more
//!   (`hta_run_time_us` of `ns-resolution` in `hta_golden.json`), though
//!   `TraceAnalysis` itself shifts the trace to start at 0 first.
//! - **Step filtering.** With two ProfilerStep names or more, HTA keeps the
//!   GPU work whose launch call started before the last step began: the
//!   steps but the last, plus any work launched before the first step.
//!   tally measures all of the run (`nccl-distributed`: 3774 events against
//!   HTA's 2516; sampled rank 0: 1204 against 602), or each iteration with
//!   `--by iteration`; the test reproduces HTA's count from tally's
//!   iterations (all but the last, plus at most the work launched outside
//!   any). HTA measures its temporal breakdown from the first kept event to
//!   the last (`kernel_time`), tally's idle time is inside its own envelope.
//! - **Steps.** HTA gives a GPU event the step whose time range holds its
//!   launch call on any process; tally a step of the launching process only
//!   (`triton-single-kernel` records ProfilerStep#1 on another process than
//!   the launch: HTA puts the kernel in step 1, tally in no iteration). HTA
//!   gives no step to events on stream 0 (`rocm-mi250-train`: all 16; its
//!   `add_iteration` looks at streams above 0). Elsewhere HTA's per-step
//!   count, summed and merged busy time equal tally's per-iteration figures.
//! - **Category rules.** HTA tells types by the kernel's name alone, with
//!   case-sensitive regexes: communication when it matches
//!   `^nccl.*Kernel`, memory when it starts with `Memcpy`, `Memset` or
//!   `dma`, other (left out of its kernel tables and overlaps) when it
//!   contains `Memcpy` or `Sync`, compute otherwise. On the ten traces
//!   tally's own rule (name prefix `nccl`/`rccl`, then the activity kind)
//!   gives every kernel HTA's type, except that a name HTA calls other
//!   would be compute or memory here. (Newer HTA versions that look for
//!   `ncclKernel` call NCCL 2.19's `ncclDevKernel_*` compute: the "wrong
//!   overlap figures when NCCL kernel names change".)
//! - **What counts as GPU work.** HTA's analyses take every event with a
//!   `stream` argument: `cuda_sync` events (`alexnet-cuda-sync`: 41, whose
//!   `Stream Wait Event`s it calls compute, so its compute time is 10 637 µs
//!   against tally's 10 630, its busy time 66 327 against 66 141) and CPU ops
//!   that carry a stream (`triton-single-kernel`: a 94 µs `cpu_op` named
//!   after the kernel, so HTA's busy time is 94 µs against the kernel's
//!   1.76). tally measures kernels, copies and sets only and counts a
//!   synchronisation's wait as idle time of its cause.
//! - **Kernel breakdown.** `get_gpu_kernel_breakdown`'s table (with no
//!   grouping into "others") has per name the sum, min, max and mean of
//!   HTA's durations: tally's `kernels` rows, count, summed, min and max,
//!   within each kernel's rounding. Its kernel-type table is the time of
//!   each exact set of types ("COMPUTATION overlapping COMMUNICATION"): the
//!   sets holding both compute and communication add up to
//!   `overlap_ns["communication&compute"]`, those with communication but no
//!   compute to `exposed_communication_ns`, and so on for every category
//!   busy time and overlap.
//! - **Overlap ratio.** `get_comm_comp_overlap`'s `comp_comm_overlap_pctg`
//!   is the share of communication time overlapped by compute over HTA's
//!   selection, rounded to 0.01%: here
//!   `overlap_ns["communication&compute"] / categories.communication.busy_ns`
//!   (sampled rank 0: 11.81% both; over the whole run tally's is 14.95%).
//! - **Idle time causes.** `get_idle_time_breakdown` works per stream: the
//!   gap before each kernel, copy or set is host wait when its launch call
//!   started after the previous one ended, else kernel wait when shorter
//!   than 30 µs (`consecutive_kernel_delay`, documented as nanoseconds but
//!   compared with microseconds), else other. Its three add up to the
//!   stream's envelope less its summed time (`streams[].envelope_start_ns`,
//!   `envelope_end_ns`, `summed_ns`), which the test checks stream by
//!   stream. tally splits the device's idle time instead (the gaps in the
//!   union of all streams), instant by instant by what the host was doing
//!   (a launch in flight, a synchronisation, nothing launched), not gap by
//!   gap: on sampled rank 0, over HTA's selection, HTA's stream 7 has
//!   213 825 µs of host wait, 1985 of kernel wait and 261 740 of other,
//!   while the device was idle 321 378 µs, 205 492 of them with a launch
//!   queued and 115 886 host-bound.

use serde::{Deserialize, Serialize};
use tally_core::interval::{LabelCoverage, LabelSweep, Periods, UnionSweep, sort_by_start};
use tally_core::{ActivityDomain, ClockKind, EntityRef};
use tally_resolve::{AlignmentFacts, FastHashMap, FastHashSet, ResolvedEvidence};

use crate::DeviceClock;
use crate::category::{Category, CategoryRules, MemoryKind, is_synchronization};

/// What a breakdown measures beyond the default.
#[derive(Debug, Clone, Default)]
pub struct BreakdownOptions {
    /// The category rule, with the user's patterns.
    pub rules: CategoryRules,
    /// Add a row per iteration to each device.
    pub by_iteration: bool,
}

/// One category's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CategoryTime {
    /// The union of its intervals.
    pub busy_ns: u64,
    /// The sum of their lengths.
    pub summed_ns: u128,
    /// How many activities.
    pub count: u64,
}

/// Per category, keyed `compute`, `communication`, `memory`, `other`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Categories {
    /// Kernels that are neither communication nor memory.
    pub compute: CategoryTime,
    /// Collectives.
    pub communication: CategoryTime,
    /// Copies and sets.
    pub memory: CategoryTime,
    /// Everything else.
    pub other: CategoryTime,
}

impl Categories {
    /// One category's figures.
    pub fn get(&self, category: Category) -> &CategoryTime {
        match category {
            Category::Compute => &self.compute,
            Category::Communication => &self.communication,
            Category::Memory => &self.memory,
            Category::Other => &self.other,
        }
    }

    fn get_mut(&mut self, category: Category) -> &mut CategoryTime {
        match category {
            Category::Compute => &mut self.compute,
            Category::Communication => &mut self.communication,
            Category::Memory => &mut self.memory,
            Category::Other => &mut self.other,
        }
    }
}

/// Pairwise intersections of category busy time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overlaps {
    /// Communication while compute ran: overlapped communication.
    #[serde(rename = "communication&compute")]
    pub communication_compute: u64,
    /// Memory activity while compute ran.
    #[serde(rename = "memory&compute")]
    pub memory_compute: u64,
    /// Communication while memory activity ran.
    #[serde(rename = "communication&memory")]
    pub communication_memory: u64,
}

/// Memory time per [`MemoryKind`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryKinds {
    /// Host to device copies.
    pub memcpy_htod: CategoryTime,
    /// Device to host copies.
    pub memcpy_dtoh: CategoryTime,
    /// Device to device copies.
    pub memcpy_dtod: CategoryTime,
    /// Peer to peer copies.
    pub memcpy_ptop: CategoryTime,
    /// Copies of no stated direction.
    pub memcpy_unspecified: CategoryTime,
    /// Memsets.
    pub memset: CategoryTime,
    /// Memory by a user pattern only.
    pub other: CategoryTime,
}

impl MemoryKinds {
    fn get_mut(&mut self, kind: MemoryKind) -> &mut CategoryTime {
        match kind {
            MemoryKind::MemcpyHtoD => &mut self.memcpy_htod,
            MemoryKind::MemcpyDtoH => &mut self.memcpy_dtoh,
            MemoryKind::MemcpyDtoD => &mut self.memcpy_dtod,
            MemoryKind::MemcpyPtoP => &mut self.memcpy_ptop,
            MemoryKind::MemcpyUnspecified => &mut self.memcpy_unspecified,
            MemoryKind::Memset => &mut self.memset,
            MemoryKind::Other => &mut self.other,
        }
    }
}

/// Idle time inside the busy envelope, by cause (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleBreakdown {
    /// The envelope's length.
    pub envelope_ns: u64,
    /// Its idle time: envelope minus busy.
    pub idle_ns: u64,
    /// How many gaps separate busy periods.
    pub gap_count: u64,
    /// The longest gap.
    pub longest_gap_ns: u64,
    /// Linked work launched, not yet started.
    pub launch_queued_ns: u64,
    /// A synchronisation call of a launching process running.
    pub sync_wait_ns: u64,
    /// The work ending the gap has no linked launch.
    pub unknown_ns: u64,
    /// Nothing launched.
    pub host_bound_ns: u64,
}

/// Launch call start to work start, over the linked GPU activities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchLatency {
    /// Activities with a linked launch.
    pub linked: u64,
    /// Activities without one.
    pub unlinked: u64,
    /// Shortest (negative when the clocks' uncertainty puts the call after
    /// the work's start).
    pub min_ns: Option<i64>,
    /// Nearest-rank median.
    pub median_ns: Option<i64>,
    /// Nearest-rank 90th percentile.
    pub p90_ns: Option<i64>,
    /// Nearest-rank 99th percentile.
    pub p99_ns: Option<i64>,
    /// Longest.
    pub max_ns: Option<i64>,
    /// The sum.
    pub summed_ns: i128,
    /// The largest uncertainty of the clock alignments used (0 on one
    /// clock domain).
    pub clock_uncertainty_ns: u64,
}

/// One kernel (or kind) of one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRow {
    /// The activity's name, or its kind when it has none.
    pub name: String,
    /// Its category.
    pub category: Category,
    /// How many activities.
    pub count: u64,
    /// Their summed time.
    pub summed_ns: u128,
    /// The union of their intervals.
    pub busy_ns: u64,
    /// `busy_ns` over the device's busy time: a ratio, so a float.
    pub share_of_busy: f64,
    /// Shortest activity.
    pub min_ns: u64,
    /// Lower median activity.
    pub median_ns: u64,
    /// Longest activity.
    pub max_ns: u64,
}

/// Category and overlap figures of one stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamBreakdown {
    /// The stream.
    pub stream_id: u64,
    /// The union of its intervals.
    pub busy_ns: u64,
    /// Their summed length.
    pub summed_ns: u128,
    /// Its activities.
    pub count: u64,
    /// Per category.
    pub categories: Categories,
    /// Pairwise intersections.
    pub overlap_ns: Overlaps,
    /// Communication with no compute running.
    pub exposed_communication_ns: u64,
    /// Memory activity with no compute running.
    pub exposed_memory_ns: u64,
    /// First start of one of its busy intervals.
    pub envelope_start_ns: Option<u64>,
    /// Last end of one: with `envelope_start_ns` and `summed_ns`, the
    /// stream's gaps between consecutive activities, which is HTA's idle
    /// time of the stream (see the module docs).
    pub envelope_end_ns: Option<u64>,
}

/// Category and overlap figures of one iteration on one device clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationBreakdown {
    /// The iteration.
    pub iteration_ref: EntityRef,
    /// The union of its linked activities' intervals.
    pub busy_ns: u64,
    /// Their summed length.
    pub summed_ns: u128,
    /// Its linked activities.
    pub count: u64,
    /// Per category.
    pub categories: Categories,
    /// Pairwise intersections.
    pub overlap_ns: Overlaps,
    /// Communication with no compute running.
    pub exposed_communication_ns: u64,
    /// Memory activity with no compute running.
    pub exposed_memory_ns: u64,
}

/// The breakdown of one device clock. Keys are never renamed; more may be
/// added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceBreakdown {
    /// The device.
    pub device_uuid: String,
    /// The clock domain of its activities.
    pub clock_domain: String,
    /// `monotonic` or `device`.
    pub clock_kind: ClockKind,
    /// The union of every interval: the accounting's busy time.
    pub busy_ns: u64,
    /// Their summed length: the accounting's summed activity time.
    pub summed_ns: u128,
    /// The activities measured.
    pub count: u64,
    /// Per category.
    pub categories: Categories,
    /// Pairwise intersections.
    pub overlap_ns: Overlaps,
    /// Communication with no compute running.
    pub exposed_communication_ns: u64,
    /// Memory activity with no compute running.
    pub exposed_memory_ns: u64,
    /// Memory time per copy direction and set.
    pub memory: MemoryKinds,
    /// First start of a busy interval.
    pub envelope_start_ns: Option<u64>,
    /// Last end of one.
    pub envelope_end_ns: Option<u64>,
    /// Idle time by cause.
    pub idle: IdleBreakdown,
    /// Launch latency of the linked activities.
    pub launch_latency: LaunchLatency,
    /// Every kernel, by summed time, longest first.
    pub kernels: Vec<KernelRow>,
    /// Streams, by stream ID.
    pub streams: Vec<StreamBreakdown>,
    /// Iterations, by reference; present when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<Vec<IterationBreakdown>>,
}

/// The breakdown of one run: the object `tally breakdown --format json`
/// prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// The run; `None` when there was no correlation event.
    pub run_id: Option<String>,
    /// The user's category patterns, `CATEGORY=GLOB`, in order.
    pub category_patterns: Vec<String>,
    /// One entry per device clock, sorted by clock.
    pub devices: Vec<DeviceBreakdown>,
}

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

const NONE: u32 = u32::MAX;

/// One busy interval.
#[derive(Debug, Clone, Copy)]
struct Item {
    start: u64,
    end: u64,
    kernel: u32,
    stream: u32,
    iteration: u32,
    /// The [`MemoryKind`] index, or [`NO_MEMORY`].
    memory: u8,
}

const NO_MEMORY: u8 = u8::MAX;

#[derive(Debug)]
struct KernelWork {
    name: String,
    category: Category,
    count: u64,
    summed: u128,
    durations: Vec<u64>,
    sweep: UnionSweep,
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
struct DeviceWork<'a> {
    clock: DeviceClock<'a>,
    items: Vec<Item>,
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
    kernels: Vec<KernelWork>,
    memory: MemoryKinds,
    stream_index: FastHashMap<u64, u32>,
    streams: Vec<(u64, [CategoryTime; 4])>,
    iteration_counts: FastHashMap<u32, [CategoryTime; 4]>,
    /// Work start minus launch start, of each activity linked to its launch.
    latencies: Vec<i64>,
    /// The largest uncertainty of the alignments the links used.
    uncertainty: u64,
    /// `(launch start, work start)` of each linked activity, on this
    /// device's clock: the launch in flight.
    in_flight: Vec<(u64, u64)>,
    /// Activities no launch call explains (no correlation ID, or no call of
    /// theirs that reaches this clock).
    unlinked: u64,
    /// The scopes (numbered in [`HostCalls`]) whose launches ran work here.
    launching_scopes: FastHashSet<u32>,
}

/// A runtime call that launched work: `(scope, correlation)` is what the
/// work names it by.
#[derive(Debug, Clone, Copy)]
struct Launch {
    scope: u32,
    correlation: u64,
    start: u64,
    end: u64,
    /// Its clock domain, in [`HostCalls::domains`].
    domain: u32,
}

/// A synchronisation call of a scope.
#[derive(Debug, Clone, Copy)]
struct SyncCall {
    scope: u32,
    start: u64,
    end: u64,
    domain: u32,
}

/// The runtime calls the breakdown links work to, read before any GPU
/// activity so that each activity is linked as it is read (no list of
/// activities waits for the end).
#[derive(Debug, Default)]
struct HostCalls<'a> {
    /// Correlation scopes, numbered (few: one per process); `None` is a
    /// scope too, the one of calls and work that name none.
    scopes: FastHashMap<Option<&'a EntityRef>, u32>,
    /// The scope last numbered: consecutive records share one, and the
    /// resolver's facts hand out one reference per scope, so a pointer
    /// comparison saves hashing it.
    last_scope: Option<(Option<&'a EntityRef>, u32)>,
    domains: Vec<&'a str>,
    domain_numbers: FastHashMap<&'a str, u32>,
    last_domain: Option<(&'a str, u32)>,
    /// Sorted by `(scope, correlation)`, one per pair: the earliest.
    launches: Vec<Launch>,
    /// Where the last launch was found, where the next search starts.
    last_launch: usize,
    syncs: Vec<SyncCall>,
}

fn same_scope(a: Option<&EntityRef>, b: Option<&EntityRef>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl<'a> HostCalls<'a> {
    fn read<G: ResolvedEvidence + ?Sized>(graph: &'a G) -> Self {
        let mut calls = Self::default();
        for activity in graph.activity_facts() {
            if activity.domain != ActivityDomain::Runtime {
                continue;
            }
            let Some(busy) = activity.busy else { continue };
            let intervals = busy.as_slice();
            let (Some(first), Some(last)) = (intervals.first(), intervals.last()) else { continue };
            let is_sync = activity.name.is_some_and(is_synchronization);
            if activity.cuda_correlation_id.is_none() && !is_sync {
                continue;
            }
            let (start, end) = (first.start_ns(), last.end_ns());
            let scope = calls.number_scope(activity.correlation_scope);
            let domain = calls.number_domain(activity.clock.0);
            if let Some(correlation) = activity.cuda_correlation_id {
                calls.launches.push(Launch { scope, correlation, start, end, domain });
            }
            if is_sync {
                calls.syncs.push(SyncCall { scope, start, end, domain });
            }
        }
        // The earliest call of a pair wins, ties broken by the domain's
        // name, so the choice does not depend on record order.
        let domains = &calls.domains;
        calls.launches.sort_unstable_by(|a, b| {
            (a.scope, a.correlation, a.start, a.end, domains[a.domain as usize]).cmp(&(
                b.scope,
                b.correlation,
                b.start,
                b.end,
                domains[b.domain as usize],
            ))
        });
        calls.launches.dedup_by_key(|launch| (launch.scope, launch.correlation));
        calls
    }

    fn number_scope(&mut self, scope: Option<&'a EntityRef>) -> u32 {
        if let Some(number) = self.last_scope_number(scope) {
            return number;
        }
        let next = self.scopes.len() as u32;
        let number = *self.scopes.entry(scope).or_insert(next);
        self.last_scope = Some((scope, number));
        number
    }

    /// The number of a scope some call has, without numbering a new one.
    fn find_scope(&mut self, scope: Option<&'a EntityRef>) -> Option<u32> {
        if let Some(number) = self.last_scope_number(scope) {
            return Some(number);
        }
        let number = *self.scopes.get(&scope)?;
        self.last_scope = Some((scope, number));
        Some(number)
    }

    /// The number of `scope` when it is the one asked for last: consecutive
    /// records name one scope, and comparing it costs less than hashing it.
    fn last_scope_number(&self, scope: Option<&'a EntityRef>) -> Option<u32> {
        self.last_scope.filter(|&(last, _)| same_scope(last, scope)).map(|(_, number)| number)
    }

    fn number_domain(&mut self, domain: &'a str) -> u32 {
        if let Some((last, number)) = self.last_domain
            && std::ptr::eq(last, domain)
        {
            return number;
        }
        let next = self.domains.len() as u32;
        let number = *self.domain_numbers.entry(domain).or_insert(next);
        if number == next {
            self.domains.push(domain);
        }
        self.last_domain = Some((domain, number));
        number
    }

    /// The launch of `(scope, correlation)`. GPU activities mostly come in
    /// the order of their correlation IDs, so the search gallops out from
    /// the last launch found before it bisects: a few probes near the last
    /// hit instead of a search of the whole list.
    fn launch(&mut self, scope: u32, correlation: u64) -> Option<Launch> {
        let wanted = (scope, correlation);
        let key = |launch: &Launch| (launch.scope, launch.correlation);
        let launches = &self.launches;
        let hint = self.last_launch.min(launches.len().saturating_sub(1));
        let (low, high) = match launches.get(hint).map(key) {
            None => return None,
            Some(at) if at == wanted => return launches.get(hint).copied(),
            Some(at) if at < wanted => {
                let mut step = 1;
                let mut low = hint + 1;
                while low + step < launches.len() && key(&launches[low + step - 1]) < wanted {
                    low += step;
                    step *= 2;
                }
                (low, (low + step).min(launches.len()))
            }
            Some(_) => {
                let mut step = 1;
                let mut high = hint;
                while high > step && key(&launches[high - step]) > wanted {
                    high -= step;
                    step *= 2;
                }
                (high.saturating_sub(step), high)
            }
        };
        let index = low + launches[low..high].binary_search_by_key(&wanted, key).ok()?;
        self.last_launch = index;
        launches.get(index).copied()
    }
}

/// Direct clock alignments, by the pair of domains.
struct Aligner<'a> {
    pairs: FastHashMap<(&'a str, &'a str), Vec<AlignmentFacts<'a>>>,
}

impl<'a> Aligner<'a> {
    fn new(facts: impl Iterator<Item = AlignmentFacts<'a>>) -> Self {
        let mut pairs: FastHashMap<(&'a str, &'a str), Vec<AlignmentFacts<'a>>> = FastHashMap::default();
        for fact in facts {
            pairs.entry((fact.from_clock_domain, fact.to_clock_domain)).or_default().push(fact);
        }
        // Least uncertainty first, then a total order, so the choice does
        // not depend on the order the alignments were read in.
        for list in pairs.values_mut() {
            list.sort_unstable_by_key(|fact| {
                (fact.uncertainty_ns, fact.offset_ns, fact.valid_from_ns, fact.valid_to_ns)
            });
        }
        Self { pairs }
    }

    /// A host timestamp on the device's clock domain, with the uncertainty
    /// of the alignment used.
    fn to_device(&self, time: u64, host: &str, device: &str) -> Option<(u64, u64)> {
        if host == device {
            return Some((time, 0));
        }
        let covers = |fact: &AlignmentFacts<'_>, from_time: i128| {
            fact.valid_from_ns.is_none_or(|from| from_time >= i128::from(from))
                && fact.valid_to_ns.is_none_or(|to| from_time < i128::from(to))
        };
        let time = i128::from(time);
        // device → host: host = device + offset.
        let forward = self.pairs.get(&(device, host)).into_iter().flatten().find_map(|fact| {
            let device_time = time - i128::from(fact.offset_ns);
            covers(fact, device_time).then_some((device_time, fact.uncertainty_ns))
        });
        // host → device: device = host + offset.
        let backward = self.pairs.get(&(host, device)).into_iter().flatten().find_map(|fact| {
            covers(fact, time).then_some((time + i128::from(fact.offset_ns), fact.uncertainty_ns))
        });
        let best = match (forward, backward) {
            (Some(a), Some(b)) => Some(if (b.1, b.0) < (a.1, a.0) { b } else { a }),
            (a, b) => a.or(b),
        }?;
        Some((u64::try_from(best.0).ok()?, best.1))
    }
}

/// The breakdown of a resolved run (see the module docs): one pass over its
/// runtime calls, one over its GPU activities, then one sort and one
/// coverage sweep per device clock.
pub fn breakdown<G: ResolvedEvidence + ?Sized>(graph: &G, options: &BreakdownOptions) -> Breakdown {
    let mut host = HostCalls::read(graph);
    let aligner = Aligner::new(graph.alignment_facts());
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
                aligner.to_device(launch.start, host.domains[launch.domain as usize], domain)?;
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
    let mut rows: Vec<DeviceBreakdown> = devices
        .into_iter()
        .map(|work| finish_device(work, &host, &aligner, options.by_iteration.then_some(&iteration_refs[..])))
        .collect();
    rows.sort_by(|a, b| {
        (&a.device_uuid, &a.clock_domain, a.clock_kind.as_str()).cmp(&(
            &b.device_uuid,
            &b.clock_domain,
            b.clock_kind.as_str(),
        ))
    });
    Breakdown {
        run_id: graph.run_id().map(str::to_owned),
        category_patterns: options
            .rules
            .patterns()
            .map(|(pattern, category)| format!("{}={}", category.as_str(), pattern.as_str()))
            .collect(),
        devices: rows,
    }
}

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

fn finish_device<'a>(
    work: DeviceWork<'a>,
    host: &HostCalls<'a>,
    aligner: &Aligner<'a>,
    iteration_refs: Option<&[&EntityRef]>,
) -> DeviceBreakdown {
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
    drop(latencies);
    let mut sync_windows: Vec<(u64, u64)> = host
        .syncs
        .iter()
        .filter(|call| launching_scopes.contains(&call.scope))
        .filter_map(|call| {
            let domain = host.domains[call.domain as usize];
            let (start, _) = aligner.to_device(call.start, domain, device_domain)?;
            let (end, _) = aligner.to_device(call.end, domain, device_domain)?;
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

    let coverage = sweep_sorted(merge_by_start(vec![
        Box::new(items.iter().map(|item| (item.start, item.end, label(item)))),
        Box::new(in_flight.iter().map(|&(start, end)| (start, end, IN_FLIGHT))),
        Box::new(sync_windows.iter().map(|&(start, end)| (start, end, SYNC))),
        Box::new(envelope.into_iter().map(|(start, end)| (start, end, ENVELOPE))),
        Box::new(unexplained.iter().map(|&(start, end)| (start, end, UNEXPLAINED))),
    ]));
    drop((in_flight, sync_windows, unexplained));
    let idle_set = |set: u8| set & ENVELOPE != 0 && set & WORK == 0;
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
            let (summed_ns, count) = summed_and_count(counts);
            StreamBreakdown {
                stream_id: *stream_id,
                busy_ns: figures.busy_ns,
                summed_ns,
                count,
                categories: figures.categories,
                overlap_ns: figures.overlap_ns,
                exposed_communication_ns: figures.exposed_communication_ns,
                exposed_memory_ns: figures.exposed_memory_ns,
                envelope_start_ns,
                envelope_end_ns,
            }
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
                let (summed_ns, count) = summed_and_count(counts);
                IterationBreakdown {
                    iteration_ref: iteration_refs[*iteration as usize].clone(),
                    busy_ns: figures.busy_ns,
                    summed_ns,
                    count,
                    categories: figures.categories,
                    overlap_ns: figures.overlap_ns,
                    exposed_communication_ns: figures.exposed_communication_ns,
                    exposed_memory_ns: figures.exposed_memory_ns,
                }
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

    DeviceBreakdown {
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
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The galloping search finds what a plain search finds, whatever
        /// the last hit was.
        #[test]
        fn launch_search_from_any_hint(
            mut keys in proptest::collection::vec((0u32..3, 0u64..40), 0..60),
            probes in proptest::collection::vec((0u32..4, 0u64..45), 1..30),
        ) {
            keys.sort_unstable();
            keys.dedup();
            let mut calls = HostCalls {
                launches: keys
                    .iter()
                    .map(|&(scope, correlation)| Launch { scope, correlation, start: correlation, end: 0, domain: 0 })
                    .collect(),
                ..HostCalls::default()
            };
            for (scope, correlation) in probes {
                let expected = keys.binary_search(&(scope, correlation)).is_ok();
                let found = calls.launch(scope, correlation);
                prop_assert_eq!(found.is_some(), expected);
                if let Some(found) = found {
                    prop_assert_eq!((found.scope, found.correlation), (scope, correlation));
                }
            }
        }
    }
}
