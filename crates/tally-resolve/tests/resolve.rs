//! stormlog's resolution rules, one by one.

use serde_json::{Value, json};
use tally_core::{InferenceRecord, parse_inference_record};
use tally_resolve::{ReferenceKind, ResolveError, resolve_inference_events};

fn context(session: &str, producer: &str) -> Value {
    json!({"run_id": "run", "session_id": session, "producer_id": producer, "source": "test",
           "clock_domain": "host", "clock_kind": "monotonic", "collection_mode": "active",
           "provenance": "observed"})
}

fn record(mut value: Value) -> InferenceRecord {
    value["schema_version"] = json!(2);
    parse_inference_record(value).expect("test records are valid")
}

fn iteration(event_id: &str, id: &str, start: u64) -> InferenceRecord {
    record(json!({"event_type": "infer.iteration", "event_id": event_id, "context": context("s", "engine"),
                  "iteration_ref": {"producer_id": "engine", "id": id}, "start_ns": start}))
}

fn request(event_id: &str, id: &str, attempt: Option<&str>) -> InferenceRecord {
    record(json!({"event_type": "infer.request", "event_id": event_id, "context": context("s", "api"),
                  "request_ref": {"producer_id": "api", "id": id},
                  "attempt_ref": attempt.map(|a| json!({"producer_id": "api", "id": a}))}))
}

fn membership(event_id: &str, request: &str, attempt: Option<&str>, iteration: &str) -> InferenceRecord {
    record(json!({"event_type": "infer.membership", "event_id": event_id, "context": context("s", "engine"),
                  "request_ref": {"producer_id": "api", "id": request},
                  "attempt_ref": attempt.map(|a| json!({"producer_id": "api", "id": a})),
                  "iteration_ref": {"producer_id": "engine", "id": iteration}, "role": "decode"}))
}

#[test]
fn repeated_deliveries_collapse_and_numbers_compare_as_python() {
    let mut first = iteration("e1", "it-1", 5);
    let mut again = iteration("e1", "it-1", 5);
    for (slot, weight) in [(&mut first, json!(1)), (&mut again, json!(1.0))] {
        let mut value = serde_json::to_value(&*slot).expect("serializable");
        value["metadata"] = json!({"weight": weight});
        *slot = parse_inference_record(value).expect("valid");
    }
    let records = [first, again];
    let graph = resolve_inference_events(&records).expect("equal deliveries");
    assert_eq!(graph.iterations().len(), 1);
    assert_eq!(graph.run_id(), Some("run"));
}

#[test]
fn a_changed_delivery_is_a_conflicting_event_identity() {
    let records = [iteration("e1", "it-1", 5), request("r1", "req", None), iteration("e1", "it-1", 6)];
    let error = resolve_inference_events(&records).expect_err("conflict");
    assert_eq!(error, ResolveError::ConflictingEventIdentity { record: 2, earlier: 0 });
    assert_eq!(error.to_string(), "conflicting event identity");
    assert_eq!(error.rule(), "conflicting-event-identity");
}

#[test]
fn one_event_id_in_two_sessions_is_two_events() {
    let mut other = serde_json::to_value(iteration("e1", "it-2", 5)).expect("serializable");
    other["context"]["session_id"] = json!("s2");
    let records = [iteration("e1", "it-1", 5), parse_inference_record(other).expect("valid")];
    let graph = resolve_inference_events(&records).expect("distinct keys");
    assert_eq!(graph.iterations().len(), 2);
}

#[test]
fn one_entity_described_twice_keeps_the_smallest_event_id() {
    let records = [iteration("e9", "it-1", 5), iteration("e2", "it-1", 5), iteration("e5", "it-1", 5)];
    let graph = resolve_inference_events(&records).expect("same entity");
    assert_eq!(graph.iterations().len(), 1);
    assert_eq!(graph.iterations()[0].event.event_id().as_str(), "e2");
    assert_eq!(graph.iterations()[0].record, 1);
}

#[test]
fn one_entity_described_differently_is_a_conflicting_entity_identity() {
    let records = [iteration("e1", "it-1", 5), request("r1", "req", None), iteration("e2", "it-1", 6)];
    let error = resolve_inference_events(&records).expect_err("conflict");
    assert_eq!(error, ResolveError::ConflictingEntityIdentity { record: 2, earlier: 0 });
    assert_eq!(error.to_string(), "conflicting entity identity");
}

