//! tally-torch's GPU check, run by `cargo xtask gpu-check torch`: the
//! adapter's CUDA paths on a real GPU, one table row per check. Prints
//! `skipped: <why>` and exits 0 where libtorch sees no CUDA device (and no
//! NVIDIA device node exists); exits 1 when a row fails.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tally_profile::profile::{DeviceMeasurementStatus, OperationStatus};
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler};
use tally_torch::tch::nn::{self, VarStore};
use tally_torch::tch::{CModule, Cuda, Device, Kind, Tensor};
use tally_torch::{
    ModelTensors, ScriptProfileOptions, TorchDevice, TorchResourceProfileAdapter, allocator_stats,
    profile_torchscript, reset_peak_stats, synthetic_input,
};

type Row = Result<String, String>;
type CheckRow = (&'static str, fn() -> Row);

fn check(condition: bool, what: impl Into<String>) -> Result<(), String> {
    if condition { Ok(()) } else { Err(what.into()) }
}

/// One of tally-torch's TorchScript fixtures.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/tally-torch/tests/fixtures").join(name)
}

const MIB: i64 = 1 << 20;

fn metadata_on_cuda() -> Row {
    let var_store = VarStore::new(Device::Cuda(0));
    let _layer = nn::linear(var_store.root() / "fc", 64, 32, Default::default());
    let mut adapter = TorchResourceProfileAdapter::for_var_store(&var_store);
    let metadata = adapter.metadata().map_err(|e| e.to_string())?;
    check(metadata.device.as_deref() == Some("cuda:0"), format!("device {:?}", metadata.device))?;
    check(metadata.device_resolution.as_str() == "model_state", metadata.device_resolution.as_str())?;
    check(metadata.asynchronous, "not asynchronous")?;
    check(
        metadata.synchronization_method.as_deref() == Some("torch.cuda.synchronize"),
        format!("{:?}", metadata.synchronization_method),
    )?;
    let sync = adapter.synchronize().map_err(|e| e.to_string())?;
    check(sync.status == OperationStatus::Succeeded, format!("synchronize {:?}", sync.status))?;
    let footprint = adapter.model_footprint().map_err(|e| e.to_string())?;
    check(footprint.readings().parameter_count == Some(64 * 32 + 32), "parameter count")?;
    Ok("model_state cuda:0, torch.cuda.synchronize, synchronize succeeded, footprint".into())
}

fn allocator_window() -> Row {
    let device = TorchDevice::from(Device::Cuda(0));
    let resident = Tensor::zeros([4 * MIB / 4], (Kind::Float, Device::Cuda(0)));
    let mut adapter = TorchResourceProfileAdapter::new().with_device(Device::Cuda(0));
    let before = allocator_stats(&device).map_err(|e| e.to_string())?;
    let reset = adapter.reset_peak_device_memory().map_err(|e| e.to_string())?;
    check(reset.status == OperationStatus::Succeeded, format!("reset {:?}", reset.status))?;
    let after_reset = allocator_stats(&device).map_err(|e| e.to_string())?;
    check(after_reset.peak_allocated_bytes == after_reset.allocated_bytes, "peak reset to current")?;
    {
        // 64 MiB inside the window, freed before the window closes.
        let burst = Tensor::ones([64 * MIB / 4], (Kind::Float, Device::Cuda(0)));
        let _ = burst.sum(Kind::Float).double_value(&[]);
    }
    Cuda::synchronize(0);
    let peak = adapter.peak_device_memory().map_err(|e| e.to_string())?;
    check(
        peak.status() == DeviceMeasurementStatus::Measured,
        format!("{:?}", peak.readings().unavailable_reason),
    )?;
    let readings = peak.readings();
    let baseline = readings.baseline_allocated_bytes.ok_or("no baseline")?;
    let peak_allocated = readings.peak_allocated_bytes.ok_or("no peak")?;
    let peak_reserved = readings.peak_reserved_bytes.ok_or("no reserved peak")?;
    check(baseline == before.allocated_bytes, format!("baseline {baseline} vs {}", before.allocated_bytes))?;
    check(baseline >= 4 * MIB as u64, "the resident 4 MiB is in the baseline")?;
    check(
        peak_allocated >= baseline + 64 * MIB as u64,
        format!("peak {peak_allocated} < baseline + 64 MiB"),
    )?;
    check(peak_reserved >= peak_allocated, "reserved peak below allocated peak")?;
    check(peak.measurement_scope() == Some("profile_window"), "scope")?;
    drop(resident);
    Ok(format!("baseline {baseline} B, peak allocated {peak_allocated} B, peak reserved {peak_reserved} B"))
}

fn profiled_torchscript_matches_cpu() -> Row {
    let path = fixture("mlp.pt");
    let cpu = CModule::load(&path).map_err(|e| e.to_string())?;
    let gpu = Arc::new(CModule::load_on_device(&path, Device::Cuda(0)).map_err(|e| e.to_string())?);
    let input = synthetic_input(&[16, 4], Device::Cpu).map_err(|e| e.to_string())?;
    let want = cpu.forward_ts(&[&input]).map_err(|e| e.to_string())?;
    let adapter = TorchResourceProfileAdapter::for_module(Arc::clone(&gpu));
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
    let gpu_input = input.to_device(Device::Cuda(0));
    let mut got = None;
    for _ in 0..5 {
        let output = profiler.measure_call(|| gpu.forward_ts(&[&gpu_input]), CallSpec::new(16, "batch"));
        got = Some(output.map_err(|e| e.to_string())?.to_device(Device::Cpu));
    }
    let profile = profiler.finish(false);
    let got = got.ok_or("no output")?;
    let difference = (&got - &want).abs().max().double_value(&[]);
    check(difference <= 1e-4, format!("GPU output differs from CPU by {difference}"))?;
    let json = profile.to_json_value().map_err(|e| e.to_string())?;
    check(json["device_memory"]["status"] == "measured", format!("{}", json["device_memory"]))?;
    check(json["context"]["synchronization_status"] == "synchronized", "not synchronized")?;
    check(json["context"]["device"] == "cuda:0", "device")?;
    check(profile.warnings.is_empty(), format!("warnings {:?}", profile.warnings))?;
    Ok(format!("5 calls, max |gpu - cpu| {difference:.2e}, device memory measured"))
}

