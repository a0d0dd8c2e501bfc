//! `tally aggregate`: combine worker-local resource profiles into vertebrae
//! 1.1.0's `DistributedResourceProfile`.
//!
//! Two ways in:
//!
//! - `tally aggregate --request FILE` reads the whole call as JSON
//!   (`{"profiles": [[shard_key, profile], ...], "all_shard_keys": [...],
//!   "merged_embeddings": {shape, dtype, sparse, nnz}, ...}`, see
//!   `tally_distributed::AggregateRequest`) and prints the aggregate as
//!   JSON (`--format table` for people);
//! - `tally aggregate PROFILE.json... --merged-shape ROWS,COLS --dtype D`
//!   takes one profile file per worker (shard key: the file name without
//!   `.json`, or `--shard-keys`) and prints a table (`--format json` for the
//!   JSON).
//!
//! An invalid request or profile, or workers that disagree on the model,
//! exit 1 with the reason on stderr and nothing on stdout.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use tally_distributed::{AggregateError, AggregateOptions, AggregateRequest, DistributedResourceProfile};
use tally_profile::profile::ResourceProfile;
use tally_profile::{EmbeddingMetadata, EmbeddingStore, LocalEmbeddingStore};

use super::Layout;
use super::readable::{model_summary, optional_bytes, readable_bytes, seconds, write_warnings};

/// Arguments of `tally aggregate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Worker profiles (vertebrae's `ResourceProfile` JSON), one per shard,
    /// in shard order.
    #[arg(conflicts_with = "request", required_unless_present = "request")]
    pub profiles: Vec<PathBuf>,
    /// A JSON request: profiles, all shard keys and merged-embedding
    /// metadata in one file (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    pub request: Option<PathBuf>,
    /// Shape of the merged embeddings: `ROWS,COLS`.
    #[arg(long, value_name = "ROWS,COLS", value_parser = parse_shape, required_unless_present = "request")]
    pub merged_shape: Option<(u64, u64)>,
    /// numpy dtype of the merged embeddings.
    #[arg(long, default_value = "float32")]
    pub dtype: String,
    /// The merged embeddings are CSR sparse with this many stored values.
    #[arg(long, value_name = "NNZ")]
    pub sparse_nnz: Option<u64>,
    /// Shard keys of the profile files, comma-separated, in file order
    /// (default: each file's name without `.json`).
    #[arg(long, value_name = "KEYS", value_delimiter = ',')]
    pub shard_keys: Vec<String>,
    /// Every shard of the job, comma-separated: shards without a profile
    /// count as not profiled.
    #[arg(long, value_name = "KEYS", value_delimiter = ',')]
    pub all_shard_keys: Vec<String>,
    /// A vertebrae `LocalEmbeddingStore` directory holding the merged
    /// embeddings under `--merged-key` (or the request's `merged_key`).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// Key of the merged embeddings in `--store`.
    #[arg(long, value_name = "KEY")]
    pub merged_key: Option<String>,
    /// Output format (default: `json` with `--request`, `table` otherwise).
    #[arg(long, value_enum)]
    pub format: Option<Layout>,
    #[command(flatten)]
    pub limits: super::output::LimitArgs,
}

fn parse_shape(text: &str) -> Result<(u64, u64), String> {
    let (rows, cols) = text.split_once(',').ok_or("expected ROWS,COLS")?;
    let number = |part: &str| part.trim().parse::<u64>().map_err(|_| format!("not a size: {part:?}"));
    Ok((number(rows)?, number(cols)?))
}

/// What the command aggregates, from either way in.
fn build_request(args: &Args) -> Result<AggregateRequest, String> {
    if let Some(path) = &args.request {
        let text = super::output::read_document_text(path, args.limits.max_document_bytes)?;
        let mut request =
            AggregateRequest::from_json_str(&text).map_err(|error| format!("{}: {error}", path.display()))?;
        if args.merged_key.is_some() {
            request.merged_key.clone_from(&args.merged_key);
        }
        return Ok(request);
    }
    if !args.shard_keys.is_empty() && args.shard_keys.len() != args.profiles.len() {
        return Err(format!(
            "--shard-keys names {} shards for {} profile files",
            args.shard_keys.len(),
            args.profiles.len()
        ));
    }
    let mut profiles = Vec::with_capacity(args.profiles.len());
    for (index, path) in args.profiles.iter().enumerate() {
        let text = super::output::read_document_text(path, args.limits.max_document_bytes)?;
        let profile =
            ResourceProfile::from_json_str(&text).map_err(|error| format!("{}: {error}", path.display()))?;
        let key = match args.shard_keys.get(index) {
            Some(key) => key.clone(),
            None => {
                let name =
                    path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
                name.strip_suffix(".json").map(str::to_owned).unwrap_or(name)
            }
        };
        profiles.push((key, profile));
    }
    let (rows, cols) = args.merged_shape.ok_or("--merged-shape ROWS,COLS is required")?;
    let merged_embeddings = match args.sparse_nnz {
        Some(nnz) => EmbeddingMetadata::sparse(rows, cols, &args.dtype, nnz),
        None => EmbeddingMetadata::dense(rows, cols, &args.dtype),
    };
    Ok(AggregateRequest {
        profiles,
        all_shard_keys: (!args.all_shard_keys.is_empty()).then(|| args.all_shard_keys.clone()),
        merged_embeddings,
        merged_key: args.merged_key.clone(),
        merged_stat: None,
        persisted_storage: true,
    })
}

