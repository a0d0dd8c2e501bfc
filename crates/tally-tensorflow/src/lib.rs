#![doc = include_str!("../README.md")]
//!
//! TensorFlow adapter for tally's resource profiler: vertebrae 1.1.0's
//! `TensorFlowResourceProfileAdapter`, hook by hook, over TensorFlow's
//! Python objects.
//!
//! TensorFlow's models and variables live in Python, so the adapter holds
//! Python handles (the extractor, an optional getter of the model) and asks
//! TensorFlow through pyo3: a Rust program that embeds Python can profile
//! TensorFlow work with it, and the `tally` Python package exposes it as
//! `tally.profiling.TensorFlowResourceProfileAdapter`. The Keras adapter
//! delegates to it for Keras's TensorFlow backend (backend
//! `keras-tensorflow`), measures every backend's model with
//! [`model_footprint`] and reads its weights with [`model_variables`].
//!
//! - **Device**: the one device of the model's variables (`model_state`;
//!   `model_state_conflicts_with_profiling_hint` when the profiling hint
//!   names another), else the hint (`explicit_profiling_hint`), else none
//!   when the variables sit on several devices (`ambiguous_model_devices`),
//!   else the only visible GPU (`single_visible_gpu`), `CPU:0` when no GPU
//!   is visible (`default_cpu`) or none among several GPUs
//!   (`ambiguous_visible_devices`). Devices are written as TensorFlow's
//!   short names (`/job:localhost/.../device:GPU:0` and `gpu:0` read
//!   `GPU:0`; see [`normalize_device`]).
//! - **Synchronization**: nothing to wait for: the extractor's outputs are
//!   converted to numpy (`extractor_output_to_numpy`), which waits for
//!   TensorFlow's work, so the hook succeeds.
//! - **Device memory**: on a GPU, the window of
//!   `tf.config.experimental.get_memory_info` (the baseline's `current`
//!   when the window opens, the `peak` when it closes) reset by
//!   `tf.config.experimental.reset_memory_stats`; measured only on the
//!   device the window was opened on. On CPU `not_applicable` (RSS covers
//!   it).
//! - **Model footprint**: element count and bytes of the model's variables
//!   (`weights`, else `variables`) and of its trainable ones
//!   (`trainable_weights`, else `trainable_variables`), each variable once
//!   by identity: `shape` and the numpy `itemsize` of `dtype.as_numpy_dtype`.
//! - **Deployment artifacts**: the files it was given.
//!
//! Statuses, reasons and figures equal vertebrae's on the same objects
//! (`crates/tally-python/tests/test_tensorflow.py` compares them live).

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tally_profile::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, DeviceMemoryReadings,
    ModelFootprintMeasurement, ModelFootprintReadings, ResourceAdapterMetadata,
};
use tally_profile::python::PythonHooks;
use tally_profile::python::python_int;
use tally_profile::python::{deduplicated, nonnegative, values_size, weight_dtypes};

const AMBIGUOUS_DEVICE: &str = "TensorFlow device resolution is ambiguous across visible devices.";
const NO_MEMORY_INFO: &str = "TensorFlow memory-info APIs are unavailable.";
const NO_RESET: &str = "TensorFlow reset_memory_stats is unavailable.";
const CPU_MEMORY: &str = "CPU memory is reported through process RSS.";
const DEVICE_CHANGED: &str =
    "The active TensorFlow device changed after the allocator measurement boundary was established.";

/// The device-memory window `reset_peak_device_memory` opened.
#[derive(Debug, Default)]
struct MemoryWindow {
    /// `current` bytes when it opened (a Python integer: checked when the
    /// reading is built, as vertebrae's dataclass checks it).
    baseline_allocated: Option<i128>,
    /// The device whose statistics were reset.
    reset_device: Option<String>,
}

