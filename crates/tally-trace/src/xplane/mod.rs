//! The reader of XPlane profiles (`*.xplane.pb`): the `XSpace` protobuf the
//! XLA/TSL profiler writes for JAX, TensorFlow and PyTorch/XLA.
//!
//! # What is read
//!
//! - **GPU work**: each `/device:GPU:N` plane's lines named `Stream ...`
//!   (CUPTI's or ROCm's activity, one line per stream, the line's ID being
//!   the stream's). An event's kind comes from its stats (`kernel_details`,
//!   `memcpy_details`, `Memset_details`), failing those from its name
//!   (`MemcpyH2D`, `Memset`); allocator events (`memalloc_details`, ...)
//!   are counted as ignored. Its `correlation_id` links it to the host call
//!   that launched it, its `cuda_graph_id` (or `cuda_graph_exec_id`) names
//!   its graph. Derived lines (`XLA Ops`, `XLA Modules`, `TensorFlow Ops`,
//!   `Steps`, ...) are not activity.
//! - **Host calls**: on `/host:CPU`, every CUDA or HIP API call (`cu*`,
//!   `hipModule*` as driver calls, `cuda*`, `hip*` as runtime calls) with a
//!   `correlation_id` becomes a runtime row, on the thread of its line's ID;
//!   host events matching the iteration pattern become iteration spans.
//! - **Devices**: the GPU plane's ordinal names the device; its stats
//!   (`device_vendor`, `device_type_string`, `compute_cap_major/minor`,
//!   `core_count`, `memory_size`, `memory_bandwidth`, `clock_rate`) give its
//!   name and the summary's `devices`. The UUID stays synthesized per
//!   attachment and ordinal: XPlane carries none.
//! - **Time**: an event starts at `line.timestamp_ns * 1000 + offset_ps` ps
//!   and ends `duration_ps` later; both are floored to ns (exact whenever
//!   the ps are whole ns; a fraction is counted in `rounded_timestamps`).
//!   The profiler stores line timestamps relative to the profile's start
//!   and the start, on the Unix epoch, in the `Task Environment` plane's
//!   `profile_start_time`: a line whose timestamp is below half that start
//!   is moved back onto the epoch by it. Without that plane timestamps are
//!   used as written.
//! - A profile without GPU planes (CPU-only JAX or TensorFlow) imports its
//!   host calls and spans, and says so in a note.
//!
//! # Memory
//!
//! The `XSpace` is never decoded whole: a wire-format reader walks the
//! containers (the space's planes, a plane's lines and maps, a line's
//! events) through one 4 MiB buffer and hands only the small messages to
//! prost; an event, the one message there are millions of, is read in place
//! without allocating (`event.rs`), prost deciding only what is not plainly
//! well formed. An XPlane serializes its lines before the metadata maps
//! their events refer to, so each plane is read twice, seeking in the file:
//! its metadata, then its lines. A gzip-compressed profile, or one arriving
//! through a pipe, is first decompressed (copied) into an anonymous
//! temporary file, which takes disk, not memory. What stays is the rows
//! every reader keeps (64 bytes per imported kernel, copy or set, 48 per API
//! call, 4 more per GPU row once a kernel is labelled, and each distinct
//! label set once) and each plane's metadata; events read past (Python
//! tracer, TraceMe, derived lines) cost nothing. Measured (`tally import
//! --dry-run`, one core): a real JAX CPU profile of 44.7 MB, 12.4 MB peak
//! RSS (8.7 MB of it the process at rest, 4 MiB the buffer); the bench's
//! profile (`cargo xtask bench trace-xplane`: 104 MB, 1.33 million kernels
//! and copies and their 1.33 million launches, 39 bytes an event in the
//! file), 196 MB: the rows (149 MB, 56 bytes an event), the build's indices
//! (27 MB, 20 bytes a kernel and its launch), the labels, the buffer and
//! the process at rest. A fifth of the file is out of reach for a profile
//! that dense while every row is held until the launches are linked; its
//! Kineto twin (the same events as Kineto JSON, 766 MB) peaks at 191 MB.
//!
//! Every length is checked against its enclosing message and every count
//! against a limit: a hostile file is refused with the byte offset and the
//! rule ([`XPlaneRule`]).

