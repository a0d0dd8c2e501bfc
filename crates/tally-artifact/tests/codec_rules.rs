//! The artifact rules one by one, positive and negative: transport rows,
//! lines and blank lines, errors and their line numbers, gzip, interning,
//! and atomic writing.

use std::io::Write;
use std::sync::Arc;

use serde_json::{Value, json};
use tally_artifact::pyjson::{Separators, to_python_json};
use tally_artifact::{
    ArtifactReader, ArtifactWriter, ErrorKind, Form, ReadOptions, RecordDecoder, context_id, encode_artifact,
    read_artifact, read_artifact_from, read_batches, write_artifact,
};
use tally_core::{CorrelationContext, InferenceRecord};
use tally_testkit::records::{context, iteration};

fn definition(id: &str, context: Value) -> Value {
    json!({"schema_version": 4, "event_type": "infer.context", "context_id": id, "context": context})
}

fn reference(id: &str, event_id: &str) -> Value {
    let mut row = iteration(event_id);
    let map = row.as_object_mut().expect("an object");
    map.remove("context");
    map.insert("schema_version".into(), json!(4));
    map.insert("context_id".into(), json!(id));
    row
}

fn text(rows: &[Value]) -> String {
    rows.iter().map(|row| to_python_json(row, Separators::DEFAULT) + "\n").collect()
}

fn read(text: &str) -> Result<Vec<InferenceRecord>, tally_artifact::ArtifactError> {
    read_artifact_from(text.as_bytes(), "t.jsonl")
}

fn rejects(text: &str, line: u64, reason: &str) {
    let error = read(text).expect_err("must be rejected");
    assert_eq!(error.line(), Some(line), "{error}");
    assert!(error.reason().contains(reason), "{error} does not say {reason:?}");
    // The sequential reader and the exact path agree.
    let sequential: Result<Vec<_>, _> = ArtifactReader::new(text.as_bytes(), "t.jsonl").collect();
    let sequential = sequential.expect_err("sequential rejects too");
    assert_eq!((sequential.line(), sequential.reason()), (error.line(), error.reason()));
    let mut exact = Vec::new();
    let options = ReadOptions { fast_path: false, ..ReadOptions::default() };
    let exact = read_batches(text.as_bytes(), "t", &options, |batch| {
        exact.extend(batch.records);
        Ok(())
    })
    .expect_err("exact path rejects too");
    assert_eq!((exact.line(), exact.reason()), (error.line(), error.reason()));
}

#[test]
fn definitions_and_references() {
    let records = read(&text(&[definition("c1", context()), reference("c1", "a"), reference("c1", "b")]))
        .expect("valid v4");
    assert_eq!(records.len(), 2);
    let (a, b) = (records[0].as_event().expect("event"), records[1].as_event().expect("event"));
    assert_eq!(a.schema_version(), 2);
    assert!(Arc::ptr_eq(a.context_arc(), b.context_arc()));
    assert_eq!(records, read(&text(&[iteration("a"), iteration("b")])).expect("valid v2"));
}

#[test]
fn transport_rows_need_schema_version_four() {
    rejects(
        &text(&[iteration("a"), json!({"schema_version": 2, "context_id": "c1"})]),
        2,
        "schema_version 4",
    );
    let mut float = definition("c1", context());
    float["schema_version"] = json!(4.0);
    rejects(&text(&[float]), 1, "context transport requires schema_version 4");
    let mut no_version = definition("c1", context());
    no_version.as_object_mut().expect("object").remove("schema_version");
    rejects(&text(&[no_version]), 1, "context transport requires schema_version 4");
    let mut boolean = reference("c1", "a");
    boolean["schema_version"] = json!(true);
    rejects(&text(&[definition("c1", context()), boolean]), 2, "schema_version 4");
}

#[test]
fn definition_rows_have_exactly_four_keys() {
    let mut extra = definition("c1", context());
    extra["metadata"] = json!({});
    rejects(&text(&[extra]), 1, "requires exactly version, type, ID, context");
    rejects(&text(&[definition("", context())]), 1, "context_id must be a non-empty string");
    rejects(&text(&[definition("c1", json!([1]))]), 1, "context must be an object");
    let mut bad = context();
    bad["clock_kind"] = json!("sundial");
    rejects(&text(&[definition("c1", bad)]), 1, "clock_kind must be monotonic, wall, or device");
}

