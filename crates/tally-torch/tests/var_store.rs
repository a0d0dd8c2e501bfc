//! A model built in Rust with tch::nn: known parameter counts, float32 and
//! float16 variables, frozen ones and a buffer; device resolution; statuses
//! on CPU; the forward pass against a plain-Rust computation.

use serde_json::{Value, json};
use tally_profile::profile::{DeviceMeasurementStatus, ModelMeasurementStatus, OperationStatus};
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler};
use tally_torch::tch::nn::{self, Module, VarStore};
use tally_torch::tch::{Cuda, Device, Kind, Tensor};
use tally_torch::{ModelTensors, TorchResourceProfileAdapter, kind_name};

/// Linear(4, 8) frozen -> ReLU -> Linear(8, 3), a trainable float16 table
/// of 5x2 and a float32 buffer of 3 (running statistics, not trained).
struct Model {
    var_store: VarStore,
    hidden: nn::Linear,
    out: nn::Linear,
}

fn model() -> Model {
    let var_store = VarStore::new(Device::Cpu);
    let root = var_store.root();
    let hidden = nn::linear(&root / "hidden", 4, 8, Default::default());
    let out = nn::linear(&root / "out", 8, 3, Default::default());
    let _table = (&root / "embedding").add("table", Tensor::ones([5, 2], (Kind::Half, Device::Cpu)), true);
    let _stats = (&root / "stats").zeros_no_train("running_mean", &[3]);
    // Freezing one layer: its variables stay parameters, not trainable ones.
    let _ = hidden.ws.set_requires_grad(false);
    if let Some(bias) = &hidden.bs {
        let _ = bias.set_requires_grad(false);
    }
    Model { var_store, hidden, out }
}

// Sizes written out from the architecture above.
const HIDDEN: u64 = 4 * 8 + 8;
const OUT: u64 = 8 * 3 + 3;
const TABLE: u64 = 5 * 2;
const STATS: u64 = 3;

fn json_of<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).expect("serializes")
}

#[test]
fn footprint_counts_parameters_trainable_ones_buffers_and_dtypes() {
    let model = model();
    let footprint =
        ModelTensors::from_var_store(&model.var_store).expect("tensors").footprint().expect("footprint");
    assert_eq!(footprint.status(), ModelMeasurementStatus::Measured);
    let readings = footprint.readings();
    assert_eq!(readings.parameter_count, Some(HIDDEN + OUT + TABLE));
    assert_eq!(readings.parameter_bytes, Some((HIDDEN + OUT) * 4 + TABLE * 2));
    assert_eq!(readings.trainable_parameter_count, Some(OUT + TABLE));
    assert_eq!(readings.trainable_parameter_bytes, Some(OUT * 4 + TABLE * 2));
    assert_eq!(readings.buffer_bytes, Some(STATS * 4));
    assert_eq!(readings.in_memory_bytes, Some((HIDDEN + OUT) * 4 + TABLE * 2 + STATS * 4));
    assert_eq!(readings.weight_dtypes, ["torch.float16", "torch.float32"]);
}

#[test]
fn the_adapter_sees_later_changes_to_the_var_store() {
    let mut model = model();
    let mut adapter = TorchResourceProfileAdapter::for_var_store(&model.var_store);
    model.var_store.freeze();
    let frozen = adapter.model_footprint().expect("footprint");
    assert_eq!(frozen.readings().trainable_parameter_count, Some(0));
    model.var_store.unfreeze();
    let thawed = adapter.model_footprint().expect("footprint");
    assert_eq!(thawed.readings().trainable_parameter_count, Some(HIDDEN + OUT + TABLE));
    model.var_store.double();
    let metadata = adapter.metadata().expect("metadata");
    assert_eq!(metadata.weight_dtypes, ["torch.float64"], "set_kind converts every float variable");
}

#[test]
fn statuses_on_cpu_are_vertebraes() {
    let model = model();
    let mut adapter = TorchResourceProfileAdapter::for_var_store(&model.var_store);
    let metadata = adapter.metadata().expect("metadata");
    assert_eq!(
        json_of(&metadata),
        json!({
            "backend": "torch", "device": "cpu", "device_resolution": "model_state", "asynchronous": false,
            "synchronization_method": "not_applicable", "weight_dtypes": ["torch.float16", "torch.float32"],
        })
    );
    assert_eq!(adapter.synchronize().expect("sync").status, OperationStatus::NotApplicable);
    let reset = adapter.reset_peak_device_memory().expect("reset");
    assert_eq!(reset.status, OperationStatus::NotApplicable);
    assert_eq!(reset.reason.as_deref(), Some("CPU memory is reported through process RSS."));
    let peak = adapter.peak_device_memory().expect("peak");
    assert_eq!(peak.status(), DeviceMeasurementStatus::NotApplicable);
    assert_eq!(peak.readings().device.as_deref(), Some("cpu"));
    assert_eq!(peak.readings().backend.as_deref(), Some("torch"));
}

