//! The TensorFlow adapter in tally-profile's profiler, in a Rust program
//! that embeds Python: real TensorFlow calls on a real `tf.Module` (on the
//! machine's devices), and the figures of the finished profile.
//!
//! Skips (with the reason, through tally-testkit) when `TALLY_PYTHON` is
//! unset or cannot import TensorFlow; `cargo xtask test` sets it.

use std::ffi::CStr;

use pyo3::prelude::*;
use pyo3::types::PyModule;
use serde_json::{Value, json};
use tally_profile::profile::DeploymentArtifact;
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler};
use tally_tensorflow::TensorFlowAdapter;
use tally_testkit::python::embedded_python;
use tally_testkit::skip;

/// A small model: 12 float32 and 3 float16 trainable elements, 2 int32
/// non-trainable ones (48 + 6 + 8 = 62 bytes), and an extractor that calls
/// it and returns numpy, as vertebrae's TensorFlow extractors do.
const MODEL: &CStr = cr#"
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf


class Extractor:
    def __init__(self):
        model = tf.Module()
        model.kernel = tf.Variable(tf.ones((4, 3), tf.float32))
        model.bias = tf.Variable(tf.zeros((3,), tf.float16))
        model.steps = tf.Variable(tf.zeros((2,), tf.int32), trainable=False)
        self.model = model
        self.calls = 0

    def __call__(self, rows):
        self.calls += 1
        batch = tf.ones((rows, 4), tf.float32)
        return tf.matmul(batch, self.model.kernel).numpy()


gpus = len(tf.config.list_logical_devices("GPU"))
"#;

