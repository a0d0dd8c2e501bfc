//! stormlog's `correlation_codec` over tally-artifact: reading artifacts
//! (plain or gzip, schema 1 to 4) into records, writing them in embedded or
//! compact form, and the errors stormlog raises for a bad line.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use tally_artifact::{ArtifactError, ArtifactReader, ErrorKind, Form, Sniffed};
use tally_core::InferenceRecord;

use crate::convert::map_to_python;
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

type Reader = ArtifactReader<BufReader<Sniffed<File>>>;

fn reader(path: &Path) -> PyResult<Reader> {
    let file = crate::paths::open(path)?;
    let sniffed = tally_artifact::decompressed(file).map_err(|error| crate::paths::os_error(&error, path))?;
    Ok(ArtifactReader::new(BufReader::with_capacity(1 << 16, sniffed), path.display().to_string())
        .with_max_record_bytes(crate::paths::MAX_RECORD_BYTES))
}

/// Streams an artifact into a new list: batches are decoded in parallel
/// with the GIL released, `prepare` runs on the decoding threads (so what
/// can be built without Python is built there), and `make` turns each
/// prepared item into its Python object with the GIL held while the next
/// batch decodes.
fn stream_list<'py, T: Send>(
    py: Python<'py>,
    path: &Path,
    prepare: impl Fn(InferenceRecord) -> T + Sync,
    make: impl Fn(Python<'_>, T) -> PyResult<Bound<'_, PyAny>> + Sync,
) -> PyResult<Bound<'py, PyList>> {
    let file = crate::paths::open(path)?;
    let name = path.display().to_string();
    let list = PyList::empty(py).unbind();
    let _pause = crate::gc::Pause::new(py)?;
    let mut failed: Option<PyErr> = None;
    let outcome = py.detach(|| {
        tally_artifact::read_mapped(
            file,
            &name,
            &tally_artifact::ReadOptions {
                max_record_bytes: crate::paths::MAX_RECORD_BYTES,
                ..tally_artifact::ReadOptions::default()
            },
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

/// Expanded record dicts (contexts restored, definitions consumed): each
/// line's own dict, as stormlog's reader gives it.
#[pyfunction]
pub fn read_inference_records<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyList>> {
    let mut lines = crate::records::LineDicts::open(py, &path)?;
    let list = PyList::empty(py);
    while let Some((_, _, row)) = lines.next(py)? {
        list.append(row)?;
    }
    Ok(list)
}

/// What an iterator over an artifact yields.
#[derive(Clone, Copy)]
enum Yield {
    Events,
    Records,
}

/// Where an iterator's records come from.
enum Source {
    /// tally's reader (plain or gzip), each artifact with its own decoder.
    Native(Box<Reader>),
    /// Each line's own dict, context restored, read plain or gzip.
    Lines(Box<crate::records::LineDicts>),
    /// The lines of a file, each given to a caller's decoder as stormlog
    /// gives them: `json.loads`, then `decode` or `decode_event`.
    Decoder { lines: std::io::Lines<BufReader<File>>, loads: Py<PyAny>, decoder: Py<PyAny>, line: u64 },
}

/// `(line_number, record)` pairs of an artifact, read as they are asked for.
#[pyclass(module = "tally.accounting", name = "InferenceRecordIterator")]
pub struct RecordIterator {
    source: Option<Source>,
    yields: Yield,
}

impl RecordIterator {
    fn open(
        py: Python<'_>,
        path: &Path,
        decoder: Option<&Bound<'_, PyAny>>,
        yields: Yield,
    ) -> PyResult<Self> {
        let source = match decoder {
            Some(decoder) if !decoder.is_none() => {
                use std::io::BufRead as _;
                let lines = BufReader::new(crate::paths::open(path)?).lines();
                let loads = crate::records::json_loads(py)?;
                Source::Decoder { lines, loads, decoder: decoder.clone().unbind(), line: 0 }
            }
            _ => match yields {
                Yield::Events => Source::Native(Box::new(reader(path)?)),
                Yield::Records => Source::Lines(Box::new(crate::records::LineDicts::open(py, path)?)),
            },
        };
        Ok(Self { source: Some(source), yields })
    }

    /// The next line's value through the caller's decoder; a line that
    /// fails is `ValueError("line N: reason")`, as stormlog words it.
    fn next_decoded<'py>(
        py: Python<'py>,
        lines: &mut std::io::Lines<BufReader<File>>,
        loads: &Py<PyAny>,
        decoder: &Py<PyAny>,
        line: &mut u64,
        yields: Yield,
    ) -> PyResult<Option<(u64, Bound<'py, PyAny>)>> {
        let method = match yields {
            Yield::Events => "decode_event",
            Yield::Records => "decode",
        };
        let loads = loads.bind(py);
        for text in lines.by_ref() {
            *line += 1;
            let text = text.map_err(|error| PyValueError::new_err(format!("line {line}: {error}")))?;
            if text.trim().is_empty() {
                continue;
            }
            let decoded =
                loads.call1((text,)).and_then(|value| decoder.bind(py).call_method1(method, (value,)));
            match decoded {
                Ok(value) if value.is_none() => continue,
                Ok(value) => return Ok(Some((*line, value))),
                Err(error)
                    if error.is_instance_of::<PyTypeError>(py)
                        || error.is_instance_of::<PyValueError>(py) =>
                {
                    let wrapped = PyValueError::new_err(format!("line {line}: {}", error.value(py)));
                    wrapped.set_cause(py, Some(error));
                    return Err(wrapped);
                }
                Err(error) => return Err(error),
            }
        }
        Ok(None)
    }
}

#[pymethods]
impl RecordIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<(u64, Bound<'py, PyAny>)>> {
        let yields = self.yields;
        let next = match self.source.as_mut() {
            None => return Ok(None),
            Some(Source::Decoder { lines, loads, decoder, line }) => {
                Self::next_decoded(py, lines, loads, decoder, line, yields)
            }
            Some(Source::Lines(lines)) => {
                lines.next(py).map(|next| next.map(|(line, _, row)| (line, row.into_any())))
            }
            Some(Source::Native(reader)) => match reader.next() {
                None => Ok(None),
                Some(Err(error)) => Err(artifact_error(&error)),
                Some(Ok((line, record))) => {
                    let value = match yields {
                        Yield::Events => record_to_python(py, record)?,
                        Yield::Records => map_to_python(py, &record.to_record())?.into_any(),
                    };
                    Ok(Some((line, value)))
                }
            },
        };
        if !matches!(next, Ok(Some(_))) {
            self.source = None;
        }
        next
    }
}

/// Typed events, each parsed once, with physical line numbers. With a
/// `decoder`, each line goes through it (so definitions it has read
/// before are known); without, the artifact is read plain or gzip.
#[pyfunction]
#[pyo3(signature = (path, decoder=None))]
pub fn iter_inference_events(
    py: Python<'_>,
    path: PathBuf,
    decoder: Option<&Bound<'_, PyAny>>,
) -> PyResult<RecordIterator> {
    RecordIterator::open(py, &path, decoder, Yield::Events)
}

/// Expanded record dicts, definitions consumed, with physical line
/// numbers; a `decoder` is used as `iter_inference_events` uses it.
#[pyfunction]
#[pyo3(signature = (path, decoder=None))]
pub fn iter_inference_records(
    py: Python<'_>,
    path: PathBuf,
    decoder: Option<&Bound<'_, PyAny>>,
) -> PyResult<RecordIterator> {
    RecordIterator::open(py, &path, decoder, Yield::Records)
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
    crate::paths::check_writable(&path)?;
    py.detach(|| tally_artifact::write_artifact(&path, &records, form(compact))).map_err(|error| match error
        .kind()
    {
        ErrorKind::Io => PyOSError::new_err(error.to_string()),
        _ => PyValueError::new_err(error.reason().to_owned()),
    })
}

/// `context_id` as stormlog checks it: a non-empty string.
fn context_identity(value: &Bound<'_, PyAny>) -> PyResult<String> {
    match value.cast::<PyString>() {
        Ok(text) if !text.to_str()?.is_empty() => Ok(text.to_str()?.to_owned()),
        _ => Err(PyValueError::new_err("context_id must be a non-empty string")),
    }
}

/// A definition row's `context` as stormlog reads it: an object whose
/// members are `CorrelationContext`'s keyword arguments.
pub fn context_of<'py>(payload: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = payload.py();
    let Ok(members) = payload.cast::<PyDict>() else {
        return Err(PyValueError::new_err("context must be an object"));
    };
    py.get_type::<crate::model::PyContext>().call((), Some(members))
}

