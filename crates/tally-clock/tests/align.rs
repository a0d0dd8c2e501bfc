//! stormlog's alignment rules, and tally's chains and spans.

use proptest::prelude::*;
use serde_json::{Value, json};
use tally_clock::{
    AlignError, align_span, align_timestamp, align_timestamp_chained, alignment_offset_bounds,
    covering_alignments,
};
use tally_core::{CorrelationEvent, InferenceRecord, parse_inference_record};

fn alignment_with(
    source: &str,
    from: &str,
    to: &str,
    offset: i64,
    uncertainty: u64,
    window: (Option<u64>, Option<u64>),
    metadata: Value,
) -> CorrelationEvent {
    let record = json!({"schema_version": 2, "event_type": "infer.clock_alignment",
        "event_id": format!("{from}-{to}-{offset}-{uncertainty}-{window:?}"),
        "context": {"run_id": "r", "session_id": "s", "producer_id": "p", "source": source,
                    "clock_domain": from, "clock_kind": "monotonic", "collection_mode": "active",
                    "provenance": "observed"},
        "metadata": metadata,
        "from_clock_domain": from, "to_clock_domain": to, "offset_ns": offset,
        "uncertainty_ns": uncertainty, "valid_from_ns": window.0, "valid_to_ns": window.1});
    match parse_inference_record(record).expect("valid alignment") {
        InferenceRecord::Event(event) => event,
        InferenceRecord::Legacy(_) => unreachable!("a v2 record"),
    }
}

fn alignment(from: &str, to: &str, offset: i64, uncertainty: u64) -> CorrelationEvent {
    alignment_with("test", from, to, offset, uncertainty, (None, None), json!({}))
}

fn legacy(gap: Value, extra: Value) -> CorrelationEvent {
    let mut metadata = json!({"gap_ns": gap});
    if let (Value::Object(map), Value::Object(more)) = (&mut metadata, extra) {
        map.extend(more);
    }
    alignment_with("stormlog.infer.import_execution", "wall", "mono", 100, 50, (None, None), metadata)
}

#[test]
fn offset_bounds_are_offset_plus_minus_uncertainty() {
    assert_eq!(alignment_offset_bounds(&alignment("a", "b", -10, 3)), Some((-13, -7)));
}

#[test]
fn legacy_execution_imports_bracket_from_the_offset() {
    assert_eq!(alignment_offset_bounds(&legacy(json!(40), json!({}))), Some((100, 140)));
    assert_eq!(alignment_offset_bounds(&legacy(json!(0), json!({}))), Some((100, 100)));
    // Not legacy: a basis is recorded, the gap is not a non-negative
    // integer, or another source wrote it.
    for not_legacy in [
        legacy(json!(40), json!({"alignment_basis": "x"})),
        legacy(json!(-1), json!({})),
        legacy(json!(40.0), json!({})),
        legacy(json!(true), json!({})),
        legacy(Value::Null, json!({})),
        alignment_with("other", "wall", "mono", 100, 50, (None, None), json!({"gap_ns": 40})),
    ] {
        assert_eq!(alignment_offset_bounds(&not_legacy), Some((50, 150)));
    }
}

#[test]
fn align_timestamp_takes_the_middle_of_the_bracket() {
    let legacy = legacy(json!(5), json!({}));
    // Bounds [100, 105]: half = 3, value = ts + 105 - 3.
    let aligned = align_timestamp(1000, "wall", "mono", [&legacy]).expect("covered");
    assert_eq!((aligned.value_ns, aligned.uncertainty_ns, aligned.clock_domain), (1102, 3, "mono"));
}

#[test]
fn validity_windows_are_half_open() {
    let early = alignment_with("t", "a", "b", 10, 0, (Some(100), Some(200)), json!({}));
    let late = alignment_with("t", "a", "b", 20, 0, (Some(200), None), json!({}));
    let both = [&early, &late];
    assert!(covering_alignments(99, "a", "b", both).is_empty());
    assert_eq!(covering_alignments(100, "a", "b", both).len(), 1);
    assert_eq!(align_timestamp(199, "a", "b", both).map(|t| t.value_ns), Ok(209));
    assert_eq!(align_timestamp(200, "a", "b", both).map(|t| t.value_ns), Ok(220));
    assert!(matches!(align_timestamp(50, "a", "b", both), Err(AlignError::NoAlignment { .. })));
}

#[test]
fn several_covering_alignments_are_ambiguous_and_negative_timestamps_refused() {
    let one = alignment("a", "b", 10, 0);
    let two = alignment("a", "b", 11, 0);
    let error = align_timestamp(5, "a", "b", [&one, &two]).expect_err("ambiguous");
    assert!(matches!(error, AlignError::Ambiguous { count: 2, .. }));
    assert!(error.to_string().starts_with("multiple ambiguous alignments"));
    assert_eq!(align_timestamp(-1, "a", "a", [&one]), Err(AlignError::NegativeTimestamp));
    // The reverse direction is not covered.
    assert!(matches!(align_timestamp(5, "b", "a", [&one]), Err(AlignError::NoAlignment { .. })));
}

