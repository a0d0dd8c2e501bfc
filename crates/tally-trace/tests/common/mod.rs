//! Independent readings of traces and accounting, for comparison with the
//! importer: the raw JSON is parsed whole with serde_json, decimals are
//! converted by string surgery, and intervals are unioned by a sweep over
//! their boundaries, none of which the importer does.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]
#![allow(dead_code, reason = "each test file uses part of the helpers")]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tally_core::{ActivityDomain, ActivityRef, CorrelationEvent, EventBody};
use tally_trace::{Detail, ImportOptions, ImportSummary, import_traces_to_vec};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

pub fn options(detail: Detail) -> ImportOptions {
    let mut options = ImportOptions::new("run-test".try_into().unwrap(), "session-test".try_into().unwrap());
    options.detail = detail;
    options
}

pub fn import(paths: &[PathBuf], detail: Detail) -> (Vec<CorrelationEvent>, ImportSummary) {
    import_traces_to_vec(paths, &options(detail)).unwrap_or_else(|error| panic!("{error}"))
}

/// Microseconds as decimal text to nanoseconds: integer part times 1000
/// plus the first three decimals, which must be all there is.
pub fn micros_text_to_ns(text: &str) -> u128 {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    assert!(!whole.starts_with('-'), "negative {text}");
    assert!(!text.contains(['e', 'E']), "exponent in {text}");
    assert!(fraction.len() <= 3 || fraction[3..].bytes().all(|b| b == b'0'), "sub-ns digits in {text}");
    let mut digits = fraction.chars().take(3).collect::<String>();
    while digits.len() < 3 {
        digits.push('0');
    }
    whole.parse::<u128>().unwrap() * 1000 + digits.parse::<u128>().unwrap()
}

/// The length of the union of `[start, end)` intervals, by sweeping sorted
/// boundaries with a counter of open intervals.
pub fn union_length(intervals: &[(u128, u128)]) -> u128 {
    let mut boundaries: Vec<(u128, i64)> = Vec::new();
    for &(start, end) in intervals {
        if end > start {
            boundaries.push((start, 1));
            boundaries.push((end, -1));
        }
    }
    // Ends before starts at one instant: touching intervals leave no gap
    // either way, so the order only keeps the counter non-negative.
    boundaries.sort_by_key(|&(at, delta)| (at, delta));
    let (mut open, mut total, mut since) = (0i64, 0u128, 0u128);
    for (at, delta) in boundaries {
        if open > 0 {
            total += at - since;
        }
        open += delta;
        since = at;
    }
    total
}

#[derive(Deserialize)]
struct RawDocument<'a> {
    #[serde(rename = "traceEvents", borrow)]
    events: Vec<RawEvent<'a>>,
    #[serde(rename = "baseTimeNanoseconds", borrow, default)]
    base: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    ph: Option<String>,
    cat: Option<String>,
    name: Option<String>,
    pid: Option<Value>,
    tid: Option<Value>,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
    args: Option<Value>,
}

/// A GPU event, a runtime call or a ProfilerStep, as the raw JSON says.
#[derive(Debug, Clone)]
pub struct RawSpan {
    pub cat: String,
    pub name: String,
    pub pid: Value,
    pub tid: Value,
    /// Nanoseconds as written (without the base time).
    pub start: u128,
    pub end: u128,
    pub device: Option<u64>,
    pub correlation: Option<u64>,
    /// `ts` and `dur` as written.
    pub ts_text: String,
    pub dur_text: String,
}

pub struct RawTrace {
    pub base: u128,
    pub gpu: Vec<RawSpan>,
    pub runtime: Vec<RawSpan>,
    pub steps: Vec<RawSpan>,
}

pub fn read_text(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    if tally_utils::sniff::Compression::of_head(&bytes).is_gzip() {
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut text).unwrap();
        text
    } else {
        String::from_utf8(bytes).unwrap()
    }
}

