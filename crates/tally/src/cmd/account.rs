//! `tally account FILE...`: resolve the correlation evidence of one run (one
//! artifact, or every rank's) and account its GPU time per device clock and
//! per iteration, as stormlog's `account_gpu_time` does.

pub(crate) mod table;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tally_gpu_time::{AccountingReport, account_gpu_time};
use tally_ingest::{RunError, RunOptions, Watcher, resolve_inputs};
use tally_partial::RunInput;
use tally_resolve::StreamedRun;
use tally_trace::{ImportOptions, OpenedInput};

use super::Layout;
use super::progress::Progress;

/// Arguments of `tally account`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Artifacts of one run (e.g. one per rank), read and resolved together:
    /// paths, or `-` for standard input; plain or gzip, schema 1-4. Profiler
    /// traces (Kineto JSON, Nsight SQLite, XPlane `.xplane.pb`; told apart
    /// by name or content) are
    /// imported together as one run, as `tally import` would. Partials of
    /// the run (`tally partial`) may stand among them: the output is the
    /// same as of the files they were made from.
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
    pub input: super::partial::RunInputArgs,
}

/// Runs the command: exit 0 with the accounting, 1 when an artifact is
/// rejected (`FILE: line N: reason` on stderr, nothing on stdout).
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let run = match resolve_files(
        &args.files,
        &args.input.trace,
        &args.input.limits,
        &args.input.partials,
        Purpose::Accounting,
    ) {
        Ok(run) => run,
        Err(message) => {
            eprintln!("{message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let accounting = account_gpu_time(&run);
    // One report for either layout: the table shows the device detail that
    // JSON shows with `--detail` only.
    let json = args.format == Layout::Json;
    let report = AccountingReport::of(&run, &accounting, args.detail || !json);
    super::output::write_report(&report, json, |out| table::write(out, &report))?;
    // The process ends next, and the OS takes the memory back at once;
    // freeing it piece by piece would only cost time.
    std::mem::forget(report);
    std::mem::forget(accounting);
    std::mem::forget(run);
    Ok(ExitCode::SUCCESS)
}

/// What a run is resolved for, which decides what is kept of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// GPU-time accounting (`account`, `shares`): no labels, and the tables
    /// live to the end.
    Accounting,
    /// The breakdown: activity names and launch correlations kept.
    Breakdown,
}

/// Reads every file of one run and resolves their records together as
/// they stream by (`tally_ml::run`), with a progress bar on a terminal. The
/// error is the first rejection, ready to print (`FILE: line N: reason`).
///
/// Partials among the files (`tally partial`) are read with the other
/// inputs into the one resolver: the same run, or the same rejection, as
/// of their original files. Without one, the files are read as they always
/// were.
pub(crate) fn resolve_files(
    files: &[PathBuf],
    trace: &super::input::TraceArgs,
    limits: &super::output::LimitArgs,
    partials: &super::partial::PartialArgs,
    purpose: Purpose,
) -> Result<StreamedRun, String> {
    let inputs = tally_partial::open_run_inputs(files, trace.input_format)
        .map_err(|error| super::partial::partial_message(&error))?;
    if inputs.iter().any(|input| matches!(input, RunInput::Partial(_))) {
        // Partials' chunks are decoded and freed one after another, each
        // about the size of the next: as with artifacts (see
        // `keep_freed_briefly`), unless traces are imported beside them.
        if purpose == Purpose::Accounting && tally_partial::traces_of(&inputs).is_empty() {
            super::memory::keep_freed_briefly();
        }
        return super::partial::resolve(inputs, trace, limits, partials, purpose == Purpose::Breakdown);
    }
    let opened: Vec<OpenedInput> = inputs
        .into_iter()
        .filter_map(|input| match input {
            RunInput::Opened(input) => Some(input),
            RunInput::Partial(_) => None,
        })
        .collect();
    resolve(opened, trace, limits, purpose).map_err(|error| super::output::run_message(&error))
}

fn resolve(
    inputs: Vec<OpenedInput>,
    trace: &super::input::TraceArgs,
    limits: &super::output::LimitArgs,
    purpose: Purpose,
) -> Result<StreamedRun, RunError> {
    if purpose == Purpose::Accounting && !inputs.iter().any(OpenedInput::is_trace) {
        super::memory::keep_freed_briefly();
    }
    let traces: Vec<&OpenedInput> = inputs.iter().filter(|input| input.is_trace()).collect();
    let import = import_options(&traces, trace);
    let options = run_options(trace, limits, import.as_ref(), purpose == Purpose::Breakdown);
    resolve_inputs(inputs, &options, &mut ProgressWatcher::default())
}

/// The import options for `traces` (a run's), as the flags say, or
/// why they cannot be made; `None` without traces: the trace flags concern
/// nothing else, and are not judged without one.
pub(crate) fn import_options(
    traces: &[&OpenedInput],
    trace: &super::input::TraceArgs,
) -> Option<Result<ImportOptions, String>> {
    (!traces.is_empty()).then(|| trace.options(traces).map_err(|error| format!("{error:#}")))
}

/// How a run's inputs are read, as the flags say.
pub(crate) fn run_options<'a>(
    trace: &super::input::TraceArgs,
    limits: &super::output::LimitArgs,
    import: Option<&'a Result<ImportOptions, String>>,
    keep_labels: bool,
) -> RunOptions<'a> {
    RunOptions {
        max_record_bytes: limits.max_record_bytes,
        import,
        keep_labels,
        threads: trace.threads,
        inline_small_inputs: true,
    }
}

