//! How every command tells an artifact from a trace (one rule: the name
//! where it is unambiguous, else the content, `--input-format` to force),
//! and that each input is read once as a stream: FIFOs and standard input
//! work wherever a file does.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example() -> PathBuf {
    root().join("examples/serving-run.jsonl")
}

fn kineto() -> PathBuf {
    root().join("crates/tally-trace/tests/fixtures/kineto/inference-rank-1-minimal.json.gz")
}

fn tally() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tally"))
}

/// Waits for `child`, killing it after `limit`: a command that opened a
/// FIFO twice would wait for ever for a second writer.
fn finish(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            let output = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?} (hung on its input?): {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A FIFO at `path` that a thread fills with `bytes` once a reader opens it.
fn fifo_with(path: &Path, bytes: Vec<u8>) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo");
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        // Blocks until tally opens the FIFO for reading.
        if let Ok(mut writer) = std::fs::OpenOptions::new().write(true).open(&path) {
            let _ = writer.write_all(&bytes);
        }
    });
}

fn run(command: &mut Command) -> Output {
    let child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    finish(child, Duration::from_secs(60))
}

fn account_json(input: &Path) -> Output {
    run(tally().args(["account", "--format", "json"]).arg(input))
}

#[test]
fn a_fifo_is_read_as_the_file_it_carries() {
    let dir = tempfile::tempdir().unwrap();
    // An artifact, through `tally account` and `tally export`.
    let expected = account_json(&example());
    assert!(expected.status.success());
    let fifo = dir.path().join("artifact-fifo");
    fifo_with(&fifo, std::fs::read(example()).unwrap());
    let output = account_json(&fifo);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.stdout, expected.stdout, "the FIFO's accounting is the file's");
    let fifo = dir.path().join("export-fifo");
    fifo_with(&fifo, std::fs::read(example()).unwrap());
    let timeline = dir.path().join("timeline.json");
    let output = run(tally().arg("export").arg(&fifo).arg("-o").arg(&timeline));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(timeline.is_file());
    // A gzip Kineto trace, through `tally import` (content rule: no name).
    let fifo = dir.path().join("trace-fifo");
    fifo_with(&fifo, std::fs::read(kineto()).unwrap());
    let artifact = dir.path().join("imported.jsonl");
    let output = run(tally().arg("import").arg(&fifo).arg("-o").arg(&artifact));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let from_file = dir.path().join("from-file.jsonl");
    let output = run(tally().arg("import").arg(kineto()).arg("-o").arg(&from_file));
    assert!(output.status.success());
    // The figures, not the names: a device clock is named after its file.
    let accounted = |path: &Path| -> Vec<(u64, u64, u64)> {
        let output = account_json(path);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let figure = |row: &serde_json::Value, key: &str| row[key].as_u64().unwrap();
        report["device_totals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                (figure(row, "busy_ns"), figure(row, "summed_activity_ns"), figure(row, "activity_count"))
            })
            .collect()
    };
    assert_eq!(accounted(&artifact), accounted(&from_file), "the FIFO's trace is the file's");
    // And `tally account` takes the trace through a FIFO too.
    let fifo = dir.path().join("account-trace-fifo");
    fifo_with(&fifo, std::fs::read(kineto()).unwrap());
    assert_eq!(accounted(&fifo), accounted(&kineto()));
}

#[test]
fn standard_input_may_carry_a_trace_or_an_artifact() {
    for (input, devices) in [(example(), true), (kineto(), true)] {
        let mut child = tally()
            .args(["account", "--format", "json", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let bytes = std::fs::read(&input).unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
        let output = finish(child, Duration::from_secs(60));
        assert!(output.status.success(), "{}: {}", input.display(), String::from_utf8_lossy(&output.stderr));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(!report["device_totals"].as_array().unwrap().is_empty(), devices, "{}", input.display());
    }
}

#[test]
fn what_is_no_trace_is_judged_as_an_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Vec<u8>, &str); 3] = [
        // stormlog: "record must be an object".
        ("array-record", b"[1, 2, 3]\n".to_vec(), "record must be an object"),
        // An array of objects without `ph` is no event list.
        ("array-of-objects", b"[{\"a\": 1}]\n".to_vec(), "record must be an object"),
        // 100,000 nested arrays: not read as an empty trace.
        ("deep", [vec![b'['; 100_000], vec![b']'; 100_000], vec![b'\n']].concat(), "line 1"),
    ];
    for (name, bytes, reason) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        for command in ["account", "export"] {
            let mut args = vec![command.to_owned(), path.display().to_string()];
            if command == "export" {
                args.extend(["-o".to_owned(), dir.path().join("out.json").display().to_string()]);
            }
            let output = run(tally().args(&args));
            let message = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(1), "{command} {name}: {message}");
            assert!(
                message.contains(&format!("{}: line 1: ", path.display())),
                "{command} {name}: {message}"
            );
            assert!(message.contains(reason), "{command} {name}: {message}");
            assert!(output.stdout.is_empty(), "{command} {name}");
        }
    }
    assert!(!dir.path().join("out.json").exists());
}

