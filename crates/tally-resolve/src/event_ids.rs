//! The event IDs the streaming resolver keeps (one per entity held), in
//! about 8 bytes each where they follow a numbering.
//!
//! The resolver keeps an event's ID only to break ties between deliveries
//! of one entity (the smallest ID wins) and to order and name unresolved
//! references: it needs each ID's exact text, but rarely. Imports number
//! their records `<trace key>/<count>`, so the IDs of a large trace are a
//! few prefixes and a counter: stored as text they were a third of the
//! resolver's memory per record. An ID of that shape is kept as its
//! prefix's number and the counter, packed in one `u64`; any other ID as
//! its text. Both read back as the same text ([`StoredId`]), and compare
//! as their texts do, so nothing downstream can tell the difference.

use std::cmp::Ordering;

use tally_utils::decimal::Decimal;
use tally_utils::fast_hash::FastHashMap;

/// Set in an entry that holds a prefix number and a counter.
const NUMBERED: u64 = 1 << 63;
/// Bits of the counter: 12 decimal digits fit below 2^40.
const COUNTER_BITS: u32 = 40;
/// Prefix numbers take the bits between the counter and the flag.
const MAX_PREFIXES: usize = 1 << (63 - COUNTER_BITS);
/// More digits than this do not fit [`COUNTER_BITS`] for every value.
const MAX_DIGITS: usize = 12;

/// Event IDs appended one after another, each named by its position.
#[derive(Debug, Default)]
pub(crate) struct EventIds {
    /// The texts of the IDs kept as text.
    text: String,
    /// Per ID: [`NUMBERED`] with the prefix and counter, or the text's
    /// start (low 32 bits) and length (the next 31).
    entries: Vec<u64>,
    prefixes: Vec<Box<str>>,
    prefix_numbers: FastHashMap<Box<str>, u32>,
    /// The prefix last numbered: a trace's records share one.
    last_prefix: Option<u32>,
}

/// An event ID as [`EventIds`] holds it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StoredId<'a> {
    Text(&'a str),
    /// `prefix/counter`, the counter in decimal without leading zeros.
    Numbered(&'a str, u64),
}

impl EventIds {
    /// Room for `count` more IDs' entries (the text of IDs kept as text
    /// grows as it must: most are numbered and take none).
    pub(crate) fn reserve(&mut self, count: usize) {
        self.entries.reserve(count);
    }

    pub(crate) fn push(&mut self, id: &str) -> u32 {
        let entry = match self.numbered(id) {
            Some(entry) => entry,
            None => {
                // Past 4 GiB of ID text (tens of millions of long IDs kept as
                // text) the start saturates and the ID reads short, as
                // the resolver's caps on its tables would have stopped it.
                let start = u32::try_from(self.text.len()).unwrap_or(u32::MAX);
                let length = u64::try_from(id.len()).unwrap_or(u64::MAX).min((1 << 31) - 1);
                self.text.push_str(id);
                u64::from(start) | (length << 32)
            }
        };
        self.entries.push(entry);
        (self.entries.len() - 1) as u32
    }

    /// The packed entry of an ID of the shape `prefix/counter`.
    fn numbered(&mut self, id: &str) -> Option<u64> {
        let slash = id.rfind('/')?;
        let (prefix, digits) = (&id[..slash], &id.as_bytes()[slash + 1..]);
        let canonical = !digits.is_empty()
            && digits.len() <= MAX_DIGITS
            && digits.iter().all(u8::is_ascii_digit)
            && (digits[0] != b'0' || digits.len() == 1);
        if !canonical {
            return None;
        }
        let counter = digits.iter().fold(0u64, |value, &digit| value * 10 + u64::from(digit - b'0'));
        let number = match self.last_prefix {
            Some(last) if *self.prefixes[last as usize] == *prefix => last,
            _ => match self.prefix_numbers.get(prefix) {
                Some(&number) => number,
                None if self.prefixes.len() < MAX_PREFIXES => {
                    let number = self.prefixes.len() as u32;
                    self.prefixes.push(prefix.into());
                    self.prefix_numbers.insert(prefix.into(), number);
                    number
                }
                None => return None,
            },
        };
        self.last_prefix = Some(number);
        Some(NUMBERED | (u64::from(number) << COUNTER_BITS) | counter)
    }

    pub(crate) fn get(&self, handle: u32) -> StoredId<'_> {
        let entry = self.entries[handle as usize];
        if entry & NUMBERED != 0 {
            let prefix = ((entry & !NUMBERED) >> COUNTER_BITS) as usize;
            StoredId::Numbered(&self.prefixes[prefix], entry & ((1 << COUNTER_BITS) - 1))
        } else {
            let start = (entry & u64::from(u32::MAX)) as usize;
            let length = (entry >> 32) as usize;
            StoredId::Text(self.text.get(start..start + length).unwrap_or_default())
        }
    }
}

