//! Fingerprints of event content, for resolving a stream without keeping
//! its events.
//!
//! Two events have the same fingerprint when they are equal as stormlog
//! compares them (context, body and metadata; metadata with Python's `==`,
//! where `1 == 1.0 == true`), and different fingerprints otherwise, but for a
//! chance of about 2^-64 per pair: the resolver keeps 64 bits, and compares
//! them only between events under one key. The event ID is not part of it:
//! the deduplication key holds it already, and entity identity ignores it.
//! Keys ([`reference`]) keep their 128 bits ([`ContentHasher`]).
//!
//! Everything is hashed from an [`EventView`], however it was read, so a
//! view built straight from a line and the view of a built event give the
//! same fingerprint.

use std::hash::Hash;

use tally_core::view::{ActivityView, BodyView, EventView, RefView};
use tally_core::{CorrelationContext, Span, TokenCounts};
use tally_utils::content_hash::ContentHasher;
use tally_utils::fast_hash::{folded_multiply, for_each_word};

/// Keys of [`Fingerprint`]'s mixing (odd, with set bits in every byte, so
/// that no word of text or small number cancels one).
const ABSORB_A: u64 = 0xa076_1d64_78bd_642f;
const ABSORB_B: u64 = 0xe703_7ed1_a0b4_28db;
const FINISH: u64 = 0x8ebc_6af0_9c88_c6e3;

/// A 64-bit hash of a sequence of words, taken two at a time into one
/// folded multiplication (wyhash's step). The sequence is an unambiguous
/// spelling of the content: strings with their lengths, absent values
/// apart from present ones. A fingerprint is 64 bits where it is kept, and
/// [`ContentHasher`]'s two lanes (four multiplications for each short
/// string, two for each number) were most of preparing an event.
#[derive(Debug, Clone, Copy)]
struct Fingerprint {
    state: u64,
    /// The first word of a pair, while the second is awaited.
    pending: Option<u64>,
}

impl Fingerprint {
    fn new() -> Self {
        Self { state: FINISH, pending: None }
    }

    #[inline]
    fn word(&mut self, word: u64) {
        match self.pending.take() {
            None => self.pending = Some(word),
            Some(first) => self.state = folded_multiply(self.state ^ first ^ ABSORB_A, word ^ ABSORB_B),
        }
    }

    /// A string: its length, then its bytes eight at a time (the last word
    /// padded with zeros, which the length tells apart).
    #[inline]
    fn text(&mut self, text: &str) {
        self.word(text.len() as u64);
        for_each_word(text.as_bytes(), |word| self.word(word));
    }

    fn wide(&mut self, value: u128) {
        self.word(value as u64);
        self.word((value >> 64) as u64);
    }

    /// An optional value: `0` for absence, `1` and the value.
    #[inline]
    fn option<T>(&mut self, value: Option<T>, each: impl FnOnce(&mut Self, T)) {
        match value {
            None => self.word(0),
            Some(value) => {
                self.word(1);
                each(self, value);
            }
        }
    }

    fn finish(self) -> u64 {
        // A lone last word is paired with a word no pair of the spelling
        // ends in (the spelling's words are counted by its lengths and
        // tags, so the pairing is unambiguous either way).
        let state = match self.pending {
            Some(last) => folded_multiply(self.state ^ last ^ ABSORB_A, ABSORB_B ^ FINISH),
            None => self.state,
        };
        folded_multiply(state ^ ABSORB_B, FINISH)
    }
}

/// The fingerprint of a context, computed once per shared context.
pub(crate) fn context_fingerprint(context: &CorrelationContext) -> u128 {
    let mut fp = ContentHasher::default();
    context.hash(&mut fp);
    fp.finish128()
}

/// What stormlog's equality of two events compares apart from the event ID:
/// context, type, body and metadata.
pub(crate) fn content_fingerprint(event: &EventView<'_>, context: u128) -> u64 {
    let mut fp = Fingerprint::new();
    fp.wide(context);
    body(&mut fp, &event.body);
    fp.wide(event.metadata.hash);
    fp.finish()
}

/// A reference's two parts.
/// A key's reference: 128 bits' worth, as keys must be.
pub(crate) fn reference(fp: &mut ContentHasher, value: RefView<'_>) {
    fp.text(value.producer_id());
    fp.text(value.id());
}

/// A reference in content.
fn content_reference(fp: &mut Fingerprint, value: RefView<'_>) {
    fp.text(value.producer_id());
    fp.text(value.id());
}

