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

/// An adapter class: the struct, a `tally.profiling` subclass of
/// `BaseResourceProfileAdapter` named as vertebrae names it (`as "Name"`),
/// whose `inner` is a [`PythonHooks`](tally_profile::python::PythonHooks);
/// its `extractor` getter; and its six hooks, each the crate's answer
/// converted into the dataclass vertebrae returns. An exception of the
/// framework reaches the caller as it is (vertebrae's profiler, or a
/// user's code, contains it).
macro_rules! adapter_class {
    ($(#[$attribute:meta])* $class:ident as $name:tt { $($fields:tt)* }) => {
        $(#[$attribute])*
        #[pyo3::pyclass(
            extends = crate::profiling::BaseResourceProfileAdapter,
            subclass,
            module = "tally.profiling",
            name = $name
        )]
        pub struct $class {
            $($fields)*
        }

        #[pyo3::pymethods]
        impl $class {
            /// The extractor.
            #[getter]
            fn extractor(&self, py: pyo3::Python<'_>) -> pyo3::Py<pyo3::PyAny> {
                self.inner.extractor().clone_ref(py)
            }

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
pub(crate) use adapter_class;

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

/// vertebrae's `_normalize_artifacts` of an adapter's `artifacts` (`None`
/// standing for vertebrae's default `()`, as pyo3 cannot build a tuple
/// default): each item a `DeploymentArtifact` (tally's or vertebrae's), or
/// a path whose artifact has `role`.
///
/// This is not the "a path or paths" rule of [`crate::paths::one_or_many`]:
/// vertebrae takes a sequence here and iterates whatever it is given (a
/// lone `str` as its characters), and so does tally.
#[allow(dead_code)] // used by the adapters whose features are on
pub(crate) fn artifacts_from(
    items: Option<&Bound<'_, PyAny>>,
    role: &str,
) -> PyResult<Vec<DeploymentArtifact>> {
    let mut artifacts = Vec::new();
    let Some(items) = items else {
        return Ok(artifacts);
    };
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
