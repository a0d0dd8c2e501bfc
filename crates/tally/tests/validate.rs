//! `tally validate`: exit codes, the text and JSON reports, standard input
//! and gzip, on the artifact fixtures stormlog judged.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/artifact").join(name)
}

fn tally(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tally"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally starts");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.unwrap_or_default()).expect("write stdin");
    drop(input);
    child.wait_with_output().expect("tally runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("utf-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("utf-8")
}

fn expected() -> Value {
    serde_json::from_slice(&std::fs::read(fixture("expected.json")).expect("expected.json")).expect("json")
}

#[test]
fn valid_artifacts_exit_zero_with_counts() {
    let path = fixture("compact.jsonl");
    let output = tally(&["validate", path.to_str().expect("utf-8 path")], None);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = stdout(&output);
    assert!(
        text.contains("valid: 16 records on 19 lines (3 context definitions, 15 records by context_id)"),
        "{text}"
    );
    assert!(text.lines().any(|line| line.split_whitespace().eq(["infer.activity_ref", "3", "2"])), "{text}");
    assert!(output.stderr.is_empty(), "nothing on stderr when it is not a terminal");
}

#[test]
fn json_report_counts_what_stormlog_loaded() {
    let expectations = expected();
    for name in ["embedded.jsonl", "compact.jsonl", "legacy_mixed.jsonl", "gzip.jsonl.gz"] {
        let path = fixture(name);
        let output = tally(&["validate", "--format", "json", path.to_str().expect("path")], None);
        assert_eq!(output.status.code(), Some(0), "{name}: {output:?}");
        let report: Value = serde_json::from_str(&stdout(&output)).expect("one JSON object");
        assert_eq!(report["valid"], Value::Bool(true));
        // Counts per (event type, schema version) of stormlog's own records.
        let mut theirs = std::collections::BTreeMap::new();
        for line in expectations[name]["records"].as_array().expect("records") {
            let record: Value = serde_json::from_str(line.as_str().expect("line")).expect("record");
            let key = (
                record["event_type"].as_str().expect("type").to_owned(),
                record["schema_version"].as_u64().unwrap_or(1),
            );
            *theirs.entry(key).or_insert(0u64) += 1;
        }
        let ours: std::collections::BTreeMap<(String, u64), u64> = report["counts"]
            .as_array()
            .expect("counts")
            .iter()
            .map(|row| {
                let key = (
                    row["event_type"].as_str().expect("type").to_owned(),
                    row["schema_version"].as_u64().expect("v"),
                );
                (key, row["records"].as_u64().expect("records"))
            })
            .collect();
        assert_eq!(ours, theirs, "{name}");
    }
}

#[test]
fn invalid_artifacts_exit_one_with_the_line() {
    let expectations = expected();
    for name in ["negative_time.jsonl", "conflicting_definition.jsonl", "truncated_last_line.jsonl"] {
        let line = expectations[name]["line"].as_u64().expect("stormlog named a line");
        let path = fixture(name);
        let shown = path.to_str().expect("path");
        let output = tally(&["validate", shown], None);
        assert_eq!(output.status.code(), Some(1), "{name}");
        // As every command reports a rejection: on stderr, file and line first.
        assert!(
            stderr(&output).starts_with(&format!("{shown}: line {line}: ")),
            "{name}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), "", "{name}: nothing on stdout for a rejected input");
        let output = tally(&["validate", "--format", "json", path.to_str().expect("path")], None);
        assert_eq!(output.status.code(), Some(1), "{name}");
        let report: Value = serde_json::from_str(&stdout(&output)).expect("one JSON object");
        assert_eq!(
            (report["valid"].clone(), report["error"]["line"].as_u64()),
            (Value::Bool(false), Some(line))
        );
        let message = report["error"]["message"].as_str().expect("the message");
        assert!(message.starts_with(&format!("{shown}: line {line}: ")), "{message}");
    }
}

#[test]
fn standard_input_plain_and_gzip() {
    for name in ["compact.jsonl", "gzip.jsonl.gz"] {
        let bytes = std::fs::read(fixture(name)).expect("fixture");
        let output = tally(&["validate", "--format", "json", "-"], Some(&bytes));
        assert_eq!(output.status.code(), Some(0), "{name}: {output:?}");
        let report: Value = serde_json::from_str(&stdout(&output)).expect("json");
        assert_eq!((report["file"].as_str(), report["records"].as_u64()), (Some("-"), Some(16)));
    }
    let output = tally(&["validate", "-"], Some(b"{\"schema_version\": 2}\n"));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).starts_with("-: line 1: "), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
}

#[test]
fn usage_errors_exit_two() {
    assert_eq!(tally(&["validate"], None).status.code(), Some(2));
    assert_eq!(tally(&["validate", "--format", "yaml", "x"], None).status.code(), Some(2));
    assert_eq!(tally(&["no-such-command"], None).status.code(), Some(2));
}

#[test]
fn unreadable_files_exit_one() {
    let output = tally(&["validate", "/nonexistent/artifact.jsonl"], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("/nonexistent/artifact.jsonl"), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    // `tally validate FILE | head -c 1`: the reader goes away after a byte.
    let path = fixture("compact.jsonl");
    for format in ["text", "json"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tally"))
            .args(["validate", "--format", format])
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tally starts");
        // Close our end at once: every write of tally's meets a closed pipe.
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("tally runs");
        let message = stderr(&output);
        assert!(!message.contains("panicked"), "{format}: {message}");
        assert!(output.status.success(), "{format}: {:?} {message}", output.status);
    }
}

#[test]
fn a_line_past_the_record_limit_names_the_limit_and_the_flag() {
    let bytes = std::fs::read(fixture("compact.jsonl")).expect("fixture");
    let longest = bytes.split(|byte| *byte == b'\n').map(<[u8]>::len).max().expect("lines");
    let limit = (longest - 1).to_string();
    let output = tally(&["validate", "--max-record-bytes", &limit, "-"], Some(&bytes));
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(message.contains(&format!("record limit of {limit} bytes")), "{message}");
    assert!(message.contains("--max-record-bytes"), "{message}");
    let raised = (longest).to_string();
    let output = tally(&["validate", "--max-record-bytes", &raised, "-"], Some(&bytes));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}
