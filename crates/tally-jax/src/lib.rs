#![doc = include_str!("../README.md")]
//!
//! JAX adapter for tally's resource profiler: vertebrae 1.1.0's
//! `JAXResourceProfileAdapter`, hook by hook, over JAX's Python objects.
//!
//! JAX exists only in Python, so the adapter holds Python handles (the
//! extractor, an optional getter of the parameter tree, an optional JAX
//! loader) and asks JAX through pyo3: a Rust program that embeds Python can
//! profile JAX work with it, and the `tally` Python package exposes it as
//! `tally.profiling.JAXResourceProfileAdapter`.
//!
//! - **Device**: the devices of the parameter tree's leaves
//!   (`model_state`, or `multi_device_model`; a single device differing from
//!   the profiling hint is `model_state_conflicts_with_profiling_hint`), else
//!   the hint (`explicit_profiling_hint`), else the only local device
//!   (`single_local_device`) or none (`ambiguous_local_devices`).
//! - **Synchronization**: `jax.effects_barrier()`.
//! - **Device memory**: JAX has no portable resettable peak window: on CPU
//!   `not_applicable` (RSS covers it), elsewhere `unavailable`.
//! - **Model footprint**: element count and bytes of the tree's leaves
//!   (`shape` and the numpy `itemsize` of `dtype`).
//!
//! Statuses, reasons and figures equal vertebrae's on the same objects
//! (`crates/tally-python/tests/test_jax.py` compares them live).

use std::collections::BTreeSet;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use tally_profile::profile::{
    AdapterOperationResult, DeviceMemoryMeasurement, ModelFootprintMeasurement, ModelFootprintReadings,
    ResourceAdapterMetadata,
};
use tally_profile::python::PythonHooks;
use tally_profile::python::{nonnegative, values_size, weight_dtypes};

const NO_PEAK_WINDOW: &str = "JAX does not expose a portable resettable allocator peak window.";

/// vertebrae's `JAXResourceProfileAdapter` over Python handles.
#[derive(Debug)]
pub struct JaxAdapter {
    extractor: Py<PyAny>,
    values_getter: Option<Py<PyAny>>,
    jax_loader: Option<Py<PyAny>>,
    backend: String,
    profiling_device: Option<String>,
}

impl JaxAdapter {
    /// An adapter for `extractor`, whose parameter tree `values_getter`
    /// returns (none: an empty tree), with JAX from `jax_loader` (else the
    /// extractor's `_jax`, else `import jax`).
    pub fn new(
        extractor: Py<PyAny>,
        values_getter: Option<Py<PyAny>>,
        jax_loader: Option<Py<PyAny>>,
        backend: impl Into<String>,
        profiling_device: Option<String>,
    ) -> Self {
        Self { extractor, values_getter, jax_loader, backend: backend.into(), profiling_device }
    }

    /// The device the caller asked to profile on.
    pub fn profiling_device(&self) -> Option<&str> {
        self.profiling_device.as_deref()
    }

    fn jax<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(loader) = &self.jax_loader {
            let value = loader.bind(py).call0()?;
            if !value.is_none() {
                return Ok(value);
            }
        }
        if let Ok(existing) = self.extractor.bind(py).getattr("_jax")
            && !existing.is_none()
        {
            return Ok(existing);
        }
        py.import("jax").map(Bound::into_any)
    }

    /// The leaves of the parameter tree (`jax.tree_util.tree_leaves`, or a
    /// walk of dicts, lists and tuples where JAX has none).
    fn leaves<'py>(&self, py: Python<'py>, jax: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let values = match &self.values_getter {
            Some(getter) => getter.bind(py).call0()?,
            None => PyTuple::empty(py).into_any(),
        };
        let tree_leaves = jax.getattr("tree_util").and_then(|tree| tree.getattr("tree_leaves")).ok();
        match tree_leaves.filter(|function| function.is_callable()) {
            Some(function) => function.call1((values,))?.try_iter()?.collect(),
            None => Ok(walk_leaves(&values)),
        }
    }
}

impl JaxAdapter {
    /// The backend name reported (`jax` unless given).
    pub fn backend(&self) -> &str {
        &self.backend
    }

    /// The extractor.
    pub fn extractor(&self) -> &Py<PyAny> {
        &self.extractor
    }
}

/// vertebrae's `_is_cpu_device`.
fn is_cpu_device(device: &str) -> bool {
    !device.is_empty() && device.to_lowercase().contains("cpu")
}

fn walk_leaves<'py>(value: &Bound<'py, PyAny>) -> Vec<Bound<'py, PyAny>> {
    if value.is_none() {
        return Vec::new();
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        return dict.values().iter().flat_map(|item| walk_leaves(&item)).collect();
    }
    if let Ok(list) = value.cast::<PyList>() {
        return list.iter().flat_map(|item| walk_leaves(&item)).collect();
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return tuple.iter().flat_map(|item| walk_leaves(&item)).collect();
    }
    vec![value.clone()]
}

