//! The request `tally aggregate --request FILE` reads: worker profiles and
//! the keyword arguments of the aggregation, as one JSON object.

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use tally_profile::profile::ResourceProfile;
use tally_profile::{EmbeddingMetadata, EmbeddingStore, StoredEmbeddingStat};

use crate::aggregate::{
    AggregateError, AggregateOptions, aggregate_distributed_resource_profiles,
    aggregate_distributed_resource_profiles_parallel,
};
use crate::types::DistributedResourceProfile;

/// Why a request could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct RequestError {
    /// Where in the request, e.g. `profiles[3][1]`.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

fn error(path: impl Into<String>, message: impl Into<String>) -> RequestError {
    RequestError { path: path.into(), message: message.into() }
}

/// A parsed aggregation request:
///
/// ```json
/// {"profiles": [["shard-0", {...ResourceProfile...}], ...],
///  "all_shard_keys": ["shard-0", "shard-1"],
///  "merged_embeddings": {"shape": [rows, cols], "dtype": "float32", "sparse": false, "nnz": null},
///  "merged_key": "emb/merged",
///  "merged_stat": {"uri": "...", "size_bytes": 123, "storage_format": "npy"},
///  "persisted_storage": true}
/// ```
///
/// Only `profiles` and `merged_embeddings` are required; `all_shard_keys`,
/// `merged_key` and `merged_stat` may be `null`. Each profile is loaded
/// with `resource_profile_from_dict`'s rules. The store itself is not part
/// of the request: the caller passes one (e.g. a `LocalEmbeddingStore`).
///
/// ```
/// use tally_distributed::AggregateRequest;
/// let request = AggregateRequest::from_json_str(r#"{
///   "profiles": [["a", {"status": "not_measured_cache_hit",
///     "inference": {"status": "not_measured_cache_hit"}, "host_memory": {"status": "not_measured"},
///     "device_memory": {"status": "not_measured_cache_hit"}, "model": {"status": "unavailable"}}]],
///   "merged_embeddings": {"shape": [10, 4], "dtype": "float32", "sparse": false, "nnz": null}}"#)?;
/// let aggregate = request.aggregate(None)?;
/// assert_eq!(aggregate.status.as_str(), "not_measured");
/// assert_eq!(aggregate.embedding.unwrap().evaluated_bytes, 160);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateRequest {
    /// `(shard_key, profile)` in order.
    pub profiles: Vec<(String, ResourceProfile)>,
    /// Every shard of the job, when given.
    pub all_shard_keys: Option<Vec<String>>,
    /// The merged embeddings' metadata.
    pub merged_embeddings: EmbeddingMetadata,
    /// Key of the merged embeddings in the store.
    pub merged_key: Option<String>,
    /// The merged embeddings' known stat.
    pub merged_stat: Option<StoredEmbeddingStat>,
    /// Whether to measure the persisted size (default `true`).
    pub persisted_storage: bool,
}

const KEYS: [&str; 6] =
    ["profiles", "all_shard_keys", "merged_embeddings", "merged_key", "merged_stat", "persisted_storage"];

fn optional<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    map.get(key).filter(|value| !value.is_null())
}

fn string_list(value: &Value, path: &str) -> Result<Vec<String>, RequestError> {
    let items = value.as_array().ok_or_else(|| error(path, "must be a list of strings"))?;
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            item.as_str()
                .map(str::to_owned)
                .ok_or_else(|| error(format!("{path}[{index}]"), "must be a string"))
        })
        .collect()
}

impl AggregateRequest {
    /// Reads a request from decoded JSON; unknown keys are errors (a typo
    /// would otherwise silently change the result).
    pub fn from_json_value(value: Value) -> Result<Self, RequestError> {
        let Value::Object(mut map) = value else {
            return Err(error("request", "must be a JSON object"));
        };
        if let Some(unknown) = map.keys().find(|key| !KEYS.contains(&key.as_str())) {
            return Err(error(unknown.clone(), format!("unknown key; expected one of {}", KEYS.join(", "))));
        }
        let Some(Value::Array(pairs)) = map.remove("profiles") else {
            return Err(error("profiles", "required: a list of [shard_key, profile] pairs"));
        };
        let mut profiles = Vec::with_capacity(pairs.len());
        for (index, pair) in pairs.into_iter().enumerate() {
            let path = format!("profiles[{index}]");
            let Value::Array(mut items) = pair else {
                return Err(error(path, "must be a [shard_key, profile] pair"));
            };
            if items.len() != 2 {
                return Err(error(path, "must be a [shard_key, profile] pair"));
            }
            let profile = items.pop().unwrap_or(Value::Null);
            let Some(Value::String(key)) = items.pop() else {
                return Err(error(format!("{path}[0]"), "the shard key must be a string"));
            };
            let profile = ResourceProfile::from_json_value(profile)
                .map_err(|reason| error(format!("{path}[1] (shard {key:?})"), reason.to_string()))?;
            profiles.push((key, profile));
        }
        let all_shard_keys =
            optional(&map, "all_shard_keys").map(|value| string_list(value, "all_shard_keys")).transpose()?;
        let merged = optional(&map, "merged_embeddings")
            .ok_or_else(|| error("merged_embeddings", "required: {shape, dtype, sparse, nnz}"))?;
        if !merged.is_object() {
            return Err(error("merged_embeddings", "must be an object {shape, dtype, sparse, nnz}"));
        }
        let merged_embeddings = EmbeddingMetadata::from_json(merged)
            .map_err(|reason| error("merged_embeddings", reason.to_string()))?;
        let merged_key = match optional(&map, "merged_key") {
            None => None,
            Some(Value::String(key)) => Some(key.clone()),
            Some(_) => return Err(error("merged_key", "must be a string")),
        };
        let merged_stat = optional(&map, "merged_stat").map(parse_stat).transpose()?;
        let persisted_storage = match map.get("persisted_storage") {
            None => true,
            Some(Value::Bool(flag)) => *flag,
            Some(_) => return Err(error("persisted_storage", "must be true or false")),
        };
        Ok(Self { profiles, all_shard_keys, merged_embeddings, merged_key, merged_stat, persisted_storage })
    }

