//! Fuzz target `share_model`: see `tally_tests::fuzz_checks::share_model` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tally_tests::fuzz_checks::share_model(data));
