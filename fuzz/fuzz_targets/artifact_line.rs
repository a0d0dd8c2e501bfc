//! Fuzz target `artifact_line`: see `tally_tests::fuzz_checks::artifact_line` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tally_tests::fuzz_checks::artifact_line(data));
