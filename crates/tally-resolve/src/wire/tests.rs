//! Round trips and refusals of the wire form.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::Value;
use tally_core::arbitrary::{arb_context, arb_event, arb_event_in, full_record};
use tally_core::{CorrelationEvent, EntityRef, EventBody, EventType, NonEmptyString, parse_inference_record};

use crate::{AsCorrelationEvent, PreparedBatch, StreamingResolver};

/// `event` under another ID; an activity's reference made (producer,
/// ID) when `own_reference`, as a trace's are.
fn renamed(event: &CorrelationEvent, id: &str, own_reference: bool) -> CorrelationEvent {
    let id = NonEmptyString::new(id).expect("non-empty");
    let mut body = event.body().clone();
    if let (EventBody::ActivityRef(activity), true) = (&mut body, own_reference) {
        activity.activity_ref = EntityRef::from_parts(event.context().producer_id.clone(), id.clone());
    }
    CorrelationEvent::new(Arc::clone(event.context_arc()), id, event.metadata().clone(), body)
        .expect("the same body, valid")
}

fn batch_of(events: &[CorrelationEvent], labels: bool) -> PreparedBatch {
    let mut batch = if labels { PreparedBatch::default() } else { PreparedBatch::default().without_labels() };
    for (number, event) in events.iter().enumerate() {
        batch.push(number * 3 + 1, &event.view());
    }
    batch
}

/// What the resolver makes of a batch, as text.
fn resolved(batch: &PreparedBatch) -> String {
    let resolver = StreamingResolver::new();
    let mut resolver = if batch.keeps_labels() { resolver.keeping_labels() } else { resolver };
    let run = resolver.push_prepared(batch).and_then(|()| resolver.finish());
    format!("{run:?}")
}

fn round_trip(batch: &PreparedBatch) -> Result<PreparedBatch, String> {
    let value = serde_json::to_value(batch).map_err(|error| error.to_string())?;
    serde_json::from_value(value).map_err(|error| error.to_string())
}

/// A batch of each kind of event, activities with their reference the
/// event's own (listed and not), another, and numbered and plain IDs.
fn sample() -> PreparedBatch {
    let mut events = Vec::new();
    for (salt, event_type) in (0..).zip(EventType::ALL) {
        let record = Value::Object(full_record(*event_type, salt));
        let event = parse_inference_record(record).expect("a valid record");
        let event = event.as_correlation_event().expect("a correlation event").clone();
        events.push(renamed(&event, &format!("trace/{}", 7 + salt), false));
        if *event_type == EventType::ActivityRef {
            // Linked activities are not listed by reference; unlinked
            // ones are.
            let mut unlinked = event.clone();
            if let EventBody::ActivityRef(activity) = unlinked.body() {
                let mut activity = activity.clone();
                activity.iteration_ref = None;
                let (context, id) = (Arc::clone(event.context_arc()), event.event_id().clone());
                let metadata = event.metadata().clone();
                unlinked = CorrelationEvent::new(context, id, metadata, EventBody::ActivityRef(activity))
                    .expect("valid unlinked");
            }
            events.push(renamed(&event, "trace/0042", true));
            events.push(renamed(&unlinked, "trace/9", true));
            events.push(renamed(&event, "plain-id", true));
            events.push(renamed(&unlinked, "other-9", false));
        }
    }
    batch_of(&events, true)
}

#[test]
fn a_batch_round_trips_with_every_key_computed_again() {
    let batch = sample();
    let back = round_trip(&batch).expect("round trips");
    assert_eq!(back.identities().collect::<Vec<_>>(), batch.identities().collect::<Vec<_>>());
    assert_eq!(resolved(&back), resolved(&batch));
    let ids: Vec<&str> = back.events.iter().map(|event| back.get(event.event_id)).collect();
    assert!(ids.contains(&"trace/0042") && ids.contains(&"plain-id"), "{ids:?}");
    // Each form of reference and key is met; a key travels only where
    // no reference in the batch gives it (the linked activity whose
    // reference is not its own).
    let value = serde_json::to_value(&batch).expect("encodes");
    let forms: Vec<u64> = value["events"]["activities"]["flags"]
        .as_array()
        .expect("flags")
        .iter()
        .map(|flags| flags.as_u64().expect("a number") >> super::REF_SHIFT)
        .collect();
    assert_eq!(forms, [1, 0, 2, 0, 3]);
    assert_eq!(value["events"]["activities"]["keys"].as_array().map(Vec::len), Some(16));
}

