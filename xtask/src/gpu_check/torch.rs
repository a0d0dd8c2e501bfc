//! The `torch` check: tally-torch's check program
//! (tests/examples/torch_gpu_check.rs, feature `torch` of tally-tests): adapter metadata and
//! synchronization on cuda:0, the caching-allocator window (baseline, peaks,
//! reset), a profiled TorchScript module against its CPU output,
//! `profile_torchscript` on CUDA, device change and two-device models (with
//! two GPUs), and an out-of-range device index.
//!
//! Building tally-torch needs libtorch 2.13.0 from a Python install of
//! torch==2.13.0 (see crates/tally-torch): the first of TALLY_PYTHON,
//! `.venv/bin/python` (made by `cargo xtask test`) and `python3` that has it
//! is put first on PATH for the build.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Outcome, build_example_with, run_program};

const TORCH_VERSION: &str = "2.13.0";

pub(super) fn check(root: &Path) -> anyhow::Result<Outcome> {
    if !Path::new("/dev/nvidiactl").exists() {
        return Ok(Outcome::Skipped("no NVIDIA device (/dev/nvidiactl is absent); nothing built".to_owned()));
    }
    let Some(python) = torch_python(root) else {
        return Ok(Outcome::Skipped(format!(
            "no python with torch=={TORCH_VERSION} (TALLY_PYTHON, .venv, python3) to build libtorch code against; \
             run `cargo xtask python` first"
        )));
    };
    let path = path_with_python_first(&python);
    let program = build_example_with(root, "tally-tests", "torch_gpu_check", &["torch"], |command| {
        command.env("PATH", &path);
    })?;
    run_program(root, &program)
}

/// `PATH` with `python`'s folder first, so the torch-sys build script finds
/// that interpreter's libtorch (also used by `cargo xtask bench torch`).
pub(crate) fn path_with_python_first(python: &Path) -> OsString {
    let mut path = OsString::new();
    if let Some(bin) = python.parent().filter(|bin| !bin.as_os_str().is_empty()) {
        path.push(bin);
        path.push(":");
    }
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

/// The first interpreter that imports torch of the version tch 0.26 wants
/// (also used by `cargo xtask bench torch`).
pub(crate) fn torch_python(root: &Path) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> =
        std::env::var_os("TALLY_PYTHON").map(PathBuf::from).into_iter().collect();
    candidates.push(root.join(".venv/bin/python"));
    candidates.push(PathBuf::from("python3"));
    let probe = format!(
        "import sys, torch; sys.exit(0 if torch.__version__.split('+')[0] == '{TORCH_VERSION}' else 1)"
    );
    candidates.into_iter().find(|python| {
        Command::new(python).args(["-c", &probe]).output().is_ok_and(|output| output.status.success())
    })
}
