//! Printing a profile (table or vertebrae JSON) and the input/output dump,
//! shared by the model kinds.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;
use tally_profile::profile::ResourceProfile;

use super::super::Layout;
use super::super::readable::{model_summary, optional_bytes, readable_bytes, seconds, write_warnings};

/// What a model run adds to the printed profile.
pub(crate) struct Report {
    /// The model file.
    pub model: PathBuf,
    /// The runtime, e.g. `ONNX Runtime 1.32.0`.
    pub runtime: String,
    /// One line per input: `name: TYPE [dims]`.
    pub inputs: Vec<String>,
    /// Samples per call.
    pub samples_per_call: u64,
}

/// Prints the profile in the chosen layout.
pub(crate) fn print(report: &Report, profile: &ResourceProfile, layout: Layout) -> anyhow::Result<()> {
    let text = match layout {
        Layout::Json => format!("{}\n", profile.to_json_string().context("writing the profile as JSON")?),
        Layout::Table => table(report, profile),
    };
    crate::cmd::output::print(&text)?;
    Ok(())
}

fn context_text(profile: &ResourceProfile, key: &str) -> String {
    match profile.context.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => "-".to_owned(),
        Some(other) => other.to_string(),
    }
}

fn table(report: &Report, profile: &ResourceProfile) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let mut line = |text: String| {
        let _ = writeln!(out, "{text}");
    };
    line(format!("model          {}", report.model.display()));
    line(format!("runtime        {} on {}", report.runtime, context_text(profile, "device")));
    for (index, input) in report.inputs.iter().enumerate() {
        line(format!("{:<15}{input}", if index == 0 { "inputs" } else { "" }));
    }
    line(format!("status         {}", profile.status));
    let inference = &profile.inference;
    line(String::new());
    line(format!("inference      {}", inference.status));
    line(format!(
        "  calls        {} ({} warm), {} samples per call, {} samples",
        inference.batch_sizes.len(),
        inference.warm_call_count,
        report.samples_per_call,
        inference.materialized_samples
    ));
    line(format!("  first call   {}", seconds(inference.first_call_seconds)));
    line(format!(
        "  warm         mean {}  median {}  p95 {}  max {}",
        seconds(inference.warm_mean_seconds),
        seconds(inference.warm_median_seconds),
        seconds(inference.warm_p95_seconds),
        seconds(inference.warm_max_seconds)
    ));
    line(format!(
        "  throughput   {}",
        inference
            .throughput_samples_per_second
            .map_or_else(|| "-".to_owned(), |rate| format!("{rate:.1} samples/s"))
    ));
    let host = &profile.host_memory;
    line(format!(
        "host memory    {}: peak RSS {}, +{} over baseline ({})",
        host.status,
        optional_bytes(host.peak_rss_bytes),
        optional_bytes(host.peak_increase_bytes),
        context_text(profile, "host_memory_method")
    ));
    let device = &profile.device_memory;
    match &device.unavailable_reason {
        Some(reason) => line(format!("device memory  {}: {reason}", device.status)),
        None => line(format!(
            "device memory  {}: peak allocated {}, reserved {}",
            device.status,
            optional_bytes(device.peak_allocated_bytes),
            optional_bytes(device.peak_reserved_bytes)
        )),
    }
    let model = &profile.model;
    line(format!("model          {}", model_summary(model)));
    line(format!("  checkpoint   {}: {}", model.checkpoint_status, optional_bytes(model.checkpoint_bytes)));
    for artifact in &model.artifacts {
        let reason = artifact.reason.as_deref().map(|reason| format!(" ({reason})")).unwrap_or_default();
        line(format!(
            "  artifact     {} {} {} {}{reason}",
            artifact.role,
            artifact.path,
            readable_bytes(artifact.bytes),
            artifact.status
        ));
    }
    write_warnings(&mut out, &profile.warnings);
    out
}

/// Writes `value` to `dir/name` atomically: a temporary file in `dir`, then
/// a rename over the target.
pub(crate) fn write_json_atomically(dir: &Path, name: &str, value: &Value) -> anyhow::Result<PathBuf> {
    use std::io::Write as _;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let target = dir.join(name);
    let text = serde_json::to_string_pretty(value)? + "\n";
    crate::cmd::output::write_atomically(&target, |file| {
        file.write_all(text.as_bytes()).with_context(|| format!("writing {}", target.display()))
    })?;
    Ok(target)
}