#[test]
fn event_conflicts_are_found_before_entity_conflicts() {
    // stormlog deduplicates the whole stream before it builds tables.
    let records = [iteration("e1", "it-1", 5), iteration("e2", "it-1", 6), iteration("e1", "it-1", 7)];
    let error = resolve_inference_events(&records).expect_err("conflict");
    assert_eq!(error.rule(), "conflicting-event-identity");
}

#[test]
fn a_second_run_id_is_rejected_and_legacy_records_take_no_part() {
    let legacy =
        parse_inference_record(json!({"event_type": "infer.request", "request_id": "x"})).expect("v1");
    let mut other = serde_json::to_value(iteration("e2", "it-2", 5)).expect("serializable");
    other["context"]["run_id"] = json!("other");
    let records =
        [legacy.clone(), iteration("e1", "it-1", 5), legacy, parse_inference_record(other).expect("valid")];
    let error = resolve_inference_events(&records).expect_err("two runs");
    assert_eq!(error, ResolveError::MultipleRunIds { record: 3, earlier: 1 });
    assert_eq!(error.to_string(), "correlation artifact contains multiple run_id values");

    let only_legacy = [records[0].clone()];
    let graph = resolve_inference_events(&only_legacy).expect("no events");
    assert_eq!(graph.run_id(), None);
    assert_eq!(graph.counts(), Default::default());
}

#[test]
fn unresolved_references_name_request_attempt_and_iteration() {
    let records = [
        request("r1", "known", None),
        request("r2", "known", Some("try-1")),
        iteration("i1", "it-1", 0),
        membership("m4", "ghost", None, "it-1"),
        membership("m3", "known", Some("try-9"), "it-1"),
        membership("m2", "known", Some("try-1"), "it-ghost"),
        membership("m1", "known", None, "it-1"),
        record(json!({"event_type": "infer.stage", "event_id": "s1", "context": context("s", "engine"),
                      "stage_ref": {"producer_id": "engine", "id": "st"}, "name": "prefill",
                      "request_ref": {"producer_id": "api", "id": "nobody"},
                      "iteration_ref": {"producer_id": "engine", "id": "it-none"}})),
        record(
            json!({"event_type": "infer.activity_ref", "event_id": "a1", "context": context("s", "trace"),
                      "activity_ref": {"producer_id": "trace", "id": "k"}, "activity_kind": "kernel",
                      "attribution_status": "linked",
                      "iteration_ref": {"producer_id": "engine", "id": "it-gone"}}),
        ),
    ];
    let graph = resolve_inference_events(&records).expect("valid");
    let found: Vec<(&str, ReferenceKind, &str)> =
        graph.unresolved().iter().map(|u| (u.event_id, u.kind, u.reference.id())).collect();
    assert_eq!(
        found,
        [
            ("a1", ReferenceKind::Iteration, "it-gone"),
            ("m2", ReferenceKind::Iteration, "it-ghost"),
            ("m3", ReferenceKind::Attempt, "try-9"),
            ("m4", ReferenceKind::Request, "ghost"),
            ("s1", ReferenceKind::Iteration, "it-none"),
            ("s1", ReferenceKind::Request, "nobody"),
        ]
    );
    assert_eq!(graph.counts().requests, 2);
    assert_eq!(graph.counts().memberships, 4);
    // The activity is linked to an unknown iteration: no resolved link.
    assert_eq!(graph.activity_iteration(0), None);
}

#[test]
fn memberships_are_ordered_by_session_producer_and_event_id() {
    let records = [
        membership("m3", "a", None, "i"),
        membership("m1", "b", None, "i"),
        membership("m2", "c", None, "i"),
    ];
    let graph = resolve_inference_events(&records).expect("valid");
    let ids: Vec<&str> = graph.memberships().iter().map(|m| m.event.event_id().as_str()).collect();
    assert_eq!(ids, ["m1", "m2", "m3"]);
}

#[test]
fn lookups_find_what_the_tables_hold() {
    let records = [request("r1", "req", None), request("r2", "req", Some("a")), iteration("i1", "it", 3)];
    let graph = resolve_inference_events(&records).expect("valid");
    let req = tally_core::EntityRef::new("api", "req").expect("valid");
    let attempt = tally_core::EntityRef::new("api", "a").expect("valid");
    assert_eq!(graph.request(&req, None).map(|r| r.record), Some(0));
    assert_eq!(graph.request(&req, Some(&attempt)).map(|r| r.record), Some(1));
    assert!(graph.request(&attempt, None).is_none());
    let it = tally_core::EntityRef::new("engine", "it").expect("valid");
    assert_eq!(graph.iteration_index(&it), Some(0));
}
