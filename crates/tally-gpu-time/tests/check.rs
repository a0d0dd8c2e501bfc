//! The accounting and the overlap breakdown, case by case, in the
//! `check(input, expected)` style: each test is one small run written as
//! text, turned into a JSONL run (one `infer.*` record per line), resolved
//! with tally-resolve, and measured with [`account_gpu_time`] and
//! [`breakdown`]; the figures are rendered as text and compared with the
//! expected text, whose every number was worked out by hand from the
//! input.
//!
//! # The input
//!
//! One item per line (`#` starts a comment); times are nanoseconds, a span
//! `START..END` (`START..` when the end is not known):
//!
//! - `iteration ID SPAN [wall]`: an iteration of producer `engine` on the
//!   host's monotonic clock `host` (or a wall clock);
//! - `KIND ID DEVICE@DOMAIN SPAN [KEY=VALUE]...`: a GPU activity of kind
//!   `KIND` on device `DEVICE` (none when empty) and clock domain `DOMAIN`,
//!   a device clock unless `clock=monotonic` or `clock=wall`; keys `name`,
//!   `stream`, `iter` (the iteration it is linked to), `corr` (its CUDA
//!   correlation ID) and `intervals` (`OFFSET+LENGTH,...`: its busy time
//!   inside the span, `metadata.intervals` of schema 3);
//! - `runtime ID DOMAIN SPAN [KEY=VALUE]...`: a runtime call on the host's
//!   monotonic clock `DOMAIN`, keys `name` and `corr`;
//! - `align FROM TO OFFSET UNCERTAINTY`: a clock alignment, `TO = FROM +
//!   OFFSET`;
//! - `pattern CATEGORY=GLOB`: a user's category pattern.
//!
//! # The rendering
//!
//! Per device clock (`DEVICE DOMAIN KIND`): count, summed and busy time of
//! the accounting; the busy envelope and the idle time inside it with its
//! causes; each stream; each category with activities and each memory kind
//! with activities; the three overlaps (when two categories have
//! activities); exposed communication and memory (when either has
//! activities); launch latency (when a launch was linked). Per iteration:
//! its elapsed time, then per device clock its figures and categories.
//! Then the unattributed and the unmeasured activities. Figures the
//! accounting and the breakdown both give are checked equal, and both
//! resolvers must give the same text.

use std::fmt::Write;

use serde_json::{Value, json};
use tally_core::{InferenceRecord, parse_inference_record};
use tally_gpu_time::breakdown::{Breakdown, BreakdownOptions, Categories, MemoryKinds, Overlaps, breakdown};
use tally_gpu_time::category::{Category, CategoryRules};
use tally_gpu_time::{GpuTime, account_gpu_time};
use tally_resolve::{ResolvedEvidence, resolve_inference_events, resolve_streaming};

/// The context of one clock: one session per clock, so that no two
/// contexts share a session.
fn context(producer: &str, device: Option<&str>, domain: &str, kind: &str) -> Value {
    json!({"run_id": "run", "session_id": format!("{}@{domain}/{kind}", device.unwrap_or("")),
           "producer_id": producer, "source": "check", "clock_domain": domain, "clock_kind": kind,
           "collection_mode": "imported", "provenance": "observed", "device_uuid": device})
}

fn span(text: &str) -> (Value, Value) {
    let (start, end) = text.split_once("..").unwrap_or_else(|| panic!("a span START..END: {text}"));
    let number = |text: &str| -> Value {
        if text.is_empty() {
            Value::Null
        } else {
            json!(text.parse::<u64>().unwrap_or_else(|_| panic!("a time: {text}")))
        }
    };
    (number(start), number(end))
}

fn number(text: &str) -> u64 {
    text.parse().unwrap_or_else(|_| panic!("a number: {text}"))
}

/// `KEY=VALUE` words.
fn keys<'a>(words: &[&'a str]) -> Vec<(&'a str, &'a str)> {
    words.iter().map(|word| word.split_once('=').unwrap_or_else(|| panic!("KEY=VALUE: {word}"))).collect()
}