/// A key the batch's content does not give cannot be written.
#[test]
fn a_key_that_would_be_computed_otherwise_is_refused() {
    let mut batch = sample();
    batch.events[0].key ^= 1;
    let refused = serde_json::to_value(&batch).expect_err("refused");
    assert!(refused.to_string().contains("its key is not that of its context and ID"), "{refused}");
    let mut batch = sample();
    let listed = batch
        .events
        .iter()
        .position(|event| matches!(event.body, super::PreparedBody::Activity(activity) if activity.reference.is_some()))
        .expect("an activity listed by reference");
    if let super::PreparedBody::Activity(activity) = &mut batch.events[listed].body {
        activity.key ^= 1;
    }
    let refused = serde_json::to_value(&batch).expect_err("refused");
    assert!(refused.to_string().contains("activity key is not that of its reference"), "{refused}");
}

/// An event ID changed on the wire is read with the key of the new ID:
/// a partial cannot pair an ID with another's key.
#[test]
fn keys_follow_the_ids_read() {
    let batch = sample();
    let mut value = serde_json::to_value(&batch).expect("encodes");
    let strings = value["strings"].as_array_mut().expect("strings");
    let stem = strings.iter().position(|text| text == "trace/").expect("the stem");
    strings[stem] = Value::from("other/");
    let back: PreparedBatch = serde_json::from_value(value).expect("decodes");
    for (event, original) in back.events.iter().zip(&batch.events) {
        let id = back.get(event.event_id);
        assert_eq!(event.key, back.contexts[event.context as usize].event_key(id));
        if id.starts_with("other/") {
            assert_ne!(event.key, original.key);
        }
    }
}

/// Damaged columns are refused with the rule they break, never a panic.
#[test]
fn damaged_columns_are_refused() {
    let value = serde_json::to_value(sample()).expect("encodes");
    let refused = |path: &[&str], change: &dyn Fn(&mut Value)| -> String {
        let mut damaged = value.clone();
        let mut at = &mut damaged;
        for part in path {
            at = &mut at[*part];
        }
        change(at);
        match serde_json::from_value::<PreparedBatch>(damaged) {
            Ok(_) => panic!("{path:?} accepted"),
            Err(error) => error.to_string(),
        }
    };
    let set = |index: usize, to: Value| move |column: &mut Value| column[index] = to.clone();
    let pop = |column: &mut Value| drop(column.as_array_mut().expect("a column").pop());
    let push = |column: &mut Value| column.as_array_mut().expect("a column").push(Value::from(0));
    assert!(refused(&["events", "id_stems"], &set(0, Value::from(9999))).contains("string 9999"));
    assert!(refused(&["events", "records"], &pop).contains("differ in length"));
    assert!(refused(&["events", "fingerprints"], &push).contains("differ in length"));
    assert!(refused(&["events", "tags"], &set(0, Value::from(7))).contains("unknown kind 7"));
    assert!(refused(&["events", "contexts"], &set(0, Value::from(99))).contains("context is not in"));
    assert!(refused(&["events", "id_numbers"], &set(0, Value::from(u64::MAX))).contains("out of range"));
    let activities = ["events", "activities"];
    let column = |name: &'static str| [activities[0], activities[1], name];
    assert!(refused(&column("flags"), &set(0, Value::from(0x40))).contains("unknown activity flags"));
    assert!(refused(&column("flags"), &set(0, Value::from(0x0c))).contains("unknown busy form"));
    assert!(refused(&column("domains"), &set(0, Value::from(4))).contains("activity domain 4"));
    assert!(refused(&column("kinds"), &pop).contains("activity kind column ends"));
    assert!(refused(&column("names"), &push).contains("values no event reads"));
    assert!(refused(&column("span_lengths"), &set(0, Value::from(u64::MAX))).contains("largest time"));
    assert!(refused(&["refs"], &set(0, serde_json::json!([0, 9999]))).contains("reference 0"));
    assert!(refused(&["interval_starts"], &push).contains("interval columns differ"));
    let member = |change: &dyn Fn(&mut Value)| {
        refused(&["contexts"], &|contexts: &mut Value| change(&mut contexts[0][0]))
    };
    assert!(member(&|member| member[0] = Value::from(9999)).contains("context 0: string 9999"));
    let twice = member(&|member| *member = value["contexts"][0][1].clone());
    assert!(twice.contains("is given twice"), "{twice}");
    let wrong = member(&|member| member[1] = serde_json::json!({"Count": 1}));
    assert!(wrong.starts_with("context 0:"), "{wrong}");
    assert!(refused(&["events", "others"], &pop).contains("other events column ends"));
    // An empty stem string under a numbered ID is fine; an empty ID
    // cannot make an activity's key.
    let empty = refused(&["strings"], &|strings: &mut Value| {
        for text in strings.as_array_mut().expect("strings") {
            if text == "plain-id" {
                *text = Value::from("");
            }
        }
    });
    assert!(empty.contains("empty producer_id or id"), "{empty}");
}

