//! Cross-crate, end-to-end and property suites live in `tests/tests/`.
