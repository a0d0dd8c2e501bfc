//! `cargo xtask dist`: what a release publishes, built into `target/dist/`:
//!
//! - the `tally-ml` wheel (crates/tally-python; import name `tally`): abi3
//!   for CPython 3.10+, tagged `manylinux_2_28_x86_64`, and carrying the
//!   `tally` command in `tally_ml-<version>.data/scripts/`, which pip
//!   installs into the environment's `bin/` (as ruff and uv ship theirs);
//! - the wheel's sdist (the Python package alone: the command comes with
//!   the wheel);
//! - every publishable crate's `.crate` (`cargo package`, every workspace
//!   member without `publish = false`).
//!
//! Both native builds link with zig (PyPI's `ziglang`, through
//! cargo-zigbuild) against glibc 2.28's symbols, whatever glibc the build
//! machine has, and `auditwheel show` must find the wheel manylinux_2_28 or
//! older. They build into `target/dist-build/{command,wheel}`, kept between
//! runs, so a rebuild of an unchanged tree is incremental. The tools are
//! those of `python/requirements-dist.txt`, installed into
//! `target/dist-venv`.
//!
//! `cargo xtask wheel-check [--reference BIN]`, which `cargo xtask test`
//! runs after `dist`, installs the wheel into a fresh venv and runs the
//! command and the README's Python example with no Rust toolchain on PATH.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use anyhow::{Context, bail};

use crate::python::{ensure_dist_venv, status};
use crate::workspace_root;

/// The oldest glibc the wheel and the command run on.
const GLIBC: &str = "2.28";
/// The wheel's platform tag, as maturin writes it and auditwheel names it.
const PLATFORM_TAG: &str = "manylinux_2_28_x86_64";
/// The wheel's data folder, staged for the one maturin build of `dist`:
/// maturin takes `<module-name>.data` beside pyproject.toml as the wheel's
/// `.data` folder when pyproject.toml names none, and the module is
/// `tally._native`. Removed again after the build (and ignored by git), so
/// that no other build of the package ships a command.
const WHEEL_DATA: &str = "crates/tally-python/tally._native.data";

/// `cargo xtask dist`.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    if !args.is_empty() {
        bail!("usage: cargo xtask dist");
    }
    let started = Instant::now();
    let root = workspace_root();
    let version = workspace_version()?;
    let python = ensure_dist_venv()?;
    let tools = python.parent().context("the dist venv's interpreter has no folder")?.to_path_buf();
    let dist = root.join("target/dist");
    // One target folder per build: maturin's zig linker wrapper is not
    // cargo-zigbuild's, and in one folder each build would find the other's
    // artifacts stale and rebuild every crate.
    let build = root.join("target/dist-build");
    if dist.exists() {
        std::fs::remove_dir_all(&dist).with_context(|| format!("removing {}", dist.display()))?;
    }
    std::fs::create_dir_all(&dist)?;
    // zig and cargo-zigbuild are found on PATH (maturin and cargo-zigbuild
    // look for `python3 -m ziglang`, the venv's).
    let path = prepend_path(&tools);
    let in_root = |program: &Path| {
        let mut command = Command::new(program);
        command
            .current_dir(&root)
            .env("PATH", &path)
            // What the wheel ships carries symbols but no line tables (the
            // workspace's release profile keeps those for profiling): the
            // command shrinks from 67 MB to 10 MB.
            .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
            .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo");
        command
    };
    let manifest = "crates/tally-python/Cargo.toml";
    let staged = root.join(WHEEL_DATA);
    remove_staged(&staged)?;

    // The command: the umbrella crate's `tally` binary with its default
    // features (CUDA and ONNX Runtime, both loaded at run time).
    let target = format!("x86_64-unknown-linux-gnu.{GLIBC}");
    status(
        in_root(&tools.join("cargo-zigbuild"))
            .args(["zigbuild", "--release", "--manifest-path", "crates/tally/Cargo.toml", "--bin", "tally"])
            .args(["--target", &target, "--target-dir"])
            .arg(build.join("command")),
        "cargo zigbuild (the tally command)",
    )?;
    let command = build.join("command/x86_64-unknown-linux-gnu/release/tally");

    // The sdist, before the command is staged: it must not carry a binary.
    status(
        in_root(&python).args(["-m", "maturin", "sdist", "-m", manifest, "-o"]).arg(&dist),
        "maturin sdist",
    )?;

    let scripts = staged.join("scripts");
    std::fs::create_dir_all(&scripts)?;
    let built = (|| {
        std::fs::copy(&command, scripts.join("tally"))
            .with_context(|| format!("copying {} into the wheel's data", command.display()))?;
        status(
            in_root(&python)
                .args(["-m", "maturin", "build", "--release", "--quiet", "--zig"])
                .args(["--compatibility", &PLATFORM_TAG.replace("_x86_64", ""), "-m", manifest])
                .arg("--target-dir")
                .arg(build.join("wheel"))
                .arg("-o")
                .arg(&dist),
            "maturin build --zig (the tally-ml wheel)",
        )
    })();
    remove_staged(&staged)?;
    built?;

    let wheel = crate::python::find_wheel(&dist)?;
    let name = file_name(&wheel);
    let expected = format!("tally_ml-{version}-cp310-abi3-{PLATFORM_TAG}.whl");
    if name != expected {
        bail!("maturin wrote {name}, not {expected}");
    }
    audit(&tools, &wheel)?;

    package_crates(&root, &build.join("crates"), &dist)?;

    println!("dist: built into {} in {:.0?}:", relative(&dist), started.elapsed());
    let mut entries: Vec<_> = std::fs::read_dir(&dist)?.flatten().map(|entry| entry.path()).collect();
    entries.sort();
    for entry in entries {
        let size = std::fs::metadata(&entry)?.len();
        println!("  {:>10}  {}", format_size(size), file_name(&entry));
    }
    Ok(())
}

