//! stormlog's `correlation_accounting` over tally-resolve, tally-gpu-time and
//! tally-clock: `resolve_inference_events`, `account_gpu_time`,
//! `validate_request_shares`, `align_timestamp`, `covering_alignments`,
//! `alignment_offset_bounds`, their result classes, and the fast path
//! `account_paths`.
//!
//! A graph owns the events it resolved next to the Rust graph that borrows
//! them (`self_cell`), and an accounting owns its graph next to the Rust
//! accounting, so results built in Rust are read, not rebuilt; the Python
//! containers stormlog's dataclasses hold are made from them.

use std::sync::Arc;

use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple};
use self_cell::self_cell;
use tally_core::{CorrelationEvent as CoreEvent, EntityRef as CoreRef};
use tally_gpu_time::{DeviceClock as CoreClock, GpuTime as CoreGpuTime};
use tally_resolve::{CorrelationGraph as CoreGraph, ResolvedEvidence, StreamedRun};

use crate::model::{Evidence, PyEntityRef, event_to_python, evidence, invalid};
use crate::results::{
    AlignedTimestamp, DeviceClock, GpuTime, IterationTiming, ShareBudget, UnresolvedReference,
    dataclass_methods, fields_eq, share_of, wide_integer,
};

type Graph<'a> = CoreGraph<'a>;

self_cell!(
    /// Events and the graph resolved from them.
    pub struct OwnedGraph {
        owner: Vec<Arc<CoreEvent>>,
        #[covariant]
        dependent: Graph,
    }
);

/// What a graph was resolved from: events in memory, or files streamed by
/// (`account_paths`), of which only the facts accounting needs are kept.
pub enum GraphData {
    Events(OwnedGraph),
    Streamed(Box<StreamedRun>),
}

type Accounting<'a> = tally_gpu_time::RunAccounting<'a>;

self_cell!(
    /// A graph and its accounting.
    pub struct OwnedAccounting {
        owner: Arc<GraphData>,
        #[covariant]
        dependent: Accounting,
    }
);

fn account(data: Arc<GraphData>) -> OwnedAccounting {
    OwnedAccounting::new(data, |data| match &**data {
        GraphData::Events(graph) => tally_gpu_time::account_gpu_time(graph.borrow_dependent()),
        GraphData::Streamed(run) => tally_gpu_time::account_gpu_time(&**run),
    })
}

/// The resolved evidence of one run (stormlog's `CorrelationGraph`).
///
/// Its tables are built as Python containers on first access and kept. A
/// graph from `account_paths` kept no events: its event tables raise
/// `AttributeError`, while `run_id`, `unresolved` and `counts` are there.
#[pyclass(frozen, module = "tally.accounting", name = "CorrelationGraph")]
pub struct CorrelationGraph {
    data: Arc<GraphData>,
    /// The Python object each event came as, where it was one of tally's:
    /// the tables hand those out (as stormlog's hold its input objects).
    objects: Vec<Option<Py<PyAny>>>,
    requests: PyOnceLock<Py<PyAny>>,
    iterations: PyOnceLock<Py<PyAny>>,
    stages: PyOnceLock<Py<PyAny>>,
    memberships: PyOnceLock<Py<PyAny>>,
    activities: PyOnceLock<Py<PyAny>>,
    alignments: PyOnceLock<Py<PyAny>>,
    unresolved: PyOnceLock<Py<PyAny>>,
    /// The `run_id` a graph built from its fields was given.
    given_run_id: PyOnceLock<Py<PyAny>>,
}

impl CorrelationGraph {
    fn of(data: Arc<GraphData>, objects: Vec<Option<Py<PyAny>>>) -> Self {
        Self {
            data,
            objects,
            requests: PyOnceLock::new(),
            iterations: PyOnceLock::new(),
            stages: PyOnceLock::new(),
            memberships: PyOnceLock::new(),
            activities: PyOnceLock::new(),
            alignments: PyOnceLock::new(),
            unresolved: PyOnceLock::new(),
            given_run_id: PyOnceLock::new(),
        }
    }

