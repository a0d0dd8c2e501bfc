//! Time spans and busy intervals, in integer nanoseconds.

use crate::ValidationError;

/// An optional start and end on one clock, with `end >= start` when both are
/// known. Requests, iterations, stages and activities have one; a clock
/// alignment's validity window is one too.
///
/// ```
/// use tally_core::Span;
/// assert_eq!(Span::new(Some(5), Some(9)).unwrap().duration_ns(), Some(4));
/// assert!(Span::new(Some(9), Some(5)).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Span {
    start_ns: Option<u64>,
    end_ns: Option<u64>,
}

impl Span {
    /// A span with neither end known.
    pub const UNKNOWN: Span = Span { start_ns: None, end_ns: None };

    /// Validates `end >= start` when both are known.
    pub fn new(start_ns: Option<u64>, end_ns: Option<u64>) -> Result<Self, ValidationError> {
        if let (Some(start), Some(end)) = (start_ns, end_ns)
            && end < start
        {
            return Err(ValidationError::new("end_ns", "end_ns must be >= start_ns"));
        }
        Ok(Self { start_ns, end_ns })
    }

    /// The start, when known.
    pub fn start_ns(&self) -> Option<u64> {
        self.start_ns
    }

    /// The end, when known.
    pub fn end_ns(&self) -> Option<u64> {
        self.end_ns
    }

    /// Both ends, when both are known.
    pub fn bounds(&self) -> Option<(u64, u64)> {
        Some((self.start_ns?, self.end_ns?))
    }

    /// `end - start`, when both are known. Whether that is a duration depends
    /// on the clock; see [`crate::CorrelationEvent::elapsed_ns`].
    pub fn duration_ns(&self) -> Option<u64> {
        self.bounds().map(|(start, end)| end - start)
    }
}

/// A half-open interval `[start_ns, end_ns)` in which a device was busy.
///
/// ```
/// use tally_core::Interval;
/// let busy = Interval::new(10, 25).unwrap();
/// assert_eq!(busy.duration_ns(), 15);
/// assert!(Interval::new(25, 10).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Interval {
    start_ns: u64,
    end_ns: u64,
}

impl Interval {
    /// `None` when `end_ns < start_ns`.
    #[inline]
    pub fn new(start_ns: u64, end_ns: u64) -> Option<Self> {
        (end_ns >= start_ns).then_some(Self { start_ns, end_ns })
    }

    /// Inclusive start.
    #[inline]
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Exclusive end.
    #[inline]
    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }

    /// `end - start`.
    #[inline]
    pub fn duration_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}