#[test]
fn chains_keep_stormlogs_direct_rule() {
    // Before chaining, align_timestamp_chained answers as align_timestamp.
    let one = alignment("a", "b", 10, 3);
    let two = alignment("a", "b", 11, 0);
    let chained = align_timestamp_chained(5, "a", "b", [&one]).expect("one direct");
    assert_eq!(Ok(chained.aligned), align_timestamp(5, "a", "b", [&one]));
    assert_eq!(chained.path.len(), 1);
    assert!(std::ptr::eq(chained.path[0], &one));
    let error = align_timestamp_chained(5, "a", "b", [&one, &two]).expect_err("ambiguous");
    assert!(matches!(error, AlignError::Ambiguous { count: 2, .. }));
    assert_eq!(align_timestamp(5, "a", "b", [&one, &two]), Err(error));
    assert_eq!(align_timestamp_chained(-1, "a", "b", [&one]).map(|_| ()), Err(AlignError::NegativeTimestamp));
}

#[test]
fn chains_pick_the_least_total_uncertainty() {
    let ab = alignment("a", "b", 100, 10);
    let bd = alignment("b", "d", 1000, 10);
    let ac = alignment("a", "c", 5, 1);
    let cd = alignment("c", "d", 7, 2);
    let all = [&ab, &bd, &ac, &cd];
    let chained = align_timestamp_chained(50, "a", "d", all).expect("two paths");
    assert_eq!(chained.aligned.uncertainty_ns, 3);
    assert_eq!(chained.aligned.value_ns, 50 + 5 + 7);
    assert_eq!(chained.path.len(), 2);
    assert!(std::ptr::eq(chained.path[0], &ac) && std::ptr::eq(chained.path[1], &cd));
    // stormlog itself finds no direct alignment.
    assert!(align_timestamp(50, "a", "d", all).is_err());
}

#[test]
fn chains_prefer_a_direct_alignment_and_skip_ambiguous_hops() {
    let direct = alignment("a", "c", 1, 100);
    let ab = alignment("a", "b", 1, 0);
    let bc = alignment("b", "c", 1, 0);
    let chained = align_timestamp_chained(0, "a", "c", [&direct, &ab, &bc]).expect("direct");
    assert_eq!((chained.aligned.uncertainty_ns, chained.path.len()), (100, 1));

    let bc_again = alignment("b", "c", 2, 0);
    let error = align_timestamp_chained(0, "a", "c", [&ab, &bc, &bc_again]).expect_err("ambiguous hop");
    assert!(matches!(error, AlignError::NoAlignment { .. }));
}

#[test]
fn spans_keep_their_bounds_and_an_exact_duration_on_one_chain() {
    let early = alignment_with("t", "a", "b", 10, 4, (None, Some(100)), json!({}));
    let late = alignment_with("t", "a", "b", 30, 6, (Some(100), None), json!({}));
    let same = align_span(10, 60, "a", "b", [&early, &late]).expect("covered");
    assert_eq!(same.duration_ns(), (50, 0));
    assert_eq!((same.earliest_start_ns(), same.latest_end_ns()), (10 + 10 - 4, 60 + 10 + 4));
    let across = align_span(90, 110, "a", "b", [&early, &late]).expect("covered");
    assert_eq!(across.duration_ns(), ((110 + 30) - (90 + 10), 10));
    assert!(matches!(align_span(5, 4, "a", "b", [&early]), Err(AlignError::InvertedSpan { .. })));
}

proptest! {
    #[test]
    fn the_same_domain_is_the_identity(timestamp in 0i128..=i128::from(u64::MAX), offset in any::<i32>()) {
        let unrelated = alignment("x", "x", i64::from(offset), 9);
        let aligned = align_timestamp(timestamp, "x", "x", [&unrelated]).expect("identity");
        prop_assert_eq!((aligned.value_ns, aligned.uncertainty_ns), (timestamp, 0));
        let chained = align_timestamp_chained(timestamp, "x", "x", [&unrelated]).expect("identity");
        prop_assert_eq!((chained.aligned.value_ns, chained.aligned.uncertainty_ns), (timestamp, 0));
        prop_assert!(chained.path.is_empty());
    }

    /// Random directed graphs over a few domains; every hop re-done with
    /// stormlog's single-hop function must add up to the chain's result, and
    /// no simple path may have a smaller total uncertainty.
    #[test]
    fn a_chain_adds_uncertainty_along_its_path(
        edges in proptest::collection::vec((0usize..5, 0usize..5, -1000i64..1000, 0u64..50), 1..12),
        timestamp in 10_000i128..100_000,
    ) {
        let names = ["d0", "d1", "d2", "d3", "d4"];
        // One alignment per ordered pair at most, so every hop is unambiguous.
        let mut seen = std::collections::HashSet::new();
        let events: Vec<CorrelationEvent> = edges
            .iter()
            .filter(|(a, b, _, _)| a != b && seen.insert((*a, *b)))
            .map(|&(a, b, offset, uncertainty)| alignment(names[a], names[b], offset, uncertainty))
            .collect();
        match align_timestamp_chained(timestamp, "d0", "d4", &events) {
            Ok(chained) => {
                let mut value = timestamp;
                let mut total = 0u128;
                let mut domain = "d0";
                for hop in &chained.path {
                    let tally_core::EventBody::ClockAlignment(body) = hop.body() else {
                        return Err(TestCaseError::fail("path holds alignments only"));
                    };
                    prop_assert_eq!(body.from_clock_domain.as_str(), domain);
                    let step = align_timestamp(value, domain, &body.to_clock_domain, [*hop]).expect("hop covers");
                    value = step.value_ns;
                    total += step.uncertainty_ns;
                    domain = &body.to_clock_domain;
                }
                prop_assert_eq!(domain, "d4");
                prop_assert_eq!(chained.aligned.value_ns, value);
                prop_assert_eq!(chained.aligned.uncertainty_ns, total);
                let direct = events.iter().any(|e| matches!(e.body(),
                    tally_core::EventBody::ClockAlignment(b) if b.from_clock_domain == "d0" && b.to_clock_domain == "d4"));
                if !direct {
                    prop_assert_eq!(Some(total), cheapest_path(&events, "d0", "d4", &mut vec!["d0"]));
                }
            }
            Err(_) => prop_assert_eq!(cheapest_path(&events, "d0", "d4", &mut vec!["d0"]), None),
        }
    }
}

