//! `tally account` and `tally import` of XPlane profiles (`*.xplane.pb`),
//! run as the built binary, against readings made without tally:
//!
//! - the synthetic NVIDIA profile's `synthetic-nvidia-2gpu.expected.json`,
//!   which its generator (python/fixtures/make_xplane_fixtures.py) wrote from
//!   its own event list, not from the file;
//! - for every fixture, the real JAX MI355 profile included,
//!   python/fixtures/xplane_wire.py: the wire format decoded by hand (it is
//!   checked against TensorFlow's generated proto in tally-python's
//!   test_xplane.py), run with the reference Python.
//!
//! Per device: activity count, summed and busy nanoseconds, exactly; and
//! every GPU activity's launch link (correlation id, host runtime call).

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn tally(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally")).args(args).output().unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tally-trace/tests/fixtures/xplane").join(name)
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

const FIXTURES: [&str; 3] = [
    "jax-rocm_mi355_te-fused-attn.xplane.pb",
    "synthetic-nvidia-2gpu.xplane.pb",
    "synthetic-nvidia-2gpu.xplane.pb.gz",
];

/// `(activity_count, summed_ns, busy_ns)` per device, sorted.
type DeviceRows = Vec<(u64, u64, u64)>;
/// Each GPU activity's `(start_ns, end_ns)`, sorted.
type Spans = Vec<(u64, u64)>;
/// Each linked GPU activity's `(correlation id, host call)`, sorted.
type Links = Vec<(u64, String)>;

/// What `tally account --format json` reports per device.
fn account_rows(path: &Path) -> DeviceRows {
    let output = tally(&["account", "--format", "json", text(path)]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut rows: DeviceRows = report["device_totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let field = |name: &str| row[name].as_u64().unwrap();
            (field("activity_count"), field("summed_activity_ns"), field("busy_ns"))
        })
        .collect();
    rows.sort_unstable();
    rows
}

/// What `tally import` writes: each GPU activity's span and launch link.
fn imported(path: &Path) -> (Spans, Links) {
    let dir = tempfile::tempdir().unwrap();
    let artifact = dir.path().join("run.jsonl");
    let output = tally(&["import", text(path), "-o", text(&artifact), "--format", "v2"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let (mut spans, mut links) = (Vec::new(), Vec::new());
    for line in std::fs::read_to_string(&artifact).unwrap().lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        if record["event_type"] != "infer.activity_ref" || record["activity_domain"] != "gpu" {
            continue;
        }
        spans.push((record["start_ns"].as_u64().unwrap(), record["end_ns"].as_u64().unwrap()));
        if let Some(api) = record["metadata"]["launch_api"].as_str() {
            links.push((record["cuda_correlation_id"].as_u64().unwrap(), api.to_owned()));
        }
    }
    spans.sort_unstable();
    links.sort_unstable();
    (spans, links)
}

/// A reading's device rows, spans and links (the shape both readings share).
fn expected(reading: &Value) -> (DeviceRows, Spans, Links) {
    let mut rows: DeviceRows = reading["devices"]
        .as_object()
        .unwrap()
        .values()
        .map(|row| {
            let field = |name: &str| row[name].as_u64().unwrap();
            (field("count"), field("summed_ns"), field("busy_ns"))
        })
        .collect();
    rows.sort_unstable();
    let links = reading["launch_links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|link| (link[0].as_u64().unwrap(), link[1].as_str().unwrap().to_owned()))
        .collect();
    let spans = reading
        .get("spans")
        .and_then(Value::as_array)
        .map(|spans| {
            spans.iter().map(|span| (span[0].as_u64().unwrap(), span[1].as_u64().unwrap())).collect()
        })
        .unwrap_or_default();
    (rows, spans, links)
}

#[test]
fn the_synthetic_profile_accounts_as_its_generator_meant() {
    let meant: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("synthetic-nvidia-2gpu.expected.json")).unwrap(),
    )
    .unwrap();
    let (rows, _, links) = expected(&meant);
    assert_eq!(rows.len(), 2, "two GPU planes");
    for name in ["synthetic-nvidia-2gpu.xplane.pb", "synthetic-nvidia-2gpu.xplane.pb.gz"] {
        let path = fixture(name);
        assert_eq!(account_rows(&path), rows, "{name}");
        let (spans, imported_links) = imported(&path);
        assert_eq!(spans.len() as u64, rows.iter().map(|row| row.0).sum::<u64>(), "{name}");
        assert_eq!(imported_links, links, "{name}");
    }
}

#[test]
fn every_fixture_equals_the_wire_reading() {
    let python = match tally_testkit::reference_python(&["json", "gzip", "struct"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(format!("the independent XPlane reading: {why}")),
    };
    let reader = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/fixtures/xplane_wire.py");
    for name in FIXTURES {
        let path = fixture(name);
        let output = Command::new(&python).arg(&reader).arg(&path).output().unwrap();
        assert!(output.status.success(), "{name}: {}", String::from_utf8_lossy(&output.stderr));
        let reading: Value = serde_json::from_slice(&output.stdout).unwrap();
        let (rows, spans, links) = expected(&reading);
        assert!(!rows.is_empty(), "{name} has GPU activity");
        assert_eq!(account_rows(&path), rows, "{name}");
        let (imported_spans, imported_links) = imported(&path);
        assert_eq!(imported_spans, spans, "{name}");
        assert_eq!(imported_links, links, "{name}");
    }
}