pub mod proto;

mod event;
mod lines;
mod plane;
mod wire;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek};

use flate2::read::MultiGzDecoder;
use serde_json::{Map, Value, json};

pub use self::wire::XPlaneRule;

use self::lines::{Gathered, Label, Lines, PlaneKind};
use self::plane::{Known, Plane, integer};
use self::wire::{LEN, MAX_NAME, Wire, WireError, WireResult, XPlaneRule as Rule, fail};
use crate::build::{DeviceDetails, TraceInfo};
use crate::collect::{Collected, NONE_U32};
use crate::detect::OpenedInput;
use crate::error::TraceErrorKind;
use crate::ranges::SpanMatcher;

/// The most planes a profile may have.
const MAX_PLANES: u64 = 1 << 16;
/// Host names and profiler messages kept.
const MAX_TEXTS: usize = 16;

/// Reads a profile into `collected`; returns what it says about the trace.
pub(crate) fn read_xplane(
    input: OpenedInput,
    gzip: bool,
    collected: &mut Collected,
    spans: &SpanMatcher,
) -> Result<TraceInfo, TraceErrorKind> {
    let path = input.path().to_path_buf();
    let regular =
        path.as_os_str() != "-" && std::fs::metadata(&path).is_ok_and(|metadata| metadata.is_file());
    let file = if regular && !gzip {
        // Reopened by path: the input's stream (past the sniffed bytes) cannot seek.
        drop(input);
        File::open(&path).map_err(TraceErrorKind::Io)?
    } else {
        spool(input.into_reader(), gzip)?
    };
    let size = file.metadata().map_err(TraceErrorKind::Io)?.len();
    let mut wire = Wire::new(file, size);
    read(&mut wire, collected, spans).map_err(|error| match error {
        WireError::Io(error) => TraceErrorKind::Io(error),
        WireError::Rule { offset, rule } => TraceErrorKind::XPlane { offset, rule },
    })
}

/// The (decompressed) stream copied into an anonymous temporary file.
fn spool(reader: Box<dyn Read + Send>, gzip: bool) -> Result<File, TraceErrorKind> {
    let mut file = tempfile::tempfile().map_err(TraceErrorKind::Io)?;
    if gzip {
        io::copy(&mut MultiGzDecoder::new(reader), &mut file).map_err(TraceErrorKind::Gzip)?;
    } else {
        let mut reader = reader;
        io::copy(&mut reader, &mut file).map_err(TraceErrorKind::Io)?;
    }
    file.rewind().map_err(TraceErrorKind::Io)?;
    Ok(file)
}

/// A plane's bytes and name.
struct PlaneRef {
    start: u64,
    stop: u64,
    name: String,
}

/// The space's top level: its planes (where they are and their names) and
/// its host names, errors and warnings.
struct Space {
    planes: Vec<PlaneRef>,
    hostnames: Vec<String>,
    errors: Vec<String>,
    warnings: Vec<String>,
}

fn space<R: Read + Seek>(wire: &mut Wire<R>) -> WireResult<Space> {
    let stop = wire.size();
    let mut space =
        Space { planes: Vec::new(), hostnames: Vec::new(), errors: Vec::new(), warnings: Vec::new() };
    while wire.position() < stop {
        let key_offset = wire.position();
        let (field, wire_type) = wire.key(stop)?;
        if !(1..=4).contains(&field) {
            wire.skip(wire_type, stop)?;
            continue;
        }
        wire.expect("XSpace", field, wire_type, LEN, key_offset)?;
        let end = wire.length(stop)?;
        if field == 1 {
            if space.planes.len() as u64 >= MAX_PLANES {
                return fail(key_offset, Rule::TooMany { what: "XSpace.planes", limit: MAX_PLANES });
            }
            let start = wire.position();
            let name = Plane::read(wire, start, end, false)?.name;
            space.planes.push(PlaneRef { start, stop: end, name });
        } else {
            let list = match field {
                2 => &mut space.errors,
                3 => &mut space.warnings,
                _ => &mut space.hostnames,
            };
            let text = wire.string(end, "XSpace string", MAX_NAME)?;
            if list.len() < MAX_TEXTS {
                list.push(text);
            }
        }
        wire.seek(end)?;
    }
    Ok(space)
}

