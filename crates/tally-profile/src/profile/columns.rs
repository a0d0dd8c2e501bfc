//! vertebrae's `resource_profile_columns`: a profile flattened for result
//! tables.

use serde_json::{Value, json};

use super::types::{EmbeddingFootprint, ResourceProfile};

/// The scope column of a local profile.
pub const LOCAL_SCOPE: &str = "local";

/// The columns every profile scope shares: scope and embedding sizes, in
/// vertebrae's order. Public so the distributed aggregation can build its own
/// column set on top with `scope` `"distributed_shards"`.
pub fn common_profile_columns(
    scope: &str,
    embedding: Option<&EmbeddingFootprint>,
    prefix: &str,
) -> Vec<(String, Value)> {
    let persisted = embedding.and_then(|embedding| embedding.evaluated_persisted.as_ref());
    vec![
        (format!("{prefix}resource_profile_scope"), json!(scope)),
        (format!("{prefix}embedding_logical_bytes"), json!(embedding.map(|e| e.evaluated_bytes))),
        (format!("{prefix}embedding_persisted_bytes"), json!(persisted.and_then(|p| p.bytes))),
        (format!("{prefix}embedding_persisted_status"), json!(persisted.map(|p| p.status.as_str()))),
    ]
}

/// The stable fields of a local profile as `(column, value)` pairs, in the
/// order vertebrae's `resource_profile_columns` returns them.
///
/// ```
/// use tally_profile::profile::{resource_profile_columns, ResourceProfile};
/// let profile = ResourceProfile::from_json_str(r#"{"inference": {"status": "not_measured"},
///   "host_memory": {"status": "disabled"}, "device_memory": {"status": "disabled"},
///   "model": {"status": "unavailable"}, "context": {"cache_status": "not_used"}}"#).unwrap();
/// let columns = resource_profile_columns(&profile, "rp_");
/// assert_eq!(columns[0].0, "rp_resource_profile_scope");
/// assert!(columns.iter().any(|(name, value)| name == "rp_cache_status" && value == "not_used"));
/// ```
pub fn resource_profile_columns(profile: &ResourceProfile, prefix: &str) -> Vec<(String, Value)> {
    let mut columns = common_profile_columns(LOCAL_SCOPE, profile.embedding.as_ref(), prefix);
    let inference = &profile.inference;
    let context = |key: &str| profile.context.get(key).cloned().unwrap_or(Value::Null);
    columns.extend([
        (format!("{prefix}first_call_seconds"), json!(inference.first_call_seconds)),
        (format!("{prefix}warm_median_seconds"), json!(inference.warm_median_seconds)),
        (format!("{prefix}warm_p95_seconds"), json!(inference.warm_p95_seconds)),
        (format!("{prefix}throughput_samples_per_second"), json!(inference.throughput_samples_per_second)),
        (format!("{prefix}peak_host_rss_bytes"), json!(profile.host_memory.peak_rss_bytes)),
        (format!("{prefix}peak_device_allocated_bytes"), json!(profile.device_memory.peak_allocated_bytes)),
        (format!("{prefix}batch_sizes"), json!(inference.batch_sizes)),
        (format!("{prefix}cache_status"), context("cache_status")),
        (format!("{prefix}synchronization_status"), context("synchronization_status")),
        (format!("{prefix}modality"), context("modality")),
        (format!("{prefix}branch"), context("branch")),
        (format!("{prefix}measurement_scope"), context("measurement_scope")),
        (format!("{prefix}process_first_inference"), context("process_first_inference")),
    ]);
    columns
}
