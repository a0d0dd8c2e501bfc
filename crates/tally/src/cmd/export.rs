//! `tally export ARTIFACT|TRACE -o timeline.json`: a Chrome-trace JSON
//! timeline (Perfetto, chrome://tracing) of an artifact or of a trace as
//! tally imports it.

use std::path::PathBuf;
use std::process::ExitCode;

use tally_artifact::{ReadOptions, decompressed_as, read_sniffed_batches};
use tally_core::{CorrelationEvent, InferenceRecord};

use super::input::TraceArgs;
use super::output::{LimitArgs, artifact_message};

/// Arguments of `tally export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// An artifact (plain or gzip, schema 1-4) or a trace (detected by
    /// content); not a partial (`tally partial`), which keeps only what
    /// accounting needs of the events, not their timeline.
    pub input: PathBuf,
    /// The timeline to write, atomically.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub trace: TraceArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Runs the command: exit 0 with the timeline written, 1 when the input is
/// rejected (`FILE: line N: reason` on stderr, no timeline written). The
/// input must pass the same rules as for `tally account`: the timeline of
/// evidence that cannot be resolved would show a run that does not exist.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let name = args.input.display().to_string();
    if tally_partial::sniff_path(&args.input).unwrap_or(false) {
        eprintln!(
            "{name}: a tally partial keeps what accounting needs of its events, not their timeline: export the artifacts or traces it was made from"
        );
        return Ok(ExitCode::FAILURE);
    }
    let input = match tally_trace::open_input(&args.input, args.trace.input_format) {
        Ok(input) => input,
        Err(error) => {
            eprintln!("{error}");
            return Ok(ExitCode::FAILURE);
        }
    };
    // An artifact's events keep their lines; an imported trace's "line" is
    // the record's number.
    let (events, lines): (Vec<CorrelationEvent>, Option<Vec<u64>>) = if input.is_trace() {
        let options = args.trace.options(&[&input])?;
        let mut events = Vec::new();
        tally_trace::import_inputs(vec![input], &options, &mut |event| {
            events.push(event);
            Ok(())
        })?;
        (events, None)
    } else {
        match read_events(input, &name, &args.limits) {
            Ok((events, lines)) => (events, Some(lines)),
            Err(error) => {
                eprintln!("{}", artifact_message(&error));
                return Ok(ExitCode::FAILURE);
            }
        }
    };
    if let Err(error) = tally_resolve::resolve_inference_events(&events) {
        let line = match &lines {
            Some(lines) => lines.get(error.record()).copied().unwrap_or(0),
            None => error.record() as u64 + 1,
        };
        eprintln!("{name}: line {line}: {error}");
        return Ok(ExitCode::FAILURE);
    }
    let summary = super::output::write_atomically(&args.output, |file| {
        Ok(tally_trace::write_chrome_trace(&events, file)?)
    })?;
    eprintln!(
        "{} slices written to {} ({} device activities placed on a host clock, {} on their own clock, {} without a complete span left out)",
        summary.slices,
        args.output.display(),
        summary.placed_on_host,
        summary.unplaced,
        summary.incomplete,
    );
    Ok(ExitCode::SUCCESS)
}

/// The correlation events of an artifact with their lines (legacy v1
/// records take no part in a timeline, nor in resolution).
fn read_events(
    input: tally_trace::OpenedInput,
    name: &str,
    limits: &LimitArgs,
) -> Result<(Vec<CorrelationEvent>, Vec<u64>), tally_artifact::ArtifactError> {
    let options = ReadOptions { max_record_bytes: limits.max_record_bytes, ..ReadOptions::default() };
    let (mut events, mut lines) = (Vec::new(), Vec::new());
    // Opening sniffed it: read as it told, not sniffed again.
    let compression = input.compression();
    let input = decompressed_as(input.into_reader(), compression);
    read_sniffed_batches(input, name, &options, |batch| {
        for (line, record) in batch.lines.into_iter().zip(batch.records) {
            if let InferenceRecord::Event(event) = record {
                events.push(event);
                lines.push(line);
            }
        }
        Ok(())
    })?;
    Ok((events, lines))
}
