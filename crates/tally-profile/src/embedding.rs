//! Embedding footprint: resident size from shape and dtype, persisted size
//! through an [`EmbeddingStore`]; vertebrae's `with_embedding_footprint`.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::profile::stats::int_true_div;
use crate::profile::{EmbeddingFootprint, PersistedArtifactFootprint, PersistedStatus, ResourceProfile};
use serde_json::Value;
use tally_core::document::{DEFAULT_MAX_DOCUMENT_BYTES, DocumentError, read_document};
use tally_core::{NonEmptyString, ValidationError};

use crate::pytext::python_repr;

/// Why an embedding footprint could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbeddingError {
    /// The metadata lacks shape, dtype or (for sparse) nnz; vertebrae's message.
    #[error(
        "Embedding metadata must define shape, dtype, sparse, and nnz when used for resource-footprint calculation."
    )]
    IncompleteMetadata,
    /// numpy does not know the dtype.
    #[error("data type {0} not understood")]
    UnknownDtype(String),
    /// The size does not fit in 64 bits.
    #[error("embedding size overflows 64 bits")]
    Overflow,
}

/// What vertebrae reads of committed embedding metadata: `shape`, `dtype`,
/// `sparse` and `nnz` (CSR non-zeros, needed when sparse).
///
/// ```
/// use tally_profile::EmbeddingMetadata;
/// let dense = EmbeddingMetadata::dense(1000, 384, "float32");
/// assert_eq!(dense.resident_bytes().unwrap(), 1000 * 384 * 4);
/// let sparse = EmbeddingMetadata::sparse(1000, 30000, "float32", 5000);
/// // nnz * (itemsize + 4) + (rows + 1) * 4
/// assert_eq!(sparse.resident_bytes().unwrap(), 5000 * 8 + 1001 * 4);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingMetadata {
    /// The array shape; vertebrae requires exactly two dimensions.
    pub shape: Vec<u64>,
    /// A numpy dtype name (`float32`, `<f4`, `int8`, ...); `None` when absent.
    pub dtype: Option<String>,
    /// Whether the array is stored as CSR.
    pub sparse: bool,
    /// Stored non-zeros of a sparse array.
    pub nnz: Option<u64>,
}

impl EmbeddingMetadata {
    /// A dense `rows x cols` array.
    pub fn dense(rows: u64, cols: u64, dtype: &str) -> Self {
        Self { shape: vec![rows, cols], dtype: Some(dtype.to_owned()), sparse: false, nnz: None }
    }

    /// A CSR sparse `rows x cols` array with `nnz` stored values.
    pub fn sparse(rows: u64, cols: u64, dtype: &str, nnz: u64) -> Self {
        Self { shape: vec![rows, cols], dtype: Some(dtype.to_owned()), sparse: true, nnz: Some(nnz) }
    }

