//! What an input file is, judged by its content: a profiler trace (Kineto
//! Chrome-trace JSON, plain or gzip, or an Nsight Systems SQLite export) or
//! an artifact. Commands that take either (`account`, `export`) ask here.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use regex::Regex;
use tally_core::{InferenceRecord, NonEmptyString};
use tally_trace::{Detail, DeviceUuids, ImportOptions};

/// Whether `path` is a trace to import rather than an artifact to read.
/// Standard input (`-`) is always an artifact.
pub fn is_trace(path: &Path) -> anyhow::Result<bool> {
    if path.as_os_str() == "-" {
        return Ok(false);
    }
    Ok(tally_trace::detect_format(path)?.is_some())
}

/// The traces among `files`, in order.
pub fn traces_among(files: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut traces = Vec::new();
    for path in files {
        if is_trace(path)? {
            traces.push(path.clone());
        }
    }
    Ok(traces)
}

/// How traces are imported, as the command line says.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TraceArgs {
    /// Host ranges whose name matches this regular expression are
    /// iterations (PyTorch annotations, NVTX ranges); by default
    /// `^ProfilerStep#\d+$`.
    #[arg(long, value_name = "REGEX")]
    pub iteration_pattern: Option<String>,
    /// GPU UUID of a CUDA ordinal, `[TRACE_FILE:]INDEX=UUID` (repeatable);
    /// without it a device the trace does not name gets a UUID made from the
    /// trace and ordinal.
    #[arg(long = "device-uuid", value_name = "[TRACE:]INDEX=UUID")]
    pub device_uuids: Vec<String>,
    /// One record per kernel, copy or memset instead of one per launch.
    #[arg(long)]
    pub per_kernel: bool,
    /// The run ID; by default one derived from the traces' paths.
    #[arg(long)]
    pub run_id: Option<String>,
}

impl TraceArgs {
    /// Import options for `traces`.
    pub fn options(&self, traces: &[PathBuf]) -> anyhow::Result<ImportOptions> {
        let run_id = match &self.run_id {
            Some(run_id) => run_id.clone(),
            None => tally_trace::default_run_id(traces)?,
        };
        let run_id = NonEmptyString::new(run_id).context("--run-id")?;
        let mut options = ImportOptions::new(run_id.clone(), run_id);
        if let Some(pattern) = &self.iteration_pattern {
            options.iteration_pattern = Regex::new(pattern).context("--iteration-pattern")?;
        }
        options.device_uuids = DeviceUuids::parse(&self.device_uuids).map_err(anyhow::Error::msg)?;
        options.detail = if self.per_kernel { Detail::Kernel } else { Detail::Launch };
        options.created_at_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
        options.importer_host = host_name();
        Ok(options)
    }
}

/// The traces imported into one run, each record passed to `each` as soon
/// as it is built, so none is kept; `each`'s error stops the import and is
/// returned as it was.
pub fn for_each_trace_record(
    traces: &[PathBuf],
    args: &TraceArgs,
    mut each: impl FnMut(InferenceRecord) -> Result<(), String>,
) -> Result<(), String> {
    let options = args.options(traces).map_err(|error| format!("{error:#}"))?;
    let mut refused: Option<String> = None;
    let outcome = tally_trace::import_traces(traces, &options, &mut |event| {
        each(InferenceRecord::Event(event)).map_err(|message| {
            refused = Some(message.clone());
            message.into()
        })
    });
    match (outcome, refused) {
        (_, Some(message)) => Err(message),
        (Err(error), None) => Err(error.to_string()),
        (Ok(_), None) => Ok(()),
    }
}

fn host_name() -> Option<NonEmptyString> {
    let text = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())?;
    NonEmptyString::new(text.trim()).ok()
}