    fn events(&self, table: &str) -> PyResult<&OwnedGraph> {
        match &*self.data {
            GraphData::Events(graph) => Ok(graph),
            GraphData::Streamed(_) => Err(PyAttributeError::new_err(format!(
                "a graph from account_paths keeps no events, so it has no {table}; \
                 resolve_inference_events(load_inference_artifact(path)) keeps them"
            ))),
        }
    }

    fn cached(
        &self,
        py: Python<'_>,
        cell: &PyOnceLock<Py<PyAny>>,
        build: impl FnOnce() -> PyResult<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        cell.get_or_try_init(py, build).map(|value| value.clone_ref(py))
    }

    fn all_fields<'py>(slf: &Bound<'py, Self>) -> PyResult<Option<Py<PyTuple>>> {
        let py = slf.py();
        let graph = slf.get();
        if matches!(&*graph.data, GraphData::Streamed(_)) {
            return Ok(None);
        }
        let values = [
            graph.run_id(py)?,
            graph.requests(py)?,
            graph.iterations(py)?,
            graph.stages(py)?,
            graph.memberships(py)?,
            graph.activities(py)?,
            graph.alignments(py)?,
            graph.unresolved(py)?,
        ];
        Ok(Some(PyTuple::new(py, values)?.unbind()))
    }
}

/// `{key: event}` of one table, the event objects wrapping the owner's.
/// The Python object of the event at `index` of the graph's input: the
/// object it came as, or a new one for an event that came as a dict or a
/// stormlog object.
fn event_object<'py>(
    py: Python<'py>,
    owner: &[Arc<CoreEvent>],
    objects: &[Option<Py<PyAny>>],
    index: usize,
) -> PyResult<Bound<'py, PyAny>> {
    match objects.get(index) {
        Some(Some(object)) => Ok(object.bind(py).clone()),
        _ => event_to_python(py, Arc::clone(&owner[index])),
    }
}

fn table<'a, T: 'a>(
    py: Python<'_>,
    (owner, objects): (&[Arc<CoreEvent>], &[Option<Py<PyAny>>]),
    rows: impl Iterator<Item = &'a tally_resolve::Resolved<'a, T>>,
    key: impl Fn(Python<'_>, &T) -> PyResult<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let _pause = crate::gc::Pause::new(py)?;
    let dict = PyDict::new(py);
    for row in rows {
        dict.set_item(key(py, row.body)?, event_object(py, owner, objects, row.record)?)?;
    }
    Ok(dict.into_any().unbind())
}

fn sequence<'a, T: 'a>(
    py: Python<'_>,
    (owner, objects): (&[Arc<CoreEvent>], &[Option<Py<PyAny>>]),
    rows: impl Iterator<Item = &'a tally_resolve::Resolved<'a, T>>,
) -> PyResult<Py<PyAny>> {
    let items = rows.map(|row| event_object(py, owner, objects, row.record)).collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, items)?.into_any().unbind())
}

fn reference(py: Python<'_>, reference: &CoreRef) -> PyResult<Py<PyAny>> {
    Ok(PyEntityRef::wrap(py, reference)?.unbind())
}

fn optional_reference(py: Python<'_>, value: Option<&CoreRef>) -> PyResult<Py<PyAny>> {
    match value {
        Some(value) => reference(py, value),
        None => Ok(py.None()),
    }
}

