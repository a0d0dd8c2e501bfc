//! vertebrae's `LatencyDistribution` and `DistributedResourceProfile`, and
//! their JSON: `dataclasses.asdict` on write, `distributed_resource_profile_from_dict`
//! on load.

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use tally_core::ValidationError;
use tally_profile::profile::{EmbeddingFootprint, ModelFootprint, check_finite_float};

/// The `scope` every distributed profile writes, and the
/// `context.measurement_scope` of an aggregate.
pub const DISTRIBUTED_SCOPE: &str = "distributed_shards";

/// The `context.throughput_kind` of an aggregate: throughput is samples over
/// the summed compute time of the workers, not over wall-clock time.
pub const THROUGHPUT_KIND: &str = "aggregate_compute";

/// Distribution of one latency over workers; vertebrae's `LatencyDistribution`.
///
/// `median_seconds` and `p95_seconds` are numpy's `median` and
/// `percentile(.., 95)` (linear interpolation) over the values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyDistribution {
    /// How many values the distribution has.
    #[serde(default)]
    pub count: u64,
    /// The median.
    #[serde(default)]
    pub median_seconds: Option<f64>,
    /// The 95th percentile, linearly interpolated.
    #[serde(default)]
    pub p95_seconds: Option<f64>,
    /// The largest value.
    #[serde(default)]
    pub max_seconds: Option<f64>,
}

tally_core::string_enum!(
    /// `DistributedResourceProfile.status`: how many of the shards reported a
    /// measured profile.
    DistributedStatus, "status",
    "DistributedResourceProfile.status must be 'measured', 'partial', or 'not_measured'.",
    {
        /// Every shard's worker measured.
        Measured = "measured",
        /// Some, not all, did.
        Partial = "partial",
        /// None did.
        NotMeasured = "not_measured",
    }
);

fn not_measured() -> DistributedStatus {
    DistributedStatus::NotMeasured
}

/// The aggregation of independent worker-local profiling windows;
/// vertebrae's `DistributedResourceProfile`.
///
/// It is deliberately not a [`ResourceProfile`](tally_profile::profile::ResourceProfile):
/// the workers ran apart, so there is no single first call, wall-clock
/// throughput or process peak, only their distribution and sums.
///
/// Its JSON is `dataclasses.asdict` of vertebrae's: the same fields in the
/// same order, `scope` last and always `"distributed_shards"` (so it is not
/// stored). Loading follows `distributed_resource_profile_from_dict`: every
/// field may be absent (defaults as vertebrae's), unknown top-level keys and
/// the value of `scope` are ignored, nested parts are strict.
///
/// ```
/// use tally_distributed::{DistributedResourceProfile, DistributedStatus};
/// let profile = DistributedResourceProfile::from_json_str(r#"{"shard_count": 2, "status": "partial"}"#)?;
/// assert_eq!(profile.status, DistributedStatus::Partial);
/// assert_eq!(profile.worker_first_calls.count, 0);
/// let json = profile.to_json_value()?;
/// assert_eq!(json["scope"], "distributed_shards");
/// assert_eq!(json["model"], serde_json::Value::Null);
/// # Ok::<(), tally_core::ValidationError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DistributedResourceProfile {
    /// Whether every shard, some, or none was measured.
    #[serde(default = "not_measured")]
    pub status: DistributedStatus,
    /// Shards the work was split into (reported or not).
    #[serde(default)]
    pub shard_count: u64,
    /// Shards whose worker reported a measured profile.
    #[serde(default)]
    pub profiled_shard_count: u64,
    /// First-call latency over the measured workers that had one.
    #[serde(default)]
    pub worker_first_calls: LatencyDistribution,
    /// Sum of the measured workers' materialized seconds; `None` when no
    /// worker measured.
    #[serde(default)]
    pub total_compute_seconds: Option<f64>,
    /// Samples over the measured workers.
    #[serde(default)]
    pub materialized_samples: u64,
    /// `materialized_samples / total_compute_seconds`, when the latter is positive.
    #[serde(default)]
    pub aggregate_compute_throughput_samples_per_second: Option<f64>,
    /// Warm calls over the measured workers.
    #[serde(default)]
    pub warm_call_count: u64,
    /// The warm mean weighted by each worker's warm call count.
    #[serde(default)]
    pub warm_mean_seconds: Option<f64>,
    /// The largest peak RSS of a measured worker.
    #[serde(default)]
    pub max_worker_peak_rss_bytes: Option<u64>,
    /// The shard that had it (the first in order on ties).
    #[serde(default)]
    pub max_worker_peak_rss_shard_key: Option<String>,
    /// The largest peak device allocation of a measured worker.
    #[serde(default)]
    pub max_worker_peak_device_allocated_bytes: Option<u64>,
    /// The shard that had it (the first in order on ties).
    #[serde(default)]
    pub max_worker_peak_device_shard_key: Option<String>,
    /// The model footprint every measuring worker agreed on.
    #[serde(default)]
    pub model: Option<ModelFootprint>,
    /// The merged embeddings' footprint.
    #[serde(default)]
    pub embedding: Option<EmbeddingFootprint>,
    /// Sum of the shards' measured persisted embedding sizes.
    #[serde(default)]
    pub shard_persisted_bytes: Option<u64>,
    /// Every shard, in order.
    #[serde(default)]
    pub shard_keys: Vec<String>,
    /// `measurement_scope` and `throughput_kind` for an aggregate.
    #[serde(default)]
    pub context: Map<String, Value>,
    /// Sorted, de-duplicated warnings of every worker.
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl Serialize for DistributedResourceProfile {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("DistributedResourceProfile", 20)?;
        state.serialize_field("status", &self.status)?;
        state.serialize_field("shard_count", &self.shard_count)?;
        state.serialize_field("profiled_shard_count", &self.profiled_shard_count)?;
        state.serialize_field("worker_first_calls", &self.worker_first_calls)?;
        state.serialize_field("total_compute_seconds", &self.total_compute_seconds)?;
        state.serialize_field("materialized_samples", &self.materialized_samples)?;
        state.serialize_field(
            "aggregate_compute_throughput_samples_per_second",
            &self.aggregate_compute_throughput_samples_per_second,
        )?;
        state.serialize_field("warm_call_count", &self.warm_call_count)?;
        state.serialize_field("warm_mean_seconds", &self.warm_mean_seconds)?;
        state.serialize_field("max_worker_peak_rss_bytes", &self.max_worker_peak_rss_bytes)?;
        state.serialize_field("max_worker_peak_rss_shard_key", &self.max_worker_peak_rss_shard_key)?;
        state.serialize_field(
            "max_worker_peak_device_allocated_bytes",
            &self.max_worker_peak_device_allocated_bytes,
        )?;
        state.serialize_field("max_worker_peak_device_shard_key", &self.max_worker_peak_device_shard_key)?;
        state.serialize_field("model", &self.model)?;
        state.serialize_field("embedding", &self.embedding)?;
        state.serialize_field("shard_persisted_bytes", &self.shard_persisted_bytes)?;
        state.serialize_field("shard_keys", &self.shard_keys)?;
        state.serialize_field("context", &self.context)?;
        state.serialize_field("warnings", &self.warnings)?;
        state.serialize_field("scope", DISTRIBUTED_SCOPE)?;
        state.end()
    }
}

