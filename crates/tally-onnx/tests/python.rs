//! `python::OnnxAdapter` from Rust, over a real `onnxruntime`
//! InferenceSession in an embedded Python, inside tally-profile's own
//! profiler: its profile (warnings and artifacts included) must equal the
//! one vertebrae's profiler builds with vertebrae's adapter on the same
//! extractor. The hook-by-hook comparison runs in the Python package's
//! suite (crates/tally-python/tests/test_onnx.py).
//!
//! Skipped (with a message) where the embedded Python cannot import
//! onnxruntime and vertebrae: it finds its packages as the `python` on
//! `PATH` does.

mod common;

use std::ffi::CStr;

use pyo3::prelude::*;
use pyo3::types::PyModule;
use serde_json::Value;
use tally_onnx::python::OnnxAdapter;
use tally_profile::profile::DeploymentArtifact;
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler};

const FIXTURES: &CStr = cr#"
import dataclasses, json
import numpy as np
import onnxruntime
import vertebrae.profiling as vp
from vertebrae.config import ResourceProfilingConfig

class Live:
    def __init__(self, path):
        self.model_path = path
        self._session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def __call__(self):
        inputs = {}
        for item in self._session.get_inputs():
            shape = [dim if isinstance(dim, int) else 2 for dim in item.shape]
            inputs[item.name] = np.ones(shape, dtype=np.float32)
        return self._session.run(None, inputs)

class Configured:
    def __init__(self, path, providers):
        self.model_path = path
        self.providers = providers

class Pathless:
    providers = ["CUDAExecutionProvider"]

def vertebrae_profile(extractor, external, calls):
    extractor.get_resource_profile_adapter = lambda: vp.ONNXResourceProfileAdapter(extractor, external)
    profiler = vp.ResourceProfiler(ResourceProfilingConfig(enabled=True), extractor, streaming=False)
    for _ in range(calls):
        profiler.measure_call(extractor if callable(extractor) else (lambda: None), samples=2, call_type="batch")
    return json.dumps(dataclasses.asdict(profiler.finish()))
"#;

/// `fixtures.<class>(*arguments)`.
fn make<'py>(
    fixtures: &Bound<'py, PyModule>,
    class: &str,
    arguments: Vec<Bound<'py, PyAny>>,
) -> Bound<'py, PyAny> {
    let arguments = pyo3::types::PyTuple::new(fixtures.py(), arguments).expect("tuple");
    fixtures.getattr(class).and_then(|class| class.call1(arguments)).expect(class)
}

fn fixtures(py: Python<'_>) -> Option<Bound<'_, PyModule>> {
    match PyModule::from_code(py, FIXTURES, c"onnx_fixtures.py", c"onnx_fixtures") {
        Ok(module) => Some(module),
        Err(error) => {
            tally_testkit::skip(format!(
                "the embedded Python cannot import onnxruntime and vertebrae: {error}"
            ));
            None
        }
    }
}

/// The profile without what legitimately differs (timings, host-memory
/// figures and method, the adapter's name).
fn comparable(mut profile: Value) -> Value {
    if let Some(inference) = profile["inference"].as_object_mut() {
        inference.retain(|key, _| {
            !key.ends_with("_seconds") && !key.ends_with("_per_second") && !key.ends_with("_per_sample")
        });
    }
    if let Some(context) = profile["context"].as_object_mut() {
        context.remove("resource_adapter");
        context.remove("host_memory_method");
    }
    profile["host_memory"] = profile["host_memory"]["status"].clone();
    profile
}

#[test]
fn tally_profiles_profile_with_the_adapter_as_vertebraes_profiler_does() {
    Python::initialize();
    let model = common::fixture("external_data.onnx").display().to_string();
    let data = common::fixture("external_data.bin").display().to_string();
    Python::attach(|py| {
        let Some(fixtures) = fixtures(py) else { return };
        let text = |value: &str| value.into_pyobject(py).expect("str").into_any();
        let providers = pyo3::types::PyList::new(py, ["ROCMExecutionProvider"]).expect("list").into_any();
        let cases = [
            ("live", make(&fixtures, "Live", vec![text(&model)]), vec![data.clone()]),
            ("configured", make(&fixtures, "Configured", vec![text(&model), providers]), Vec::new()),
            ("pathless", make(&fixtures, "Pathless", Vec::new()), vec![data.clone()]),
        ];
        for (name, extractor, external) in cases {
            let artifacts = external
                .iter()
                .map(|path| {
                    DeploymentArtifact::new(path.as_str())
                        .and_then(|artifact| artifact.with_role("external_weights"))
                })
                .collect::<Result<Vec<_>, _>>()
                .expect("artifacts");
            let adapter = OnnxAdapter::new(extractor.clone().unbind(), artifacts);
            assert_eq!(adapter.name(), "tally.profiling.ONNXResourceProfileAdapter");
            let mut profiler =
                ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
            let callable = extractor.is_callable();
            for _ in 0..3 {
                profiler.measure_call(
                    || {
                        if callable {
                            extractor.call0().map(drop).expect("the session runs")
                        }
                    },
                    CallSpec::new(2, "batch"),
                );
            }
            let ours = profiler.finish(false).to_json_value().expect("profile JSON");
            let theirs: Value = fixtures
                .getattr("vertebrae_profile")
                .and_then(|f| f.call1((extractor.clone(), external.clone(), 3)))
                .and_then(|text| text.extract::<String>())
                .map(|text| serde_json::from_str(&text).expect("JSON"))
                .expect("vertebrae's profile");
            assert_eq!(comparable(ours.clone()), comparable(theirs), "{name}");
            if name == "pathless" {
                let warnings = ours["warnings"].as_array().expect("warnings");
                assert!(
                    warnings.iter().any(|warning| warning.as_str().is_some_and(|text| text.starts_with(
                        "Resource profiling adapter hook 'deployment_artifacts' failed with AttributeError:"
                    ))),
                    "{warnings:?}"
                );
            } else {
                assert_eq!(ours["model"]["artifacts"][0]["role"], "checkpoint", "{name}");
            }
        }
    });
}