    /// Reads the four keys from a metadata object the way vertebrae's
    /// `dict.get` does: absent or `null` keys are missing, `sparse` is truthy.
    pub fn from_json(metadata: &Value) -> Result<Self, EmbeddingError> {
        let get = |key: &str| metadata.get(key).filter(|value| !value.is_null());
        let shape = match get("shape") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| item.as_u64().ok_or(EmbeddingError::IncompleteMetadata))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(EmbeddingError::IncompleteMetadata),
        };
        let dtype = match get("dtype") {
            None => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => return Err(EmbeddingError::UnknownDtype(other.to_string())),
        };
        let sparse = get("sparse").is_some_and(truthy);
        let nnz = match get("nnz") {
            None => None,
            Some(value) => Some(value.as_u64().ok_or(EmbeddingError::IncompleteMetadata)?),
        };
        Ok(Self { shape, dtype, sparse, nnz })
    }

    /// vertebrae's `estimate_metadata_resident_bytes`: dense
    /// `rows * cols * itemsize`; CSR `nnz * (itemsize + 4) + (rows + 1) * 4`.
    pub fn resident_bytes(&self) -> Result<u64, EmbeddingError> {
        let (Some(dtype), [rows, cols]) = (&self.dtype, self.shape.as_slice()) else {
            return Err(EmbeddingError::IncompleteMetadata);
        };
        if self.sparse {
            let nnz = self.nnz.ok_or(EmbeddingError::IncompleteMetadata)?;
            let itemsize = dtype_itemsize(dtype)?;
            let values = nnz.checked_mul(itemsize + 4);
            let pointers = rows.checked_add(1).and_then(|count| count.checked_mul(4));
            return values.zip(pointers).and_then(|(a, b)| a.checked_add(b)).ok_or(EmbeddingError::Overflow);
        }
        let itemsize = dtype_itemsize(dtype)?;
        rows.checked_mul(*cols).and_then(|count| count.checked_mul(itemsize)).ok_or(EmbeddingError::Overflow)
    }

    /// Rows, for bytes per embedding: `shape[0]`, 0 without a shape.
    pub fn sample_count(&self) -> u64 {
        self.shape.first().copied().unwrap_or(0)
    }
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|float| float != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// `np.dtype(name).itemsize` for the numeric dtypes numpy 2 knows on
/// x86-64 Linux, by name, type code or array-protocol string (with an
/// optional byte-order mark), plus fixed-width `S`/`a`/`U`/`V` types.
///
/// ```
/// use tally_profile::dtype_itemsize;
/// assert_eq!(dtype_itemsize("float32").unwrap(), 4);
/// assert_eq!(dtype_itemsize("<f2").unwrap(), 2);
/// assert_eq!(dtype_itemsize("U8").unwrap(), 32);
/// assert!(dtype_itemsize("bfloat16").is_err());
/// ```
pub fn dtype_itemsize(name: &str) -> Result<u64, EmbeddingError> {
    let unknown = || EmbeddingError::UnknownDtype(python_repr(name));
    let body = name.strip_prefix(['<', '>', '=', '|']).unwrap_or(name);
    let named = match body {
        "bool" | "?" | "b1" | "bool_" => 1,
        "int8" | "i1" | "b" | "byte" | "uint8" | "u1" | "B" | "ubyte" => 1,
        "int16" | "i2" | "h" | "short" | "uint16" | "u2" | "H" | "ushort" => 2,
        "int32" | "i4" | "i" | "intc" | "uint32" | "u4" | "I" | "uintc" => 4,
        "int64" | "i8" | "l" | "q" | "long" | "longlong" | "int" | "intp" | "p" | "int_" | "uint64"
        | "u8" | "L" | "Q" | "ulong" | "ulonglong" | "uint" | "uintp" | "P" => 8,
        "float16" | "f2" | "e" | "half" => 2,
        "float32" | "f4" | "f" | "single" => 4,
        "float64" | "f8" | "d" | "double" | "float" | "float_" => 8,
        "longdouble" | "g" | "float128" | "f16" => 16,
        "complex64" | "c8" | "F" | "csingle" => 8,
        "complex128" | "c16" | "D" | "cdouble" | "complex" | "complex_" => 16,
        "clongdouble" | "G" | "complex256" | "c32" => 32,
        _ => 0,
    };
    if named > 0 {
        return Ok(named);
    }
    let (kind, width) = body.split_at(body.find(|ch: char| ch.is_ascii_digit()).ok_or_else(unknown)?);
    let width: u64 = width.parse().map_err(|_| unknown())?;
    match kind {
        "S" | "a" | "V" => Ok(width),
        "U" => width.checked_mul(4).ok_or(EmbeddingError::Overflow),
        _ => Err(unknown()),
    }
}

/// Physical storage of one persisted array; vertebrae's `ArtifactStat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEmbeddingStat {
    /// Where the array is stored.
    pub uri: NonEmptyString,
    /// Bytes on storage.
    pub size_bytes: u64,
    /// Storage format, e.g. `npy`.
    pub storage_format: NonEmptyString,
}