/// An activity record from its parts and `KEY=VALUE` words.
fn activity(id: &str, kind: &str, domain: &str, context: Value, span_text: &str, words: &[&str]) -> Value {
    let (start, end) = span(span_text);
    let mut record = json!({"schema_version": 2, "event_type": "infer.activity_ref", "event_id": id,
        "context": context, "activity_ref": {"producer_id": "trace", "id": id},
        "activity_kind": kind, "activity_domain": domain, "attribution_status": "unresolved",
        "start_ns": start, "end_ns": end, "metadata": {}});
    for (key, value) in keys(words) {
        match key {
            "name" => record["metadata"]["name"] = json!(value),
            "stream" => record["stream_id"] = json!(number(value)),
            "corr" => record["cuda_correlation_id"] = json!(number(value)),
            "iter" => {
                record["iteration_ref"] = json!({"producer_id": "engine", "id": value});
                record["attribution_status"] = json!("linked");
            }
            "intervals" => {
                let pairs: Vec<Value> = value
                    .split(',')
                    .map(|pair| {
                        let (offset, length) = pair.split_once('+').expect("OFFSET+LENGTH");
                        json!([number(offset), number(length)])
                    })
                    .collect();
                record["metadata"]["intervals"] = json!(pairs);
                record["schema_version"] = json!(3);
            }
            "clock" => {}
            _ => panic!("unknown key {key}"),
        }
    }
    record
}

/// The JSONL run of an input, and the category rules it names.
fn jsonl(input: &str) -> (String, CategoryRules) {
    let mut lines = String::new();
    let mut rules = CategoryRules::new();
    for line in input.lines().map(|line| line.split('#').next().unwrap_or("").trim()) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let record = match words.as_slice() {
            [] => continue,
            ["pattern", text] => {
                rules = rules.with_pattern_text(text).expect("a valid pattern");
                continue;
            }
            ["iteration", id, span_text, rest @ ..] => {
                let kind = if rest == ["wall"] { "wall" } else { "monotonic" };
                let (start, end) = span(span_text);
                json!({"schema_version": 2, "event_type": "infer.iteration", "event_id": id,
                       "context": context("engine", None, "host", kind),
                       "iteration_ref": {"producer_id": "engine", "id": id},
                       "start_ns": start, "end_ns": end})
            }
            ["align", from, to, offset, uncertainty] => {
                json!({"schema_version": 2, "event_type": "infer.clock_alignment",
                       "event_id": format!("align-{from}-{to}"),
                       "context": context("engine", None, from, "monotonic"),
                       "from_clock_domain": from, "to_clock_domain": to,
                       "offset_ns": offset.parse::<i64>().expect("an offset"),
                       "uncertainty_ns": number(uncertainty)})
            }
            ["runtime", id, domain, span_text, rest @ ..] => activity(
                id,
                "cuda_runtime",
                "runtime",
                context("trace", None, domain, "monotonic"),
                span_text,
                rest,
            ),
            [kind, id, clock, span_text, rest @ ..] => {
                let (device, domain) = clock.split_once('@').expect("DEVICE@DOMAIN");
                let clock_kind =
                    keys(rest).into_iter().find(|(key, _)| *key == "clock").map_or("device", |(_, v)| v);
                let device = (!device.is_empty()).then_some(device);
                activity(id, kind, "gpu", context("trace", device, domain, clock_kind), span_text, rest)
            }
            _ => panic!("not an input line: {line}"),
        };
        lines.push_str(&record.to_string());
        lines.push('\n');
    }
    (lines, rules)
}

fn records(jsonl: &str) -> Vec<InferenceRecord> {
    jsonl
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).expect("JSON");
            parse_inference_record(value).unwrap_or_else(|error| panic!("{line}: {error}"))
        })
        .collect()
}

fn time(time: &GpuTime) -> String {
    format!("count {}, summed {}, busy {}", time.activity_count, time.summed_activity_ns, time.busy_ns)
}

