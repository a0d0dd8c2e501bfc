//! The fuzz targets' checks in a plain `cargo test`: every crash input ever
//! found (`fuzz/regressions/TARGET/`, each fixed and kept) and every seed
//! of the corpora, through the same check the libFuzzer target runs.

use std::path::{Path, PathBuf};

use tally_tests::fuzz_checks::{TARGETS, seeds};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_crash_found_by_fuzzing_stays_fixed() {
    let regressions = root().join("fuzz/regressions");
    let mut replayed = 0;
    for (target, check) in TARGETS {
        for entry in std::fs::read_dir(regressions.join(target)).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|name| name == "README.md") {
                continue;
            }
            let bytes = std::fs::read(&path).expect("a regression input");
            check(&bytes);
            replayed += 1;
        }
    }
    eprintln!("replayed {replayed} regression inputs");
}

#[test]
fn every_seed_passes_every_check_of_its_target() {
    for (target, check) in TARGETS {
        let seeds = seeds(target, &root());
        assert!(!seeds.is_empty(), "{target} has no seeds");
        for (name, bytes) in &seeds {
            let outcome = std::panic::catch_unwind(|| check(bytes));
            assert!(outcome.is_ok(), "{target}: seed {name} fails its check");
        }
    }
}

/// The `partial` seeds are made by this build from fixtures: the whole ones
/// read back, the damaged ones are refused, so the fuzzer starts from both
/// sides of the reader's checks.
#[test]
fn the_partial_seeds_are_read_or_refused_as_made() {
    let seeds = seeds("partial", &root());
    let whole = ["serving-run.part", "kineto-minimal.part"];
    for name in whole {
        assert!(seeds.iter().any(|(seed, _)| seed == name), "no seed {name}");
    }
    for (name, bytes) in &seeds {
        let read = tally_partial::Partial::from_bytes(bytes, name);
        if whole.contains(&name.as_str()) {
            let partial = read.expect("a whole seed reads back");
            assert!(partial.events() > 0, "{name} holds events");
        } else {
            assert!(read.is_err(), "the damaged seed {name} is refused");
        }
    }
}
