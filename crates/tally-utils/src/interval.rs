//! Interval arithmetic over half-open `[start, end)` pairs of integer
//! nanoseconds: sums, unions, merged lists, and the sweep that yields a
//! device's envelope, idle gaps and peak concurrency. The one implementation
//! the accounting (tally-gpu-time) and the trace import (tally-trace) share.
//!
//! # The rules, stated once
//!
//! - **Half-open.** `(start, end)` covers the instants `start..end`; two
//!   intervals that touch (`a.end == b.start`) share no instant, and a union
//!   or merge joins them into one.
//! - **Empty intervals cover no instant.** A pair with `end <= start` adds
//!   nothing to a sum, a union, an envelope, an idle gap or a concurrency
//!   count: [`summed_ns`], [`union_ns`], [`UnionSweep`] and [`Sweep`] skip it.
//!   [`merge_intervals`] is the one place an empty interval stays visible, as
//!   a zero-length entry when nothing else covers its instant, because the
//!   list it returns is written out as `metadata.intervals` and must equal
//!   stormlog's `merge_intervals` (which keeps such entries); its total
//!   length is the union's all the same.
//! - **Sums never wrap.** Summed time is a `u128`; a union of `u64` instants
//!   fits a `u64`.
//!
//! The property suite (`tests/interval.rs`) checks each rule against a
//! brute-force count of covered instants.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The sum of the intervals' lengths, overlaps counted as often as they
/// occur. A pair with `end < start` counts as empty.
///
/// ```
/// assert_eq!(tally_utils::interval::summed_ns(&[(0, 10), (5, 15)]), 20);
/// ```
pub fn summed_ns(intervals: &[(u64, u64)]) -> u128 {
    intervals.iter().map(|&(start, end)| u128::from(end.saturating_sub(start))).sum()
}

/// The length of the union of the intervals: the time at least one of them
/// covers. Sorts the slice by start in place (the only allocation-free way
/// to sweep); touching intervals merge. A pair with `end < start` counts as
/// empty.
///
/// ```
/// let mut intervals = [(5, 15), (0, 10), (20, 25)];
/// assert_eq!(tally_utils::interval::union_ns(&mut intervals), 20);
/// ```
pub fn union_ns(intervals: &mut [(u64, u64)]) -> u64 {
    sort_by_start(intervals, |pair| pair.0);
    let mut sweep = UnionSweep::default();
    for &(start, end) in intervals.iter() {
        sweep.push(start, end);
    }
    sweep.finish()
}

/// Below this many items a comparison sort beats the radix sort's passes.
const RADIX_THRESHOLD: usize = 1 << 14;

/// Sorts items by a `u64` key: an LSD radix sort on the key's varying bytes
/// for large inputs (timestamps share their high bytes, so most passes are
/// skipped), pattern-defeating quicksort below that or when the input is
/// sorted already (typical of one device's trace).
pub fn sort_by_start<T: Copy>(items: &mut [T], key: impl Fn(&T) -> u64 + Copy) {
    if items.windows(2).all(|pair| key(&pair[0]) <= key(&pair[1])) {
        return;
    }
    if items.len() < RADIX_THRESHOLD {
        items.sort_unstable_by_key(key);
        return;
    }
    radix_sort(items, key);
}