/// What a device plane says of its device: its name, compute capability
/// and memory (the summary's device entry), and everything known (the
/// summary's `device_properties`).
fn device_entry(plane: &Plane, ordinal: u32) -> (Option<String>, DeviceDetails, Value) {
    let int = |known| plane.own(known).and_then(integer).and_then(|value| u64::try_from(value).ok());
    let text = |known| plane.own(known).and_then(|stat| plane.text(stat)).map(str::to_owned);
    let vendor = text(Known::Vendor);
    let capability = match (int(Known::ComputeMajor), int(Known::ComputeMinor)) {
        (Some(major), Some(minor)) => Some(format!("{major}.{minor}")),
        _ => None,
    };
    let name = text(Known::DeviceType).or_else(|| {
        let vendor = vendor.as_deref()?;
        Some(match &capability {
            Some(capability) => format!("{vendor} GPU (compute capability {capability})"),
            None => format!("{vendor} GPU"),
        })
    });
    let entry = json!({
        "ordinal": ordinal,
        "plane": plane.name,
        "name": name,
        "vendor": vendor,
        "compute_capability": capability.clone(),
        "core_count": int(Known::CoreCount),
        "memory_size": int(Known::MemorySize),
        "memory_bandwidth": int(Known::MemoryBandwidth),
        "clock_rate_khz": int(Known::ClockRate),
    });
    let details =
        DeviceDetails { compute_capability: capability, total_memory_bytes: int(Known::MemorySize) };
    (name, details, entry)
}

fn read<R: Read + Seek>(
    wire: &mut Wire<R>,
    collected: &mut Collected,
    spans: &SpanMatcher,
) -> WireResult<TraceInfo> {
    let space = space(wire)?;
    if space.planes.is_empty() {
        return fail(0, Rule::TooMany { what: "an XSpace without planes (not a profile)", limit: 0 });
    }
    // The Task Environment plane comes last in the file but says where the
    // others' timestamps count from: read first.
    let (mut epoch_start, mut epoch_stop) = (None, None);
    for plane in space.planes.iter().filter(|plane| plane.name == "Task Environment") {
        let plane = Plane::read(wire, plane.start, plane.stop, true)?;
        let int = |known| plane.own(known).and_then(integer).and_then(|value| u64::try_from(value).ok());
        epoch_start = epoch_start.or(int(Known::ProfileStart)).filter(|&start| start > 0);
        epoch_stop = epoch_stop.or(int(Known::ProfileStop));
    }
    let mut gathered = Gathered::default();
    let mut device_names = BTreeMap::new();
    let mut device_details = BTreeMap::new();
    let mut devices = Vec::new();
    let (mut gpu_planes, mut host_planes, mut skipped) = (0u64, 0u64, Vec::new());
    let mut vendors = Vec::new();
    for place in &space.planes {
        let kind = if let Some(ordinal) = place.name.strip_prefix("/device:GPU:") {
            PlaneKind::Gpu { ordinal: ordinal.parse().unwrap_or(NONE_U32) }
        } else if place.name.starts_with("/host:CPU") {
            PlaneKind::Host
        } else {
            if place.name != "Task Environment" && skipped.len() < MAX_TEXTS {
                skipped.push(place.name.clone());
            }
            continue;
        };
        let mut plane = Plane::read(wire, place.start, place.stop, true)?;
        if let PlaneKind::Gpu { ordinal } = kind {
            gpu_planes += 1;
            let (name, details, entry) = device_entry(&plane, ordinal);
            if let Some(name) = name {
                device_names.insert(ordinal, name);
            }
            device_details.insert(ordinal, details);
            if let Some(vendor) = entry["vendor"].as_str() {
                vendors.push(vendor.to_owned());
            }
            devices.push(entry);
        } else {
            host_planes += 1;
        }
        let labelled_from = gathered.derived.len();
        let rows_from = collected.gpu.len();
        Lines { plane: &mut plane, kind, epoch_start, collected, spans, gathered: &mut gathered }.read(
            wire,
            place.start,
            place.stop,
        )?;
        label_by_cover(collected, &mut gathered, rows_from, labelled_from);
    }
    let rocm = vendors.iter().any(|vendor| vendor.contains("AMD"))
        || collected.runtime.iter().any(|row| collected.name(row.name).starts_with("hip"));
    if gpu_planes == 0 {
        collected.notes.push(
            "the profile has no GPU plane (a CPU-only run): only host calls and spans are imported".into(),
        );
    } else if collected.gpu.is_empty() {
        collected.notes.push("the profile's GPU planes hold no kernels, copies or memsets".into());
    }
    if epoch_start.is_none() {
        collected.notes.push(
            "the profile has no Task Environment start time: line timestamps are used as written".into(),
        );
    }
    let mut extra = Map::new();
    extra.insert("device_properties".into(), Value::Array(devices));
    extra.insert("profile_start_time_ns".into(), json!(epoch_start));
    extra.insert("profile_stop_time_ns".into(), json!(epoch_stop));
    extra.insert("relative_lines".into(), json!(gathered.relative_lines));
    extra.insert("host_planes".into(), json!(host_planes));
    extra.insert("planes_not_read".into(), json!(skipped));
    extra.insert("aggregated_events".into(), json!(gathered.aggregated));
    extra.insert("profiler_errors".into(), json!(space.errors));
    extra.insert("profiler_warnings".into(), json!(space.warnings));
    let labelled = collected.gpu_labels.iter().filter(|&&set| set != NONE_U32).count();
    extra.insert("labelled_gpu_events".into(), json!(labelled));
    Ok(TraceInfo {
        source: "xplane",
        base_ns: 0,
        host: space.hostnames.first().cloned(),
        trace_id: None,
        backend: if rocm { "rocm" } else { "cupti" },
        device_names,
        device_details,
        resolution_ns: 1,
        extra,
        ..TraceInfo::default()
    })
}

