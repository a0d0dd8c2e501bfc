//! `tally.partials`: tally-partial's exact partial results as bytes, for
//! any engine (Dask, Ray, Spark, a batch system) to map and reduce: a
//! partial made where some of a run's files are, partials merged, and the
//! merged partial accounted or broken down exactly as `account_paths` and
//! `breakdown_paths` account and break down all the files in one process.
//! Also the overlap breakdown of files itself (`breakdown_paths`), and the
//! reading knobs the three share.

use std::borrow::Cow;
use std::path::PathBuf;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView};
use tally_gpu_time::breakdown::{Breakdown, BreakdownOptions};
use tally_gpu_time::category::CategoryRules;
use tally_ingest::{RunError, RunOptions, Unwatched};
use tally_partial::{Partial, PartialError};
use tally_resolve::StreamedRun;
use tally_trace::{Detail, OpenedInput};

use crate::accounting::{CorrelationGraph, RunAccounting};

/// How a run's files are read: the import knobs of the traces among them
/// (`tally account --run-id`, `tally breakdown`'s one record per kernel).
/// Artifacts take no knob.
pub(crate) struct Reading {
    /// The run ID of the traces' records; `None` for the one derived from
    /// the traces' paths ([`tally_ingest::default_import_options`]).
    pub run_id: Option<String>,
    /// One record per kernel, copy or memset (the breakdown's kernel table
    /// needs each kernel's name), instead of one per launch.
    pub per_kernel: bool,
    /// Threads reading the files (0: one per core), as `tally account
    /// --threads`: an engine that runs one task per core gives 1.
    pub threads: usize,
}

impl Reading {
    /// Opens `paths` and calls `read` with them and the options to read
    /// them with (as `tally account` and `tally breakdown` read them; the
    /// Python API's longest record, all cores).
    fn read<T>(
        &self,
        paths: &[PathBuf],
        keep_labels: bool,
        read: impl FnOnce(Vec<OpenedInput>, &RunOptions<'_>) -> Result<T, RunError>,
    ) -> Result<T, RunError> {
        let inputs = tally_ingest::open_inputs(paths, None)?;
        let traces: Vec<&OpenedInput> = inputs.iter().filter(|input| input.is_trace()).collect();
        // Made only for a run with traces, as the command makes them.
        let import = (!traces.is_empty()).then(|| {
            tally_ingest::default_import_options(&traces, self.run_id.as_deref()).map(|mut options| {
                options.detail = if self.per_kernel { Detail::Kernel } else { Detail::Launch };
                // Traces read at once, and the threads one trace is read on.
                options.threads = self.threads;
                options
            })
        });
        let options = RunOptions {
            max_record_bytes: crate::paths::MAX_RECORD_BYTES,
            import: import.as_ref(),
            keep_labels,
            threads: self.threads,
            inline_small_inputs: true,
        };
        read(inputs, &options)
    }

    /// Resolves the files of one run, as the single process does.
    pub(crate) fn resolve(&self, paths: &[PathBuf], keep_labels: bool) -> Result<StreamedRun, RunError> {
        self.read(paths, keep_labels, |inputs, options| {
            tally_ingest::resolve_inputs(inputs, options, &mut Unwatched)
        })
    }
}

/// The paths of one path or several, each opened first so that one that
/// cannot be is Python's `OSError` of its errno (`FileNotFoundError`,
/// `PermissionError`) naming it, as `open` raises it.
pub(crate) fn openable(paths: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    let paths = crate::paths::one_or_many(paths)?;
    for path in &paths {
        crate::paths::open(path)?;
    }
    Ok(paths)
}

/// A partial's error as Python raises it: a damaged or foreign partial is
/// `ValueError` (its name, the byte offset and the rule broken), an input
/// that cannot be read is as `account_paths` raises it.
fn partial_error(error: PartialError) -> PyErr {
    match error {
        PartialError::Io { path, error } => crate::paths::os_error(&error, &path),
        PartialError::Run(error) => crate::codec::run_error(error),
        PartialError::Format { .. } | PartialError::TraceDetail { .. } => {
            PyValueError::new_err(error.to_string())
        }
    }
}

/// The breakdown options of `category_patterns` (`CATEGORY=GLOB`, as
/// `tally breakdown --category-pattern` takes them); a bad one is
/// `ValueError`.
fn breakdown_options(category_patterns: Vec<String>, by_iteration: bool) -> PyResult<BreakdownOptions> {
    let rules = category_patterns.iter().try_fold(CategoryRules::new(), |rules, text| {
        rules.with_pattern_text(text).map_err(|error| PyValueError::new_err(format!("{text:?}: {error}")))
    })?;
    Ok(BreakdownOptions { rules, by_iteration })
}

/// A breakdown as the Python object `json.loads` makes of the JSON that
/// `tally breakdown --format json` prints (integers exact at any size).
fn breakdown_object<'py>(py: Python<'py>, breakdown: &Breakdown) -> PyResult<Bound<'py, PyAny>> {
    static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let text = py
        .detach(|| serde_json::to_string(breakdown))
        .map_err(|error| PyValueError::new_err(error.to_string()))?;
    LOADS.import(py, "json", "loads")?.call1((text,))
}

