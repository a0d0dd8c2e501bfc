//! The profile itself: vertebrae's `ResourceProfile` and its parts, field for
//! field, serialized exactly as `dataclasses.asdict` writes them.
//!
//! Field order, names and nesting are vertebrae's. Loading follows
//! `resource_profile_from_dict`: nested parts are built with `Class(**dict)`,
//! so an unknown or missing required field is an error; a field whose default
//! is `None` may be absent or `null`, a field with another default may be
//! absent but not `null`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::adapter::{PROFILE_WINDOW, check_scope};
use super::status::{
    ArtifactStatus, DeviceMemoryStatus, FootprintStatus, HostMemoryStatus, PersistedStatus, ProfileStatus,
};
use tally_core::ValidationError;

/// Latency and throughput of the measured calls; vertebrae's `InferenceProfile`.
///
/// The seconds are vertebrae's floats, kept bit for bit so a loaded profile
/// writes back unchanged. The profiler measures integer nanoseconds and
/// converts once, when it builds this value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferenceProfile {
    /// `measured` when at least one materialized call was measured.
    pub status: ProfileStatus,
    /// Duration of the first materialized call.
    #[serde(default)]
    pub first_call_seconds: Option<f64>,
    /// Whether the first call also fitted the model.
    #[serde(default)]
    pub first_call_includes_fit: bool,
    /// Materialized calls after the first.
    #[serde(default)]
    pub warm_call_count: u64,
    /// Mean of the warm calls (numpy's `mean`).
    #[serde(default)]
    pub warm_mean_seconds: Option<f64>,
    /// Median of the warm calls (numpy's `median`).
    #[serde(default)]
    pub warm_median_seconds: Option<f64>,
    /// 95th percentile of the warm calls (numpy's linear `percentile`).
    #[serde(default)]
    pub warm_p95_seconds: Option<f64>,
    /// Slowest warm call.
    #[serde(default)]
    pub warm_max_seconds: Option<f64>,
    /// Total warm seconds over warm samples.
    #[serde(default)]
    pub warm_mean_seconds_per_sample: Option<f64>,
    /// Sum of all materialized call durations.
    #[serde(default)]
    pub total_materialized_seconds: Option<f64>,
    /// Samples over all materialized calls.
    #[serde(default)]
    pub materialized_samples: u64,
    /// `materialized_samples / total_materialized_seconds`.
    #[serde(default)]
    pub throughput_samples_per_second: Option<f64>,
    /// Samples of each materialized call, in call order.
    #[serde(default)]
    pub batch_sizes: Vec<u64>,
}

impl InferenceProfile {
    /// A profile with only a status (nothing measured).
    pub fn unmeasured(status: ProfileStatus) -> Self {
        Self {
            status,
            first_call_seconds: None,
            first_call_includes_fit: false,
            warm_call_count: 0,
            warm_mean_seconds: None,
            warm_median_seconds: None,
            warm_p95_seconds: None,
            warm_max_seconds: None,
            warm_mean_seconds_per_sample: None,
            total_materialized_seconds: None,
            materialized_samples: 0,
            throughput_samples_per_second: None,
            batch_sizes: Vec::new(),
        }
    }
}

/// Process memory over the profile window; vertebrae's `HostMemoryProfile`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostMemoryProfile {
    /// Whether host memory was measured.
    pub status: HostMemoryStatus,
    /// Resident set size when the first call began.
    #[serde(default)]
    pub baseline_rss_bytes: Option<u64>,
    /// Highest resident set size seen over the window.
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
    /// `max(0, peak - baseline)`.
    #[serde(default)]
    pub peak_increase_bytes: Option<u64>,
    /// The sampling period when a sampler measured; `null` when the kernel's
    /// high-water mark did (tally) — see the profile's `context`.
    #[serde(default)]
    pub sample_interval_seconds: Option<f64>,
}

impl HostMemoryProfile {
    /// A profile with only a status.
    pub fn unmeasured(status: HostMemoryStatus) -> Self {
        Self {
            status,
            baseline_rss_bytes: None,
            peak_rss_bytes: None,
            peak_increase_bytes: None,
            sample_interval_seconds: None,
        }
    }
}

/// Allocator memory of the device over the profile window; vertebrae's
/// `DeviceMemoryProfile`.
///
/// vertebrae's `measurement_scope` is `"profile_window"` exactly when the
/// status is `measured` and `null` otherwise (its `__post_init__` enforces
/// both), so tally derives it from the status instead of storing it: see
/// [`DeviceMemoryProfile::measurement_scope`]. It is written and checked on
/// load like any other field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawDeviceProfile", into = "RawDeviceProfile")]
pub struct DeviceMemoryProfile {
    /// What was measured.
    pub status: DeviceMemoryStatus,
    /// Framework name.
    pub backend: Option<String>,
    /// Device.
    pub device: Option<String>,
    /// Allocated bytes when the window opened.
    pub baseline_allocated_bytes: Option<u64>,
    /// Reserved bytes when the window opened.
    pub baseline_reserved_bytes: Option<u64>,
    /// Peak allocated bytes over the window.
    pub peak_allocated_bytes: Option<u64>,
    /// Peak reserved bytes over the window.
    pub peak_reserved_bytes: Option<u64>,
    /// `max(0, peak - baseline)` of allocated bytes, when both are known.
    pub peak_allocated_increase_bytes: Option<u64>,
    /// `max(0, peak - baseline)` of reserved bytes, when both are known.
    pub peak_reserved_increase_bytes: Option<u64>,
    /// Why nothing was measured.
    pub unavailable_reason: Option<String>,
}

