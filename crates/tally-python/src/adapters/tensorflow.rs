//! `tally.profiling.TensorFlowResourceProfileAdapter` over tally-tensorflow.

use pyo3::prelude::*;

use super::artifacts_from;
use crate::profiling::BaseResourceProfileAdapter;

super::adapter_class! {
    /// Resource hooks shared by Keras and TensorFlow Hub extractors
    /// (vertebrae's `TensorFlowResourceProfileAdapter`, measured by
    /// tally-tensorflow).
    TensorFlowResourceProfileAdapter as "TensorFlowResourceProfileAdapter" {
        inner: tally_tensorflow::TensorFlowAdapter,
    }
}

#[pymethods]
impl TensorFlowResourceProfileAdapter {
    /// `artifacts` as [`KerasResourceProfileAdapter`](super::keras)'s.
    #[new]
    #[pyo3(
        signature = (extractor, artifacts=None, *, model_getter=None, backend="tensorflow".to_owned(), profiling_device=None),
        text_signature = "(extractor, artifacts=(), *, model_getter=None, backend='tensorflow', profiling_device=None)"
    )]
    fn new(
        extractor: Py<PyAny>,
        artifacts: Option<&Bound<'_, PyAny>>,
        model_getter: Option<Py<PyAny>>,
        backend: String,
        profiling_device: Option<String>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let artifacts = artifacts_from(artifacts, "checkpoint")?;
        let inner = tally_tensorflow::TensorFlowAdapter::new(
            extractor,
            artifacts,
            model_getter,
            backend,
            profiling_device,
        );
        Ok(PyClassInitializer::from(BaseResourceProfileAdapter).add_subclass(Self { inner }))
    }

    /// The backend name reported.
    #[getter]
    fn backend(&self) -> &str {
        self.inner.backend()
    }

    /// The device the caller asked to profile on.
    #[getter]
    fn profiling_device(&self) -> Option<&str> {
        self.inner.profiling_device()
    }
}
