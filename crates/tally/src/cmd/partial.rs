//! `tally partial FILE... -o PART`: a partial result of some of a run's
//! files (`tally_partial`), read as `tally account` reads them, for
//! `tally account`, `breakdown`, `shares` and `diff` to take beside the
//! run's other files or partials; and how those commands read partials
//! among their inputs.

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tally_ingest::{PreparedSink, Sources};
use tally_partial::{PartialError, PartialWriter, ReadLimits};
use tally_resolve::{StreamedRun, StreamingResolver};

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
    /// one is refused before it is read. A frame's events take about as
    /// much again in memory.
    #[arg(long, value_name = "BYTES", default_value = "256M", value_parser = super::output::parse_size)]
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
    // A rejection of the inputs, as other commands print it (the error
    // out of the writing closure only stops the write).
    let mut refused = None;
    let written = super::output::write_atomically(&args.output, |file| {
        let mut writer = PartialWriter::new(BufWriter::with_capacity(1 << 16, file))?;
        let sources =
            match read_run(&args.files, &args.trace, &args.limits, &args.partials, true, &mut writer) {
                Ok(sources) => sources.names,
                Err(message) => {
                    refused = Some(message);
                    anyhow::bail!("the inputs were rejected");
                }
            };
        let (count, events) = (sources.len(), writer.events());
        writer.finish(sources)?.flush()?;
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
        .find(|file| std::fs::canonicalize(file).is_ok_and(|file| file == target) && !is_partial_file(file))
        .map(|file| {
            format!(
                "-o {}: is the input {}, which is not a partial; it would be replaced",
                output.display(),
                file.display()
            )
        })
}

/// Whether the file at `path` is a partial, from its first bytes. Standard
/// input, a pipe or a device never is: their first bytes are not read here,
/// so that the command reads them whole once. A file that cannot be opened
/// is not either: reading it as a run's input says why, as without
/// partials.
fn is_partial_file(path: &Path) -> bool {
    if path == Path::new("-") || !std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file()) {
        return false;
    }
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    let mut head = [0u8; tally_partial::MAGIC.len()];
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]) {
            Ok(0) | Err(_) => break,
            Ok(read) => filled += read,
        }
    }
    tally_partial::is_partial(&head[..filled])
}

/// Whether any of a run's files is a partial ([`is_partial_file`]).
pub(crate) fn any_partial(files: &[PathBuf]) -> bool {
    files.iter().any(|file| is_partial_file(file))
}

/// Reads a run's files, partials among them, and resolves them as one run
/// (as `tally_partial::resolve_mixed` does, streams refused first): the
/// run, or the rejection, that reading the partials' original files
/// instead makes. The error is ready to print (`FILE: line N: reason`,
/// `FILE: byte N: reason`).
pub(crate) fn resolve(
    files: &[PathBuf],
    trace: &TraceArgs,
    limits: &LimitArgs,
    partials: &PartialArgs,
    keep_labels: bool,
) -> Result<StreamedRun, String> {
    let resolver = StreamingResolver::new();
    let mut resolver = if keep_labels { resolver.keeping_labels() } else { resolver };
    let sources = read_run(files, trace, limits, partials, keep_labels, &mut resolver)?;
    resolver.finish().map_err(|error| run_message(&sources.locate(error)))
}

/// Reads a run's files, partials among them or not, into `sink`, in the
/// order given (`tally_partial::read_mixed`), with the import options and
/// limits the flags give. The error is ready to print.
fn read_run(
    files: &[PathBuf],
    trace: &TraceArgs,
    limits: &LimitArgs,
    partials: &PartialArgs,
    keep_labels: bool,
    sink: &mut dyn PreparedSink,
) -> Result<Sources, String> {
    let (read, raw): (Vec<&PathBuf>, Vec<&PathBuf>) = files.iter().partition(|file| is_partial_file(file));
    let raw: Vec<PathBuf> = raw.into_iter().cloned().collect();
    // With partials, `read_mixed` opens each input again after the import
    // options are made, and reads the first bytes of each: a stream would
    // lose them.
    if !read.is_empty()
        && let Some(stream) = raw.iter().find(|file| is_stream(file))
    {
        return Err(format!(
            "{}: not a regular file (standard input, a pipe, a device), which cannot be read together with partials; save it to a file first",
            stream.display()
        ));
    }
    let opened =
        tally_ingest::open_inputs(&raw, trace.input_format).map_err(|error| run_message(&error.into()))?;
    // The import options are made from the traces as opened, as `tally
    // account` makes them.
    let import = import_options(&opened, trace);
    let options = run_options(trace, limits, import.as_ref(), keep_labels);
    let mut watcher = ProgressWatcher::default();
    if read.is_empty() {
        // Each input opened once: pipes and standard input work.
        return tally_ingest::read_inputs(opened, &options, &mut watcher, sink)
            .map_err(|error| run_message(&error));
    }
    drop(opened);
    tally_partial::read_mixed(files, trace.input_format, &options, &partials.limits(), &mut watcher, sink)
        .map_err(|error| partial_message(&error))
}

/// Whether `path` is read as a stream: standard input, or something there
/// that is not a regular file (a file that is not there is not: opening it
/// says so).
fn is_stream(path: &Path) -> bool {
    path == Path::new("-") || std::fs::metadata(path).is_ok_and(|metadata| !metadata.is_file())
}

/// A partial's error as a command prints it: a run's rejection as
/// `tally account` prints it, a partial over the limit with the flag that
/// raises it.
fn partial_message(error: &PartialError) -> String {
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
            super::super::output::parse_size("256M").map(|bytes| bytes as u64),
            Ok(ReadLimits::DEFAULT_MAX_FRAME_BYTES)
        );
        assert_eq!(PartialArgs::default().limits(), ReadLimits::default());
    }
}
