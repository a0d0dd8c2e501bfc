//! The Python environments: `.venv` at the workspace root with the
//! references and runtimes of `python/requirements.txt`, and `.venv-hta`
//! with Holistic Trace Analysis alone (`python/requirements-hta.txt`), each
//! reinstalled only when its requirements file changes.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::workspace_root;

/// Creates or refreshes `.venv` and returns its interpreter.
pub(crate) fn ensure_venv() -> anyhow::Result<PathBuf> {
    ensure_venv_at(".venv", "python/requirements.txt")
}

/// Creates or refreshes `.venv-hta` and returns its interpreter. HTA has a
/// venv of its own because it pulls jupyterlab, pandas 3 and numpy 2, whose
/// versions must not move under `.venv`'s pinned torch, TensorFlow and JAX.
pub(crate) fn ensure_hta_venv() -> anyhow::Result<PathBuf> {
    ensure_venv_at(".venv-hta", "python/requirements-hta.txt")
}

/// Creates or refreshes `target/dist-venv`, the release build's tools
/// (`python/requirements-dist.txt`: maturin, zig, cargo-zigbuild,
/// auditwheel), and returns its interpreter.
pub(crate) fn ensure_dist_venv() -> anyhow::Result<PathBuf> {
    ensure_venv_at("target/dist-venv", "python/requirements-dist.txt")
}

/// The venv `venv` (relative to the workspace root) with the packages of
/// `requirements`, in one pip call. The file's text is kept in the venv as
/// a stamp: an unchanged file means nothing to install.
fn ensure_venv_at(venv: &str, requirements: &str) -> anyhow::Result<PathBuf> {
    let root = workspace_root();
    let venv = root.join(venv);
    let python = venv.join("bin/python");
    let requirements = root.join(requirements);
    let wanted = std::fs::read_to_string(&requirements)
        .with_context(|| format!("reading {}", requirements.display()))?;
    let stamp = venv.join(".tally-requirements");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    if !python.exists() {
        eprintln!("xtask: creating {}", venv.display());
        let interpreter = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        status(Command::new(&interpreter).args(["-m", "venv"]).arg(&venv), "python3 -m venv")?;
    }
    eprintln!("xtask: installing {} into {}", relative(&requirements), relative(&venv));
    status(
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
        "pip install",
    )?;
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace_root()).unwrap_or(path).display().to_string()
}

/// The reference interpreter when it is set up already: `TALLY_PYTHON`, else
/// `.venv/bin/python` when it can import both references.
pub(crate) fn existing() -> Option<PathBuf> {
    let candidate = std::env::var_os("TALLY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv/bin/python"));
    let ok = Command::new(&candidate)
        .args(["-c", "import stormlog, vertebrae"])
        .output()
        .is_ok_and(|output| output.status.success());
    ok.then_some(candidate)
}

pub(crate) fn status(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let result = command.status().with_context(|| format!("starting {what}"))?;
    if !result.success() {
        bail!("{what} failed ({result})");
    }
    Ok(())
}

/// Builds the `tally` Python package (crates/tally-python) as a release
/// abi3 wheel with maturin, into `target/wheels`, and installs it into the
/// venv of `python`; cargo's incremental build makes a rebuild of an
/// unchanged tree take seconds.
pub(crate) fn install_package(python: &Path) -> anyhow::Result<()> {
    let root = workspace_root();
    let wheels = root.join("target/wheels");
    // Only this build's wheel may be installed.
    if let Ok(entries) = std::fs::read_dir(&wheels) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(WHEEL_PREFIX) {
                std::fs::remove_file(entry.path())?;
            }
        }
    }
    status(
        Command::new(python)
            .current_dir(&root)
            .args([
                "-m",
                "maturin",
                "build",
                "--release",
                "--quiet",
                "-m",
                "crates/tally-python/Cargo.toml",
                "-o",
            ])
            .arg(&wheels),
        "maturin build (crates/tally-python)",
    )?;
    let wheel = find_wheel(&wheels)?;
    pip_install_wheel(python, &wheel, &["--force-reinstall"])
}

/// The distribution is `tally-ml` (PyPI's `tally` is another project);
/// wheel file names spell it `tally_ml`.
const WHEEL_PREFIX: &str = "tally_ml-";

/// The one tally-ml wheel in `folder`.
pub(crate) fn find_wheel(folder: &Path) -> anyhow::Result<PathBuf> {
    let wheels: Vec<PathBuf> = std::fs::read_dir(folder)
        .with_context(|| format!("reading {}", folder.display()))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name().is_some_and(|name| {
                let name = name.to_string_lossy();
                name.starts_with(WHEEL_PREFIX) && name.ends_with(".whl")
            })
        })
        .collect();
    match wheels.as_slice() {
        [wheel] => Ok(wheel.clone()),
        [] => bail!("no tally_ml wheel in {}", folder.display()),
        _ => bail!("several tally_ml wheels in {}: {wheels:?}", folder.display()),
    }
}

/// `python -m pip install --no-deps OPTIONS WHEEL`, quietly: the wheel has
/// no dependencies to fetch.
pub(crate) fn pip_install_wheel(python: &Path, wheel: &Path, options: &[&str]) -> anyhow::Result<()> {
    status(
        Command::new(python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"])
            .args(options)
            .arg(wheel),
        "pip install the tally-ml wheel",
    )
}
