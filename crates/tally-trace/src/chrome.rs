//! Correlation events as a Chrome-trace JSON timeline that Perfetto and
//! `chrome://tracing` open.
//!
//! - One process per device clock (device UUID and clock domain), with a
//!   thread per stream; a launch record with `metadata.intervals` is drawn
//!   as its busy intervals, not as its whole span.
//! - One process per host clock domain, with threads for iterations,
//!   requests, stages and the runtime calls of each host thread.
//! - Device activity is placed on a host clock when `infer.clock_alignment`
//!   records allow it (directly or through a chain, with `tally-clock`); its
//!   args then carry `placed_on` and `uncertainty_ns`. Activity no alignment
//!   covers stays on its own clock (`placed_on: null`).
//! - Slices that overlap on one track are spread over lanes (`lane 2`, ...),
//!   since the JSON format draws only nested slices on one thread.
//! - Timestamps are microseconds with three decimals, written from integer
//!   nanoseconds relative to the earliest one (`otherData.origin_ns`), so a
//!   viewer's float parsing keeps every nanosecond.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use serde_json::{Map, Value, json};
use tally_clock::align_span;
use tally_core::{ActivityDomain, ClockKind, CorrelationEvent, EventBody};

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Slices written (metadata records not counted).
    pub slices: u64,
    /// Device activities placed on a host clock.
    pub placed_on_host: u64,
    /// Device activities left on their own clock (no alignment covers them).
    pub unplaced: u64,
    /// Events without both ends of their span, left out.
    pub incomplete: u64,
}

/// A track: a process and a thread name in it.
type Track = (String, String);

struct Slice {
    track: Track,
    name: String,
    category: String,
    start: i128,
    end: i128,
    args: Map<String, Value>,
}

