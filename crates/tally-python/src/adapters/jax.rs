//! `tally.profiling.JAXResourceProfileAdapter` over tally-jax.

use pyo3::prelude::*;

use crate::profiling::{BaseResourceProfileAdapter, default_answer};

/// Synchronization and device metadata for JAX-backed extractors
/// (vertebrae's `JAXResourceProfileAdapter`, measured by tally-jax).
#[pyclass(extends = BaseResourceProfileAdapter, module = "tally.profiling", name = "JAXResourceProfileAdapter")]
pub struct JaxResourceProfileAdapter {
    inner: tally_jax::JaxAdapter,
    /// The device the caller asked to profile on.
    #[pyo3(get)]
    profiling_device: Option<String>,
}

#[pymethods]
impl JaxResourceProfileAdapter {
    #[new]
    #[pyo3(signature = (extractor, *, values_getter=None, jax_loader=None, backend="jax".to_owned(), profiling_device=None))]
    fn new(
        extractor: Py<PyAny>,
        values_getter: Option<Py<PyAny>>,
        jax_loader: Option<Py<PyAny>>,
        backend: String,
        profiling_device: Option<String>,
    ) -> PyClassInitializer<Self> {
        let inner = tally_jax::JaxAdapter::new(
            extractor,
            values_getter,
            jax_loader,
            backend,
            profiling_device.clone(),
        );
        PyClassInitializer::from(BaseResourceProfileAdapter).add_subclass(Self { inner, profiling_device })
    }

    /// The extractor.
    #[getter]
    fn extractor(&self, py: Python<'_>) -> Py<PyAny> {
        self.inner.extractor().clone_ref(py)
    }

    /// The backend name reported.
    #[getter]
    fn backend(&self) -> &str {
        self.inner.backend()
    }

    /// Framework, device and synchronization context of the parameter tree.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "ResourceAdapterMetadata", &self.inner.resolve(py)?)
    }

    /// `jax.effects_barrier()`.
    fn synchronize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "AdapterOperationResult", &self.inner.barrier(py)?)
    }

    /// `not_applicable` on CPU, else `unavailable` (no portable peak window).
    fn reset_peak_device_memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "AdapterOperationResult", &self.inner.reset(py)?)
    }

    /// Unavailable: JAX has no portable resettable allocator peak.
    fn peak_device_memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "DeviceMemoryMeasurement", &self.inner.peak(py)?)
    }

    /// Elements and bytes of the parameter tree.
    fn model_footprint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "ModelFootprintMeasurement", &self.inner.footprint(py)?)
    }
}
