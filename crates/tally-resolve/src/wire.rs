//! A [`PreparedBatch`] as plain data for any serde format: what a partial
//! result (`tally-partial`) carries between machines. Reading one back
//! checks every offset, index and span against the rest of the batch, so a
//! damaged or hostile batch is refused with the rule it broke instead of
//! panicking in the resolver.
//!
//! The layout is columnar, for size: a partial of a trace is mostly
//! activities, and a column of one field of each (positions and
//! correlation IDs as differences from the one before, span starts from
//! the last span's end; kinds, names and iterations as indexes into one
//! table of distinct strings) is runs of small, alike numbers that a varint
//! format and a general compressor shrink to a byte or two an event. What
//! can be computed again is not stored: an event's key is the hash of its
//! context's session and producer and its ID, and an activity's key the
//! hash of its reference, which for a trace's activities is the context's
//! producer and the event ID. Both are recomputed on reading, so a partial
//! cannot state a key its content does not give; writing refuses a batch
//! whose keys would come out otherwise. An activity's key is stored only
//! where the batch holds nothing to compute it from (a linked activity,
//! whose reference is not kept, named other than its event). An event ID that ends in a number (a trace's
//! `<attachment>/<n>`) is stored as its stem (in the string table) and the
//! number's difference from the last such number. The 64-bit content
//! fingerprint stays, one per event: it stands for content (metadata
//! included) that a partial does not keep.
//!
//! Contexts travel as the members of their JSON object, names and texts in
//! the string table (their own serde form is a JSON object, which binary
//! formats without `deserialize_any` cannot read), and are validated as an
//! artifact's are.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use tally_core::view::RefView;
use tally_core::{ActivityDomain, CorrelationContext, Interval, Span};
use tally_utils::decimal::Decimal;
use tally_utils::fast_hash::FastHashMap;

use crate::prepare::{
    Busy, PreparedActivity, PreparedBatch, PreparedBody, PreparedEvent, RefStr, Str, reference_key,
};

/// An event's kind, as the `tags` column holds it.
const TAG_OTHER: u8 = 0;
const TAG_ACTIVITY: u8 = 1;
const TAG_UNTABLED: u8 = 2;

/// An activity's `flags`: which optional columns hold a value for it.
const HAS_CUDA_CORRELATION: u8 = 1;
const HAS_STREAM: u8 = 1 << 1;
/// Bits 2-3: its busy time (`BUSY_*`).
const BUSY_SHIFT: u8 = 2;
const BUSY_UNKNOWN: u8 = 0;
const BUSY_SPAN: u8 = 1;
const BUSY_LISTED: u8 = 2;
/// Bits 4-5: its reference and key (`REF_*`).
const REF_SHIFT: u8 = 4;
/// No reference kept; the key is that of (context producer, event ID).
const REF_DERIVED: u8 = 0;
/// No reference kept; the key is in the `keys` column.
const REF_KEY_STORED: u8 = 1;
/// The reference is (context producer, event ID), and the key its hash.
const REF_EVENT: u8 = 2;
/// The reference is in the `references` column, and the key its hash.
const REF_STORED: u8 = 3;
/// The bits a flag may have set.
const FLAGS_KNOWN: u8 = 0b11_1111;

/// The longest stem an event ID with a trailing number is split into: a
/// stem is spelled again for every event that names it, so its length
/// bounds what a batch's text may grow to per event read.
const MAX_STEM: usize = 256;
/// The most digits of a trailing number (below 10^18, so that differences
/// fit an `i64`).
const MAX_DIGITS: usize = 18;
const NUMBER_LIMIT: u64 = 1_000_000_000_000_000_000;

/// The most events a batch read back may hold: a partial's chunks hold 16
/// Ki, and an event takes about 300 bytes once read, a hundred times what
/// the smallest takes on the wire, so the cap (not the frame's bytes) is
/// what bounds a hostile batch's memory: about 40 MB.
const MAX_EVENTS: usize = 1 << 17;

/// Events and the columns each kind adds.
#[derive(Serialize, Deserialize)]
struct WireBatch {
    labels: bool,
    /// Every distinct string the batch names (but event IDs with a number),
    /// once; the columns name them by index.
    strings: Vec<String>,
    /// Distinct references: producer and ID, each an index into `strings`.
    refs: Vec<(u64, u64)>,
    /// Each context's members: name (an index into `strings`) and value.
    contexts: Vec<Vec<(u64, WireValue)>>,
    /// Listed busy intervals: each start as its difference from the one
    /// before (zigzag), and each length.
    interval_starts: Vec<u64>,
    interval_lengths: Vec<u64>,
    events: WireEvents,
}

/// A context member's value.
#[derive(Serialize, Deserialize)]
enum WireValue {
    Null,
    /// An index into `strings`.
    Text(u64),
    Count(u64),
}

/// One value per event each, but `others` (one per request, iteration,
/// stage, membership and alignment) and `activities`.
#[derive(Serialize, Deserialize)]
struct WireEvents {
    /// `TAG_*`.
    tags: Vec<u8>,
    /// Positions, each as its difference from the one before (zigzag).
    records: Vec<u64>,
    contexts: Vec<u32>,
    /// Eight little-endian bytes each.
    fingerprints: Vec<u8>,
    /// The ID, or the part of it before its trailing number: an index into
    /// `strings`.
    id_stems: Vec<u64>,
    /// 0 for an ID without a number; else 1 + the number's difference
    /// (zigzag) from the last event's number.
    id_numbers: Vec<u64>,
    others: Vec<WireOther>,
    activities: WireActivities,
}

