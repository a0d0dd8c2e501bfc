//! The accounting conformance corpus (`tests/conformance/`), run against the
//! built `tally` binary: every expected output there was computed by
//! stormlog 0.4.3 (python/fixtures/make_accounting_fixtures.py).
//!
//! With `TALLY_PYTHON` set to an interpreter with stormlog, two live checks
//! run as well: the script regenerates the corpus byte for byte, and fresh
//! random artifacts it writes are accounted exactly as stormlog accounts them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tally_clock::query_answer;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance")
}

fn tally(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally")).current_dir(dir).args(args).output().expect("tally runs")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn cases(root: &Path, kind: &str) -> Vec<Value> {
    let manifest = read_json(&root.join("manifest.json"));
    let cases: Vec<Value> = manifest["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|case| case["kind"] == kind)
        .cloned()
        .collect();
    assert!(!cases.is_empty(), "no {kind} cases in {}", root.display());
    cases
}

fn inputs(case: &Value) -> Vec<&str> {
    case["inputs"].as_array().expect("inputs").iter().map(|input| input.as_str().expect("path")).collect()
}

/// Runs every account case of a corpus: exact JSON values and exact bytes.
fn check_account_cases(root: &Path) {
    for case in cases(root, "account") {
        let mut args = vec!["account", "--format", "json"];
        args.extend(inputs(&case));
        let output = tally(root, &args);
        let name = &case["name"];
        assert!(output.status.success(), "{name}: {}", String::from_utf8_lossy(&output.stderr));
        let expected_path = root.join(case["expected"].as_str().expect("expected"));
        let got: Value = serde_json::from_slice(&output.stdout).expect("tally prints JSON");
        assert_eq!(got, read_json(&expected_path), "{name}: values differ from stormlog's");
        let expected_bytes = std::fs::read(&expected_path).expect("readable");
        assert!(output.stdout == expected_bytes, "{name}: same values, different formatting");
    }
}

#[test]
fn accounting_matches_stormlog_on_every_corpus_artifact() {
    check_account_cases(&corpus());
}

#[test]
fn rejected_artifacts_exit_1_naming_file_line_and_rule() {
    let root = corpus();
    for case in cases(&root, "rejected") {
        let expected = read_json(&root.join(case["expected"].as_str().expect("expected")));
        let mut args = vec!["account", "--format", "json"];
        args.extend(inputs(&case));
        let output = tally(&root, &args);
        let name = &case["name"];
        assert_eq!(output.status.code(), Some(1), "{name}");
        assert!(output.stdout.is_empty(), "{name}: printed to stdout");
        let message = format!(
            "{}: line {}: {}\n",
            expected["file"].as_str().expect("file"),
            expected["line"],
            expected["message"].as_str().expect("message")
        );
        assert_eq!(String::from_utf8_lossy(&output.stderr), message, "{name}");
        // The table form rejects the same way.
        let mut table = vec!["account"];
        table.extend(inputs(&case));
        let output = tally(&root, &table);
        assert_eq!((output.status.code(), output.stdout.is_empty()), (Some(1), true), "{name}");
    }
}

#[test]
fn share_models_are_judged_as_stormlog_judges_them() {
    let root = corpus();
    let mut rules = std::collections::BTreeSet::new();
    for case in cases(&root, "shares") {
        let expected = read_json(&root.join(case["expected"].as_str().expect("expected")));
        let model = case["model"].as_str().expect("model");
        let mut args = vec!["shares", "--format", "json", "--model", model];
        args.extend(inputs(&case));
        let output = tally(&root, &args);
        let name = &case["name"];
        let got: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| panic!("{name}: {}", String::from_utf8_lossy(&output.stderr)));
        assert_eq!(got, expected, "{name}");
        let valid = expected["valid"] == Value::Bool(true);
        assert_eq!(output.status.code(), Some(if valid { 0 } else { 1 }), "{name}");
        if let Some(rule) = expected["rule"].as_str() {
            rules.insert(rule.to_owned());
        }
    }
    // Every rule of validate_request_shares is exercised.
    for rule in [
        "negative-duration",
        "missing-model",
        "no-budget",
        "negative-remainder",
        "not-member",
        "duplicate-share",
        "generic-and-attempt",
        "several-models",
        "sum-mismatch",
    ] {
        assert!(rules.contains(rule), "no share case breaks {rule}");
    }
}

#[test]
fn alignments_translate_as_stormlog_translates_them() {
    let root = corpus();
    for case in cases(&root, "align") {
        let mut records = Vec::new();
        for input in inputs(&case) {
            records.extend(tally_artifact::read_artifact(&root.join(input)).expect("corpus artifact reads"));
        }
        let graph = tally_resolve::resolve_inference_events(&records).expect("resolves");
        let alignments: Vec<_> = graph.alignment_events().collect();
        let queries = read_json(&root.join(case["expected"].as_str().expect("expected")));
        let mut errors = 0;
        for query in queries.as_array().expect("queries") {
            let timestamp = i128::from(query["timestamp_ns"].as_i64().expect("integer"));
            let (from, to) = (query["from"].as_str().expect("from"), query["to"].as_str().expect("to"));
            // The expected answer is the query's object without the query.
            let mut expected = query.clone();
            for key in ["timestamp_ns", "from", "to"] {
                expected.as_object_mut().expect("object").remove(key);
            }
            errors += usize::from(expected.get("error").is_some());
            let answer = query_answer(timestamp, from, to, alignments.iter().copied());
            assert_eq!(answer, expected, "{query}");
        }
        assert!(errors > 0, "no query of {} is refused", case["name"]);
    }
}

