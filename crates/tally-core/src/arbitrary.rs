//! proptest strategies for every value of the event model (feature
//! `proptest`).
//!
//! Other crates' property suites build on these: enable the feature in a
//! dev-dependency (`tally-core = { workspace = true, features = ["proptest"] }`).
//! Every generated value is valid by construction; the strategies lean
//! towards the awkward cases a codec must survive (non-ASCII and escaped
//! characters, `u64::MAX`, empty metadata, floats of every magnitude, shared
//! contexts), while keeping values small enough for fast suites.
//!
//! ```
//! use proptest::prelude::*;
//! use proptest::strategy::ValueTree;
//! use proptest::test_runner::TestRunner;
//! use tally_core::arbitrary::arb_event;
//! let mut runner = TestRunner::deterministic();
//! let event = arb_event().new_tree(&mut runner).unwrap().current();
//! assert!(!event.event_id().is_empty());
//! ```

use std::num::NonZeroU64;
use std::sync::Arc;

use proptest::collection::{btree_map, btree_set, vec};
use proptest::prelude::*;
use proptest::sample::subsequence;
use serde_json::{Map, Number, Value};

use proptest::strategy::Union;

use crate::fields::Fields;
use crate::schema::{self, Member, MemberKind};
use crate::{
    ActivityDomain, ClockKind, CollectionMode, CorrelationContext, CorrelationEvent, EntityRef, EventBody,
    EventType, InferenceRecord, LegacyRecord, Metadata, NonEmptyString, Provenance, Span, Stage,
};

/// Text that a JSON codec must escape or encode with care.
const AWKWARD: &[&str] =
    &["\"", "\\", "\n", "\t", "\u{1}", "\u{7f}", "é", "€", "😀", "\u{2028}", "/", " ", "\u{ffff}"];

/// Any string, often empty or awkward: for metadata keys and values.
pub fn arb_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z_]{0,8}",
        1 => vec(prop::sample::select(AWKWARD), 0..4).prop_map(|parts| parts.concat()),
        1 => "\\PC{0,6}",
    ]
}

/// A non-empty string, mostly identifier-like.
pub fn arb_non_empty() -> impl Strategy<Value = NonEmptyString> {
    prop_oneof![
        6 => "[a-z0-9][a-z0-9_.:-]{0,11}",
        1 => (arb_text(), "[a-z]").prop_map(|(text, tail)| format!("{text}{tail}")),
    ]
    // Both alternatives end in at least one character.
    .prop_map(|text| NonEmptyString::new(text).expect("generated text is non-empty"))
}

/// A `u64`, biased to small values and the ends of the range.
pub fn arb_u64() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0u64..2_000_000, 1 => Just(0u64), 1 => Just(u64::MAX), 2 => any::<u64>()]
}

/// An entity reference.
pub fn arb_entity_ref() -> impl Strategy<Value = EntityRef> {
    (arb_non_empty(), arb_non_empty()).prop_map(|(producer, id)| EntityRef::from_parts(producer, id))
}

/// A capture context, with each optional field present or not.
pub fn arb_context() -> BoxedStrategy<CorrelationContext> {
    let required = (
        arb_non_empty(),
        arb_non_empty(),
        arb_non_empty(),
        arb_non_empty(),
        arb_non_empty(),
        prop::sample::select(ClockKind::ALL),
        prop::sample::select(CollectionMode::ALL),
        prop::sample::select(Provenance::ALL),
    );
    let texts = vec(prop::option::of(arb_non_empty()), 7);
    let numbers = (
        prop::option::of(arb_u64()),
        prop::option::of(arb_u64()),
        prop::option::of(arb_u64()),
        prop::option::of(arb_u64().prop_filter_map("world_size >= 1", NonZeroU64::new)),
    );
    (required, texts, numbers)
        .prop_map(|(required, mut texts, numbers)| {
            let (run, session, producer, source, clock, kind, mode, provenance) = required;
            let mut context =
                CorrelationContext::new(run, session, producer, source, clock, kind, mode, provenance);
            let mut next = || texts.pop().flatten();
            context.source_version = next();
            context.engine = next();
            context.engine_version = next();
            context.backend = next();
            context.backend_version = next();
            context.host = next();
            context.device_uuid = next();
            (context.pid, context.rank, context.local_rank, context.world_size) = numbers;
            context
        })
        .boxed()
}

