//! `tally.profiling`: vertebrae 1.1.0's `vertebrae.profiling` API over
//! tally-profile's measurement core and tally-distributed's aggregation.
//!
//! vertebrae's result and measurement classes are real Python dataclasses
//! (so `dataclasses.asdict` and vertebrae's `make_json_safe` pipelines take
//! them), made at import by `dataclasses.make_dataclass` from tally-profile's
//! table of them (`tally_profile::profile::schema`): vertebrae's names,
//! fields, defaults and frozenness. Their `__post_init__` hands the
//! instance to tally-profile's type of the same name, whose deserializer
//! applies vertebrae's checks, so no rule lives in Python.
//!
//! Both kinds of dataclass in this package are declared the one way,
//! [`crate::dataclass::make_dataclass`]; they differ in what is made of
//! the declaration. stormlog's classes are native classes that take the
//! declaration's protocol (their values live in Rust, where the accounting
//! reads them); vertebrae's are the declared classes themselves, because
//! vertebrae's are plain dataclasses, several of them mutable, which
//! callers assign to and hand to `dataclasses` and `make_json_safe` with
//! their values in Python. The profiler is tally-profile's `ResourceProfiler`; a Python
//! adapter (vertebrae's own, or a subclass of `BaseResourceProfileAdapter`)
//! is called hook by hook through [`PythonAdapter`].

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyTuple};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tally_profile::profile::schema::{
    DATACLASSES, DataclassSchema as Class, FieldDefault as D, Nested, dataclass_schema as class_schema,
};
use tally_profile::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, DeviceMemoryProfile,
    ModelFootprintMeasurement, ResourceAdapterMetadata,
};
use tally_profile::{HookError, ResourceProfileAdapter};

use crate::convert::{to_json, to_python};
use crate::dataclass::{declare_field, make_dataclass};

/// Makes every schema class with `dataclasses.make_dataclass` and adds it
/// to `module`, named as in `tally.profiling`.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let partialmethod = py.import("functools")?.getattr("partialmethod")?;
    let check = module.getattr("_check_dataclass")?;
    // vertebrae's classes are declared with `Any` for every annotation.
    let any = py.import("typing")?.getattr("Any")?;
    for class in DATACLASSES {
        let fields = PyList::empty(py);
        for field in class.fields {
            fields.append(declare_field(py, field.name, any.clone(), field.default)?)?;
        }
        let namespace = PyDict::new(py);
        namespace.set_item("__doc__", class.doc)?;
        namespace.set_item("__module__", "tally.profiling")?;
        if class.validated {
            namespace.set_item("__post_init__", partialmethod.call1((&check, class.name))?)?;
        }
        let made = make_dataclass(py, class.name, &fields, class.frozen, None, Some(&namespace))?;
        made.setattr("__module__", "tally.profiling")?;
        made.setattr("__qualname__", class.name)?;
        module.add(class.name, made)?;
    }
    Ok(())
}

fn class_object<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("tally._native")?.getattr(name)
}

/// The JSON of a dataclass instance's schema fields (tally's or vertebrae's
/// class of the same name; nested ones recursively).
fn instance_json(value: &Bound<'_, PyAny>, class: &Class) -> PyResult<Value> {
    let mut map = Map::new();
    for field in class.fields {
        let item = value.getattr(field.name)?;
        let json = match field.nested {
            Nested::Plain => plain_json(&item)?,
            Nested::One(inner) | Nested::Optional(inner) if !item.is_none() => {
                instance_json(&item, class_schema(inner).unwrap_or(class))?
            }
            Nested::One(_) | Nested::Optional(_) => Value::Null,
            Nested::ListOf(inner) => {
                let schema = class_schema(inner).unwrap_or(class);
                Value::Array(
                    item.try_iter()?
                        .map(|element| instance_json(&element?, schema))
                        .collect::<PyResult<_>>()?,
                )
            }
        };
        map.insert(field.name.to_owned(), json);
    }
    Ok(Value::Object(map))
}

/// A plain field's value as JSON; numbers that are not Python's own
/// (numpy's `int64`, `float32`, ...) as the `int` or `float` they stand
/// for, since vertebrae's checks compare them as numbers.
fn plain_json(item: &Bound<'_, PyAny>) -> PyResult<Value> {
    if item.cast::<PyBool>().is_err() && item.cast::<PyInt>().is_err() && item.cast::<PyFloat>().is_err() {
        let numbers = item.py().import("numbers")?;
        if item.is_instance(&numbers.getattr("Integral")?)? {
            return to_json(&item.py().import("operator")?.getattr("index")?.call1((item,))?);
        }
        if item.is_instance(&numbers.getattr("Real")?)? {
            return to_json(&PyFloat::new(item.py(), item.extract::<f64>()?).into_any());
        }
    }
    to_json(item)
}

