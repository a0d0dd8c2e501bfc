#![doc = include_str!("../README.md")]
//!
//! Keras adapter for tally's resource profiler: vertebrae 1.1.0's
//! `KerasResourceProfileAdapter`, hook by hook, over Keras's Python objects.
//!
//! Keras 3 runs on one of several backends, fixed when `keras` is imported;
//! what a profile can know about the device is the backend's. So the
//! adapter asks `keras.backend.backend()` once and delegates the device
//! hooks to that framework's adapter, as vertebrae does:
//!
//! - `tensorflow`: [`tally_tensorflow::TensorFlowAdapter`] reporting
//!   `keras-tensorflow` (the `tf.config` memory-info window on a GPU);
//! - `torch`: [`tally_torch::python::TorchAdapter`] (the CUDA caching
//!   allocator's window), with the profiling device as a fixed resolver;
//! - `jax`: [`tally_jax::JaxAdapter`] over the model's weights, reporting
//!   `keras-jax`;
//! - any other backend (`numpy`, `openvino`): every device hook
//!   `unavailable`, with vertebrae's reason.
//!
//! The metadata is the delegate's with the backend named `keras-<backend>`
//! and the weight dtypes of the model's `weights` (else `variables`); the
//! device-memory reading is the delegate's with that backend name; the
//! model footprint is the Keras model's variables, measured as vertebrae
//! measures every Keras model ([`tally_tensorflow::model_footprint`]);
//! the deployment artifacts are those given.
//!
//! Keras is the extractor's (`_load_keras()`), else `import keras`, else
//! `tensorflow.keras`. Statuses, reasons and figures equal vertebrae's on
//! the same objects (`crates/tally-python/tests/test_keras.py` compares
//! them live on each backend).

use std::sync::{Mutex, PoisonError};

use pyo3::exceptions::{PyImportError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyList};
use tally_jax::JaxAdapter;
use tally_profile::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, ModelFootprintMeasurement,
    ResourceAdapterMetadata,
};
use tally_profile::python::PythonHooks;
use tally_tensorflow::TensorFlowAdapter;
use tally_torch::python::{DeviceResolver, TorchAdapter};

/// The framework adapter a backend's device hooks go to.
#[derive(Debug)]
enum Delegate {
    TensorFlow(TensorFlowAdapter),
    Torch(TorchAdapter),
    Jax(JaxAdapter),
    /// A backend vertebrae does not profile devices on: `keras-<name>` and
    /// the reason every device hook gives.
    Unsupported {
        backend: String,
        reason: String,
    },
}

/// vertebrae's `KerasResourceProfileAdapter` over Python handles.
///
/// The backend and its delegate are made on first use and kept (vertebrae
/// caches both), behind a lock held only between calls into Python, so a
/// model or a loader that calls back into the adapter cannot deadlock it.
#[derive(Debug)]
pub struct KerasAdapter {
    extractor: Py<PyAny>,
    artifacts: Vec<DeploymentArtifact>,
    profiling_device: Option<String>,
    backend: Mutex<Option<String>>,
    delegate: Mutex<Option<std::sync::Arc<Delegate>>>,
}

impl KerasAdapter {
    /// An adapter for `extractor` (whose `model`, else `_model`, is the Keras
    /// model) declaring `artifacts`, profiling on `profiling_device` when
    /// the model's state does not decide.
    pub fn new(
        extractor: Py<PyAny>,
        artifacts: Vec<DeploymentArtifact>,
        profiling_device: Option<String>,
    ) -> Self {
        Self { extractor, artifacts, profiling_device, backend: Mutex::new(None), delegate: Mutex::new(None) }
    }

    /// The extractor.
    pub fn extractor(&self) -> &Py<PyAny> {
        &self.extractor
    }

    /// The device the caller asked to profile on.
    pub fn profiling_device(&self) -> Option<&str> {
        self.profiling_device.as_deref()
    }

    /// The deployment artifacts declared at construction (the
    /// `deployment_artifacts` hook).
    pub fn artifacts(&self) -> &[DeploymentArtifact] {
        &self.artifacts
    }

