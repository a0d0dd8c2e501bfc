//! Properties of the codec over arbitrary valid events (tally-core's
//! strategies): decode(encode(e)) == e in both forms, the embedded (v2/v3)
//! and compact (v4) artifacts of the same events decode to the same events,
//! and the typed fast path decides every line, valid or mutated, exactly as
//! the `serde_json::Value` path does.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tally_artifact::pyjson::{Separators, to_python_json, write_map};
use tally_artifact::{
    ArtifactError, Form, ReadOptions, RecordDecoder, encode_artifact, read_artifact_from, read_batches,
};
use tally_core::InferenceRecord;
use tally_core::arbitrary::{arb_event, arb_records};

fn serialized(records: &[InferenceRecord]) -> Vec<String> {
    records
        .iter()
        .map(|record| to_python_json(&Value::Object(record.to_record()), Separators::DEFAULT))
        .collect()
}

fn decode(bytes: &[u8], options: &ReadOptions) -> Result<Vec<InferenceRecord>, ArtifactError> {
    let mut records = Vec::new();
    read_batches(bytes, "prop", options, |batch| {
        records.extend(batch.records);
        Ok(())
    })?;
    Ok(records)
}

/// Small windows and chunks, so batches split everywhere.
fn tiny() -> ReadOptions {
    ReadOptions { window_bytes: 700, chunk_bytes: 200, fast_path: true, ..ReadOptions::default() }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn embedded_round_trip(records in arb_records(12, true)) {
        let bytes = encode_artifact(&records, Form::Embedded).expect("valid records encode");
        let decoded = read_artifact_from(&bytes[..], "prop").expect("tally reads what it writes");
        prop_assert_eq!(&decoded, &records);
        prop_assert_eq!(serialized(&decoded), serialized(&records));
        // Writing again is byte-identical: nothing drifts.
        prop_assert_eq!(encode_artifact(&decoded, Form::Embedded).expect("encodes"), bytes);
    }

    #[test]
    fn compact_round_trip_and_same_events_as_embedded(records in arb_records(12, true)) {
        let embedded = encode_artifact(&records, Form::Embedded).expect("encodes");
        let compact = encode_artifact(&records, Form::Compact).expect("encodes");
        let from_compact = decode(&compact, &tiny()).expect("tally reads its compact form");
        let from_embedded = decode(&embedded, &tiny()).expect("tally reads its embedded form");
        prop_assert_eq!(&from_compact, &records);
        prop_assert_eq!(serialized(&from_compact), serialized(&from_embedded));
        // v2 -> v4 -> v2 is the identity on bytes.
        prop_assert_eq!(encode_artifact(&from_compact, Form::Embedded).expect("encodes"), embedded);
        prop_assert_eq!(encode_artifact(&from_compact, Form::Compact).expect("encodes"), compact);
    }

    #[test]
    fn decoded_contexts_are_shared(records in arb_records(12, false)) {
        let compact = encode_artifact(&records, Form::Compact).expect("encodes");
        let decoded = decode(&compact, &tiny()).expect("reads");
        let events: Vec<_> = decoded.iter().filter_map(InferenceRecord::as_event).collect();
        for (a, b) in events.iter().zip(events.iter().skip(1)) {
            if a.context() == b.context() {
                prop_assert!(Arc::ptr_eq(a.context_arc(), b.context_arc()));
            }
        }
    }
}

/// JSON values that break one rule or another.
fn nasty() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        Value::Null,
        json!(-1),
        json!(0),
        json!(1),
        json!(1.0),
        json!(2),
        json!(3),
        json!(4),
        json!(u64::MAX),
        json!(""),
        json!("x"),
        json!(true),
        json!([]),
        json!({}),
        json!([[0, 1]]),
        json!({"intervals": null}),
        json!({"intervals": [[0, 1]]}),
        json!({"producer_id": "p", "id": "i"}),
        json!(["p", "i"]),
        json!("linked"),
        json!("unresolved"),
        json!("gpu"),
        json!("monotonic"),
        json!("infer.request"),
        json!("infer.context"),
        json!("c1"),
        json!(1e300),
    ])
}