/// vertebrae's `TensorFlowResourceProfileAdapter` over Python handles.
///
/// Its hooks take `&self` (the window sits behind a lock held only while
/// it is read or written, never across a call into Python), so a model
/// getter that calls back into the adapter cannot deadlock it.
#[derive(Debug)]
pub struct TensorFlowAdapter {
    extractor: Py<PyAny>,
    artifacts: Vec<DeploymentArtifact>,
    model_getter: Option<Py<PyAny>>,
    backend: String,
    profiling_device: Option<String>,
    window: Mutex<MemoryWindow>,
}

impl TensorFlowAdapter {
    /// An adapter for `extractor`, whose model `model_getter` returns (none:
    /// the extractor's `model`, else its `_model`), reporting `backend`
    /// (vertebrae's default is `tensorflow`; the Keras adapter passes
    /// `keras-tensorflow`), with the files `artifacts` as its deployment
    /// artifacts.
    pub fn new(
        extractor: Py<PyAny>,
        artifacts: Vec<DeploymentArtifact>,
        model_getter: Option<Py<PyAny>>,
        backend: impl Into<String>,
        profiling_device: Option<String>,
    ) -> Self {
        Self {
            extractor,
            artifacts,
            model_getter,
            backend: backend.into(),
            profiling_device,
            window: Mutex::new(MemoryWindow::default()),
        }
    }

    /// The extractor.
    pub fn extractor(&self) -> &Py<PyAny> {
        &self.extractor
    }

    /// The backend name reported.
    pub fn backend(&self) -> &str {
        &self.backend
    }

    /// The device the caller asked to profile on.
    pub fn profiling_device(&self) -> Option<&str> {
        self.profiling_device.as_deref()
    }

    /// The deployment artifacts it was given (the `deployment_artifacts`
    /// hook).
    pub fn artifacts(&self) -> &[DeploymentArtifact] {
        &self.artifacts
    }

    /// The model: the getter's answer, else the extractor's `model` when it
    /// is not `None`, else its `_model` (`None` when it has neither).
    ///
    /// # Errors
    ///
    /// The getter's exception, or one a property of the extractor raises.
    pub fn model<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(getter) = &self.model_getter {
            return getter.bind(py).call0();
        }
        let extractor = self.extractor.bind(py);
        if let Some(model) = extractor.getattr_opt("model")?
            && !model.is_none()
        {
            return Ok(model);
        }
        Ok(extractor.getattr_opt("_model")?.unwrap_or_else(|| py.None().into_bound(py)))
    }

    /// vertebrae's `_resolved_device`: the device and how it was resolved.
    /// TensorFlow is imported only when the visible GPUs decide, unless the
    /// caller has it already (`tf`).
    fn resolved_device<'py>(
        &self,
        py: Python<'py>,
        tf: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Option<String>, &'static str)> {
        let devices = model_devices(&self.model(py)?)?;
        let hint = self.profiling_device.as_deref().filter(|hint| !hint.is_empty()).map(normalize_device);
        if let [device] = devices.as_slice() {
            let source = if hint.as_ref().is_some_and(|hint| hint != device) {
                "model_state_conflicts_with_profiling_hint"
            } else {
                "model_state"
            };
            return Ok((Some(device.clone()), source));
        }
        if let Some(hint) = hint {
            return Ok((Some(hint), "explicit_profiling_hint"));
        }
        if devices.len() > 1 {
            return Ok((None, "ambiguous_model_devices"));
        }
        let tf = match tf {
            Some(tf) => tf.clone(),
            None => tensorflow(py)?,
        };
        let logical: Vec<Bound<'py, PyAny>> = tf
            .getattr("config")?
            .call_method1("list_logical_devices", ("GPU",))?
            .try_iter()?
            .collect::<PyResult<_>>()?;
        Ok(match logical.as_slice() {
            [only] => {
                (Some(normalize_device(&only.getattr("name")?.extract::<String>()?)), "single_visible_gpu")
            }
            [] => (Some("CPU:0".to_owned()), "default_cpu"),
            _ => (None, "ambiguous_visible_devices"),
        })
    }

    fn window(&self) -> std::sync::MutexGuard<'_, MemoryWindow> {
        // The window is two plain fields, each written whole: a panic while
        // the lock was held leaves it consistent, so a poisoned lock is used.
        self.window.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// vertebrae's `_tensorflow_model_footprint`: the element count and bytes