fn conflicting(identity: &str) -> PyErr {
    PyValueError::new_err(format!("conflicting context definition: {identity}"))
}

/// Validated immutable contexts, with the first ID retained for aliases
/// (stormlog's `ContextRegistry`): the contexts a decoder has read and an
/// encoder has written, by `context_id`.
#[pyclass(frozen, module = "tally.accounting", name = "ContextRegistry")]
pub struct ContextRegistry {
    /// `{context_id: context}`.
    contexts: Py<PyDict>,
    /// `{context: first context_id}`.
    ids: Py<PyDict>,
}

impl ContextRegistry {
    fn empty(py: Python<'_>) -> Self {
        Self { contexts: PyDict::new(py).unbind(), ids: PyDict::new(py).unbind() }
    }
}

#[pymethods]
impl ContextRegistry {
    #[new]
    pub fn new(py: Python<'_>) -> Self {
        Self::empty(py)
    }

    /// Records `context` under `identity`; an ID already naming another
    /// context is a `ValueError`.
    pub fn register(&self, identity: &Bound<'_, PyAny>, context: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = identity.py();
        context_identity(identity)?;
        let contexts = self.contexts.bind(py);
        if let Some(previous) = contexts.get_item(identity)?
            && !previous.eq(context)?
        {
            return Err(conflicting(&identity.str()?.to_string()));
        }
        contexts.set_item(identity, context)?;
        let ids = self.ids.bind(py);
        if !ids.contains(context)? {
            ids.set_item(context, identity)?;
        }
        Ok(())
    }

