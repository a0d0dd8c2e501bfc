//! `tally profile MODEL.onnx` end to end on the real ONNX Runtime: the JSON
//! profile (statuses, call counts, batch sizes, throughput, footprint), the
//! dumped outputs against the networks computed in Rust from the
//! initializers, the table, and the library errors (never a panic).
//! Skipped (with a message) where no ONNX Runtime library is found.

#![cfg(feature = "onnx")]

#[path = "../../tally-onnx/tests/common/mod.rs"]
mod common;
mod support;

use std::path::Path;

use common::reference::{self, assert_close};
use common::{expected, fixture, runtime_library};
use serde_json::Value;
use support::{run, stderr, tally};
use tally_profile::profile::ResourceProfile;

fn profile_json(library: &Path, model: &str, extra: &[&str], dump: &Path) -> (Value, Value) {
    let output = run(tally()
        .args(["profile", "--format", "json", "--ort-lib"])
        .arg(library)
        .arg(fixture(model))
        .args(extra)
        .arg("--dump-outputs")
        .arg(dump));
    assert!(output.status.success(), "{model}: {}", stderr(&output));
    let profile: Value = serde_json::from_slice(&output.stdout).expect("stdout is one JSON object");
    let io: Value = serde_json::from_str(&std::fs::read_to_string(dump.join("io.json")).expect("io.json"))
        .expect("io.json is JSON");
    (profile, io)
}

fn values(tensor: &Value) -> Vec<f64> {
    tensor["values"].as_array().expect("values").iter().map(|v| v.as_f64().expect("finite")).collect()
}

fn check_profile(profile: &Value, model: &str, calls: usize, samples: u64) {
    let want = &expected()[model];
    // vertebrae's JSON: tally-core loads it back unchanged.
    let loaded = ResourceProfile::from_json_value(profile.clone()).expect("vertebrae JSON");
    assert_eq!(&loaded.to_json_value().expect("finite"), profile);
    assert_eq!(profile["status"], "measured");
    let inference = &profile["inference"];
    assert_eq!(inference["status"], "measured");
    assert_eq!(inference["batch_sizes"], serde_json::json!(vec![samples; calls]));
    assert_eq!(inference["warm_call_count"], (calls - 1) as u64);
    assert_eq!(inference["materialized_samples"], samples * calls as u64);
    let total = inference["total_materialized_seconds"].as_f64().expect("total");
    let throughput = inference["throughput_samples_per_second"].as_f64().expect("throughput");
    assert!((throughput - (samples * calls as u64) as f64 / total).abs() <= 1e-9 * throughput);
    assert_eq!(profile["context"]["backend"], "onnxruntime");
    assert_eq!(profile["context"]["device"], "CPUExecutionProvider");
    assert_eq!(profile["context"]["synchronization_method"], "InferenceSession.run");
    assert_eq!(profile["device_memory"]["status"], "unavailable");
    assert_eq!(profile["device_memory"]["unavailable_reason"], tally_onnx::NO_ALLOCATOR_PEAK_API);
    assert_eq!(profile["model"]["status"], "measured");
    assert_eq!(profile["model"]["parameter_count"], want["parameter_count"]);
    assert_eq!(profile["model"]["parameter_bytes"], want["parameter_bytes"]);
    assert_eq!(profile["model"]["weight_dtypes"], want["weight_dtypes"]);
    let artifacts = profile["model"]["artifacts"].as_array().expect("artifacts");
    assert_eq!(artifacts.len(), 1 + want["external_data"].as_object().expect("object").len());
    assert!(artifacts.iter().all(|artifact| artifact["status"] == "measured"));
}

#[test]
fn profiles_each_model_and_the_outputs_are_the_networks() {
    let Some(library) = runtime_library() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");

    let model = fixture("mlp_f32_f16.onnx");
    let (profile, io) =
        profile_json(&library, "mlp_f32_f16.onnx", &["--calls", "4"], &dir.path().join("mlp"));
    check_profile(&profile, "mlp_f32_f16.onnx", 4, 4);
    assert_eq!(io["inputs"][0]["shape"], serde_json::json!([4, 8]));
    let y = values(&io["outputs"][0]);
    assert_close(&y, &reference::mlp(&model, &values(&io["inputs"][0]), 4), 4e-3, "mlp y");

    let model = fixture("external_data.onnx");
    let (profile, io) = profile_json(
        &library,
        "external_data.onnx",
        &["--calls", "2", "--warmup"],
        &dir.path().join("external"),
    );
    check_profile(&profile, "external_data.onnx", 3, 1);
    assert_eq!(profile["context"]["call_types"], serde_json::json!(["warmup", "batch", "batch"]));
    assert_eq!(profile["model"]["artifacts"][1]["role"], "external_weights");
    let y = values(&io["outputs"][0]);
    assert_close(&y, &reference::external(&model, &values(&io["inputs"][0])), 1e-5, "external y");

    let model = fixture("symbolic_batch.onnx");
    let (profile, io) = profile_json(
        &library,
        "symbolic_batch.onnx",
        &["--calls", "3", "--batch", "2", "--dim", "seq=6"],
        &dir.path().join("symbolic"),
    );
    check_profile(&profile, "symbolic_batch.onnx", 3, 2);
    assert_eq!(io["inputs"][0]["shape"], serde_json::json!([2, 6, 4]));
    assert_eq!(io["outputs"][0]["shape"], serde_json::json!([2, 6, 3]));
    let y = values(&io["outputs"][0]);
    assert_close(&y, &reference::symbolic(&model, &values(&io["inputs"][0]), 12), 1e-5, "symbolic y");
}