/// The category, overlap and exposed lines of one row.
fn categories(
    out: &mut String,
    indent: &str,
    categories: &Categories,
    overlaps: &Overlaps,
    exposed: (u64, u64),
    memory: Option<&MemoryKinds>,
) {
    let mut present = 0;
    for category in Category::ALL {
        let figures = categories.get(category);
        if figures.count > 0 {
            present += 1;
            let (count, summed, busy) = (figures.count, figures.summed_ns, figures.busy_ns);
            writeln!(out, "{indent}{}: count {count}, summed {summed}, busy {busy}", category.as_str())
                .expect("a string");
        }
    }
    if let Some(memory) = memory {
        let kinds = [
            ("memcpy_htod", &memory.memcpy_htod),
            ("memcpy_dtoh", &memory.memcpy_dtoh),
            ("memcpy_dtod", &memory.memcpy_dtod),
            ("memcpy_ptop", &memory.memcpy_ptop),
            ("memcpy_unspecified", &memory.memcpy_unspecified),
            ("memset", &memory.memset),
            ("other", &memory.other),
        ];
        for (name, figures) in kinds.into_iter().filter(|(_, figures)| figures.count > 0) {
            let (count, summed, busy) = (figures.count, figures.summed_ns, figures.busy_ns);
            writeln!(out, "{indent}memory/{name}: count {count}, summed {summed}, busy {busy}")
                .expect("a string");
        }
    }
    if present >= 2 {
        writeln!(
            out,
            "{indent}overlap: communication&compute {}, memory&compute {}, communication&memory {}",
            overlaps.communication_compute, overlaps.memory_compute, overlaps.communication_memory
        )
        .expect("a string");
    }
    if categories.communication.count > 0 || categories.memory.count > 0 {
        writeln!(out, "{indent}exposed: communication {}, memory {}", exposed.0, exposed.1)
            .expect("a string");
    }
}

fn span_text(start: Option<u64>, end: Option<u64>) -> String {
    match (start, end) {
        (Some(start), Some(end)) => format!("{start}..{end}"),
        _ => "none".to_owned(),
    }
}

