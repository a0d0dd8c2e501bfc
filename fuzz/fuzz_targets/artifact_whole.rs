//! Fuzz target `artifact_whole`: see `tally_tests::fuzz_checks::artifact_whole` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tally_tests::fuzz_checks::artifact_whole(data));
