//! `python::TorchAdapter` from Rust, on real torch objects in an embedded
//! Python, against vertebrae's adapter on the same objects: the fixed
//! device resolver (what tally-keras passes for its torch backend, which
//! the Python package cannot reach), and the `ResourceProfileAdapter`
//! implementation inside tally-profile's own profiler, whose profile
//! (warnings included) must equal vertebrae's profiler's.
//!
//! Skipped (with a message) where the embedded Python cannot import torch
//! and vertebrae: it finds its packages as the `python` on `PATH` does.

use std::ffi::CStr;

use pyo3::prelude::*;
use pyo3::types::PyModule;
use serde_json::Value;
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler};
use tally_torch::python::{DeviceResolver, TorchAdapter};

/// Models, extractors and vertebrae's answers, in Python.
const FIXTURES: &CStr = cr#"
import dataclasses, json
import torch
import vertebrae.profiling as vp
from vertebrae.config import ResourceProfilingConfig

class Extractor:
    def __init__(self, model=None, device=None):
        self.model = model
        if device is not None:
            self.device = device

def mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    model[0].bias.requires_grad_(False)
    return model

def meta():
    return torch.nn.Linear(2, 2, device="meta")

def broken():
    raise RuntimeError("the checkpoint is still downloading")

def vertebrae_metadata(extractor, fixed):
    resolver = (lambda torch: fixed) if fixed is not None else None
    adapter = vp.TorchResourceProfileAdapter(extractor, device_resolver=resolver)
    return json.dumps(dataclasses.asdict(adapter.metadata()))

def vertebrae_profile(extractor, fixed, getter, artifacts, calls):
    resolver = (lambda torch: fixed) if fixed is not None else None
    extractor.get_resource_profile_adapter = lambda: vp.TorchResourceProfileAdapter(
        extractor, artifacts, model_getter=getter, device_resolver=resolver
    )
    profiler = vp.ResourceProfiler(ResourceProfilingConfig(enabled=True), extractor, streaming=False)
    for _ in range(calls):
        profiler.measure_call(lambda: None, samples=2, call_type="batch")
    return json.dumps(dataclasses.asdict(profiler.finish()))
"#;

/// The fixtures module, or `None` (after saying why the test skipped).
fn fixtures(py: Python<'_>) -> Option<Bound<'_, PyModule>> {
    match PyModule::from_code(py, FIXTURES, c"torch_fixtures.py", c"torch_fixtures") {
        Ok(module) => Some(module),
        Err(error) => {
            tally_testkit::skip(format!("the embedded Python cannot import torch and vertebrae: {error}"));
            None
        }
    }
}

fn json(text: Bound<'_, PyAny>) -> Value {
    serde_json::from_str(text.extract::<&str>().expect("json.dumps gives a str")).expect("JSON")
}

fn extractor<'py>(fixtures: &Bound<'py, PyModule>, model: &str, device: Option<&str>) -> Bound<'py, PyAny> {
    let model = match model {
        "none" => fixtures.py().None().into_bound(fixtures.py()),
        name => fixtures.getattr(name).and_then(|make| make.call0()).expect("model"),
    };
    fixtures.getattr("Extractor").and_then(|class| class.call1((model, device))).expect("extractor")
}

