//! tally accepts exactly the artifacts stormlog 0.4.3 accepts, with the same
//! records, and rejects the others on the same line; and it writes the bytes
//! stormlog writes. The fixtures and their expectations come from
//! `python/fixtures/make_artifact_fixtures.py`, which ran stormlog on each.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tally_artifact::pyjson::{Separators, to_python_json};
use tally_artifact::{
    ArtifactError, ArtifactReader, Form, ReadOptions, decompressed, encode_artifact, read_artifact,
    read_batches,
};
use tally_core::InferenceRecord;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/artifact")
}

fn serialized(records: &[InferenceRecord]) -> Vec<String> {
    records
        .iter()
        .map(|record| to_python_json(&Value::Object(record.to_record()), Separators::DEFAULT))
        .collect()
}

type Outcome = Result<Vec<InferenceRecord>, ArtifactError>;

fn with_options(path: &Path, options: &ReadOptions) -> Outcome {
    let file = File::open(path).map_err(|error| panic!("{}: {error}", path.display()))?;
    let mut records = Vec::new();
    read_batches(file, &path.display().to_string(), options, |batch| {
        records.extend(batch.records);
        Ok(())
    })?;
    Ok(records)
}

fn sequential(path: &Path) -> Outcome {
    let file = File::open(path).map_err(|error| panic!("{}: {error}", path.display()))?;
    let reader = std::io::BufReader::new(decompressed(file).map_err(|error| panic!("{error}"))?);
    ArtifactReader::new(reader, path.display().to_string())
        .map(|item| item.map(|(_, record)| record))
        .collect()
}

/// Every way of reading, which must all agree.
fn all_readers(path: &Path) -> Vec<(&'static str, Outcome)> {
    let tiny = ReadOptions { window_bytes: 300, chunk_bytes: 1, fast_path: true, ..ReadOptions::default() };
    let exact = ReadOptions { fast_path: false, ..ReadOptions::default() };
    vec![
        ("read_artifact", read_artifact(path)),
        ("tiny windows", with_options(path, &tiny)),
        ("exact path", with_options(path, &exact)),
        ("ArtifactReader", sequential(path)),
    ]
}

fn same(a: &Outcome, b: &Outcome) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => serialized(x) == serialized(y) && x == y,
        (Err(x), Err(y)) => x.line() == y.line() && x.reason() == y.reason(),
        _ => false,
    }
}

#[test]
fn tally_accepts_and_rejects_as_stormlog_does() {
    let expected: Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("expected.json")).expect("expected.json"))
            .expect("json");
    let cases = expected.as_object().expect("an object of cases");
    assert!(cases.len() > 60, "fixture corpus looks truncated");
    let mut failures = Vec::new();
    for (name, expectation) in cases {
        let path = fixtures().join(name);
        let outcomes = all_readers(&path);
        let (_, first) = &outcomes[0];
        for (how, outcome) in &outcomes[1..] {
            if !same(first, outcome) {
                failures.push(format!("{name}: read_artifact gave {first:?} but {how} gave {outcome:?}"));
            }
        }
        let accepted = expectation["accepted"].as_bool().expect("accepted flag");
        match (first, accepted) {
            (Ok(records), true) => {
                let theirs: Vec<&str> = expectation["records"]
                    .as_array()
                    .expect("records")
                    .iter()
                    .map(|line| line.as_str().expect("a line"))
                    .collect();
                if serialized(records) != theirs {
                    failures.push(format!(
                        "{name}: records differ\n tally: {:?}\n stormlog: {theirs:?}",
                        serialized(records)
                    ));
                }
            }
            (Err(error), false) => {
                if let Some(line) = expectation["line"].as_u64()
                    && error.line() != Some(line)
                {
                    failures.push(format!("{name}: stormlog rejects line {line}, tally says {error}"));
                }
                if expectation.get("difference").is_none() && error.line().is_none() {
                    failures.push(format!("{name}: error without a line: {error}"));
                }
            }
            (Ok(_), false) => {
                failures.push(format!("{name}: tally accepts, stormlog rejects: {expectation}"))
            }
            (Err(error), true) => failures.push(format!("{name}: tally rejects ({error}), stormlog accepts")),
        }
    }
    assert!(failures.is_empty(), "{} disagreements:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn tally_writes_the_bytes_stormlog_writes() {
    let embedded = std::fs::read(fixtures().join("written_embedded.jsonl")).expect("embedded fixture");
    let compact = std::fs::read(fixtures().join("written_compact.jsonl")).expect("compact fixture");
    let records = read_artifact(&fixtures().join("written_embedded.jsonl")).expect("stormlog's file reads");
    let ours = encode_artifact(&records, Form::Embedded).expect("encodes");
    assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&embedded));
    let ours = encode_artifact(&records, Form::Compact).expect("encodes");
    assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&compact));
    let from_compact = read_artifact(&fixtures().join("written_compact.jsonl")).expect("compact reads");
    assert_eq!(from_compact, records);
    assert_eq!(serialized(&from_compact), serialized(&records));
}
