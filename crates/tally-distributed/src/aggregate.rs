//! vertebrae's `aggregate_distributed_resource_profiles`, sequential and
//! rayon-parallel.
//!
//! Both paths summarize runs of consecutive workers into a [`Summary`] and
//! merge summaries left to right; every merge step is associative (integer
//! sums, first-in-order maxima, set unions, "same model as the first"), so
//! any split gives the sequential result. The two float sums are the
//! exception: Python adds left to right and float addition is not
//! associative, so they are always one sequential pass, as in vertebrae.

use std::collections::BTreeSet;

use rayon::prelude::*;
use serde_json::{Map, Value};
use tally_profile::profile::stats::{int_true_div, numpy_max, numpy_median, numpy_percentile, python_sum};
use tally_profile::profile::{
    EmbeddingFootprint, FootprintStatus, ModelFootprint, PersistedStatus, ProfileStatus, ResourceProfile,
};
use tally_profile::{
    EmbeddingError, EmbeddingSize, EmbeddingStore, StoredEmbeddingStat, persisted_array_footprint,
};

use crate::types::{
    DISTRIBUTED_SCOPE, DistributedResourceProfile, DistributedStatus, LatencyDistribution, THROUGHPUT_KIND,
};

/// The keyword arguments of vertebrae's `aggregate_distributed_resource_profiles`
/// besides the profiles and the merged embeddings. The default has no shard
/// list, no store, and persisted-size measurement on.
#[derive(Clone, Copy)]
pub struct AggregateOptions<'a> {
    /// Every shard of the job, reported or not; `None` (or empty, as in
    /// vertebrae's `all_shard_keys or ...`) means the reporting workers' keys.
    pub all_shard_keys: Option<&'a [String]>,
    /// Where the merged embeddings are persisted, if anywhere.
    pub store: Option<&'a dyn EmbeddingStore>,
    /// Key of the merged embeddings in `store`.
    pub merged_key: Option<&'a str>,
    /// A stat already known for the merged embeddings (the store is not asked).
    pub merged_stat: Option<&'a StoredEmbeddingStat>,
    /// `false` makes the merged persisted footprint `disabled`.
    pub persisted_storage: bool,
}

impl Default for AggregateOptions<'_> {
    fn default() -> Self {
        Self {
            all_shard_keys: None,
            store: None,
            merged_key: None,
            merged_stat: None,
            persisted_storage: true,
        }
    }
}

impl std::fmt::Debug for AggregateOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AggregateOptions")
            .field("all_shard_keys", &self.all_shard_keys)
            .field("store", &self.store.map(|_| "dyn EmbeddingStore"))
            .field("merged_key", &self.merged_key)
            .field("merged_stat", &self.merged_stat)
            .field("persisted_storage", &self.persisted_storage)
            .finish()
    }
}

/// Why worker profiles could not be aggregated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AggregateError {
    /// Two measured workers report different models (vertebrae's
    /// `ValueError`, same message); the fields name the first measuring
    /// shard and the first that disagrees with it.
    #[error("Resource-profile shards have inconsistent model footprints.")]
    InconsistentModelFootprint {
        /// The first measured worker with a model footprint.
        first_shard: String,
        /// The first measured worker whose footprint differs from it.
        other_shard: String,
    },
    /// The merged embedding metadata is incomplete or names an unknown dtype.
    #[error(transparent)]
    Embedding(#[from] EmbeddingError),
    /// A count summed over workers does not fit in 64 bits (Python's
    /// integers would hold it; tally's interchange integers are `u64`).
    #[error("{field} summed over the workers exceeds 2^64 - 1")]
    Overflow {
        /// The field, e.g. `materialized_samples`.
        field: &'static str,
    },
}

