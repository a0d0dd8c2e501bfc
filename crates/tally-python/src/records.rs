//! Record dicts as stormlog hands them out: each line's own dict (its keys,
//! in its order, sparse where the line is), with a v4 reference's context
//! restored as stormlog restores it. tally-artifact's decoder still reads
//! every line by tally's rules; the dict is Python's `json.loads` of the
//! same line, so what a caller sees is what stormlog's reader gives.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use tally_artifact::{RecordDecoder, Sniffed};
use tally_core::InferenceRecord;

/// One decoded row: the record, and the row's dict as stormlog gives it;
/// None for a definition.
pub type Decoded<'py> = Option<(InferenceRecord, Bound<'py, PyDict>)>;

/// The rows of one artifact, decoded and expanded.
pub struct Expander {
    decoder: RecordDecoder,
    /// Each defined context and its `asdict`, by `context_id`.
    contexts: HashMap<String, (Py<PyAny>, Py<PyDict>)>,
}

impl Expander {
    /// An expander whose errors name `source_name`.
    pub fn new(source_name: impl Into<String>) -> Self {
        Self { decoder: RecordDecoder::new(source_name), contexts: HashMap::new() }
    }

    /// Keeps a defined context and its `asdict`, the dict each reference's
    /// row is given a copy of.
    fn keep(&mut self, identity: String, context: Bound<'_, PyAny>) -> PyResult<()> {
        let fields = context.py().import("dataclasses")?.getattr("asdict")?.call1((&context,))?;
        self.contexts.insert(identity, (context.unbind(), fields.cast_into::<PyDict>()?.unbind()));
        Ok(())
    }

    /// The context defined under `identity`, by a row or [`Expander::define`].
    pub fn context<'py>(&self, py: Python<'py>, identity: &str) -> Option<Bound<'py, PyAny>> {
        self.contexts.get(identity).map(|(context, _)| context.bind(py).clone())
    }

    /// Gives the decoder the definition of `context` under `identity`, as
    /// if a row had defined it (a context the caller registered by hand).
    pub fn define(&mut self, identity: &str, context: &Bound<'_, PyAny>, line: u64) -> PyResult<()> {
        let inner = crate::model::PyContext::extract(context)?;
        let definition = serde_json::json!({
            "schema_version": tally_core::CONTEXT_REFERENCE_SCHEMA_VERSION,
            "event_type": "infer.context",
            "context_id": identity,
            "context": inner.to_json(),
        });
        let text =
            serde_json::to_vec(&definition).map_err(|error| PyValueError::new_err(error.to_string()))?;
        self.decoder
            .decode_line(&text, line)
            .map_err(|error| PyValueError::new_err(error.reason().to_owned()))?;
        self.keep(identity.to_owned(), context.clone())
    }

    /// Reads one row: `Ok(None)` for a definition, else the decoded record
    /// and the row's dict with its context restored. `row` is the line's
    /// own dict (it is changed in place); `text` its JSON.
    pub fn expand<'py>(
        &mut self,
        row: Bound<'py, PyDict>,
        text: &[u8],
        line: u64,
    ) -> PyResult<Result<Decoded<'py>, String>> {
        let py = row.py();
        let record = match self.decoder.decode_line(text, line) {
            Ok(record) => record,
            Err(error) => return Ok(Err(error.reason().to_owned())),
        };
        let identity = match row.get_item("context_id")? {
            Some(identity) => Some(identity.extract::<String>()?),
            None => None,
        };
        let Some(record) = record else {
            // A definition: the decoder accepted it, so it has both members.
            if let (Some(identity), Some(context)) = (identity, row.get_item("context")?) {
                self.keep(identity, crate::codec::context_of(&context)?)?;
            }
            return Ok(Ok(None));
        };
        if let Some(identity) = identity {
            // The decoder accepted the reference, so a row or `define`
            // defined its context first.
            let Some((_, fields)) = self.contexts.get(&identity) else {
                return Ok(Err(format!("unknown context_id: {identity}")));
            };
            row.del_item("context_id")?;
            row.set_item("context", fields.bind(py).copy()?)?;
            // The embedded version is the event's own: 3 for an activity
            // whose metadata names `intervals`, else 2 (stormlog's
            // `_embedded_version`). A row naming a context is an event.
            if let InferenceRecord::Event(event) = &record {
                row.set_item("schema_version", event.schema_version())?;
            }
        }
        Ok(Ok(Some((record, row))))
    }
}

/// The lines of an artifact file (plain or gzip) as `(line, record, dict)`.
pub struct LineDicts {
    lines: BufReader<Sniffed<File>>,
    /// Python's `json.loads`.
    loads: Py<PyAny>,
    expander: Expander,
    line: u64,
    buffer: Vec<u8>,
}

impl LineDicts {
    /// Opens `path` as Python's `open` would.
    pub fn open(py: Python<'_>, path: &Path) -> PyResult<Self> {
        let file = crate::paths::open(path)?;
        let sniffed =
            tally_artifact::decompressed(file).map_err(|error| crate::paths::os_error(&error, path))?;
        Ok(Self {
            lines: BufReader::with_capacity(1 << 16, sniffed),
            loads: json_loads(py)?,
            expander: Expander::new(path.display().to_string()),
            line: 0,
            buffer: Vec::new(),
        })
    }

    /// The next record and its dict; a line that breaks a rule is
    /// `ValueError("line N: reason")`, as stormlog words it (a line that is
    /// not JSON with Python's own `json` message).
    pub fn next<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<Option<(u64, InferenceRecord, Bound<'py, PyDict>)>> {
        loop {
            self.buffer.clear();
            let read = self.lines.read_until(b'\n', &mut self.buffer).map_err(PyErr::from)?;
            if read == 0 {
                return Ok(None);
            }
            self.line += 1;
            let line = self.line;
            if self.buffer.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let fail = |reason: String| PyValueError::new_err(format!("line {line}: {reason}"));
            let Ok(text) = std::str::from_utf8(&self.buffer) else {
                return Err(fail("not UTF-8".to_owned()));
            };
            let row =
                load_row(self.loads.bind(py), text).map_err(|error| fail(error.value(py).to_string()))?;
            match self.expander.expand(row, &self.buffer, line)?.map_err(fail)? {
                None => continue,
                Some((record, row)) => return Ok(Some((line, record, row))),
            }
        }
    }
}

/// Python's `json.loads`, looked up once per reader.
pub fn json_loads(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(py.import("json")?.getattr("loads")?.unbind())
}

/// `loads(text)`, which must be an object (stormlog's decoder's first
/// check, worded as it words it).
fn load_row<'py>(loads: &Bound<'py, PyAny>, text: &str) -> PyResult<Bound<'py, PyDict>> {
    let value = loads.call1((PyString::new(loads.py(), text),))?;
    value.cast_into::<PyDict>().map_err(|_| PyValueError::new_err("record must be an object"))
}
