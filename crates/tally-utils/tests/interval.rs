//! The interval rules of `tally_utils::interval` (half-open, empty intervals
//! cover no instant, merged lists as stormlog's), property-tested once for
//! every user: the accounting and the trace import.

use proptest::prelude::*;
use tally_utils::interval::{
    LabelCoverage, LabelSweep, Sweep, UnionSweep, merge_intervals, summed_ns, union_ns,
};

/// The instants `items` cover, counted one by one (small axes only).
fn covered_instants(items: &[(u64, u64)]) -> u64 {
    let last = items.iter().map(|item| item.1).max().unwrap_or(0);
    (0..last).filter(|&t| items.iter().any(|&(start, end)| start <= t && t < end)).count() as u64
}

/// stormlog's `merge_intervals`, transcribed: sorted tuples, touching join.
fn stormlog_merge(items: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut sorted = items.to_vec();
    sorted.sort();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in sorted {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

fn small_intervals() -> impl Strategy<Value = Vec<(u64, u64)>> {
    proptest::collection::vec(
        (0u64..300, prop_oneof![Just(0u64), 0u64..20, 0u64..120]).prop_map(|(s, l)| (s, s + l)),
        0..40,
    )
}

fn intervals() -> impl Strategy<Value = Vec<(u64, u64)>> {
    proptest::collection::vec(
        (0u64..1_000_000, prop_oneof![Just(0u64), 0u64..1_000, 0u64..100_000]).prop_map(|(s, l)| (s, s + l)),
        0..200,
    )
}

proptest! {
    #[test]
    fn busy_is_at_most_summed(mut items in intervals()) {
        let summed = summed_ns(&items);
        prop_assert!(u128::from(union_ns(&mut items)) <= summed);
    }

    #[test]
    fn busy_is_at_most_the_envelope(mut items in intervals()) {
        let envelope = match (items.iter().map(|i| i.0).min(), items.iter().map(|i| i.1).max()) {
            (Some(first), Some(last)) => last - first,
            _ => 0,
        };
        prop_assert!(union_ns(&mut items) <= envelope);
    }

    #[test]
    fn disjoint_groups_add(mut first in intervals(), second in intervals(), gap in 0u64..1_000) {
        // Shift the second group past the first's last end: the groups share
        // no instant (touching at one point is allowed; it has no length).
        let offset = first.iter().map(|i| i.1).max().unwrap_or(0) + gap;
        let mut second: Vec<(u64, u64)> = second.iter().map(|&(s, e)| (s + offset, e + offset)).collect();
        let mut both: Vec<(u64, u64)> = first.iter().chain(&second).copied().collect();
        let expected = union_ns(&mut first) + union_ns(&mut second);
        prop_assert_eq!(union_ns(&mut both), expected);
    }

    #[test]
    fn order_and_repetition_do_not_change_busy(
        (mut items, mut shuffled) in intervals().prop_flat_map(|items| {
            let mut repeated = items.clone();
            repeated.extend(items.iter().step_by(3));
            (Just(items), Just(repeated).prop_shuffle())
        }),
    ) {
        let expected = union_ns(&mut items);
        prop_assert_eq!(union_ns(&mut shuffled), expected);
    }
}

proptest! {
    #[test]
    fn every_union_counts_the_covered_instants(items in small_intervals()) {
        let expected = covered_instants(&items);
        prop_assert_eq!(union_ns(&mut items.clone()), expected);
        let mut sorted = items.clone();
        sorted.sort_unstable();
        let mut union = UnionSweep::default();
        let mut sweep = Sweep::default();
        for &(start, end) in &sorted {
            union.push(start, end);
            sweep.push(start, end);
        }
        prop_assert_eq!(union.finish(), expected);
        prop_assert_eq!(sweep.finish().busy_ns, expected);
        let merged = merge_intervals(&mut items.clone());
        prop_assert_eq!(merged.iter().map(|&(start, end)| end - start).sum::<u64>(), expected);
    }

    #[test]
    fn merged_lists_are_stormlogs_sorted_and_disjoint(items in small_intervals()) {
        let merged = merge_intervals(&mut items.clone());
        prop_assert_eq!(&merged, &stormlog_merge(&items));
        // Strictly apart: touching entries would have been joined.
        prop_assert!(merged.windows(2).all(|pair| pair[0].1 < pair[1].0));
    }

    #[test]
    fn empty_intervals_change_no_figure(items in small_intervals(), empties in proptest::collection::vec(0u64..400, 0..10)) {
        let mut with_empties = items.clone();
        with_empties.extend(empties.iter().map(|&at| (at, at)));
        with_empties.sort_unstable();
        let mut plain = items.clone();
        plain.sort_unstable();
        let sweep = |list: &[(u64, u64)]| {
            let mut sweep = Sweep::default();
            list.iter().for_each(|&(start, end)| sweep.push(start, end));
            sweep.finish()
        };
        prop_assert_eq!(sweep(&with_empties), sweep(&plain));
        prop_assert_eq!(summed_ns(&with_empties), summed_ns(&plain));
        prop_assert_eq!(union_ns(&mut with_empties), union_ns(&mut plain));
    }
}

#[test]
fn touching_intervals_merge_and_empty_ones_add_nothing() {
    assert_eq!(merge_intervals(&mut [(0, 10), (10, 20)]), [(0, 20)]);
    assert_eq!(merge_intervals(&mut [(5, 5), (5, 9)]), [(5, 9)]);
    assert_eq!(merge_intervals(&mut [(3, 3), (5, 9)]), [(3, 3), (5, 9)]);
    assert_eq!(union_ns(&mut [(0, 10), (10, 20)]), 20);
    assert_eq!(union_ns(&mut [(5, 5), (7, 7)]), 0);
    assert_eq!(union_ns(&mut []), 0);
    assert_eq!(summed_ns(&[(0, u64::MAX), (0, u64::MAX)]), 2 * u128::from(u64::MAX));
}

fn labelled_intervals() -> impl Strategy<Value = Vec<(u64, u64, u8)>> {
    proptest::collection::vec(
        (0u64..300, prop_oneof![Just(0u64), 0u64..20, 0u64..120], any::<u8>())
            .prop_map(|(s, l, labels)| (s, s + l, labels)),
        0..40,
    )
}

proptest! {
    /// Each instant's label set, counted one by one, gives every set's time;
    /// the order of the intervals does not matter.
    #[test]
    fn label_coverage_agrees_with_counting_instants(
        (items, shuffled) in labelled_intervals().prop_flat_map(|items| (Just(items.clone()), Just(items).prop_shuffle())),
    ) {
        let live: Vec<_> = items.iter().copied().filter(|&(s, e, labels)| e > s && labels != 0).collect();
        let envelope = live.iter().map(|item| item.0).min().zip(live.iter().map(|item| item.1).max());
        let mut expected = [0u64; 256];
        if let Some((first, last)) = envelope {
            for t in first..last {
                let set = live.iter().filter(|&&(s, e, _)| s <= t && t < e).fold(0u8, |set, item| set | item.2);
                expected[usize::from(set)] += 1;
            }
        }
        for order in [items.clone(), shuffled] {
            let coverage = LabelCoverage::of(order);
            for (set, &time) in expected.iter().enumerate() {
                prop_assert_eq!(coverage.exactly(set as u8), time, "set {:#010b}", set);
            }
            prop_assert_eq!(coverage.envelope(), envelope);
            // The union of all labels is the plain union of the intervals.
            let plain: Vec<(u64, u64)> = live.iter().map(|&(s, e, _)| (s, e)).collect();
            prop_assert_eq!(u128::from(coverage.any(0xff)), u128::from(covered_instants(&plain)));
            for label in 0..8 {
                let bit = 1u8 << label;
                for other in 0..8 {
                    let both = bit | (1u8 << other);
                    prop_assert!(coverage.all(both) <= coverage.any(bit));
                }
            }
        }
    }

    /// Two lists sorted by start, merged as they are read, give a sweep the
    /// coverage of all of them; a start before the last one is refused
    /// and changes nothing.
    #[test]
    fn label_sweep_of_merged_sorted_lists(items in labelled_intervals(), split in any::<usize>()) {
        let at = if items.is_empty() { 0 } else { split % (items.len() + 1) };
        let (mut left, mut right) = (items[..at].to_vec(), items[at..].to_vec());
        left.sort_by_key(|item| item.0);
        right.sort_by_key(|item| item.0);
        let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
        let mut sweep = LabelSweep::new();
        let mut last = None;
        loop {
            let next = match (left.peek(), right.peek()) {
                (Some(a), Some(b)) if a.0 <= b.0 => left.next(),
                (Some(_), Some(_)) => right.next(),
                (Some(_), None) => left.next(),
                (None, _) => right.next(),
            };
            let Some((start, end, labels)) = next else { break };
            prop_assert!(sweep.push(start, end, labels).is_ok());
            if end > start && labels != 0 {
                last = Some(start);
            }
        }
        if let Some(last) = last.filter(|&last| last > 0) {
            let before = sweep.clone().finish();
            prop_assert!(sweep.push(last - 1, last + 5, 1).is_err());
            prop_assert_eq!(sweep.clone().finish(), before);
        }
        prop_assert_eq!(sweep.finish(), LabelCoverage::of(items));
    }
}
