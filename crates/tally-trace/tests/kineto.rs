//! Importing the real Kineto traces of `tests/fixtures/kineto/` and
//! hand-made ones, checked against independent readings of the raw JSON.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;

use common::*;
use serde_json::Value;
use tally_core::{ActivityDomain, ClockKind, CorrelationEvent, EventBody};
use tally_trace::{Detail, TraceErrorKind, import_traces_to_vec};

const TRACES: [&str; 8] = [
    "alexnet-cuda-sync.json.gz",
    "inference-rank-1-minimal.json.gz",
    "nccl-distributed.json.gz",
    "ns-resolution-rank-0.json.gz",
    "rocm-mi250-train.json.gz",
    "sampled-rank-0.json.gz",
    "sampled-rank-1.json.gz",
    "triton-single-kernel.json.gz",
];

type Intervals = Vec<(u128, u128)>;

fn kineto(name: &str) -> PathBuf {
    fixture(&format!("kineto/{name}"))
}

fn gpu_activities(events: &[CorrelationEvent]) -> impl Iterator<Item = &CorrelationEvent> {
    events.iter().filter(
        |event| matches!(event.body(), EventBody::ActivityRef(a) if a.activity_domain == ActivityDomain::Gpu),
    )
}

#[test]
fn every_trace_imports_and_busy_time_matches_the_raw_events() {
    for name in TRACES {
        let path = kineto(name);
        let raw = read_raw(&path);
        for detail in [Detail::Launch, Detail::Kernel] {
            let (events, summary) = import(std::slice::from_ref(&path), detail);
            let trace = &summary.traces[0];
            assert_eq!(trace["skipped_events"], serde_json::json!({}), "{name}");
            assert_eq!(trace["gpu_events"], raw.gpu.len(), "{name}");
            let figures = device_figures(&events);
            let devices: BTreeSet<u64> = raw.gpu.iter().map(|event| event.device.unwrap()).collect();
            assert_eq!(figures.len(), devices.len(), "{name}: one device clock per device");
            for device in devices {
                let mine: Vec<&RawSpan> =
                    raw.gpu.iter().filter(|event| event.device == Some(device)).collect();
                let intervals: Vec<(u128, u128)> =
                    mine.iter().map(|event| (raw.base + event.start, raw.base + event.end)).collect();
                let busy = union_length(&intervals);
                // A launch record's summed time is the union of its own
                // events, so the raw figure is unioned per launch.
                let mut per_launch: BTreeMap<(Option<u64>, usize), Intervals> = BTreeMap::new();
                for (index, event) in mine.iter().enumerate() {
                    let key = match (detail, event.correlation) {
                        (Detail::Launch, Some(id)) => (Some(id), 0),
                        _ => (None, index),
                    };
                    per_launch.entry(key).or_default().push((event.start, event.end));
                }
                let summed: u128 = per_launch.values().map(|list| union_length(list)).sum();
                let uuid_suffix = format!(":device{device}");
                let (_, &(tally_busy, tally_summed)) = figures
                    .iter()
                    .find(|((uuid, _), _)| uuid.ends_with(&uuid_suffix))
                    .unwrap_or_else(|| panic!("{name}: no clock for device {device}"));
                assert_eq!(tally_busy, busy, "{name} device {device} busy ({detail:?})");
                assert_eq!(tally_summed, summed, "{name} device {device} summed ({detail:?})");
                let reported = &trace["devices"][device.to_string()];
                assert_eq!(u128::from(reported["busy_ns"].as_u64().unwrap()), busy, "{name}");
            }
        }
    }
}