/// `auditwheel show`: the wheel, the command in it included, must be
/// consistent with manylinux_2_28 or an older tag.
fn audit(tools: &Path, wheel: &Path) -> anyhow::Result<()> {
    let output = Command::new(tools.join("auditwheel"))
        .arg("show")
        .arg(wheel)
        .output()
        .context("starting auditwheel show")?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!(
            "auditwheel show failed ({}):\n{text}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // "... is consistent with the following platform tag:
    // "manylinux_2_17_x86_64"." (auditwheel wraps the line).
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let minor = flat
        .split("following platform tag: \"manylinux_2_")
        .nth(1)
        .and_then(|rest| rest.split('_').next())
        .and_then(|minor| minor.parse::<u32>().ok());
    let floor: u32 = GLIBC.trim_start_matches("2.").parse()?;
    match minor {
        Some(minor) if minor <= floor => {
            println!("dist: auditwheel: {} is consistent with manylinux_2_{minor}_x86_64", file_name(wheel));
            Ok(())
        }
        _ => bail!("auditwheel does not find {} manylinux_2_{floor} or older:\n{text}", file_name(wheel)),
    }
}

/// `cargo package` of every publishable crate, its `.crate` files copied
/// into `dist`.
fn package_crates(root: &Path, build: &Path, dist: &Path) -> anyhow::Result<()> {
    let packages = build.join("package");
    if let Ok(entries) = std::fs::read_dir(&packages) {
        for entry in entries.flatten() {
            if entry.path().extension().is_some_and(|extension| extension == "crate") {
                std::fs::remove_file(entry.path())?;
            }
        }
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let publishable = publishable_packages(root, &cargo)?;
    let packaged = Command::new(&cargo)
        .current_dir(root)
        .args(["package", "--no-verify", "--allow-dirty", "--quiet", "--target-dir"])
        .arg(build)
        .args(publishable.iter().flat_map(|name| ["-p", name.as_str()]))
        .status()
        .context("starting cargo package")?;
    if !packaged.success() {
        bail!(
            "cargo package failed ({packaged}): the crates are not packageable yet (the \
             wheel and the sdist are in {}, the .crate files are not)",
            relative(dist)
        );
    }
    let mut copied = 0;
    for entry in std::fs::read_dir(&packages)?.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|extension| extension == "crate") {
            std::fs::copy(&path, dist.join(entry.file_name()))?;
            copied += 1;
        }
    }
    if copied == 0 {
        bail!("cargo package wrote no .crate into {}", relative(&packages));
    }
    Ok(())
}

