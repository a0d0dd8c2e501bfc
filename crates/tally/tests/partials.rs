//! `tally partial` and partials among the inputs of `tally account`,
//! `breakdown`, `shares` and `diff`, run as the built binary: a run's files
//! made into partials (one each, several together, partials of partials,
//! partials beside raw files) give the same standard output, byte for
//! byte, as the raw files read at once, and the same rejection; a broken
//! partial is refused naming the file and byte, and nothing is left
//! half-written.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

mod support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use support::{run, stderr, tally};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn kineto(name: &str) -> PathBuf {
    root().join("crates/tally-trace/tests/fixtures/kineto").join(name)
}

/// `tally ARGS... FILES...`, its output captured.
fn tally_on(args: &[&str], files: &[&Path]) -> Output {
    run(tally().args(args).args(files))
}

/// `tally partial FILES... -o OUTPUT EXTRA...`, which must succeed.
fn partial(files: &[&Path], output: &Path, extra: &[&str]) -> PathBuf {
    let made = run(tally().arg("partial").args(files).arg("-o").arg(output).args(extra));
    assert!(made.status.success(), "tally partial: {}", stderr(&made));
    assert!(made.stdout.is_empty(), "tally partial prints nothing on stdout");
    let summary = stderr(&made);
    assert!(summary.contains("written to") && summary.lines().count() == 1, "{summary}");
    output.to_path_buf()
}

/// The outputs of the commands the partials must reproduce.
const COMMANDS: [&[&str]; 4] = [
    &["account", "--format", "json"],
    &["account", "--format", "table"],
    &["account", "--detail", "--format", "json"],
    &["breakdown", "--format", "json"],
];

/// Each of `commands` on `files` prints what it prints on `raw`, byte for
/// byte, and succeeds.
fn same_output(commands: &[&[&str]], extra: &[&str], raw: &[&Path], files: &[&Path]) {
    for command in commands {
        let args: Vec<&str> = command.iter().chain(extra).copied().collect();
        let expected = tally_on(&args, raw);
        assert!(expected.status.success(), "{args:?} of the raw files: {}", stderr(&expected));
        assert!(!expected.stdout.is_empty());
        let got = tally_on(&args, files);
        assert!(got.status.success(), "{args:?} of {files:?}: {}", stderr(&got));
        assert!(
            got.stdout == expected.stdout,
            "{args:?} of {files:?} differs from the raw files':\n{}\n---\n{}",
            String::from_utf8_lossy(&got.stdout),
            String::from_utf8_lossy(&expected.stdout)
        );
    }
}

/// `examples/serving-run.jsonl` split into `count` v4 artifacts of one run.
fn split_example(directory: &Path, count: usize) -> Vec<PathBuf> {
    tally_testkit::records::split_artifact(&root().join("examples/serving-run.jsonl"), directory, count)
}

#[test]
fn partials_of_a_split_artifact_account_and_break_down_as_the_files() {
    let directory = tempfile::tempdir().unwrap();
    let files = split_example(directory.path(), 3);
    let raw: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let part = |name: &str, inputs: &[&Path]| partial(inputs, &directory.path().join(name), &[]);
    let parts: Vec<PathBuf> =
        raw.iter().enumerate().map(|(index, file)| part(&format!("rank{index}.part"), &[file])).collect();
    let (p0, p1, p2) = (parts[0].as_path(), parts[1].as_path(), parts[2].as_path());
    // One partial each.
    same_output(&COMMANDS, &[], &raw, &[p0, p1, p2]);
    // A partial of two partials beside the third.
    let merged = part("ranks01.part", &[p0, p1]);
    same_output(&COMMANDS, &[], &raw, &[&merged, p2]);
    // A partial of all three, alone.
    let whole = part("all.part", &[&merged, p2]);
    same_output(&COMMANDS, &[], &raw, &[&whole]);
    // A partial beside a raw file, and a partial of a partial and a raw file.
    let two = part("ranks01-raw.part", &[raw[0], raw[1]]);
    same_output(&COMMANDS, &[], &raw, &[&two, raw[2]]);
    same_output(&COMMANDS, &[], &raw, &[p0, raw[1], p2]);
    let mixed = part("mixed.part", &[p0, raw[1]]);
    same_output(&COMMANDS, &[], &raw, &[&mixed, raw[2]]);
    // `tally diff` of two partials is the diff of their files.
    let diff = |a: &Path, b: &Path| tally_on(&["diff", "--format", "json"], &[a, b]);
    let (expected, got) = (diff(raw[0], raw[1]), diff(p0, p1));
    assert!(expected.status.success() && got.status.success(), "{}", stderr(&got));
    assert_eq!(got.stdout, expected.stdout);
}

