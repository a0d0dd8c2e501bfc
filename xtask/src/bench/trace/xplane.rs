//! The XPlane row's input: an `XSpace` protobuf (`*.xplane.pb`, as the
//! JAX and TensorFlow profilers write) of about the requested size, its
//! wire format written directly (field numbers of openxla/xla's
//! `xla/tsl/profiler/protobuf/xplane.proto`).
//!
//! Its shape is what XLA's CUPTI tracer writes on NVIDIA GPUs: planes
//! `/device:GPU:0` and `/device:GPU:1`, each with four "Stream #N(Compute)"
//! lines of kernels (overlapping across streams) and a "Stream #N(MemcpyH2D)"
//! line of copies; every GPU event carries `correlation_id`,
//! `kernel_details` or `memcpy_details`, `hlo_op`, `hlo_module` and
//! `context_id`, its strings (details, op, module) by reference to the
//! plane's stat metadata, as XLA writes them; a `/host:CPU` plane has one
//! thread line per GPU with the `cuLaunchKernel` / `cudaMemcpyAsync` call
//! of every activity, carrying the same `correlation_id`. Line timestamps
//! are on a boot-time clock.
//!
//! A length-delimited message needs its length before its bytes, and the
//! file is never held in memory (a child's peak RSS as `wait4` reports it
//! starts from its parent's): each plane is walked twice, once summing its
//! events' encoded sizes and once writing them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::Generated;

const GPUS: u64 = 2;
const STREAMS: u64 = 4;
/// Every 16th activity of a GPU is a host-to-device copy.
const COPY_EVERY: u64 = 16;
/// The lines' timestamp: nanoseconds on a boot-time clock.
const LINE_TIMESTAMP_NS: u64 = 4_210_000_000;
/// Activity `i` of a GPU starts at `i * SPACING_NS` (plus a lead for the
/// host call before it): four streams' kernels of up to 2.5 µs overlap.
const SPACING_NS: u64 = 700;
const LEAD_NS: u64 = 10_000;

/// Stat metadata ids (a plane's `stat_metadata` map).
const STAT_CORRELATION: u64 = 1;
const STAT_KERNEL_DETAILS: u64 = 2;
const STAT_MEMCPY_DETAILS: u64 = 3;
const STAT_HLO_OP: u64 = 4;
const STAT_HLO_MODULE: u64 = 5;
const STAT_CONTEXT: u64 = 6;
const STAT_DEVICE: u64 = 7;
const STAT_NAMES: [(u64, &str); 7] = [
    (STAT_CORRELATION, "correlation_id"),
    (STAT_KERNEL_DETAILS, "kernel_details"),
    (STAT_MEMCPY_DETAILS, "memcpy_details"),
    (STAT_HLO_OP, "hlo_op"),
    (STAT_HLO_MODULE, "hlo_module"),
    (STAT_CONTEXT, "context_id"),
    (STAT_DEVICE, "device_id"),
];
/// The string stats' values, kept once each as stat metadata (XLA's way):
/// a kernel's details by `index % KERNEL_DETAILS` (its registers, shared
/// memory and grid cycle within that), its XLA op by `index % HLO_OPS`,
/// the module, a copy's details by `index % 8` (its size).
const REF_KERNEL: u64 = 1000;
const KERNEL_DETAILS: u64 = 1024;
const REF_HLO_OP: u64 = 3000;
const HLO_OPS: u64 = 97;
const REF_HLO_MODULE: u64 = 4000;
const REF_MEMCPY: u64 = 5000;