/// Writes `events` as one Chrome-trace JSON document.
pub fn write_chrome_trace<W: Write>(events: &[CorrelationEvent], out: W) -> io::Result<ExportSummary> {
    let alignments: Vec<&CorrelationEvent> =
        events.iter().filter(|event| matches!(event.body(), EventBody::ClockAlignment(_))).collect();
    let host_domains: Vec<&str> = {
        let mut domains: Vec<&str> = events
            .iter()
            .filter(|event| event.context().clock_kind != ClockKind::Device && event.body().span().is_some())
            .map(|event| event.context().clock_domain.as_str())
            .collect();
        domains.sort_unstable();
        domains.dedup();
        domains
    };
    let mut summary = ExportSummary::default();
    let mut targets: HashMap<String, Option<String>> = HashMap::new();
    let mut slices: Vec<Slice> = Vec::new();
    for event in events {
        let Some(span) = event.body().span() else { continue };
        let Some((start, end)) = span.bounds() else {
            summary.incomplete += 1;
            continue;
        };
        let context = event.context();
        let domain = context.clock_domain.as_str();
        let mut args = Map::new();
        args.insert("event_id".into(), Value::from(event.event_id().as_str()));
        args.insert("producer_id".into(), Value::from(context.producer_id.as_str()));
        args.insert("clock_domain".into(), Value::from(domain));
        let host_process = |domain: &str| format!("host {domain}");
        let (track, name, category) = match event.body() {
            EventBody::Iteration(iteration) => {
                let id = iteration.iteration_ref.id().to_owned();
                args.insert("iteration".into(), Value::from(id.clone()));
                ((host_process(domain), "iterations".to_owned()), id, "iteration".to_owned())
            }
            EventBody::Request(request) => {
                let id = request.request_ref.id().to_owned();
                if let Some(status) = &request.status {
                    args.insert("status".into(), Value::from(status.as_str()));
                }
                ((host_process(domain), "requests".to_owned()), id, "request".to_owned())
            }
            EventBody::Stage(stage) => {
                if let Some(request) = &stage.request_ref {
                    args.insert("request".into(), Value::from(request.id()));
                }
                if let Some(iteration) = &stage.iteration_ref {
                    args.insert("iteration".into(), Value::from(iteration.id()));
                }
                ((host_process(domain), "stages".to_owned()), stage.name.to_string(), "stage".to_owned())
            }
            EventBody::ActivityRef(activity) => {
                let metadata = event.metadata();
                let name = ["first_name", "name"]
                    .iter()
                    .find_map(|key| metadata.get(key).and_then(Value::as_str))
                    .unwrap_or(activity.activity_kind.as_str())
                    .to_owned();
                if let Some(iteration) = &activity.iteration_ref {
                    args.insert("iteration".into(), Value::from(iteration.id()));
                }
                if let Some(reason) = metadata.get("unresolved_reason") {
                    args.insert("unresolved_reason".into(), reason.clone());
                }
                for (key, value) in [
                    ("cuda_correlation_id", activity.cuda_correlation_id),
                    ("runtime_correlation_id", activity.runtime_correlation_id),
                    ("graph_id", activity.graph_id),
                ] {
                    if let Some(value) = value {
                        args.insert(key.into(), Value::from(value));
                    }
                }
                let category = activity.activity_kind.to_string();
                if activity.activity_domain == ActivityDomain::Gpu || context.clock_kind == ClockKind::Device
                {
                    let device = context.device_uuid.as_deref().unwrap_or("unknown device");
                    args.insert("device_uuid".into(), Value::from(device));
                    let stream = activity
                        .stream_id
                        .map_or("no stream".to_owned(), |stream| format!("stream {stream}"));
                    let target = targets
                        .entry(domain.to_owned())
                        .or_insert_with(|| host_target(domain, start, &host_domains, &alignments))
                        .clone();
                    let placed = target.as_deref().and_then(|host| {
                        align_span(
                            i128::from(start),
                            i128::from(end),
                            domain,
                            host,
                            alignments.iter().copied(),
                        )
                        .ok()
                    });
                    let (offset, process) = match (&placed, &target) {
                        (Some(placed), Some(host)) => {
                            summary.placed_on_host += 1;
                            args.insert("placed_on".into(), Value::from(host.as_str()));
                            args.insert(
                                "uncertainty_ns".into(),
                                Value::from(
                                    placed.start.aligned.uncertainty_ns.max(placed.end.aligned.uncertainty_ns)
                                        as u64,
                                ),
                            );
                            (
                                placed.start.aligned.value_ns - i128::from(start),
                                format!("GPU {device} on {host}"),
                            )
                        }
                        _ => {
                            summary.unplaced += 1;
                            args.insert("placed_on".into(), Value::Null);
                            (0, format!("GPU {device} ({domain})"))
                        }
                    };
                    let intervals: Vec<(u64, u64)> = match event.busy_intervals() {
                        Some(busy) => busy.as_slice().iter().map(|i| (i.start_ns(), i.end_ns())).collect(),
                        None => vec![(start, end)],
                    };
                    let several = intervals.len() > 1;
                    for (index, (busy_start, busy_end)) in intervals.into_iter().enumerate() {
                        let mut args = args.clone();
                        if several {
                            args.insert("interval".into(), Value::from(index));
                        }
                        slices.push(Slice {
                            track: (process.clone(), stream.clone()),
                            name: name.clone(),
                            category: category.clone(),
                            start: i128::from(busy_start) + offset,
                            end: i128::from(busy_end) + offset,
                            args,
                        });
                    }
                    continue;
                }
                let thread = metadata.get("tid").map_or_else(
                    || format!("{} calls", activity.activity_domain),
                    |tid| {
                        format!("{} thread {}", activity.activity_domain, tid.to_string().trim_matches('"'))
                    },
                );
                ((host_process(domain), thread), name, category)
            }
            _ => continue,
        };
        slices.push(Slice { track, name, category, start: i128::from(start), end: i128::from(end), args });
    }
    summary.slices = slices.len() as u64;
    write_document(out, slices)?;
    Ok(summary)
}