/// The rendering of one resolved run (see the module docs).
fn render(graph: &impl ResolvedEvidence, rules: &CategoryRules) -> String {
    let accounting = account_gpu_time(graph);
    let result: Breakdown = breakdown(graph, &BreakdownOptions { rules: rules.clone(), by_iteration: true });
    assert_eq!(result.devices.len(), accounting.device_totals.len(), "one breakdown row per device clock");
    let mut out = String::new();
    for (device, total) in result.devices.iter().zip(&accounting.device_totals) {
        let clock = total.clock;
        assert_eq!(
            (device.device_uuid.as_str(), device.clock_domain.as_str(), device.clock_kind),
            (clock.device_uuid, clock.clock_domain, clock.clock_kind)
        );
        let breakdown_time = GpuTime {
            summed_activity_ns: device.summed_ns,
            busy_ns: device.busy_ns,
            activity_count: device.count,
        };
        assert_eq!(breakdown_time, total.time, "the breakdown's figures are the accounting's");
        assert_eq!(total.detail.envelope, device.envelope_start_ns.zip(device.envelope_end_ns));
        let idle = &device.idle;
        assert_eq!(idle.idle_ns, total.detail.idle_gaps.total_ns);
        assert_eq!(
            idle.launch_queued_ns + idle.sync_wait_ns + idle.unknown_ns + idle.host_bound_ns,
            idle.idle_ns
        );
        writeln!(
            out,
            "{} {} {}: {}",
            clock.device_uuid,
            clock.clock_domain,
            clock.clock_kind.as_str(),
            time(&total.time)
        )
        .expect("a string");
        let envelope = span_text(device.envelope_start_ns, device.envelope_end_ns);
        if idle.idle_ns == 0 {
            writeln!(out, "  envelope {envelope}, idle 0").expect("a string");
        } else {
            writeln!(
                out,
                "  envelope {envelope}, idle {} in {} gaps: queued {}, sync {}, unknown {}, host-bound {}",
                idle.idle_ns,
                idle.gap_count,
                idle.launch_queued_ns,
                idle.sync_wait_ns,
                idle.unknown_ns,
                idle.host_bound_ns
            )
            .expect("a string");
        }
        assert_eq!(device.streams.len(), total.detail.streams.len());
        for (stream, busy) in device.streams.iter().zip(&total.detail.streams) {
            let stream_time = GpuTime {
                summed_activity_ns: stream.summed_ns,
                busy_ns: stream.busy_ns,
                activity_count: stream.count,
            };
            assert_eq!(
                (stream.stream_id, stream_time),
                (busy.stream_id, busy.time),
                "the accounting's stream"
            );
            let envelope = span_text(stream.envelope_start_ns, stream.envelope_end_ns);
            writeln!(out, "  stream {}: {}, envelope {envelope}", stream.stream_id, time(&stream_time))
                .expect("a string");
        }
        let exposed = (device.exposed_communication_ns, device.exposed_memory_ns);
        categories(&mut out, "  ", &device.categories, &device.overlap_ns, exposed, Some(&device.memory));
        let latency = &device.launch_latency;
        assert_eq!(latency.linked + latency.unlinked, device.count);
        if latency.linked > 0 {
            let shown = |value: Option<i64>| value.map_or("none".to_owned(), |value| value.to_string());
            writeln!(
                out,
                "  launch: linked {}, unlinked {}, min {}, median {}, p90 {}, p99 {}, max {}, summed {}, uncertainty {}",
                latency.linked,
                latency.unlinked,
                shown(latency.min_ns),
                shown(latency.median_ns),
                shown(latency.p90_ns),
                shown(latency.p99_ns),
                shown(latency.max_ns),
                latency.summed_ns,
                latency.clock_uncertainty_ns
            )
            .expect("a string");
        }
    }
    for iteration in &accounting.iterations {
        let elapsed = iteration.elapsed_ns.map_or("none".to_owned(), |elapsed| elapsed.to_string());
        writeln!(out, "iteration {}: elapsed {elapsed}", iteration.iteration_ref.id()).expect("a string");
        for (clock, iteration_time) in &iteration.gpu {
            writeln!(
                out,
                "  {} {} {}: {}",
                clock.device_uuid,
                clock.clock_domain,
                clock.clock_kind.as_str(),
                time(iteration_time)
            )
            .expect("a string");
            let device = result
                .devices
                .iter()
                .find(|device| {
                    (device.device_uuid.as_str(), device.clock_domain.as_str(), device.clock_kind)
                        == (clock.device_uuid, clock.clock_domain, clock.clock_kind)
                })
                .expect("the iteration's device clock");
            let row = device
                .iterations
                .iter()
                .flatten()
                .find(|row| &row.iteration_ref == iteration.iteration_ref)
                .expect("the breakdown's row of the iteration");
            let row_time = GpuTime {
                summed_activity_ns: row.summed_ns,
                busy_ns: row.busy_ns,
                activity_count: row.count,
            };
            assert_eq!(&row_time, iteration_time, "the breakdown's iteration figures are the accounting's");
            let exposed = (row.exposed_communication_ns, row.exposed_memory_ns);
            categories(&mut out, "    ", &row.categories, &row.overlap_ns, exposed, None);
        }
    }
    let ids =
        |refs: &[&tally_core::EntityRef]| refs.iter().map(|item| item.id()).collect::<Vec<_>>().join(", ");
    if !accounting.unattributed_activity_refs.is_empty() {
        writeln!(out, "unattributed: {}", ids(&accounting.unattributed_activity_refs)).expect("a string");
    }
    if !accounting.unmeasured_gpu_activity_refs.is_empty() {
        writeln!(out, "unmeasured: {}", ids(&accounting.unmeasured_gpu_activity_refs)).expect("a string");
    }
    out
}

/// Removes the indentation the lines share, and blank first and last lines.
fn trim_indent(text: &str) -> String {
    let indent = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = text.lines().map(|line| line.get(indent..).unwrap_or("").trim_end()).collect();
    let first = lines.iter().position(|line| !line.is_empty()).unwrap_or(lines.len());
    let last = lines.iter().rposition(|line| !line.is_empty()).map_or(first, |last| last + 1);
    lines[first..last].iter().map(|line| format!("{line}\n")).collect()
}

