#![doc = include_str!("../README.md")]
//!
//! Clock alignment with uncertainty, as stormlog 0.4.3's
//! `correlation_accounting` defines it, and beyond it: chains of alignments
//! and whole spans.
//!
//! An `infer.clock_alignment` event says `to = from + offset_ns`, within
//! `uncertainty_ns`, while a timestamp on the `from` clock lies in its
//! validity window (`valid_from_ns` inclusive, `valid_to_ns` exclusive, open
//! where absent). The true offset lies in `[low, high]`:
//! `offset ± uncertainty`, except for a legacy execution-import alignment
//! (context source `stormlog.infer.import_execution`, no `alignment_basis`
//! in its metadata and a non-negative integer `gap_ns` there), whose offset is
//! the bracket's lower end: `[offset, offset + gap_ns]`.
//!
//! [`align_timestamp`] is stormlog's function: exactly one alignment must
//! cover the timestamp, and the result is the middle of the translated
//! bracket, `ts + high − half` with uncertainty `half = (high − low + 1) div 2`.
//!
//! ```
//! use serde_json::json;
//! use tally_core::{parse_inference_record, InferenceRecord};
//! use tally_clock::align_timestamp;
//!
//! let alignment = json!({"schema_version": 2, "event_type": "infer.clock_alignment",
//!     "event_id": "a1", "context": {"run_id": "r", "session_id": "s", "producer_id": "p",
//!     "source": "doc", "clock_domain": "host", "clock_kind": "monotonic",
//!     "collection_mode": "active", "provenance": "observed"},
//!     "from_clock_domain": "host", "to_clock_domain": "gpu0",
//!     "offset_ns": 1000, "uncertainty_ns": 5});
//! let InferenceRecord::Event(event) = parse_inference_record(alignment).unwrap() else { panic!() };
//! let aligned = align_timestamp(100, "host", "gpu0", [&event]).unwrap();
//! // The offset lies in [995, 1005]: the middle of [1095, 1105] is 1100 ± 5.
//! assert_eq!((aligned.value_ns, aligned.uncertainty_ns), (1100, 5));
//! ```
//!
//! # Beyond stormlog
//!
//! - [`align_timestamp_chained`] translates through intermediate domains
//!   (A→B→C) when no alignment covers A→B directly, along the path of least
//!   total uncertainty; uncertainties add along the path. Alignments are used
//!   in their stated direction only (a B→A alignment is not inverted, since
//!   its validity window is on B's clock), and a hop where several alignments
//!   cover the timestamp is ambiguous and not taken. The path is found with
//!   Dijkstra's algorithm over domains: each hop is evaluated at the
//!   timestamp the best path to its start domain reaches.
//! - [`align_span`] translates both ends of a span and keeps their bounds;
//!   when one chain of alignments covers both ends the offset cancels and the
//!   duration is exact.
//! - [`NearestAligner`] is the overlap breakdown's rule over plain
//!   [`DirectAlignment`] figures: the least uncertain direct alignment that
//!   covers a timestamp, in either direction (module `nearest`).
//!
//! # Differences from stormlog
//!
//! Timestamps are `i128` (Python integers are unbounded); a `gap_ns` beyond
//! `u64::MAX` is read by serde_json as a float, so tally treats such an
//! alignment as an ordinary one where stormlog would not.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde_json::Value;
use tally_core::{ClockAlignment, CorrelationEvent, EventBody};

mod nearest;

use nearest::window_covers;
pub use nearest::{DirectAlignment, NearestAligner};

/// The context `source` of clock alignments that `infer import-execution`
/// wrote before it recorded an `alignment_basis`.
pub const LEGACY_EXECUTION_IMPORT_SOURCE: &str = "stormlog.infer.import_execution";

