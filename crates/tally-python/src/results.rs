//! stormlog's result value classes (`correlation_accounting`'s
//! `GpuTime`, `IterationTiming`, `ShareBudget`, `AlignedTimestamp`,
//! `UnresolvedReference`, `DeviceClock` and `RequestShareEstimate`): frozen
//! dataclasses of Python values, and the macros that give a class of
//! Python-valued fields a dataclass's methods. The graph and the accounting
//! that hand them out are `accounting.rs`'s.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString, PyTuple};
use tally_core::ClockKind;
use tally_gpu_time::DeviceClock as CoreClock;

use crate::model::{PyEntityRef, invalid};

pub(crate) fn boolean(py: Python<'_>, value: bool) -> Py<PyAny> {
    PyBool::new(py, value).to_owned().into_any().unbind()
}

/// `__eq__` of a dataclass: the same class and equal field tuples.
pub(crate) fn fields_eq(
    slf: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    fields: impl Fn(&Bound<'_, PyAny>) -> PyResult<Option<Py<PyTuple>>>,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    if !slf.get_type().is(other.get_type()) {
        return Ok(py.NotImplemented());
    }
    match (fields(slf)?, fields(other)?) {
        (Some(mine), Some(theirs)) => Ok(boolean(py, mine.bind(py).eq(theirs.bind(py))?)),
        _ => Ok(py.NotImplemented()),
    }
}

/// The methods a frozen dataclass of Python values has: a getter per
/// field, `__match_args__`, and equality, hash (the field tuple's, so one
/// holding a dict is unhashable) and repr as a dataclass's. The struct and
/// its constructor are written beside each use (a second `#[pymethods]`
/// block), since their fields, defaults and checks differ.
macro_rules! dataclass_methods {
    ($rust:ident, $name:literal, [$($field:ident),+ $(,)?]) => {
        impl $rust {
            /// The field names; `r#ref` is Python's `ref`.
            const FIELDS: &'static [&'static str] = &[$(stringify!($field)),+];

            fn field_names() -> impl Iterator<Item = &'static str> {
                Self::FIELDS.iter().map(|name| name.trim_start_matches("r#"))
            }

            fn tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
                PyTuple::new(py, [$(self.$field.clone_ref(py)),+])
            }
        }

        #[pymethods]
        impl $rust {
            $(
                #[doc = concat!("stormlog's `", stringify!($field), "` field.")]
                #[getter]
                fn $field(&self, py: Python<'_>) -> Py<PyAny> {
                    self.$field.clone_ref(py)
                }
            )+

            #[classattr]
            fn __match_args__(py: Python<'_>) -> PyResult<Py<PyTuple>> {
                Ok(PyTuple::new(py, Self::field_names().collect::<Vec<_>>())?.unbind())
            }

            fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                fields_eq(slf.as_any(), other, |value| {
                    Ok(value.cast::<$rust>().ok().map(|value| value.get().tuple(value.py())).transpose()?.map(Bound::unbind))
                })
            }

            fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
                self.tuple(py)?.hash()
            }

            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                let values = self.tuple(py)?;
                let fields: Vec<(&str, Bound<'_, PyAny>)> = Self::field_names().zip(values.iter()).collect();
                crate::model::dataclass_repr($name, &fields)
            }

            /// Pickled and copied as the class called with its fields.
            fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, pyo3::types::PyType>, Bound<'py, PyTuple>)> {
                Ok((slf.get_type(), slf.get().tuple(slf.py())?))
            }
        }

        crate::dataclass::frozen_protocol!($rust);
    };
}

pub(crate) use dataclass_methods;

/// A frozen dataclass whose constructor takes every field, in order, and
/// checks nothing (as stormlog's result classes).
macro_rules! dataclass {
    ($rust:ident, $name:literal, $doc:literal, [$($field:ident),+ $(,)?]) => {
        #[doc = $doc]
        #[pyclass(frozen, module = "tally.accounting", name = $name)]
        pub struct $rust {
            $(pub $field: Py<PyAny>,)+
        }

        dataclass_methods!($rust, $name, [$($field),+]);

        #[pymethods]
        impl $rust {
            #[new]
            #[pyo3(signature = ($($field),+))]
            fn new($($field: Py<PyAny>),+) -> Self {
                Self { $($field),+ }
            }
        }
    };
}

