//! `tally partial FILE... -o PART`: a partial result of some of a run's
//! files (`tally_partial`), read as `tally account` reads them, for
//! `tally account`, `breakdown`, `shares` and `diff` to take beside the
//! run's other files or partials; and how those commands read partials
//! among their inputs.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tally_ingest::PreparedSink;
use tally_partial::{Mixed, PartialError, PartialWriter, ReadLimits, RunInput};
use tally_resolve::{StreamedRun, StreamingResolver};
use tally_trace::Detail;

use super::account::{ProgressWatcher, import_options, run_options};
use super::input::TraceArgs;
use super::output::{LimitArgs, run_message};

const AFTER_HELP: &str = "\
A partial holds what accounting and the breakdown need of its files (every
event as the resolver reads it, with the file and line it came from, in
compressed chunks; docs/partials.md), so partials made
on different machines, merged in any order or grouping, give `tally account`
and `tally breakdown` the same output, byte for byte, as one process reading
every file, and the same rejection (naming the original file and line).
Pass partials to those commands (and to `shares`, `diff`) wherever they take
files, mixed with artifacts and traces; a partial of partials is a partial.

The run ID of traces: every trace becomes records of the run named by
--run-id, by default an ID derived from the traces this command reads. Traces
of one run split between partials must therefore be given the same --run-id
on every `tally partial` (and on `tally account` of any traces read beside
the partials); artifacts carry their run ID and need none.

Traces are imported one record per launch unless --per-kernel is given, as
`tally account` imports them; `tally breakdown` imports traces one record per
kernel, so give --per-kernel to partials of traces meant for the breakdown.";

/// Arguments of `tally partial`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// Some of one run's files, as `tally account` takes them: artifacts
    /// (plain or gzip, schema 1-4), profiler traces (imported together),
    /// `-` for standard input, and partials.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The partial to write, whole or not at all.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub input: RunInputArgs,
}

/// How a command reads one run's files (artifacts, traces and partials):
/// the input flags of `tally account`, `breakdown` (and so `diff` and
/// `report`) and `tally partial`, in this order in their help.
#[derive(Debug, Clone, clap::Args)]
pub struct RunInputArgs {
    #[command(flatten)]
    pub trace: TraceArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub partials: PartialArgs,
}

/// How partials among a command's inputs are read.
#[derive(Debug, Clone, clap::Args)]
pub struct PartialArgs {
    /// The longest frame (chunk of events) of a partial read, in bytes
    /// before compression (suffixes K, M, G): a partial declaring a longer
    /// one is refused before it is read. `tally partial` writes frames of
    /// at most a few hundred kilobytes.
    #[arg(long, value_name = "BYTES", default_value = "16M", value_parser = super::output::parse_size)]
    pub max_partial_bytes: usize,
}

impl Default for PartialArgs {
    fn default() -> Self {
        Self { max_partial_bytes: ReadLimits::DEFAULT_MAX_FRAME_BYTES as usize }
    }
}

impl PartialArgs {
    fn limits(&self) -> ReadLimits {
        ReadLimits { max_frame_bytes: self.max_partial_bytes as u64 }
    }
}

