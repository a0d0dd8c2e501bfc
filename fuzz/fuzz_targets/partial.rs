//! Fuzz target `partial`: see `tally_tests::fuzz_checks::partial` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tally_tests::fuzz_checks::partial(data));