fn keys() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "schema_version",
        "event_type",
        "context_id",
        "context",
        "event_id",
        "metadata",
        "start_ns",
        "end_ns",
        "request_ref",
        "iteration_ref",
        "activity_ref",
        "attribution_status",
        "activity_domain",
        "available",
        "supported",
        "offset_ns",
        "name",
        "run_id",
        "producer_id",
        "id",
        "world_size",
        "surprise",
    ])
    .prop_map(str::to_owned)
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Remove or set a key at the top level.
    Top(String, Option<Value>),
    /// Remove or set a key inside the first nested object (context, a ref,
    /// metadata) that has it or, failing that, the first nested object.
    Nested(String, Option<Value>),
    /// Repeat a key in the text: before the original (which then wins) or
    /// after it (and wins).
    Duplicate(String, Value, bool),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (keys(), prop::option::of(nasty())).prop_map(|(key, value)| Mutation::Top(key, value)),
        (keys(), prop::option::of(nasty())).prop_map(|(key, value)| Mutation::Nested(key, value)),
        (keys(), nasty(), any::<bool>())
            .prop_map(|(key, value, first)| Mutation::Duplicate(key, value, first)),
    ]
}

fn apply(record: &mut Map<String, Value>, mutation: &Mutation, duplicates: &mut Vec<(String, Value, bool)>) {
    let set = |map: &mut Map<String, Value>, key: &str, value: &Option<Value>| match value {
        None => {
            map.remove(key);
        }
        Some(value) => {
            map.insert(key.to_owned(), value.clone());
        }
    };
    match mutation {
        Mutation::Top(key, value) => set(record, key, value),
        Mutation::Nested(key, value) => {
            let mut objects: Vec<&mut Map<String, Value>> =
                record.values_mut().filter_map(|value| value.as_object_mut()).collect();
            let index = objects.iter().position(|object| object.contains_key(key)).unwrap_or(0);
            if let Some(object) = objects.get_mut(index) {
                set(object, key, value);
            }
        }
        Mutation::Duplicate(key, value, first) => duplicates.push((key.clone(), value.clone(), *first)),
    }
}

/// The line of `record` with the duplicated keys spliced into its text.
fn line_of(record: &Map<String, Value>, duplicates: &[(String, Value, bool)]) -> Vec<u8> {
    let mut text = Vec::new();
    write_map(&mut text, record, Separators::DEFAULT);
    for (key, value, first) in duplicates {
        let entry = format!("{}: {}", Value::String(key.clone()), value);
        if *first {
            let rest = text.split_off(1);
            text.extend_from_slice(entry.as_bytes());
            if rest != b"}" {
                text.extend_from_slice(b", ");
            }
            text.extend_from_slice(&rest);
        } else {
            text.pop();
            if text != b"{" {
                text.extend_from_slice(b", ");
            }
            text.extend_from_slice(entry.as_bytes());
            text.push(b'}');
        }
    }
    text
}

/// Turns an embedded record into a v4 reference row naming context `c1`,
/// and returns the definition line of `c1`, which must come first.
fn make_compact(record: &mut Map<String, Value>) -> Vec<u8> {
    let context = record.remove("context").unwrap_or(Value::Null);
    let definition = json!({
        "schema_version": 4, "event_type": "infer.context", "context_id": "c1", "context": context,
    });
    record.insert("schema_version".into(), json!(4));
    record.insert("context_id".into(), json!("c1"));
    to_python_json(&definition, Separators::DEFAULT).into_bytes()
}

fn outcome(decoder: &mut RecordDecoder, lines: &[Vec<u8>]) -> Result<Vec<String>, String> {
    let mut records = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        match decoder.decode_line(line, index as u64 + 1) {
            Ok(Some(record)) => records.push(record),
            Ok(None) => {}
            Err(error) => return Err(error.to_string()),
        }
    }
    Ok(serialized(&records))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn fast_path_agrees_with_exact_path(
        event in arb_event(),
        compact in any::<bool>(),
        mutations in prop::collection::vec(mutation(), 0..4),
    ) {
        let mut record = event.to_record();
        let mut lines = Vec::new();
        if compact {
            lines.push(make_compact(&mut record));
        }
        // The unmutated line first: it primes the decoders' caches (interned
        // contexts, remembered context text) that the mutated line may hit.
        lines.push(line_of(&record, &[]));
        let mut duplicates = Vec::new();
        for mutation in &mutations {
            apply(&mut record, mutation, &mut duplicates);
        }
        lines.push(line_of(&record, &duplicates));
        let fast = outcome(&mut RecordDecoder::new("prop"), &lines);
        let exact = outcome(&mut RecordDecoder::new("prop").exact_only(), &lines);
        prop_assert_eq!(&fast, &exact, "lines: {:?}", lines.iter().map(|l| String::from_utf8_lossy(l)).collect::<Vec<_>>());
        // Only the embedded form can say `"intervals": null`.
        let null_intervals = event.metadata().get("intervals") == Some(&Value::Null);
        if mutations.is_empty() && !(compact && null_intervals) {
            prop_assert!(fast.is_ok(), "an unmutated event must decode: {fast:?}");
        }
    }
}

