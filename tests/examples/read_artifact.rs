//! Reads a whole artifact into memory with `read_artifact` and prints how
//! many records it holds and an estimate of their decoded size in bytes, so
//! a benchmark can compare the process's peak RSS with what it keeps.
//!
//! ```text
//! cargo run --release -p tally-tests --example read_artifact -- FILE
//! ```

use std::collections::HashSet;
use std::mem::size_of;
use std::path::PathBuf;

use serde_json::Value;
use tally_core::{EntityRef, EventBody, InferenceRecord, NonEmptyString};

fn text(value: &NonEmptyString) -> usize {
    value.len()
}

fn reference(value: &EntityRef) -> usize {
    value.producer_id().len() + value.id().len()
}

fn json(value: &Value) -> usize {
    size_of::<Value>()
        + match value {
            Value::String(text) => text.len(),
            Value::Array(items) => items.iter().map(json).sum(),
            Value::Object(map) => map.iter().map(|(key, value)| key.len() + json(value)).sum(),
            _ => 0,
        }
}

/// Bytes the record owns: the struct, its strings and JSON (not allocator
/// overhead, and each shared context once).
fn decoded_size(record: &InferenceRecord, contexts: &mut HashSet<usize>) -> usize {
    let mut bytes = size_of::<InferenceRecord>();
    let event = match record {
        InferenceRecord::Legacy(legacy) => {
            return bytes + legacy.raw().iter().map(|(k, v)| k.len() + json(v)).sum::<usize>();
        }
        InferenceRecord::Event(event) => event,
    };
    if contexts.insert(std::sync::Arc::as_ptr(event.context_arc()) as usize) {
        bytes += 512;
    }
    bytes += text(event.event_id())
        + event.metadata().as_map().iter().map(|(k, v)| k.len() + json(v)).sum::<usize>();
    bytes += match event.body() {
        EventBody::ActivityRef(body) => {
            reference(&body.activity_ref)
                + text(&body.activity_kind)
                + body.iteration_ref.as_ref().map_or(0, reference)
                + body.correlation_scope.as_ref().map_or(0, reference)
                + body.trace_attachment_id.as_ref().map_or(0, text)
        }
        EventBody::Request(body) => reference(&body.request_ref) + body.status.as_ref().map_or(0, text),
        EventBody::Iteration(body) => {
            reference(&body.iteration_ref) + body.batch_ref.as_ref().map_or(0, reference)
        }
        EventBody::Stage(body) => reference(&body.stage_ref) + text(&body.name),
        EventBody::Membership(body) => {
            reference(&body.request_ref) + reference(&body.iteration_ref) + text(&body.role)
        }
        _ => 64,
    };
    bytes
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path: PathBuf = std::env::args_os().nth(1).ok_or("usage: read_artifact FILE")?.into();
    let records = tally_artifact::read_artifact(&path)?;
    let mut contexts = HashSet::new();
    let decoded: usize = records.iter().map(|record| decoded_size(record, &mut contexts)).sum();
    println!("{} {}", records.len(), decoded);
    Ok(())
}
