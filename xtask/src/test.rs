//! `cargo xtask test`: everything CI runs, in the order that fails fastest.
//!
//! It installs what the tests need by itself, so a fresh machine needs only
//! Rust and Python: Debian packages for native pieces, the Python references
//! and runtimes into `.venv`, Holistic Trace Analysis into `.venv-hta`, then
//! format, lint, docs, packaging and every test with every feature.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use crate::python::{ensure_hta_venv, ensure_venv, status};
use crate::workspace_root;

/// Debian packages the tests need (native libraries for optional features).
/// Installed with apt-get only when one is missing.
const APT_PACKAGES: &[&str] = &[
    // tally-distributed's `mpi` feature: Open MPI (mpirun for the end-to-end
    // test) and libclang for the bindgen build of mpi-sys.
    "libopenmpi-dev",
    "openmpi-bin",
    "libclang1-14",
    "libclang-common-14-dev",
    // `tally report`'s pages opened in headless Chromium
    // (crates/tally/tests/report_chromium.rs), and the font docs/report.md's
    // screenshots were drawn with, so a fresh rendering compares with them.
    "chromium",
    "fonts-dejavu-core",
];

pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    let root = workspace_root();
    install_apt_packages()?;
    let python = ensure_venv()?;
    let hta_python = ensure_hta_venv()?;
    let environment = test_environment(&python, &hta_python)?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let cargo_at_root = || {
        let mut command = Command::new(&cargo);
        command.current_dir(&root).envs(environment.iter().map(|(key, value)| (key, value)));
        command
    };
    status(cargo_at_root().args(["fmt", "--all", "--check"]), "cargo fmt --check")?;
    status(
        cargo_at_root().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ]),
        "cargo clippy",
    )?;
    status(
        cargo_at_root()
            .args(["doc", "--workspace", "--no-deps", "--all-features"])
            .env("RUSTDOCFLAGS", "-D warnings"),
        "cargo doc",
    )?;
    package_crates(&cargo_at_root)?;
    // Tests that cannot run here append why to this file (tally-testkit's
    // `skip`); cargo test shows no output of a passing test, so the list is
    // printed here, failed run or not.
    let skip_log = root.join("target").join("skipped-tests.log");
    std::fs::create_dir_all(root.join("target"))?;
    std::fs::write(&skip_log, "")?;
    let tested = status(
        cargo_at_root().args(["test", "--workspace", "--all-features"]).env("TALLY_SKIP_LOG", &skip_log),
        "cargo test",
    )
    .and_then(|()| python_tests(&python, &environment, &skip_log))
    .and_then(|()| wheel_tests());
    print_skips(&skip_log)?;
    tested
}

/// Every publishable crate packages for crates.io: its manifest as a
/// registry sees it (no dev-dependency cycle, no path-only dependency), its
/// README and its files (`cargo package`, not verified: the test run builds
/// them). docs/RELEASING.md.
fn package_crates(cargo_at_root: &dyn Fn() -> Command) -> anyhow::Result<()> {
    // `publish = false`, which `cargo package --workspace` would package too.
    let unpublished = ["tally-python", "tally-testkit", "tally-tests", "xtask"];
    let mut command = cargo_at_root();
    command.args(["package", "--workspace", "--no-verify", "--allow-dirty"]);
    for name in unpublished {
        command.args(["--exclude", name]);
    }
    status(&mut command, "cargo package")
}

/// The `tally` Python package, built into the venv, and its pytest suite
/// (crates/tally-python/tests), after the Rust tests.
fn python_tests(python: &Path, environment: &[(String, OsString)], skip_log: &Path) -> anyhow::Result<()> {
    crate::python::install_package(python)?;
    status(
        Command::new(python)
            .current_dir(workspace_root())
            .envs(environment.iter().map(|(key, value)| (key, value)))
            .env("TALLY_SKIP_LOG", skip_log)
            // The command the suite compares `tally.trace` with: the debug
            // build `cargo test` just made.
            .env("TALLY_BIN", workspace_root().join("target/debug/tally"))
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "crates/tally-python/tests"]),
        "pytest crates/tally-python/tests",
    )
}

