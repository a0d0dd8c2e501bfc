//! `tally.profiling.JAXResourceProfileAdapter` over tally-jax.

use pyo3::prelude::*;

use crate::profiling::BaseResourceProfileAdapter;

super::adapter_class! {
    /// Synchronization and device metadata for JAX-backed extractors
    /// (vertebrae's `JAXResourceProfileAdapter`, measured by tally-jax).
    JaxResourceProfileAdapter as "JAXResourceProfileAdapter" {
        inner: tally_jax::JaxAdapter,
        /// The device the caller asked to profile on.
        #[pyo3(get)]
        profiling_device: Option<String>,
    }
}

#[pymethods]
impl JaxResourceProfileAdapter {
    #[new]
    #[pyo3(
        signature = (extractor, *, values_getter=None, jax_loader=None, backend="jax".to_owned(), profiling_device=None),
        text_signature = "(extractor, *, values_getter=None, jax_loader=None, backend='jax', profiling_device=None)"
    )]
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

    /// The backend name reported.
    #[getter]
    fn backend(&self) -> &str {
        self.inner.backend()
    }
}