/// Runs `test` with the extractor and the number of visible GPUs, all of
/// it attached to the interpreter (skips when TensorFlow is missing).
///
/// One attachment for the whole test, which the adapter's own `attach`
/// calls nest in: the thread keeps one Python thread state, as a Python
/// program's thread does, instead of a fresh one per call that would drop
/// TensorFlow's thread-local eager context each time.
fn with_extractor(test: impl FnOnce(Python<'_>, &Py<PyAny>, usize)) {
    let _python = match embedded_python(&["tensorflow"]) {
        Ok(guard) => guard,
        Err(why) => return skip(why),
    };
    Python::attach(|py| {
        let made = (|| -> PyResult<(Py<PyAny>, usize)> {
            let module =
                PyModule::from_code(py, MODEL, c"tally_tensorflow_model.py", c"tally_tensorflow_model")?;
            Ok((module.getattr("Extractor")?.call0()?.unbind(), module.getattr("gpus")?.extract()?))
        })();
        let (extractor, gpus) = made.expect("the model script runs");
        test(py, &extractor, gpus);
    });
}

/// Profiles three real calls (4, 8, 8 rows) through `adapter`.
fn profile(py: Python<'_>, extractor: &Py<PyAny>, adapter: TensorFlowAdapter) -> Value {
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
    for rows in [4_u64, 8, 8] {
        let shape = profiler.measure_call(
            || extractor.bind(py).call1((rows,))?.getattr("shape")?.extract::<(u64, u64)>(),
            CallSpec::new(rows, "batch"),
        );
        assert_eq!(shape.expect("the extractor runs"), (rows, 3));
    }
    let calls = extractor.bind(py).getattr("calls").and_then(|calls| calls.extract::<u64>());
    assert_eq!(calls.expect("calls"), 3, "the profiler adds no call of its own");
    profiler.finish(false).to_json_value().expect("the profile serializes")
}

fn new_adapter(
    py: Python<'_>,
    extractor: &Py<PyAny>,
    artifacts: Vec<DeploymentArtifact>,
    hint: Option<&str>,
) -> TensorFlowAdapter {
    TensorFlowAdapter::new(extractor.clone_ref(py), artifacts, None, "tensorflow", hint.map(str::to_owned))
}

#[test]
fn the_profile_of_real_calls_has_the_variables_footprint_device_and_artifacts() {
    with_extractor(|py, extractor, gpus| {
        let dir = tempfile::tempdir().expect("tempdir");
        let weights = dir.path().join("weights.bin");
        std::fs::write(&weights, [0_u8; 100]).expect("write the artifact");
        let artifact = DeploymentArtifact::new(weights.to_string_lossy()).expect("a path");
        let profile = profile(py, extractor, new_adapter(py, extractor, vec![artifact], None));

        assert_eq!(profile["status"], "measured");
        assert_eq!(profile["warnings"], json!([]));
        let model = &profile["model"];
        assert_eq!(model["status"], "measured");
        assert_eq!(model["parameter_count"], 17);
        assert_eq!(model["parameter_bytes"], 62);
        assert_eq!(model["trainable_parameter_count"], 15);
        assert_eq!(model["trainable_parameter_bytes"], 54);
        assert_eq!(model["in_memory_bytes"], 62);
        assert_eq!(model["buffer_bytes"], Value::Null);
        // A tf.Variable's `value` is a method, which has no dtype: vertebrae
        // names such weights `unknown` (its _keras_weight_dtypes), and so does tally.
        assert_eq!(model["weight_dtypes"], json!(["unknown"]));
        assert_eq!(model["checkpoint_bytes"], 100);
        assert_eq!(model["artifacts"][0]["role"], "checkpoint");
        assert_eq!(model["artifacts"][0]["status"], "measured");

        let context = &profile["context"];
        assert_eq!(context["backend"], "tensorflow");
        assert_eq!(context["synchronization_method"], "extractor_output_to_numpy");
        assert_eq!(context["asynchronous"], false);
        assert_eq!(context["resource_adapter"], "tally.profiling.TensorFlowResourceProfileAdapter");
        assert_eq!(context["profiling_device_hint"], Value::Null);
        assert_eq!(profile["inference"]["batch_sizes"], json!([4, 8, 8]));
        match gpus {
            0 => {
                assert_eq!(context["device"], "CPU:0");
                assert_eq!(context["device_resolution"], "default_cpu");
                assert_eq!(profile["device_memory"]["status"], "not_applicable");
            }
            1 => {
                assert_eq!(context["device"], "GPU:0");
                assert_eq!(context["device_resolution"], "single_visible_gpu");
                assert_eq!(profile["device_memory"]["status"], "measured");
            }
            _ => assert_eq!(context["device_resolution"], "ambiguous_visible_devices"),
        }
    });
}

#[test]
fn a_profiling_hint_names_the_device_in_tensorflows_short_form() {
    with_extractor(|py, extractor, _| {
        let profile = profile(py, extractor, new_adapter(py, extractor, Vec::new(), Some("/device:cpu:0")));
        let context = &profile["context"];
        assert_eq!(context["device"], "CPU:0");
        assert_eq!(context["device_resolution"], "explicit_profiling_hint");
        assert_eq!(context["profiling_device_hint"], "/device:cpu:0");
        assert_eq!(profile["device_memory"]["status"], "not_applicable");
        assert_eq!(
            profile["device_memory"]["unavailable_reason"],
            "CPU memory is reported through process RSS."
        );
        assert_eq!(profile["model"]["status"], "partial", "parameters measured, no artifact declared");
    });
}

#[test]
fn a_failing_model_getter_is_a_warning_naming_the_hook_and_python_exception() {
    with_extractor(|py, extractor, _| {
        let getter = (|| -> PyResult<Py<PyAny>> {
            let module = PyModule::from_code(
                py,
                c"def broken():\n    raise RuntimeError('no model yet')\n",
                c"tally_tensorflow_getter.py",
                c"tally_tensorflow_getter",
            )?;
            Ok(module.getattr("broken")?.unbind())
        })()
        .expect("the getter script runs");
        let mut adapter =
            TensorFlowAdapter::new(extractor.clone_ref(py), Vec::new(), Some(getter), "tensorflow", None);
        let error = adapter.model_footprint().expect_err("the getter raises");
        assert_eq!(error.to_string(), "RuntimeError: no model yet");
        let profile = profile(py, extractor, adapter);
        let warnings = profile["warnings"].as_array().expect("warnings");
        assert!(
            warnings.contains(&json!(
                "Resource profiling adapter hook 'model_footprint' failed with RuntimeError: no model yet"
            )),
            "{warnings:?}"
        );
    });
}