/// Labels the GPU rows from `rows_from` on (this plane's) where they lack
/// a label of their own with the names of the derived-line events (from
/// `derived_from` on) that cover them: the latest-starting one that ends
/// no earlier.
fn label_by_cover(collected: &mut Collected, gathered: &mut Gathered, rows_from: usize, derived_from: usize) {
    let derived = &mut gathered.derived[derived_from..];
    if derived.is_empty() {
        return;
    }
    derived.sort_unstable_by_key(|&(label, start, end, _)| (label, start, std::cmp::Reverse(end)));
    let derived = std::mem::take(&mut gathered.derived);
    let derived_here = &derived[derived_from..];
    for row in rows_from..collected.gpu.len() {
        let event = collected.gpu[row];
        let before = collected.labels_of(row).copied().unwrap_or([NONE_U32; 3]);
        let mut labels = before;
        for label in Label::ALL {
            if labels[label as usize] != NONE_U32 {
                continue;
            }
            let of_label = &derived_here[derived_here.partition_point(|entry| entry.0 < label)..];
            let of_label = &of_label[..of_label.partition_point(|entry| entry.0 == label)];
            let upto = of_label.partition_point(|entry| entry.1 <= event.start);
            // Nested derived events are few deep: look back a bounded way.
            if let Some(cover) = of_label[..upto].iter().rev().take(64).find(|entry| entry.2 >= event.end) {
                labels[label as usize] = cover.3;
            }
        }
        // Rows are numbered with u32 by build, as every reader's.
        if labels != before && u32::try_from(row).is_ok() {
            gathered.label(collected, row, labels);
        }
    }
    gathered.derived = derived;
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails by panicking")]
mod tests {
    use super::*;

    #[test]
    fn an_empty_space_is_no_profile() {
        let mut wire = Wire::new(io::Cursor::new(Vec::new()), 0);
        let error =
            read(&mut wire, &mut Collected::default(), &SpanMatcher::new(crate::ranges::default_pattern()));
        assert!(matches!(error, Err(WireError::Rule { offset: 0, .. })));
    }
}
