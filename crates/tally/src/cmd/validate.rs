//! `tally validate FILE|-`: decode an artifact with every rule applied and
//! count its records per event type and schema version, or report the first
//! bad line.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};
use tally_artifact::{ArtifactError, ErrorKind, ReadOptions, ReadStats, read_mapped};
use tally_core::InferenceRecord;

use super::Format;
use super::output::{LimitArgs, artifact_message, print};
use super::progress::Progress;

/// Arguments of `tally validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The artifact: a path, or `-` for standard input; plain or gzip.
    pub file: PathBuf,
    /// Output format. With `json` the report on stdout carries a rejection
    /// too; in text a rejection goes to stderr as `FILE: line N: reason`.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Records per (event type, schema version), as decoded: v4 reference rows
/// count under the embedded version their record has (2, or 3 with
/// intervals).
#[derive(Debug, Default)]
struct Counts {
    by_type: BTreeMap<(String, u32), u64>,
}

impl Counts {
    fn add(&mut self, records: &[InferenceRecord]) {
        for record in records {
            let (event_type, version) = match record {
                InferenceRecord::Event(event) => (event.event_type().as_str(), event.schema_version()),
                InferenceRecord::Legacy(legacy) => (legacy.event_type(), 1),
            };
            self.bump(event_type, version, 1);
        }
    }

    fn bump(&mut self, event_type: &str, version: u32, by: u64) {
        // Few distinct keys: look up before allocating one.
        match self.by_type.iter_mut().find(|((kind, v), _)| kind == event_type && *v == version) {
            Some((_, count)) => *count += by,
            None => {
                self.by_type.insert((event_type.to_owned(), version), by);
            }
        }
    }

    fn merge(&mut self, other: Counts) {
        for ((event_type, version), count) in other.by_type {
            self.bump(&event_type, version, count);
        }
    }
}

/// Runs the command: exit 0 when valid, 1 with the first error otherwise.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let name = args.file.display().to_string();
    let mut counts = Counts::default();
    let options = ReadOptions { max_record_bytes: args.limits.max_record_bytes, ..ReadOptions::default() };
    let outcome = if args.file.as_os_str() == "-" {
        decode(std::io::stdin(), &name, &options, &Progress::silent(), &mut counts)
    } else {
        match File::open(&args.file) {
            Ok(file) => {
                let progress = Progress::for_file(&args.file, &file);
                let outcome = decode(progress.wrap(file), &name, &options, &progress, &mut counts);
                progress.finish();
                outcome
            }
            Err(error) => Err(ArtifactError::whole(&name, ErrorKind::Io, error.to_string())),
        }
    };
    match outcome {
        Ok(stats) => {
            print_valid(args, &stats, &counts)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            print_invalid(args, &error)?;
            Ok(ExitCode::FAILURE)
        }
    }
}

fn decode<R: Read + Send>(
    reader: R,
    name: &str,
    options: &ReadOptions,
    progress: &Progress,
    counts: &mut Counts,
) -> Result<ReadStats, ArtifactError> {
    // Counting (and freeing the records) happens on the decoding threads.
    let count = |batch: tally_artifact::RecordBatch| {
        let mut partial = Counts::default();
        partial.add(&batch.records);
        partial
    };
    read_mapped(reader, name, options, count, |partial| {
        counts.merge(partial);
        progress.tick();
        Ok(())
    })
}

fn print_valid(args: &Args, stats: &ReadStats, counts: &Counts) -> std::io::Result<()> {
    use std::fmt::Write as _;
    let mut text = String::new();
    match args.format {
        Format::Json => {
            let rows: Vec<Value> = counts
                .by_type
                .iter()
                .map(|((event_type, version), count)| {
                    json!({"event_type": event_type, "schema_version": version, "records": count})
                })
                .collect();
            let report = json!({
                "file": args.file.display().to_string(),
                "valid": true,
                "lines": stats.lines,
                "bytes": stats.bytes,
                "records": stats.records,
                "context_definitions": stats.definitions,
                "context_references": stats.compact_records,
                "counts": rows,
            });
            let _ = writeln!(text, "{report}");
        }
        Format::Text => {
            let _ = writeln!(
                text,
                "{}: valid: {} records on {} lines ({} context definitions, {} records by context_id)",
                args.file.display(),
                stats.records,
                stats.lines,
                stats.definitions,
                stats.compact_records,
            );
            let width = counts.by_type.keys().map(|(kind, _)| kind.len()).max().unwrap_or(0).max(10);
            let _ = writeln!(text, "{:<width$}  {:>6}  {:>12}", "event_type", "schema", "records");
            for ((event_type, version), count) in &counts.by_type {
                let _ = writeln!(text, "{event_type:<width$}  {version:>6}  {count:>12}");
            }
        }
    }
    print(&text)
}

/// A rejection: in JSON, the report on stdout carries it; in text it goes
/// to stderr as every command reports one (`FILE: line N: reason`), and
/// stdout stays empty.
fn print_invalid(args: &Args, error: &ArtifactError) -> std::io::Result<()> {
    match args.format {
        Format::Json => {
            let report = json!({
                "file": args.file.display().to_string(),
                "valid": false,
                "error": {"line": error.line(), "reason": error.reason(), "message": artifact_message(error)},
            });
            print(&format!("{report}\n"))
        }
        Format::Text => {
            eprintln!("{}", artifact_message(error));
            Ok(())
        }
    }
}