/// The overlap breakdown of one resolved run (resolved keeping labels).
fn broken_down<'py>(
    py: Python<'py>,
    run: &StreamedRun,
    options: &BreakdownOptions,
) -> PyResult<Bound<'py, PyAny>> {
    let (result, timelines) = py.detach(|| {
        let columns = tally_report::DEFAULT_TIMELINE_COLUMNS;
        tally_gpu_time::breakdown::breakdown_with_timelines(run, options, columns)
    });
    crate::report::breakdown_result(py, breakdown_object(py, &result)?, timelines)
}

/// The overlap breakdown of one run's artifacts or traces, as `tally
/// breakdown --format json` prints it (a dict of JSON values: per device
/// clock the busy time per category, their intersections, exposed
/// communication, kernels, idle time and launch latency), read with the
/// GIL released. `category_patterns` are `CATEGORY=GLOB` rules applied
/// before the built-in one; `by_iteration` adds each device's iterations;
/// `run_id` is the traces' run (by default derived from their paths).
#[pyfunction]
#[pyo3(signature = (paths, *, category_patterns=Vec::new(), by_iteration=false, run_id=None))]
pub fn breakdown_paths<'py>(
    py: Python<'py>,
    paths: &Bound<'py, PyAny>,
    category_patterns: Vec<String>,
    by_iteration: bool,
    run_id: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let options = breakdown_options(category_patterns, by_iteration)?;
    let paths = openable(paths)?;
    let reading = Reading { run_id, per_kernel: true, threads: 0 };
    let run = py.detach(|| reading.resolve(&paths, true)).map_err(crate::codec::run_error)?;
    broken_down(py, &run, &options)
}

/// A partial of one run's files (artifacts or traces, as `account_paths`
/// takes them) as bytes, read with the GIL released. Give every partial
/// of a run's traces the same `run_id` (`default_run_id` of all the run's
/// paths is what one process would use); `per_kernel` as the breakdown
/// reads traces (`breakdown_paths`), so set it for partials to break down.
/// `threads` read the files (0: one per core); an engine running one task
/// per core gives 1.
#[pyfunction]
#[pyo3(signature = (paths, *, run_id=None, per_kernel=false, threads=0))]
pub fn make<'py>(
    py: Python<'py>,
    paths: &Bound<'py, PyAny>,
    run_id: Option<String>,
    per_kernel: bool,
    threads: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let paths = openable(paths)?;
    let reading = Reading { run_id, per_kernel, threads };
    let bytes = py.detach(|| {
        let partial = reading
            .read(&paths, true, |inputs, options| Partial::of_inputs(inputs, options, &mut Unwatched))
            .map_err(PartialError::Run)?;
        Ok(partial.into_bytes())
    });
    Ok(PyBytes::new(py, &bytes.map_err(partial_error)?))
}

/// The bytes of each of `parts`: `bytes` as they are, `bytearray` and
/// `memoryview` copied.
fn part_bytes<'a>(parts: &'a [Bound<'_, PyAny>]) -> PyResult<Vec<Cow<'a, [u8]>>> {
    parts
        .iter()
        .map(|part| {
            if let Ok(bytes) = part.cast::<PyBytes>() {
                return Ok(Cow::Borrowed(bytes.as_bytes()));
            }
            if part.cast::<PyByteArray>().is_ok() || part.cast::<PyMemoryView>().is_ok() {
                let copied = part.py().get_type::<PyBytes>().call1((part,))?;
                return Ok(Cow::Owned(copied.cast_into::<PyBytes>()?.as_bytes().to_vec()));
            }
            Err(PyTypeError::new_err(format!("a partial must be bytes, not {}", part.get_type().name()?)))
        })
        .collect()
}

/// `parts` resolved as one run, each read once with the GIL released; each
/// is named `partial N` (its index) in errors. Partials whose traces were imported
/// otherwise than `wanted` (one record per launch for accounting, per
/// kernel for the breakdown) are refused, as `tally account` and `tally
/// breakdown` refuse them: they give other figures.
fn resolved(
    py: Python<'_>,
    parts: &Bound<'_, PyAny>,
    wanted: Detail,
    keep_labels: bool,
) -> PyResult<StreamedRun> {
    let parts: Vec<Bound<'_, PyAny>> = parts.try_iter()?.collect::<PyResult<_>>()?;
    let bytes = part_bytes(&parts)?;
    let (run, traces) = py
        .detach(|| {
            let parts: Vec<&[u8]> = bytes.iter().map(|bytes| &bytes[..]).collect();
            tally_partial::resolve_bytes(&parts, keep_labels)
        })
        .map_err(partial_error)?;
    match traces {
        Some(found) if found != wanted => Err(PyValueError::new_err(format!(
            "the partials' traces were imported one record per {found}, which gives other figures; {}",
            match wanted {
                Detail::Kernel =>
                    "the breakdown reads traces one record per kernel: make the partials with per_kernel=True",
                Detail::Launch =>
                    "accounting reads traces one record per launch: make the partials without per_kernel",
            }
        ))),
        _ => Ok(run),
    }
}

/// Partials (bytes from `make` or `merge`) merged into one: the partial of
/// all their files, whatever the order and grouping of the merges. A
/// damaged partial is `ValueError` naming it (`partial N`, its index), the
/// byte offset and the rule broken.
#[pyfunction]
pub fn merge<'py>(py: Python<'py>, parts: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let parts: Vec<Bound<'_, PyAny>> = parts.try_iter()?.collect::<PyResult<_>>()?;
    let bytes = part_bytes(&parts)?;
    let merged = py
        .detach(|| {
            let parts: Vec<&[u8]> = bytes.iter().map(|bytes| &bytes[..]).collect();
            tally_partial::merge_bytes(&parts)
        })
        .map_err(partial_error)?;
    Ok(PyBytes::new(py, merged.as_bytes()))
}

