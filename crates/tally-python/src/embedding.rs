//! `tally.profiling`'s embedding footprints and distributed aggregation:
//! vertebrae 1.1.0's `with_embedding_footprint`,
//! `with_distributed_embedding_footprint` and
//! `aggregate_distributed_resource_profiles` over tally-profile's and
//! tally-distributed's functions of the same names.
//!
//! This file only converts. Embeddings become a
//! [`tally_profile::EmbeddingSource`]: a metadata `dict` its fields, a scipy
//! sparse matrix its component arrays' sizes, anything else what
//! `numpy.asarray` makes of it (shape and element size). A store becomes a
//! [`tally_profile::EmbeddingStore`] whose exceptions are sorted as
//! vertebrae's `try`/`except` sorts them; profiles are read and built as
//! `tally.profiling`'s dataclasses (vertebrae's instances are read too).
//! Every size, ratio, status, reason and warning is computed in Rust.
//!
//! Conversions happen before the computation, so where an input holds
//! two faults, the one this file meets first is raised: a shape entry
//! that `int()` refuses, say, before vertebrae's "must define shape"
//! `ValueError` about the same dict.

use std::cell::RefCell;

use pyo3::exceptions::{
    PyAttributeError, PyException, PyFileNotFoundError, PyImportError, PyOverflowError, PyTypeError,
    PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use tally_distributed::{AggregateError, AggregateOptions, ResourceProfileLike};
use tally_profile::profile::ResourceProfile;
use tally_profile::{
    EmbeddingError, EmbeddingMetadata, EmbeddingSource, EmbeddingStore, PersistedSizes, StoreError,
    StoredEmbeddingStat,
};

use crate::profiling::{build, from_instance, profile_like_json};

/// Python's truth value of an argument, as vertebrae's `if not enabled`
/// reads `persisted_storage` (so `0` and `None` disable it, as in vertebrae).
pub struct Truthy(bool);

impl<'a, 'py> FromPyObject<'a, 'py> for Truthy {
    type Error = PyErr;

    fn extract(object: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        object.is_truthy().map(Truthy)
    }
}

/// Python's `int(value)` as a size: a negative or wider-than-64-bit
/// integer is an `OverflowError` (tally's sizes are `u64`).
fn int_of(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    tally_profile::python::python_int(value)
}

/// Every entry of a shape-like sequence through `int()`.
fn ints_of(value: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    value.try_iter()?.map(|item| int_of(&item?)).collect()
}

/// The object's `shape` attribute as vertebrae's `_embedding_sample_count`
/// finds it (`getattr(value, "shape", None)`): `None` without one, no
/// entries when it is falsy.
fn declared_shape(value: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u64>>> {
    let shape = match value.getattr("shape") {
        Ok(shape) => shape,
        Err(error) if error.is_instance_of::<PyAttributeError>(value.py()) => return Ok(None),
        Err(error) => return Err(error),
    };
    if shape.is_none() {
        return Ok(None);
    }
    if !shape.is_truthy()? {
        return Ok(Some(Vec::new()));
    }
    ints_of(&shape).map(Some)
}

/// `metadata.get(key)`, `None` for an absent key or a `None` value. The
/// method is called, not the dict slot read: a dict subclass (scipy's
/// `dok_matrix` is one) answers with its own `get`, as in vertebrae.
fn get<'py>(metadata: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    let value = metadata.call_method1("get", (key,))?;
    Ok((!value.is_none()).then_some(value))
}

/// A metadata dict's `shape`, `dtype`, `sparse` and `nnz`. A falsy shape
/// reads as no shape; a dtype reads as `numpy.dtype(value).str` (a string
/// numpy does not know stays as it is).
fn metadata_of(metadata: &Bound<'_, PyDict>) -> PyResult<EmbeddingMetadata> {
    let py = metadata.py();
    let shape = match get(metadata, "shape")? {
        Some(shape) if shape.is_truthy()? => ints_of(&shape)?,
        _ => Vec::new(),
    };
    let dtype = match get(metadata, "dtype")? {
        None => None,
        Some(dtype) => match dtype.cast::<PyString>() {
            // A name numpy knows in this process is read as numpy's own
            // `str` of it: a package may register dtypes (ml_dtypes, which
            // JAX and TensorFlow import, adds `bfloat16`), and vertebrae sizes
            // them with `np.dtype`. A name numpy refuses stays as given, so
            // tally's own reading raises numpy's error at vertebrae's point.
            Ok(text) => match py.import("numpy")?.getattr("dtype")?.call1((&text,)) {
                Ok(known) => Some(known.getattr("str")?.extract()?),
                Err(_) => Some(text.to_str()?.to_owned()),
            },
            Err(_) => Some(py.import("numpy")?.getattr("dtype")?.call1((dtype,))?.getattr("str")?.extract()?),
        },
    };
    let sparse = match get(metadata, "sparse")? {
        Some(flag) => flag.is_truthy()?,
        None => false,
    };
    let nnz = get(metadata, "nnz")?.map(|nnz| int_of(&nnz)).transpose()?;
    Ok(EmbeddingMetadata { shape, dtype, sparse, nnz })
}

/// Whether scipy calls the value sparse; without scipy nothing is, as in
/// vertebrae's `is_sparse_matrix`.
fn is_sparse(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = value.py();
    match py.import("scipy.sparse") {
        Ok(sparse) => sparse.getattr("issparse")?.call1((value,))?.is_truthy(),
        Err(error) if error.is_instance_of::<PyImportError>(py) => Ok(false),
        Err(error) => Err(error),
    }
}

/// An embedding argument as tally's description of it.
fn source_of(value: &Bound<'_, PyAny>) -> PyResult<EmbeddingSource> {
    if let Ok(metadata) = value.cast::<PyDict>() {
        return metadata_of(metadata).map(EmbeddingSource::Metadata);
    }
    if is_sparse(value)? {
        // `data` is required; the index arrays are those the format has.
        let mut component_bytes = vec![int_of(&value.getattr("data")?.getattr("nbytes")?)?];
        for name in ["indices", "indptr", "row", "col"] {
            let component = match value.getattr(name) {
                Ok(component) => component,
                Err(error) if error.is_instance_of::<PyAttributeError>(value.py()) => continue,
                Err(error) => return Err(error),
            };
            if !component.is_none() {
                component_bytes.push(int_of(&component.getattr("nbytes")?)?);
            }
        }
        return Ok(EmbeddingSource::Sparse { component_bytes, shape: declared_shape(value)? });
    }
    let array = value.py().import("numpy")?.getattr("asarray")?.call1((value,))?;
    Ok(EmbeddingSource::Dense {
        array_shape: ints_of(&array.getattr("shape")?)?,
        itemsize: int_of(&array.getattr("dtype")?.getattr("itemsize")?)?,
        shape: declared_shape(value)?,
    })
}

/// A stat object (vertebrae's `ArtifactStat` or any object with its three
/// attributes) read as vertebrae reads it: `int(size_bytes)`, `str(uri)`,
/// `str(storage_format)`.
fn stat_of(stat: &Bound<'_, PyAny>) -> PyResult<StoredEmbeddingStat> {
    let size_bytes = int_of(&stat.getattr("size_bytes")?)?;
    let uri = stat.getattr("uri")?.str()?.to_str()?.to_owned();
    let storage_format = stat.getattr("storage_format")?.str()?.to_str()?.to_owned();
    StoredEmbeddingStat::new(uri, size_bytes, storage_format)
        .map_err(|error| PyValueError::new_err(error.message().to_owned()))
}

/// A Python store (`stat_array(key)`) as tally's [`EmbeddingStore`].
///
/// vertebrae contains what `stat_array` raises: `FileNotFoundError` means
/// not persisted, any other `Exception` unavailable. Anything else (a
/// `KeyboardInterrupt`, or an error reading the stat it returned, which
/// vertebrae reads outside its `try`) escapes: it is kept, no further call
/// is made, and [`PythonStore::raise_escaped`] raises it once the
/// computation returns, whose result is then discarded.
struct PythonStore<'py> {
    store: Bound<'py, PyAny>,
    escaped: RefCell<Option<PyErr>>,
}