/// of a model's variables (`weights`, else `variables`) and of its
/// trainable ones (`trainable_weights`, else `trainable_variables`; all of
/// them when the model has neither attribute), each variable counted once
/// by identity, with their dtypes. `unavailable` for `None` (not loaded) or
/// a model without variables.
///
/// vertebrae's Keras adapter measures a model of every Keras backend with
/// it.
///
/// # Errors
///
/// Python's exception when a variable's attributes raise or its shape is
/// not made of integers; a `ValueError` with vertebrae's message when the
/// trainable variables outweigh all of them.
pub fn model_footprint(py: Python<'_>, model: &Bound<'_, PyAny>) -> PyResult<ModelFootprintMeasurement> {
    if model.is_none() {
        return Ok(ModelFootprintMeasurement::unavailable(Some("The model has not been loaded.")));
    }
    let mut trainable = deduplicated(&either(model, "trainable_weights", "trainable_variables")?)?;
    let all = deduplicated(&either(model, "weights", "variables")?)?;
    if trainable.is_empty()
        && !all.is_empty()
        && !(model.hasattr("trainable_weights")? || model.hasattr("trainable_variables")?)
    {
        trainable = all.clone();
    }
    if all.is_empty() {
        return Ok(ModelFootprintMeasurement::unavailable(Some("The model exposes no variables.")));
    }
    let (count, bytes) = values_size(py, &all)?;
    let (trainable_count, trainable_bytes) = values_size(py, &trainable)?;
    let weight_dtypes = model_weight_dtypes(model)?;
    let readings = ModelFootprintReadings {
        parameter_count: Some(nonnegative("parameter_count", count)?),
        parameter_bytes: Some(nonnegative("parameter_bytes", bytes)?),
        trainable_parameter_count: Some(nonnegative("trainable_parameter_count", trainable_count)?),
        trainable_parameter_bytes: Some(nonnegative("trainable_parameter_bytes", trainable_bytes)?),
        buffer_bytes: None,
        in_memory_bytes: Some(nonnegative("in_memory_bytes", bytes)?),
        weight_dtypes,
        ..ModelFootprintReadings::default()
    };
    ModelFootprintMeasurement::measured(readings).map_err(|error| PyValueError::new_err(error.to_string()))
}

/// vertebrae's `_normalize_tensorflow_device`: TensorFlow's short device
/// name, upper case, from the last `GPU:` (else `CPU:`) on
/// (`/job:localhost/replica:0/task:0/device:GPU:0` and `gpu:0` are
/// `GPU:0`); any other name unchanged (`cuda:0`).
pub fn normalize_device(value: &str) -> String {
    let upper = value.to_uppercase();
    for kind in ["GPU:", "CPU:"] {
        if let Some((_, index)) = upper.rsplit_once(kind) {
            return format!("{kind}{index}");
        }
    }
    value.to_owned()
}

fn is_gpu_device(device: &str) -> bool {
    device.to_uppercase().contains("GPU")
}

fn tensorflow(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("tensorflow").map(Bound::into_any)
}

/// `tf.config.experimental` when it offers `get_memory_info`.
fn memory_api<'py>(tf: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match tf.getattr("config")?.getattr_opt("experimental")? {
        Some(experimental) if !experimental.is_none() && experimental.hasattr("get_memory_info")? => {
            Ok(Some(experimental))
        }
        _ => Ok(None),
    }
}

/// `getattr(model, first, ()) or getattr(model, second, ())`.
fn either<'py>(model: &Bound<'py, PyAny>, first: &str, second: &str) -> PyResult<Bound<'py, PyAny>> {
    if let Some(values) = model.getattr_opt(first)?
        && values.is_truthy()?
    {
        return Ok(values);
    }
    Ok(model.getattr_opt(second)?.unwrap_or_else(|| PyTuple::empty(model.py()).into_any()))
}