/// Runs `input` (see the module docs) and compares its rendering with
/// `expected`, through both resolvers.
#[track_caller]
fn check(input: &str, expected: &str) {
    let (jsonl, rules) = jsonl(input);
    let records = records(&jsonl);
    let graph = resolve_inference_events(&records).expect("the run resolves");
    let actual = render(&graph, &rules);
    let expected = trim_indent(expected);
    assert!(actual == expected, "\n--- expected\n{expected}--- actual\n{actual}--- run\n{jsonl}");
    let streamed = resolve_streaming(&records).expect("the run resolves, streamed");
    assert_eq!(render(&streamed, &rules), actual, "the streaming resolver's rendering");
}

#[test]
fn no_overlap() {
    check(
        "
        kernel k1 GPU-0@cuda:0 0..100
        kernel k2 GPU-0@cuda:0 200..300
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 200, busy 200
          envelope 0..300, idle 100 in 1 gaps: queued 0, sync 0, unknown 100, host-bound 0
          compute: count 2, summed 200, busy 200
        unattributed: k1, k2
        ",
    );
}

#[test]
fn full_overlap_counts_once_in_busy_time() {
    check(
        "
        kernel k1 GPU-0@cuda:0 0..100
        kernel k2 GPU-0@cuda:0 20..60
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 140, busy 100
          envelope 0..100, idle 0
          compute: count 2, summed 140, busy 100
        unattributed: k1, k2
        ",
    );
}

#[test]
fn partial_overlap() {
    check(
        "
        kernel k1 GPU-0@cuda:0 0..100
        kernel k2 GPU-0@cuda:0 50..150
        kernel k3 GPU-0@cuda:0 300..400
        ",
        "
        GPU-0 cuda:0 device: count 3, summed 300, busy 250
          envelope 0..400, idle 150 in 1 gaps: queued 0, sync 0, unknown 150, host-bound 0
          compute: count 3, summed 300, busy 250
        unattributed: k1, k2, k3
        ",
    );
}

#[test]
fn the_same_record_twice_counts_once() {
    check(
        "
        kernel k1 GPU-0@cuda:0 0..100
        kernel k1 GPU-0@cuda:0 0..100
        kernel k2 GPU-0@cuda:0 50..150
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 200, busy 150
          envelope 0..150, idle 0
          compute: count 2, summed 200, busy 150
        unattributed: k1, k2
        ",
    );
}

#[test]
fn two_streams() {
    // k4 names no stream: it counts for the device only.
    check(
        "
        kernel k1 GPU-0@cuda:0 0..100 stream=7
        kernel k2 GPU-0@cuda:0 50..150 stream=8
        kernel k3 GPU-0@cuda:0 200..250 stream=7
        kernel k4 GPU-0@cuda:0 260..270
        ",
        "
        GPU-0 cuda:0 device: count 4, summed 260, busy 210
          envelope 0..270, idle 60 in 2 gaps: queued 0, sync 0, unknown 60, host-bound 0
          stream 7: count 2, summed 150, busy 150, envelope 0..250
          stream 8: count 1, summed 100, busy 100, envelope 50..150
          compute: count 4, summed 260, busy 210
        unattributed: k1, k2, k3, k4
        ",
    );
}

#[test]
fn two_device_clocks_are_kept_apart() {
    // One device on its own clock and on a host monotonic clock: on one
    // clock the two would be busy 150, not 100 + 100.
    check(
        "
        kernel k1 GPU-0@cuda:0 0..100
        kernel k2 GPU-0@host 50..150 clock=monotonic
        kernel k3 GPU-1@cuda:1 0..100
        ",
        "
        GPU-0 cuda:0 device: count 1, summed 100, busy 100
          envelope 0..100, idle 0
          compute: count 1, summed 100, busy 100
        GPU-0 host monotonic: count 1, summed 100, busy 100
          envelope 50..150, idle 0
          compute: count 1, summed 100, busy 100
        GPU-1 cuda:1 device: count 1, summed 100, busy 100
          envelope 0..100, idle 0
          compute: count 1, summed 100, busy 100
        unattributed: k1, k2, k3
        ",
    );
}

