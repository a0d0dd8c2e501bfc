//! The breakdown's report types: the object `tally breakdown --format json`
//! prints, per device clock, stream and iteration.

use serde::{Deserialize, Serialize};
use tally_core::{ClockKind, EntityRef};

use crate::category::{Category, MemoryKind};

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

    pub(super) fn get_mut(&mut self, category: Category) -> &mut CategoryTime {
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
    pub(super) fn get_mut(&mut self, kind: MemoryKind) -> &mut CategoryTime {
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