#[pymethods]
impl CorrelationGraph {
    /// A graph of the given tables, as stormlog's dataclass holds them (so
    /// `dataclasses.replace(graph, ...)` works). The tables' events are
    /// resolved again, since accounting reads tally's own graph of them:
    /// tables whose events do not resolve together are a `ValueError`.
    #[new]
    #[pyo3(signature = (run_id, requests, iterations, stages, memberships, activities, alignments, unresolved))]
    #[allow(clippy::too_many_arguments, reason = "stormlog's fields, in order")]
    fn new(
        py: Python<'_>,
        run_id: Py<PyAny>,
        requests: &Bound<'_, PyAny>,
        iterations: &Bound<'_, PyAny>,
        stages: &Bound<'_, PyAny>,
        memberships: &Bound<'_, PyAny>,
        activities: &Bound<'_, PyAny>,
        alignments: &Bound<'_, PyAny>,
        unresolved: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let events = pyo3::types::PyList::empty(py);
        for table in [requests, iterations, stages, activities] {
            for event in table.call_method0("values")?.try_iter()? {
                events.append(event?)?;
            }
        }
        for sequence in [memberships, alignments] {
            for event in sequence.try_iter()? {
                events.append(event?)?;
            }
        }
        let (events, objects) = events_of(events.as_any())?;
        let graph =
            OwnedGraph::try_new(events, |events| tally_resolve::resolve_inference_events(events.iter()))
                .map_err(invalid)?;
        let graph = Self::of(Arc::new(GraphData::Events(graph)), objects);
        let fields = [
            (&graph.requests, requests),
            (&graph.iterations, iterations),
            (&graph.stages, stages),
            (&graph.memberships, memberships),
            (&graph.activities, activities),
            (&graph.alignments, alignments),
            (&graph.unresolved, unresolved),
        ];
        for (cell, value) in fields {
            // Each cell is new, so each `set` succeeds.
            let _ = cell.set(py, value.clone().unbind());
        }
        let _ = graph.given_run_id.set(py, run_id);
        Ok(graph)
    }

    /// The run all correlation events belong to; None when there were none.
    #[getter]
    fn run_id(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(given) = self.given_run_id.get(py) {
            return Ok(given.clone_ref(py));
        }
        let run_id = match &*self.data {
            GraphData::Events(graph) => graph.borrow_dependent().run_id(),
            GraphData::Streamed(run) => run.run_id(),
        };
        Ok(match run_id {
            Some(run_id) => PyString::new(py, run_id).into_any().unbind(),
            None => py.None(),
        })
    }

    /// `{(request_ref, attempt_ref): RequestEvent}`.
    #[getter]
    fn requests(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let graph = self.events("requests")?;
        self.cached(py, &self.requests, || {
            table(
                py,
                (graph.borrow_owner(), &self.objects),
                graph.borrow_dependent().requests().iter(),
                |py, body| {
                    let key = PyTuple::new(
                        py,
                        [
                            reference(py, &body.request_ref)?,
                            optional_reference(py, body.attempt_ref.as_ref())?,
                        ],
                    )?;
                    Ok(key.into_any().unbind())
                },
            )
        })
    }

    /// `{iteration_ref: IterationEvent}`.
    #[getter]
    fn iterations(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let graph = self.events("iterations")?;
        self.cached(py, &self.iterations, || {
            table(
                py,
                (graph.borrow_owner(), &self.objects),
                graph.borrow_dependent().iterations().iter(),
                |py, body| reference(py, &body.iteration_ref),
            )
        })
    }

    /// `{stage_ref: StageEvent}`.
    #[getter]
    fn stages(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let graph = self.events("stages")?;
        self.cached(py, &self.stages, || {
            table(
                py,
                (graph.borrow_owner(), &self.objects),
                graph.borrow_dependent().stages().iter(),
                |py, body| reference(py, &body.stage_ref),
            )
        })
    }

    /// The memberships, sorted by `(session_id, producer_id, event_id)`.
    #[getter]
    fn memberships(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let graph = self.events("memberships")?;
        self.cached(py, &self.memberships, || {
            sequence(py, (graph.borrow_owner(), &self.objects), graph.borrow_dependent().memberships().iter())
        })
    }

    /// `{activity_ref: ActivityReferenceEvent}`.
    #[getter]
    fn activities(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let graph = self.events("activities")?;
        self.cached(py, &self.activities, || {
            table(
                py,
                (graph.borrow_owner(), &self.objects),
                graph.borrow_dependent().activities().iter(),
                |py, body| reference(py, &body.activity_ref),
            )
        })
    }