/// The host domain a device domain's activity is placed on: one reached by
/// a direct alignment if any, else by a chain from the first activity.
fn host_target(domain: &str, at: u64, hosts: &[&str], alignments: &[&CorrelationEvent]) -> Option<String> {
    let direct = alignments.iter().find_map(|event| match event.body() {
        EventBody::ClockAlignment(body)
            if body.from_clock_domain.as_str() == domain
                && hosts.contains(&body.to_clock_domain.as_str()) =>
        {
            Some(body.to_clock_domain.to_string())
        }
        _ => None,
    });
    direct.or_else(|| {
        hosts.iter().find_map(|host| {
            tally_clock::align_timestamp_chained(i128::from(at), domain, host, alignments.iter().copied())
                .ok()
                .map(|_| (*host).to_owned())
        })
    })
}

fn write_document<W: Write>(out: W, mut slices: Vec<Slice>) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    let origin = slices.iter().map(|slice| slice.start).min().unwrap_or(0);
    // Lanes: within a track, a slice goes to the first lane free at its start.
    slices.sort_by(|a, b| {
        (&a.track, a.start, std::cmp::Reverse(a.end)).cmp(&(&b.track, b.start, std::cmp::Reverse(b.end)))
    });
    let mut processes: BTreeMap<String, u64> = BTreeMap::new();
    let mut threads: BTreeMap<(u64, String), u64> = BTreeMap::new();
    let mut lanes: HashMap<Track, Vec<i128>> = HashMap::new();
    let mut rows: Vec<(u64, u64, &Slice)> = Vec::with_capacity(slices.len());
    for slice in &slices {
        let next_pid = processes.len() as u64 + 1;
        let pid = *processes.entry(slice.track.0.clone()).or_insert(next_pid);
        let ends = lanes.entry(slice.track.clone()).or_default();
        let lane = match ends.iter().position(|&end| end <= slice.start) {
            Some(lane) => lane,
            None => {
                ends.push(slice.start);
                ends.len() - 1
            }
        };
        ends[lane] = slice.end;
        let thread =
            if lane == 0 { slice.track.1.clone() } else { format!("{} lane {}", slice.track.1, lane + 1) };
        let next_tid = threads.len() as u64 + 1;
        let tid = *threads.entry((pid, thread)).or_insert(next_tid);
        rows.push((pid, tid, slice));
    }
    out.write_all(b"{\"displayTimeUnit\": \"ns\", \"otherData\": ")?;
    serde_json::to_writer(&mut out, &json!({"generator": "tally export", "origin_ns": origin.to_string()}))?;
    out.write_all(b", \"traceEvents\": [\n")?;
    let mut first = true;
    let mut separator = |out: &mut io::BufWriter<W>| -> io::Result<()> {
        if !std::mem::take(&mut first) {
            out.write_all(b",\n")?;
        }
        Ok(())
    };
    for (name, pid) in &processes {
        separator(&mut out)?;
        let record = json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}});
        serde_json::to_writer(&mut out, &record)?;
    }
    for ((pid, name), tid) in &threads {
        separator(&mut out)?;
        let record =
            json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}});
        serde_json::to_writer(&mut out, &record)?;
    }
    for (pid, tid, slice) in rows {
        separator(&mut out)?;
        write!(out, "{{\"ph\": \"X\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": ")?;
        write_micros(&mut out, slice.start - origin)?;
        out.write_all(b", \"dur\": ")?;
        write_micros(&mut out, slice.end - slice.start)?;
        out.write_all(b", \"name\": ")?;
        serde_json::to_writer(&mut out, &slice.name)?;
        out.write_all(b", \"cat\": ")?;
        serde_json::to_writer(&mut out, &slice.category)?;
        out.write_all(b", \"args\": ")?;
        serde_json::to_writer(&mut out, &slice.args)?;
        out.write_all(b"}")?;
    }
    out.write_all(b"\n]}\n")?;
    out.flush()
}

/// Nanoseconds as microseconds with three decimals, exactly.
fn write_micros<W: Write>(out: &mut W, nanoseconds: i128) -> io::Result<()> {
    let sign = if nanoseconds < 0 { "-" } else { "" };
    let magnitude = nanoseconds.unsigned_abs();
    write!(out, "{sign}{}.{:03}", magnitude / 1000, magnitude % 1000)
}
