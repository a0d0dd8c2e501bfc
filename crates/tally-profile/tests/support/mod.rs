//! Shared by the integration suites: fixture loading, the scripted adapter
//! and clock that replay a fixture's spec, JSON comparison with key order.
//! The fixture directory reading, key order and columns are tally-testkit's,
//! shared with tally-distributed's suites.

#![allow(dead_code, reason = "each suite uses a different part")]

use std::path::{Path, PathBuf};

use serde_json::Value;
use tally_profile::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, ModelFootprintMeasurement,
    ResourceAdapterMetadata, ResourceProfile,
};
use tally_profile::{
    BaseResourceProfileAdapter, CallSpec, Clock, EmbeddingMetadata, EmbeddingStore, HookError,
    LocalEmbeddingStore, PersistedSizes, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler,
    StoreError, StoredEmbeddingStat,
};
use tally_testkit::json::{Ordered, committed_fixtures, json_difference_by, key_paths};
use tally_utils::json_eq::python_json_eq;

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/profile")
}

/// Every fixture, sorted by name.
pub fn fixtures() -> Vec<(String, Value)> {
    committed_fixtures(&fixtures_dir(), 30)
}

pub fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures_dir().join(format!("{name}.json"))).expect("fixture exists");
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// Replaces `old` by `new` in every string of a JSON value.
pub fn substitute(value: &Value, old: &str, new: &str) -> Value {
    match value {
        Value::String(text) => Value::String(text.replace(old, new)),
        Value::Array(items) => Value::Array(items.iter().map(|item| substitute(item, old, new)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(key, item)| (key.clone(), substitute(item, old, new))).collect())
        }
        other => other.clone(),
    }
}

/// Key paths in document order, not looking inside `context` (a free-form
/// mapping whose order tally does not keep).
pub fn key_order(text: &str) -> Vec<String> {
    key_paths(&Ordered::parse(text), &["context"])
}

/// Describes where two JSON values differ, or `None` when Python would find
/// them equal. Floats must be equal bit for bit (Python's `==`).
pub fn json_difference(ours: &Value, theirs: &Value, path: &str) -> Option<String> {
    json_difference_by(ours, theirs, path, &|ours, theirs, path| {
        (!python_json_eq(ours, theirs)).then(|| format!("{path}: tally {ours} != vertebrae {theirs}"))
    })
}

/// Readings `0, ns` per call: each call's duration is exactly `ns`.
pub struct ScriptClock(pub std::vec::IntoIter<u64>);

impl Clock for ScriptClock {
    fn now_ns(&mut self) -> u64 {
        self.0.next().expect("a scripted clock reading for every clock read")
    }
}

fn hook_error(spec: &Value) -> HookError {
    HookError::new(
        spec["type"].as_str().expect("error type").to_owned(),
        spec["message"].as_str().expect("error message").to_owned(),
    )
}

/// The Rust twin of the fixture script's `ScriptedAdapter`.
pub struct ScriptedAdapter {
    spec: Value,
    root: String,
    name: String,
    sync_index: usize,
}

impl ScriptedAdapter {
    pub fn new(spec: Value, root: &str, name: &str) -> Self {
        Self { spec, root: root.to_owned(), name: name.to_owned(), sync_index: 0 }
    }

    fn entry<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<Result<T, HookError>> {
        let entry = self.spec.get(key).filter(|entry| !entry.is_null())?;
        if let Some(error) = entry.get("error") {
            return Some(Err(hook_error(error)));
        }
        let value = substitute(&entry["value"], "$ROOT", &self.root);
        Some(Ok(serde_json::from_value(value).expect("the spec's value is a valid payload")))
    }
}

