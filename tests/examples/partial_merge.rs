//! Benchmark helper for `cargo xtask bench distributed`: the merge of many
//! small partials.
//!
//! ```text
//! partial_merge ARTIFACT COUNT SCRATCH
//! ```
//!
//! Splits ARTIFACT (an artifact whose every line is a whole record, such as
//! the bench generator's embedded form) into COUNT slices of consecutive
//! lines, makes a partial of each (`Partial::of_paths` of the slice written
//! under SCRATCH, which is removed afterwards) and keeps its bytes, as a
//! partial travels. Then, timed: every partial read back from its bytes,
//! all merged in one `tally_partial::merge`, and the merged partial
//! resolved. Prints one JSON object: the partials' count and bytes, the
//! seconds of each step, the events held, and whether the merged run's
//! counts equal those of one partial of the whole file (the single-process
//! read).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::json;
use tally_partial::{Partial, merge};
use tally_resolve::ResolvedEvidence;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("partial_merge: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The artifact's lines, in COUNT runs of consecutive lines (as even as the
/// line count allows).
fn slices(path: &Path, count: usize) -> anyhow::Result<Vec<Vec<String>>> {
    let file = std::fs::File::open(path).with_context(|| path.display().to_string())?;
    let lines: Vec<String> = std::io::BufReader::new(file).lines().collect::<Result<_, _>>()?;
    if lines.len() < count {
        bail!("{} has {} lines, fewer than {count} slices", path.display(), lines.len());
    }
    let mut slices = Vec::with_capacity(count);
    let mut start = 0;
    for index in 0..count {
        let end = (index + 1) * lines.len() / count;
        slices.push(lines[start..end].to_vec());
        start = end;
    }
    Ok(slices)
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [artifact, count, scratch] = &args[..] else {
        bail!("usage: partial_merge ARTIFACT COUNT SCRATCH");
    };
    let artifact = PathBuf::from(artifact);
    let count: usize = count.parse().context("COUNT")?;
    let scratch = PathBuf::from(scratch);
    std::fs::create_dir_all(&scratch)?;

    // Untimed: the partials as they would arrive from COUNT workers.
    let made = Instant::now();
    let mut encoded = Vec::with_capacity(count);
    for (index, lines) in slices(&artifact, count)?.into_iter().enumerate() {
        let path = scratch.join(format!("slice-{index}.jsonl"));
        std::fs::write(&path, lines.join("\n") + "\n")?;
        let partial = Partial::of_paths(std::slice::from_ref(&path))?;
        encoded.push(partial.into_bytes());
        std::fs::remove_file(&path)?;
    }
    std::fs::remove_dir(&scratch)?;
    let making_s = made.elapsed().as_secs_f64();
    let partial_bytes: usize = encoded.iter().map(Vec::len).sum();

    // Timed: read back, merged, resolved.
    let started = Instant::now();
    let mut partials = Vec::with_capacity(count);
    for (index, bytes) in encoded.iter().enumerate() {
        partials.push(Partial::from_bytes(bytes, &format!("slice-{index}.part"))?);
    }
    let decoded = Instant::now();
    let merged = merge(partials)?;
    let merged_at = Instant::now();
    let run = merged.resolve(false)?;
    let resolved = Instant::now();

    // Untimed: the same file read whole, as one process reads it.
    let whole = Partial::of_paths(std::slice::from_ref(&artifact))?.resolve(false)?;
    let same = format!("{:?}", run.counts()) == format!("{:?}", whole.counts());
    println!(
        "{}",
        json!({
            "partials": count,
            "partial_bytes": partial_bytes,
            "input_bytes": std::fs::metadata(&artifact)?.len(),
            "events": merged.events(),
            "making_s": making_s,
            "decode_s": (decoded - started).as_secs_f64(),
            "merge_s": (merged_at - decoded).as_secs_f64(),
            "resolve_s": (resolved - merged_at).as_secs_f64(),
            "same_counts": same,
            "counts": format!("{:?}", run.counts()),
        })
    );
    Ok(())
}
