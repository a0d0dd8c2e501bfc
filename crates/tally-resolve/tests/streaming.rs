//! The streaming resolver compares events it no longer holds by content
//! fingerprints: they must agree with the model's own equality, Python's
//! number equality included.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use tally_core::arbitrary::{arb_event, arb_event_in};
use tally_core::{CorrelationEvent, Metadata, NonEmptyString};
use tally_resolve::{ResolveError, StreamingResolver};

/// Numbers as another producer may write them: integers as floats where
/// exact, 1 as `true` and 0 as `false`. Python finds the result equal.
fn pythonic(value: &Value) -> Value {
    match value {
        Value::Number(number) => match number.as_u64() {
            Some(0) => Value::Bool(false),
            Some(1) => Value::Bool(true),
            Some(small) if small < (1 << 50) => {
                Number::from_f64(small as f64).map_or(value.clone(), Value::Number)
            }
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(pythonic).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), pythonic(v))).collect()),
        other => other.clone(),
    }
}

fn with(
    event: &CorrelationEvent,
    event_id: Option<&str>,
    metadata: Option<Map<String, Value>>,
) -> CorrelationEvent {
    let id =
        event_id.map_or_else(|| event.event_id().clone(), |id| NonEmptyString::new(id).expect("non-empty"));
    let metadata = metadata.map_or_else(|| event.metadata().clone(), Metadata::new);
    CorrelationEvent::new(Arc::clone(event.context_arc()), id, metadata, event.body().clone())
        .expect("same body, valid metadata")
}

/// Whether the resolver accepts `second` after `first`.
fn accepts(first: &CorrelationEvent, second: &CorrelationEvent) -> Result<(), ResolveError> {
    let mut resolver = StreamingResolver::new();
    resolver.push(0, first)?;
    resolver.push(1, second)?;
    resolver.finish().map(drop)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A redelivery equal as Python sees it is accepted; the same event ID
    /// with other content is a conflicting event identity, exactly when the
    /// model says the two differ.
    #[test]
    fn redeliveries_are_judged_as_the_model_judges_them(a in arb_event(), b in arb_event()) {
        // `b`'s content under `a`'s key (context and event ID).
        let same_key = CorrelationEvent::new(Arc::clone(a.context_arc()), a.event_id().clone(),
            b.metadata().clone(), b.body().clone());
        if let Ok(other) = same_key {
            let verdict = accepts(&a, &other);
            prop_assert_eq!(verdict.is_ok(), a == other, "{:?}", verdict);
        }
        let pythonic_metadata = match pythonic(&Value::Object(a.metadata().as_map().clone())) {
            Value::Object(map) => map,
            _ => unreachable!("an object stays an object"),
        };
        if let Ok(variant) = CorrelationEvent::new(Arc::clone(a.context_arc()), a.event_id().clone(),
            Metadata::new(pythonic_metadata), a.body().clone()) {
            prop_assert!(a == variant);
            prop_assert!(accepts(&a, &variant).is_ok());
        }
    }

    /// Two events for one entity under different IDs: accepted exactly when
    /// the model finds them the same entity.
    #[test]
    fn entity_reports_are_judged_as_the_model_judges_them(
        (a, b) in arb_event().prop_flat_map(|a| {
            let context = Arc::clone(a.context_arc());
            (Just(a), arb_event_in(context))
        }),
        tweak in any::<bool>(),
    ) {
        // `b` with `a`'s body (so one key), its own metadata or `a`'s.
        let metadata = if tweak { b.metadata().as_map().clone() } else { a.metadata().as_map().clone() };
        let id = format!("{}-again", a.event_id().as_str());
        let second = CorrelationEvent::new(Arc::clone(a.context_arc()),
            NonEmptyString::new(id).expect("non-empty"), Metadata::new(metadata), a.body().clone());
        // Metadata the model refuses for this body is no case at all; proptest
        // counts the rejects, so a generator that only made such cases fails.
        prop_assume!(second.is_ok(), "the model refuses {:?}", second);
        let Ok(second) = second else { unreachable!("assumed just above") };
        let verdict = accepts(&a, &second);
        let keyed = !matches!(a.body(), tally_core::EventBody::Artifact(_) | tally_core::EventBody::Capabilities(_));
        if keyed {
            prop_assert_eq!(verdict.is_ok(), a.same_entity_as(&second), "{:?}", verdict);
        } else {
            prop_assert!(verdict.is_ok());
        }
    }
}

/// `value` changed a little: a string's last character (or one added), a
/// number off by one, a reference's ID, `null` for anything else, or a
/// value for `null`.
fn nudged(value: &Value, salt: u8) -> Value {
    match value {
        Value::String(text) => {
            let mut text = text.clone();
            match (salt % 3, text.pop()) {
                (0, Some(last)) => text.push(char::from_u32(u32::from(last) ^ 1).unwrap_or('x')),
                (1, last) => {
                    text.extend(last);
                    text.push('\0');
                }
                (_, last) => {
                    text.extend(last);
                    text.push(char::from(b'a' + salt % 26));
                }
            }
            Value::String(text)
        }
        Value::Number(number) => match number.as_u64() {
            Some(value) => Value::from(value.wrapping_add(1)),
            None => Value::Null,
        },
        Value::Object(map) if map.contains_key("id") => {
            let mut map = map.clone();
            let id = map.get("id").cloned().unwrap_or(Value::Null);
            map.insert("id".into(), nudged(&id, salt));
            Value::Object(map)
        }
        Value::Null => Value::from(u64::from(salt)),
        _ => Value::Null,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// An event with one member of its body changed a little (a string's
    /// last byte, a trailing NUL, a number by one, a reference's ID) is
    /// another event under the same key: a conflicting event identity.
    /// Fingerprints tell apart what differs in one place only.
    #[test]
    fn one_changed_member_is_a_conflict(event in arb_event(), pick in any::<prop::sample::Index>(), salt in any::<u8>()) {
        let record = event.to_record();
        let keys: Vec<&String> = record
            .keys()
            .filter(|key| !matches!(key.as_str(), "schema_version" | "event_type" | "event_id" | "context" | "metadata"))
            .collect();
        prop_assume!(!keys.is_empty());
        let key = keys[pick.index(keys.len())].clone();
        let mut changed = record.clone();
        changed.insert(key.clone(), nudged(&record[&key], salt));
        let parsed = tally_core::parse_inference_record(Value::Object(changed));
        let Some(other) = parsed.ok().and_then(|record| record.as_event().cloned()) else {
            // The model refuses the change (a required member made null, an
            // end before its start): no case.
            return Ok(());
        };
        prop_assume!(other != event);
        let verdict = accepts(&event, &other);
        prop_assert!(
            matches!(verdict, Err(ResolveError::ConflictingEventIdentity { .. })),
            "{key} changed: {verdict:?}"
        );
    }
}

#[test]
fn a_conflicting_entity_waits_for_the_end_of_the_stream() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let event = loop {
        let candidate = arb_event().new_tree(&mut runner).expect("strategy").current();
        if matches!(candidate.body(), tally_core::EventBody::Iteration(_)) {
            break candidate;
        }
    };
    let mut changed = Map::new();
    changed.insert("changed".into(), Value::Bool(true));
    let other = with(&event, Some("zz-other"), Some(changed));
    let mut resolver = StreamingResolver::new();
    resolver.push(0, &event).expect("first");
    resolver.push(1, &other).expect("an entity conflict is not reported yet");
    assert_eq!(resolver.finish().expect_err("conflict").rule(), "conflicting-entity-identity");
}