fn profile_torchscript_on_cuda() -> Row {
    let options = ScriptProfileOptions {
        input_shapes: vec![vec![8, 4]],
        device: Device::Cuda(0),
        calls: 3,
        warmup: true,
        ..ScriptProfileOptions::default()
    };
    let run = profile_torchscript(&fixture("mlp.pt"), &options).map_err(|e| e.to_string())?;
    let json = run.profile.to_json_value().map_err(|e| e.to_string())?;
    check(json["device_memory"]["status"] == "measured", format!("{}", json["device_memory"]))?;
    check(json["context"]["device_resolution"] == "model_state", "resolution")?;
    check(run.outputs.first().is_some_and(|output| output.device() == Device::Cpu), "outputs copied to CPU")?;
    Ok(format!("peak allocated {} B", json["device_memory"]["peak_allocated_bytes"]))
}

fn device_changed_or_multi_device() -> Row {
    if Cuda::device_count() < 2 {
        return Ok("one GPU: device-change and multi-device rows not applicable".into());
    }
    let weight = Tensor::ones([8], (Kind::Float, Device::Cuda(0)));
    let holder = Arc::new(std::sync::Mutex::new(weight));
    let getter_holder = Arc::clone(&holder);
    let mut adapter = TorchResourceProfileAdapter::with_model_getter(move || {
        let tensor = getter_holder.lock().map_err(|_| tally_torch::TorchError::PoisonedVarStore)?;
        Ok(Some(ModelTensors::new(vec![tensor.shallow_clone()], Vec::new())))
    });
    adapter.reset_peak_device_memory().map_err(|e| e.to_string())?;
    let moved = holder.lock().map_err(|_| "poisoned")?.to_device(Device::Cuda(1));
    *holder.lock().map_err(|_| "poisoned")? = moved;
    let peak = adapter.peak_device_memory().map_err(|e| e.to_string())?;
    check(
        peak.readings().unavailable_reason.as_deref()
            == Some(
                "The active Torch device changed after the allocator measurement boundary was established.",
            ),
        format!("{:?}", peak.readings().unavailable_reason),
    )?;
    let first = Tensor::ones([2], (Kind::Float, Device::Cuda(0)));
    let second = Tensor::ones([2], (Kind::Float, Device::Cuda(1)));
    let mut adapter = TorchResourceProfileAdapter::with_model_getter(move || {
        Ok(Some(ModelTensors::new(vec![first.shallow_clone(), second.shallow_clone()], Vec::new())))
    });
    let metadata = adapter.metadata().map_err(|e| e.to_string())?;
    check(metadata.device.as_deref() == Some("cuda:0,cuda:1"), format!("{:?}", metadata.device))?;
    check(metadata.device_resolution.as_str() == "multi_device_model", "resolution")?;
    let sync = adapter.synchronize().map_err(|e| e.to_string())?;
    check(sync.status == OperationStatus::Succeeded, "synchronize both")?;
    let reset = adapter.reset_peak_device_memory().map_err(|e| e.to_string())?;
    check(reset.status == OperationStatus::Unavailable, "multi-device reset unavailable")?;
    Ok("device change and two-device model answered as vertebrae".into())
}

fn bad_index_is_an_error() -> Row {
    let device = TorchDevice::from(Device::Cuda(100));
    match (allocator_stats(&device), reset_peak_stats(&device)) {
        (Err(a), Err(b)) => Ok(format!("cuda:100: {a}; {b}")),
        _ => Err("an out-of-range device index was accepted".into()),
    }
}

fn main() -> std::process::ExitCode {
    if !Cuda::is_available() {
        if Path::new("/dev/nvidiactl").exists() {
            println!(
                "FAILED: an NVIDIA device node exists but libtorch sees no CUDA device \
                 (driver older than libtorch's CUDA build?)"
            );
            return std::process::ExitCode::FAILURE;
        }
        println!("skipped: no CUDA device visible to libtorch (tch::Cuda::is_available() is false)");
        return std::process::ExitCode::SUCCESS;
    }
    println!("libtorch sees {} CUDA device(s)", Cuda::device_count());
    let rows: [CheckRow; 6] = [
        ("metadata/synchronize", metadata_on_cuda),
        ("allocator window", allocator_window),
        ("profiler on TorchScript", profiled_torchscript_matches_cpu),
        ("profile_torchscript", profile_torchscript_on_cuda),
        ("device change/multi", device_changed_or_multi_device),
        ("bad device index", bad_index_is_an_error),
    ];
    let mut failed = 0;
    for (name, row) in rows {
        let result = std::panic::catch_unwind(row).unwrap_or_else(|_| Err("panicked".into()));
        match result {
            Ok(detail) => println!("{name:<26} ok      {detail}"),
            Err(why) => {
                failed += 1;
                println!("{name:<26} FAILED  {why}");
            }
        }
    }
    if failed > 0 { std::process::ExitCode::FAILURE } else { std::process::ExitCode::SUCCESS }
}
