//! Timestamps put on another clock domain by the direct alignment of least
//! uncertainty that covers them, in either direction: the rule of tally's
//! overlap breakdown (`tally-gpu-time`), which reads alignments as plain
//! figures (a streamed run keeps no events).
//!
//! Unlike [`crate::align_timestamp`] (stormlog's rule), this takes the
//! stated offset as is (no legacy bracket), picks the least uncertain of
//! several covering alignments instead of calling them ambiguous, and reads
//! a `to → from` alignment backwards, its window checked on its own `from`
//! clock (the translated time).

/// One direct clock alignment's figures, however they were read:
/// `to = from + offset_ns` within `uncertainty_ns`, while a `from`
/// timestamp lies in its validity window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectAlignment<'a> {
    domains: (&'a str, &'a str),
    offset_ns: i64,
    uncertainty_ns: u64,
    window: (Option<u64>, Option<u64>),
}

impl<'a> DirectAlignment<'a> {
    /// The alignment from clock domain `from` to `to` (`domains`), valid
    /// from `valid_from_ns` inclusive to `valid_to_ns` exclusive on the
    /// `from` clock (`window`, open where absent).
    pub fn new(
        domains: (&'a str, &'a str),
        offset_ns: i64,
        uncertainty_ns: u64,
        window: (Option<u64>, Option<u64>),
    ) -> Self {
        Self { domains, offset_ns, uncertainty_ns, window }
    }

    /// Whether its validity window covers `timestamp_ns` (on the `from`
    /// clock).
    pub fn covers(&self, timestamp_ns: i128) -> bool {
        window_covers(self.window.0, self.window.1, timestamp_ns)
    }
}

/// The one reading of a validity window: `valid_from_ns` inclusive,
/// `valid_to_ns` exclusive, open where absent.
pub(crate) fn window_covers(
    valid_from_ns: Option<u64>,
    valid_to_ns: Option<u64>,
    timestamp_ns: i128,
) -> bool {
    valid_from_ns.is_none_or(|from| timestamp_ns >= i128::from(from))
        && valid_to_ns.is_none_or(|to| timestamp_ns < i128::from(to))
}

/// Direct alignments by their pair of domains, each pair's least uncertain
/// first; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct NearestAligner<'a> {
    /// Sorted by pair, for a binary search (a run has few pairs).
    pairs: Vec<((&'a str, &'a str), Vec<DirectAlignment<'a>>)>,
}

impl<'a> NearestAligner<'a> {
    /// Indexes `alignments`; the result does not depend on their order.
    pub fn new(alignments: impl IntoIterator<Item = DirectAlignment<'a>>) -> Self {
        let mut all: Vec<DirectAlignment<'a>> = alignments.into_iter().collect();
        // By pair, then least uncertainty first and a total order, so the
        // choice does not depend on the order the alignments were read in.
        all.sort_unstable_by_key(|fact| (fact.domains, fact.uncertainty_ns, fact.offset_ns, fact.window));
        let mut pairs: Vec<((&'a str, &'a str), Vec<DirectAlignment<'a>>)> = Vec::new();
        for fact in all {
            let pair = fact.domains;
            match pairs.last_mut() {
                Some((last, list)) if *last == pair => list.push(fact),
                _ => pairs.push((pair, vec![fact])),
            }
        }
        Self { pairs }
    }

    fn pair(&self, from: &str, to: &str) -> &[DirectAlignment<'a>] {
        match self.pairs.binary_search_by(|((a, b), _)| (*a, *b).cmp(&(from, to))) {
            Ok(index) => &self.pairs[index].1,
            Err(_) => &[],
        }
    }

    /// `timestamp_ns` on the `from` clock, put on the `to` clock, with the
    /// uncertainty of the alignment used: the identity (uncertainty 0) on
    /// the same domain; else the least uncertain covering alignment of
    /// either direction (a tie goes to the smaller result, then to the
    /// `to → from` one); `None` when none covers it or the result is
    /// negative.
    pub fn translate(&self, timestamp_ns: u64, from: &str, to: &str) -> Option<(u64, u64)> {
        if from == to {
            return Some((timestamp_ns, 0));
        }
        let time = i128::from(timestamp_ns);
        // to → from, read backwards: from = to + offset.
        let backward = self.pair(to, from).iter().find_map(|fact| {
            let translated = time - i128::from(fact.offset_ns);
            fact.covers(translated).then_some((translated, fact.uncertainty_ns))
        });
        // from → to: to = from + offset.
        let forward = self.pair(from, to).iter().find_map(|fact| {
            fact.covers(time).then_some((time + i128::from(fact.offset_ns), fact.uncertainty_ns))
        });
        let best = match (backward, forward) {
            (Some(a), Some(b)) => Some(if (b.1, b.0) < (a.1, a.0) { b } else { a }),
            (a, b) => a.or(b),
        }?;
        Some((u64::try_from(best.0).ok()?, best.1))
    }
}
