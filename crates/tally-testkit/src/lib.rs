//! Test support shared by tally's suites. Only ever a `[dev-dependencies]`
//! entry: no library code depends on it.
//!
//! - [`skip`]: a test that cannot run here says so. `cargo test` captures a
//!   passing test's output, so the line also goes to the file named by
//!   `TALLY_SKIP_LOG`, which `cargo xtask test` sets and prints afterwards:
//!   a skip never reads as a pass.
//! - [`reference_python`]: the reference interpreter named by
//!   `TALLY_PYTHON`, checked to import what the test needs; [`run_python`]
//!   runs a script on it with input on stdin.
//! - [`hta_python`]: the Python with Holistic Trace Analysis named by
//!   `TALLY_HTA_PYTHON` (`.venv-hta`, apart from the reference venv).
//! - [`json`]: the JSON fixture helpers of the vertebrae agreement suites.
//! - [`records`]: the smallest valid correlation records, as JSON.
//! - `python` (feature `python`): the embedded interpreter of the adapters
//!   over Python frameworks, with the reference Python's packages on its
//!   path, or the reason to skip.
//!
//! ```
//! match tally_testkit::reference_python(&["json"]) {
//!     Ok(python) => assert!(!python.as_os_str().is_empty()),
//!     Err(why) => tally_testkit::skip(why),
//! }
//! ```
//!
//! Failures here panic on purpose: a helper that cannot do its job fails
//! the test that called it.

pub mod json;
#[cfg(feature = "python")]
pub mod python;
pub mod records;

use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The variable naming the file [`skip`] appends its line to.
pub const SKIP_LOG_VARIABLE: &str = "TALLY_SKIP_LOG";

/// The variable naming the reference Python (stormlog, vertebrae, numpy).
pub const PYTHON_VARIABLE: &str = "TALLY_PYTHON";

/// The variable naming the Python with Holistic Trace Analysis (`hta`).
pub const HTA_PYTHON_VARIABLE: &str = "TALLY_HTA_PYTHON";

/// Says that the calling test skipped and why: prints
/// `skipped: <test name>: <reason>` to stderr and, when `TALLY_SKIP_LOG` is
/// set, appends the same line to that file. The test name is the name
/// libtest gives the test's thread (`module::test_fn`).
///
/// A multi-line reason (a compiler's stderr) is joined into one line, so
/// the log stays one line per skip.
///
/// The caller returns right after: `let Some(x) = ... else { return skip("why") };`.
///
/// # Panics
///
/// When `TALLY_SKIP_LOG` names a file that cannot be appended to: a skip the
/// summary would miss is a silent pass, which is what this function is for
/// preventing.
pub fn skip(reason: impl Display) {
    let line = skip_line(std::thread::current().name(), &reason.to_string());
    eprint!("{line}");
    if let Some(log) = std::env::var_os(SKIP_LOG_VARIABLE).filter(|value| !value.is_empty()) {
        append_line(Path::new(&log), &line).unwrap_or_else(|error| {
            panic!("{SKIP_LOG_VARIABLE}={}: cannot record the skip: {error}", Path::new(&log).display())
        });
    }
}

/// The line [`skip`] writes, newline included.
fn skip_line(thread: Option<&str>, reason: &str) -> String {
    let test = thread.unwrap_or("<unnamed thread>");
    let reason: Vec<&str> = reason.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    format!("skipped: {test}: {}\n", reason.join(" | "))
}

/// Appends `line` with one `write` on a file opened `O_APPEND`: the kernel
/// places each such write at the end as a whole, so tests skipping in
/// parallel (threads of one binary, or several binaries) never interleave.
fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    let written = file.write(line.as_bytes())?;
    if written == line.len() {
        Ok(())
    } else {
        Err(std::io::Error::new(std::io::ErrorKind::WriteZero, format!("short write: {written} bytes")))
    }
}

