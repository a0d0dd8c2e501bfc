//! `tally cuda-info` as a person runs it: on this machine's driver (or its
//! absence), and on the fake driver of crates/tally-cuda/tests/fake_driver,
//! which stands in for a GPU machine.

#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn tally(library_path: Option<&Path>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tally"));
    command.arg("cuda-info").args(args);
    if let Some(dir) = library_path {
        command.env("LD_LIBRARY_PATH", dir);
    }
    command.output().unwrap()
}

/// Builds the fake libcuda (with `-DNO_DEVICE` when asked) into a new
/// folder; `None` (after saying so) when no C compiler works.
fn fake_driver(dir: &Path, no_device: bool) -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tally-cuda/tests/fake_driver/libcuda.c");
    let mut command = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".to_owned()));
    command.args(["-shared", "-fPIC", "-o"]).arg(dir.join("libcuda.so")).arg(source).arg("-lpthread");
    if no_device {
        command.arg("-DNO_DEVICE");
    }
    match command.output() {
        Ok(output) if output.status.success() => Some(dir.to_path_buf()),
        Ok(output) => {
            let why = String::from_utf8_lossy(&output.stderr);
            tally_testkit::skip(format!("cannot build the fake CUDA driver: {why}"));
            None
        }
        Err(error) => {
            tally_testkit::skip(format!("cannot build the fake CUDA driver: {error}"));
            None
        }
    }
}

#[test]
fn this_machine_gets_an_answer_and_exit_0() {
    let output = tally(None, &[]);
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let json: Value = serde_json::from_slice(&tally(None, &["--format", "json"]).stdout).unwrap();
    match tally_cuda::driver_available() {
        Err(error) => {
            assert!(text.starts_with("no CUDA driver found ("), "{text}");
            assert!(text.ends_with("status: unavailable\n"), "{text}");
            assert_eq!(json["status"], "unavailable");
            assert_eq!(json["reason"], error.reason());
        }
        Ok(()) => {
            assert!(text.starts_with("CUDA driver: "), "{text}");
            assert_eq!(json["status"], "available");
        }
    }
}

#[test]
fn a_gpu_machine_lists_its_devices() {
    let dir = tempfile::tempdir().unwrap();
    let Some(library) = fake_driver(dir.path(), false) else { return };
    let output = tally(Some(&library), &[]);
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("CUDA driver: 12.8 (12080)\ndevices: 1\n"), "{text}");
    assert!(
        text.contains("  0: Fake CUDA Device  GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff  compute 9.0  memory 80.00 GiB total, 79.50 GiB free, 0.50 GiB used\n"),
        "{text}"
    );
    assert!(text.ends_with("status: available\n"), "{text}");
    let json: Value = serde_json::from_slice(&tally(Some(&library), &["--format", "json"]).stdout).unwrap();
    assert_eq!(json["driver_version"], "12.8");
    assert_eq!(json["devices"][0]["uuid"], "GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff");
    assert_eq!(json["devices"][0]["total_bytes"], 80u64 << 30);
    assert_eq!(json["devices"][0]["free_bytes"], (80u64 << 30) - (512 << 20));
}

#[test]
fn a_driver_without_devices_is_unavailable_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let Some(library) = fake_driver(dir.path(), true) else { return };
    let output = tally(Some(&library), &[]);
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("the CUDA driver was found but cuInit failed: CUDA_ERROR_NO_DEVICE"), "{text}");
    assert!(text.ends_with("status: unavailable\n"), "{text}");
}