    /// The clock alignments, sorted by `(session_id, producer_id, event_id)`.
    #[getter]
    fn alignments(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let graph = self.events("alignments")?;
        self.cached(py, &self.alignments, || {
            sequence(py, (graph.borrow_owner(), &self.objects), graph.borrow_dependent().alignments().iter())
        })
    }

    /// References to entities nobody reported, sorted by `(event_id, kind, ref.id)`.
    #[getter]
    fn unresolved(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.cached(py, &self.unresolved, || {
            let build = |items: &mut dyn Iterator<Item = tally_resolve::UnresolvedReference<'_>>| {
                let objects = items
                    .map(|item| {
                        Bound::new(
                            py,
                            UnresolvedReference {
                                event_id: PyString::new(py, item.event_id).into_any().unbind(),
                                kind: PyString::new(py, item.kind.as_str()).into_any().unbind(),
                                r#ref: reference(py, item.reference)?,
                            },
                        )
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                Ok(PyTuple::new(py, objects)?.into_any().unbind())
            };
            match &*self.data {
                GraphData::Events(graph) => build(&mut graph.borrow_dependent().unresolved().iter().copied()),
                GraphData::Streamed(run) => build(&mut run.unresolved_references()),
            }
        })
    }

    /// The sizes of the tables: `{"requests": n, "iterations": n, ...}`
    /// (tally's addition; a graph from `account_paths` has them too).
    #[getter]
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let counts = match &*self.data {
            GraphData::Events(graph) => graph.borrow_dependent().counts(),
            GraphData::Streamed(run) => run.counts(),
        };
        let dict = PyDict::new(py);
        dict.set_item("requests", counts.requests)?;
        dict.set_item("iterations", counts.iterations)?;
        dict.set_item("stages", counts.stages)?;
        dict.set_item("memberships", counts.memberships)?;
        dict.set_item("activities", counts.activities)?;
        dict.set_item("alignments", counts.alignments)?;
        Ok(dict)
    }

    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        fields_eq(slf.as_any(), other, |value| match value.cast::<CorrelationGraph>() {
            Ok(graph) => CorrelationGraph::all_fields(graph),
            Err(_) => Ok(None),
        })
    }

    /// Pickled and copied as the class called with its tables; a graph from
    /// `account_paths` kept no events to pickle.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, pyo3::types::PyType>, Py<PyTuple>)> {
        match CorrelationGraph::all_fields(slf)? {
            Some(fields) => Ok((slf.get_type(), fields)),
            None => Err(PyTypeError::new_err(
                "a graph from account_paths keeps no events, so it cannot be pickled",
            )),
        }
    }

    /// Unhashable, as stormlog's graph is: it holds dicts.
    fn __hash__(&self) -> PyResult<isize> {
        Err(PyTypeError::new_err("unhashable type: 'dict'"))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let counts = self.counts(py)?;
        Ok(format!(
            "CorrelationGraph(run_id={}, counts={})",
            self.run_id(py)?.bind(py).repr()?,
            counts.repr()?
        ))
    }
}

/// The order of stormlog's accounting dicts: `iterations` in the graph's
/// iteration-table order (first delivery), and each `gpu` dict and
/// `device_totals` in the order in which a measured GPU activity of the
/// activity table first names each clock. It is read from the facts the
/// accounting itself reads ([`ResolvedEvidence`]), so it holds for a graph
/// of events and for a streamed one alike; tally-gpu-time's lists are
/// sorted instead.
struct DictOrder<'a> {
    /// The iterations, in table order.
    iterations: Vec<&'a CoreRef>,
    /// Each clock in the order of its first measured activity.
    totals: Vec<CoreClock<'a>>,
    /// The same for each iteration, by its position in `iterations`.
    per_iteration: Vec<Vec<CoreClock<'a>>>,
}

impl<'a> DictOrder<'a> {
    fn of(data: &'a GraphData) -> Self {
        match data {
            GraphData::Events(graph) => Self::of_evidence(graph.borrow_dependent()),
            GraphData::Streamed(run) => Self::of_evidence(&**run),
        }
    }