/// The string stat values of GPU `gpu`'s plane: (stat metadata ID, text).
fn string_values(gpu: u64) -> Vec<(u64, String)> {
    let kernels = (0..KERNEL_DETAILS).map(|index| {
        let text = format!(
            "regs:{} static_shared:0 dynamic_shared:{} grid:{},1,1 block:256,1,1 occ_pct:50",
            32 + index % 64,
            (index % 4) * 16384,
            1 + index % 1024
        );
        (REF_KERNEL + index, text)
    });
    let ops = (0..HLO_OPS).map(|index| (REF_HLO_OP + index, format!("fusion.{index}")));
    let copies = (0..8).map(|index| {
        let text = format!("kind_src:pinned kind_dst:device size:{} dest:{gpu} async:1", 4096 << index);
        (REF_MEMCPY + index, text)
    });
    kernels.chain(ops).chain([(REF_HLO_MODULE, "jit_train_step".to_owned())]).chain(copies).collect()
}

/// Kernel names (event metadata 1..=KERNEL_NAMES); the copy is the next id.
const KERNEL_NAMES: u64 = 48;

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn varint_len(value: u64) -> u64 {
    u64::from(64 - (value | 1).leading_zeros()).div_ceil(7)
}

/// A varint field (wire type 0).
fn int_field(out: &mut Vec<u8>, field: u64, value: u64) {
    varint(out, field << 3);
    varint(out, value);
}

