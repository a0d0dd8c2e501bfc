//! The fields of each stormlog event class over tally-core's events:
//! which fields a class has (required, optional, holding a reference), and
//! each field's value read from the Rust event, all from tally-core's
//! schema ([`tally_core::schema`]).

use std::sync::{Arc, LazyLock};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyList, PyString};
use tally_core::schema::{class_name, members, value_of};
use tally_core::{CorrelationEvent as CoreEvent, EventType, RecordMember};

use crate::model::{PyContext, PyEntityRef};

/// One member's value as the Python object stormlog's class holds.
pub(crate) fn to_python<'py>(py: Python<'py>, member: RecordMember<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match member {
        RecordMember::Null => py.None().into_bound(py),
        RecordMember::Bool(flag) => PyBool::new(py, flag).to_owned().into_any(),
        RecordMember::Unsigned(count) => count.into_pyobject(py)?.into_any(),
        RecordMember::Signed(value) => value.into_pyobject(py)?.into_any(),
        RecordMember::Text(text) => PyString::new(py, text).into_any(),
        RecordMember::Ref(reference) => PyEntityRef::wrap(py, reference)?,
        RecordMember::Context(context) => {
            Bound::new(py, PyContext { inner: Arc::clone(context) })?.into_any()
        }
        RecordMember::Names(names) => PyList::new(py, names.iter().map(|name| name.as_str()))?.into_any(),
        RecordMember::Metadata(map) => crate::convert::map_to_python(py, map)?.into_any(),
    })
}

/// The event-specific field `name` of `event`, as stormlog names it.
pub(crate) fn field<'a>(event: &'a CoreEvent, name: &str) -> Option<RecordMember<'a>> {
    value_of(event.body(), name)
}

/// The stormlog fields of each event type after the common three (context,
/// event_id, metadata), in declaration order, and which are required.
pub(crate) struct EventFields {
    pub(crate) class: &'static str,
    pub(crate) required: Vec<&'static str>,
    pub(crate) optional: Vec<&'static str>,
    /// The fields holding an `EntityRef`.
    pub(crate) references: Vec<&'static str>,
}

/// Each event type's fields, by its position in [`EventType::ALL`].
static EVENT_FIELDS: LazyLock<Vec<EventFields>> = LazyLock::new(|| {
    EventType::ALL
        .iter()
        .map(|&event_type| {
            let own = members(event_type);
            let names = |keep: &dyn Fn(&tally_core::schema::Member) -> bool| {
                own.iter().filter(|member| keep(member)).map(|member| member.name).collect()
            };
            EventFields {
                class: class_name(event_type),
                required: names(&|member| !member.optional()),
                optional: names(&|member| member.optional()),
                references: names(&|member| {
                    matches!(
                        member.kind,
                        tally_core::schema::MemberKind::Ref | tally_core::schema::MemberKind::OptionalRef
                    )
                }),
            }
        })
        .collect()
});

/// The fields of `event_type`'s class.
pub(crate) fn fields_of(event_type: EventType) -> &'static EventFields {
    &EVENT_FIELDS[event_type as usize]
}
