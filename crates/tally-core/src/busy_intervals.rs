//! `metadata.intervals`: the busy time inside one activity's span.

use serde_json::Value;

use crate::fields::json_integer;
use crate::{Interval, Span, ValidationError};

const FIELD: &str = "metadata.intervals";

/// Parses `[[offset_ns, duration_ns], ...]` relative to the span's start into
/// absolute intervals: non-empty, each pair non-negative integers, sorted and
/// disjoint (touching is allowed), the last ending at or before the span's end.
pub(crate) fn parse_busy_intervals(raw: &Value, span: &Span) -> Result<Box<[Interval]>, ValidationError> {
    let Some((start, end)) = span.bounds() else {
        return Err(ValidationError::new(FIELD, "metadata.intervals needs start_ns and end_ns"));
    };
    let items = match raw {
        Value::Array(items) if !items.is_empty() => items,
        _ => {
            return Err(ValidationError::new(
                FIELD,
                "metadata.intervals must be a non-empty list of [offset_ns, duration_ns] pairs",
            ));
        }
    };
    // Each pair is checked as it is reached, so the first broken rule in
    // list order is the one reported.
    absolute(items.iter().map(interval_pair), items.len(), start, end)
}

/// `metadata.intervals` given as its `[offset_ns, duration_ns]` pairs (each
/// already two non-negative integers), for a reader that parsed them
/// itself; the same rules and errors as the JSON list. `start` and `end`
/// are the activity's span.
pub fn busy_intervals_from_pairs(
    pairs: &[(u64, u64)],
    start: u64,
    end: u64,
) -> Result<Box<[Interval]>, ValidationError> {
    if pairs.is_empty() {
        return Err(ValidationError::new(
            FIELD,
            "metadata.intervals must be a non-empty list of [offset_ns, duration_ns] pairs",
        ));
    }
    absolute(pairs.iter().copied().map(Ok), pairs.len(), start, end)
}

fn absolute(
    pairs: impl Iterator<Item = Result<(u64, u64), ValidationError>>,
    count: usize,
    start: u64,
    end: u64,
) -> Result<Box<[Interval]>, ValidationError> {
    let mut intervals = Vec::with_capacity(count);
    // Offsets are relative to `start`; u128 keeps any pair of u64 sums exact,
    // so an overflowing pair is reported as lying outside the span.
    let mut cursor: u128 = 0;
    let span_length = u128::from(end.saturating_sub(start));
    for pair in pairs {
        let (offset, duration) = pair?;
        if u128::from(offset) < cursor {
            return Err(ValidationError::new(FIELD, "metadata.intervals must be sorted and disjoint"));
        }
        cursor = u128::from(offset) + u128::from(duration);
        if cursor > span_length {
            return Err(ValidationError::new(FIELD, "metadata.intervals must lie inside start_ns..end_ns"));
        }
        // Both bounds are at most `end`, checked just above.
        let absolute_start = start + offset;
        let absolute_end = start + (offset + duration);
        intervals.extend(Interval::new(absolute_start, absolute_end));
    }
    Ok(intervals.into_boxed_slice())
}

fn interval_pair(item: &Value) -> Result<(u64, u64), ValidationError> {
    let bad = || {
        ValidationError::new(
            FIELD,
            "metadata.intervals entries must be [offset_ns, duration_ns] pairs of non-negative integers",
        )
    };
    let Value::Array(pair) = item else {
        return Err(bad());
    };
    let [offset, duration] = pair.as_slice() else {
        return Err(bad());
    };
    let non_negative = |value: &Value| json_integer(value).and_then(|integer| u64::try_from(integer).ok());
    match (non_negative(offset), non_negative(duration)) {
        (Some(offset), Some(duration)) => Ok((offset, duration)),
        _ => Err(bad()),
    }
}
