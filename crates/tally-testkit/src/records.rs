//! The smallest valid correlation records, as JSON: the building blocks of
//! suites that write artifacts by hand (the codec's rules, hostile input).

use serde_json::{Value, json};

/// A minimal valid context: run `r`, session `s`, producer `p`, source `t`,
/// on the host's monotonic clock `host`.
pub fn context() -> Value {
    json!({"run_id": "r", "session_id": "s", "producer_id": "p", "source": "t", "clock_domain": "host",
           "clock_kind": "monotonic", "collection_mode": "active", "provenance": "observed"})
}

/// An `infer.iteration` event with ID `id` (also its iteration's ID) in
/// [`context`], spanning 1..5.
pub fn iteration(id: &str) -> Value {
    json!({"schema_version": 2, "event_type": "infer.iteration", "event_id": id, "context": context(),
           "iteration_ref": {"producer_id": "p", "id": id}, "start_ns": 1, "end_ns": 5})
}

/// Splits the artifact at `source` into `count` artifacts in `directory`
/// (`rank0.jsonl`, `rank1.jsonl`, ...): every v4 `infer.context` line in
/// every file (later lines of any file may name it), the other lines dealt
/// round robin. The files of one run, as ranks write them: what partial
/// results are made from and compared with one process reading them all.
pub fn split_artifact(
    source: &std::path::Path,
    directory: &std::path::Path,
    count: usize,
) -> Vec<std::path::PathBuf> {
    let text =
        std::fs::read_to_string(source).unwrap_or_else(|error| panic!("{}: {error}", source.display()));
    let mut parts = vec![String::new(); count.max(1)];
    let mut next = 0;
    for line in text.lines() {
        let record: Value =
            serde_json::from_str(line).unwrap_or_else(|error| panic!("{}: {error}", source.display()));
        let shares: Vec<usize> = if record["event_type"] == "infer.context" {
            (0..parts.len()).collect()
        } else {
            vec![next % parts.len()]
        };
        if record["event_type"] != "infer.context" {
            next += 1;
        }
        for share in shares {
            parts[share].push_str(line);
            parts[share].push('\n');
        }
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(index, part)| {
            let path = directory.join(format!("rank{index}.jsonl"));
            std::fs::write(&path, part).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            path
        })
        .collect()
}
