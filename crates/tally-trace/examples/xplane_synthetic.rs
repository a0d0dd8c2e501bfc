//! Writes a large synthetic XPlane profile, for measuring the import's
//! speed and memory: `cargo run --release -p tally-trace --example
//! xplane_synthetic -- OUT.xplane.pb KERNELS [PYTHON]`. One GPU plane with four
//! streams of back-to-back kernels (each with `correlation_id`,
//! `kernel_details`, `hlo_op`, `hlo_module` and `tf_op` stats, as XLA
//! writes them), one host thread of `cuLaunchKernel` calls linked to them,
//! and a Task Environment plane; with PYTHON, that many host events per
//! kernel on a `python3` line (what the Python tracer records, which the
//! import reads past).

#![allow(clippy::unwrap_used, reason = "a tool: it fails by panicking")]

use std::collections::HashMap;

use prost::Message;
use tally_trace::xplane::proto::{
    XEvent, XEventData, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata, XStatValue,
};

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args.next().expect("usage: xplane_synthetic OUT.xplane.pb KERNELS");
    let kernels: i64 = args.next().map_or(700_000, |text| text.parse().unwrap());
    let python: i64 = args.next().map_or(0, |text| text.parse().unwrap());
    let names = ["correlation_id", "kernel_details", "hlo_op", "hlo_module", "tf_op"];
    let mut stat_metadata: HashMap<i64, XStatMetadata> = names
        .iter()
        .enumerate()
        .map(|(id, name)| {
            (id as i64 + 1, XStatMetadata { id: id as i64 + 1, name: (*name).into(), ..Default::default() })
        })
        .collect();
    // 64 distinct ops and their strings, referred to by ref_value.
    for op in 0..64 {
        let id = 100 + op;
        stat_metadata.insert(id, XStatMetadata { id, name: format!("fusion.{op}"), ..Default::default() });
    }
    stat_metadata.insert(
        200,
        XStatMetadata { id: 200, name: "regs:32 static_shared:0 grid:1,1,1".into(), ..Default::default() },
    );
    stat_metadata.insert(201, XStatMetadata { id: 201, name: "jit_train_step".into(), ..Default::default() });
    let event_metadata: HashMap<i64, XEventMetadata> = (0..64)
        .map(|op| {
            (
                op + 1,
                XEventMetadata { id: op + 1, name: format!("loop_fusion_{op}_kernel"), ..Default::default() },
            )
        })
        .collect();
    let stat = |id: i64, value: XStatValue| XStat { metadata_id: id, value: Some(value) };
    let mut streams: Vec<XLine> = (0..4)
        .map(|stream| XLine {
            id: 10 + stream,
            name: format!("Stream #{}(Compute)", 10 + stream),
            timestamp_ns: 1_000,
            ..Default::default()
        })
        .collect();
    let mut python_line = XLine { id: 8, name: "python3".into(), timestamp_ns: 900, ..Default::default() };
    let mut launches = XLine { id: 7, name: "python3".into(), timestamp_ns: 900, ..Default::default() };
    for index in 0..kernels {
        let op = index % 64;
        let correlation = index as u64 + 1;
        // Each stream runs its kernels back to back, 3,000.5 ns each.
        let slot = index / 4;
        streams[(index % 4) as usize].events.push(XEvent {
            metadata_id: op + 1,
            data: Some(XEventData::OffsetPs(slot * 3_000_500)),
            duration_ps: 3_000_500,
            stats: vec![
                stat(1, XStatValue::Uint64Value(correlation)),
                stat(2, XStatValue::RefValue(200)),
                stat(3, XStatValue::RefValue(100 + op as u64)),
                stat(4, XStatValue::RefValue(201)),
                stat(5, XStatValue::RefValue(100 + op as u64)),
            ],
        });
        for call in 0..python {
            python_line.events.push(XEvent {
                metadata_id: 2 + (call % 8),
                data: Some(XEventData::OffsetPs(slot * 3_000_500 + call * 1_000)),
                duration_ps: 500,
                stats: vec![],
            });
        }
        launches.events.push(XEvent {
            metadata_id: 1,
            data: Some(XEventData::OffsetPs(slot * 3_000_500)),
            duration_ps: 2_000_000,
            stats: vec![stat(1, XStatValue::Uint64Value(correlation))],
        });
    }
    let gpu = XPlane {
        id: 1,
        name: "/device:GPU:0".into(),
        lines: streams,
        event_metadata,
        stat_metadata: stat_metadata.clone(),
        stats: vec![],
    };
    let host = XPlane {
        id: 0,
        name: "/host:CPU".into(),
        lines: vec![launches, python_line],
        event_metadata: (0..9)
            .map(|id| {
                let name =
                    if id == 0 { "cuLaunchKernel".to_owned() } else { format!("$model.py:{id} forward") };
                (id + 1, XEventMetadata { id: id + 1, name, ..Default::default() })
            })
            .collect(),
        stat_metadata: HashMap::from([(
            1,
            XStatMetadata { id: 1, name: "correlation_id".into(), ..Default::default() },
        )]),
        stats: vec![],
    };
    let environment = XPlane {
        name: "Task Environment".into(),
        stat_metadata: HashMap::from([(
            1,
            XStatMetadata { id: 1, name: "profile_start_time".into(), ..Default::default() },
        )]),
        stats: vec![stat(1, XStatValue::Uint64Value(1_700_000_000_000_000_000))],
        ..Default::default()
    };
    let space = XSpace {
        planes: vec![gpu, host, environment],
        hostnames: vec!["synthetic".into()],
        ..Default::default()
    };
    std::fs::write(&out, space.encode_to_vec()).unwrap();
}
