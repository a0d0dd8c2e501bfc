//! Cross-crate, end-to-end and property suites live in `tests/tests/`; the
//! generators they share live here.

pub mod fuzz_checks;
pub mod runs;
