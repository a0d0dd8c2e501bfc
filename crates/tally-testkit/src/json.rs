//! JSON fixtures as the vertebrae agreement suites (profiles, distributed
//! profiles, `tally aggregate`) read them: a directory of `*.json` files,
//! field order as written, and vertebrae's flattened columns.

use std::path::{Path, PathBuf};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Every `*.json` file directly in `dir`, sorted by name, as (file stem,
/// text).
///
/// # Panics
///
/// When the directory or a file cannot be read: fixtures are committed.
pub fn json_files(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("fixture directory {}: {error}", dir.display()))
        .map(|entry| entry.expect("a readable fixture directory").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_stem().expect("a *.json path has a stem").to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("fixture {}: {error}", path.display()));
            (name, text)
        })
        .collect()
}

/// [`json_files`], parsed.
///
/// # Panics
///
/// As [`json_files`], and when a file is not JSON.
pub fn json_fixtures(dir: &Path) -> Vec<(String, Value)> {
    json_files(dir)
        .into_iter()
        .map(|(name, text)| {
            let value = serde_json::from_str(&text).unwrap_or_else(|error| panic!("{name}.json: {error}"));
            (name, value)
        })
        .collect()
}

/// [`json_fixtures`] of a committed fixture directory, checked to hold at
/// least `at_least` fixtures (so a suite cannot pass on an empty one).
///
/// # Panics
///
/// As [`json_fixtures`], and when there are fewer.
pub fn committed_fixtures(dir: &Path, at_least: usize) -> Vec<(String, Value)> {
    let fixtures = json_fixtures(dir);
    assert!(fixtures.len() >= at_least, "expected the committed fixtures, found {}", fixtures.len());
    fixtures
}

/// A JSON document reduced to its shape, with object keys in the order
/// they were written (serde_json's `Value` sorts them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ordered {
    /// A string, number, boolean or null.
    Leaf,
    /// An array's items.
    Array(Vec<Ordered>),
    /// An object's members in document order.
    Object(Vec<(String, Ordered)>),
}

impl Ordered {
    /// Parses `text`.
    ///
    /// # Panics
    ///
    /// When `text` is not JSON.
    pub fn parse(text: &str) -> Self {
        serde_json::from_str(text).unwrap_or_else(|error| panic!("not JSON: {error}"))
    }

    /// The member `key` of an object.
    ///
    /// # Panics
    ///
    /// When this is not an object or has no such member.
    pub fn member(&self, key: &str) -> &Ordered {
        match self {
            Ordered::Object(entries) => {
                &entries.iter().find(|(name, _)| name == key).unwrap_or_else(|| panic!("no member {key}")).1
            }
            _ => panic!("not an object"),
        }
    }
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

/// Every key path (`.a.b[2].c`) in document order, not looking inside the
/// members named in `opaque` (vertebrae's free-form `context` mapping, whose
/// order tally does not keep); their own paths are listed.
pub fn key_paths(value: &Ordered, opaque: &[&str]) -> Vec<String> {
    fn walk(value: &Ordered, prefix: &str, opaque: &[&str], out: &mut Vec<String>) {
        match value {
            Ordered::Leaf => {}
            Ordered::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    walk(item, &format!("{prefix}[{index}]"), opaque, out);
                }
            }
            Ordered::Object(entries) => {
                for (key, item) in entries {
                    let path = format!("{prefix}.{key}");
                    out.push(path.clone());
                    if !opaque.contains(&key.as_str()) {
                        walk(item, &path, opaque, out);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(value, "", opaque, &mut out);
    out
}

/// Flattened columns as the fixtures store them: `[[name, value], ...]`
/// (a Python dict's items, in order).
pub fn columns_json(columns: &[(String, Value)]) -> Value {
    Value::Array(
        columns
            .iter()
            .map(|(name, value)| Value::Array(vec![Value::String(name.clone()), value.clone()]))
            .collect(),
    )
}

/// Where two JSON values differ, or `None`: objects need the same keys and
/// arrays the same length, member by member (the first difference in `ours`'
/// key order, then `theirs`'), and any other pair is the caller's to judge
/// with `leaf(ours, theirs, path)`. `path` names the values compared.
pub fn json_difference_by(
    ours: &Value,
    theirs: &Value,
    path: &str,
    leaf: &impl Fn(&Value, &Value, &str) -> Option<String>,
) -> Option<String> {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().chain(b.keys()) {
                let (Some(x), Some(y)) = (a.get(key), b.get(key)) else {
                    return Some(format!("{path}.{key}: present on one side only"));
                };
                if let Some(difference) = json_difference_by(x, y, &format!("{path}.{key}"), leaf) {
                    return Some(difference);
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(index, (x, y))| json_difference_by(x, y, &format!("{path}[{index}]"), leaf)),
        _ => leaf(ours, theirs, path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_paths_keep_document_order_and_stop_at_opaque_members() {
        let value = Ordered::parse(r#"{"b": 1, "a": [{"z": 1, "y": 2}], "context": {"q": 1, "p": 2}}"#);
        assert_eq!(key_paths(&value, &["context"]), [".b", ".a", ".a[0].z", ".a[0].y", ".context"]);
        assert_eq!(key_paths(&value, &[]).last().map(String::as_str), Some(".context.p"));
        assert_eq!(value.member("a"), &Ordered::Array(vec![Ordered::parse(r#"{"z": 0, "y": null}"#)]));
    }

    #[test]
    fn fixtures_are_the_json_files_sorted_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, text) in [("b.json", "[1]"), ("a.json", "{\"k\": 2}"), ("c.txt", "not json")] {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        let files = json_fixtures(dir.path());
        assert_eq!(
            files,
            [("a".to_owned(), serde_json::json!({"k": 2})), ("b".to_owned(), serde_json::json!([1]))]
        );
        assert_eq!(columns_json(&[("x".to_owned(), Value::Null)]), serde_json::json!([["x", null]]));
    }
}
