//! Properties of the aggregation over generated worker profiles.
//!
//! Durations are generated as whole ticks of 2^-20 s (below 2^31 ticks), so
//! every sum of them is exact in `f64` and the float figures can be compared
//! exactly across worker orders and against integer arithmetic. With
//! arbitrary floats, reordering changes the last bits of the sums, exactly
//! as it does in vertebrae (Python adds left to right).

use proptest::prelude::*;
use serde_json::Map;
use tally_distributed::{
    AggregateError, AggregateOptions, DistributedResourceProfile, DistributedStatus,
    aggregate_distributed_resource_profiles, aggregate_in_chunks,
};
use tally_profile::EmbeddingMetadata;
use tally_profile::profile::{
    ArtifactFootprint, ArtifactStatus, DeviceMemoryProfile, DeviceMemoryStatus, EmbeddingFootprint,
    FootprintStatus, HostMemoryProfile, HostMemoryStatus, InferenceProfile, ModelFootprint,
    PersistedArtifactFootprint, PersistedStatus, ProfileStatus, ResourceProfile,
};

const TICK: f64 = 1.0 / (1u64 << 20) as f64;

const WARNINGS: [&str; 4] = ["a warning", "b warning", "Zulu", "ünïcode"];

#[derive(Debug, Clone)]
struct Worker {
    status: ProfileStatus,
    first_ticks: Option<u32>,
    warm_count: u64,
    warm_mean_ticks: Option<u32>,
    total_ticks: Option<u32>,
    samples: u64,
    rss: Option<u64>,
    device_peak: Option<u64>,
    /// 0: unavailable, 1: model A measured, 2: model A partial (other
    /// artifacts), 3: model B.
    model: u8,
    warnings: Vec<&'static str>,
    persisted: Option<u64>,
}

fn model(kind: u8) -> ModelFootprint {
    let mut model = ModelFootprint::unmeasured(match kind {
        0 => FootprintStatus::Unavailable,
        2 => FootprintStatus::Partial,
        _ => FootprintStatus::Measured,
    });
    if kind == 0 {
        return model;
    }
    let width = if kind == 3 { 2 } else { 4 };
    model.parameter_status = FootprintStatus::Measured;
    model.parameter_count = Some(1000);
    model.parameter_bytes = Some(1000 * width);
    model.weight_dtypes = vec![if kind == 3 { "float16" } else { "float32" }.to_owned()];
    if kind == 2 {
        model.artifacts.push(ArtifactFootprint {
            path: "weights.bin".into(),
            resolved_path: "/models/weights.bin".into(),
            role: "weights".into(),
            recursive: false,
            status: ArtifactStatus::Missing,
            bytes: 0,
            file_count: 0,
            reason: Some("missing".into()),
        });
    }
    model
}

impl Worker {
    fn profile(&self) -> ResourceProfile {
        let measured = self.status == ProfileStatus::Measured;
        let mut inference = InferenceProfile::unmeasured(self.status);
        if measured {
            inference.first_call_seconds = self.first_ticks.map(|ticks| f64::from(ticks) * TICK);
            inference.warm_call_count = self.warm_count;
            inference.warm_mean_seconds = self.warm_mean_ticks.map(|ticks| f64::from(ticks) * TICK);
            inference.total_materialized_seconds = self.total_ticks.map(|ticks| f64::from(ticks) * TICK);
            inference.materialized_samples = self.samples;
        }
        let host_memory = match self.rss {
            Some(peak) => HostMemoryProfile {
                peak_rss_bytes: Some(peak),
                ..HostMemoryProfile::unmeasured(HostMemoryStatus::Measured)
            },
            None => HostMemoryProfile::unmeasured(HostMemoryStatus::Disabled),
        };
        let device_memory = match self.device_peak {
            Some(peak) => DeviceMemoryProfile {
                peak_allocated_bytes: Some(peak),
                ..DeviceMemoryProfile::unmeasured(DeviceMemoryStatus::Measured)
            },
            None => DeviceMemoryProfile::unmeasured(DeviceMemoryStatus::Unavailable),
        };
        let embedding = self.persisted.map(|bytes| EmbeddingFootprint {
            raw_bytes: 10,
            evaluated_bytes: 10,
            bytes_per_embedding: 1.0,
            compression_savings_ratio: 0.0,
            raw_persisted: None,
            evaluated_persisted: Some(PersistedArtifactFootprint {
                bytes: Some(bytes),
                ..PersistedArtifactFootprint::with_status(PersistedStatus::Measured)
            }),
        });
        let mut warnings: Vec<String> = self.warnings.iter().map(|w| (*w).to_owned()).collect();
        warnings.sort();
        warnings.dedup();
        ResourceProfile {
            status: self.status,
            inference,
            host_memory,
            device_memory,
            model: model(self.model),
            embedding,
            context: Map::new(),
            warnings,
        }
    }
}