/// The workspace members cargo may publish (no `publish = false`).
fn publishable_packages(root: &Path, cargo: &str) -> anyhow::Result<Vec<String>> {
    let output = Command::new(cargo)
        .current_dir(root)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .context("starting cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let members = metadata["workspace_members"].as_array().context("cargo metadata: no workspace_members")?;
    let mut names: Vec<String> = metadata["packages"]
        .as_array()
        .context("cargo metadata: no packages")?
        .iter()
        .filter(|package| members.contains(&package["id"]))
        // `publish` is null for "anywhere" and [] for `publish = false`.
        .filter(|package| package["publish"].as_array().is_none_or(|registries| !registries.is_empty()))
        .filter_map(|package| package["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    if names.is_empty() {
        bail!("cargo metadata lists no publishable workspace member");
    }
    Ok(names)
}

/// `cargo xtask wheel-check [--reference BIN]`: [`check_wheel`] with the
/// `tally` command to compare with (by default `target/debug/tally`).
pub(crate) fn wheel_check(args: &[String]) -> anyhow::Result<()> {
    let reference = match args {
        [] => workspace_root().join("target/debug/tally"),
        [flag, path] if flag == "--reference" => PathBuf::from(path),
        _ => bail!("usage: cargo xtask wheel-check [--reference BIN]"),
    };
    check_wheel(&reference)
}

/// Installs `target/dist`'s wheel into a fresh venv (`target/wheel-check-venv`)
/// and, with a PATH of that venv's `bin/`, `/usr/bin` and `/bin` (no cargo,
/// no rustc), checks that `tally --version` is the crate version, that
/// `tally account examples/serving-run.jsonl` prints what `reference` prints,
/// and runs the README's "From Python" example.
pub(crate) fn check_wheel(reference: &Path) -> anyhow::Result<()> {
    let root = workspace_root();
    let version = workspace_version()?;
    if !reference.is_file() {
        bail!("no {} to compare the wheel's command with (build it first)", reference.display());
    }
    let wheel = crate::python::find_wheel(&root.join("target/dist"))?;
    let venv = root.join("target/wheel-check-venv");
    if venv.exists() {
        std::fs::remove_dir_all(&venv).with_context(|| format!("removing {}", venv.display()))?;
    }
    let interpreter = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    status(Command::new(&interpreter).args(["-m", "venv"]).arg(&venv), "python3 -m venv")?;
    let bin = venv.join("bin");
    let python = bin.join("python");
    // From the file alone: the wheel has no dependencies to fetch.
    crate::python::pip_install_wheel(&python, &wheel, &["--no-index"])?;
    let scratch = root.join("target/wheel-check");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)?;
    }
    std::fs::create_dir_all(scratch.join("examples"))?;
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let without_rust = |program: &str| {
        let mut command = Command::new(program);
        command.current_dir(&scratch).env("PATH", &path);
        for variable in ["CARGO", "RUSTC", "RUSTUP_TOOLCHAIN", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"] {
            command.env_remove(variable);
        }
        command
    };
    println!("wheel-check: {} installed into {}", file_name(&wheel), relative(&venv));
    println!("wheel-check: PATH={path}");

    let toolchain = without_rust("sh").args(["-c", "command -v cargo || command -v rustc"]).output()?;
    if toolchain.status.success() {
        bail!(
            "a Rust toolchain is still on the check's PATH: {}",
            String::from_utf8_lossy(&toolchain.stdout)
        );
    }
    println!("wheel-check: no cargo or rustc on PATH");
    let found = checked(without_rust("sh").args(["-c", "command -v tally"]), "command -v tally")?;
    if Path::new(found.trim()) != bin.join("tally") {
        bail!("`tally` on PATH is {}, not the wheel's {}", found.trim(), bin.join("tally").display());
    }
    println!("wheel-check: `tally` is {}", relative(Path::new(found.trim())));

    let shown = checked(without_rust("tally").arg("--version"), "tally --version")?;
    if shown.split_whitespace().last() != Some(version.as_str()) {
        bail!("the wheel's `tally --version` says {:?}, the crate version is {version}", shown.trim());
    }
    let metadata = checked(
        without_rust("python").args(["-c", "import importlib.metadata as m; print(m.version('tally-ml'))"]),
        "importlib.metadata.version('tally-ml')",
    )?;
    if metadata.trim() != version {
        bail!("the installed tally-ml is version {:?}, the crate version is {version}", metadata.trim());
    }
    println!(
        "wheel-check: `tally --version` says {:?}, pip's tally-ml is {version}: the crate version",
        shown.trim()
    );

    let example = Path::new("examples/serving-run.jsonl");
    std::fs::copy(root.join(example), scratch.join(example))?;
    let installed = checked(without_rust("tally").arg("account").arg(example), "the wheel's tally account")?;
    let built = checked(
        Command::new(reference).current_dir(&root).arg("account").arg(example),
        "the built tally account",
    )?;
    if installed != built {
        bail!(
            "the wheel's `tally account {}` differs from {}'s:\n--- wheel\n{installed}--- {}\n{built}",
            example.display(),
            relative(reference),
            relative(reference)
        );
    }
    println!(
        "wheel-check: `tally account {}` prints what {} prints ({} lines)",
        example.display(),
        relative(reference),
        installed.lines().count()
    );

    let readme = std::fs::read_to_string(root.join("README.md"))?;
    let code = readme_python_example(&readme)?;
    readme_inputs(&root, &scratch)?;
    std::fs::write(scratch.join("readme_example.py"), &code)?;
    let printed =
        checked(without_rust("python").args(["-I", "readme_example.py"]), "the README's Python example")?;
    println!(
        "wheel-check: the README's \"From Python\" example ran ({} lines of code, {} lines printed)",
        code.lines().count(),
        printed.lines().count()
    );
    Ok(())
}