#[test]
fn redefinitions() {
    let mut other = context();
    other["host"] = json!("h");
    rejects(
        &text(&[definition("c1", context()), reference("c1", "a"), definition("c1", other.clone())]),
        3,
        "conflicting context definition: c1",
    );
    // The same context again, or under a second ID, is fine.
    let records = read(&text(&[
        definition("c1", context()),
        definition("c1", context()),
        definition("c2", context()),
        reference("c2", "a"),
        definition("c3", other),
        reference("c3", "b"),
    ]))
    .expect("valid");
    assert_eq!(records.len(), 2);
}

#[test]
fn references_need_an_earlier_definition_and_no_context() {
    rejects(&text(&[definition("c1", context()), reference("c2", "a")]), 2, "unknown context_id: c2");
    rejects(
        &text(&[iteration("x"), reference("c1", "a"), definition("c1", context())]),
        2,
        "unknown context_id",
    );
    let mut both = reference("c1", "a");
    both["context"] = context();
    rejects(&text(&[definition("c1", context()), both]), 2, "v4 event must have context_id and no context");
    let mut empty = reference("c1", "a");
    empty["context_id"] = json!("");
    rejects(&text(&[definition("c1", context()), empty]), 2, "context_id must be a non-empty string");
}

#[test]
fn null_intervals_only_embedded() {
    let mut activity = json!({"schema_version": 3, "event_type": "infer.activity_ref", "event_id": "k",
        "context": context(), "activity_ref": {"producer_id": "p", "id": "k"}, "activity_kind": "kernel",
        "attribution_status": "unresolved", "start_ns": 1, "end_ns": 9, "metadata": {"intervals": null}});
    let records = read(&text(std::slice::from_ref(&activity))).expect("embedded null intervals are valid");
    assert_eq!(records[0].schema_version(), 3);
    // The compact writer keeps it embedded, as stormlog does.
    let compact =
        String::from_utf8(encode_artifact(&records, Form::Compact).expect("encodes")).expect("ascii");
    assert!(!compact.contains("infer.context"), "{compact}");
    let map = activity.as_object_mut().expect("object");
    map.remove("context");
    map.insert("schema_version".into(), json!(4));
    map.insert("context_id".into(), json!("c1"));
    rejects(
        &text(&[definition("c1", context()), activity]),
        2,
        "metadata.intervals must be a non-empty list",
    );
}

#[test]
fn blank_lines_and_line_endings() {
    let row = to_python_json(&iteration("a"), Separators::DEFAULT);
    let bad = to_python_json(&json!({"schema_version": 9}), Separators::DEFAULT);
    let input = format!("\n \t\n\u{a0}\n{row}\r\n\r\n{row}\r{bad}\n");
    let error = read(&input).expect_err("line 7 is bad");
    assert_eq!(error.line(), Some(7), "{error}");
    let records = read(&format!("\n\u{3000}\n{row}\r\n{row}")).expect("valid without a final newline");
    assert_eq!(records.len(), 2);
    assert!(read("").expect("empty is valid").is_empty());
    assert!(read("\n\n  \n").expect("blank is valid").is_empty());
}

#[test]
fn json_errors_name_their_line() {
    let row = to_python_json(&iteration("a"), Separators::DEFAULT);
    rejects(&format!("{row}\n{}", &row[..30]), 2, "truncated last line");
    rejects(&format!("{}\n{row}\n", &row[..30]), 1, "invalid JSON");
    rejects(&format!("{row}\n[1, 2]\n"), 2, "record must be an object");
    rejects(&format!("{row}\n\"text\"\n"), 2, "record must be an object");
    rejects(&format!("{row}\n{{\"a\": NaN}}\n"), 2, "invalid JSON");
    let mut bytes = format!("{row}\n").into_bytes();
    bytes.extend_from_slice(b"{\"event_id\": \"\xff\"}\n");
    let error = read_artifact_from(&bytes[..], "t").expect_err("not UTF-8");
    assert_eq!((error.line(), error.kind()), (Some(2), ErrorKind::Syntax));
    assert!(error.reason().contains("UTF-8"), "{error}");
}