/// Runs the command: exit 0 with a one-line summary on stderr, 1 when an
/// input is rejected (the reason on stderr, nothing written).
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(message) = output_refused(&args.output, &args.files) {
        eprintln!("tally: error: {message}");
        return Ok(ExitCode::FAILURE);
    }
    let inputs = match tally_partial::open_run_inputs(&args.files, args.input.trace.input_format) {
        Ok(inputs) => inputs,
        Err(error) => {
            eprintln!("{}", partial_message(&error));
            return Ok(ExitCode::FAILURE);
        }
    };
    // A rejection of the inputs, as other commands print it (the error
    // out of the writing closure only stops the write).
    let mut refused = None;
    let written = super::output::write_atomically(&args.output, |file| {
        let mut writer = PartialWriter::new(BufWriter::with_capacity(1 << 16, file))?;
        let mixed = match read_run(
            inputs,
            &args.input.trace,
            &args.input.limits,
            &args.input.partials,
            true,
            &mut writer,
        ) {
            Ok(mixed) => mixed,
            Err(message) => {
                refused = Some(message);
                anyhow::bail!("the inputs were rejected");
            }
        };
        let (count, events) = (mixed.sources.names.len(), writer.events());
        writer.set_traces(mixed.traces);
        writer.finish(mixed.sources.names)?.flush()?;
        Ok((count, events))
    });
    if let Some(message) = refused {
        eprintln!("{message}");
        return Ok(ExitCode::FAILURE);
    }
    let (sources, events) = written?;
    let bytes = std::fs::metadata(&args.output).map_or(0, |metadata| metadata.len());
    let plural = if sources == 1 { "" } else { "s" };
    eprintln!(
        "{events} events of {sources} source{plural} written to {} ({bytes} bytes)",
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Why `-o` cannot be written, if it cannot: standard output (a partial is
/// a file), or one of the inputs that is not a partial, which the partial
/// would replace. (A partial among the inputs may be replaced by the
/// partial that merges it: it is read whole before the rename.)
fn output_refused(output: &Path, files: &[PathBuf]) -> Option<String> {
    if output == Path::new("-") {
        return Some("-o -: a partial is written to a file, not to standard output".into());
    }
    let target = std::fs::canonicalize(output).ok()?;
    files
        .iter()
        .find(|file| {
            std::fs::canonicalize(file).is_ok_and(|file| file == target)
                && !tally_partial::sniff_path(file).unwrap_or(false)
        })
        .map(|file| {
            format!(
                "-o {}: is the input {}, which is not a partial; it would be replaced",
                output.display(),
                file.display()
            )
        })
}

/// Reads a run's inputs, partials among them, and resolves them as one run
/// (as `tally_partial::resolve_mixed` does): the run, or the rejection,
/// that reading the partials' original files instead makes. Traces in the
/// partials must have been imported as this command imports them
/// (`--per-kernel`; the breakdown always does). The error is ready to
/// print (`FILE: line N: reason`, `FILE: byte N: reason`).
pub(crate) fn resolve(
    inputs: Vec<RunInput>,
    trace: &TraceArgs,
    limits: &LimitArgs,
    partials: &PartialArgs,
    keep_labels: bool,
) -> Result<StreamedRun, String> {
    let resolver = StreamingResolver::with_capacity(tally_partial::expected_events(&inputs));
    let mut resolver = if keep_labels { resolver.keeping_labels() } else { resolver };
    let mixed = read_run(inputs, trace, limits, partials, keep_labels, &mut resolver)?;
    let wanted = if trace.per_kernel { Detail::Kernel } else { Detail::Launch };
    if let Some(found) = mixed.traces
        && found != wanted
    {
        let how = match wanted {
            Detail::Kernel if keep_labels => "`tally breakdown` reads traces one record per kernel: make the partials with `tally partial --per-kernel`".to_owned(),
            Detail::Kernel => "--per-kernel reads traces one record per kernel: make the partials with `tally partial --per-kernel`, or leave the flag out".to_owned(),
            Detail::Launch => "pass --per-kernel to read them as they were made".to_owned(),
        };
        return Err(format!(
            "the partials' traces were imported one record per {found}, which gives other figures; {how}"
        ));
    }
    resolver.finish().map_err(|error| run_message(&mixed.sources.locate(error)))
}

/// Reads a run's inputs, partials among them, into `sink`, in the order
/// given (`tally_partial::read_mixed`), with the import options and limits
/// the flags give. The error is ready to print.
fn read_run(
    inputs: Vec<RunInput>,
    trace: &TraceArgs,
    limits: &LimitArgs,
    partials: &PartialArgs,
    keep_labels: bool,
    sink: &mut dyn PreparedSink,
) -> Result<Mixed, String> {
    // The import options are made from the traces as opened, as `tally
    // account` makes them.
    let import = import_options(&tally_partial::traces_of(&inputs), trace);
    let options = run_options(trace, limits, import.as_ref(), keep_labels);
    let mut watcher = ProgressWatcher::default();
    tally_partial::read_mixed(inputs, &options, &partials.limits(), &mut watcher, sink)
        .map_err(|error| partial_message(&error))
}

/// A partial's error as a command prints it: a run's rejection as
/// `tally account` prints it, a partial over the limit with the flag that
/// raises it.
pub(crate) fn partial_message(error: &PartialError) -> String {
    match error {
        PartialError::Run(error) => run_message(error),
        PartialError::Format { input, offset, rule } if rule.contains("over the limit") => {
            let rule = rule.replace("(raise the limit to read it)", "");
            format!("{input}: byte {offset}: {} (raise it with --max-partial-bytes)", rule.trim_end())
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_partial_limit_is_the_readers() {
        assert_eq!(
            super::super::output::parse_size("16M").map(|bytes| bytes as u64),
            Ok(ReadLimits::DEFAULT_MAX_FRAME_BYTES)
        );
        assert_eq!(PartialArgs::default().limits(), ReadLimits::default());
    }
}