/// A finite float of any magnitude, as JSON can carry it.
pub fn arb_float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |value| value.is_finite()),
        (-1.0e6f64..1.0e6),
        prop::sample::select(&[0.0, -0.0, 0.1, 1e16, 1e15, 1e-5, 1e-4, 123456789012345680.0, 5e-324][..]),
    ]
}

/// Any JSON value a metadata object may hold, nested a few levels.
pub fn arb_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        arb_u64().prop_map(Value::from),
        arb_float().prop_filter_map("finite", |float| Number::from_f64(float).map(Value::Number)),
        arb_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(arb_text(), inner, 0..4).prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A metadata object, often empty; never with an `intervals` key (see
/// [`arb_activity_event`] for those).
pub fn arb_metadata() -> BoxedStrategy<Map<String, Value>> {
    prop_oneof![
        1 => Just(Map::new()),
        2 => btree_map(arb_text(), arb_json(), 0..4)
            .prop_map(|map| map.into_iter().filter(|(key, _)| key != "intervals").collect()),
    ]
    .boxed()
}

/// A span: both ends, one, or none, with `end >= start`.
pub fn arb_span() -> BoxedStrategy<Span> {
    let both = (arb_u64(), arb_u64()).prop_map(|(a, b)| (Some(a.min(b)), Some(a.max(b))));
    let one = (prop::option::of(arb_u64()), any::<bool>())
        .prop_map(|(value, start)| if start { (value, None) } else { (None, value) });
    prop_oneof![4 => both, 1 => one]
        // The pair is ordered above, so the span is valid.
        .prop_map(|(start, end)| Span::new(start, end).expect("ordered span"))
        .boxed()
}

/// Sorted, disjoint `[offset_ns, duration_ns]` pairs inside a span of
/// `length` nanoseconds, as JSON.
pub fn arb_intervals(length: u64) -> impl Strategy<Value = Value> {
    vec(0..=length, 1..5).prop_flat_map(move |mut points| {
        if points.len() % 2 == 1 {
            points.push(length);
        }
        points.sort_unstable();
        let pairs: Vec<Value> = points
            .chunks(2)
            .map(|pair| Value::Array(vec![Value::from(pair[0]), Value::from(pair[1] - pair[0])]))
            .collect();
        Just(Value::Array(pairs))
    })
}

/// One member's JSON value, drawn by its kind alone (an optional member
/// absent as often as not); those drawn together in [`arb_body`] absent.
fn arb_member(member: &Member) -> BoxedStrategy<Option<Value>> {
    let value = match member.kind {
        MemberKind::Ref | MemberKind::OptionalRef => arb_entity_ref().prop_map(|id| id.to_json()).boxed(),
        MemberKind::Text | MemberKind::OptionalText => {
            arb_non_empty().prop_map(|text| text.as_str().into()).boxed()
        }
        MemberKind::Count | MemberKind::OptionalCount => arb_u64().prop_map(Value::from).boxed(),
        MemberKind::Signed => any::<i64>().prop_map(Value::from).boxed(),
        MemberKind::Flag => any::<bool>().prop_map(Value::Bool).boxed(),
        MemberKind::Domain => {
            prop::sample::select(ActivityDomain::ALL).prop_map(|it| it.as_str().into()).boxed()
        }
        _ => return Just(None).boxed(),
    };
    if member.optional() { prop::option::of(value).boxed() } else { value.prop_map(Some).boxed() }
}

/// A valid record of `event_type` with every member of its table present,
/// each value distinct from every other member's, and from the same
/// member's under another `salt` where it can change alone (not a flag,
/// names or an attribution): a reader or writer that misses one shows.
pub fn full_record(event_type: EventType, salt: u64) -> Map<String, Value> {
    let Value::Object(mut record) = serde_json::json!({
        "schema_version": 2, "event_type": event_type.as_str(), "event_id": "e", "metadata": {"k": 1},
        "context": {"run_id": "r", "session_id": "s", "producer_id": "p", "source": "t",
                    "clock_domain": "host", "clock_kind": "monotonic",
                    "collection_mode": "active", "provenance": "observed"}})
    else {
        unreachable!("an object literal")
    };
    for (index, member) in (salt * 100..).zip(schema::members(event_type)) {
        let name = format!("{}-{salt}", member.name);
        let value = match member.kind {
            MemberKind::Ref | MemberKind::OptionalRef => serde_json::json!({"producer_id": "p", "id": name}),
            MemberKind::Text | MemberKind::OptionalText => Value::from(name),
            MemberKind::Count | MemberKind::OptionalCount | MemberKind::SpanStart => Value::from(1 + index),
            MemberKind::SpanEnd => Value::from(1000 + index),
            MemberKind::Signed => Value::from(-7 - index as i64),
            MemberKind::Domain => Value::from(ActivityDomain::ALL[salt as usize % 3].as_str()),
            MemberKind::Flag => Value::Bool(true),
            MemberKind::Names => Value::from(vec!["x"]),
            MemberKind::Attribution => Value::from("linked"),
        };
        record.insert(member.name.into(), value);
    }
    record
}

/// Capabilities' `supported`, `enabled` and `collected`: distinct names,
/// each list a subsequence of the one before.
fn arb_name_lists() -> BoxedStrategy<Vec<Value>> {
    let names =
        prop_oneof![1 => Just(Vec::new()), 3 => btree_set(arb_non_empty(), 1..5).prop_map(Vec::from_iter)];
    let part =
        |names: Vec<NonEmptyString>| (Just(names.clone()), subsequence(names.clone(), 0..=names.len()));
    names
        .prop_flat_map(part)
        .prop_flat_map(move |(supported, enabled)| (Just(supported), part(enabled)))
        .prop_map(|(supported, (enabled, collected))| {
            let lists = [supported, enabled, collected];
            lists.map(|names| Value::from_iter(names.into_iter().map(String::from))).to_vec()
        })
        .boxed()
}

/// A body of `event_type` drawn from its table ([`schema::members`]), each
/// member by its kind (optional ones `null` as often as not), a span's ends
/// together, and read by the record parser; a draw that breaks a rule
/// across members (a stage with no owner) is drawn again.
fn arb_body(event_type: EventType) -> BoxedStrategy<EventBody> {
    let members = schema::members(event_type);
    let drawn: Vec<_> = members.iter().map(arb_member).collect();
    let lists =
        if event_type == EventType::Capabilities { arb_name_lists() } else { Just(Vec::new()).boxed() };
    (drawn, arb_span(), lists)
        .prop_filter_map("the body breaks a rule across members", move |(values, span, lists)| {
            let mut lists = lists.into_iter();
            let mut record = Map::new();
            for (member, value) in members.iter().zip(values) {
                let value = match member.kind {
                    MemberKind::SpanStart => span.start_ns().map(Value::from),
                    MemberKind::SpanEnd => span.end_ns().map(Value::from),
                    MemberKind::Names => lists.next(),
                    // An activity is linked exactly when it names its iteration.
                    MemberKind::Attribution => Some(Value::Null),
                    _ => value,
                };
                record.extend(value.map(|value| (member.name.to_owned(), value)));
            }
            let linked = record.get("iteration_ref").is_some_and(|link| !link.is_null());
            if let Some(status) = record.get_mut("attribution_status") {
                *status = Value::from(if linked { "linked" } else { "unresolved" });
            }
            let body = crate::record::parse_body(event_type, &mut Fields::new(record)).ok()?;
            // The one rule across members that `CorrelationEvent::new` checks.
            let orphan = |stage: &Stage| stage.request_ref.is_none() && stage.iteration_ref.is_none();
            (!matches!(&body, EventBody::Stage(stage) if orphan(stage))).then_some(body)
        })
        .boxed()
}

/// An `infer.activity_ref` event in `context`: without `metadata.intervals`
/// (schema 2), with valid intervals (schema 3), or with `"intervals": null`
/// (schema 3 that only the embedded form can carry).
pub fn arb_activity_event(context: Arc<CorrelationContext>) -> BoxedStrategy<CorrelationEvent> {
    (arb_body(EventType::ActivityRef), arb_non_empty(), arb_metadata())
        .prop_flat_map(move |(activity, event_id, metadata)| {
            let intervals = match activity.span().and_then(Span::bounds) {
                Some((start, end)) => prop_oneof![
                    2 => Just(None),
                    3 => arb_intervals(end - start).prop_map(Some),
                    1 => Just(Some(Value::Null)),
                ]
                .boxed(),
                None => prop_oneof![3 => Just(None), 1 => Just(Some(Value::Null))].boxed(),
            };
            let context = Arc::clone(&context);
            intervals.prop_map(move |intervals| {
                let mut metadata = metadata.clone();
                if let Some(intervals) = intervals {
                    metadata.insert("intervals".into(), intervals);
                }
                CorrelationEvent::new(
                    Arc::clone(&context),
                    event_id.clone(),
                    Metadata::new(metadata),
                    activity.clone(),
                )
                // The intervals were generated inside the span.
                .expect("valid activity")
            })
        })
        .boxed()
}

/// Any event of any type in `context`.
pub fn arb_event_in(context: Arc<CorrelationContext>) -> BoxedStrategy<CorrelationEvent> {
    let plain_context = Arc::clone(&context);
    let plain = EventType::ALL.iter().filter(|&&event_type| event_type != EventType::ActivityRef);
    let plain = (Union::new(plain.map(|&event_type| arb_body(event_type))), arb_non_empty(), arb_metadata())
        .prop_map(move |(body, event_id, metadata)| {
            // Bodies are valid by construction and carry no intervals.
            CorrelationEvent::new(Arc::clone(&plain_context), event_id, Metadata::new(metadata), body)
                .expect("valid event")
        });
    prop_oneof![3 => plain, 2 => arb_activity_event(context)].boxed()
}

/// Any event, in a context of its own.
pub fn arb_event() -> BoxedStrategy<CorrelationEvent> {
    arb_context().prop_flat_map(|context| arb_event_in(Arc::new(context))).boxed()
}

/// A v1 record: `schema_version` 1 or absent, an `infer.` event type that is
/// not a transport row, and arbitrary other fields.
pub fn arb_legacy() -> BoxedStrategy<LegacyRecord> {
    ("[a-z_]{1,10}", any::<bool>(), btree_map("[a-z_]{1,8}", arb_json(), 0..4))
        .prop_map(|(kind, explicit, fields)| {
            let mut raw: Map<String, Value> = fields
                .into_iter()
                .filter(|(key, _)| key != "context_id" && key != "schema_version")
                .collect();
            let event_type =
                if kind == "context" { "infer.session".to_owned() } else { format!("infer.{kind}") };
            raw.insert("event_type".into(), Value::String(event_type));
            if explicit {
                raw.insert("schema_version".into(), Value::from(1));
            }
            LegacyRecord::new(raw)
        })
        .boxed()
}

/// A sequence of records as one artifact holds them: events drawn from a
/// few shared contexts, with legacy records mixed in when `legacy` is true.
pub fn arb_records(max: usize, legacy: bool) -> BoxedStrategy<Vec<InferenceRecord>> {
    vec(arb_context(), 1..4)
        .prop_flat_map(move |contexts| {
            let contexts: Vec<Arc<CorrelationContext>> = contexts.into_iter().map(Arc::new).collect();
            let event =
                prop::sample::select(contexts).prop_flat_map(arb_event_in).prop_map(InferenceRecord::Event);
            let record = if legacy {
                prop_oneof![6 => event, 1 => arb_legacy().prop_map(InferenceRecord::Legacy)].boxed()
            } else {
                event.boxed()
            };
            vec(record, 0..max)
        })
        .boxed()
}