/// An instance of the schema class `name` from its JSON (as tally-profile
/// writes it: `dataclasses.asdict` form).
pub(crate) fn build<'py>(py: Python<'py>, name: &str, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    let class = class_schema(name).ok_or_else(|| PyTypeError::new_err(format!("no class {name}")))?;
    let Value::Object(map) = value else {
        return Err(PyValueError::new_err(format!("{name} must be an object")));
    };
    let kwargs = PyDict::new(py);
    for field in class.fields {
        let Some(item) = map.get(field.name) else {
            continue;
        };
        let object = match (field.nested, item) {
            (_, Value::Null) => py.None().into_bound(py),
            (Nested::Plain, item) => match (field.default, item) {
                // vertebrae keeps tuples in its frozen classes.
                (D::EmptyTuple, Value::Array(items)) => PyTuple::new(
                    py,
                    items.iter().map(|item| to_python(py, item)).collect::<PyResult<Vec<_>>>()?,
                )?
                .into_any(),
                _ => to_python(py, item)?,
            },
            (Nested::One(inner) | Nested::Optional(inner), item) => build(py, inner, item)?,
            (Nested::ListOf(inner), Value::Array(items)) => PyList::new(
                py,
                items.iter().map(|item| build(py, inner, item)).collect::<PyResult<Vec<_>>>()?,
            )?
            .into_any(),
            (Nested::ListOf(_), item) => to_python(py, item)?,
        };
        kwargs.set_item(field.name, object)?;
    }
    class_object(py, name)?.call((), Some(&kwargs))
}

/// The tally-profile value of a schema class's instance (tally's or
/// vertebrae's dataclass named `name`), checked as its `__post_init__`
/// checks it.
pub(crate) fn from_instance<T: DeserializeOwned>(value: &Bound<'_, PyAny>, name: &str) -> PyResult<T> {
    let class = class_schema(name).ok_or_else(|| PyTypeError::new_err(format!("no class {name}")))?;
    from_json(instance_json(value, class)?).map_err(PyValueError::new_err)
}

fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|error| error.to_string())
}

/// `__post_init__` of the checked classes: the instance read as
/// tally-profile's type of the same name, whose checks are vertebrae's.
#[pyfunction]
pub fn _check_dataclass(instance: &Bound<'_, PyAny>, name: &str) -> PyResult<()> {
    let class = class_schema(name).ok_or_else(|| PyTypeError::new_err(format!("no class {name}")))?;
    if name == "ResourceProfilingConfig" {
        return config_of(instance).map(|_| ());
    }
    let value = instance_json(instance, class)?;
    let outcome = match name {
        "AdapterOperationResult" => from_json::<AdapterOperationResult>(value).map(|_| ()),
        "ResourceAdapterMetadata" => from_json::<ResourceAdapterMetadata>(value).map(|_| ()),
        "DeviceMemoryMeasurement" => from_json::<DeviceMemoryMeasurement>(value).map(|_| ()),
        "ModelFootprintMeasurement" => from_json::<ModelFootprintMeasurement>(value).map(|_| ()),
        "DeploymentArtifact" => from_json::<DeploymentArtifact>(value).map(|_| ()),
        "DeviceMemoryProfile" => from_json::<DeviceMemoryProfile>(value).map(|_| ()),
        _ => Ok(()),
    };
    outcome.map_err(PyValueError::new_err)
}

/// A config object (tally's or vertebrae's) as tally-profile's, with
/// vertebrae's type checks (`TypeError`) before its value checks.
pub(crate) fn config_of(config: &Bound<'_, PyAny>) -> PyResult<tally_profile::ResourceProfilingConfig> {
    let flag = |name: &str| -> PyResult<bool> {
        let value = config.getattr(name)?;
        match value.cast::<PyBool>() {
            Ok(flag) => Ok(flag.is_true()),
            Err(_) => Err(PyTypeError::new_err(format!("ResourceProfilingConfig.{name} must be a boolean."))),
        }
    };
    let real = |name: &str| -> PyResult<f64> {
        let value = config.getattr(name)?;
        let number = py_real(&value);
        number.ok_or_else(|| {
            PyTypeError::new_err(format!("ResourceProfilingConfig.{name} must be a real number."))
        })
    };
    let (enabled, host_memory, device_memory, persisted_storage) =
        (flag("enabled")?, flag("host_memory")?, flag("device_memory")?, flag("persisted_storage")?);
    let interval = real("host_sample_interval_seconds")?;
    let tolerance = real("quality_tolerance")?;
    tally_profile::ResourceProfilingConfig::new(
        enabled,
        host_memory,
        device_memory,
        persisted_storage,
        interval,
        tolerance,
    )
    .map_err(|error| PyValueError::new_err(error.message().to_owned()))
}

