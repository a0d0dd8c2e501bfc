//! Importing XPlane profiles (`*.xplane.pb`): a real JAX-on-ROCm profile
//! against an independent reading written here straight from the protobuf
//! wire format, hostile files refused with the byte and the rule, and a
//! synthetic profile (written with the crate's prost structs) against
//! figures worked out by hand.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use common::*;
use prost::Message;
use tally_core::{ActivityDomain, CorrelationEvent, EventBody};
use tally_trace::xplane::proto::{
    XEvent, XEventData, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata, XStatValue,
};
use tally_trace::{Detail, TraceErrorKind, TraceFormat, XPlaneRule, detect_format, import_traces_to_vec};

const REAL: &str = "xplane/jax-rocm_mi355_te-fused-attn.xplane.pb";

// ---------------------------------------------------------------------------
// An independent reading: a plain varint/length walker over the whole file.

#[derive(Debug, Clone, Copy)]
enum Val<'a> {
    Int(u64),
    Bytes(&'a [u8]),
}

/// The fields of one message, in order: (number, value). Fixed-width
/// values are read as integers (little-endian).
fn fields(mut bytes: &[u8]) -> Vec<(u64, Val<'_>)> {
    fn varint(bytes: &mut &[u8]) -> u64 {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = bytes[0];
            *bytes = &bytes[1..];
            value |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                return value;
            }
        }
    }
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let key = varint(&mut bytes);
        let value = match key & 7 {
            0 => Val::Int(varint(&mut bytes)),
            1 => {
                let value = u64::from_le_bytes(bytes[..8].try_into().unwrap());
                bytes = &bytes[8..];
                Val::Int(value)
            }
            2 => {
                let length = varint(&mut bytes) as usize;
                let (value, rest) = bytes.split_at(length);
                bytes = rest;
                Val::Bytes(value)
            }
            5 => {
                let value = u64::from(u32::from_le_bytes(bytes[..4].try_into().unwrap()));
                bytes = &bytes[4..];
                Val::Int(value)
            }
            other => panic!("wire type {other}"),
        };
        out.push((key >> 3, value));
    }
    out
}

fn int(fields: &[(u64, Val<'_>)], number: u64) -> u64 {
    fields
        .iter()
        .rev()
        .find_map(|(n, v)| match (n, v) {
            (n, Val::Int(v)) if *n == number => Some(*v),
            _ => None,
        })
        .unwrap_or(0)
}

fn text<'a>(fields: &[(u64, Val<'a>)], number: u64) -> &'a str {
    fields
        .iter()
        .find_map(|(n, v)| match (n, v) {
            (n, Val::Bytes(v)) if *n == number => Some(std::str::from_utf8(v).unwrap()),
            _ => None,
        })
        .unwrap_or("")
}

fn all<'a>(fields: &[(u64, Val<'a>)], number: u64) -> Vec<&'a [u8]> {
    fields
        .iter()
        .filter_map(|(n, v)| match (n, v) {
            (n, Val::Bytes(v)) if *n == number => Some(*v),
            _ => None,
        })
        .collect()
}

/// A map field's entries: key (1) to value (2) message.
fn map<'a>(fields: &[(u64, Val<'a>)], number: u64) -> HashMap<u64, Vec<(u64, Val<'a>)>> {
    all(fields, number)
        .into_iter()
        .map(|entry| {
            let entry = fields_of(entry);
            let value = all(&entry, 2).first().map(|bytes| fields_of(bytes)).unwrap_or_default();
            (int(&entry, 1), value)
        })
        .collect()
}

fn fields_of(bytes: &[u8]) -> Vec<(u64, Val<'_>)> {
    fields(bytes)
}

/// What the independent reading finds of one profile.
#[derive(Debug, Default)]
struct Reading {
    /// Per GPU ordinal: kernels, copies and sets as (start_ns, end_ns, correlation).
    gpu: BTreeMap<u32, Vec<(u128, u128, u64)>>,
    /// Host API calls with a correlation ID: correlation to name.
    launches: BTreeMap<u64, String>,
    /// GPU events' own `hlo_op`, `hlo_module` and `tf_op` stats (strings or
    /// references to a stat metadata's name), by correlation ID.
    labels: BTreeMap<u64, BTreeMap<String, String>>,
}