    fn of_evidence<G: ResolvedEvidence + ?Sized>(graph: &'a G) -> Self {
        let iterations: Vec<&'a CoreRef> = graph.iteration_facts().map(|facts| facts.iteration_ref).collect();
        let mut order =
            Self { per_iteration: vec![Vec::new(); iterations.len()], iterations, totals: Vec::new() };
        let push = |list: &mut Vec<CoreClock<'a>>, clock: CoreClock<'a>| {
            if !list.contains(&clock) {
                list.push(clock);
            }
        };
        for activity in graph.activity_facts() {
            // Measured as the accounting measures it: on the GPU, on a
            // device clock, with busy intervals.
            let (Some((uuid, domain, kind)), Some(_)) = (activity.device, activity.busy) else {
                continue;
            };
            if activity.domain != tally_core::ActivityDomain::Gpu {
                continue;
            }
            let clock = CoreClock::new(uuid, domain, kind);
            push(&mut order.totals, clock);
            if let Some(list) = activity.iteration.and_then(|index| order.per_iteration.get_mut(index)) {
                push(list, clock);
            }
        }
        order
    }

    /// `rows` in the order of the clocks in `order`.
    fn clocks_in<'r, T>(
        order: &[CoreClock<'_>],
        rows: &'r [(CoreClock<'r>, T)],
    ) -> Vec<&'r (CoreClock<'r>, T)> {
        let mut sorted: Vec<&(CoreClock<'r>, T)> = rows.iter().collect();
        let rank =
            |clock: &CoreClock<'_>| order.iter().position(|known| known == clock).unwrap_or(usize::MAX);
        sorted.sort_by_key(|(clock, _)| rank(clock));
        sorted
    }
}

/// Overlap-aware GPU time of one run (stormlog's `RunAccounting`).
#[pyclass(frozen, module = "tally.accounting", name = "RunAccounting")]
pub struct RunAccounting {
    run_id: Py<PyAny>,
    iterations: Py<PyAny>,
    device_totals: Py<PyAny>,
    unattributed_activity_refs: Py<PyAny>,
    unmeasured_gpu_activity_refs: Py<PyAny>,
    /// The Rust accounting the fields were made from, for
    /// `validate_request_shares`; None for one built in Python.
    owned: Option<Arc<OwnedAccounting>>,
}

dataclass_methods!(
    RunAccounting,
    "RunAccounting",
    [run_id, iterations, device_totals, unattributed_activity_refs, unmeasured_gpu_activity_refs]
);