/// What a [`LineSink`] saw of a text: each record line's view, as text, and
/// how many came by the view path.
#[derive(Default)]
struct Views {
    shown: Vec<(u64, String)>,
    read_as_views: usize,
}

impl tally_artifact::LineSink for Views {
    type Output = Views;

    fn record(&mut self, line: u64, record: InferenceRecord) {
        if let Some(event) = record.as_event() {
            self.shown.push((line, format!("{:?}", event.view())));
        }
    }

    fn event(&mut self, line: u64, event: &tally_core::view::EventView<'_>) {
        self.shown.push((line, format!("{event:?}")));
        self.read_as_views += 1;
    }

    fn finish(self) -> Views {
        self
    }
}

/// Every view `read_events` gives of `text`, and how many came by the view
/// path; or its error.
fn views_read(text: &[u8], options: &ReadOptions) -> Result<(Vec<(u64, String)>, usize), String> {
    let mut all = Views::default();
    let input = tally_artifact::decompressed(text).map_err(|error| error.to_string())?;
    // The sink never stops the read.
    let _read_whole = tally_artifact::read_events(input, "prop", options, Views::default, |chunk| {
        all.shown.extend(chunk.shown);
        all.read_as_views += chunk.read_as_views;
        std::ops::ControlFlow::<()>::Continue(())
    })
    .map_err(|error| error.to_string())?;
    Ok((all.shown, all.read_as_views))
}

/// The views of the events the exact path builds from `text`, or its error.
fn exact_views(text: &[u8]) -> Result<Vec<(u64, String)>, String> {
    let mut decoder = RecordDecoder::new("prop").exact_only();
    let mut shown = Vec::new();
    for (index, line) in text.split(|&byte| byte == b'\n').enumerate() {
        let number = index as u64 + 1;
        match decoder.decode_line(line, number) {
            Ok(Some(record)) => {
                if let Some(event) = record.as_event() {
                    shown.push((number, format!("{:?}", event.view())));
                }
            }
            Ok(None) => {}
            Err(error) => return Err(error.to_string()),
        }
    }
    Ok(shown)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The view path reads every line it takes as the exact path reads it
    /// (the same view: context, body, metadata hash, name and intervals),
    /// and leaves every other line, errors included, to the other paths.
    #[test]
    fn view_path_agrees_with_exact_path(
        event in arb_event(),
        compact in any::<bool>(),
        // serde_json's own spelling: raw UTF-8, no spaces.
        raw_utf8 in any::<bool>(),
        mutations in prop::collection::vec(mutation(), 0..4),
    ) {
        let spell = |record: &Map<String, Value>, duplicates: &[(String, Value, bool)]| {
            if raw_utf8 && duplicates.is_empty() {
                serde_json::to_vec(record).expect("a map serializes")
            } else {
                line_of(record, duplicates)
            }
        };
        let mut record = event.to_record();
        let mut lines = Vec::new();
        if compact {
            lines.push(make_compact(&mut record));
        }
        // Twice unmutated: the second embedded line meets a context text
        // already decoded, which is what the view path reads.
        lines.push(spell(&record, &[]));
        lines.push(spell(&record, &[]));
        let mut duplicates = Vec::new();
        for mutation in &mutations {
            apply(&mut record, mutation, &mut duplicates);
        }
        lines.push(spell(&record, &duplicates));
        let text = lines.join(&b'\n');
        let exact = exact_views(&text);
        for options in [ReadOptions::default(), tiny()] {
            let viewed = views_read(&text, &options).map(|(shown, _)| shown);
            prop_assert_eq!(&viewed, &exact, "text: {}", String::from_utf8_lossy(&text));
        }
    }
}