/// The release wheel (`cargo xtask dist`: manylinux_2_28, with the `tally`
/// command) installed into a fresh venv and run with no Rust toolchain on
/// PATH; its command must print what the debug build `cargo test` made
/// prints.
fn wheel_tests() -> anyhow::Result<()> {
    crate::dist::run(&[])?;
    crate::dist::check_wheel(&workspace_root().join("target/debug/tally"))
}

/// The skip lines the tests appended, sorted and without repeats (a test
/// that re-runs itself in a child may skip in both).
fn print_skips(log: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(log)?;
    let lines: std::collections::BTreeSet<&str> =
        text.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    if lines.is_empty() {
        println!("no test skipped");
    } else {
        println!("{} tests skipped:", lines.len());
        for line in lines {
            println!("  {line}");
        }
    }
    Ok(())
}

/// Variables every cargo command of the test run gets: the reference
/// interpreter for the agreement tests, HTA's for the comparisons with it,
/// and the venv first on PATH so build scripts that ask Python (libtorch's)
/// find the venv's packages. `.venv-hta` stays off PATH: its pandas and
/// numpy must not be what a build script finds.
fn test_environment(python: &Path, hta_python: &Path) -> anyhow::Result<Vec<(String, OsString)>> {
    let mut environment = vec![
        ("TALLY_PYTHON".to_owned(), python.as_os_str().to_owned()),
        ("TALLY_HTA_PYTHON".to_owned(), hta_python.as_os_str().to_owned()),
    ];
    if let Some(bin) = python.parent() {
        let mut path = OsString::from(bin);
        if let Some(existing) = std::env::var_os("PATH") {
            path.push(":");
            path.push(existing);
        }
        environment.push(("PATH".to_owned(), path));
    }
    // tally-onnx's tests load ONNX Runtime from the venv's onnxruntime wheel
    // unless the caller points elsewhere.
    if std::env::var_os("ORT_DYLIB_PATH").is_none()
        && let Some(library) = onnxruntime_library(python)
    {
        environment.push(("ORT_DYLIB_PATH".to_owned(), library.into_os_string()));
    }
    Ok(environment)
}

/// `lib/python*/site-packages/onnxruntime/capi/libonnxruntime.so.<version>`
/// of the venv `python` belongs to (the newest, should there be several).
pub(crate) fn onnxruntime_library(python: &Path) -> Option<std::path::PathBuf> {
    let venv = python.parent()?.parent()?;
    let mut found = Vec::new();
    for interpreter in std::fs::read_dir(venv.join("lib")).ok()?.flatten() {
        let capi = interpreter.path().join("site-packages/onnxruntime/capi");
        for entry in std::fs::read_dir(capi).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with("libonnxruntime.so.") {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found.pop()
}

fn install_apt_packages() -> anyhow::Result<()> {
    let missing: Vec<&str> = APT_PACKAGES
        .iter()
        .copied()
        .filter(|package| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", package])
                .output()
                .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).contains("install ok installed"))
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: installing Debian packages {}", missing.join(" "));
    let sudo: &[&str] = if is_root() { &[] } else { &["sudo"] };
    let apt = |args: &[&str]| {
        let mut command = Command::new(sudo.first().copied().unwrap_or("apt-get"));
        if !sudo.is_empty() {
            command.arg("apt-get");
        }
        command.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        command
    };
    status(&mut apt(&["update", "-qq"]), "apt-get update")?;
    let mut install = apt(&["install", "-y", "-qq", "--no-install-recommends"]);
    install.args(&missing);
    status(&mut install, "apt-get install")
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|output| output.stdout.starts_with(b"0"))
}

/// `cargo xtask boundaries`: the dependency-boundary and command-line tidy
/// checks alone (tests/tests/tidy.rs; `cargo test` runs them too).
pub(crate) fn check_boundaries() -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    status(
        Command::new(cargo).current_dir(workspace_root()).args([
            "test",
            "-q",
            "-p",
            "tally-tests",
            "--test",
            "tidy",
        ]),
        "the tidy checks",
    )
}
