//! The members of each correlation event type, declared once.
//!
//! [`event_schema!`](crate::event_schema) holds stormlog 0.4.3's event
//! classes: for each [`EventType`], its `event_type` string, the class
//! stormlog writes it as, and the class's own fields in stormlog's
//! declaration order, each with its [`MemberKind`] and where the body
//! struct holds it. Everything else that spells the schema out is made
//! from it: [`EventType`] itself, [`members`], the record writer
//! ([`crate::CorrelationEvent::for_each_record_member`]), the proptest
//! generators, and `tally-python`'s event classes (their getters and their
//! dataclass declarations). The record parser and the view path keep their
//! own code, checked against [`members`] by tests.

use std::sync::LazyLock;

use crate::{EventBody, RecordMember};

/// Calls the macro `$callback` with the schema of the eight event types:
/// for each, the `EventType` variant's docs, `Variant("infer.x", BodyStruct)`,
/// the stormlog class and its docstring, and `{ field: Kind(path), ... }`
/// (the class's own fields in stormlog's order; `Kind` a [`MemberKind`]
/// variant; `path` the field of the body struct holding it). The one
/// declaration of the schema; a crate that must spell it out at compile
/// time (a Python class's getters) expands it with a macro of its own.
#[macro_export]
macro_rules! event_schema {
    ($callback:ident) => {
        $callback! {
            /// `infer.artifact`: the artifact's identity.
            Artifact("infer.artifact", ArtifactIdentity)
            ArtifactIdentityEvent: "Versioned run identity for an inference JSONL artifact." {
                artifact_kind: Text(artifact_kind),
                created_at_ns: Count(created_at_ns),
            }
            /// `infer.request`: one request (or one attempt of it).
            Request("infer.request", Request)
            RequestEvent: "One logical request observation; attempts are separate identities." {
                request_ref: Ref(request_ref),
                attempt_ref: OptionalRef(attempt_ref),
                backend_request_ref: OptionalRef(backend_request_ref),
                start_ns: SpanStart(span),
                end_ns: SpanEnd(span),
                status: OptionalText(status),
                input_tokens: OptionalCount(tokens.input_tokens),
                output_tokens: OptionalCount(tokens.output_tokens),
                kv_bytes: OptionalCount(tokens.kv_bytes),
            }
            /// `infer.iteration`: one engine iteration shared by its members.
            Iteration("infer.iteration", Iteration)
            IterationEvent: "One server execution iteration, recorded once for all participants." {
                iteration_ref: Ref(iteration_ref),
                batch_ref: OptionalRef(batch_ref),
                start_ns: SpanStart(span),
                end_ns: SpanEnd(span),
            }
            /// `infer.stage`: a named stage of a request or iteration.
            Stage("infer.stage", Stage)
            StageEvent: "A generic named stage span, for LLM and non-LLM workloads." {
                stage_ref: Ref(stage_ref),
                name: Text(name),
                request_ref: OptionalRef(request_ref),
                iteration_ref: OptionalRef(iteration_ref),
                start_ns: SpanStart(span),
                end_ns: SpanEnd(span),
                input_tokens: OptionalCount(tokens.input_tokens),
                output_tokens: OptionalCount(tokens.output_tokens),
                kv_bytes: OptionalCount(tokens.kv_bytes),
            }
            /// `infer.membership`: a request's role in an iteration.
            Membership("infer.membership", Membership)
            MembershipEvent: "One request's role in one shared execution iteration." {
                request_ref: Ref(request_ref),
                iteration_ref: Ref(iteration_ref),
                role: Text(role),
                attempt_ref: OptionalRef(attempt_ref),
                input_tokens: OptionalCount(tokens.input_tokens),
                output_tokens: OptionalCount(tokens.output_tokens),
                kv_bytes: OptionalCount(tokens.kv_bytes),
            }
            /// `infer.activity_ref`: a trace activity and its iteration link.
            ActivityRef("infer.activity_ref", ActivityRef)
            ActivityReferenceEvent: "A scoped trace activity and its optional link to an iteration." {
                activity_ref: Ref(activity_ref),
                activity_kind: Text(activity_kind),
                attribution_status: Attribution(iteration_ref),
                activity_domain: Domain(activity_domain),
                iteration_ref: OptionalRef(iteration_ref),
                correlation_scope: OptionalRef(correlation_scope),
                trace_attachment_id: OptionalText(trace_attachment_id),
                runtime_correlation_id: OptionalCount(runtime_correlation_id),
                cuda_correlation_id: OptionalCount(cuda_correlation_id),
                stream_id: OptionalCount(stream_id),
                graph_id: OptionalCount(graph_id),
                start_ns: SpanStart(span),
                end_ns: SpanEnd(span),
            }
            /// `infer.capabilities`: what a capture component could collect.
            Capabilities("infer.capabilities", Capabilities)
            CapabilityEvent: "Availability and outcome for one optional capture component." {
                component: Text(component),
                available: Flag(available),
                supported: Names(supported),
                enabled: Names(enabled),
                collected: Names(collected),
            }
            /// `infer.clock_alignment`: an offset between two clock domains.
            ClockAlignment("infer.clock_alignment", ClockAlignment)
            ClockAlignmentEvent: "Offset and uncertainty for comparing two distinct clock domains." {
                from_clock_domain: Text(from_clock_domain),
                to_clock_domain: Text(to_clock_domain),
                offset_ns: Signed(offset_ns),
                uncertainty_ns: Count(uncertainty_ns),
                valid_from_ns: SpanStart(validity),
                valid_to_ns: SpanEnd(validity),
            }
        }
    };
}

