//! `tally export ARTIFACT|TRACE -o timeline.json`: a Chrome-trace JSON
//! timeline (Perfetto, chrome://tracing) of an artifact or of a trace as
//! tally imports it.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use tally_core::{CorrelationEvent, InferenceRecord};

use super::input::{TraceArgs, is_trace};

/// Arguments of `tally export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// An artifact (plain or gzip, schema 1-4) or a trace (detected by
    /// content).
    pub input: PathBuf,
    /// The timeline to write, atomically.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// Runs the command.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let events: Vec<CorrelationEvent> = if is_trace(&args.input)? {
        let options = args.trace.options(std::slice::from_ref(&args.input))?;
        tally_trace::import_traces_to_vec(std::slice::from_ref(&args.input), &options)?.0
    } else {
        tally_artifact::read_artifact(&args.input)?
            .into_iter()
            .filter_map(|record| match record {
                InferenceRecord::Event(event) => Some(event),
                InferenceRecord::Legacy(_) => None,
            })
            .collect()
    };
    let summary = write_atomically(&args.output, |file| Ok(tally_trace::write_chrome_trace(&events, file)?))?;
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

/// Writes through a temporary file beside `target`, renamed over it when
/// complete, so a failure never leaves half a timeline.
fn write_atomically<T>(
    target: &Path,
    write: impl FnOnce(&mut fs::File) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let directory = target.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = target.file_name().context("the output has no file name")?.to_string_lossy();
    let temporary = directory.join(format!(".{name}.{}.tmp", std::process::id()));
    let outcome = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .with_context(|| format!("creating {}", temporary.display()))?;
        let value = write(&mut file)?;
        file.flush()?;
        file.sync_all()?;
        fs::rename(&temporary, target).with_context(|| format!("writing {}", target.display()))?;
        Ok(value)
    })();
    if outcome.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    outcome
}
