//! Every validation rule of the event model, accepted and rejected, one
//! table row each: a base record of each type, a change, and the expected
//! outcome (`None` = accepted, `Some(text)` = rejected with a message that
//! contains `text`).

use serde_json::{Value, json};
use tally_core::{EventBody, InferenceRecord, parse_inference_record};

fn context() -> Value {
    json!({
        "run_id": "run-1", "session_id": "s1", "producer_id": "engine", "source": "test",
        "clock_domain": "host", "clock_kind": "monotonic", "collection_mode": "active",
        "provenance": "observed"
    })
}

fn base(event_type: &str) -> Value {
    let reference = |id: &str| json!({"producer_id": "engine", "id": id});
    let mut record = json!({
        "schema_version": 2, "event_type": event_type, "context": context(), "event_id": "e1",
        "metadata": {}
    });
    let body = match event_type {
        "infer.artifact" => json!({"artifact_kind": "inference_correlation", "created_at_ns": 5}),
        "infer.request" => json!({"request_ref": reference("r1"), "start_ns": 1, "end_ns": 9}),
        "infer.iteration" => json!({"iteration_ref": reference("i1"), "start_ns": 1, "end_ns": 9}),
        "infer.stage" => {
            json!({"stage_ref": reference("st1"), "name": "prefill", "request_ref": reference("r1")})
        }
        "infer.membership" => {
            json!({"request_ref": reference("r1"), "iteration_ref": reference("i1"), "role": "decode"})
        }
        "infer.activity_ref" => json!({
            "activity_ref": reference("a1"), "activity_kind": "kernel", "attribution_status": "linked",
            "activity_domain": "gpu", "iteration_ref": reference("i1"), "start_ns": 10, "end_ns": 20
        }),
        "infer.capabilities" => json!({
            "component": "cupti", "available": true, "supported": ["kernel", "memcpy"],
            "enabled": ["kernel"], "collected": ["kernel"]
        }),
        "infer.clock_alignment" => json!({
            "from_clock_domain": "gpu0", "to_clock_domain": "host", "offset_ns": -40, "uncertainty_ns": 3
        }),
        other => panic!("no base record for {other}"),
    };
    for (key, value) in body.as_object().expect("body literal is an object") {
        record[key] = value.clone();
    }
    record
}

/// Applies `change` (a JSON object whose `null` values mean "remove this
/// key", and whose `context` entries patch the context) to the base record.
fn changed(event_type: &str, change: Value, remove: &[&str]) -> Value {
    let mut record = base(event_type);
    for (key, value) in change.as_object().expect("change literal is an object") {
        if key == "context" && value.is_object() {
            for (context_key, context_value) in value.as_object().expect("checked above") {
                record["context"][context_key] = context_value.clone();
            }
        } else {
            record[key] = value.clone();
        }
    }
    for key in remove {
        if let Some((outer, inner)) = key.split_once('.') {
            record[outer].as_object_mut().expect("nested removal of an object").remove(inner);
        } else {
            record.as_object_mut().expect("records are objects").remove(*key);
        }
    }
    record
}

#[track_caller]
fn check(record: Value, expected: Option<&str>) {
    let outcome = parse_inference_record(record.clone());
    match (outcome, expected) {
        (Ok(_), None) => {}
        (Err(error), Some(text)) => {
            assert!(
                error.to_string().contains(text),
                "error {error:?} does not mention {text:?} for {record}"
            )
        }
        (Ok(parsed), Some(text)) => {
            panic!("accepted {record} as {parsed:?}; expected rejection with {text:?}")
        }
        (Err(error), None) => panic!("rejected {record}: {error}"),
    }
}

#[track_caller]
fn accepts(event_type: &str, change: Value) {
    check(changed(event_type, change, &[]), None);
}

#[track_caller]
fn rejects(event_type: &str, change: Value, text: &str) {
    check(changed(event_type, change, &[]), Some(text));
}

const ALL_TYPES: [&str; 8] = [
    "infer.artifact",
    "infer.request",
    "infer.iteration",
    "infer.stage",
    "infer.membership",
    "infer.activity_ref",
    "infer.capabilities",
    "infer.clock_alignment",
];

