//! vertebrae's local array store, read for the persisted size of an
//! embedding: a key's manifest and the size of its array files.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tally_utils::document::{DEFAULT_MAX_DOCUMENT_BYTES, DocumentError, read_document};

use super::{EmbeddingStore, StoreError, StoredEmbeddingStat};
use crate::pytext::python_repr;

const ARRAY_MANIFEST: &str = "array-manifest.json";
const ARTIFACT_MANIFEST: &str = "artifact-manifest.json";

/// A local directory of persisted arrays in vertebrae's `LocalArtifactStore`
/// layout: `<root>/<key>/` holding `artifact-manifest.json` (an
/// `array+metadata` commit) or `array-manifest.json`, which names the
/// content file `embeddings-v2-<sha256>.<npy|npz>` and its size.
///
/// `stat` answers as vertebrae's `stat_array` does, with its error kinds and
/// messages. It reads without taking vertebrae's shared `flock` on
/// `.artifact-publish.lock`, so a stat racing a concurrent vertebrae commit
/// may see the old or the new manifest; and it checks the manifest fields
/// `stat` relies on, not the metadata part of an `array+metadata` commit.
#[derive(Debug, Clone)]
pub struct LocalEmbeddingStore {
    root: PathBuf,
}

fn value_error(message: impl Into<String>) -> StoreError {
    StoreError::Failed { kind: Cow::Borrowed("ValueError"), message: message.into() }
}

/// vertebrae's `validate_artifact_key`.
fn validate_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() {
        return Err(value_error("Artifact key must be non-empty."));
    }
    if key.starts_with('/') {
        return Err(value_error("Artifact key must be relative and must not start with '/'."));
    }
    if key.contains('\\') {
        return Err(value_error("Artifact key must use '/' separators and must not contain '\\'."));
    }
    if key.chars().any(char::is_control) {
        return Err(value_error("Artifact key must not contain control characters."));
    }
    let components: Vec<&str> = key.split('/').collect();
    if components.iter().any(|part| part.is_empty()) {
        return Err(value_error("Artifact key must not contain empty path components."));
    }
    if components.iter().any(|part| *part == "." || *part == "..") {
        return Err(value_error("Artifact key must not contain '.' or '..' path components."));
    }
    Ok(())
}

/// The parts of an array manifest `stat` uses.
struct ArrayManifest {
    filename: String,
    storage_format: String,
    size_bytes: u64,
}

const ARRAY_FIELDS: [&str; 10] = [
    "dtype",
    "filename",
    "kind",
    "nnz",
    "schema_version",
    "sha256",
    "shape",
    "size_bytes",
    "sparse_format",
    "storage_format",
];

fn array_manifest(value: &Value) -> Result<ArrayManifest, StoreError> {
    let Value::Object(map) = value else {
        return Err(value_error("Array manifest must be a JSON object."));
    };
    let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
    keys.sort_unstable();
    if keys != ARRAY_FIELDS {
        let expected: Vec<String> = ARRAY_FIELDS.iter().map(|name| python_repr(name)).collect();
        return Err(value_error(format!(
            "Array manifest fields do not match the supported schema; expected [{}].",
            expected.join(", ")
        )));
    }
    let string = |name: &str| {
        map[name]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| value_error(format!("Array manifest {name} must be a string.")))
    };
    match &map["schema_version"] {
        Value::Number(version) if version.as_i64() == Some(2) => {}
        Value::Number(version) if version.is_i64() || version.is_u64() => {
            return Err(value_error(format!("Unsupported array manifest schema version {version}.")));
        }
        _ => return Err(value_error("Array manifest schema_version must be an integer.")),
    }
    if string("kind")? != "array" {
        return Err(value_error("Array manifest kind must be 'array'."));
    }
    let filename = string("filename")?;
    let storage_format = string("storage_format")?;
    let sha256 = string("sha256")?;
    if storage_format != "npy" && storage_format != "npz" {
        return Err(value_error("Array manifest storage_format must be 'npy' or 'npz'."));
    }
    let expected_name = format!("embeddings-v2-{sha256}.{storage_format}");
    if filename != expected_name
        || sha256.len() != 64
        || !sha256.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return Err(value_error("Array manifest filename is not a canonical v2 content filename."));
    }
    let size_bytes = map["size_bytes"]
        .as_u64()
        .ok_or_else(|| value_error("Array manifest size_bytes must be an integer."))?;
    Ok(ArrayManifest { filename, storage_format, size_bytes })
}

