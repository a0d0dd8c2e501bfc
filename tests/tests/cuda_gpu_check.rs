//! tally-cuda's GPU check program (examples/cuda_gpu_check.rs), the one
//! `cargo xtask gpu-check` runs: on a real GPU (on a machine without a
//! driver it says it skipped and why), and on tally-cuda's fake `libcuda`
//! (crates/tally-cuda/tests/fake_driver), so its paths run without a GPU.

#[allow(dead_code, reason = "the check's main is the example's, not the test's")]
#[path = "../examples/cuda_gpu_check.rs"]
mod gpu_check;

#[path = "../../crates/tally-cuda/tests/support/mod.rs"]
mod support;

use support::{Fake, on_fake_driver};

#[test]
fn the_gpu_checks_pass_on_a_gpu() {
    if let Err(error) = tally_cuda::driver_available() {
        return tally_testkit::skip(error.reason());
    }
    match gpu_check::run() {
        gpu_check::Outcome::Skipped(reason) => tally_testkit::skip(reason),
        gpu_check::Outcome::Ran { device, rows } => {
            let table = gpu_check::table(&device, &rows);
            eprintln!("{table}");
            assert!(rows.iter().all(|row| row.passed), "a GPU check failed:\n{table}");
        }
    }
}

#[test]
fn the_gpu_check_program_runs_on_the_fake_driver() {
    on_fake_driver("the_gpu_check_program_runs_on_the_fake_driver", Fake::Working, &[], || {
        let gpu_check::Outcome::Ran { device, rows } = gpu_check::run() else {
            panic!("the fake driver is a driver")
        };
        let table = gpu_check::table(&device, &rows);
        eprintln!("{table}");
        let checks: Vec<&str> = rows.iter().map(|row| row.check).collect();
        assert_eq!(
            checks,
            ["kernel_vs_host", "kernel_length", "memory_window", "calibration", "aligned_order"]
        );
        for row in &rows {
            // The fake spins on the host CPU, so a loaded machine stretches
            // its "kernel"; only a GPU can be held to the requested length.
            if row.check != "kernel_length" {
                assert!(row.passed, "{} failed on the fake driver:\n{table}", row.check);
            }
        }
    });
}
