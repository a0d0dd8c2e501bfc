//! The view path: one line straight to an [`EventView`] borrowed from its
//! bytes, with no allocation but an activity's listed intervals. What a
//! resolver reads of an event is all it builds: references and strings
//! stay in the line, and metadata is hashed (and its name and intervals
//! picked out) as it is read, never decoded into a map.
//!
//! Like the typed fast path it decides only what it is sure of: an
//! ordinary valid v4 reference row, or a v2/v3 row whose context is the
//! same text as one decoded before, of the types that make up nearly every
//! artifact (requests, iterations, stages, memberships, activities); its
//! strings free of escapes and its numbers non-negative integers. Anything
//! else returns `None` and the other paths decide, and word any error. It
//! applies the same rules as the event constructors (non-empty strings,
//! `end_ns >= start_ns`, a linked activity's iteration, a stage's owner,
//! `metadata.intervals`); a property suite checks that its views equal the
//! views of the events the exact path builds, on valid and mutated lines.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use tally_core::schema::members;
use tally_core::view::{ActivityView, BodyView, EventView, MetadataDigest, RefView, activity_name_of};
use tally_core::{ActivityDomain, CorrelationContext, EventType, Span, TokenCounts};

use crate::registry::{Interner, Registry};
use crate::view_cursor::{Cursor, Field, Intervals, Meta, Tight, plain_text, starts_with};

/// Every top-level member a row of the five types may have.
#[derive(Debug, Default)]
struct Members<'l> {
    schema_version: Field<u64>,
    event_type: Field<&'l str>,
    context_id: Field<&'l str>,
    /// A known context's text, matched.
    context: Field<&'l Arc<CorrelationContext>>,
    event_id: Field<&'l str>,
    metadata: Field<Meta<'l>>,
    request_ref: Field<RefView<'l>>,
    attempt_ref: Field<RefView<'l>>,
    backend_request_ref: Field<RefView<'l>>,
    start_ns: Field<u64>,
    end_ns: Field<u64>,
    status: Field<&'l str>,
    input_tokens: Field<u64>,
    output_tokens: Field<u64>,
    kv_bytes: Field<u64>,
    iteration_ref: Field<RefView<'l>>,
    batch_ref: Field<RefView<'l>>,
    stage_ref: Field<RefView<'l>>,
    name: Field<&'l str>,
    role: Field<&'l str>,
    activity_ref: Field<RefView<'l>>,
    activity_kind: Field<&'l str>,
    attribution_status: Field<&'l str>,
    activity_domain: Field<&'l str>,
    correlation_scope: Field<RefView<'l>>,
    trace_attachment_id: Field<&'l str>,
    runtime_correlation_id: Field<u64>,
    cuda_correlation_id: Field<u64>,
    stream_id: Field<u64>,
    graph_id: Field<u64>,
    /// The members met, one bit each by [`Member`], `null` ones too.
    present: u64,
}

/// Declares the top-level members the view path reads, once: [`Member`],
/// their keys quoted as they appear in a line ([`MEMBERS`], by member),
/// and the member of a key.
macro_rules! members {
    ($($name:ident),+ $(,)?) => {
        /// A top-level member the view path reads.
        #[allow(non_camel_case_types, reason = "named as their JSON keys")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Member {
            $($name),+
        }

        /// Each member's key, quoted and followed by `: ` as Python's
        /// `json.dumps` separates them, indexed by [`Member`].
        const MEMBERS: &[&[u8]] = &[$(concat!("\"", stringify!($name), "\": ").as_bytes()),+];

        impl Member {
            /// Every member, indexed by itself.
            const ALL: &[Member] = &[$(Member::$name),+];

            fn of(key: &str) -> Option<Member> {
                match key {
                    $(stringify!($name) => Some(Member::$name),)+
                    _ => None,
                }
            }
        }
    };
}

members!(
    schema_version,
    event_type,
    context_id,
    context,
    event_id,
    metadata,
    request_ref,
    attempt_ref,
    backend_request_ref,
    start_ns,
    end_ns,
    status,
    input_tokens,
    output_tokens,
    kv_bytes,
    iteration_ref,
    batch_ref,
    stage_ref,
    name,
    role,
    activity_ref,
    activity_kind,
    attribution_status,
    activity_domain,
    correlation_scope,
    trace_attachment_id,
    runtime_correlation_id,
    cuda_correlation_id,
    stream_id,
    graph_id,
);