#[test]
fn partial_reads_standard_input_as_account_does() {
    let directory = tempfile::tempdir().unwrap();
    let files = split_example(directory.path(), 2);
    let output = directory.path().join("stdin.part");
    let made =
        run(tally().args(["partial", "-", "-o"]).arg(&output).stdin(std::fs::File::open(&files[0]).unwrap()));
    assert!(made.status.success(), "{}", stderr(&made));
    let raw: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let expected = tally_on(&["account", "--format", "json"], &raw);
    let got = tally_on(&["account", "--format", "json"], &[&output, raw[1]]);
    assert!(got.status.success(), "{}", stderr(&got));
    assert_eq!(got.stdout, expected.stdout);
    // Standard input beside a partial: each input is opened once, so its
    // bytes are read once.
    let beside = run(tally()
        .args(["account", "--format", "json"])
        .arg(&output)
        .arg("-")
        .stdin(std::fs::File::open(&files[1]).unwrap()));
    assert!(beside.status.success(), "{}", stderr(&beside));
    assert_eq!(beside.stdout, expected.stdout);
}

#[test]
fn partials_of_two_kineto_traces_given_one_run_id_are_the_traces_run() {
    let directory = tempfile::tempdir().unwrap();
    let traces = [kineto("sampled-rank-0.json.gz"), kineto("sampled-rank-1.json.gz")];
    let raw: Vec<&Path> = traces.iter().map(PathBuf::as_path).collect();
    let run_id = ["--run-id", "sampled-run"];
    let part = |name: &str, trace: &Path, extra: &[&str]| {
        let args: Vec<&str> = run_id.iter().chain(extra).copied().collect();
        partial(&[trace], &directory.path().join(name), &args)
    };
    // As `tally account` imports traces: one record per launch.
    let (p0, p1) = (part("rank0.part", raw[0], &[]), part("rank1.part", raw[1], &[]));
    same_output(&COMMANDS[..3], &run_id, &raw, &[&p0, &p1]);
    // One partial beside the other trace.
    same_output(&COMMANDS[..3], &run_id, &raw, &[&p0, raw[1]]);
    // As `tally breakdown` imports them: one record per kernel.
    let per_kernel = ["--per-kernel"];
    let (k0, k1) = (part("k0.part", raw[0], &per_kernel), part("k1.part", raw[1], &per_kernel));
    same_output(&COMMANDS[3..], &run_id, &raw, &[&k0, &k1]);
    same_output(&[&["account", "--per-kernel", "--format", "json"]], &run_id, &raw, &[&k0, &k1]);
    // Partials made one way are not read the other: the figures differ.
    let refused = tally_on(&["breakdown", "--format", "json"], &[&p0, &p1]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("tally partial --per-kernel"), "{}", stderr(&refused));
    let refused = tally_on(&["account", "--format", "json"], &[&p0, &k1]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("per kernel, but the inputs before it per launch"),
        "{}",
        stderr(&refused)
    );
    // Without one run ID the partials are of two runs, which is not what
    // one process reading both traces finds.
    let (d0, d1) = (
        partial(&[raw[0]], &directory.path().join("d0.part"), &[]),
        partial(&[raw[1]], &directory.path().join("d1.part"), &[]),
    );
    let expected = tally_on(&["account", "--format", "json"], &raw);
    let got = tally_on(&["account", "--format", "json"], &[&d0, &d1]);
    assert!(expected.status.success());
    assert_eq!(got.status.code(), Some(1), "default run IDs differ per partial");
    assert!(stderr(&got).contains("multiple run_id values"), "{}", stderr(&got));
}

/// An artifact of `lines` after the example's context lines.
fn artifact_with(path: &Path, lines: &[String]) -> PathBuf {
    let text = std::fs::read_to_string(root().join("examples/serving-run.jsonl")).unwrap();
    let mut body: String = text
        .lines()
        .filter(|line| serde_json::from_str::<Value>(line).unwrap()["event_type"] == "infer.context")
        .map(|line| format!("{line}\n"))
        .collect();
    for line in lines {
        body.push_str(line);
        body.push('\n');
    }
    std::fs::write(path, body).unwrap();
    path.to_path_buf()
}

#[test]
fn a_conflicting_redelivery_split_between_partials_is_the_same_rejection() {
    let directory = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("examples/serving-run.jsonl")).unwrap();
    let iteration = text
        .lines()
        .find(|line| serde_json::from_str::<Value>(line).unwrap()["event_type"] == "infer.iteration")
        .unwrap()
        .to_owned();
    let mut changed: Value = serde_json::from_str(&iteration).unwrap();
    let end = changed["end_ns"].as_u64().unwrap();
    changed["end_ns"] = Value::from(end + 1);
    let first = artifact_with(&directory.path().join("first.jsonl"), &[iteration]);
    let second = artifact_with(&directory.path().join("second.jsonl"), &[changed.to_string()]);
    let expected = tally_on(&["account", "--format", "json"], &[&first, &second]);
    assert!(!expected.status.success());
    let message = stderr(&expected);
    assert!(message.contains("second.jsonl: line "), "{message}");
    // Each file's partial is fine on its own; together they are the run.
    let p1 = partial(&[&first], &directory.path().join("first.part"), &[]);
    let p2 = partial(&[&second], &directory.path().join("second.part"), &[]);
    for files in [vec![p1.as_path(), p2.as_path()], vec![p1.as_path(), second.as_path()]] {
        for command in ["account", "breakdown"] {
            let got = tally_on(&[command, "--format", "json"], &files);
            assert_eq!(got.status.code(), Some(1), "{command} of {files:?}");
            assert!(got.stdout.is_empty());
            let expected = tally_on(&[command, "--format", "json"], &[&first, &second]);
            assert_eq!(stderr(&got), stderr(&expected), "{command} of {files:?}");
        }
    }
    // A partial of both keeps the conflict for whoever resolves it.
    let both = partial(&[&p1, &second], &directory.path().join("both.part"), &[]);
    assert_eq!(stderr(&tally_on(&["account"], &[&both])), message);
}

