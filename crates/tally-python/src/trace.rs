//! `tally.trace`: profiler traces imported into correlation records, as
//! `tally import` imports them (tally-trace).

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use tally_core::InferenceRecord;

use crate::model::record_to_python;

/// The records `tally import` writes for one run's traces (PyTorch
/// profiler JSON, plain or gzip, or Nsight Systems SQLite; several traces
/// are one run, e.g. one per rank), with the GIL released while they are
/// read. `run_id` defaults to one derived from the paths.
#[pyfunction]
#[pyo3(signature = (path, *, run_id=None))]
pub fn import_trace<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyAny>,
    run_id: Option<String>,
) -> PyResult<Bound<'py, PyList>> {
    let paths = crate::paths::one_or_many(path)?;
    for path in &paths {
        crate::paths::open(path)?;
    }
    let events = py.detach(|| -> Result<Vec<InferenceRecord>, PyErr> {
        let inputs = tally_ingest::open_inputs(&paths, Some(tally_trace::InputKind::Trace))
            .map_err(|error| PyOSError::new_err(error.to_string()))?;
        let options =
            tally_ingest::default_import_options(&inputs.iter().collect::<Vec<_>>(), run_id.as_deref())
                .map_err(PyValueError::new_err)?;
        let mut records = Vec::new();
        tally_trace::import_records(inputs, &options, &mut |record| {
            records.push(InferenceRecord::Event(record.into_event()?));
            Ok(())
        })
        .map_err(|error| match error.kind() {
            // An event the model refuses is said as the model says it,
            // without the trace's path, as stormlog raises it.
            tally_trace::TraceErrorKind::Sink(refused) => PyValueError::new_err(refused.to_string()),
            _ => PyValueError::new_err(error.to_string()),
        })?;
        Ok(records)
    })?;
    let list = PyList::empty(py);
    for record in events {
        list.append(record_to_python(py, record)?)?;
    }
    Ok(list)
}