/// A stem too long to spell for every event that names it is refused.
#[test]
fn long_stems_are_kept_whole() {
    let long = format!("{}/1", "x".repeat(super::MAX_STEM + 1));
    assert_eq!(super::split_number(&long), (long.as_str(), None));
    assert_eq!(super::split_number("a/007"), ("a/00", Some(7)));
    assert_eq!(super::split_number("a/000"), ("a/00", Some(0)));
    assert_eq!(super::split_number("a/1234567890123456789"), ("a/1234567890123456789", None));
    let mut value = serde_json::to_value(sample()).expect("encodes");
    let strings = value["strings"].as_array_mut().expect("strings");
    let stem = strings.iter().position(|text| text == "trace/").expect("the stem");
    strings[stem] = Value::from("y".repeat(super::MAX_STEM + 1));
    let refused = serde_json::from_value::<PreparedBatch>(value).expect_err("refused").to_string();
    assert!(refused.contains("stem is over"), "{refused}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any events, some renamed as a trace names them, round-trip to a
    /// batch with the same identities that resolves the same.
    #[test]
    fn any_batch_round_trips(
        events in (arb_context(), proptest::collection::vec((0u8..4, 0u64..3000, any::<bool>()), 1..12))
            .prop_flat_map(|(context, shapes)| {
                let context = Arc::new(context);
                let drawn: Vec<_> = shapes
                    .into_iter()
                    .map(|shape| {
                        let event = prop_oneof![3 => arb_event_in(Arc::clone(&context)), 1 => arb_event()];
                        (event, Just(shape))
                    })
                    .collect();
                drawn
            }),
        labels in any::<bool>(),
    ) {
        let events: Vec<CorrelationEvent> = events
            .iter()
            .map(|(event, (shape, number, own))| match shape {
                0 => event.clone(),
                1 => renamed(event, &format!("trace/{number}"), *own),
                2 => renamed(event, &format!("k{number:06}"), *own),
                // A redelivery of the last event under this number.
                _ => renamed(event, &format!("trace/{}", number % 4), *own),
            })
            .collect();
        let batch = batch_of(&events, labels);
        let back = round_trip(&batch).map_err(TestCaseError::fail)?;
        prop_assert_eq!(back.identities().collect::<Vec<_>>(), batch.identities().collect::<Vec<_>>());
        prop_assert_eq!(resolved(&back), resolved(&batch));
        let again = round_trip(&back).map_err(TestCaseError::fail)?;
        prop_assert_eq!(serde_json::to_value(&again).ok(), serde_json::to_value(&back).ok());
    }
}