/// Why a timestamp or span could not be translated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlignError {
    /// stormlog accepts only non-negative timestamps.
    #[error("timestamp_ns must be non-negative")]
    NegativeTimestamp,
    /// No alignment (nor, for the chained functions, any chain) covers it.
    #[error("no valid clock alignment from {from} to {to} covers {timestamp_ns}")]
    NoAlignment {
        /// Source domain.
        from: String,
        /// Target domain.
        to: String,
        /// The timestamp, on the source clock.
        timestamp_ns: i128,
    },
    /// Several direct alignments cover it, so the offset is ambiguous.
    #[error("multiple ambiguous alignments: {count} from {from} to {to} cover {timestamp_ns}")]
    Ambiguous {
        /// Source domain.
        from: String,
        /// Target domain.
        to: String,
        /// The timestamp, on the source clock.
        timestamp_ns: i128,
        /// How many cover it.
        count: usize,
    },
    /// A span whose end comes before its start.
    #[error("span end {end_ns} is before its start {start_ns}")]
    InvertedSpan {
        /// Start.
        start_ns: i128,
        /// End.
        end_ns: i128,
    },
}

impl AlignError {
    /// stormlog's message for the same failure: it tells a missing
    /// alignment from an ambiguous one only by `covering_alignments`' count,
    /// so both read alike.
    pub fn stormlog_message(&self) -> &'static str {
        match self {
            AlignError::NegativeTimestamp => "timestamp_ns must be non-negative",
            AlignError::NoAlignment { .. } | AlignError::Ambiguous { .. } => {
                "no valid clock alignment or multiple ambiguous alignments"
            }
            AlignError::InvertedSpan { .. } => "span end must not be before its start",
        }
    }
}

/// A clock-alignment event, seen through its typed body.
#[derive(Debug, Clone, Copy)]
pub struct Alignment<'a> {
    event: &'a CorrelationEvent,
    body: &'a ClockAlignment,
}

impl<'a> Alignment<'a> {
    /// `None` when the event is not an `infer.clock_alignment`.
    pub fn from_event(event: &'a CorrelationEvent) -> Option<Self> {
        match event.body() {
            EventBody::ClockAlignment(body) => Some(Self { event, body }),
            _ => None,
        }
    }

    /// The event.
    pub fn event(&self) -> &'a CorrelationEvent {
        self.event
    }

    /// Its body.
    pub fn body(&self) -> &'a ClockAlignment {
        self.body
    }

    /// Whether it is a legacy execution-import alignment, whose offset is
    /// the lower end of a bracket `gap_ns` wide; returns that gap.
    pub fn legacy_gap_ns(&self) -> Option<u64> {
        let metadata = self.event.metadata();
        if self.event.context().source.as_str() != LEGACY_EXECUTION_IMPORT_SOURCE
            || metadata.contains_key("alignment_basis")
        {
            return None;
        }
        // Python's `isinstance(gap, int) and not isinstance(gap, bool) and
        // gap >= 0`: JSON booleans and floats (even 5.0) do not qualify.
        match metadata.get("gap_ns") {
            Some(Value::Number(number)) => number.as_u64(),
            _ => None,
        }
    }

    /// The interval `[low, high]` the true offset lies in.
    pub fn offset_bounds(&self) -> (i128, i128) {
        let offset = i128::from(self.body.offset_ns);
        match self.legacy_gap_ns() {
            Some(gap) => (offset, offset + i128::from(gap)),
            None => {
                let uncertainty = i128::from(self.body.uncertainty_ns);
                (offset - uncertainty, offset + uncertainty)
            }
        }
    }

    /// Whether its validity window covers `timestamp_ns` (on the `from`
    /// clock): `valid_from_ns` inclusive, `valid_to_ns` exclusive.
    pub fn covers(&self, timestamp_ns: i128) -> bool {
        let validity = &self.body.validity;
        window_covers(validity.start_ns(), validity.end_ns(), timestamp_ns)
    }

    /// Whether it translates `from` to `to`.
    pub fn connects(&self, from: &str, to: &str) -> bool {
        self.body.from_clock_domain.as_str() == from && self.body.to_clock_domain.as_str() == to
    }

    /// One hop: `ts + high − half`, within `half`.
    fn translate(&self, timestamp_ns: i128) -> (i128, u128) {
        let (low, high) = self.offset_bounds();
        // high >= low: uncertainty and gap are non-negative.
        let half = (high - low + 1) / 2;
        (timestamp_ns + high - half, half.unsigned_abs())
    }
}

/// stormlog's `alignment_offset_bounds`; `None` for an event that is not a
/// clock alignment.
pub fn alignment_offset_bounds(event: &CorrelationEvent) -> Option<(i128, i128)> {
    Alignment::from_event(event).map(|alignment| alignment.offset_bounds())
}