fn radix_sort<T: Copy>(items: &mut [T], key: impl Fn(&T) -> u64) {
    // One pass over the data counts all eight byte histograms.
    let mut counts = vec![[0usize; 256]; 8];
    for item in items.iter() {
        let value = key(item);
        for (byte, histogram) in counts.iter_mut().enumerate() {
            histogram[((value >> (8 * byte)) & 0xff) as usize] += 1;
        }
    }
    let total = items.len();
    let mut buffer: Vec<T> = items.to_vec();
    let mut source_is_items = true;
    for (byte, histogram) in counts.iter().enumerate() {
        // A byte that is the same in every key leaves the order unchanged.
        if histogram.contains(&total) {
            continue;
        }
        let mut offsets = [0usize; 256];
        let mut running = 0;
        for (offset, &count) in offsets.iter_mut().zip(histogram.iter()) {
            *offset = running;
            running += count;
        }
        let shift = 8 * byte;
        let (source, target): (&[T], &mut [T]) =
            if source_is_items { (&*items, &mut buffer) } else { (&buffer, &mut *items) };
        for item in source {
            let digit = ((key(item) >> shift) & 0xff) as usize;
            target[offsets[digit]] = *item;
            offsets[digit] += 1;
        }
        source_is_items = !source_is_items;
    }
    if !source_is_items {
        items.copy_from_slice(&buffer);
    }
}

/// Idle time inside a device's busy envelope (first start to last end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdleGaps {
    /// How many gaps separate the busy periods.
    pub count: u64,
    /// Their total length: the envelope's length minus busy time.
    pub total_ns: u64,
    /// The longest one.
    pub longest_ns: u64,
}

/// What one sweep over start-sorted intervals finds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepResult {
    /// The length of the union.
    pub busy_ns: u64,
    /// First start to last end of the non-empty intervals.
    pub envelope: Option<(u64, u64)>,
    /// The gaps between busy periods inside the envelope.
    pub gaps: IdleGaps,
    /// The most intervals covering one instant.
    pub peak_concurrency: u64,
}

/// Union, envelope, idle gaps and peak concurrency of intervals sorted by
/// start, fed one at a time. Empty intervals keep the device busy at no
/// instant, so they are skipped.
///
/// ```
/// use tally_utils::interval::Sweep;
/// let mut sweep = Sweep::default();
/// for (start, end) in [(0, 10), (5, 15), (20, 30)] {
///     sweep.push(start, end);
/// }
/// let result = sweep.finish();
/// assert_eq!((result.busy_ns, result.peak_concurrency, result.gaps.total_ns), (25, 2, 5));
/// ```
#[derive(Debug, Default)]
pub struct Sweep {
    periods: Periods,
    first_start: Option<u64>,
    busy: u64,
    gaps: IdleGaps,
    /// Ends of the intervals running at the last start, earliest on top.
    running: BinaryHeap<Reverse<u64>>,
    peak: u64,
}

impl Sweep {
    /// Adds the next interval; `start` must not precede the previous one's.
    pub fn push(&mut self, start: u64, end: u64) {
        if end <= start {
            return;
        }
        self.first_start.get_or_insert(start);
        // Half-open: an interval ending at `start` no longer runs.
        while self.running.peek().is_some_and(|Reverse(top)| *top <= start) {
            self.running.pop();
        }
        self.running.push(Reverse(end));
        self.peak = self.peak.max(self.running.len() as u64);
        if let Some((from, to)) = self.periods.push(start, end) {
            self.busy += to - from;
            let gap = start - to;
            self.gaps.count += 1;
            self.gaps.total_ns += gap;
            self.gaps.longest_ns = self.gaps.longest_ns.max(gap);
        }
    }

    /// The union's length, envelope, gaps and peak concurrency.
    pub fn finish(mut self) -> SweepResult {
        let envelope = match (self.first_start, self.periods.finish()) {
            (Some(first), Some((from, to))) => {
                self.busy += to - from;
                Some((first, to))
            }
            _ => None,
        };
        SweepResult { busy_ns: self.busy, envelope, gaps: self.gaps, peak_concurrency: self.peak }
    }
}

/// The busy periods of intervals fed in order of start: overlapping or
/// touching intervals make one period (as [`merge_intervals`] joins them),
/// empty ones none. The merge every sweep here makes.
///
/// ```
/// use tally_utils::interval::Periods;
/// let mut periods = Periods::default();
/// let closed: Vec<_> = [(0, 10), (10, 12), (12, 12), (20, 30)]
///     .into_iter()
///     .filter_map(|(start, end)| periods.push(start, end))
///     .collect();
/// assert_eq!((closed, periods.finish()), (vec![(0, 12)], Some((20, 30))));
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct Periods {
    current: Option<(u64, u64)>,
}

