//! `tally import`, `tally export` and `tally account` on traces, run as the
//! built binary.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use proptest::strategy::Strategy as _;
use serde_json::Value;

fn tally(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally")).args(args).output().unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tally-trace/tests/fixtures").join(name)
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `tally account --format json`'s device totals and per-iteration figures.
fn accounting(inputs: &[&str]) -> (Value, Value) {
    let mut args = vec!["account", "--format", "json"];
    args.extend_from_slice(inputs);
    let output = tally(&args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    (report["device_totals"].clone(), report["iterations"].clone())
}

#[test]
fn an_imported_artifact_accounts_as_the_traces_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let ranks = [fixture("kineto/sampled-rank-0.json.gz"), fixture("kineto/sampled-rank-1.json.gz")];
    for format in ["v2", "v4"] {
        let artifact = dir.path().join(format!("run-{format}.jsonl"));
        let output =
            tally(&["import", text(&ranks[0]), text(&ranks[1]), "-o", text(&artifact), "--format", format]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("1204 GPU events (1204 linked to an iteration)"), "{stderr}");
        let validate = tally(&["validate", text(&artifact)]);
        assert!(validate.status.success(), "{}", String::from_utf8_lossy(&validate.stdout));
        let from_artifact = accounting(&[text(&artifact)]);
        let from_traces = accounting(&[text(&ranks[0]), text(&ranks[1])]);
        assert_eq!(from_artifact, from_traces, "{format}");
        let totals = from_traces.0.as_array().unwrap();
        assert_eq!(totals.len(), 2, "one device clock per rank");
        let busy: Vec<u64> = totals.iter().map(|row| row["busy_ns"].as_u64().unwrap()).collect();
        // The ranks' union of kernels, copies and sets, as HTA also merges them.
        let mut busy_sorted = busy.clone();
        busy_sorted.sort_unstable();
        assert_eq!(busy_sorted, vec![547_656_000, 580_050_000]);
        assert_eq!(from_traces.1.as_array().unwrap().len(), 4, "two ProfilerSteps per rank");
    }
}

#[test]
fn export_writes_a_timeline_of_a_trace_or_an_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixture("nsys/full.sqlite");
    let timeline = dir.path().join("timeline.json");
    let output = tally(&["export", text(&trace), "-o", text(&timeline)]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let document: Value = serde_json::from_str(&std::fs::read_to_string(&timeline).unwrap()).unwrap();
    let slices =
        document["traceEvents"].as_array().unwrap().iter().filter(|event| event["ph"] == "X").count();
    assert!(slices > 0);
    let artifact = dir.path().join("run.jsonl");
    assert!(tally(&["import", text(&trace), "-o", text(&artifact)]).status.success());
    let again = dir.path().join("again.json");
    assert!(tally(&["export", text(&artifact), "-o", text(&again)]).status.success());
    let document: Value = serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
    let slices_again =
        document["traceEvents"].as_array().unwrap().iter().filter(|event| event["ph"] == "X").count();
    assert_eq!(slices, slices_again);
}

#[test]
fn a_broken_trace_fails_with_its_name_and_leaves_no_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1"#).unwrap();
    let artifact = dir.path().join("out.jsonl");
    let output = tally(&["import", text(&broken), "-o", text(&artifact)]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("broken.json") && stderr.contains("truncated"), "{stderr}");
    assert!(!artifact.exists());
    let dry = tally(&["import", "--dry-run", text(&fixture("kineto/rocm-mi250-train.json.gz"))]);
    assert!(dry.status.success());
    assert!(String::from_utf8_lossy(&dry.stderr).contains("(dry run: none written)"));
    assert!(dry.stdout.is_empty());
    let pattern = tally(&["import", text(&broken), "-o", text(&artifact), "--iteration-pattern", "("]);
    assert!(!pattern.status.success());
    assert!(String::from_utf8_lossy(&pattern.stderr).contains("--iteration-pattern"));
}