/// One value per activity each, but the optional columns, which hold one
/// for each activity whose flags say so.
#[derive(Serialize, Deserialize)]
struct WireActivities {
    flags: Vec<u8>,
    /// The index in [`ActivityDomain::ALL`].
    domains: Vec<u8>,
    /// Indexes into `strings`.
    kinds: Vec<u64>,
    /// 0 for none, else 1 + an index into `refs`.
    iterations: Vec<u64>,
    scopes: Vec<u64>,
    /// 0 for none, else 1 + an index into `strings`.
    names: Vec<u64>,
    /// `REF_KEY_STORED`: 16 little-endian bytes each.
    keys: Vec<u8>,
    /// `REF_STORED`: indexes into `refs`.
    references: Vec<u64>,
    /// Each as its difference from the one before (zigzag).
    cuda_correlation_ids: Vec<u64>,
    stream_ids: Vec<u64>,
    /// `BUSY_SPAN`: the start as its difference from the last span's end
    /// (zigzag), and the length.
    span_starts: Vec<u64>,
    span_lengths: Vec<u64>,
    /// `BUSY_LISTED`: first index and count, in pairs.
    listed: Vec<u64>,
}

/// An optional reference or string: 0 for none, else 1 + its index.
type Optional = u64;

#[derive(Serialize, Deserialize)]
enum WireOther {
    Request {
        request: u64,
        attempt: Optional,
    },
    Iteration {
        iteration: u64,
        start_ns: Option<u64>,
        end_ns: Option<u64>,
    },
    Stage {
        stage: u64,
        request: Optional,
        iteration: Optional,
    },
    Membership {
        request: u64,
        attempt: Optional,
        iteration: u64,
        role: u64,
    },
    Alignment {
        from: u64,
        to: u64,
        offset_ns: i64,
        uncertainty_ns: u64,
        start_ns: Option<u64>,
        end_ns: Option<u64>,
    },
}