/// A Python real number (not a bool) as a float.
fn py_real(value: &Bound<'_, PyAny>) -> Option<f64> {
    if value.cast::<PyBool>().is_ok() {
        return None;
    }
    if value.cast::<PyInt>().is_ok() || value.cast::<PyFloat>().is_ok() {
        return value.extract::<f64>().ok();
    }
    let numbers = value.py().import("numbers").ok()?;
    let real = numbers.getattr("Real").ok()?;
    if value.is_instance(&real).ok()? { value.extract::<f64>().ok() } else { None }
}

/// A Python object's hooks as a tally-profile adapter: each hook's answer
/// (tally's dataclass or vertebrae's of the same name) read by
/// tally-profile's type, an exception or a wrong type contained as
/// vertebrae contains it.
pub struct PythonAdapter {
    object: Py<PyAny>,
    name: String,
    hint: Option<String>,
}

impl PythonAdapter {
    pub(crate) fn new(object: &Bound<'_, PyAny>) -> PyResult<Self> {
        let class = object.get_type();
        let name = format!("{}.{}", class.module()?, class.name()?);
        let hint = match object.getattr("profiling_device") {
            Ok(value) if !value.is_none() => Some(value.str()?.to_string()),
            _ => None,
        };
        Ok(Self { object: object.clone().unbind(), name, hint })
    }

    fn hook<T: DeserializeOwned>(&self, hook: &str, expected: Option<&str>) -> Result<T, HookError> {
        Python::attach(|py| {
            let value = self.object.bind(py).call_method0(hook).map_err(HookError::from)?;
            let schema = match expected {
                Some(expected) => {
                    let found = value.get_type().name().map(|name| name.to_string()).unwrap_or_default();
                    if found != expected {
                        return Err(HookError::new("TypeError", format!("expected {expected}, got {found}")));
                    }
                    class_schema(expected)
                }
                None => None,
            };
            let json = match schema {
                Some(schema) => instance_json(&value, schema).map_err(HookError::from)?,
                None => sequence_json(&value)
                    .map_err(HookError::from)?
                    .ok_or_else(|| HookError::invalid_payload("expected a sequence of DeploymentArtifact"))?,
            };
            serde_json::from_value(json).map_err(|error| HookError::new("ValueError", error.to_string()))
        })
    }
}

/// The JSON of a sequence of `DeploymentArtifact`s; `Ok(None)` when the
/// value is not a `collections.abc.Sequence` of them (vertebrae's check of
/// the hook's answer).
fn sequence_json(value: &Bound<'_, PyAny>) -> PyResult<Option<Value>> {
    let schema =
        class_schema("DeploymentArtifact").ok_or_else(|| PyTypeError::new_err("no DeploymentArtifact"))?;
    let sequence = value.py().import("collections.abc")?.getattr("Sequence")?;
    if !value.is_instance(&sequence)? {
        return Ok(None);
    }
    let items: Vec<Bound<'_, PyAny>> = value.try_iter()?.collect::<PyResult<_>>()?;
    for item in &items {
        if item.get_type().name()? != schema.name {
            return Ok(None);
        }
    }
    let items = items.iter().map(|item| instance_json(item, schema)).collect::<PyResult<Vec<_>>>()?;
    Ok(Some(Value::Array(items)))
}

impl ResourceProfileAdapter for PythonAdapter {
    fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
        self.hook("metadata", Some("ResourceAdapterMetadata"))
    }
    fn synchronize(&mut self) -> Result<AdapterOperationResult, HookError> {
        self.hook("synchronize", Some("AdapterOperationResult"))
    }
    fn reset_peak_device_memory(&mut self) -> Result<AdapterOperationResult, HookError> {
        self.hook("reset_peak_device_memory", Some("AdapterOperationResult"))
    }
    fn peak_device_memory(&mut self) -> Result<DeviceMemoryMeasurement, HookError> {
        self.hook("peak_device_memory", Some("DeviceMemoryMeasurement"))
    }
    fn model_footprint(&mut self) -> Result<ModelFootprintMeasurement, HookError> {
        self.hook("model_footprint", Some("ModelFootprintMeasurement"))
    }
    fn deployment_artifacts(&mut self) -> Result<Vec<DeploymentArtifact>, HookError> {
        self.hook("deployment_artifacts", None)
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn profiling_device_hint(&self) -> Option<String> {
        self.hint.clone()
    }
}

/// Default unavailable implementations for custom resource adapters:
/// subclass it and override the hooks your framework can answer.
#[pyclass(subclass, module = "tally.profiling", name = "BaseResourceProfileAdapter")]
pub struct BaseResourceProfileAdapter;

pub(crate) fn default_answer<'py, T: serde::Serialize>(
    py: Python<'py>,
    name: &str,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value).map_err(|error| PyValueError::new_err(error.to_string()))?;
    build(py, name, &json)
}

