//! `cargo xtask gpu-check`: the checks only a GPU machine can run, each a
//! program that prints its own table. On a machine without a GPU each says
//! it skipped and why, and the command succeeds.
//!
//! Checks are entries of [`CHECKS`]; add one by writing a function of the
//! same shape as [`cuda`] and listing it. `cargo xtask gpu-check NAME...`
//! runs only the named ones.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::workspace_root;

mod python;
pub(crate) mod torch;

/// What one check found.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Everything it checks passed.
    Passed,
    /// It could not run here: why.
    Skipped(String),
    /// Something it checks failed: what.
    Failed(String),
}

/// One check: a name for the command line and the summary, and the function
/// that builds and runs it from the workspace root.
pub(crate) struct Check {
    pub(crate) name: &'static str,
    pub(crate) run: fn(&Path) -> anyhow::Result<Outcome>,
}

/// Every check, in the order run.
const CHECKS: &[Check] = &[
    Check { name: "cuda", run: cuda },
    Check { name: "torch", run: torch::check },
    Check { name: "python", run: python::check },
];

/// How long one check's program may run once built (the issue asks for
/// under five minutes).
const PROGRAM_TIMEOUT: Duration = Duration::from_secs(300);

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let root = workspace_root();
    for name in args {
        if !CHECKS.iter().any(|check| check.name == name) {
            let known: Vec<&str> = CHECKS.iter().map(|check| check.name).collect();
            bail!("unknown gpu check {name:?}; known: {}", known.join(", "));
        }
    }
    let selected =
        CHECKS.iter().filter(|check| args.is_empty() || args.iter().any(|name| name == check.name));
    let started = Instant::now();
    let mut summary = Vec::new();
    for check in selected {
        println!("== gpu-check {}", check.name);
        let outcome = (check.run)(&root).unwrap_or_else(|error| Outcome::Failed(format!("{error:#}")));
        summary.push((check.name, outcome));
    }
    println!("== summary ({:.0} s)", started.elapsed().as_secs_f64());
    let mut failed = 0;
    for (name, outcome) in &summary {
        match outcome {
            Outcome::Passed => println!("{name:<8} passed"),
            Outcome::Skipped(why) => println!("{name:<8} skipped: {why}"),
            Outcome::Failed(what) => {
                failed += 1;
                println!("{name:<8} FAILED: {what}");
            }
        }
    }
    if failed > 0 {
        bail!("{failed} gpu check(s) failed");
    }
    Ok(())
}

/// tally-cuda's check program (tests/examples/cuda_gpu_check.rs):
/// event-timed kernels against host time, the device-memory window, clock
/// calibration and alignment.
fn cuda(root: &Path) -> anyhow::Result<Outcome> {
    let program = build_example(root, "tally-tests", "cuda_gpu_check")?;
    run_program(root, &program)
}

/// Runs a check program from `root` within [`PROGRAM_TIMEOUT`] and prints
/// its table. It skipped when it succeeded with a line `skipped: <why>`,
/// failed when it exited non-zero, and passed otherwise.
fn run_program(root: &Path, program: &Path) -> anyhow::Result<Outcome> {
    let (success, output) = run_with_timeout(Command::new(program).current_dir(root), PROGRAM_TIMEOUT)?;
    print!("{output}");
    let skipped = output.lines().find_map(|line| line.strip_prefix("skipped: "));
    Ok(match (success, skipped) {
        (true, Some(why)) => Outcome::Skipped(why.to_owned()),
        (true, None) => Outcome::Passed,
        (false, _) => Outcome::Failed("a row of the table above failed".to_owned()),
    })
}

/// Builds an example in release mode and returns its executable.
fn build_example(root: &Path, package: &str, example: &str) -> anyhow::Result<PathBuf> {
    build_example_with(root, package, example, &[], |_| {})
}

/// [`build_example`] with `features` of `package` on and the cargo command
/// adjusted first (e.g. its environment).
fn build_example_with(
    root: &Path,
    package: &str,
    example: &str,
    features: &[&str],
    configure: impl FnOnce(&mut Command),
) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    configure(&mut command);
    command.current_dir(root).args(["build", "--release", "--package", package, "--example", example]);
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    let output = command
        .args(["--message-format", "json-render-diagnostics"])
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running cargo build for {package}'s example {example}"))?;
    if !output.status.success() {
        bail!("building {package}'s example {example} failed");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in stdout.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if message["reason"] == "compiler-artifact"
            && message["target"]["name"] == example
            && let Some(executable) = message["executable"].as_str()
        {
            return Ok(PathBuf::from(executable));
        }
    }
    bail!("cargo built {package}'s example {example} but named no executable")
}

/// Runs `command`, killing it after `timeout`; (success, stdout and stderr).
fn run_with_timeout(command: &mut Command, timeout: Duration) -> anyhow::Result<(bool, String)> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let mut stdout = child.stdout.take().context("piped stdout")?;
    let mut stderr = child.stderr.take().context("piped stderr")?;
    // Read on threads so a chatty program never blocks on a full pipe.
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut text = out.join().unwrap_or_default();
    text += &err.join().unwrap_or_default();
    match status {
        Some(status) => Ok((status.success(), text)),
        None => {
            text += &format!("killed after {} s\n", timeout.as_secs());
            Ok((false, text))
        }
    }
}