/// What one run of consecutive workers contributes. Indices are positions
/// in the whole input, so a merged summary still names the right shard.
#[derive(Debug, Default)]
struct Summary<'p> {
    measured: u64,
    /// `None` once the sum overflowed.
    samples: Option<u64>,
    warm_count: Option<u64>,
    host_max: Option<(usize, u64)>,
    device_max: Option<(usize, u64)>,
    /// First measured worker whose model is not `unavailable`.
    model_first: Option<usize>,
    /// First measured worker whose model differs from `model_first`'s.
    model_conflict: Option<usize>,
    shard_persisted: Option<u64>,
    shard_persisted_overflow: bool,
    warnings: BTreeSet<&'p str>,
}

/// The fields of vertebrae's model identity tuple.
fn same_model(a: &ModelFootprint, b: &ModelFootprint) -> bool {
    a.parameter_count == b.parameter_count
        && a.parameter_bytes == b.parameter_bytes
        && a.trainable_parameter_count == b.trainable_parameter_count
        && a.trainable_parameter_bytes == b.trainable_parameter_bytes
        && a.buffer_bytes == b.buffer_bytes
        && a.in_memory_bytes == b.in_memory_bytes
        && a.checkpoint_bytes == b.checkpoint_bytes
        && a.weight_dtypes == b.weight_dtypes
}

/// `max(..., key=value)` keeps the first of equal maxima: the right side
/// wins only when strictly larger.
fn first_max(left: Option<(usize, u64)>, right: Option<(usize, u64)>) -> Option<(usize, u64)> {
    match (left, right) {
        (Some(l), Some(r)) => Some(if r.1 > l.1 { r } else { l }),
        (l, r) => l.or(r),
    }
}

fn measured_persisted_bytes(profile: &ResourceProfile) -> Option<u64> {
    let persisted = profile.embedding.as_ref()?.evaluated_persisted.as_ref()?;
    if persisted.status == PersistedStatus::Measured { persisted.bytes } else { None }
}

impl<'p> Summary<'p> {
    fn empty() -> Self {
        Self { samples: Some(0), warm_count: Some(0), ..Self::default() }
    }

    fn of<K: AsRef<str>>(profiles: &'p [(K, ResourceProfile)], offset: usize) -> Self {
        let mut summary = Self::empty();
        for (position, (_, profile)) in profiles.iter().enumerate() {
            let index = offset + position;
            // Warnings and persisted shard sizes come from every worker,
            // measured or not, as in vertebrae.
            summary.warnings.extend(profile.warnings.iter().map(String::as_str));
            if let Some(bytes) = measured_persisted_bytes(profile) {
                let sum = summary.shard_persisted.unwrap_or(0).checked_add(bytes);
                summary.shard_persisted_overflow |= sum.is_none();
                summary.shard_persisted = Some(sum.unwrap_or(u64::MAX));
            }
            if profile.status != ProfileStatus::Measured {
                continue;
            }
            summary.measured += 1;
            let inference = &profile.inference;
            summary.samples = summary.samples.and_then(|sum| sum.checked_add(inference.materialized_samples));
            summary.warm_count =
                summary.warm_count.and_then(|sum| sum.checked_add(inference.warm_call_count));
            summary.host_max =
                first_max(summary.host_max, profile.host_memory.peak_rss_bytes.map(|v| (index, v)));
            summary.device_max =
                first_max(summary.device_max, profile.device_memory.peak_allocated_bytes.map(|v| (index, v)));
            if profile.model.status != FootprintStatus::Unavailable {
                match summary.model_first {
                    None => summary.model_first = Some(index),
                    Some(first) => {
                        if summary.model_conflict.is_none()
                            && !same_model(&profiles[first - offset].1.model, &profile.model)
                        {
                            summary.model_conflict = Some(index);
                        }
                    }
                }
            }
        }
        summary
    }

