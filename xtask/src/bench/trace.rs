//! Trace import: `tally import` of a Kineto Chrome trace of at least 500 MB
//! (15 MB with `--quick`), made by repeating the events of a real trace
//! (`sampled-rank-0.json.gz` of tally-trace's fixtures) with shifted
//! timestamps, correlation IDs and step numbers. The file is generated event
//! by event into the scratch folder, never held in memory.
//!
//! Rows: the import alone (`--dry-run`: every record built, none written)
//! and the import into a v4 artifact on disk, both pinned to one core; MB/s of
//! uncompressed JSON, trace events per second, peak RSS. Where a Python with
//! Holistic Trace Analysis is found (`TALLY_HTA_PYTHON`, else the reference
//! Python when it has `hta`), the same run times HTA's trace load and
//! temporal breakdown on the same file.
//!
//! Targets (issue 8): at least 200 MB/s on one core; peak RSS under a fifth
//! of the trace's size.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

use super::{BenchContext, Row};
use crate::workspace_root;

const SOURCE: &str = "crates/tally-trace/tests/fixtures/kineto/sampled-rank-0.json.gz";

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
    let path = workspace_root().join(SOURCE);
    let mut text = String::new();
    flate2::read::GzDecoder::new(File::open(&path).with_context(|| path.display().to_string())?)
        .read_to_string(&mut text)?;
    let Value::Object(mut document) = serde_json::from_str(&text)? else {
        bail!("{SOURCE} is not an object")
    };
    let Some(Value::Array(events)) = document.remove("traceEvents") else { bail!("{SOURCE} has no events") };
    Ok((document, events))
}

/// Shifts one copy of an event: `ts` by whole microseconds, correlation and
/// external IDs and ProfilerStep numbers by the copy's index.
fn shifted(event: &Value, copy: u64, period_us: u64) -> Value {
    let mut event = event.clone();
    if let Some(ts) = event.get("ts").and_then(Value::as_u64) {
        event["ts"] = Value::from(ts + copy * period_us);
    }
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
    event
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

/// A Python that imports HTA: `TALLY_HTA_PYTHON`, else the reference one.
pub(super) fn hta_python(ctx: &BenchContext) -> Option<PathBuf> {
    let candidates = std::env::var_os("TALLY_HTA_PYTHON")
        .map(PathBuf::from)
        .into_iter()
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
            rows[0].note +=
                "; HTA not installed (set TALLY_HTA_PYTHON to a Python with HolisticTraceAnalysis)";
        }
    }
    for row in rows {
        ctx.record(row);
    }
    Ok(())
}
