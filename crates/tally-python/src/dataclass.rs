//! stormlog's frozen-dataclass protocol for `tally.accounting`'s native
//! classes.
//!
//! stormlog's classes are `@dataclass(frozen=True)` (the events also
//! `kw_only=True`), and its users treat them as such:
//! `dataclasses.replace`, `asdict`, `astuple`, `fields`, `is_dataclass`,
//! `copy.replace` (3.13), `FrozenInstanceError` on assignment. The
//! `dataclasses` functions ask only for `__dataclass_fields__` (the
//! `Field` objects) and, for `replace`, a constructor taking every field
//! by keyword, which each class has. So each native class gets the
//! `Field` objects, `__dataclass_params__` and `__match_args__` of a
//! dataclass declared exactly as stormlog declares it (made once at import
//! by `dataclasses.make_dataclass` from [`CLASSES`]), and [`frozen_protocol`]
//! gives it the frozen instance methods. The values stay in Rust.
//!
//! [`CLASSES`] is stormlog 0.4.3's declarations: names, annotations (strings,
//! as stormlog's modules use `from __future__ import annotations`), defaults
//! and order; the event classes' ([`EVENT_CLASSES`]) are made from
//! tally-core's schema. `tests/test_surface.py` compares every field with
//! stormlog's live.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString, PyTuple};
use tally_core::schema::{Member, MemberKind};

/// The dataclass made from each declaration, by class name.
static PROXIES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

// A field's default: the one description of what a dataclass field
// defaults to is tally-profile's (vertebrae's defaults are a superset of
// stormlog's), so both peers' classes are declared by one conversion,
// `declare_field`'s.
pub use tally_profile::profile::schema::FieldDefault as Default;

/// One declared field.
#[derive(Clone, Copy)]
pub struct Field {
    /// The attribute name.
    pub name: &'static str,
    /// The annotation, as the string stormlog's module holds.
    pub annotation: &'static str,
    /// The default.
    pub default: Default,
}

const fn field(name: &'static str, annotation: &'static str, default: Default) -> Field {
    Field { name, annotation, default }
}

const fn required(name: &'static str, annotation: &'static str) -> Field {
    field(name, annotation, Default::Required)
}

const fn optional(name: &'static str, annotation: &'static str) -> Field {
    field(name, annotation, Default::None)
}

/// One class: its name in `tally._native`, whether its fields are
/// keyword-only, and its own fields after those of `base`.
pub struct Class {
    /// The class name.
    pub name: &'static str,
    /// `kw_only=True` (stormlog's events).
    pub kw_only: bool,
    /// The fields of the base class, first.
    pub base: &'static [Field],
    /// The class's own fields.
    pub fields: &'static [Field],
}

/// A field of an event class as stormlog declares a member of its kind
/// (the annotation its module holds as a string, and the default).
const fn member(member: Member) -> Field {
    let (annotation, default) = match member.kind {
        MemberKind::Ref => ("EntityRef", Default::Required),
        MemberKind::OptionalRef => ("EntityRef | None", Default::None),
        MemberKind::Text | MemberKind::Attribution => ("str", Default::Required),
        MemberKind::OptionalText => ("str | None", Default::None),
        MemberKind::Count | MemberKind::Signed => ("int", Default::Required),
        MemberKind::OptionalCount | MemberKind::SpanStart | MemberKind::SpanEnd => {
            ("int | None", Default::None)
        }
        MemberKind::Flag => ("bool", Default::Required),
        MemberKind::Names => ("list[str]", Default::EmptyList),
        MemberKind::Domain => ("str", Default::Text("unknown")),
    };
    field(member.name, annotation, default)
}

/// `CorrelationEvent`'s fields, the first of every event class.
const EVENT: &[Field] = &[
    required("context", "CorrelationContext"),
    required("event_id", "str"),
    field("metadata", "dict[str, Any]", Default::EmptyDict),
];

