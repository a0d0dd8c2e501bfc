//! Fuzz target `profile`: see `tally_tests::fuzz_checks::profile` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tally_tests::fuzz_checks::profile(data));
