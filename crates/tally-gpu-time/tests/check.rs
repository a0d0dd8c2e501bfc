//! The accounting and the overlap breakdown, case by case, in the
//! `check(input, expected)` style: each test is one small run written as
//! text (the cases are in `check_cases.txt`, a test each), turned into a
//! JSONL run (one `infer.*` record per line), resolved
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

/// The cases: `check_cases.txt` (its first lines say how it is written).
const CASES: &str = include_str!("check_cases.txt");

/// Every case's (name, input, expected rendering), in file order.
fn cases() -> Vec<(&'static str, String, String)> {
    let mut cases = Vec::new();
    for block in CASES.split("\n== ").skip(1) {
        let (name, rest) = block.split_once('\n').unwrap_or((block, ""));
        let (input, expected) =
            rest.split_once("\n--\n").unwrap_or_else(|| panic!("case {name}: no `--` line"));
        cases.push((name.trim(), format!("{input}\n"), expected.to_owned()));
    }
    cases
}

/// A `#[test]` per case named, and one that every case in the file is named.
macro_rules! check_cases {
    ($($name:ident)*) => {
        $(
            #[test]
            fn $name() {
                let (_, input, expected) = cases()
                    .into_iter()
                    .find(|(name, _, _)| *name == stringify!($name))
                    .expect("the case is in check_cases.txt");
                check(&input, &expected);
            }
        )*

        #[test]
        fn every_case_has_its_test() {
            let names: Vec<&str> = cases().into_iter().map(|(name, _, _)| name).collect();
            assert_eq!(names, [$(stringify!($name)),*]);
        }
    };
}

check_cases! {
    no_overlap full_overlap_counts_once_in_busy_time partial_overlap the_same_record_twice_counts_once
    two_streams two_device_clocks_are_kept_apart an_iterations_elapsed_time_is_its_span
    no_elapsed_time_without_an_end_or_on_a_wall_clock an_activity_without_an_iteration_is_unattributed
    an_iteration_on_two_device_clocks intervals_replace_the_span
    a_zero_length_activity_counts_and_covers_nothing unmeasured_gpu_activity
    communication_partly_overlapped_partly_exposed communication_hidden_behind_compute_is_not_exposed
    communication_alone_is_all_exposed memory_by_direction_under_and_beside_compute
    communication_while_memory category_patterns_come_first
    launch_latency_and_idle_causes_through_a_clock_alignment
    a_launch_on_the_devices_own_clock_needs_no_alignment
}
