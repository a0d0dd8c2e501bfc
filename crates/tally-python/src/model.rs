//! stormlog's event model (`stormlog.infer.correlation_events`) as Python
//! classes over tally-core's types: `EntityRef`, `CorrelationContext`, the
//! eight event classes under `CorrelationEvent`, `LegacyInferenceRecord`, and
//! `parse_inference_record`.
//!
//! Each object holds the validated Rust value; constructing one builds the
//! JSON record stormlog's `to_record()` would give and lets tally-core parse
//! it, so every rule (and its message) is tally-core's. What is checked here
//! is only what Python's own machinery checks in stormlog: keyword names,
//! and that a field holding an object holds the right class.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};
use serde_json::{Map, Value};
use tally_core::{
    CorrelationContext as CoreContext, CorrelationEvent as CoreEvent, EntityRef as CoreRef, EventType,
    InferenceRecord,
};

use crate::convert::{dict_to_json, map_to_python, to_json, to_python};
use crate::event_fields::{field, fields_of, to_python as member_to_python};

/// A tally-core rule's rejection as the `ValueError` stormlog raises.
pub fn invalid(error: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(error.to_string())
}

fn unhashable() -> PyErr {
    PyTypeError::new_err("unhashable type: 'dict'")
}

fn hash_of(value: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// `repr()` of each `(name, value)` as a dataclass shows its fields.
pub fn dataclass_repr(class: &str, fields: &[(&str, Bound<'_, PyAny>)]) -> PyResult<String> {
    let mut text = format!("{class}(");
    for (index, (name, value)) in fields.iter().enumerate() {
        if index > 0 {
            text.push_str(", ");
        }
        text.push_str(name);
        text.push('=');
        text.push_str(&value.repr()?.to_string());
    }
    text.push(')');
    Ok(text)
}

/// Fields whose value stormlog tests with `in {...}`, which raises
/// `TypeError` for an unhashable value (a list, a dict) where the field's
/// rule is checked.
const SET_TESTED_FIELDS: [&str; 5] =
    ["clock_kind", "collection_mode", "provenance", "activity_domain", "attribution_status"];

/// A keyword argument's value as the JSON tally-core's rules read. A value
/// with no JSON form (an object, NaN) is a value no field but `metadata`
/// accepts, so it is given as one every such rule rejects (an object with
/// an empty key; for `metadata`, null), and the field's own rule words the
/// error, as stormlog's does. An unhashable value of a set-tested field is
/// noted in `unhashable`, with its type name, for [`rejected`].
fn field_json(
    name: &str,
    value: &Bound<'_, PyAny>,
    unhashable: &mut Vec<(String, String)>,
) -> PyResult<Value> {
    if SET_TESTED_FIELDS.contains(&name) && value.hash().is_err() {
        unhashable.push((name.to_owned(), value.get_type().name()?.to_string()));
    }
    match to_json(value) {
        Ok(json) => Ok(json),
        Err(_) if name == "metadata" && value.cast::<PyDict>().is_err() => Ok(Value::Null),
        Err(error) if name == "metadata" => Err(error),
        Err(_) => Ok(serde_json::json!({"": null})),
    }
}

/// tally-core's rejection of a constructed value as stormlog raises it: a
/// `ValueError`, or Python's own `TypeError` when the broken rule is a set
/// test of an unhashable value.
fn rejected(error: &tally_core::ValidationError, unhashable: &[(String, String)]) -> PyErr {
    match unhashable.iter().find(|(name, _)| name == error.field()) {
        Some((_, type_name)) => PyTypeError::new_err(format!("unhashable type: '{type_name}'")),
        None => invalid(error),
    }
}

/// An ID scoped to its producer within a run (stormlog's `EntityRef`).
#[pyclass(frozen, module = "tally.accounting", name = "EntityRef")]
#[derive(Clone)]
pub struct PyEntityRef {
    pub inner: CoreRef,
}

impl PyEntityRef {
    pub fn wrap<'py>(py: Python<'py>, reference: &CoreRef) -> PyResult<Bound<'py, PyAny>> {
        Ok(Bound::new(py, PyEntityRef { inner: reference.clone() })?.into_any())
    }

    /// The reference a Python object stands for: tally's `EntityRef`, or
    /// any object with string `producer_id` and `id` (stormlog's own).
    pub fn extract(value: &Bound<'_, PyAny>, name: &str) -> PyResult<CoreRef> {
        if let Ok(reference) = value.cast::<PyEntityRef>() {
            return Ok(reference.get().inner.clone());
        }
        let part = |attribute: &str| -> Option<String> {
            value.getattr(attribute).ok()?.cast::<PyString>().ok()?.to_str().ok().map(str::to_owned)
        };
        match (part("producer_id"), part("id")) {
            (Some(producer_id), Some(id)) => CoreRef::new(producer_id, id).map_err(invalid),
            _ => Err(PyValueError::new_err(format!("{name} must be an EntityRef"))),
        }
    }
}

fn text_argument(value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    match value.cast::<PyString>() {
        Ok(text) => Ok(text.to_str()?.to_owned()),
        Err(_) => Err(PyValueError::new_err(format!("{name} must be a non-empty string"))),
    }
}

#[pymethods]
impl PyEntityRef {
    #[new]
    #[pyo3(signature = (*args, **kwargs), text_signature = "(producer_id, id)")]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let bound = crate::dataclass::bind(args.py(), "EntityRef", args, kwargs)?;
        let producer_id = text_argument(&bound.getattr("producer_id")?, "producer_id")?;
        let id = text_argument(&bound.getattr("id")?, "id")?;
        Ok(Self { inner: CoreRef::new(producer_id, id).map_err(invalid)? })
    }

    /// The producer that minted the ID.
    #[getter]
    fn producer_id(&self) -> &str {
        self.inner.producer_id()
    }

    /// The ID within its producer.
    #[getter]
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = other.py();
        match other.cast::<PyEntityRef>() {
            Ok(other) => Ok(pyo3::types::PyBool::new(py, self.inner == other.get().inner)
                .to_owned()
                .into_any()
                .unbind()),
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    fn __hash__(&self) -> u64 {
        hash_of(&self.inner)
    }

    fn __repr__(&self) -> String {
        format!("EntityRef(producer_id={:?}, id={:?})", self.inner.producer_id(), self.inner.id())
            .replace('"', "'")
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, (String, String))> {
        let inner = &slf.get().inner;
        Ok((slf.get_type(), (inner.producer_id().to_owned(), inner.id().to_owned())))
    }
}

/// stormlog's order of a context's fields (its constructor's parameters).
const CONTEXT_FIELDS: [&str; 19] = CoreContext::FIELD_NAMES;

/// The first eight context fields have no default.
const REQUIRED_CONTEXT_FIELDS: usize = 8;

/// Capture identity and evidence quality shared by one emitted record
/// (stormlog's `CorrelationContext`).
#[pyclass(frozen, module = "tally.accounting", name = "CorrelationContext")]
pub struct PyContext {
    pub inner: Arc<CoreContext>,
}

impl PyContext {
    fn json(&self) -> Map<String, Value> {
        match self.inner.to_json() {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    /// The context of an event's `context` argument, which must be tally's
    /// (as stormlog's constructors take only stormlog's own class).
    pub fn extract(value: &Bound<'_, PyAny>) -> PyResult<Arc<CoreContext>> {
        if let Ok(context) = value.cast::<PyContext>() {
            return Ok(Arc::clone(&context.get().inner));
        }
        Err(PyValueError::new_err("context must be a CorrelationContext"))
    }
}

#[pymethods]
impl PyContext {
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(run_id, session_id, producer_id, source, clock_domain, clock_kind, collection_mode, \
                          provenance, source_version=None, engine=None, engine_version=None, backend=None, \
                          backend_version=None, host=None, pid=None, device_uuid=None, rank=None, local_rank=None, \
                          world_size=None)"
    )]
    fn new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let bound = crate::dataclass::bind(args.py(), "CorrelationContext", args, kwargs)?;
        let mut map = Map::new();
        let mut unhashable = Vec::new();
        for (index, name) in CONTEXT_FIELDS.into_iter().enumerate() {
            let value = bound.getattr(name)?;
            // An optional field left None is absent from the record; a
            // required one given None is there, for its rule to refuse.
            if !value.is_none() || index < REQUIRED_CONTEXT_FIELDS {
                map.insert(name.to_owned(), field_json(name, &value, &mut unhashable)?);
            }
        }
        let inner =
            CoreContext::from_json(Value::Object(map)).map_err(|error| rejected(&error, &unhashable))?;
        Ok(Self { inner: Arc::new(inner) })
    }

    fn __getattr__<'py>(slf: &Bound<'py, Self>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let map = slf.get().json();
        match map.get(name) {
            Some(value) => to_python(slf.py(), value),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "'CorrelationContext' object has no attribute '{name}'"
            ))),
        }
    }

    fn __dir__(&self) -> Vec<&'static str> {
        CONTEXT_FIELDS.to_vec()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = other.py();
        match other.cast::<PyContext>() {
            Ok(other) => {
                let equal = Arc::ptr_eq(&self.inner, &other.get().inner) || *self.inner == *other.get().inner;
                Ok(pyo3::types::PyBool::new(py, equal).to_owned().into_any().unbind())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    fn __hash__(&self) -> u64 {
        hash_of(&*self.inner)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        let map = slf.get().json();
        let fields = CONTEXT_FIELDS
            .iter()
            .map(|name| Ok((*name, to_python(py, map.get(*name).unwrap_or(&Value::Null))?)))
            .collect::<PyResult<Vec<_>>>()?;
        dataclass_repr("CorrelationContext", &fields)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyDict>,))> {
        let py = slf.py();
        let module = py.import("tally._native")?;
        Ok((module.getattr("_context_from_dict")?, (map_to_python(py, &slf.get().json())?,)))
    }
}