impl Periods {
    /// Adds the next interval (`start` must not precede the previous
    /// one's); the period it closes, when it opens a new one.
    #[inline]
    pub fn push(&mut self, start: u64, end: u64) -> Option<(u64, u64)> {
        if end <= start {
            return None;
        }
        match &mut self.current {
            Some((_, current_end)) if start <= *current_end => {
                *current_end = (*current_end).max(end);
                None
            }
            _ => self.current.replace((start, end)),
        }
    }

    /// The period still open: the last one.
    pub fn finish(self) -> Option<(u64, u64)> {
        self.current
    }
}

/// The union sweep alone, for the many small per-iteration groups: no
/// allocation, intervals fed in order of start.
#[derive(Debug, Default, Clone, Copy)]
pub struct UnionSweep {
    periods: Periods,
    busy: u64,
}

impl UnionSweep {
    /// Adds the next interval; `start` must not precede the previous one's.
    pub fn push(&mut self, start: u64, end: u64) {
        if let Some((from, to)) = self.periods.push(start, end) {
            self.busy += to - from;
        }
    }

    /// The length of the union of what was pushed.
    pub fn finish(self) -> u64 {
        self.busy + self.periods.finish().map_or(0, |(from, to)| to - from)
    }
}

/// How long each combination of labels covered the time axis: the answer of
/// one sweep over labelled intervals, from which the union of any labels,
/// their intersections and their differences are read exactly.
///
/// Each interval carries a set of up to eight labels (a bit mask); an
/// instant's *label set* is the union of the sets of the intervals covering
/// it. [`LabelCoverage::of`] measures, for each of the 256 sets, the time
/// whose label set is exactly that one, from the first start to the last end
/// of the non-empty intervals (the empty set is the idle time inside that
/// envelope). Everything else is a sum over sets, so a figure read from one
/// coverage never disagrees with another: an intersection is at most either
/// operand, the unions of labels add up, and so on, by construction.
///
/// ```
/// use tally_utils::interval::LabelCoverage;
/// const COMPUTE: u8 = 1;
/// const COMMS: u8 = 2;
/// let coverage = LabelCoverage::of(vec![(0, 10, COMPUTE), (5, 20, COMMS), (30, 40, COMPUTE)]);
/// assert_eq!(coverage.any(COMPUTE | COMMS), 30); // the union
/// assert_eq!(coverage.all(COMPUTE | COMMS), 5); // the intersection [5, 10)
/// assert_eq!(coverage.covered(|set| set & COMMS != 0 && set & COMPUTE == 0), 10); // exposed
/// assert_eq!(coverage.exactly(0), 10); // idle inside the envelope [0, 40)
/// assert_eq!(coverage.envelope(), Some((0, 40)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelCoverage {
    by_set: Box<[u64; 256]>,
    envelope: Option<(u64, u64)>,
}

impl LabelCoverage {
    /// Sweeps `(start, end, labels)` triples in any order: they are sorted
    /// by start once ([`sort_by_start`]) and fed to one [`LabelSweep`].
    /// Empty intervals, and intervals with no label, cover nothing.
    pub fn of(intervals: impl IntoIterator<Item = (u64, u64, u8)>) -> Self {
        let mut kept: Vec<(u64, u64, u8)> =
            intervals.into_iter().filter(|&(start, end, labels)| end > start && labels != 0).collect();
        sort_by_start(&mut kept, |interval| interval.0);
        // Sorted by start just above, so no start comes before the last.
        LabelSweep::of_sorted(kept).expect("intervals sorted by start")
    }

    /// The time whose label set is exactly `set`; `exactly(0)` is the idle
    /// time inside the envelope.
    pub fn exactly(&self, set: u8) -> u64 {
        self.by_set[usize::from(set)]
    }

