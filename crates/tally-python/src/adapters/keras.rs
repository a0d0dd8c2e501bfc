//! `tally.profiling.KerasResourceProfileAdapter` over tally-keras.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::{artifacts_from, artifacts_tuple};
use crate::profiling::{BaseResourceProfileAdapter, default_answer};

/// Backend-aware resource hooks for multi-backend Keras models
/// (vertebrae's `KerasResourceProfileAdapter`, measured by tally-keras:
/// the device hooks of the backend Keras runs on).
#[pyclass(
    extends = BaseResourceProfileAdapter,
    subclass,
    module = "tally.profiling",
    name = "KerasResourceProfileAdapter"
)]
pub struct KerasResourceProfileAdapter {
    inner: tally_keras::KerasAdapter,
}

#[pymethods]
impl KerasResourceProfileAdapter {
    /// `artifacts` (paths or `DeploymentArtifact`s; a path is a
    /// `checkpoint`) default to none, as vertebrae's `()`.
    #[new]
    #[pyo3(
        signature = (extractor, artifacts=None, *, profiling_device=None),
        text_signature = "(extractor, artifacts=(), *, profiling_device=None)"
    )]
    fn new(
        extractor: Py<PyAny>,
        artifacts: Option<Bound<'_, PyAny>>,
        profiling_device: Option<String>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let artifacts = match artifacts {
            Some(items) => artifacts_from(&items, "checkpoint")?,
            None => Vec::new(),
        };
        let inner = tally_keras::KerasAdapter::new(extractor, artifacts, profiling_device);
        Ok(PyClassInitializer::from(BaseResourceProfileAdapter).add_subclass(Self { inner }))
    }

    /// The extractor.
    #[getter]
    fn extractor(&self, py: Python<'_>) -> Py<PyAny> {
        self.inner.extractor().clone_ref(py)
    }

    /// The device the caller asked to profile on.
    #[getter]
    fn profiling_device(&self) -> Option<&str> {
        self.inner.profiling_device()
    }

    /// The backend's metadata, named `keras-<backend>`, with the weights'
    /// dtypes.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "ResourceAdapterMetadata", &self.inner.resolve(py)?)
    }

    /// The backend's synchronization.
    fn synchronize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "AdapterOperationResult", &self.inner.synchronization(py)?)
    }

    /// Opens the backend's device-memory window.
    fn reset_peak_device_memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "AdapterOperationResult", &self.inner.reset(py)?)
    }

    /// The backend's device-memory peak since the reset.
    fn peak_device_memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "DeviceMemoryMeasurement", &self.inner.peak(py)?)
    }

    /// Elements and bytes of the Keras model's variables.
    fn model_footprint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "ModelFootprintMeasurement", &self.inner.footprint(py)?)
    }

    /// The deployment artifacts it was given.
    fn deployment_artifacts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        artifacts_tuple(py, self.inner.artifacts())
    }
}