impl ResourceProfileAdapter for ScriptedAdapter {
    // Hooks the spec leaves out answer as tally's own defaults do (those of
    // `BaseResourceProfileAdapter`), so the fixtures made with vertebrae's
    // defaults test tally's, not a copy of them.
    fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
        self.entry("metadata").unwrap_or_else(|| BaseResourceProfileAdapter.metadata())
    }

    fn synchronize(&mut self) -> Result<AdapterOperationResult, HookError> {
        let Some(Value::Array(answers)) = self.spec.get("synchronize") else {
            return BaseResourceProfileAdapter.synchronize();
        };
        let entry = &answers[self.sync_index.min(answers.len() - 1)];
        self.sync_index += 1;
        match entry.get("error") {
            Some(error) => Err(hook_error(error)),
            None => Ok(serde_json::from_value(entry["value"].clone()).expect("valid result")),
        }
    }

    fn reset_peak_device_memory(&mut self) -> Result<AdapterOperationResult, HookError> {
        self.entry("reset").unwrap_or_else(|| BaseResourceProfileAdapter.reset_peak_device_memory())
    }

    fn peak_device_memory(&mut self) -> Result<DeviceMemoryMeasurement, HookError> {
        self.entry("peak").unwrap_or_else(|| BaseResourceProfileAdapter.peak_device_memory())
    }

    fn model_footprint(&mut self) -> Result<ModelFootprintMeasurement, HookError> {
        self.entry("model").unwrap_or_else(|| BaseResourceProfileAdapter.model_footprint())
    }

    fn deployment_artifacts(&mut self) -> Result<Vec<DeploymentArtifact>, HookError> {
        self.entry("artifacts").unwrap_or_else(|| BaseResourceProfileAdapter.deployment_artifacts())
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn profiling_device_hint(&self) -> Option<String> {
        self.spec.get("profiling_device").and_then(Value::as_str).map(str::to_owned)
    }
}

/// Builds a fixture's filesystem tree under `root`.
pub fn build_tree(root: &Path, tree: &Value) {
    for entry in tree.as_array().into_iter().flatten() {
        let path = root.join(entry["path"].as_str().expect("entry path"));
        std::fs::create_dir_all(path.parent().expect("entries live under the root")).expect("mkdir");
        match entry["kind"].as_str() {
            Some("file") => {
                let size = entry["size"].as_u64().expect("file size") as usize;
                std::fs::write(&path, vec![b'x'; size]).expect("write file");
            }
            Some("dir") => std::fs::create_dir_all(&path).expect("mkdir"),
            Some("symlink") => {
                let target =
                    entry["target"].as_str().expect("target").replace("$ROOT", &root.to_string_lossy());
                std::os::unix::fs::symlink(target, &path).expect("symlink");
            }
            other => panic!("unknown tree entry kind {other:?}"),
        }
    }
}

/// Replays a `profiler` fixture's spec through tally's profiler; returns the
/// profile with the temporary root written `$ROOT`.
pub fn replay_profiler(spec: &Value, adapter_name: &str) -> Value {
    let temp = tempfile::tempdir().expect("temporary directory");
    let root = std::fs::canonicalize(temp.path()).expect("canonical temp dir").join("root");
    std::fs::create_dir(&root).expect("mkdir root");
    build_tree(&root, &spec["tree"]);
    let root_text = root.to_string_lossy().into_owned();
    let config_spec = &spec["config"];
    let config = ProfilerConfig {
        enabled: config_spec["enabled"].as_bool().expect("enabled"),
        host_memory: config_spec["host_memory"].as_bool().expect("host_memory"),
        device_memory: config_spec["device_memory"].as_bool().expect("device_memory"),
        ..ProfilerConfig::default()
    };
    let calls = spec["calls"].as_array().expect("calls");
    let readings: Vec<u64> = if config.enabled {
        calls
            .iter()
            .filter(|call| call.get("ns").is_some())
            .flat_map(|call| [0, call["ns"].as_u64().expect("ns")])
            .collect()
    } else {
        Vec::new()
    };
    let context = spec.get("context").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut profiler = ResourceProfiler::new(config)
        .with_clock(ScriptClock(readings.into_iter()))
        .streaming(spec.get("streaming").and_then(Value::as_bool).unwrap_or(false))
        .with_context(context);
    if let Some(adapter) = spec.get("adapter").filter(|adapter| !adapter.is_null()) {
        profiler =
            profiler.with_adapter(Box::new(ScriptedAdapter::new(adapter.clone(), &root_text, adapter_name)));
    }
    for call in calls {
        if call.get("mark_last_materialized").is_some() {
            profiler.mark_last_call_materialized();
            continue;
        }
        let samples = call["samples"].as_u64().expect("samples");
        let spec = CallSpec::new(samples, call["call_type"].as_str().expect("call_type").to_owned())
            .materialized(call.get("materialized").and_then(Value::as_bool).unwrap_or(true))
            .includes_fit(call.get("includes_fit").and_then(Value::as_bool).unwrap_or(false));
        let fails = call.get("fails").and_then(Value::as_bool).unwrap_or(false);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            profiler.measure_call(
                || {
                    assert!(!fails, "the call failed");
                    samples * 2
                },
                spec,
            )
        }));
        match outcome {
            Ok(value) => assert_eq!(value, samples * 2, "the call's value comes back untouched"),
            Err(_) => assert!(fails, "only a failing call panics"),
        }
    }
    let profile = profiler.finish(spec["finish"]["cache_hit"].as_bool().expect("cache_hit"));
    let json = profile.to_json_value().expect("finite profile");
    substitute(&json, &root_text, "$ROOT")
}