#[test]
fn profiler_steps_become_iterations_holding_their_launches() {
    for name in [
        "nccl-distributed.json.gz",
        "ns-resolution-rank-0.json.gz",
        "sampled-rank-0.json.gz",
        "rocm-mi250-train.json.gz",
    ] {
        let path = kineto(name);
        let raw = read_raw(&path);
        let (events, summary) = import(std::slice::from_ref(&path), Detail::Launch);
        let mut expected: BTreeMap<Option<String>, Vec<(u128, u128)>> = BTreeMap::new();
        for event in &raw.gpu {
            expected.entry(raw.iteration_of(event)).or_default().push((event.start, event.end));
        }
        assert!(expected.keys().any(Option::is_some), "{name} has linked GPU work");
        let figures = iteration_figures(&events);
        let expected: BTreeMap<Option<String>, (u128, u128)> = expected
            .into_iter()
            .map(|(key, list)| {
                let summed = list.iter().map(|(start, end)| end - start).sum();
                (key, (union_length(&list), summed))
            })
            .collect();
        assert_eq!(figures, expected, "{name}");
        // Each ProfilerStep is an iteration with its exact span, on the
        // host clock, produced by the trace's own producer.
        let iterations: BTreeMap<String, (u64, u64)> = events
            .iter()
            .filter_map(|event| match event.body() {
                EventBody::Iteration(iteration) => {
                    assert_eq!(event.context().clock_kind, ClockKind::Monotonic);
                    assert_eq!(iteration.iteration_ref.producer_id(), summary.traces[0]["producer_id"]);
                    let (start, end) = iteration.span.bounds().unwrap();
                    Some((iteration.iteration_ref.id().to_owned(), (start, end)))
                }
                _ => None,
            })
            .collect();
        let steps: BTreeMap<String, (u64, u64)> = raw
            .steps
            .iter()
            .map(|step| {
                let span = ((raw.base + step.start) as u64, (raw.base + step.end) as u64);
                (step.name.clone(), span)
            })
            .collect();
        assert_eq!(iterations, steps, "{name}");
    }
}

#[test]
fn busy_time_agrees_with_hta_where_the_definitions_coincide() {
    let golden: Value =
        serde_json::from_str(&std::fs::read_to_string(kineto("hta_golden.json")).unwrap()).unwrap();
    for name in TRACES {
        let expected = &golden["traces"][name];
        let path = kineto(name);
        let raw = read_raw(&path);
        let (events, _) = import(std::slice::from_ref(&path), Detail::Kernel);
        let intervals: Vec<(u64, u64)> = gpu_activities(&events)
            .map(|event| match event.body() {
                EventBody::ActivityRef(activity) => activity.span.bounds().unwrap(),
                _ => unreachable!(),
            })
            .collect();
        let busy_ns =
            union_length(&intervals.iter().map(|&(s, e)| (u128::from(s), u128::from(e))).collect::<Vec<_>>());
        let hta_busy_us = expected["merged_busy_us"].as_f64().unwrap();
        if expected["float_timestamps"] == false {
            // Whole microseconds: HTA's merge and tally's union agree exactly.
            assert_eq!(busy_ns, hta_busy_us as u128 * 1000, "{name}");
        } else {
            // HTA reads timestamps as float64 and rounds fractional ones
            // inward (start up, end = ts + dur down, to whole microseconds)
            // before merging. Doing exactly that to the raw events
            // reproduces HTA's figure, so the difference from tally's exact
            // union is HTA's rounding alone.
            let rounded: Vec<(i128, i128)> = raw
                .gpu
                .iter()
                .map(|event| {
                    let ts: f64 = event.ts_text.parse().unwrap();
                    let dur: f64 = event.dur_text.parse().unwrap();
                    (ts.ceil() as i128, (ts + dur).floor() as i128)
                })
                .collect();
            assert_eq!(hta_merge(rounded) as f64, hta_busy_us, "{name}");
            assert!(busy_ns as f64 > hta_busy_us * 1000.0, "{name}: rounding inward only shrinks");
            // tally's records are the raw events to the nanosecond.
            let exact: Vec<(u64, u64)> = raw
                .gpu
                .iter()
                .map(|event| ((raw.base + event.start) as u64, (raw.base + event.end) as u64))
                .collect();
            assert_eq!(intervals, exact, "{name}");
        }
    }
}

