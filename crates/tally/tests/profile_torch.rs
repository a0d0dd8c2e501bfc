//! `tally profile MODEL.pt` end to end on libtorch (feature `torch`): the
//! JSON profile, the dumped outputs against torch's in Python for the same
//! inputs (tally-torch's fixtures), the table, errors, and the JSON loaded
//! by vertebrae's `resource_profile_from_dict` when TALLY_PYTHON is set.
//! Without the feature, the command says how to enable it.

mod support;

use std::path::PathBuf;

use support::{run, stderr, tally};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tally-torch/tests/fixtures").join(name)
}

#[cfg(not(feature = "torch"))]
#[test]
fn without_the_feature_the_command_says_how_to_enable_it() {
    let output = run(tally().args(["profile", "--input-shape", "2,4"]).arg(fixture("mlp.pt")));
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("without libtorch support") && message.contains("--features torch"),
        "{message}"
    );
}

#[cfg(feature = "torch")]
mod with_torch {
    use std::path::Path;

    use serde_json::{Value, json};
    use tally_profile::profile::ResourceProfile;

    use super::*;

    fn expected() -> Value {
        let text = std::fs::read_to_string(fixture("expected.json")).expect("expected.json");
        serde_json::from_str(&text).expect("JSON")
    }

    fn shape_args(model: &Value) -> Vec<String> {
        let mut args = Vec::new();
        for input in model["inputs"].as_array().expect("inputs") {
            let sizes: Vec<String> =
                input["shape"].as_array().expect("shape").iter().map(|size| size.to_string()).collect();
            args.extend(["--input-shape".to_owned(), sizes.join(",")]);
        }
        args
    }

    fn profile_json(name: &str, extra: &[&str], dump: &Path) -> Value {
        let output = run(tally()
            .args(["profile", "--format", "json", "--calls", "3"])
            .arg(fixture(&format!("{name}.pt")))
            .args(shape_args(&expected()["models"][name]))
            .args(extra)
            .arg("--dump-outputs")
            .arg(dump));
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        serde_json::from_slice(&output.stdout).expect("stdout is one JSON object")
    }

    fn floats(value: &Value) -> Vec<f64> {
        value.as_array().expect("values").iter().map(|v| v.as_f64().expect("finite")).collect()
    }

    #[test]
    fn profiles_torchscript_models_and_their_outputs_are_torchs() {
        let expected = expected();
        for name in ["mlp", "two_inputs", "normed", "tied"] {
            let model = &expected["models"][name];
            let dump = tempfile::tempdir().expect("tempdir");
            let profile = profile_json(name, &[], dump.path());
            let loaded = ResourceProfile::from_json_value(profile.clone()).expect("vertebrae JSON");
            assert_eq!(loaded.to_json_value().expect("finite"), profile);

            let batch = model["inputs"][0]["shape"][0].as_u64().expect("batch");
            assert_eq!(profile["status"], "measured");
            assert_eq!(profile["inference"]["batch_sizes"], json!([batch, batch, batch]));
            assert_eq!(profile["inference"]["warm_call_count"], 2);
            assert_eq!(profile["context"]["backend"], "torch");
            assert_eq!(profile["context"]["device"], "cpu");
            assert_eq!(profile["context"]["device_resolution"], "model_state");
            assert_eq!(profile["context"]["resource_adapter"], "tally_torch.TorchResourceProfileAdapter");
            assert_eq!(profile["device_memory"]["status"], "not_applicable");
            for key in [
                "parameter_count",
                "parameter_bytes",
                "trainable_parameter_count",
                "buffer_bytes",
                "weight_dtypes",
            ] {
                assert_eq!(profile["model"][key], model["footprint"][key], "{name}: {key}");
            }
            let checkpoint = std::fs::metadata(fixture(&format!("{name}.pt"))).expect("fixture").len();
            assert_eq!(profile["model"]["checkpoint_bytes"], json!(checkpoint));

            let io: Value =
                serde_json::from_str(&std::fs::read_to_string(dump.path().join("io.json")).expect("io.json"))
                    .expect("JSON");
            for (input, want) in io["inputs"]
                .as_array()
                .expect("inputs")
                .iter()
                .zip(model["inputs"].as_array().expect("inputs"))
            {
                assert_eq!(input["values"], want["values"], "{name}: the synthetic input is the fixture's");
            }
            let output = &io["outputs"][0];
            assert_eq!(output["shape"], model["output"]["shape"]);
            for (a, w) in floats(&output["values"]).iter().zip(floats(&model["output"]["values"])) {
                assert!((a - w).abs() <= 1e-5 * w.abs().max(1.0), "{name}: {a} vs {w}");
            }
        }
    }

    #[test]
    fn the_table_names_the_runtime_inputs_and_footprint() {
        let output = run(tally()
            .args(["profile", "--calls", "2", "--warmup", "--input-shape", "2,4"])
            .arg(fixture("mlp.pt")));
        assert!(output.status.success(), "{}", stderr(&output));
        let table = String::from_utf8_lossy(&output.stdout);
        let version = expected()["torch_version"].as_str().expect("version").to_owned();
        assert!(table.contains(&format!("libtorch {version} on cpu")), "{table}");
        assert!(table.contains("input0: torch.float32 [2, 4]"), "{table}");
        assert!(table.contains("3 (2 warm)"), "{table}");
        assert!(table.contains("not_applicable: CPU memory is reported through process RSS."), "{table}");
    }

    #[test]
    fn errors_are_messages_not_panics() {
        let cases: [(&[&str], &str); 4] = [
            (&[], "--input-shape"),
            (&["--input-shape", "2,5"], "profiling"),
            (&["--input-shape", "2,4", "--device", "gpu"], "expected cpu, cuda"),
            (&["--input-shape", "2,4", "--batch", "2"], "apply to ONNX models"),
        ];
        for (args, needle) in cases {
            let output = run(tally().arg("profile").arg(fixture("mlp.pt")).args(args));
            assert_eq!(output.status.code(), Some(1), "{args:?}: {}", stderr(&output));
            assert!(stderr(&output).contains(needle), "{args:?}: {}", stderr(&output));
            assert!(!stderr(&output).contains("panicked"), "{args:?}");
        }
        let output = run(tally().args(["profile", "--input-shape", "2,0"]).arg(fixture("mlp.pt")));
        assert_eq!(output.status.code(), Some(2), "clap rejects a size of 0");
    }

    #[test]
    fn vertebrae_loads_the_profile() {
        let python = match tally_testkit::reference_python(&["vertebrae"]) {
            Ok(python) => python,
            Err(why) => {
                return tally_testkit::skip(format!("vertebrae's resource_profile_from_dict check: {why}"));
            }
        };
        let dump = tempfile::tempdir().expect("tempdir");
        let profile = profile_json("normed", &[], dump.path());
        let script = "import dataclasses, json, sys\n\
                      from vertebrae.profiling import resource_profile_from_dict\n\
                      profile = resource_profile_from_dict(json.load(sys.stdin))\n\
                      print(json.dumps(dataclasses.asdict(profile)))\n";
        let output = tally_testkit::run_python(&python, script, profile.to_string().as_bytes());
        assert!(output.status.success(), "vertebrae rejected the profile: {}", stderr(&output));
        let back: Value = serde_json::from_slice(&output.stdout).expect("asdict JSON");
        assert_eq!(back, profile, "vertebrae's asdict of the loaded profile is tally's JSON");
    }
}