    /// `self` followed by `next` (the workers right after `self`'s).
    fn merge<K: AsRef<str>>(mut self, mut next: Self, profiles: &[(K, ResourceProfile)]) -> Self {
        self.measured += next.measured;
        self.samples = self.samples.zip(next.samples).and_then(|(a, b)| a.checked_add(b));
        self.warm_count = self.warm_count.zip(next.warm_count).and_then(|(a, b)| a.checked_add(b));
        self.host_max = first_max(self.host_max, next.host_max);
        self.device_max = first_max(self.device_max, next.device_max);
        match (self.model_first, next.model_first) {
            (None, _) => {
                self.model_first = next.model_first;
                self.model_conflict = next.model_conflict;
            }
            (Some(_), None) => {}
            (Some(first), Some(next_first)) => {
                if self.model_conflict.is_none() {
                    // next's workers all match next_first up to next's
                    // first conflict; so the first worker of next that
                    // differs from `first` is next_first itself, or next's
                    // own first conflict.
                    self.model_conflict =
                        if same_model(&profiles[first].1.model, &profiles[next_first].1.model) {
                            next.model_conflict
                        } else {
                            Some(next_first)
                        };
                }
            }
        }
        self.shard_persisted_overflow |= next.shard_persisted_overflow;
        self.shard_persisted = match (self.shard_persisted, next.shard_persisted) {
            (Some(a), Some(b)) => {
                let sum = a.checked_add(b);
                self.shard_persisted_overflow |= sum.is_none();
                Some(sum.unwrap_or(u64::MAX))
            }
            (a, b) => a.or(b),
        };
        self.warnings.append(&mut next.warnings);
        self
    }
}

/// vertebrae's `aggregate_distributed_resource_profiles` on `(shard_key,
/// profile)` pairs in order, with the merged embeddings described by
/// metadata. Pure: the only side effect is asking `options.store` for the
/// merged array's size.
///
/// Only workers whose profile status is `measured` count towards latency,
/// compute, samples, warm calls, peaks and the model; warnings and
/// persisted shard sizes come from every worker.
///
/// ```
/// use tally_distributed::{aggregate_distributed_resource_profiles, AggregateOptions, DistributedStatus};
/// use tally_profile::{CallSpec, EmbeddingMetadata, ProfilerConfig, ResourceProfiler};
/// let mut workers = Vec::new();
/// for shard in ["shard-0", "shard-1"] {
///     let mut profiler = ResourceProfiler::new(ProfilerConfig::default());
///     for _ in 0..3 {
///         profiler.measure_call(|| (0..1000u64).sum::<u64>(), CallSpec::new(8, "batch"));
///     }
///     workers.push((shard.to_owned(), profiler.finish(false)));
/// }
/// let all = vec!["shard-0".to_owned(), "shard-1".to_owned(), "shard-2".to_owned()];
/// let options = AggregateOptions { all_shard_keys: Some(&all), ..Default::default() };
/// let merged = EmbeddingMetadata::dense(48, 384, "float32");
/// let aggregate = aggregate_distributed_resource_profiles(&workers, &merged, &options)?;
/// assert_eq!(aggregate.status, DistributedStatus::Partial);
/// assert_eq!((aggregate.profiled_shard_count, aggregate.shard_count), (2, 3));
/// assert_eq!(aggregate.materialized_samples, 48);
/// assert_eq!(aggregate.worker_first_calls.count, 2);
/// # Ok::<(), tally_distributed::AggregateError>(())
/// ```
pub fn aggregate_distributed_resource_profiles<K: AsRef<str>>(
    profiles: &[(K, ResourceProfile)],
    merged_embeddings: &(impl EmbeddingSize + ?Sized),
    options: &AggregateOptions<'_>,
) -> Result<DistributedResourceProfile, AggregateError> {
    let summary = Summary::of(profiles, 0);
    let first_calls: Vec<f64> = profiles
        .iter()
        .filter(|(_, profile)| profile.status == ProfileStatus::Measured)
        .filter_map(|(_, profile)| profile.inference.first_call_seconds)
        .collect();
    finish(profiles, summary, first_calls, merged_embeddings, options)
}

/// [`aggregate_distributed_resource_profiles`] on rayon's thread pool, for
/// very many workers; the result is identical (see the module docs).
pub fn aggregate_distributed_resource_profiles_parallel<K: AsRef<str> + Sync>(
    profiles: &[(K, ResourceProfile)],
    merged_embeddings: &(impl EmbeddingSize + ?Sized),
    options: &AggregateOptions<'_>,
) -> Result<DistributedResourceProfile, AggregateError> {
    // A few chunks per thread balance the load; below ~1000 workers per
    // chunk the merge costs more than it saves.
    let per_chunk = (profiles.len() / (rayon::current_num_threads() * 4)).max(1024);
    aggregate_in_chunks(profiles, merged_embeddings, options, per_chunk)
}

