//! vertebrae's `ResourceProfiler` over tally-profile's profiler: the
//! calls it measures, the profile it finishes (built as `tally.profiling`'s
//! dataclasses, its context in vertebrae's key order) and the Python
//! adapter it calls hook by hook.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;
use tally_profile::{CallSpec, HookError, ResourceProfileAdapter};

use crate::profiling::{PythonAdapter, build, config_of};

/// tally-profile's profiler over an adapter that may move between threads.
type SharedProfiler =
    tally_profile::ResourceProfiler<tally_profile::MonotonicClock, dyn ResourceProfileAdapter + Send + Sync>;

/// Observe real extractor calls without introducing repeat inference
/// (vertebrae's `ResourceProfiler`, measured by tally-profile).
///
/// It holds its adapter as `Send + Sync` (a [`PythonAdapter`] is), so any
/// thread may drop it: Python's cyclic collector runs on whichever thread
/// allocates.
#[pyclass(module = "tally.profiling", name = "ResourceProfiler")]
pub struct ResourceProfiler {
    inner: SharedProfiler,
    /// The config it was made with.
    #[pyo3(get)]
    config: Py<PyAny>,
    /// The extractor whose calls it measures.
    #[pyo3(get)]
    extractor: Py<PyAny>,
    /// Whether the calls stream their outputs.
    #[pyo3(get)]
    streaming: bool,
    /// The extractor's resource adapter, or None.
    #[pyo3(get)]
    adapter: Py<PyAny>,
    /// The caller's context keys, in the caller's order.
    context_keys: Vec<String>,
    /// How the last finished profile's host high-water mark was measured
    /// (`vmhwm_clear_refs`, `vmhwm_at_high_water` or `rss_sampler`), or None
    /// (tally's own figure: vertebrae's profile has no place for it).
    #[pyo3(get)]
    host_memory_method: Option<String>,
}

/// The keys vertebrae's `finish` writes into a profile's `context`, in its
/// order; the caller's own keys follow (a key of both keeps its place).
const VERTEBRAE_CONTEXT_KEYS: [&str; 17] = [
    "streaming",
    "call_types",
    "call_order",
    "planning_probe_calls",
    "first_call_materialized",
    "synchronization_status",
    "preprocessing_included",
    "output_conversion_included",
    "cache_status",
    "backend",
    "device",
    "device_resolution",
    "asynchronous",
    "synchronization_method",
    "weight_dtypes",
    "resource_adapter",
    "profiling_device_hint",
];

#[pymethods]
impl ResourceProfiler {
    #[new]
    #[pyo3(signature = (config, extractor, *, streaming, context=None))]
    fn new(
        py: Python<'_>,
        config: &Bound<'_, PyAny>,
        extractor: &Bound<'_, PyAny>,
        streaming: bool,
        context: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let settings = config_of(config)?.profiler_config();
        let mut inner = SharedProfiler::for_adapter_type(settings).streaming(streaming);
        let context_keys = match context {
            Some(context) => {
                context.keys().iter().map(|key| key.extract::<String>()).collect::<PyResult<_>>()?
            }
            None => Vec::new(),
        };
        if let Some(context) = context {
            inner = inner.with_context(crate::convert::dict_to_json(context)?);
        }
        let mut adapter_object = py.None();
        if let Ok(factory) = extractor.getattr("get_resource_profile_adapter")
            && factory.is_callable()
        {
            match factory.call0() {
                // vertebrae's profiler takes a None answer as "no adapter",
                // without a warning.
                Ok(object) if object.is_none() => {}
                made => {
                    inner = inner.with_adapter_factory(|| match made {
                        Ok(object) => {
                            adapter_object = object.clone().unbind();
                            PythonAdapter::new(&object)
                                .map(|adapter| {
                                    Box::new(adapter) as Box<dyn ResourceProfileAdapter + Send + Sync>
                                })
                                .map_err(HookError::from)
                        }
                        Err(error) => Err(HookError::from(error)),
                    });
                }
            }
        }
        Ok(Self {
            inner,
            config: config.clone().unbind(),
            extractor: extractor.clone().unbind(),
            streaming,
            adapter: adapter_object,
            context_keys,
            host_memory_method: None,
        })
    }

    /// The calls measured so far, oldest first, as vertebrae's call records
    /// read: `seconds`, `samples`, `call_type`, `materialized` and
    /// `includes_fit` (a new list on each access; tally keeps the
    /// nanoseconds).
    #[getter]
    fn records<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let namespace = py.import("types")?.getattr("SimpleNamespace")?;
        let list = PyList::empty(py);
        for record in self.inner.records() {
            let fields = PyDict::new(py);
            // vertebrae's `perf_counter` difference, in seconds.
            fields.set_item("seconds", record.duration_ns as f64 / 1e9)?;
            fields.set_item("samples", record.samples)?;
            fields.set_item("call_type", record.call_type.as_ref())?;
            fields.set_item("materialized", record.materialized)?;
            fields.set_item("includes_fit", record.includes_fit)?;
            list.append(namespace.call((), Some(&fields))?)?;
        }
        Ok(list)
    }

    /// Runs `fn()` and measures it; its value (or exception) is returned
    /// untouched.
    #[pyo3(signature = (r#fn, *, samples, call_type, materialized=true, includes_fit=false))]
    fn measure_call(
        &mut self,
        r#fn: &Bound<'_, PyAny>,
        samples: u64,
        call_type: String,
        materialized: bool,
        includes_fit: bool,
    ) -> PyResult<Py<PyAny>> {
        let spec = CallSpec::new(samples, call_type).materialized(materialized).includes_fit(includes_fit);
        self.inner.measure_fallible(|| r#fn.call0().map(Bound::unbind), spec)
    }

    /// Turns the last call (a planning probe) into a counted call.
    fn mark_last_call_materialized(&mut self) {
        self.inner.mark_last_call_materialized();
    }

    /// The profile of the calls measured so far.
    #[pyo3(signature = (*, cache_hit=false))]
    fn finish<'py>(&mut self, py: Python<'py>, cache_hit: bool) -> PyResult<Bound<'py, PyAny>> {
        let mut profile = self.inner.finish(cache_hit);
        // vertebrae's context has no such key; the profiler tells it instead.
        self.host_memory_method = match profile.context.remove("host_memory_method") {
            Some(Value::String(method)) => Some(method),
            _ => None,
        };
        let json = tally_profile::resource_profile_to_dict(&profile)
            .map_err(|error| PyValueError::new_err(error.to_string()))?;
        let built = build(py, "ResourceProfile", &json)?;
        // The context in vertebrae's key order (tally's JSON map is sorted).
        let context = built.getattr("context")?.cast_into::<PyDict>()?;
        let ordered = PyDict::new(py);
        for key in VERTEBRAE_CONTEXT_KEYS.iter().copied().chain(self.context_keys.iter().map(String::as_str))
        {
            if let Some(value) = context.get_item(key)? {
                ordered.set_item(key, value)?;
            }
        }
        for (key, value) in context.iter() {
            if !ordered.contains(&key)? {
                ordered.set_item(key, value)?;
            }
        }
        built.setattr("context", ordered)?;
        Ok(built)
    }
}