/// Exhaustive search over simple paths; windows are open, so every hop's
/// uncertainty is its own `uncertainty_ns`, whatever the timestamp.
fn cheapest_path<'a>(
    events: &'a [CorrelationEvent],
    at: &str,
    to: &str,
    visited: &mut Vec<&'a str>,
) -> Option<u128> {
    if at == to {
        return Some(0);
    }
    let mut best: Option<u128> = None;
    for event in events {
        let tally_core::EventBody::ClockAlignment(body) = event.body() else { continue };
        let next = body.to_clock_domain.as_str();
        if body.from_clock_domain.as_str() != at || visited.contains(&next) {
            continue;
        }
        visited.push(next);
        if let Some(rest) = cheapest_path(events, next, to, visited) {
            let total = rest + u128::from(body.uncertainty_ns);
            best = Some(best.map_or(total, |known| known.min(total)));
        }
        visited.pop();
    }
    best
}

/// stormlog's own `alignment_offset_bounds` on the same records, when the
/// reference Python is there: both ends of the bracket, not only what
/// `align_timestamp` makes of them.
#[test]
fn offset_bounds_equal_stormlogs_on_every_kind_of_alignment() {
    let python = match tally_testkit::reference_python(&["stormlog"]) {
        Ok(python) => python,
        Err(why) => return tally_testkit::skip(why),
    };
    let mut events = Vec::new();
    let gaps = [
        json!(40),
        json!(0),
        json!(-1),
        json!(40.0),
        json!(true),
        json!(false),
        Value::Null,
        json!(7_000_000_000_000u64),
    ];
    for (index, gap) in gaps.iter().enumerate() {
        for basis in [json!({}), json!({"alignment_basis": "x"})] {
            for source in ["stormlog.infer.import_execution", "other"] {
                let mut metadata = json!({"gap_ns": gap});
                if let (Value::Object(map), Value::Object(more)) = (&mut metadata, basis.clone()) {
                    map.extend(more);
                }
                let offset = 1_000 * index as i64 - 3_000;
                events.push(alignment_with(
                    source,
                    "wall",
                    &format!("mono-{}", events.len()),
                    offset,
                    index as u64 * 3,
                    (None, None),
                    metadata,
                ));
            }
        }
    }
    // No gap at all.
    events.push(alignment_with(
        "stormlog.infer.import_execution",
        "wall",
        "mono-last",
        5,
        2,
        (None, None),
        json!({}),
    ));
    let artifact: String =
        events.iter().map(|event| serde_json::to_string(event).expect("JSON") + "\n").collect();
    const SCRIPT: &str = "import json, sys, tempfile\n\
from stormlog.infer.correlation_events import load_inference_artifact, ClockAlignmentEvent\n\
from stormlog.infer.correlation_accounting import alignment_offset_bounds\n\
with tempfile.NamedTemporaryFile('w', suffix='.jsonl', delete=False) as f:\n    f.write(sys.stdin.read())\n\
records = load_inference_artifact(f.name)\n\
print(json.dumps({r.event_id: list(alignment_offset_bounds(r)) for r in records if isinstance(r, ClockAlignmentEvent)}))\n";
    let output = tally_testkit::run_python(&python, SCRIPT, artifact.as_bytes());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let theirs: serde_json::Map<String, Value> =
        serde_json::from_slice(&output.stdout).expect("stormlog's bounds");
    assert_eq!(theirs.len(), events.len());
    for event in &events {
        let (low, high) = alignment_offset_bounds(event).expect("an alignment");
        let expected = &theirs[event.event_id().as_str()];
        assert_eq!(
            (expected[0].as_i64().map(i128::from), expected[1].as_i64().map(i128::from)),
            (Some(low), Some(high)),
            "{}",
            event.event_id().as_str()
        );
    }
}