/// An answer of tally-profile's base adapter as vertebrae's dataclass
/// `name`; a failure is `ValueError`.
fn base_answer<'py, T: serde::Serialize>(
    py: Python<'py>,
    name: &str,
    answer: Result<T, HookError>,
) -> PyResult<Bound<'py, PyAny>> {
    default_answer(py, name, &answer.map_err(|error| PyValueError::new_err(error.to_string()))?)
}

#[pymethods]
impl BaseResourceProfileAdapter {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs), text_signature = "()")]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        Self
    }

    /// Framework, device and synchronization context (nothing known).
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "ResourceAdapterMetadata", &ResourceAdapterMetadata::default())
    }

    /// Waits for the device's queued work (`not_applicable`).
    fn synchronize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "AdapterOperationResult", &AdapterOperationResult::not_applicable(None::<String>))
    }

    /// Opens the device-memory window (`not_applicable`).
    fn reset_peak_device_memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        default_answer(py, "AdapterOperationResult", &AdapterOperationResult::not_applicable(None::<String>))
    }

    /// Allocator peaks since the reset (unavailable).
    fn peak_device_memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        base_answer(
            py,
            "DeviceMemoryMeasurement",
            tally_profile::BaseResourceProfileAdapter.peak_device_memory(),
        )
    }

    /// Parameter and in-memory sizes of the model (unavailable).
    fn model_footprint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        base_answer(
            py,
            "ModelFootprintMeasurement",
            tally_profile::BaseResourceProfileAdapter.model_footprint(),
        )
    }

    /// Local files whose deployment footprint should be measured (none).
    fn deployment_artifacts<'py>(&self, py: Python<'py>) -> Bound<'py, PyTuple> {
        PyTuple::empty(py)
    }
}

/// A profile-like object's JSON (a local or a distributed profile).
pub(crate) fn profile_like_json(profile: &Bound<'_, PyAny>) -> PyResult<Value> {
    let name = profile.get_type().name()?.to_string();
    let schema = class_schema(&name)
        .filter(|_| name == "ResourceProfile" || name == "DistributedResourceProfile")
        .ok_or_else(|| {
            PyTypeError::new_err(format!(
                "expected a ResourceProfile or DistributedResourceProfile, got {name}"
            ))
        })?;
    instance_json(profile, schema)
}

/// Flatten stable local or worker-aggregate fields for result tables.
#[pyfunction]
#[pyo3(signature = (profile, *, prefix=""))]
pub fn resource_profile_columns<'py>(
    profile: &Bound<'py, PyAny>,
    prefix: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let py = profile.py();
    let like = tally_distributed::ResourceProfileLike::from_json_value(profile_like_json(profile)?)
        .map_err(|error| PyValueError::new_err(error.to_string()))?;
    let columns = PyDict::new(py);
    for (key, value) in like.columns(prefix) {
        columns.set_item(key, to_python(py, &value)?)?;
    }
    Ok(columns)
}

/// Reconstruct a typed local resource profile from serialized data.
#[pyfunction]
pub fn resource_profile_from_dict<'py>(value: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let profile =
        tally_profile::resource_profile_from_dict(Value::Object(crate::convert::dict_to_json(value)?))
            .map_err(|error| PyValueError::new_err(error.to_string()))?;
    let json = tally_profile::resource_profile_to_dict(&profile)
        .map_err(|error| PyValueError::new_err(error.to_string()))?;
    build(py, "ResourceProfile", &json)
}

/// Reconstruct a typed distributed resource summary from serialized data.
#[pyfunction]
pub fn distributed_resource_profile_from_dict<'py>(
    value: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let profile = tally_distributed::distributed_resource_profile_from_dict(Value::Object(
        crate::convert::dict_to_json(value)?,
    ))
    .map_err(|error| PyValueError::new_err(error.to_string()))?;
    let json = profile.to_json_value().map_err(|error| PyValueError::new_err(error.to_string()))?;
    build(py, "DistributedResourceProfile", &json)
}

/// A local or distributed profile from serialized data; None stays None.
#[pyfunction]
pub fn resource_profile_like_from_dict<'py>(
    py: Python<'py>,
    value: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(value) = value else {
        return Ok(py.None().into_bound(py));
    };
    let like = tally_distributed::ResourceProfileLike::from_json_value(Value::Object(
        crate::convert::dict_to_json(value)?,
    ))
    .map_err(|error| PyValueError::new_err(error.to_string()))?;
    let json = like.to_json_value().map_err(|error| PyValueError::new_err(error.to_string()))?;
    let name = match like {
        tally_distributed::ResourceProfileLike::Local(_) => "ResourceProfile",
        tally_distributed::ResourceProfileLike::Distributed(_) => "DistributedResourceProfile",
    };
    build(py, name, &json)
}