/// The reference Python named by `TALLY_PYTHON`, after checking that it
/// starts and imports every one of `modules`. The error says why not, ready
/// for [`skip`]: the variable is unset or empty, the interpreter does not
/// start, or an import fails (with Python's last line of the error).
pub fn reference_python(modules: &[&str]) -> Result<PathBuf, String> {
    python_from(PYTHON_VARIABLE, modules)
}

/// The Python with Holistic Trace Analysis named by `TALLY_HTA_PYTHON`
/// (`cargo xtask test` points it at `.venv-hta`), after checking that it
/// imports `hta` and HTA's `TraceAnalysis`. HTA has its own variable because
/// it lives in a venv of its own: its pandas and numpy must not meet the
/// reference venv's pinned frameworks. The error says why not, as
/// [`reference_python`]'s does.
pub fn hta_python() -> Result<PathBuf, String> {
    python_from(HTA_PYTHON_VARIABLE, &["hta", "hta.trace_analysis"])
}

/// The interpreter named by `variable`, checked to import `modules`.
fn python_from(variable: &str, modules: &[&str]) -> Result<PathBuf, String> {
    let wanted = modules.join(", ");
    let Some(python) = std::env::var_os(variable).filter(|value| !value.is_empty()) else {
        return Err(if wanted.is_empty() {
            format!("{variable} is not set")
        } else {
            format!("{variable} is not set (a Python with {wanted})")
        });
    };
    let python = PathBuf::from(python);
    let imports: String = modules.iter().map(|module| format!("import {module}\n")).collect();
    let output = Command::new(&python)
        .arg("-c")
        .arg(&imports)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("{variable}={} does not start: {error}", python.display()))?;
    if output.status.success() {
        return Ok(python);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().map(str::trim).rfind(|line| !line.is_empty()).unwrap_or("no message");
    Err(format!("{variable}={} cannot import {wanted}: {last}", python.display()))
}

/// Runs `python -c script` with `input` on its stdin and returns what it
/// did (status, stdout, stderr); the caller asserts on it. The input is
/// written from another thread, so a script that prints before it has read
/// everything cannot deadlock against a full pipe.
///
/// # Panics
///
/// When the interpreter cannot be started or waited for.
pub fn run_python(python: &Path, script: &str, input: &[u8]) -> Output {
    let mut child = Command::new(python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{} does not start: {error}", python.display()));
    let mut stdin = child.stdin.take().expect("stdin was asked to be piped");
    let input = input.to_vec();
    // A script that exits without reading its input closes the pipe; the
    // caller sees that in the status, so a failed write is not an error here.
    let writer = std::thread::spawn(move || drop(stdin.write_all(&input)));
    let output = child
        .wait_with_output()
        .unwrap_or_else(|error| panic!("{} did not finish: {error}", python.display()));
    writer.join().expect("the writer thread does not panic");
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_test_and_keeps_one_line() {
        assert_eq!(skip_line(Some("a::b"), "no GPU"), "skipped: a::b: no GPU\n");
        assert_eq!(
            skip_line(Some("t"), "cc failed:\n  error: x\n\nmore\n"),
            "skipped: t: cc failed: | error: x | more\n"
        );
        assert_eq!(skip_line(None, "why"), "skipped: <unnamed thread>: why\n");
    }

    #[test]
    fn the_test_thread_is_named_after_the_test() {
        // What skip reads: libtest runs each test on a thread with its name.
        assert_eq!(std::thread::current().name(), Some("tests::the_test_thread_is_named_after_the_test"));
    }

    #[test]
    fn parallel_appends_keep_whole_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("skips.log");
        let threads: Vec<_> = (0..8)
            .map(|thread| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for index in 0..200 {
                        let line = format!("skipped: t{thread}: {}\n", "x".repeat(index * 7 % 3000));
                        append_line(&log, &line).expect("append");
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("no panic");
        }
        let text = std::fs::read_to_string(&log).expect("log");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 8 * 200);
        for line in lines {
            let (head, xs) = line.rsplit_once(": ").expect("a whole line");
            assert!(head.starts_with("skipped: t"), "{line}");
            assert!(xs.bytes().all(|byte| byte == b'x'), "interleaved: {line}");
        }
    }
}
