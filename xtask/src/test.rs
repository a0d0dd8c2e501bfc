//! `cargo xtask test`: everything CI runs, in the order that fails fastest.

use std::process::Command;

use crate::python::{ensure_venv, status};
use crate::workspace_root;

pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    let root = workspace_root();
    let python = ensure_venv()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let cargo_at_root = || {
        let mut command = Command::new(&cargo);
        command.current_dir(&root).env("TALLY_PYTHON", &python);
        command
    };
    status(cargo_at_root().args(["fmt", "--all", "--check"]), "cargo fmt --check")?;
    status(
        cargo_at_root().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]),
        "cargo clippy",
    )?;
    status(
        cargo_at_root().args(["doc", "--workspace", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings"),
        "cargo doc",
    )?;
    status(cargo_at_root().args(["test", "--workspace"]), "cargo test")?;
    Ok(())
}
