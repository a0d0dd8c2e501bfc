//! The Chrome-trace timeline of imported traces: every nanosecond kept,
//! device work placed on the host clock through the trace's alignment, and
//! no two slices overlapping on one track.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tally_core::{ActivityDomain, CorrelationEvent, EventBody};
use tally_trace::{Detail, write_chrome_trace};

#[derive(Deserialize)]
struct Document<'a> {
    #[serde(rename = "otherData")]
    other: Value,
    #[serde(rename = "traceEvents", borrow)]
    events: Vec<Slice<'a>>,
}

#[derive(Deserialize)]
struct Slice<'a> {
    ph: String,
    pid: u64,
    tid: u64,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
    name: String,
    args: Value,
}

/// Busy intervals of the GPU records, in absolute nanoseconds.
fn gpu_intervals(events: &[CorrelationEvent]) -> BTreeSet<(u128, u128)> {
    events
        .iter()
        .filter(|event| matches!(event.body(), EventBody::ActivityRef(a) if a.activity_domain == ActivityDomain::Gpu))
        .flat_map(|event| {
            event.busy_intervals().unwrap().as_slice().iter().map(|i| (i.start_ns().into(), i.end_ns().into())).collect::<Vec<_>>()
        })
        .collect()
}

fn export(events: &[CorrelationEvent]) -> (tally_trace::ExportSummary, String) {
    let mut out = Vec::new();
    let summary = write_chrome_trace(events, &mut out).unwrap();
    (summary, String::from_utf8(out).unwrap())
}

#[test]
fn device_work_lands_on_the_host_clock_to_the_nanosecond() {
    for name in ["kineto/nccl-distributed.json.gz", "kineto/sampled-rank-0.json.gz", "nsys/full.sqlite"] {
        let (events, _) = import(&[fixture(name)], Detail::Launch);
        let (summary, text) = export(&events);
        let document: Document<'_> = serde_json::from_str(&text).unwrap();
        let origin: u128 = document.other["origin_ns"].as_str().unwrap().parse().unwrap();
        let gpu_records = events
            .iter()
            .filter(|event| matches!(event.body(), EventBody::ActivityRef(a) if a.activity_domain == ActivityDomain::Gpu))
            .count() as u64;
        assert_eq!(summary.placed_on_host, gpu_records, "{name}");
        assert_eq!(summary.unplaced, 0, "{name}");
        let mut device_slices = BTreeSet::new();
        let mut tracks: BTreeMap<(u64, u64), Vec<(u128, u128)>> = BTreeMap::new();
        for slice in document.events.iter().filter(|slice| slice.ph == "X") {
            let start = origin + micros_text_to_ns(slice.ts.unwrap().get());
            let end = start + micros_text_to_ns(slice.dur.unwrap().get());
            tracks.entry((slice.pid, slice.tid)).or_default().push((start, end));
            if slice.args.get("placed_on").is_some_and(Value::is_string) {
                assert_eq!(slice.args["uncertainty_ns"].as_u64().map(|u| u <= 1000), Some(true), "{name}");
                device_slices.insert((start, end));
            }
            assert!(!slice.name.is_empty());
        }
        // The trace's alignment has offset 0: the slices are the busy
        // intervals themselves.
        assert_eq!(device_slices, gpu_intervals(&events), "{name}");
        for (track, mut slices) in tracks {
            slices.sort_unstable();
            assert!(slices.windows(2).all(|pair| pair[0].1 <= pair[1].0), "{name}: overlap on {track:?}");
        }
    }
}

#[test]
fn without_an_alignment_device_work_stays_on_its_own_clock() {
    let (events, _) = import(&[fixture("kineto/rocm-mi250-train.json.gz")], Detail::Launch);
    let unaligned: Vec<CorrelationEvent> =
        events.into_iter().filter(|event| !matches!(event.body(), EventBody::ClockAlignment(_))).collect();
    let (summary, text) = export(&unaligned);
    assert_eq!(summary.placed_on_host, 0);
    assert_eq!(summary.unplaced, 16);
    let document: Document<'_> = serde_json::from_str(&text).unwrap();
    let unplaced =
        document.events.iter().filter(|slice| slice.args.get("placed_on") == Some(&Value::Null)).count();
    assert_eq!(unplaced, 16);
    let names: BTreeSet<&str> = document
        .events
        .iter()
        .filter(|slice| slice.ph == "M")
        .filter_map(|slice| slice.args["name"].as_str())
        .collect();
    assert!(names.iter().any(|name| name.starts_with("GPU ") && !name.contains(" on ")), "{names:?}");
    assert!(names.contains("iterations"));
}