/// The alignments from `from` to `to` whose validity window covers
/// `timestamp_ns`, in input order; events of other types are skipped.
/// [`align_timestamp`] needs exactly one, and the count tells a missing
/// alignment from an ambiguous one.
pub fn covering_alignments<'a>(
    timestamp_ns: i128,
    from: &str,
    to: &str,
    alignments: impl IntoIterator<Item = &'a CorrelationEvent>,
) -> Vec<&'a CorrelationEvent> {
    covering(timestamp_ns, from, to, alignments.into_iter().filter_map(Alignment::from_event))
        .map(|alignment| alignment.event)
        .collect()
}

/// The alignments from `from` to `to` whose window covers `timestamp_ns`.
fn covering<'a>(
    timestamp_ns: i128,
    from: &str,
    to: &str,
    alignments: impl IntoIterator<Item = Alignment<'a>>,
) -> impl Iterator<Item = Alignment<'a>> {
    alignments
        .into_iter()
        .filter(move |alignment| alignment.connects(from, to) && alignment.covers(timestamp_ns))
}

/// stormlog's rule before any chaining, shared by [`align_timestamp`] and
/// [`align_timestamp_chained`]: the identity on the same domain, else the
/// one alignment covering the timestamp (returned beside the result);
/// `Ok(None)` when none covers it, an error when several do.
fn align_direct<'a, 's>(
    timestamp_ns: i128,
    from: &str,
    to: &'s str,
    alignments: impl IntoIterator<Item = Alignment<'a>>,
) -> Result<Option<(AlignedTimestamp<'s>, Option<&'a CorrelationEvent>)>, AlignError> {
    if timestamp_ns < 0 {
        return Err(AlignError::NegativeTimestamp);
    }
    if from == to {
        return Ok(Some((
            AlignedTimestamp { value_ns: timestamp_ns, uncertainty_ns: 0, clock_domain: to },
            None,
        )));
    }
    let matches: Vec<Alignment<'a>> = covering(timestamp_ns, from, to, alignments).collect();
    match matches.as_slice() {
        [only] => {
            let (value_ns, uncertainty_ns) = only.translate(timestamp_ns);
            Ok(Some((AlignedTimestamp { value_ns, uncertainty_ns, clock_domain: to }, Some(only.event))))
        }
        [] => Ok(None),
        several => Err(covering_error(from, to, timestamp_ns, several.len())),
    }
}

/// A timestamp translated into another clock domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlignedTimestamp<'s> {
    /// The middle of the interval the true time lies in.
    pub value_ns: i128,
    /// Half the width of that interval.
    pub uncertainty_ns: u128,
    /// The domain it is on.
    pub clock_domain: &'s str,
}

impl AlignedTimestamp<'_> {
    /// The earliest the true time can be.
    pub fn earliest_ns(&self) -> i128 {
        self.value_ns - self.uncertainty_ns as i128
    }

    /// The latest the true time can be.
    pub fn latest_ns(&self) -> i128 {
        self.value_ns + self.uncertainty_ns as i128
    }
}

/// One alignment query answered as the conformance corpus writes it (and
/// stormlog computes it): `{"covering", "value_ns", "uncertainty_ns",
/// "clock_domain"}`, or `{"covering", "error"}` with stormlog's message,
/// where `covering` is [`covering_alignments`]' count.
///
/// ```
/// let answer = tally_clock::query_answer(5, "host", "host", []);
/// assert_eq!(answer["value_ns"], 5);
/// assert_eq!(answer["covering"], 0);
/// ```
pub fn query_answer<'a>(
    timestamp_ns: i128,
    from: &str,
    to: &str,
    alignments: impl IntoIterator<Item = &'a CorrelationEvent> + Clone,
) -> Value {
    let covering = covering_alignments(timestamp_ns, from, to, alignments.clone()).len();
    match align_timestamp(timestamp_ns, from, to, alignments) {
        Ok(aligned) => serde_json::json!({"covering": covering, "value_ns": json_integer(aligned.value_ns),
            "uncertainty_ns": json_integer(i128::try_from(aligned.uncertainty_ns).unwrap_or(i128::MAX)), "clock_domain": aligned.clock_domain}),
        Err(error) => serde_json::json!({"covering": covering, "error": error.stormlog_message()}),
    }
}