#[test]
fn an_iterations_elapsed_time_is_its_span() {
    // 5000 - 1000, whatever its kernels' times: they are on another clock.
    check(
        "
        iteration it-1 1000..5000
        kernel k1 GPU-0@cuda:0 1200..1300 iter=it-1
        kernel k2 GPU-0@cuda:0 1250..1400 iter=it-1
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 250, busy 200
          envelope 1200..1400, idle 0
          compute: count 2, summed 250, busy 200
        iteration it-1: elapsed 4000
          GPU-0 cuda:0 device: count 2, summed 250, busy 200
            compute: count 2, summed 250, busy 200
        ",
    );
}

#[test]
fn no_elapsed_time_without_an_end_or_on_a_wall_clock() {
    check(
        "
        iteration it-1 100..
        iteration it-2 100..900 wall
        iteration it-3 100..900
        kernel k1 GPU-0@cuda:0 0..10 iter=it-3
        ",
        "
        GPU-0 cuda:0 device: count 1, summed 10, busy 10
          envelope 0..10, idle 0
          compute: count 1, summed 10, busy 10
        iteration it-1: elapsed none
        iteration it-2: elapsed none
        iteration it-3: elapsed 800
          GPU-0 cuda:0 device: count 1, summed 10, busy 10
            compute: count 1, summed 10, busy 10
        ",
    );
}

#[test]
fn an_activity_without_an_iteration_is_unattributed() {
    // k2 names none: unattributed, of the device only. k3 names an unknown
    // iteration: attributed, yet in no iteration's row. r1, a runtime call,
    // is unattributed too, and no GPU time.
    check(
        "
        iteration it-1 0..1000
        kernel k1 GPU-0@cuda:0 0..100 iter=it-1
        kernel k2 GPU-0@cuda:0 50..250
        kernel k3 GPU-0@cuda:0 300..400 iter=it-9
        runtime r1 host 0..10
        ",
        "
        GPU-0 cuda:0 device: count 3, summed 400, busy 350
          envelope 0..400, idle 50 in 1 gaps: queued 0, sync 0, unknown 50, host-bound 0
          compute: count 3, summed 400, busy 350
        iteration it-1: elapsed 1000
          GPU-0 cuda:0 device: count 1, summed 100, busy 100
            compute: count 1, summed 100, busy 100
        unattributed: k2, r1
        ",
    );
}

#[test]
fn an_iteration_on_two_device_clocks() {
    check(
        "
        iteration it-1 0..500
        kernel k1 GPU-0@cuda:0 0..100 iter=it-1 name=ncclAllReduce
        kernel k2 GPU-0@cuda:0 50..150 iter=it-1
        kernel k3 GPU-1@cuda:1 0..100 iter=it-1
        kernel k4 GPU-1@cuda:1 300..400
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 200, busy 150
          envelope 0..150, idle 0
          compute: count 1, summed 100, busy 100
          communication: count 1, summed 100, busy 100
          overlap: communication&compute 50, memory&compute 0, communication&memory 0
          exposed: communication 50, memory 0
        GPU-1 cuda:1 device: count 2, summed 200, busy 200
          envelope 0..400, idle 200 in 1 gaps: queued 0, sync 0, unknown 200, host-bound 0
          compute: count 2, summed 200, busy 200
        iteration it-1: elapsed 500
          GPU-0 cuda:0 device: count 2, summed 200, busy 150
            compute: count 1, summed 100, busy 100
            communication: count 1, summed 100, busy 100
            overlap: communication&compute 50, memory&compute 0, communication&memory 0
            exposed: communication 50, memory 0
          GPU-1 cuda:1 device: count 1, summed 100, busy 100
            compute: count 1, summed 100, busy 100
        unattributed: k4
        ",
    );
}