/// The parallel aggregation with an explicit chunk length (at least 1):
/// public so tests can force any split.
pub fn aggregate_in_chunks<K: AsRef<str> + Sync>(
    profiles: &[(K, ResourceProfile)],
    merged_embeddings: &(impl EmbeddingSize + ?Sized),
    options: &AggregateOptions<'_>,
    chunk_len: usize,
) -> Result<DistributedResourceProfile, AggregateError> {
    let chunk_len = chunk_len.max(1);
    let summary = profiles
        .par_chunks(chunk_len)
        .enumerate()
        .map(|(chunk, workers)| Summary::of(workers, chunk * chunk_len))
        .reduce(Summary::empty, |left, right| left.merge(right, profiles));
    let first_calls: Vec<f64> = profiles
        .par_iter()
        .filter(|(_, profile)| profile.status == ProfileStatus::Measured)
        .filter_map(|(_, profile)| profile.inference.first_call_seconds)
        .collect();
    finish(profiles, summary, first_calls, merged_embeddings, options)
}

/// Python's `x or 0.0` on an optional float: `None`, `0.0` and `-0.0` give `0.0`.
fn or_zero(value: Option<f64>) -> f64 {
    match value {
        Some(value) if value != 0.0 => value,
        _ => 0.0,
    }
}

