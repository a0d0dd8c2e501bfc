//! The profiler's overhead on a real ONNX Runtime call: tally-onnx's
//! `onnx_overhead` example (release build) writes a 4-layer MLP (512 wide),
//! calibrates its batch so one call takes about 1 ms on one thread, and runs
//! it N times bare and N times inside `ResourceProfiler::measure_call` (ONNX
//! adapter, host and device memory on, as `tally profile` runs), each bare
//! call paired with a measured one. The overhead is the median of the
//! paired differences over the median bare call; a second run with the profiler disabled gives
//! the noise floor of that comparison, and the profiler's cost around an
//! empty call gives its cost without the machine's noise.
//!
//! Beside it, where the reference Python has `onnxruntime`: vertebrae's
//! `ResourceProfiler` with its `ONNXResourceProfileAdapter` on the same
//! model and batch, the same way.
//!
//! Target (issue 5): under 1% for a call of 1 ms or more. Skipped with a
//! message when no ONNX Runtime library is found (`ORT_DYLIB_PATH`, else
//! the onnxruntime wheel in `.venv`).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

use super::{BenchContext, Measure, Row};
use crate::workspace_root;

/// vertebrae's profiler around `InferenceSession.run`, paired with bare
/// runs; prints the median bare call and median paired difference (ns).
const VERTEBRAE_ONNX: &str = r#"
import json, sys, time
import numpy as np
import onnxruntime
from vertebrae.config import ResourceProfilingConfig
from vertebrae.profiling import ONNXResourceProfileAdapter, ResourceProfiler

model, batch, calls, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
options = onnxruntime.SessionOptions()
options.intra_op_num_threads = 1
session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
feeds = {"x": np.random.RandomState(0).uniform(-1, 1, (batch, 512)).astype(np.float32)}

class Extractor:
    def __init__(self):
        self._session = session
        self.model_path = model
    def get_resource_profile_adapter(self):
        return ONNXResourceProfileAdapter(self)

for _ in range(20):
    session.run(None, feeds)
bare, measured = [], []
config = ResourceProfilingConfig(enabled=True, host_memory=True, device_memory=True)
for _ in range(rounds):
    profiler = ResourceProfiler(config, Extractor(), streaming=False)
    for call in range(calls):
        def one_bare():
            started = time.perf_counter_ns()
            session.run(None, feeds)
            bare.append(time.perf_counter_ns() - started)
        def one_measured():
            started = time.perf_counter_ns()
            profiler.measure_call(lambda: session.run(None, feeds), samples=batch, call_type="batch")
            measured.append(time.perf_counter_ns() - started)
        if call % 2 == 0:
            one_bare(); one_measured()
        else:
            one_measured(); one_bare()
    assert profiler.finish().inference.materialized_samples == calls * batch
paired = float(np.median(np.array(measured) - np.array(bare)))
print(json.dumps({"bare_median_ns": float(np.median(bare)), "paired_difference_median_ns": paired,
                  "bare_total_ns": float(sum(bare)), "measured_total_ns": float(sum(measured))}))
"#;

fn overhead_binary() -> anyhow::Result<PathBuf> {
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    crate::python::status(
        Command::new(cargo).current_dir(&root).args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "tally-onnx",
            "--example",
            "onnx_overhead",
        ]),
        "cargo build --release --example onnx_overhead",
    )?;
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    Ok(target.join("release/examples/onnx_overhead"))
}

/// `ORT_DYLIB_PATH`, else the venv's onnxruntime wheel.
fn runtime_library() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH").filter(|value| !value.is_empty()) {
        return Some(PathBuf::from(path));
    }
    crate::test::onnxruntime_library(&workspace_root().join(".venv/bin/python"))
}

fn number(value: &Value, key: &str) -> anyhow::Result<f64> {
    value[key].as_f64().with_context(|| format!("onnx_overhead output lacks {key}"))
}

/// Runs the benchmark.
pub fn run(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let Some(library) = runtime_library() else {
        println!(
            "onnx: skipped: no ONNX Runtime library (set ORT_DYLIB_PATH, or let `cargo xtask test` \
             install onnxruntime into .venv)"
        );
        return Ok(());
    };
    let (calls, rounds) = if ctx.quick() { (100u64, 3u64) } else { (500, 8) };
    let binary = overhead_binary()?;
    let dir = ctx.scratch_dir().join("onnx");
    let run_example = |ctx: &BenchContext, disabled: bool| -> anyhow::Result<Value> {
        let mut command = Command::new(&binary);
        command.arg("--lib").arg(&library).arg("--dir").arg(&dir);
        command.args(["--calls", &calls.to_string(), "--rounds", &rounds.to_string()]);
        if disabled {
            command.arg("--disabled");
        }
        let (_, stdout) = ctx.run_measured_capture(&mut command)?;
        serde_json::from_str(stdout.trim()).context("onnx_overhead output")
    };
    let measured = run_example(ctx, false)?;
    let floor = run_example(ctx, true)?;
    let overhead = number(&measured, "relative_overhead_paired")?;
    let noise = number(&floor, "relative_overhead_paired")?;
    let empty_ns = number(&measured, "measure_call_empty_ns")?;
    let call_ns = number(&measured, "bare_median_ns")?;
    let batch = measured["batch"].as_u64().context("onnx_overhead output lacks batch")?;
    if call_ns <= 0.0 {
        bail!("onnx_overhead measured a non-positive call time");
    }
    let total_calls = calls * rounds;
    let seconds = |ns: f64| ns / 1e9;
    let mut bare = Row::new(
        format!("onnx MLP call, bare ({:.2} ms, batch {batch})", call_ns / 1e6),
        Measure { seconds: seconds(number(&measured, "bare_total_ns")?), peak_rss_bytes: None },
    );
    bare.items = Some(total_calls);
    bare.item_unit = "calls";
    ctx.record(bare);

    let reference = ctx.python().map(PathBuf::from).and_then(|python| {
        let model = dir.join("overhead_mlp.onnx");
        let output = Command::new(&python)
            .arg("-c")
            .arg(VERTEBRAE_ONNX)
            .arg(&model)
            .args([batch.to_string(), calls.to_string(), rounds.to_string()])
            .output();
        match output {
            Ok(output) if output.status.success() => serde_json::from_slice::<Value>(&output.stdout).ok(),
            Ok(output) => {
                let message = String::from_utf8_lossy(&output.stderr);
                println!("onnx: vertebrae reference not run: {}", message.lines().last().unwrap_or(""));
                None
            }
            Err(error) => {
                println!("onnx: vertebrae reference not run: {error}");
                None
            }
        }
    });
    let mut row = Row::new(
        "onnx MLP call in measure_call",
        Measure { seconds: seconds(number(&measured, "measured_total_ns")?), peak_rss_bytes: None },
    );
    row.items = Some(total_calls);
    row.item_unit = "calls";
    let mut note = format!(
        "overhead {:+.3}% (median paired difference / median call; profiler off: {:+.3}%); empty measure_call {:.2} µs = {:.3}% of a call; \
         target < 1%",
        overhead * 100.0,
        noise * 100.0,
        empty_ns / 1e3,
        empty_ns / call_ns * 100.0
    );
    if let Some(reference) = &reference {
        let bare_ns = number(reference, "bare_median_ns")?;
        let difference_ns = number(reference, "paired_difference_median_ns")?;
        note += &format!("; vertebrae {:+.2}%", difference_ns / bare_ns * 100.0);
        row.reference =
            Some(Measure { seconds: seconds(number(reference, "measured_total_ns")?), peak_rss_bytes: None });
    }
    row.note = note;
    ctx.record(row);
    Ok(())
}
