//! `tally account FILE...`: resolve the correlation evidence of one run (one
//! artifact, or every rank's) and account its GPU time per device clock and
//! per iteration, as stormlog's `account_gpu_time` does.

mod json;
mod table;

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use tally_artifact::{ArtifactError, ErrorKind, ReadOptions, read_batches};
use tally_core::InferenceRecord;
use tally_gpu_time::account_gpu_time;
use tally_resolve::{CorrelationGraph, ResolveError, resolve_inference_events};

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
}

/// Runs the command: exit 0 with the accounting, 1 when an artifact is
/// rejected (`FILE: line N: reason` on stderr, nothing on stdout).
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let evidence = match Evidence::read_with(&args.files, &args.trace) {
        Ok(evidence) => evidence,
        Err(message) => {
            eprintln!("{message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let graph = match evidence.resolve() {
        Ok(graph) => graph,
        Err(message) => {
            eprintln!("{message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let accounting = account_gpu_time(&graph);
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    match args.format {
        Layout::Json => json::write(&mut out, &graph, &accounting, args.detail)?,
        Layout::Table => table::write(&mut out, &graph, &accounting)?,
    }
    out.flush()?;
    // The process ends next: freeing hundreds of thousands of events one by
    // one would cost more than accounting them, and the OS takes the
    // memory back at once.
    std::mem::forget(accounting);
    std::mem::forget(graph);
    std::mem::forget(evidence);
    Ok(ExitCode::SUCCESS)
}

/// The records of several artifacts, in order, and where each came from.
pub(crate) struct Evidence {
    names: Vec<String>,
    /// Batches as the reader delivered them: never copied into one vector,
    /// which would need twice the memory while it grows.
    batches: Vec<Vec<InferenceRecord>>,
    /// The physical line of each record, in record order.
    lines: Vec<u64>,
    /// Index of the first record of each file.
    file_starts: Vec<usize>,
}

impl Evidence {
    /// Reads every file; the error is the first rejection, ready to print.
    pub(crate) fn read(files: &[PathBuf]) -> Result<Self, String> {
        Self::read_with(files, &super::input::TraceArgs::default())
    }

    /// Like [`Evidence::read`]; the traces among `files` are imported with
    /// `trace`'s options, together, where the first of them stands (their
    /// "line" in errors is the record's number).
    pub(crate) fn read_with(files: &[PathBuf], trace: &super::input::TraceArgs) -> Result<Self, String> {
        let mut evidence =
            Self { names: Vec::new(), batches: Vec::new(), lines: Vec::new(), file_starts: Vec::new() };
        let traces = super::input::traces_among(files).map_err(|error| format!("{error:#}"))?;
        for path in files {
            if traces.contains(path) {
                if traces.first() == Some(path) {
                    let records =
                        super::input::trace_records(&traces, trace).map_err(|error| format!("{error:#}"))?;
                    evidence.file_starts.push(evidence.lines.len());
                    evidence.lines.extend(1..=records.len() as u64);
                    evidence.batches.push(records);
                    let names: Vec<String> = traces.iter().map(|path| path.display().to_string()).collect();
                    evidence.names.push(names.join(" + "));
                }
                continue;
            }
            let name = path.display().to_string();
            evidence.file_starts.push(evidence.lines.len());
            let outcome = if path.as_os_str() == "-" {
                evidence.decode(std::io::stdin(), &name, &Progress::silent())
            } else {
                match File::open(path) {
                    Ok(file) => {
                        let progress = Progress::for_file(path, &file);
                        let outcome = evidence.decode(progress.wrap(file), &name, &progress);
                        progress.finish();
                        outcome
                    }
                    Err(error) => Err(ArtifactError::whole(&name, ErrorKind::Io, error.to_string())),
                }
            };
            outcome.map_err(|error| error.to_string())?;
            evidence.names.push(name);
        }
        Ok(evidence)
    }

    fn decode<R: Read + Send>(
        &mut self,
        reader: R,
        name: &str,
        progress: &Progress,
    ) -> Result<(), ArtifactError> {
        read_batches(reader, name, &ReadOptions::default(), |batch| {
            self.lines.extend_from_slice(&batch.lines);
            self.batches.push(batch.records);
            progress.tick();
            Ok(())
        })
        .map(|_| ())
    }

    /// Every record, in file order.
    pub(crate) fn records(&self) -> impl Iterator<Item = &InferenceRecord> {
        self.batches.iter().flatten()
    }

    /// Resolves all files together; the error names the file and line of
    /// the record that broke a rule.
    pub(crate) fn resolve(&self) -> Result<CorrelationGraph<'_>, String> {
        resolve_inference_events(self.records()).map_err(|error| self.locate(&error))
    }

    fn locate(&self, error: &ResolveError) -> String {
        let record = error.record();
        let file = self.file_starts.partition_point(|&start| start <= record).saturating_sub(1);
        match (self.names.get(file), self.lines.get(record)) {
            (Some(name), Some(line)) => format!("{name}: line {line}: {error}"),
            _ => error.to_string(),
        }
    }
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
