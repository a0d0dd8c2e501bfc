//! `tally.profiling`: vertebrae 1.1.0's `vertebrae.profiling` API over
//! tally-profile's measurement core and tally-distributed's aggregation.
//!
//! vertebrae's result and measurement classes are real Python dataclasses
//! (so `dataclasses.asdict` and vertebrae's `make_json_safe` pipelines take
//! them), made at import by `dataclasses.make_dataclass` from the schema in
//! this file: vertebrae's names, fields, defaults and frozenness. Their
//! `__post_init__` hands the instance to tally-profile's type of the same
//! name, whose deserializer applies vertebrae's checks, so no rule lives in
//! Python. The profiler is tally-profile's `ResourceProfiler`; a Python
//! adapter (vertebrae's own, or a subclass of `BaseResourceProfileAdapter`)
//! is called hook by hook through [`PythonAdapter`].

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tally_profile::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, DeviceMemoryProfile,
    ModelFootprintMeasurement, ResourceAdapterMetadata,
};
use tally_profile::{HookError, ResourceProfileAdapter};

use crate::convert::{to_json, to_python};

/// A field's default, as vertebrae declares it.
#[derive(Clone, Copy)]
enum FieldDefault {
    Required,
    None,
    False,
    True,
    Zero,
    Real(f64),
    Text(&'static str),
    EmptyTuple,
    EmptyList,
    EmptyDict,
}

/// What a field holds when it holds one of the schema's classes.
#[derive(Clone, Copy)]
enum Nested {
    Plain,
    One(&'static str),
    Optional(&'static str),
    ListOf(&'static str),
}

struct Field {
    name: &'static str,
    default: FieldDefault,
    nested: Nested,
}

const fn field(name: &'static str, default: FieldDefault) -> Field {
    Field { name, default, nested: Nested::Plain }
}

const fn nested(name: &'static str, default: FieldDefault, nested: Nested) -> Field {
    Field { name, default, nested }
}

struct Class {
    name: &'static str,
    frozen: bool,
    doc: &'static str,
    fields: &'static [Field],
    /// Whether `__post_init__` checks the instance (by its tally type).
    checked: bool,
}

use FieldDefault as D;

const CLASSES: &[Class] = &[
    Class {
        name: "AdapterOperationResult",
        frozen: true,
        doc: "Outcome of an optional framework-specific profiling operation.",
        fields: &[field("status", D::Required), field("reason", D::None)],
        checked: true,
    },
    Class {
        name: "ResourceAdapterMetadata",
        frozen: true,
        doc: "Framework, device, and synchronization context supplied by an adapter.",
        fields: &[
            field("backend", D::None),
            field("device", D::None),
            field("device_resolution", D::Text("unavailable")),
            field("asynchronous", D::False),
            field("synchronization_method", D::None),
            field("weight_dtypes", D::EmptyTuple),
        ],
        checked: true,
    },
    Class {
        name: "DeviceMemoryMeasurement",
        frozen: true,
        doc: "Framework allocator memory observed for one profiling session.",
        fields: &[
            field("status", D::Required),
            field("backend", D::None),
            field("device", D::None),
            field("baseline_allocated_bytes", D::None),
            field("baseline_reserved_bytes", D::None),
            field("peak_allocated_bytes", D::None),
            field("peak_reserved_bytes", D::None),
            field("measurement_scope", D::None),
            field("unavailable_reason", D::None),
        ],
        checked: true,
    },
    Class {
        name: "ModelFootprintMeasurement",
        frozen: true,
        doc: "In-memory model state exposed by a framework adapter.",
        fields: &[
            field("status", D::Required),
            field("parameter_count", D::None),
            field("parameter_bytes", D::None),
            field("trainable_parameter_count", D::None),
            field("trainable_parameter_bytes", D::None),
            field("buffer_bytes", D::None),
            field("in_memory_bytes", D::None),
            field("weight_dtypes", D::EmptyTuple),
            field("unavailable_reason", D::None),
        ],
        checked: true,
    },
    Class {
        name: "DeploymentArtifact",
        frozen: true,
        doc: "Explicit local artifact whose deployment footprint should be measured.",
        fields: &[
            field("path", D::Required),
            field("role", D::Text("checkpoint")),
            field("recursive", D::False),
        ],
        checked: true,
    },
    Class {
        name: "ArtifactFootprint",
        frozen: true,
        doc: "Measured footprint for one declared deployment artifact.",
        fields: &[
            field("path", D::Required),
            field("resolved_path", D::Required),
            field("role", D::Required),
            field("recursive", D::Required),
            field("status", D::Required),
            field("bytes", D::Zero),
            field("file_count", D::Zero),
            field("reason", D::None),
        ],
        checked: false,
    },
    Class {
        name: "InferenceProfile",
        frozen: false,
        doc: "First-call and warm latency and throughput of the measured calls.",
        fields: &[
            field("status", D::Required),
            field("first_call_seconds", D::None),
            field("first_call_includes_fit", D::False),
            field("warm_call_count", D::Zero),
            field("warm_mean_seconds", D::None),
            field("warm_median_seconds", D::None),
            field("warm_p95_seconds", D::None),
            field("warm_max_seconds", D::None),
            field("warm_mean_seconds_per_sample", D::None),
            field("total_materialized_seconds", D::None),
            field("materialized_samples", D::Zero),
            field("throughput_samples_per_second", D::None),
            field("batch_sizes", D::EmptyList),
        ],
        checked: false,
    },
    Class {
        name: "HostMemoryProfile",
        frozen: false,
        doc: "Process resident-set baseline and peak over the profiling window.",
        fields: &[
            field("status", D::Required),
            field("baseline_rss_bytes", D::None),
            field("peak_rss_bytes", D::None),
            field("peak_increase_bytes", D::None),
            field("sample_interval_seconds", D::None),
        ],
        checked: false,
    },
    Class {
        name: "DeviceMemoryProfile",
        frozen: false,
        doc: "Framework allocator baseline and peaks over the profiling window.",
        fields: &[
            field("status", D::Required),
            field("backend", D::None),
            field("device", D::None),
            field("baseline_allocated_bytes", D::None),
            field("baseline_reserved_bytes", D::None),
            field("peak_allocated_bytes", D::None),
            field("peak_reserved_bytes", D::None),
            field("peak_allocated_increase_bytes", D::None),
            field("peak_reserved_increase_bytes", D::None),
            field("measurement_scope", D::None),
            field("unavailable_reason", D::None),
        ],
        checked: true,
    },
    Class {
        name: "ModelFootprint",
        frozen: false,
        doc: "Parameter, in-memory and checkpoint footprint of the model.",
        fields: &[
            field("status", D::Required),
            field("parameter_status", D::Text("unavailable")),
            field("checkpoint_status", D::Text("unavailable")),
            field("parameter_count", D::None),
            field("parameter_bytes", D::None),
            field("trainable_parameter_count", D::None),
            field("trainable_parameter_bytes", D::None),
            field("buffer_bytes", D::None),
            field("in_memory_bytes", D::None),
            field("checkpoint_bytes", D::None),
            field("weight_dtypes", D::EmptyList),
            nested("artifacts", D::EmptyList, Nested::ListOf("ArtifactFootprint")),
        ],
        checked: false,
    },
    Class {
        name: "PersistedArtifactFootprint",
        frozen: false,
        doc: "Persisted size of one stored embedding array.",
        fields: &[
            field("status", D::Required),
            field("bytes", D::None),
            field("uri", D::None),
            field("storage_format", D::None),
            field("reason", D::None),
        ],
        checked: false,
    },
    Class {
        name: "EmbeddingFootprint",
        frozen: false,
        doc: "Resident and persisted size of raw and evaluated embeddings.",
        fields: &[
            field("raw_bytes", D::Required),
            field("evaluated_bytes", D::Required),
            field("bytes_per_embedding", D::Required),
            field("compression_savings_ratio", D::Required),
            nested("raw_persisted", D::None, Nested::Optional("PersistedArtifactFootprint")),
            nested("evaluated_persisted", D::None, Nested::Optional("PersistedArtifactFootprint")),
        ],
        checked: false,
    },
    Class {
        name: "ResourceProfile",
        frozen: false,
        doc: "The measured resource profile of one local profiling window.",
        fields: &[
            field("status", D::Required),
            nested("inference", D::Required, Nested::One("InferenceProfile")),
            nested("host_memory", D::Required, Nested::One("HostMemoryProfile")),
            nested("device_memory", D::Required, Nested::One("DeviceMemoryProfile")),
            nested("model", D::Required, Nested::One("ModelFootprint")),
            nested("embedding", D::Required, Nested::Optional("EmbeddingFootprint")),
            field("context", D::EmptyDict),
            field("warnings", D::EmptyList),
        ],
        checked: false,
    },
    Class {
        name: "LatencyDistribution",
        frozen: false,
        doc: "Distribution of worker first-call latencies.",
        fields: &[
            field("count", D::Zero),
            field("median_seconds", D::None),
            field("p95_seconds", D::None),
            field("max_seconds", D::None),
        ],
        checked: false,
    },
    Class {
        name: "DistributedResourceProfile",
        frozen: false,
        doc: "Aggregation of independent worker-local profiling windows.",
        fields: &[
            field("status", D::Required),
            field("shard_count", D::Required),
            field("profiled_shard_count", D::Required),
            nested("worker_first_calls", D::Required, Nested::One("LatencyDistribution")),
            field("total_compute_seconds", D::None),
            field("materialized_samples", D::Zero),
            field("aggregate_compute_throughput_samples_per_second", D::None),
            field("warm_call_count", D::Zero),
            field("warm_mean_seconds", D::None),
            field("max_worker_peak_rss_bytes", D::None),
            field("max_worker_peak_rss_shard_key", D::None),
            field("max_worker_peak_device_allocated_bytes", D::None),
            field("max_worker_peak_device_shard_key", D::None),
            nested("model", D::None, Nested::Optional("ModelFootprint")),
            nested("embedding", D::None, Nested::Optional("EmbeddingFootprint")),
            field("shard_persisted_bytes", D::None),
            field("shard_keys", D::EmptyList),
            field("context", D::EmptyDict),
            field("warnings", D::EmptyList),
            field("scope", D::Text("distributed_shards")),
        ],
        checked: false,
    },
    Class {
        name: "ResourceProfilingConfig",
        frozen: false,
        doc: "Opt-in measurement of extraction cost and representation footprint (vertebrae.config).",
        fields: &[
            field("enabled", D::False),
            field("host_memory", D::True),
            field("device_memory", D::True),
            field("persisted_storage", D::True),
            field("host_sample_interval_seconds", D::Real(0.01)),
            field("quality_tolerance", D::Real(0.01)),
        ],
        checked: true,
    },
];

fn class_schema(name: &str) -> Option<&'static Class> {
    CLASSES.iter().find(|class| class.name == name)
}

/// Makes every schema class with `dataclasses.make_dataclass` and adds it
/// to `module`, named as in `tally.profiling`.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let dataclasses = py.import("dataclasses")?;
    let partialmethod = py.import("functools")?.getattr("partialmethod")?;
    let check = module.getattr("_check_dataclass")?;
    for class in CLASSES {
        let fields = PyList::empty(py);
        for field in class.fields {
            let spec = PyDict::new(py);
            let factory = |name: &str| -> PyResult<Bound<'_, PyAny>> { py.import("builtins")?.getattr(name) };
            match field.default {
                D::Required => {}
                D::None => spec.set_item("default", py.None())?,
                D::False => spec.set_item("default", false)?,
                D::True => spec.set_item("default", true)?,
                D::Zero => spec.set_item("default", 0)?,
                D::Real(value) => spec.set_item("default", value)?,
                D::Text(text) => spec.set_item("default", text)?,
                D::EmptyTuple => spec.set_item("default", PyTuple::empty(py))?,
                D::EmptyList => spec.set_item("default_factory", factory("list")?)?,
                D::EmptyDict => spec.set_item("default_factory", factory("dict")?)?,
            }
            let made = dataclasses.getattr("field")?.call((), Some(&spec))?;
            fields.append(PyTuple::new(
                py,
                [PyString::new(py, field.name).into_any(), py.import("typing")?.getattr("Any")?, made],
            )?)?;
        }
        let namespace = PyDict::new(py);
        namespace.set_item("__doc__", class.doc)?;
        namespace.set_item("__module__", "tally.profiling")?;
        if class.checked {
            namespace.set_item("__post_init__", partialmethod.call1((&check, class.name))?)?;
        }
        let options = PyDict::new(py);
        options.set_item("frozen", class.frozen)?;
        options.set_item("namespace", namespace)?;
        let made = dataclasses.getattr("make_dataclass")?.call((class.name, fields), Some(&options))?;
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
        let base = tally_profile::BaseResourceProfileAdapter.peak_device_memory();
        default_answer(
            py,
            "DeviceMemoryMeasurement",
            &base.map_err(|error| PyValueError::new_err(error.to_string()))?,
        )
    }

    /// Parameter and in-memory sizes of the model (unavailable).
    fn model_footprint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let base = tally_profile::BaseResourceProfileAdapter.model_footprint();
        default_answer(
            py,
            "ModelFootprintMeasurement",
            &base.map_err(|error| PyValueError::new_err(error.to_string()))?,
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
