//! Checks on a real GPU: the same program `cargo xtask gpu-check` runs. On a
//! machine without a driver they say they skipped and why.

#[allow(dead_code, reason = "the check's main is the example's, not the test's")]
#[path = "../examples/gpu_check.rs"]
mod gpu_check;

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
