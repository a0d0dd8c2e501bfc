//! The breakdown a notebook shows as `tally report`'s page: the dict
//! `breakdown_paths` and `tally.partials.breakdown` return is a
//! `tally._report.Breakdown` (a `dict`, equal to the JSON `tally breakdown
//! --format json` prints) holding its device clocks' timelines, and its
//! `_repr_html_` is tally-report's page of it, rendered here.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tally_gpu_time::breakdown::{Breakdown, DeviceTimeline};
use tally_report::{ReportOptions, breakdown_report};

/// Each device clock's timeline of one breakdown (what its page draws):
/// opaque, kept beside the breakdown's dict.
#[pyclass(frozen, module = "tally._native")]
pub struct BreakdownTimelines(Vec<DeviceTimeline>);

/// `loaded` (the breakdown as `json.loads` makes it) as the object the
/// breakdown functions return: a `tally._report.Breakdown` holding
/// `timelines`.
pub(crate) fn breakdown_result<'py>(
    py: Python<'py>,
    loaded: Bound<'py, PyAny>,
    timelines: Vec<DeviceTimeline>,
) -> PyResult<Bound<'py, PyAny>> {
    static CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let result = CLASS.import(py, "tally._report", "Breakdown")?.call1((loaded,))?;
    result.setattr("_timelines", Bound::new(py, BreakdownTimelines(timelines))?)?;
    Ok(result)
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
    module.add_function(wrap_pyfunction!(report_html, module)?)?;
    Ok(())
}
