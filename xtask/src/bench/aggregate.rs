//! `aggregate` (issue 6; `distributed` is issue 39's rank sets, in
//! distributed.rs). Distributed aggregation: 10 000 worker profiles (1 000 with `--quick`)
//! aggregated by tally-distributed (sequential and rayon) and by vertebrae
//! 1.1.0's `aggregate_distributed_resource_profiles` on the same request, in
//! the same run; then the whole `tally aggregate --request` process beside a
//! Python process that loads and aggregates the same file. The two results
//! must be equal (checked here) for the figures to count.
//!
//! Target (issue 6): aggregation of 10 000 worker profiles under 50 ms.
//!
//! The in-process rows are the fastest of five aggregations each (the
//! request already loaded); tally's figures come from the
//! `aggregate_bench` example of tally-tests (release build).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

use super::{BenchContext, Measure, Row, json_f64, parse_json};

/// vertebrae's aggregation of a request file: prints the load time and the
/// fastest of REPEAT aggregations, writes the aggregate (asdict) to OUT.
const VERTEBRAE_AGGREGATE: &str = r#"
import json, sys, time
from dataclasses import asdict
from vertebrae.profiling import aggregate_distributed_resource_profiles, resource_profile_from_dict

path, repeat, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
started = time.perf_counter()
with open(path) as handle:
    request = json.load(handle)
profiles = [(key, resource_profile_from_dict(value)) for key, value in request["profiles"]]
load = time.perf_counter() - started
best = None
for _ in range(repeat):
    started = time.perf_counter()
    result = aggregate_distributed_resource_profiles(
        profiles,
        merged_embeddings=request["merged_embeddings"],
        all_shard_keys=request.get("all_shard_keys"),
    )
    elapsed = time.perf_counter() - started
    best = elapsed if best is None else min(best, elapsed)
if out != "-":
    with open(out, "w") as handle:
        json.dump(asdict(result), handle)
print(json.dumps({"load_s": load, "aggregate_s": best}))
"#;

const REPEAT: &str = "5";

/// Equal as Python compares JSON, and floats bit for bit.
fn same(ours: &Value, theirs: &Value) -> bool {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(key, x)| b.get(key).is_some_and(|y| same(x, y)))
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)),
        (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
            a.as_f64().map(f64::to_bits) == b.as_f64().map(f64::to_bits)
        }
        _ => ours == theirs,
    }
}

/// Runs the benchmark.
pub fn run(ctx: &mut BenchContext) -> anyhow::Result<()> {
    let workers: u64 = if ctx.quick() { 1_000 } else { 10_000 };
    let binary = ctx.release_example("tally-tests", "aggregate_bench")?;
    let request: PathBuf = ctx.scratch_dir().join(format!("distributed-request-{workers}.json"));
    if !request.exists() {
        crate::python::status(
            Command::new(&binary).arg("write-request").arg(&request).arg(workers.to_string()),
            "aggregate_bench write-request",
        )?;
    }
    let bytes = std::fs::metadata(&request).context("the generated request")?.len();
    let path = request.to_str().context("a UTF-8 scratch path")?;
    let (_, stdout) = ctx.run_measured_capture(Command::new(&binary).args(["time", path, REPEAT]))?;
    let ours = parse_json(&stdout, "aggregate_bench output")?;
    let ns = |key: &str| json_f64(&ours, key, "aggregate_bench output").map(|ns| ns / 1e9);
    let (sequential, parallel, load) = (ns("sequential_ns")?, ns("parallel_ns")?, ns("load_ns")?);

    let tally_bin = ctx.tally_bin()?;
    let (tally_process, printed) =
        ctx.run_measured_capture(Command::new(&tally_bin).args(["aggregate", "--request", path]))?;
    let printed = parse_json(&printed, "tally aggregate output")?;

    let reference = match ctx.python() {
        Some(python) => {
            let out = ctx.scratch_dir().join(format!("distributed-vertebrae-{workers}.json"));
            let out_path = out.to_str().context("a UTF-8 scratch path")?;
            // Once for the whole process (load and one aggregation) and its
            // result, then again for the fastest of several aggregations.
            let (process, _) = ctx
                .run_measured_capture(
                    Command::new(python).arg("-c").arg(VERTEBRAE_AGGREGATE).args([path, "1", out_path]),
                )
                .context("vertebrae aggregate_distributed_resource_profiles")?;
            let theirs: Value =
                serde_json::from_slice(&std::fs::read(&out).context("the reference aggregate")?)
                    .context("the reference aggregate")?;
            if !same(&printed, &theirs) {
                bail!("tally's aggregate of {path} differs from vertebrae's ({out_path})");
            }
            let (_, stdout) = ctx
                .run_measured_capture(
                    Command::new(python).arg("-c").arg(VERTEBRAE_AGGREGATE).args([path, REPEAT, "-"]),
                )
                .context("vertebrae aggregate_distributed_resource_profiles")?;
            let timing = parse_json(&stdout, "reference output")?;
            let seconds = |key: &str| json_f64(&timing, key, "reference output");
            Some((process, seconds("aggregate_s")?, seconds("load_s")?))
        }
        None => None,
    };
    let checked = if reference.is_some() {
        "; equal to vertebrae's result"
    } else {
        "; vertebrae not installed: tally only"
    };
    let threads = ours["threads"].as_u64().unwrap_or(0);
    let rows = [
        (format!("distributed aggregate ({workers} workers, sequential)"), sequential, "target < 50 ms"),
        (format!("distributed aggregate ({workers} workers, rayon x{threads})"), parallel, "target < 50 ms"),
    ];
    for (name, tally_seconds, target) in rows {
        let mut row = Row::new(name, Measure { seconds: tally_seconds, peak_rss_bytes: None });
        row.items = Some(workers);
        row.item_unit = "workers";
        row.note = format!("{:.2} ms, request loaded; {target}{checked}", tally_seconds * 1e3);
        if let Some((_, aggregate, _)) = reference {
            row.reference = Some(Measure { seconds: aggregate, peak_rss_bytes: None });
            row.note += &format!("; vertebrae {:.2} ms", aggregate * 1e3);
        }
        ctx.record(row);
    }
    let mut row = Row::new(format!("tally aggregate --request ({workers} workers)"), tally_process);
    row.bytes = Some(bytes);
    row.items = Some(workers);
    row.item_unit = "workers";
    row.note =
        format!("whole process: read, decode {:.0} ms in-process, aggregate, print{checked}", load * 1e3);
    if let Some((process, _, python_load)) = reference {
        row.reference = Some(process);
        row.note +=
            &format!("; reference: python loading ({:.0} ms) and aggregating once", python_load * 1e3);
    }
    ctx.record(row);
    Ok(())
}
