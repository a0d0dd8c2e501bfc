//! Embedding footprint: resident size from shape and dtype, persisted size
//! through an [`EmbeddingStore`]; vertebrae's `with_embedding_footprint`.

use std::borrow::Cow;

use crate::profile::stats::int_true_div;
use crate::profile::{EmbeddingFootprint, PersistedArtifactFootprint, PersistedStatus, ResourceProfile};
use serde_json::Value;
use tally_core::{NonEmptyString, ValidationError};

use crate::pytext::{python_repr, python_unpack_message};

mod local_store;
pub use local_store::LocalEmbeddingStore;

/// Why an embedding footprint could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbeddingError {
    /// The metadata lacks shape, dtype or (for sparse) nnz; vertebrae's message.
    #[error(
        "Embedding metadata must define shape, dtype, sparse, and nnz when used for resource-footprint calculation."
    )]
    IncompleteMetadata,
    /// numpy does not know the dtype (its `repr` is the field), numpy's
    /// `TypeError` message.
    #[error("data type {0} not understood")]
    UnknownDtype(String),
    /// A dtype alias numpy 2 removed (`bool8`, `int0`, ...; its `repr` is
    /// the field), numpy's `TypeError` message.
    #[error("Alias {0} was removed in NumPy 2.0. Use a name without a digit at the end.")]
    RemovedDtypeAlias(String),
    /// A dense array that is not two-dimensional: vertebrae unpacks its
    /// shape into `rows, cols`, and this is Python 3.11's `ValueError`.
    #[error("{}", python_unpack_message(2, *.dimensions))]
    NotAMatrix {
        /// How many dimensions the array has.
        dimensions: usize,
    },
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
            let values = itemsize.checked_add(4).and_then(|entry| nnz.checked_mul(entry));
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

/// What vertebrae can size as embeddings (`_embedding_resident_bytes` and
/// `_embedding_sample_count`): [`EmbeddingMetadata`], or an [`EmbeddingSource`].
pub trait EmbeddingSize {
    /// Bytes the embeddings take in memory.
    fn resident_bytes(&self) -> Result<u64, EmbeddingError>;
    /// How many embeddings there are, for bytes per embedding (0 when unknown).
    fn sample_count(&self) -> u64;
}

impl EmbeddingSize for EmbeddingMetadata {
    fn resident_bytes(&self) -> Result<u64, EmbeddingError> {
        EmbeddingMetadata::resident_bytes(self)
    }
    fn sample_count(&self) -> u64 {
        EmbeddingMetadata::sample_count(self)
    }
}

/// The embeddings vertebrae's footprint functions take: committed metadata
/// (a `dict`), or an in-memory matrix, as a binding reads it from the
/// object (numpy's or scipy's).
///
/// ```
/// use tally_profile::{EmbeddingError, EmbeddingSize, EmbeddingSource};
/// // np.zeros((4, 3), "float16")
/// let dense = EmbeddingSource::Dense { array_shape: vec![4, 3], itemsize: 2, shape: Some(vec![4, 3]) };
/// assert_eq!((dense.resident_bytes(), dense.sample_count()), (Ok(24), 4));
/// // [[1.0, 2.0]]: numpy makes it float64, but a list has no `shape`.
/// let list = EmbeddingSource::Dense { array_shape: vec![1, 2], itemsize: 8, shape: None };
/// assert_eq!((list.resident_bytes(), list.sample_count()), (Ok(16), 0));
/// let vector = EmbeddingSource::Dense { array_shape: vec![5], itemsize: 4, shape: Some(vec![5]) };
/// assert_eq!(vector.resident_bytes(), Err(EmbeddingError::NotAMatrix { dimensions: 1 }));
/// // A CSR matrix: data, indices and indptr.
/// let csr = EmbeddingSource::Sparse { component_bytes: vec![40, 40, 24], shape: Some(vec![5, 4]) };
/// assert_eq!((csr.resident_bytes(), csr.sample_count()), (Ok(104), 5));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbeddingSource {
    /// A metadata dict: vertebrae's `estimate_metadata_resident_bytes`.
    Metadata(EmbeddingMetadata),
    /// Anything numpy makes an array of (`np.asarray(value)`): vertebrae's
    /// `estimate_dense_nbytes`, `rows * cols * itemsize`.
    Dense {
        /// The shape of `np.asarray(value)`; it must have two dimensions.
        array_shape: Vec<u64>,
        /// The array's element size.
        itemsize: u64,
        /// The object's own `shape`, which vertebrae counts samples from;
        /// `None` when it has none (a list of lists).
        shape: Option<Vec<u64>>,
    },
    /// A scipy sparse matrix or array: vertebrae's `sparse_matrix_nbytes`,
    /// the sum of its component arrays' sizes.
    Sparse {
        /// `nbytes` of `data` and of whichever of `indices`, `indptr`,
        /// `row` and `col` the format has.
        component_bytes: Vec<u64>,
        /// The matrix's `shape`.
        shape: Option<Vec<u64>>,
    },
}