    /// The time whose label set satisfies `predicate`.
    pub fn covered(&self, predicate: impl Fn(u8) -> bool) -> u64 {
        (0..=255u8).filter(|&set| predicate(set)).map(|set| self.exactly(set)).sum()
    }

    /// The time at least one of `labels` covers: their union.
    pub fn any(&self, labels: u8) -> u64 {
        self.covered(|set| set & labels != 0)
    }

    /// The time every one of `labels` covers at once: their intersection
    /// (for `labels == 0`, the whole envelope).
    pub fn all(&self, labels: u8) -> u64 {
        self.covered(|set| set & labels == labels)
    }

    /// First start to last end of the non-empty labelled intervals.
    pub fn envelope(&self) -> Option<(u64, u64)> {
        self.envelope
    }
}

/// A [`LabelCoverage`] built from intervals delivered in order of start,
/// holding only the intervals in progress (a heap of their ends), so that a
/// caller whose intervals are sorted already (or are several sorted lists,
/// merged as they are read) needs no copy of them and no sort.
///
/// ```
/// use tally_utils::interval::{LabelCoverage, LabelSweep};
/// let mut sweep = LabelSweep::new();
/// for (start, end, labels) in [(0, 10, 1), (5, 20, 2), (30, 40, 1)] {
///     sweep.push(start, end, labels).unwrap();
/// }
/// assert!(sweep.push(29, 31, 1).is_err()); // before the last start
/// assert_eq!(sweep.finish(), LabelCoverage::of(vec![(0, 10, 1), (5, 20, 2), (30, 40, 1)]));
/// ```
#[derive(Debug, Clone)]
pub struct LabelSweep {
    by_set: Box<[u64; 256]>,
    /// The ends of the intervals in progress, with their labels.
    ending: BinaryHeap<Reverse<(u64, u8)>>,
    /// How many intervals in progress carry each label: at most one per
    /// interval pushed, so a u64 never wraps.
    active: [u64; 8],
    /// The labels of the intervals in progress.
    set: u8,
    /// The time up to which `by_set` has been counted.
    now: Option<u64>,
    envelope: Option<(u64, u64)>,
}

/// An interval given to [`LabelSweep::push`] starts before one given
/// earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interval starting at {start} ns pushed after one starting at {previous} ns")]
pub struct OutOfOrder {
    /// The start pushed.
    pub start: u64,
    /// The latest start pushed before it.
    pub previous: u64,
}

impl Default for LabelSweep {
    fn default() -> Self {
        Self::new()
    }
}

impl LabelSweep {
    /// An empty sweep.
    pub fn new() -> Self {
        Self {
            by_set: Box::new([0; 256]),
            ending: BinaryHeap::new(),
            active: [0; 8],
            set: 0,
            now: None,
            envelope: None,
        }
    }

    /// One sweep over `(start, end, labels)` triples already sorted by
    /// start (or a merge of such lists, smallest head first): what
    /// [`LabelCoverage::of`] does after sorting, for a caller whose lists
    /// come sorted.
    pub fn of_sorted(
        intervals: impl IntoIterator<Item = (u64, u64, u8)>,
    ) -> Result<LabelCoverage, OutOfOrder> {
        let mut sweep = LabelSweep::new();
        for (start, end, labels) in intervals {
            sweep.push(start, end, labels)?;
        }
        Ok(sweep.finish())
    }

    /// Adds `[start, end)` with its labels. An empty interval, or one
    /// with no label, covers nothing (and is not checked for order); any
    /// other must not start before the previous one.
    pub fn push(&mut self, start: u64, end: u64, labels: u8) -> Result<(), OutOfOrder> {
        self.push_observed(start, end, labels, &mut |_, _, _| {})
    }

