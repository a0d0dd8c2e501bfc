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