impl StoredId<'_> {
    /// The ID's bytes: the text, or the prefix, a slash and the digits.
    fn bytes(self) -> impl Iterator<Item = u8> {
        let (head, counter) = match self {
            StoredId::Text(text) => (text, None),
            StoredId::Numbered(prefix, counter) => (prefix, Some(counter)),
        };
        let tail = counter.map(|counter| std::iter::once(b'/').chain(Decimal::new(counter).into_bytes()));
        head.bytes().chain(tail.into_iter().flatten())
    }

    /// Orders as the texts do.
    pub(crate) fn cmp_text(self, other: &str) -> Ordering {
        match self {
            StoredId::Text(text) => text.cmp(other),
            StoredId::Numbered(..) => self.bytes().cmp(other.bytes()),
        }
    }

    pub(crate) fn to_text(self) -> String {
        match self {
            StoredId::Text(text) => text.to_owned(),
            StoredId::Numbered(prefix, counter) => format!("{prefix}/{counter}"),
        }
    }
}

impl PartialEq for StoredId<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for StoredId<'_> {}

impl PartialOrd for StoredId<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for StoredId<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (*self, *other) {
            (StoredId::Text(a), StoredId::Text(b)) => a.cmp(b),
            (a, b) => a.bytes().cmp(b.bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ids() -> impl Strategy<Value = Vec<String>> {
        let id = prop_oneof![
            // Numbered, with and without the canonical shape.
            ("[ab/]{0,6}", 0u64..2_000_000_000_000).prop_map(|(prefix, n)| format!("{prefix}/{n}")),
            ("[ab]{0,3}", "[0-9]{1,14}").prop_map(|(prefix, digits)| format!("{prefix}/{digits}")),
            "[ab/0-9é]{0,8}",
        ];
        proptest::collection::vec(id, 0..40)
    }

    proptest! {
        /// Every ID reads back as its text, and IDs compare as their texts.
        #[test]
        fn stored_ids_are_their_texts(ids in ids()) {
            let mut stored = EventIds::default();
            let handles: Vec<u32> = ids.iter().map(|id| stored.push(id)).collect();
            for (a, &ha) in ids.iter().zip(&handles) {
                prop_assert_eq!(&stored.get(ha).to_text(), a);
                for (b, &hb) in ids.iter().zip(&handles) {
                    prop_assert_eq!(stored.get(ha).cmp(&stored.get(hb)), a.cmp(b));
                    prop_assert_eq!(stored.get(ha).cmp_text(b), a.as_str().cmp(b.as_str()));
                }
            }
        }
    }

    #[test]
    fn counters_are_packed_and_odd_spellings_are_text() {
        let mut stored = EventIds::default();
        for id in
            ["run.json/1", "run.json/123456789012", "run.json/007", "run.json/1234567890123", "x/", "plain"]
        {
            stored.push(id);
        }
        let kinds: Vec<bool> = (0..6).map(|h| matches!(stored.get(h), StoredId::Numbered(..))).collect();
        assert_eq!(kinds, [true, true, false, false, false, false]);
        assert_eq!(stored.text, "run.json/007run.json/1234567890123x/plain");
    }
}
