//! `profile_torchscript`, what `tally profile MODEL.pt` runs: the module
//! really runs (outputs equal torch's in Python for the same synthetic
//! inputs), the profile has the adapter's answers, and bad options or
//! inputs are errors, not panics.

use std::path::PathBuf;

use serde_json::{Value, json};
use tally_torch::tch::{Cuda, Device};
use tally_torch::{ScriptProfileOptions, TorchError, profile_torchscript, tensor_json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixture("expected.json")).expect("expected.json is committed");
    serde_json::from_str(&text).expect("expected.json is JSON")
}

fn shapes(model: &Value) -> Vec<Vec<i64>> {
    model["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(|input| {
            input["shape"].as_array().expect("shape").iter().map(|d| d.as_i64().expect("int")).collect()
        })
        .collect()
}

fn options(input_shapes: Vec<Vec<i64>>, calls: u64, warmup: bool) -> ScriptProfileOptions {
    ScriptProfileOptions { input_shapes, calls, warmup, ..ScriptProfileOptions::default() }
}

#[test]
fn synthetic_inputs_and_outputs_are_the_ones_torch_computes_in_python() {
    let expected = expected();
    for name in ["mlp", "two_inputs", "normed"] {
        let model = &expected["models"][name];
        let run = profile_torchscript(&fixture(&format!("{name}.pt")), &options(shapes(model), 2, false))
            .expect("profile runs");
        for (input, want) in run.inputs.iter().zip(model["inputs"].as_array().expect("inputs")) {
            assert_eq!(tensor_json("x", input).expect("json")["values"], want["values"], "{name}: input");
        }
        assert_eq!(run.outputs.len(), 1);
        let output = tensor_json("y", &run.outputs[0]).expect("json");
        assert_eq!(output["shape"], model["output"]["shape"], "{name}");
        let (actual, want) = (
            output["values"].as_array().expect("values"),
            model["output"]["values"].as_array().expect("values"),
        );
        assert_eq!(actual.len(), want.len());
        for (a, w) in actual.iter().zip(want) {
            let (a, w) = (a.as_f64().expect("finite"), w.as_f64().expect("finite"));
            assert!((a - w).abs() <= 1e-5 * w.abs().max(1.0), "{name}: {a} vs {w}");
        }
    }
}

#[test]
fn the_profile_carries_the_adapters_answers_and_the_checkpoint() {
    let expected = expected();
    let path = fixture("mlp.pt");
    let run = profile_torchscript(&path, &options(vec![vec![5, 4]], 3, true)).expect("profile runs");
    assert_eq!(run.samples_per_call, 5);
    assert_eq!(run.libtorch_version, expected["torch_version"].as_str().expect("version"));
    let json = run.profile.to_json_value().expect("serializes");
    assert_eq!(json["status"], "measured");
    assert_eq!(json["inference"]["batch_sizes"], json!([5, 5, 5, 5]));
    assert_eq!(json["inference"]["warm_call_count"], 3, "the warm-up is the first call");
    let footprint = &expected["models"]["mlp"]["footprint"];
    for key in ["parameter_count", "parameter_bytes", "trainable_parameter_count", "buffer_bytes"] {
        assert_eq!(json["model"][key], footprint[key], "{key}");
    }
    assert_eq!(json["model"]["checkpoint_bytes"], json!(std::fs::metadata(&path).expect("fixture").len()));
    assert_eq!(json["device_memory"]["status"], "not_applicable");
    assert_eq!(json["context"]["device_resolution"], "model_state");
    assert_eq!(json["context"]["libtorch_version"], expected["torch_version"]);
    assert_eq!(json["context"]["weight_dtypes"], json!(["torch.float32"]));
}

#[test]
fn bad_options_and_failing_calls_are_errors() {
    let mlp = fixture("mlp.pt");
    let error = |result: Result<_, TorchError>| result.map(|_| ()).expect_err("must fail").to_string();
    assert!(
        error(profile_torchscript(&mlp, &options(vec![vec![2, 4]], 0, false))).contains("at least one call")
    );
    assert!(error(profile_torchscript(&mlp, &options(Vec::new(), 1, false))).contains("shape of each"));
    assert!(error(profile_torchscript(&mlp, &options(vec![vec![2, 0]], 1, false))).contains("below 1"));
    // libtorch's own errors: a missing file, the wrong width, the wrong arity.
    let missing = fixture("no_such_model.pt");
    assert!(matches!(
        profile_torchscript(&missing, &options(vec![vec![1]], 1, false)),
        Err(TorchError::Tch(_))
    ));
    assert!(matches!(
        profile_torchscript(&mlp, &options(vec![vec![2, 5]], 1, false)),
        Err(TorchError::Tch(_))
    ));
    let arity = options(vec![vec![2, 4], vec![2, 4]], 1, false);
    assert!(matches!(profile_torchscript(&mlp, &arity), Err(TorchError::Tch(_))));
    // A device the build cannot use fails at load, as an error.
    if !Cuda::is_available() {
        let cuda = ScriptProfileOptions { device: Device::Cuda(0), ..options(vec![vec![2, 4]], 1, false) };
        assert!(profile_torchscript(&mlp, &cuda).is_err());
    }
}
