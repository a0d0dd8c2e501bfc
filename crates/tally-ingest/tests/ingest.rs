//! A run read through tally-ingest is the run the in-memory path resolves,
//! and a rejection names the file and line it came from.

use std::path::{Path, PathBuf};

use tally_gpu_time::{AccountingReport, account_gpu_time};
use tally_ingest::{RunError, resolve_paths};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/serving-run.jsonl")
}

/// The example's lines in embedded form (each carries its context), so any
/// split of them is a valid set of files.
fn embedded_lines() -> Vec<String> {
    let records = tally_artifact::read_artifact(&example()).expect("valid artifact");
    let text = tally_artifact::encode_artifact(&records, tally_artifact::Form::Embedded).expect("encodable");
    String::from_utf8(text).expect("UTF-8").lines().map(str::to_owned).collect()
}

fn in_memory_report(paths: &[PathBuf]) -> AccountingReport {
    let mut records = Vec::new();
    for path in paths {
        records.extend(tally_artifact::read_artifact(path).expect("valid artifact"));
    }
    let graph = tally_resolve::resolve_inference_events(&records).expect("resolvable");
    AccountingReport::of(&graph, &account_gpu_time(&graph), true)
}

#[test]
fn a_streamed_run_accounts_as_the_in_memory_one() {
    let paths = vec![example()];
    let run = resolve_paths(&paths).expect("the example resolves");
    let streamed = AccountingReport::of(&run, &account_gpu_time(&run), true);
    assert_eq!(streamed, in_memory_report(&paths));
    assert!(streamed.counts.activities > 0);
}

#[test]
fn a_file_split_in_two_is_the_same_run() {
    let lines = embedded_lines();
    let directory = tempfile::tempdir().expect("temporary directory");
    let (first, second) = lines.split_at(lines.len() / 2);
    let paths = vec![directory.path().join("a.jsonl"), directory.path().join("b.jsonl")];
    std::fs::write(&paths[0], first.join("\n")).expect("write");
    std::fs::write(&paths[1], second.join("\n")).expect("write");
    let run = resolve_paths(&paths).expect("resolves");
    let report = AccountingReport::of(&run, &account_gpu_time(&run), true);
    assert_eq!(report, in_memory_report(&[example()]));
}

#[test]
fn rejections_name_the_file_and_line() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let bad = directory.path().join("bad.jsonl");
    std::fs::write(&bad, "\n{\"schema_version\": 7, \"event_type\": \"infer.request\"}\n").expect("write");
    let Err(error) = resolve_paths(&[example(), bad.clone()]) else {
        panic!("schema 7 is unknown");
    };
    assert!(matches!(error, RunError::Artifact(_)), "{error:?}");
    let shown = error.to_string();
    assert!(shown.starts_with(&format!("{}: line 2: ", bad.display())), "{shown}");

    // Two files of different runs: a resolution rule, located in the second.
    let other = directory.path().join("other.jsonl");
    let first = embedded_lines()[0].replace("serve-llama", "another-run");
    std::fs::write(&other, format!("{first}\n")).expect("write");
    let Err(error) = resolve_paths(&[example(), other.clone()]) else {
        panic!("two run IDs must be rejected");
    };
    match &error {
        RunError::Resolve { source, line, .. } => {
            assert_eq!((source.as_str(), *line), (other.display().to_string().as_str(), 1));
        }
        other => panic!("expected a resolution error, got {other:?}"),
    }
    assert!(error.to_string().ends_with("correlation artifact contains multiple run_id values"), "{error}");

    let Err(missing) = resolve_paths(&[directory.path().join("absent.jsonl")]) else {
        panic!("a missing file must be rejected");
    };
    assert!(matches!(missing, RunError::Input(_)), "{missing:?}");
}
