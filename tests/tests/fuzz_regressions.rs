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
