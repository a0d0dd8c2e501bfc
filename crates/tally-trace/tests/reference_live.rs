//! Live checks against the Python references, run when `TALLY_PYTHON`
//! names a Python that has them (the test command sets it to `.venv`):
//!
//! - stormlog 0.4.3's Kineto importer on the same traces writes the same GPU
//!   records as tally: IDs, kinds, correlation, streams, launch metadata,
//!   clock domain, process, rank. Spans differ where stormlog's floats do:
//!   it computes `round(ts_us * 1000)` in float64, which for a 16-digit
//!   microsecond stamp (1.7e18 ns, where doubles are 256 ns apart) is off by
//!   up to 128 ns even when the text is a whole number; tally's are the
//!   decimal text exactly, so the test bounds the difference and counts it.
//!   (The producer, and the iterations tally links through ProfilerStep
//!   ranges, differ by design; the test asks for neither.)
//! - HTA's figures, when that Python also has HTA: `hta_golden.py` run again
//!   reproduces the committed `hta_golden.json`.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use regex::Regex;
use serde_json::Value;
use tally_core::{ActivityDomain, EventBody};
use tally_trace::{Detail, DeviceUuidAssignment, DeviceUuids, import_traces_to_vec};

const STORMLOG_IMPORT: &str = "import json, sys\n\
from pathlib import Path\n\
from stormlog.infer.trace_kineto import import_kineto_trace\n\
from stormlog.infer.trace_import import trace_attachment_id\n\
from stormlog.infer.correlation_capture import TraceAttachment\n\
path = Path(sys.argv[1])\n\
attachment = TraceAttachment(attachment_id=trace_attachment_id(path), title='t', path=path.resolve())\n\
capture = import_kineto_trace(path, run_id='r', session_id='s', attachment=attachment,\n\
                              device_uuids={int(sys.argv[3]): sys.argv[2]})\n\
print(json.dumps([event.to_record() for event in capture.events]))\n";

/// The reference Python when it has `module`, or `None` after saying why.
fn python(module: &str) -> Option<PathBuf> {
    tally_testkit::reference_python(&[module]).map_err(tally_testkit::skip).ok()
}

fn stormlog_records(python: &Path, trace: &Path, uuid: &str, device: u64) -> Vec<Value> {
    let output = Command::new(python)
        .args(["-c", STORMLOG_IMPORT])
        .arg(trace)
        .args([uuid, &device.to_string()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn stormlogs_importer_writes_the_same_gpu_records() {
    let Some(python) = python("stormlog") else { return };
    let traces = [
        ("kineto/sampled-rank-0.json.gz", 0),
        ("kineto/alexnet-cuda-sync.json.gz", 0),
        ("kineto/inference-rank-1-minimal.json.gz", 0),
        ("kineto/rocm-mi250-train.json.gz", 2),
        ("kineto/triton-single-kernel.json.gz", 0),
    ];
    let no_iterations = Regex::new("^$").unwrap();
    for (name, device) in traces {
        let path = fixture(name);
        let uuid = "GPU-00000000-1111-2222-3333-444444444444";
        let theirs = stormlog_records(&python, &path, uuid, device);
        let mut options = options(Detail::Launch);
        options.device_uuids = DeviceUuids::new([DeviceUuidAssignment {
            trace: None,
            index: u32::try_from(device).unwrap(),
            uuid: uuid.to_owned(),
        }])
        .unwrap();
        // stormlog links only through its own ranges: ask tally for no
        // ProfilerStep iterations, so both leave the same launches unlinked.
        options.iteration_pattern = no_iterations.clone();
        let (events, _) = import_traces_to_vec(std::slice::from_ref(&path), &options).unwrap();
        let ours: Vec<Value> = events
            .iter()
            .filter(|event| matches!(event.body(), EventBody::ActivityRef(a) if a.activity_domain == ActivityDomain::Gpu))
            .map(|event| Value::Object(event.to_record()))
            .collect();
        if name.contains("minimal") {
            // stormlog matches categories as written: `Kernel` (PyTorch
            // before 1.9) is not `kernel` to it, so it imports nothing.
            assert_eq!((ours.len(), theirs.len()), (4, 0), "{name}");
            continue;
        }
        assert_eq!(ours.len(), theirs.len(), "{name}");
        let mut moved = 0;
        for (mine, reference) in ours.iter().zip(&theirs) {
            for key in [
                "event_id",
                "activity_kind",
                "activity_domain",
                "attribution_status",
                "trace_attachment_id",
                "cuda_correlation_id",
                "stream_id",
                "graph_id",
                "schema_version",
            ] {
                assert_eq!(mine[key], reference[key], "{name}: {key} of {}", reference["event_id"]);
            }
            assert_eq!(mine["activity_ref"]["id"], reference["activity_ref"]["id"], "{name}");
            for key in [
                "clock_domain",
                "clock_kind",
                "source",
                "pid",
                "device_uuid",
                "rank",
                "world_size",
                "backend_version",
            ] {
                assert_eq!(mine["context"][key], reference["context"][key], "{name}: context.{key}");
            }
            // Durations derive from the spans; the rest must agree exactly.
            let mut metadata = mine["metadata"].clone();
            let mut expected = reference["metadata"].clone();
            for map in [&mut metadata, &mut expected] {
                for key in ["summed_duration_ns", "intervals", "busy_ns"] {
                    map.as_object_mut().unwrap().remove(key);
                }
            }
            assert_eq!(metadata, expected, "{name}: metadata of {}", reference["event_id"]);
            assert_eq!(mine["metadata"]["intervals"].is_null(), reference["metadata"]["intervals"].is_null());
            for key in ["start_ns", "end_ns"] {
                let (a, b) = (mine[key].as_u64().unwrap(), reference[key].as_u64().unwrap());
                assert!(a.abs_diff(b) <= 128, "{name}: {key} {a} vs stormlog's {b}");
                moved += usize::from(a != b);
            }
        }
        eprintln!(
            "{name}: {moved} of {} span ends differ from stormlog's float reading (by <= 128 ns)",
            2 * ours.len()
        );
    }
}

#[test]
fn hta_golden_figures_are_reproducible() {
    let Some(python) = python("hta") else { return };
    let script = fixture("kineto/hta_golden.py");
    let output = Command::new(&python).arg(&script).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let fresh: Value = serde_json::from_slice(&output.stdout).unwrap();
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("kineto/hta_golden.json")).unwrap()).unwrap();
    for (name, figures) in committed["traces"].as_object().unwrap() {
        for key in ["merged_busy_us", "summed_us", "gpu_events", "float_timestamps"] {
            assert_eq!(fresh["traces"][name][key], figures[key], "{name}: {key}");
        }
    }
}