fn zigzag(delta: i64) -> u64 {
    ((delta << 1) ^ (delta >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// `value` as its difference from `last` (any two `u64`s: the difference
/// wraps, and adding it back wraps the same way).
fn delta(last: &mut u64, value: u64) -> u64 {
    let difference = value.wrapping_sub(*last) as i64;
    *last = value;
    zigzag(difference)
}

fn undelta(last: &mut u64, encoded: u64) -> u64 {
    *last = last.wrapping_add(unzigzag(encoded) as u64);
    *last
}

/// An event ID's stem and trailing number, where it has one: the
/// trailing digits but their leading zeros (which stay in the stem, so
/// that the number spells back the same), at most [`MAX_DIGITS`], after a
/// stem of at most [`MAX_STEM`] bytes.
fn split_number(id: &str) -> (&str, Option<u64>) {
    let bytes = id.as_bytes();
    let digits = bytes.iter().rev().take_while(|byte| byte.is_ascii_digit()).count();
    if digits == 0 {
        return (id, None);
    }
    let run = &bytes[id.len() - digits..];
    let zeros = run.iter().take_while(|&&byte| byte == b'0').count().min(digits - 1);
    let stem = id.len() - digits + zeros;
    if digits - zeros > MAX_DIGITS || stem > MAX_STEM {
        return (id, None);
    }
    let number = bytes[stem..].iter().fold(0u64, |number, digit| number * 10 + u64::from(digit - b'0'));
    // Splitting before ASCII digits keeps the stem whole characters.
    (&id[..stem], Some(number))
}

/// Builds the columns from a batch.
struct Writer<'a> {
    batch: &'a PreparedBatch,
    strings: Vec<String>,
    string_index: FastHashMap<&'a str, u64>,
    /// The index of a string of the batch by its place: an interning
    /// batch's equal strings are one place, found without hashing or
    /// comparing their text (kernel names are long).
    place_index: FastHashMap<(usize, usize), u64>,
    /// The last event ID's stem and its index: most events share the one
    /// before's.
    last_stem: Option<(&'a str, u64)>,
    refs: Vec<(u64, u64)>,
    ref_index: FastHashMap<(u64, u64), u64>,
}

impl<'a> Writer<'a> {
    fn string(&mut self, text: &'a str) -> u64 {
        let next = self.strings.len() as u64;
        *self.string_index.entry(text).or_insert_with(|| {
            self.strings.push(text.to_owned());
            next
        })
    }

    fn str(&mut self, value: Str) -> u64 {
        if let Some(&index) = self.place_index.get(&(value.start, value.len)) {
            return index;
        }
        let batch = self.batch;
        let index = self.string(batch.get(value));
        self.place_index.insert((value.start, value.len), index);
        index
    }

    fn stem(&mut self, stem: &'a str) -> u64 {
        match self.last_stem {
            Some((last, index)) if last == stem => index,
            _ => {
                let index = self.string(stem);
                self.last_stem = Some((stem, index));
                index
            }
        }
    }

    fn reference(&mut self, value: RefStr) -> u64 {
        let pair = (self.str(value.producer), self.str(value.id));
        let next = self.refs.len() as u64;
        *self.ref_index.entry(pair).or_insert_with(|| {
            self.refs.push(pair);
            next
        })
    }

    fn optional(&mut self, value: Option<RefStr>) -> Optional {
        value.map_or(0, |value| 1 + self.reference(value))
    }

    fn other(&mut self, body: &PreparedBody) -> WireOther {
        match *body {
            PreparedBody::Request { request, attempt } => {
                WireOther::Request { request: self.reference(request), attempt: self.optional(attempt) }
            }
            PreparedBody::Iteration { iteration, span } => WireOther::Iteration {
                iteration: self.reference(iteration),
                start_ns: span.start_ns(),
                end_ns: span.end_ns(),
            },
            PreparedBody::Stage { stage, request, iteration } => WireOther::Stage {
                stage: self.reference(stage),
                request: self.optional(request),
                iteration: self.optional(iteration),
            },
            PreparedBody::Membership { request, attempt, iteration, role } => WireOther::Membership {
                request: self.reference(request),
                attempt: self.optional(attempt),
                iteration: self.reference(iteration),
                role: self.str(role),
            },
            PreparedBody::Alignment { from, to, offset_ns, uncertainty_ns, validity } => {
                WireOther::Alignment {
                    from: self.str(from),
                    to: self.str(to),
                    offset_ns,
                    uncertainty_ns,
                    start_ns: validity.start_ns(),
                    end_ns: validity.end_ns(),
                }
            }
            // The caller gives the other kinds their own columns.
            PreparedBody::Activity(_) | PreparedBody::Untabled => unreachable!("not an other body"),
        }
    }
}

/// The running values the delta columns are differences from.
#[derive(Default)]
struct Lasts {
    record: u64,
    number: i64,
    cuda_correlation_id: u64,
    /// The end of the last activity's span: the next one's start is most
    /// often just after it (kernels back to back on a stream).
    span_end: u64,
}

/// A context's members, as [`CorrelationContext::to_json`] spells them.
fn write_context<'a>(writer: &mut Writer<'a>, json: &'a Value) -> Result<Vec<(u64, WireValue)>, String> {
    let Value::Object(members) = json else {
        return Err("a context is not a JSON object".into());
    };
    let mut written = Vec::with_capacity(members.len());
    for (name, value) in members {
        let value = match value {
            Value::Null => WireValue::Null,
            Value::String(text) => WireValue::Text(writer.string(text)),
            Value::Number(number) if number.is_u64() => WireValue::Count(number.as_u64().unwrap_or_default()),
            _ => return Err(format!("context member {name} is neither text, a count nor null")),
        };
        written.push((writer.string(name), value));
    }
    Ok(written)
}

fn write_batch(batch: &PreparedBatch) -> Result<WireBatch, String> {
    let contexts: Vec<Value> = batch.contexts.iter().map(|prepared| prepared.context.to_json()).collect();
    let mut writer = Writer {
        batch,
        strings: Vec::new(),
        string_index: FastHashMap::default(),
        place_index: FastHashMap::default(),
        last_stem: None,
        refs: Vec::new(),
        ref_index: FastHashMap::default(),
    };
    let contexts =
        contexts.iter().map(|json| write_context(&mut writer, json)).collect::<Result<Vec<_>, String>>()?;
    let count = batch.events.len();
    let mut events = WireEvents {
        tags: Vec::with_capacity(count),
        records: Vec::with_capacity(count),
        contexts: Vec::with_capacity(count),
        fingerprints: Vec::with_capacity(count * 8),
        id_stems: Vec::with_capacity(count),
        id_numbers: Vec::with_capacity(count),
        others: Vec::new(),
        activities: WireActivities {
            flags: Vec::with_capacity(count),
            domains: Vec::with_capacity(count),
            kinds: Vec::with_capacity(count),
            iterations: Vec::with_capacity(count),
            scopes: Vec::with_capacity(count),
            names: Vec::with_capacity(count),
            keys: Vec::new(),
            references: Vec::new(),
            cuda_correlation_ids: Vec::with_capacity(count),
            stream_ids: Vec::with_capacity(count),
            span_starts: Vec::with_capacity(count),
            span_lengths: Vec::with_capacity(count),
            listed: Vec::new(),
        },
    };
    let mut lasts = Lasts::default();
    for (number, event) in batch.events.iter().enumerate() {
        let context = &batch.contexts[event.context as usize];
        let id = batch.get(event.event_id);
        // Keys are not stored but computed again on reading: one that
        // would come out otherwise cannot be written.
        if context.event_key(id) != event.key {
            return Err(format!("prepared event {number}: its key is not that of its context and ID"));
        }
        events.records.push(delta(&mut lasts.record, event.record as u64));
        events.contexts.push(event.context);
        events.fingerprints.extend_from_slice(&event.fingerprint.to_le_bytes());
        let (stem, trailing) = split_number(id);
        events.id_stems.push(writer.stem(stem));
        events.id_numbers.push(trailing.map_or(0, |trailing| {
            // Both below 10^18: neither the difference nor its zigzag
            // overflows.
            let difference = trailing as i64 - lasts.number;
            lasts.number = trailing as i64;
            1 + zigzag(difference)
        }));
        match &event.body {
            PreparedBody::Untabled => events.tags.push(TAG_UNTABLED),
            PreparedBody::Activity(activity) => {
                events.tags.push(TAG_ACTIVITY);
                let producer = &*context.context.producer_id;
                write_activity(&mut writer, &mut events.activities, &mut lasts, activity, producer, id)
                    .map_err(|rule| format!("prepared event {number}: {rule}"))?;
            }
            body => {
                events.tags.push(TAG_OTHER);
                let other = writer.other(body);
                events.others.push(other);
            }
        }
    }
    Ok(WireBatch {
        labels: batch.labels,
        strings: writer.strings,
        refs: writer.refs,
        contexts,
        interval_starts: {
            let mut last = 0;
            batch.intervals.iter().map(|interval| delta(&mut last, interval.start_ns())).collect()
        },
        interval_lengths: batch
            .intervals
            .iter()
            .map(|interval| interval.end_ns() - interval.start_ns())
            .collect(),
        events,
    })
}

fn write_activity<'a>(
    writer: &mut Writer<'a>,
    columns: &mut WireActivities,
    lasts: &mut Lasts,
    activity: &PreparedActivity,
    producer: &str,
    id: &str,
) -> Result<(), String> {
    let batch = writer.batch;
    let mut flags = 0;
    let form = match activity.reference {
        Some(reference) => {
            let view = batch.get_ref(reference);
            if reference_key(view) != activity.key {
                return Err("its activity key is not that of its reference".into());
            }
            if view.producer_id() == producer && view.id() == id {
                REF_EVENT
            } else {
                columns.references.push(writer.reference(reference));
                REF_STORED
            }
        }
        None => match RefView::new(producer, id) {
            Some(derived) if reference_key(derived) == activity.key => REF_DERIVED,
            _ => {
                columns.keys.extend_from_slice(&activity.key.to_le_bytes());
                REF_KEY_STORED
            }
        },
    };
    flags |= form << REF_SHIFT;
    let busy = match activity.busy {
        Busy::Unknown => BUSY_UNKNOWN,
        Busy::Span(start, end) => {
            columns.span_starts.push(delta(&mut lasts.span_end, start));
            lasts.span_end = end;
            columns.span_lengths.push(end - start);
            BUSY_SPAN
        }
        Busy::Listed(first, count) => {
            columns.listed.extend([first as u64, count as u64]);
            BUSY_LISTED
        }
    };
    flags |= busy << BUSY_SHIFT;
    if let Some(correlation) = activity.cuda_correlation_id {
        flags |= HAS_CUDA_CORRELATION;
        columns.cuda_correlation_ids.push(delta(&mut lasts.cuda_correlation_id, correlation));
    }
    if let Some(stream) = activity.stream_id {
        flags |= HAS_STREAM;
        columns.stream_ids.push(stream);
    }
    columns.flags.push(flags);
    // Every domain is in ALL, which has four.
    let domain = ActivityDomain::ALL.iter().position(|known| *known == activity.domain).unwrap_or(0);
    columns.domains.push(domain as u8);
    columns.kinds.push(writer.str(activity.kind));
    let iteration = writer.optional(activity.iteration);
    columns.iterations.push(iteration);
    let scope = writer.optional(activity.scope);
    columns.scopes.push(scope);
    let name = activity.name.map_or(0, |name| 1 + writer.str(name));
    columns.names.push(name);
    Ok(())
}

impl Serialize for PreparedBatch {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        write_batch(self).map_err(serde::ser::Error::custom)?.serialize(serializer)
    }
}

