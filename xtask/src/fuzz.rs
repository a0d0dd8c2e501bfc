//! `cargo xtask fuzz [TARGET...] [--seconds N] [--jobs J]`: coverage-guided
//! fuzzing of every parser with cargo-fuzz (libFuzzer); see fuzz/README.md.
//!
//! It installs cargo-fuzz when it is missing, picks a nightly toolchain
//! when rustup has one (else the stable one with `RUSTC_BOOTSTRAP=1`),
//! builds every target once (reused from `fuzz/target/` later), seeds each
//! corpus from the repository's fixtures, runs the targets `--jobs` at a
//! time for `--seconds` each, and copies every crash to
//! `fuzz/regressions/TARGET/`, where `cargo test` replays it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use anyhow::{Context, bail};

use crate::python::status;
use crate::workspace_root;

const TARGETS: &[&str] = &[
    "artifact_line",
    "artifact_whole",
    "kineto",
    "nsys",
    "xplane",
    "profile",
    "request",
    "share_model",
    "partial",
];

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let mut seconds: u64 = 60;
    let mut jobs: usize = 2;
    let mut targets: Vec<String> = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--seconds" => seconds = rest.next().context("--seconds N")?.parse().context("--seconds N")?,
            "--jobs" => jobs = rest.next().context("--jobs J")?.parse().context("--jobs J")?,
            name if TARGETS.contains(&name) => targets.push(name.to_owned()),
            other => bail!("unknown fuzz target or option {other:?}; targets: {}", TARGETS.join(", ")),
        }
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|name| (*name).to_owned()).collect();
    }
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    ensure_cargo_fuzz(&cargo)?;
    let fuzz = |subcommand: &[&str]| {
        let mut command = Command::new("cargo");
        if has_nightly() {
            command.arg("+nightly");
        } else {
            // The stable toolchain builds libFuzzer's `-Z` flags this way.
            command.env("RUSTC_BOOTSTRAP", "1");
        }
        command.arg("fuzz").args(subcommand).current_dir(&root);
        command
    };
    let corpus = root.join("target/fuzz-corpus");
    let mut seeds = Command::new(&cargo);
    seeds.current_dir(&root).args(["run", "-q", "-p", "tally-tests", "--bin", "fuzz-seeds", "--"]);
    seeds.arg(&root).arg(&corpus).args(&targets);
    status(&mut seeds, "writing the seed corpora")?;
    status(&mut fuzz(&["build"]), "cargo fuzz build")?;
    let mut crashes = Vec::new();
    for batch in targets.chunks(jobs.max(1)) {
        let children: Vec<(String, Child)> = batch
            .iter()
            .map(|target| {
                let artifacts = root.join("fuzz/artifacts").join(target);
                // Earlier finds are in fuzz/regressions already: report only
                // what this run finds.
                let _ = std::fs::remove_dir_all(&artifacts);
                std::fs::create_dir_all(&artifacts)?;
                let corpus_dir = corpus.join(target);
                let mut command = fuzz(&["run", target]);
                command.arg(&corpus_dir).arg("--").args([
                    format!("-max_total_time={seconds}"),
                    "-rss_limit_mb=2048".to_owned(),
                    "-timeout=30".to_owned(),
                    format!("-artifact_prefix={}/", artifacts.display()),
                ]);
                if target == "artifact_whole" {
                    // The parallel reader's threads block on std's channels,
                    // whose per-thread waker (48 bytes, std's own) the leak
                    // checker reports at a thread's end: not tally's memory.
                    command.arg("-detect_leaks=0");
                }
                eprintln!("xtask: fuzzing {target} for {seconds} s");
                Ok((
                    target.clone(),
                    command.spawn().with_context(|| format!("starting cargo fuzz run {target}"))?,
                ))
            })
            .collect::<anyhow::Result<_>>()?;
        for (target, mut child) in children {
            let outcome = child.wait()?;
            let found = keep_crashes(&root, &target)?;
            eprintln!("xtask: {target}: {} ({} crash inputs)", outcome, found.len());
            crashes.extend(found);
        }
    }
    if !crashes.is_empty() {
        bail!(
            "{} crash inputs, copied to fuzz/regressions/: fix each, keep the file (cargo test replays it)\n{}",
            crashes.len(),
            crashes.iter().map(|path| format!("  {}", path.display())).collect::<Vec<_>>().join("\n")
        );
    }
    eprintln!("xtask: no crash in {} targets, {seconds} s each", targets.len());
    Ok(())
}

/// Copies libFuzzer's crash, leak, out-of-memory and timeout inputs of
/// `target` to its regressions folder.
fn keep_crashes(root: &Path, target: &str) -> anyhow::Result<Vec<PathBuf>> {
    let artifacts = root.join("fuzz/artifacts").join(target);
    let regressions = root.join("fuzz/regressions").join(target);
    std::fs::create_dir_all(&regressions)?;
    let mut kept = Vec::new();
    for entry in std::fs::read_dir(&artifacts).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if ["crash-", "leak-", "oom-", "timeout-"].iter().any(|prefix| name.starts_with(prefix)) {
            let target_path = regressions.join(&name);
            std::fs::copy(entry.path(), &target_path)?;
            kept.push(target_path);
        }
    }
    Ok(kept)
}

fn has_nightly() -> bool {
    Command::new("rustup").args(["toolchain", "list"]).output().is_ok_and(|output| {
        String::from_utf8_lossy(&output.stdout).lines().any(|line| line.starts_with("nightly"))
    })
}

fn ensure_cargo_fuzz(cargo: &str) -> anyhow::Result<()> {
    let present =
        Command::new(cargo).args(["fuzz", "--version"]).output().is_ok_and(|output| output.status.success());
    if !present {
        eprintln!("xtask: installing cargo-fuzz from crates.io");
        status(Command::new(cargo).args(["install", "cargo-fuzz", "--locked"]), "cargo install cargo-fuzz")?;
    }
    Ok(())
}