#[test]
fn a_broken_partial_is_refused_naming_the_file_and_byte() {
    let directory = tempfile::tempdir().unwrap();
    let files = split_example(directory.path(), 2);
    let good = partial(&[&files[0]], &directory.path().join("good.part"), &[]);
    let bytes = std::fs::read(&good).unwrap();
    let truncated = directory.path().join("truncated.part");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    for command in ["account", "breakdown", "partial"] {
        let mut args = vec![command];
        let out = directory.path().join(format!("{command}.out"));
        if command == "partial" {
            args.extend(["-o", out.to_str().unwrap()]);
        }
        let got = tally_on(&args, &[&truncated, &files[1]]);
        assert_eq!(got.status.code(), Some(1), "{command}");
        assert!(got.stdout.is_empty());
        let message = stderr(&got);
        assert!(message.contains(&format!("{}: byte ", truncated.display())), "{message}");
        assert!(message.contains("truncated"), "{message}");
        assert!(!out.exists(), "nothing written");
    }
    // A body over the limit is refused before it is read, naming the flag.
    let limited = tally_on(&["account", "--max-partial-bytes", "1K"], &[&good]);
    assert_eq!(limited.status.code(), Some(1));
    assert!(stderr(&limited).contains("--max-partial-bytes"), "{}", stderr(&limited));
    // `tally export` takes no partial: it holds no timeline.
    let export = directory.path().join("timeline.json");
    let refused = run(tally().arg("export").arg(&good).arg("-o").arg(&export));
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("not their timeline"), "{}", stderr(&refused));
    assert!(!export.exists());
}

#[test]
fn partial_writes_whole_or_nothing() {
    let directory = tempfile::tempdir().unwrap();
    let files = split_example(directory.path(), 2);
    let listing = || {
        let mut names: Vec<_> =
            std::fs::read_dir(directory.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        names
    };
    let before = listing();
    // A missing input: the message `tally account` prints, no partial.
    let missing = directory.path().join("missing.jsonl");
    let out = directory.path().join("out.part");
    let got = tally_on(&["partial", "-o", out.to_str().unwrap()], &[&files[0], &missing]);
    let account = tally_on(&["account"], &[&files[0], &missing]);
    assert_eq!(got.status.code(), Some(1));
    assert_eq!(stderr(&got), stderr(&account));
    assert!(stderr(&got).contains("missing.jsonl"), "{}", stderr(&got));
    // Beside a partial too.
    let good = partial(&[&files[0]], &directory.path().join("good.part"), &[]);
    let beside = tally_on(&["account"], &[&good, &missing]);
    assert_eq!(beside.status.code(), Some(1));
    assert_eq!(stderr(&beside), stderr(&tally_on(&["account"], &[&missing])));
    std::fs::remove_file(&good).unwrap();
    // Into a directory that is not there.
    let nowhere = directory.path().join("no-such-directory").join("out.part");
    let got = tally_on(&["partial", "-o", nowhere.to_str().unwrap()], &[&files[0]]);
    assert_ne!(got.status.code(), Some(0));
    assert!(stderr(&got).contains("no-such-directory"), "{}", stderr(&got));
    // Over an input that is not a partial, which it would replace.
    let original = std::fs::read(&files[1]).unwrap();
    let got = tally_on(&["partial", "-o", files[1].to_str().unwrap()], &[&files[0], &files[1]]);
    assert_eq!(got.status.code(), Some(1));
    assert!(stderr(&got).contains("not a partial"), "{}", stderr(&got));
    assert_eq!(std::fs::read(&files[1]).unwrap(), original);
    // Nothing was left behind: no partial, no temporary file.
    assert_eq!(listing(), before);
    assert!(listing().iter().all(|name| name != OsStr::new("out.part")));
}

#[test]
fn partial_help_states_the_run_id_rule() {
    let help = run(tally().args(["partial", "--help"]));
    assert!(help.status.success());
    let text = String::from_utf8(help.stdout).unwrap();
    for needle in ["--run-id", "same --run-id", "--max-partial-bytes", "--per-kernel", "-o, --output"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}
