//! The interners: distinct values (names, activity classes, entity
//! references, roles) each stored once and named by a number.

use std::hash::Hasher;
use std::sync::Arc;

use tally_core::EntityRef;
use tally_core::view::RefView;

use tally_utils::fast_hash::{FastHashMap, FastHasher};
use tally_utils::intern::Interner;

use super::ActivityClass;

/// Distinct strings (activity kinds and names, clock domains), each stored
/// once and named by its number.
#[derive(Debug, Default)]
pub(super) struct Names {
    names: Interner,
    /// The number last given: consecutive records of a trace repeat a
    /// kernel's name, and comparing ~200 bytes costs less than hashing them.
    last: Option<u32>,
}

impl Names {
    pub(super) fn number(&mut self, name: &str) -> u32 {
        if let Some(last) = self.last
            && self.names.get(last) == Some(name)
        {
            return last;
        }
        let number = self.names.intern(name);
        self.last = Some(number);
        number
    }

    /// The names, indexed by their numbers.
    pub(super) fn into_names(self) -> Vec<Box<str>> {
        self.names.into_strings()
    }
}

/// Distinct [`ActivityClass`]es, numbered.
#[derive(Debug, Default)]
pub(super) struct Classes {
    numbers: FastHashMap<ActivityClass, u32>,
    pub(super) classes: Vec<ActivityClass>,
    last: Option<u32>,
}

impl Classes {
    pub(super) fn number(&mut self, class: ActivityClass) -> u32 {
        if let Some(last) = self.last
            && self.classes[last as usize] == class
        {
            return last;
        }
        let next = self.classes.len() as u32;
        let number = *self.numbers.entry(class).or_insert(next);
        if number == next {
            self.classes.push(class);
        }
        self.last = Some(number);
        number
    }
}

/// Distinct entity references, each stored once and named by a slot,
/// looked up by a borrowed view (no allocation but for a new one).
#[derive(Debug, Default)]
pub(super) struct Refs {
    slots: hashbrown::HashTable<u32>,
    pub(super) refs: Vec<Arc<EntityRef>>,
}

fn ref_hash(reference: RefView<'_>) -> u64 {
    let mut hasher = FastHasher::default();
    hasher.write(reference.producer_id().as_bytes());
    hasher.write_u8(0xff);
    hasher.write(reference.id().as_bytes());
    hasher.finish()
}

impl Refs {
    pub(super) fn slot(&mut self, reference: RefView<'_>) -> u32 {
        let Refs { slots, refs } = self;
        let hash = ref_hash(reference);
        if let Some(&slot) = slots.find(hash, |&slot| refs[slot as usize].view() == reference) {
            return slot;
        }
        let slot = refs.len() as u32;
        refs.push(Arc::new(reference.to_entity_ref()));
        slots.insert_unique(hash, slot, |&slot| ref_hash(refs[slot as usize].view()));
        slot
    }

    pub(super) fn get(&self, slot: u32) -> &EntityRef {
        &self.refs[slot as usize]
    }
}
