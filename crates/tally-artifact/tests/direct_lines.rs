//! The encoder writes an event's line member by member, straight from the
//! event (`CorrelationEvent::for_each_record_member`); these properties hold
//! it to the line the record map gives (`to_record`, written by the generic
//! sorted-key writer), in both forms, for arbitrary events of every type.
//! The map writer sorts the keys and the direct one does not, so the same
//! bytes also mean that the members come in the order of their keys.

use std::collections::HashSet;

use proptest::prelude::*;
use serde_json::{Map, Value};
use tally_artifact::pyjson::{Separators, write_map};
use tally_artifact::{Form, context_id, encode_artifact};
use tally_core::arbitrary::{arb_event, arb_records};
use tally_core::{CONTEXT_REFERENCE_SCHEMA_VERSION, EventType, InferenceRecord};

fn line(out: &mut Vec<u8>, row: &Map<String, Value>) {
    write_map(out, row, Separators::DEFAULT);
    out.push(b'\n');
}

/// The artifact as the record maps give it: each event's `to_record`, and
/// in the compact form its context defined once and referred to by ID.
fn from_record_maps(records: &[InferenceRecord], form: Form) -> Vec<u8> {
    let mut out = Vec::new();
    let mut defined = HashSet::new();
    for record in records {
        let mut row = record.to_record();
        let null_intervals = record.as_event().is_some_and(|event| {
            event.event_type() == EventType::ActivityRef
                && event.metadata().get("intervals") == Some(&Value::Null)
        });
        match record.as_event() {
            Some(event) if form == Form::Compact && !null_intervals => {
                let id = context_id(event.context());
                if defined.insert(id.clone()) {
                    let mut definition = Map::new();
                    definition.insert("schema_version".into(), Value::from(CONTEXT_REFERENCE_SCHEMA_VERSION));
                    definition.insert("event_type".into(), Value::from("infer.context"));
                    definition.insert("context_id".into(), Value::from(id.clone()));
                    definition.insert("context".into(), event.context().to_json());
                    line(&mut out, &definition);
                }
                row.remove("context");
                row.insert("context_id".into(), Value::from(id));
                row.insert("schema_version".into(), Value::from(CONTEXT_REFERENCE_SCHEMA_VERSION));
                line(&mut out, &row);
            }
            _ => line(&mut out, &row),
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn direct_lines_are_the_record_maps_lines(records in arb_records(12, true)) {
        for form in [Form::Embedded, Form::Compact] {
            let direct = encode_artifact(&records, form).expect("valid records encode");
            let expected = from_record_maps(&records, form);
            prop_assert_eq!(String::from_utf8_lossy(&direct), String::from_utf8_lossy(&expected), "{:?}", form);
        }
    }

    #[test]
    fn members_are_the_record_maps_members_in_key_order(event in arb_event()) {
        let mut members = Vec::new();
        event.for_each_record_member(|key, member| members.push((key, member.to_json())));
        let record = event.to_record();
        let expected: Vec<_> = record.iter().map(|(key, value)| (key.as_str(), value.clone())).collect();
        prop_assert_eq!(members, expected);
    }
}
