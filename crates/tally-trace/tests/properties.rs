//! Properties of the import over generated traces: exact nanoseconds from
//! any decimal spelling, and per-device busy and summed time equal to an
//! independent union of the generated events, wherever the header keys sit
//! and whatever malformed events are mixed in.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

mod common;

use std::collections::BTreeMap;
use std::io::Write;

use common::*;
use proptest::prelude::*;
use serde_json::Value;
use tally_trace::Detail;
use tally_trace::decimal::micros_to_nanos;

/// Microseconds with three decimals, as Kineto writes them.
fn spell(ns: u64, style: u8) -> String {
    let (whole, fraction) = (ns / 1000, ns % 1000);
    match style % 4 {
        0 => format!("{whole}.{fraction:03}"),
        // Trailing zeros beyond the nanosecond change nothing.
        1 => format!("{whole}.{fraction:03}000"),
        // Scientific notation: digits of nanoseconds, exponent -3.
        2 => format!("{ns}e-3"),
        _ if fraction == 0 => format!("{whole}"),
        _ => format!("{whole}.{fraction:03}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_spelling_of_a_nanosecond_count_reads_back_exactly(ns in any::<u64>(), style in 0u8..4) {
        let nanos = micros_to_nanos(&spell(ns, style)).unwrap();
        prop_assert_eq!(nanos.value, ns);
        prop_assert!(!nanos.rounded);
    }

    #[test]
    fn sub_nanosecond_digits_round_to_the_nearest(ns in 0u64..1 << 60, extra in 1u32..1000) {
        let text = format!("{}.{:03}{extra:03}", ns / 1000, ns % 1000);
        let nanos = micros_to_nanos(&text).unwrap();
        let nearest = if extra > 500 || (extra == 500 && ns % 2 == 1) { ns + 1 } else { ns };
        prop_assert_eq!(nanos.value, nearest);
        prop_assert!(nanos.rounded);
    }
}

#[derive(Debug, Clone)]
struct Event {
    device: u64,
    stream: u64,
    start: u64,
    duration: u64,
    correlation: u64,
    style: u8,
}

fn events() -> impl Strategy<Value = Vec<Event>> {
    let base = 1_700_000_000_000_000_000u64;
    prop::collection::vec(
        (0u64..3, 0u64..4, 0u64..5_000_000, 0u64..400_000, 0u64..6, any::<u8>()).prop_map(
            move |(device, stream, start, duration, correlation, style)| Event {
                device,
                stream,
                start: base + start,
                duration,
                correlation,
                style,
            },
        ),
        1..40,
    )
}

fn trace_text(events: &[Event], base_first: bool, junk: bool) -> String {
    let mut items: Vec<String> = Vec::new();
    for (index, event) in events.iter().enumerate() {
        let cat = ["kernel", "gpu_memcpy", "Gpu_Memset", "Kernel"][index % 4];
        let correlation = if event.correlation == 0 {
            String::new()
        } else {
            format!(r#", "correlation": {}"#, event.correlation)
        };
        items.push(format!(
            "{{\"args\": {{\"stream\": {}, \"device\": {}{correlation}, \"grid\": [1, 2]}},\n \"ph\":\"X\",\"cat\":\"{cat}\",\"name\":\"k\\\"{index}\",\"pid\":{},\"tid\":7,\"ts\":{},  \"dur\" : {}}}",
            event.stream,
            event.device,
            event.device,
            spell(event.start, event.style),
            spell(event.duration, event.style / 4),
        ));
        if junk {
            items.push(
                r#"{"ph": "X", "cat": "kernel", "name": "bad", "pid": 0, "tid": 7, "ts": 5, "dur": -0.001}"#
                    .into(),
            );
            items.push(r#"{"ph": "i", "s": "g", "name": "instant", "ts": 1}"#.into());
        }
    }
    let events = items.join(",\n");
    let base = r#""baseTimeNanoseconds": 1000000000000"#;
    let info = r#""INFO": ["a", {"nested": [1, 2, {"x": "]}"}]}]"#;
    if base_first {
        format!("{{{base}, \"traceEvents\": [{events}], {info}}}")
    } else {
        format!("{{\"schemaVersion\": 1, {info}, \"traceEvents\": [{events}], {base}}}")
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn busy_and_summed_time_equal_an_independent_union(
        events in events(),
        base_first in any::<bool>(),
        junk in any::<bool>(),
    ) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(trace_text(&events, base_first, junk).as_bytes()).unwrap();
        let (records, summary) = import(&[file.path().to_path_buf()], Detail::Kernel);
        let skipped = &summary.traces[0]["skipped_events"];
        if junk {
            prop_assert_eq!(skipped["negative dur"].as_u64(), Some(events.len() as u64));
        } else {
            prop_assert_eq!(skipped, &serde_json::json!({}));
        }
        let mut expected: BTreeMap<u64, Vec<(u128, u128)>> = BTreeMap::new();
        for event in &events {
            let start = 1_000_000_000_000 + u128::from(event.start);
            expected.entry(event.device).or_default().push((start, start + u128::from(event.duration)));
        }
        let figures = device_figures(&records);
        prop_assert_eq!(figures.len(), expected.len());
        for (device, intervals) in expected {
            let suffix = format!(":device{device}");
            let (_, &(busy, summed)) = figures.iter().find(|((uuid, _), _)| uuid.ends_with(&suffix)).unwrap();
            prop_assert_eq!(busy, union_length(&intervals));
            prop_assert_eq!(summed, intervals.iter().map(|(s, e)| e - s).sum::<u128>());
        }
    }
}

/// Small real traces for the parallel-import properties.
const SMALL_TRACES: [&str; 6] = [
    "kineto/sampled-rank-0.json.gz",
    "kineto/sampled-rank-1.json.gz",
    "kineto/triton-single-kernel.json.gz",
    "kineto/inference-rank-1-minimal.json.gz",
    "kineto/alexnet-cuda-sync.json.gz",
    "kineto/rocm-mi250-train.json.gz",
];

fn import_with(paths: &[std::path::PathBuf], threads: usize) -> (Vec<String>, Value) {
    let mut options = options(Detail::Launch);
    options.threads = threads;
    let (events, summary) = tally_trace::import_traces_to_vec(paths, &options).unwrap();
    (events.iter().map(|event| format!("{event:?}")).collect(), summary.to_json())
}

/// A dry import's summary on `threads` threads, or its error.
fn dry_with(paths: &[std::path::PathBuf], threads: usize) -> Result<Value, String> {
    let mut options = options(Detail::Launch);
    options.threads = threads;
    let inputs = paths
        .iter()
        .map(|path| tally_trace::open_input(path, Some(tally_trace::InputKind::Trace)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| error.to_string())?;
    tally_trace::import_dry(inputs, &options)
        .map(|summary| summary.to_json())
        .map_err(|error| error.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Traces read on 2, 3 or 8 threads give the records, in the same order,
    /// and the summary of one at a time; another order of the same files
    /// gives the same records of each file and the same per-trace summaries.
    #[test]
    fn threads_and_file_order_change_nothing(
        order in Just(SMALL_TRACES.to_vec()).prop_shuffle(),
        count in 2usize..=SMALL_TRACES.len(),
        threads in proptest::sample::select(vec![2usize, 3, 8]),
    ) {
        let paths: Vec<_> = order[..count].iter().map(|name| fixture(name)).collect();
        let (one, one_summary) = import_with(&paths, 1);
        let (several, several_summary) = import_with(&paths, threads);
        prop_assert_eq!(&one, &several);
        prop_assert_eq!(&one_summary, &several_summary);
        // A dry run builds the same records and drops them where it built
        // them: the same summary, on one thread or several.
        prop_assert_eq!(dry_with(&paths, 1), Ok(one_summary.clone()));
        prop_assert_eq!(dry_with(&paths, threads), Ok(one_summary.clone()));
        let mut sorted_paths = paths.clone();
        sorted_paths.sort();
        let (canonical, canonical_summary) = import_with(&sorted_paths, threads);
        // The last record is the capabilities record, whose summary lists
        // the traces in the order given.
        let set = |records: &[String]| {
            let mut records = records[..records.len() - 1].to_vec();
            records.sort();
            records
        };
        prop_assert_eq!(set(&one), set(&canonical));
        let traces = |summary: &Value| {
            let mut traces: Vec<String> =
                summary["traces"].as_array().unwrap().iter().map(Value::to_string).collect();
            traces.sort();
            traces
        };
        prop_assert_eq!(traces(&one_summary), traces(&canonical_summary));
    }
}

/// The records an import on `threads` threads passed on before it failed,
/// and its error.
fn failure_with(paths: &[std::path::PathBuf], threads: usize) -> String {
    let mut options = options(Detail::Launch);
    options.threads = threads;
    let mut records = 0u64;
    let error = tally_trace::import_traces(paths, &options, &mut |_| {
        records += 1;
        Ok(())
    })
    .unwrap_err();
    format!("{records} {error}")
}

#[test]
fn a_failing_trace_fails_the_parallel_import_as_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, r#"{"traceEvents": [{"ph": "X", "ts": 01}]}"#).unwrap();
    let paths = [fixture(SMALL_TRACES[0]), broken, fixture(SMALL_TRACES[1])];
    let messages: Vec<String> = [1, 2, 3].into_iter().map(|threads| failure_with(&paths, threads)).collect();
    assert!(messages[0].contains("broken.json: invalid JSON at byte"), "{}", messages[0]);
    assert_eq!(messages[1], messages[0]);
    assert_eq!(messages[2], messages[0]);
    let error = messages[0].split_once(' ').unwrap().1;
    for threads in [1, 2, 3] {
        assert_eq!(dry_with(&paths, threads).unwrap_err(), error, "a dry run on {threads} threads");
    }
}

/// A plain trace of at least `SPLIT_MIN_BYTES` is read on two threads when
/// the import has one to spare: the records, the summary and, for the same
/// trace cut short, the error are those of one thread. (The reader's own
/// property tests move the split point everywhere; this one checks the
/// import takes that path on a real trace and changes nothing.)
#[test]
fn a_large_plain_trace_read_on_two_threads_reads_as_on_one() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("large-20k-kernels.json");
    let mut text = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(
            std::fs::File::open(fixture("kineto/large-20k-kernels.json.gz")).unwrap(),
        ),
        &mut text,
    )
    .unwrap();
    assert!(text.len() as u64 >= 16 << 20, "the fixture is large enough to be split");
    std::fs::write(&plain, &text).unwrap();
    let paths = [plain.clone()];
    let (one, one_summary) = import_with(&paths, 1);
    let (two, two_summary) = import_with(&paths, 2);
    assert!(one.len() > 10_000);
    assert_eq!(one, two);
    assert_eq!(one_summary, two_summary);

    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() * 3 / 4]).unwrap();
    let messages: Vec<String> =
        [1, 2].into_iter().map(|threads| failure_with(std::slice::from_ref(&cut), threads)).collect();
    assert!(messages[0].contains("cut.json"), "{}", messages[0]);
    assert_eq!(messages[1], messages[0]);
}

