//! Property suites: warm statistics, throughput, host peaks, contained
//! panics, and artifact footprints that count each real file once.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use proptest::prelude::*;
use support::ScriptClock;
use tally_profile::profile::stats::ns_to_seconds;
use tally_profile::profile::{
    AdapterOperationResult, ArtifactStatus, DeploymentArtifact, DeviceMemoryMeasurement, HostMemoryStatus,
    ModelFootprintMeasurement, ResourceAdapterMetadata,
};
use tally_profile::{
    CallSpec, HookError, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler,
    deployment_artifact_footprint,
};

fn host_off() -> ProfilerConfig {
    ProfilerConfig { host_memory: false, ..ProfilerConfig::default() }
}

/// Profiles calls of the given durations (ns) and sample counts.
fn profile_of(calls: &[(u64, u64)]) -> tally_profile::profile::ResourceProfile {
    let readings: Vec<u64> = calls.iter().flat_map(|(ns, _)| [1_000, 1_000 + ns]).collect();
    let mut profiler = ResourceProfiler::new(host_off()).with_clock(ScriptClock(readings.into_iter()));
    for (_, samples) in calls {
        profiler.measure_call(|| (), CallSpec::new(*samples, "batch"));
    }
    profiler.finish(false)
}

fn durations() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((1u64..20_000_000_000, 0u64..10_000), 1..300)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn warm_statistics_are_ordered(calls in durations()) {
        let profile = profile_of(&calls);
        let inference = &profile.inference;
        let warm: Vec<f64> = calls[1..].iter().map(|(ns, _)| ns_to_seconds(*ns)).collect();
        prop_assert_eq!(inference.warm_call_count, warm.len() as u64);
        if warm.is_empty() {
            prop_assert_eq!(inference.warm_median_seconds, None);
            prop_assert!(profile.warnings.iter().any(|w| w.starts_with("Warm latency is unavailable")));
        } else {
            let min = warm.iter().copied().fold(f64::INFINITY, f64::min);
            let median = inference.warm_median_seconds.expect("warm calls");
            let p95 = inference.warm_p95_seconds.expect("warm calls");
            let max = inference.warm_max_seconds.expect("warm calls");
            let mean = inference.warm_mean_seconds.expect("warm calls");
            prop_assert!(min <= median && median <= p95 && p95 <= max, "{min} {median} {p95} {max}");
            prop_assert!(min <= mean && mean <= max, "mean {mean} outside [{min}, {max}]");
            prop_assert_eq!(max, warm.iter().copied().fold(0.0, f64::max));
        }
        prop_assert_eq!(inference.first_call_seconds, Some(ns_to_seconds(calls[0].0)));
    }

    #[test]
    fn throughput_is_samples_over_total_seconds(calls in durations()) {
        let profile = profile_of(&calls);
        let inference = &profile.inference;
        let samples: u64 = calls.iter().map(|(_, samples)| samples).sum();
        prop_assert_eq!(inference.materialized_samples, samples);
        prop_assert_eq!(&inference.batch_sizes, &calls.iter().map(|(_, s)| *s).collect::<Vec<_>>());
        let total = inference.total_materialized_seconds.expect("measured");
        let exact_ns: u64 = calls.iter().map(|(ns, _)| ns).sum();
        let exact = exact_ns as f64 / 1e9;
        prop_assert!((total - exact).abs() <= exact * 1e-12, "total {total} vs {exact}");
        prop_assert_eq!(inference.throughput_samples_per_second, Some(samples as f64 / total));
    }

    #[test]
    fn host_peak_is_at_least_the_baseline(sizes in prop::collection::vec(0usize..(8 << 20), 1..6)) {
        let mut profiler = ResourceProfiler::new(ProfilerConfig::default());
        for size in &sizes {
            let touched = profiler.measure_call(|| {
                let mut buffer = vec![0u8; *size];
                for index in (0..buffer.len()).step_by(4096) {
                    buffer[index] = 1;
                }
                buffer.len()
            }, CallSpec::new(1, "batch"));
            prop_assert_eq!(touched, *size);
        }
        let host = profiler.finish(false).host_memory;
        if host.status == HostMemoryStatus::Measured {
            let baseline = host.baseline_rss_bytes.expect("measured");
            let peak = host.peak_rss_bytes.expect("measured");
            prop_assert!(peak >= baseline);
            prop_assert_eq!(host.peak_increase_bytes, Some(peak - baseline));
        }
    }

    #[test]
    fn a_panicking_adapter_never_changes_the_result(
        panics in prop::collection::vec(any::<bool>(), 6),
        values in prop::collection::vec(any::<i64>(), 1..8),
    ) {
        let adapter = Panicky(panics.clone().try_into().expect("six flags"));
        let mut profiler = ResourceProfiler::new(host_off()).with_adapter(Box::new(adapter));
        let results: Vec<i64> =
            values.iter().map(|value| profiler.measure_call(|| value.wrapping_mul(3), CallSpec::new(1, "b"))).collect();
        let expected: Vec<i64> = values.iter().map(|value| value.wrapping_mul(3)).collect();
        prop_assert_eq!(results, expected);
        let profile = profiler.finish(false);
        prop_assert_eq!(profile.inference.batch_sizes.len(), values.len());
        let panic_warnings = profile.warnings.iter().filter(|warning| warning.contains("failed with panic")).count();
        // The peak hook only runs after a successful reset.
        let peak_runs = !panics[2];
        let expected_warnings = panics.iter().enumerate().filter(|(hook, panics)| **panics && (*hook != 3 || peak_runs)).count();
        prop_assert_eq!(panic_warnings, expected_warnings);
    }
}

/// Panics in the hooks whose flag is set, in the order metadata,
/// synchronize, reset, peak, model, artifacts.
struct Panicky([bool; 6]);