/// HTA's `merge_kernel_intervals`: sort by start, a new group when a start
/// passes every earlier end, each group from its least start to its
/// greatest end.
fn hta_merge(mut intervals: Vec<(i128, i128)>) -> i128 {
    intervals.sort();
    let mut total = 0;
    let mut group: Option<(i128, i128)> = None;
    let mut reach = i128::MIN;
    for (start, end) in intervals {
        match group {
            Some((first, last)) if start <= reach => group = Some((first, last.max(end))),
            _ => {
                if let Some((first, last)) = group {
                    total += last - first;
                }
                group = Some((start, end));
            }
        }
        reach = reach.max(end);
    }
    total + group.map_or(0, |(first, last)| last - first)
}

#[test]
fn the_capitalised_minimal_trace_and_the_rocm_trace_import() {
    let (events, summary) = import(&[kineto("inference-rank-1-minimal.json.gz")], Detail::Launch);
    let trace = &summary.traces[0];
    assert_eq!(trace["gpu_events"], 4);
    assert_eq!(trace["runtime_calls"], 8);
    // Every kernel's `Runtime` launch was found, on process 1010370.
    let launched: Vec<&str> = gpu_activities(&events)
        .map(|event| event.metadata().get("launch_api").and_then(Value::as_str).unwrap())
        .collect();
    assert_eq!(launched, vec!["cudaLaunchKernel"; 4]);
    assert!(gpu_activities(&events).all(|event| event.context().pid == Some(1_010_370)));

    let (events, summary) = import(&[kineto("rocm-mi250-train.json.gz")], Detail::Launch);
    let trace = &summary.traces[0];
    assert_eq!(trace["backend"], "roctracer");
    assert_eq!(trace["ignored_events"]["gpu_user_annotation"], 2);
    assert_eq!(trace["linked_gpu_events"], 16);
    let base = 1_735_632_360_000_000_000u64;
    assert!(gpu_activities(&events).all(|event| event.body().span().unwrap().start_ns().unwrap() > base));
}

#[test]
fn rank_files_import_into_one_run_with_separate_producers_and_clocks() {
    let paths = [kineto("sampled-rank-0.json.gz"), kineto("sampled-rank-1.json.gz")];
    let (events, summary) = import(&paths, Detail::Launch);
    assert_eq!(summary.traces.len(), 2);
    let ids: BTreeSet<(&str, &str)> = events
        .iter()
        .map(|event| (event.context().producer_id.as_str(), event.event_id().as_str()))
        .collect();
    assert_eq!(ids.len(), events.len(), "event IDs are unique per producer");
    let producers: BTreeSet<&str> = events.iter().map(|event| event.context().producer_id.as_str()).collect();
    assert_eq!(producers.len(), 3, "one per file and the import's own");
    assert!(events.iter().all(|event| event.context().run_id.as_str() == "run-test"));
    let clocks = device_figures(&events);
    assert_eq!(clocks.len(), 2);
    let domains: BTreeSet<&String> = clocks.keys().map(|(_, domain)| domain).collect();
    assert_eq!(domains.len(), 2, "each rank's device clock is its own");
    // Both ranks have a ProfilerStep#551; they are two iterations.
    let steps: Vec<_> = events
        .iter()
        .filter_map(|event| match event.body() {
            EventBody::Iteration(iteration) if iteration.iteration_ref.id() == "ProfilerStep#551" => {
                Some(iteration.iteration_ref.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(steps.len(), 2);
    assert_ne!(steps[0], steps[1]);
    let ranks: BTreeSet<Option<u64>> = gpu_activities(&events).map(|event| event.context().rank).collect();
    assert_eq!(ranks, BTreeSet::from([Some(0), Some(1)]));
    assert!(gpu_activities(&events).all(|event| event.context().world_size.map(|n| n.get()) == Some(128)));
    // The artifact's identity comes first and the collector's record last.
    assert_eq!(events.first().unwrap().event_type().as_str(), "infer.artifact");
    let last = events.last().unwrap();
    let EventBody::Capabilities(capabilities) = last.body() else { panic!("last is not capabilities") };
    assert_eq!(capabilities.component().as_str(), "trace_collector");
    assert_eq!(last.metadata().get("summary").unwrap()["traces"].as_array().unwrap().len(), 2);
}

fn write_trace(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

fn kernel(ts: &str, dur: &str, correlation: u64, device: u64) -> String {
    format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "k{correlation}", "pid": {device}, "tid": 7, "ts": {ts}, "dur": {dur},
            "args": {{"device": {device}, "stream": 7, "correlation": {correlation}}}}}"#
    )
}

fn launch(pid: u64, ts: &str, correlation: u64, name: &str) -> String {
    format!(
        r#"{{"ph": "X", "cat": "cuda_runtime", "name": "{name}", "pid": {pid}, "tid": {pid}, "ts": {ts}, "dur": 1,
            "args": {{"correlation": {correlation}}}}}"#
    )
}