    /// Reads a request from JSON text.
    ///
    /// Large requests (thousands of profiles) are decoded straight into the
    /// typed profiles; anything that path refuses (an error, but also a
    /// duplicated key, which Python's `json` resolves to the last value) is
    /// read again through [`AggregateRequest::from_json_value`], whose
    /// result and error messages are the reference.
    pub fn from_json_str(text: &str) -> Result<Self, RequestError> {
        // Python reads `-0` as the integer 0.
        let text = &*tally_utils::json_text::pythonic_json_text(text);
        if text.trim_start().starts_with('{')
            && let Ok(fast) = serde_json::from_str::<FastRequest>(text)
            && let Ok(request) = fast.into_request()
        {
            return Ok(request);
        }
        let value = serde_json::from_str(text).map_err(|reason| error("request", reason.to_string()))?;
        Self::from_json_value(value)
    }

    /// The aggregation options this request describes, with `store`.
    pub fn options<'a>(&'a self, store: Option<&'a dyn EmbeddingStore>) -> AggregateOptions<'a> {
        AggregateOptions {
            all_shard_keys: self.all_shard_keys.as_deref(),
            store,
            merged_key: self.merged_key.as_deref(),
            merged_stat: self.merged_stat.as_ref(),
            persisted_storage: self.persisted_storage,
        }
    }

    /// Aggregates the request sequentially.
    pub fn aggregate(
        &self,
        store: Option<&dyn EmbeddingStore>,
    ) -> Result<DistributedResourceProfile, AggregateError> {
        aggregate_distributed_resource_profiles(&self.profiles, &self.merged_embeddings, &self.options(store))
    }

    /// Aggregates the request on rayon's pool (same result).
    pub fn aggregate_parallel(
        &self,
        store: Option<&dyn EmbeddingStore>,
    ) -> Result<DistributedResourceProfile, AggregateError> {
        aggregate_distributed_resource_profiles_parallel(
            &self.profiles,
            &self.merged_embeddings,
            &self.options(store),
        )
    }
}

/// The request decoded in one pass, without building a JSON tree of the
/// profiles first. Accepts a subset of what the `Value` path accepts, with
/// the same meaning: profiles must be objects, `persisted_storage` a
/// boolean when present, and a duplicated key is refused (then the `Value`
/// path decides).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastRequest {
    profiles: Vec<(String, ObjectProfile)>,
    #[serde(default)]
    all_shard_keys: Option<Vec<String>>,
    merged_embeddings: Value,
    #[serde(default)]
    merged_key: Option<String>,
    #[serde(default)]
    merged_stat: Option<Value>,
    #[serde(default = "enabled")]
    persisted_storage: bool,
}

fn enabled() -> bool {
    true
}

impl FastRequest {
    fn into_request(self) -> Result<AggregateRequest, RequestError> {
        if !self.merged_embeddings.is_object() {
            return Err(error("merged_embeddings", "must be an object"));
        }
        let merged_embeddings = EmbeddingMetadata::from_json(&self.merged_embeddings)
            .map_err(|reason| error("merged_embeddings", reason.to_string()))?;
        let merged_stat =
            self.merged_stat.as_ref().filter(|stat| !stat.is_null()).map(parse_stat).transpose()?;
        Ok(AggregateRequest {
            profiles: self.profiles.into_iter().map(|(key, profile)| (key, profile.0)).collect(),
            all_shard_keys: self.all_shard_keys,
            merged_embeddings,
            merged_key: self.merged_key,
            merged_stat,
            persisted_storage: self.persisted_storage,
        })
    }
}

/// A profile that must be a JSON object, as `resource_profile_from_dict`
/// needs (serde's derive would also take an array of the fields).
struct ObjectProfile(ResourceProfile);

impl<'de> Deserialize<'de> for ObjectProfile {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = ResourceProfile;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a resource profile object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ResourceProfile, A::Error> {
                ResourceProfile::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(ObjectVisitor).map(ObjectProfile)
    }
}

fn parse_stat(value: &Value) -> Result<StoredEmbeddingStat, RequestError> {
    let field = |key: &str| value.get(key).filter(|item| !item.is_null());
    let text = |key: &str| -> Result<String, RequestError> {
        field(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| error(format!("merged_stat.{key}"), "must be a string"))
    };
    let size = field("size_bytes")
        .and_then(Value::as_u64)
        .ok_or_else(|| error("merged_stat.size_bytes", "must be a non-negative integer"))?;
    StoredEmbeddingStat::new(text("uri")?, size, text("storage_format")?)
        .map_err(|reason| error("merged_stat", reason.to_string()))
}
