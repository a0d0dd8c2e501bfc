//! Host timestamps put on a device's clock domain by the run's direct clock
//! alignments.

use tally_resolve::{AlignmentFacts, FastHashMap};

/// Direct clock alignments, by the pair of domains.
pub(super) struct Aligner<'a> {
    pairs: FastHashMap<(&'a str, &'a str), Vec<AlignmentFacts<'a>>>,
}

impl<'a> Aligner<'a> {
    pub(super) fn new(facts: impl Iterator<Item = AlignmentFacts<'a>>) -> Self {
        let mut pairs: FastHashMap<(&'a str, &'a str), Vec<AlignmentFacts<'a>>> = FastHashMap::default();
        for fact in facts {
            pairs.entry((fact.from_clock_domain, fact.to_clock_domain)).or_default().push(fact);
        }
        // Least uncertainty first, then a total order, so the choice does
        // not depend on the order the alignments were read in.
        for list in pairs.values_mut() {
            list.sort_unstable_by_key(|fact| {
                (fact.uncertainty_ns, fact.offset_ns, fact.valid_from_ns, fact.valid_to_ns)
            });
        }
        Self { pairs }
    }

    /// A host timestamp on the device's clock domain, with the uncertainty
    /// of the alignment used.
    pub(super) fn to_device(&self, time: u64, host: &str, device: &str) -> Option<(u64, u64)> {
        if host == device {
            return Some((time, 0));
        }
        let covers = |fact: &AlignmentFacts<'_>, from_time: i128| {
            fact.valid_from_ns.is_none_or(|from| from_time >= i128::from(from))
                && fact.valid_to_ns.is_none_or(|to| from_time < i128::from(to))
        };
        let time = i128::from(time);
        // device → host: host = device + offset.
        let forward = self.pairs.get(&(device, host)).into_iter().flatten().find_map(|fact| {
            let device_time = time - i128::from(fact.offset_ns);
            covers(fact, device_time).then_some((device_time, fact.uncertainty_ns))
        });
        // host → device: device = host + offset.
        let backward = self.pairs.get(&(host, device)).into_iter().flatten().find_map(|fact| {
            covers(fact, time).then_some((time + i128::from(fact.offset_ns), fact.uncertainty_ns))
        });
        let best = match (forward, backward) {
            (Some(a), Some(b)) => Some(if (b.1, b.0) < (a.1, a.0) { b } else { a }),
            (a, b) => a.or(b),
        }?;
        Some((u64::try_from(best.0).ok()?, best.1))
    }
}
