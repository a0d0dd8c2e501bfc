//! Either profile scope: loading (`resource_profile_like_from_dict`),
//! columns (`resource_profile_columns`), and the distributed variant of
//! `with_embedding_footprint`.

use serde_json::{Value, json};
use tally_core::ValidationError;
use tally_profile::profile::{ResourceProfile, common_profile_columns, resource_profile_columns};
use tally_profile::{EmbeddingError, EmbeddingSize, PersistedSizes, set_embedding_footprint};

use crate::types::{DISTRIBUTED_SCOPE, DistributedResourceProfile};

/// vertebrae's `ResourceProfileLike`: a local profile or a distributed
/// aggregate.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceProfileLike {
    /// One local profiling window.
    Local(ResourceProfile),
    /// An aggregate of worker-local windows.
    Distributed(DistributedResourceProfile),
}

impl ResourceProfileLike {
    /// vertebrae's `resource_profile_like_from_dict`: distributed when
    /// `scope` is `"distributed_shards"` or `shard_count` is present
    /// (even `null`), local otherwise.
    ///
    /// ```
    /// use tally_distributed::ResourceProfileLike;
    /// let value = serde_json::json!({"shard_count": 4});
    /// assert!(matches!(ResourceProfileLike::from_json_value(value)?, ResourceProfileLike::Distributed(_)));
    /// # Ok::<(), tally_core::ValidationError>(())
    /// ```
    pub fn from_json_value(value: Value) -> Result<Self, ValidationError> {
        let distributed = match &value {
            Value::Object(map) => {
                map.get("scope").and_then(Value::as_str) == Some(DISTRIBUTED_SCOPE)
                    || map.contains_key("shard_count")
            }
            _ => false,
        };
        if distributed {
            DistributedResourceProfile::from_json_value(value).map(Self::Distributed)
        } else {
            ResourceProfile::from_json_value(value).map(Self::Local)
        }
    }

    /// Loads either scope from JSON text.
    pub fn from_json_str(text: &str) -> Result<Self, ValidationError> {
        let value: Value = serde_json::from_str(&tally_utils::json_text::pythonic_json_text(text))
            .map_err(|error| ValidationError::new("profile", format!("invalid resource profile: {error}")))?;
        Self::from_json_value(value)
    }

    /// `dataclasses.asdict` of the profile.
    pub fn to_json_value(&self) -> Result<Value, ValidationError> {
        match self {
            Self::Local(profile) => profile.to_json_value(),
            Self::Distributed(profile) => profile.to_json_value(),
        }
    }

    /// vertebrae's `resource_profile_columns` for either scope.
    pub fn columns(&self, prefix: &str) -> Vec<(String, Value)> {
        match self {
            Self::Local(profile) => resource_profile_columns(profile, prefix),
            Self::Distributed(profile) => distributed_resource_profile_columns(profile, prefix),
        }
    }
}

/// vertebrae's `resource_profile_like_from_dict`; `None` in, `None` out.
pub fn resource_profile_like_from_dict(
    value: Option<Value>,
) -> Result<Option<ResourceProfileLike>, ValidationError> {
    value.map(ResourceProfileLike::from_json_value).transpose()
}

/// The distributed branch of vertebrae's `resource_profile_columns`, in its
/// order: the columns every scope shares, then the worker first-call
/// median, p95 and max, aggregate throughput, and the two worker peaks.
///
/// ```
/// use tally_distributed::{distributed_resource_profile_columns, DistributedResourceProfile};
/// let columns = distributed_resource_profile_columns(&DistributedResourceProfile::empty(2), "rp_");
/// assert_eq!(columns[0], ("rp_resource_profile_scope".to_owned(), "distributed_shards".into()));
/// assert_eq!(columns.len(), 10);
/// ```
pub fn distributed_resource_profile_columns(
    profile: &DistributedResourceProfile,
    prefix: &str,
) -> Vec<(String, Value)> {
    let mut columns = common_profile_columns(DISTRIBUTED_SCOPE, profile.embedding.as_ref(), prefix);
    let first = &profile.worker_first_calls;
    columns.extend([
        (format!("{prefix}worker_first_call_median_seconds"), json!(first.median_seconds)),
        (format!("{prefix}worker_first_call_p95_seconds"), json!(first.p95_seconds)),
        (format!("{prefix}worker_first_call_max_seconds"), json!(first.max_seconds)),
        (
            format!("{prefix}aggregate_compute_throughput_samples_per_second"),
            json!(profile.aggregate_compute_throughput_samples_per_second),
        ),
        (format!("{prefix}max_worker_peak_rss_bytes"), json!(profile.max_worker_peak_rss_bytes)),
        (
            format!("{prefix}max_worker_peak_device_allocated_bytes"),
            json!(profile.max_worker_peak_device_allocated_bytes),
        ),
    ]);
    columns
}

/// vertebrae's `with_distributed_embedding_footprint`: the aggregate with
/// the footprint of a variant's raw and evaluated embeddings instead of the
/// merged ones, and the store's warnings merged (sorted, de-duplicated); the
/// distributed inference evidence is kept. `None` in, `None` out, without
/// looking at the metadata, as vertebrae does.
pub fn with_distributed_embedding_footprint(
    profile: Option<DistributedResourceProfile>,
    raw: &(impl EmbeddingSize + ?Sized),
    evaluated: &(impl EmbeddingSize + ?Sized),
    persisted: &PersistedSizes<'_>,
) -> Result<Option<DistributedResourceProfile>, EmbeddingError> {
    let Some(mut profile) = profile else {
        return Ok(None);
    };
    set_embedding_footprint(&mut profile.embedding, &mut profile.warnings, raw, evaluated, persisted)?;
    Ok(Some(profile))
}
