//! Helpers shared by the adapters over Python array-like objects
//! (tally-jax, tally-tensorflow, tally-keras): vertebrae reads a JAX leaf,
//! a `tf.Variable` and a Keras variable with the same few functions
//! (`_tensorflow_values_size`, `_keras_weight_dtypes`,
//! `_deduplicated_values`), so each has one home here and every adapter
//! counts, sizes and names a weight alike.
//!
//! Attribute look-ups follow Python's three-argument `getattr`: only an
//! `AttributeError` means "absent"; any other exception a property raises
//! propagates, as it does in vertebrae.

use std::collections::BTreeSet;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyInt;

use crate::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, ModelFootprintMeasurement,
    ResourceAdapterMetadata,
};
use crate::{HookError, ResourceProfileAdapter};

/// Python's `int(value)`, read as `T`: how vertebrae turns what a
/// framework hands back (a numpy integer, a tensor's dimension, a memory
/// figure) into the Python integer it adds. The one reading for this crate,
/// the adapters' Python forms and the Python package; a value `T` cannot
/// hold raises Python's `OverflowError`.
///
/// # Errors
///
/// What `int()` raises (`TypeError` for `None`, `ValueError` for a
/// non-numeric string), or `OverflowError`.
pub fn python_int<'py, T>(value: &Bound<'py, PyAny>) -> PyResult<T>
where
    T: for<'a> FromPyObject<'a, 'py, Error = PyErr>,
{
    value.py().get_type::<PyInt>().call1((value,))?.extract()
}

/// vertebrae's `_tensorflow_values_size`: the element count and bytes of
/// the values that have a `shape` (not `None`). Each dimension is read with
/// Python's `int()`, the product is numpy's `int64` product (it wraps as
/// numpy's does), the item size is numpy's `itemsize` of the value's dtype
/// (its `as_numpy_dtype` where it has one, `float32` where it has no dtype,
/// 0 where numpy knows no such dtype).
///
/// The sums are Python integers there, so they are returned as `i128`:
/// [`nonnegative`] turns each into the `u64` a reading holds, with the
/// error vertebrae's dataclass raises for a negative one.
///
/// # Errors
///
/// Python's exception when numpy cannot be imported, a shape does not
/// iterate, a dimension is not an integer (`int(None)` of an unknown
/// dimension is a `TypeError`), or a dtype look-up raises anything but the
/// `TypeError` numpy raises for an unknown dtype.
pub fn values_size(py: Python<'_>, values: &[Bound<'_, PyAny>]) -> PyResult<(i128, i128)> {
    let numpy = py.import("numpy")?;
    let (mut count, mut bytes) = (0i128, 0i128);
    for value in values {
        let Some(shape) = value.getattr_opt("shape")?.filter(|shape| !shape.is_none()) else {
            continue;
        };
        let mut elements: i64 = 1;
        for dimension in shape.try_iter()? {
            elements = elements.wrapping_mul(python_int::<i64>(&dimension?)?);
        }
        let dtype = match value.getattr_opt("dtype")? {
            Some(dtype) => dtype.getattr_opt("as_numpy_dtype")?.unwrap_or(dtype),
            None => numpy.call_method1("dtype", ("float32",))?,
        };
        let itemsize = match numpy.call_method1("dtype", (dtype,)) {
            Ok(dtype) => dtype.getattr("itemsize")?.extract::<i64>()?,
            Err(error) if error.is_instance_of::<PyTypeError>(py) => 0,
            Err(error) => return Err(error),
        };
        count += i128::from(elements);
        bytes += i128::from(elements) * i128::from(itemsize);
    }
    Ok((count, bytes))
}

/// vertebrae's `_keras_weight_dtypes`: the sorted distinct
/// `str(getattr(getattr(value, "value", value), "dtype", "unknown"))`.
///
/// A `tf.Variable`'s `value` is a method, which has no dtype: vertebrae
/// names such variables `unknown`, and so does this.
///
/// # Errors
///
/// Python's exception when a look-up (other than a missing attribute) or
/// `str()` raises.
pub fn weight_dtypes(values: &[Bound<'_, PyAny>]) -> PyResult<Vec<String>> {
    let mut dtypes = BTreeSet::new();
    for value in values {
        let unwrapped = value.getattr_opt("value")?.unwrap_or_else(|| value.clone());
        let dtype = match unwrapped.getattr_opt("dtype")? {
            Some(dtype) => dtype.str()?.to_string(),
            None => "unknown".to_owned(),
        };
        dtypes.insert(dtype);
    }
    // Python sorts strings by code point, which is UTF-8's byte order.
    Ok(dtypes.into_iter().collect())
}

/// vertebrae's `_deduplicated_values`: the items of `values` in order, each
/// object once (by identity, as `id()` compares).
///
/// # Errors
///
/// Python's exception when `values` does not iterate.
pub fn deduplicated<'py>(values: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let mut seen = std::collections::HashSet::new();
    let mut kept = Vec::new();
    for value in values.try_iter()? {
        let value = value?;
        if seen.insert(value.as_ptr() as usize) {
            kept.push(value);
        }
    }
    Ok(kept)
}