/// A column read value by value; running short is the batch's fault.
struct Column<T> {
    name: &'static str,
    values: std::vec::IntoIter<T>,
}

impl<T> Column<T> {
    fn new(name: &'static str, values: Vec<T>) -> Self {
        Self { name, values: values.into_iter() }
    }

    fn next(&mut self) -> Result<T, String> {
        self.values.next().ok_or_else(|| format!("the {} column ends before it", self.name))
    }

    /// Checks that every value was read.
    fn end(self) -> Result<(), String> {
        match self.values.len() {
            0 => Ok(()),
            left => Err(format!("the {} column has {left} values no event reads", self.name)),
        }
    }
}

/// The activity columns, read.
struct ActivityColumns {
    flags: Column<u8>,
    domains: Column<u8>,
    kinds: Column<u64>,
    iterations: Column<u64>,
    scopes: Column<u64>,
    names: Column<u64>,
    keys: std::vec::IntoIter<u8>,
    references: Column<u64>,
    cuda_correlation_ids: Column<u64>,
    stream_ids: Column<u64>,
    span_starts: Column<u64>,
    span_lengths: Column<u64>,
    listed: Column<u64>,
}

impl ActivityColumns {
    fn new(wire: WireActivities) -> Self {
        Self {
            flags: Column::new("activity flags", wire.flags),
            domains: Column::new("activity domain", wire.domains),
            kinds: Column::new("activity kind", wire.kinds),
            iterations: Column::new("activity iteration", wire.iterations),
            scopes: Column::new("activity scope", wire.scopes),
            names: Column::new("activity name", wire.names),
            keys: wire.keys.into_iter(),
            references: Column::new("activity reference", wire.references),
            cuda_correlation_ids: Column::new("CUDA correlation ID", wire.cuda_correlation_ids),
            stream_ids: Column::new("stream ID", wire.stream_ids),
            span_starts: Column::new("span start", wire.span_starts),
            span_lengths: Column::new("span length", wire.span_lengths),
            listed: Column::new("listed intervals", wire.listed),
        }
    }

    fn end(self) -> Result<(), String> {
        self.flags.end()?;
        self.domains.end()?;
        self.kinds.end()?;
        self.iterations.end()?;
        self.scopes.end()?;
        self.names.end()?;
        if self.keys.len() != 0 {
            return Err(format!("the activity key column has {} bytes no event reads", self.keys.len()));
        }
        self.references.end()?;
        self.cuda_correlation_ids.end()?;
        self.stream_ids.end()?;
        self.span_starts.end()?;
        self.span_lengths.end()?;
        self.listed.end()
    }
}

/// Reads a wire batch back, checking each part against the rest.
struct Reader {
    /// Each string of the table, in the batch's text.
    strings: Vec<Str>,
    refs: Vec<RefStr>,
    intervals: usize,
}

impl Reader {
    fn str(&self, index: u64) -> Result<Str, String> {
        usize::try_from(index)
            .ok()
            .and_then(|index| self.strings.get(index).copied())
            .ok_or_else(|| format!("string {index} is not in the batch's {}", self.strings.len()))
    }

    fn reference(&self, index: u64) -> Result<RefStr, String> {
        usize::try_from(index)
            .ok()
            .and_then(|index| self.refs.get(index).copied())
            .ok_or_else(|| format!("reference {index} is not in the batch's {}", self.refs.len()))
    }

    fn optional(&self, value: Optional) -> Result<Option<RefStr>, String> {
        value.checked_sub(1).map(|index| self.reference(index)).transpose()
    }

    fn optional_str(&self, value: Optional) -> Result<Option<Str>, String> {
        value.checked_sub(1).map(|index| self.str(index)).transpose()
    }

