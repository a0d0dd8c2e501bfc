//! `tally.profiling.KerasResourceProfileAdapter` over tally-keras.

use pyo3::prelude::*;

use super::artifacts_from;
use crate::profiling::BaseResourceProfileAdapter;

super::adapter_class! {
    /// Backend-aware resource hooks for multi-backend Keras models
    /// (vertebrae's `KerasResourceProfileAdapter`, measured by tally-keras:
    /// the device hooks of the backend Keras runs on).
    KerasResourceProfileAdapter as "KerasResourceProfileAdapter" {
        inner: tally_keras::KerasAdapter,
    }
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
        artifacts: Option<&Bound<'_, PyAny>>,
        profiling_device: Option<String>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let artifacts = artifacts_from(artifacts, "checkpoint")?;
        let inner = tally_keras::KerasAdapter::new(extractor, artifacts, profiling_device);
        Ok(PyClassInitializer::from(BaseResourceProfileAdapter).add_subclass(Self { inner }))
    }

    /// The device the caller asked to profile on.
    #[getter]
    fn profiling_device(&self) -> Option<&str> {
        self.inner.profiling_device()
    }
}
