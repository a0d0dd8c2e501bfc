//! A device clock's envelope binned into a bounded number of columns (a
//! timeline a reader can draw at pixel resolution), and its launch
//! latencies binned into a histogram: what `tally report` draws beside the
//! breakdown's figures. Both are read from the breakdown's own sweep and
//! latencies, so they agree with its figures: a column's time per
//! category or idle cause sums, over the columns, to the device's.

use serde::{Deserialize, Serialize};

use crate::category::Category;

/// What covered one column `[start_ns, end_ns)` of the envelope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineColumn {
    /// The column's first nanosecond.
    pub start_ns: u64,
    /// The nanosecond after its last.
    pub end_ns: u64,
    /// Time any work ran (the union).
    pub busy_ns: u64,
    /// Busy time per category, in [`Category::ALL`]'s order (they may
    /// overlap: each is its category's union).
    pub categories_ns: [u64; 4],
    /// Idle time per cause: launch queued, sync wait, unknown, host-bound
    /// (the causes of [`super::IdleBreakdown`], disjoint).
    pub idle_ns: [u64; 4],
}

/// Launch latencies of a power-of-two range `[low_ns, high_ns)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyBin {
    /// Smallest latency in the bin (`i64::MIN` for the bin of latencies
    /// below 1 ns, that is zero or negative).
    pub low_ns: i64,
    /// One past the largest.
    pub high_ns: i64,
    /// How many linked activities.
    pub count: u64,
}

/// The timeline and latency histogram of one device clock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceTimeline {
    /// The envelope's columns, in order; empty when nothing ran.
    pub columns: Vec<TimelineColumn>,
    /// The non-empty bins of the launch latencies, in order.
    pub latency_bins: Vec<LatencyBin>,
}

/// The index in [`TimelineColumn::idle_ns`] of each cause.
pub(super) const LAUNCH_QUEUED: usize = 0;
pub(super) const SYNC_WAIT: usize = 1;
pub(super) const UNKNOWN: usize = 2;
pub(super) const HOST_BOUND: usize = 3;

/// Columns being filled from a sweep's stretches.
pub(super) struct Binner {
    start: u64,
    length: u64,
    columns: Vec<TimelineColumn>,
}

impl Binner {
    /// `count` columns (at most one per nanosecond) over the envelope
    /// `[start, end)`.
    pub(super) fn new(envelope: Option<(u64, u64)>, count: u32) -> Self {
        let (start, end) = envelope.unwrap_or((0, 0));
        let length = end - start;
        let count = u64::from(count).min(length);
        let edge = |index: u64| start + Self::ceil_div(u128::from(index) * u128::from(length), count);
        let columns = (0..count)
            .map(|index| TimelineColumn {
                start_ns: edge(index),
                end_ns: edge(index + 1),
                ..Default::default()
            })
            .collect();
        Self { start, length, columns }
    }

    fn ceil_div(numerator: u128, denominator: u64) -> u64 {
        // numerator / denominator is at most `length`, a u64.
        numerator.div_ceil(u128::from(denominator.max(1))) as u64
    }

    /// Adds the stretch `[from, to)` of one label set to the columns it
    /// crosses, through `add`.
    pub(super) fn add(&mut self, from: u64, to: u64, mut add: impl FnMut(&mut TimelineColumn, u64)) {
        let count = self.columns.len() as u64;
        let (from, to) = (from.max(self.start), to.min(self.start + self.length));
        if from >= to || count == 0 {
            return;
        }
        // The column of instant t is floor((t - start) · count / length).
        let mut index =
            (u128::from(from - self.start) * u128::from(count) / u128::from(self.length)) as usize;
        let mut at = from;
        while at < to {
            let column = &mut self.columns[index];
            let edge = column.end_ns.min(to);
            add(column, edge - at);
            at = edge;
            index += 1;
        }
    }

    pub(super) fn finish(self) -> Vec<TimelineColumn> {
        self.columns
    }
}

/// Counts a stretch of label set `set` (the sweep's labels: the category
/// bits, and `idle` telling which idle cause, if any, holds) in its columns.
pub(super) fn count_stretch(
    binner: &mut Binner,
    from: u64,
    to: u64,
    set: u8,
    work: u8,
    cause: Option<usize>,
) {
    binner.add(from, to, |column, time| {
        if set & work != 0 {
            column.busy_ns += time;
            for (index, category) in Category::ALL.into_iter().enumerate() {
                if set & category.bit() != 0 {
                    column.categories_ns[index] += time;
                }
            }
        } else if let Some(cause) = cause {
            column.idle_ns[cause] += time;
        }
    });
}

/// The histogram of sorted latencies: one bin for those below 1 ns, then
/// one per power of two, `[2^k, 2^(k+1))`; empty bins left out.
pub(super) fn latency_bins(sorted: &[i64]) -> Vec<LatencyBin> {
    let mut bins: Vec<LatencyBin> = Vec::new();
    for &latency in sorted {
        let (low, high) = if latency < 1 {
            (i64::MIN, 1)
        } else {
            let power = 63 - latency.leading_zeros();
            let low = 1i64 << power;
            (low, low.checked_mul(2).unwrap_or(i64::MAX))
        };
        match bins.last_mut() {
            Some(bin) if bin.low_ns == low => bin.count += 1,
            _ => bins.push(LatencyBin { low_ns: low, high_ns: high, count: 1 }),
        }
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_tile_the_envelope_and_stretches_split_at_their_edges() {
        let mut binner = Binner::new(Some((100, 110)), 3);
        let edges: Vec<(u64, u64)> = binner.columns.iter().map(|c| (c.start_ns, c.end_ns)).collect();
        assert_eq!(edges, [(100, 104), (104, 107), (107, 110)]);
        binner.add(90, 108, |column, time| column.busy_ns += time);
        let busy: Vec<u64> = binner.finish().iter().map(|c| c.busy_ns).collect();
        assert_eq!(busy, [4, 3, 1]);
    }

    #[test]
    fn a_short_envelope_has_one_column_per_nanosecond() {
        assert_eq!(Binner::new(Some((5, 7)), 1000).finish().len(), 2);
        assert!(Binner::new(None, 1000).finish().is_empty());
    }

    #[test]
    fn latencies_fall_in_power_of_two_bins() {
        let bins = latency_bins(&[-3, 0, 1, 2, 3, 4, 1000]);
        let counts: Vec<(i64, i64, u64)> = bins.iter().map(|b| (b.low_ns, b.high_ns, b.count)).collect();
        assert_eq!(counts, [(i64::MIN, 1, 2), (1, 2, 1), (2, 4, 2), (4, 8, 1), (512, 1024, 1)]);
    }
}
