//! 128-bit fingerprints of event content, for resolving a stream without
//! keeping its events.
//!
//! Two events have the same fingerprint when they are equal as stormlog
//! compares them (context, body and metadata; metadata with Python's `==`,
//! where `1 == 1.0 == true`), and different fingerprints otherwise, but for a
//! chance of about 2^-128 per pair. The event ID is not part of it: the
//! deduplication key holds it already, and entity identity ignores it.

use std::hash::{Hash, Hasher};

use serde_json::{Map, Number, Value};
use tally_core::{CorrelationContext, CorrelationEvent, EntityRef, EventBody, Span, TokenCounts};

const LANE_A: u64 = 0x9e37_79b9_7f4a_7c15;
const LANE_B: u64 = 0xc2b2_ae3d_27d4_eb4f;
const FINISH_A: u64 = 0x5851_f42d_4c95_7f2d;
const FINISH_B: u64 = 0x1656_67b1_9e37_79f9;

#[inline]
fn folded_multiply(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

/// Two independent folded-multiply lanes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fingerprint {
    a: u64,
    b: u64,
}

impl Default for Fingerprint {
    fn default() -> Self {
        Self { a: 0x243f_6a88_85a3_08d3, b: 0x1319_8a2e_0370_7344 }
    }
}

impl Fingerprint {
    #[inline]
    fn word(&mut self, word: u64) {
        self.a = folded_multiply(self.a ^ word, LANE_A);
        self.b = folded_multiply(self.b ^ word.rotate_left(29), LANE_B);
    }

    /// The 128-bit result.
    pub(crate) fn finish128(&self) -> u128 {
        let high = folded_multiply(self.a ^ self.b.rotate_left(17), FINISH_A);
        let low = folded_multiply(self.b ^ self.a.rotate_left(41), FINISH_B);
        (u128::from(high) << 64) | u128::from(low)
    }

    fn tag(&mut self, tag: u8) {
        self.word(0xa5a5_0000 | u64::from(tag));
    }

    /// A string, length first.
    pub(crate) fn text(&mut self, text: &str) {
        self.write_usize(text.len());
        self.write(text.as_bytes());
    }
}