/// A wide integer as JSON: a number when it fits 64 bits (always, for
/// stormlog's timestamps and offsets), else its decimal text.
fn json_integer(value: i128) -> Value {
    if let Ok(small) = i64::try_from(value) {
        return Value::from(small);
    }
    u64::try_from(value).map(Value::from).unwrap_or_else(|_| Value::String(value.to_string()))
}

/// stormlog's `align_timestamp`: the same domain is the identity with zero
/// uncertainty; otherwise exactly one alignment must cover the timestamp.
pub fn align_timestamp<'a, 's>(
    timestamp_ns: i128,
    from: &str,
    to: &'s str,
    alignments: impl IntoIterator<Item = &'a CorrelationEvent>,
) -> Result<AlignedTimestamp<'s>, AlignError> {
    match align_direct(timestamp_ns, from, to, alignments.into_iter().filter_map(Alignment::from_event))? {
        Some((aligned, _)) => Ok(aligned),
        None => Err(covering_error(from, to, timestamp_ns, 0)),
    }
}

fn covering_error(from: &str, to: &str, timestamp_ns: i128, count: usize) -> AlignError {
    let (from, to) = (from.to_owned(), to.to_owned());
    if count == 0 {
        AlignError::NoAlignment { from, to, timestamp_ns }
    } else {
        AlignError::Ambiguous { from, to, timestamp_ns, count }
    }
}

/// A timestamp translated through a chain of alignments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainedTimestamp<'a, 's> {
    /// The result; its uncertainty is the sum of the hops' uncertainties.
    pub aligned: AlignedTimestamp<'s>,
    /// The alignments used, in order; empty for the same domain.
    pub path: Vec<&'a CorrelationEvent>,
}

/// Like [`align_timestamp`], through intermediate domains when no alignment
/// covers `from → to` directly; see the crate docs.
///
/// A direct alignment, when exactly one covers the timestamp, is used as
/// stormlog would; several direct ones are ambiguous, as in stormlog.
pub fn align_timestamp_chained<'a, 's>(
    timestamp_ns: i128,
    from: &str,
    to: &'s str,
    alignments: impl IntoIterator<Item = &'a CorrelationEvent>,
) -> Result<ChainedTimestamp<'a, 's>, AlignError> {
    let alignments: Vec<Alignment<'a>> = alignments.into_iter().filter_map(Alignment::from_event).collect();
    chain(timestamp_ns, from, to, &alignments)
}

