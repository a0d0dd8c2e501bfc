//! vertebrae's framework adapters as `tally.profiling` classes, one file per
//! framework, each a thin shell over its adapter crate (tally-jax,
//! tally-tensorflow, tally-keras, the `python` features of tally-torch and tally-onnx):
//! the constructor takes vertebrae's arguments, each hook converts the
//! crate's answer into the dataclass vertebrae returns. The profiler calls
//! them as it calls any Python adapter (through their Python methods), so
//! a user's subclass that overrides a hook is honoured.

#[cfg(feature = "jax")]
mod jax;
#[cfg(feature = "keras")]
mod keras;
#[cfg(feature = "onnx")]
mod onnx;
#[cfg(feature = "tensorflow")]
mod tensorflow;
#[cfg(feature = "torch")]
mod torch;

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tally_profile::profile::DeploymentArtifact;

use crate::profiling::{build, from_instance};

/// The six hooks of an adapter class whose `inner` is a
/// [`PythonHooks`](tally_profile::python::PythonHooks): each answer is the
/// crate's, converted into the dataclass vertebrae returns; an exception of
/// the framework reaches the caller as it is (vertebrae's profiler, or a
/// user's code, contains it).
macro_rules! python_hooks {
    ($class:ty) => {
        #[pyo3::pymethods]
        impl $class {
            /// Framework, device and synchronization context.
            fn metadata<'py>(&self, py: pyo3::Python<'py>) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                let answer = tally_profile::python::PythonHooks::metadata(&self.inner, py)?;
                crate::profiling::default_answer(py, "ResourceAdapterMetadata", &answer)
            }

            /// Waits for the device's queued work.
            fn synchronize<'py>(
                &self,
                py: pyo3::Python<'py>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                let answer = tally_profile::python::PythonHooks::synchronize(&self.inner, py)?;
                crate::profiling::default_answer(py, "AdapterOperationResult", &answer)
            }

            /// Opens the device-memory window.
            fn reset_peak_device_memory<'py>(
                &self,
                py: pyo3::Python<'py>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                let answer = tally_profile::python::PythonHooks::reset_peak_device_memory(&self.inner, py)?;
                crate::profiling::default_answer(py, "AdapterOperationResult", &answer)
            }

            /// The device-memory peaks since the window opened.
            fn peak_device_memory<'py>(
                &self,
                py: pyo3::Python<'py>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                let answer = tally_profile::python::PythonHooks::peak_device_memory(&self.inner, py)?;
                crate::profiling::default_answer(py, "DeviceMemoryMeasurement", &answer)
            }

            /// Parameter and in-memory sizes of the model.
            fn model_footprint<'py>(
                &self,
                py: pyo3::Python<'py>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                let answer = tally_profile::python::PythonHooks::model_footprint(&self.inner, py)?;
                crate::profiling::default_answer(py, "ModelFootprintMeasurement", &answer)
            }

            /// Local files whose deployment footprint should be measured.
            fn deployment_artifacts<'py>(
                &self,
                py: pyo3::Python<'py>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::types::PyTuple>> {
                let answer = tally_profile::python::PythonHooks::deployment_artifacts(&self.inner, py)?;
                crate::adapters::artifacts_tuple(py, &answer)
            }
        }
    };
}
#[allow(unused_imports)] // used by the adapters whose features are on
pub(crate) use python_hooks;

/// Registers the adapter classes built into this wheel.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    #[cfg(feature = "jax")]
    module.add_class::<jax::JaxResourceProfileAdapter>()?;
    #[cfg(feature = "torch")]
    module.add_class::<torch::TorchResourceProfileAdapter>()?;
    #[cfg(feature = "onnx")]
    module.add_class::<onnx::OnnxResourceProfileAdapter>()?;
    #[cfg(feature = "tensorflow")]
    module.add_class::<tensorflow::TensorFlowResourceProfileAdapter>()?;
    #[cfg(feature = "keras")]
    module.add_class::<keras::KerasResourceProfileAdapter>()?;
    let _ = module;
    Ok(())
}

/// vertebrae's `_normalize_artifacts`: each item a `DeploymentArtifact`
/// (tally's or vertebrae's), or a path whose artifact has `role`.
#[allow(dead_code)] // used by the adapters whose features are on
pub(crate) fn artifacts_from(items: &Bound<'_, PyAny>, role: &str) -> PyResult<Vec<DeploymentArtifact>> {
    let mut artifacts = Vec::new();
    for item in items.try_iter()? {
        let item = item?;
        if item.get_type().name()? == "DeploymentArtifact" {
            artifacts.push(from_instance(&item, "DeploymentArtifact")?);
        } else {
            // vertebrae builds `DeploymentArtifact(str(item), role=role)`,
            // whose checks raise ValueError.
            let path = item.str()?;
            let artifact = DeploymentArtifact::new(path.to_str()?)
                .and_then(|artifact| artifact.with_role(role))
                .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))?;
            artifacts.push(artifact);
        }
    }
    Ok(artifacts)
}

/// A `deployment_artifacts` answer: a tuple of `DeploymentArtifact`
/// dataclasses, as vertebrae's adapters return.
#[allow(dead_code)] // used by the adapters whose features are on
pub(crate) fn artifacts_tuple<'py>(
    py: Python<'py>,
    artifacts: &[DeploymentArtifact],
) -> PyResult<Bound<'py, PyTuple>> {
    let items = artifacts
        .iter()
        .map(|artifact| {
            let json = serde_json::to_value(artifact)
                .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))?;
            build(py, "DeploymentArtifact", &json)
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}