impl DeviceMemoryProfile {
    /// A profile with a status and nothing else.
    pub fn unmeasured(status: DeviceMemoryStatus) -> Self {
        Self {
            status,
            backend: None,
            device: None,
            baseline_allocated_bytes: None,
            baseline_reserved_bytes: None,
            peak_allocated_bytes: None,
            peak_reserved_bytes: None,
            peak_allocated_increase_bytes: None,
            peak_reserved_increase_bytes: None,
            unavailable_reason: None,
        }
    }

    /// `Some("profile_window")` when measured, else `None`.
    pub fn measurement_scope(&self) -> Option<&'static str> {
        (self.status == DeviceMemoryStatus::Measured).then_some(PROFILE_WINDOW)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDeviceProfile {
    status: DeviceMemoryStatus,
    #[serde(default)]
    backend: Option<String>,
    #[serde(default)]
    device: Option<String>,
    #[serde(default)]
    baseline_allocated_bytes: Option<u64>,
    #[serde(default)]
    baseline_reserved_bytes: Option<u64>,
    #[serde(default)]
    peak_allocated_bytes: Option<u64>,
    #[serde(default)]
    peak_reserved_bytes: Option<u64>,
    #[serde(default)]
    peak_allocated_increase_bytes: Option<u64>,
    #[serde(default)]
    peak_reserved_increase_bytes: Option<u64>,
    #[serde(default)]
    measurement_scope: Option<String>,
    #[serde(default)]
    unavailable_reason: Option<String>,
}

impl TryFrom<RawDeviceProfile> for DeviceMemoryProfile {
    type Error = ValidationError;
    fn try_from(raw: RawDeviceProfile) -> Result<Self, ValidationError> {
        let measured = raw.status == DeviceMemoryStatus::Measured;
        check_scope("DeviceMemoryProfile", measured, raw.measurement_scope.as_deref(), "a scope")?;
        Ok(Self {
            status: raw.status,
            backend: raw.backend,
            device: raw.device,
            baseline_allocated_bytes: raw.baseline_allocated_bytes,
            baseline_reserved_bytes: raw.baseline_reserved_bytes,
            peak_allocated_bytes: raw.peak_allocated_bytes,
            peak_reserved_bytes: raw.peak_reserved_bytes,
            peak_allocated_increase_bytes: raw.peak_allocated_increase_bytes,
            peak_reserved_increase_bytes: raw.peak_reserved_increase_bytes,
            unavailable_reason: raw.unavailable_reason,
        })
    }
}

impl From<DeviceMemoryProfile> for RawDeviceProfile {
    fn from(value: DeviceMemoryProfile) -> Self {
        Self {
            measurement_scope: value.measurement_scope().map(str::to_owned),
            status: value.status,
            backend: value.backend,
            device: value.device,
            baseline_allocated_bytes: value.baseline_allocated_bytes,
            baseline_reserved_bytes: value.baseline_reserved_bytes,
            peak_allocated_bytes: value.peak_allocated_bytes,
            peak_reserved_bytes: value.peak_reserved_bytes,
            peak_allocated_increase_bytes: value.peak_allocated_increase_bytes,
            peak_reserved_increase_bytes: value.peak_reserved_increase_bytes,
            unavailable_reason: value.unavailable_reason,
        }
    }
}

/// The measured footprint of one declared deployment artifact; vertebrae's
/// `ArtifactFootprint`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactFootprint {
    /// The path as declared.
    pub path: String,
    /// The path with `~` expanded and symlinks resolved.
    pub resolved_path: String,
    /// The declared role.
    pub role: String,
    /// Whether the declaration asked for a recursive walk.
    pub recursive: bool,
    /// The outcome.
    pub status: ArtifactStatus,
    /// Bytes counted for this declaration (files counted earlier excluded).
    #[serde(default)]
    pub bytes: u64,
    /// Files counted for this declaration.
    #[serde(default)]
    pub file_count: u64,
    /// Why the artifact was not (fully) measured.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Parameters, in-memory state and checkpoint size of the model; vertebrae's
/// `ModelFootprint`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFootprint {
    /// `measured` when both parameters and checkpoint are, `partial` when one is.
    pub status: FootprintStatus,
    /// Whether the adapter measured the parameters (`measured` or `unavailable`).
    #[serde(default = "unavailable")]
    pub parameter_status: FootprintStatus,
    /// Outcome over the declared deployment artifacts.
    #[serde(default = "unavailable")]
    pub checkpoint_status: FootprintStatus,
    /// Number of parameters.
    #[serde(default)]
    pub parameter_count: Option<u64>,
    /// Bytes of the parameters.
    #[serde(default)]
    pub parameter_bytes: Option<u64>,
    /// Number of trainable parameters.
    #[serde(default)]
    pub trainable_parameter_count: Option<u64>,
    /// Bytes of the trainable parameters.
    #[serde(default)]
    pub trainable_parameter_bytes: Option<u64>,
    /// Bytes of non-parameter buffers.
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    /// Bytes of model state in memory.
    #[serde(default)]
    pub in_memory_bytes: Option<u64>,
    /// Bytes of the measured and partially measured artifacts.
    #[serde(default)]
    pub checkpoint_bytes: Option<u64>,
    /// Dtypes of the weights.
    #[serde(default)]
    pub weight_dtypes: Vec<String>,
    /// One entry per declared artifact, in declaration order.
    #[serde(default)]
    pub artifacts: Vec<ArtifactFootprint>,
}