fn optional_ref(fp: &mut Fingerprint, value: Option<RefView<'_>>) {
    fp.option(value, content_reference);
}

fn optional_text(fp: &mut Fingerprint, value: Option<&str>) {
    fp.option(value, |fp, text| fp.text(text));
}

fn number(fp: &mut Fingerprint, value: Option<u64>) {
    fp.option(value, Fingerprint::word);
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

/// Every field of every body type (`every_member_of_the_schema_is_fingerprinted`
/// fails for a member of tally-core's schema left out).
fn body(fp: &mut Fingerprint, body: &BodyView<'_>) {
    fp.word(body.event_type() as u64);
    match *body {
        BodyView::Artifact { artifact_kind, created_at_ns } => {
            fp.text(artifact_kind);
            fp.word(created_at_ns);
        }
        BodyView::Request {
            request_ref,
            attempt_ref,
            backend_request_ref,
            span: when,
            status,
            tokens: counts,
        } => {
            content_reference(fp, request_ref);
            optional_ref(fp, attempt_ref);
            optional_ref(fp, backend_request_ref);
            span(fp, &when);
            optional_text(fp, status);
            tokens(fp, &counts);
        }
        BodyView::Iteration { iteration_ref, batch_ref, span: when } => {
            content_reference(fp, iteration_ref);
            optional_ref(fp, batch_ref);
            span(fp, &when);
        }
        BodyView::Stage { stage_ref, name, request_ref, iteration_ref, span: when, tokens: counts } => {
            content_reference(fp, stage_ref);
            fp.text(name);
            optional_ref(fp, request_ref);
            optional_ref(fp, iteration_ref);
            span(fp, &when);
            tokens(fp, &counts);
        }
        BodyView::Membership { request_ref, iteration_ref, role, attempt_ref, tokens: counts } => {
            content_reference(fp, request_ref);
            content_reference(fp, iteration_ref);
            fp.text(role);
            optional_ref(fp, attempt_ref);
            tokens(fp, &counts);
        }
        // Destructured whole, as every arm is: a field added to the view
        // does not compile until it is fingerprinted.
        BodyView::ActivityRef(ActivityView {
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
            content_reference(fp, activity_ref);
            fp.text(activity_kind);
            fp.word(activity_domain as u64);
            optional_ref(fp, iteration_ref);
            optional_ref(fp, correlation_scope);
            optional_text(fp, trace_attachment_id);
            number(fp, runtime_correlation_id);
            number(fp, cuda_correlation_id);
            number(fp, stream_id);
            number(fp, graph_id);
            span(fp, &when);
        }
        BodyView::Capabilities(capabilities) => {
            fp.text(capabilities.component());
            fp.word(u64::from(capabilities.available()));
            for list in [capabilities.supported(), capabilities.enabled(), capabilities.collected()] {
                fp.word(list.len() as u64);
                for name in list {
                    fp.text(name);
                }
            }
        }
        BodyView::ClockAlignment {
            from_clock_domain,
            to_clock_domain,
            offset_ns,
            uncertainty_ns,
            validity,
        } => {
            fp.text(from_clock_domain);
            fp.text(to_clock_domain);
            fp.word(offset_ns as u64);
            fp.word(uncertainty_ns);
            span(fp, &validity);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use tally_core::arbitrary::full_record;
    use tally_core::schema::members;
    use tally_core::{EventType, InferenceRecord};

    use super::{content_fingerprint, context_fingerprint};

    fn fingerprint(record: &serde_json::Map<String, Value>) -> u64 {
        let parsed = tally_core::parse_inference_record(Value::Object(record.clone()));
        let Ok(InferenceRecord::Event(event)) = parsed else { panic!("a valid record: {parsed:?}") };
        content_fingerprint(&event.view(), context_fingerprint(event.context()))
    }

    /// Every member of every event type's table is fingerprinted: two
    /// events that differ in that member alone differ in fingerprint.
    #[test]
    fn every_member_of_the_schema_is_fingerprinted() {
        for &event_type in EventType::ALL {
            let (base, other) = (full_record(event_type, 0), full_record(event_type, 1));
            let expected = fingerprint(&base);
            for member in members(event_type) {
                if base[member.name] == other[member.name] {
                    continue;
                }
                let mut changed = base.clone();
                changed.insert(member.name.into(), other[member.name].clone());
                assert_ne!(
                    fingerprint(&changed),
                    expected,
                    "{event_type}: {} is not fingerprinted",
                    member.name
                );
            }
        }
    }
}
