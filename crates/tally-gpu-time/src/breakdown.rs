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
//!   covers it, in either direction: [`tally_clock::NearestAligner`]; the
//!   uncertainty is reported) or used as is on the same domain; without one
//!   the work counts as unlinked.
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
//!
//! [`LabelCoverage`]: tally_utils::interval::LabelCoverage
//! [`MemoryKind`]: crate::category::MemoryKind

// One module per job: `report`, the report's types (the object that is
// printed); `host`, the runtime calls, read first, that work is linked to;
// `work`, the one pass over the GPU activities, each read into its device
// clock's work and linked to its launch (`breakdown`), host timestamps put
// on a device's clock domain by `tally_clock::NearestAligner`; `sweep`,
// each device clock's work swept into its figures; `timeline`, the same
// sweep binned into columns (`tally report`'s timeline).
mod host;
mod report;
mod sweep;
mod timeline;
mod work;

pub use report::{
    Breakdown, Categories, CategoryTime, DeviceBreakdown, IdleBreakdown, IterationBreakdown, KernelRow,
    LaunchLatency, MemoryKinds, Overlaps, StreamBreakdown,
};
pub use timeline::{DeviceTimeline, LatencyBin, TimelineColumn};
pub use work::{breakdown, breakdown_with_timelines};

use crate::category::CategoryRules;

/// What a breakdown measures beyond the default.
#[derive(Debug, Clone, Default)]
pub struct BreakdownOptions {
    /// The category rule, with the user's patterns.
    pub rules: CategoryRules,
    /// Add a row per iteration to each device.
    pub by_iteration: bool,
}
