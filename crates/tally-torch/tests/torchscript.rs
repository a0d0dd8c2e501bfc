//! TorchScript modules made by python/fixtures/make_torchscript_models.py:
//! every adapter hook against vertebrae's answers for the same file, the
//! footprint, dtypes and devices, and the outputs checked against Python's
//! and against the same computation done in plain Rust.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tally_profile::ResourceProfileAdapter;
use tally_torch::tch::{CModule, Device, Kind, Tensor};
use tally_torch::{ModelTensors, TorchResourceProfileAdapter};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).expect("expected.json is committed");
    serde_json::from_str(&text).expect("expected.json is JSON")
}

fn load(name: &str) -> CModule {
    CModule::load(fixtures().join(format!("{name}.pt"))).expect("fixture module loads")
}

fn hint_device(hint: &str) -> Option<Device> {
    match hint {
        "None" => None,
        "cpu" => Some(Device::Cpu),
        "cuda:0" => Some(Device::Cuda(0)),
        other => panic!("unexpected hint {other} in expected.json"),
    }
}

fn with_hint(adapter: TorchResourceProfileAdapter, hint: &str) -> TorchResourceProfileAdapter {
    match hint_device(hint) {
        Some(device) => adapter.with_device(device),
        None => adapter,
    }
}

fn to_value<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).expect("profile payloads serialize")
}

/// Every hook vertebrae answered, answered the same way by tally.
fn assert_hooks(adapter: &mut TorchResourceProfileAdapter, expected: &Value, case: &str) {
    let expected = expected.as_object().expect("hook answers are an object");
    for (hook, answer) in expected {
        let actual = match hook.as_str() {
            "metadata" => to_value(adapter.metadata().expect("metadata")),
            "synchronize" => to_value(adapter.synchronize().expect("synchronize")),
            "reset_peak_device_memory" => to_value(adapter.reset_peak_device_memory().expect("reset")),
            "peak_device_memory" => to_value(adapter.peak_device_memory().expect("peak")),
            "model_footprint" => to_value(adapter.model_footprint().expect("footprint")),
            other => panic!("unexpected hook {other}"),
        };
        assert_eq!(&actual, answer, "{case}: hook {hook}");
    }
}

#[test]
fn every_hook_answers_as_vertebrae_does_for_each_model_and_declared_device() {
    let expected = expected();
    let models = expected["models"].as_object().expect("models");
    assert_eq!(models.len(), 7);
    for (name, model) in models {
        let module = Arc::new(load(name));
        for (hint, answers) in model["adapter"].as_object().expect("adapter answers") {
            let mut adapter = with_hint(TorchResourceProfileAdapter::for_module(Arc::clone(&module)), hint);
            assert_hooks(&mut adapter, answers, &format!("{name} with device {hint}"));
        }
    }
}

#[test]
fn without_a_model_hooks_answer_as_vertebrae_does() {
    let expected = expected();
    for (hint, answers) in expected["no_model"].as_object().expect("no_model") {
        let mut adapter = with_hint(TorchResourceProfileAdapter::new(), hint);
        assert_hooks(&mut adapter, answers, &format!("no model, device {hint}"));
    }
}

#[test]
fn footprint_dtypes_and_devices_match_vertebraes_helpers() {
    let expected = expected();
    for (name, model) in expected["models"].as_object().expect("models") {
        let tensors = ModelTensors::from_module(&load(name)).expect("tensors");
        assert_eq!(to_value(tensors.footprint().expect("footprint")), model["footprint"], "{name}");
        assert_eq!(to_value(tensors.weight_dtypes().expect("dtypes")), model["weight_dtypes"], "{name}");
        let devices: Vec<String> =
            tensors.devices().expect("devices").iter().map(|device| device.name().to_owned()).collect();
        assert_eq!(to_value(devices), model["devices"], "{name}");
    }
}

#[test]
fn buffers_are_found_recursively_and_tied_parameters_count_once() {
    let expected = expected();
    let normed = ModelTensors::from_module(&load("normed")).expect("tensors");
    let buffer_names = expected["models"]["normed"]["buffers"].as_object().expect("buffers");
    assert_eq!(normed.buffers().len(), buffer_names.len());
    assert_eq!(normed.buffers().len(), 4, "running_mean, running_var, num_batches_tracked, scale");

    // TorchScript lists the shared weight under both names...
    let tied = load("tied");
    let names: Vec<String> =
        tied.named_parameters().expect("parameters").into_iter().map(|(n, _)| n).collect();
    assert!(names.contains(&"encode.weight".to_owned()) && names.contains(&"decode.weight".to_owned()));
    // ...and the footprint counts its 9 values once, plus the 3 of the bias.
    let footprint =
        to_value(ModelTensors::from_module(&tied).expect("tensors").footprint().expect("footprint"));
    assert_eq!(footprint["parameter_count"], json!(3 * 3 + 3));
}

fn values(value: &Value) -> Vec<f64> {
    value.as_array().expect("values").iter().map(|v| v.as_f64().expect("float")).collect()
}

fn shape(value: &Value) -> Vec<i64> {
    value.as_array().expect("shape").iter().map(|v| v.as_i64().expect("int")).collect()
}

fn tensor(entry: &Value) -> Tensor {
    let data: Vec<f32> = values(&entry["values"]).into_iter().map(|v| v as f32).collect();
    Tensor::from_slice(&data).reshape(shape(&entry["shape"]))
}

