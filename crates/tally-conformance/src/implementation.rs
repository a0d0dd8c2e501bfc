//! Implementations under test: any Rust closure, an external program run
//! once per case (the command form), or one started once that answers a
//! JSON line per case (the batch form).
//!
//! # The contract
//!
//! Each case is a folder of input artifacts (JSONL, embedded v2/v3 or
//! compact v4, sometimes gzip, sometimes several rank files of one run,
//! resolved together in the order given) and, by kind, `model.json` (a
//! share model) or `queries.json` (`[{"timestamp_ns", "from", "to"}]`)
//! beside them. The answer is, by kind:
//!
//! - `account`: the accounting object of the conformance corpus;
//! - `shares`: the verdict, `{"valid": true, "budget_ns", "attributed_ns",
//!   "unattributed_ns", "share_count"}` or `{"valid": false, "rule",
//!   "message"}`;
//! - `align`: `{"answers": [...]}`, per query `{"covering", "value_ns",
//!   "uncertainty_ns", "clock_domain"}` or `{"covering", "error"}`.
//!
//! An implementation that refuses the inputs answers `{"error": "..."}`
//! (or, in the command form, exits non-zero).
//!
//! **Command form** ([`CommandImplementation`]): the program runs once per
//! case with the input paths appended to its arguments, or in place of an
//! argument `{}`; `{kind}`, `{model}` and `{queries}` inside an argument
//! are replaced too, and the environment holds `TALLY_CONFORM_KIND`,
//! `TALLY_CONFORM_MODEL` and `TALLY_CONFORM_QUERIES`. It prints the answer
//! on stdout and exits 0, or exits non-zero to refuse the inputs.
//!
//! **Batch form** ([`BatchImplementation`]): the program starts once and
//! reads one JSON line per case on stdin, `{"kind", "inputs": [paths]}`
//! plus `"model"` or `"queries"`, answering each with one JSON line on
//! stdout. A process that dies or times out is restarted for the next case.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::ConformError;
use crate::answer::{Reply, tally_answer};
use crate::case::Inputs;

/// The per-case timeout when none is given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// An implementation under test.
pub trait Implementation {
    /// Its reply for one case.
    fn answer(&mut self, inputs: &Inputs) -> Reply;

    /// How to run it by hand on one case, for the finding's README.
    fn rerun_hint(&self, inputs: &Inputs) -> Option<String> {
        let _ = inputs;
        None
    }
}

impl<F: FnMut(&Inputs) -> Reply> Implementation for F {
    fn answer(&mut self, inputs: &Inputs) -> Reply {
        self(inputs)
    }
}

/// tally itself, as an implementation: [`tally_answer`].
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally;

impl Implementation for Tally {
    fn answer(&mut self, inputs: &Inputs) -> Reply {
        tally_answer(inputs)
    }
}

/// Splits a command line into words as a POSIX shell would for plain
/// words, single and double quotes and backslashes (no expansions).
///
/// ```
/// let words = tally_conformance::split_command(r#"python3 'my script.py' --x "a b" c\ d"#).unwrap();
/// assert_eq!(words, ["python3", "my script.py", "--x", "a b", "c d"]);
/// ```
pub fn split_command(line: &str) -> Result<Vec<String>, ConformError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => {
                            return Err(ConformError::Command(format!("unclosed single quote in {line:?}")));
                        }
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => {
                                return Err(ConformError::Command(format!(
                                    "unclosed double quote in {line:?}"
                                )));
                            }
                        },
                        Some(c) => word.push(c),
                        None => {
                            return Err(ConformError::Command(format!("unclosed double quote in {line:?}")));
                        }
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(ConformError::Command(format!("a trailing backslash in {line:?}"))),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(ConformError::Command("the command is empty".into()));
    }
    Ok(words)
}

/// Checks that `program` names something that can be run: a path to an
/// executable file, or a name found on `PATH`.
fn check_program(program: &str) -> Result<(), ConformError> {
    let runnable = |path: &Path| {
        use std::os::unix::fs::PermissionsExt;
        path.metadata().is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    let found = if program.contains('/') {
        runnable(Path::new(program))
    } else {
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| runnable(&dir.join(program))))
    };
    if found {
        Ok(())
    } else {
        Err(ConformError::Command(format!("{program}: no such executable (a path, or a name on PATH)")))
    }
}

