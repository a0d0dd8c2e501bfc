//! stormlog's `correlation_codec` over tally-artifact: reading artifacts
//! (plain or gzip, schema 1 to 4) into records, writing them in embedded or
//! compact form, and the errors stormlog raises for a bad line.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use tally_artifact::{ArtifactEncoder, ArtifactError, ArtifactReader, ErrorKind, Form, Sniffed};
use tally_core::InferenceRecord;

use crate::convert::{map_to_python, to_python};
use crate::model::{Evidence, evidence, record_to_python};

/// An artifact error as stormlog raises it: `ValueError("line N: reason")`
/// for a line that breaks a rule, `OSError` when the file cannot be read.
pub fn artifact_error(error: &ArtifactError) -> PyErr {
    match (error.kind(), error.line()) {
        (ErrorKind::Io, _) | (_, None) => PyOSError::new_err(error.to_string()),
        (_, Some(line)) => PyValueError::new_err(format!("line {line}: {}", error.reason())),
    }
}

/// A run that could not be read or resolved, as `tally account` words it.
pub fn run_error(error: tally_ingest::RunError) -> PyErr {
    match error {
        tally_ingest::RunError::Artifact(error) => match error.kind() {
            ErrorKind::Io => PyOSError::new_err(error.to_string()),
            _ => PyValueError::new_err(error.to_string()),
        },
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Opens a path as Python would (so a missing file is `FileNotFoundError`).
fn open(path: &PathBuf) -> PyResult<File> {
    File::open(path).map_err(PyErr::from)
}

type Reader = ArtifactReader<BufReader<Sniffed<File>>>;

fn reader(path: &PathBuf) -> PyResult<Reader> {
    let file = open(path)?;
    let sniffed = tally_artifact::decompressed(file).map_err(PyErr::from)?;
    Ok(ArtifactReader::new(BufReader::with_capacity(1 << 16, sniffed), path.display().to_string()))
}

/// Streams an artifact into a new list: batches are decoded in parallel
/// with the GIL released, `prepare` runs on the decoding threads (so what
/// can be built without Python is built there), and `make` turns each
/// prepared item into its Python object with the GIL held while the next
/// batch decodes.
fn stream_list<'py, T: Send>(
    py: Python<'py>,
    path: &PathBuf,
    prepare: impl Fn(InferenceRecord) -> T + Sync,
    make: impl Fn(Python<'_>, T) -> PyResult<Bound<'_, PyAny>> + Sync,
) -> PyResult<Bound<'py, PyList>> {
    let file = open(path)?;
    let name = path.display().to_string();
    let list = PyList::empty(py).unbind();
    let _pause = crate::gc::Pause::new(py)?;
    let mut failed: Option<PyErr> = None;
    let outcome = py.detach(|| {
        tally_artifact::read_mapped(
            file,
            &name,
            &tally_artifact::ReadOptions::default(),
            |batch| batch.records.into_iter().map(&prepare).collect::<Vec<T>>(),
            |items| {
                Python::attach(|py| {
                    let list = list.bind(py);
                    for item in items {
                        if let Err(error) = make(py, item).and_then(|object| list.append(object)) {
                            failed = Some(error);
                            // Stops the read; `failed` is what is raised.
                            return Err(ArtifactError::whole(&name, ErrorKind::Io, "stopped"));
                        }
                    }
                    Ok(())
                })
            },
        )
    });
    if let Some(error) = failed {
        return Err(error);
    }
    outcome.map_err(|error| artifact_error(&error))?;
    Ok(list.into_bound(py))
}

/// A record made ready on a decoding thread: an event in its shared box.
enum Prepared {
    Event(Arc<tally_core::CorrelationEvent>),
    Legacy(Box<InferenceRecord>),
}

/// Read mixed legacy and correlation records in their original order.
#[pyfunction]
pub fn load_inference_artifact<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyList>> {
    stream_list(
        py,
        &path,
        |record| match record {
            InferenceRecord::Event(event) => Prepared::Event(Arc::new(event)),
            legacy => Prepared::Legacy(Box::new(legacy)),
        },
        |py, prepared| match prepared {
            Prepared::Event(event) => crate::model::event_to_python(py, event),
            Prepared::Legacy(record) => record_to_python(py, *record),
        },
    )
}

/// Expanded record dicts (contexts restored, definitions consumed).
#[pyfunction]
pub fn read_inference_records<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyList>> {
    stream_list(py, &path, |record| record.to_record(), |py, map| Ok(map_to_python(py, &map)?.into_any()))
}

/// What an iterator over an artifact yields.
#[derive(Clone, Copy)]
enum Yield {
    Events,
    Records,
}

/// `(line_number, record)` pairs of an artifact, read as they are asked for.
#[pyclass(module = "tally.accounting", name = "InferenceRecordIterator")]
pub struct RecordIterator {
    reader: Option<Reader>,
    yields: Yield,
}

#[pymethods]
impl RecordIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<(u64, Bound<'py, PyAny>)>> {
        let Some(reader) = self.reader.as_mut() else {
            return Ok(None);
        };
        match reader.next() {
            None => {
                self.reader = None;
                Ok(None)
            }
            Some(Err(error)) => {
                self.reader = None;
                Err(artifact_error(&error))
            }
            Some(Ok((line, record))) => {
                let value = match self.yields {
                    Yield::Events => record_to_python(py, record)?,
                    Yield::Records => map_to_python(py, &record.to_record())?.into_any(),
                };
                Ok(Some((line, value)))
            }
        }
    }
}

