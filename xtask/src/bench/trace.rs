//! Trace import: `tally import` of a Kineto Chrome trace of at least 500 MB
//! (15 MB with `--quick`), made by repeating the events of a real trace
//! (`sampled-rank-0.json.gz` of tally-trace's fixtures) with shifted
//! timestamps, correlation IDs and step numbers. The file is generated event
//! by event into the scratch folder, never held in memory.
//!
//! Rows: the import alone (`--dry-run`: every record built, none written)
//! and the import into a v4 artifact on disk, both pinned to one core; MB/s of
//! uncompressed JSON, trace events per second, peak RSS. Where a Python with
//! Holistic Trace Analysis is found (`TALLY_HTA_PYTHON`, else `.venv-hta`,
//! else the reference Python when it has `hta`), the same run times HTA's trace load and
//! temporal breakdown on the same file.
//!
//! Targets (issue 8): at least 200 MB/s on one core; peak RSS under a fifth
//! of the trace's size.
//!
//! Issue 18 adds:
//!
//! - **16 ranks**: 16 traces of about 100 MB each (1 MB with `--quick`),
//!   generated the same way and cached, imported (`--dry-run`) and accounted
//!   together with `--threads 1` and `--threads 2`: MB/s of all the JSON.
//! - **Real traces**: shifted copies of the real fixture traces
//!   (large-20k-kernels, queue-length-rank-0, diff-control-rank3,
//!   diff-test-rank1; CPU ops, runtime calls and flow events as PyTorch
//!   writes them, laid out as Kineto lays them out) concatenated into one
//!   trace of at least 300 MB (5 MB with `--quick`), imported and accounted
//!   on one core (target: at least 400 MB/s, RSS under a fifth), and
//!   accounted on two threads (the one trace read in two halves at once); and
//!   `tally account` of large-20k-kernels itself beside stormlog's Kineto
//!   import + resolution + accounting of the same file (target: at least 30
//!   times stormlog's speed).
//!
//! Issue 40 adds the **XPlane** row (`cargo xtask bench trace-xplane`): an
//! XSpace protobuf of about 100 MB (5 MB with `--quick`) generated into the
//! scratch folder (see `trace/xplane.rs`: two GPUs' stream lines of kernels
//! and copies with correlation IDs and the host's launch calls), imported
//! (`--dry-run`) on one core: MB/s, events/s, peak RSS; beside it the
//! Kineto twin of the same run (the same kernels, copies, launch calls,
//! streams and times written as Kineto JSON) imported the same way, with
//! the ratio of their events and GPU events per second and each one's peak
//! RSS over its file size, and the Kineto trace of the same size as before.
//! Targets: XPlane at least as fast per event as Kineto; peak RSS under a
//! fifth of the file's size.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

use super::{BenchContext, Row, best_of_three};
use crate::workspace_root;

mod xplane;

const SOURCE: &str = "crates/tally-trace/tests/fixtures/kineto/sampled-rank-0.json.gz";

/// The real traces the large real-trace file is made of.
const REAL_SOURCES: [&str; 4] = [
    "crates/tally-trace/tests/fixtures/kineto/large-20k-kernels.json.gz",
    "crates/tally-trace/tests/fixtures/kineto/queue-length-rank-0.json.gz",
    "crates/tally-trace/tests/fixtures/kineto/diff-control-rank3.json.gz",
    "crates/tally-trace/tests/fixtures/kineto/diff-test-rank1.json.gz",
];

/// stormlog 0.4.3's Kineto import, resolution and accounting of one trace,
/// as its own `import`/`account` commands chain them.
const STORMLOG_KINETO: &str = "import sys\n\
from pathlib import Path\n\
from stormlog.infer.trace_kineto import import_kineto_trace\n\
from stormlog.infer.correlation_accounting import resolve_inference_events, account_gpu_time\n\
capture = import_kineto_trace(Path(sys.argv[1]), run_id='r', session_id='s')\n\
accounting = account_gpu_time(resolve_inference_events(capture.events))\n\
print(len(capture.events), len(accounting.iterations))\n";