#[test]
fn device_resolution_follows_vertebraes_order() {
    let model = model();
    let resolution = |adapter: &mut TorchResourceProfileAdapter| {
        let metadata = adapter.metadata().expect("metadata");
        (metadata.device.unwrap_or_default(), metadata.device_resolution.as_str().to_owned())
    };
    let for_model = || TorchResourceProfileAdapter::for_var_store(&model.var_store);
    let pair = |device: &str, source: &str| (device.to_owned(), source.to_owned());

    assert_eq!(resolution(&mut for_model()), pair("cpu", "model_state"));
    assert_eq!(resolution(&mut for_model().with_device(Device::Cpu)), pair("cpu", "model_state"));
    assert_eq!(
        resolution(&mut for_model().with_device(Device::Cuda(0))),
        pair("cpu", "model_state_conflicts_with_profiling_hint")
    );
    // The resolver is asked first, even when it has no answer.
    assert_eq!(
        resolution(&mut for_model().with_device(Device::Cuda(0)).with_device_resolver(|| None)),
        pair("cpu", "model_state")
    );
    assert_eq!(
        resolution(&mut for_model().with_device_resolver(|| Some(Device::Cuda(1)))),
        pair("cpu", "model_state_conflicts_with_profiling_hint")
    );

    let none = TorchResourceProfileAdapter::new;
    assert_eq!(resolution(&mut none()), pair("cpu", "default_cpu"));
    assert_eq!(resolution(&mut none().with_device(Device::Cuda(2))), pair("cuda:2", "explicit"));
    assert_eq!(
        resolution(&mut none().with_device(Device::Cuda(2)).with_device_resolver(|| Some(Device::Cuda(1)))),
        pair("cuda:1", "extractor_resolver")
    );
    assert_eq!(
        resolution(&mut none().with_device(Device::Cuda(2)).with_device_resolver(|| None)),
        pair("cuda:2", "explicit")
    );

    // An empty store has no tensors: its own device stands in (model.device).
    let empty = VarStore::new(Device::Cpu);
    let mut adapter = TorchResourceProfileAdapter::for_var_store(&empty).with_device(Device::Cuda(0));
    assert_eq!(resolution(&mut adapter), pair("cpu", "model_state_conflicts_with_profiling_hint"));
    let footprint = adapter.model_footprint().expect("footprint");
    assert_eq!(footprint.status(), ModelMeasurementStatus::Unavailable);
    assert_eq!(
        footprint.readings().unavailable_reason.as_deref(),
        Some("The model exposes no parameters or buffers.")
    );
}

#[test]
fn a_cuda_device_without_a_usable_gpu_fails_the_hooks_with_libtorchs_message() {
    // No model, a CUDA device declared: metadata needs no GPU; the hooks that
    // touch the device fail with a typed error instead of aborting.
    let mut adapter = TorchResourceProfileAdapter::new().with_device(Device::Cuda(0));
    let metadata = adapter.metadata().expect("metadata");
    assert!(metadata.asynchronous);
    assert_eq!(metadata.synchronization_method.as_deref(), Some("torch.cuda.synchronize"));
    if Cuda::is_available() {
        return tally_testkit::skip(
            "a CUDA device is available; cargo xtask gpu-check covers the CUDA paths",
        );
    }
    let error = adapter.reset_peak_device_memory().expect_err("no initialized CUDA allocator");
    eprintln!("reset without a GPU: {error}");
    assert_eq!(error.kind(), "RuntimeError");
    assert!(!error.message().is_empty());
    let error = adapter.synchronize().expect_err("no CUDA device to synchronize");
    eprintln!("synchronize without a GPU: {error}");
    assert_eq!(error.kind(), "RuntimeError");
    // Never reset: the device "changed" since the (missing) boundary.
    let peak = adapter.peak_device_memory().expect("peak");
    assert_eq!(peak.status(), DeviceMeasurementStatus::Unavailable);
    assert_eq!(
        peak.readings().unavailable_reason.as_deref(),
        Some("The active Torch device changed after the allocator measurement boundary was established.")
    );
}