impl StoredEmbeddingStat {
    /// Validates as vertebrae's `ArtifactStat.__post_init__`.
    pub fn new(
        uri: impl Into<String>,
        size_bytes: u64,
        storage_format: impl Into<String>,
    ) -> Result<Self, ValidationError> {
        Ok(Self {
            uri: NonEmptyString::new(uri)
                .map_err(|_| ValidationError::new("uri", "ArtifactStat.uri must be a non-empty string."))?,
            size_bytes,
            storage_format: NonEmptyString::new(storage_format).map_err(|_| {
                ValidationError::new("storage_format", "ArtifactStat.storage_format must be non-empty.")
            })?,
        })
    }
}

/// A store failed to report an array's size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The key is not in the store (Python's `FileNotFoundError`): the array
    /// counts as `not_persisted`, without a warning.
    #[error("{0}")]
    NotFound(String),
    /// Anything else: the persisted size is `unavailable`, with a warning.
    /// `kind` plays the part of the Python exception class name.
    #[error("{kind}: {message}")]
    Failed {
        /// E.g. `ValueError`.
        kind: Cow<'static, str>,
        /// The message.
        message: String,
    },
}

/// Where persisted embedding arrays live; vertebrae's `stat_array` protocol.
pub trait EmbeddingStore {
    /// Size, URI and format of the array stored under `key`, without loading it.
    fn stat(&self, key: &str) -> Result<StoredEmbeddingStat, StoreError>;
}

/// How [`with_embedding_footprint`] finds persisted sizes; the keyword
/// arguments of vertebrae's function. The default measures nothing
/// persisted (no store) but has persisted-size measurement on.
#[derive(Clone, Copy)]
pub struct PersistedSizes<'a> {
    /// The store to ask, if any.
    pub store: Option<&'a dyn EmbeddingStore>,
    /// Key of the raw embeddings.
    pub raw_key: Option<&'a str>,
    /// Key of the evaluated embeddings.
    pub evaluated_key: Option<&'a str>,
    /// A stat already known for the raw embeddings (the store is not asked).
    pub raw_stat: Option<&'a StoredEmbeddingStat>,
    /// A stat already known for the evaluated embeddings.
    pub evaluated_stat: Option<&'a StoredEmbeddingStat>,
    /// `false` makes both footprints `disabled`.
    pub persisted_storage: bool,
}

impl Default for PersistedSizes<'_> {
    fn default() -> Self {
        Self {
            store: None,
            raw_key: None,
            evaluated_key: None,
            raw_stat: None,
            evaluated_stat: None,
            persisted_storage: true,
        }
    }
}

fn measured(stat: &StoredEmbeddingStat) -> PersistedArtifactFootprint {
    PersistedArtifactFootprint {
        status: PersistedStatus::Measured,
        bytes: Some(stat.size_bytes),
        uri: Some(stat.uri.to_string()),
        storage_format: Some(stat.storage_format.to_string()),
        reason: None,
    }
}

/// vertebrae's `_persisted_array_footprint`: the footprint of one array and
/// the warning to add, if any. Public for the distributed aggregation.
pub fn persisted_array_footprint(
    store: Option<&dyn EmbeddingStore>,
    key: Option<&str>,
    stat: Option<&StoredEmbeddingStat>,
    enabled: bool,
) -> (PersistedArtifactFootprint, Option<String>) {
    if !enabled {
        return (PersistedArtifactFootprint::with_status(PersistedStatus::Disabled), None);
    }
    if let Some(stat) = stat {
        return (measured(stat), None);
    }
    let (Some(store), Some(key)) = (store, key.filter(|key| !key.is_empty())) else {
        return (PersistedArtifactFootprint::with_status(PersistedStatus::NotPersisted), None);
    };
    match store.stat(key) {
        Ok(stat) => (measured(&stat), None),
        Err(StoreError::NotFound(_)) => {
            (PersistedArtifactFootprint::with_status(PersistedStatus::NotPersisted), None)
        }
        Err(error) => {
            let reason = error.to_string();
            let warning =
                format!("Persisted embedding size is unavailable for {}: {reason}", python_repr(key));
            let footprint = PersistedArtifactFootprint {
                reason: Some(reason),
                ..PersistedArtifactFootprint::with_status(PersistedStatus::Unavailable)
            };
            (footprint, Some(warning))
        }
    }
}

