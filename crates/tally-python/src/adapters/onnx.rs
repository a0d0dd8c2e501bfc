//! `tally.profiling.ONNXResourceProfileAdapter` over tally-onnx's
//! `python::OnnxAdapter`.

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tally_onnx::python::OnnxAdapter;

use super::{artifacts_from, artifacts_tuple};
use crate::profiling::{BaseResourceProfileAdapter, default_answer};

/// Resource hooks for an ONNX Runtime extractor (vertebrae's
/// `ONNXResourceProfileAdapter`, answered by tally-onnx).
#[pyclass(extends = BaseResourceProfileAdapter, module = "tally.profiling", name = "ONNXResourceProfileAdapter")]
pub struct OnnxResourceProfileAdapter {
    inner: OnnxAdapter,
}

#[pymethods]
impl OnnxResourceProfileAdapter {
    #[new]
    // `external_artifacts=None` stands for vertebrae's `()` (pyo3 cannot
    // build a tuple default), which the signature shows.
    #[pyo3(signature = (extractor, external_artifacts=None), text_signature = "(extractor, external_artifacts=())")]
    fn new(
        extractor: Py<PyAny>,
        external_artifacts: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let external = match external_artifacts {
            Some(items) => artifacts_from(items, "external_weights")?,
            None => Vec::new(),
        };
        let inner = OnnxAdapter::new(extractor, external);
        Ok(PyClassInitializer::from(BaseResourceProfileAdapter).add_subclass(Self { inner }))
    }

    /// The extractor.
    #[getter]
    fn extractor(&self, py: Python<'_>) -> Py<PyAny> {
        self.inner.extractor().clone_ref(py)
    }

    /// Backend `onnxruntime` and the session's (or configured) provider.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "ResourceAdapterMetadata", &self.inner.resolve(py)?)
    }

    /// Succeeds: a session run returns when its outputs are ready.
    fn synchronize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "AdapterOperationResult", &self.inner.synchronize_session())
    }

    /// Unavailable: ONNX Runtime has no portable allocator peak API.
    fn reset_peak_device_memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "AdapterOperationResult", &self.inner.reset())
    }

    /// Unavailable, with the backend and device.
    fn peak_device_memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "DeviceMemoryMeasurement", &self.inner.peak(py)?)
    }

    /// Unavailable, as vertebrae answers (it does not parse the model).
    fn model_footprint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "ModelFootprintMeasurement", &self.inner.footprint())
    }

    /// The extractor's `model_path` (`checkpoint`), then the external artifacts.
    fn deployment_artifacts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        artifacts_tuple(py, &self.inner.artifacts(py)?)
    }
}
