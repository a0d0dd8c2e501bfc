//! `tally conform`, run as a user runs it: exit codes, the JSON report, the
//! finding written under --out, the per-case timeout and usage errors.

use std::process::{Command, Output};

use serde_json::Value;

fn tally(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally")).args(args).output().expect("tally runs")
}

fn report(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&output.stderr)))
}

#[test]
fn tally_agrees_with_itself_in_the_command_form_and_exits_0() {
    let implementation = format!("{} account --format json", env!("CARGO_BIN_EXE_tally"));
    let output =
        tally(&["conform", "--impl", &implementation, "--cases", "40", "--seed", "3", "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let report = report(&output);
    let account = &report["kinds"][0];
    assert_eq!(account["kind"], "account");
    assert_eq!(account["generated"]["run"], 40);
    assert_eq!(account["generated"]["disagreed"], 0);
    // The corpus ran first, its rejected cases refused by both.
    assert!(account["corpus"]["run"].as_u64() > Some(10), "{account}");
    assert!(account["corpus"]["rejected_by_both"].as_u64() >= Some(7), "{account}");
    assert!(account["finding"].is_null());
}

#[test]
fn a_wrong_implementation_exits_1_with_a_shrunk_case_under_out() {
    let out = tempfile::tempdir().expect("tempdir");
    // Answers every case with the accounting object of an empty run.
    let implementation = r#"sh -c 'echo "{\"run_id\": null}"' sh"#;
    let output = tally(&[
        "conform",
        "--impl",
        implementation,
        "--cases",
        "20",
        "--no-corpus",
        "--format",
        "json",
        "--out",
        out.path().to_str().expect("utf-8"),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let report = report(&output);
    let account = &report["kinds"][0];
    assert!(account["generated"]["disagreed"].as_u64() > Some(0), "{account}");
    let finding = &account["finding"];
    assert!(finding["records"].as_u64() <= Some(2), "{finding}");
    assert!(finding["differences"].as_array().is_some_and(|found| !found.is_empty()));
    let dir = out.path().join("account");
    for file in ["README", "tally.json", "implementation.json", "diff.txt"] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let readme = std::fs::read_to_string(dir.join("README")).expect("README");
    assert!(readme.contains("Re-run the implementation: sh -c"), "{readme}");
    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|name| !name.starts_with('.')), "{names:?}");
    // The table form says the same, with the diff.
    let table = tally(&["conform", "--impl", implementation, "--cases", "5", "--no-corpus"]);
    assert_eq!(table.status.code(), Some(1));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("account disagrees on generated case 0"), "{text}");
    assert!(text.contains(": tally "), "{text}");
}

#[test]
fn an_implementation_past_the_timeout_is_counted_and_exits_1() {
    let output = tally(&[
        "conform",
        "--impl",
        "sh -c 'sleep 5' sh",
        "--timeout",
        "0.2",
        "--cases",
        "2",
        "--no-corpus",
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let report = report(&output);
    assert_eq!(report["kinds"][0]["generated"]["timeouts"], 2);
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    for args in [
        vec!["conform", "--impl", "/no/such/program"],
        vec!["conform", "--impl-batch", "no-such-program-anywhere --x"],
        vec!["conform", "--impl", "'unclosed"],
        vec!["conform", "--impl", "true", "--kinds", "account,bogus"],
        vec!["conform", "--impl", "true", "--timeout", "0"],
        vec!["conform", "--impl", "true", "--corpus", "/no/such/dir"],
        vec!["conform"],
    ] {
        let output = tally(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.trim().is_empty() && !stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn help_documents_the_contract() {
    let output = tally(&["conform", "--help"]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for expected in
        ["Command form", "Batch form", "\"inputs\": [paths]", "Exit status", "--impl-batch", "align"]
    {
        assert!(text.contains(expected), "missing {expected:?}");
    }
}
