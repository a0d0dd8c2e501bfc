//! Shared by the integration suites: fixtures, strict JSON comparison with
//! key order, and the scripted store of the fixture script. The fixture
//! directory reading, key order and columns are tally-testkit's, shared with
//! tally-profile's suites.

#![allow(dead_code, reason = "each suite uses a different part")]

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tally_profile::{EmbeddingStore, StoreError, StoredEmbeddingStat};
use tally_testkit::json::{Ordered, committed_fixtures, json_difference_by, key_paths};

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/distributed")
}

/// The committed fixtures, parsed.
pub fn fixtures() -> Vec<(String, Value)> {
    committed_fixtures(&fixtures_dir(), 35)
}

/// Where two JSON values differ, or `None`. Stricter than Python's `==`:
/// an integer never equals a float, floats must be equal bit for bit, and
/// both objects need the same keys.
pub fn strict_difference(ours: &Value, theirs: &Value, path: &str) -> Option<String> {
    json_difference_by(ours, theirs, path, &|ours, theirs, path| {
        let same = match (ours, theirs) {
            (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
                a.is_f64() && b.is_f64() && a.as_f64().map(f64::to_bits) == b.as_f64().map(f64::to_bits)
            }
            _ => ours == theirs,
        };
        (!same).then(|| format!("{path}: tally {ours} != vertebrae {theirs}"))
    })
}

/// Key paths in document order, not looking inside `context` (a free-form
/// mapping whose order tally does not keep).
pub fn key_order(value: &Ordered) -> Vec<String> {
    key_paths(value, &["context"])
}

/// The fixture script's `ScriptedStore`.
pub struct ScriptedStore(BTreeMap<String, Value>);

impl ScriptedStore {
    pub fn from_spec(spec: &Value) -> Option<Self> {
        let entries = spec.get("entries")?.as_object()?;
        Some(Self(entries.iter().map(|(key, value)| (key.clone(), value.clone())).collect()))
    }
}

impl EmbeddingStore for ScriptedStore {
    fn stat(&self, key: &str) -> Result<StoredEmbeddingStat, StoreError> {
        let Some(entry) = self.0.get(key) else {
            return Err(StoreError::NotFound(format!("No artifact directory found under {key}.")));
        };
        if let Some(error) = entry.get("error") {
            return Err(StoreError::Failed {
                kind: Cow::Owned(error["type"].as_str().expect("type").to_owned()),
                message: error["message"].as_str().expect("message").to_owned(),
            });
        }
        let stat = &entry["stat"];
        Ok(StoredEmbeddingStat::new(
            stat["uri"].as_str().expect("uri"),
            stat["size_bytes"].as_u64().expect("size"),
            stat["storage_format"].as_str().expect("format"),
        )
        .expect("valid stat"))
    }
}