/// Each record as its number in the import and its full event, in batches
/// of at most 100.
struct Numbered;

impl tally_trace::RecordBatcher for Numbered {
    type Batch = Vec<(u64, String)>;

    fn batch(&self) -> Self::Batch {
        Vec::new()
    }

    fn add(
        &self,
        batch: &mut Self::Batch,
        number: u64,
        record: tally_trace::TraceRecord<'_>,
    ) -> Result<bool, tally_trace::SinkError> {
        let event = record.into_event().map_err(|error| error.to_string())?;
        batch.push((number, format!("{event:?}")));
        Ok(batch.len() == 100)
    }
}

/// The numbered records a batched import of `path` on `threads` threads
/// passed on, and its summary or error.
fn batched_with(path: &std::path::Path, threads: usize) -> (Vec<(u64, String)>, Result<Value, String>) {
    let mut options = options(Detail::Launch);
    options.threads = threads;
    let input = tally_trace::open_input(path, Some(tally_trace::InputKind::Trace)).unwrap();
    let mut records = Vec::new();
    let outcome = tally_trace::import_in_batches(vec![input], &options, &Numbered, &mut |batch, before| {
        records.extend(batch.into_iter().map(|(number, event)| (before + number, event)));
        Ok(())
    });
    (records, outcome.map(|summary| summary.to_json()).map_err(|error| error.to_string()))
}