#[test]
fn intervals_replace_the_span() {
    // k1's busy time is [0, 10) and [50, 70) of its span [0, 100): the
    // envelope ends at 70, and k2 lies inside k1's second interval.
    check(
        "
        kernel k1 GPU-0@cuda:0 0..100 intervals=0+10,50+20
        kernel k2 GPU-0@cuda:0 55..65
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 40, busy 30
          envelope 0..70, idle 40 in 1 gaps: queued 0, sync 0, unknown 40, host-bound 0
          compute: count 2, summed 40, busy 30
        unattributed: k1, k2
        ",
    );
}

#[test]
fn a_zero_length_activity_counts_and_covers_nothing() {
    // It widens its stream's envelope (as HTA reads a stream), not the
    // device's.
    check(
        "
        kernel k1 GPU-0@cuda:0 0..100 stream=1
        kernel k2 GPU-0@cuda:0 500..500 stream=1
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 100, busy 100
          envelope 0..100, idle 0
          stream 1: count 2, summed 100, busy 100, envelope 0..500
          compute: count 2, summed 100, busy 100
        unattributed: k1, k2
        ",
    );
}

#[test]
fn unmeasured_gpu_activity() {
    // No device, no end, a wall clock: listed, not measured.
    check(
        "
        kernel k1 GPU-0@cuda:0 0..100
        kernel k2 @cuda:0 0..100
        kernel k3 GPU-0@cuda:0 50..
        kernel k4 GPU-0@wall0 0..100 clock=wall
        ",
        "
        GPU-0 cuda:0 device: count 1, summed 100, busy 100
          envelope 0..100, idle 0
          compute: count 1, summed 100, busy 100
        unattributed: k1, k2, k3, k4
        unmeasured: k2, k3, k4
        ",
    );
}

#[test]
fn communication_partly_overlapped_partly_exposed() {
    check(
        "
        kernel c1 GPU-0@cuda:0 0..100 name=ncclAllReduce
        kernel k1 GPU-0@cuda:0 60..160 name=gemm
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 200, busy 160
          envelope 0..160, idle 0
          compute: count 1, summed 100, busy 100
          communication: count 1, summed 100, busy 100
          overlap: communication&compute 40, memory&compute 0, communication&memory 0
          exposed: communication 60, memory 0
        unattributed: c1, k1
        ",
    );
}

#[test]
fn communication_hidden_behind_compute_is_not_exposed() {
    check(
        "
        kernel k1 GPU-0@cuda:0 0..200 name=gemm
        kernel c1 GPU-0@cuda:0 50..150 name=ncclAllGather
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 300, busy 200
          envelope 0..200, idle 0
          compute: count 1, summed 200, busy 200
          communication: count 1, summed 100, busy 100
          overlap: communication&compute 100, memory&compute 0, communication&memory 0
          exposed: communication 0, memory 0
        unattributed: c1, k1
        ",
    );
}

#[test]
fn communication_alone_is_all_exposed() {
    // A kind with the word `collective` is communication without a name.
    check(
        "
        collective c1 GPU-0@cuda:0 0..100
        kernel c2 GPU-0@cuda:0 50..120 name=NCCL_broadcast
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 170, busy 120
          envelope 0..120, idle 0
          communication: count 2, summed 170, busy 120
          exposed: communication 120, memory 0
        unattributed: c1, c2
        ",
    );
}

#[test]
fn memory_by_direction_under_and_beside_compute() {
    // Memory busy [80, 140) and [200, 210): 70, of which [80, 100) under
    // compute. The device is busy [0, 140) and [200, 210).
    check(
        "
        kernel k1 GPU-0@cuda:0 0..100
        memcpy_htod m1 GPU-0@cuda:0 80..130
        memcpy m2 GPU-0@cuda:0 120..140 name=Memcpy_DtoH
        memset s1 GPU-0@cuda:0 200..210
        ",
        "
        GPU-0 cuda:0 device: count 4, summed 180, busy 150
          envelope 0..210, idle 60 in 1 gaps: queued 0, sync 0, unknown 60, host-bound 0
          compute: count 1, summed 100, busy 100
          memory: count 3, summed 80, busy 70
          memory/memcpy_htod: count 1, summed 50, busy 50
          memory/memcpy_dtoh: count 1, summed 20, busy 20
          memory/memset: count 1, summed 10, busy 10
          overlap: communication&compute 0, memory&compute 20, communication&memory 0
          exposed: communication 0, memory 50
        unattributed: k1, m1, m2, s1
        ",
    );
}

