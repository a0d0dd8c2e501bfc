//! The schema's tables against the parser, the body structs and the record
//! writer: each event type's members, written from a record that has them
//! all, come back under their keys, with their values, in the record's
//! order.
#![cfg(feature = "proptest")]

use serde_json::Value;
use tally_core::EventType;
use tally_core::arbitrary::full_record;
use tally_core::schema::{class_name, members};

#[test]
fn each_table_walks_a_fully_populated_record() {
    for &event_type in EventType::ALL {
        let record = full_record(event_type, 1);
        let parsed = tally_core::parse_inference_record(Value::Object(record.clone()))
            .unwrap_or_else(|error| panic!("{event_type}: {error}"));
        let event = parsed.as_event().expect("a v2 record is an event");
        let mut written = Vec::new();
        event.for_each_record_member(|key, member| {
            // The context is written whole, every optional field null.
            let value = if key == "context" { record[key].clone() } else { member.to_json() };
            written.push((key, value));
        });
        let mut expected: Vec<(&str, Value)> =
            record.iter().map(|(key, value)| (key.as_str(), value.clone())).collect();
        expected.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(written, expected, "{event_type}");
        assert_eq!(
            record.len(),
            5 + members(event_type).len(),
            "{event_type}: a member of the table is missing"
        );
    }
}

#[test]
fn classes_are_stormlogs() {
    assert_eq!(class_name(EventType::ActivityRef), "ActivityReferenceEvent");
    let required =
        |event_type| members(event_type).iter().filter(|member| !member.optional()).map(|member| member.name);
    assert!(required(EventType::Request).eq(["request_ref"]));
    assert!(required(EventType::ActivityRef).eq(["activity_ref", "activity_kind", "attribution_status"]));
}