fn read_json(path: &Path, what: &str, directory: &Path) -> Result<Value, StoreError> {
    let os_error = |error: &std::io::Error| StoreError::Failed {
        kind: Cow::Borrowed("OSError"),
        message: crate::pytext::os_error_text(error, &path.to_string_lossy()),
    };
    let file = std::fs::File::open(path).map_err(|error| os_error(&error))?;
    // A manifest is a few hundred bytes; a symlink to `/dev/zero` is not one.
    let text = match read_document(file, DEFAULT_MAX_DOCUMENT_BYTES) {
        Ok(text) => text,
        Err(DocumentError::Io(error)) => return Err(os_error(&error)),
        Err(error @ DocumentError::TooLarge { .. }) => {
            return Err(value_error(format!(
                "{what} under {} is not a manifest: {error}.",
                directory.display()
            )));
        }
    };
    serde_json::from_slice(&text)
        .map_err(|_| value_error(format!("{what} under {} is not valid JSON.", directory.display())))
}

impl LocalEmbeddingStore {
    /// A store rooted at `root` (vertebrae's default is `.vertebrae_cache`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn key_path(&self, key: &str) -> Result<PathBuf, StoreError> {
        validate_key(key)?;
        let path = key.split('/').fold(self.root.clone(), |path, part| path.join(part));
        // Keys cannot contain `..`, but a symlink inside the store could still
        // lead out of it.
        if let (Ok(root), Ok(resolved)) = (std::fs::canonicalize(&self.root), std::fs::canonicalize(&path))
            && !resolved.starts_with(&root)
        {
            return Err(value_error("Artifact key resolves outside the artifact-store root."));
        }
        Ok(path)
    }

    fn manifest(&self, key: &str, path: &Path) -> Result<ArrayManifest, StoreError> {
        let artifact = path.join(ARTIFACT_MANIFEST);
        if artifact.exists() {
            let value = read_json(&artifact, "Artifact manifest", path)?;
            let Value::Object(map) = &value else {
                return Err(value_error("Artifact manifest must be a JSON object."));
            };
            return match map.get("kind").and_then(Value::as_str) {
                Some("array+metadata") => array_manifest(map.get("array").unwrap_or(&Value::Null)),
                Some("labels+metadata") => {
                    Err(value_error(format!("Committed artifact for key {key} does not contain an array.")))
                }
                _ => Err(value_error(format!(
                    "Artifact manifest under {} has unsupported kind {}.",
                    path.display(),
                    map.get("kind").map_or("None".to_owned(), |kind| match kind {
                        Value::String(text) => python_repr(text),
                        other => other.to_string(),
                    })
                ))),
            };
        }
        let standalone = path.join(ARRAY_MANIFEST);
        if !standalone.exists() {
            return Err(StoreError::NotFound(format!(
                "No committed array manifest found under {}.",
                path.display()
            )));
        }
        array_manifest(&read_json(&standalone, "Array manifest", path)?)
    }
}

impl EmbeddingStore for LocalEmbeddingStore {
    fn stat(&self, key: &str) -> Result<StoredEmbeddingStat, StoreError> {
        let path = self.key_path(key)?;
        if !path.exists() {
            return Err(StoreError::NotFound(format!(
                "No artifact directory found under {}.",
                path.display()
            )));
        }
        let manifest = self.manifest(key, &path)?;
        let target = path.join(&manifest.filename);
        if !target.exists() {
            return Err(StoreError::NotFound(format!(
                "Array manifest for key {key} references missing file {}.",
                manifest.filename
            )));
        }
        let actual = std::fs::metadata(&target)
            .map_err(|error| StoreError::Failed {
                kind: Cow::Borrowed("OSError"),
                message: crate::pytext::os_error_text(&error, &target.to_string_lossy()),
            })?
            .len();
        if actual != manifest.size_bytes {
            return Err(value_error(format!(
                "Array artifact {} has size {actual}, expected {} from its manifest.",
                target.display(),
                manifest.size_bytes
            )));
        }
        StoredEmbeddingStat::new(target.to_string_lossy(), actual, manifest.storage_format)
            .map_err(|error| value_error(error.to_string()))
    }
}
