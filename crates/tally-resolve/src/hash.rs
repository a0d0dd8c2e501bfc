//! A fast hasher for the short string keys of resolution.
//!
//! Resolution hashes every event's identity (three short strings) and every
//! entity reference once or twice; std's SipHash spends more time on that
//! than the rest of resolution together. The keys come from the artifact
//! being read, not from an adversary who could force collisions, so
//! denial-of-service resistance buys nothing here.

use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};

/// Odd constants from the golden ratio and from PCG, as in foldhash.
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
const FINISH: u64 = 0x5851_f42d_4c95_7f2d;

/// The high and low halves of the 128-bit product, folded together: every
/// input bit reaches every output bit in one step.
#[inline]
fn folded_multiply(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
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
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
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

/// The hash of `key` with [`FastHasher`].
#[inline]
pub(crate) fn prehash<K: Hash + ?Sized>(key: &K) -> u64 {
    FastBuildHasher::default().hash_one(key)
}

/// Mixes a small number into a hash (a namespace into an ID's hash).
#[inline]
pub(crate) fn combine(hash: u64, small: u32) -> u64 {
    folded_multiply(hash ^ u64::from(small), MULTIPLIER)
}

/// A key with its hash computed beforehand.
///
/// Resolution hashes every key in one pass over the events, while their
/// strings are read anyway; the tables then probe by the stored hash and
/// read a key's strings only to confirm a match. A probe that had to hash
/// would read strings scattered over the heap, one cache miss each.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prehashed<K> {
    hash: u64,
    key: K,
}

impl<K: Hash> Prehashed<K> {
    /// Hashes `key` now.
    #[inline]
    pub(crate) fn new(key: K) -> Self {
        Self { hash: prehash(&key), key }
    }
}

impl<K> Prehashed<K> {
    /// With a hash computed earlier by [`prehash`] of the same key.
    #[inline]
    pub(crate) fn with_hash(hash: u64, key: K) -> Self {
        Self { hash, key }
    }
}

impl<K> Hash for Prehashed<K> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl<K: PartialEq> PartialEq for Prehashed<K> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.key == other.key
    }
}

impl<K: Eq> Eq for Prehashed<K> {}

/// Hands a [`Prehashed`] key's hash through unchanged.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PassThrough {
    hash: u64,
    fallback: FastHasher,
}

impl Hasher for PassThrough {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Only `Prehashed` keys reach this hasher; anything else still
        // gets a proper hash.
        self.fallback.write(bytes);
        self.hash = self.fallback.finish();
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.hash = value;
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A map from [`Prehashed`] keys.
pub(crate) type PrehashedMap<K, V> =
    std::collections::HashMap<Prehashed<K>, V, BuildHasherDefault<PassThrough>>;
