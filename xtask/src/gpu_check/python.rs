//! The `python` check: the `tally` Python package's GPU paths, the pytest
//! tests marked `gpu` (crates/tally-python/tests): tally.profiling's
//! adapters against vertebrae's on CUDA (torch's caching-allocator window,
//! Keras on torch), and TensorFlow's and JAX's where their wheels see a GPU
//! (the test venv installs their CPU builds, so those say they skipped).
//!
//! It needs the reference venv (`cargo xtask test` or `cargo xtask python`
//! makes it); the package is built and installed into it first.

use std::path::Path;
use std::process::Command;

use super::{Outcome, run_with_timeout};

pub(super) fn check(root: &Path) -> anyhow::Result<Outcome> {
    if !Path::new("/dev/nvidiactl").exists() {
        return Ok(Outcome::Skipped("no NVIDIA device (/dev/nvidiactl is absent); nothing built".to_owned()));
    }
    let Some(python) = crate::python::existing() else {
        return Ok(Outcome::Skipped(
            "no reference venv with vertebrae (run `cargo xtask python` first)".to_owned(),
        ));
    };
    crate::python::install_package(&python)?;
    let log = root.join("target/gpu-check-python-skips.log");
    std::fs::write(&log, "")?;
    let mut command = Command::new(&python);
    command.current_dir(root).env("TALLY_SKIP_LOG", &log).args([
        "-m",
        "pytest",
        "-q",
        "-rs",
        "-p",
        "no:cacheprovider",
        "-m",
        "gpu",
        "crates/tally-python/tests",
    ]);
    let (success, output) = run_with_timeout(&mut command, super::PROGRAM_TIMEOUT)?;
    print!("{output}");
    let skipped = std::fs::read_to_string(&log)?;
    let ran = output.lines().last().is_some_and(|line| line.contains(" passed"));
    Ok(match (success, ran) {
        (false, _) => Outcome::Failed("a pytest test above failed".to_owned()),
        (true, true) => Outcome::Passed,
        (true, false) => Outcome::Skipped(format!(
            "every gpu test skipped: {}",
            skipped.lines().next().unwrap_or("no reason recorded")
        )),
    })
}