/// No member yet (the start of a line), in [`ScanState::next`].
const START: usize = MEMBERS.len();

/// What one decoding thread's view path keeps from line to line.
#[derive(Debug)]
pub(crate) struct ScanState {
    /// Room for an activity's intervals.
    pairs: Vec<(u64, u64)>,
    /// For each member (and [`START`]), the member that followed it on the
    /// last line: rows of one artifact list their members in the same
    /// order, so the next key is checked against this guess with one
    /// comparison instead of being scanned and matched.
    next: [usize; START + 1],
    /// The `context_id` last looked up and its definition's number in the
    /// registry: rows of one context come in runs, and comparing the ID
    /// costs less than hashing it.
    context: Option<(Box<str>, usize)>,
}

impl Default for ScanState {
    fn default() -> Self {
        Self { pairs: Vec::new(), next: [START; START + 1], context: None }
    }
}

impl ScanState {
    /// The context `id` names for a row at `line`.
    #[inline]
    fn context<'r>(
        &mut self,
        registry: &'r Registry,
        id: &str,
        line: u64,
    ) -> Option<&'r Arc<CorrelationContext>> {
        let number = match &self.context {
            Some((known, number)) if **known == *id => *number,
            _ => {
                let number = registry.find(id)?;
                self.context = Some((id.into(), number));
                number
            }
        };
        registry.get(number, line)
    }
}

/// The event on `line` (line `line_number` of the artifact), and whether
/// it was a v4 reference row, when the view path can decide it alone.
pub(crate) fn scan<'l>(
    line: &'l [u8],
    line_number: u64,
    registry: &'l Registry,
    interner: &'l Interner,
    state: &mut ScanState,
) -> Option<(EventView<'l>, bool)> {
    let text = plain_text(line)?;
    let mut row = Members::default();
    if let Some(event_type) = canonical(text, interner, &mut state.pairs, &mut row) {
        return build_typed(&row, event_type, line_number, registry, state);
    }
    row = Members::default();
    member_by_member(text, interner, state, &mut row)?;
    build(&row, line_number, registry, state)
}

/// Reads the members of a row in any spelling, each key matched against
/// the member that followed the last one on the line before, else read
/// and looked up.
fn member_by_member<'l>(
    text: &'l str,
    interner: &'l Interner,
    state: &mut ScanState,
    row: &mut Members<'l>,
) -> Option<()> {
    let mut cursor = Cursor { text, bytes: text.as_bytes(), at: 0 };
    cursor.eat(b'{')?;
    let mut previous = START;
    loop {
        cursor.space();
        let guess = state.next[previous];
        // The guess is matched with the `: ` after its key, in the spelling
        // of writers; any other spelling is read token by token.
        let member = match Member::ALL.get(guess) {
            Some(&member) if starts_with(&cursor.bytes[cursor.at..], MEMBERS[guess]) => {
                cursor.at += MEMBERS[guess].len();
                member
            }
            _ => {
                let member = Member::of(cursor.string()?)?;
                state.next[previous] = member as usize;
                cursor.eat(b':')?;
                member
            }
        };
        // Each arm reads the value into its member; a member met twice (a
        // duplicate key, which Python resolves to the last) is refused.
        macro_rules! member {
            ($field:ident, $read:ident) => {{
                if !row.$field.is_absent() {
                    return None;
                }
                row.$field = cursor.$read()?;
            }};
        }
        match member {
            Member::schema_version => member!(schema_version, field_integer),
            Member::event_type => member!(event_type, field_string),
            Member::context_id => member!(context_id, field_string),
            Member::context => {
                if !row.context.is_absent() {
                    return None;
                }
                cursor.space();
                let rest = &cursor.bytes[cursor.at..];
                let (raw, context) = interner.raw_contexts.iter().find(|(raw, _)| rest.starts_with(raw))?;
                cursor.at += raw.len();
                row.context = Field::Present(context);
            }
            Member::event_id => member!(event_id, field_string),
            Member::metadata => {
                if !row.metadata.is_absent() {
                    return None;
                }
                // `null` metadata is the exact path's to reject.
                row.metadata = Field::Present(cursor.metadata(&mut state.pairs)?);
            }
            Member::request_ref => member!(request_ref, field_ref),
            Member::attempt_ref => member!(attempt_ref, field_ref),
            Member::backend_request_ref => member!(backend_request_ref, field_ref),
            Member::start_ns => member!(start_ns, field_integer),
            Member::end_ns => member!(end_ns, field_integer),
            Member::status => member!(status, field_string),
            Member::input_tokens => member!(input_tokens, field_integer),
            Member::output_tokens => member!(output_tokens, field_integer),
            Member::kv_bytes => member!(kv_bytes, field_integer),
            Member::iteration_ref => member!(iteration_ref, field_ref),
            Member::batch_ref => member!(batch_ref, field_ref),
            Member::stage_ref => member!(stage_ref, field_ref),
            Member::name => member!(name, field_string),
            Member::role => member!(role, field_string),
            Member::activity_ref => member!(activity_ref, field_ref),
            Member::activity_kind => member!(activity_kind, field_string),
            Member::attribution_status => member!(attribution_status, field_string),
            Member::activity_domain => member!(activity_domain, field_string),
            Member::correlation_scope => member!(correlation_scope, field_ref),
            Member::trace_attachment_id => member!(trace_attachment_id, field_string),
            Member::runtime_correlation_id => member!(runtime_correlation_id, field_integer),
            Member::cuda_correlation_id => member!(cuda_correlation_id, field_integer),
            Member::stream_id => member!(stream_id, field_integer),
            Member::graph_id => member!(graph_id, field_integer),
        }
        previous = member as usize;
        row.present |= 1 << previous;
        cursor.space();
        match cursor.peek()? {
            b',' => cursor.at += 1,
            b'}' => {
                cursor.at += 1;
                break;
            }
            _ => return None,
        }
    }
    cursor.space();
    (cursor.at == cursor.bytes.len()).then_some(())
}