/// A model's variables as vertebrae reads them for dtypes and devices:
/// `weights` when it is non-empty, else `variables`; none for `None` (the
/// Keras adapter's `_weights`).
///
/// # Errors
///
/// Python's exception when a property raises (other than a missing
/// attribute) or the list does not iterate.
pub fn model_variables<'py>(model: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if model.is_none() {
        return Ok(Vec::new());
    }
    either(model, "weights", "variables")?.try_iter()?.collect()
}

/// vertebrae's `_tensorflow_weight_dtypes`.
fn model_weight_dtypes(model: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    weight_dtypes(&model_variables(model)?)
}

/// vertebrae's `_tensorflow_model_devices`: the sorted distinct short names
/// of the variables' devices (a Keras variable's through its `value`).
fn model_devices(model: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let mut devices = BTreeSet::new();
    for value in model_variables(model)? {
        let unwrapped = value.getattr_opt("value")?.unwrap_or(value);
        if let Some(device) = unwrapped.getattr_opt("device")?
            && device.is_truthy()?
        {
            devices.insert(normalize_device(&device.str()?.to_string()));
        }
    }
    Ok(devices.into_iter().collect())
}

impl PythonHooks for TensorFlowAdapter {
    /// The `metadata` hook: backend, resolved device, the model's weight
    /// dtypes; never asynchronous (the outputs reach numpy).
    ///
    /// # Errors
    ///
    /// The exception of the model getter or of TensorFlow.
    fn metadata(&self, py: Python<'_>) -> PyResult<ResourceAdapterMetadata> {
        let (device, resolution) = self.resolved_device(py, None)?;
        let model = self.model(py)?;
        let metadata = ResourceAdapterMetadata {
            backend: Some(self.backend.clone()),
            device,
            asynchronous: false,
            synchronization_method: Some("extractor_output_to_numpy".to_owned()),
            weight_dtypes: model_weight_dtypes(&model)?,
            ..ResourceAdapterMetadata::default()
        };
        metadata.with_device_resolution(resolution).map_err(|error| PyValueError::new_err(error.to_string()))
    }

    /// The `synchronize` hook: succeeded, with nothing to wait for, since
    /// converting the extractor's outputs to numpy waits for TensorFlow.
    fn synchronize(&self, _py: Python<'_>) -> PyResult<AdapterOperationResult> {
        Ok(AdapterOperationResult::succeeded())
    }

    /// The `reset_peak_device_memory` hook: on a GPU, remembers the
    /// allocator's `current` bytes and resets its statistics; `not_applicable`
    /// on CPU; `unavailable` when the device is ambiguous or TensorFlow
    /// lacks the memory-info APIs.
    ///
    /// # Errors
    ///
    /// The exception of the model getter or of TensorFlow.
    fn reset_peak_device_memory(&self, py: Python<'_>) -> PyResult<AdapterOperationResult> {
        let tf = tensorflow(py)?;
        let Some(device) = self.resolved_device(py, Some(&tf))?.0 else {
            return Ok(AdapterOperationResult::unavailable(Some(AMBIGUOUS_DEVICE)));
        };
        if !is_gpu_device(&device) {
            return Ok(AdapterOperationResult::not_applicable(None::<String>));
        }
        let Some(experimental) = memory_api(&tf)? else {
            return Ok(AdapterOperationResult::unavailable(Some(NO_MEMORY_INFO)));
        };
        let info = experimental.call_method1("get_memory_info", (&device,))?;
        let baseline = python_int::<i128>(&info.call_method1("get", ("current", 0))?)?;
        self.window().baseline_allocated = Some(baseline);
        if !experimental.hasattr("reset_memory_stats")? {
            return Ok(AdapterOperationResult::unavailable(Some(NO_RESET)));
        }
        experimental.call_method1("reset_memory_stats", (&device,))?;
        self.window().reset_device = Some(device);
        Ok(AdapterOperationResult::succeeded())
    }