/// Rebuilds a context from its dict (pickling).
#[pyfunction]
pub fn _context_from_dict(values: &Bound<'_, PyDict>) -> PyResult<PyContext> {
    let inner = CoreContext::from_json(Value::Object(dict_to_json(values)?)).map_err(invalid)?;
    Ok(PyContext { inner: Arc::new(inner) })
}

/// Common event identity; the subclasses hold the event-specific evidence
/// (stormlog's `CorrelationEvent`).
#[pyclass(frozen, subclass, module = "tally.accounting", name = "CorrelationEvent")]
pub struct PyEvent {
    pub inner: Arc<CoreEvent>,
    /// The object handed out for each field, by name: those the event was
    /// built with, else made on first access. stormlog's events hold
    /// objects, so `event.context is event.context`, and
    /// `replace(event, metadata=m)` keeps `event`'s context and references.
    objects: PyOnceLock<Py<PyDict>>,
}

impl PyEvent {
    /// An event whose field objects are made when first asked for.
    pub fn new(inner: Arc<CoreEvent>) -> Self {
        Self { inner, objects: PyOnceLock::new() }
    }

    /// The object of field `name`: the one handed out before, else `make`'s.
    fn field_object<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        make: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let objects = self.objects.get_or_init(py, || PyDict::new(py).unbind()).bind(py);
        if let Some(object) = objects.get_item(name)? {
            return Ok(object);
        }
        let object = make()?;
        objects.set_item(name, &object)?;
        Ok(object)
    }
}