/// A trace imported alone makes its activity records on every thread it
/// has, a chunk each in turn: the records, their numbers and order, the
/// summary, and for a trace that fails part way, the records passed on
/// before the error and the error itself, are those of one thread.
#[test]
fn one_trace_made_on_several_threads_is_made_as_on_one() {
    for name in ["kineto/large-20k-kernels.json.gz", SMALL_TRACES[0], SMALL_TRACES[4]] {
        let path = fixture(name);
        let (one, one_summary) = batched_with(&path, 1);
        assert!(one_summary.is_ok(), "{name}: {one_summary:?}");
        assert!(
            (1..=one.len() as u64).eq(one.iter().map(|(number, _)| *number)),
            "{name}: numbered in order"
        );
        for threads in [2, 3] {
            let (several, several_summary) = batched_with(&path, threads);
            assert_eq!(several_summary, one_summary, "{name} on {threads} threads");
            assert!(several == one, "{name} on {threads} threads: other records");
        }
    }
    // Activity records past the first chunks, one of whose timestamps does
    // not fit once the trace's base time is added: the import fails there.
    let dir = tempfile::tempdir().unwrap();
    let failing = dir.path().join("failing.json");
    let mut events: Vec<String> = (0..6000)
        .map(|index| {
            format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "k{index}", "pid": 0, "tid": 7, "ts": {}, "dur": 1, "args": {{"device": 0, "stream": 7}}}}"#,
                1000 + index
            )
        })
        .collect();
    events[4500] = r#"{"ph": "X", "cat": "kernel", "name": "late", "pid": 0, "tid": 7, "ts": 18446744073709000, "dur": 1, "args": {"device": 0, "stream": 7}}"#.into();
    let text =
        format!(r#"{{"baseTimeNanoseconds": 1000000000000, "traceEvents": [{}]}}"#, events.join(",\n"));
    std::fs::write(&failing, text).unwrap();
    let (one, one_error) = batched_with(&failing, 1);
    assert!(one_error.as_ref().is_err_and(|error| error.contains("failing.json")), "{one_error:?}");
    assert!(one.len() > 2048, "the error comes past the first chunk: {} records first", one.len());
    for threads in [2, 3] {
        let (several, several_error) = batched_with(&failing, threads);
        assert_eq!(several_error, one_error, "on {threads} threads");
        assert!(several == one, "on {threads} threads: other records before the error");
    }
}