/// What a member holds: its JSON form and its rule, and so its type
/// annotation and default in stormlog's class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    /// A required entity reference.
    Ref,
    /// An entity reference, `None` by default.
    OptionalRef,
    /// A required non-empty string.
    Text,
    /// A non-empty string, `None` by default.
    OptionalText,
    /// A required non-negative integer.
    Count,
    /// A non-negative integer, `None` by default.
    OptionalCount,
    /// A required integer of any sign.
    Signed,
    /// A required boolean.
    Flag,
    /// A list of distinct non-empty strings, `[]` by default.
    Names,
    /// A span's start, `None` by default: at most its end.
    SpanStart,
    /// A span's end, `None` by default: at least its start.
    SpanEnd,
    /// An [`crate::ActivityDomain`], `"unknown"` by default.
    Domain,
    /// `linked` or `unresolved`, required: `linked` exactly when the
    /// activity's `iteration_ref` is present.
    Attribution,
}

/// One member of an event class: a field of stormlog's class and the key
/// of the same name in its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// The field's name, which is also its JSON key.
    pub name: &'static str,
    /// What it holds.
    pub kind: MemberKind,
}

impl Member {
    /// Whether stormlog's class declares a default for it.
    pub const fn optional(&self) -> bool {
        use MemberKind::*;
        !matches!(self.kind, Ref | Text | Count | Signed | Flag | Attribution)
    }
}

/// The most members an event type has.
pub(crate) const MOST: usize = 13;

/// The record member of kind `$kind` whose value the body holds at `$value`.
#[rustfmt::skip]
macro_rules! read {
    (Ref, $value:expr) => { RecordMember::Ref(&$value) };
    (OptionalRef, $value:expr) => { $value.as_ref().map_or(RecordMember::Null, RecordMember::Ref) };
    (Text, $value:expr) => { RecordMember::Text($value.as_str()) };
    (OptionalText, $value:expr) => { $value.as_deref().map_or(RecordMember::Null, RecordMember::Text) };
    (Count, $value:expr) => { RecordMember::Unsigned($value) };
    (OptionalCount, $value:expr) => { $value.map_or(RecordMember::Null, RecordMember::Unsigned) };
    (Signed, $value:expr) => { RecordMember::Signed($value) };
    (Flag, $value:expr) => { RecordMember::Bool($value) };
    (Names, $value:expr) => { RecordMember::Names(&$value) };
    (SpanStart, $value:expr) => { read!(OptionalCount, $value.start_ns()) };
    (SpanEnd, $value:expr) => { read!(OptionalCount, $value.end_ns()) };
    (Domain, $value:expr) => { RecordMember::Text($value.as_str()) };
    (Attribution, $value:expr) => { RecordMember::Text(crate::event::attribution_status($value.as_ref())) };
}
pub(crate) use read;