impl Panicky {
    fn maybe(&self, hook: usize) {
        if self.0[hook] {
            panic!("hook {hook} panicked");
        }
    }
}

impl ResourceProfileAdapter for Panicky {
    fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
        self.maybe(0);
        Ok(ResourceAdapterMetadata::default())
    }
    fn synchronize(&mut self) -> Result<AdapterOperationResult, HookError> {
        self.maybe(1);
        Ok(AdapterOperationResult::succeeded())
    }
    fn reset_peak_device_memory(&mut self) -> Result<AdapterOperationResult, HookError> {
        self.maybe(2);
        Ok(AdapterOperationResult::succeeded())
    }
    fn peak_device_memory(&mut self) -> Result<DeviceMemoryMeasurement, HookError> {
        self.maybe(3);
        Ok(DeviceMemoryMeasurement::unavailable(None::<String>))
    }
    fn model_footprint(&mut self) -> Result<ModelFootprintMeasurement, HookError> {
        self.maybe(4);
        Ok(ModelFootprintMeasurement::unavailable(None::<String>))
    }
    fn deployment_artifacts(&mut self) -> Result<Vec<DeploymentArtifact>, HookError> {
        self.maybe(5);
        Ok(Vec::new())
    }
}

/// A small tree: files in `d0`..`d2` (nested `d0/sub`), each file of a
/// distinct size, and symlinks to files, some leaving their directory.
#[derive(Debug, Clone)]
struct Tree {
    files: Vec<(String, u64)>,
    links: Vec<(String, usize)>,
}

const DIRS: [&str; 4] = ["d0", "d0/sub", "d1", "d2"];

fn tree() -> impl Strategy<Value = Tree> {
    prop::collection::vec((prop::sample::select(&DIRS[..]), 1u64..5000), 1..10)
        .prop_flat_map(|files| {
            let files: Vec<(String, u64)> = files
                .into_iter()
                .enumerate()
                .map(|(i, (dir, size))| (format!("{dir}/f{i}.bin"), size))
                .collect();
            let count = files.len();
            let links = prop::collection::vec((prop::sample::select(&DIRS[..]), 0..count), 0..5);
            (Just(files), links)
        })
        .prop_map(|(files, links)| Tree {
            files,
            links: links
                .into_iter()
                .enumerate()
                .map(|(i, (dir, target))| (format!("{dir}/l{i}"), target))
                .collect(),
        })
}

fn build(root: &Path, tree: &Tree) {
    for dir in DIRS {
        std::fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    for (path, size) in &tree.files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("under root")).expect("mkdir");
        std::fs::write(&path, vec![0u8; *size as usize]).expect("write");
    }
    for (path, target) in &tree.links {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("under root")).expect("mkdir");
        std::os::unix::fs::symlink(root.join(&tree.files[*target].0), &path).expect("symlink");
    }
}

/// A declaration: a file, a link or a directory (recursive).
fn declarations(tree: &Tree) -> Vec<(String, bool)> {
    let mut all: Vec<(String, bool)> = tree.files.iter().map(|(path, _)| (path.clone(), false)).collect();
    all.extend(tree.links.iter().map(|(path, _)| (path.clone(), false)));
    all.extend(DIRS.iter().map(|dir| ((*dir).to_owned(), true)));
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn each_real_file_is_counted_once(
        tree in tree(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..12),
        seed in any::<u64>(),
    ) {
        let temp = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(temp.path()).expect("canonical");
        build(&root, &tree);
        let candidates = declarations(&tree);
        let chosen: Vec<(String, bool)> = picks.iter().map(|pick| pick.get(&candidates).clone()).collect();
        let as_artifacts = |order: &[(String, bool)]| -> Vec<DeploymentArtifact> {
            order
                .iter()
                .map(|(path, recursive)| {
                    DeploymentArtifact::new(root.join(path).to_string_lossy()).expect("non-empty").recursive(*recursive)
                })
                .collect()
        };
        // Every real file a declaration reaches, counted once.
        let mut expected = BTreeSet::new();
        for (path, recursive) in &chosen {
            let full = root.join(path);
            if *recursive {
                for (file, _) in &tree.files {
                    if root.join(file).starts_with(&full) {
                        expected.insert(root.join(file));
                    }
                }
            } else {
                expected.insert(std::fs::canonicalize(&full).expect("files and links exist"));
            }
        }
        let size_of = |path: &Path| std::fs::metadata(path).expect("exists").len();
        let expected_bytes: u64 = expected.iter().map(|path| size_of(path)).sum();
        let mut reversed = chosen.clone();
        reversed.reverse();
        let mut rotated = chosen.clone();
        let len = rotated.len();
        rotated.rotate_left((seed as usize) % len);
        for order in [&chosen, &reversed, &rotated] {
            let results = deployment_artifact_footprint(&as_artifacts(order));
            prop_assert_eq!(results.len(), order.len());
            let counted = |status: ArtifactStatus| matches!(status, ArtifactStatus::Measured | ArtifactStatus::Partial);
            let bytes: u64 = results.iter().filter(|r| counted(r.status)).map(|r| r.bytes).sum();
            let files: u64 = results.iter().filter(|r| counted(r.status)).map(|r| r.file_count).sum();
            prop_assert_eq!(bytes, expected_bytes, "order {:?}: {:?}", order, results);
            prop_assert_eq!(files, expected.len() as u64);
            for result in &results {
                prop_assert!(result.status != ArtifactStatus::Missing && result.status != ArtifactStatus::Unreadable);
                if result.status == ArtifactStatus::Duplicate {
                    prop_assert_eq!(result.bytes, 0);
                }
            }
        }
    }
}