fn linear(x: &[f32], inputs: usize, weight: &[f32], bias: &[f32]) -> Vec<f32> {
    let outputs = bias.len();
    x.chunks(inputs)
        .flat_map(|row| {
            (0..outputs)
                .map(move |o| (0..inputs).map(|i| row[i] * weight[o * inputs + i]).sum::<f32>() + bias[o])
        })
        .collect()
}

fn values(tensor: &Tensor) -> Vec<f32> {
    Vec::<f32>::try_from(&tensor.reshape([-1])).expect("float32 CPU tensor")
}

#[test]
fn the_model_runs_under_the_profiler_and_its_output_is_the_plain_computation() {
    let model = model();
    let adapter = TorchResourceProfileAdapter::for_var_store(&model.var_store);
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
    let input_values: Vec<f32> = (0..2 * 4).map(|i| (i as f32 - 3.5) * 0.25).collect();
    let input = Tensor::from_slice(&input_values).reshape([2, 4]);
    let layers = nn::seq().add_fn(|x| x.shallow_clone());
    let output = profiler.measure_call(
        || model.out.forward(&model.hidden.forward(&layers.forward(&input)).relu()),
        CallSpec::new(2, "batch"),
    );
    let profile = profiler.finish(false);

    let bias = |layer: &nn::Linear| values(layer.bs.as_ref().expect("linear has a bias"));
    let hidden = linear(&input_values, 4, &values(&model.hidden.ws), &bias(&model.hidden));
    let hidden: Vec<f32> = hidden.into_iter().map(|v| v.max(0.0)).collect();
    let expected = linear(&hidden, 8, &values(&model.out.ws), &bias(&model.out));
    let actual = values(&output);
    assert_eq!(actual.len(), 2 * 3);
    for (a, e) in actual.iter().zip(&expected) {
        assert!((a - e).abs() <= 1e-5 * e.abs().max(1.0), "{a} vs {e}");
    }

    let json = profile.to_json_value().expect("profile serializes");
    assert_eq!(json["model"]["parameter_count"], json!(HIDDEN + OUT + TABLE));
    assert_eq!(json["context"]["device_resolution"], "model_state");
    assert_eq!(json["context"]["resource_adapter"], "tally_torch.TorchResourceProfileAdapter");
    assert_eq!(json["device_memory"]["status"], "not_applicable");
    assert_eq!(json["context"]["synchronization_status"], "synchronized");
}

#[test]
fn dtype_names_read_from_tensors_match_the_tch_kinds() {
    let kinds = [
        Kind::Uint8,
        Kind::Int8,
        Kind::Int16,
        Kind::Int,
        Kind::Int64,
        Kind::Half,
        Kind::Float,
        Kind::Double,
        Kind::ComplexHalf,
        Kind::ComplexFloat,
        Kind::ComplexDouble,
        Kind::Bool,
        Kind::BFloat16,
        Kind::Float8e5m2,
        Kind::Float8e4m3fn,
        Kind::Float8e5m2fnuz,
        Kind::Float8e4m3fnuz,
    ];
    for kind in kinds {
        let tensor = Tensor::zeros([3], (kind, Device::Cpu));
        let tensors = ModelTensors::new(vec![tensor], Vec::new());
        assert_eq!(tensors.weight_dtypes().expect("dtypes"), [kind_name(kind)], "{kind:?}");
        let footprint = tensors.footprint().expect("footprint");
        assert_eq!(
            footprint.readings().parameter_bytes,
            Some(3 * kind.elt_size_in_bytes() as u64),
            "{kind:?}: element size"
        );
    }
}

#[test]
fn a_lazily_loaded_model_is_unavailable_until_loaded() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let slot: Rc<RefCell<Option<VarStore>>> = Rc::new(RefCell::new(None));
    let getter_slot = Rc::clone(&slot);
    let mut adapter = TorchResourceProfileAdapter::with_model_getter(move || {
        getter_slot.borrow().as_ref().map(ModelTensors::from_var_store).transpose()
    });
    let before = adapter.model_footprint().expect("footprint");
    assert_eq!(before.readings().unavailable_reason.as_deref(), Some("The model has not been loaded."));
    let var_store = VarStore::new(Device::Cpu);
    let _ = var_store.root().zeros("w", &[7]);
    *slot.borrow_mut() = Some(var_store);
    let after = adapter.model_footprint().expect("footprint");
    assert_eq!(after.readings().parameter_count, Some(7));
}