fn read_independently(bytes: &[u8]) -> Reading {
    let space = fields(bytes);
    let planes: Vec<Vec<(u64, Val<'_>)>> = all(&space, 1).into_iter().map(fields_of).collect();
    // The profile start, by which relative line timestamps are moved.
    let mut start_ns = 0u128;
    for plane in planes.iter().filter(|plane| text(plane, 2) == "Task Environment") {
        let names = map(plane, 5);
        for stat in all(plane, 6).into_iter().map(fields_of) {
            if text(&names[&int(&stat, 1)], 2) == "profile_start_time" {
                start_ns = u128::from(int(&stat, 3).max(int(&stat, 4)));
            }
        }
    }
    let mut reading = Reading::default();
    for plane in &planes {
        let name = text(plane, 2);
        let events = map(plane, 4);
        let stats = map(plane, 5);
        let correlation = |event: &[(u64, Val<'_>)]| {
            all(event, 4)
                .into_iter()
                .map(fields_of)
                .find(|stat| text(&stats[&int(stat, 1)], 2) == "correlation_id")
                .map_or(0, |stat| int(&stat, 3).max(int(&stat, 4)))
        };
        for line in all(plane, 3).into_iter().map(fields_of) {
            let mut base = u128::from(int(&line, 3));
            if base < start_ns / 2 {
                base += start_ns;
            }
            for event in all(&line, 4).into_iter().map(fields_of) {
                let start_ps = base * 1000 + u128::from(int(&event, 2));
                let end_ps = start_ps + u128::from(int(&event, 3));
                let event_name = text(&events[&int(&event, 1)], 2);
                if let Some(ordinal) = name.strip_prefix("/device:GPU:")
                    && text(&line, 2).starts_with("Stream")
                {
                    for stat in all(&event, 4).into_iter().map(fields_of) {
                        let key = text(&stats[&int(&stat, 1)], 2);
                        if ["hlo_op", "hlo_module", "tf_op"].contains(&key) {
                            let value = match text(&stat, 5) {
                                "" => text(&stats[&int(&stat, 7)], 2),
                                value => value,
                            };
                            reading
                                .labels
                                .entry(correlation(&event))
                                .or_default()
                                .insert(key.into(), value.into());
                        }
                    }
                    reading.gpu.entry(ordinal.parse().unwrap()).or_default().push((
                        start_ps / 1000,
                        end_ps / 1000,
                        correlation(&event),
                    ));
                } else if name == "/host:CPU"
                    && (event_name.starts_with("hip") || event_name.starts_with("cu"))
                {
                    let id = correlation(&event);
                    if id != 0 {
                        reading.launches.insert(id, event_name.to_owned());
                    }
                }
            }
        }
    }
    reading
}

// ---------------------------------------------------------------------------
// What tally made of it.

/// GPU activities: (device index, start, end, correlation, launch API, kind).
fn gpu_activities(events: &[CorrelationEvent]) -> Vec<(u32, u128, u128, u64, Option<String>, String)> {
    events
        .iter()
        .filter_map(|event| {
            let EventBody::ActivityRef(activity) = event.body() else { return None };
            if activity.activity_domain != ActivityDomain::Gpu {
                return None;
            }
            let (start, end) = activity.span.bounds().unwrap();
            let metadata = event.metadata();
            Some((
                metadata.get("device_index").unwrap().as_u64().unwrap() as u32,
                u128::from(start),
                u128::from(end),
                activity.cuda_correlation_id.unwrap_or(0),
                metadata.get("launch_api").and_then(|value| value.as_str()).map(str::to_owned),
                activity.activity_kind.to_string(),
            ))
        })
        .collect()
}

/// The labels of the GPU activities, by correlation ID.
fn labels(events: &[CorrelationEvent]) -> BTreeMap<u64, BTreeMap<String, String>> {
    let mut found = BTreeMap::new();
    for event in events {
        let EventBody::ActivityRef(activity) = event.body() else { continue };
        if activity.activity_domain != ActivityDomain::Gpu {
            continue;
        }
        let labels: BTreeMap<String, String> = ["hlo_op", "hlo_module", "tf_op"]
            .iter()
            .filter_map(|key| Some(((*key).to_owned(), event.metadata().get(key)?.as_str()?.to_owned())))
            .collect();
        if !labels.is_empty() {
            found.insert(activity.cuda_correlation_id.unwrap(), labels);
        }
    }
    found
}

fn runtime_count(events: &[CorrelationEvent]) -> usize {
    events
        .iter()
        .filter(|event| {
            matches!(event.body(), EventBody::ActivityRef(activity) if activity.activity_domain == ActivityDomain::Runtime)
        })
        .count()
}

#[test]
fn the_real_profile_is_detected_by_name_and_by_content() {
    assert_eq!(detect_format(&fixture(REAL)).unwrap(), Some(TraceFormat::XPlane { gzip: false }));
    let dir = tempfile::tempdir().unwrap();
    let unnamed = dir.path().join("profile.bin");
    std::fs::copy(fixture(REAL), &unnamed).unwrap();
    assert_eq!(detect_format(&unnamed).unwrap(), Some(TraceFormat::XPlane { gzip: false }));
    let gzipped = dir.path().join("profile.gz");
    gzip(&std::fs::read(fixture(REAL)).unwrap(), &gzipped);
    assert_eq!(detect_format(&gzipped).unwrap(), Some(TraceFormat::XPlane { gzip: true }));
}

#[test]
fn content_sniffing_is_conservative() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    // JSON text may open with a newline (0x0a, XSpace's first key), but
    // never goes on as a plane does.
    for text in ["\n{\"traceEvents\": []}", "\n\n{\"event_type\": \"x\"}\n", "\n[1, 2]"] {
        let format = detect_format(&write("input", text.as_bytes())).unwrap();
        assert_ne!(format, Some(TraceFormat::XPlane { gzip: false }), "{text:?}");
    }
    // A plane whose length runs past the end, or whose name is not UTF-8.
    assert_eq!(detect_format(&write("short", &[0x0a, 0x40, 0x12, 0x02, b'a', b'b'])).unwrap(), None);
    assert_eq!(detect_format(&write("latin1", &[0x0a, 0x04, 0x12, 0x02, 0xff, 0xfe])).unwrap(), None);
    // The smallest space that passes: one plane named "/host:CPU".
    let mut plane = vec![0x12, 9];
    plane.extend(b"/host:CPU");
    let mut space = vec![0x0a, plane.len() as u8];
    space.extend(&plane);
    assert_eq!(detect_format(&write("space", &space)).unwrap(), Some(TraceFormat::XPlane { gzip: false }));
    // Forced to be a trace, a file with no telling name is XPlane only by
    // content: the same bytes under `.json` stay Kineto's.
    let opened =
        tally_trace::open_input(&write("space.json", &space), Some(tally_trace::InputKind::Trace)).unwrap();
    assert_eq!(opened.format(), tally_trace::InputFormat::Trace(TraceFormat::KinetoJson { gzip: false }));
    let opened =
        tally_trace::open_input(&write("space.bin", &space), Some(tally_trace::InputKind::Trace)).unwrap();
    assert_eq!(opened.format(), tally_trace::InputFormat::Trace(TraceFormat::XPlane { gzip: false }));
}

fn gzip(bytes: &[u8], path: &Path) {
    use std::io::Write;
    let mut encoder =
        flate2::write::GzEncoder::new(std::fs::File::create(path).unwrap(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap();
}

#[test]
fn the_real_profile_imports_as_the_independent_reading_says() {
    let reading = read_independently(&std::fs::read(fixture(REAL)).unwrap());
    assert_eq!(reading.gpu.len(), 1);
    assert_eq!(reading.gpu[&0].len(), 150);
    let dir = tempfile::tempdir().unwrap();
    let gzipped = dir.path().join("real.xplane.pb.gz");
    gzip(&std::fs::read(fixture(REAL)).unwrap(), &gzipped);
    for path in [fixture(REAL), gzipped] {
        let (events, summary) = import(std::slice::from_ref(&path), Detail::Kernel);
        let trace = &summary.traces[0];
        assert_eq!(trace["format"], "xplane", "{path:?}");
        assert_eq!(trace["host"], "934987a2fc2f");
        let activities = gpu_activities(&events);
        assert_eq!(activities.len(), 150);
        let mut ours: Vec<(u128, u128, u64)> =
            activities.iter().map(|&(_, start, end, correlation, ..)| (start, end, correlation)).collect();
        let mut theirs = reading.gpu[&0].clone();
        ours.sort_unstable();
        theirs.sort_unstable();
        assert_eq!(ours, theirs);
        assert!(activities.iter().all(|activity| activity.0 == 0 && activity.5 == "gpu_kernel"));
        // Device figures: summed and busy (union) time.
        let summed: u128 = theirs.iter().map(|(start, end, _)| end - start).sum();
        let busy = union_length(&theirs.iter().map(|&(start, end, _)| (start, end)).collect::<Vec<_>>());
        let figures = device_figures(&events);
        assert_eq!(figures.len(), 1);
        assert_eq!(figures.values().next().unwrap(), &(busy, summed));
        // Every kernel is linked to the host call with its correlation ID.
        for (_, _, _, correlation, api, _) in &activities {
            assert_eq!(
                api.as_deref(),
                reading.launches.get(correlation).map(String::as_str),
                "{correlation}"
            );
        }
        let apis: BTreeSet<&str> = activities.iter().filter_map(|activity| activity.4.as_deref()).collect();
        assert!(apis.contains("hipModuleLaunchKernel"), "{apis:?}");
        assert_eq!(runtime_count(&events), reading.launches.len());
        // Each kernel's XLA op, module and framework op, from its stats.
        assert_eq!(labels(&events), reading.labels);
        assert_eq!(reading.labels.len(), 150);
        let device = &trace["devices"]["0"];
        assert_eq!(device["name"], "AMD GPU (compute capability 9.5)", "{trace:#?}");
        assert_eq!(device["compute_capability"], "9.5");
        assert_eq!(device["total_memory_bytes"], 309_220_868_096u64);
        assert_eq!(trace["device_properties"][0]["core_count"], 256);
        assert_eq!(trace["backend"], "rocm");
    }
}

// ---------------------------------------------------------------------------
// Hostile input.

fn error_of(bytes: &[u8]) -> (u64, XPlaneRule) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.xplane.pb");
    std::fs::write(&path, bytes).unwrap();
    match import_traces_to_vec(&[path], &options(Detail::Launch)) {
        Err(error) => match error.kind() {
            TraceErrorKind::XPlane { offset, rule } => (*offset, rule.clone()),
            other => panic!("not an XPlane error: {other}"),
        },
        Ok((_, summary)) => {
            panic!("a hostile file was imported: {bytes:x?} {:?}", summary.traces[0]["format"])
        }
    }
}

#[test]
fn hostile_files_are_refused_with_the_byte_and_the_rule() {
    let real = std::fs::read(fixture(REAL)).unwrap();
    // Truncated: the first plane's length runs past the end.
    let (offset, rule) = error_of(&real[..real.len() / 2]);
    assert_eq!(offset, 1);
    assert!(
        matches!(rule, XPlaneRule::LengthPastEnd { end, .. } if end == (real.len() / 2) as u64),
        "{rule:?}"
    );
    // A varint of eleven bytes.
    let mut bad = vec![0x0a];
    bad.extend([0xff; 11]);
    assert_eq!(error_of(&bad), (1, XPlaneRule::VarintOverflow));
    // A huge length.
    let huge = [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x00];
    assert_eq!(error_of(&huge), (1, XPlaneRule::LengthPastEnd { length: (1 << 32) - 1, end: 8 }));
    // Wrong wire type: planes (field 1) as a varint.
    assert_eq!(
        error_of(&[0x08, 0x01]),
        (0, XPlaneRule::WrongWireType { message: "XSpace", field: 1, found: 0, expected: 2 })
    );
    // A line's name (field 2 of XLine) as a varint, inside a plane.
    let mut plane = vec![0x12, 13];
    plane.extend(b"/device:GPU:0");
    plane.extend([0x1a, 0x02, 0x10, 0x01]);
    let mut space = vec![0x0a, plane.len() as u8];
    space.extend(plane);
    assert_eq!(
        error_of(&space),
        (19, XPlaneRule::WrongWireType { message: "XLine", field: 2, found: 0, expected: 2 })
    );
    // A group.
    assert_eq!(error_of(&[0x0b]), (0, XPlaneRule::Group(3)));
}

#[test]
fn mutated_profiles_are_read_or_refused_never_a_panic() {
    let real = std::fs::read(fixture(REAL)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mutated.xplane.pb");
    // The same mutations every run.
    let mut random = tally_utils::xorshift::XorShift64::new(0x9e37_79b9_7f4a_7c15);
    let mut next = move || random.next_u64();
    let (mut refused, mut read) = (0, 0);
    for round in 0..200 {
        let mut bytes = real.clone();
        if round % 4 == 0 {
            bytes.truncate((next() % real.len() as u64) as usize);
        } else {
            for _ in 0..=next() % 4 {
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] = next() as u8;
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        match import_traces_to_vec(std::slice::from_ref(&path), &options(Detail::Launch)) {
            Ok(_) => read += 1,
            Err(error) => {
                assert!(error.to_string().contains("mutated.xplane.pb"), "{error}");
                refused += 1;
            }
        }
    }
    // Both outcomes happen: a flip inside a name or a timestamp still reads.
    assert!(refused > 0 && read > 0, "{refused} refused, {read} read");
}

// ---------------------------------------------------------------------------
// A synthetic profile, figures by hand.

fn stat(id: i64, value: XStatValue) -> XStat {
    XStat { metadata_id: id, value: Some(value) }
}

fn event(metadata: i64, offset_ps: i64, duration_ps: i64, stats: Vec<XStat>) -> XEvent {
    XEvent { metadata_id: metadata, data: Some(XEventData::OffsetPs(offset_ps)), duration_ps, stats }
}

fn plane(
    id: i64,
    name: &str,
    lines: Vec<XLine>,
    events: &[(i64, &str)],
    stats: &[(i64, &str)],
    own: Vec<XStat>,
) -> XPlane {
    XPlane {
        id,
        name: name.into(),
        lines,
        event_metadata: events
            .iter()
            .map(|&(id, name)| (id, XEventMetadata { id, name: name.into(), ..XEventMetadata::default() }))
            .collect(),
        stat_metadata: stats
            .iter()
            .map(|&(id, name)| (id, XStatMetadata { id, name: name.into(), description: String::new() }))
            .collect(),
        stats: own,
    }
}

fn line(id: i64, name: &str, timestamp_ns: i64, events: Vec<XEvent>) -> XLine {
    XLine { id, name: name.into(), timestamp_ns, events, ..XLine::default() }
}

/// An NVIDIA profile: two streams with overlapping kernels, a copy of each
/// kind (by stat and by name), a memset, a graph kernel, an `XLA Ops` line
/// labelling a kernel, host calls of both APIs, all on lines relative to a
/// profile start of 1,000,000,000,000 ns.
fn synthetic() -> XSpace {
    const CORRELATION: i64 = 1;
    const KERNEL: i64 = 2;
    const MEMCPY: i64 = 3;
    const MEMSET: i64 = 4;
    const GRAPH: i64 = 5;
    const HLO_OP: i64 = 6;
    const VENDOR: i64 = 7;
    const TYPE: i64 = 8;
    const DETAILS: i64 = 9;
    let gpu_stats = [
        (CORRELATION, "correlation_id"),
        (KERNEL, "kernel_details"),
        (MEMCPY, "memcpy_details"),
        (MEMSET, "Memset_details"),
        (GRAPH, "cuda_graph_id"),
        (HLO_OP, "hlo_op"),
        (VENDOR, "device_vendor"),
        (TYPE, "device_type_string"),
        (DETAILS, "fusion.1 from the ref"),
    ];
    let c = |id: u64| stat(CORRELATION, XStatValue::Uint64Value(id));
    let details = |kind: i64| stat(kind, XStatValue::StrValue("details".into()));
    // Stream 7 at 10,000 ns: kernel A [10,000, 10,500.5) ps-exact? see below.
    let stream7 = line(
        7,
        "Stream #7(Compute)",
        10_000,
        vec![
            // kernel a: 0 ps + 500,000 ps = [10,000, 10,500)
            event(
                1,
                0,
                500_000,
                vec![c(11), details(KERNEL), stat(HLO_OP, XStatValue::RefValue(DETAILS as u64))],
            ),
            // kernel b: [10,400, 10,900), overlapping a by 100 (same stream: nested fusions do)
            event(1, 400_000, 500_000, vec![c(12), details(KERNEL)]),
            // copy by stat: [11,000, 11,200)
            event(2, 1_000_000, 200_000, vec![c(13), details(MEMCPY)]),
            // graph kernel: [12,000, 12,100), offset with 999 ps below a ns: floor
            event(
                1,
                2_000_999,
                99_500,
                vec![c(14), details(KERNEL), stat(GRAPH, XStatValue::Int64Value(42))],
            ),
        ],
    );
    let stream9 = line(
        9,
        "Stream #9(MemcpyD2H)",
        10_000,
        vec![
            // copy by name only: MemcpyD2H [10,200, 10,600)
            event(3, 200_000, 400_000, vec![c(15)]),
            // MemcpyD2D by name [10,700, 10,800)
            event(4, 700_000, 100_000, vec![c(16)]),
            // Memset by stat: [13,000, 13,050)
            event(5, 3_000_000, 50_000, vec![c(17), details(MEMSET)]),
            // MemcpyH2D and MemcpyP2P by name: [14,000, 14,100), [14,100, 14,300).
            event(8, 4_000_000, 100_000, vec![c(18)]),
            event(9, 4_100_000, 200_000, vec![c(19)]),
            // An allocator event: not GPU work.
            event(6, 0, 1000, vec![stat(10, XStatValue::StrValue("x".into()))]),
        ],
    );
    // XLA Ops: covers kernel b ([10,400, 10,900)) by [10,300, 11,000).
    let xla_ops = line(-5, "XLA Ops", 10_000, vec![event(7, 300_000, 700_000, vec![])]);
    let mut gpu_plane = plane(
        1,
        "/device:GPU:0",
        vec![stream7, stream9, xla_ops],
        &[
            (1, "kernel_x"),
            (2, "copy"),
            (3, "MemcpyD2H"),
            (4, "MemcpyD2D"),
            (5, "memset"),
            (6, "alloc"),
            (7, "fusion.2"),
            (8, "MemcpyH2D"),
            (9, "MemcpyP2P"),
        ],
        &gpu_stats,
        vec![
            stat(VENDOR, XStatValue::StrValue("Nvidia".into())),
            stat(TYPE, XStatValue::StrValue("NVIDIA H100 80GB HBM3".into())),
        ],
    );
    gpu_plane
        .stat_metadata
        .insert(10, XStatMetadata { id: 10, name: "memalloc_details".into(), description: String::new() });
    // Host calls, on a line relative to the start too (9,000 ns).
    let calls = |pairs: &[(i64, u64)]| {
        pairs
            .iter()
            .enumerate()
            .map(|(index, &(api, id))| event(api, index as i64 * 100_000, 50_000, vec![c(id)]))
            .collect()
    };
    let host = plane(
        0,
        "/host:CPU",
        vec![line(
            77,
            "python3",
            9_000,
            calls(&[(1, 11), (1, 12), (2, 13), (2, 15), (2, 16), (3, 17), (4, 14), (2, 18), (2, 19)]),
        )],
        &[(1, "cuLaunchKernel"), (2, "cudaMemcpyAsync"), (3, "cudaMemsetAsync"), (4, "cudaGraphLaunch")],
        &[(CORRELATION, "correlation_id")],
        vec![],
    );
    let environment = plane(
        0,
        "Task Environment",
        vec![],
        &[],
        &[(1, "profile_start_time")],
        vec![stat(1, XStatValue::Uint64Value(1_000_000_000_000))],
    );
    XSpace {
        planes: vec![gpu_plane, host, environment],
        hostnames: vec!["node-x".into()],
        ..XSpace::default()
    }
}

#[test]
fn a_synthetic_profile_gives_the_figures_worked_out_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("synthetic.xplane.pb");
    std::fs::write(&path, synthetic().encode_to_vec()).unwrap();
    let (events, summary) = import(&[path], Detail::Kernel);
    let base = 1_000_000_000_000u128;
    let mut activities = gpu_activities(&events);
    activities.sort_by_key(|activity| (activity.1, activity.2));
    let got: Vec<(u128, u128, u64, Option<&str>, &str)> = activities
        .iter()
        .map(|(_, start, end, correlation, api, kind)| {
            (start - base, end - base, *correlation, api.as_deref(), kind.as_str())
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (10_000, 10_500, 11, Some("cuLaunchKernel"), "gpu_kernel"),
            (10_200, 10_600, 15, Some("cudaMemcpyAsync"), "gpu_memcpy"),
            (10_400, 10_900, 12, Some("cuLaunchKernel"), "gpu_kernel"),
            (10_700, 10_800, 16, Some("cudaMemcpyAsync"), "gpu_memcpy"),
            (11_000, 11_200, 13, Some("cudaMemcpyAsync"), "gpu_memcpy"),
            // 2,000,999 ps floors to 2,000 ns; its end 2,100,499 ps to 2,100.
            (12_000, 12_100, 14, Some("cudaGraphLaunch"), "gpu_kernel"),
            (13_000, 13_050, 17, Some("cudaMemsetAsync"), "gpu_memset"),
            (14_000, 14_100, 18, Some("cudaMemcpyAsync"), "gpu_memcpy"),
            (14_100, 14_300, 19, Some("cudaMemcpyAsync"), "gpu_memcpy"),
        ]
    );
    // Busy: [10,000, 10,900) + [11,000, 11,200) + [12,000, 12,100) +
    // [13,000, 13,050) + [14,000, 14,300) = 900 + 200 + 100 + 50 + 300;
    // summed: 500 + 400 + 500 + 100 + 200 + 100 + 50 + 100 + 200.
    let figures = device_figures(&events);
    assert_eq!(figures.values().next().unwrap(), &(1_550, 2_150));
    let trace = &summary.traces[0];
    assert_eq!(trace["devices"]["0"]["name"], "NVIDIA H100 80GB HBM3", "{trace:#?}");
    assert_eq!(trace["backend"], "cupti");
    assert_eq!(trace["graph_gpu_events"], 1);
    assert_eq!(runtime_count(&events), 9);
    assert_eq!(trace["relative_lines"], 4, "three GPU lines and the host's");
    assert_eq!(trace["ignored_events"]["xplane memory event"], 1);
    let graph: Vec<Option<u64>> = events
        .iter()
        .filter_map(|event| match event.body() {
            EventBody::ActivityRef(activity)
                if activity.cuda_correlation_id == Some(14)
                    && activity.activity_domain == ActivityDomain::Gpu =>
            {
                Some(activity.graph_id)
            }
            _ => None,
        })
        .collect();
    assert_eq!(graph, vec![Some(42)]);
    // Kernel a's hlo_op is its own stat's (a reference); kernel b and the
    // device-to-device copy lie within the XLA Ops event [10,300, 11,000);
    // the other copy starts before it, the rest after.
    let label = |op: &str| BTreeMap::from([("hlo_op".to_owned(), op.to_owned())]);
    assert_eq!(
        labels(&events),
        BTreeMap::from([
            (11, label("fusion.1 from the ref")),
            (12, label("fusion.2")),
            (16, label("fusion.2"))
        ])
    );
}

#[test]
fn without_a_task_environment_line_timestamps_are_used_as_written() {
    let mut space = synthetic();
    space.planes.retain(|plane| plane.name != "Task Environment");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-environment.xplane.pb");
    std::fs::write(&path, space.encode_to_vec()).unwrap();
    let (events, summary) = import(&[path], Detail::Kernel);
    let starts: BTreeSet<u128> = gpu_activities(&events).iter().map(|activity| activity.1).collect();
    assert_eq!(starts.first(), Some(&10_000));
    assert_eq!(starts.last(), Some(&14_100));
    let notes = summary.traces[0]["notes"].to_string();
    assert!(notes.contains("no Task Environment start time"), "{notes}");
}