/// Builds an event from a dataclass-style keyword call: the record
/// stormlog's `to_record()` would give for those values, parsed by
/// tally-core with the context object's value.
fn construct(py: Python<'_>, event_type: EventType, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<PyEvent> {
    let fields = fields_of(event_type);
    let class = fields.class;
    let empty = PyDict::new(py);
    let kwargs = kwargs.unwrap_or(&empty);
    let known = |name: &str| {
        ["context", "event_id", "metadata"].contains(&name)
            || fields.required.contains(&name)
            || fields.optional.contains(&name)
    };
    for key in kwargs.keys() {
        let key = key.str()?.to_string();
        if !known(&key) {
            return Err(PyTypeError::new_err(format!(
                "{class}.__init__() got an unexpected keyword argument '{key}'"
            )));
        }
    }
    let missing: Vec<String> = ["context", "event_id"]
        .iter()
        .chain(&fields.required)
        .filter(|name| !kwargs.contains(**name).unwrap_or(false))
        .map(|name| format!("'{name}'"))
        .collect();
    if !missing.is_empty() {
        let count = missing.len();
        let noun = if count == 1 { "argument" } else { "arguments" };
        let names = match missing.as_slice() {
            [only] => only.clone(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
            [] => String::new(),
        };
        return Err(PyTypeError::new_err(format!(
            "{class}.__init__() missing {count} required keyword-only {noun}: {names}"
        )));
    }
    let context = match kwargs.get_item("context")? {
        Some(value) => PyContext::extract(&value)?,
        None => return Err(PyValueError::new_err("context must be a CorrelationContext")),
    };
    let mut record = Map::new();
    let mut unhashable = Vec::new();
    for (key, value) in kwargs.iter() {
        let key = key.str()?.to_string();
        if key == "context" {
            continue;
        }
        let json = if fields.references.contains(&key.as_str()) {
            if value.is_none() {
                if fields.required.contains(&key.as_str()) {
                    return Err(PyValueError::new_err(format!("{key} must be an EntityRef")));
                }
                Value::Null
            } else {
                PyEntityRef::extract(&value, &key)?.to_json()
            }
        } else {
            field_json(&key, &value, &mut unhashable)?
        };
        record.insert(key, json);
    }
    let intervals = event_type == EventType::ActivityRef
        && matches!(record.get("metadata"), Some(Value::Object(metadata)) if metadata.contains_key("intervals"));
    record.insert("schema_version".into(), Value::from(if intervals { 3 } else { 2 }));
    record.insert("event_type".into(), Value::from(event_type.as_str()));
    // The record's context is the object given; tally-core asks that the
    // record hold one, and takes it out through `context_of`.
    record.insert("context".into(), Value::Object(Map::new()));
    let context_of = |map: &mut Map<String, Value>| {
        map.remove("context");
        Ok(context)
    };
    let event = match tally_core::parse_record_map(record, context_of)
        .map_err(|error| rejected(&error, &unhashable))?
    {
        InferenceRecord::Event(event) => PyEvent::new(Arc::new(event)),
        InferenceRecord::Legacy(_) => {
            return Err(PyValueError::new_err("event_type must name an inference event"));
        }
    };
    // The objects given are the fields' objects, as in stormlog's
    // dataclass; a reference given as another library's object is handed
    // out as tally's.
    let objects = PyDict::new(py);
    for (key, value) in kwargs.iter() {
        let reference = fields.references.contains(&key.str()?.to_str()?);
        if !reference || value.is_none() || value.cast::<PyEntityRef>().is_ok() {
            objects.set_item(key, value)?;
        }
    }
    let _ = event.objects.set(py, objects.unbind());
    Ok(event)
}

#[pymethods]
impl PyEvent {
    /// The capture context.
    #[getter]
    fn context<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field_object(py, "context", || {
            Ok(Bound::new(py, PyContext { inner: Arc::clone(self.inner.context_arc()) })?.into_any())
        })
    }

    /// The event's ID, unique per (session, producer).
    #[getter]
    fn event_id<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field_object(py, "event_id", || Ok(PyString::new(py, self.inner.event_id()).into_any()))
    }

    /// Free-form metadata. Made once per event; editing it in place does
    /// not change the event's record (tally's events hold their values).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field_object(
            py,
            "metadata",
            || Ok(map_to_python(py, self.inner.metadata().as_map())?.into_any()),
        )
    }

    /// 3 for an activity whose metadata names `intervals`, else 2.
    #[getter]
    fn schema_version(&self) -> u32 {
        self.inner.schema_version()
    }

    /// Only local monotonic spans have an unqualified duration.
    #[getter]
    fn elapsed_ns(&self) -> Option<u64> {
        self.inner.elapsed_ns()
    }

    /// The embedded JSON record stormlog writes for this event.
    fn to_record<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        map_to_python(py, &self.inner.to_record())
    }

    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        match other.cast::<PyEvent>() {
            Ok(theirs) if slf.get_type().is(other.get_type()) => {
                Ok(pyo3::types::PyBool::new(py, *slf.get().inner == *theirs.get().inner)
                    .to_owned()
                    .into_any()
                    .unbind())
            }
            _ => Ok(py.NotImplemented()),
        }
    }

    /// Unhashable, as stormlog's events are: their metadata is a dict.
    fn __hash__(&self) -> PyResult<u64> {
        Err(unhashable())
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        let event = &slf.get().inner;
        let fields = fields_of(event.event_type());
        let mut shown: Vec<(&str, Bound<'_, PyAny>)> = vec![
            ("context", Bound::new(py, PyContext { inner: Arc::clone(event.context_arc()) })?.into_any()),
            ("event_id", PyString::new(py, event.event_id()).into_any()),
            ("metadata", map_to_python(py, event.metadata().as_map())?.into_any()),
        ];
        for name in fields.required.iter().chain(&fields.optional) {
            if let Some(value) = field(event, name) {
                shown.push((name, member_to_python(py, value)?));
            }
        }
        dataclass_repr(fields.class, &shown)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyDict>,))> {
        let py = slf.py();
        let module = py.import("tally._native")?;
        Ok((module.getattr("parse_inference_record")?, (map_to_python(py, &slf.get().inner.to_record())?,)))
    }
}

