//! The profiler's clock: monotonic nanoseconds, replaceable for tests.

use std::time::Instant;

/// Where the profiler reads time. Durations are differences of two readings
/// in integer nanoseconds; the default is the monotonic clock.
///
/// A test injects readings to make a profile deterministic:
///
/// ```
/// use tally_profile::Clock;
/// struct Script(std::vec::IntoIter<u64>);
/// impl Clock for Script {
///     fn now_ns(&mut self) -> u64 {
///         self.0.next().unwrap_or(0)
///     }
/// }
/// let mut clock = Script(vec![0, 1_500_000].into_iter());
/// assert_eq!(clock.now_ns(), 0);
/// assert_eq!(clock.now_ns(), 1_500_000);
/// ```
pub trait Clock {
    /// The current reading in nanoseconds.
    fn now_ns(&mut self) -> u64;
}

/// The monotonic clock (`std::time::Instant`), in nanoseconds since the
/// clock was made.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose zero is now.
    pub fn new() -> Self {
        Self { origin: Instant::now() }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&mut self) -> u64 {
        // 2^64 ns is 584 years: the conversion cannot saturate in practice.
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}