    fn other(&self, other: WireOther) -> Result<PreparedBody, String> {
        let span = |start: Option<u64>, end: Option<u64>| {
            Span::new(start, end).map_err(|_| "a span ends before it starts".to_owned())
        };
        Ok(match other {
            WireOther::Request { request, attempt } => {
                PreparedBody::Request { request: self.reference(request)?, attempt: self.optional(attempt)? }
            }
            WireOther::Iteration { iteration, start_ns, end_ns } => PreparedBody::Iteration {
                iteration: self.reference(iteration)?,
                span: span(start_ns, end_ns)?,
            },
            WireOther::Stage { stage, request, iteration } => PreparedBody::Stage {
                stage: self.reference(stage)?,
                request: self.optional(request)?,
                iteration: self.optional(iteration)?,
            },
            WireOther::Membership { request, attempt, iteration, role } => PreparedBody::Membership {
                request: self.reference(request)?,
                attempt: self.optional(attempt)?,
                iteration: self.reference(iteration)?,
                role: self.str(role)?,
            },
            WireOther::Alignment { from, to, offset_ns, uncertainty_ns, start_ns, end_ns } => {
                PreparedBody::Alignment {
                    from: self.str(from)?,
                    to: self.str(to)?,
                    offset_ns,
                    uncertainty_ns,
                    validity: span(start_ns, end_ns)?,
                }
            }
        })
    }
}

impl TryFrom<WireBatch> for PreparedBatch {
    type Error = String;

    fn try_from(wire: WireBatch) -> Result<Self, String> {
        let mut batch = PreparedBatch::with_capacity(0);
        batch.labels = wire.labels;
        // Equal contexts are one context of the batch.
        let mut contexts = Vec::with_capacity(wire.contexts.len());
        let mut known: FastHashMap<Arc<CorrelationContext>, u32> = FastHashMap::default();
        for (number, members) in wire.contexts.into_iter().enumerate() {
            let fail = |rule: &str| format!("context {number}: {rule}");
            let text = |index: u64| {
                usize::try_from(index).ok().and_then(|index| wire.strings.get(index)).ok_or_else(|| {
                    fail(&format!("string {index} is not in the batch's {}", wire.strings.len()))
                })
            };
            let mut json = serde_json::Map::with_capacity(members.len());
            for (name, value) in members {
                let value = match value {
                    WireValue::Null => Value::Null,
                    WireValue::Text(index) => Value::from(text(index)?.as_str()),
                    WireValue::Count(count) => Value::from(count),
                };
                let name = text(name)?;
                if json.insert(name.clone(), value).is_some() {
                    return Err(fail(&format!("{name} is given twice")));
                }
            }
            let context = CorrelationContext::from_json(Value::Object(json))
                .map_err(|error| fail(&error.to_string()))?;
            let context = Arc::new(context);
            let index = match known.get(&context) {
                Some(&index) => index,
                None => {
                    let index = batch.push_context(Arc::clone(&context));
                    known.insert(context, index);
                    index
                }
            };
            contexts.push(index);
        }
        if wire.interval_starts.len() != wire.interval_lengths.len() {
            return Err("the interval columns differ in length".into());
        }
        let mut last = 0;
        for (number, (&start, &length)) in wire.interval_starts.iter().zip(&wire.interval_lengths).enumerate()
        {
            let start = undelta(&mut last, start);
            let interval = start
                .checked_add(length)
                .and_then(|end| Interval::new(start, end))
                .ok_or_else(|| format!("interval {number}: it ends past the largest time"))?;
            batch.intervals.push(interval);
        }
        batch.text.reserve(wire.strings.iter().map(String::len).sum());
        let strings: Vec<Str> = wire.strings.iter().map(|text| batch.push_text(text)).collect();
        let mut refs = Vec::with_capacity(wire.refs.len());
        for (number, &(producer, id)) in wire.refs.iter().enumerate() {
            let part = |index: u64| {
                usize::try_from(index)
                    .ok()
                    .and_then(|index| strings.get(index).copied())
                    .filter(|part| part.len > 0)
                    .ok_or_else(|| {
                        format!("reference {number}: a part is not a non-empty string of the batch")
                    })
            };
            refs.push(RefStr { producer: part(producer)?, id: part(id)? });
        }
        let reader = Reader { strings, refs, intervals: batch.intervals.len() };
        let events = wire.events;
        let count = events.tags.len();
        if count > MAX_EVENTS {
            return Err(format!("{count} events, over the {MAX_EVENTS} a batch may hold"));
        }
        let lengths =
            [events.records.len(), events.contexts.len(), events.id_stems.len(), events.id_numbers.len()];
        if lengths.iter().any(|&length| length != count) || events.fingerprints.len() != count * 8 {
            return Err(format!("the event columns differ in length from the {count} events"));
        }
        batch.events.reserve_exact(count);
        let mut records = events.records.into_iter();
        let mut wire_contexts = events.contexts.into_iter();
        let mut fingerprints = events.fingerprints.chunks_exact(8);
        let mut stems = events.id_stems.into_iter();
        let mut numbers = events.id_numbers.into_iter();
        let mut others = Column::new("other events", events.others);
        let mut activities = ActivityColumns::new(events.activities);
        // Each context's producer, in the text once it is needed.
        let mut producers: Vec<Option<Str>> = vec![None; batch.contexts.len()];
        let mut lasts = Lasts::default();
        for (number, tag) in events.tags.into_iter().enumerate() {
            let fail = |rule: String| format!("prepared event {number}: {rule}");
            // The columns were checked to hold `count` values each.
            let (Some(record), Some(context), Some(fingerprint), Some(stem), Some(trailing)) =
                (records.next(), wire_contexts.next(), fingerprints.next(), stems.next(), numbers.next())
            else {
                unreachable!("the event columns hold one value per event")
            };
            let record = usize::try_from(undelta(&mut lasts.record, record))
                .map_err(|_| fail("its position is too large".into()))?;
            let context = *usize::try_from(context)
                .ok()
                .and_then(|context| contexts.get(context))
                .ok_or_else(|| fail("its context is not in the batch".into()))?;
            let mut bytes = [0; 8];
            bytes.copy_from_slice(fingerprint);
            let stem = reader.str(stem).map_err(fail)?;
            let event_id = match trailing.checked_sub(1) {
                None => stem,
                Some(difference) => {
                    if stem.len > MAX_STEM {
                        return Err(fail(format!("an ID's stem is over {MAX_STEM} bytes")));
                    }
                    let trailing = lasts
                        .number
                        .checked_add(unzigzag(difference))
                        .filter(|trailing| (0..NUMBER_LIMIT as i64).contains(trailing))
                        .ok_or_else(|| fail("its ID's number is out of range".into()))?;
                    lasts.number = trailing;
                    let start = batch.text.len();
                    batch.text.extend_from_within(stem.start..stem.start + stem.len);
                    batch.text.push_str(Decimal::new(trailing as u64).as_str());
                    Str { start, len: batch.text.len() - start }
                }
            };
            let prepared = &batch.contexts[context as usize];
            let key = prepared.event_key(batch.get(event_id));
            let body = match tag {
                TAG_UNTABLED => PreparedBody::Untabled,
                TAG_OTHER => reader.other(others.next().map_err(fail)?).map_err(fail)?,
                TAG_ACTIVITY => {
                    let producer = match producers[context as usize] {
                        Some(producer) => producer,
                        None => {
                            let text = Arc::clone(&batch.contexts[context as usize].context);
                            let producer = batch.push_text(&text.producer_id);
                            producers[context as usize] = Some(producer);
                            producer
                        }
                    };
                    let activity =
                        read_activity(&reader, &mut activities, &mut lasts, &batch, producer, event_id)
                            .map_err(fail)?;
                    PreparedBody::Activity(activity)
                }
                other => return Err(fail(format!("unknown kind {other}"))),
            };
            batch.events.push(PreparedEvent {
                record,
                context,
                key,
                fingerprint: u64::from_le_bytes(bytes),
                event_id,
                body,
            });
        }
        others.end()?;
        activities.end()?;
        Ok(batch)
    }
}

