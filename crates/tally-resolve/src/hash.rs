//! The fast hasher's tables as resolution uses them: keys hashed once,
//! beforehand, and probed by that hash.

use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};

use tally_utils::fast_hash::{FastBuildHasher, FastHasher};

/// The hash of `key` with [`FastHasher`].
#[inline]
pub(crate) fn prehash<K: Hash + ?Sized>(key: &K) -> u64 {
    FastBuildHasher::default().hash_one(key)
}

/// Mixes a small number into a hash (a namespace into an ID's hash).
#[inline]
pub(crate) fn combine(hash: u64, small: u32) -> u64 {
    tally_utils::fast_hash::mix(hash, u64::from(small))
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
