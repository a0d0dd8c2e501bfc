//! `tally account FILE...`: resolve the correlation evidence of one run (one
//! artifact, or every rank's) and account its GPU time per device clock and
//! per iteration, as stormlog's `account_gpu_time` does.

mod json;
mod table;

use std::io::{BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use tally_artifact::{ArtifactError, ErrorKind, ReadOptions, RecordBatch, read_batches};
use tally_gpu_time::account_gpu_time;
use tally_resolve::{ResolveError, StreamedRun, StreamingResolver};
use tally_trace::OpenedInput;

use super::progress::Progress;

/// How `account` and `shares` print their result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Layout {
    /// Readable tables for people.
    #[default]
    #[value(alias = "text")]
    Table,
    /// One JSON object; integers stay integers.
    Json,
}

/// Arguments of `tally account`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Artifacts of one run (e.g. one per rank), read and resolved together:
    /// paths, or `-` for standard input; plain or gzip, schema 1-4. Profiler
    /// traces (Kineto JSON, Nsight SQLite; told apart by content) are
    /// imported together as one run, as `tally import` would.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Layout::Table)]
    pub format: Layout,
    /// With `--format json`, add `device_detail`: per-stream busy time, overlap
    /// factor, peak concurrency and idle gaps per device clock.
    #[arg(long)]
    pub detail: bool,
    #[command(flatten)]
    pub trace: super::input::TraceArgs,
    #[command(flatten)]
    pub limits: super::output::LimitArgs,
}

