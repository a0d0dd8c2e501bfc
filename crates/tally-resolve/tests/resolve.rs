//! stormlog's resolution rules, one by one, each through both resolvers
//! (the borrowing `resolve_inference_events` and the streaming
//! `resolve_streaming`) with one [`check`].

use serde_json::{Value, json};
use tally_core::{InferenceRecord, parse_inference_record};
use tally_resolve::{
    ReferenceKind, ResolveError, ResolvedEvidence, TableCounts, resolve_inference_events, resolve_streaming,
};

/// What both resolvers show of a resolved run, by IDs, in their orders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Facts {
    run_id: Option<String>,
    counts: TableCounts,
    /// Iteration IDs, in table order.
    iterations: Vec<String>,
    /// `(request, attempt, iteration)` IDs, in membership order.
    memberships: Vec<(String, Option<String>, String)>,
    /// `(event_id, kind, ref.id)`, in stormlog's order.
    unresolved: Vec<(String, ReferenceKind, String)>,
    /// Each activity's resolved iteration (its position), in table order.
    activity_iterations: Vec<Option<usize>>,
}

fn facts(graph: &impl ResolvedEvidence) -> Facts {
    Facts {
        run_id: graph.run_id().map(str::to_owned),
        counts: graph.counts(),
        iterations: graph.iteration_facts().map(|facts| facts.iteration_ref.id().to_owned()).collect(),
        memberships: graph
            .membership_facts()
            .map(|facts| {
                (
                    facts.request_ref.id().to_owned(),
                    facts.attempt_ref.map(|attempt| attempt.id().to_owned()),
                    facts.iteration_ref.id().to_owned(),
                )
            })
            .collect(),
        unresolved: graph
            .unresolved_references()
            .map(|item| (item.event_id.to_owned(), item.kind, item.reference.id().to_owned()))
            .collect(),
        activity_iterations: graph.activity_facts().map(|facts| facts.iteration).collect(),
    }
}

/// Resolves `records` with both resolvers and asserts each gives
/// `expected`: the same facts, or the same error at the same record.
fn check(records: &[InferenceRecord], expected: Result<Facts, ResolveError>) {
    let borrowing = resolve_inference_events(records).map(|graph| facts(&graph));
    assert_eq!(borrowing, expected, "the borrowing resolver");
    let streaming = resolve_streaming(records).map(|run| facts(&run));
    assert_eq!(streaming, expected, "the streaming resolver");
}

fn counts(
    requests: usize,
    iterations: usize,
    stages: usize,
    memberships: usize,
    activities: usize,
) -> TableCounts {
    TableCounts { requests, iterations, stages, memberships, activities, alignments: 0 }
}

fn text(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

fn unresolved(items: &[(&str, ReferenceKind, &str)]) -> Vec<(String, ReferenceKind, String)> {
    items.iter().map(|(event, kind, id)| ((*event).to_owned(), *kind, (*id).to_owned())).collect()
}

fn member(request: &str, attempt: Option<&str>, iteration: &str) -> (String, Option<String>, String) {
    (request.to_owned(), attempt.map(str::to_owned), iteration.to_owned())
}

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
    let one_iteration = Facts {
        run_id: Some("run".into()),
        counts: counts(0, 1, 0, 0, 0),
        iterations: text(&["it-1"]),
        ..Facts::default()
    };
    check(&[first.clone(), again.clone()], Ok(one_iteration.clone()));
    // In either order, and however often.
    check(&[again.clone(), first.clone(), again], Ok(one_iteration));
}

#[test]
fn a_changed_delivery_is_a_conflicting_event_identity() {
    let records = [iteration("e1", "it-1", 5), request("r1", "req", None), iteration("e1", "it-1", 6)];
    let error = ResolveError::ConflictingEventIdentity { record: 2, earlier: 0 };
    check(&records, Err(error.clone()));
    assert_eq!(error.to_string(), "conflicting event identity");
    assert_eq!(error.rule(), "conflicting-event-identity");
}

#[test]
fn one_event_id_in_two_sessions_is_two_events() {
    let mut other = serde_json::to_value(iteration("e1", "it-2", 5)).expect("serializable");
    other["context"]["session_id"] = json!("s2");
    let records = [iteration("e1", "it-1", 5), parse_inference_record(other).expect("valid")];
    check(
        &records,
        Ok(Facts {
            run_id: Some("run".into()),
            counts: counts(0, 2, 0, 0, 0),
            iterations: text(&["it-1", "it-2"]),
            ..Facts::default()
        }),
    );
}

#[test]
fn one_entity_described_twice_keeps_the_smallest_event_id() {
    let records = [iteration("e9", "it-1", 5), iteration("e2", "it-1", 5), iteration("e5", "it-1", 5)];
    check(
        &records,
        Ok(Facts {
            run_id: Some("run".into()),
            counts: counts(0, 1, 0, 0, 0),
            iterations: text(&["it-1"]),
            ..Facts::default()
        }),
    );
    // Only the borrowing resolver keeps the event it chose.
    let graph = resolve_inference_events(&records).expect("same entity");
    assert_eq!(graph.iterations()[0].event.event_id().as_str(), "e2");
    assert_eq!(graph.iterations()[0].record, 1);
}

