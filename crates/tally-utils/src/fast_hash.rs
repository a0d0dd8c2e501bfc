//! A fast hasher for the short keys of in-memory tables.
//!
//! Resolution hashes every event's identity (three short strings) and every
//! entity reference once or twice, and a trace import interns every event's
//! name; std's SipHash spends more time on that than the rest of the work
//! around it. The keys come from the files being read, not from an
//! adversary who could force collisions, so denial-of-service resistance
//! buys nothing here.

use std::hash::{BuildHasherDefault, Hasher};

/// Odd constants from the golden ratio and from PCG, as in foldhash.
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
const FINISH: u64 = 0x5851_f42d_4c95_7f2d;

/// The high and low halves of the 128-bit product, folded together: every
/// input bit reaches every output bit in one step (also the mixing step of
/// [`crate::content_hash::ContentHasher`]).
#[inline]
pub fn folded_multiply(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

/// `bytes` as little-endian words of eight bytes, the last padded with
/// zeros: a hasher that must tell `ab` from `ab\0` hashes the length too.
#[inline]
pub fn for_each_word(bytes: &[u8], mut each: impl FnMut(u64)) {
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        each(u64::from_le_bytes(word));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        each(u64::from_le_bytes(word));
    }
}

/// One folded multiplication per 8-byte word (the mixing step of foldhash
/// and aHash's fallback), and one more to finish.
#[derive(Debug, Default, Clone, Copy)]
pub struct FastHasher {
    hash: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = folded_multiply(self.hash ^ word, MULTIPLIER);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for_each_word(bytes, |word| self.add(word));
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        folded_multiply(self.hash, FINISH)
    }
}

/// Builds [`FastHasher`]s, for `HashMap<K, V, FastBuildHasher>`.
pub type FastBuildHasher = BuildHasherDefault<FastHasher>;

/// A `HashMap` with [`FastHasher`].
pub type FastHashMap<K, V> = std::collections::HashMap<K, V, FastBuildHasher>;

/// A `HashSet` with [`FastHasher`].
pub type FastHashSet<K> = std::collections::HashSet<K, FastBuildHasher>;

/// Mixes one more word into a hash, as [`FastHasher`] does for each word
/// (a namespace into an ID's hash, say).
#[inline]
pub fn mix(hash: u64, word: u64) -> u64 {
    folded_multiply(hash ^ word, MULTIPLIER)
}