#[test]
fn a_fixed_device_resolver_answers_as_vertebraes_constant_resolver() {
    Python::initialize();
    Python::attach(|py| {
        let Some(fixtures) = fixtures(py) else { return };
        let mut resolutions = Vec::new();
        for (model, device, fixed) in [
            ("none", None, Some("meta")),
            ("none", Some("cpu"), Some("cuda:0")),
            ("mlp", None, Some("cpu")),
            ("mlp", None, Some("meta")),
            ("mlp", Some("meta"), Some("cpu")),
            ("meta", None, Some("cuda:1")),
            ("none", Some("meta"), None),
        ] {
            let holder = extractor(&fixtures, model, device);
            let adapter = TorchAdapter::new(
                holder.clone().unbind(),
                Vec::new(),
                None,
                fixed.map(|device| DeviceResolver::Fixed(device.to_owned())),
                None,
            );
            let ours = serde_json::to_value(
                tally_profile::python::PythonHooks::metadata(&adapter, py).expect("metadata"),
            )
            .expect("serializes");
            let theirs = json(
                fixtures
                    .getattr("vertebrae_metadata")
                    .and_then(|f| f.call1((holder, fixed)))
                    .expect("vertebrae"),
            );
            assert_eq!(ours, theirs, "{model} {device:?} {fixed:?}");
            resolutions.push(ours["device_resolution"].as_str().unwrap_or_default().to_owned());
        }
        for expected in
            ["extractor_resolver", "model_state", "model_state_conflicts_with_profiling_hint", "explicit"]
        {
            assert!(
                resolutions.iter().any(|found| found == expected),
                "{expected} not reached: {resolutions:?}"
            );
        }
    });
}

/// The profile without what legitimately differs (timings, host-memory
/// figures and method, the adapter's name).
fn comparable(mut profile: Value) -> Value {
    for (section, keys) in [
        (
            "inference",
            &[
                "first_call_seconds",
                "warm_mean_seconds",
                "warm_median_seconds",
                "warm_p95_seconds",
                "warm_max_seconds",
                "warm_mean_seconds_per_sample",
                "total_materialized_seconds",
                "throughput_samples_per_second",
            ][..],
        ),
        ("context", &["resource_adapter", "host_memory_method"][..]),
    ] {
        if let Some(object) = profile[section].as_object_mut() {
            for key in keys {
                object.remove(*key);
            }
        }
    }
    profile["host_memory"] = profile["host_memory"]["status"].clone();
    profile
}

#[test]
fn tally_profiles_profile_with_the_adapter_as_vertebraes_profiler_does() {
    Python::initialize();
    let dir = tempfile::tempdir().expect("tempdir");
    let checkpoint = dir.path().join("model.pt");
    std::fs::write(&checkpoint, b"weights").expect("write");
    let checkpoint = checkpoint.display().to_string();
    Python::attach(|py| {
        let Some(fixtures) = fixtures(py) else { return };
        for (model, device, fixed, getter) in [
            ("mlp", None, None, None),
            ("mlp", Some("meta"), None, None),
            ("meta", None, Some("cpu"), None),
            ("none", None, Some("meta"), None),
            ("none", None, None, Some("broken")),
        ] {
            let holder = extractor(&fixtures, model, device);
            let getter = getter.map(|name| fixtures.getattr(name).expect("getter"));
            let artifact =
                tally_profile::profile::DeploymentArtifact::new(checkpoint.as_str()).expect("artifact");
            let adapter = TorchAdapter::new(
                holder.clone().unbind(),
                vec![artifact],
                getter.as_ref().map(|getter| getter.clone().unbind()),
                fixed.map(|device| DeviceResolver::Fixed(device.to_owned())),
                None,
            );
            assert_eq!(adapter.name(), "tally.profiling.TorchResourceProfileAdapter");
            let mut profiler =
                ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
            for _ in 0..3 {
                profiler.measure_call(|| (), CallSpec::new(2, "batch"));
            }
            let ours = profiler.finish(false).to_json_value().expect("profile JSON");
            let theirs = json(
                fixtures
                    .getattr("vertebrae_profile")
                    .and_then(|f| f.call1((holder, fixed, getter.clone(), vec![checkpoint.clone()], 3)))
                    .expect("vertebrae's profile"),
            );
            assert_eq!(comparable(ours.clone()), comparable(theirs), "{model} {device:?} {fixed:?}");
            if getter.is_some() {
                let warnings = ours["warnings"].as_array().expect("warnings");
                assert!(
                    warnings.iter().any(|warning| warning.as_str().is_some_and(|text| text
                        == "Resource profiling adapter hook 'metadata' failed with RuntimeError: the checkpoint is still downloading")),
                    "{warnings:?}"
                );
            }
        }
    });
}