/// Declares the eight event classes from tally-core's schema.
macro_rules! event_classes {
    ($(
        $(#[$doc:meta])* $variant:ident($text:literal, $body:ident)
        $class:ident: $class_doc:literal { $($name:ident: $kind:ident($($path:ident).+)),* $(,)? }
    )*) => {
        /// stormlog 0.4.3's event classes, in its declaration order.
        pub const EVENT_CLASSES: &[Class] = &[$(event(
            stringify!($class),
            &[$(member(Member { name: stringify!($name), kind: MemberKind::$kind })),*],
        )),*];
    };
}

tally_core::event_schema!(event_classes);

const fn event(name: &'static str, fields: &'static [Field]) -> Class {
    Class { name, kw_only: true, base: EVENT, fields }
}

const fn plain(name: &'static str, fields: &'static [Field]) -> Class {
    Class { name, kw_only: false, base: &[], fields }
}

/// stormlog 0.4.3's dataclasses other than the event classes
/// ([`EVENT_CLASSES`]), in its declaration order.
pub const CLASSES: &[Class] = &[
    plain("EntityRef", &[required("producer_id", "str"), required("id", "str")]),
    plain(
        "CorrelationContext",
        &[
            required("run_id", "str"),
            required("session_id", "str"),
            required("producer_id", "str"),
            required("source", "str"),
            required("clock_domain", "str"),
            required("clock_kind", "str"),
            required("collection_mode", "str"),
            required("provenance", "str"),
            optional("source_version", "str | None"),
            optional("engine", "str | None"),
            optional("engine_version", "str | None"),
            optional("backend", "str | None"),
            optional("backend_version", "str | None"),
            optional("host", "str | None"),
            optional("pid", "int | None"),
            optional("device_uuid", "str | None"),
            optional("rank", "int | None"),
            optional("local_rank", "int | None"),
            optional("world_size", "int | None"),
        ],
    ),
    event("CorrelationEvent", &[]),
    plain("LegacyInferenceRecord", &[required("raw", "dict[str, Any]")]),
    plain(
        "UnresolvedReference",
        &[required("event_id", "str"), required("kind", "str"), required("ref", "EntityRef")],
    ),
    plain(
        "CorrelationGraph",
        &[
            required("run_id", "str | None"),
            required("requests", "dict[tuple[EntityRef, EntityRef | None], RequestEvent]"),
            required("iterations", "dict[EntityRef, IterationEvent]"),
            required("stages", "dict[EntityRef, StageEvent]"),
            required("memberships", "tuple[MembershipEvent, ...]"),
            required("activities", "dict[EntityRef, ActivityReferenceEvent]"),
            required("alignments", "tuple[ClockAlignmentEvent, ...]"),
            required("unresolved", "tuple[UnresolvedReference, ...]"),
        ],
    ),
    plain(
        "DeviceClock",
        &[
            required("device_uuid", "str"),
            required("clock_domain", "str"),
            field("clock_kind", "str", Default::Text("monotonic")),
        ],
    ),
    plain(
        "GpuTime",
        &[
            required("summed_activity_ns", "int"),
            required("busy_ns", "int"),
            required("activity_count", "int"),
        ],
    ),
    plain(
        "IterationTiming",
        &[required("elapsed_ns", "int | None"), required("gpu", "dict[DeviceClock, GpuTime]")],
    ),
    plain(
        "RunAccounting",
        &[
            required("run_id", "str | None"),
            required("iterations", "dict[EntityRef, IterationTiming]"),
            required("device_totals", "dict[DeviceClock, GpuTime]"),
            required("unattributed_activity_refs", "tuple[EntityRef, ...]"),
            required("unmeasured_gpu_activity_refs", "tuple[EntityRef, ...]"),
        ],
    ),
    plain(
        "RequestShareEstimate",
        &[
            required("request_ref", "EntityRef"),
            required("duration_ns", "int"),
            required("model", "str"),
            optional("attempt_ref", "EntityRef | None"),
        ],
    ),
    plain(
        "ShareBudget",
        &[
            required("iteration_ref", "EntityRef"),
            required("device_clock", "DeviceClock"),
            required("budget_ns", "int"),
            required("shares", "tuple[RequestShareEstimate, ...]"),
            required("unattributed_ns", "int"),
        ],
    ),
    plain(
        "AlignedTimestamp",
        &[required("value_ns", "int"), required("uncertainty_ns", "int"), required("clock_domain", "str")],
    ),
];

/// One `(name, annotation, dataclasses.field(...))` entry of the field list
/// [`make_dataclass`] takes.
pub fn declare_field<'py>(
    py: Python<'py>,
    name: &str,
    annotation: Bound<'py, PyAny>,
    default: Default,
) -> PyResult<Bound<'py, PyTuple>> {
    let options = PyDict::new(py);
    let value = match default {
        Default::Required => None,
        Default::None => Some(py.None().into_bound(py)),
        Default::False => Some(PyBool::new(py, false).to_owned().into_any()),
        Default::True => Some(PyBool::new(py, true).to_owned().into_any()),
        Default::Zero => Some(0_i64.into_pyobject(py)?.into_any()),
        Default::Real(value) => Some(PyFloat::new(py, value).into_any()),
        Default::Text(text) => Some(PyString::new(py, text).into_any()),
        Default::EmptyTuple => Some(PyTuple::empty(py).into_any()),
        Default::EmptyList | Default::EmptyDict => {
            let factory = if matches!(default, Default::EmptyList) { "list" } else { "dict" };
            options.set_item("default_factory", py.import("builtins")?.getattr(factory)?)?;
            None
        }
    };
    if let Some(value) = value {
        options.set_item("default", value)?;
    }
    let made = py.import("dataclasses")?.getattr("field")?.call((), Some(&options))?;
    PyTuple::new(py, [name.into_pyobject(py)?.into_any(), annotation, made])
}