fn chain<'a, 's>(
    timestamp_ns: i128,
    from: &str,
    to: &'s str,
    alignments: &[Alignment<'a>],
) -> Result<ChainedTimestamp<'a, 's>, AlignError> {
    if let Some((aligned, via)) = align_direct(timestamp_ns, from, to, alignments.iter().copied())? {
        return Ok(ChainedTimestamp { aligned, path: via.into_iter().collect() });
    }
    let (value_ns, uncertainty_ns, path) = shortest_chain(timestamp_ns, from, to, alignments)
        .ok_or_else(|| covering_error(from, to, timestamp_ns, 0))?;
    Ok(ChainedTimestamp { aligned: AlignedTimestamp { value_ns, uncertainty_ns, clock_domain: to }, path })
}

/// Best known way to reach one domain.
struct Reached<'d> {
    uncertainty: u128,
    hops: usize,
    value: i128,
    /// The alignment taken into this domain and the domain it came from.
    via: Option<(usize, &'d str)>,
    settled: bool,
}

/// Dijkstra over domains, by (total uncertainty, hops, domain name), so the
/// result does not depend on the order of the alignments.
fn shortest_chain<'a>(
    timestamp_ns: i128,
    from: &str,
    to: &str,
    alignments: &[Alignment<'a>],
) -> Option<(i128, u128, Vec<&'a CorrelationEvent>)> {
    let mut reached: std::collections::HashMap<&str, Reached<'_>> = std::collections::HashMap::new();
    reached.insert(from, Reached { uncertainty: 0, hops: 0, value: timestamp_ns, via: None, settled: false });
    let mut queue = BinaryHeap::new();
    queue.push(Reverse((0u128, 0usize, from)));
    while let Some(Reverse((uncertainty, hops, domain))) = queue.pop() {
        let Some(state) = reached.get_mut(domain) else { continue };
        if state.settled || (state.uncertainty, state.hops) != (uncertainty, hops) {
            continue;
        }
        state.settled = true;
        let value = state.value;
        if domain == to {
            break;
        }
        if value < 0 {
            // Not a timestamp stormlog would translate further.
            continue;
        }
        // Group this domain's covering alignments by target; a target with
        // more than one is ambiguous and skipped.
        let mut hops_out: Vec<(&str, usize, usize)> = Vec::new();
        for (index, alignment) in alignments.iter().enumerate() {
            if alignment.body.from_clock_domain.as_str() != domain || !alignment.covers(value) {
                continue;
            }
            let target = alignment.body.to_clock_domain.as_str();
            match hops_out.iter_mut().find(|(name, _, _)| *name == target) {
                Some(entry) => entry.2 += 1,
                None => hops_out.push((target, index, 1)),
            }
        }
        for (target, index, count) in hops_out {
            if count != 1 {
                continue;
            }
            let (next_value, hop_uncertainty) = alignments[index].translate(value);
            let candidate = (uncertainty.saturating_add(hop_uncertainty), hops + 1);
            let better = reached
                .get(target)
                .is_none_or(|known| !known.settled && candidate < (known.uncertainty, known.hops));
            if better {
                reached.insert(
                    target,
                    Reached {
                        uncertainty: candidate.0,
                        hops: candidate.1,
                        value: next_value,
                        via: Some((index, domain)),
                        settled: false,
                    },
                );
                queue.push(Reverse((candidate.0, candidate.1, target)));
            }
        }
    }
    let end = reached.get(to).filter(|state| state.settled)?;
    let (value, uncertainty) = (end.value, end.uncertainty);
    let mut path = Vec::new();
    let mut cursor = to;
    while let Some((index, previous)) = reached.get(cursor).and_then(|state| state.via) {
        path.push(alignments[index].event);
        cursor = previous;
    }
    path.reverse();
    Some((value, uncertainty, path))
}

/// A span translated into another clock domain, each end with its own
/// alignment chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlignedSpan<'a, 's> {
    /// The start, translated.
    pub start: ChainedTimestamp<'a, 's>,
    /// The end, translated.
    pub end: ChainedTimestamp<'a, 's>,
    /// The span's length on its own clock.
    source_duration_ns: i128,
}

impl AlignedSpan<'_, '_> {
    /// The earliest the span can have started on the target clock.
    pub fn earliest_start_ns(&self) -> i128 {
        self.start.aligned.earliest_ns()
    }

    /// The latest the span can have ended on the target clock.
    pub fn latest_end_ns(&self) -> i128 {
        self.end.aligned.latest_ns()
    }

    /// The duration on the target clock and its uncertainty. When the same
    /// alignments translate both ends, the offset cancels: the duration is
    /// the source duration, exactly. Otherwise the ends' uncertainties add.
    pub fn duration_ns(&self) -> (i128, u128) {
        let same_path = self.start.path.len() == self.end.path.len()
            && self.start.path.iter().zip(&self.end.path).all(|(a, b)| std::ptr::eq(*a, *b));
        if same_path {
            (self.source_duration_ns, 0)
        } else {
            (
                self.end.aligned.value_ns - self.start.aligned.value_ns,
                self.start.aligned.uncertainty_ns.saturating_add(self.end.aligned.uncertainty_ns),
            )
        }
    }
}

/// Translates both ends of `[start_ns, end_ns]` with
/// [`align_timestamp_chained`].
pub fn align_span<'a, 's>(
    start_ns: i128,
    end_ns: i128,
    from: &str,
    to: &'s str,
    alignments: impl IntoIterator<Item = &'a CorrelationEvent>,
) -> Result<AlignedSpan<'a, 's>, AlignError> {
    if end_ns < start_ns {
        return Err(AlignError::InvertedSpan { start_ns, end_ns });
    }
    let alignments: Vec<Alignment<'a>> = alignments.into_iter().filter_map(Alignment::from_event).collect();
    let start = chain(start_ns, from, to, &alignments)?;
    let end = chain(end_ns, from, to, &alignments)?;
    Ok(AlignedSpan { start, end, source_duration_ns: end_ns - start_ns })
}