    /// [`push`](Self::push), also calling `observe(from, to, set)` for each
    /// stretch `[from, to)` counted with its label set (the empty set
    /// included), in order: what a caller that bins the coverage by time
    /// (a timeline) reads, from the same sweep.
    ///
    /// ```
    /// use tally_utils::interval::LabelSweep;
    /// let mut seen = Vec::new();
    /// let mut sweep = LabelSweep::new();
    /// sweep.push_observed(0, 10, 1, &mut |from, to, set| seen.push((from, to, set))).unwrap();
    /// sweep.push_observed(5, 20, 2, &mut |from, to, set| seen.push((from, to, set))).unwrap();
    /// sweep.push_observed(30, 40, 1, &mut |from, to, set| seen.push((from, to, set))).unwrap();
    /// sweep.finish_observed(&mut |from, to, set| seen.push((from, to, set)));
    /// assert_eq!(seen, [(0, 5, 1), (5, 10, 3), (10, 20, 2), (20, 30, 0), (30, 40, 1)]);
    /// ```
    pub fn push_observed(
        &mut self,
        start: u64,
        end: u64,
        labels: u8,
        observe: &mut impl FnMut(u64, u64, u8),
    ) -> Result<(), OutOfOrder> {
        if end <= start || labels == 0 {
            return Ok(());
        }
        // After a push, `now` is the start pushed: the sweep has counted
        // up to it and no further.
        if let Some(previous) = self.now
            && start < previous
        {
            return Err(OutOfOrder { start, previous });
        }
        self.retire_until(start, observe);
        self.count_to(start, observe);
        for (bit, count) in self.active.iter_mut().enumerate() {
            if labels & (1 << bit) != 0 {
                *count += 1;
            }
        }
        self.set |= labels;
        self.ending.push(Reverse((end, labels)));
        self.envelope = Some(match self.envelope {
            None => (start, end),
            Some((first, last)) => (first, last.max(end)),
        });
        Ok(())
    }

    /// The coverage of everything pushed.
    pub fn finish(self) -> LabelCoverage {
        self.finish_observed(&mut |_, _, _| {})
    }

    /// [`finish`](Self::finish), observing the last stretches as
    /// [`push_observed`](Self::push_observed) does.
    pub fn finish_observed(mut self, observe: &mut impl FnMut(u64, u64, u8)) -> LabelCoverage {
        self.retire_until(u64::MAX, observe);
        LabelCoverage { by_set: self.by_set, envelope: self.envelope }
    }

    /// Ends, in order, the intervals in progress that end at or before
    /// `time`, counting the time up to each end.
    fn retire_until(&mut self, time: u64, observe: &mut impl FnMut(u64, u64, u8)) {
        while let Some(&Reverse((end, labels))) = self.ending.peek() {
            if end > time {
                break;
            }
            self.ending.pop();
            self.count_to(end, observe);
            for (bit, count) in self.active.iter_mut().enumerate() {
                let mask = 1u8 << bit;
                if labels & mask != 0 {
                    *count -= 1;
                    if *count == 0 {
                        self.set &= !mask;
                    }
                }
            }
        }
    }

    /// Counts `[now, time)` as covered by the current label set.
    fn count_to(&mut self, time: u64, observe: &mut impl FnMut(u64, u64, u8)) {
        if let Some(now) = self.now {
            self.by_set[usize::from(self.set)] += time - now;
            if time > now {
                observe(now, time, self.set);
            }
        }
        self.now = Some(time);
    }
}

