//! Which host ranges mark iterations.
//!
//! Two kinds are recognised:
//!
//! - ranges whose name matches the iteration pattern: PyTorch's
//!   `ProfilerStep#N` by default, or what `--iteration-pattern` chooses. Each
//!   becomes an `infer.iteration` of the trace's producer, and holds every
//!   launch made by any thread of its process while it is open (PyTorch
//!   launches backward kernels from the autograd thread, not the one that
//!   opened the step);
//! - stormlog's `stormlog.iteration/<producer_id>/<iteration_id>` ranges,
//!   named by an engine for its own iterations. They link launches on their
//!   own thread only, as stormlog does, and emit no iteration: the engine's
//!   artifact holds it.

use regex::Regex;
use tally_core::EntityRef;

use crate::collect::SpanScope;

/// stormlog's prefix for iteration ranges.
pub const ITERATION_RANGE_PREFIX: &str = "stormlog.iteration/";

/// The default iteration pattern: PyTorch profiler steps.
pub const DEFAULT_ITERATION_PATTERN: &str = r"^ProfilerStep#\d+$";

/// The compiled default pattern.
pub fn default_pattern() -> Regex {
    // A literal pattern that is known to compile.
    #[allow(clippy::unwrap_used, reason = "constant pattern")]
    Regex::new(DEFAULT_ITERATION_PATTERN).unwrap()
}

/// The iteration a `stormlog.iteration/...` range names, as stormlog's
/// `parse_iteration_range` reads it.
///
/// ```
/// use tally_trace::parse_iteration_range;
/// let named = parse_iteration_range("stormlog.iteration/engine/step-7").unwrap();
/// assert_eq!((named.producer_id(), named.id()), ("engine", "step-7"));
/// assert!(parse_iteration_range("stormlog.iteration/engine").is_none());
/// ```
pub fn parse_iteration_range(name: &str) -> Option<EntityRef> {
    let rest = name.strip_prefix(ITERATION_RANGE_PREFIX)?;
    let (producer_id, iteration_id) = rest.split_once('/')?;
    EntityRef::new(producer_id, iteration_id).ok()
}

/// Decides which range names mark iterations.
#[derive(Debug, Clone)]
pub(crate) struct SpanMatcher {
    pattern: Regex,
}

impl SpanMatcher {
    pub(crate) fn new(pattern: Regex) -> Self {
        Self { pattern }
    }

    pub(crate) fn scope(&self, name: &str) -> Option<SpanScope> {
        if name.starts_with(ITERATION_RANGE_PREFIX) {
            return parse_iteration_range(name).map(|_| SpanScope::Thread);
        }
        self.pattern.is_match(name).then_some(SpanScope::Process)
    }
}