/// Partials merged and accounted: exactly `account_paths` of all their
/// files, `(graph, accounting)`. Partials of traces made with
/// `per_kernel=True` are refused (`ValueError`), as accounting reads
/// traces one record per launch.
#[pyfunction]
pub fn account(py: Python<'_>, parts: &Bound<'_, PyAny>) -> PyResult<(CorrelationGraph, RunAccounting)> {
    let run = resolved(py, parts, Detail::Launch, false)?;
    crate::accounting::accounted(py, run)
}

/// Partials merged and broken down: exactly `breakdown_paths` of all their
/// files. Partials of traces must be made with `per_kernel=True`, as the
/// breakdown reads traces (one record per kernel, each with its name);
/// others are refused (`ValueError`).
#[pyfunction]
#[pyo3(signature = (parts, *, category_patterns=Vec::new(), by_iteration=false))]
pub fn breakdown<'py>(
    py: Python<'py>,
    parts: &Bound<'py, PyAny>,
    category_patterns: Vec<String>,
    by_iteration: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let options = breakdown_options(category_patterns, by_iteration)?;
    let run = resolved(py, parts, Detail::Kernel, true)?;
    broken_down(py, &run, &options)
}

/// The attachment ID of each trace among `paths` (artifacts have none), in
/// order, computed where the files are: `run_id_of_attachments` of every
/// machine's IDs, in the run's order, is the run ID one process reading
/// all the files would derive.
#[pyfunction]
pub fn trace_attachment_ids<'py>(py: Python<'py>, paths: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let paths = openable(paths)?;
    let ids = py
        .detach(|| -> Result<Vec<String>, RunError> {
            let inputs = tally_ingest::open_inputs(&paths, None)?;
            Ok(inputs.iter().filter(|input| input.is_trace()).map(tally_trace::attachment_id).collect())
        })
        .map_err(crate::codec::run_error)?;
    PyList::new(py, ids)
}

/// The run ID traces with these attachment IDs (`trace_attachment_ids`,
/// in the run's order) are imported under by default; `None` for none.
#[pyfunction]
pub fn run_id_of_attachments(ids: Vec<String>) -> Option<String> {
    (!ids.is_empty()).then(|| tally_trace::run_id_of_attachments(ids.iter().map(String::as_str)))
}

/// The run ID the traces among `paths` are imported under by default,
/// derived from their paths as one process reading all of `paths` derives
/// it; `None` when none is a trace. Give it to every `make` of the run.
#[pyfunction]
pub fn default_run_id(py: Python<'_>, paths: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let ids: Vec<String> = trace_attachment_ids(py, paths)?.extract()?;
    Ok(run_id_of_attachments(ids))
}

/// Adds `tally.partials`' functions to the native module (which
/// `tally.partials` re-exports: a function pickles by its module and name,
/// so the names are the ones it is called by).
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(make, module)?)?;
    module.add_function(wrap_pyfunction!(merge, module)?)?;
    module.add_function(wrap_pyfunction!(account, module)?)?;
    module.add_function(wrap_pyfunction!(breakdown, module)?)?;
    module.add_function(wrap_pyfunction!(trace_attachment_ids, module)?)?;
    module.add_function(wrap_pyfunction!(run_id_of_attachments, module)?)?;
    module.add_function(wrap_pyfunction!(default_run_id, module)?)?;
    Ok(())
}