#[test]
fn every_base_record_is_valid_and_round_trips() {
    for event_type in ALL_TYPES {
        let record = base(event_type);
        let parsed = parse_inference_record(record.clone()).expect("base records are valid");
        let InferenceRecord::Event(event) = &parsed else { panic!("{event_type} parsed as legacy") };
        assert_eq!(event.event_type().as_str(), event_type);
        let again = parse_inference_record(Value::Object(parsed.to_record())).expect("re-parse");
        assert_eq!(parsed, again, "{event_type} changed in a round trip");
    }
}

#[test]
fn common_fields() {
    for event_type in ALL_TYPES {
        rejects(event_type, json!({"event_id": ""}), "event_id must be a non-empty string");
        rejects(event_type, json!({"event_id": 7}), "event_id must be a non-empty string");
        check(changed(event_type, json!({}), &["event_id"]), Some("missing required field event_id"));
        rejects(event_type, json!({"metadata": null}), "metadata must be an object");
        rejects(event_type, json!({"metadata": [1]}), "metadata must be an object");
        check(changed(event_type, json!({}), &["metadata"]), None);
        rejects(event_type, json!({"surprise": 1}), "unexpected field");
        rejects(event_type, json!({"context": null}), "context must be an object");
        check(changed(event_type, json!({}), &["context"]), Some("context must be an object"));
    }
}

#[test]
fn context_rules() {
    let kind = "infer.iteration";
    for field in ["run_id", "session_id", "producer_id", "source", "clock_domain"] {
        rejects(kind, json!({"context": {field: ""}}), "must be a non-empty string");
        check(changed(kind, json!({}), &[&format!("context.{field}")]), Some("missing required field"));
    }
    for field in
        ["source_version", "engine", "engine_version", "backend", "backend_version", "host", "device_uuid"]
    {
        accepts(kind, json!({"context": {field: "x"}}));
        accepts(kind, json!({"context": {field: null}}));
        rejects(kind, json!({"context": {field: ""}}), "must be a non-empty string");
    }
    for field in ["pid", "rank", "local_rank"] {
        accepts(kind, json!({"context": {field: 0}}));
        rejects(kind, json!({"context": {field: -1}}), "must be a non-negative integer");
        rejects(kind, json!({"context": {field: true}}), "must be a non-negative integer");
        rejects(kind, json!({"context": {field: 1.5}}), "must be a non-negative integer");
    }
    accepts(kind, json!({"context": {"world_size": 1}}));
    rejects(kind, json!({"context": {"world_size": 0}}), "world_size must be >= 1");
    for (field, good, message) in [
        ("clock_kind", ["monotonic", "wall", "device"], "clock_kind must be"),
        ("collection_mode", ["active", "passive", "imported"], "collection_mode must be"),
        ("provenance", ["observed", "reported", "estimated"], "provenance must be"),
    ] {
        for value in good {
            accepts(kind, json!({"context": {field: value}}));
        }
        rejects(kind, json!({"context": {field: "Monotonic"}}), message);
        rejects(kind, json!({"context": {field: 3}}), message);
    }
    rejects(kind, json!({"context": {"gpu": "x"}}), "unexpected field");
}

#[test]
fn spans() {
    for kind in ["infer.request", "infer.iteration", "infer.stage", "infer.activity_ref"] {
        accepts(kind, json!({"start_ns": 5, "end_ns": 5}));
        accepts(kind, json!({"start_ns": null, "end_ns": 5}));
        accepts(kind, json!({"start_ns": 5, "end_ns": null}));
        rejects(kind, json!({"start_ns": 6, "end_ns": 5}), "end_ns must be >= start_ns");
        rejects(kind, json!({"start_ns": -1}), "start_ns must be a non-negative integer");
        rejects(kind, json!({"end_ns": 2.0}), "end_ns must be a non-negative integer");
    }
    accepts("infer.clock_alignment", json!({"valid_from_ns": 3, "valid_to_ns": 4}));
    rejects(
        "infer.clock_alignment",
        json!({"valid_from_ns": 4, "valid_to_ns": 3}),
        "end_ns must be >= start_ns",
    );
}