impl<'py> PythonStore<'py> {
    fn new(store: &Bound<'py, PyAny>) -> Self {
        Self { store: store.clone(), escaped: RefCell::new(None) }
    }

    fn escape(&self, error: PyErr) -> StoreError {
        *self.escaped.borrow_mut() = Some(error);
        StoreError::NotFound(String::new())
    }

    fn raise_escaped(&self) -> PyResult<()> {
        self.escaped.borrow_mut().take().map_or(Ok(()), Err)
    }

    /// vertebrae's `f"{type(exc).__name__}: {exc}"`, in tally's parts.
    fn contained(&self, error: &PyErr) -> PyResult<StoreError> {
        let py = self.store.py();
        Ok(StoreError::Failed {
            kind: error.get_type(py).name()?.to_str()?.to_owned().into(),
            message: error.value(py).str()?.to_str()?.to_owned(),
        })
    }
}

impl EmbeddingStore for PythonStore<'_> {
    fn stat(&self, key: &str) -> Result<StoredEmbeddingStat, StoreError> {
        if self.escaped.borrow().is_some() {
            // The result is discarded for the escaped error; do not call again.
            return Err(StoreError::NotFound(String::new()));
        }
        let py = self.store.py();
        match self.store.call_method1("stat_array", (key,)) {
            Ok(stat) => stat_of(&stat).map_err(|error| self.escape(error)),
            Err(error) if error.is_instance_of::<PyFileNotFoundError>(py) => {
                Err(StoreError::NotFound(error.to_string()))
            }
            Err(error) if error.is_instance_of::<PyException>(py) => {
                Err(self.contained(&error).unwrap_or_else(|failure| self.escape(failure)))
            }
            Err(error) => Err(self.escape(error)),
        }
    }
}