/// The command form: one process per case.
#[derive(Debug, Clone)]
pub struct CommandImplementation {
    words: Vec<String>,
    timeout: Duration,
}

impl CommandImplementation {
    /// From a command line (`CMD ARGS`, see the module docs); fails when it
    /// does not split or its program cannot be found.
    pub fn new(line: &str, timeout: Duration) -> Result<Self, ConformError> {
        let words = split_command(line)?;
        check_program(&words[0])?;
        Ok(Self { words, timeout })
    }

    fn arguments(&self, inputs: &Inputs) -> Vec<String> {
        let text =
            |path: &Option<PathBuf>| path.as_ref().map(|path| path.display().to_string()).unwrap_or_default();
        let mut arguments = Vec::new();
        let mut placed = false;
        for word in &self.words[1..] {
            if word == "{}" {
                arguments.extend(inputs.inputs.iter().map(|path| path.display().to_string()));
                placed = true;
            } else {
                arguments.push(
                    word.replace("{kind}", inputs.kind.name())
                        .replace("{model}", &text(&inputs.model))
                        .replace("{queries}", &text(&inputs.queries)),
                );
            }
        }
        if !placed {
            arguments.extend(inputs.inputs.iter().map(|path| path.display().to_string()));
        }
        arguments
    }
}

impl Implementation for CommandImplementation {
    fn answer(&mut self, inputs: &Inputs) -> Reply {
        let mut command = Command::new(&self.words[0]);
        command
            .args(self.arguments(inputs))
            .env("TALLY_CONFORM_KIND", inputs.kind.name())
            .env("TALLY_CONFORM_MODEL", inputs.model.as_deref().unwrap_or(Path::new("")))
            .env("TALLY_CONFORM_QUERIES", inputs.queries.as_deref().unwrap_or(Path::new("")))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => return Reply::Failed(format!("{}: cannot start: {error}", self.words[0])),
        };
        let stdout = read_in_background(child.stdout.take());
        let stderr = read_in_background(child.stderr.take());
        let deadline = Instant::now() + self.timeout;
        let Some(status) = wait_until(&mut child, deadline) else {
            let _ = child.kill();
            let _ = child.wait();
            return Reply::TimedOut;
        };
        let remaining = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100));
        let out = stdout.recv_timeout(remaining).unwrap_or_default();
        let err = stderr.recv_timeout(Duration::from_millis(100)).unwrap_or_default();
        let last_err =
            String::from_utf8_lossy(&err).lines().rfind(|line| !line.trim().is_empty()).map(str::to_owned);
        let parsed: Option<Value> = serde_json::from_slice(&out).ok();
        match (status.code(), parsed) {
            (Some(0), Some(value)) => interpret(value),
            (Some(0), None) => Reply::Failed(format!(
                "exit 0 without a JSON answer on stdout{}",
                last_err.map(|line| format!(" ({line})")).unwrap_or_default()
            )),
            (Some(_), parsed) => {
                let message = parsed
                    .as_ref()
                    .and_then(|value| value.get("error"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or(last_err)
                    .unwrap_or_else(|| format!("exit {status}"));
                Reply::Rejected(message)
            }
            (None, _) => Reply::Failed(format!("killed ({status})")),
        }
    }

    fn rerun_hint(&self, inputs: &Inputs) -> Option<String> {
        let mut words = vec![self.words[0].clone()];
        words.extend(self.arguments(inputs));
        Some(words.iter().map(|word| quote(word)).collect::<Vec<_>>().join(" "))
    }
}

/// A reply's JSON: `{"error": ...}` alone refuses the inputs.
fn interpret(value: Value) -> Reply {
    match value.as_object() {
        Some(map) if map.len() == 1 && map.contains_key("error") => {
            Reply::Rejected(map["error"].as_str().map_or_else(|| map["error"].to_string(), str::to_owned))
        }
        _ => Reply::Answer(value),
    }
}

/// A word quoted for a POSIX shell when it needs it.
fn quote(word: &str) -> String {
    let plain =
        !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// Everything a pipe gives until it closes, read on a thread so a full
/// pipe never blocks the child.
fn read_in_background(pipe: Option<impl Read + Send + 'static>) -> Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            let _ = sender.send(bytes);
        });
    }
    receiver
}

/// The child's exit status, or `None` at the deadline.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<std::process::ExitStatus> {
    let mut pause = Duration::from_micros(200);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            Err(_) => return None,
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// The batch form: one process, one JSON line per case each way.
pub struct BatchImplementation {
    words: Vec<String>,
    timeout: Duration,
    process: Option<BatchProcess>,
    /// How many times the process was started.
    starts: usize,
}

