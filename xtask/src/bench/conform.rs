//! `tally conform` in batch mode against stormlog 0.4.3
//! (python/conform/stormlog_batch.py): generated cases per second, all told
//! (generation, writing, tally's answer, stormlog's, the comparison), and
//! per kind tally's own answer rate beside stormlog's. Skipped, with the
//! reason printed, without a reference Python.

use std::process::Command;

use anyhow::Context;

use super::{BenchContext, Measure, Row, json_f64, parse_json};
use crate::workspace_root;

pub fn run(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let Some(python) = ctx.python().map(std::path::Path::to_path_buf) else {
        println!("conform not run: no reference Python with stormlog");
        return Ok(());
    };
    let tally = ctx.tally_bin()?;
    let cases = if ctx.quick() { 200 } else { 2_000 };
    let script = workspace_root().join("python/conform/stormlog_batch.py");
    let batch = format!("{} {}", python.display(), script.display());
    let mut command = Command::new(&tally);
    command.args(["conform", "--impl-batch", &batch, "--kinds", "account,shares,align", "--no-corpus"]);
    command.args(["--seed", "1", "--format", "json", "--cases", &cases.to_string()]);
    let (measure, stdout) =
        ctx.run_measured_capture(&mut command).context("tally conform against stormlog")?;
    let report = parse_json(&stdout, "tally conform's report")?;
    let kinds = report["kinds"].as_array().context("the report has no kinds")?;
    let total = cases * kinds.len() as u64;
    let mut all = Row::new("conform: batch vs stormlog, all kinds", measure);
    all.items = Some(total);
    all.item_unit = "cases";
    all.note = format!("{total} generated cases, generation to verdict");
    ctx.record(all);
    for kind in kinds {
        let name = kind["kind"].as_str().unwrap_or("?");
        let tally_seconds = json_f64(kind, "tally_seconds", "the report")?;
        let stormlog_seconds = json_f64(kind, "implementation_seconds", "the report")?;
        let mut row = Row::new(
            format!("conform {name}: tally's answer vs stormlog's"),
            Measure { seconds: tally_seconds, peak_rss_bytes: None },
        );
        row.items = Some(cases);
        row.item_unit = "cases";
        row.reference = Some(Measure { seconds: stormlog_seconds, peak_rss_bytes: None });
        row.note = format!("agreed or rejected by both: {}", kind["generated"]["disagreed"] == 0);
        ctx.record(row);
    }
    Ok(())
}