    /// The context registered under `identity`.
    pub fn lookup<'py>(&self, identity: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        match self.contexts.bind(identity.py()).get_item(identity) {
            Ok(Some(context)) => Ok(context),
            _ => Err(PyValueError::new_err(format!("unknown context_id: {}", identity.str()?))),
        }
    }

    /// The first ID `context` was registered under, or None.
    fn identity<'py>(&self, context: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = context.py();
        Ok(self.ids.bind(py).get_item(context)?.unwrap_or_else(|| py.None().into_bound(py)))
    }

    /// Raises what `register` would for a conflicting definition, and
    /// registers nothing.
    fn check(&self, identity: &Bound<'_, PyAny>, context: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Some(previous) = self.contexts.bind(identity.py()).get_item(identity)?
            && !previous.eq(context)?
        {
            return Err(conflicting(&identity.str()?.to_string()));
        }
        Ok(())
    }

    /// An independent registry with the same entries.
    fn copy(&self, py: Python<'_>) -> PyResult<Self> {
        Ok(Self {
            contexts: self.contexts.bind(py).copy()?.unbind(),
            ids: self.ids.bind(py).copy()?.unbind(),
        })
    }
}

/// `record.get(key) == value`, with Python's equality (so `4.0 == 4`).
fn member_is(
    record: &Bound<'_, PyDict>,
    key: &str,
    value: impl for<'py> IntoPyObject<'py>,
) -> PyResult<bool> {
    match record.get_item(key)? {
        Some(member) => member.eq(value),
        None => Ok(false),
    }
}

/// A row of the v4 transport (a definition, or a reference by ID).
fn is_transport(record: &Bound<'_, PyDict>) -> PyResult<bool> {
    Ok(member_is(record, "event_type", "infer.context")?
        || record.contains("context_id")?
        || member_is(record, "schema_version", tally_core::CONTEXT_REFERENCE_SCHEMA_VERSION)?)
}

