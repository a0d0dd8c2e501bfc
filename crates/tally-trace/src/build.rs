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
//!
//! Split by job: [`link`] finds what each record links to (the launch of a
//! GPU event, the iteration of a launch) and groups the GPU rows into
//! records; [`emit`] makes the records; [`figures`] adds up each device's
//! busy, launch-span and summed time; [`summary`] writes what the import
//! says of the trace; [`batch`] turns records into a caller's batches; and
//! [`schedule`] decides in what order, and on which threads, the records
//! are made. This module holds what they share (the trace's tables and
//! identity) and the two ways in, [`build`] and [`build_batched`].

mod batch;
mod emit;
mod figures;
mod link;
mod schedule;
mod summary;

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU64;
use std::sync::Mutex;

use serde_json::{Map, Value};
use tally_core::NonEmptyString;

use crate::ImportOptions;
use crate::collect::Collected;
use crate::error::{SinkError, TraceErrorKind};
use crate::parallel::RecordBatcher;
use crate::record::TraceRecord;

use self::batch::Batched;
use self::emit::MadeContexts;
use self::schedule::{in_order, in_parallel};

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
    /// The trace's own UUIDs of its devices, by ordinal, as NVML writes
    /// them (a Kineto `deviceProperties` entry's `uuid`).
    pub(crate) device_uuids: BTreeMap<u32, String>,
    /// Compute capability and memory by ordinal (`deviceProperties`).
    pub(crate) device_details: BTreeMap<u32, DeviceDetails>,
    /// Device names by UUID (Nsight's `TARGET_INFO_GPU`).
    pub(crate) names_by_uuid: BTreeMap<String, String>,
    /// Compute capability and memory by UUID (Nsight's `TARGET_INFO_GPU`).
    pub(crate) details_by_uuid: BTreeMap<String, DeviceDetails>,
    /// How far apart two timestamps of the trace can be told, in ns: the
    /// uncertainty of placing device work on the host timeline.
    pub(crate) resolution_ns: u64,
    /// Format-specific entries for the summary.
    pub(crate) extra: Map<String, Value>,
}

/// What a trace says of a device besides its name and UUID, for the
/// summary's device entry.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct DeviceDetails {
    /// `"8.0"`: CUDA's major and minor compute capability (ROCm's gfx
    /// major and minor on AMD).
    pub(crate) compute_capability: Option<String>,
    /// The device's global memory, bytes.
    pub(crate) total_memory_bytes: Option<u64>,
}

/// A GPU UUID as NVML (`nvidia-smi -L`) and Nsight write it:
/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`. Takes that form, the bare
/// 8-4-4-4-12 form (Nsight's `TARGET_INFO_GPU.uuid`) and 32 hex digits
/// (CUDA's `cudaUUID_t` bytes), with or without braces; a `MIG-` UUID stays
/// as it is. `None` for anything else.
pub(crate) fn nvml_uuid(text: &str) -> Option<String> {
    let text = text.trim();
    if text.starts_with("GPU-") || text.starts_with("MIG-") {
        return (text.len() > 4).then(|| text.to_owned());
    }
    let bare = text.strip_prefix('{').and_then(|rest| rest.strip_suffix('}')).unwrap_or(text);
    let hex: String = bare.chars().filter(|&c| c != '-').collect();
    if hex.len() != 32 || !hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    if bare.contains('-') {
        let groups: Vec<usize> = bare.split('-').map(str::len).collect();
        if groups != [8, 4, 4, 4, 12] {
            return None;
        }
        return Some(format!("GPU-{bare}"));
    }
    let hex = hex.to_ascii_lowercase();
    Some(format!("GPU-{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..]))
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
}

#[cfg(test)]
mod tests {
    use super::nvml_uuid;

    #[test]
    fn uuids_are_written_as_nvml_writes_them() {
        let nvml = "GPU-b15c2a57-42ed-1d24-2c84-067081698645";
        assert_eq!(nvml_uuid(nvml).as_deref(), Some(nvml));
        assert_eq!(nvml_uuid("b15c2a57-42ed-1d24-2c84-067081698645").as_deref(), Some(nvml));
        assert_eq!(nvml_uuid("B15C2A5742ED1D242C84067081698645").as_deref(), Some(nvml));
        assert_eq!(nvml_uuid("{b15c2a57-42ed-1d24-2c84-067081698645}").as_deref(), Some(nvml));
        assert_eq!(nvml_uuid("MIG-abc").as_deref(), Some("MIG-abc"));
        for bad in
            ["", "GPU-", "0", "b15c2a57-42ed1d24-2c84-067081698645", "x15c2a5742ed1d242c84067081698645"]
        {
            assert_eq!(nvml_uuid(bad), None, "{bad}");
        }
    }
}