/// The reference Python with stormlog, or `None` after saying why.
fn reference_python() -> Option<PathBuf> {
    tally_testkit::reference_python(&["stormlog"]).map_err(tally_testkit::skip).ok()
}

fn run_script(python: &Path, args: &[&str]) {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/fixtures/make_accounting_fixtures.py");
    let output = Command::new(python).arg(script).args(args).output().expect("python runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path.strip_prefix(root).expect("under root").to_path_buf());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn live_the_script_regenerates_the_committed_corpus() {
    let Some(python) = reference_python() else { return };
    let scratch = tempfile::tempdir().expect("tempdir");
    run_script(&python, &["--out", scratch.path().to_str().expect("utf-8 path")]);
    let committed: Vec<PathBuf> =
        files_under(&corpus()).into_iter().filter(|path| path != Path::new("README.md")).collect();
    assert_eq!(files_under(scratch.path()), committed);
    for path in committed {
        let fresh = std::fs::read(scratch.path().join(&path)).expect("regenerated");
        assert!(
            fresh == std::fs::read(corpus().join(&path)).expect("committed"),
            "{} differs",
            path.display()
        );
    }
}

#[test]
fn live_fresh_random_artifacts_are_accounted_as_stormlog_accounts_them() {
    let Some(python) = reference_python() else { return };
    let scratch = tempfile::tempdir().expect("tempdir");
    run_script(&python, &["--out", scratch.path().to_str().expect("utf-8 path"), "--random", "6"]);
    check_account_cases(scratch.path());
}

#[test]
fn live_the_example_run_is_accounted_as_stormlog_accounts_it() {
    let Some(python) = reference_python() else { return };
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/serving-run.jsonl");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/fixtures/make_accounting_fixtures.py");
    let reference =
        Command::new(python).arg(script).arg("--account").arg(&example).output().expect("python runs");
    assert!(reference.status.success(), "{}", String::from_utf8_lossy(&reference.stderr));
    let ours = tally(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &["account", "--format", "json", example.to_str().expect("utf-8")],
    );
    assert!(ours.status.success());
    assert_eq!(String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&reference.stdout));
}

#[test]
fn the_example_run_reads_well_as_a_table() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/serving-run.jsonl");
    let output = tally(Path::new(env!("CARGO_MANIFEST_DIR")), &["account", example.to_str().expect("utf-8")]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("utf-8");
    for expected in [
        "run serve-llama-8b-2024-06-01T12:00Z",
        "GPU time per device clock",
        "GPU-5d1c0c3a cuda:0 (device)",
        "Busy time per stream",
        "Iterations: 50",
        "unattributed activities:   10",
        "unmeasured GPU activities: 2",
        "unresolved references:     5 (5 request, 0 attempt, 0 iteration)",
        "hint:",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn detail_adds_per_device_extras_that_agree_with_the_totals() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/serving-run.jsonl");
    let output = tally(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &["account", "--format", "json", "--detail", example.to_str().expect("utf-8")],
    );
    assert!(output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let totals = report["device_totals"].as_array().expect("device_totals");
    let details = report["device_detail"].as_array().expect("device_detail");
    assert_eq!(totals.len(), details.len());
    for (total, detail) in totals.iter().zip(details) {
        assert_eq!(total["device_uuid"], detail["device_uuid"]);
        let busy = total["busy_ns"].as_u64().expect("integer");
        let envelope = detail["envelope_end_ns"].as_u64().expect("end")
            - detail["envelope_start_ns"].as_u64().expect("start");
        assert_eq!(detail["idle_ns"].as_u64(), Some(envelope - busy));
        assert!(detail["longest_idle_gap_ns"].as_u64() <= detail["idle_ns"].as_u64());
        assert!(
            detail["peak_concurrency"].as_u64().expect("integer") >= 2,
            "the example overlaps NCCL and compute"
        );
        for stream in detail["streams"].as_array().expect("streams") {
            assert!(stream["busy_ns"].as_u64().expect("integer") <= busy);
        }
    }
    // Without --detail the object has exactly the keys.
    let plain = tally(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &["account", "--format", "json", example.to_str().expect("utf-8")],
    );
    let plain: Value = serde_json::from_slice(&plain.stdout).expect("JSON");
    let keys: Vec<&str> = plain.as_object().expect("object").keys().map(String::as_str).collect();
    let mut expected = vec![
        "run_id",
        "counts",
        "device_totals",
        "iterations",
        "unattributed_activity_refs",
        "unmeasured_gpu_activity_refs",
        "unresolved",
    ];
    expected.sort_unstable();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(keys, expected);
}
