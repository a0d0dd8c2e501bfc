//! `tally report FILE... -o report.html`: one run's breakdown as one
//! self-contained HTML page (tally-report), read as `tally breakdown` reads
//! it; `tally report --compare A B -o report.html`: two runs compared, as
//! `tally diff` compares them. The page embeds the JSON those commands
//! print with the same flags.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tally_gpu_time::breakdown::{Breakdown, BreakdownOptions, DeviceTimeline, breakdown_with_timelines};
use tally_gpu_time::diff::diff;
use tally_report::{HtmlReport, ReportOptions, RunView, breakdown_report, diff_report};

use super::breakdown::{By, RunArgs, read_run};

/// Arguments of `tally report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Artifacts, profiler traces or partials of one run, as `tally
    /// breakdown` takes them; with `--compare`, exactly two runs A and B
    /// (one file each), as `tally diff` takes them.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The page to write, atomically.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Compare two runs (`tally diff A B`) instead of breaking one down.
    #[arg(long)]
    pub compare: bool,
    /// Also break each device down per iteration (as `tally breakdown
    /// --by iteration`; the page draws the iterations' busy times).
    #[arg(long, value_enum)]
    pub by: Option<By>,
    /// Kernel rows per table (the embedded JSON holds every kernel).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub top: usize,
    /// Columns of a device clock's timeline (about one per pixel).
    #[arg(long, value_name = "N", default_value_t = tally_report::DEFAULT_TIMELINE_COLUMNS,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub columns: u32,
    #[command(flatten)]
    pub run: RunArgs,
}

/// One run's breakdown and timelines, or the message to print.
fn measure(
    files: &[PathBuf],
    args: &Args,
    options: &BreakdownOptions,
) -> Result<(Breakdown, Vec<DeviceTimeline>), String> {
    read_run(files, &args.run, |run| breakdown_with_timelines(run, options, args.columns))
}

/// Runs the command: exit 0 with the page written, 1 when an input is
/// rejected (the reason on stderr, no page written), 2 on a bad flag.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if args.compare && args.files.len() != 2 {
        eprintln!("tally: error: --compare takes exactly two runs, A and B ({} given)", args.files.len());
        return Ok(ExitCode::from(2));
    }
    let options = match args.run.options(args.by == Some(By::Iteration)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("tally: error: {message}");
            return Ok(ExitCode::from(2));
        }
    };
    let mut report_options = ReportOptions { top_kernels: args.top, ..ReportOptions::default() };
    let report: HtmlReport = if args.compare {
        let mut runs = Vec::with_capacity(2);
        for (side, file) in ["A", "B"].into_iter().zip(&args.files) {
            match measure(std::slice::from_ref(file), args, &options) {
                Ok(run) => runs.push(run),
                Err(message) => {
                    eprintln!("{message}");
                    return Ok(ExitCode::FAILURE);
                }
            }
            report_options.sources.push(format!("{side} = {}", file.display()));
        }
        let compared = diff(&runs[0].0, &runs[1].0);
        report_options.title = "tally report: two runs compared".to_owned();
        let (a, b) = (&runs[0], &runs[1]);
        let views =
            (RunView { breakdown: &a.0, timelines: &a.1 }, RunView { breakdown: &b.0, timelines: &b.1 });
        diff_report(&compared, Some(views), &report_options)?
    } else {
        let (result, timelines) = match measure(&args.files, args, &options) {
            Ok(run) => run,
            Err(message) => {
                eprintln!("{message}");
                return Ok(ExitCode::FAILURE);
            }
        };
        let names: Vec<String> = args.files.iter().map(|file| file.display().to_string()).collect();
        report_options.sources.push(format!("from {}", names.join(", ")));
        breakdown_report(&result, &timelines, &report_options)?
    };
    let page = report.page();
    super::output::write_atomically(&args.output, |file| {
        file.write_all(page.as_bytes())?;
        Ok(())
    })?;
    eprintln!("report written to {} ({} bytes)", args.output.display(), page.len());
    Ok(ExitCode::SUCCESS)
}