/// A count or size as the `u64` a reading holds, with the `ValueError`
/// vertebrae's dataclasses raise for a negative one (`<name> must be >= 0
/// when provided.`).
///
/// # Errors
///
/// That `ValueError` when `value` is negative; an `OverflowError` when it
/// exceeds `u64` (no reading that large exists).
pub fn nonnegative(name: &str, value: i128) -> PyResult<u64> {
    if value < 0 {
        return Err(PyValueError::new_err(format!("{name} must be >= 0 when provided.")));
    }
    u64::try_from(value)
        .map_err(|_| pyo3::exceptions::PyOverflowError::new_err(format!("{name} is too large: {value}")))
}

/// An adapter over Python objects, its hooks asked with the GIL held and
/// answering Python's exception where the framework or the user's objects
/// raise one: what the `tally` Python package's classes call (and hand the
/// exception to the caller as it is).
///
/// Every such type is a [`ResourceProfileAdapter`] too: the hook attaches
/// to the interpreter and turns an exception into a [`HookError`] named
/// after its class, so the profile's warning reads as vertebrae's. The
/// framework crates (tally-jax, tally-tensorflow, tally-keras and the
/// `python` features of tally-torch and tally-onnx) implement this trait
/// and get that one for nothing.
pub trait PythonHooks {
    /// vertebrae's `metadata`.
    ///
    /// # Errors
    ///
    /// The exception of the framework or of the user's objects.
    fn metadata(&self, py: Python<'_>) -> PyResult<ResourceAdapterMetadata>;

    /// vertebrae's `synchronize`.
    ///
    /// # Errors
    ///
    /// As [`PythonHooks::metadata`].
    fn synchronize(&self, py: Python<'_>) -> PyResult<AdapterOperationResult>;

    /// vertebrae's `reset_peak_device_memory`.
    ///
    /// # Errors
    ///
    /// As [`PythonHooks::metadata`].
    fn reset_peak_device_memory(&self, py: Python<'_>) -> PyResult<AdapterOperationResult>;

    /// vertebrae's `peak_device_memory`.
    ///
    /// # Errors
    ///
    /// As [`PythonHooks::metadata`].
    fn peak_device_memory(&self, py: Python<'_>) -> PyResult<DeviceMemoryMeasurement>;

    /// vertebrae's `model_footprint`.
    ///
    /// # Errors
    ///
    /// As [`PythonHooks::metadata`].
    fn model_footprint(&self, py: Python<'_>) -> PyResult<ModelFootprintMeasurement>;

    /// vertebrae's `deployment_artifacts` (none unless the adapter declares
    /// some).
    ///
    /// # Errors
    ///
    /// As [`PythonHooks::metadata`].
    fn deployment_artifacts(&self, py: Python<'_>) -> PyResult<Vec<DeploymentArtifact>> {
        let _ = py;
        Ok(Vec::new())
    }

    /// The Python class it stands for (`tally.profiling.<Class>`), the
    /// profile's `resource_adapter`.
    fn class_name(&self) -> &'static str;

    /// The device the caller asked to profile on, if the adapter takes one.
    fn profiling_device(&self) -> Option<&str> {
        None
    }
}

impl<T: PythonHooks> ResourceProfileAdapter for T {
    fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
        Python::attach(|py| PythonHooks::metadata(self, py)).map_err(HookError::from)
    }

    fn synchronize(&mut self) -> Result<AdapterOperationResult, HookError> {
        Python::attach(|py| PythonHooks::synchronize(self, py)).map_err(HookError::from)
    }

    fn reset_peak_device_memory(&mut self) -> Result<AdapterOperationResult, HookError> {
        Python::attach(|py| PythonHooks::reset_peak_device_memory(self, py)).map_err(HookError::from)
    }

    fn peak_device_memory(&mut self) -> Result<DeviceMemoryMeasurement, HookError> {
        Python::attach(|py| PythonHooks::peak_device_memory(self, py)).map_err(HookError::from)
    }

    fn model_footprint(&mut self) -> Result<ModelFootprintMeasurement, HookError> {
        Python::attach(|py| PythonHooks::model_footprint(self, py)).map_err(HookError::from)
    }

    fn deployment_artifacts(&mut self) -> Result<Vec<DeploymentArtifact>, HookError> {
        Python::attach(|py| PythonHooks::deployment_artifacts(self, py)).map_err(HookError::from)
    }

    fn name(&self) -> String {
        self.class_name().to_owned()
    }

    fn profiling_device_hint(&self) -> Option<String> {
        self.profiling_device().map(str::to_owned)
    }
}