    /// vertebrae's `_load_keras`: the extractor's `_load_keras()`, else
    /// `import keras`, else `tensorflow.keras` when Keras 3 is absent.
    fn keras<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let extractor = self.extractor.bind(py);
        if let Some(loader) = extractor.getattr_opt("_load_keras")?
            && loader.is_callable()
        {
            return loader.call0();
        }
        match py.import("keras") {
            Ok(keras) => Ok(keras.into_any()),
            Err(error) if error.is_instance_of::<PyImportError>(py) => {
                py.import("tensorflow")?.getattr("keras")
            }
            Err(error) => Err(error),
        }
    }

    /// vertebrae's `_backend_name`: `keras.backend.backend()`, lower-cased,
    /// asked once.
    ///
    /// # Errors
    ///
    /// vertebrae's `RuntimeError` when Keras has no callable
    /// `backend.backend`, or the loader's or Keras's exception.
    pub fn backend_name(&self, py: Python<'_>) -> PyResult<String> {
        if let Some(name) = lock(&self.backend).clone() {
            return Ok(name);
        }
        let keras = self.keras(py)?;
        let function = match keras.getattr_opt("backend")? {
            Some(module) => module.getattr_opt("backend")?,
            None => None,
        };
        let Some(function) = function.filter(|function| function.is_callable()) else {
            return Err(PyRuntimeError::new_err("Keras does not expose backend.backend()."));
        };
        let name = function.call0()?.str()?.to_string().to_lowercase();
        *lock(&self.backend) = Some(name.clone());
        Ok(name)
    }

    /// vertebrae's `_model`: the extractor's `model` when it is not `None`,
    /// else its `_model` (`None` when it has neither).
    fn model<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        model_of(self.extractor.bind(py))
    }

    /// The delegate for the backend, made once.
    fn delegate(&self, py: Python<'_>) -> PyResult<std::sync::Arc<Delegate>> {
        let backend = self.backend_name(py)?;
        if let Some(delegate) = lock(&self.delegate).clone() {
            return Ok(delegate);
        }
        let extractor = self.extractor.clone_ref(py);
        let delegate = match backend.as_str() {
            "tensorflow" => Delegate::TensorFlow(TensorFlowAdapter::new(
                extractor,
                Vec::new(),
                None,
                "keras-tensorflow",
                self.profiling_device.clone(),
            )),
            "torch" => Delegate::Torch(TorchAdapter::new(
                extractor,
                Vec::new(),
                None,
                self.profiling_device.clone().map(DeviceResolver::Fixed),
                None,
            )),
            "jax" => Delegate::Jax(JaxAdapter::new(
                extractor,
                Some(weights_getter(py, &self.extractor)?),
                None,
                "keras-jax",
                self.profiling_device.clone(),
            )),
            other => Delegate::Unsupported {
                backend: format!("keras-{other}"),
                reason: format!("Keras backend '{other}' is not supported for device profiling."),
            },
        };
        let delegate = std::sync::Arc::new(delegate);
        *lock(&self.delegate) = Some(delegate.clone());
        Ok(delegate)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Each value is written whole in one statement: a panic elsewhere while
    // the lock was held cannot leave it half-written.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// vertebrae's `_model` of an extractor.
fn model_of<'py>(extractor: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Some(model) = extractor.getattr_opt("model")?
        && !model.is_none()
    {
        return Ok(model);
    }
    Ok(extractor.getattr_opt("_model")?.unwrap_or_else(|| extractor.py().None().into_bound(extractor.py())))
}

/// The JAX delegate's parameter tree, as vertebrae hands it over: a
/// callable answering the extractor's model's weights when called.
fn weights_getter(py: Python<'_>, extractor: &Py<PyAny>) -> PyResult<Py<PyAny>> {
    let extractor = extractor.clone_ref(py);
    let getter = PyCFunction::new_closure(py, Some(c"keras_weights"), None, move |arguments, _| {
        let py = arguments.py();
        let weights = tally_tensorflow::model_variables(&model_of(extractor.bind(py))?)?;
        PyResult::Ok(PyList::new(py, weights)?.into_any().unbind())
    })?;
    Ok(getter.into_any().unbind())
}