/// HTA's load and temporal breakdown, as its users run them.
const HTA_BREAKDOWN: &str = "import logging, os, sys\n\
logging.disable(logging.WARNING)\n\
from hta.trace_analysis import TraceAnalysis\n\
path = os.path.abspath(sys.argv[1])\n\
analysis = TraceAnalysis(trace_files={0: path}, trace_dir=os.path.dirname(path))\n\
print(analysis.get_temporal_breakdown(visualize=False).to_json())\n";

/// A writer that counts what passes through it.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

pub(super) struct Generated {
    pub(super) bytes: u64,
    pub(super) events: u64,
}

/// The source trace's header (all but its events) and its events.
fn source() -> anyhow::Result<(serde_json::Map<String, Value>, Vec<Value>)> {
    read_source(SOURCE)
}

/// A fixture trace's header and events.
fn read_source(source: &str) -> anyhow::Result<(serde_json::Map<String, Value>, Vec<Value>)> {
    let path = workspace_root().join(source);
    let mut text = String::new();
    flate2::read::GzDecoder::new(File::open(&path).with_context(|| path.display().to_string())?)
        .read_to_string(&mut text)?;
    let Value::Object(mut document) = serde_json::from_str(&text)? else {
        bail!("{source} is not an object")
    };
    let Some(Value::Array(events)) = document.remove("traceEvents") else { bail!("{source} has no events") };
    Ok((document, events))
}

/// Shifts one copy of an event: `ts` by whole microseconds, correlation and
/// external IDs and ProfilerStep numbers by the copy's index.
fn shifted(event: &Value, copy: u64, period_us: u64) -> Value {
    let mut event = event.clone();
    if let Some(ts) = event.get("ts").and_then(Value::as_u64) {
        event["ts"] = Value::from(ts + copy * period_us);
    }
    renumber(&mut event, copy);
    event
}

/// Moves copy `copy` of an event's correlation and external IDs and its
/// ProfilerStep number out of every other copy's way.
fn renumber(event: &mut Value, copy: u64) {
    if let Some(Value::Object(args)) = event.get_mut("args") {
        for key in ["correlation", "External id"] {
            if let Some(id) = args.get(key).and_then(Value::as_u64).filter(|&id| id != 0) {
                args.insert(key.into(), Value::from(id + copy * 100_000_000));
            }
        }
    }
    if let Some(step) =
        event.get("name").and_then(Value::as_str).and_then(|name| name.strip_prefix("ProfilerStep#"))
        && let Ok(number) = step.parse::<u64>()
    {
        event["name"] = Value::from(format!("ProfilerStep#{}", number + copy * 1000));
    }
}

fn generate(path: &Path, target_bytes: u64) -> anyhow::Result<Generated> {
    let (header, events) = source()?;
    let (mut first, mut last) = (u64::MAX, 0u64);
    for event in &events {
        if let Some(ts) = event.get("ts").and_then(Value::as_u64) {
            let duration = event.get("dur").and_then(Value::as_f64).unwrap_or(0.0).ceil() as u64;
            first = first.min(ts);
            last = last.max(ts + duration);
        }
    }
    let period_us = last.saturating_sub(first) + 1000;
    let mut out = Counted { inner: BufWriter::with_capacity(1 << 20, File::create(path)?), bytes: 0 };
    out.write_all(b"{")?;
    for (key, value) in &header {
        write!(out, "{}: {value}, ", Value::from(key.as_str()))?;
    }
    out.write_all(b"\"traceEvents\": [\n")?;
    let mut written = 0u64;
    let mut copy = 0u64;
    while out.bytes < target_bytes {
        for event in &events {
            if written > 0 {
                out.write_all(b",\n")?;
            }
            serde_json::to_writer(&mut out, &shifted(event, copy, period_us))?;
            written += 1;
        }
        copy += 1;
    }
    out.write_all(b"\n]}\n")?;
    out.flush()?;
    let bytes = out.bytes;
    Ok(Generated { bytes, events: written })
}