#[test]
fn entity_refs() {
    rejects("infer.request", json!({"request_ref": {"producer_id": "", "id": "r"}}), "producer_id");
    rejects("infer.request", json!({"request_ref": {"producer_id": "p", "id": ""}}), "id must be");
    rejects("infer.request", json!({"request_ref": {"producer_id": "p"}}), "missing required field id");
    rejects("infer.request", json!({"request_ref": {"producer_id": "p", "id": "r", "x": 1}}), "unexpected");
    rejects("infer.request", json!({"request_ref": "r1"}), "request_ref must be an object");
    rejects("infer.request", json!({"request_ref": null}), "request_ref must be an EntityRef");
    accepts("infer.request", json!({"attempt_ref": null}));
    accepts("infer.request", json!({"attempt_ref": {"producer_id": "p", "id": "a"}}));
    // A reference field that another event type has is unexpected here.
    rejects("infer.iteration", json!({"request_ref": {"producer_id": "p", "id": "r"}}), "unexpected");
}

#[test]
fn counts_and_names() {
    for kind in ["infer.request", "infer.stage", "infer.membership"] {
        for field in ["input_tokens", "output_tokens", "kv_bytes"] {
            accepts(kind, json!({field: 0}));
            rejects(kind, json!({field: -3}), "must be a non-negative integer");
        }
    }
    rejects("infer.request", json!({"status": ""}), "status must be a non-empty string");
    accepts("infer.request", json!({"status": "ok"}));
    rejects("infer.stage", json!({"name": ""}), "name must be a non-empty string");
    rejects("infer.membership", json!({"role": ""}), "role must be a non-empty string");
    rejects("infer.artifact", json!({"artifact_kind": ""}), "artifact_kind");
    rejects("infer.artifact", json!({"created_at_ns": -1}), "created_at_ns must be a non-negative integer");
    rejects("infer.artifact", json!({"created_at_ns": null}), "created_at_ns must be a non-negative integer");
}

#[test]
fn stage_needs_a_request_or_an_iteration() {
    let stage = |request: Value, iteration: Value| {
        changed("infer.stage", json!({"request_ref": request, "iteration_ref": iteration}), &[])
    };
    let reference = json!({"producer_id": "p", "id": "x"});
    check(stage(reference.clone(), Value::Null), None);
    check(stage(Value::Null, reference.clone()), None);
    check(stage(reference.clone(), reference), None);
    check(stage(Value::Null, Value::Null), Some("stage must reference a request or iteration"));
}

#[test]
fn activity_attribution_and_domain() {
    let kind = "infer.activity_ref";
    rejects(kind, json!({"iteration_ref": null}), "attribution_status must match the iteration link");
    accepts(kind, json!({"iteration_ref": null, "attribution_status": "unresolved"}));
    rejects(kind, json!({"attribution_status": "unresolved"}), "attribution_status must match");
    rejects(kind, json!({"attribution_status": "maybe"}), "attribution_status must be linked or unresolved");
    check(
        changed(kind, json!({}), &["attribution_status"]),
        Some("missing required field attribution_status"),
    );
    for domain in ["gpu", "runtime", "cpu", "unknown"] {
        accepts(kind, json!({"activity_domain": domain}));
    }
    rejects(kind, json!({"activity_domain": "GPU"}), "activity_domain must be");
    rejects(kind, json!({"activity_domain": null}), "activity_domain must be");
    let defaulted = parse_inference_record(changed(kind, json!({}), &["activity_domain"])).expect("valid");
    let EventBody::ActivityRef(activity) = defaulted.as_event().expect("event").body() else { panic!() };
    assert_eq!(activity.activity_domain.as_str(), "unknown");
    for field in ["runtime_correlation_id", "cuda_correlation_id", "stream_id", "graph_id"] {
        accepts(kind, json!({field: 7}));
        rejects(kind, json!({field: -7}), "must be a non-negative integer");
    }
    rejects(kind, json!({"trace_attachment_id": ""}), "trace_attachment_id");
    rejects(kind, json!({"activity_kind": ""}), "activity_kind");
}

