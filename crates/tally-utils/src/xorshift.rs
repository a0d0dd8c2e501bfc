//! A deterministic pseudo-random sequence with no dependency, for the
//! generated inputs of tests and benches: the same numbers on every run and
//! machine, so a failure replays.

/// Marsaglia's xorshift64 (shifts 13, 7, 17): fast and good enough to
/// scatter test data; not for anything that must be unpredictable.
#[derive(Debug, Clone)]
pub struct XorShift64 {
    state: u64,
}

impl XorShift64 {
    /// The sequence from `seed`, which should be nonzero: from zero every
    /// number is zero.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next number of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_marsaglias_xorshift64() {
        // Marsaglia's xorshift64 step written out: x ^= x << 13; x ^= x >> 7;
        // x ^= x << 17.
        let mut by_hand = 1u64;
        let mut sequence = XorShift64::new(1);
        for _ in 0..1000 {
            let shifted = by_hand ^ (by_hand << 13);
            let shifted = shifted ^ (shifted >> 7);
            by_hand = shifted ^ (shifted << 17);
            assert_eq!(sequence.next_u64(), by_hand);
        }
        // The first value from seed 1: 1 ^ 1<<13 = 0x2001; ^ (0x2001>>7 = 0x40)
        // = 0x2041; ^ 0x2041<<17 = 0x4082_0000 -> 0x4082_2041.
        assert_eq!(XorShift64::new(1).next_u64(), 0x4082_2041);
    }
}
