//! `tally.profiling.ONNXResourceProfileAdapter` over tally-onnx's
//! `python::OnnxAdapter`.

use pyo3::prelude::*;
use tally_onnx::python::OnnxAdapter;

use super::artifacts_from;
use crate::profiling::BaseResourceProfileAdapter;

super::adapter_class! {
    /// Resource hooks for an ONNX Runtime extractor (vertebrae's
    /// `ONNXResourceProfileAdapter`, answered by tally-onnx).
    OnnxResourceProfileAdapter as "ONNXResourceProfileAdapter" {
        inner: OnnxAdapter,
    }
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
        let inner = OnnxAdapter::new(extractor, artifacts_from(external_artifacts, "external_weights")?);
        Ok(PyClassInitializer::from(BaseResourceProfileAdapter).add_subclass(Self { inner }))
    }
}