fn read_activity(
    reader: &Reader,
    columns: &mut ActivityColumns,
    lasts: &mut Lasts,
    batch: &PreparedBatch,
    producer: Str,
    event_id: Str,
) -> Result<PreparedActivity, String> {
    let flags = columns.flags.next()?;
    if flags & !FLAGS_KNOWN != 0 {
        return Err(format!("unknown activity flags {flags:#x}"));
    }
    let domain = columns.domains.next()?;
    let domain = *ActivityDomain::ALL
        .get(usize::from(domain))
        .ok_or_else(|| format!("activity domain {domain} is not one of {}", ActivityDomain::ALL.len()))?;
    let key_of = |reference: RefStr| {
        RefView::new(batch.get(reference.producer), batch.get(reference.id))
            .map(reference_key)
            .ok_or_else(|| "an activity reference has an empty producer_id or id".to_owned())
    };
    let own = RefStr { producer, id: event_id };
    let (reference, key) = match (flags >> REF_SHIFT) & 0b11 {
        REF_DERIVED => (None, key_of(own)?),
        REF_KEY_STORED => {
            let mut bytes = [0; 16];
            for byte in &mut bytes {
                *byte = columns.keys.next().ok_or("the activity key column ends before it")?;
            }
            (None, u128::from_le_bytes(bytes))
        }
        REF_EVENT => (Some(own), key_of(own)?),
        _ => {
            let reference = reader.reference(columns.references.next()?)?;
            (Some(reference), key_of(reference)?)
        }
    };
    let busy = match (flags >> BUSY_SHIFT) & 0b11 {
        BUSY_UNKNOWN => Busy::Unknown,
        BUSY_SPAN => {
            let start = undelta(&mut lasts.span_end, columns.span_starts.next()?);
            let end = start
                .checked_add(columns.span_lengths.next()?)
                .ok_or("an activity's span ends past the largest time")?;
            lasts.span_end = end;
            Busy::Span(start, end)
        }
        BUSY_LISTED => {
            let (first, count) = (columns.listed.next()?, columns.listed.next()?);
            let fits = first.checked_add(count).is_some_and(|end| end <= reader.intervals as u64);
            if !fits {
                return Err("an activity's intervals lie outside the batch's intervals".into());
            }
            Busy::Listed(first as usize, count as usize)
        }
        other => return Err(format!("unknown busy form {other}")),
    };
    let cuda_correlation_id = (flags & HAS_CUDA_CORRELATION != 0)
        .then(|| {
            columns.cuda_correlation_ids.next().map(|value| undelta(&mut lasts.cuda_correlation_id, value))
        })
        .transpose()?;
    let stream_id = (flags & HAS_STREAM != 0).then(|| columns.stream_ids.next()).transpose()?;
    Ok(PreparedActivity {
        key,
        reference,
        kind: reader.str(columns.kinds.next()?)?,
        domain,
        iteration: reader.optional(columns.iterations.next()?)?,
        scope: reader.optional(columns.scopes.next()?)?,
        name: reader.optional_str(columns.names.next()?)?,
        cuda_correlation_id,
        stream_id,
        busy,
    })
}