/// The first ```python block of README.md's "## From Python" section.
fn readme_python_example(readme: &str) -> anyhow::Result<String> {
    let section =
        readme.split("\n## From Python").nth(1).context("README.md has no \"## From Python\" section")?;
    let section = section.split("\n## ").next().unwrap_or(section);
    let block =
        section.split("```python\n").nth(1).context("README.md's \"From Python\" has no ```python block")?;
    let code = block.split("\n```").next().unwrap_or(block);
    Ok(format!("{code}\n"))
}

/// The files the README's example names besides examples/serving-run.jsonl,
/// made in `scratch`: two ranks of one run (`rank0.jsonl`, `rank1.jsonl.gz`,
/// from the conformance corpus's `account/ranks`) and a PyTorch profiler
/// trace (`trace.pt.trace.json`, a Kineto fixture).
fn readme_inputs(root: &Path, scratch: &Path) -> anyhow::Result<()> {
    let ranks = root.join("tests/conformance/account/ranks");
    std::fs::copy(ranks.join("rank-0.jsonl"), scratch.join("rank0.jsonl"))?;
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(scratch.join("rank1.jsonl.gz"))?,
        flate2::Compression::fast(),
    );
    encoder.write_all(&std::fs::read(ranks.join("rank-1.jsonl"))?)?;
    encoder.finish()?;
    let kineto = root.join("crates/tally-trace/tests/fixtures/kineto/sampled-rank-0.json.gz");
    let mut trace = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(kineto)?).read_to_end(&mut trace)?;
    std::fs::write(scratch.join("trace.pt.trace.json"), trace)?;
    Ok(())
}

/// Runs `command`, failing with its output unless it succeeds; its stdout.
fn checked(command: &mut Command, what: &str) -> anyhow::Result<String> {
    let Output { status, stdout, stderr } = command.output().with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!(
            "{what} failed ({status}):\n{}{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        );
    }
    String::from_utf8(stdout).with_context(|| format!("{what} printed other than UTF-8"))
}

/// The workspace version (`[workspace.package] version` of Cargo.toml):
/// the crates', the command's and the wheel's.
pub(crate) fn workspace_version() -> anyhow::Result<String> {
    let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml"))?;
    let section =
        manifest.split("[workspace.package]").nth(1).context("Cargo.toml has no [workspace.package]")?;
    section
        .lines()
        .take_while(|line| !line.starts_with('['))
        .find_map(|line| {
            let (key, value) = line.split_once('=')?;
            (key.trim() == "version").then(|| value.trim().trim_matches('"').to_owned())
        })
        .context("Cargo.toml's [workspace.package] has no version")
}

fn remove_staged(staged: &Path) -> anyhow::Result<()> {
    if staged.exists() {
        std::fs::remove_dir_all(staged).with_context(|| format!("removing {}", staged.display()))?;
    }
    Ok(())
}

/// `folder` first, then the caller's PATH.
fn prepend_path(folder: &Path) -> OsString {
    let mut path = OsString::from(folder);
    if let Some(existing) = std::env::var_os("PATH") {
        path.push(":");
        path.push(existing);
    }
    path
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default()
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace_root()).unwrap_or(path).display().to_string()
}

fn format_size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{bytes} B")
    }
}
