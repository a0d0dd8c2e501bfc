//! Fuzz target `xplane`: see `tally_tests::fuzz_checks::xplane` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tally_tests::fuzz_checks::xplane(data));