dataclass!(
    GpuTime,
    "GpuTime",
    "Summed activity time, busy time (the union of the intervals) and the activity count of one device clock.",
    [summed_activity_ns, busy_ns, activity_count]
);
dataclass!(
    IterationTiming,
    "IterationTiming",
    "One iteration's elapsed time and its GPU time per device clock.",
    [elapsed_ns, gpu]
);
dataclass!(
    ShareBudget,
    "ShareBudget",
    "A share model that matched its iteration's measured GPU budget.",
    [iteration_ref, device_clock, budget_ns, shares, unattributed_ns]
);
dataclass!(
    AlignedTimestamp,
    "AlignedTimestamp",
    "A timestamp translated into another clock domain, with its uncertainty.",
    [value_ns, uncertainty_ns, clock_domain]
);
dataclass!(
    UnresolvedReference,
    "UnresolvedReference",
    "A reference to an entity no event reported (`ref` is the reference).",
    [event_id, kind, r#ref]
);

/// A device and the clock its timestamps are on.
#[pyclass(frozen, module = "tally.accounting", name = "DeviceClock")]
pub struct DeviceClock {
    device_uuid: Py<PyAny>,
    clock_domain: Py<PyAny>,
    clock_kind: Py<PyAny>,
}

dataclass_methods!(DeviceClock, "DeviceClock", [device_uuid, clock_domain, clock_kind]);

impl DeviceClock {
    pub(crate) fn of(py: Python<'_>, clock: &CoreClock<'_>) -> PyResult<Py<PyAny>> {
        let text = |value: &str| PyString::new(py, value).into_any().unbind();
        Ok(Bound::new(
            py,
            DeviceClock {
                device_uuid: text(clock.device_uuid),
                clock_domain: text(clock.clock_domain),
                clock_kind: text(clock.clock_kind.as_str()),
            },
        )?
        .into_any()
        .unbind())
    }

    /// The three strings of a device clock object (tally's or stormlog's).
    pub(crate) fn parts(value: &Bound<'_, PyAny>) -> Option<(String, String, ClockKind)> {
        let text = |name: &str| -> Option<String> {
            value.getattr(name).ok()?.cast::<PyString>().ok()?.to_str().ok().map(str::to_owned)
        };
        let kind = ClockKind::parse(&text("clock_kind")?).ok()?;
        Some((text("device_uuid")?, text("clock_domain")?, kind))
    }
}

#[pymethods]
impl DeviceClock {
    #[new]
    #[pyo3(signature = (device_uuid, clock_domain, clock_kind=None))]
    fn new(
        py: Python<'_>,
        device_uuid: Py<PyAny>,
        clock_domain: Py<PyAny>,
        clock_kind: Option<Py<PyAny>>,
    ) -> Self {
        let clock_kind = clock_kind.unwrap_or_else(|| PyString::new(py, "monotonic").into_any().unbind());
        Self { device_uuid, clock_domain, clock_kind }
    }
}

/// One request's modelled share of an iteration's GPU time.
#[pyclass(frozen, module = "tally.accounting", name = "RequestShareEstimate")]
pub struct RequestShareEstimate {
    request_ref: Py<PyAny>,
    duration_ns: Py<PyAny>,
    model: Py<PyAny>,
    attempt_ref: Py<PyAny>,
}

dataclass_methods!(
    RequestShareEstimate,
    "RequestShareEstimate",
    [request_ref, duration_ns, model, attempt_ref]
);

/// An integer argument as stormlog tests it (`int`, not `bool`), widened;
/// anything else is `-1`, which the rule then rejects as negative.
pub(crate) fn wide_integer(value: &Bound<'_, PyAny>) -> i128 {
    if value.cast::<PyBool>().is_ok() {
        return -1;
    }
    match value.cast::<PyInt>() {
        Ok(integer) => integer.extract::<i128>().unwrap_or_else(|_| {
            // Beyond i128: the sign is all the rule needs.
            if integer.lt(0).unwrap_or(true) { -1 } else { i128::MAX }
        }),
        Err(_) => -1,
    }
}

/// The Rust estimate of one share object (tally's or stormlog's), checked
/// by tally-gpu-time's rules.
pub(crate) fn share_of(value: &Bound<'_, PyAny>) -> PyResult<tally_gpu_time::RequestShareEstimate> {
    let attribute = |name: &str| value.getattr(name);
    let duration = wide_integer(&attribute("duration_ns")?);
    let model = attribute("model")?;
    let model_text = if model.is_truthy()? { model.str()?.to_string() } else { String::new() };
    let request = PyEntityRef::extract(&attribute("request_ref")?, "request_ref")?;
    let attempt = attribute("attempt_ref")?;
    let attempt = if attempt.is_none() { None } else { Some(PyEntityRef::extract(&attempt, "attempt_ref")?) };
    tally_gpu_time::RequestShareEstimate::new(request, attempt, duration, &model_text).map_err(invalid)
}

#[pymethods]
impl RequestShareEstimate {
    #[new]
    #[pyo3(signature = (request_ref, duration_ns, model, attempt_ref=None))]
    fn new(
        py: Python<'_>,
        request_ref: Py<PyAny>,
        duration_ns: Py<PyAny>,
        model: Py<PyAny>,
        attempt_ref: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        // stormlog's own two rules, in its order, through tally-gpu-time's.
        let duration = wide_integer(duration_ns.bind(py));
        let named = model.bind(py).is_truthy()?;
        if duration < 0 {
            return Err(invalid(tally_gpu_time::ShareError::NegativeDuration));
        }
        if !named {
            return Err(invalid(tally_gpu_time::ShareError::MissingModel));
        }
        Ok(Self { request_ref, duration_ns, model, attempt_ref: attempt_ref.unwrap_or_else(|| py.None()) })
    }
}