#[test]
fn duplicate_keys_keep_the_last_value() {
    let row = to_python_json(&iteration("a"), Separators::DEFAULT);
    let last_wins = format!("{}, \"event_id\": \"b\"}}\n", &row[..row.len() - 1]);
    let records = read(&last_wins).expect("valid");
    assert_eq!(records[0].as_event().expect("event").event_id().as_str(), "b");
    let invalid_last = format!("{}, \"end_ns\": 0}}\n", &row[..row.len() - 1]);
    rejects(&invalid_last, 1, "end_ns must be >= start_ns");
    let invalid_first = format!("{{\"end_ns\": 0, {}\n", &row[1..]);
    assert_eq!(read(&invalid_first).expect("valid").len(), 1);
}

#[test]
fn legacy_records_pass_through() {
    let legacy = json!({"event_type": "infer.session", "z": [1, 2.5], "a": {"b": null}});
    let records = read(&text(&[legacy.clone(), iteration("a")])).expect("valid");
    assert_eq!(records[0].schema_version(), 1);
    let written = encode_artifact(&records, Form::Compact).expect("encodes");
    let first_line = written.split(|byte| *byte == b'\n').next().expect("a line");
    assert_eq!(first_line, to_python_json(&legacy, Separators::DEFAULT).as_bytes());
    rejects(&text(&[json!({"event_type": "session"})]), 1, "event_type must name an inference event");
}

#[test]
fn embedded_contexts_are_interned() {
    let records = read(&text(&[iteration("a"), iteration("b"), iteration("c")])).expect("valid");
    let events: Vec<_> = records.iter().filter_map(InferenceRecord::as_event).collect();
    assert!(Arc::ptr_eq(events[0].context_arc(), events[2].context_arc()));
    // Across parallel chunks too.
    let many: Vec<Value> = (0..2000).map(|index| iteration(&format!("e{index}"))).collect();
    let options =
        ReadOptions { window_bytes: 50_000, chunk_bytes: 3_000, fast_path: true, ..ReadOptions::default() };
    let mut records = Vec::new();
    read_batches(text(&many).as_bytes(), "t", &options, |batch| {
        records.extend(batch.records);
        Ok(())
    })
    .expect("valid");
    let first = records[0].as_event().expect("event").context_arc().clone();
    assert!(
        records.iter().all(|record| Arc::ptr_eq(record.as_event().expect("event").context_arc(), &first))
    );
}

#[test]
fn parallel_reads_keep_order_and_find_the_first_error() {
    let mut rows: Vec<Value> = (0..3000).map(|index| reference("c1", &format!("e{index}"))).collect();
    rows.insert(0, definition("c1", context()));
    let mut bad_early = iteration("bad");
    bad_early["end_ns"] = json!(0);
    let mut bad_late = iteration("bad");
    bad_late["start_ns"] = json!(-1);
    rows.insert(1200, bad_early);
    rows.insert(2500, bad_late);
    let options =
        ReadOptions { window_bytes: 40_000, chunk_bytes: 2_000, fast_path: true, ..ReadOptions::default() };
    let error = read_batches(text(&rows).as_bytes(), "t", &options, |_| Ok(())).expect_err("bad rows");
    assert_eq!(error.line(), Some(1201));
    rows.remove(2500);
    rows.remove(1200);
    let mut lines = Vec::new();
    let mut ids = Vec::new();
    read_batches(text(&rows).as_bytes(), "t", &options, |batch| {
        lines.extend(batch.lines);
        ids.extend(batch.records.iter().map(|r| r.as_event().expect("event").event_id().to_string()));
        Ok(())
    })
    .expect("valid");
    assert_eq!(lines, (2..=3001).collect::<Vec<u64>>());
    assert_eq!(ids, (0..3000).map(|index| format!("e{index}")).collect::<Vec<_>>());
}