/// The keyword arguments every function shares, read: the stats given
/// directly only when persisted sizes are on (vertebrae never looks at
/// them otherwise).
struct Persisted<'py> {
    store: Option<PythonStore<'py>>,
    enabled: bool,
    stats: Vec<Option<StoredEmbeddingStat>>,
}

impl<'py> Persisted<'py> {
    fn read(
        store: Option<&Bound<'py, PyAny>>,
        stats: &[Option<&Bound<'py, PyAny>>],
        enabled: bool,
    ) -> PyResult<Self> {
        let stats = stats
            .iter()
            .map(|stat| match stat {
                Some(stat) if enabled => stat_of(stat).map(Some),
                _ => Ok(None),
            })
            .collect::<PyResult<_>>()?;
        Ok(Self { store: store.map(PythonStore::new), enabled, stats })
    }

    fn store(&self) -> Option<&dyn EmbeddingStore> {
        self.store.as_ref().map(|store| store as &dyn EmbeddingStore)
    }

    fn stat(&self, index: usize) -> Option<&StoredEmbeddingStat> {
        self.stats.get(index).and_then(Option::as_ref)
    }

    fn raise_escaped(&self) -> PyResult<()> {
        self.store.as_ref().map_or(Ok(()), PythonStore::raise_escaped)
    }
}

/// The Python exception vertebrae raises for the same fault.
fn embedding_error(error: EmbeddingError) -> PyErr {
    let message = error.to_string();
    match error {
        EmbeddingError::IncompleteMetadata | EmbeddingError::NotAMatrix { .. } => {
            PyValueError::new_err(message)
        }
        EmbeddingError::UnknownDtype(_) | EmbeddingError::RemovedDtypeAlias(_) => {
            PyTypeError::new_err(message)
        }
        EmbeddingError::Overflow => PyOverflowError::new_err(message),
    }
}

fn aggregate_error(error: AggregateError) -> PyErr {
    match error {
        AggregateError::Embedding(error) => embedding_error(error),
        AggregateError::Overflow { .. } => PyOverflowError::new_err(error.to_string()),
        AggregateError::InconsistentModelFootprint { .. } => PyValueError::new_err(error.to_string()),
    }
}

fn like_object<'py>(py: Python<'py>, like: &ResourceProfileLike) -> PyResult<Bound<'py, PyAny>> {
    let json = like.to_json_value().map_err(|error| PyValueError::new_err(error.to_string()))?;
    let name = match like {
        ResourceProfileLike::Local(_) => "ResourceProfile",
        ResourceProfileLike::Distributed(_) => "DistributedResourceProfile",
    };
    build(py, name, &json)
}

