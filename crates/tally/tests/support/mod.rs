//! Shared by the suites that run the `tally` binary end to end.

use std::process::{Command, Output};

/// The `tally` binary this package builds.
pub fn tally() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tally"))
}

/// Runs `command` to its end, its output captured.
pub fn run(command: &mut Command) -> Output {
    command.output().expect("tally runs")
}

/// The standard error of `output`, as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