/// `dataclasses.make_dataclass(name, fields, frozen=..., kw_only=...,
/// namespace=...)`, the one way this package declares a dataclass: for
/// `tally.accounting`'s native classes the made class is the declaration
/// whose protocol they take ([`install`]); for `tally.profiling`'s it is the
/// class itself (vertebrae's are real dataclasses, some of them mutable,
/// whose values live in Python). `kw_only` and `namespace` are passed only
/// when given, as `make_dataclass`'s own defaults stand for them otherwise.
pub fn make_dataclass<'py>(
    py: Python<'py>,
    name: &str,
    fields: &Bound<'py, PyList>,
    frozen: bool,
    kw_only: Option<bool>,
    namespace: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let options = PyDict::new(py);
    options.set_item("frozen", frozen)?;
    if let Some(kw_only) = kw_only {
        options.set_item("kw_only", kw_only)?;
    }
    if let Some(namespace) = namespace {
        options.set_item("namespace", namespace)?;
    }
    py.import("dataclasses")?.getattr("make_dataclass")?.call((name, fields), Some(&options))
}

/// The attributes a dataclass made from the declaration carries that
/// `dataclasses`' functions and pattern matching read.
const PROTOCOL_ATTRIBUTES: [&str; 3] = ["__dataclass_fields__", "__dataclass_params__", "__match_args__"];

/// Gives every class of [`CLASSES`] in `module` the `Field` objects,
/// parameters and `__match_args__` of stormlog's declaration.
pub fn install(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let proxies = PROXIES.get_or_init(py, || PyDict::new(py).unbind()).bind(py);
    for class in CLASSES.iter().chain(EVENT_CLASSES) {
        let declared = PyList::empty(py);
        for field in class.base.iter().chain(class.fields) {
            declared.append(declare_field(
                py,
                field.name,
                field.annotation.into_pyobject(py)?.into_any(),
                field.default,
            )?)?;
        }
        let proxy = make_dataclass(py, class.name, &declared, true, Some(class.kw_only), None)?;
        let target = module.getattr(class.name)?;
        for attribute in PROTOCOL_ATTRIBUTES {
            target.setattr(attribute, proxy.getattr(attribute)?)?;
        }
        proxies.set_item(class.name, proxy)?;
    }
    Ok(())
}

/// The arguments of a constructor call bound to the fields of class
/// `name` as stormlog's generated `__init__` binds them: an instance of the
/// declaration's dataclass, whose attributes are the fields' values.
/// Python itself checks the call, so a missing, repeated or unknown
/// argument is Python's `TypeError`, worded as on stormlog's class.
pub fn bind<'py>(
    py: Python<'py>,
    name: &str,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let proxy = PROXIES.get(py).and_then(|proxies| proxies.bind(py).get_item(name).ok().flatten());
    match proxy {
        Some(proxy) => proxy.call(args, kwargs),
        None => {
            Err(pyo3::exceptions::PyRuntimeError::new_err(format!("{name}'s declaration is not installed")))
        }
    }
}

/// `dataclasses.FrozenInstanceError`, worded as a frozen dataclass's
/// `__setattr__` / `__delattr__` word it.
pub fn frozen_error(py: Python<'_>, action: &str, name: &str) -> PyErr {
    // Attribute names are identifiers, so `{name!r}` is the name in quotes.
    let message = format!("cannot {action} field '{name}'");
    match py.import("dataclasses").and_then(|module| module.getattr("FrozenInstanceError")?.call1((message,)))
    {
        Ok(error) => PyErr::from_value(error),
        Err(error) => error,
    }
}

/// The instance side of a frozen dataclass for a native class:
/// assignment and deletion raise `FrozenInstanceError`, and
/// `__replace__` (Python 3.13's `copy.replace`) is `dataclasses.replace`.
macro_rules! frozen_protocol {
    ($rust:ty) => {
        #[pymethods]
        impl $rust {
            fn __setattr__(slf: &Bound<'_, Self>, name: &str, _value: &Bound<'_, PyAny>) -> PyResult<()> {
                Err($crate::dataclass::frozen_error(slf.py(), "assign to", name))
            }

            fn __delattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<()> {
                Err($crate::dataclass::frozen_error(slf.py(), "delete", name))
            }

            /// A copy with the given fields changed, checked as the
            /// constructor checks them (`dataclasses.replace`).
            #[pyo3(signature = (**changes))]
            fn __replace__<'py>(
                slf: &Bound<'py, Self>,
                changes: Option<&Bound<'py, pyo3::types::PyDict>>,
            ) -> PyResult<Bound<'py, PyAny>> {
                slf.py().import("dataclasses")?.getattr("replace")?.call((slf,), changes)
            }
        }
    };
}

pub(crate) use frozen_protocol;
