//! Shared by the integration suites: fixtures, strict JSON comparison with
//! key order, and the scripted store of the fixture script.

#![allow(dead_code, reason = "each suite uses a different part")]

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use tally_profile::{ArtifactStat, ArtifactStore, StoreError};

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/distributed")
}

/// Every `*.json` in `dir`, sorted by name, as (name, text).
pub fn read_fixtures(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixture directory")
        .map(|entry| entry.expect("readable directory").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_stem().expect("a file name").to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("readable fixture"))
        })
        .collect()
}

/// The committed fixtures, parsed.
pub fn fixtures() -> Vec<(String, Value)> {
    let fixtures = read_fixtures(&fixtures_dir());
    assert!(fixtures.len() >= 35, "expected the committed fixtures, found {}", fixtures.len());
    fixtures.into_iter().map(|(name, text)| (name, serde_json::from_str(&text).expect("JSON"))).collect()
}

/// Where two JSON values differ, or `None`. Stricter than Python's `==`:
/// an integer never equals a float, floats must be equal bit for bit, and
/// both objects need the same keys.
pub fn strict_difference(ours: &Value, theirs: &Value, path: &str) -> Option<String> {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().chain(b.keys()) {
                let (Some(x), Some(y)) = (a.get(key), b.get(key)) else {
                    return Some(format!("{path}.{key}: present on one side only"));
                };
                if let Some(difference) = strict_difference(x, y, &format!("{path}.{key}")) {
                    return Some(difference);
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(index, (x, y))| strict_difference(x, y, &format!("{path}[{index}]"))),
        (Value::Number(a), Value::Number(b)) => {
            let same = if a.is_f64() || b.is_f64() {
                a.is_f64() && b.is_f64() && a.as_f64().map(f64::to_bits) == b.as_f64().map(f64::to_bits)
            } else {
                a == b
            };
            (!same).then(|| format!("{path}: tally {ours} != vertebrae {theirs}"))
        }
        _ if ours == theirs => None,
        _ => Some(format!("{path}: tally {ours} != vertebrae {theirs}")),
    }
}

/// A JSON value that remembers the order of object keys.
#[derive(Debug, Clone)]
pub enum Ordered {
    Leaf,
    Array(Vec<Ordered>),
    Object(Vec<(String, Ordered)>),
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedVisitor;
        impl<'de> Visitor<'de> for OrderedVisitor {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Ordered, E> {
                Ok(Ordered::Leaf)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Ordered, E> {
                Ok(Ordered::Leaf)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Ordered, E> {
                Ok(Ordered::Leaf)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Ordered, E> {
                Ok(Ordered::Leaf)
            }
            fn visit_str<E>(self, _: &str) -> Result<Ordered, E> {
                Ok(Ordered::Leaf)
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Leaf)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Ordered::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Ordered>()? {
                    entries.push((key, value));
                }
                Ok(Ordered::Object(entries))
            }
        }
        deserializer.deserialize_any(OrderedVisitor)
    }
}

/// Key paths in document order, not looking inside `context` (a free-form
/// mapping whose order tally does not keep).
pub fn key_order(value: &Ordered) -> Vec<String> {
    fn walk(value: &Ordered, prefix: &str, out: &mut Vec<String>) {
        match value {
            Ordered::Leaf => {}
            Ordered::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    walk(item, &format!("{prefix}[{index}]"), out);
                }
            }
            Ordered::Object(entries) => {
                for (key, item) in entries {
                    let path = format!("{prefix}.{key}");
                    out.push(path.clone());
                    if key != "context" {
                        walk(item, &path, out);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(value, "", &mut out);
    out
}

/// The member `key` of an ordered object.
pub fn ordered_member<'v>(value: &'v Ordered, key: &str) -> &'v Ordered {
    match value {
        Ordered::Object(entries) => {
            &entries.iter().find(|(name, _)| name == key).unwrap_or_else(|| panic!("no member {key}")).1
        }
        _ => panic!("not an object"),
    }
}

/// Columns as the fixtures store them: `[[name, value], ...]`.
pub fn columns_json(columns: &[(String, Value)]) -> Value {
    Value::Array(
        columns
            .iter()
            .map(|(name, value)| Value::Array(vec![Value::String(name.clone()), value.clone()]))
            .collect(),
    )
}

/// The fixture script's `ScriptedStore`.
pub struct ScriptedStore(BTreeMap<String, Value>);

impl ScriptedStore {
    pub fn from_spec(spec: &Value) -> Option<Self> {
        let entries = spec.get("entries")?.as_object()?;
        Some(Self(entries.iter().map(|(key, value)| (key.clone(), value.clone())).collect()))
    }
}

impl ArtifactStore for ScriptedStore {
    fn stat(&self, key: &str) -> Result<ArtifactStat, StoreError> {
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
        Ok(ArtifactStat::new(
            stat["uri"].as_str().expect("uri"),
            stat["size_bytes"].as_u64().expect("size"),
            stat["storage_format"].as_str().expect("format"),
        )
        .expect("valid stat"))
    }
}
