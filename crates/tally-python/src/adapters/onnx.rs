//! `tally.profiling.ONNXResourceProfileAdapter` over tally-onnx's
//! `python::OnnxAdapter`.

use pyo3::prelude::*;
use tally_onnx::python::OnnxAdapter;

use super::artifacts_from;
use crate::profiling::BaseResourceProfileAdapter;

/// Resource hooks for an ONNX Runtime extractor (vertebrae's
/// `ONNXResourceProfileAdapter`, answered by tally-onnx).
#[pyclass(extends = BaseResourceProfileAdapter, subclass, module = "tally.profiling", name = "ONNXResourceProfileAdapter")]
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
}

super::python_hooks!(OnnxResourceProfileAdapter);