pub fn read_raw(path: &Path) -> RawTrace {
    let text = read_text(path);
    let document: RawDocument<'_> = serde_json::from_str(&text).unwrap();
    let base = document.base.map_or(0, |raw| raw.get().parse::<u128>().unwrap());
    let mut trace = RawTrace { base, gpu: Vec::new(), runtime: Vec::new(), steps: Vec::new() };
    for event in document.events {
        if event.ph.as_deref() != Some("X") {
            continue;
        }
        let cat = event.cat.unwrap_or_default().to_lowercase();
        let name = event.name.unwrap_or_default();
        let is_gpu = matches!(cat.as_str(), "kernel" | "gpu_memcpy" | "gpu_memset");
        let is_runtime = matches!(cat.as_str(), "cuda_runtime" | "cuda_driver" | "runtime");
        let is_step = !is_gpu && !is_runtime && cat != "gpu_user_annotation" && is_profiler_step(&name);
        if !(is_gpu || is_runtime || is_step) {
            continue;
        }
        let (ts_text, dur_text) = (event.ts.unwrap().get().to_owned(), event.dur.unwrap().get().to_owned());
        let start = micros_text_to_ns(&ts_text);
        let end = start + micros_text_to_ns(&dur_text);
        let args = event.args.unwrap_or(Value::Null);
        let number = |key: &str| args.get(key).and_then(Value::as_u64);
        let pid = event.pid.unwrap_or(Value::Null);
        let span = RawSpan {
            cat: cat.clone(),
            name,
            device: number("device").or_else(|| pid.as_u64()),
            pid,
            tid: event.tid.unwrap_or(Value::Null),
            start,
            end,
            correlation: number("correlation").filter(|&id| id != 0),
            ts_text,
            dur_text,
        };
        if is_gpu {
            trace.gpu.push(span);
        } else if is_runtime {
            trace.runtime.push(span);
        } else {
            trace.steps.push(span);
        }
    }
    trace
}

fn is_profiler_step(name: &str) -> bool {
    name.strip_prefix("ProfilerStep#").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

impl RawTrace {
    /// The ProfilerStep holding each GPU event's launch on the launching
    /// process, or `None`.
    pub fn iteration_of(&self, event: &RawSpan) -> Option<String> {
        let correlation = event.correlation?;
        let launches: Vec<&RawSpan> =
            self.runtime.iter().filter(|call| call.correlation == Some(correlation)).collect();
        let first = launches.first()?;
        if launches.iter().any(|call| call.pid != first.pid) {
            return None;
        }
        let launch = launches.last()?;
        let holding: Vec<&RawSpan> = self
            .steps
            .iter()
            .filter(|step| step.pid == launch.pid && step.start <= launch.start && launch.start < step.end)
            .collect();
        match holding.as_slice() {
            [one] => Some(one.name.clone()),
            _ => None,
        }
    }
}

/// Busy and summed time per device clock `(device_uuid, clock_domain)`,
/// from the GPU activities' busy intervals.
pub fn device_figures(events: &[CorrelationEvent]) -> BTreeMap<(String, String), (u128, u128)> {
    gpu_figures(events, |event, _| {
        let context = event.context();
        (context.device_uuid.as_ref().unwrap().to_string(), context.clock_domain.to_string())
    })
}

/// Busy and summed time per iteration ID (all devices of one trace).
pub fn iteration_figures(events: &[CorrelationEvent]) -> BTreeMap<Option<String>, (u128, u128)> {
    gpu_figures(events, |_, activity| {
        activity.iteration_ref.as_ref().map(|reference| reference.id().to_owned())
    })
}

/// Busy (union) and summed time of the GPU activities' busy intervals, per
/// the key `key` gives each activity.
fn gpu_figures<K: Ord>(
    events: &[CorrelationEvent],
    key: impl Fn(&CorrelationEvent, &ActivityRef) -> K,
) -> BTreeMap<K, (u128, u128)> {
    let mut intervals: BTreeMap<K, Vec<(u128, u128)>> = BTreeMap::new();
    for event in events {
        let EventBody::ActivityRef(activity) = event.body() else { continue };
        if activity.activity_domain != ActivityDomain::Gpu {
            continue;
        }
        let list = intervals.entry(key(event, activity)).or_default();
        for interval in event.busy_intervals().unwrap().as_slice() {
            list.push((u128::from(interval.start_ns()), u128::from(interval.end_ns())));
        }
    }
    intervals
        .into_iter()
        .map(|(key, list)| {
            let summed = list.iter().map(|(start, end)| end - start).sum();
            (key, (union_length(&list), summed))
        })
        .collect()
}