/// Ordinary rows of the five common types, as stormlog writes them, all
/// take the view path, in both forms, and give the exact path's views.
#[test]
fn ordinary_rows_take_the_view_path() {
    let context = r#"{"clock_domain": "gpu:0", "clock_kind": "device", "collection_mode": "imported", "device_uuid": "GPU-0", "producer_id": "k", "provenance": "observed", "run_id": "r", "session_id": "s", "source": "t"}"#;
    let bodies = [
        r#""end_ns": 9, "event_id": "q1", "event_type": "infer.request", "metadata": {}, "request_ref": {"id": "q", "producer_id": "k"}, "start_ns": 1, "status": "ok""#,
        r#""end_ns": 9, "event_id": "i1", "event_type": "infer.iteration", "iteration_ref": {"id": "i", "producer_id": "k"}, "start_ns": 1"#,
        r#""end_ns": 5, "event_id": "s1", "event_type": "infer.stage", "iteration_ref": {"id": "i", "producer_id": "k"}, "name": "prefill", "stage_ref": {"id": "s", "producer_id": "k"}, "start_ns": 2"#,
        r#""attempt_ref": null, "event_id": "m1", "event_type": "infer.membership", "input_tokens": 5, "iteration_ref": {"id": "i", "producer_id": "k"}, "metadata": {"note": [1, true, null, {"a": "b"}]}, "request_ref": {"id": "q", "producer_id": "k"}, "role": "decode""#,
        r#""activity_domain": "gpu", "activity_kind": "kernel", "activity_ref": {"id": "a1", "producer_id": "k"}, "attribution_status": "linked", "end_ns": 100, "event_id": "a1", "event_type": "infer.activity_ref", "graph_id": null, "iteration_ref": {"id": "i", "producer_id": "k"}, "metadata": {"intervals": [[0, 10], [20, 30]], "name": "gemm"}, "start_ns": 50, "stream_id": 7"#,
        r#""activity_domain": "runtime", "activity_kind": "cuda_runtime", "activity_ref": {"id": "a2", "producer_id": "k"}, "attribution_status": "unresolved", "end_ns": 100, "event_id": "a2", "event_type": "infer.activity_ref", "metadata": {"first_name": "cudaLaunchKernel", "name": ""}, "start_ns": 50"#,
    ];
    let embedded: Vec<String> = bodies
        .iter()
        .map(|body| {
            let version = if body.contains("intervals") { 3 } else { 2 };
            format!(r#"{{"context": {context}, {body}, "schema_version": {version}}}"#)
        })
        .collect();
    let mut compact = vec![format!(
        r#"{{"context": {context}, "context_id": "c", "event_type": "infer.context", "schema_version": 4}}"#
    )];
    compact
        .extend(bodies.iter().map(|body| format!(r#"{{"context_id": "c", {body}, "schema_version": 4}}"#)));
    for (form, lines, expected) in
        [("embedded", embedded, bodies.len() - 1), ("compact", compact, bodies.len())]
    {
        let text = lines.join("\n");
        let (viewed, read_as_views) = views_read(text.as_bytes(), &ReadOptions::default()).expect(form);
        assert_eq!(viewed, exact_views(text.as_bytes()).expect(form), "{form}");
        assert_eq!(viewed.len(), bodies.len(), "{form}");
        // The first embedded line's context is new: decoded, then remembered.
        assert_eq!(read_as_views, expected, "{form}");
    }
}

/// A read's outcome in full: every record with its line, or the error.
fn read_lines_of(bytes: &[u8], options: &ReadOptions) -> Result<Vec<(u64, String)>, String> {
    let mut records = Vec::new();
    read_batches(bytes, "prop", options, |batch| {
        for (line, record) in batch.lines.iter().zip(&batch.records) {
            records.push((*line, to_python_json(&Value::Object(record.to_record()), Separators::DEFAULT)));
        }
        Ok(())
    })
    .map_err(|error| error.to_string())?;
    Ok(records)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Windows dealt out to any number of decoding threads read as one
    /// thread reads them: the same records on the same lines, or the same
    /// first error (a line broken anywhere, a definition among the rest).
    #[test]
    fn decoding_threads_do_not_change_the_read(
        records in arb_records(16, false),
        broken in proptest::option::of(0usize..40),
        threads in 2usize..5,
    ) {
        let compact = encode_artifact(&records, Form::Compact).expect("encodes");
        let mut text = String::from_utf8(compact).expect("artifacts are UTF-8");
        if let Some(at) = broken {
            let mut lines: Vec<&str> = text.lines().collect();
            let at = at % (lines.len() + 1);
            lines.insert(at, "{\"schema_version\": 4, \"event_type\": \"infer.iteration\"}");
            text = lines.join("\n");
        }
        let options = |threads| ReadOptions { threads, ..tiny() };
        let one = read_lines_of(text.as_bytes(), &options(1));
        prop_assert!(broken.is_none() || one.is_err(), "the inserted line breaks a rule");
        prop_assert_eq!(read_lines_of(text.as_bytes(), &options(threads)), one);
    }
}