#[test]
fn record_decoder_reports_lines() {
    let mut decoder = RecordDecoder::new("feed");
    let line = to_python_json(&definition("c1", context()), Separators::DEFAULT);
    assert!(decoder.decode_line(line.as_bytes(), 1).expect("definition").is_none());
    let bad = to_python_json(&reference("c9", "a"), Separators::DEFAULT);
    let error = decoder.decode_line(bad.as_bytes(), 2).expect_err("unknown id");
    assert_eq!(error.to_string(), "feed: line 2: unknown context_id: c9");
    assert_eq!((error.source_name(), error.line()), ("feed", Some(2)));
}

#[test]
fn gzip_is_told_by_its_bytes() {
    let plain = text(&[definition("c1", context()), reference("c1", "a")]);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(plain.as_bytes()).expect("compress");
    let compressed = encoder.finish().expect("compress");
    let directory = tempfile::tempdir().expect("temp dir");
    let path = directory.path().join("artifact.jsonl");
    std::fs::write(&path, &compressed).expect("write");
    assert_eq!(read_artifact(&path).expect("gzip by content"), read(&plain).expect("plain"));
    let reader = ArtifactReader::open(&path).expect("opens");
    assert_eq!(reader.count(), 1);
    let missing = read_artifact(&directory.path().join("missing.jsonl")).expect_err("missing");
    assert_eq!((missing.kind(), missing.line()), (ErrorKind::Io, None));
    assert!(
        missing.to_string().starts_with(&format!("{}: ", directory.path().join("missing.jsonl").display()))
    );
}

#[test]
fn context_ids_are_stormlogs() {
    // Printed by stormlog 0.4.3's `_generated_id` for the same contexts.
    let parsed = CorrelationContext::from_json(context()).expect("valid");
    assert_eq!(context_id(&parsed), "ctx-dc843baf6dd9e2e9");
    let mut other = context();
    other["run_id"] = json!("r\u{e9}");
    other["pid"] = json!(7);
    other["world_size"] = json!(2);
    let parsed = CorrelationContext::from_json(other).expect("valid");
    assert_eq!(context_id(&parsed), "ctx-1c7ead5b0072fd2a");
}

#[test]
fn writing_is_atomic() {
    let directory = tempfile::tempdir().expect("temp dir");
    let path = directory.path().join("out.jsonl");
    let records = read(&text(&[iteration("a"), iteration("b")])).expect("valid");
    write_artifact(&path, &records, Form::Compact).expect("writes");
    assert_eq!(read_artifact(&path).expect("reads back"), records);
    let before = std::fs::read(&path).expect("read");
    // An abandoned writer leaves the old file and no temporary behind.
    let mut writer = ArtifactWriter::create(&path, Form::Embedded).expect("creates");
    writer.write(&records[0]).expect("writes");
    drop(writer);
    assert_eq!(std::fs::read(&path).expect("read"), before);
    let names: Vec<_> = std::fs::read_dir(directory.path())
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    // Permissions of an existing artifact survive a rewrite.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        write_artifact(&path, &records, Form::Embedded).expect("writes");
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }
    let error = write_artifact(&directory.path().join("no/such/dir.jsonl"), &records, Form::Embedded)
        .expect_err("no directory");
    assert_eq!(error.kind(), ErrorKind::Io);
}

#[test]
fn escaped_definitions_are_found_in_parallel() {
    // A definition whose event_type is spelled with escapes, among rows whose
    // strings carry `ensure_ascii` escapes, split across many chunks.
    let mut with_escape = context();
    with_escape["host"] = json!("caf\u{e9}");
    let mut rows: Vec<Value> = (0..500).map(|index| iteration(&format!("e{index}"))).collect();
    rows.push(definition("c1", with_escape.clone()));
    rows.extend((0..500).map(|index| reference("c1", &format!("r{index}"))));
    let plain = text(&rows);
    let escaped = plain.replace("\"infer.context\"", "\"\\u0069nfer\\u002Econtext\"");
    assert_ne!(plain, escaped);
    let options =
        ReadOptions { window_bytes: 20_000, chunk_bytes: 1_000, fast_path: true, ..ReadOptions::default() };
    let mut count = 0;
    let stats = read_batches(escaped.as_bytes(), "t", &options, |batch| {
        count += batch.records.len();
        Ok(())
    })
    .expect("the escaped definition is a definition");
    assert_eq!((count, stats.definitions, stats.compact_records), (1000, 1, 500));
}