/// The Rust twin of the fixture script's `ScriptedStore`.
pub struct ScriptedStore(pub Value);

impl EmbeddingStore for ScriptedStore {
    fn stat(&self, key: &str) -> Result<StoredEmbeddingStat, StoreError> {
        let Some(entry) = self.0.get(key) else {
            return Err(StoreError::NotFound(format!("No artifact directory found under {key}.")));
        };
        if let Some(error) = entry.get("error") {
            let kind = error["type"].as_str().expect("type").to_owned();
            let message = error["message"].as_str().expect("message").to_owned();
            return Err(if kind == "FileNotFoundError" {
                StoreError::NotFound(message)
            } else {
                StoreError::Failed { kind: kind.into(), message }
            });
        }
        Ok(stat_of(&entry["stat"]).expect("a stat"))
    }
}

pub fn stat_of(spec: &Value) -> Option<StoredEmbeddingStat> {
    if spec.is_null() {
        return None;
    }
    Some(
        StoredEmbeddingStat::new(
            spec["uri"].as_str().expect("uri"),
            spec["size_bytes"].as_u64().expect("size"),
            spec["storage_format"].as_str().expect("format"),
        )
        .expect("valid stat"),
    )
}

pub fn store_dir() -> PathBuf {
    std::fs::canonicalize(fixtures_dir().join("store")).expect("the fixture store is committed")
}

/// Replays an `embedding` fixture on its base profile; returns the profile
/// with the store root written `$STORE`.
pub fn replay_embedding(spec: &Value, base: ResourceProfile) -> Value {
    let local = LocalEmbeddingStore::new(store_dir());
    let scripted = ScriptedStore(spec["store"].get("entries").cloned().unwrap_or(Value::Null));
    let store: Option<&dyn EmbeddingStore> = match spec["store"].get("kind").and_then(Value::as_str) {
        None => None,
        Some("local") => Some(&local),
        Some(_) => Some(&scripted),
    };
    let raw_stat = stat_of(spec.get("raw_stat").unwrap_or(&Value::Null));
    let evaluated_stat = stat_of(spec.get("evaluated_stat").unwrap_or(&Value::Null));
    let persisted = PersistedSizes {
        store,
        raw_key: spec.get("raw_key").and_then(Value::as_str),
        evaluated_key: spec.get("evaluated_key").and_then(Value::as_str),
        raw_stat: raw_stat.as_ref(),
        evaluated_stat: evaluated_stat.as_ref(),
        persisted_storage: spec.get("persisted_storage").and_then(Value::as_bool).unwrap_or(true),
    };
    let raw = EmbeddingMetadata::from_json(&spec["raw"]).expect("raw metadata");
    let evaluated = EmbeddingMetadata::from_json(&spec["evaluated"]).expect("evaluated metadata");
    let profile = tally_profile::with_embedding_footprint(Some(base), &raw, &evaluated, &persisted)
        .expect("complete metadata")
        .expect("a profile in, a profile out");
    let json = profile.to_json_value().expect("finite profile");
    substitute(&json, &store_dir().to_string_lossy(), "$STORE")
}