    /// The `peak_device_memory` hook: the allocator's `peak` since the
    /// reset, with the baseline, when the device is the one the window was
    /// opened on; `not_applicable` on CPU; `unavailable` otherwise.
    ///
    /// # Errors
    ///
    /// The exception of the model getter or of TensorFlow; a `ValueError`
    /// when TensorFlow reports negative bytes (vertebrae's dataclass rejects
    /// them).
    fn peak_device_memory(&self, py: Python<'_>) -> PyResult<DeviceMemoryMeasurement> {
        let tf = tensorflow(py)?;
        let backend = Some(self.backend.clone());
        let Some(device) = self.resolved_device(py, Some(&tf))?.0 else {
            return Ok(DeviceMemoryMeasurement::unavailable(Some(AMBIGUOUS_DEVICE))
                .with_backend_device(backend, None));
        };
        if !is_gpu_device(&device) {
            return Ok(DeviceMemoryMeasurement::not_applicable(Some(CPU_MEMORY))
                .with_backend_device(backend, Some(device)));
        }
        let (baseline, reset_device) = {
            let window = self.window();
            (window.baseline_allocated, window.reset_device.clone())
        };
        if reset_device.as_deref() != Some(device.as_str()) {
            return Ok(DeviceMemoryMeasurement::unavailable(Some(DEVICE_CHANGED))
                .with_backend_device(backend, Some(device)));
        }
        let Some(experimental) = memory_api(&tf)? else {
            return Ok(DeviceMemoryMeasurement::unavailable(Some(NO_MEMORY_INFO))
                .with_backend_device(backend, Some(device)));
        };
        let info = experimental.call_method1("get_memory_info", (&device,))?;
        let peak = python_int::<i128>(&info.call_method1("get", ("peak", 0))?)?;
        let readings = DeviceMemoryReadings {
            backend,
            device: Some(device),
            baseline_allocated_bytes: baseline
                .map(|baseline| nonnegative("baseline_allocated_bytes", baseline))
                .transpose()?,
            peak_allocated_bytes: Some(nonnegative("peak_allocated_bytes", peak)?),
            ..DeviceMemoryReadings::default()
        };
        DeviceMemoryMeasurement::measured(readings).map_err(|error| PyValueError::new_err(error.to_string()))
    }

    /// The `model_footprint` hook: [`model_footprint`] of the model.
    ///
    /// # Errors
    ///
    /// As [`model_footprint`], and the model getter's exception.
    fn model_footprint(&self, py: Python<'_>) -> PyResult<ModelFootprintMeasurement> {
        model_footprint(py, &self.model(py)?)
    }

    fn deployment_artifacts(&self, _py: Python<'_>) -> PyResult<Vec<DeploymentArtifact>> {
        Ok(self.artifacts.clone())
    }

    fn class_name(&self) -> &'static str {
        "tally.profiling.TensorFlowResourceProfileAdapter"
    }

    fn profiling_device(&self) -> Option<&str> {
        self.profiling_device.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_are_tensorflows_short_names() {
        assert_eq!(normalize_device("/job:localhost/replica:0/task:0/device:GPU:1"), "GPU:1");
        assert_eq!(normalize_device("/device:CPU:0"), "CPU:0");
        assert_eq!(normalize_device("gpu:0"), "GPU:0");
        assert_eq!(normalize_device("cpu:0"), "CPU:0");
        // The last GPU: wins, as rsplit finds it; GPU before CPU.
        assert_eq!(normalize_device("gpu:0/cpu:1/gpu:2"), "GPU:2");
        assert_eq!(normalize_device("/device:CPU:0/GPU:3"), "GPU:3");
        assert_eq!(normalize_device("cuda:0"), "cuda:0");
        assert_eq!(normalize_device("GPU"), "GPU");
        assert_eq!(normalize_device(""), "");
    }

    #[test]
    fn only_names_with_gpu_open_a_window() {
        assert!(is_gpu_device("GPU:0"));
        assert!(is_gpu_device("/physical_device:gpu:0"));
        assert!(!is_gpu_device("CPU:0"));
        assert!(!is_gpu_device("cuda:0"));
    }
}