fn step(pid: u64, name: &str, ts: &str, dur: &str) -> String {
    format!(
        r#"{{"ph": "X", "cat": "user_annotation", "name": "{name}", "pid": {pid}, "tid": {pid}, "ts": {ts}, "dur": {dur}}}"#
    )
}

fn import_text(
    text: &str,
    detail: Detail,
) -> Result<(Vec<CorrelationEvent>, tally_trace::ImportSummary), tally_trace::TraceError> {
    let file = write_trace(text);
    import_traces_to_vec(&[file.path().to_path_buf()], &options(detail))
}

#[test]
fn seventeen_digit_timestamps_keep_every_nanosecond() {
    let text = format!(
        r#"{{"traceEvents": [{}, {}], "baseTimeNanoseconds": 1000}}"#,
        kernel("12345678901234567.891", "0.001", 1, 0),
        kernel("12345678901234567.892", "1.5", 2, 0),
    );
    let (events, _) = import_text(&text, Detail::Launch).unwrap();
    let spans: Vec<(u64, u64)> =
        gpu_activities(&events).map(|event| event.body().span().unwrap().bounds().unwrap()).collect();
    assert_eq!(
        spans,
        vec![
            (12_345_678_901_234_567_891 + 1000, 12_345_678_901_234_567_892 + 1000),
            (12_345_678_901_234_567_892 + 1000, 12_345_678_901_234_569_392 + 1000)
        ]
    );
}

#[test]
fn correlation_ids_reused_by_another_process_never_link() {
    let text = format!(
        "[{}, {}, {}, {}, {}, {}]",
        step(10, "ProfilerStep#1", "0", "1000"),
        step(20, "ProfilerStep#1", "0", "1000"),
        launch(10, "100", 5, "cudaLaunchKernel"),
        launch(20, "100", 5, "cudaLaunchKernel"),
        launch(10, "200", 6, "cudaLaunchKernel"),
        kernel("300", "10", 5, 0) + ", " + &kernel("400", "10", 6, 0),
    );
    let (events, summary) = import_text(&text, Detail::Launch).unwrap();
    let trace = &summary.traces[0];
    assert_eq!(trace["unresolved_gpu_events"]["launch_in_several_processes"], 1);
    assert_eq!(trace["linked_gpu_events"], 1);
    let linked: Vec<(u64, Option<String>)> = gpu_activities(&events)
        .map(|event| match event.body() {
            EventBody::ActivityRef(activity) => (
                activity.cuda_correlation_id.unwrap(),
                activity.iteration_ref.as_ref().map(|r| r.id().to_owned()),
            ),
            _ => unreachable!(),
        })
        .collect();
    // The two processes' ProfilerStep#1 are two iterations: the second is `~2`.
    assert_eq!(linked, vec![(5, None), (6, Some("ProfilerStep#1".to_owned()))]);
    let iterations = events.iter().filter(|event| matches!(event.body(), EventBody::Iteration(_))).count();
    assert_eq!(iterations, 2);
}

