//! Importing the Nsight Systems SQLite exports that
//! `tests/fixtures/nsys/make_nsys.py` writes, against the figures the script
//! computed from the rows it wrote (`expected.json`).

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::*;
use serde_json::{Value, json};
use tally_core::{ActivityDomain, EventBody};
use tally_trace::{Detail, TraceErrorKind, TraceFormat, detect_format, import_traces_to_vec};

fn nsys(name: &str) -> PathBuf {
    fixture(&format!("nsys/{name}"))
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(nsys("expected.json")).unwrap()).unwrap()
}

#[test]
fn devices_are_named_by_process_and_measured_exactly() {
    let expected = &expected()["full"];
    let (events, summary) = import(&[nsys("full.sqlite")], Detail::Launch);
    let trace = &summary.traces[0];
    assert_eq!(trace["format"], "nsys");
    assert_eq!(trace["gpu_events"], expected["gpu_events"]);
    assert_eq!(trace["runtime_calls"], expected["runtime_calls"]);
    assert_eq!(trace["host"], "node-a");
    assert_eq!(trace["missing_tables"], json!([]));
    let figures: BTreeMap<String, Value> = device_figures(&events)
        .into_iter()
        .map(|((uuid, _), (busy, summed))| {
            (uuid, json!({"busy_ns": busy as u64, "summed_ns": summed as u64}))
        })
        .collect();
    let wanted: BTreeMap<String, Value> =
        expected["devices"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(figures, wanted);
    // Every GPU context names its device and process; times carry the
    // session start.
    let base = expected["base_ns"].as_u64().unwrap();
    for event in &events {
        if let EventBody::ActivityRef(activity) = event.body()
            && activity.activity_domain == ActivityDomain::Gpu
        {
            let context = event.context();
            assert!(context.device_uuid.as_ref().unwrap().starts_with("GPU-"));
            assert!(matches!(context.pid, Some(100 | 200)));
            assert!(activity.span.start_ns().unwrap() > base);
        }
    }
    assert_eq!(trace["devices"]["100/0"]["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(trace["devices"]["100/0"]["device_uuid_source"], "trace");
}

#[test]
fn nvtx_ranges_are_iterations_and_correlation_ids_stay_in_their_process() {
    let expected = &expected()["full"];
    let (events, summary) = import(&[nsys("full.sqlite")], Detail::Launch);
    let figures: BTreeMap<String, Value> = iteration_figures(&events)
        .into_iter()
        .map(|(name, (busy, summed))| {
            (
                name.unwrap_or_else(|| "None".to_owned()),
                json!({"busy_ns": busy as u64, "summed_ns": summed as u64}),
            )
        })
        .collect();
    let wanted: BTreeMap<String, Value> =
        expected["iterations"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(figures, wanted);
    let spans: BTreeMap<String, Value> = events
        .iter()
        .filter_map(|event| match event.body() {
            EventBody::Iteration(iteration) => {
                let (start, end) = iteration.span.bounds().unwrap();
                Some((iteration.iteration_ref.id().to_owned(), json!([start, end])))
            }
            _ => None,
        })
        .collect();
    let wanted: BTreeMap<String, Value> = expected["iteration_spans"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(spans, wanted, "the stormlog range emits no iteration, the NVTX mark is not a range");
    // The graph's two kernels are one launch record with their intervals.
    let graph: Vec<_> = events
        .iter()
        .filter(|event| matches!(event.body(), EventBody::ActivityRef(a) if a.graph_id == Some(42)))
        .collect();
    assert_eq!(graph.len(), 1);
    assert_eq!(graph[0].metadata().get("intervals").unwrap(), &json!([[0, 500], [600, 400]]));
    // Traced per node, the graph's kernels link to the graph's launch.
    assert_eq!(graph[0].metadata().get("launch_api"), Some(&json!("cudaGraphLaunch")));
    assert!(matches!(graph[0].body(), EventBody::ActivityRef(a) if a.cuda_correlation_id == Some(6)));
    assert_eq!(graph[0].metadata().get("cuda_graph_trace"), None, "per-node rows are the kernels themselves");
    assert_eq!(summary.traces[0]["graph_gpu_events"], 2);
    let driver = events.iter().any(|event| {
        matches!(event.body(), EventBody::ActivityRef(a) if a.activity_kind.as_str() == "cuda_driver")
    });
    assert!(driver, "cuLaunchKernel is a driver call");
}

#[test]
fn an_older_export_says_what_it_lacks() {
    let expected = &expected()["old"];
    let (events, summary) = import(&[nsys("old.sqlite")], Detail::Kernel);
    let trace = &summary.traces[0];
    assert_eq!(trace["missing_tables"], expected["missing_tables"]);
    assert_eq!(trace["missing_columns"]["CUPTI_ACTIVITY_KIND_KERNEL"], expected["missing_kernel_columns"]);
    // Graph launches traced per graph are imported, one activity each.
    assert!(trace["not_imported"].as_object().unwrap().is_empty(), "{}", trace["not_imported"]);
    assert_eq!(trace["graph_launches_traced_per_graph"], expected["graph_trace_rows"]);
    assert_eq!(trace["gpu_events"], expected["gpu_events"]);
    assert_eq!(trace["schema_version"], "3.11.0");
    assert!(
        trace["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|note| note.as_str().unwrap().contains("CUDA graph tracing set to node"))
    );
    let graphs: Vec<_> = events
        .iter()
        .filter(|event| event.metadata().get("cuda_graph_trace") == Some(&json!("graph")))
        .collect();
    assert_eq!(graphs.len() as u64, expected["graph_trace_rows"].as_u64().unwrap());
    for graph in graphs {
        assert!(matches!(graph.body(), EventBody::ActivityRef(a) if a.graph_id == Some(5)
            && a.activity_kind.as_str() == "gpu_kernel"));
        assert_eq!(graph.metadata().get("unresolved_reason"), Some(&json!("no_launch_record")));
    }
    let figures = device_figures(&events);
    assert_eq!(figures.len(), 1);
    let ((uuid, _), (busy, _)) = figures.into_iter().next().unwrap();
    assert_eq!(uuid, expected["device_uuid"].as_str().unwrap(), "the one listed GPU is device 0");
    assert_eq!(busy as u64, expected["busy_ns"].as_u64().unwrap());
    // Kernel names come from demangledName when shortName is missing.
    let names: Vec<&str> = events
        .iter()
        .filter_map(|event| event.metadata().get("first_name").and_then(Value::as_str))
        .collect();
    assert_eq!(names, vec!["k1", "k2", "k3", "CUDA graph 5", "CUDA graph 5", "CUDA graph 5"]);
}

#[test]
fn databases_that_are_not_usable_exports_are_refused_clearly() {
    for (name, words) in [("no_cuda.sqlite", "no CUDA activity"), ("not_export.sqlite", "no StringIds table")]
    {
        let error = import_traces_to_vec(&[nsys(name)], &options(Detail::Launch)).unwrap_err();
        assert!(matches!(error.kind(), TraceErrorKind::NotNsysExport(_)), "{error}");
        assert!(error.to_string().contains(words), "{error}");
        assert!(error.to_string().contains(name), "{error}");
    }
    assert_eq!(detect_format(&nsys("full.sqlite")).unwrap(), Some(TraceFormat::NsysSqlite));
}