impl RunAccounting {
    fn from_owned(py: Python<'_>, owned: Arc<OwnedAccounting>) -> PyResult<Self> {
        let accounting = owned.borrow_dependent();
        // One object per device clock, shared by every dict that names it.
        let mut clocks: Vec<(CoreClock<'_>, Py<PyAny>)> = Vec::new();
        fn clock<'a>(
            py: Python<'_>,
            clocks: &mut Vec<(CoreClock<'a>, Py<PyAny>)>,
            key: &CoreClock<'a>,
        ) -> PyResult<Py<PyAny>> {
            if let Some((_, object)) = clocks.iter().find(|(known, _)| known == key) {
                return Ok(object.clone_ref(py));
            }
            let object = DeviceClock::of(py, key)?;
            clocks.push((*key, object.clone_ref(py)));
            Ok(object)
        }
        let gpu_time = |py: Python<'_>, time: &CoreGpuTime| -> PyResult<Py<PyAny>> {
            Ok(Bound::new(
                py,
                GpuTime {
                    summed_activity_ns: time.summed_activity_ns.into_pyobject(py)?.into_any().unbind(),
                    busy_ns: time.busy_ns.into_pyobject(py)?.into_any().unbind(),
                    activity_count: time.activity_count.into_pyobject(py)?.into_any().unbind(),
                },
            )?
            .into_any()
            .unbind())
        };
        let order = DictOrder::of(owned.borrow_owner());
        let iterations = PyDict::new(py);
        let timings =
            order.iterations.iter().zip(&order.per_iteration).filter_map(|(reference, clocks)| {
                accounting.iteration(reference).map(|timing| (timing, clocks))
            });
        for (timing, clock_order) in timings {
            let gpu = PyDict::new(py);
            for (key, time) in DictOrder::clocks_in(clock_order, &timing.gpu) {
                gpu.set_item(clock(py, &mut clocks, key)?, gpu_time(py, time)?)?;
            }
            let elapsed = match timing.elapsed_ns {
                Some(elapsed) => elapsed.into_pyobject(py)?.into_any().unbind(),
                None => py.None(),
            };
            let row = Bound::new(py, IterationTiming { elapsed_ns: elapsed, gpu: gpu.into_any().unbind() })?;
            iterations.set_item(reference(py, timing.iteration_ref)?, row)?;
        }
        let totals = PyDict::new(py);
        let device_totals: Vec<(CoreClock<'_>, CoreGpuTime)> =
            accounting.device_totals.iter().map(|total| (total.clock, total.time)).collect();
        for (key, time) in DictOrder::clocks_in(&order.totals, &device_totals) {
            totals.set_item(clock(py, &mut clocks, key)?, gpu_time(py, time)?)?;
        }
        let references = |list: &[&CoreRef]| -> PyResult<Py<PyAny>> {
            let items = list.iter().map(|item| reference(py, item)).collect::<PyResult<Vec<_>>>()?;
            Ok(PyTuple::new(py, items)?.into_any().unbind())
        };
        Ok(Self {
            run_id: match accounting.run_id {
                Some(run_id) => PyString::new(py, run_id).into_any().unbind(),
                None => py.None(),
            },
            iterations: iterations.into_any().unbind(),
            device_totals: totals.into_any().unbind(),
            unattributed_activity_refs: references(&accounting.unattributed_activity_refs)?,
            unmeasured_gpu_activity_refs: references(&accounting.unmeasured_gpu_activity_refs)?,
            owned: Some(Arc::clone(&owned)),
        })
    }
}

#[pymethods]
impl RunAccounting {
    #[new]
    #[pyo3(signature = (run_id, iterations, device_totals, unattributed_activity_refs, unmeasured_gpu_activity_refs))]
    fn new(
        run_id: Py<PyAny>,
        iterations: Py<PyAny>,
        device_totals: Py<PyAny>,
        unattributed_activity_refs: Py<PyAny>,
        unmeasured_gpu_activity_refs: Py<PyAny>,
    ) -> Self {
        Self {
            run_id,
            iterations,
            device_totals,
            unattributed_activity_refs,
            unmeasured_gpu_activity_refs,
            owned: None,
        }
    }
}

/// The Rust events of a sequence of Python records; legacy records and
/// other objects take no part, as in stormlog.
/// The events of a sequence of records and, for each, the object it came
/// as where that was one of tally's events.
type Events = (Vec<Arc<CoreEvent>>, Vec<Option<Py<PyAny>>>);

fn events_of(records: &Bound<'_, PyAny>) -> PyResult<Events> {
    let capacity = records.len().unwrap_or(0);
    let (mut events, mut objects) = (Vec::with_capacity(capacity), Vec::with_capacity(capacity));
    for record in records.try_iter()? {
        let record = record?;
        if let Evidence::Event(event) = evidence(&record)? {
            let own = record.cast::<crate::model::PyEvent>().is_ok();
            objects.push(own.then(|| record.unbind()));
            events.push(event);
        }
    }
    Ok((events, objects))
}

/// Deduplicate events, then resolve references independent of delivery order.
#[pyfunction]
pub fn resolve_inference_events(py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<CorrelationGraph> {
    let (events, objects) = events_of(records)?;
    let graph = py
        .detach(|| {
            OwnedGraph::try_new(events, |events| tally_resolve::resolve_inference_events(events.iter()))
        })
        .map_err(invalid)?;
    Ok(CorrelationGraph::of(Arc::new(GraphData::Events(graph)), objects))
}

/// Keep summed activity, interval union, and iteration elapsed separate.
#[pyfunction]
pub fn account_gpu_time(py: Python<'_>, graph: &Bound<'_, PyAny>) -> PyResult<RunAccounting> {
    let Ok(graph) = graph.cast::<CorrelationGraph>() else {
        return Err(PyTypeError::new_err("graph must be a tally.accounting.CorrelationGraph"));
    };
    let data = Arc::clone(&graph.get().data);
    let owned = Arc::new(py.detach(|| account(data)));
    RunAccounting::from_owned(py, owned)
}

/// Validate an explicit model against one measured iteration GPU budget.
#[pyfunction]
#[pyo3(signature = (graph, accounting, *, iteration_ref, device_clock, shares, unattributed_ns))]
pub fn validate_request_shares(
    py: Python<'_>,
    graph: &Bound<'_, PyAny>,
    accounting: &Bound<'_, PyAny>,
    iteration_ref: &Bound<'_, PyAny>,
    device_clock: &Bound<'_, PyAny>,
    shares: &Bound<'_, PyAny>,
    unattributed_ns: &Bound<'_, PyAny>,
) -> PyResult<ShareBudget> {
    let Ok(graph) = graph.cast::<CorrelationGraph>() else {
        return Err(PyTypeError::new_err("graph must be a tally.accounting.CorrelationGraph"));
    };
    let owned = accounting.cast::<RunAccounting>().ok().and_then(|accounting| accounting.get().owned.clone());
    let Some(owned) = owned else {
        return Err(PyTypeError::new_err("accounting must come from tally.accounting.account_gpu_time"));
    };
    let no_budget = || invalid(tally_gpu_time::ShareError::NoBudget);
    let iteration = PyEntityRef::extract(iteration_ref, "iteration_ref").map_err(|_| no_budget())?;
    let (uuid, domain, kind) = DeviceClock::parts(device_clock).ok_or_else(no_budget)?;
    let clock = CoreClock::new(&uuid, &domain, kind);
    let share_objects: Vec<Bound<'_, PyAny>> = shares.try_iter()?.collect::<PyResult<_>>()?;
    let estimates = share_objects.iter().map(share_of).collect::<PyResult<Vec<_>>>()?;
    let remainder = wide_integer(unattributed_ns);
    let accounting = owned.borrow_dependent();
    let budget = match &*graph.get().data {
        GraphData::Events(events) => tally_gpu_time::validate_request_shares(
            events.borrow_dependent(),
            accounting,
            &iteration,
            &clock,
            &estimates,
            remainder,
        ),
        GraphData::Streamed(run) => tally_gpu_time::validate_request_shares(
            &**run, accounting, &iteration, &clock, &estimates, remainder,
        ),
    }
    .map_err(invalid)?;
    Ok(ShareBudget {
        iteration_ref: iteration_ref.clone().unbind(),
        device_clock: device_clock.clone().unbind(),
        budget_ns: budget.budget_ns.into_pyobject(py)?.into_any().unbind(),
        shares: PyTuple::new(py, share_objects)?.into_any().unbind(),
        unattributed_ns: unattributed_ns.clone().unbind(),
    })
}

/// Python objects beside the Rust events they stand for.
type Alignments<'py> = (Vec<Bound<'py, PyAny>>, Vec<Arc<CoreEvent>>);

/// The alignment events among Python objects, with their positions.
fn alignment_events<'py>(alignments: &Bound<'py, PyAny>) -> PyResult<Alignments<'py>> {
    let mut objects = Vec::new();
    let mut events = Vec::new();
    for item in alignments.try_iter()? {
        let item = item?;
        if let Evidence::Event(event) = evidence(&item)? {
            objects.push(item);
            events.push(event);
        }
    }
    Ok((objects, events))
}