#[test]
fn table_output_and_input_errors() {
    let Some(library) = runtime_library() else { return };
    let output = run(tally()
        .args(["profile", "--calls", "3", "--ort-lib"])
        .arg(&library)
        .arg(fixture("mlp_f32_f16.onnx")));
    assert!(output.status.success(), "{}", stderr(&output));
    let table = String::from_utf8_lossy(&output.stdout);
    for expected in
        ["x: FLOAT [4, 8]", "3 (2 warm)", "212 parameters", "TensorProto.FLOAT16", "checkpoint", "samples/s"]
    {
        assert!(table.contains(expected), "table lacks {expected:?}:\n{table}");
    }

    for (model, input) in
        [("string_input.onnx", "text"), ("sequence_input.onnx", "items"), ("map_input.onnx", "features")]
    {
        let output = run(tally().args(["profile", "--ort-lib"]).arg(&library).arg(fixture(model)));
        assert_eq!(output.status.code(), Some(1), "{model}");
        let message = stderr(&output);
        assert!(message.contains(&format!("input '{input}'")), "{model}: {message}");
        assert!(!message.contains("panicked"), "{model}: {message}");
    }
    let output =
        run(tally().args(["profile", "--ort-lib"]).arg(&library).arg(fixture("symbolic_batch.onnx")));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("--dim seq=N"), "{}", stderr(&output));
}

#[test]
fn missing_and_wrong_libraries_are_clean_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = fixture("mlp_f32_f16.onnx");
    let not_a_library = dir.path().join("libonnxruntime.so");
    std::fs::write(&not_a_library, "not a library\n").expect("write");
    let cases: Vec<(Vec<std::ffi::OsString>, Option<std::ffi::OsString>, &str)> = vec![
        // Nothing configured at all: the error says the three ways.
        (vec![], None, "--ort-lib PATH, ORT_DYLIB_PATH=PATH, or `pip install onnxruntime`"),
        // A wrong ORT_DYLIB_PATH, which `ort` itself would panic on.
        (vec![], Some(dir.path().join("missing.so").into()), "missing.so"),
        (vec![], Some(not_a_library.clone().into()), "is not a shared library"),
        (vec!["--ort-lib".into(), dir.path().join("nope.so").into()], None, "nope.so"),
        (vec!["--ort-lib".into(), model.clone().into()], None, "is not a shared library"),
    ];
    for (args, environment, needle) in cases {
        let mut command = tally();
        // No python3 on PATH either, so nothing can be found by itself.
        command.arg("profile").arg(&model).args(&args).env_remove("ORT_DYLIB_PATH").env("PATH", dir.path());
        if let Some(value) = &environment {
            command.env("ORT_DYLIB_PATH", value);
        }
        let output = run(&mut command);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?} {environment:?}: {message}");
        assert!(message.contains(needle), "{args:?} {environment:?}: {message}");
        assert!(!message.contains("panicked"), "{message}");
    }
    // A shared library that is not ONNX Runtime.
    let other = runtime_library()
        .and_then(|library| library.parent().map(|dir| dir.join("libonnxruntime_providers_shared.so")))
        .filter(|path| path.is_file());
    match other {
        Some(other) => {
            let output = run(tally().arg("profile").arg(&model).arg("--ort-lib").arg(&other));
            assert_eq!(output.status.code(), Some(1));
            assert!(stderr(&output).contains("is not an ONNX Runtime library"), "{}", stderr(&output));
        }
        None => tally_testkit::skip("wrong-library case: no other shared library beside the runtime"),
    }
}

/// vertebrae itself loads the profile `tally profile --format json` prints
/// and writes it back unchanged. Runs when `TALLY_PYTHON` names the
/// reference interpreter.
#[test]
fn vertebrae_loads_the_printed_profile() {
    let python = match tally_testkit::reference_python(&["vertebrae"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(why),
    };
    let Some(library) = runtime_library() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (profile, _) = profile_json(&library, "external_data.onnx", &["--calls", "3"], dir.path());
    let script = "import json, sys\n\
                  from dataclasses import asdict\n\
                  from vertebrae.profiling import resource_profile_from_dict\n\
                  value = json.load(sys.stdin)\n\
                  print(json.dumps(asdict(resource_profile_from_dict(value))))\n";
    let output = tally_testkit::run_python(&python, script, profile.to_string().as_bytes());
    assert!(output.status.success(), "vertebrae rejected the profile: {}", stderr(&output));
    let round_trip: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(round_trip, profile);
}

/// With no flag and no `ORT_DYLIB_PATH`, `tally profile` finds ONNX Runtime
/// in the `onnxruntime` package of the `python3` on PATH and says which
/// library it used.
#[test]
fn the_runtime_of_the_python3_on_path_is_found_without_a_flag() {
    let python = match tally_testkit::reference_python(&["onnxruntime"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(format!("no python3 with onnxruntime: {why}")),
    };
    let bin = python.parent().expect("the interpreter's folder").to_path_buf();
    if !bin.join("python3").exists() {
        return tally_testkit::skip(format!("{} has no python3 beside it", python.display()));
    }
    let output = run(tally()
        .args(["profile", "--calls", "2", "--format", "json"])
        .arg(fixture("mlp_f32_f16.onnx"))
        .env_remove("ORT_DYLIB_PATH")
        .env("PATH", &bin));
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{message}");
    assert!(message.contains("from the onnxruntime package of the python3 on PATH"), "{message}");
    let library = message.rsplit(": ").next().expect("the path").trim();
    assert!(library.contains("libonnxruntime.so."), "{message}");
    let profile: Value = serde_json::from_slice(&output.stdout).expect("the profile JSON");
    let used = std::fs::canonicalize(library).expect("the named library exists");
    assert_eq!(profile["context"]["onnxruntime_library"], used.display().to_string());
}