#[test]
fn transport_shaped_legacy_records_are_not_written() {
    // parse_inference_record keeps this as a v1 record, but as a line it
    // would read back as a transport row; stormlog's encoder refuses it too.
    let record = tally_core::parse_inference_record(json!({"event_type": "infer.x", "context_id": "c1"}))
        .expect("a v1 record");
    for form in [Form::Embedded, Form::Compact] {
        let error = encode_artifact(std::slice::from_ref(&record), form).expect_err("refused");
        assert!(error.to_string().contains("embedded semantic records only"), "{error}");
    }
}

#[test]
fn repeated_context_text_is_decoded_like_any_other() {
    // The fast path skips re-parsing a context whose text it has seen; a
    // nested member with the same text, a differing context, or a second
    // `context` key must still decode exactly as the exact path says.
    let known = to_python_json(&context(), Separators::DEFAULT);
    let mut other = context();
    other["host"] = json!("h");
    let other = to_python_json(&other, Separators::DEFAULT);
    let base = to_python_json(&iteration("a"), Separators::DEFAULT);
    let body = base.split_once(", \"event_id\"").map(|(_, rest)| rest).expect("event_id follows context");
    let lines = [
        base.clone(),
        format!("{{\"metadata\": {{\"context\": {known}}}, \"context\": {other}, \"event_id\"{body}"),
        format!("{{\"context\": {known}, \"context\": {other}, \"event_id\"{body}"),
        format!("{{\"context\": {other}, \"context\": {known}, \"event_id\"{body}"),
        format!("{{\"context\":{known} , \"event_id\"{body}"),
        format!(
            "{{\"context\": {known}, \"event_id\"{}",
            body.replace("\"start_ns\": 1", "\"start_ns\": -1")
        ),
        base,
    ];
    let decode = |mut decoder: RecordDecoder| -> Vec<Result<Option<String>, String>> {
        lines
            .iter()
            .enumerate()
            .map(|(index, line)| {
                decoder
                    .decode_line(line.as_bytes(), index as u64 + 1)
                    .map(|record| {
                        record.map(|r| to_python_json(&Value::Object(r.to_record()), Separators::DEFAULT))
                    })
                    .map_err(|error| error.to_string())
            })
            .collect()
    };
    let fast = decode(RecordDecoder::new("t"));
    assert_eq!(fast, decode(RecordDecoder::new("t").exact_only()));
    // Line 2 keeps the nested copy in its metadata and takes the other context.
    let second = fast[1].clone().expect("valid").expect("a record");
    assert!(second.contains("\"metadata\": {\"context\": {"), "{second}");
    assert!(second.contains("\"host\": \"h\""), "{second}");
    assert!(fast[5].is_err());
}

#[test]
fn negative_zero_is_the_integer_zero_as_python_reads_it() {
    let mut row = iteration("e1");
    row["start_ns"] = json!(1);
    let line = to_python_json(&row, Separators::DEFAULT).replace("\"start_ns\": 1", "\"start_ns\": -0");
    assert!(line.contains("-0"), "{line}");
    for fast_path in [true, false] {
        let options = ReadOptions { fast_path, ..ReadOptions::default() };
        let mut records = Vec::new();
        read_batches(format!("{line}\n").as_bytes(), "t.jsonl", &options, |batch| {
            records.extend(batch.records);
            Ok(())
        })
        .expect("stormlog accepts start_ns: -0");
        let value = serde_json::to_value(&records[0]).expect("serializable");
        assert_eq!(value["start_ns"], json!(0), "fast path {fast_path}");
    }
    // A float -0.0 is no integer, for Python as for tally.
    let float = line.replace("-0", "-0.0");
    let error = read(&(float + "\n")).expect_err("a float start_ns");
    assert!(error.reason().contains("start_ns"), "{error}");
}

#[test]
fn a_huge_bad_value_is_quoted_by_a_short_prefix() {
    let mut row = iteration("e1");
    row["x".repeat(5 << 20)] = json!(1);
    let error = read(&text(&[row])).expect_err("an unexpected field");
    let message = error.to_string();
    assert!(message.len() < 300, "{} bytes of error", message.len());
    assert!(message.contains(&format!("({} bytes)", 5 << 20)), "{message}");
}