fn timestamp_argument(value: &Bound<'_, PyAny>) -> PyResult<i128> {
    let wide = wide_integer(value);
    if wide < 0 {
        return Err(invalid(tally_clock::AlignError::NegativeTimestamp));
    }
    Ok(wide)
}

/// Translate one timestamp while preserving calibration uncertainty.
#[pyfunction]
#[pyo3(signature = (timestamp_ns, *, from_clock_domain, to_clock_domain, alignments))]
pub fn align_timestamp(
    py: Python<'_>,
    timestamp_ns: &Bound<'_, PyAny>,
    from_clock_domain: &str,
    to_clock_domain: &str,
    alignments: &Bound<'_, PyAny>,
) -> PyResult<AlignedTimestamp> {
    let timestamp = timestamp_argument(timestamp_ns)?;
    let (_, events) = alignment_events(alignments)?;
    let aligned = tally_clock::align_timestamp(
        timestamp,
        from_clock_domain,
        to_clock_domain,
        events.iter().map(|e| &**e),
    )
    .map_err(|error| invalid(error.stormlog_message()))?;
    Ok(AlignedTimestamp {
        value_ns: aligned.value_ns.into_pyobject(py)?.into_any().unbind(),
        uncertainty_ns: aligned.uncertainty_ns.into_pyobject(py)?.into_any().unbind(),
        clock_domain: PyString::new(py, aligned.clock_domain).into_any().unbind(),
    })
}

