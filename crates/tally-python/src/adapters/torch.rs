//! `tally.profiling.TorchResourceProfileAdapter` over tally-torch's
//! `python::TorchAdapter`.

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tally_torch::python::{DeviceResolver, TorchAdapter};

use super::{artifacts_from, artifacts_tuple};
use crate::profiling::{BaseResourceProfileAdapter, default_answer};

/// Resource hooks for a Torch-backed extractor without forcing model loading
/// (vertebrae's `TorchResourceProfileAdapter`, measured by tally-torch).
#[pyclass(extends = BaseResourceProfileAdapter, module = "tally.profiling", name = "TorchResourceProfileAdapter")]
pub struct TorchResourceProfileAdapter {
    inner: TorchAdapter,
}

#[pymethods]
impl TorchResourceProfileAdapter {
    #[new]
    // `artifacts=None` stands for vertebrae's `()` (pyo3 cannot build a
    // tuple default), which the signature shows.
    #[pyo3(
        signature = (extractor, artifacts=None, *, model_getter=None, device_resolver=None, torch_loader=None),
        text_signature = "(extractor, artifacts=(), *, model_getter=None, device_resolver=None, torch_loader=None)"
    )]
    fn new(
        extractor: Py<PyAny>,
        artifacts: Option<&Bound<'_, PyAny>>,
        model_getter: Option<Py<PyAny>>,
        device_resolver: Option<Py<PyAny>>,
        torch_loader: Option<Py<PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let artifacts = match artifacts {
            Some(items) => artifacts_from(items, "checkpoint")?,
            None => Vec::new(),
        };
        let inner = TorchAdapter::new(
            extractor,
            artifacts,
            model_getter,
            device_resolver.map(DeviceResolver::Callable),
            torch_loader,
        );
        Ok(PyClassInitializer::from(BaseResourceProfileAdapter).add_subclass(Self { inner }))
    }

    /// The extractor.
    #[getter]
    fn extractor(&self, py: Python<'_>) -> Py<PyAny> {
        self.inner.extractor().clone_ref(py)
    }

    /// Framework, device and synchronization context of the model.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "ResourceAdapterMetadata", &self.inner.resolve(py)?)
    }

    /// Synchronizes every CUDA device of the model (and MPS once).
    fn synchronize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "AdapterOperationResult", &self.inner.synchronize_devices(py)?)
    }

    /// Opens the CUDA allocator window: baselines, then a peak reset.
    fn reset_peak_device_memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "AdapterOperationResult", &self.inner.reset(py)?)
    }

    /// The CUDA allocator's peaks since the reset.
    fn peak_device_memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "DeviceMemoryMeasurement", &self.inner.peak(py)?)
    }

    /// Parameters and buffers of the model, tied weights counted once.
    fn model_footprint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "ModelFootprintMeasurement", &self.inner.footprint(py)?)
    }

    /// The artifacts given to the constructor.
    fn deployment_artifacts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        artifacts_tuple(py, self.inner.artifacts())
    }
}