/// Reads one member of a canonical row: its key (after the separator
/// before it) and its value, into its field.
macro_rules! canonical_member {
    ($cursor:ident, $row:ident, $interner:ident, $pairs:ident, $event_type:expr, context) => {
        // `context` and `context_id` sort next to each other, so a row of
        // any schema has the one or the other here.
        if starts_with(&$cursor.bytes[$cursor.at..], MEMBERS[Member::context_id as usize]) {
            $cursor.at += MEMBERS[Member::context_id as usize].len();
            $row.context_id = Tight::tight(&mut $cursor)?;
        } else {
            $cursor.expect(MEMBERS[Member::context as usize])?;
            let rest = &$cursor.bytes[$cursor.at..];
            let (raw, context) = $interner.raw_contexts.iter().find(|(raw, _)| rest.starts_with(raw))?;
            $cursor.at += raw.len();
            $row.context = Field::Present(context);
        }
    };
    ($cursor:ident, $row:ident, $interner:ident, $pairs:ident, $event_type:expr, event_type) => {
        // The type the row's members are those of, and no other.
        $cursor.expect(MEMBERS[Member::event_type as usize])?;
        if $cursor.tight_string()? != $event_type.as_str() {
            return None;
        }
    };
    ($cursor:ident, $row:ident, $interner:ident, $pairs:ident, $event_type:expr, metadata) => {
        $cursor.expect(MEMBERS[Member::metadata as usize])?;
        $row.metadata = Field::Present($cursor.tight_metadata($pairs)?);
    };
    ($cursor:ident, $row:ident, $interner:ident, $pairs:ident, $event_type:expr, $member:ident) => {
        $cursor.expect(MEMBERS[Member::$member as usize])?;
        $row.$member = Tight::tight(&mut $cursor)?;
    };
}

/// Declares the canonical rows: each a function that reads a row of that
/// type in the spelling of stormlog's writer (every member, keys sorted,
/// Python's separators) in one pass with no search, or gives up.
macro_rules! canonical_rows {
    ($($name:ident($event_type:expr): $first:ident $(, $member:ident)*;)+) => {
        $(
            fn $name<'l>(
                text: &'l str,
                interner: &'l Interner,
                pairs: &mut Vec<(u64, u64)>,
                row: &mut Members<'l>,
            ) -> Option<EventType> {
                let mut cursor = Cursor { text, bytes: text.as_bytes(), at: 1 };
                canonical_member!(cursor, row, interner, pairs, $event_type, $first);
                $(
                    cursor.expect(b", ")?;
                    canonical_member!(cursor, row, interner, pairs, $event_type, $member);
                )*
                cursor.expect(b"}")?;
                (cursor.at == cursor.bytes.len()).then_some($event_type)
            }
        )+

        /// Each canonical row's members, in the order it reads them.
        #[cfg(test)]
        const CANONICAL_ROWS: &[(EventType, &[&str])] =
            &[$(($event_type, &[stringify!($first) $(, stringify!($member))*])),+];
    };
}