#[test]
fn communication_while_memory() {
    check(
        "
        kernel c1 GPU-0@cuda:0 0..100 name=ncclSend
        memcpy_ptop m1 GPU-0@cuda:0 50..150
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 200, busy 150
          envelope 0..150, idle 0
          communication: count 1, summed 100, busy 100
          memory: count 1, summed 100, busy 100
          memory/memcpy_ptop: count 1, summed 100, busy 100
          overlap: communication&compute 0, memory&compute 0, communication&memory 50
          exposed: communication 100, memory 100
        unattributed: c1, m1
        ",
    );
}

#[test]
fn category_patterns_come_first() {
    // Intervals that touch do not overlap and leave no gap.
    check(
        "
        pattern other=warmup*
        pattern communication=*ALLREDUCE*
        kernel k1 GPU-0@cuda:0 0..100 name=warmup_gemm
        kernel k2 GPU-0@cuda:0 100..200 name=fused_allreduce
        kernel k3 GPU-0@cuda:0 200..300 name=gemm
        ",
        "
        GPU-0 cuda:0 device: count 3, summed 300, busy 300
          envelope 0..300, idle 0
          compute: count 1, summed 100, busy 100
          communication: count 1, summed 100, busy 100
          other: count 1, summed 100, busy 100
          overlap: communication&compute 0, memory&compute 0, communication&memory 0
          exposed: communication 100, memory 0
        unattributed: k1, k2, k3
        ",
    );
}

#[test]
fn launch_latency_and_idle_causes_through_a_clock_alignment() {
    // On the device's clock (host + 1000): r1 launches k1 at 1000, r2 k2 at
    // 1280, s1 synchronises over [1200, 1260); k3's launch is not there.
    // The gap [1100, 1300) ends at k2, a linked launch: [1280, 1300) queued,
    // [1200, 1260) sync, the rest host-bound. Latencies 1050 - 1000 and
    // 1300 - 1280.
    check(
        "
        align host cuda:0 1000 5
        runtime r1 host 0..10 corr=1
        runtime r2 host 280..290 corr=2
        runtime s1 host 200..260 name=cudaDeviceSynchronize
        kernel k1 GPU-0@cuda:0 1050..1100 corr=1
        kernel k2 GPU-0@cuda:0 1300..1400 corr=2
        kernel k3 GPU-0@cuda:0 1400..1450 corr=99
        ",
        "
        GPU-0 cuda:0 device: count 3, summed 200, busy 200
          envelope 1050..1450, idle 200 in 1 gaps: queued 20, sync 60, unknown 0, host-bound 120
          compute: count 3, summed 200, busy 200
          launch: linked 2, unlinked 1, min 20, median 20, p90 50, p99 50, max 50, summed 70, uncertainty 5
        unattributed: k1, k2, k3, r1, r2, s1
        ",
    );
}

#[test]
fn a_launch_on_the_devices_own_clock_needs_no_alignment() {
    // r1 on cuda:0 itself; r2 on a host clock with no alignment: unlinked,
    // so the gap it would explain is unknown.
    check(
        "
        runtime r1 cuda:0 0..10 corr=1
        runtime r2 host 100..110 corr=2
        kernel k1 GPU-0@cuda:0 30..50 corr=1
        kernel k2 GPU-0@cuda:0 150..200 corr=2
        ",
        "
        GPU-0 cuda:0 device: count 2, summed 70, busy 70
          envelope 30..200, idle 100 in 1 gaps: queued 0, sync 0, unknown 100, host-bound 0
          compute: count 2, summed 70, busy 70
          launch: linked 1, unlinked 1, min 30, median 30, p90 30, p99 30, max 30, summed 30, uncertainty 0
        unattributed: k1, k2, r1, r2
        ",
    );
}