prop_compose! {
    /// One worker; the model kinds are drawn from `models`.
    fn arb_worker(models: &'static [u8])(
        status in prop_oneof![
            6 => Just(ProfileStatus::Measured),
            1 => Just(ProfileStatus::NotMeasured),
            1 => Just(ProfileStatus::NotMeasuredCacheHit),
        ],
        first_ticks in proptest::option::weighted(0.9, 0u32..(1 << 31)),
        warm_count in 0u64..50,
        warm_mean_ticks in proptest::option::of(0u32..(1 << 31)),
        total_ticks in proptest::option::weighted(0.9, 0u32..(1 << 31)),
        samples in 0u64..100_000,
        // Few distinct values, so maxima tie often.
        rss in proptest::option::of(prop_oneof![Just(1u64 << 30), Just(3u64 << 30), 0u64..(1 << 33)]),
        device_peak in proptest::option::of(prop_oneof![Just(7u64 << 30), 0u64..(1 << 35)]),
        model in proptest::sample::select(models),
        warnings in proptest::sample::subsequence(WARNINGS.to_vec(), 0..=2),
        persisted in proptest::option::of(0u64..(1 << 40)),
    ) -> Worker {
        Worker { status, first_ticks, warm_count, warm_mean_ticks, total_ticks, samples, rss, device_peak,
            model, warnings, persisted }
    }
}

/// Workers with consistent models (unavailable or model A), unique keys.
fn arb_job() -> impl Strategy<Value = (Vec<(String, ResourceProfile)>, Vec<String>)> {
    (proptest::collection::vec(arb_worker(&[0, 1, 2]), 0..40), 0usize..4).prop_map(|(workers, missing)| {
        let pairs: Vec<(String, ResourceProfile)> = workers
            .iter()
            .enumerate()
            .map(|(index, worker)| (format!("shard-{index}"), worker.profile()))
            .collect();
        let mut all: Vec<String> = pairs.iter().map(|(key, _)| key.clone()).collect();
        all.extend((0..missing).map(|index| format!("missing-{index}")));
        (pairs, all)
    })
}

fn merged() -> EmbeddingMetadata {
    EmbeddingMetadata::dense(100, 8, "float32")
}

fn aggregate(pairs: &[(String, ResourceProfile)], all: &[String]) -> DistributedResourceProfile {
    let options = AggregateOptions { all_shard_keys: Some(all), ..Default::default() };
    aggregate_distributed_resource_profiles(pairs, &merged(), &options).expect("consistent models")
}

fn measured(pairs: &[(String, ResourceProfile)]) -> impl Iterator<Item = &(String, ResourceProfile)> {
    pairs.iter().filter(|(_, profile)| profile.status == ProfileStatus::Measured)
}

/// The first measured worker (in `pairs` order) with the largest value.
fn expected_max(
    pairs: &[(String, ResourceProfile)],
    get: fn(&ResourceProfile) -> Option<u64>,
) -> Option<(String, u64)> {
    let mut best: Option<(String, u64)> = None;
    for (key, profile) in measured(pairs) {
        if let Some(value) = get(profile)
            && best.as_ref().is_none_or(|(_, known)| value > *known)
        {
            best = Some((key.clone(), value));
        }
    }
    best
}