canonical_rows! {
    canonical_activity(EventType::ActivityRef): activity_domain, activity_kind, activity_ref, attribution_status, context,
        correlation_scope, cuda_correlation_id, end_ns, event_id, event_type, graph_id, iteration_ref,
        metadata, runtime_correlation_id, schema_version, start_ns, stream_id, trace_attachment_id;
    canonical_iteration(EventType::Iteration): batch_ref, context, end_ns, event_id, event_type, iteration_ref, metadata,
        schema_version, start_ns;
    canonical_membership(EventType::Membership): attempt_ref, context, event_id, event_type, input_tokens, iteration_ref,
        kv_bytes, metadata, output_tokens, request_ref, role, schema_version;
    canonical_request(EventType::Request): attempt_ref, backend_request_ref, context, end_ns, event_id, event_type,
        input_tokens, kv_bytes, metadata, output_tokens, request_ref, schema_version, start_ns, status;
    canonical_stage(EventType::Stage): context, end_ns, event_id, event_type, input_tokens, iteration_ref, kv_bytes,
        metadata, name, output_tokens, request_ref, schema_version, stage_ref, start_ns;
}

/// The members of a row in the spelling of stormlog's writer, told by its
/// first key; `None` for any other spelling, which the member loop reads.
#[inline]
fn canonical<'l>(
    text: &'l str,
    interner: &'l Interner,
    pairs: &mut Vec<(u64, u64)>,
    row: &mut Members<'l>,
) -> Option<EventType> {
    let bytes = text.as_bytes();
    if !bytes.starts_with(b"{\"") {
        return None;
    }
    match bytes.get(2)? {
        b'a' if bytes[2..].starts_with(b"activity_domain\"") => {
            canonical_activity(text, interner, pairs, row)
        }
        b'a' => canonical_membership(text, interner, pairs, row).or_else(|| {
            *row = Members::default();
            canonical_request(text, interner, pairs, row)
        }),
        b'b' => canonical_iteration(text, interner, pairs, row),
        b'c' => canonical_stage(text, interner, pairs, row),
        _ => None,
    }
}

fn span(start: Field<u64>, end: Field<u64>) -> Option<Span> {
    Span::new(start.optional(), end.optional()).ok()
}

fn tokens(row: &Members<'_>) -> TokenCounts {
    TokenCounts {
        input_tokens: row.input_tokens.optional(),
        output_tokens: row.output_tokens.optional(),
        kv_bytes: row.kv_bytes.optional(),
    }
}

/// The members a body of `event_type` reads; any other member present,
/// even as `null`, is one the exact path must judge.
fn only_members_of(row: &Members<'_>, event_type: EventType) -> bool {
    row.present & !MEMBERS_OF[event_type as usize] == 0
}

/// For each event type, by its place in [`EventType::ALL`], the members a
/// row of it may have, one bit each by [`Member`]: those of every row and
/// those of its table (tally-core's schema) that the view path reads.
static MEMBERS_OF: LazyLock<Vec<u64>> = LazyLock::new(|| {
    let every = [
        Member::schema_version,
        Member::event_type,
        Member::context_id,
        Member::context,
        Member::event_id,
        Member::metadata,
    ];
    let bits = |members: &mut dyn Iterator<Item = Member>| {
        members.fold(0, |bits, member| bits | 1 << member as usize)
    };
    let own = |event_type| bits(&mut members(event_type).iter().filter_map(|member| Member::of(member.name)));
    EventType::ALL.iter().map(|&event_type| bits(&mut every.into_iter()) | own(event_type)).collect()
});

