//! The interval properties issue 3 lists, on `union_ns` and `summed_ns`.

use proptest::prelude::*;
use tally_gpu_time::{summed_ns, union_ns};

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
    fn order_and_repetition_do_not_change_busy(items in intervals(), seed in any::<u64>()) {
        let mut sorted = items.clone();
        let expected = union_ns(&mut sorted);
        let mut shuffled = items.clone();
        shuffled.extend(items.iter().step_by(3));
        let mut state = seed | 1;
        for index in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(index, (state % (index as u64 + 1)) as usize);
        }
        prop_assert_eq!(union_ns(&mut shuffled), expected);
    }
}

#[test]
fn touching_intervals_merge_and_empty_ones_add_nothing() {
    assert_eq!(union_ns(&mut [(0, 10), (10, 20)]), 20);
    assert_eq!(union_ns(&mut [(5, 5), (7, 7)]), 0);
    assert_eq!(union_ns(&mut []), 0);
    assert_eq!(summed_ns(&[(0, u64::MAX), (0, u64::MAX)]), 2 * u128::from(u64::MAX));
}