#[test]
fn the_name_decides_where_it_is_unambiguous_and_input_format_forces() {
    let dir = tempfile::tempdir().unwrap();
    // A trace named as an artifact is read as one (and rejected as one)...
    let misnamed = dir.path().join("trace.jsonl.gz");
    std::fs::copy(kineto(), &misnamed).unwrap();
    let output = account_json(&misnamed);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    // ...unless --input-format says what it is.
    let output = run(tally().args(["account", "--format", "json", "--input-format", "trace"]).arg(&misnamed));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    // An artifact forced to be a trace is not a Chrome trace.
    let output = run(tally().args(["account", "--input-format", "trace"]).arg(example()));
    let message = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(message.contains("not a Chrome trace"), "{message}");
    // A bad value of the flag is a usage error.
    let output = run(tally().args(["account", "--input-format", "yaml"]).arg(example()));
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn an_nsight_export_through_a_pipe_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("nsys-fifo");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.resize(4096, 0);
    fifo_with(&fifo, bytes);
    let output = run(tally().arg("import").arg(&fifo).arg("-o").arg(dir.path().join("out.jsonl")));
    let message = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(message.contains("must be a regular file"), "{message}");
}

fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect()
}

#[test]
fn an_interrupted_import_leaves_no_temporary_file_and_the_old_output() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("run.jsonl");
    std::fs::write(&output, b"the previous artifact\n").unwrap();
    // A trace that arrives slowly: its first bytes, then nothing until the
    // test has interrupted the import.
    let fifo = dir.path().join("slow.json");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let writer_path = fifo.clone();
    let (release, released) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut writer = std::fs::OpenOptions::new().write(true).open(&writer_path).unwrap();
        let _ = writer.write_all(b"{\"traceEvents\": [");
        let _ = writer.flush();
        let _ = released.recv_timeout(Duration::from_secs(60));
    });
    let child = tally()
        .arg("import")
        .arg(&fifo)
        .arg("-o")
        .arg(&output)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while temporaries(dir.path()).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(30), "the import never started writing");
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let outcome = finish(child, Duration::from_secs(30));
    drop(release);
    assert_eq!(outcome.status.code(), Some(130), "{}", String::from_utf8_lossy(&outcome.stderr));
    assert_eq!(temporaries(dir.path()), Vec::<String>::new(), "the temporary file is gone");
    assert_eq!(std::fs::read(&output).unwrap(), b"the previous artifact\n", "the old output is intact");
}

#[test]
fn stale_temporary_files_of_the_target_are_removed_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("run.jsonl");
    // A process ID no live process has (beyond Linux's largest).
    let stale = dir.path().join(".run.jsonl.999999999-17a-0.tmp");
    std::fs::write(&stale, b"half an artifact").unwrap();
    // Not ours: another target's, or a name we never make.
    let others =
        [dir.path().join(".other.jsonl.999999999-17a-0.tmp"), dir.path().join(".run.jsonl.notes.tmp")];
    for other in &others {
        std::fs::write(other, b"x").unwrap();
    }
    let outcome = run(tally().arg("import").arg(kineto()).arg("-o").arg(&output));
    assert!(outcome.status.success(), "{}", String::from_utf8_lossy(&outcome.stderr));
    assert!(!stale.exists(), "the stale temporary is removed");
    assert!(others.iter().all(|other| other.exists()), "what is not ours stays");
}

#[test]
fn import_to_stdout_writes_nothing_when_a_trace_fails() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, b"{\"traceEvents\": [{\"ph\": \"X\", ").unwrap();
    let outcome = run(tally().arg("import").arg(kineto()).arg(&broken).arg("-o").arg("-"));
    assert_eq!(outcome.status.code(), Some(1), "{}", String::from_utf8_lossy(&outcome.stderr));
    assert!(outcome.stdout.is_empty(), "{} bytes on stdout", outcome.stdout.len());
    // The good trace alone streams out whole.
    let outcome = run(tally().arg("import").arg(kineto()).arg("-o").arg("-"));
    assert!(outcome.status.success());
    assert!(outcome.stdout.ends_with(b"\n") && outcome.stdout.len() > 1000);
}