/// Writes `event` as Kineto lays an event out: its members on one line,
/// `args` on lines of their own.
fn write_kineto_event(out: &mut impl Write, event: &Value) -> anyhow::Result<()> {
    let Value::Object(members) = event else {
        serde_json::to_writer(&mut *out, event)?;
        return Ok(());
    };
    out.write_all(b"  {\n    ")?;
    let mut first = true;
    for (key, value) in members.iter().filter(|(key, _)| *key != "args") {
        if !std::mem::take(&mut first) {
            out.write_all(b", ")?;
        }
        write!(out, "{}: {value}", Value::from(key.as_str()))?;
    }
    if let Some(Value::Object(args)) = members.get("args") {
        out.write_all(b",\n    \"args\": {\n      ")?;
        let mut first = true;
        for (key, value) in args {
            if !std::mem::take(&mut first) {
                out.write_all(b", ")?;
            }
            write!(out, "{}: {value}", Value::from(key.as_str()))?;
        }
        out.write_all(b"\n    }")?;
    }
    out.write_all(b"\n  }")?;
    Ok(())
}

/// One copy of a real trace's event: `ts` moved so that copy `slot` (of
/// every source in turn) starts at `origin + slot * period`, correlation and
/// external IDs and ProfilerStep numbers moved so no two slots share one.
fn relocated(event: &Value, first_ts: u64, origin: u64, slot: u64, period_us: u64) -> Value {
    let mut event = event.clone();
    if let Some(ts) = event.get("ts").and_then(Value::as_u64) {
        event["ts"] = Value::from(ts.saturating_sub(first_ts) + origin + slot * period_us);
    }
    renumber(&mut event, slot);
    // Real traces link launches to kernels by flow events too.
    if let Some(id) = event.get("id").and_then(Value::as_u64) {
        event["id"] = Value::from(id + slot * 100_000_000);
    }
    event
}

/// The real traces' events, shifted copies of each in turn, under the first
/// trace's header, until `target_bytes`.
fn generate_real(path: &Path, target_bytes: u64) -> anyhow::Result<Generated> {
    let mut sources = Vec::new();
    for source in REAL_SOURCES {
        let (header, events) = read_source(source)?;
        let times = events.iter().filter_map(|event| {
            let ts = event.get("ts").and_then(Value::as_u64)?;
            Some((ts, ts + event.get("dur").and_then(Value::as_f64).unwrap_or(0.0).ceil() as u64))
        });
        let (first, last) =
            times.fold((u64::MAX, 0), |(first, last), (start, end)| (first.min(start), last.max(end)));
        sources.push((header, events, first, last));
    }
    let period_us =
        sources.iter().map(|(_, _, first, last)| last.saturating_sub(*first)).max().unwrap_or(0) + 1000;
    let origin = sources[0].2;
    let mut out = Counted { inner: BufWriter::with_capacity(1 << 20, File::create(path)?), bytes: 0 };
    out.write_all(b"{\n")?;
    for (key, value) in &sources[0].0 {
        writeln!(out, "  {}: {value},", Value::from(key.as_str()))?;
    }
    out.write_all(b"  \"traceEvents\": [\n")?;
    let (mut written, mut slot) = (0u64, 0u64);
    'copies: loop {
        for (_, events, first, _) in &sources {
            for event in events {
                if written > 0 {
                    out.write_all(b",\n")?;
                }
                write_kineto_event(&mut out, &relocated(event, *first, origin, slot, period_us))?;
                written += 1;
                if out.bytes >= target_bytes {
                    break 'copies;
                }
            }
            slot += 1;
        }
    }
    out.write_all(b"\n  ]\n}\n")?;
    out.flush()?;
    Ok(Generated { bytes: out.bytes, events: written })
}

