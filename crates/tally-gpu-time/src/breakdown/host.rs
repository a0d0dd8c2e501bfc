//! The runtime calls the breakdown links GPU work to: launches by their
//! correlation, and synchronisation calls, read once before any GPU
//! activity.

use tally_core::{ActivityDomain, EntityRef};
use tally_resolve::ResolvedEvidence;
use tally_utils::fast_hash::FastHashMap;

use crate::category::is_synchronization;

/// A runtime call that launched work: `(scope, correlation)` is what the
/// work names it by.
#[derive(Debug, Clone, Copy)]
pub(super) struct Launch {
    pub(super) scope: u32,
    pub(super) correlation: u64,
    pub(super) start: u64,
    pub(super) end: u64,
    /// Its clock domain, in [`HostCalls::domains`].
    pub(super) domain: u32,
}

/// A synchronisation call of a scope.
#[derive(Debug, Clone, Copy)]
pub(super) struct SyncCall {
    pub(super) scope: u32,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) domain: u32,
}

/// The runtime calls the breakdown links work to, read before any GPU
/// activity so that each activity is linked as it is read (no list of
/// activities waits for the end).
#[derive(Debug, Default)]
pub(super) struct HostCalls<'a> {
    /// Correlation scopes, numbered (few: one per process); `None` is a
    /// scope too, the one of calls and work that name none.
    scopes: FastHashMap<Option<&'a EntityRef>, u32>,
    /// The scope last numbered: consecutive records share one, and the
    /// resolver's facts hand out one reference per scope, so a pointer
    /// comparison saves hashing it.
    last_scope: Option<(Option<&'a EntityRef>, u32)>,
    pub(super) domains: Vec<&'a str>,
    domain_numbers: FastHashMap<&'a str, u32>,
    last_domain: Option<(&'a str, u32)>,
    /// Sorted by `(scope, correlation)`, one per pair: the earliest.
    launches: Vec<Launch>,
    /// Where the last launch was found, where the next search starts.
    last_launch: usize,
    pub(super) syncs: Vec<SyncCall>,
}

fn same_scope(a: Option<&EntityRef>, b: Option<&EntityRef>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl<'a> HostCalls<'a> {
    pub(super) fn read<G: ResolvedEvidence + ?Sized>(graph: &'a G) -> Self {
        let mut calls = Self::default();
        for activity in graph.activity_facts() {
            if activity.domain != ActivityDomain::Runtime {
                continue;
            }
            let Some(busy) = activity.busy else { continue };
            let intervals = busy.as_slice();
            let (Some(first), Some(last)) = (intervals.first(), intervals.last()) else { continue };
            let is_sync = activity.name.is_some_and(is_synchronization);
            if activity.cuda_correlation_id.is_none() && !is_sync {
                continue;
            }
            let (start, end) = (first.start_ns(), last.end_ns());
            let scope = calls.number_scope(activity.correlation_scope);
            let domain = calls.number_domain(activity.clock.0);
            if let Some(correlation) = activity.cuda_correlation_id {
                calls.launches.push(Launch { scope, correlation, start, end, domain });
            }
            if is_sync {
                calls.syncs.push(SyncCall { scope, start, end, domain });
            }
        }
        // The earliest call of a pair wins, ties broken by the domain's
        // name, so the choice does not depend on record order.
        let domains = &calls.domains;
        calls.launches.sort_unstable_by(|a, b| {
            (a.scope, a.correlation, a.start, a.end, domains[a.domain as usize]).cmp(&(
                b.scope,
                b.correlation,
                b.start,
                b.end,
                domains[b.domain as usize],
            ))
        });
        calls.launches.dedup_by_key(|launch| (launch.scope, launch.correlation));
        calls
    }

    fn number_scope(&mut self, scope: Option<&'a EntityRef>) -> u32 {
        if let Some(number) = self.last_scope_number(scope) {
            return number;
        }
        let next = self.scopes.len() as u32;
        let number = *self.scopes.entry(scope).or_insert(next);
        self.last_scope = Some((scope, number));
        number
    }

    /// The number of a scope some call has, without numbering a new one.
    pub(super) fn find_scope(&mut self, scope: Option<&'a EntityRef>) -> Option<u32> {
        if let Some(number) = self.last_scope_number(scope) {
            return Some(number);
        }
        let number = *self.scopes.get(&scope)?;
        self.last_scope = Some((scope, number));
        Some(number)
    }

    /// The number of `scope` when it is the one asked for last: consecutive
    /// records name one scope, and comparing it costs less than hashing it.
    fn last_scope_number(&self, scope: Option<&'a EntityRef>) -> Option<u32> {
        self.last_scope.filter(|&(last, _)| same_scope(last, scope)).map(|(_, number)| number)
    }

    fn number_domain(&mut self, domain: &'a str) -> u32 {
        if let Some((last, number)) = self.last_domain
            && std::ptr::eq(last, domain)
        {
            return number;
        }
        let next = self.domains.len() as u32;
        let number = *self.domain_numbers.entry(domain).or_insert(next);
        if number == next {
            self.domains.push(domain);
        }
        self.last_domain = Some((domain, number));
        number
    }

    /// The launch of `(scope, correlation)`. GPU activities mostly come in
    /// the order of their correlation IDs, so the search gallops out from
    /// the last launch found before it bisects: a few probes near the last
    /// hit instead of a search of the whole list.
    pub(super) fn launch(&mut self, scope: u32, correlation: u64) -> Option<Launch> {
        let wanted = (scope, correlation);
        let key = |launch: &Launch| (launch.scope, launch.correlation);
        let launches = &self.launches;
        let hint = self.last_launch.min(launches.len().saturating_sub(1));
        let (low, high) = match launches.get(hint).map(key) {
            None => return None,
            Some(at) if at == wanted => return launches.get(hint).copied(),
            Some(at) if at < wanted => {
                let mut step = 1;
                let mut low = hint + 1;
                while low + step < launches.len() && key(&launches[low + step - 1]) < wanted {
                    low += step;
                    step *= 2;
                }
                (low, (low + step).min(launches.len()))
            }
            Some(_) => {
                let mut step = 1;
                let mut high = hint;
                while high > step && key(&launches[high - step]) > wanted {
                    high -= step;
                    step *= 2;
                }
                (high.saturating_sub(step), high)
            }
        };
        let index = low + launches[low..high].binary_search_by_key(&wanted, key).ok()?;
        self.last_launch = index;
        launches.get(index).copied()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The galloping search finds what a plain search finds, whatever
        /// the last hit was.
        #[test]
        fn launch_search_from_any_hint(
            mut keys in proptest::collection::vec((0u32..3, 0u64..40), 0..60),
            probes in proptest::collection::vec((0u32..4, 0u64..45), 1..30),
        ) {
            keys.sort_unstable();
            keys.dedup();
            let mut calls = HostCalls {
                launches: keys
                    .iter()
                    .map(|&(scope, correlation)| Launch { scope, correlation, start: correlation, end: 0, domain: 0 })
                    .collect(),
                ..HostCalls::default()
            };
            for (scope, correlation) in probes {
                let expected = keys.binary_search(&(scope, correlation)).is_ok();
                let found = calls.launch(scope, correlation);
                prop_assert_eq!(found.is_some(), expected);
                if let Some(found) = found {
                    prop_assert_eq!((found.scope, found.correlation), (scope, correlation));
                }
            }
        }
    }
}