/// How a load error names a [`DistributedResourceProfile`].
const DISTRIBUTED_PROFILE: &str = "distributed resource profile";

impl DistributedResourceProfile {
    /// A profile of `shard_count` shards with nothing measured, and
    /// vertebrae's defaults everywhere else.
    pub fn empty(shard_count: u64) -> Self {
        Self {
            status: DistributedStatus::NotMeasured,
            shard_count,
            profiled_shard_count: 0,
            worker_first_calls: LatencyDistribution::default(),
            total_compute_seconds: None,
            materialized_samples: 0,
            aggregate_compute_throughput_samples_per_second: None,
            warm_call_count: 0,
            warm_mean_seconds: None,
            max_worker_peak_rss_bytes: None,
            max_worker_peak_rss_shard_key: None,
            max_worker_peak_device_allocated_bytes: None,
            max_worker_peak_device_shard_key: None,
            model: None,
            embedding: None,
            shard_persisted_bytes: None,
            shard_keys: Vec::new(),
            context: Map::new(),
            warnings: Vec::new(),
        }
    }

    /// Always `"distributed_shards"`.
    pub fn scope(&self) -> &'static str {
        DISTRIBUTED_SCOPE
    }

    tally_profile::profile_json_methods!(DISTRIBUTED_PROFILE);

    /// Every float field is finite.
    pub fn check_finite(&self) -> Result<(), ValidationError> {
        let first = &self.worker_first_calls;
        let floats = [
            ("worker_first_calls.median_seconds", first.median_seconds),
            ("worker_first_calls.p95_seconds", first.p95_seconds),
            ("worker_first_calls.max_seconds", first.max_seconds),
            ("total_compute_seconds", self.total_compute_seconds),
            (
                "aggregate_compute_throughput_samples_per_second",
                self.aggregate_compute_throughput_samples_per_second,
            ),
            ("warm_mean_seconds", self.warm_mean_seconds),
        ];
        for (name, value) in floats {
            check_finite_float(name, value)?;
        }
        match &self.embedding {
            Some(embedding) => embedding.check_finite(),
            None => Ok(()),
        }
    }
}

/// vertebrae's `distributed_resource_profile_from_dict` on decoded JSON.
pub fn distributed_resource_profile_from_dict(
    value: Value,
) -> Result<DistributedResourceProfile, ValidationError> {
    DistributedResourceProfile::from_json_value(value)
}