#[test]
fn long_device_clock_names_are_numbered_with_a_legend() {
    let ranks = [fixture("kineto/sampled-rank-0.json.gz"), fixture("kineto/sampled-rank-1.json.gz")];
    let (totals, _) = accounting(&[text(&ranks[0]), text(&ranks[1])]);
    let output = tally(&["account", text(&ranks[0]), text(&ranks[1])]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let table = String::from_utf8(output.stdout).unwrap();
    for (index, total) in totals.as_array().unwrap().iter().enumerate() {
        let full = format!(
            "{} {} ({})",
            total["device_uuid"].as_str().unwrap(),
            total["clock_domain"].as_str().unwrap(),
            total["clock_kind"].as_str().unwrap()
        );
        assert!(full.len() > 48, "the fixture's names are long: {full}");
        let legend = format!("device {} = {full}", index + 1);
        assert_eq!(table.lines().filter(|line| line.trim() == legend).count(), 1, "{table}");
    }
    let busy_row = table.lines().find(|line| line.trim_start().starts_with("device 1 ")).unwrap();
    assert!(busy_row.len() < 120, "figures stay on screen: {busy_row}");
}

/// Every command that reads an artifact applies the same resolution rules:
/// what `tally account` (and stormlog) rejects, `tally export` rejects too,
/// at the same line, and writes no timeline.
#[test]
fn export_rejects_what_account_rejects() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/rejected");
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|extension| extension != "jsonl") {
            continue;
        }
        let account = tally(&["account", text(&path)]);
        assert_eq!(account.status.code(), Some(1), "{}", path.display());
        let timeline = dir.path().join("timeline.json");
        let export = tally(&["export", text(&path), "-o", text(&timeline)]);
        assert_eq!(
            export.status.code(),
            Some(1),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&export.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&export.stderr),
            String::from_utf8_lossy(&account.stderr),
            "{}: the same rejection",
            path.display()
        );
        assert!(!timeline.exists(), "{}: no timeline for a rejected input", path.display());
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} rejected cases found");
}

/// `tally import` (records, creation time aside) and `tally account --format
/// json` of `files` on `threads` threads.
fn import_and_account(files: &[PathBuf], threads: usize) -> (Vec<String>, String) {
    let threads = threads.to_string();
    let mut args = vec!["--run-id", "r", "--threads", &threads];
    args.extend(files.iter().map(|path| text(path)));
    let imported = tally(&[&["import", "-o", "-"][..], &args].concat());
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    let records = String::from_utf8(imported.stdout)
        .unwrap()
        .lines()
        .filter(|line| !line.contains("\"created_at_ns\""))
        .map(str::to_owned)
        .collect();
    let accounted = tally(&[&["account", "--format", "json"][..], &args].concat());
    assert!(accounted.status.success(), "{}", String::from_utf8_lossy(&accounted.stderr));
    (records, String::from_utf8(accounted.stdout).unwrap())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(6))]

    /// Rank traces read on 1, 2 or 4 threads, in any order: the same artifact
    /// for one order whatever the threads, the same records of each file
    /// (the capabilities record lists the traces in the order given) and the
    /// same accounting whatever the order.
    #[test]
    fn threads_and_file_order_give_the_same_artifact_and_accounting(
        order in proptest::strategy::Just(vec![
            "kineto/sampled-rank-0.json.gz",
            "kineto/sampled-rank-1.json.gz",
            "kineto/triton-single-kernel.json.gz",
            "kineto/alexnet-cuda-sync.json.gz",
        ]).prop_shuffle(),
        threads in proptest::sample::select(vec![2usize, 4]),
    ) {
        let files: Vec<PathBuf> = order.iter().map(|name| fixture(name)).collect();
        let (one_records, one_accounting) = import_and_account(&files, 1);
        let (records, accounting) = import_and_account(&files, threads);
        proptest::prop_assert_eq!(&one_records, &records);
        proptest::prop_assert_eq!(&one_accounting, &accounting);
        let mut sorted = files.clone();
        sorted.sort();
        let (canonical_records, canonical_accounting) = import_and_account(&sorted, threads);
        let set = |records: &[String]| {
            let mut set: Vec<&String> =
                records.iter().filter(|line| !line.contains("\"trace_collector\"")).collect();
            set.sort();
            set.into_iter().cloned().collect::<Vec<String>>()
        };
        proptest::prop_assert_eq!(set(&one_records), set(&canonical_records));
        proptest::prop_assert_eq!(one_accounting, canonical_accounting);
    }
}