/// `cargo xtask bench-generate-real-trace PATH BYTES`: writes the real-trace
/// file and prints its size and events. The sources' parsed events take
/// about a gigabyte; a child's peak RSS as `wait4` reports it starts from
/// its parent's, so the bench generates in a process of its own.
pub fn generate_real_trace(args: &[String]) -> anyhow::Result<()> {
    let [path, bytes] = args else { bail!("usage: bench-generate-real-trace PATH BYTES") };
    let made = generate_real(Path::new(path), bytes.parse()?)?;
    println!("{} {}", made.bytes, made.events);
    Ok(())
}

/// The real-trace file, reused while its recorded size matches.
pub(super) fn real_trace(scratch: &Path, target_bytes: u64) -> anyhow::Result<(PathBuf, Generated)> {
    let path = scratch.join(format!("kineto-real-{}mb.json", target_bytes / 1_000_000));
    let [bytes, events] = super::cached_input(&path, |path| {
        let output = Command::new(std::env::current_exe()?)
            .arg("bench-generate-real-trace")
            .arg(path)
            .arg(target_bytes.to_string())
            .output()?;
        if !output.status.success() {
            bail!("generating {}: {}", path.display(), String::from_utf8_lossy(&output.stderr));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let figures: Vec<u64> = text.split_whitespace().map(str::parse).collect::<Result<_, _>>()?;
        let [bytes, events] = figures[..] else { bail!("the generator printed {text:?}") };
        Ok([bytes, events])
    })?;
    Ok((path, Generated { bytes, events }))
}

/// A real fixture trace uncompressed into the scratch folder (stormlog and
/// tally read the same bytes).
fn unpacked(scratch: &Path, source: &str) -> anyhow::Result<(PathBuf, u64)> {
    let name = Path::new(source).file_name().and_then(|name| name.to_str()).unwrap_or("trace.json.gz");
    let path = scratch.join(name.trim_end_matches(".gz"));
    let [bytes] = super::cached_input(&path, |path| {
        let mut input = flate2::read::GzDecoder::new(File::open(workspace_root().join(source))?);
        let mut output = File::create(path)?;
        Ok([std::io::copy(&mut input, &mut output)?])
    })?;
    Ok((path, bytes))
}

/// 16 rank traces of `rank_bytes` each: the first generated, the others
/// copies of it under their own names (so each is its own attachment).
fn rank_traces(scratch: &Path, rank_bytes: u64) -> anyhow::Result<(Vec<PathBuf>, Generated)> {
    let (first, made) = trace(scratch, rank_bytes)?;
    let mut paths = vec![first.clone()];
    for rank in 1..16 {
        let path = scratch.join(format!("kineto-{}mb-rank{rank}.json", rank_bytes / 1_000_000));
        let [_, _] = super::cached_input(&path, |path| Ok([std::fs::copy(&first, path)?, made.events]))?;
        paths.push(path);
    }
    Ok((paths, Generated { bytes: made.bytes * 16, events: made.events * 16 }))
}

/// The generated trace, reused while its recorded size matches.
pub(super) fn trace(scratch: &Path, target_bytes: u64) -> anyhow::Result<(PathBuf, Generated)> {
    let path = scratch.join(format!("kineto-{}mb.json", target_bytes / 1_000_000));
    let [bytes, events] = super::cached_input(&path, |path| {
        let made = generate(path, target_bytes)?;
        Ok([made.bytes, made.events])
    })?;
    Ok((path, Generated { bytes, events }))
}

/// `command`, pinned to one core where `taskset` exists.
pub(super) fn one_core(program: &Path) -> Command {
    let pinned = Command::new("taskset").arg("--version").output().is_ok_and(|out| out.status.success());
    if pinned {
        let mut command = Command::new("taskset");
        command.args(["-c", "0"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// A Python that imports HTA: `TALLY_HTA_PYTHON`, else `.venv-hta` (what
/// `cargo xtask python-hta` and `cargo xtask test` set up), else the
/// reference one.
pub(super) fn hta_python(ctx: &BenchContext) -> Option<PathBuf> {
    let candidates = std::env::var_os("TALLY_HTA_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([workspace_root().join(".venv-hta/bin/python")])
        .chain(ctx.python().map(Path::to_path_buf));
    candidates.into_iter().find(|python| {
        Command::new(python).args(["-c", "import hta"]).output().is_ok_and(|out| out.status.success())
    })
}

/// CPU seconds (user and system) of every waited-for child so far: the
/// difference across one run is that run's CPU time, which a machine shared
/// with other work does not inflate as it does wall time.
#[allow(unsafe_code, reason = "getrusage has no safe wrapper in std")]
pub(super) fn children_cpu_seconds() -> f64 {
    // SAFETY: rusage is plain old data; zeroed is a valid value for it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live local.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return f64::NAN;
    }
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Runs the benchmark.
pub fn run(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let target_bytes = if ctx.quick() { 15_000_000 } else { 500_000_000 };
    let (path, made) = trace(ctx.scratch_dir(), target_bytes)?;
    let tally = ctx.tally_bin()?;
    let megabytes = made.bytes / 1_000_000;
    let budget = made.bytes / 5;
    let target = format!("target: >= 200 MB/s on one core, rss < {} MB (a fifth)", budget / 1_000_000);
    let output = ctx.scratch_dir().join("kineto-import.jsonl");
    let runs: [(String, Vec<&std::ffi::OsStr>); 2] = [
        (format!("trace import (Kineto {megabytes} MB, --dry-run)"), vec!["--dry-run".as_ref()]),
        (format!("trace import (Kineto {megabytes} MB) -> v4 file"), vec!["-o".as_ref(), output.as_os_str()]),
    ];
    let mut rows = Vec::new();
    for (name, arguments) in runs {
        let cpu_before = children_cpu_seconds();
        let measure = ctx.run_measured(one_core(&tally).arg("import").arg(&path).args(arguments))?;
        let cpu = children_cpu_seconds() - cpu_before;
        let mut row = Row::new(name, measure);
        row.bytes = Some(made.bytes);
        row.items = Some(made.events);
        row.item_unit = "events";
        row.note =
            format!("cpu {cpu:.2} s = {:.0} MB/s of CPU time; {target}", made.bytes as f64 / 1e6 / cpu);
        if measure.peak_rss_bytes.is_some_and(|rss| rss >= budget) {
            row.note += "; RSS ABOVE TARGET";
        }
        rows.push(row);
    }
    let _ = std::fs::remove_file(&output);
    match hta_python(ctx) {
        Some(python) => {
            let (reference, _) = ctx
                .run_measured_capture(Command::new(&python).arg("-c").arg(HTA_BREAKDOWN).arg(&path))
                .context("HTA trace load + temporal breakdown")?;
            rows[0].reference = Some(reference);
            rows[0].note += "; reference: HTA TraceAnalysis load + get_temporal_breakdown, same file";
        }
        None => {
            rows[0].note += "; HTA not installed (run `cargo xtask python-hta` or set TALLY_HTA_PYTHON)";
        }
    }
    for row in rows {
        ctx.record(row);
    }
    run_ranks(ctx, &tally)?;
    run_real(ctx, &tally)
}

/// One measured run of `command` with its CPU seconds in the note.
/// A measured row of `command` over `made`, and what it printed (for
/// checking that two ways of running it agree).
fn measured_row(
    ctx: &BenchContext,
    name: String,
    command: &mut Command,
    made: &Generated,
) -> anyhow::Result<(Row, String)> {
    let cpu_before = children_cpu_seconds();
    let (measure, output) = ctx.run_measured_capture(command)?;
    let cpu = children_cpu_seconds() - cpu_before;
    let mut row = Row::new(name, measure);
    row.bytes = Some(made.bytes);
    row.items = Some(made.events);
    row.item_unit = "events";
    row.note = format!("cpu {cpu:.2} s = {:.0} MB/s of CPU time", made.bytes as f64 / 1e6 / cpu);
    Ok((row, output))
}

/// The note on a row that should print what another way of running printed.
fn agreement(output: &str, expected: &str, other: &str) -> String {
    if output == expected {
        format!("same output as {other}")
    } else {
        format!("OUTPUT DIFFERS FROM {other}")
    }
}

/// 16 rank traces imported and accounted together, on one thread and two.
fn run_ranks(ctx: &mut BenchContext, tally: &Path) -> anyhow::Result<()> {
    let rank_bytes = if ctx.quick() { 1_000_000 } else { 100_000_000 };
    let (paths, made) = rank_traces(ctx.scratch_dir(), rank_bytes)?;
    let megabytes = made.bytes / 1_000_000;
    let mut walls = Vec::new();
    let mut outputs = Vec::new();
    for command in ["import", "account"] {
        for threads in [1, 2] {
            let mut run = Command::new(tally);
            run.arg(command).args(["--threads", &threads.to_string()]);
            if command == "import" {
                run.arg("--dry-run");
            }
            run.args(&paths);
            let shown = if command == "import" { "import --dry-run" } else { "account" };
            let name = format!(
                "16 ranks ({megabytes} MB) {shown}, {threads} thread{}",
                if threads > 1 { "s" } else { "" }
            );
            let (mut row, output) = measured_row(ctx, name, &mut run, &made)?;
            walls.push(row.tally.seconds);
            outputs.push(output);
            if threads == 2 {
                let one = walls[walls.len() - 2];
                row.note += &format!(
                    "; {:.2}x the one-thread wall time; {}; target: two threads faster than one, same result",
                    one / row.tally.seconds,
                    agreement(&outputs[outputs.len() - 1], &outputs[outputs.len() - 2], "one thread"),
                );
            }
            ctx.record(row);
        }
    }
    Ok(())
}

/// The large real-trace file on one core, and the real fixture beside
/// stormlog.
fn run_real(ctx: &mut BenchContext, tally: &Path) -> anyhow::Result<()> {
    let target_bytes = if ctx.quick() { 5_000_000 } else { 300_000_000 };
    let (path, made) = real_trace(ctx.scratch_dir(), target_bytes)?;
    let megabytes = made.bytes / 1_000_000;
    let budget = made.bytes / 5;
    let target = format!("target: >= 400 MB/s on one core, rss < {} MB (a fifth)", budget / 1_000_000);
    let mut one_core_account = String::new();
    for command in ["import", "account"] {
        let mut run = one_core(tally);
        run.arg(command);
        if command == "import" {
            run.arg("--dry-run");
        }
        run.arg(&path);
        let shown = if command == "import" { "import --dry-run" } else { "account" };
        let name = format!("real traces x copies ({megabytes} MB) {shown}, one core");
        let (mut row, output) = measured_row(ctx, name, &mut run, &made)?;
        if command == "account" {
            one_core_account = output;
        }
        row.note += &format!("; {target}");
        if row.tally.peak_rss_bytes.is_some_and(|rss| rss >= budget) {
            row.note += "; RSS ABOVE TARGET";
        }
        if (made.bytes as f64 / 1e6 / row.tally.seconds) < 400.0 {
            row.note += "; BELOW TARGET";
        }
        ctx.record(row);
    }
    // The same file on both cores: one trace's events are read on two
    // threads (the second half beside the first).
    let name = format!("real traces x copies ({megabytes} MB) account, two threads");
    let (mut row, output) =
        measured_row(ctx, name, Command::new(tally).args(["account", "--threads", "2"]).arg(&path), &made)?;
    row.note += &format!(
        "; one trace read in two halves at once (the split reading); {}",
        agreement(&output, &one_core_account, "one core")
    );
    ctx.record(row);
    let (fixture, bytes) = unpacked(ctx.scratch_dir(), REAL_SOURCES[0])?;
    // Its events are not counted: the row is about the ratio.
    let made = Generated { bytes, events: 0 };
    let name = format!("account large-20k-kernels ({} MB, real)", bytes / 1_000_000);
    // Best of three, as the account bench takes it: a run of a tenth of a
    // second on a shared machine varies from one run to the next (one
    // bench run read 0.173 s where direct runs beside it read 0.08-0.09 s);
    // stormlog's second and a half varies far less.
    let mut row = best_of_three(
        || Ok(measured_row(ctx, name.clone(), Command::new(tally).arg("account").arg(&fixture), &made)?.0),
        |row| row.tally.seconds,
    )?;
    row.note = format!("best of 3; {}", row.note);
    row.items = None;
    match ctx.python().map(Path::to_path_buf) {
        Some(python) => {
            let reference = ctx
                .run_measured(Command::new(&python).arg("-c").arg(STORMLOG_KINETO).arg(&fixture))
                .context("stormlog Kineto import + accounting")?;
            let ratio = reference.seconds / row.tally.seconds;
            row.reference = Some(reference);
            row.note += &format!(
                "; reference: stormlog import_kineto_trace + resolve_inference_events + account_gpu_time, \
                 same file: {ratio:.1}x; target: >= 30x{}",
                if ratio < 30.0 { " (BELOW TARGET)" } else { "" }
            );
        }
        None => row.note += "; stormlog not run (no reference Python: set TALLY_PYTHON)",
    }
    ctx.record(row);
    Ok(())
}

/// The GPU events `tally import --dry-run` of `input` reports (its summary
/// on stderr: "N GPU events"), unmeasured.
fn gpu_events(tally: &Path, input: &Path) -> anyhow::Result<u64> {
    let output = Command::new(tally).args(["import", "--dry-run"]).arg(input).output()?;
    let summary = String::from_utf8_lossy(&output.stderr);
    let count = summary
        .split(" GPU events")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|number| number.parse().ok());
    count.with_context(|| format!("no GPU event count in the import summary: {summary}"))
}

/// The XPlane import on one core beside two Kineto imports, each the best
/// of three runs (by wall time; its CPU time kept too, which a machine
/// shared with other work does not inflate): the Kineto twin of the same
/// run (the same kernels, copies, launches, streams and times, written as
/// Kineto writes them: the fair comparison, per event and per GPU event),
/// and the Kineto trace of the same size as the XPlane (mostly CPU ops,
/// so per event it compares different work; kept for its history).
pub(super) fn run_xplane(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let target_bytes = if ctx.quick() { 5_000_000 } else { 100_000_000 };
    // `v3`: string stats by reference, sized net of the metadata (a file
    // of an older layout, cached under an older name, is not reused).
    let path = ctx.scratch_dir().join(format!("xplane-{}mb-v3.xplane.pb", target_bytes / 1_000_000));
    let [bytes, events, per_gpu] = super::cached_input(&path, |path| {
        let (made, per_gpu) = xplane::generate(path, target_bytes)?;
        Ok([made.bytes, made.events, per_gpu])
    })?;
    let made = Generated { bytes, events };
    let twin_path = ctx.scratch_dir().join(format!("xplane-twin-{per_gpu}.json"));
    let [twin_bytes, twin_events] = super::cached_input(&twin_path, |twin_path| {
        let twin = xplane::write_kineto_twin(twin_path, per_gpu)?;
        Ok([twin.bytes, twin.events])
    })?;
    let twin = Generated { bytes: twin_bytes, events: twin_events };
    let (kineto_path, kineto) = trace(ctx.scratch_dir(), target_bytes)?;
    let tally = ctx.tally_bin()?;
    let import = |ctx: &BenchContext, name: String, input: &Path, made: &Generated| {
        best_of_three(
            || {
                let before = children_cpu_seconds();
                let mut command = one_core(&tally);
                command.args(["import", "--dry-run"]).arg(input);
                let row = measured_row(ctx, name.clone(), &mut command, made)?.0;
                Ok((row, children_cpu_seconds() - before))
            },
            |(row, _)| row.tally.seconds,
        )
    };
    let kineto_name = format!("trace import (Kineto {} MB, --dry-run), one core", kineto.bytes / 1_000_000);
    let (mut kineto_row, kineto_cpu) = import(ctx, kineto_name, &kineto_path, &kineto)?;
    let twin_name = format!(
        "trace import (Kineto twin of the XPlane run, {} MB, --dry-run), one core",
        twin.bytes / 1_000_000
    );
    let (mut twin_row, twin_cpu) = import(ctx, twin_name, &twin_path, &twin)?;
    let name = format!("trace import (XPlane {} MB, --dry-run), one core", made.bytes / 1_000_000);
    let (mut row, cpu) = import(ctx, name, &path, &made)?;
    let (kineto_gpu, twin_gpu, gpu) =
        (gpu_events(&tally, &kineto_path)?, gpu_events(&tally, &twin_path)?, gpu_events(&tally, &path)?);
    if twin_gpu != gpu || twin.events != made.events {
        bail!(
            "the Kineto twin holds {} events ({twin_gpu} GPU), the XPlane {} ({gpu} GPU): not the same run",
            twin.events,
            made.events
        );
    }
    let per_second = |row: &Row| row.items.unwrap_or(0) as f64 / row.tally.seconds;
    let rss_ratio = |row: &Row, bytes: u64| match row.tally.peak_rss_bytes {
        Some(rss) => format!("{:.2}", rss as f64 / bytes as f64),
        None => "?".into(),
    };
    // The fair comparison: one run in both formats.
    let ratio = per_second(&row) / per_second(&twin_row);
    let cpu_ratio = (made.events as f64 / cpu) / (twin.events as f64 / twin_cpu);
    // The same-size comparison, per GPU event (different work per event).
    let sized_gpu_ratio = (gpu as f64 / cpu) / (kineto_gpu as f64 / kineto_cpu);
    let budget = made.bytes / 5;
    row.note = format!(
        "best of 3; {}; same run as its Kineto twin ({} events, {gpu} GPU events): {:.0} vs {:.0} events/s \
         by wall time ({ratio:.2}x), {:.0} vs {:.0} GPU events per CPU second ({cpu_ratio:.2}x); peak RSS / \
         file size {} vs the twin's {}; beside the same-size Kineto trace ({kineto_gpu} GPU events of {}): \
         {sized_gpu_ratio:.2}x per GPU event by CPU time; target: >= 1x per event, rss < {} MB (a fifth)",
        row.note,
        made.events,
        per_second(&row),
        per_second(&twin_row),
        gpu as f64 / cpu,
        twin_gpu as f64 / twin_cpu,
        rss_ratio(&row, made.bytes),
        rss_ratio(&twin_row, twin.bytes),
        kineto.events,
        budget / 1_000_000
    );
    if ratio < 1.0 && cpu_ratio < 1.0 {
        row.note += "; BELOW TARGET";
    }
    if row.tally.peak_rss_bytes.is_some_and(|rss| rss >= budget) {
        row.note += "; RSS ABOVE TARGET";
    }
    kineto_row.note = format!(
        "best of 3; {}; the XPlane row's same-size comparison; peak RSS / file size {}",
        kineto_row.note,
        rss_ratio(&kineto_row, kineto.bytes)
    );
    twin_row.note = format!(
        "best of 3; {}; the XPlane row's run as Kineto writes it, {:.0} GPU events per CPU second; peak RSS / \
         file size {}",
        twin_row.note,
        twin_gpu as f64 / twin_cpu,
        rss_ratio(&twin_row, twin.bytes)
    );
    ctx.record(kineto_row);
    ctx.record(twin_row);
    ctx.record(row);
    Ok(())
}
