//! The resource profiler's own cost per measured call: the
//! `profile_overhead` example of tally-tests (release build) times a no-op closure bare and
//! through `ResourceProfiler::measure_call`, with host memory off, on (the
//! kernel's high-water mark) and on with the sampler forced; beside it,
//! vertebrae's `ResourceProfiler.measure_call` on the same no-op, host memory
//! on and off, in the same run.
//!
//! Target (issue 4): under 2 µs per call with host memory on.
//!
//! Each row's seconds are the profiler's own cost over the row's calls
//! (per-call cost times calls). vertebrae pays ~0.4 to 1.5 ms per call with
//! host memory on, so it runs fewer calls and its per-call cost is scaled to
//! tally's call count; the speed ratio is then the per-call ratio.

use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

use super::{BenchContext, Measure, Row, json_f64, parse_json};

/// vertebrae's profiler on a no-op, minus the bare loop; prints ns per call.
const VERTEBRAE_OVERHEAD: &str = r#"
import json, sys, time
from vertebrae.config import ResourceProfilingConfig
from vertebrae.profiling import ResourceProfiler

def per_call(host_memory, calls):
    config = ResourceProfilingConfig(enabled=True, host_memory=host_memory, device_memory=True)
    profiler = ResourceProfiler(config, object(), streaming=False)
    noop = lambda: None
    started = time.perf_counter()
    for _ in range(calls):
        profiler.measure_call(noop, samples=1, call_type="noop")
    elapsed = time.perf_counter() - started
    assert profiler.finish().inference.materialized_samples == calls
    return elapsed / calls

def bare(calls):
    noop = lambda: None
    started = time.perf_counter()
    for _ in range(calls):
        noop()
    return (time.perf_counter() - started) / calls

on_calls, off_calls = int(sys.argv[1]), int(sys.argv[2])
base = bare(off_calls)
print(json.dumps({"host_memory_on_ns_per_call": (per_call(True, on_calls) - base) * 1e9,
                  "host_memory_off_ns_per_call": (per_call(False, off_calls) - base) * 1e9}))
"#;

/// Runs the benchmark.
pub fn run(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let calls: u64 = if ctx.quick() { 100_000 } else { 1_000_000 };
    let binary = ctx.release_example("tally-tests", "profile_overhead")?;
    let (_, stdout) = ctx.run_measured_capture(Command::new(&binary).arg(calls.to_string()))?;
    let ours = parse_json(&stdout, "profile_overhead output")?;
    let ns = |result: &Value, key: &str| json_f64(result, key, "profile_overhead output");
    let reference: Option<Value> = match ctx.python() {
        Some(python) => {
            let (on_calls, off_calls) = if ctx.quick() { (500, 5_000) } else { (2_000, 20_000) };
            let (_, stdout) = ctx
                .run_measured_capture(
                    Command::new(python)
                        .arg("-c")
                        .arg(VERTEBRAE_OVERHEAD)
                        .arg(on_calls.to_string())
                        .arg(off_calls.to_string()),
                )
                .context("vertebrae ResourceProfiler.measure_call")?;
            Some(parse_json(&stdout, "reference output")?)
        }
        None => None,
    };
    let on_method = ours["host_memory_on_method"].as_str().unwrap_or("none").to_owned();
    let rows = [
        (
            "host memory off",
            "host_memory_off_ns_per_call",
            Some("host_memory_off_ns_per_call"),
            String::new(),
        ),
        (
            "host memory on",
            "host_memory_on_ns_per_call",
            Some("host_memory_on_ns_per_call"),
            format!("method {on_method}; target < 2 µs/call"),
        ),
        (
            "host memory on, sampler forced",
            "sampler_ns_per_call",
            Some("host_memory_on_ns_per_call"),
            "10 ms RSS sampler thread for the whole profile".to_owned(),
        ),
    ];
    for (label, key, reference_key, note) in rows {
        let per_call = ns(&ours, key)?;
        if !per_call.is_finite() {
            bail!("profile_overhead reported {per_call} for {key}");
        }
        let mut row = Row::new(
            format!("profile measure_call overhead ({label}, {} k calls)", calls / 1000),
            Measure { seconds: per_call.max(0.0) * calls as f64 / 1e9, peak_rss_bytes: None },
        );
        row.items = Some(calls);
        row.item_unit = "calls";
        row.note = format!("{per_call:.0} ns/call");
        if !note.is_empty() {
            row.note += &format!("; {note}");
        }
        match (&reference, reference_key) {
            (Some(reference), Some(reference_key)) => {
                let theirs = ns(reference, reference_key)?;
                row.reference = Some(Measure { seconds: theirs * calls as f64 / 1e9, peak_rss_bytes: None });
                row.note += &format!(
                    "; reference: vertebrae ResourceProfiler {theirs:.0} ns/call, scaled to the same calls"
                );
            }
            _ => row.note += "; vertebrae not installed: tally only",
        }
        ctx.record(row);
    }
    Ok(())
}
