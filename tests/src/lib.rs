//! Cross-crate, end-to-end and property suites live in `tests/tests/`; the
//! fuzz checks they share live here, and so does the paired-overhead method
//! of the benchmark programs in `tests/examples/`. The generators of whole runs live in
//! `tally_conformance::runs`, beside the conformance runner that uses them.

pub mod fuzz_checks;
pub mod overhead;
