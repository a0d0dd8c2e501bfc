//! The profiler's own cost per measured call, printed as JSON for
//! `cargo xtask bench`.
//!
//! Usage: `profile_overhead [CALLS]` (default 200 000). Measures a no-op
//! closure run bare and through `ResourceProfiler::measure_call` with host
//! memory off, on (kernel high-water mark where available) and on with the
//! sampler forced, and reports nanoseconds per call over the bare loop.

use std::hint::black_box;
use std::time::Instant;

use tally_profile::{CallSpec, HostMemoryMode, ProfilerConfig, ResourceProfiler};

fn per_call_ns(calls: u64, config: Option<ProfilerConfig>) -> (f64, Option<String>) {
    match config {
        None => {
            let call = |i: u64| black_box(i);
            let start = Instant::now();
            for i in 0..calls {
                black_box(call(i));
            }
            (start.elapsed().as_nanos() as f64 / calls as f64, None)
        }
        Some(config) => {
            let mut profiler = ResourceProfiler::new(config);
            let start = Instant::now();
            for i in 0..calls {
                black_box(profiler.measure_call(|| black_box(i), CallSpec::new(1, "noop")));
            }
            let elapsed = start.elapsed().as_nanos() as f64 / calls as f64;
            let profile = profiler.finish(false);
            assert_eq!(profile.inference.materialized_samples, calls, "every call was measured");
            let method =
                profile.context.get("host_memory_method").and_then(|m| m.as_str()).map(str::to_owned);
            (elapsed, method)
        }
    }
}

fn main() {
    let calls: u64 = std::env::args().nth(1).and_then(|arg| arg.parse().ok()).unwrap_or(200_000);
    let off = ProfilerConfig { host_memory: false, ..ProfilerConfig::default() };
    let on = ProfilerConfig::default();
    let sampler = ProfilerConfig { host_memory_mode: HostMemoryMode::Sampler, ..ProfilerConfig::default() };
    // One untimed round warms caches and page tables.
    per_call_ns(calls / 10, Some(on));
    let (bare, _) = per_call_ns(calls, None);
    let (off_ns, _) = per_call_ns(calls, Some(off));
    let (on_ns, on_method) = per_call_ns(calls, Some(on));
    let (sampler_ns, sampler_method) = per_call_ns(calls, Some(sampler));
    let json = serde_json::json!({
        "calls": calls,
        "bare_ns_per_call": bare,
        "host_memory_off_ns_per_call": off_ns - bare,
        "host_memory_on_ns_per_call": on_ns - bare,
        "host_memory_on_method": on_method,
        "sampler_ns_per_call": sampler_ns - bare,
        "sampler_method": sampler_method,
    });
    println!("{json}");
}