#[test]
fn activity_intervals_and_schema_three() {
    let kind = "infer.activity_ref";
    let with = |intervals: Value, version: u32| {
        changed(kind, json!({"schema_version": version, "metadata": {"intervals": intervals}}), &[])
    };
    check(with(json!([[0, 3], [3, 2], [8, 2]]), 3), None);
    check(with(json!([[0, 10]]), 3), None);
    check(with(json!([[0, 0]]), 3), None);
    check(with(json!([[0, 3]]), 2), Some("requires schema_version 3"));
    check(changed(kind, json!({"schema_version": 3}), &[]), Some("requires metadata.intervals"));
    check(with(json!([]), 3), Some("non-empty list"));
    check(with(json!({"a": 1}), 3), Some("non-empty list"));
    check(with(json!([[3, 2], [0, 1]]), 3), Some("sorted and disjoint"));
    check(with(json!([[0, 3], [2, 2]]), 3), Some("sorted and disjoint"));
    check(with(json!([[0, 11]]), 3), Some("inside start_ns..end_ns"));
    check(with(json!([[0, 1, 2]]), 3), Some("pairs of non-negative integers"));
    check(with(json!([[-1, 2]]), 3), Some("pairs of non-negative integers"));
    check(with(json!([[true, 2]]), 3), Some("pairs of non-negative integers"));
    check(with(json!([[0.0, 2]]), 3), Some("pairs of non-negative integers"));
    check(with(json!([[18446744073709551615u64, 18446744073709551615u64]]), 3), Some("inside"));
    // stormlog reads a null list as "no intervals" but still calls it v3.
    check(with(Value::Null, 3), None);
    check(with(Value::Null, 2), Some("requires schema_version 3"));
    let open =
        changed(kind, json!({"schema_version": 3, "end_ns": null, "metadata": {"intervals": [[0, 1]]}}), &[]);
    check(open, Some("needs start_ns and end_ns"));
    let parsed = parse_inference_record(with(json!([[0, 3], [5, 2]]), 3)).expect("valid");
    let busy = parsed.as_event().expect("event").busy_intervals().expect("activity");
    let pairs: Vec<(u64, u64)> = busy.as_slice().iter().map(|i| (i.start_ns(), i.end_ns())).collect();
    assert_eq!(pairs, [(10, 13), (15, 17)]);
}

#[test]
fn capabilities() {
    let kind = "infer.capabilities";
    accepts(kind, json!({"available": false, "supported": [], "enabled": [], "collected": []}));
    rejects(kind, json!({"available": false}), "unavailable components cannot report capabilities");
    rejects(kind, json!({"available": 1}), "available must be a boolean");
    rejects(
        kind,
        json!({"enabled": ["kernel", "nvtx"]}),
        "collected must be enabled and enabled must be supported",
    );
    rejects(kind, json!({"collected": ["memcpy"]}), "collected must be enabled");
    rejects(kind, json!({"supported": ["kernel", "kernel"]}), "must not contain duplicates");
    rejects(kind, json!({"supported": ["kernel", ""]}), "list of non-empty strings");
    rejects(kind, json!({"supported": null}), "list of non-empty strings");
    check(changed(kind, json!({}), &["supported", "enabled", "collected"]), None);
    rejects(kind, json!({"component": ""}), "component");
}

#[test]
fn clock_alignment() {
    let kind = "infer.clock_alignment";
    accepts(kind, json!({"offset_ns": -9_000_000_000_000i64}));
    rejects(kind, json!({"offset_ns": 1.0}), "offset_ns must be an integer");
    rejects(kind, json!({"offset_ns": false}), "offset_ns must be an integer");
    rejects(kind, json!({"uncertainty_ns": -1}), "uncertainty_ns must be a non-negative integer");
    rejects(kind, json!({"from_clock_domain": ""}), "from_clock_domain");
}