fn no_decoder(decoder: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match decoder {
        Some(decoder) if !decoder.is_none() => {
            Err(PyTypeError::new_err("tally reads each artifact with its own decoder; pass decoder=None"))
        }
        _ => Ok(()),
    }
}

/// Typed events, each parsed once, with physical line numbers.
#[pyfunction]
#[pyo3(signature = (path, decoder=None))]
pub fn iter_inference_events(path: PathBuf, decoder: Option<&Bound<'_, PyAny>>) -> PyResult<RecordIterator> {
    no_decoder(decoder)?;
    Ok(RecordIterator { reader: Some(reader(&path)?), yields: Yield::Events })
}

/// Expanded record dicts, definitions consumed, with physical line numbers.
#[pyfunction]
#[pyo3(signature = (path, decoder=None))]
pub fn iter_inference_records(path: PathBuf, decoder: Option<&Bound<'_, PyAny>>) -> PyResult<RecordIterator> {
    no_decoder(decoder)?;
    Ok(RecordIterator { reader: Some(reader(&path)?), yields: Yield::Records })
}

/// The records of Python objects: tally's, dicts, or objects with
/// `to_record()`; anything else is an error (a writer must not drop data).
fn records_of(records: &Bound<'_, PyAny>) -> PyResult<Vec<InferenceRecord>> {
    let mut out = Vec::new();
    for item in records.try_iter()? {
        let item = item?;
        match evidence(&item)? {
            Evidence::Event(event) => out.push(InferenceRecord::Event(Arc::unwrap_or_clone(event))),
            Evidence::Legacy(raw) => {
                let record = tally_core::parse_inference_record(serde_json::Value::Object(raw))
                    .map_err(crate::model::invalid)?;
                out.push(record);
            }
            Evidence::Other => {
                return Err(PyTypeError::new_err(format!(
                    "record must be an event, a dict or have to_record(), not {}",
                    item.get_type().name()?
                )));
            }
        }
    }
    Ok(out)
}

fn form(compact: bool) -> Form {
    if compact { Form::Compact } else { Form::Embedded }
}

/// Writes records to `path` as stormlog writes them (`json.dumps(row,
/// sort_keys=True)` per line), compact (v4, contexts interned) by default
/// or embedded (v2/v3), through a temporary file renamed into place.
#[pyfunction]
#[pyo3(signature = (path, records, *, compact=true))]
pub fn write_inference_artifact(
    py: Python<'_>,
    path: PathBuf,
    records: &Bound<'_, PyAny>,
    compact: bool,
) -> PyResult<()> {
    let records = records_of(records)?;
    py.detach(|| tally_artifact::write_artifact(&path, &records, form(compact))).map_err(|error| match error
        .kind()
    {
        ErrorKind::Io => PyOSError::new_err(error.to_string()),
        _ => PyValueError::new_err(error.reason().to_owned()),
    })
}

/// Turns embedded records into the rows of an artifact: in compact form a
/// context's `infer.context` definition comes before its first event
/// (stormlog's `CorrelationRecordEncoder`).
#[pyclass(module = "tally.accounting", name = "CorrelationRecordEncoder")]
pub struct CorrelationRecordEncoder {
    encoder: ArtifactEncoder,
}

#[pymethods]
impl CorrelationRecordEncoder {
    #[new]
    #[pyo3(signature = (*, compact=true))]
    fn new(compact: bool) -> Self {
        Self { encoder: ArtifactEncoder::new(form(compact)) }
    }

    /// The rows of one record, as dicts: its context's definition first
    /// when it is new.
    fn encode<'py>(&mut self, py: Python<'py>, record: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let out = self.lines(record)?;
        let rows = PyList::empty(py);
        for line in out.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()) {
            let value: serde_json::Value =
                serde_json::from_slice(line).map_err(|error| PyValueError::new_err(error.to_string()))?;
            rows.append(to_python(py, &value)?)?;
        }
        Ok(rows)
    }

    /// The lines of one record as text, each ending in a newline.
    fn encode_lines(&mut self, record: &Bound<'_, PyAny>) -> PyResult<String> {
        String::from_utf8(self.lines(record)?).map_err(|error| PyValueError::new_err(error.to_string()))
    }
}

impl CorrelationRecordEncoder {
    /// The artifact lines of one record given as any accepted object.
    fn lines(&mut self, record: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        let list = PyList::new(record.py(), [record])?;
        let mut out = Vec::new();
        for record in &records_of(list.as_any())? {
            self.encoder
                .encode(record, &mut out)
                .map_err(|error| PyValueError::new_err(error.to_string()))?;
        }
        Ok(out)
    }
}