fn finish<K: AsRef<str>>(
    profiles: &[(K, ResourceProfile)],
    summary: Summary<'_>,
    first_calls: Vec<f64>,
    merged_embeddings: &(impl EmbeddingSize + ?Sized),
    options: &AggregateOptions<'_>,
) -> Result<DistributedResourceProfile, AggregateError> {
    let key = |index: usize| profiles[index].0.as_ref().to_owned();
    // vertebrae's order of failure: the model check runs before the merged
    // embeddings are sized and before the store is asked.
    let model = match (summary.model_first, summary.model_conflict) {
        (Some(first), Some(other)) => {
            return Err(AggregateError::InconsistentModelFootprint {
                first_shard: key(first),
                other_shard: key(other),
            });
        }
        (Some(first), None) => Some(profiles[first].1.model.clone()),
        (None, _) => None,
    };
    let merged_bytes = merged_embeddings.resident_bytes()?;
    let n_samples = merged_embeddings.sample_count();
    let (merged_persisted, persisted_warning) = persisted_array_footprint(
        options.store,
        options.merged_key,
        options.merged_stat,
        options.persisted_storage,
    );
    let samples = summary.samples.ok_or(AggregateError::Overflow { field: "materialized_samples" })?;
    let warm_count = summary.warm_count.ok_or(AggregateError::Overflow { field: "warm_call_count" })?;
    if summary.shard_persisted_overflow {
        return Err(AggregateError::Overflow { field: "shard_persisted_bytes" });
    }

    let measured =
        || profiles.iter().map(|(_, profile)| profile).filter(|p| p.status == ProfileStatus::Measured);
    // Python's built-in sum, left to right over the measured workers.
    let compute_terms: Vec<f64> =
        measured().map(|p| or_zero(p.inference.total_materialized_seconds)).collect();
    let total_compute = python_sum(&compute_terms);
    let warm_terms: Vec<f64> = measured()
        .map(|p| or_zero(p.inference.warm_mean_seconds) * p.inference.warm_call_count as f64)
        .collect();
    let warm_total = python_sum(&warm_terms);

    let shard_keys: Vec<String> = match options.all_shard_keys {
        Some(keys) if !keys.is_empty() => keys.to_vec(),
        _ => profiles.iter().map(|(key, _)| key.as_ref().to_owned()).collect(),
    };
    let shard_count = shard_keys.len() as u64;
    let status = if summary.measured > 0 && summary.measured == shard_count {
        DistributedStatus::Measured
    } else if summary.measured > 0 {
        DistributedStatus::Partial
    } else {
        DistributedStatus::NotMeasured
    };
    let mut warnings = summary.warnings;
    if let Some(warning) = &persisted_warning {
        warnings.insert(warning.as_str());
    }
    let mut context = Map::new();
    context.insert("measurement_scope".into(), Value::from(DISTRIBUTED_SCOPE));
    context.insert("throughput_kind".into(), Value::from(THROUGHPUT_KIND));

    Ok(DistributedResourceProfile {
        status,
        shard_count,
        profiled_shard_count: summary.measured,
        worker_first_calls: LatencyDistribution {
            count: first_calls.len() as u64,
            median_seconds: numpy_median(&first_calls),
            p95_seconds: numpy_percentile(&first_calls, 95.0),
            max_seconds: numpy_max(&first_calls),
        },
        total_compute_seconds: (summary.measured > 0).then_some(total_compute),
        materialized_samples: samples,
        aggregate_compute_throughput_samples_per_second: (total_compute > 0.0)
            .then(|| samples as f64 / total_compute),
        warm_call_count: warm_count,
        warm_mean_seconds: (warm_count > 0).then(|| warm_total / warm_count as f64),
        max_worker_peak_rss_bytes: summary.host_max.map(|(_, value)| value),
        max_worker_peak_rss_shard_key: summary.host_max.map(|(index, _)| key(index)),
        max_worker_peak_device_allocated_bytes: summary.device_max.map(|(_, value)| value),
        max_worker_peak_device_shard_key: summary.device_max.map(|(index, _)| key(index)),
        model,
        embedding: Some(EmbeddingFootprint {
            raw_bytes: merged_bytes,
            evaluated_bytes: merged_bytes,
            bytes_per_embedding: int_true_div(merged_bytes, n_samples).unwrap_or(0.0),
            compression_savings_ratio: 0.0,
            raw_persisted: Some(merged_persisted.clone()),
            evaluated_persisted: Some(merged_persisted),
        }),
        shard_persisted_bytes: summary.shard_persisted,
        shard_keys,
        context,
        warnings: warnings.into_iter().map(str::to_owned).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tally_profile::{CallSpec, EmbeddingSource, ProfilerConfig, ResourceProfiler};

    fn workers() -> Vec<(String, ResourceProfile)> {
        (0..2)
            .map(|shard| {
                let mut profiler = ResourceProfiler::new(ProfilerConfig::default());
                profiler.measure_call(|| (), CallSpec::new(4, "batch"));
                (format!("shard-{shard}"), profiler.finish(false))
            })
            .collect()
    }

    #[test]
    fn merged_embeddings_may_be_an_array_description() {
        let workers = workers();
        let options = AggregateOptions::default();
        // np.zeros((8, 16), "float32") and a list of lists of the same size.
        let array =
            EmbeddingSource::Dense { array_shape: vec![8, 16], itemsize: 4, shape: Some(vec![8, 16]) };
        let list = EmbeddingSource::Dense { array_shape: vec![8, 16], itemsize: 4, shape: None };
        let from_array =
            aggregate_distributed_resource_profiles(&workers, &array, &options).expect("aggregates");
        let embedding = from_array.embedding.expect("merged footprint");
        assert_eq!((embedding.raw_bytes, embedding.bytes_per_embedding), (512, 64.0));
        let from_list =
            aggregate_distributed_resource_profiles(&workers, &list, &options).expect("aggregates");
        assert_eq!(from_list.embedding.expect("merged footprint").bytes_per_embedding, 0.0);
        let vector = EmbeddingSource::Dense { array_shape: vec![8], itemsize: 4, shape: Some(vec![8]) };
        assert_eq!(
            aggregate_distributed_resource_profiles(&workers, &vector, &options),
            Err(AggregateError::Embedding(EmbeddingError::NotAMatrix { dimensions: 1 }))
        );
    }
}