/// A length-delimited field (wire type 2).
fn bytes_field(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    varint(out, (field << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// An `XStat` (field `field` of its holder): int64 or reference value.
fn stat(out: &mut Vec<u8>, scratch: &mut Vec<u8>, field: u64, metadata_id: u64, value: StatValue) {
    scratch.clear();
    int_field(scratch, 1, metadata_id);
    match value {
        StatValue::Int(value) => int_field(scratch, 4, value),
        StatValue::Ref(id) => int_field(scratch, 7, id),
    }
    bytes_field(out, field, scratch);
}

enum StatValue {
    Int(u64),
    /// A string kept once, as XLA's profiler keeps every string stat: the
    /// name of the plane's stat metadata of this ID.
    Ref(u64),
}

/// Which line of which plane.
#[derive(Clone, Copy)]
enum LineKind {
    /// A GPU's compute stream `0..STREAMS`.
    Compute(u64),
    /// A GPU's copy stream.
    Copy,
    /// The host thread launching a GPU's work.
    Host,
}

impl LineKind {
    /// `Some(is_copy)` when a GPU's `index`th event goes on this line: a
    /// copy (every `COPY_EVERY`th) on the copy line, a kernel on its
    /// stream's compute line, and every launch on the host line.
    fn takes(self, index: u64) -> Option<bool> {
        let is_copy = index % COPY_EVERY == COPY_EVERY - 1;
        let wanted = match self {
            LineKind::Compute(line) => !is_copy && index % STREAMS == line,
            LineKind::Copy => is_copy,
            LineKind::Host => true,
        };
        wanted.then_some(is_copy)
    }
}

/// The events of one line, each encoded into `event` and handed to `sink`.
fn for_each_event(
    gpu: u64,
    kind: LineKind,
    per_gpu: u64,
    sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let (mut event, mut scratch, mut framed) = (Vec::with_capacity(256), Vec::with_capacity(128), Vec::new());
    for index in 0..per_gpu {
        let Some(is_copy) = kind.takes(index) else {
            continue;
        };
        let correlation = index * GPUS + gpu + 1;
        let start_ps = (LEAD_NS + index * SPACING_NS) * 1000;
        event.clear();
        match kind {
            LineKind::Host => {
                int_field(&mut event, 1, if is_copy { 2 } else { 1 });
                int_field(&mut event, 2, start_ps - 5_000_000);
                int_field(&mut event, 3, 180_000 + (index % 5) * 20_000);
                stat(&mut event, &mut scratch, 4, STAT_CORRELATION, StatValue::Int(correlation));
                stat(&mut event, &mut scratch, 4, STAT_DEVICE, StatValue::Int(gpu));
            }
            LineKind::Compute(_) | LineKind::Copy => {
                let metadata = if is_copy { KERNEL_NAMES + 1 } else { 1 + index % KERNEL_NAMES };
                int_field(&mut event, 1, metadata);
                int_field(&mut event, 2, start_ps);
                // Whole nanoseconds, as the real files hold.
                int_field(&mut event, 3, (1_000 + (index % 7) * 250) * 1000);
                stat(&mut event, &mut scratch, 4, STAT_CORRELATION, StatValue::Int(correlation));
                if is_copy {
                    let details = REF_MEMCPY + index % 8;
                    stat(&mut event, &mut scratch, 4, STAT_MEMCPY_DETAILS, StatValue::Ref(details));
                } else {
                    let details = REF_KERNEL + index % KERNEL_DETAILS;
                    stat(&mut event, &mut scratch, 4, STAT_KERNEL_DETAILS, StatValue::Ref(details));
                    stat(
                        &mut event,
                        &mut scratch,
                        4,
                        STAT_HLO_OP,
                        StatValue::Ref(REF_HLO_OP + index % HLO_OPS),
                    );
                    stat(&mut event, &mut scratch, 4, STAT_HLO_MODULE, StatValue::Ref(REF_HLO_MODULE));
                }
                stat(&mut event, &mut scratch, 4, STAT_CONTEXT, StatValue::Int(gpu + 1));
            }
        }
        framed.clear();
        bytes_field(&mut framed, 4, &event);
        sink(&framed)?;
    }
    Ok(())
}

/// A plane's fields other than its lines: id, name, metadata maps.
fn plane_head(id: u64, name: &str, host: bool) -> Vec<u8> {
    let mut out = Vec::new();
    int_field(&mut out, 1, id);
    bytes_field(&mut out, 2, name.as_bytes());
    let (mut entry, mut value) = (Vec::new(), Vec::new());
    let event_names: Vec<(u64, String)> = if host {
        vec![(1, "cuLaunchKernel".into()), (2, "cudaMemcpyAsync".into())]
    } else {
        (1..=KERNEL_NAMES)
            .map(|id| (id, format!("loop_fusion_kernel_{id}")))
            .chain([(KERNEL_NAMES + 1, "MemcpyH2D".into())])
            .collect()
    };
    for (id, name) in event_names {
        metadata_entry(&mut out, 4, id, &name, &mut entry, &mut value);
    }
    let strings = if host { Vec::new() } else { string_values(id - 1) };
    let stat_names = STAT_NAMES.iter().map(|&(id, name)| (id, name.to_owned())).chain(strings);
    for (id, name) in stat_names {
        metadata_entry(&mut out, 5, id, &name, &mut entry, &mut value);
    }
    out
}

/// One entry of a plane's `event_metadata` (`field` 4) or `stat_metadata`
/// (5) map, `id` to metadata of that ID and `name`, appended to `out`;
/// `entry` and `value` are scratch.
fn metadata_entry(
    out: &mut Vec<u8>,
    field: u64,
    id: u64,
    name: &str,
    entry: &mut Vec<u8>,
    value: &mut Vec<u8>,
) {
    value.clear();
    int_field(value, 1, id);
    bytes_field(value, 2, name.as_bytes());
    entry.clear();
    int_field(entry, 1, id);
    bytes_field(entry, 2, value);
    bytes_field(out, field, entry);
}

/// A line's fields before its events.
fn line_head(id: u64, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    int_field(&mut out, 1, id);
    bytes_field(&mut out, 2, name.as_bytes());
    int_field(&mut out, 3, LINE_TIMESTAMP_NS);
    out
}

/// Writes one plane (as field 1 of the XSpace) and returns its events.
fn write_plane(
    out: &mut impl Write,
    head: &[u8],
    lines: &[(Vec<u8>, u64, LineKind)],
    per_gpu: u64,
) -> std::io::Result<u64> {
    let mut sizes = Vec::new();
    let mut events = 0u64;
    for (line_head, gpu, kind) in lines {
        let mut size = line_head.len() as u64;
        for_each_event(*gpu, *kind, per_gpu, &mut |framed| {
            size += framed.len() as u64;
            events += 1;
            Ok(())
        })?;
        sizes.push(size);
    }
    let plane_size = head.len() as u64 + sizes.iter().map(|size| 1 + varint_len(*size) + size).sum::<u64>();
    let mut prefix = Vec::new();
    varint(&mut prefix, (1 << 3) | 2);
    varint(&mut prefix, plane_size);
    out.write_all(&prefix)?;
    out.write_all(head)?;
    for ((line_head, gpu, kind), size) in lines.iter().zip(sizes) {
        prefix.clear();
        varint(&mut prefix, (3 << 3) | 2);
        varint(&mut prefix, size);
        out.write_all(&prefix)?;
        out.write_all(line_head)?;
        for_each_event(*gpu, *kind, per_gpu, &mut |framed| out.write_all(framed))?;
    }
    Ok(events)
}

/// Writes the XSpace with `per_gpu` activities on each GPU.
fn write_space(path: &Path, per_gpu: u64) -> anyhow::Result<Generated> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let host_lines: Vec<_> = (0..GPUS)
        .map(|gpu| (line_head(100 + gpu, &format!("python/{}", 100 + gpu)), gpu, LineKind::Host))
        .collect();
    let mut events = write_plane(&mut out, &plane_head(0, "/host:CPU", true), &host_lines, per_gpu)?;
    for gpu in 0..GPUS {
        let mut lines: Vec<_> = (0..STREAMS)
            .map(|stream| {
                let id = 7 + stream;
                (line_head(id, &format!("Stream #{id}(Compute)")), gpu, LineKind::Compute(stream))
            })
            .collect();
        lines.push((line_head(20, "Stream #20(MemcpyH2D)"), gpu, LineKind::Copy));
        let head = plane_head(1 + gpu, &format!("/device:GPU:{gpu}"), false);
        events += write_plane(&mut out, &head, &lines, per_gpu)?;
    }
    out.flush()?;
    let bytes = std::fs::metadata(path)?.len();
    Ok(Generated { bytes, events })
}

/// An XPlane file of about `target_bytes` and its activities per GPU: two
/// small ones measure the bytes per activity and the fixed part (the
/// planes' metadata), then the real one is sized from them.
pub(super) fn generate(path: &Path, target_bytes: u64) -> anyhow::Result<(Generated, u64)> {
    let probe_activities = 4096;
    let small = write_space(path, probe_activities)?;
    let large = write_space(path, 2 * probe_activities)?;
    let per_activity = (large.bytes - small.bytes).div_ceil(probe_activities * GPUS).max(1);
    let fixed = small.bytes.saturating_sub(per_activity * probe_activities * GPUS);
    let per_gpu = (target_bytes.saturating_sub(fixed) / per_activity / GPUS).max(1);
    Ok((write_space(path, per_gpu)?, per_gpu))
}

/// Nanoseconds as Kineto writes microseconds: three decimals.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// The same run as [`write_space`] with `per_gpu` activities a GPU, as a
/// Kineto Chrome trace: every kernel, copy and launch call with the XPlane's
/// times (its line timestamp added), streams, devices and correlation IDs,
/// in the XPlane's order (the host's calls, then each GPU's stream lines),
/// laid out as Kineto lays events out. The kernels' launch configuration
/// and the XLA op and module go into `args` as Kineto writes a kernel's
/// details, so each side reads what its format says of every event.
pub(super) fn write_kineto_twin(path: &Path, per_gpu: u64) -> anyhow::Result<Generated> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    out.write_all(b"{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n")?;
    let mut events = 0u64;
    let mut separator = |out: &mut BufWriter<File>| -> std::io::Result<()> {
        if events > 0 {
            out.write_all(b",\n")?;
        }
        events += 1;
        Ok(())
    };
    for gpu in 0..GPUS {
        for index in 0..per_gpu {
            let is_copy = index % COPY_EVERY == COPY_EVERY - 1;
            let correlation = index * GPUS + gpu + 1;
            let start = LINE_TIMESTAMP_NS + LEAD_NS + index * SPACING_NS - 5_000;
            let duration = 180 + (index % 5) * 20;
            let name = if is_copy { "cudaMemcpyAsync" } else { "cuLaunchKernel" };
            separator(&mut out)?;
            write!(
                out,
                "  {{\n    \"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"{name}\", \"pid\": 1, \"tid\": {}, \
                 \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"correlation\": {correlation}, \"device\": {gpu}\n    }}\n  }}",
                100 + gpu,
                micros(start),
                micros(duration)
            )?;
        }
    }
    for gpu in 0..GPUS {
        let lines = (0..STREAMS).map(LineKind::Compute).chain([LineKind::Copy]);
        for kind in lines {
            for index in 0..per_gpu {
                let Some(is_copy) = kind.takes(index) else {
                    continue;
                };
                let correlation = index * GPUS + gpu + 1;
                let start = LINE_TIMESTAMP_NS + LEAD_NS + index * SPACING_NS;
                let duration = 1_000 + (index % 7) * 250;
                separator(&mut out)?;
                if is_copy {
                    let bytes = 4096u64 << (index % 8);
                    write!(
                        out,
                        "  {{\n    \"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", \
                         \"pid\": {gpu}, \"tid\": 20, \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"device\": {gpu}, \
                         \"context\": {}, \"stream\": 20, \"correlation\": {correlation}, \"bytes\": {bytes}\n    }}\n  }}",
                        micros(start),
                        micros(duration),
                        gpu + 1
                    )?;
                } else {
                    let stream_id = 7 + index % STREAMS;
                    write!(
                        out,
                        "  {{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"loop_fusion_kernel_{}\", \"pid\": {gpu}, \
                         \"tid\": {stream_id}, \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"device\": {gpu}, \
                         \"context\": {}, \"stream\": {stream_id}, \"correlation\": {correlation}, \"registers per thread\": {}, \
                         \"shared memory\": {}, \"grid\": [{}, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 50, \
                         \"hlo_op\": \"fusion.{}\", \"hlo_module\": \"jit_train_step\"\n    }}\n  }}",
                        1 + index % KERNEL_NAMES,
                        micros(start),
                        micros(duration),
                        gpu + 1,
                        32 + index % 64,
                        (index % 4) * 16384,
                        1 + index % 1024,
                        index % 97
                    )?;
                }
            }
        }
    }
    out.write_all(b"\n  ]\n}\n")?;
    out.flush()?;
    let bytes = std::fs::metadata(path)?.len();
    Ok(Generated { bytes, events })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The twin holds the XPlane's events: as many, and its JSON parses.
    #[test]
    fn the_kineto_twin_holds_the_same_events() -> anyhow::Result<()> {
        let folder = std::env::temp_dir().join(format!("tally-xplane-twin-{}", std::process::id()));
        std::fs::create_dir_all(&folder)?;
        let (space, twin) = (folder.join("run.xplane.pb"), folder.join("run.json"));
        let made = write_space(&space, 100)?;
        let kineto = write_kineto_twin(&twin, 100)?;
        assert_eq!(made.events, kineto.events);
        let document: serde_json::Value = serde_json::from_slice(&std::fs::read(&twin)?)?;
        let events = document["traceEvents"].as_array().map_or(&[][..], Vec::as_slice);
        assert_eq!(events.len() as u64, kineto.events);
        let kernels = events.iter().filter(|event| event["cat"] == "kernel").count() as u64;
        assert_eq!(kernels, GPUS * (100 - 100 / COPY_EVERY));
        std::fs::remove_dir_all(&folder)?;
        Ok(())
    }

    #[test]
    fn varint_lengths_match_the_encoding() {
        for value in [0, 1, 127, 128, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            varint(&mut out, value);
            assert_eq!(out.len() as u64, varint_len(value), "{value}");
        }
    }
}