/// Expands the schema into [`EventType`], [`members`], [`class_name`],
/// the bodies' `event_type` and [`values`].
macro_rules! tables {
    ($(
        $(#[$doc:meta])* $variant:ident($text:literal, $body:ident)
        $class:ident: $class_doc:literal { $($name:ident: $kind:ident($($path:ident).+)),* $(,)? }
    )*) => {
        crate::context::string_enum!(
            /// The type of a correlation event, as written in `event_type`.
            EventType, "event_type", "unsupported inference event_type", {
                $($(#[$doc])* $variant = $text,)*
            }
        );

        /// The members of `event_type`'s class after those of every event
        /// (`context`, `event_id`, `metadata`), in stormlog's declaration
        /// order.
        pub fn members(event_type: EventType) -> &'static [Member] {
            match event_type {
                $(EventType::$variant => {
                    &[$(Member { name: stringify!($name), kind: MemberKind::$kind }),*]
                })*
            }
        }

        /// The name of the stormlog class `event_type` is written as.
        pub fn class_name(event_type: EventType) -> &'static str {
            match event_type {
                $(EventType::$variant => stringify!($class),)*
            }
        }

        impl EventBody {
            /// The event type it is written as.
            pub fn event_type(&self) -> EventType {
                match self {
                    $(EventBody::$variant(_) => EventType::$variant,)*
                }
            }
        }

        impl crate::view::BodyView<'_> {
            /// The event type.
            pub fn event_type(&self) -> EventType {
                match self {
                    $(crate::view::BodyView::$variant { .. } => EventType::$variant,)*
                }
            }
        }

        $(const _: () = assert!([$(stringify!($name)),*].len() <= MOST);)*

        /// The value of each of [`members`] of the body's type, in its
        /// order (`Null` after the last).
        pub(crate) fn values(body: &EventBody) -> [RecordMember<'_>; MOST] {
            let mut values = [RecordMember::Null; MOST];
            match body {
                $(EventBody::$variant(body) => {
                    let own = [$(read!($kind, body.$($path).+)),*];
                    values[..own.len()].copy_from_slice(&own);
                })*
            }
            values
        }
    };
}

event_schema!(tables);

/// The value of `body`'s member `name` (one of [`members`] of its type),
/// as its record holds it.
pub fn value_of<'e>(body: &'e EventBody, name: &str) -> Option<RecordMember<'e>> {
    let index = members(body.event_type()).iter().position(|member| member.name == name)?;
    Some(values(body)[index])
}

/// The keys every event's record has, in the order of the values the
/// writer gives them, after those of [`members`].
pub(crate) const EVERY: [&str; 5] = ["context", "event_id", "event_type", "metadata", "schema_version"];

/// Each event type's record keys in the order `json.dumps(sort_keys=True)`
/// writes them (by code point), each with where its value is: the index
/// of its member in [`members`], or `MOST` and its place in [`EVERY`];
/// indexed by the type's position in [`EventType::ALL`].
static RECORD_ORDER: LazyLock<Vec<Vec<(&'static str, usize)>>> = LazyLock::new(|| {
    let order = |event_type| {
        let own = members(event_type).iter().map(|member| member.name).zip(0..);
        let mut keys: Vec<_> = own.chain(EVERY.into_iter().zip(MOST..)).collect();
        keys.sort_unstable_by_key(|&(key, _)| key);
        keys
    };
    EventType::ALL.iter().copied().map(order).collect()
});

/// `event_type`'s record keys, sorted, with where each value is.
pub(crate) fn record_order(event_type: EventType) -> &'static [(&'static str, usize)] {
    &RECORD_ORDER[event_type as usize]
}
