//! `skip` and `reference_python` read the process environment, which a test
//! cannot change safely while others run: each case re-runs this binary,
//! filtered to one test, with the environment it needs.

use std::path::Path;
use std::process::{Command, Output};

use tally_testkit::{reference_python, skip};

const CHILD: &str = "TALLY_TESTKIT_CHILD";

fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs the test `name` of this binary in a child with `env` set and
/// `TALLY_SKIP_LOG`/`TALLY_PYTHON` otherwise removed.
fn child(name: &str, env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args(["--exact", name, "--nocapture", "--test-threads=2"])
        .env(CHILD, "1")
        .env_remove("TALLY_SKIP_LOG")
        .env_remove("TALLY_PYTHON");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("the test binary runs");
    assert!(output.status.success(), "child failed: {}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("1 passed"), "the child ran the test");
    output
}

#[test]
fn a_skip_is_printed_and_appended_to_the_log() {
    if is_child() {
        skip("first reason");
        skip(format!("second {}", "reason"));
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("skips.log");
    std::fs::write(&log, "earlier line\n").expect("seed");
    let output = child("a_skip_is_printed_and_appended_to_the_log", &[("TALLY_SKIP_LOG", &log)]);
    let name = "a_skip_is_printed_and_appended_to_the_log";
    let expected = format!("skipped: {name}: first reason\nskipped: {name}: second reason\n");
    assert!(String::from_utf8_lossy(&output.stderr).contains(&expected), "{output:?}");
    assert_eq!(std::fs::read_to_string(&log).expect("log"), format!("earlier line\n{expected}"));
    // Without the variable, only stderr.
    let output = child(name, &[]);
    assert!(String::from_utf8_lossy(&output.stderr).contains(&expected), "{output:?}");
}

#[test]
fn a_log_that_cannot_be_written_fails_the_test() {
    if is_child() {
        let result = std::panic::catch_unwind(|| skip("why"));
        assert!(result.is_err(), "a skip the log misses must not pass");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // A directory cannot be opened for appending.
    child("a_log_that_cannot_be_written_fails_the_test", &[("TALLY_SKIP_LOG", dir.path())]);
}

#[test]
fn reference_python_says_why_not() {
    if is_child() {
        let answer = std::env::var("ANSWER").expect("set by the parent");
        let modules: &[&str] = match answer.as_str() {
            "unset" | "missing" => &["json"],
            _ => &["json", "no_such_module_tally_x9"],
        };
        let result = reference_python(modules);
        match answer.as_str() {
            "unset" => assert_eq!(result, Err("TALLY_PYTHON is not set (a Python with json)".to_owned())),
            "missing" => {
                let error = result.expect_err("no such interpreter");
                assert!(error.starts_with("TALLY_PYTHON=/no/such/python does not start: "), "{error}");
            }
            _ => {
                let error = result.expect_err("no such module");
                assert!(error.contains("cannot import json, no_such_module_tally_x9: "), "{error}");
                assert!(error.ends_with("No module named 'no_such_module_tally_x9'"), "{error}");
            }
        }
        return;
    }
    let name = "reference_python_says_why_not";
    child(name, &[("ANSWER", Path::new("unset"))]);
    child(name, &[("ANSWER", Path::new("missing")), ("TALLY_PYTHON", Path::new("/no/such/python"))]);
    match reference_python(&["json"]) {
        Ok(python) => {
            child(name, &[("ANSWER", Path::new("module")), ("TALLY_PYTHON", &python)]);
            let output =
                tally_testkit::run_python(&python, "import sys; print(sys.stdin.read()[::-1])", b"abc");
            assert!(output.status.success());
            assert_eq!(output.stdout, b"cba\n");
        }
        Err(why) => skip(why),
    }
}