/// A field getter of an event subclass.
fn get_field<'py>(event: &Bound<'py, PyEvent>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let py = event.py();
    let event = event.get();
    event.field_object(py, name, || match field(&event.inner, name) {
        Some(value) => member_to_python(py, value),
        None => Err(pyo3::exceptions::PyAttributeError::new_err(name.to_owned())),
    })
}

/// Declares stormlog's eight event classes from tally-core's schema, each
/// with a getter for every field of its own, and [`event_to_python`].
macro_rules! event_classes {
    ($(
        $(#[$doc:meta])* $variant:ident($type_name:literal, $body:ident)
        $class:ident: $class_doc:literal { $($field:ident: $kind:ident($($path:ident).+)),* $(,)? }
    )*) => {
        $(
            #[doc = $class_doc]
            #[pyclass(frozen, extends = PyEvent, module = "tally.accounting")]
            pub struct $class;

            #[pymethods]
            impl $class {
                /// The `event_type` this class is written as.
                #[classattr]
                const EVENT_TYPE: &'static str = $type_name;

                #[new]
                #[pyo3(signature = (**kwargs))]
                fn new(
                    py: Python<'_>,
                    kwargs: Option<&Bound<'_, PyDict>>,
                ) -> PyResult<PyClassInitializer<Self>> {
                    let event = construct(py, EventType::$variant, kwargs)?;
                    Ok(PyClassInitializer::from(event).add_subclass($class))
                }

                $(
                    #[doc = concat!("stormlog's `", stringify!($field), "` field.")]
                    #[getter]
                    fn $field<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
                        get_field(slf.as_super(), stringify!($field))
                    }
                )*
            }
        )*

        /// The Python object of the event's class for one event.
        pub fn event_to_python(py: Python<'_>, event: Arc<CoreEvent>) -> PyResult<Bound<'_, PyAny>> {
            let event_type = event.event_type();
            let base = PyClassInitializer::from(PyEvent::new(event));
            Ok(match event_type {
                $(EventType::$variant => Bound::new(py, base.add_subclass($class))?.into_any(),)*
            })
        }
    };
}

tally_core::event_schema!(event_classes);

/// An unchanged v1 record; server correlation remains unknown
/// (stormlog's `LegacyInferenceRecord`).
#[pyclass(frozen, module = "tally.accounting", name = "LegacyInferenceRecord")]
pub struct PyLegacy {
    pub raw: Map<String, Value>,
    /// The dict handed out as `raw`: the one given, else made once.
    raw_object: PyOnceLock<Py<PyDict>>,
}

impl PyLegacy {
    /// A record whose `raw` dict is made when first asked for.
    pub fn of(raw: Map<String, Value>) -> Self {
        Self { raw, raw_object: PyOnceLock::new() }
    }
}

#[pymethods]
impl PyLegacy {
    #[new]
    #[pyo3(signature = (raw))]
    fn new(raw: &Bound<'_, PyDict>) -> PyResult<Self> {
        let record = Self::of(dict_to_json(raw)?);
        let _ = record.raw_object.set(raw.py(), raw.clone().unbind());
        Ok(record)
    }

    /// The record as read (the dict given, as stormlog's dataclass holds it).
    #[getter]
    fn raw<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let made =
            self.raw_object.get_or_try_init(py, || Ok::<_, PyErr>(map_to_python(py, &self.raw)?.unbind()))?;
        Ok(made.bind(py).clone())
    }

    /// A copy of the record.
    fn to_record<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        map_to_python(py, &self.raw)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = other.py();
        match other.cast::<PyLegacy>() {
            Ok(theirs) => {
                let equal = tally_utils::json_eq::python_json_eq(
                    &Value::Object(self.raw.clone()),
                    &Value::Object(theirs.get().raw.clone()),
                );
                Ok(pyo3::types::PyBool::new(py, equal).to_owned().into_any().unbind())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    fn __hash__(&self) -> PyResult<u64> {
        Err(unhashable())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, (Bound<'py, PyDict>,))> {
        Ok((slf.get_type(), (map_to_python(slf.py(), &slf.get().raw)?,)))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        dataclass_repr("LegacyInferenceRecord", &[("raw", map_to_python(py, &self.raw)?.into_any())])
    }
}

/// The Python object for one parsed record.
pub fn record_to_python(py: Python<'_>, record: InferenceRecord) -> PyResult<Bound<'_, PyAny>> {
    match record {
        InferenceRecord::Event(event) => event_to_python(py, Arc::new(event)),
        InferenceRecord::Legacy(legacy) => Ok(Bound::new(py, PyLegacy::of(legacy.raw().clone()))?.into_any()),
    }
}

/// What one Python object passed as evidence is.
pub enum Evidence {
    /// A correlation event.
    Event(Arc<CoreEvent>),
    /// A v1 record.
    Legacy(Map<String, Value>),
    /// Neither: stormlog's resolver passes over such objects.
    Other,
}

/// Reads one object of a record sequence: tally's event or legacy record
/// as it is; a dict, or an object with `to_record()` (stormlog's events),
/// parsed from its record by tally-core.
pub fn evidence(value: &Bound<'_, PyAny>) -> PyResult<Evidence> {
    if let Ok(event) = value.cast::<PyEvent>() {
        return Ok(Evidence::Event(Arc::clone(&event.get().inner)));
    }
    if let Ok(legacy) = value.cast::<PyLegacy>() {
        return Ok(Evidence::Legacy(legacy.get().raw.clone()));
    }
    let record = if let Ok(dict) = value.cast::<PyDict>() {
        dict.clone()
    } else if let Ok(method) = value.getattr("to_record") {
        match method.call0()?.cast_into::<PyDict>() {
            Ok(dict) => dict,
            Err(_) => return Err(PyValueError::new_err("record must be an object")),
        }
    } else {
        return Ok(Evidence::Other);
    };
    match tally_core::parse_inference_record(Value::Object(dict_to_json(&record)?)).map_err(invalid)? {
        InferenceRecord::Event(event) => Ok(Evidence::Event(Arc::new(event))),
        InferenceRecord::Legacy(legacy) => Ok(Evidence::Legacy(legacy.raw().clone())),
    }
}

/// Parse one embedded v1/v2/v3 JSONL record without fabricating missing
/// evidence.
#[pyfunction]
pub fn parse_inference_record<'py>(record: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = record.py();
    let Ok(dict) = record.cast::<PyDict>() else {
        return Err(PyValueError::new_err("record must be an object"));
    };
    let parsed = tally_core::parse_inference_record(Value::Object(dict_to_json(dict)?)).map_err(invalid)?;
    record_to_python(py, parsed)
}

/// Whether `event_type` names a correlation event that carries a context.
#[pyfunction]
pub fn is_correlation_event_type(event_type: &Bound<'_, PyAny>) -> bool {
    event_type
        .cast::<PyString>()
        .ok()
        .and_then(|text| text.to_str().ok().map(|text| EventType::parse(text).is_ok()))
        .unwrap_or(false)
}

/// The intervals in which a GPU activity kept its device busy, or None.
#[pyfunction]
pub fn activity_busy_intervals<'py>(activity: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = activity.py();
    let event = match evidence(activity)? {
        Evidence::Event(event) if event.event_type() == EventType::ActivityRef => event,
        _ => return Err(PyValueError::new_err("activity must be an ActivityReferenceEvent")),
    };
    match event.busy_intervals() {
        None => Ok(py.None().into_bound(py)),
        Some(busy) => {
            let pairs = busy
                .as_slice()
                .iter()
                .map(|interval| PyTuple::new(py, [interval.start_ns(), interval.end_ns()]))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, pairs)?.into_any())
        }
    }
}

crate::dataclass::frozen_protocol!(PyEntityRef);
crate::dataclass::frozen_protocol!(PyContext);
crate::dataclass::frozen_protocol!(PyEvent);
crate::dataclass::frozen_protocol!(PyLegacy);