fn read(tensor: &Tensor) -> Vec<f64> {
    let flat = tensor.to_kind(Kind::Double).reshape([-1]);
    Vec::<f64>::try_from(&flat).expect("a CPU tensor converts")
}

fn assert_close(actual: &[f64], expected: &[f64], what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        let tolerance = 1e-5 * e.abs().max(1.0);
        assert!((a - e).abs() <= tolerance, "{what}[{index}]: {a} vs {e}");
    }
}

fn parameter(model: &Value, name: &str) -> Vec<f64> {
    values(&model["parameters"][name]["values"])
}

fn buffer(model: &Value, name: &str) -> Vec<f64> {
    values(&model["buffers"][name]["values"])
}

/// `x W^T + b` for a row-major `rows x inputs` x and `outputs x inputs` W.
fn linear(x: &[f64], inputs: usize, weight: &[f64], bias: Option<&[f64]>) -> Vec<f64> {
    let outputs = weight.len() / inputs;
    let mut y = Vec::new();
    for row in x.chunks(inputs) {
        for o in 0..outputs {
            let dot: f64 = (0..inputs).map(|i| row[i] * weight[o * inputs + i]).sum();
            y.push(dot + bias.map_or(0.0, |b| b[o]));
        }
    }
    y
}

/// The forward pass of each fixture model, written out in plain Rust from
/// the weights Python exported.
fn independent_output(name: &str, model: &Value, inputs: &[Vec<f64>]) -> Vec<f64> {
    match name {
        "mlp" => {
            let hidden = linear(
                &inputs[0],
                4,
                &parameter(model, "hidden.weight"),
                Some(&parameter(model, "hidden.bias")),
            );
            let hidden: Vec<f64> = hidden.into_iter().map(|v| v.max(0.0)).collect();
            linear(&hidden, 8, &parameter(model, "out.weight"), Some(&parameter(model, "out.bias")))
        }
        "tied" => {
            let weight = parameter(model, "encode.weight");
            let encoded = linear(&inputs[0], 3, &weight, None);
            linear(&encoded, 3, &weight, Some(&parameter(model, "decode.bias")))
        }
        "two_inputs" => {
            // x (3x4) @ W (4x2) + y (3x2)
            let weight = parameter(model, "weight");
            let (x, y) = (&inputs[0], &inputs[1]);
            (0..3)
                .flat_map(|r| (0..2).map(move |c| (r, c)))
                .map(|(r, c)| (0..4).map(|k| x[r * 4 + k] * weight[k * 2 + c]).sum::<f64>() + y[r * 2 + c])
                .collect()
        }
        "dtypes" | "split_devices" => {
            let gain = parameter(model, "gain");
            inputs[0].iter().enumerate().map(|(i, x)| x * gain[i % 2]).collect()
        }
        "normed" => {
            // x: 1x2x2x2; 1x1 conv to 3 channels; batch norm (eval, eps 1e-5);
            // then * scale + shift per channel.
            let x = &inputs[0];
            let (w, b) = (parameter(model, "conv.weight"), parameter(model, "conv.bias"));
            let (gamma, beta) = (parameter(model, "norm.weight"), parameter(model, "norm.bias"));
            let (mean, var) = (buffer(model, "norm.running_mean"), buffer(model, "norm.running_var"));
            let (scale, shift) = (buffer(model, "scale"), parameter(model, "shift"));
            let mut out = Vec::new();
            for c in 0..3 {
                for p in 0..4 {
                    let conv = w[c * 2] * x[p] + w[c * 2 + 1] * x[4 + p] + b[c];
                    let normed = (conv - mean[c]) / (var[c] + 1e-5).sqrt() * gamma[c] + beta[c];
                    out.push(normed * scale[c] + shift[c]);
                }
            }
            out
        }
        other => panic!("no independent computation for {other}"),
    }
}

#[test]
fn modules_really_run_outputs_match_python_and_an_independent_computation() {
    let expected = expected();
    let mut checked = 0;
    for (name, model) in expected["models"].as_object().expect("models") {
        let Some(inputs) = model.get("inputs").and_then(Value::as_array) else {
            continue;
        };
        let module = load(name);
        let input_tensors: Vec<Tensor> = inputs.iter().map(tensor).collect();
        let output = module.forward_ts(&input_tensors).expect("forward runs");
        assert_eq!(output.size(), shape(&model["output"]["shape"]), "{name}: output shape");
        let actual = read(&output);
        assert_close(&actual, &values(&model["output"]["values"]), &format!("{name} vs torch in Python"));
        let input_values: Vec<Vec<f64>> = inputs.iter().map(|input| values(&input["values"])).collect();
        let independent = independent_output(name, model, &input_values);
        assert_close(&actual, &independent, &format!("{name} vs plain Rust"));
        checked += 1;
    }
    assert_eq!(checked, 6, "every model but meta_only runs");
}

#[test]
fn parameter_values_read_through_tch_are_the_ones_python_saved() {
    let expected = expected();
    let mlp = &expected["models"]["mlp"];
    for (name, value) in load("mlp").named_parameters().expect("parameters") {
        assert_close(&read(&value), &parameter(mlp, &name), &name);
        let frozen = name.starts_with("hidden.");
        assert_eq!(value.requires_grad(), !frozen, "{name}: requires_grad survives TorchScript");
    }
}