/// A known correlation type past v1; everything else is written as given.
fn carries_context(record: &Bound<'_, PyDict>) -> PyResult<bool> {
    let legacy = match record.get_item("schema_version")? {
        None => true,
        Some(version) => {
            version.cast::<pyo3::types::PyInt>().is_ok()
                && version.cast::<pyo3::types::PyBool>().is_err()
                && version.eq(1)?
        }
    };
    let typed = match record.get_item("event_type")? {
        Some(event_type) => crate::model::is_correlation_event_type(&event_type),
        None => false,
    };
    Ok(typed && !legacy)
}

/// Turns embedded records into the rows of an artifact: a context's
/// `infer.context` definition comes before its first event, and events
/// refer to it by `context_id` (stormlog's `CorrelationRecordEncoder`).
/// `prepare` stages a record's rows without registering anything;
/// `commit` registers the definitions once the rows are written.
#[pyclass(module = "tally.accounting", name = "CorrelationRecordEncoder")]
pub struct CorrelationRecordEncoder {
    registry: Py<ContextRegistry>,
    compact: bool,
}

#[pymethods]
impl CorrelationRecordEncoder {
    /// `registry` is copied, as stormlog copies it. `compact=False`
    /// (tally's addition) writes every record embedded, as given.
    #[new]
    #[pyo3(signature = (registry=None, *, compact=true))]
    fn new(py: Python<'_>, registry: Option<&Bound<'_, ContextRegistry>>, compact: bool) -> PyResult<Self> {
        let registry = match registry {
            Some(registry) => registry.get().copy(py)?,
            None => ContextRegistry::empty(py),
        };
        Ok(Self { registry: Py::new(py, registry)?, compact })
    }

    /// The contexts committed so far.
    #[getter]
    fn registry(&self, py: Python<'_>) -> Py<ContextRegistry> {
        self.registry.clone_ref(py)
    }

    /// The rows of one record, its context's definition first when the
    /// registry does not know the context; registers nothing.
    fn prepare<'py>(&self, record: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let py = record.py();
        let given = py.get_type::<PyDict>().call1((record,))?.cast_into::<PyDict>()?;
        if is_transport(&given)? {
            return Err(PyValueError::new_err("writer accepts embedded semantic records only"));
        }
        if !self.compact || !carries_context(&given)? {
            return PyList::new(py, [given]);
        }
        let event = crate::model::parse_inference_record(given.as_any())?;
        let Ok(event) = event.cast::<crate::model::PyEvent>() else {
            return PyList::new(py, [given]);
        };
        if tally_artifact::stays_embedded(&event.get().inner) {
            return PyList::new(py, [given]);
        }
        let context = event.getattr("context")?;
        let registry = self.registry.bind(py).get();
        let rows = PyList::empty(py);
        let mut identity = registry.identity(&context)?;
        if identity.is_none() {
            let inner = crate::model::PyContext::extract(&context)?;
            identity = PyString::new(py, &tally_artifact::context_id(&inner)).into_any();
            registry.check(&identity, &context)?;
            let definition = PyDict::new(py);
            definition.set_item("schema_version", tally_core::CONTEXT_REFERENCE_SCHEMA_VERSION)?;
            definition.set_item("event_type", "infer.context")?;
            definition.set_item("context_id", &identity)?;
            definition
                .set_item("context", py.import("dataclasses")?.getattr("asdict")?.call1((&context,))?)?;
            rows.append(definition)?;
        }
        let compact = given;
        compact.del_item("context")?;
        compact.set_item("schema_version", tally_core::CONTEXT_REFERENCE_SCHEMA_VERSION)?;
        compact.set_item("context_id", identity)?;
        rows.append(compact)?;
        Ok(rows)
    }

    /// Registers the definitions among `rows` (after they were written).
    fn commit(&self, rows: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = rows.py();
        let registry = self.registry.bind(py).get();
        for row in rows.try_iter()? {
            let row = row?;
            if row.call_method1("get", ("event_type",))?.eq("infer.context")? {
                let identity = row.get_item("context_id")?;
                context_identity(&identity)?;
                registry.register(&identity, &context_of(&row.get_item("context")?)?)?;
            }
        }
        Ok(())
    }

    /// `prepare` and `commit` at once, for rows used in memory.
    fn encode<'py>(&self, record: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let rows = self.prepare(record)?;
        self.commit(rows.as_any())?;
        Ok(rows)
    }
}
