//! Live check against stormlog (only when `TALLY_PYTHON` names a Python with
//! stormlog 0.4.3): stormlog loads the artifacts tally writes, embedded and
//! compact, into the same records, and writes the same bytes for them.

use std::path::Path;
use std::process::Command;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use tally_artifact::pyjson::{Separators, to_python_json};
use tally_artifact::{Form, read_artifact, write_artifact};
use tally_core::InferenceRecord;
use tally_core::arbitrary::arb_records;

/// Loads each artifact with `load_inference_artifact`, prints each record as
/// `json.dumps(record.to_record(), sort_keys=True)`, then a line `--`, then
/// what stormlog itself writes for those records in the same form (embedded
/// or compact), then `==`.
const LOADER: &str = r#"
import json, sys
from stormlog.infer.correlation_codec import CorrelationRecordEncoder
from stormlog.infer.correlation_events import load_inference_artifact
for form, path in zip(sys.argv[1::2], sys.argv[2::2]):
    records = load_inference_artifact(path)
    for record in records:
        print(json.dumps(record.to_record(), sort_keys=True))
    print("--")
    encoder = CorrelationRecordEncoder()
    for record in records:
        rows = [record.to_record()] if form == "embedded" else encoder.prepare(record.to_record())
        for row in rows:
            print(json.dumps(row, sort_keys=True))
        encoder.commit(rows)
    print("==")
"#;

fn serialized(records: &[InferenceRecord]) -> Vec<String> {
    records
        .iter()
        .map(|record| to_python_json(&Value::Object(record.to_record()), Separators::DEFAULT))
        .collect()
}

fn samples() -> Vec<Vec<InferenceRecord>> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/artifact");
    let mut sets = vec![read_artifact(&fixtures.join("embedded.jsonl")).expect("fixture reads")];
    let mut runner =
        TestRunner::new(Config { rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..Config::default() });
    let strategy = arb_records(40, true);
    for _ in 0..12 {
        sets.push(strategy.new_tree(&mut runner).expect("generates").current());
    }
    sets
}

#[test]
fn stormlog_loads_what_tally_writes() {
    let python = match tally_testkit::reference_python(&["stormlog"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(why),
    };
    let directory = tempfile::tempdir().expect("temp dir");
    let mut arguments = Vec::new();
    let mut expected = Vec::new();
    for (index, records) in samples().iter().enumerate() {
        for (form, name) in [(Form::Embedded, "embedded"), (Form::Compact, "compact")] {
            let path = directory.path().join(format!("{index}-{name}.jsonl"));
            write_artifact(&path, records, form).expect("tally writes");
            arguments.push(name.to_owned());
            arguments.push(path.display().to_string());
            let written = std::fs::read_to_string(&path).expect("read back");
            expected.push((path, serialized(records), written));
        }
    }
    let output = Command::new(&python).arg("-c").arg(LOADER).args(&arguments).output().expect("python runs");
    assert!(output.status.success(), "stormlog failed: {}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    let mut sections = stdout.split("==\n");
    for (path, records, written) in expected {
        let section = sections.next().expect("one section per artifact");
        let (loaded, rewritten) = section.split_once("--\n").expect("two parts");
        let loaded: Vec<&str> = loaded.lines().collect();
        assert_eq!(loaded, records, "stormlog loads {} differently", path.display());
        assert_eq!(rewritten, written, "stormlog writes {} differently", path.display());
    }
}