fn rss(profile: &ResourceProfile) -> Option<u64> {
    profile.host_memory.peak_rss_bytes
}

fn device(profile: &ResourceProfile) -> Option<u64> {
    profile.device_memory.peak_allocated_bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn order_does_not_matter_except_for_tie_breaking(
        // The workers, and the same workers shuffled.
        (pairs, all, shuffled) in arb_job()
            .prop_flat_map(|(pairs, all)| (Just(pairs.clone()), Just(all), Just(pairs).prop_shuffle())),
    ) {
        let original = aggregate(&pairs, &all);
        let reordered = aggregate(&shuffled, &all);
        // Tie-breaking follows the order each was given.
        prop_assert_eq!(
            reordered.max_worker_peak_rss_shard_key.clone(),
            expected_max(&shuffled, rss).map(|(key, _)| key)
        );
        prop_assert_eq!(
            reordered.max_worker_peak_device_shard_key.clone(),
            expected_max(&shuffled, device).map(|(key, _)| key)
        );
        // The model is the first measured worker's; only its identity is order-free.
        let first_model = measured(&shuffled)
            .map(|(_, profile)| &profile.model)
            .find(|model| model.status != FootprintStatus::Unavailable)
            .cloned();
        prop_assert_eq!(&reordered.model, &first_model);
        prop_assert_eq!(
            original.model.as_ref().map(|m| (m.parameter_count, m.parameter_bytes, m.weight_dtypes.clone())),
            reordered.model.as_ref().map(|m| (m.parameter_count, m.parameter_bytes, m.weight_dtypes.clone()))
        );
        // Everything else is identical.
        let normalize = |mut profile: DistributedResourceProfile| {
            profile.max_worker_peak_rss_shard_key = None;
            profile.max_worker_peak_device_shard_key = None;
            profile.model = None;
            profile
        };
        prop_assert_eq!(normalize(original), normalize(reordered));
    }

    #[test]
    fn counts_status_and_throughput_follow_from_the_workers((pairs, all) in arb_job()) {
        let result = aggregate(&pairs, &all);
        let measured_count = measured(&pairs).count() as u64;
        prop_assert!(result.profiled_shard_count <= result.shard_count);
        prop_assert_eq!(result.profiled_shard_count, measured_count);
        prop_assert_eq!(result.shard_count, all.len() as u64);
        let status = match (measured_count, measured_count == all.len() as u64) {
            (0, _) => DistributedStatus::NotMeasured,
            (_, true) => DistributedStatus::Measured,
            _ => DistributedStatus::Partial,
        };
        prop_assert_eq!(result.status, status);
        // Integer arithmetic, independent of the float path.
        let samples: u64 = measured(&pairs).map(|(_, p)| p.inference.materialized_samples).sum();
        let ticks: u64 = measured(&pairs)
            .map(|(_, p)| (p.inference.total_materialized_seconds.unwrap_or(0.0) / TICK) as u64)
            .sum();
        prop_assert_eq!(result.materialized_samples, samples);
        let seconds = ticks as f64 * TICK;
        prop_assert_eq!(result.total_compute_seconds, (measured_count > 0).then_some(seconds));
        prop_assert_eq!(
            result.aggregate_compute_throughput_samples_per_second,
            (ticks > 0).then(|| samples as f64 / seconds)
        );
        let warm: u64 = measured(&pairs).map(|(_, p)| p.inference.warm_call_count).sum();
        let warm_ticks: u64 = measured(&pairs)
            .map(|(_, p)| (p.inference.warm_mean_seconds.unwrap_or(0.0) / TICK) as u64 * p.inference.warm_call_count)
            .sum();
        prop_assert_eq!(result.warm_call_count, warm);
        prop_assert_eq!(result.warm_mean_seconds, (warm > 0).then(|| warm_ticks as f64 * TICK / warm as f64));
        let persisted: Vec<u64> = pairs
            .iter()
            .filter_map(|(_, p)| p.embedding.as_ref()?.evaluated_persisted.as_ref()?.bytes)
            .collect();
        prop_assert_eq!(result.shard_persisted_bytes, (!persisted.is_empty()).then(|| persisted.iter().sum()));
        let mut warnings: Vec<String> = pairs.iter().flat_map(|(_, p)| p.warnings.clone()).collect();
        warnings.sort();
        warnings.dedup();
        prop_assert_eq!(&result.warnings, &warnings);
    }

    #[test]
    fn every_max_bounds_each_worker_and_is_attained((pairs, all) in arb_job()) {
        let result = aggregate(&pairs, &all);
        for (getter, value, key) in [
            (rss as fn(&ResourceProfile) -> Option<u64>, result.max_worker_peak_rss_bytes, &result.max_worker_peak_rss_shard_key),
            (device, result.max_worker_peak_device_allocated_bytes, &result.max_worker_peak_device_shard_key),
        ] {
            for (_, profile) in measured(&pairs) {
                if let Some(worker) = getter(profile) {
                    prop_assert!(value.is_some_and(|max| max >= worker));
                }
            }
            let holder = pairs.iter().find(|(candidate, _)| Some(candidate) == key.as_ref());
            prop_assert_eq!(holder.and_then(|(_, profile)| getter(profile)), value);
        }
        let firsts: Vec<f64> =
            measured(&pairs).filter_map(|(_, p)| p.inference.first_call_seconds).collect();
        let distribution = &result.worker_first_calls;
        prop_assert_eq!(distribution.count, firsts.len() as u64);
        if let (Some(max), Some(p95), Some(median)) =
            (distribution.max_seconds, distribution.p95_seconds, distribution.median_seconds)
        {
            let min = firsts.iter().copied().fold(f64::INFINITY, f64::min);
            prop_assert!(firsts.iter().all(|&first| first <= max));
            prop_assert!(firsts.contains(&max));
            prop_assert!(min <= median && median <= p95 && p95 <= max);
        } else {
            prop_assert!(firsts.is_empty());
        }
    }

    #[test]
    fn parallel_equals_sequential_for_any_split(
        workers in proptest::collection::vec(arb_worker(&[0, 1, 2, 3]), 0..60),
        raw_seconds in proptest::collection::vec(1e-6f64..100.0, 60),
        chunk in 1usize..70,
    ) {
        // Arbitrary floats here: the sums' rounding must match too.
        let pairs: Vec<(String, ResourceProfile)> = workers
            .iter()
            .zip(&raw_seconds)
            .enumerate()
            .map(|(index, (worker, seconds))| {
                let mut profile = worker.profile();
                if profile.inference.total_materialized_seconds.is_some() {
                    profile.inference.total_materialized_seconds = Some(*seconds);
                    profile.inference.warm_mean_seconds = Some(seconds / 3.0);
                }
                (format!("w{index}"), profile)
            })
            .collect();
        let options = AggregateOptions::default();
        let sequential = aggregate_distributed_resource_profiles(&pairs, &merged(), &options);
        let parallel = aggregate_in_chunks(&pairs, &merged(), &options, chunk);
        prop_assert_eq!(&sequential, &parallel);
        // Model B among model A workers is vertebrae's error in both paths.
        let models: Vec<u8> = workers
            .iter()
            .filter(|w| w.status == ProfileStatus::Measured && w.model != 0)
            .map(|w| if w.model == 3 { 3 } else { 1 })
            .collect();
        let inconsistent = models.windows(2).any(|pair| pair[0] != pair[1]);
        let is_model_error = matches!(sequential, Err(AggregateError::InconsistentModelFootprint { .. }));
        prop_assert_eq!(inconsistent, is_model_error);
    }
}