/// Return the alignments whose domains and validity window cover a timestamp.
#[pyfunction]
#[pyo3(signature = (timestamp_ns, *, from_clock_domain, to_clock_domain, alignments))]
pub fn covering_alignments<'py>(
    timestamp_ns: &Bound<'py, PyAny>,
    from_clock_domain: &str,
    to_clock_domain: &str,
    alignments: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let timestamp: i128 = timestamp_ns.extract()?;
    let (objects, events) = alignment_events(alignments)?;
    let covering = tally_clock::covering_alignments(
        timestamp,
        from_clock_domain,
        to_clock_domain,
        events.iter().map(|e| &**e),
    );
    Ok(covering
        .into_iter()
        .filter_map(|found| events.iter().position(|event| std::ptr::eq(&**event, found)))
        .map(|index| objects[index].clone())
        .collect())
}

/// The interval the true offset lies in: `offset ± uncertainty`, except for
/// a legacy execution-import alignment, whose offset is the bracket's lower
/// end and whose `gap_ns` is its width.
#[pyfunction]
pub fn alignment_offset_bounds(alignment: &Bound<'_, PyAny>) -> PyResult<(i128, i128)> {
    match evidence(alignment)? {
        Evidence::Event(event) => tally_clock::alignment_offset_bounds(&event)
            .ok_or_else(|| PyValueError::new_err("alignment must be a ClockAlignmentEvent")),
        _ => Err(PyValueError::new_err("alignment must be a ClockAlignmentEvent")),
    }
}

/// Reads the artifacts (or traces) of one run and accounts its GPU time as
/// `tally account` does: streamed, no event kept, the GIL released.
/// `run_id` is the traces' run (`tally account --run-id`; by default
/// derived from their paths). Returns `(graph, accounting)`; the graph has
/// no event tables.
#[pyfunction]
#[pyo3(signature = (paths, *, run_id=None))]
pub fn account_paths(
    py: Python<'_>,
    paths: &Bound<'_, PyAny>,
    run_id: Option<String>,
) -> PyResult<(CorrelationGraph, RunAccounting)> {
    let paths = crate::partials::openable(paths)?;
    let reading = crate::partials::Reading { run_id, per_kernel: false, threads: 0 };
    let run = py.detach(|| reading.resolve(&paths, false)).map_err(crate::codec::run_error)?;
    accounted(py, run)
}

/// `(graph, accounting)` of a resolved run, as `account_paths` returns it
/// (and `tally.partials.account`, from the run its partials resolve to).
pub(crate) fn accounted(py: Python<'_>, run: StreamedRun) -> PyResult<(CorrelationGraph, RunAccounting)> {
    let data = Arc::new(GraphData::Streamed(Box::new(run)));
    let owned = Arc::new(py.detach(|| account(Arc::clone(&data))));
    let accounting = RunAccounting::from_owned(py, owned)?;
    Ok((CorrelationGraph::of(data, Vec::new()), accounting))
}

crate::dataclass::frozen_protocol!(CorrelationGraph);