/// The union as sorted, disjoint intervals (touching ones joined), sorting
/// the slice in place; stormlog's `merge_intervals`, entry for entry. An
/// empty interval that no other covers stays as a zero-length entry (see
/// the module's rules); the entries' total length is [`union_ns`]'s.
///
/// ```
/// use tally_utils::interval::merge_intervals;
/// assert_eq!(merge_intervals(&mut [(10, 20), (0, 10), (30, 30)]), [(0, 20), (30, 30)]);
/// ```
pub fn merge_intervals(intervals: &mut [(u64, u64)]) -> Vec<(u64, u64)> {
    // Ties broken by end, as Python's `sorted` of tuples does, so an empty
    // interval sorts before a longer one that starts with it and is absorbed.
    intervals.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for &(start, end) in intervals.iter() {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end.max(start))),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn intervals(max_len: usize) -> impl Strategy<Value = Vec<(u64, u64)>> {
        proptest::collection::vec(
            (0u64..200, 0u64..40).prop_map(|(start, length)| (start, start + length)),
            0..max_len,
        )
    }

    /// The brute-force answers on a small time axis.
    fn naive(intervals: &[(u64, u64)]) -> (u64, u64, IdleGaps, Option<(u64, u64)>) {
        let active = |t: u64| intervals.iter().filter(|&&(s, e)| s <= t && t < e).count() as u64;
        let non_empty: Vec<_> = intervals.iter().filter(|(s, e)| e > s).collect();
        let envelope = non_empty.iter().map(|(s, _)| *s).min().zip(non_empty.iter().map(|(_, e)| *e).max());
        let mut busy = 0;
        let mut peak = 0;
        let mut gaps = IdleGaps::default();
        let mut run = 0;
        if let Some((first, last)) = envelope {
            for t in first..last {
                let count = active(t);
                peak = peak.max(count);
                if count > 0 {
                    busy += 1;
                    if run > 0 {
                        gaps.count += 1;
                        gaps.total_ns += run;
                        gaps.longest_ns = gaps.longest_ns.max(run);
                    }
                    run = 0;
                } else {
                    run += 1;
                }
            }
        }
        (busy, peak, gaps, envelope)
    }

    proptest! {
        #[test]
        fn the_sweep_agrees_with_counting_instants(mut items in intervals(30)) {
            let (busy, peak, gaps, envelope) = naive(&items);
            items.sort_unstable();
            let mut sweep = Sweep::default();
            for &(start, end) in &items {
                sweep.push(start, end);
            }
            let result = sweep.finish();
            prop_assert_eq!(result.busy_ns, busy);
            prop_assert_eq!(result.peak_concurrency, peak);
            prop_assert_eq!(result.gaps, gaps);
            prop_assert_eq!(result.envelope, envelope);
            let mut copy = items.clone();
            prop_assert_eq!(union_ns(&mut copy), busy);
        }

        #[test]
        fn the_radix_sort_sorts(mut keys in proptest::collection::vec(any::<u64>(), 0..3000), narrow in any::<bool>()) {
            if narrow {
                // Timestamps sharing their high bytes: most passes skipped.
                for key in &mut keys {
                    *key = 1_700_000_000_000_000_000 + (*key % 5_000_000);
                }
            }
            let mut expected = keys.clone();
            expected.sort_unstable();
            radix_sort(&mut keys, |key| *key);
            prop_assert_eq!(keys, expected);
        }
    }

    #[test]
    fn large_inputs_take_the_radix_path_and_agree() {
        let mut random = crate::xorshift::XorShift64::new(0x1234_5678_9abc_def0);
        let mut next = || random.next_u64();
        let mut pairs: Vec<(u64, u64)> = (0..(RADIX_THRESHOLD * 3))
            .map(|_| {
                let start = next() % 10_000_000;
                (start, start + next() % 5_000)
            })
            .collect();
        let mut reference = pairs.clone();
        reference.sort_unstable();
        let mut sweep = UnionSweep::default();
        for &(start, end) in &reference {
            sweep.push(start, end);
        }
        assert_eq!(union_ns(&mut pairs), sweep.finish());
        let merged = merge_intervals(&mut reference.clone());
        assert_eq!(merged.iter().map(|&(start, end)| end - start).sum::<u64>(), union_ns(&mut reference));
        assert!(pairs.windows(2).all(|pair| pair[0].0 <= pair[1].0));
    }
}