/// vertebrae's `_jax_value_devices`: the sorted distinct devices of the
/// leaves (a leaf's `devices()`, else its `device`).
fn leaf_devices(leaves: &[Bound<'_, PyAny>]) -> PyResult<Vec<String>> {
    let mut devices = BTreeSet::new();
    for leaf in leaves {
        let unwrapped = leaf.getattr("value").unwrap_or_else(|_| leaf.clone());
        if let Ok(method) = unwrapped.getattr("devices")
            && method.is_callable()
        {
            for device in method.call0()?.try_iter()? {
                devices.insert(device?.str()?.to_string());
            }
            continue;
        }
        if let Ok(device) = unwrapped.getattr("device")
            && !device.is_none()
        {
            let device = if device.is_callable() { device.call0()? } else { device };
            devices.insert(device.str()?.to_string());
        }
    }
    Ok(devices.into_iter().collect())
}

impl PythonHooks for JaxAdapter {
    /// The `metadata` hook, with JAX's own exception on failure.
    fn metadata(&self, py: Python<'_>) -> PyResult<ResourceAdapterMetadata> {
        let jax = self.jax(py)?;
        let leaves = self.leaves(py, &jax)?;
        let devices = leaf_devices(&leaves)?;
        let (device, resolution) = if !devices.is_empty() {
            let source = if devices.len() > 1 {
                "multi_device_model"
            } else if self.profiling_device.as_ref().is_some_and(|hint| hint != &devices[0]) {
                "model_state_conflicts_with_profiling_hint"
            } else {
                "model_state"
            };
            (Some(devices.join(",")), source)
        } else if let Some(hint) = self.profiling_device.as_ref().filter(|hint| !hint.is_empty()) {
            (Some(hint.clone()), "explicit_profiling_hint")
        } else {
            let local: Vec<Bound<'_, PyAny>> =
                jax.call_method0("local_devices")?.try_iter()?.collect::<PyResult<_>>()?;
            match local.as_slice() {
                [only] => (Some(only.str()?.to_string()), "single_local_device"),
                _ => (None, "ambiguous_local_devices"),
            }
        };
        let listed: Vec<&str> = if devices.is_empty() {
            device.iter().map(String::as_str).collect()
        } else {
            devices.iter().map(String::as_str).collect()
        };
        let asynchronous = device.as_ref().is_some_and(|device| !device.is_empty())
            && !listed.iter().all(|item| is_cpu_device(item));
        let metadata = ResourceAdapterMetadata {
            backend: Some(self.backend.clone()),
            device,
            asynchronous,
            synchronization_method: Some("jax.effects_barrier".to_owned()),
            weight_dtypes: weight_dtypes(&leaves)?,
            ..ResourceAdapterMetadata::default()
        };
        metadata
            .with_device_resolution(resolution)
            .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))
    }

    /// The `synchronize` hook: `jax.effects_barrier()`.
    fn synchronize(&self, py: Python<'_>) -> PyResult<AdapterOperationResult> {
        let jax = self.jax(py)?;
        match jax.getattr("effects_barrier").ok().filter(|barrier| barrier.is_callable()) {
            Some(barrier) => {
                barrier.call0()?;
                Ok(AdapterOperationResult::succeeded())
            }
            None => Ok(AdapterOperationResult::unavailable(Some("JAX effects_barrier is unavailable."))),
        }
    }

    /// The `reset_peak_device_memory` hook: nothing to reset on CPU, no
    /// portable window elsewhere.
    fn reset_peak_device_memory(&self, py: Python<'_>) -> PyResult<AdapterOperationResult> {
        let metadata = self.metadata(py)?;
        let on_cpu = metadata
            .device
            .as_deref()
            .is_some_and(|device| !device.is_empty() && device.split(',').all(is_cpu_device));
        Ok(if on_cpu {
            AdapterOperationResult::not_applicable(Some("CPU memory is reported through process RSS."))
        } else {
            AdapterOperationResult::unavailable(Some(NO_PEAK_WINDOW))
        })
    }

    /// The `peak_device_memory` hook: unavailable, with backend and device.
    fn peak_device_memory(&self, py: Python<'_>) -> PyResult<DeviceMemoryMeasurement> {
        let metadata = self.metadata(py)?;
        Ok(DeviceMemoryMeasurement::unavailable(Some(NO_PEAK_WINDOW))
            .with_backend_device(Some(self.backend.clone()), metadata.device))
    }

    /// The `model_footprint` hook: the parameter tree's elements and bytes.
    fn model_footprint(&self, py: Python<'_>) -> PyResult<ModelFootprintMeasurement> {
        let jax = self.jax(py)?;
        let leaves = self.leaves(py, &jax)?;
        if leaves.is_empty() {
            return Ok(ModelFootprintMeasurement::unavailable(Some("The JAX parameter tree is empty.")));
        }
        let (count, bytes) = values_size(py, &leaves)?;
        let (count, bytes) = (nonnegative("parameter_count", count)?, nonnegative("parameter_bytes", bytes)?);
        let readings = ModelFootprintReadings {
            parameter_count: Some(count),
            parameter_bytes: Some(bytes),
            in_memory_bytes: Some(bytes),
            weight_dtypes: weight_dtypes(&leaves)?,
            ..ModelFootprintReadings::default()
        };
        ModelFootprintMeasurement::measured(readings)
            .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))
    }

    fn class_name(&self) -> &'static str {
        "tally.profiling.JAXResourceProfileAdapter"
    }

    fn profiling_device(&self) -> Option<&str> {
        self.profiling_device.as_deref()
    }
}