/// A progress bar per artifact read.
#[derive(Default)]
pub(crate) struct ProgressWatcher {
    bar: Option<Progress>,
}

impl Watcher for ProgressWatcher {
    fn reading(&mut self, path: &Path, reader: Box<dyn Read + Send>) -> Box<dyn Read + Send> {
        let bar = if path.as_os_str() == "-" { Progress::silent() } else { Progress::for_path(path) };
        let wrapped = Box::new(bar.wrap(reader));
        self.bar = Some(bar);
        wrapped
    }

    fn window_done(&mut self) {
        if let Some(bar) = &self.bar {
            bar.tick();
        }
    }

    fn finished(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish();
        }
    }

    /// A trace that gave no GPU work says why on stderr (a CPU-only
    /// profile, a report recorded without CUDA tracing): the accounting of
    /// such a run is empty, and its table alone would not say why.
    fn traces_imported(&mut self, summary: &tally_trace::ImportSummary) {
        for trace in &summary.traces {
            if trace.get("gpu_events").and_then(serde_json::Value::as_u64) != Some(0) {
                continue;
            }
            let path = trace.get("path").and_then(serde_json::Value::as_str).unwrap_or("a trace");
            let notes = trace.get("notes").and_then(serde_json::Value::as_array);
            for note in notes.into_iter().flatten().filter_map(serde_json::Value::as_str) {
                eprintln!("tally: {path}: {note}");
            }
        }
    }
}

pub(crate) fn ratio(numerator: u128, denominator: u64) -> Option<String> {
    if denominator == 0 {
        return None;
    }
    let hundredths = (numerator * 100 + u128::from(denominator) / 2) / u128::from(denominator);
    Some(format!("{}.{:02}", hundredths / 100, hundredths % 100))
}

/// A duration in the largest unit that keeps it at least 1, with two
/// decimals (`850 ns`, `12.30 µs`): the report's rule, so tables and pages
/// read alike.
pub(crate) use tally_report::readable_ns;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_round_to_two_decimals() {
        assert_eq!(ratio(103, 100).as_deref(), Some("1.03"));
        assert_eq!(ratio(2, 3).as_deref(), Some("0.67"));
        assert_eq!(ratio(5, 0), None);
    }
}