/// Both footprint functions: vertebrae's two are the same `replace` on
/// either profile class, so each takes either.
#[allow(clippy::too_many_arguments)] // vertebrae's keyword arguments
fn with_footprint<'py>(
    profile: &Bound<'py, PyAny>,
    raw_embeddings: &Bound<'py, PyAny>,
    evaluated_embeddings: &Bound<'py, PyAny>,
    store: Option<&Bound<'py, PyAny>>,
    raw_key: Option<&str>,
    evaluated_key: Option<&str>,
    raw_stat: Option<&Bound<'py, PyAny>>,
    evaluated_stat: Option<&Bound<'py, PyAny>>,
    persisted_storage: Truthy,
) -> PyResult<Bound<'py, PyAny>> {
    let py = profile.py();
    if profile.is_none() {
        return Ok(py.None().into_bound(py));
    }
    let like = ResourceProfileLike::from_json_value(profile_like_json(profile)?)
        .map_err(|error| PyValueError::new_err(error.to_string()))?;
    let raw = source_of(raw_embeddings)?;
    let evaluated = source_of(evaluated_embeddings)?;
    let persisted = Persisted::read(store, &[raw_stat, evaluated_stat], persisted_storage.0)?;
    let sizes = PersistedSizes {
        store: persisted.store(),
        raw_key,
        evaluated_key,
        raw_stat: persisted.stat(0),
        evaluated_stat: persisted.stat(1),
        persisted_storage: persisted.enabled,
    };
    let outcome = match like {
        ResourceProfileLike::Local(profile) => {
            tally_profile::with_embedding_footprint(Some(profile), &raw, &evaluated, &sizes)
                .map(|profile| profile.map(ResourceProfileLike::Local))
        }
        ResourceProfileLike::Distributed(profile) => {
            tally_distributed::with_distributed_embedding_footprint(Some(profile), &raw, &evaluated, &sizes)
                .map(|profile| profile.map(ResourceProfileLike::Distributed))
        }
    };
    persisted.raise_escaped()?;
    match outcome.map_err(embedding_error)? {
        // vertebrae returns `dataclasses.replace(profile, embedding=...,
        // warnings=...)`: every other field of the result is the very object
        // the given profile holds (callers compare `a.inference is
        // b.inference`), so only the two computed fields are taken from
        // tally's result.
        Some(like) => {
            let computed = like_object(py, &like)?;
            if !profile.get_type().is(computed.get_type()) {
                // vertebrae's own instance: tally's class comes back whole.
                return Ok(computed);
            }
            let changes = PyDict::new(py);
            changes.set_item("embedding", computed.getattr("embedding")?)?;
            changes.set_item("warnings", computed.getattr("warnings")?)?;
            py.import("dataclasses")?.getattr("replace")?.call((profile,), Some(&changes))
        }
        // A profile was given, so one comes back.
        None => Ok(py.None().into_bound(py)),
    }
}

/// Defines one of vertebrae's two footprint functions as a `#[pyfunction]`
/// with the given documentation: both take the same arguments, converted
/// here once, and run [`with_footprint`], which takes either profile class.
macro_rules! footprint_function {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (
            profile, raw_embeddings, evaluated_embeddings, *, store=None, raw_key=None, evaluated_key=None,
            raw_stat=None, evaluated_stat=None, persisted_storage=Truthy(true)
        ))]
        #[pyo3(text_signature = "(profile, raw_embeddings, evaluated_embeddings, *, store=None, raw_key=None, \
                                 evaluated_key=None, raw_stat=None, evaluated_stat=None, persisted_storage=True)")]
        #[allow(clippy::too_many_arguments)] // vertebrae's keyword arguments
        pub fn $name<'py>(
            profile: &Bound<'py, PyAny>,
            raw_embeddings: &Bound<'py, PyAny>,
            evaluated_embeddings: &Bound<'py, PyAny>,
            store: Option<&Bound<'py, PyAny>>,
            raw_key: Option<String>,
            evaluated_key: Option<String>,
            raw_stat: Option<&Bound<'py, PyAny>>,
            evaluated_stat: Option<&Bound<'py, PyAny>>,
            persisted_storage: Truthy,
        ) -> PyResult<Bound<'py, PyAny>> {
            with_footprint(
                profile,
                raw_embeddings,
                evaluated_embeddings,
                store,
                raw_key.as_deref(),
                evaluated_key.as_deref(),
                raw_stat,
                evaluated_stat,
                persisted_storage,
            )
        }
    };
}

