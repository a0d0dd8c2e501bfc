//! The profiler's overhead on a real libtorch call: tally-torch's
//! `torch_overhead` example (release build) calibrates the batch of a
//! 4-layer MLP (512 wide, one thread) so one call takes about 1 ms, and runs
//! it N times bare and N times inside `ResourceProfiler::measure_call` (Torch
//! adapter over the VarStore, host and device memory on), each bare call
//! paired with a measured one. The overhead is the median of the paired
//! differences over the median bare call; a run with the profiler disabled
//! gives the noise floor, and the profiler around an empty call its cost
//! without the machine's noise.
//!
//! Beside it, where the reference Python has torch: vertebrae's
//! `ResourceProfiler` with its `TorchResourceProfileAdapter` on the same
//! network and batch, the same way.
//!
//! Skipped with a message when no Python with torch==2.13.0 is found to
//! build libtorch code against.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

use super::{BenchContext, Measure, Row};
use crate::gpu_check::torch::torch_python;
use crate::workspace_root;

/// vertebrae's profiler around the same MLP, paired with bare calls; prints
/// the median bare call and the median paired difference (ns).
const VERTEBRAE_TORCH: &str = r#"
import json, sys, time
import numpy as np
import torch
from vertebrae.config import ResourceProfilingConfig
from vertebrae.profiling import ResourceProfiler, TorchResourceProfileAdapter

batch, calls, rounds, threads = (int(value) for value in sys.argv[1:5])
torch.set_num_threads(threads)
layers = []
for _ in range(4):
    layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers).eval()
x = torch.ones(batch, 512)

def call():
    with torch.no_grad():
        return model(x)

class Extractor:
    def __init__(self):
        self.model = model
    def get_resource_profile_adapter(self):
        return TorchResourceProfileAdapter(self)

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

fn number(value: &Value, key: &str) -> anyhow::Result<f64> {
    value[key].as_f64().with_context(|| format!("torch_overhead output lacks {key}"))
}

/// Runs the benchmark.
pub fn run(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let root = workspace_root();
    let Some(torch) = torch_python(&root) else {
        println!(
            "torch: skipped: no python with torch==2.13.0 (TALLY_PYTHON, .venv, python3) to build \
             tally-torch against; let `cargo xtask test` install it into .venv"
        );
        return Ok(());
    };
    let mut path = std::ffi::OsString::new();
    if let Some(bin) = torch.parent().filter(|bin| !bin.as_os_str().is_empty()) {
        path.push(bin);
        path.push(":");
    }
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    crate::python::status(
        Command::new(cargo).current_dir(&root).env("PATH", &path).args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "tally-torch",
            "--example",
            "torch_overhead",
        ]),
        "cargo build --release --example torch_overhead",
    )?;
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let binary = target.join("release/examples/torch_overhead");

    let (calls, rounds) = if ctx.quick() { (100u64, 3u64) } else { (500, 8) };
    let run_example = |ctx: &BenchContext, disabled: bool| -> anyhow::Result<Value> {
        let mut command = Command::new(&binary);
        command.args(["--calls", &calls.to_string(), "--rounds", &rounds.to_string()]);
        if disabled {
            command.arg("--disabled");
        }
        let (_, stdout) = ctx.run_measured_capture(&mut command)?;
        serde_json::from_str(stdout.trim()).context("torch_overhead output")
    };
    let measured = run_example(ctx, false)?;
    let floor = run_example(ctx, true)?;
    let overhead = number(&measured, "relative_overhead_paired")?;
    let noise = number(&floor, "relative_overhead_paired")?;
    let empty_ns = number(&measured, "measure_call_empty_ns")?;
    let call_ns = number(&measured, "bare_median_ns")?;
    let batch = measured["batch"].as_u64().context("torch_overhead output lacks batch")?;
    if call_ns <= 0.0 {
        bail!("torch_overhead measured a non-positive call time");
    }
    let total_calls = calls * rounds;
    let seconds = |ns: f64| ns / 1e9;
    let mut bare = Row::new(
        format!("torch MLP call, bare ({:.2} ms, batch {batch})", call_ns / 1e6),
        Measure { seconds: seconds(number(&measured, "bare_total_ns")?), peak_rss_bytes: None },
    );
    bare.items = Some(total_calls);
    bare.item_unit = "calls";
    ctx.record(bare);

    let reference = ctx.python().map(PathBuf::from).and_then(|python| {
        let output = Command::new(&python)
            .arg("-c")
            .arg(VERTEBRAE_TORCH)
            .args([batch.to_string(), calls.to_string(), rounds.to_string(), "1".to_owned()])
            .output();
        match output {
            Ok(output) if output.status.success() => serde_json::from_slice::<Value>(&output.stdout).ok(),
            Ok(output) => {
                let message = String::from_utf8_lossy(&output.stderr);
                println!("torch: vertebrae reference not run: {}", message.lines().last().unwrap_or(""));
                None
            }
            Err(error) => {
                println!("torch: vertebrae reference not run: {error}");
                None
            }
        }
    });
    let mut row = Row::new(
        "torch MLP call in measure_call",
        Measure { seconds: seconds(number(&measured, "measured_total_ns")?), peak_rss_bytes: None },
    );
    row.items = Some(total_calls);
    row.item_unit = "calls";
    let mut note = format!(
        "overhead {:+.3}% (median paired difference / median call; profiler off: {:+.3}%); empty measure_call \
         {:.2} µs = {:.3}% of a call",
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
