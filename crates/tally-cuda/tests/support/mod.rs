//! Running a test against the fake driver in tests/fake_driver/libcuda.c
//! (tally-cuda's tests, and tally-tests' run of the GPU check program).
//!
//! The dynamic loader reads `LD_LIBRARY_PATH` when a process starts, so the
//! test re-runs its own binary, filtered to itself, with the fake library's
//! folder first on the path and `TALLY_CUDA_FAKE_DRIVER` naming the test;
//! in that child the body runs.

#![allow(dead_code, reason = "each test binary uses part of the support")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Which fake driver to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fake {
    /// One working device.
    Working,
    /// `cuInit` fails with `CUDA_ERROR_NO_DEVICE`; no error-name functions.
    NoDevice,
}

const CHILD_VARIABLE: &str = "TALLY_CUDA_FAKE_DRIVER";

/// Whether this process is the child running `name` on a fake driver.
pub fn is_child(name: &str) -> bool {
    std::env::var(CHILD_VARIABLE).is_ok_and(|value| value == name)
}

/// Runs `body` in a child process of this test binary whose `libcuda.so` is
/// the fake. `name` must be the test function's name. Prints "skipped" and
/// returns when no C compiler is there to build the fake.
pub fn on_fake_driver(name: &str, fake: Fake, extra_env: &[(&str, &Path)], body: impl FnOnce()) {
    if is_child(name) {
        body();
        return;
    }
    let library = match fake_library(fake) {
        Ok(dir) => dir,
        Err(why) => {
            return tally_testkit::skip(format!("cannot build the fake CUDA driver ({why})"));
        }
    };
    let exe = std::env::current_exe().expect("a test binary knows its own path");
    let search = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(rest) => {
            let mut paths = vec![library.clone()];
            paths.extend(std::env::split_paths(&rest));
            std::env::join_paths(paths).expect("paths without separators")
        }
        None => library.clone().into_os_string(),
    };
    let mut command = Command::new(exe);
    command
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("LD_LIBRARY_PATH", search)
        .env(CHILD_VARIABLE, name);
    for (key, value) in extra_env {
        command.env(key, value);
    }
    let output = command.output().expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the child on the fake driver failed:\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    // A filter that matched nothing would pass silently.
    assert!(stdout.contains("1 passed"), "the child ran no test:\n{stdout}\n{stderr}");
    eprint!("{stderr}");
}

/// Builds the fake once per test binary and variant; the folder holding
/// `libcuda.so`.
fn fake_library(fake: Fake) -> Result<PathBuf, String> {
    static WORKING: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    static NO_DEVICE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let cell = match fake {
        Fake::Working => &WORKING,
        Fake::NoDevice => &NO_DEVICE,
    };
    cell.get_or_init(|| build(fake)).clone()
}

/// The fake's C source. This module is also tally-tests' (its
/// `cuda_gpu_check` test), where the manifest folder is the workspace's
/// `tests/`.
fn fake_source() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cuda = if manifest.ends_with("tally-cuda") {
        manifest.to_owned()
    } else {
        manifest.join("../crates/tally-cuda")
    };
    cuda.join("tests/fake_driver/libcuda.c")
}

fn build(fake: Fake) -> Result<PathBuf, String> {
    let source = fake_source();
    let dir = tempfile::Builder::new()
        .prefix("tally-cuda-fake-")
        .tempdir()
        .map_err(|error| error.to_string())?
        // Kept for the child; the OS temp cleaner removes it.
        .keep();
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let mut command = Command::new(&compiler);
    command.args(["-shared", "-fPIC", "-O1", "-o"]).arg(dir.join("libcuda.so")).arg(&source);
    if fake == Fake::NoDevice {
        command.arg("-DNO_DEVICE");
    }
    command.arg("-lpthread");
    let output = command.output().map_err(|error| format!("{compiler}: {error}"))?;
    if !output.status.success() {
        return Err(format!("{compiler} failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    Ok(dir)
}
