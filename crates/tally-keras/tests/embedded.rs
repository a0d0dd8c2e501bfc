//! The Keras adapter in tally-profile's profiler, in a Rust program that
//! embeds Python: real calls of a real Keras 3 model on the backend the
//! environment picks (`KERAS_BACKEND`, TensorFlow by default), and the
//! figures of the finished profile against the backend's own answers.
//!
//! Skips (with the reason, through tally-testkit) when `TALLY_PYTHON` is
//! unset or cannot import Keras; `cargo xtask test` sets it. The pytest
//! suite (crates/tally-python/tests/test_keras.py) covers every backend
//! against vertebrae.

use std::ffi::CStr;

use pyo3::prelude::*;
use pyo3::types::PyModule;
use serde_json::Value;
use tally_keras::KerasAdapter;
use tally_profile::profile::DeploymentArtifact;
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};
use tally_testkit::python::embedded_python;
use tally_testkit::skip;

/// A model of 4x3 + 3 and 3x2 + 2 float32 weights (23 elements, 92 bytes),
/// and an extractor that calls it and returns numpy.
const MODEL: &CStr = cr#"
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tempfile
import numpy as np
import keras


class Extractor:
    def __init__(self):
        keras.utils.set_random_seed(0)
        self.model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(2)])
        self.saved = os.path.join(tempfile.mkdtemp(prefix="tally-keras-"), "model.keras")
        self.model.save(self.saved)
        self.calls = 0

    def __call__(self, rows):
        self.calls += 1
        return keras.ops.convert_to_numpy(self.model(np.ones((rows, 4), dtype="float32")))


backend = keras.backend.backend()
"#;

#[test]
fn a_keras_model_is_profiled_through_its_backends_adapter() {
    let _python = match embedded_python(&["keras"]) {
        Ok(guard) => guard,
        Err(why) => return skip(why),
    };
    Python::attach(|py| {
        let made = (|| -> PyResult<(Py<PyAny>, String)> {
            let module = PyModule::from_code(py, MODEL, c"tally_keras_model.py", c"tally_keras_model")?;
            Ok((module.getattr("Extractor")?.call0()?.unbind(), module.getattr("backend")?.extract()?))
        })();
        let (extractor, backend) = made.expect("the model script runs");
        let saved: String =
            extractor.bind(py).getattr("saved").and_then(|path| path.extract()).expect("saved");
        let size = std::fs::metadata(&saved).expect("the saved model").len();
        let artifact = DeploymentArtifact::new(saved).expect("a non-empty path");
        let adapter = KerasAdapter::new(extractor.clone_ref(py), vec![artifact], None);
        assert_eq!(adapter.backend_name(py).expect("keras.backend.backend()"), backend);
        let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
        for rows in [4_u64, 8, 8] {
            let shape = profiler.measure_call(
                || extractor.bind(py).call1((rows,))?.getattr("shape")?.extract::<(u64, u64)>(),
                CallSpec::new(rows, "batch"),
            );
            assert_eq!(shape.expect("the extractor runs"), (rows, 2));
        }
        let calls = extractor.bind(py).getattr("calls").and_then(|calls| calls.extract::<u64>());
        assert_eq!(calls.expect("calls"), 3, "the profiler adds no call of its own");
        let profile = serde_json::to_value(profiler.finish(false)).expect("a profile serializes");
        check(&profile, &backend, size);
    });
}

fn check(profile: &Value, backend: &str, size: u64) {
    assert_eq!(profile["status"], "measured", "{profile:#}");
    assert_eq!(profile["inference"]["materialized_samples"], 20);
    let model = &profile["model"];
    assert_eq!(model["status"], "measured", "{model:#}");
    assert_eq!(model["parameter_count"], 23);
    assert_eq!(model["parameter_bytes"], 92);
    assert_eq!(model["trainable_parameter_count"], 23);
    let context = &profile["context"];
    assert_eq!(context["resource_adapter"], "tally.profiling.KerasResourceProfileAdapter");
    assert_eq!(context["backend"], format!("keras-{backend}"), "{context:#}");
    // The saved `.keras` file, declared as the deployment artifact.
    let artifacts = model["artifacts"].as_array().expect("artifacts");
    assert_eq!(artifacts.len(), 1, "{artifacts:?}");
    assert_eq!(artifacts[0]["status"], "measured", "{artifacts:?}");
    assert_eq!(artifacts[0]["bytes"], size, "{artifacts:?}");
}
