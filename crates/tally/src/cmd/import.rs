//! `tally import TRACE... -o ARTIFACT.jsonl`: profiler traces (Kineto JSON,
//! Nsight Systems SQLite) into one stormlog-compatible artifact, streamed:
//! each record is written as soon as it is built.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;
use tally_artifact::{ArtifactWriter, Form};
use tally_core::InferenceRecord;

use super::input::TraceArgs;

/// The artifact schema written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Schema {
    /// Every record embeds its context (schema 2, 3 with intervals).
    V2,
    /// Contexts are written once and referenced (schema 4), as stormlog's
    /// encoder writes an import.
    #[default]
    V4,
}

/// Arguments of `tally import`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Traces of one run (e.g. one per rank): Kineto Chrome-trace JSON or
    /// XPlane profiles (`.xplane.pb`, JAX/TensorFlow), plain or gzip, or
    /// Nsight Systems SQLite exports, told apart by name or content.
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// The artifact to write (`-` for standard output), atomically.
    #[arg(short, long, required_unless_present = "dry_run")]
    pub output: Option<PathBuf>,
    /// Read the traces and build every record, write none: check traces and
    /// print their summary.
    #[arg(long, conflicts_with = "output")]
    pub dry_run: bool,
    /// Artifact schema.
    #[arg(long, value_enum, default_value_t = Schema::V4)]
    pub format: Schema,
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// Runs the command: exit 0 with a summary per trace on stderr.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    // Everything given here is a trace; each is opened once.
    let inputs = args
        .traces
        .iter()
        .map(|path| tally_trace::open_input(path, Some(tally_trace::InputKind::Trace)))
        .collect::<Result<Vec<_>, _>>()?;
    let options = args.trace.options(&inputs.iter().collect::<Vec<_>>())?;
    let form = match args.format {
        Schema::V2 => Form::Embedded,
        Schema::V4 => Form::Compact,
    };
    let mut text = String::new();
    let summary = match &args.output {
        Some(output) => {
            let mut writer = ArtifactWriter::create(output, form)?;
            let _pending = writer.temporary_path().map(super::interrupt::Pending::new);
            let summary = tally_trace::import_inputs(inputs, &options, &mut |event| {
                writer.write(&InferenceRecord::Event(event)).map_err(Into::into)
            })?;
            writer.finish()?;
            let _ = writeln!(text, "{} records written to {}", summary.events, output.display());
            summary
        }
        None => {
            let summary = tally_trace::import_dry(inputs, &options)?;
            let _ = writeln!(text, "{} records built (dry run: none written)", summary.events);
            summary
        }
    };
    let mut traces = String::new();
    for trace in &summary.traces {
        describe(&mut traces, trace);
    }
    text.insert_str(0, &traces);
    eprint!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// A few lines about one trace: what was imported, linked and skipped.
fn describe(text: &mut String, trace: &serde_json::Map<String, Value>) {
    let number = |key: &str| trace.get(key).and_then(Value::as_u64).unwrap_or(0);
    let path = trace.get("path").and_then(Value::as_str).unwrap_or("?");
    let _ = writeln!(
        text,
        "{path}: {} GPU events ({} linked to an iteration), {} runtime calls, {} iterations",
        number("gpu_events"),
        number("linked_gpu_events"),
        number("runtime_calls"),
        number("iterations"),
    );
    if let Some(Value::Object(devices)) = trace.get("devices") {
        for (device, figures) in devices {
            let busy = figures.get("busy_ns").and_then(Value::as_u64).unwrap_or(0);
            let summed = figures.get("summed_ns").and_then(Value::as_u64).unwrap_or(0);
            let uuid = figures.get("device_uuid").and_then(Value::as_str).unwrap_or("unnamed");
            let _ = writeln!(text, "  device {device} ({uuid}): busy {busy} ns, summed {summed} ns");
        }
    }
    for key in ["skipped_events", "unresolved_gpu_events", "not_imported", "missing_columns"] {
        if let Some(Value::Object(counts)) = trace.get(key)
            && !counts.is_empty()
        {
            let _ = writeln!(text, "  {key}: {}", Value::Object(counts.clone()));
        }
    }
    if let Some(Value::Array(tables)) = trace.get("missing_tables")
        && !tables.is_empty()
    {
        let _ = writeln!(text, "  missing_tables: {}", Value::Array(tables.clone()));
    }
    if let Some(Value::Array(notes)) = trace.get("notes") {
        for note in notes.iter().filter_map(Value::as_str) {
            let _ = writeln!(text, "  note: {note}");
        }
    }
}
