//! stormlog's in-memory decoding of artifact rows (`CorrelationRecordDecoder`,
//! `expand_inference_records`) over tally-artifact's `RecordDecoder`: rows
//! given as dicts, v4 definitions consumed and references expanded.

use std::collections::HashSet;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;

use crate::codec::ContextRegistry;
use crate::convert::dict_to_json;
use crate::model::record_to_python;
use crate::records::{Decoded, Expander};

/// Consumes v4 definitions before the references that name them, one row
/// at a time (stormlog's `CorrelationRecordDecoder`). `decode` gives the
/// row's own dict, its context restored; unlike stormlog's, it validates
/// embedded rows too: a row is read by one rule.
///
/// `registry` holds the contexts defined so far, as stormlog's does; a
/// context registered there by the caller is known to the rows after.
#[pyclass(module = "tally.accounting", name = "CorrelationRecordDecoder")]
pub struct CorrelationRecordDecoder {
    expander: Expander,
    rows: u64,
    registry: Py<ContextRegistry>,
    /// The IDs whose definitions the expander has read.
    known: HashSet<String>,
}

impl CorrelationRecordDecoder {
    fn fresh(py: Python<'_>) -> PyResult<Self> {
        Ok(Self {
            expander: Expander::new("records"),
            rows: 0,
            registry: Py::new(py, ContextRegistry::new(py))?,
            known: HashSet::new(),
        })
    }

    /// Decodes one row; `Ok(Err(reason))` is a row that breaks a rule.
    fn decode_row<'py>(&mut self, record: &Bound<'py, PyAny>) -> PyResult<Result<Decoded<'py>, String>> {
        let py = record.py();
        let Ok(dict) = record.cast::<PyDict>() else {
            return Ok(Err("record must be an object".to_owned()));
        };
        let identity = match dict.get_item("context_id")? {
            Some(identity) => identity.extract::<String>().ok(),
            None => None,
        };
        let definition =
            dict.get_item("event_type")?.is_some_and(|kind| kind.eq("infer.context").unwrap_or(false));
        self.rows += 1;
        if let Some(identity) = &identity
            && !definition
            && !self.known.contains(identity)
            && let Ok(context) = self.registry.bind(py).get().lookup(&PyString::new(py, identity))
        {
            self.expander.define(identity, &context, self.rows)?;
            self.known.insert(identity.clone());
        }
        let text = match dict_to_json(dict).and_then(|map| {
            serde_json::to_vec(&Value::Object(map)).map_err(|error| PyValueError::new_err(error.to_string()))
        }) {
            Ok(text) => text,
            Err(error) => return Ok(Err(error.value(py).to_string())),
        };
        let decoded = self.expander.expand(dict.copy()?, &text, self.rows)?;
        if let (Ok(None), Some(identity), true) = (&decoded, identity, definition) {
            // The registry holds each definition too, as stormlog's does:
            // the context object the expander made of it.
            if let Some(context) = self.expander.context(py, &identity) {
                self.registry.bind(py).get().register(&PyString::new(py, &identity), &context)?;
            }
            self.known.insert(identity);
        }
        Ok(decoded)
    }
}

#[pymethods]
impl CorrelationRecordDecoder {
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        Self::fresh(py)
    }

    /// The contexts defined so far, by `context_id`.
    #[getter]
    fn registry(&self, py: Python<'_>) -> Py<ContextRegistry> {
        self.registry.clone_ref(py)
    }

    /// The record with its context restored; None for a definition.
    fn decode<'py>(&mut self, record: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
        Ok(self.decode_row(record)?.map_err(PyValueError::new_err)?.map(|(_, row)| row))
    }

    /// The record as a typed event, parsed once; None for a definition.
    fn decode_event<'py>(&mut self, record: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = record.py();
        match self.decode_row(record)?.map_err(PyValueError::new_err)? {
            Some((decoded, _)) => Ok(Some(record_to_python(py, decoded)?)),
            None => Ok(None),
        }
    }
}

/// The rows of an artifact held in memory as dicts, definitions consumed
/// and references expanded; a bad row is `ValueError("record N: reason")`.
#[pyfunction]
pub fn expand_inference_records<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let mut decoder = CorrelationRecordDecoder::fresh(py)?;
    let expanded = PyList::empty(py);
    for (index, record) in records.try_iter()?.enumerate() {
        let record = record?;
        match decoder.decode_row(&record)? {
            Ok(Some((_, row))) => expanded.append(row)?,
            Ok(None) => {}
            Err(reason) => return Err(PyValueError::new_err(format!("record {}: {reason}", index + 1))),
        }
    }
    Ok(expanded)
}