#[test]
fn one_entity_described_differently_is_a_conflicting_entity_identity() {
    let records = [iteration("e1", "it-1", 5), request("r1", "req", None), iteration("e2", "it-1", 6)];
    let error = ResolveError::ConflictingEntityIdentity { record: 2, earlier: 0 };
    check(&records, Err(error.clone()));
    assert_eq!(error.to_string(), "conflicting entity identity");
    assert_eq!(error.rule(), "conflicting-entity-identity");
}

#[test]
fn event_conflicts_are_found_before_entity_conflicts() {
    // stormlog deduplicates the whole stream before it builds tables: the
    // entity conflict of record 1 is never reached.
    let records = [iteration("e1", "it-1", 5), iteration("e2", "it-1", 6), iteration("e1", "it-1", 7)];
    check(&records, Err(ResolveError::ConflictingEventIdentity { record: 2, earlier: 0 }));
}

#[test]
fn a_second_run_id_is_rejected_and_legacy_records_take_no_part() {
    let legacy =
        parse_inference_record(json!({"event_type": "infer.request", "request_id": "x"})).expect("v1");
    let mut other = serde_json::to_value(iteration("e2", "it-2", 5)).expect("serializable");
    other["context"]["run_id"] = json!("other");
    let records =
        [legacy.clone(), iteration("e1", "it-1", 5), legacy, parse_inference_record(other).expect("valid")];
    let error = ResolveError::MultipleRunIds { record: 3, earlier: 1 };
    check(&records, Err(error.clone()));
    assert_eq!(error.to_string(), "correlation artifact contains multiple run_id values");
    check(&[records[0].clone()], Ok(Facts::default()));
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
    check(
        &records,
        Ok(Facts {
            run_id: Some("run".into()),
            counts: counts(2, 1, 1, 4, 1),
            iterations: text(&["it-1"]),
            memberships: vec![
                member("known", None, "it-1"),
                member("known", Some("try-1"), "it-ghost"),
                member("known", Some("try-9"), "it-1"),
                member("ghost", None, "it-1"),
            ],
            unresolved: unresolved(&[
                ("a1", ReferenceKind::Iteration, "it-gone"),
                ("m2", ReferenceKind::Iteration, "it-ghost"),
                ("m3", ReferenceKind::Attempt, "try-9"),
                ("m4", ReferenceKind::Request, "ghost"),
                ("s1", ReferenceKind::Iteration, "it-none"),
                ("s1", ReferenceKind::Request, "nobody"),
            ]),
            // The activity is linked to an unknown iteration: no resolved link.
            activity_iterations: vec![None],
        }),
    );
}

#[test]
fn memberships_are_ordered_by_session_producer_and_event_id() {
    let records = [
        iteration("i0", "i", 1),
        membership("m3", "a", None, "i"),
        membership("m1", "b", None, "i"),
        membership("m2", "c", None, "i"),
    ];
    check(
        &records,
        Ok(Facts {
            run_id: Some("run".into()),
            counts: counts(0, 1, 0, 3, 0),
            iterations: text(&["i"]),
            memberships: vec![member("b", None, "i"), member("c", None, "i"), member("a", None, "i")],
            unresolved: unresolved(&[
                ("m1", ReferenceKind::Request, "b"),
                ("m2", ReferenceKind::Request, "c"),
                ("m3", ReferenceKind::Request, "a"),
            ]),
            ..Facts::default()
        }),
    );
}

#[test]
fn linked_activities_find_their_iteration() {
    let activity = |event_id: &str, id: &str, iteration: &str| {
        record(
            json!({"event_type": "infer.activity_ref", "event_id": event_id, "context": context("s", "trace"),
                      "activity_ref": {"producer_id": "trace", "id": id}, "activity_kind": "kernel",
                      "attribution_status": "linked",
                      "iteration_ref": {"producer_id": "engine", "id": iteration}}),
        )
    };
    let records = [
        activity("a1", "k1", "it-2"),
        iteration("i1", "it-1", 0),
        iteration("i2", "it-2", 9),
        activity("a2", "k2", "it-1"),
    ];
    check(
        &records,
        Ok(Facts {
            run_id: Some("run".into()),
            counts: counts(0, 2, 0, 0, 2),
            iterations: text(&["it-1", "it-2"]),
            activity_iterations: vec![Some(1), Some(0)],
            ..Facts::default()
        }),
    );
}

#[test]
fn lookups_find_what_the_tables_hold() {
    let records = [request("r1", "req", None), request("r2", "req", Some("a")), iteration("i1", "it", 3)];
    check(
        &records,
        Ok(Facts {
            run_id: Some("run".into()),
            counts: counts(2, 1, 0, 0, 0),
            iterations: text(&["it"]),
            ..Facts::default()
        }),
    );
    // Lookups by key are the borrowing graph's.
    let graph = resolve_inference_events(&records).expect("valid");
    let req = tally_core::EntityRef::new("api", "req").expect("valid");
    let attempt = tally_core::EntityRef::new("api", "a").expect("valid");
    assert_eq!(graph.request(&req, None).map(|r| r.record), Some(0));
    assert_eq!(graph.request(&req, Some(&attempt)).map(|r| r.record), Some(1));
    assert!(graph.request(&attempt, None).is_none());
    let it = tally_core::EntityRef::new("engine", "it").expect("valid");
    assert_eq!(graph.iteration_index(&it), Some(0));
}