#[test]
fn versions_and_types() {
    for version in [0, 5, -2] {
        rejects(
            "infer.iteration",
            json!({"schema_version": version}),
            "unsupported inference schema_version",
        );
    }
    rejects("infer.iteration", json!({"schema_version": 3}), "unsupported inference schema_version: 3");
    rejects("infer.iteration", json!({"schema_version": 4}), "v4 requires");
    rejects("infer.iteration", json!({"schema_version": "2"}), "schema_version must be an integer");
    rejects("infer.iteration", json!({"schema_version": true}), "schema_version must be an integer");
    rejects("infer.iteration", json!({"schema_version": 2.0}), "schema_version must be an integer");
    rejects("infer.iteration", json!({"event_type": "infer.unknown"}), "unsupported inference event_type");
    rejects(
        "infer.iteration",
        json!({"event_type": "other.thing"}),
        "event_type must name an inference event",
    );
    rejects("infer.iteration", json!({"event_type": 3}), "event_type must name an inference event");
    check(json!([1, 2]), Some("record must be an object"));
}

#[test]
fn legacy_records_are_opaque() {
    let legacy = json!({"event_type": "infer.request_end", "anything": [1, {"goes": null}]});
    let parsed = parse_inference_record(legacy.clone()).expect("v1 records are kept");
    let InferenceRecord::Legacy(record) = &parsed else { panic!("not legacy") };
    assert_eq!(Value::Object(record.raw().clone()), legacy);
    assert_eq!(parsed.schema_version(), 1);
    let explicit = json!({"schema_version": 1, "event_type": "infer.x"});
    assert!(matches!(parse_inference_record(explicit), Ok(InferenceRecord::Legacy(_))));
    check(
        json!({"schema_version": 1, "event_type": "http.x"}),
        Some("event_type must name an inference event"),
    );
    check(json!({"anything": 1}), Some("event_type must name an inference event"));
}

#[test]
fn python_equality_of_metadata() {
    let one =
        parse_inference_record(changed("infer.iteration", json!({"metadata": {"a": 1, "b": [true]}}), &[]));
    let other =
        parse_inference_record(changed("infer.iteration", json!({"metadata": {"a": 1.0, "b": [1]}}), &[]));
    assert_eq!(one.expect("valid"), other.expect("valid"));
    let differs = parse_inference_record(changed("infer.iteration", json!({"metadata": {"a": "1"}}), &[]));
    let one = parse_inference_record(changed("infer.iteration", json!({"metadata": {"a": 1}}), &[]));
    assert_ne!(one.expect("valid"), differs.expect("valid"));
}

#[test]
fn elapsed_only_on_monotonic_clocks() {
    let monotonic = parse_inference_record(base("infer.iteration")).expect("valid");
    assert_eq!(monotonic.as_event().expect("event").elapsed_ns(), Some(8));
    for clock in ["wall", "device"] {
        let record = changed("infer.iteration", json!({"context": {"clock_kind": clock}}), &[]);
        let parsed = parse_inference_record(record).expect("valid");
        assert_eq!(parsed.as_event().expect("event").elapsed_ns(), None, "{clock}");
    }
}

/// Which rule is reported, and how, where stormlog's order or wording is
/// not the field's own (found by the Python package's live suite).
#[test]
fn stormlogs_order_and_wording_of_three_rules() {
    let message = |event_type: &str, change: Value| {
        let mut record = base(event_type);
        for (key, value) in change.as_object().expect("a change is an object") {
            record[key] = value.clone();
        }
        parse_inference_record(record).expect_err("the change breaks a rule").message().to_owned()
    };
    // The validity window is checked by stormlog's `_span`.
    assert_eq!(
        message("infer.clock_alignment", json!({"valid_from_ns": -1})),
        "start_ns must be a non-negative integer or null"
    );
    assert_eq!(
        message("infer.clock_alignment", json!({"valid_to_ns": "x"})),
        "end_ns must be a non-negative integer or null"
    );
    // Every reference field, known to the type or not, before the rest.
    assert_eq!(
        message("infer.request", json!({"start_ns": -1, "attempt_ref": "x"})),
        "attempt_ref must be an object"
    );
    assert_eq!(message("infer.artifact", json!({"iteration_ref": 3})), "iteration_ref must be an object");
    // The activity's domain before its attribution status.
    assert_eq!(
        message("infer.activity_ref", json!({"activity_domain": "x", "attribution_status": "x"})),
        "activity_domain must be gpu, runtime, cpu, or unknown"
    );
}
