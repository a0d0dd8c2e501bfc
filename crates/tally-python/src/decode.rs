//! stormlog's in-memory decoding of artifact rows (`CorrelationRecordDecoder`,
//! `expand_inference_records`) over tally-artifact's `RecordDecoder`: rows
//! given as dicts, v4 definitions consumed and references expanded.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;
use tally_artifact::RecordDecoder;
use tally_core::InferenceRecord;

use crate::convert::{dict_to_json, map_to_python};
use crate::model::record_to_python;

/// Consumes v4 definitions before the references that name them, one row
/// at a time (stormlog's `CorrelationRecordDecoder`). Unlike stormlog's,
/// `decode` validates embedded rows too: a row is read by one rule.
#[pyclass(module = "tally.accounting", name = "CorrelationRecordDecoder")]
pub struct CorrelationRecordDecoder {
    decoder: RecordDecoder,
    rows: u64,
}

impl CorrelationRecordDecoder {
    fn decode_row(&mut self, record: &Bound<'_, PyAny>) -> Result<Option<InferenceRecord>, String> {
        let Ok(dict) = record.cast::<PyDict>() else {
            return Err("record must be an object".to_owned());
        };
        let map = dict_to_json(dict).map_err(|error| error.to_string())?;
        let line = serde_json::to_vec(&Value::Object(map)).map_err(|error| error.to_string())?;
        self.rows += 1;
        self.decoder.decode_line(&line, self.rows).map_err(|error| error.reason().to_owned())
    }
}

#[pymethods]
impl CorrelationRecordDecoder {
    #[new]
    fn new() -> Self {
        Self { decoder: RecordDecoder::new("records"), rows: 0 }
    }

    /// The record with its context restored; None for a definition.
    fn decode<'py>(
        &mut self,
        py: Python<'py>,
        record: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        match self.decode_row(record).map_err(PyValueError::new_err)? {
            Some(decoded) => Ok(Some(map_to_python(py, &decoded.to_record())?)),
            None => Ok(None),
        }
    }

    /// The record as a typed event, parsed once; None for a definition.
    fn decode_event<'py>(
        &mut self,
        py: Python<'py>,
        record: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.decode_row(record).map_err(PyValueError::new_err)? {
            Some(decoded) => Ok(Some(record_to_python(py, decoded)?)),
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
    let mut decoder = CorrelationRecordDecoder::new();
    let expanded = PyList::empty(py);
    for (index, record) in records.try_iter()?.enumerate() {
        let record = record?;
        match decoder.decode_row(&record) {
            Ok(Some(decoded)) => expanded.append(map_to_python(py, &decoded.to_record())?)?,
            Ok(None) => {}
            Err(reason) => return Err(PyValueError::new_err(format!("record {}: {reason}", index + 1))),
        }
    }
    Ok(expanded)
}