/// Runs the command: exit 0 with the aggregate, 1 with the reason.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let request = match build_request(args) {
        Ok(request) => request,
        Err(message) => {
            eprintln!("tally aggregate: {message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let store = args.store.as_ref().map(LocalEmbeddingStore::new);
    let store = store.as_ref().map(|store| store as &dyn EmbeddingStore);
    let options: AggregateOptions<'_> = request.options(store);
    // Thousands of workers aggregate faster on every core; the result is the same.
    let aggregate = match tally_distributed::aggregate_distributed_resource_profiles_parallel(
        &request.profiles,
        &request.merged_embeddings,
        &options,
    ) {
        Ok(aggregate) => aggregate,
        Err(error) => {
            let detail = match &error {
                AggregateError::InconsistentModelFootprint { first_shard, other_shard } => {
                    format!(" (shard {other_shard:?} reports another model than shard {first_shard:?})")
                }
                _ => String::new(),
            };
            // Name where the bad value came from: the request file, or the
            // flags that describe the merged embeddings.
            let origin = match (&args.request, &error) {
                (Some(path), _) => format!("{}: ", path.display()),
                (None, AggregateError::Embedding(_)) => "--merged-shape/--dtype/--sparse-nnz: ".to_owned(),
                // The shards the detail names are the profile files given.
                (None, _) => String::new(),
            };
            eprintln!("tally aggregate: {origin}{error}{detail}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let layout = args.format.unwrap_or(if args.request.is_some() { Layout::Json } else { Layout::Table });
    let text = match layout {
        Layout::Json => aggregate.to_json_string().context("writing the aggregate as JSON")? + "\n",
        Layout::Table => table(&aggregate),
    };
    super::output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn held_by(key: &Option<String>) -> String {
    key.as_ref().map(|key| format!(" (shard {key})")).unwrap_or_default()
}

fn table(profile: &DistributedResourceProfile) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let mut line = |text: String| {
        let _ = writeln!(out, "{text}");
    };
    line(format!(
        "status             {}: {} of {} shards profiled",
        profile.status, profile.profiled_shard_count, profile.shard_count
    ));
    let first = &profile.worker_first_calls;
    line(format!(
        "worker first call  median {}  p95 {}  max {}  ({} workers)",
        seconds(first.median_seconds),
        seconds(first.p95_seconds),
        seconds(first.max_seconds),
        first.count
    ));
    line(format!(
        "compute            {} summed over workers, {} samples, {}",
        seconds(profile.total_compute_seconds),
        profile.materialized_samples,
        profile
            .aggregate_compute_throughput_samples_per_second
            .map_or_else(|| "-".to_owned(), |rate| format!("{rate:.1} samples/s of compute"))
    ));
    line(format!(
        "warm calls         {}, call-weighted mean {}",
        profile.warm_call_count,
        seconds(profile.warm_mean_seconds)
    ));
    line(format!(
        "max worker RSS     {}{}",
        optional_bytes(profile.max_worker_peak_rss_bytes),
        held_by(&profile.max_worker_peak_rss_shard_key)
    ));
    line(format!(
        "max worker device  {}{}",
        optional_bytes(profile.max_worker_peak_device_allocated_bytes),
        held_by(&profile.max_worker_peak_device_shard_key)
    ));
    match &profile.model {
        Some(model) => line(format!("model              {}", model_summary(model))),
        None => line("model              - (no measured worker reported one)".to_owned()),
    }
    if let Some(embedding) = &profile.embedding {
        let persisted = embedding.evaluated_persisted.as_ref();
        line(format!(
            "merged embeddings  {} resident, {:.1} B per embedding; persisted {}{}",
            readable_bytes(embedding.evaluated_bytes),
            embedding.bytes_per_embedding,
            persisted.map_or("-", |persisted| persisted.status.as_str()),
            persisted
                .and_then(|persisted| persisted.bytes)
                .map(|size| format!(" {}", readable_bytes(size)))
                .unwrap_or_default()
        ));
    }
    line(format!("shard persisted    {}", optional_bytes(profile.shard_persisted_bytes)));
    line(format!("shards             {}", profile.shard_keys.join(", ")));
    write_warnings(&mut out, &profile.warnings);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_two_sizes() {
        assert_eq!(parse_shape("10,384"), Ok((10, 384)));
        assert!(parse_shape("10").is_err());
        assert!(parse_shape("10,x").is_err());
    }

    #[test]
    fn an_empty_aggregate_prints_dashes() {
        let text = table(&DistributedResourceProfile::empty(2));
        assert!(text.starts_with("status             not_measured: 0 of 2 shards profiled"), "{text}");
        assert!(text.contains("max worker RSS     -\n"), "{text}");
    }
}
