//! `tally breakdown` and `tally diff` run as the built binary on the real
//! Kineto traces of `crates/tally-trace/tests/fixtures/kineto/`: every
//! figure equals an independent exact computation from the raw trace
//! events (`breakdown/independent.py`, run on the reference Python), and
//! the busy and summed times sit beside HTA's recorded figures
//! (`hta_golden.json`; live HTA where `import hta` works).

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

const TRACES: [&str; 8] = [
    "nccl-distributed.json.gz",
    "sampled-rank-0.json.gz",
    "sampled-rank-1.json.gz",
    "alexnet-cuda-sync.json.gz",
    "ns-resolution-rank-0.json.gz",
    "rocm-mi250-train.json.gz",
    "triton-single-kernel.json.gz",
    "inference-rank-1-minimal.json.gz",
];

fn tally(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally")).args(args).output().unwrap()
}

fn kineto(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tally-trace/tests/fixtures/kineto").join(name)
}

fn breakdown_json(path: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["breakdown", "--format", "json", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let output = tally(&args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The device ordinal tally's synthesized UUID ends with.
fn ordinal(device: &Value) -> String {
    let uuid = device["device_uuid"].as_str().unwrap();
    uuid.rsplit_once(":device").map(|(_, ordinal)| ordinal.to_owned()).unwrap_or_else(|| uuid.to_owned())
}

#[test]
fn figures_equal_an_independent_computation_from_the_raw_events() {
    let python = match tally_testkit::reference_python(&["json", "decimal", "gzip"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(why),
    };
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/breakdown/independent.py"))
            .unwrap();
    let mut communication_seen = false;
    for name in TRACES {
        let path = kineto(name);
        let mine = breakdown_json(&path, &[]);
        let output = Command::new(&python).args(["-c", &script]).arg(&path).output().unwrap();
        assert!(output.status.success(), "{name}: {}", String::from_utf8_lossy(&output.stderr));
        let theirs: Value = serde_json::from_slice(&output.stdout).unwrap();
        let devices = mine["devices"].as_array().unwrap();
        assert_eq!(devices.len(), theirs.as_object().unwrap().len(), "{name}: device clocks");
        for device in devices {
            let expected = &theirs[ordinal(device)];
            let at = |key: &str| format!("{name} device {}: {key}", ordinal(device));
            for key in
                ["busy_ns", "summed_ns", "count", "categories", "overlap_ns", "exposed_communication_ns"]
            {
                assert_eq!(device[key], expected[key], "{}", at(key));
            }
            for (key, value) in expected["idle"].as_object().unwrap() {
                assert_eq!(&device["idle"][key], value, "{}", at(&format!("idle.{key}")));
            }
            for (key, value) in expected["launch_latency"].as_object().unwrap() {
                assert_eq!(&device["launch_latency"][key], value, "{}", at(&format!("launch_latency.{key}")));
            }
            for (kind, busy) in expected["memory_busy"].as_object().unwrap() {
                assert_eq!(&device["memory"][kind]["busy_ns"], busy, "{}", at(kind));
            }
            let kernels: Vec<Value> = device["kernels"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| {
                    json!([
                        k["name"],
                        k["category"],
                        k["count"],
                        k["summed_ns"],
                        k["busy_ns"],
                        k["min_ns"],
                        k["median_ns"],
                        k["max_ns"]
                    ])
                })
                .collect();
            assert_eq!(Value::from(kernels), expected["kernels"], "{}", at("kernels"));
            let streams: serde_json::Map<String, Value> = device["streams"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| (s["stream_id"].to_string(), s["busy_ns"].clone()))
                .collect();
            assert_eq!(Value::Object(streams), expected["streams"], "{}", at("streams"));
            communication_seen |= device["categories"]["communication"]["busy_ns"].as_u64().unwrap() > 0;
            // The JSON keys the issue fixes.
            for key in [
                "device_uuid",
                "clock_domain",
                "clock_kind",
                "busy_ns",
                "categories",
                "overlap_ns",
                "exposed_communication_ns",
                "kernels",
            ] {
                assert!(device.get(key).is_some(), "{}", at(key));
            }
        }
    }
    assert!(communication_seen, "the NCCL traces have communication");
}

#[test]
fn busy_and_summed_time_beside_htas_figures() {
    let golden: Value =
        serde_json::from_str(&std::fs::read_to_string(kineto("hta_golden.json")).unwrap()).unwrap();
    for name in TRACES {
        let expected = &golden["traces"][name];
        let mine = breakdown_json(&kineto(name), &[]);
        let busy: u64 =
            mine["devices"].as_array().unwrap().iter().map(|d| d["busy_ns"].as_u64().unwrap()).sum();
        let summed: u64 =
            mine["devices"].as_array().unwrap().iter().map(|d| d["summed_ns"].as_u64().unwrap()).sum();
        let hta_busy = expected["merged_busy_us"].as_f64().unwrap();
        let hta_summed = expected["summed_us"].as_f64().unwrap();
        if expected["float_timestamps"] == false {
            // Whole microseconds: HTA's figures and tally's agree exactly.
            assert_eq!(busy as f64, hta_busy * 1000.0, "{name}: busy");
            assert_eq!(summed as f64, hta_summed * 1000.0, "{name}: summed");
        } else {
            // HTA rounds fractional timestamps inward to whole microseconds
            // (tally-trace's kineto test reproduces its figure exactly), so
            // its busy time is smaller, by under 2 µs an interval.
            let count = mine["devices"][0]["count"].as_f64().unwrap();
            assert!(busy as f64 > hta_busy * 1000.0 - 1.0, "{name}: busy {busy} vs HTA {hta_busy} µs");
            assert!((busy as f64) < hta_busy * 1000.0 + 2000.0 * count, "{name}");
        }
    }
}

#[test]
fn hta_live_analyses_are_compared_where_hta_is_installed() {
    match tally_testkit::reference_python(&["hta"]) {
        // The comparisons of HTA's own analyses need HTA, which needs a
        // Python that can install HolisticTraceAnalysis (not this image's);
        // hta_golden.py records what it computed earlier.
        Err(why) => tally_testkit::skip(format!("HTA's live analyses: {why}")),
        Ok(python) => {
            let script = "import sys, logging\nlogging.disable(logging.WARNING)\n\
                from hta.trace_analysis import TraceAnalysis\n\
                import json, pathlib\n\
                p = pathlib.Path(sys.argv[1])\n\
                a = TraceAnalysis(trace_files={0: str(p)}, trace_dir=str(p.parent))\n\
                o = a.get_comm_comp_overlap(visualize=False)\n\
                print(json.dumps(o.to_dict(orient='records')))\n";
            for name in ["sampled-rank-0.json.gz", "nccl-distributed.json.gz"] {
                let output = Command::new(&python).args(["-c", script]).arg(kineto(name)).output().unwrap();
                // HTA's overlap is per step over filtered work (crate docs):
                // a percentage in [0, 100], as tally's ratio over the run.
                assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
                let rows: Value = serde_json::from_slice(&output.stdout).unwrap();
                for row in rows.as_array().unwrap() {
                    let pct = row["comp_comm_overlap_pctg"].as_f64().unwrap();
                    assert!((0.0..=100.0).contains(&pct), "{name}: {pct}");
                }
            }
        }
    }
}

#[test]
fn by_iteration_splits_the_profiler_steps() {
    let mine = breakdown_json(&kineto("nccl-distributed.json.gz"), &["--by", "iteration"]);
    let device = &mine["devices"][0];
    let iterations = device["iterations"].as_array().unwrap();
    assert!(!iterations.is_empty());
    let busy: u64 = iterations.iter().map(|row| row["busy_ns"].as_u64().unwrap()).sum();
    assert!(busy <= device["busy_ns"].as_u64().unwrap());
    for row in iterations {
        let communication = row["categories"]["communication"]["busy_ns"].as_u64().unwrap();
        let overlapped = row["overlap_ns"]["communication&compute"].as_u64().unwrap();
        assert_eq!(row["exposed_communication_ns"].as_u64().unwrap() + overlapped, communication);
    }
    assert!(
        breakdown_json(&kineto("nccl-distributed.json.gz"), &[])["devices"][0].get("iterations").is_none()
    );
}

#[test]
fn category_patterns_move_kernels() {
    let path = kineto("nccl-distributed.json.gz");
    let plain = breakdown_json(&path, &[]);
    let moved = breakdown_json(&path, &["--category-pattern", "compute=nccl*"]);
    let (a, b) = (&plain["devices"][0]["categories"], &moved["devices"][0]["categories"]);
    assert!(a["communication"]["count"].as_u64().unwrap() > 0);
    assert_eq!(b["communication"]["count"], 0);
    assert_eq!(
        b["compute"]["count"].as_u64().unwrap(),
        a["compute"]["count"].as_u64().unwrap() + a["communication"]["count"].as_u64().unwrap()
    );
    assert_eq!(moved["category_patterns"], json!(["compute=nccl*"]));
    let bad = tally(&["breakdown", "--category-pattern", "gpu=*", path.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--category-pattern: \"gpu\" is not a category"));
}

#[test]
fn diff_pairs_devices_and_kernels() {
    let (a, b) = (kineto("sampled-rank-0.json.gz"), kineto("sampled-rank-1.json.gz"));
    let output = tally(&["diff", "--format", "json", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let compared: Value = serde_json::from_slice(&output.stdout).unwrap();
    let device = &compared["devices"][0];
    assert_eq!(device["matched_by"], "position");
    let (busy_a, busy_b) = (
        breakdown_json(&a, &[])["devices"][0]["busy_ns"].clone(),
        breakdown_json(&b, &[])["devices"][0]["busy_ns"].clone(),
    );
    assert_eq!((&device["busy_ns"]["a_ns"], &device["busy_ns"]["b_ns"]), (&busy_a, &busy_b));
    let change = device["busy_ns"]["change_ns"].as_i64().unwrap();
    assert_eq!(change, busy_b.as_i64().unwrap() - busy_a.as_i64().unwrap());
    let changed = device["kernels_changed"].as_array().unwrap();
    assert!(changed.windows(2).all(|pair| {
        pair[0]["summed_ns"]["change_ns"].as_i64().unwrap().abs()
            >= pair[1]["summed_ns"]["change_ns"].as_i64().unwrap().abs()
    }));
    // A run against itself changes nothing.
    let same = tally(&["diff", "--format", "json", a.to_str().unwrap(), a.to_str().unwrap()]);
    let same: Value = serde_json::from_slice(&same.stdout).unwrap();
    let device = &same["devices"][0];
    assert_eq!(device["matched_by"], "clock");
    assert_eq!(device["busy_ns"]["change_ns"], 0);
    assert!(device["kernels_appeared"].as_array().unwrap().is_empty());
    assert!(device["kernels_changed"].as_array().unwrap().iter().all(|k| k["summed_ns"]["change_ns"] == 0));
    let table = tally(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(table.status.success());
    assert!(String::from_utf8_lossy(&table.stdout).contains("kernels changed most"));
}

#[test]
fn bad_input_names_the_file_and_line_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"schema_version\": 2, \"event_type\": \"infer.nope\"}\n").unwrap();
    for command in
        [vec!["breakdown", bad.to_str().unwrap()], vec!["diff", bad.to_str().unwrap(), bad.to_str().unwrap()]]
    {
        let output = tally(&command);
        assert_eq!(output.status.code(), Some(1), "{command:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("bad.jsonl: line 1:"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(output.stdout.is_empty());
    }
    let missing = tally(&["breakdown", dir.path().join("absent.jsonl").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("absent.jsonl"));
}

#[test]
fn help_documents_the_json_keys() {
    let output = tally(&["breakdown", "--help"]);
    let help = String::from_utf8_lossy(&output.stdout);
    for key in [
        "device_uuid",
        "clock_domain",
        "clock_kind",
        "busy_ns",
        "categories",
        "overlap_ns",
        "\"communication&compute\"",
        "\"memory&compute\"",
        "exposed_communication_ns",
        "kernels",
        "summed_ns",
    ] {
        assert!(help.contains(key), "{key} in --help");
    }
}