footprint_function!(
    /// The profile with the resident and persisted footprint of its raw and
    /// evaluated embeddings (arrays, scipy sparse matrices or metadata dicts)
    /// and the store's warnings; None stays None.
    with_embedding_footprint
);

footprint_function!(
    /// Update variant storage while retaining distributed inference evidence:
    /// the aggregate with its variant's raw and evaluated embedding footprint
    /// and the store's warnings; None stays None.
    with_distributed_embedding_footprint
);

/// One `(shard_key, profile)` pair, unpacked as Python unpacks it.
fn worker_of(item: &Bound<'_, PyAny>) -> PyResult<(String, ResourceProfile)> {
    let parts: Vec<Bound<'_, PyAny>> = item.try_iter()?.collect::<PyResult<_>>()?;
    let [key, profile] = parts.as_slice() else {
        return Err(PyValueError::new_err(tally_profile::python_unpack_message(2, parts.len())));
    };
    let name = profile.get_type().name()?;
    if name != "ResourceProfile" {
        return Err(PyTypeError::new_err(format!("expected a ResourceProfile, got {name}")));
    }
    Ok((key.extract()?, from_instance(profile, "ResourceProfile")?))
}

/// Aggregate worker observations without presenting them as one local run:
/// `profiles` are `(shard_key, ResourceProfile)` pairs, `merged_embeddings`
/// the merged array, sparse matrix or metadata dict.
#[pyfunction]
#[pyo3(signature = (
    profiles, *, merged_embeddings, all_shard_keys=None, store=None, merged_key=None, merged_stat=None,
    persisted_storage=Truthy(true)
))]
#[pyo3(
    text_signature = "(profiles, *, merged_embeddings, all_shard_keys=None, store=None, merged_key=None, \
                         merged_stat=None, persisted_storage=True)"
)]
pub fn aggregate_distributed_resource_profiles<'py>(
    profiles: &Bound<'py, PyAny>,
    merged_embeddings: &Bound<'py, PyAny>,
    all_shard_keys: Option<&Bound<'py, PyAny>>,
    store: Option<&Bound<'py, PyAny>>,
    merged_key: Option<String>,
    merged_stat: Option<&Bound<'py, PyAny>>,
    persisted_storage: Truthy,
) -> PyResult<Bound<'py, PyAny>> {
    let py = profiles.py();
    let workers: Vec<(String, ResourceProfile)> =
        profiles.try_iter()?.map(|item| worker_of(&item?)).collect::<PyResult<_>>()?;
    let all_shard_keys: Option<Vec<String>> = all_shard_keys
        .map(|keys| keys.try_iter()?.map(|key| key?.extract()).collect::<PyResult<_>>())
        .transpose()?;
    let merged = source_of(merged_embeddings)?;
    let persisted = Persisted::read(store, &[merged_stat], persisted_storage.0)?;
    let options = AggregateOptions {
        all_shard_keys: all_shard_keys.as_deref(),
        store: persisted.store(),
        merged_key: merged_key.as_deref(),
        merged_stat: persisted.stat(0),
        persisted_storage: persisted.enabled,
    };
    let outcome = tally_distributed::aggregate_distributed_resource_profiles(&workers, &merged, &options);
    persisted.raise_escaped()?;
    let aggregate = outcome.map_err(aggregate_error)?;
    like_object(py, &ResourceProfileLike::Distributed(aggregate))
}