impl Hasher for Fingerprint {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.word(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        // The remainder's length keeps "a" and "a\0" apart.
        self.word(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
    }

    fn write_u8(&mut self, value: u8) {
        self.word(u64::from(value));
    }

    fn write_u32(&mut self, value: u32) {
        self.word(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.word(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.word(value as u64);
    }

    fn finish(&self) -> u64 {
        self.finish128() as u64
    }
}

/// The fingerprint of a context, computed once per shared context.
pub(crate) fn context_fingerprint(context: &CorrelationContext) -> u128 {
    let mut fp = Fingerprint::default();
    context.hash(&mut fp);
    fp.finish128()
}

/// What stormlog's equality of two events compares apart from the event ID:
/// context, type, body and metadata.
pub(crate) fn content_fingerprint(event: &CorrelationEvent, context: u128) -> u128 {
    let mut fp = Fingerprint::default();
    fp.write_u64(context as u64);
    fp.write_u64((context >> 64) as u64);
    body(&mut fp, event.body());
    json_map(&mut fp, event.metadata().as_map());
    fp.finish128()
}

fn option<T>(fp: &mut Fingerprint, value: Option<&T>, each: impl FnOnce(&mut Fingerprint, &T)) {
    match value {
        None => fp.tag(0),
        Some(value) => {
            fp.tag(1);
            each(fp, value);
        }
    }
}

fn reference(fp: &mut Fingerprint, value: Option<&EntityRef>) {
    option(fp, value, |fp, value| value.hash(fp));
}

fn number(fp: &mut Fingerprint, value: Option<u64>) {
    option(fp, value.as_ref(), |fp, value| fp.write_u64(*value));
}

fn span(fp: &mut Fingerprint, value: &Span) {
    number(fp, value.start_ns());
    number(fp, value.end_ns());
}

fn tokens(fp: &mut Fingerprint, value: &TokenCounts) {
    let TokenCounts { input_tokens, output_tokens, kv_bytes } = *value;
    number(fp, input_tokens);
    number(fp, output_tokens);
    number(fp, kv_bytes);
}

/// Every field of every body type; the exhaustive patterns make a field
/// added to the model a compile error here until it is fingerprinted.
fn body(fp: &mut Fingerprint, body: &EventBody) {
    fp.tag(body.event_type() as u8);
    match body {
        EventBody::Artifact(tally_core::ArtifactIdentity { artifact_kind, created_at_ns }) => {
            artifact_kind.hash(fp);
            fp.write_u64(*created_at_ns);
        }
        EventBody::Request(tally_core::Request {
            request_ref,
            attempt_ref,
            backend_request_ref,
            span: when,
            status,
            tokens: counts,
        }) => {
            request_ref.hash(fp);
            reference(fp, attempt_ref.as_ref());
            reference(fp, backend_request_ref.as_ref());
            span(fp, when);
            option(fp, status.as_ref(), |fp, status| status.hash(fp));
            tokens(fp, counts);
        }
        EventBody::Iteration(tally_core::Iteration { iteration_ref, batch_ref, span: when }) => {
            iteration_ref.hash(fp);
            reference(fp, batch_ref.as_ref());
            span(fp, when);
        }
        EventBody::Stage(tally_core::Stage {
            stage_ref,
            name,
            request_ref,
            iteration_ref,
            span: when,
            tokens: counts,
        }) => {
            stage_ref.hash(fp);
            name.hash(fp);
            reference(fp, request_ref.as_ref());
            reference(fp, iteration_ref.as_ref());
            span(fp, when);
            tokens(fp, counts);
        }
        EventBody::Membership(tally_core::Membership {
            request_ref,
            iteration_ref,
            role,
            attempt_ref,
            tokens: counts,
        }) => {
            request_ref.hash(fp);
            iteration_ref.hash(fp);
            role.hash(fp);
            reference(fp, attempt_ref.as_ref());
            tokens(fp, counts);
        }
        EventBody::ActivityRef(tally_core::ActivityRef {
            activity_ref,
            activity_kind,
            activity_domain,
            iteration_ref,
            correlation_scope,
            trace_attachment_id,
            runtime_correlation_id,
            cuda_correlation_id,
            stream_id,
            graph_id,
            span: when,
        }) => {
            activity_ref.hash(fp);
            activity_kind.hash(fp);
            activity_domain.hash(fp);
            reference(fp, iteration_ref.as_ref());
            reference(fp, correlation_scope.as_ref());
            option(fp, trace_attachment_id.as_ref(), |fp, id| id.hash(fp));
            number(fp, *runtime_correlation_id);
            number(fp, *cuda_correlation_id);
            number(fp, *stream_id);
            number(fp, *graph_id);
            span(fp, when);
        }
        EventBody::Capabilities(capabilities) => {
            capabilities.component().hash(fp);
            fp.write_u8(u8::from(capabilities.available()));
            for list in [capabilities.supported(), capabilities.enabled(), capabilities.collected()] {
                fp.write_usize(list.len());
                for name in list {
                    name.hash(fp);
                }
            }
        }
        EventBody::ClockAlignment(tally_core::ClockAlignment {
            from_clock_domain,
            to_clock_domain,
            offset_ns,
            uncertainty_ns,
            validity,
        }) => {
            from_clock_domain.hash(fp);
            to_clock_domain.hash(fp);
            fp.write_u64(*offset_ns as u64);
            fp.write_u64(*uncertainty_ns);
            span(fp, validity);
        }
    }
}

/// A decoded JSON value as Python's `==` sees it: booleans and numbers by
/// numeric value (a float holding an integer as that integer), objects
/// whatever their key order.
fn json(fp: &mut Fingerprint, value: &Value) {
    match value {
        Value::Null => fp.tag(10),
        Value::Bool(flag) => integer(fp, i128::from(*flag)),
        Value::Number(number) => numeric(fp, number),
        Value::String(text) => {
            fp.tag(13);
            fp.text(text);
        }
        Value::Array(items) => {
            fp.tag(14);
            fp.write_usize(items.len());
            for item in items {
                json(fp, item);
            }
        }
        Value::Object(map) => json_map(fp, map),
    }
}

fn json_map(fp: &mut Fingerprint, map: &Map<String, Value>) {
    fp.tag(15);
    fp.write_usize(map.len());
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    // serde_json's map iterates sorted unless its preserve_order feature is
    // on; Python's dict equality ignores order either way.
    if !entries.windows(2).all(|pair| pair[0].0 <= pair[1].0) {
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    }
    for (key, item) in entries {
        fp.text(key);
        json(fp, item);
    }
}

fn integer(fp: &mut Fingerprint, value: i128) {
    fp.tag(11);
    fp.write_u64(value as u64);
    fp.write_u64((value >> 64) as u64);
}

/// The same normalisation as `tally_core::python_json_eq`.
fn numeric(fp: &mut Fingerprint, number: &Number) {
    if let Some(unsigned) = number.as_u64() {
        return integer(fp, i128::from(unsigned));
    }
    if let Some(signed) = number.as_i64() {
        return integer(fp, i128::from(signed));
    }
    let float = number.as_f64().unwrap_or(f64::NAN);
    if float.fract() == 0.0 && float.abs() < 1.7e38 {
        // No fraction and inside i128: converts exactly.
        return integer(fp, float as i128);
    }
    fp.tag(12);
    fp.write_u64(float.to_bits());
}