/// Runs the command: exit 0 with the accounting, 1 when an artifact is
/// rejected (`FILE: line N: reason` on stderr, nothing on stdout).
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let run = match resolve_files(&args.files, &args.trace, &args.limits) {
        Ok(run) => run,
        Err(message) => {
            eprintln!("{message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let accounting = account_gpu_time(&run);
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    match args.format {
        Layout::Json => json::write(&mut out, &run, &accounting, args.detail)?,
        Layout::Table => table::write(&mut out, &run, &accounting)?,
    }
    out.flush()?;
    // The process ends next, and the OS takes the memory back at once;
    // freeing it piece by piece would only cost time.
    std::mem::forget(accounting);
    std::mem::forget(run);
    Ok(ExitCode::SUCCESS)
}

/// Lines read per window: small windows keep the decoder's working set at a
/// few megabytes, and are no slower.
const WINDOW_BYTES: usize = 1 << 19;

/// Where a record came from, packed into the position the resolver reports
/// in its errors: the file's index above bit 40, the line below. No table
/// of positions is kept.
const LINE_BITS: u32 = 40;

fn position(file: usize, line: u64) -> usize {
    (file << LINE_BITS) | (line & ((1 << LINE_BITS) - 1)) as usize
}

/// Reads every file of one run and resolves their records together as
/// they stream by, keeping none of them: stormlog's rules, file by file, in
/// order. The error is the first rejection, ready to print (`FILE: line N:
/// reason`).
pub(crate) fn resolve_files(
    files: &[PathBuf],
    trace: &super::input::TraceArgs,
    limits: &super::output::LimitArgs,
) -> Result<StreamedRun, String> {
    let mut resolver = StreamingResolver::new();
    let mut names: Vec<String> = Vec::new();
    let locate = |names: &[String], error: &ResolveError| {
        let record = error.record();
        match names.get(record >> LINE_BITS) {
            Some(name) => format!("{name}: line {}: {error}", record & ((1 << LINE_BITS) - 1)),
            None => error.to_string(),
        }
    };
    // Traces are imported together where the first of them stands.
    enum Step {
        Artifact(OpenedInput),
        Traces,
    }
    let mut traces: Vec<OpenedInput> = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    for input in super::input::open_inputs(files, trace.input_format)? {
        if input.is_trace() {
            if traces.is_empty() {
                steps.push(Step::Traces);
            }
            traces.push(input);
        } else {
            steps.push(Step::Artifact(input));
        }
    }
    for step in steps {
        let input = match step {
            Step::Traces => {
                // Their "line" is the record's number.
                let shown: Vec<String> =
                    traces.iter().map(|input| input.path().display().to_string()).collect();
                names.push(shown.join(" + "));
                let file = names.len() - 1;
                let mut number = 0;
                super::input::for_each_trace_record(std::mem::take(&mut traces), trace, |record| {
                    number += 1;
                    resolver.push(position(file, number), &record).map_err(|e| locate(&names, &e))
                })?;
                continue;
            }
            Step::Artifact(input) => input,
        };
        let name = input.path().display().to_string();
        names.push(name.clone());
        let file = names.len() - 1;
        let mut rejected: Option<ResolveError> = None;
        let outcome = std::thread::scope(|scope| {
            // Spent batches are freed on a thread of their own: the resolver
            // is the serial part of the pipeline, and freeing thousands of
            // records per window would lengthen it.
            let (spent, freeing) = std::sync::mpsc::sync_channel::<RecordBatch>(2);
            scope.spawn(move || freeing.into_iter().for_each(drop));
            let mut feed = |batch: RecordBatch| {
                for (line, record) in batch.lines.iter().zip(&batch.records) {
                    if let Err(error) = resolver.push(position(file, *line), record) {
                        rejected = Some(error);
                        // Stop reading: the first rejection is the answer.
                        return Err(ArtifactError::whole(&name, ErrorKind::Io, "resolution stopped"));
                    }
                }
                let _ = spent.send(batch);
                Ok(())
            };
            let progress = if input.path().as_os_str() == "-" {
                Progress::silent()
            } else {
                Progress::for_path(input.path())
            };
            let outcome = decode(progress.wrap(input.into_reader()), &name, limits, &progress, &mut feed);
            progress.finish();
            outcome
        });
        if let Some(error) = rejected {
            return Err(locate(&names, &error));
        }
        outcome.map_err(|error| super::output::artifact_message(&error))?;
    }
    resolver.finish().map_err(|error| locate(&names, &error))
}

fn decode<R: Read + Send>(
    reader: R,
    name: &str,
    limits: &super::output::LimitArgs,
    progress: &Progress,
    feed: &mut impl FnMut(RecordBatch) -> Result<(), ArtifactError>,
) -> Result<(), ArtifactError> {
    let options = ReadOptions {
        window_bytes: WINDOW_BYTES,
        chunk_bytes: WINDOW_BYTES / 8,
        max_record_bytes: limits.max_record_bytes,
        ..ReadOptions::default()
    };
    read_batches(reader, name, &options, |batch| {
        feed(batch)?;
        progress.tick();
        Ok(())
    })
    .map(|_| ())
}

/// `numerator / denominator` with two decimals, by integer arithmetic;
/// `None` when the denominator is zero.
pub(crate) fn ratio(numerator: u128, denominator: u64) -> Option<String> {
    if denominator == 0 {
        return None;
    }
    let hundredths = (numerator * 100 + u128::from(denominator) / 2) / u128::from(denominator);
    Some(format!("{}.{:02}", hundredths / 100, hundredths % 100))
}

/// A duration in the largest unit that keeps it at least 1, with two
/// decimals: `850 ns`, `12.30 µs`, `4.56 ms`, `1.23 s`.
pub(crate) fn readable_ns(nanoseconds: u128) -> String {
    const UNITS: [(u128, &str); 3] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs")];
    for (scale, unit) in UNITS {
        if nanoseconds >= scale {
            let hundredths = (nanoseconds * 100 + scale / 2) / scale;
            return format!("{}.{:02} {unit}", hundredths / 100, hundredths % 100);
        }
    }
    format!("{nanoseconds} ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_the_largest_fitting_unit() {
        assert_eq!(readable_ns(0), "0 ns");
        assert_eq!(readable_ns(999), "999 ns");
        assert_eq!(readable_ns(1_000), "1.00 µs");
        assert_eq!(readable_ns(12_345), "12.35 µs");
        assert_eq!(readable_ns(4_560_000), "4.56 ms");
        assert_eq!(readable_ns(61_000_000_000), "61.00 s");
    }

    #[test]
    fn ratios_round_to_two_decimals() {
        assert_eq!(ratio(103, 100).as_deref(), Some("1.03"));
        assert_eq!(ratio(2, 3).as_deref(), Some("0.67"));
        assert_eq!(ratio(5, 0), None);
    }
}