#[test]
fn a_graph_launch_is_one_record_with_its_busy_intervals() {
    let text = format!(
        "[{}, {}, {}, {}, {}]",
        step(10, "ProfilerStep#3", "0", "1000"),
        launch(10, "50", 9, "cudaGraphLaunch"),
        kernel("100", "10", 9, 0),
        kernel("105", "10", 9, 0),
        kernel("200", "20", 9, 0),
    );
    let (events, summary) = import_text(&text, Detail::Launch).unwrap();
    let records: Vec<&CorrelationEvent> = gpu_activities(&events).collect();
    assert_eq!(records.len(), 1);
    let record = records[0];
    assert_eq!(record.schema_version(), 3);
    assert_eq!(
        record.metadata().get("intervals").unwrap(),
        &serde_json::json!([[0, 15_000], [100_000, 20_000]])
    );
    assert_eq!(record.metadata().get("busy_ns").unwrap(), 35_000);
    assert_eq!(summary.traces[0]["graph_gpu_events"], 3);
    let (events, _) = import_text(&text, Detail::Kernel).unwrap();
    assert_eq!(gpu_activities(&events).count(), 3);
}

#[test]
fn malformed_events_are_counted_and_malformed_files_are_errors() {
    let text = format!(
        "[{}, {}, {}, {}]",
        r#"{"ph": "X", "cat": "kernel", "name": "no dur", "pid": 0, "tid": 7, "ts": 5, "args": {"device": 0}}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "no ts", "pid": 0, "tid": 7, "dur": 5, "args": {"device": 0}}"#,
        r#"{"ph": "X", "cat": "kernel", "name": "negative", "pid": 0, "tid": 7, "ts": 5, "dur": -1, "args": {"device": 0}}"#,
        kernel("10", "2", 1, 0),
    );
    let (events, summary) = import_text(&text, Detail::Launch).unwrap();
    assert_eq!(gpu_activities(&events).count(), 1);
    assert_eq!(
        summary.traces[0]["skipped_events"],
        serde_json::json!({"missing dur": 1, "missing ts": 1, "negative dur": 1})
    );

    let error = import_text(r#"{"traceEvents": [{"ph": "X",, }]}"#, Detail::Launch).unwrap_err();
    assert!(matches!(error.kind(), TraceErrorKind::Json { .. }), "{error}");
    let error = import_text(r#"{"traceEvents": [{"ph": "X"}, {"ph""#, Detail::Launch).unwrap_err();
    assert!(matches!(error.kind(), TraceErrorKind::Truncated { .. }), "{error}");
    assert!(error.to_string().contains("truncated"), "{error}");
    let error =
        import_text(r#"{"schema_version": 2, "event_type": "infer.iteration"}"#, Detail::Launch).unwrap_err();
    assert!(matches!(error.kind(), TraceErrorKind::NotChromeTrace(_)), "{error}");
    let error = import_text("", Detail::Launch).unwrap_err();
    assert!(matches!(error.kind(), TraceErrorKind::NotChromeTrace(_)), "{error}");

    // A gzip trace cut in half.
    let bytes = std::fs::read(kineto("sampled-rank-0.json.gz")).unwrap();
    let mut file = tempfile::Builder::new().suffix(".json.gz").tempfile().unwrap();
    file.write_all(&bytes[..bytes.len() / 2]).unwrap();
    let error = import_traces_to_vec(&[file.path().to_path_buf()], &options(Detail::Launch)).unwrap_err();
    assert!(matches!(error.kind(), TraceErrorKind::Gzip(_) | TraceErrorKind::Truncated { .. }), "{error}");
    assert!(error.to_string().contains(&*file.path().to_string_lossy()), "{error}");
}

#[test]
fn detection_is_by_content() {
    let trace = write_trace(r#"{"schemaVersion": 1, "deviceProperties": [], "traceEvents": []}"#);
    assert_eq!(
        tally_trace::detect_format(trace.path()).unwrap(),
        Some(tally_trace::TraceFormat::KinetoJson { gzip: false })
    );
    let artifact = write_trace("{\"context\": {}, \"event_type\": \"infer.artifact\"}\n");
    assert_eq!(tally_trace::detect_format(artifact.path()).unwrap(), None);
    assert_eq!(
        tally_trace::detect_format(&kineto("sampled-rank-0.json.gz")).unwrap(),
        Some(tally_trace::TraceFormat::KinetoJson { gzip: true })
    );
}

#[test]
fn sums_past_64_bits_are_rejected_not_wrapped() {
    // Two kernels of one launch, each 9.3e18 ns: each fits, their sum does not.
    let text =
        format!("[{}, {}]", kernel("0", "9300000000000000", 1, 0), kernel("0", "9300000000000000", 1, 0));
    for detail in [Detail::Launch, Detail::Kernel] {
        let error = import_text(&text, detail).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error.kind(), TraceErrorKind::SumOutOfRange { .. }), "{message}");
        assert!(message.contains("18600000000000000000 ns"), "{detail:?}: {message}");
        assert!(message.contains("beyond the 2^64 ns"), "{message}");
    }
    // One of them alone is fine.
    let text = format!("[{}]", kernel("0", "9300000000000000", 1, 0));
    assert!(import_text(&text, Detail::Launch).is_ok());
}

/// A repeated key keeps its last value, as Python's json (and so stormlog)
/// reads it: the last `traceEvents`, the last `dur` of an event, the last
/// `baseTimeNanoseconds`.
#[test]
fn repeated_keys_keep_their_last_value() {
    let first = kernel("10", "5", 1, 0);
    let second = kernel("100", "7", 2, 0);
    let text =
        format!(r#"{{"traceEvents": [{first}], "baseTimeNanoseconds": 50, "traceEvents": [{second}]}}"#);
    let (events, summary) = import_text(&text, Detail::Launch).unwrap();
    let spans: Vec<(u64, u64)> =
        gpu_activities(&events).map(|event| event.body().span().unwrap().bounds().unwrap()).collect();
    assert_eq!(spans, [(100_050, 107_050)], "only the last traceEvents counts");
    assert_eq!(summary.traces[0]["gpu_events"], 1);
    let twice = r#"[{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 1, "dur": 3,
                     "args": {"device": 0, "stream": 7, "correlation": 1}}]"#;
    let (events, _) = import_text(twice, Detail::Launch).unwrap();
    let spans: Vec<(u64, u64)> =
        gpu_activities(&events).map(|event| event.body().span().unwrap().bounds().unwrap()).collect();
    assert_eq!(spans, [(10_000, 13_000)], "the event is kept, with its last dur");
    let base =
        format!(r#"{{"baseTimeNanoseconds": 7, "traceEvents": [{first}], "baseTimeNanoseconds": null}}"#);
    let (events, _) = import_text(&base, Detail::Launch).unwrap();
    let spans: Vec<(u64, u64)> =
        gpu_activities(&events).map(|event| event.body().span().unwrap().bounds().unwrap()).collect();
    assert_eq!(spans, [(10_000, 15_000)], "the last baseTimeNanoseconds (null) counts");
}

/// The summary's device entries of a trace's summary, by key.
fn summary_devices(summary: &tally_trace::ImportSummary, trace: usize) -> serde_json::Map<String, Value> {
    summary.traces[trace]["devices"].as_object().unwrap().clone()
}

#[test]
fn device_properties_name_each_device_with_its_capability_and_memory() {
    // PyTorch's traces give no UUID: each device keeps a synthesized one but
    // is named, as the raw deviceProperties say.
    for name in ["alexnet-cuda-sync.json.gz", "rocm-mi250-train.json.gz", "triton-single-kernel.json.gz"] {
        let raw: Value = serde_json::from_str(&read_text(&kineto(name))).unwrap();
        let properties: BTreeMap<String, &Value> = raw["deviceProperties"]
            .as_array()
            .unwrap()
            .iter()
            .map(|device| (device["id"].to_string(), device))
            .collect();
        let (_, summary) = import(&[kineto(name)], Detail::Launch);
        let devices = summary_devices(&summary, 0);
        assert!(!devices.is_empty(), "{name}");
        for (key, device) in devices {
            let raw = properties[&key];
            assert_eq!(device["name"], raw["name"], "{name} {key}");
            let capability = format!("{}.{}", raw["computeMajor"], raw["computeMinor"]);
            assert_eq!(device["compute_capability"].as_str(), Some(capability.as_str()), "{name} {key}");
            assert_eq!(device["total_memory_bytes"], raw["totalGlobalMem"], "{name} {key}");
            assert_eq!(device["device_uuid_source"], "synthesized", "{name} {key}");
            assert!(device["device_uuid"].as_str().unwrap().ends_with(&format!(":device{key}")), "{device}");
        }
    }
}

#[test]
fn a_device_properties_uuid_is_the_devices_uuid_as_nvml_writes_it() {
    let header = r#""deviceProperties": [
        {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045231616, "computeMajor": 9,
         "computeMinor": 0, "uuid": "B15C2A5742ED1D242C84067081698645"},
        {"id": 1, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045231616, "computeMajor": 9,
         "computeMinor": 0},
        {"id": 2, "name": "NVIDIA H100 80GB HBM3", "uuid": "not-a-uuid"}]"#;
    let text = format!(
        r#"{{{header}, "traceEvents": [{}, {}, {}]}}"#,
        kernel("10", "5", 1, 0),
        kernel("20", "5", 2, 1),
        kernel("30", "5", 3, 2)
    );
    let (first, second) = (write_trace(&text), write_trace(&text));
    let paths = [first.path().to_path_buf(), second.path().to_path_buf()];
    let (events, summary) = import(&paths, Detail::Launch);
    let uuids_of = |trace: usize| -> BTreeMap<String, (String, String)> {
        summary_devices(&summary, trace)
            .into_iter()
            .map(|(key, device)| {
                let uuid = device["device_uuid"].as_str().unwrap().to_owned();
                (key, (uuid, device["device_uuid_source"].as_str().unwrap().to_owned()))
            })
            .collect()
    };
    let (one, two) = (uuids_of(0), uuids_of(1));
    let nvml = "GPU-b15c2a57-42ed-1d24-2c84-067081698645";
    assert_eq!(one["0"], (nvml.to_owned(), "trace".to_owned()));
    assert_eq!(one["1"].1, "synthesized");
    assert_eq!(one["2"].1, "synthesized", "an unreadable uuid is not used");
    // The same GPU in two files is one device; two files' device 1 without
    // a UUID are two.
    assert_eq!(one["0"], two["0"]);
    assert_ne!(one["1"].0, two["1"].0);
    assert_eq!(summary_devices(&summary, 0)["0"]["compute_capability"], "9.0");
    let contexts: BTreeSet<&str> = gpu_activities(&events)
        .filter_map(|event| event.context().device_uuid.as_ref().map(|uuid| uuid.as_str()))
        .collect();
    assert!(contexts.contains(nvml), "{contexts:?}");
    assert_eq!(contexts.len(), 5, "one GPU shared by both files, four synthesized: {contexts:?}");
    let notes = summary.traces[0]["notes"].as_array().unwrap();
    assert!(notes.iter().any(|note| note.as_str().unwrap().contains("not-a-uuid")), "{notes:?}");
}
