//! 128-bit fingerprints of event content, for resolving a stream without
//! keeping its events.
//!
//! Two events have the same fingerprint when they are equal as stormlog
//! compares them (context, body and metadata; metadata with Python's `==`,
//! where `1 == 1.0 == true`), and different fingerprints otherwise, but for a
//! chance of about 2^-64 per pair: the resolver keeps 64 bits of each, so
//! strings of 32 bytes and more are hashed four words a step
//! ([`ContentHasher::text_in_lanes`]), at that strength. The event ID is not
//! part of it: the deduplication key holds it already, and entity identity
//! ignores it. Keys ([`reference`]) keep their 128 bits.
//!
//! Everything is hashed from an [`EventView`], however it was read, so a
//! view built straight from a line and the view of a built event give the
//! same fingerprint.

use std::hash::{Hash, Hasher};

use tally_core::view::{BodyView, EventView, RefView};
use tally_core::{ContentHasher, CorrelationContext, Span, TokenCounts};

/// The fingerprint of a context, computed once per shared context.
pub(crate) fn context_fingerprint(context: &CorrelationContext) -> u128 {
    let mut fp = ContentHasher::default();
    context.hash(&mut fp);
    fp.finish128()
}

/// What stormlog's equality of two events compares apart from the event ID:
/// context, type, body and metadata.
pub(crate) fn content_fingerprint(event: &EventView<'_>, context: u128) -> u128 {
    let mut fp = ContentHasher::default();
    fp.write_u64(context as u64);
    fp.write_u64((context >> 64) as u64);
    body(&mut fp, &event.body);
    fp.write_u64(event.metadata.hash as u64);
    fp.write_u64((event.metadata.hash >> 64) as u64);
    fp.finish128()
}

/// A reference's two parts.
/// A key's reference: 128 bits' worth, as keys must be.
pub(crate) fn reference(fp: &mut ContentHasher, value: RefView<'_>) {
    fp.text(value.producer_id());
    fp.text(value.id());
}

/// A reference in content, whose fingerprint is folded to 64 bits: its
/// strings hashed in lanes.
fn content_reference(fp: &mut ContentHasher, value: RefView<'_>) {
    fp.text_in_lanes(value.producer_id());
    fp.text_in_lanes(value.id());
}

fn optional_ref(fp: &mut ContentHasher, value: Option<RefView<'_>>) {
    fp.option(value, content_reference);
}

fn optional_text(fp: &mut ContentHasher, value: Option<&str>) {
    fp.option(value, |fp, text| fp.text_in_lanes(text));
}

fn number(fp: &mut ContentHasher, value: Option<u64>) {
    fp.option(value, |fp, value| fp.write_u64(value));
}

fn span(fp: &mut ContentHasher, value: &Span) {
    number(fp, value.start_ns());
    number(fp, value.end_ns());
}

fn tokens(fp: &mut ContentHasher, value: &TokenCounts) {
    let TokenCounts { input_tokens, output_tokens, kv_bytes } = *value;
    number(fp, input_tokens);
    number(fp, output_tokens);
    number(fp, kv_bytes);
}

/// Every field of every body type; the exhaustive patterns make a field
/// added to the view a compile error here until it is fingerprinted.
fn body(fp: &mut ContentHasher, body: &BodyView<'_>) {
    fp.tag(body.event_type() as u8);
    match *body {
        BodyView::Artifact { artifact_kind, created_at_ns } => {
            fp.text_in_lanes(artifact_kind);
            fp.write_u64(created_at_ns);
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
            fp.text_in_lanes(name);
            optional_ref(fp, request_ref);
            optional_ref(fp, iteration_ref);
            span(fp, &when);
            tokens(fp, &counts);
        }
        BodyView::Membership { request_ref, iteration_ref, role, attempt_ref, tokens: counts } => {
            content_reference(fp, request_ref);
            content_reference(fp, iteration_ref);
            fp.text_in_lanes(role);
            optional_ref(fp, attempt_ref);
            tokens(fp, &counts);
        }
        BodyView::ActivityRef(tally_core::view::ActivityView {
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
            fp.text_in_lanes(activity_kind);
            fp.write_u8(activity_domain as u8);
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
            fp.text_in_lanes(capabilities.component());
            fp.write_u8(u8::from(capabilities.available()));
            for list in [capabilities.supported(), capabilities.enabled(), capabilities.collected()] {
                fp.write_usize(list.len());
                for name in list {
                    fp.text_in_lanes(name);
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
            fp.text_in_lanes(from_clock_domain);
            fp.text_in_lanes(to_clock_domain);
            fp.write_u64(offset_ns as u64);
            fp.write_u64(uncertainty_ns);
            span(fp, &validity);
        }
    }
}
