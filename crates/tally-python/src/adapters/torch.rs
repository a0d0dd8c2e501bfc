//! `tally.profiling.TorchResourceProfileAdapter` over tally-torch's
//! `python::TorchAdapter`.

use pyo3::prelude::*;
use tally_torch::python::{DeviceResolver, TorchAdapter};

use super::artifacts_from;
use crate::profiling::BaseResourceProfileAdapter;

super::adapter_class! {
    /// Resource hooks for a Torch-backed extractor without forcing model loading
    /// (vertebrae's `TorchResourceProfileAdapter`, measured by tally-torch).
    TorchResourceProfileAdapter as "TorchResourceProfileAdapter" {
        inner: TorchAdapter,
    }
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
        let inner = TorchAdapter::new(
            extractor,
            artifacts_from(artifacts, "checkpoint")?,
            model_getter,
            device_resolver.map(DeviceResolver::Callable),
            torch_loader,
        );
        Ok(PyClassInitializer::from(BaseResourceProfileAdapter).add_subclass(Self { inner }))
    }
}