impl PythonHooks for KerasAdapter {
    /// The `metadata` hook: the delegate's, with the backend named
    /// `keras-<backend>` and the dtypes of the model's weights.
    ///
    /// # Errors
    ///
    /// The exception of Keras, of the delegate's framework or of the model.
    fn metadata(&self, py: Python<'_>) -> PyResult<ResourceAdapterMetadata> {
        let backend = self.backend_name(py)?;
        let mut metadata = match &*self.delegate(py)? {
            Delegate::TensorFlow(adapter) => adapter.metadata(py)?,
            Delegate::Torch(adapter) => adapter.metadata(py)?,
            Delegate::Jax(adapter) => adapter.metadata(py)?,
            Delegate::Unsupported { backend, .. } => ResourceAdapterMetadata {
                backend: Some(backend.clone()),
                ..ResourceAdapterMetadata::default()
            },
        };
        metadata.backend = Some(format!("keras-{backend}"));
        metadata.weight_dtypes =
            tally_profile::python::weight_dtypes(&tally_tensorflow::model_variables(&self.model(py)?)?)?;
        Ok(metadata)
    }

    /// The `synchronize` hook: the delegate's.
    ///
    /// # Errors
    ///
    /// The exception of Keras or of the delegate's framework.
    fn synchronize(&self, py: Python<'_>) -> PyResult<AdapterOperationResult> {
        Ok(match &*self.delegate(py)? {
            Delegate::TensorFlow(adapter) => adapter.synchronize(py)?,
            Delegate::Torch(adapter) => adapter.synchronize(py)?,
            Delegate::Jax(adapter) => adapter.synchronize(py)?,
            Delegate::Unsupported { reason, .. } => AdapterOperationResult::unavailable(Some(reason.clone())),
        })
    }

    /// The `reset_peak_device_memory` hook: the delegate's.
    ///
    /// # Errors
    ///
    /// The exception of Keras or of the delegate's framework.
    fn reset_peak_device_memory(&self, py: Python<'_>) -> PyResult<AdapterOperationResult> {
        Ok(match &*self.delegate(py)? {
            Delegate::TensorFlow(adapter) => adapter.reset_peak_device_memory(py)?,
            Delegate::Torch(adapter) => adapter.reset_peak_device_memory(py)?,
            Delegate::Jax(adapter) => adapter.reset_peak_device_memory(py)?,
            Delegate::Unsupported { reason, .. } => AdapterOperationResult::unavailable(Some(reason.clone())),
        })
    }

    /// The `peak_device_memory` hook: the delegate's, with the backend named
    /// `keras-<backend>`.
    ///
    /// # Errors
    ///
    /// The exception of Keras or of the delegate's framework.
    fn peak_device_memory(&self, py: Python<'_>) -> PyResult<DeviceMemoryMeasurement> {
        let delegate = self.delegate(py)?;
        let reading = match &*delegate {
            Delegate::TensorFlow(adapter) => adapter.peak_device_memory(py)?,
            Delegate::Torch(adapter) => adapter.peak_device_memory(py)?,
            Delegate::Jax(adapter) => adapter.peak_device_memory(py)?,
            Delegate::Unsupported { backend, reason } => {
                DeviceMemoryMeasurement::unavailable(Some(reason.clone()))
                    .with_backend_device(Some(backend.clone()), None)
            }
        };
        let device = reading.readings().device.clone();
        Ok(reading.with_backend_device(Some(format!("keras-{}", self.backend_name(py)?)), device))
    }

    /// The `model_footprint` hook: the Keras model's variables, on every
    /// backend.
    ///
    /// # Errors
    ///
    /// The exception of the model's variables (see
    /// [`tally_tensorflow::model_footprint`]).
    fn model_footprint(&self, py: Python<'_>) -> PyResult<ModelFootprintMeasurement> {
        tally_tensorflow::model_footprint(py, &self.model(py)?)
    }

    fn deployment_artifacts(&self, _py: Python<'_>) -> PyResult<Vec<DeploymentArtifact>> {
        Ok(self.artifacts.clone())
    }

    fn class_name(&self) -> &'static str {
        "tally.profiling.KerasResourceProfileAdapter"
    }

    fn profiling_device(&self) -> Option<&str> {
        self.profiling_device.as_deref()
    }
}
