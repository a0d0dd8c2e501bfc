//! The breakdown a notebook shows as `tally report`'s page: the dict
//! `breakdown_paths` and `tally.partials.breakdown` return is a
//! `tally._report.Breakdown` (a `dict`, equal to the JSON `tally breakdown
//! --format json` prints) holding its device clocks' timelines, and its
//! `_repr_html_` is tally-report's page of it, rendered here.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use tally_gpu_time::breakdown::{Breakdown, DeviceTimeline};
use tally_report::{ReportOptions, breakdown_report};

/// Each device clock's timeline of one breakdown (what its page draws):
/// opaque, kept beside the breakdown's dict.
#[pyclass(frozen, module = "tally._native")]
pub struct BreakdownTimelines(Vec<DeviceTimeline>);

/// The class of the breakdown functions' results, made when the module
/// loads ([`make_breakdown_class`]).
static BREAKDOWN_CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `loaded` (the breakdown as `json.loads` makes it) as the object the
/// breakdown functions return: a `Breakdown` holding `timelines`.
pub(crate) fn breakdown_result<'py>(
    py: Python<'py>,
    loaded: Bound<'py, PyAny>,
    timelines: Vec<DeviceTimeline>,
) -> PyResult<Bound<'py, PyAny>> {
    let class = BREAKDOWN_CLASS
        .get(py)
        .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("tally._native.Breakdown is not made"))?;
    let result = class.bind(py).call1((loaded,))?;
    result.setattr("_timelines", Bound::new(py, BreakdownTimelines(timelines))?)?;
    Ok(result)
}

/// `Breakdown`: a `dict` subclass (so it is the JSON's dict for every
/// caller) whose methods are this module's functions. Made with `type()`
/// because abi3 PyO3 cannot subclass `dict` natively; each method is a
/// `functools.partialmethod` of a native function, which binds the
/// instance as its first argument as a Python method would.
fn make_breakdown_class<'py>(module: &Bound<'py, PyModule>) -> PyResult<Bound<'py, PyAny>> {
    let py = module.py();
    let method = py.import("functools")?.getattr("partialmethod")?;
    let namespace = PyDict::new(py);
    namespace.set_item(
        "__doc__",
        "The overlap breakdown of one run: a ``dict`` equal to the JSON of ``tally breakdown``, shown in a \
         notebook as ``tally report``'s page.",
    )?;
    namespace.set_item("__module__", "tally._report")?;
    namespace.set_item("__slots__", ("_timelines",))?;
    namespace.set_item("_repr_html_", method.call1((wrap_pyfunction!(breakdown_fragment, module)?,))?)?;
    namespace.set_item("report_html", method.call1((wrap_pyfunction!(breakdown_page, module)?,))?)?;
    namespace.set_item("__reduce__", method.call1((wrap_pyfunction!(breakdown_reduce, module)?,))?)?;
    let dict_type = py.get_type::<PyDict>();
    py.import("builtins")?.getattr("type")?.call1(("Breakdown", (dict_type,), namespace))
}

/// The timelines a breakdown result holds, if any (a copy unpickled
/// elsewhere has none).
fn timelines_of<'py>(breakdown: &Bound<'py, PyAny>) -> Option<Bound<'py, BreakdownTimelines>> {
    breakdown.getattr("_timelines").ok().and_then(|held| held.cast_into::<BreakdownTimelines>().ok())
}

/// `Breakdown._repr_html_`: the fragment a notebook shows.
#[pyfunction]
fn breakdown_fragment(py: Python<'_>, breakdown: &Bound<'_, PyAny>) -> PyResult<String> {
    let timelines = timelines_of(breakdown);
    report_html(py, breakdown, timelines.as_ref().map(Bound::borrow), false)
}

/// `Breakdown.report_html`: the whole page `tally report` writes for this
/// breakdown.
#[pyfunction]
fn breakdown_page(py: Python<'_>, breakdown: &Bound<'_, PyAny>) -> PyResult<String> {
    let timelines = timelines_of(breakdown);
    report_html(py, breakdown, timelines.as_ref().map(Bound::borrow), true)
}

/// `Breakdown.__reduce__`: the figures travel, the timelines stay in this
/// process.
#[pyfunction]
fn breakdown_reduce<'py>(
    py: Python<'py>,
    breakdown: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyDict>,))> {
    let figures = PyDict::new(py);
    figures.call_method1("update", (breakdown,))?;
    Ok((breakdown.get_type().into_any(), (figures,)))
}

/// The page of `breakdown` (a dict as `tally breakdown --format json`
/// prints it) that `tally report` writes: the whole document when `page`,
/// else the fragment a notebook shows. `timelines` are the ones the
/// breakdown was read with; without them the page says it has no timeline.
/// A dict that is no breakdown is `ValueError`.
#[pyfunction]
#[pyo3(signature = (breakdown, timelines=None, *, page=false))]
pub fn report_html(
    py: Python<'_>,
    breakdown: &Bound<'_, PyAny>,
    timelines: Option<PyRef<'_, BreakdownTimelines>>,
    page: bool,
) -> PyResult<String> {
    static DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let text: String = DUMPS.import(py, "json", "dumps")?.call1((breakdown,))?.extract()?;
    let timelines: &[DeviceTimeline] = timelines.as_ref().map_or(&[], |timelines| &timelines.0);
    py.detach(|| {
        let result: Breakdown = serde_json::from_str(&text)
            .map_err(|error| PyValueError::new_err(format!("not a breakdown: {error}")))?;
        let report = breakdown_report(&result, timelines, &ReportOptions::default())
            .map_err(|error| PyValueError::new_err(error.to_string()))?;
        Ok(if page { report.page() } else { report.fragment().to_owned() })
    })
}

/// Registers the class and function.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<BreakdownTimelines>()?;
    let class = make_breakdown_class(module)?;
    module.add("Breakdown", &class)?;
    let _ = BREAKDOWN_CLASS.set(module.py(), class.unbind());
    module.add_function(wrap_pyfunction!(report_html, module)?)?;
    Ok(())
}
