//! The index of rows by their 128-bit key hashes (event identities,
//! activity references): open addressing over row numbers, the keys kept
//! beside the rows in chunked storage.

use tally_utils::chunked::Chunked;

/// An index of rows by their 128-bit key hashes, stored beside the rows:
/// open addressing over row numbers, each slot tagged with 32 more bits of
/// its key so that a probe rarely reads a stored key, so a slot costs eight
/// bytes where a map entry holding the key would cost thirty-two.
#[derive(Debug, Default)]
pub(super) struct KeyIndex {
    /// `(tag << 32) | row`, [`EMPTY`] where empty; the length is a power of
    /// two.
    slots: Vec<u64>,
    keys: Chunked<u128>,
}

/// An empty slot (no row is numbered `u32::MAX`).
const EMPTY: u64 = u64::MAX;

impl KeyIndex {
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    pub(super) fn reserve(&mut self, additional: usize) {
        self.grow_to(self.keys.len() + additional);
    }

    /// The slot a key starts probing at, and its tag. The key is a hash
    /// already: its low bits pick the slot, its high bits are the tag.
    fn place(key: u128, mask: usize) -> (usize, u64) {
        ((key as usize) & mask, ((key >> 96) as u64) << 32)
    }

    /// Room for `count` keys at a load of at most 7/8.
    fn grow_to(&mut self, count: usize) {
        let wanted = (count + count / 7 + 1).next_power_of_two().max(16);
        if wanted > self.slots.len() {
            self.rehash(wanted);
        }
    }

    /// `size` slots (a power of two) holding every key.
    fn rehash(&mut self, size: usize) {
        self.slots = vec![EMPTY; size];
        let mask = size - 1;
        for (row, key) in self.keys.iter().enumerate() {
            let (mut at, tag) = Self::place(*key, mask);
            while self.slots[at] != EMPTY {
                at = (at + 1) & mask;
            }
            self.slots[at] = tag | row as u64;
        }
    }

    /// The slot `key` starts probing at (0 while the table is empty).
    #[inline]
    pub(super) fn slot_at(&self, key: u128) -> u64 {
        match self.slots.len() {
            0 => 0,
            size => self.slots[Self::place(key, size - 1).0],
        }
    }

    /// The row of `key`, or `Err` with the row number it gets when added.
    pub(super) fn find_or_add(&mut self, key: u128) -> Result<u32, u32> {
        if (self.keys.len() + 1) * 8 > self.slots.len() * 7 {
            // Twice the slots. Asking `grow_to` for room for twice the keys
            // rounds a full table's 7/8 of the slots, doubled and given
            // its 1/7 of headroom, up past the next power of two: four
            // times the slots, the table at most a quarter full.
            self.rehash((self.slots.len() * 2).max(16));
        }
        let mask = self.slots.len() - 1;
        let (mut at, tag) = Self::place(key, mask);
        loop {
            match self.slots[at] {
                EMPTY => {
                    let row = self.keys.len() as u32;
                    self.slots[at] = tag | u64::from(row);
                    self.keys.push(key);
                    return Err(row);
                }
                slot if slot & !0xffff_ffff == tag && self.keys[slot as u32 as usize] == key => {
                    return Ok(slot as u32);
                }
                _ => at = (at + 1) & mask,
            }
        }
    }
}