impl From<EmbeddingMetadata> for EmbeddingSource {
    fn from(metadata: EmbeddingMetadata) -> Self {
        Self::Metadata(metadata)
    }
}

impl EmbeddingSize for EmbeddingSource {
    fn resident_bytes(&self) -> Result<u64, EmbeddingError> {
        match self {
            Self::Metadata(metadata) => metadata.resident_bytes(),
            Self::Dense { array_shape, itemsize, .. } => {
                let [rows, cols] = array_shape.as_slice() else {
                    return Err(EmbeddingError::NotAMatrix { dimensions: array_shape.len() });
                };
                rows.checked_mul(*cols)
                    .and_then(|count| count.checked_mul(*itemsize))
                    .ok_or(EmbeddingError::Overflow)
            }
            Self::Sparse { component_bytes, .. } => component_bytes
                .iter()
                .try_fold(0u64, |total, bytes| total.checked_add(*bytes))
                .ok_or(EmbeddingError::Overflow),
        }
    }

    /// vertebrae's `int(shape[0]) if shape else 0`.
    fn sample_count(&self) -> u64 {
        match self {
            Self::Metadata(metadata) => metadata.sample_count(),
            Self::Dense { shape, .. } | Self::Sparse { shape, .. } => {
                shape.as_deref().and_then(<[u64]>::first).copied().unwrap_or(0)
            }
        }
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

/// `np.dtype(name).itemsize` for the dtype strings numpy 2 knows on
/// x86-64 Linux: the names (`float32`, `int`, `object`, `str`, ...), which
/// take no byte-order mark, and the type codes and array-protocol strings
/// (`f`, `<f4`, `|b1`, `O`, `<M8[ns]`, `U8`, `V12`, `T`), which may have
/// one. Structured and subarray spellings (`"f4, i8"`, `"(2,)f4"`) are not
/// read; they are [`EmbeddingError::UnknownDtype`] here.
///
/// ```
/// use tally_profile::{dtype_itemsize, EmbeddingError};
/// assert_eq!(dtype_itemsize("float32").unwrap(), 4);
/// assert_eq!(dtype_itemsize("<f2").unwrap(), 2);
/// assert_eq!(dtype_itemsize("U8").unwrap(), 32);
/// assert_eq!(dtype_itemsize("datetime64[ns]").unwrap(), 8);
/// assert!(dtype_itemsize("bfloat16").is_err());
/// // numpy reads byte-order marks on type codes only.
/// assert!(dtype_itemsize("<float32").is_err());
/// assert!(matches!(dtype_itemsize("bool8"), Err(EmbeddingError::RemovedDtypeAlias(_))));
/// ```
pub fn dtype_itemsize(name: &str) -> Result<u64, EmbeddingError> {
    if REMOVED_ALIASES.contains(&name) {
        return Err(EmbeddingError::RemovedDtypeAlias(python_repr(name)));
    }
    if let Some(size) = named_itemsize(name) {
        return Ok(size);
    }
    let code = name.strip_prefix(['<', '>', '=', '|']).unwrap_or(name);
    code_itemsize(code)
        .or_else(|| datetime_itemsize(code))
        .or_else(|| flexible_itemsize(code))
        .ok_or_else(|| EmbeddingError::UnknownDtype(python_repr(name)))
}

/// The aliases numpy 2 removed, which it reports with their own message.
const REMOVED_ALIASES: [&str; 7] = ["bool8", "int0", "uint0", "object0", "str0", "bytes0", "void0"];

/// The dtype names, which numpy reads without a byte-order mark.
fn named_itemsize(name: &str) -> Option<u64> {
    Some(match name {
        "bool" | "bool_" | "int8" | "uint8" | "byte" | "ubyte" => 1,
        "int16" | "uint16" | "short" | "ushort" | "float16" | "half" => 2,
        "int32" | "uint32" | "intc" | "uintc" | "float32" | "single" => 4,
        "int64" | "uint64" | "int" | "int_" | "intp" | "uint" | "uintp" | "long" | "ulong" | "longlong"
        | "ulonglong" | "float64" | "float" | "double" | "complex64" | "csingle" | "object" | "object_" => 8,
        "float128" | "longdouble" | "complex128" | "complex" | "cdouble" => 16,
        "complex256" | "clongdouble" => 32,
        // Flexible types without a length.
        "str" | "str_" | "unicode" | "bytes" | "bytes_" | "void" => 0,
        _ => return None,
    })
}

/// Type codes and fixed-size array-protocol strings (after any byte-order mark).
fn code_itemsize(code: &str) -> Option<u64> {
    Some(match code {
        "?" | "b1" | "b" | "B" | "i1" | "u1" | "c" => 1,
        "h" | "H" | "i2" | "u2" | "e" | "f2" => 2,
        "i" | "I" | "i4" | "u4" | "f" | "f4" => 4,
        "l" | "L" | "q" | "Q" | "p" | "P" | "n" | "N" | "i8" | "u8" | "d" | "f8" | "F" | "c8" | "O"
        | "O4" | "O8" => 8,
        "g" | "f16" | "D" | "c16" | "T" => 16,
        "G" | "c32" => 32,
        _ => return None,
    })
}

/// `datetime64` and `timedelta64` (8 bytes), with an optional `[unit]`.
fn datetime_itemsize(code: &str) -> Option<u64> {
    let (kind, metadata) = match code.find('[') {
        Some(open) => (&code[..open], Some(code[open..].strip_prefix('[')?.strip_suffix(']')?)),
        None => (code, None),
    };
    if !matches!(kind, "M" | "m" | "M8" | "m8" | "datetime64" | "timedelta64") {
        return None;
    }
    let Some(metadata) = metadata else {
        return Some(8);
    };
    let unit = metadata.trim_start_matches(|ch: char| ch.is_ascii_digit());
    let units = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "\u{3bc}s", "ns", "ps", "fs", "as"];
    let known = units.contains(&unit) || (metadata == "generic");
    known.then_some(8)
}

/// Byte strings (`S`, `a`), UCS-4 strings (`U`, 4 bytes a character) and
/// raw bytes (`V`), with an optional decimal length (0 without).
fn flexible_itemsize(code: &str) -> Option<u64> {
    let mut chars = code.chars();
    let kind = chars.next()?;
    let width = chars.as_str();
    let width: u64 = if width.is_empty() {
        0
    } else if width.bytes().all(|byte| byte.is_ascii_digit()) {
        width.parse().ok()?
    } else {
        return None;
    };
    match kind {
        'S' | 'a' | 'V' => Some(width),
        'U' => width.checked_mul(4),
        _ => None,
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
    raw: &(impl EmbeddingSize + ?Sized),
    evaluated: &(impl EmbeddingSize + ?Sized),
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
    raw: &(impl EmbeddingSize + ?Sized),
    evaluated: &(impl EmbeddingSize + ?Sized),
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
    raw: &(impl EmbeddingSize + ?Sized),
    evaluated: &(impl EmbeddingSize + ?Sized),
    persisted: &PersistedSizes<'_>,
) -> Result<(), EmbeddingError> {
    let (footprint, store_warnings) = embedding_footprint(raw, evaluated, persisted)?;
    *embedding = Some(footprint);
    warnings.extend(store_warnings);
    warnings.sort();
    warnings.dedup();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `np.dtype(name).itemsize` (numpy 2.4 on x86-64 Linux), or the
    /// message of numpy's `TypeError`.
    const NUMPY: &[(&str, Result<u64, &str>)] = &[
        ("float32", Ok(4)),
        ("<f4", Ok(4)),
        ("=f4", Ok(4)),
        (">f", Ok(4)),
        ("|i1", Ok(1)),
        ("float16", Ok(2)),
        ("e", Ok(2)),
        ("bool", Ok(1)),
        ("?", Ok(1)),
        ("b1", Ok(1)),
        ("int", Ok(8)),
        ("uint", Ok(8)),
        ("long", Ok(8)),
        ("p", Ok(8)),
        ("N", Ok(8)),
        ("longdouble", Ok(16)),
        ("g", Ok(16)),
        ("clongdouble", Ok(32)),
        ("G", Ok(32)),
        ("complex", Ok(16)),
        ("c8", Ok(8)),
        ("O", Ok(8)),
        ("|O", Ok(8)),
        ("O4", Ok(8)),
        ("object", Ok(8)),
        ("datetime64", Ok(8)),
        ("datetime64[ns]", Ok(8)),
        ("<M8[25s]", Ok(8)),
        ("m8[W]", Ok(8)),
        ("M8[generic]", Ok(8)),
        ("M8[\u{3bc}s]", Ok(8)),
        ("timedelta64[ms]", Ok(8)),
        ("<m", Ok(8)),
        ("c", Ok(1)),
        ("<c", Ok(1)),
        ("S", Ok(0)),
        ("S5", Ok(5)),
        ("S05", Ok(5)),
        ("a3", Ok(3)),
        ("U", Ok(0)),
        ("U5", Ok(20)),
        ("<U3", Ok(12)),
        ("V12", Ok(12)),
        ("str", Ok(0)),
        ("bytes", Ok(0)),
        ("void", Ok(0)),
        ("T", Ok(16)),
        ("bfloat16", Err("data type 'bfloat16' not understood")),
        ("float_", Err("data type 'float_' not understood")),
        ("complex_", Err("data type 'complex_' not understood")),
        ("<float32", Err("data type '<float32' not understood")),
        ("|int8", Err("data type '|int8' not understood")),
        ("i3", Err("data type 'i3' not understood")),
        ("f12", Err("data type 'f12' not understood")),
        ("O16", Err("data type 'O16' not understood")),
        ("M16", Err("data type 'M16' not understood")),
        ("u", Err("data type 'u' not understood")),
        ("S-1", Err("data type 'S-1' not understood")),
        ("float32 ", Err("data type 'float32 ' not understood")),
        ("bool8", Err("Alias 'bool8' was removed in NumPy 2.0. Use a name without a digit at the end.")),
        ("int0", Err("Alias 'int0' was removed in NumPy 2.0. Use a name without a digit at the end.")),
        ("void0", Err("Alias 'void0' was removed in NumPy 2.0. Use a name without a digit at the end.")),
    ];

    #[test]
    fn dtype_sizes_are_numpys() {
        for (name, expected) in NUMPY {
            let found = dtype_itemsize(name).map_err(|error| error.to_string());
            assert_eq!(found, expected.map_err(str::to_owned), "{name:?}");
        }
    }

    #[test]
    fn a_dense_array_must_be_a_matrix_as_vertebrae_unpacks_it() {
        let array = |shape: &[u64]| EmbeddingSource::Dense {
            array_shape: shape.to_vec(),
            itemsize: 4,
            shape: Some(shape.to_vec()),
        };
        let messages: Vec<String> = [&[][..], &[3], &[2, 3, 4]]
            .iter()
            .map(|shape| array(shape).resident_bytes().expect_err("not a matrix").to_string())
            .collect();
        assert_eq!(
            messages,
            [
                "not enough values to unpack (expected 2, got 0)",
                "not enough values to unpack (expected 2, got 1)",
                "too many values to unpack (expected 2)",
            ]
        );
        assert_eq!(array(&[0, 7]).resident_bytes(), Ok(0));
        assert_eq!(array(&[0, 7]).sample_count(), 0);
        assert_eq!(array(&[u64::MAX, 2]).resident_bytes(), Err(EmbeddingError::Overflow));
    }

    #[test]
    fn samples_come_from_the_objects_own_shape() {
        let list = EmbeddingSource::Dense { array_shape: vec![3, 2], itemsize: 8, shape: None };
        assert_eq!((list.resident_bytes(), list.sample_count()), (Ok(48), 0));
        // A 0-d shape `()` is falsy in Python: no samples.
        let scalar = EmbeddingSource::Sparse { component_bytes: vec![8], shape: Some(Vec::new()) };
        assert_eq!(scalar.sample_count(), 0);
        let coo = EmbeddingSource::Sparse { component_bytes: vec![40, 40, 40], shape: Some(vec![5, 4]) };
        assert_eq!((coo.resident_bytes(), coo.sample_count()), (Ok(120), 5));
        let huge = EmbeddingSource::Sparse { component_bytes: vec![u64::MAX, 1], shape: None };
        assert_eq!(huge.resident_bytes(), Err(EmbeddingError::Overflow));
        let metadata = EmbeddingSource::from(EmbeddingMetadata::sparse(10, 50, "float64", 7));
        assert_eq!((metadata.resident_bytes(), metadata.sample_count()), (Ok(7 * 12 + 11 * 4), 10));
    }

    #[test]
    fn footprints_take_either_description() {
        let raw = EmbeddingSource::Dense { array_shape: vec![10, 8], itemsize: 4, shape: Some(vec![10, 8]) };
        let evaluated = EmbeddingMetadata::dense(10, 8, "int8");
        let (footprint, warnings) =
            embedding_footprint(&raw, &evaluated, &PersistedSizes::default()).expect("sizes");
        assert_eq!((footprint.raw_bytes, footprint.evaluated_bytes), (320, 80));
        assert_eq!(footprint.bytes_per_embedding, 8.0);
        assert_eq!(footprint.compression_savings_ratio, 1.0 - 80.0 / 320.0);
        assert!(warnings.is_empty());
        // The CSR entry size overflows before the count multiplies it.
        let wide = EmbeddingMetadata::sparse(1, 1, "V18446744073709551614", 1);
        assert_eq!(wide.resident_bytes(), Err(EmbeddingError::Overflow));
    }
}