/// An [`EmbeddingFootprint`] and the warnings it brings; the part of
/// vertebrae's `with_embedding_footprint` (and of its distributed variant)
/// that does not touch the profile.
pub fn embedding_footprint(
    raw: &EmbeddingMetadata,
    evaluated: &EmbeddingMetadata,
    persisted: &PersistedSizes<'_>,
) -> Result<(EmbeddingFootprint, Vec<String>), EmbeddingError> {
    let raw_bytes = raw.resident_bytes()?;
    let evaluated_bytes = evaluated.resident_bytes()?;
    let samples = evaluated.sample_count();
    let (raw_persisted, raw_warning) = persisted_array_footprint(
        persisted.store,
        persisted.raw_key,
        persisted.raw_stat,
        persisted.persisted_storage,
    );
    let (evaluated_persisted, evaluated_warning) = persisted_array_footprint(
        persisted.store,
        persisted.evaluated_key,
        persisted.evaluated_stat,
        persisted.persisted_storage,
    );
    let footprint = EmbeddingFootprint {
        raw_bytes,
        evaluated_bytes,
        bytes_per_embedding: int_true_div(evaluated_bytes, samples).unwrap_or(0.0),
        compression_savings_ratio: int_true_div(evaluated_bytes, raw_bytes).map_or(0.0, |ratio| 1.0 - ratio),
        raw_persisted: Some(raw_persisted),
        evaluated_persisted: Some(evaluated_persisted),
    };
    Ok((footprint, raw_warning.into_iter().chain(evaluated_warning).collect()))
}

/// vertebrae's `with_embedding_footprint`: the profile with its embedding
/// footprint set and the store's warnings merged (sorted, de-duplicated).
/// `None` in, `None` out, without looking at the metadata, as vertebrae does.
///
/// ```
/// use tally_profile::{with_embedding_footprint, EmbeddingMetadata, PersistedSizes};
/// use tally_profile::profile::ResourceProfile;
/// let profile = ResourceProfile::from_json_str(r#"{"inference": {"status": "not_measured"},
///   "host_memory": {"status": "disabled"}, "device_memory": {"status": "disabled"},
///   "model": {"status": "unavailable"}}"#).unwrap();
/// let raw = EmbeddingMetadata::dense(10, 768, "float32");
/// let evaluated = EmbeddingMetadata::dense(10, 96, "int8");
/// let profile = with_embedding_footprint(Some(profile), &raw, &evaluated, &PersistedSizes::default())
///     .unwrap()
///     .unwrap();
/// let embedding = profile.embedding.unwrap();
/// assert_eq!(embedding.bytes_per_embedding, 96.0);
/// assert_eq!(embedding.compression_savings_ratio, 1.0 - 960.0 / 30720.0);
/// ```
pub fn with_embedding_footprint(
    profile: Option<ResourceProfile>,
    raw: &EmbeddingMetadata,
    evaluated: &EmbeddingMetadata,
    persisted: &PersistedSizes<'_>,
) -> Result<Option<ResourceProfile>, EmbeddingError> {
    let Some(mut profile) = profile else {
        return Ok(None);
    };
    set_embedding_footprint(&mut profile.embedding, &mut profile.warnings, raw, evaluated, persisted)?;
    Ok(Some(profile))
}

/// What vertebrae's `with_embedding_footprint` and
/// `with_distributed_embedding_footprint` both do to a profile: set its
/// `embedding` to [`embedding_footprint`] of the variants and merge the
/// store's warnings into `warnings` (sorted, de-duplicated). On an error
/// neither is touched.
pub fn set_embedding_footprint(
    embedding: &mut Option<EmbeddingFootprint>,
    warnings: &mut Vec<String>,
    raw: &EmbeddingMetadata,
    evaluated: &EmbeddingMetadata,
    persisted: &PersistedSizes<'_>,
) -> Result<(), EmbeddingError> {
    let (footprint, store_warnings) = embedding_footprint(raw, evaluated, persisted)?;
    *embedding = Some(footprint);
    warnings.extend(store_warnings);
    warnings.sort();
    warnings.dedup();
    Ok(())
}

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
