//! Resource-profile types (vertebrae's interchange format). Filled in by the
//! profiler issue.