impl<'de> Deserialize<'de> for PreparedBatch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireBatch::deserialize(deserializer)?;
        PreparedBatch::try_from(wire).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;
    use serde_json::Value;
    use tally_core::arbitrary::{arb_context, arb_event, arb_event_in, full_record};
    use tally_core::{
        CorrelationEvent, EntityRef, EventBody, EventType, NonEmptyString, parse_inference_record,
    };

    use crate::{AsCorrelationEvent, PreparedBatch, StreamingResolver};

    /// `event` under another ID; an activity's reference made (producer,
    /// ID) when `own_reference`, as a trace's are.
    fn renamed(event: &CorrelationEvent, id: &str, own_reference: bool) -> CorrelationEvent {
        let id = NonEmptyString::new(id).expect("non-empty");
        let mut body = event.body().clone();
        if let (EventBody::ActivityRef(activity), true) = (&mut body, own_reference) {
            activity.activity_ref = EntityRef::from_parts(event.context().producer_id.clone(), id.clone());
        }
        CorrelationEvent::new(Arc::clone(event.context_arc()), id, event.metadata().clone(), body)
            .expect("the same body, valid")
    }

    fn batch_of(events: &[CorrelationEvent], labels: bool) -> PreparedBatch {
        let mut batch =
            if labels { PreparedBatch::default() } else { PreparedBatch::default().without_labels() };
        for (number, event) in events.iter().enumerate() {
            batch.push(number * 3 + 1, &event.view());
        }
        batch
    }

    /// What the resolver makes of a batch, as text.
    fn resolved(batch: &PreparedBatch) -> String {
        let resolver = StreamingResolver::new();
        let mut resolver = if batch.keeps_labels() { resolver.keeping_labels() } else { resolver };
        let run = resolver.push_prepared(batch).and_then(|()| resolver.finish());
        format!("{run:?}")
    }

    fn round_trip(batch: &PreparedBatch) -> Result<PreparedBatch, String> {
        let value = serde_json::to_value(batch).map_err(|error| error.to_string())?;
        serde_json::from_value(value).map_err(|error| error.to_string())
    }

    /// A batch of each kind of event, activities with their reference the
    /// event's own (listed and not), another, and numbered and plain IDs.
    fn sample() -> PreparedBatch {
        let mut events = Vec::new();
        for (salt, event_type) in (0..).zip(EventType::ALL) {
            let record = Value::Object(full_record(*event_type, salt));
            let event = parse_inference_record(record).expect("a valid record");
            let event = event.as_correlation_event().expect("a correlation event").clone();
            events.push(renamed(&event, &format!("trace/{}", 7 + salt), false));
            if *event_type == EventType::ActivityRef {
                // Linked activities are not listed by reference; unlinked
                // ones are.
                let mut unlinked = event.clone();
                if let EventBody::ActivityRef(activity) = unlinked.body() {
                    let mut activity = activity.clone();
                    activity.iteration_ref = None;
                    let (context, id) = (Arc::clone(event.context_arc()), event.event_id().clone());
                    let metadata = event.metadata().clone();
                    unlinked = CorrelationEvent::new(context, id, metadata, EventBody::ActivityRef(activity))
                        .expect("valid unlinked");
                }
                events.push(renamed(&event, "trace/0042", true));
                events.push(renamed(&unlinked, "trace/9", true));
                events.push(renamed(&event, "plain-id", true));
                events.push(renamed(&unlinked, "other-9", false));
            }
        }
        batch_of(&events, true)
    }

    #[test]
    fn a_batch_round_trips_with_every_key_computed_again() {
        let batch = sample();
        let back = round_trip(&batch).expect("round trips");
        assert_eq!(back.identities().collect::<Vec<_>>(), batch.identities().collect::<Vec<_>>());
        assert_eq!(resolved(&back), resolved(&batch));
        let ids: Vec<&str> = back.events.iter().map(|event| back.get(event.event_id)).collect();
        assert!(ids.contains(&"trace/0042") && ids.contains(&"plain-id"), "{ids:?}");
        // Each form of reference and key is met; a key travels only where
        // no reference in the batch gives it (the linked activity whose
        // reference is not its own).
        let value = serde_json::to_value(&batch).expect("encodes");
        let forms: Vec<u64> = value["events"]["activities"]["flags"]
            .as_array()
            .expect("flags")
            .iter()
            .map(|flags| flags.as_u64().expect("a number") >> super::REF_SHIFT)
            .collect();
        assert_eq!(forms, [1, 0, 2, 0, 3]);
        assert_eq!(value["events"]["activities"]["keys"].as_array().map(Vec::len), Some(16));
    }

    /// A key the batch's content does not give cannot be written.
    #[test]
    fn a_key_that_would_be_computed_otherwise_is_refused() {
        let mut batch = sample();
        batch.events[0].key ^= 1;
        let refused = serde_json::to_value(&batch).expect_err("refused");
        assert!(refused.to_string().contains("its key is not that of its context and ID"), "{refused}");
        let mut batch = sample();
        let listed = batch
            .events
            .iter()
            .position(|event| matches!(event.body, super::PreparedBody::Activity(activity) if activity.reference.is_some()))
            .expect("an activity listed by reference");
        if let super::PreparedBody::Activity(activity) = &mut batch.events[listed].body {
            activity.key ^= 1;
        }
        let refused = serde_json::to_value(&batch).expect_err("refused");
        assert!(refused.to_string().contains("activity key is not that of its reference"), "{refused}");
    }

    /// An event ID changed on the wire is read with the key of the new ID:
    /// a partial cannot pair an ID with another's key.
    #[test]
    fn keys_follow_the_ids_read() {
        let batch = sample();
        let mut value = serde_json::to_value(&batch).expect("encodes");
        let strings = value["strings"].as_array_mut().expect("strings");
        let stem = strings.iter().position(|text| text == "trace/").expect("the stem");
        strings[stem] = Value::from("other/");
        let back: PreparedBatch = serde_json::from_value(value).expect("decodes");
        for (event, original) in back.events.iter().zip(&batch.events) {
            let id = back.get(event.event_id);
            assert_eq!(event.key, back.contexts[event.context as usize].event_key(id));
            if id.starts_with("other/") {
                assert_ne!(event.key, original.key);
            }
        }
    }

    /// Damaged columns are refused with the rule they break, never a panic.
    #[test]
    fn damaged_columns_are_refused() {
        let value = serde_json::to_value(sample()).expect("encodes");
        let refused = |path: &[&str], change: &dyn Fn(&mut Value)| -> String {
            let mut damaged = value.clone();
            let mut at = &mut damaged;
            for part in path {
                at = &mut at[*part];
            }
            change(at);
            match serde_json::from_value::<PreparedBatch>(damaged) {
                Ok(_) => panic!("{path:?} accepted"),
                Err(error) => error.to_string(),
            }
        };
        let set = |index: usize, to: Value| move |column: &mut Value| column[index] = to.clone();
        let pop = |column: &mut Value| drop(column.as_array_mut().expect("a column").pop());
        let push = |column: &mut Value| column.as_array_mut().expect("a column").push(Value::from(0));
        assert!(refused(&["events", "id_stems"], &set(0, Value::from(9999))).contains("string 9999"));
        assert!(refused(&["events", "records"], &pop).contains("differ in length"));
        assert!(refused(&["events", "fingerprints"], &push).contains("differ in length"));
        assert!(refused(&["events", "tags"], &set(0, Value::from(7))).contains("unknown kind 7"));
        assert!(refused(&["events", "contexts"], &set(0, Value::from(99))).contains("context is not in"));
        assert!(refused(&["events", "id_numbers"], &set(0, Value::from(u64::MAX))).contains("out of range"));
        let activities = ["events", "activities"];
        let column = |name: &'static str| [activities[0], activities[1], name];
        assert!(refused(&column("flags"), &set(0, Value::from(0x40))).contains("unknown activity flags"));
        assert!(refused(&column("flags"), &set(0, Value::from(0x0c))).contains("unknown busy form"));
        assert!(refused(&column("domains"), &set(0, Value::from(4))).contains("activity domain 4"));
        assert!(refused(&column("kinds"), &pop).contains("activity kind column ends"));
        assert!(refused(&column("names"), &push).contains("values no event reads"));
        assert!(refused(&column("span_lengths"), &set(0, Value::from(u64::MAX))).contains("largest time"));
        assert!(refused(&["refs"], &set(0, serde_json::json!([0, 9999]))).contains("reference 0"));
        assert!(refused(&["interval_starts"], &push).contains("interval columns differ"));
        let member = |change: &dyn Fn(&mut Value)| {
            refused(&["contexts"], &|contexts: &mut Value| change(&mut contexts[0][0]))
        };
        assert!(member(&|member| member[0] = Value::from(9999)).contains("context 0: string 9999"));
        let twice = member(&|member| *member = value["contexts"][0][1].clone());
        assert!(twice.contains("is given twice"), "{twice}");
        let wrong = member(&|member| member[1] = serde_json::json!({"Count": 1}));
        assert!(wrong.starts_with("context 0:"), "{wrong}");
        assert!(refused(&["events", "others"], &pop).contains("other events column ends"));
        // An empty stem string under a numbered ID is fine; an empty ID
        // cannot make an activity's key.
        let empty = refused(&["strings"], &|strings: &mut Value| {
            for text in strings.as_array_mut().expect("strings") {
                if text == "plain-id" {
                    *text = Value::from("");
                }
            }
        });
        assert!(empty.contains("empty producer_id or id"), "{empty}");
    }

    /// A stem too long to spell for every event that names it is refused.
    #[test]
    fn long_stems_are_kept_whole() {
        let long = format!("{}/1", "x".repeat(super::MAX_STEM + 1));
        assert_eq!(super::split_number(&long), (long.as_str(), None));
        assert_eq!(super::split_number("a/007"), ("a/00", Some(7)));
        assert_eq!(super::split_number("a/000"), ("a/00", Some(0)));
        assert_eq!(super::split_number("a/1234567890123456789"), ("a/1234567890123456789", None));
        let mut value = serde_json::to_value(sample()).expect("encodes");
        let strings = value["strings"].as_array_mut().expect("strings");
        let stem = strings.iter().position(|text| text == "trace/").expect("the stem");
        strings[stem] = Value::from("y".repeat(super::MAX_STEM + 1));
        let refused = serde_json::from_value::<PreparedBatch>(value).expect_err("refused").to_string();
        assert!(refused.contains("stem is over"), "{refused}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any events, some renamed as a trace names them, round-trip to a
        /// batch with the same identities that resolves the same.
        #[test]
        fn any_batch_round_trips(
            events in (arb_context(), proptest::collection::vec((0u8..4, 0u64..3000, any::<bool>()), 1..12))
                .prop_flat_map(|(context, shapes)| {
                    let context = Arc::new(context);
                    let drawn: Vec<_> = shapes
                        .into_iter()
                        .map(|shape| {
                            let event = prop_oneof![3 => arb_event_in(Arc::clone(&context)), 1 => arb_event()];
                            (event, Just(shape))
                        })
                        .collect();
                    drawn
                }),
            labels in any::<bool>(),
        ) {
            let events: Vec<CorrelationEvent> = events
                .iter()
                .map(|(event, (shape, number, own))| match shape {
                    0 => event.clone(),
                    1 => renamed(event, &format!("trace/{number}"), *own),
                    2 => renamed(event, &format!("k{number:06}"), *own),
                    // A redelivery of the last event under this number.
                    _ => renamed(event, &format!("trace/{}", number % 4), *own),
                })
                .collect();
            let batch = batch_of(&events, labels);
            let back = round_trip(&batch).map_err(TestCaseError::fail)?;
            prop_assert_eq!(back.identities().collect::<Vec<_>>(), batch.identities().collect::<Vec<_>>());
            prop_assert_eq!(resolved(&back), resolved(&batch));
            let again = round_trip(&back).map_err(TestCaseError::fail)?;
            prop_assert_eq!(serde_json::to_value(&again).ok(), serde_json::to_value(&back).ok());
        }
    }
}
