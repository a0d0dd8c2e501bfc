//! vertebrae 1.1.0's `ONNXResourceProfileAdapter` over a Python extractor
//! holding an `onnxruntime.InferenceSession` (the `python` feature).
//!
//! The session is Python's, so nothing here loads ONNX Runtime: the adapter
//! reads the extractor's attributes as vertebrae reads them (`_session`,
//! `providers`, `model_path`) and answers what vertebrae answers.

use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tally_profile::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, ModelFootprintMeasurement,
    ResourceAdapterMetadata,
};
use tally_profile::python::PythonHooks;

/// ONNX Runtime's default provider, reported when none is configured.
const CPU_EXECUTION_PROVIDER: &str = "CPUExecutionProvider";
/// vertebrae's reason for every device-memory answer of the adapter.
const NO_ALLOCATOR_PEAK_API: &str = "ONNX Runtime does not expose a portable allocator peak API.";
/// vertebrae's footprint answer: it does not parse the model.
const NOT_PARSED: &str = "ONNX parameters are not parsed without the optional onnx package.";

/// vertebrae's `ONNXResourceProfileAdapter` over a Python extractor.
///
/// The hooks are inherent methods returning `PyResult` (for the `tally`
/// Python package, which calls them with the GIL held); the
/// [`ResourceProfileAdapter`](tally_profile::ResourceProfileAdapter) implementation attaches to Python and turns
/// an exception into a [`HookError`](tally_profile::HookError) named after its class.
#[derive(Debug)]
pub struct OnnxAdapter {
    extractor: Py<PyAny>,
    external_artifacts: Vec<DeploymentArtifact>,
}

impl OnnxAdapter {
    /// An adapter for `extractor`, declaring `external_artifacts` after the
    /// extractor's model file (vertebrae gives them the role
    /// `external_weights` when they are paths).
    pub fn new(extractor: Py<PyAny>, external_artifacts: Vec<DeploymentArtifact>) -> Self {
        Self { extractor, external_artifacts }
    }

    /// The extractor.
    pub fn extractor(&self) -> &Py<PyAny> {
        &self.extractor
    }

    /// The external artifacts declared at construction.
    pub fn external_artifacts(&self) -> &[DeploymentArtifact] {
        &self.external_artifacts
    }
}

/// Python's `getattr(value, name, None)`, `None` also when the attribute is
/// `None`; exceptions other than `AttributeError` propagate.
fn present<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    match value.getattr(name) {
        Ok(found) => Ok(Some(found).filter(|found| !found.is_none())),
        Err(error) if error.is_instance_of::<PyAttributeError>(value.py()) => Ok(None),
        Err(error) => Err(error),
    }
}

impl PythonHooks for OnnxAdapter {
    /// The `metadata` hook: backend `onnxruntime`, the first provider of the
    /// live session (`active_provider`) or of the configured list
    /// (`configured_provider`), never asynchronous.
    fn metadata(&self, py: Python<'_>) -> PyResult<ResourceAdapterMetadata> {
        let extractor = self.extractor.bind(py);
        let session = present(extractor, "_session")?;
        let get_providers = match &session {
            Some(session) => present(session, "get_providers")?.filter(|method| method.is_callable()),
            None => None,
        };
        let providers = match get_providers {
            Some(method) => method.call0()?,
            None => match present(extractor, "providers")? {
                Some(configured) if configured.is_truthy()? => configured,
                _ => PyTuple::empty(py).into_any(),
            },
        };
        // vertebrae's `list(...)`: any iterable, read to its end.
        let providers = providers.try_iter()?.collect::<PyResult<Vec<_>>>()?;
        let device = match providers.into_iter().next() {
            None => CPU_EXECUTION_PROVIDER.to_owned(),
            Some(provider) => provider.extract::<String>().map_err(|_| {
                let kind = provider.get_type().name().map(|name| name.to_string()).unwrap_or_default();
                PyTypeError::new_err(format!(
                    "the first ONNX Runtime provider must be a provider name (str), not {kind}"
                ))
            })?,
        };
        let resolution = if session.is_some() { "active_provider" } else { "configured_provider" };
        let metadata = ResourceAdapterMetadata {
            backend: Some("onnxruntime".to_owned()),
            device: Some(device),
            asynchronous: false,
            synchronization_method: Some("InferenceSession.run".to_owned()),
            ..ResourceAdapterMetadata::default()
        };
        metadata.with_device_resolution(resolution).map_err(|error| PyValueError::new_err(error.to_string()))
    }

    /// The `synchronize` hook: succeeds, since `InferenceSession.run`
    /// returns when its outputs are ready.
    fn synchronize(&self, _py: Python<'_>) -> PyResult<AdapterOperationResult> {
        Ok(AdapterOperationResult::succeeded())
    }

    /// The `reset_peak_device_memory` hook: unavailable.
    fn reset_peak_device_memory(&self, _py: Python<'_>) -> PyResult<AdapterOperationResult> {
        Ok(AdapterOperationResult::unavailable(Some(NO_ALLOCATOR_PEAK_API)))
    }

    /// The `peak_device_memory` hook: unavailable, with the metadata's
    /// backend and device.
    fn peak_device_memory(&self, py: Python<'_>) -> PyResult<DeviceMemoryMeasurement> {
        let metadata = self.metadata(py)?;
        Ok(DeviceMemoryMeasurement::unavailable(Some(NO_ALLOCATOR_PEAK_API))
            .with_backend_device(metadata.backend, metadata.device))
    }

    /// The `model_footprint` hook: unavailable, as vertebrae answers.
    fn model_footprint(&self, _py: Python<'_>) -> PyResult<ModelFootprintMeasurement> {
        Ok(ModelFootprintMeasurement::unavailable(Some(NOT_PARSED)))
    }

    /// The `deployment_artifacts` hook: `str(extractor.model_path)` as the
    /// `checkpoint`, then the external artifacts.
    fn deployment_artifacts(&self, py: Python<'_>) -> PyResult<Vec<DeploymentArtifact>> {
        let path = self.extractor.bind(py).getattr("model_path")?.str()?;
        let checkpoint = DeploymentArtifact::new(path.to_str()?)
            .map_err(|error| PyValueError::new_err(error.to_string()))?;
        let mut artifacts = vec![checkpoint];
        artifacts.extend(self.external_artifacts.iter().cloned());
        Ok(artifacts)
    }

    fn class_name(&self) -> &'static str {
        "tally.profiling.ONNXResourceProfileAdapter"
    }
}
