//! Artifact decode throughput: `tally validate` on generated artifacts of at
//! least 150 MB (embedded v2/v3 and compact v4), beside stormlog's
//! `load_inference_artifact` on the same files where Python is installed.

use std::process::Command;

use anyhow::{Context, bail};

use super::generate::{ArtifactSpec, GenForm, cached_artifact};
use super::{BenchContext, Measure, Row};

/// Loads the artifact with stormlog and prints how many records it holds.
const STORMLOG_LOAD: &str = "import sys\n\
from stormlog.infer.correlation_events import load_inference_artifact\n\
print(len(load_inference_artifact(sys.argv[1])))\n";

/// Runs the benchmark.
pub fn run(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let target_bytes = if ctx.quick() { 15_000_000 } else { 150_000_000 };
    let tally = ctx.tally_bin()?;
    // Holds every record in memory and prints `records decoded_bytes`.
    let read_all = ctx.release_example("tally-tests", "read_artifact")?;
    for form in [GenForm::Embedded, GenForm::Compact] {
        let spec = ArtifactSpec { target_bytes, form, ranks: 4 };
        let (path, made) = cached_artifact(ctx.scratch_dir(), &spec)?;
        let (measure, stdout) =
            ctx.run_measured_capture(Command::new(&tally).args(["validate", "--format", "json"]).arg(&path))?;
        let report: serde_json::Value =
            serde_json::from_str(&stdout).context("tally validate --format json")?;
        if report["valid"] != serde_json::Value::Bool(true)
            || report["records"].as_u64() != Some(made.records)
        {
            bail!("tally validate disagrees with the generator on {}: {report}", path.display());
        }
        let mut row =
            Row::new(format!("artifact validate ({}, {} MB)", form.label(), made.bytes / 1_000_000), measure);
        row.bytes = Some(made.bytes);
        row.items = Some(made.records);
        row.item_unit = "records";
        match ctx.python() {
            Some(python) => {
                let (reference, stdout): (Measure, String) = ctx
                    .run_measured_capture(Command::new(python).arg("-c").arg(STORMLOG_LOAD).arg(&path))
                    .context("stormlog load_inference_artifact")?;
                if stdout.trim().parse::<u64>().ok() != Some(made.records) {
                    bail!("stormlog loaded {} records, expected {}", stdout.trim(), made.records);
                }
                row.reference = Some(reference);
                row.note = "reference: stormlog load_inference_artifact".into();
            }
            None => row.note = "stormlog not installed: tally only".into(),
        }
        ctx.record(row);

        // Memory when every record is kept (`read_artifact`), against the
        // bytes the decoded records own.
        let (measure, stdout) = ctx.run_measured_capture(Command::new(&read_all).arg(&path))?;
        let mut parts = stdout.split_whitespace().map(str::parse::<u64>);
        let (Some(Ok(records)), Some(Ok(decoded))) = (parts.next(), parts.next()) else {
            bail!("read_artifact example printed {stdout:?}");
        };
        if records != made.records {
            bail!("read_artifact returned {records} records, expected {}", made.records);
        }
        let mut row = Row::new(format!("artifact read_artifact, all kept ({})", form.label()), measure);
        row.bytes = Some(made.bytes);
        row.items = Some(records);
        row.item_unit = "records";
        let rss = measure.peak_rss_bytes.unwrap_or(0) as f64;
        row.note = format!(
            "decoded records own ~{} MB; peak RSS x{:.1} of that",
            decoded / 1_000_000,
            rss / decoded.max(1) as f64
        );
        ctx.record(row);
    }
    Ok(())
}
