//! The paired-overhead method shared by the `onnx` and `torch` benchmarks:
//! an adapter crate's `<framework>_overhead` example (release build)
//! calibrates the batch of a 4-layer MLP (512 wide, one thread) so one call
//! takes about 1 ms, and runs it N times bare and N times inside
//! `ResourceProfiler::measure_call` (the framework's adapter, host and
//! device memory on, as `tally profile` runs), each bare call paired with a
//! measured one. The overhead is the median of the paired differences over
//! the median bare call; a second run with the profiler disabled gives the
//! noise floor of that comparison, and the profiler's cost around an empty
//! call gives its cost without the machine's noise.
//!
//! Beside it, where the reference Python has the framework: vertebrae's
//! `ResourceProfiler` with the framework's adapter on the same network and
//! batch, the same way ([`VERTEBRAE_HEAD`], the framework's setup, then
//! [`VERTEBRAE_PAIRED`]).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

use super::{BenchContext, Measure, Row, json_f64, parse_json};

/// The start of every reference script: its last three arguments are the
/// batch, the calls per round and the rounds.
pub(super) const VERTEBRAE_HEAD: &str = r#"
import json, sys, time
import numpy as np
from vertebrae.config import ResourceProfilingConfig
from vertebrae.profiling import ResourceProfiler

batch, calls, rounds = (int(value) for value in sys.argv[-3:])
"#;

/// The end of every reference script, after a setup that defines `call()`
/// (one call of the model) and `Extractor` (what vertebrae's adapter
/// reads): vertebrae's profiler around `call`, paired with bare calls;
/// prints the median bare call and median paired difference (ns).
pub(super) const VERTEBRAE_PAIRED: &str = r#"
for _ in range(20):
    call()
bare, measured = [], []
config = ResourceProfilingConfig(enabled=True, host_memory=True, device_memory=True)
for _ in range(rounds):
    profiler = ResourceProfiler(config, Extractor(), streaming=False)
    for index in range(calls):
        def one_bare():
            started = time.perf_counter_ns()
            call()
            bare.append(time.perf_counter_ns() - started)
        def one_measured():
            started = time.perf_counter_ns()
            profiler.measure_call(call, samples=batch, call_type="batch")
            measured.append(time.perf_counter_ns() - started)
        if index % 2 == 0:
            one_bare(); one_measured()
        else:
            one_measured(); one_bare()
    assert profiler.finish().inference.materialized_samples == calls * batch
paired = float(np.median(np.array(measured) - np.array(bare)))
print(json.dumps({"bare_median_ns": float(np.median(bare)), "paired_difference_median_ns": paired,
                  "bare_total_ns": float(sum(bare)), "measured_total_ns": float(sum(measured))}))
"#;

/// One framework's paired-overhead benchmark.
pub(super) struct PairedOverhead<'a> {
    /// `onnx` or `torch`: the rows' first word; the example is
    /// `<framework>_overhead`.
    pub framework: &'static str,
    /// The built example.
    pub example: &'a Path,
    /// The example's arguments before `--calls`.
    pub example_args: Vec<OsString>,
    /// The framework's part of the reference script, between
    /// [`VERTEBRAE_HEAD`] and [`VERTEBRAE_PAIRED`].
    pub vertebrae_setup: &'static str,
    /// The reference script's arguments before batch, calls and rounds.
    pub vertebrae_args: Vec<OsString>,
    /// The issue's target, appended to the note when there is one.
    pub target: Option<&'static str>,
}

impl PairedOverhead<'_> {
    /// Runs the example (profiler on, then off) and the reference, and
    /// records the bare and the measured row.
    pub(super) fn run(self, ctx: &mut BenchContext) -> anyhow::Result<()> {
        let framework = self.framework;
        let what = format!("{framework}_overhead output");
        let (calls, rounds) = if ctx.quick() { (100u64, 3u64) } else { (500, 8) };
        let run_example = |ctx: &BenchContext, disabled: bool| -> anyhow::Result<Value> {
            let mut command = Command::new(self.example);
            command.args(&self.example_args);
            command.args(["--calls", &calls.to_string(), "--rounds", &rounds.to_string()]);
            if disabled {
                command.arg("--disabled");
            }
            let (_, stdout) = ctx.run_measured_capture(&mut command)?;
            parse_json(&stdout, &what)
        };
        let measured = run_example(ctx, false)?;
        let floor = run_example(ctx, true)?;
        let number = |value: &Value, key: &str| json_f64(value, key, &what);
        let overhead = number(&measured, "relative_overhead_paired")?;
        let noise = number(&floor, "relative_overhead_paired")?;
        let empty_ns = number(&measured, "measure_call_empty_ns")?;
        let call_ns = number(&measured, "bare_median_ns")?;
        let batch = measured["batch"].as_u64().with_context(|| format!("{what} lacks batch"))?;
        if call_ns <= 0.0 {
            bail!("{framework}_overhead measured a non-positive call time");
        }
        let total_calls = calls * rounds;
        let seconds = |ns: f64| ns / 1e9;
        let mut bare = Row::new(
            format!("{framework} MLP call, bare ({:.2} ms, batch {batch})", call_ns / 1e6),
            Measure { seconds: seconds(number(&measured, "bare_total_ns")?), peak_rss_bytes: None },
        );
        bare.items = Some(total_calls);
        bare.item_unit = "calls";
        ctx.record(bare);

        let script = format!("{VERTEBRAE_HEAD}{}{VERTEBRAE_PAIRED}", self.vertebrae_setup);
        let counts = [batch, calls, rounds].map(|count| OsString::from(count.to_string()));
        let reference = ctx.run_reference_json(
            &format!("{framework}: vertebrae reference"),
            &script,
            self.vertebrae_args.iter().chain(&counts),
        );
        let mut row = Row::new(
            format!("{framework} MLP call in measure_call"),
            Measure { seconds: seconds(number(&measured, "measured_total_ns")?), peak_rss_bytes: None },
        );
        row.items = Some(total_calls);
        row.item_unit = "calls";
        let mut note = format!(
            "overhead {:+.3}% (median paired difference / median call; profiler off: {:+.3}%); empty \
             measure_call {:.2} µs = {:.3}% of a call",
            overhead * 100.0,
            noise * 100.0,
            empty_ns / 1e3,
            empty_ns / call_ns * 100.0
        );
        if let Some(target) = self.target {
            note += &format!("; {target}");
        }
        if let Some(reference) = &reference {
            let bare_ns = number(reference, "bare_median_ns")?;
            let difference_ns = number(reference, "paired_difference_median_ns")?;
            note += &format!("; vertebrae {:+.2}%", difference_ns / bare_ns * 100.0);
            row.reference = Some(Measure {
                seconds: seconds(number(reference, "measured_total_ns")?),
                peak_rss_bytes: None,
            });
        }
        row.note = note;
        ctx.record(row);
        Ok(())
    }
}