fn build<'l>(
    row: &Members<'l>,
    line_number: u64,
    registry: &'l Registry,
    state: &mut ScanState,
) -> Option<(EventView<'l>, bool)> {
    let event_type = EventType::parse(row.event_type.required()?).ok()?;
    if !matches!(
        event_type,
        EventType::Request
            | EventType::Iteration
            | EventType::Stage
            | EventType::Membership
            | EventType::ActivityRef
    ) || !only_members_of(row, event_type)
    {
        return None;
    }
    build_typed(row, event_type, line_number, registry, state)
}

/// [`build`] of a row whose type is known to be `event_type` and whose
/// members are known to be that type's.
fn build_typed<'l>(
    row: &Members<'l>,
    event_type: EventType,
    line_number: u64,
    registry: &'l Registry,
    state: &mut ScanState,
) -> Option<(EventView<'l>, bool)> {
    let version = row.schema_version.required()?;
    let meta = match row.metadata {
        Field::Absent => Meta {
            hash: tally_utils::content_hash::metadata_hash(&serde_json::Map::new()),
            ..Meta::default()
        },
        Field::Present(meta) => meta,
        Field::Null => return None,
    };
    let activity = event_type == EventType::ActivityRef;
    let intervals = if activity { meta.intervals } else { Intervals::Absent };
    let declared = if intervals == Intervals::Absent { 2 } else { 3 };
    let context = match (version, row.context_id, row.context) {
        // v4 cannot carry null intervals: the exact path says so.
        (4, Field::Present(id), Field::Absent) if intervals != Intervals::Null => {
            state.context(registry, id, line_number)?
        }
        (2 | 3, Field::Absent, Field::Present(context)) if version == declared => context,
        _ => return None,
    };
    let event_id = row.event_id.required()?;
    let tokens = tokens(row);
    let body = match event_type {
        EventType::Request => BodyView::Request {
            request_ref: row.request_ref.required()?,
            attempt_ref: row.attempt_ref.optional(),
            backend_request_ref: row.backend_request_ref.optional(),
            span: span(row.start_ns, row.end_ns)?,
            status: row.status.optional(),
            tokens,
        },
        EventType::Iteration => BodyView::Iteration {
            iteration_ref: row.iteration_ref.required()?,
            batch_ref: row.batch_ref.optional(),
            span: span(row.start_ns, row.end_ns)?,
        },
        EventType::Stage => {
            let (request_ref, iteration_ref) = (row.request_ref.optional(), row.iteration_ref.optional());
            // A stage must reference a request or an iteration.
            if request_ref.is_none() && iteration_ref.is_none() {
                return None;
            }
            BodyView::Stage {
                stage_ref: row.stage_ref.required()?,
                name: row.name.required()?,
                request_ref,
                iteration_ref,
                span: span(row.start_ns, row.end_ns)?,
                tokens,
            }
        }
        EventType::Membership => BodyView::Membership {
            request_ref: row.request_ref.required()?,
            iteration_ref: row.iteration_ref.required()?,
            role: row.role.required()?,
            attempt_ref: row.attempt_ref.optional(),
            tokens,
        },
        _ => {
            let linked = match row.attribution_status.required()? {
                "linked" => true,
                "unresolved" => false,
                _ => return None,
            };
            let activity_domain = match row.activity_domain {
                Field::Absent => ActivityDomain::Unknown,
                Field::Present(text) => ActivityDomain::parse(text).ok()?,
                Field::Null => return None,
            };
            let iteration_ref = row.iteration_ref.optional();
            if iteration_ref.is_some() != linked {
                return None;
            }
            BodyView::ActivityRef(ActivityView {
                activity_ref: row.activity_ref.required()?,
                activity_kind: row.activity_kind.required()?,
                activity_domain,
                iteration_ref,
                correlation_scope: row.correlation_scope.optional(),
                trace_attachment_id: row.trace_attachment_id.optional(),
                runtime_correlation_id: row.runtime_correlation_id.optional(),
                cuda_correlation_id: row.cuda_correlation_id.optional(),
                stream_id: row.stream_id.optional(),
                graph_id: row.graph_id.optional(),
                span: span(row.start_ns, row.end_ns)?,
            })
        }
    };
    let listed = match intervals {
        Intervals::Absent | Intervals::Null => None,
        Intervals::Other => return None,
        Intervals::Pairs => {
            let BodyView::ActivityRef(activity) = &body else { return None };
            let (start, end) = activity.span.bounds()?;
            Some(Cow::Owned(tally_core::busy_intervals_from_pairs(&state.pairs, start, end).ok()?.into_vec()))
        }
    };
    let metadata = MetadataDigest {
        hash: meta.hash,
        name: activity_name_of(meta.name, meta.first_name),
        intervals: listed,
    };
    Some((EventView { context, event_id, metadata, body }, version == 4))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;
    use tally_core::InferenceRecord;
    use tally_core::arbitrary::arb_event;

    use super::{Members, ScanState, build, build_typed, canonical, member_by_member};
    use crate::pyjson::{Separators, to_python_json};
    use crate::registry::{Interner, Registry};

    /// Each row of `text` read the canonical way and member by member
    /// (each view as text, `None` where a reading declines), the
    /// definitions of v4 contexts registered on the way, and the embedded
    /// context of `context_text` known, as the view path meets it.
    fn both_readings(
        text: &[u8],
        context_text: (Vec<u8>, Arc<tally_core::CorrelationContext>),
    ) -> Vec<[Option<String>; 2]> {
        let mut registry = Registry::default();
        let mut interner = Interner::default();
        interner.raw_contexts.push(context_text);
        let mut readings = Vec::new();
        for (number, line) in text.split(|&byte| byte == b'\n').filter(|line| !line.is_empty()).enumerate() {
            let line_number = number as u64 + 1;
            if let Some(Ok((id, context))) = crate::decode::definition_of(line, &mut interner) {
                // Each encoded artifact defines its one context once.
                registry.define(&id, &context, line_number).expect("a new definition");
                continue;
            }
            let text = std::str::from_utf8(line).expect("the writer writes UTF-8");
            let mut state = ScanState::default();
            let mut row = Members::default();
            let looped = member_by_member(text, &interner, &mut state, &mut row)
                .and_then(|()| build(&row, line_number, &registry, &mut state))
                .map(|found| format!("{found:?}"));
            let mut row = Members::default();
            let mut pairs = Vec::new();
            let canonical = canonical(text, &interner, &mut pairs, &mut row).and_then(|event_type| {
                state.pairs = pairs;
                build_typed(&row, event_type, line_number, &registry, &mut state)
            });
            readings.push([canonical.map(|found| format!("{found:?}")), looped]);
        }
        readings
    }

    /// Each canonical row reads its type's record members (tally-core's
    /// schema and those of every row), in the order stormlog's writer
    /// writes them; and every member of the five types' tables is one the
    /// member loop reads.
    #[test]
    fn canonical_rows_are_the_schemas() {
        for &(event_type, row) in super::CANONICAL_ROWS {
            let own = tally_core::schema::members(event_type).iter().map(|member| member.name);
            let mut expected: Vec<&str> =
                own.chain(["context", "event_id", "event_type", "metadata", "schema_version"]).collect();
            expected.sort_unstable();
            assert_eq!(row, expected, "{event_type}");
            for name in row {
                assert!(super::Member::of(name).is_some(), "{event_type}: {name}");
            }
        }
    }

    /// Ordinary rows of the five types as stormlog writes them, in both
    /// forms, all take the canonical reading.
    #[test]
    fn stormlog_rows_take_the_canonical_reading() {
        let context = r#"{"backend": null, "backend_version": null, "clock_domain": "gpu:0", "clock_kind": "device", "collection_mode": "imported", "device_uuid": "GPU-0", "engine": null, "engine_version": null, "host": null, "local_rank": null, "pid": null, "producer_id": "k", "provenance": "observed", "rank": null, "run_id": "r", "session_id": "s", "source": "t", "source_version": null, "world_size": null}"#;
        // Each row with `@` where its context goes (by reference or
        // embedded) and `#` for its schema version.
        let rows = [
            r#"{"attempt_ref": null, "backend_request_ref": {"id": "cmpl-0", "producer_id": "k"}, @, "end_ns": 9, "event_id": "q1", "event_type": "infer.request", "input_tokens": 512, "kv_bytes": null, "metadata": {"route": "/v1/completions"}, "output_tokens": 8, "request_ref": {"id": "q", "producer_id": "k"}, "schema_version": #, "start_ns": 1, "status": "ok"}"#,
            r#"{"batch_ref": null, @, "end_ns": 9, "event_id": "i1", "event_type": "infer.iteration", "iteration_ref": {"id": "i", "producer_id": "k"}, "metadata": {"num_seqs": 4}, "schema_version": #, "start_ns": 1}"#,
            r#"{@, "end_ns": 5, "event_id": "s1", "event_type": "infer.stage", "input_tokens": 512, "iteration_ref": {"id": "i", "producer_id": "k"}, "kv_bytes": null, "metadata": {}, "name": "prefill", "output_tokens": null, "request_ref": {"id": "q", "producer_id": "k"}, "schema_version": #, "stage_ref": {"id": "s", "producer_id": "k"}, "start_ns": 2}"#,
            r#"{"attempt_ref": null, @, "event_id": "m1", "event_type": "infer.membership", "input_tokens": null, "iteration_ref": {"id": "i", "producer_id": "k"}, "kv_bytes": null, "metadata": {"note": [1, true, null, {"a": "b"}]}, "output_tokens": 1, "request_ref": {"id": "q", "producer_id": "k"}, "role": "decode", "schema_version": #}"#,
            r#"{"activity_domain": "gpu", "activity_kind": "kernel", "activity_ref": {"id": "a1", "producer_id": "k"}, "attribution_status": "linked", @, "correlation_scope": {"id": "pid-1", "producer_id": "k"}, "cuda_correlation_id": 6, "end_ns": 100, "event_id": "a1", "event_type": "infer.activity_ref", "graph_id": null, "iteration_ref": {"id": "i", "producer_id": "k"}, "metadata": {"name": "gemm"}, "runtime_correlation_id": 6, "schema_version": #, "start_ns": 50, "stream_id": 7, "trace_attachment_id": "trace-0"}"#,
            r#"{"activity_domain": "runtime", "activity_kind": "cuda_runtime", "activity_ref": {"id": "a2", "producer_id": "k"}, "attribution_status": "unresolved", @, "correlation_scope": null, "cuda_correlation_id": null, "end_ns": 100, "event_id": "a2", "event_type": "infer.activity_ref", "graph_id": null, "iteration_ref": null, "metadata": {"first_name": "cudaLaunchKernel", "name": "launch"}, "runtime_correlation_id": 10, "schema_version": #, "start_ns": 50, "stream_id": null, "trace_attachment_id": null}"#,
        ];
        let definition = format!(
            r#"{{"context": {context}, "context_id": "c", "event_type": "infer.context", "schema_version": 4}}"#
        );
        let parsed = crate::decode::definition_of(definition.as_bytes(), &mut Interner::default());
        let Some(Ok((_, shared))) = parsed else { panic!("the definition parses: {parsed:?}") };
        let compact: Vec<String> = std::iter::once(definition)
            .chain(rows.iter().map(|row| row.replace('@', r#""context_id": "c""#).replace('#', "4")))
            .collect();
        let embedded: Vec<String> = rows
            .iter()
            .map(|row| row.replace('@', &format!(r#""context": {context}"#)).replace('#', "2"))
            .collect();
        for lines in [compact, embedded] {
            let readings = both_readings(
                lines.join("\n").as_bytes(),
                (context.as_bytes().to_vec(), Arc::clone(&shared)),
            );
            assert_eq!(readings.len(), rows.len());
            for ([canonical, looped], line) in readings.into_iter().zip(rows) {
                assert!(canonical.is_some(), "declined: {line}");
                assert_eq!(canonical, looped, "{line}");
            }
        }
    }

    proptest! {
        /// Rows as the writer spells them (every member, keys sorted,
        /// Python's separators; stormlog's spelling), in both forms: the
        /// canonical reading takes every one that the member loop takes,
        /// and reads it the same.
        #[test]
        fn writer_rows_take_the_canonical_reading(event in arb_event(), compact in any::<bool>()) {
            let context_text = to_python_json(&event.context().to_json(), Separators::DEFAULT).into_bytes();
            let context = Arc::clone(event.context_arc());
            let form = if compact { crate::Form::Compact } else { crate::Form::Embedded };
            let text = crate::encode_artifact(&[InferenceRecord::Event(event)], form).expect("a valid event encodes");
            for [canonical, looped] in both_readings(&text, (context_text.clone(), Arc::clone(&context))) {
                prop_assert_eq!(&canonical, &looped, "text: {}", String::from_utf8_lossy(&text));
            }
        }
    }
}