fn unavailable() -> FootprintStatus {
    FootprintStatus::Unavailable
}

impl ModelFootprint {
    /// A footprint with a status and vertebrae's defaults for the rest.
    pub fn unmeasured(status: FootprintStatus) -> Self {
        Self {
            status,
            parameter_status: FootprintStatus::Unavailable,
            checkpoint_status: FootprintStatus::Unavailable,
            parameter_count: None,
            parameter_bytes: None,
            trainable_parameter_count: None,
            trainable_parameter_bytes: None,
            buffer_bytes: None,
            in_memory_bytes: None,
            checkpoint_bytes: None,
            weight_dtypes: Vec::new(),
            artifacts: Vec::new(),
        }
    }
}

/// Size of one persisted embedding array; vertebrae's
/// `PersistedArtifactFootprint`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersistedArtifactFootprint {
    /// The outcome.
    pub status: PersistedStatus,
    /// Bytes on storage.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Where the array is stored.
    #[serde(default)]
    pub uri: Option<String>,
    /// Storage format, e.g. `npy` or `npz`.
    #[serde(default)]
    pub storage_format: Option<String>,
    /// Why the size is unavailable.
    #[serde(default)]
    pub reason: Option<String>,
}

impl PersistedArtifactFootprint {
    /// A footprint with a status and nothing else.
    pub fn with_status(status: PersistedStatus) -> Self {
        Self { status, bytes: None, uri: None, storage_format: None, reason: None }
    }
}

/// Resident and persisted size of the embeddings a run produced; vertebrae's
/// `EmbeddingFootprint`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingFootprint {
    /// Resident bytes of the raw embeddings.
    pub raw_bytes: u64,
    /// Resident bytes of the evaluated (e.g. compressed) embeddings.
    pub evaluated_bytes: u64,
    /// `evaluated_bytes / rows`, `0.0` without rows.
    pub bytes_per_embedding: f64,
    /// `1 - evaluated_bytes / raw_bytes`, `0.0` when `raw_bytes` is 0.
    pub compression_savings_ratio: f64,
    /// Persisted size of the raw embeddings.
    #[serde(default)]
    pub raw_persisted: Option<PersistedArtifactFootprint>,
    /// Persisted size of the evaluated embeddings.
    #[serde(default)]
    pub evaluated_persisted: Option<PersistedArtifactFootprint>,
}

/// A measured inference-resource profile of one local profiling window;
/// vertebrae's `ResourceProfile`.
///
/// ```
/// use tally_profile::profile::{ProfileStatus, ResourceProfile};
/// let text = r#"{"status": "not_measured",
///   "inference": {"status": "not_measured"}, "host_memory": {"status": "disabled"},
///   "device_memory": {"status": "disabled"}, "model": {"status": "unavailable"},
///   "embedding": null}"#;
/// let profile = ResourceProfile::from_json_str(text).unwrap();
/// assert_eq!(profile.status, ProfileStatus::NotMeasured);
/// assert!(profile.context.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceProfile {
    /// `measured` when any call was measured.
    #[serde(default = "not_measured")]
    pub status: ProfileStatus,
    /// Latency and throughput.
    pub inference: InferenceProfile,
    /// Process memory.
    pub host_memory: HostMemoryProfile,
    /// Device allocator memory.
    pub device_memory: DeviceMemoryProfile,
    /// Model and deployment-artifact footprint.
    pub model: ModelFootprint,
    /// Embedding footprint, added after the run by `with_embedding_footprint`.
    #[serde(default)]
    pub embedding: Option<EmbeddingFootprint>,
    /// How the profile was taken: vertebrae's keys, tally's
    /// `host_memory_method`, and the caller's own context.
    #[serde(default)]
    pub context: Map<String, Value>,
    /// Sorted, de-duplicated warnings.
    #[serde(default)]
    pub warnings: Vec<String>,
}

fn not_measured() -> ProfileStatus {
    ProfileStatus::NotMeasured
}
