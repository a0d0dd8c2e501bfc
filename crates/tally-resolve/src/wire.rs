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

mod read;
#[cfg(test)]
mod tests;
mod write;
