//! What an input is and how its traces are imported, as the flags say:
//! every command that takes an artifact or a trace opens each input once
//! through `tally_trace::open_input` (for a run, `tally_ingest::open_inputs`),
//! whose one rule (name where unambiguous, then content; `--input-format` to
//! force) decides, and then reads the same stream, so pipes and
//! `/dev/stdin` work; the import options are made here, from the opened
//! traces, before anything is read.

use std::path::PathBuf;

use anyhow::Context;
use regex::Regex;
use tally_trace::{
    Detail, DeviceUuidAssignment, DeviceUuidError, DeviceUuids, ImportOptions, InputKind, OpenedInput,
};

fn parse_input_kind(text: &str) -> Result<InputKind, String> {
    InputKind::parse(text).map_err(|error| error.to_string())
}

/// How traces are imported, as the command line says.
#[derive(Debug, Clone, clap::Args)]
pub struct TraceArgs {
    /// Host ranges whose name matches this regular expression are
    /// iterations (PyTorch annotations, NVTX ranges); by default
    /// `^ProfilerStep#\d+$`.
    #[arg(long, value_name = "REGEX")]
    pub iteration_pattern: Option<String>,
    /// GPU UUID of a CUDA ordinal, `[TRACE_FILE:]INDEX=UUID` (repeatable);
    /// without it a device the trace does not name gets a UUID made from the
    /// trace and ordinal.
    #[arg(long = "device-uuid", value_name = "[TRACE:]INDEX=UUID", value_parser = parse_device_uuid)]
    pub device_uuids: Vec<DeviceUuidAssignment>,
    /// One record per kernel, copy or memset instead of one per launch.
    #[arg(long)]
    pub per_kernel: bool,
    /// The run ID; by default one derived from the traces' paths.
    #[arg(long)]
    pub run_id: Option<String>,
    /// What every input is, instead of the rule: `artifact` or `trace`. By
    /// default the name decides where it is unambiguous (`.jsonl[.gz]`
    /// artifact; `.json[.gz]`, `.sqlite`, `.xplane.pb[.gz]` trace), else the
    /// content (SQLite, JSON with `traceEvents` or an array of events with
    /// `ph`, or a protobuf opening as an XPlane `XSpace`, is a trace;
    /// anything else an artifact).
    #[arg(long, value_name = "KIND", value_parser = parse_input_kind)]
    pub input_format: Option<InputKind>,
    /// The longest single JSON value (an event) of a Kineto trace, in bytes
    /// (suffixes K, M, G): a trace past it is rejected instead of read into
    /// memory.
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = super::output::parse_size)]
    pub max_event_bytes: usize,
    /// Threads reading the inputs (0: one per core): traces read at once,
    /// each on a thread of its own, and the threads decoding each artifact.
    /// The result is the same whatever the number.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
}

impl Default for TraceArgs {
    fn default() -> Self {
        Self {
            iteration_pattern: None,
            device_uuids: Vec::new(),
            per_kernel: false,
            run_id: None,
            input_format: None,
            max_event_bytes: tally_trace::DEFAULT_MAX_EVENT_BYTES,
            threads: 0,
        }
    }
}

impl TraceArgs {
    /// Import options for `traces`.
    pub fn options(&self, traces: &[&OpenedInput]) -> anyhow::Result<ImportOptions> {
        let paths: Vec<PathBuf> = traces.iter().map(|input| input.path().to_path_buf()).collect();
        let mut options = tally_ingest::default_import_options(traces, self.run_id.as_deref())
            .map_err(|error| anyhow::anyhow!("--run-id: {error}"))?;
        if let Some(pattern) = &self.iteration_pattern {
            options.iteration_pattern = Regex::new(pattern).context("--iteration-pattern")?;
        }
        let uuids = DeviceUuids::new(self.device_uuids.iter().cloned()).map_err(device_uuid_error)?;
        uuids.check_traces(&paths).map_err(device_uuid_error)?;
        options.device_uuids = uuids;
        options.detail = if self.per_kernel { Detail::Kernel } else { Detail::Launch };
        options.max_event_bytes = self.max_event_bytes;
        options.threads = self.threads;
        Ok(options)
    }
}

/// stormlog's `--device-uuid [TRACE_FILE:]INDEX=UUID`; a bare `UUID` means
/// device 0 of every trace.
fn parse_device_uuid(value: &str) -> Result<DeviceUuidAssignment, String> {
    let (left, uuid) = value.split_once('=').unwrap_or(("0", value));
    let (trace, index) = match left.rsplit_once(':') {
        Some((trace, index)) => (Some(trace), index),
        None => (None, left),
    };
    let bad = || format!("{value:?}: expected [TRACE_FILE:]INDEX=UUID");
    if index.is_empty()
        || !index.bytes().all(|byte| byte.is_ascii_digit())
        || uuid.is_empty()
        || trace == Some("")
    {
        return Err(bad());
    }
    let index: u32 = index.parse().map_err(|_| bad())?;
    Ok(DeviceUuidAssignment { trace: trace.map(str::to_owned), index, uuid: uuid.to_owned() })
}

/// tally-trace's device-UUID errors in the terms of the flag.
fn device_uuid_error(error: DeviceUuidError) -> anyhow::Error {
    match error.selector() {
        Some(selector) => anyhow::anyhow!("--device-uuid {selector}:...: {error}"),
        None => anyhow::anyhow!("--device-uuid: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_uuids_parse_stormlogs_form() {
        let parsed = parse_device_uuid("rank0.json:1=GPU-abc").expect("valid");
        assert_eq!(
            parsed,
            DeviceUuidAssignment { trace: Some("rank0.json".into()), index: 1, uuid: "GPU-abc".into() }
        );
        let bare = parse_device_uuid("GPU-def").expect("valid");
        assert_eq!(bare, DeviceUuidAssignment { trace: None, index: 0, uuid: "GPU-def".into() });
        // A trace path may itself hold colons; the last one separates the index.
        let colons = parse_device_uuid("a:b.json:2=GPU-x").expect("valid");
        assert_eq!((colons.trace.as_deref(), colons.index), (Some("a:b.json"), 2));
        for bad in ["x=GPU-abc", "1=", ":1=GPU", "-1=GPU", "99999999999=GPU"] {
            let error = parse_device_uuid(bad).expect_err(bad);
            assert!(error.contains("expected [TRACE_FILE:]INDEX=UUID"), "{bad}: {error}");
        }
    }

    #[test]
    fn device_uuid_errors_name_the_flag() {
        let twice = DeviceUuids::new([
            DeviceUuidAssignment { trace: None, index: 0, uuid: "GPU-a".into() },
            DeviceUuidAssignment { trace: None, index: 0, uuid: "GPU-b".into() },
        ])
        .expect_err("two UUIDs for one device");
        assert_eq!(device_uuid_error(twice).to_string(), "--device-uuid: device 0 is given two UUIDs");
        let missing = DeviceUuids::new([DeviceUuidAssignment {
            trace: Some("r9.json".into()),
            index: 0,
            uuid: "G".into(),
        }])
        .expect("valid")
        .check_traces(&[PathBuf::from("r0.json")])
        .expect_err("no such trace");
        assert_eq!(
            device_uuid_error(missing).to_string(),
            "--device-uuid r9.json:...: no trace in this import is r9.json"
        );
    }
}