struct BatchProcess {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<std::io::Result<String>>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for BatchProcess {
    fn drop(&mut self) {
        // Closing stdin ends a well-behaved batch loop; the kill ends the rest.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl BatchImplementation {
    /// From a command line (`CMD ARGS`); the process starts with the first
    /// case. Fails when the line does not split or its program cannot be
    /// found.
    pub fn new(line: &str, timeout: Duration) -> Result<Self, ConformError> {
        let words = split_command(line)?;
        check_program(&words[0])?;
        Ok(Self { words, timeout, process: None, starts: 0 })
    }

    /// How many times the process was started (1 when it never died).
    pub fn starts(&self) -> usize {
        self.starts
    }

    fn start(&mut self) -> Result<&mut BatchProcess, String> {
        if self.process.is_none() {
            let mut child = Command::new(&self.words[0])
                .args(&self.words[1..])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|error| format!("{}: cannot start: {error}", self.words[0]))?;
            self.starts += 1;
            let stdin = child.stdin.take().ok_or("no stdin pipe")?;
            let stdout = child.stdout.take().ok_or("no stdout pipe")?;
            let stderr_pipe = child.stderr.take().ok_or("no stderr pipe")?;
            let (sender, lines) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            });
            // The last lines of stderr, for the message of a crash.
            let stderr = Arc::new(Mutex::new(Vec::new()));
            let keep = Arc::clone(&stderr);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                    let Ok(mut kept) = keep.lock() else { break };
                    kept.push(line);
                    if kept.len() > 20 {
                        kept.remove(0);
                    }
                }
            });
            self.process = Some(BatchProcess { child, stdin, lines, stderr });
        }
        // Invariant: set just above when it was `None`.
        Ok(self.process.as_mut().expect("the process was just started"))
    }

    fn crash_message(&mut self, what: &str) -> String {
        let tail = self
            .process
            .as_ref()
            .and_then(|process| process.stderr.lock().ok().map(|lines| lines.join(" | ")))
            .unwrap_or_default();
        self.process = None;
        if tail.is_empty() { what.to_owned() } else { format!("{what}: {tail}") }
    }
}

impl Implementation for BatchImplementation {
    fn answer(&mut self, inputs: &Inputs) -> Reply {
        let timeout = self.timeout;
        let process = match self.start() {
            Ok(process) => process,
            Err(reason) => return Reply::Failed(reason),
        };
        let mut request = json!({"kind": inputs.kind.name(), "inputs": inputs.inputs});
        if let Some(model) = &inputs.model {
            request["model"] = json!(model);
        }
        if let Some(queries) = &inputs.queries {
            request["queries"] = json!(queries);
        }
        let mut line = request.to_string();
        line.push('\n');
        if process.stdin.write_all(line.as_bytes()).and_then(|()| process.stdin.flush()).is_err() {
            // Give stderr's thread a moment to collect the reason.
            std::thread::sleep(Duration::from_millis(50));
            return Reply::Failed(self.crash_message("the batch process is gone"));
        }
        match process.lines.recv_timeout(timeout) {
            Ok(Ok(text)) => match serde_json::from_str::<Value>(&text) {
                Ok(value) => interpret(value),
                Err(_) => {
                    let shown = tally_core::shown(&text).to_string();
                    Reply::Failed(self.crash_message(&format!("not a JSON line: {shown}")))
                }
            },
            Ok(Err(error)) => Reply::Failed(self.crash_message(&format!("reading its answer: {error}"))),
            Err(RecvTimeoutError::Timeout) => {
                self.process = None;
                Reply::TimedOut
            }
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(50));
                Reply::Failed(self.crash_message("the batch process exited"))
            }
        }
    }

    fn rerun_hint(&self, inputs: &Inputs) -> Option<String> {
        let mut request = json!({"kind": inputs.kind.name(), "inputs": inputs.inputs});
        if let Some(model) = &inputs.model {
            request["model"] = json!(model);
        }
        if let Some(queries) = &inputs.queries {
            request["queries"] = json!(queries);
        }
        let command: Vec<String> = self.words.iter().map(|word| quote(word)).collect();
        Some(format!("echo {} | {}", quote(&request.to_string()), command.join(" ")))
    }
}
