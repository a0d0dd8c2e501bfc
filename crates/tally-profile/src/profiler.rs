//! `ResourceProfiler`: measures the calls a program already makes and builds
//! vertebrae's `ResourceProfile` from them.

use std::borrow::Cow;
use std::num::NonZeroU64;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::time::Duration;

use crate::profile::stats::{
    ns_to_seconds, numpy_max, numpy_mean, numpy_median, numpy_percentile, numpy_sum, python_sum,
};
use crate::profile::{
    AdapterOperationResult, ArtifactStatus, DeviceMeasurementStatus, DeviceMemoryMeasurement,
    DeviceMemoryProfile, DeviceMemoryStatus, FootprintStatus, HostMemoryProfile, HostMemoryStatus,
    InferenceProfile, ModelFootprint, ModelFootprintMeasurement, ModelMeasurementStatus, OperationStatus,
    ProfileStatus, ResourceAdapterMetadata, ResourceProfile,
};
use serde_json::{Map, Value, json};

use crate::adapter::{HookError, ResourceProfileAdapter};
use crate::clock::{Clock, MonotonicClock};
use crate::deployment::deployment_artifact_footprint;
use crate::host::{HostMemoryMode, HostWindow};

/// What to measure; vertebrae's `ResourceProfilingConfig` (less the
/// embedding and quality settings, which belong to other calls).
///
/// Unlike vertebrae's config, which is opt-in, the default is enabled: a
/// program that builds a profiler wants a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfilerConfig {
    /// `false` makes `measure_call` only run the call.
    pub enabled: bool,
    /// Track the process's resident set.
    pub host_memory: bool,
    /// Ask the adapter for allocator peaks.
    pub device_memory: bool,
    /// Sampling period of the fallback RSS sampler, in nanoseconds
    /// (vertebrae's default 0.01 s).
    pub host_sample_interval_ns: NonZeroU64,
    /// Which host-memory methods may be used.
    pub host_memory_mode: HostMemoryMode,
}

impl Default for ProfilerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            host_memory: true,
            device_memory: true,
            host_sample_interval_ns: NonZeroU64::new(10_000_000).unwrap_or(NonZeroU64::MIN),
            host_memory_mode: HostMemoryMode::Auto,
        }
    }
}

/// How one call is counted: vertebrae's `measure_call` keyword arguments.
///
/// ```
/// use tally_profile::CallSpec;
/// let probe = CallSpec::new(1, "planning_probe").materialized(false);
/// assert!(!probe.is_materialized());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSpec {
    samples: u64,
    call_type: Cow<'static, str>,
    materialized: bool,
    includes_fit: bool,
}

impl CallSpec {
    /// A materialized call of `samples` samples, of the given type (e.g.
    /// `"batch"`), that does not fit the model.
    pub fn new(samples: u64, call_type: impl Into<Cow<'static, str>>) -> Self {
        Self { samples, call_type: call_type.into(), materialized: true, includes_fit: false }
    }

    /// Whether the call's output is kept (a counted call) or thrown away (a
    /// planning probe, which only counts once marked materialized).
    pub fn materialized(mut self, materialized: bool) -> Self {
        self.materialized = materialized;
        self
    }

    /// Whether the call also fits the model (reported for the first call).
    pub fn includes_fit(mut self, includes_fit: bool) -> Self {
        self.includes_fit = includes_fit;
        self
    }

    /// Whether the call counts as materialized.
    pub fn is_materialized(&self) -> bool {
        self.materialized
    }
}

/// One measured call, with its duration in integer nanoseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// From just before the call to just after the synchronization that
    /// follows it.
    pub duration_ns: u64,
    /// Samples the call processed.
    pub samples: u64,
    /// The call's type, e.g. `"batch"`.
    pub call_type: Cow<'static, str>,
    /// Whether it counts towards latency and throughput.
    pub materialized: bool,
    /// Whether it also fitted the model.
    pub includes_fit: bool,
}

enum HostState {
    NotStarted,
    Open(HostWindow),
    Failed,
}

/// Observes real inference calls without adding any of its own;
/// vertebrae's `ResourceProfiler`.
///
/// The first measured call is the first call; the rest are warm calls. The
/// closure's value comes back untouched, and a panic inside it propagates
/// after its peak memory has been recorded.
///
/// ```
/// use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};
/// use tally_profile::profile::ProfileStatus;
/// let mut profiler = ResourceProfiler::new(ProfilerConfig::default());
/// let mut outputs = Vec::new();
/// for batch in [[1.0f32, 2.0], [3.0, 4.0]] {
///     let output = profiler.measure_call(|| batch.iter().sum::<f32>(), CallSpec::new(2, "batch"));
///     outputs.push(output);
/// }
/// assert_eq!(outputs, [3.0, 7.0]);
/// let profile = profiler.finish(false);
/// assert_eq!(profile.status, ProfileStatus::Measured);
/// assert_eq!(profile.inference.warm_call_count, 1);
/// assert_eq!(profile.inference.batch_sizes, [2, 2]);
/// ```
///
/// `A` is the adapter's type, a `dyn ResourceProfileAdapter` by default; a
/// profiler that must move between threads (one owned by a Python object,
/// which any thread may drop) is made for `dyn ResourceProfileAdapter +
/// Send + Sync` with [`ResourceProfiler::for_adapter_type`].
pub struct ResourceProfiler<
    C: Clock = MonotonicClock,
    A: ResourceProfileAdapter + ?Sized = dyn ResourceProfileAdapter,
> {
    config: ProfilerConfig,
    adapter: Option<Box<A>>,
    streaming: bool,
    context: Map<String, Value>,
    clock: C,
    records: Vec<CallRecord>,
    host: HostState,
    device_reset_attempted: bool,
    device_reset_result: Option<AdapterOperationResult>,
    synchronized: Option<bool>,
    warnings: Vec<String>,
    adapter_metadata: Option<ResourceAdapterMetadata>,
}

/// The message of a caught panic: `panic!` with a literal carries a
/// `&str`, with formatting a `String`; any other payload has none.
///
/// ```
/// use std::panic::{catch_unwind, panic_any};
/// use tally_profile::panic_text;
/// let formatted = catch_unwind(|| panic!("adapter {} failed", 3)).unwrap_err();
/// assert_eq!(panic_text(formatted.as_ref()), Some("adapter 3 failed"));
/// let literal = catch_unwind(|| panic!("no device")).unwrap_err();
/// assert_eq!(panic_text(literal.as_ref()), Some("no device"));
/// let other = catch_unwind(|| panic_any(7_u32)).unwrap_err();
/// assert_eq!(panic_text(other.as_ref()), None);
/// ```
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    panic_text(payload).unwrap_or("non-string panic payload").to_owned()
}

fn failure_warning(hook: &str, error: &HookError) -> String {
    if error.is_invalid_payload() {
        return format!("Resource profiling adapter hook '{hook}' returned an invalid typed payload.");
    }
    format!("Resource profiling adapter hook '{hook}' failed with {error}")
}

/// Runs one hook with its errors and panics contained; `None` means failed
/// (the warning is recorded) and the caller uses the hook's default.
fn contained<T, A: ResourceProfileAdapter + ?Sized>(
    adapter: &mut A,
    warnings: &mut Vec<String>,
    hook: &str,
    call: impl FnOnce(&mut A) -> Result<T, HookError>,
) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(|| call(adapter))) {
        Ok(Ok(value)) => Some(value),
        Ok(Err(error)) => {
            warnings.push(failure_warning(hook, &error));
            None
        }
        Err(payload) => {
            warnings.push(failure_warning(hook, &HookError::new("panic", panic_message(payload.as_ref()))));
            None
        }
    }
}

fn is_cpu_device(device: Option<&str>) -> bool {
    device.is_some_and(|device| device.to_lowercase().contains("cpu"))
}

/// Python's `a or b` on optional strings: an empty string is falsy.
fn or_else(first: Option<String>, second: Option<&String>) -> Option<String> {
    first.filter(|text| !text.is_empty()).or_else(|| second.cloned())
}

fn nonnegative_difference(value: Option<u64>, baseline: Option<u64>) -> Option<u64> {
    Some(value?.saturating_sub(baseline?))
}

impl ResourceProfiler<MonotonicClock> {
    /// A profiler with no adapter, not streaming, no caller context, on the
    /// monotonic clock.
    pub fn new(config: ProfilerConfig) -> Self {
        Self::for_adapter_type(config)
    }
}

impl<A: ResourceProfileAdapter + ?Sized> ResourceProfiler<MonotonicClock, A> {
    /// [`ResourceProfiler::new`] for adapters of type `A`, e.g. `dyn
    /// ResourceProfileAdapter + Send + Sync`, which makes the profiler `Send`
    /// and `Sync`.
    ///
    /// ```
    /// use tally_profile::{
    ///     BaseResourceProfileAdapter, MonotonicClock, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler,
    /// };
    /// type Shared = ResourceProfiler<MonotonicClock, dyn ResourceProfileAdapter + Send + Sync>;
    /// let profiler = Shared::for_adapter_type(ProfilerConfig::default())
    ///     .with_adapter(Box::new(BaseResourceProfileAdapter));
    /// std::thread::spawn(move || drop(profiler)).join().unwrap();
    /// ```
    pub fn for_adapter_type(config: ProfilerConfig) -> Self {
        Self {
            config,
            adapter: None,
            streaming: false,
            context: Map::new(),
            clock: MonotonicClock::new(),
            records: Vec::new(),
            host: HostState::NotStarted,
            device_reset_attempted: false,
            device_reset_result: None,
            synchronized: None,
            warnings: Vec::new(),
            adapter_metadata: None,
        }
    }
}

impl<C: Clock, A: ResourceProfileAdapter + ?Sized> ResourceProfiler<C, A> {
    /// The same profiler reading time from `clock`.
    pub fn with_clock<D: Clock>(self, clock: D) -> ResourceProfiler<D, A> {
        ResourceProfiler {
            config: self.config,
            adapter: self.adapter,
            streaming: self.streaming,
            context: self.context,
            clock,
            records: self.records,
            host: self.host,
            device_reset_attempted: self.device_reset_attempted,
            device_reset_result: self.device_reset_result,
            synchronized: self.synchronized,
            warnings: self.warnings,
            adapter_metadata: self.adapter_metadata,
        }
    }

    /// Uses `adapter` for synchronization, device memory and model footprint.
    pub fn with_adapter(mut self, adapter: Box<A>) -> Self {
        self.adapter = Some(adapter);
        self
    }

    /// Builds the adapter with `factory`, as vertebrae calls an extractor's
    /// `get_resource_profile_adapter`: a failure (or panic) leaves the
    /// profiler without an adapter and with a warning naming that hook.
    pub fn with_adapter_factory(mut self, factory: impl FnOnce() -> Result<Box<A>, HookError>) -> Self {
        let outcome = catch_unwind(AssertUnwindSafe(factory))
            .unwrap_or_else(|payload| Err(HookError::new("panic", panic_message(payload.as_ref()))));
        match outcome {
            Ok(adapter) => self.adapter = Some(adapter),
            Err(error) => self.warnings.push(failure_warning("get_resource_profile_adapter", &error)),
        }
        self
    }

    /// Whether the calls stream their outputs (reported in the context).
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// Caller context merged into the profile's context last, so it wins
    /// over the profiler's own keys, as in vertebrae.
    pub fn with_context(mut self, context: Map<String, Value>) -> Self {
        self.context = context;
        self
    }

    /// The calls measured so far.
    pub fn records(&self) -> &[CallRecord] {
        &self.records
    }

    /// The configuration.
    pub fn config(&self) -> &ProfilerConfig {
        &self.config
    }

    /// Runs `call` and measures it. The value is returned untouched; when the
    /// profiler is disabled, the call just runs.
    pub fn measure_call<T>(&mut self, call: impl FnOnce() -> T, spec: CallSpec) -> T {
        match self.measure_fallible(|| Ok::<T, std::convert::Infallible>(call()), spec) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// [`ResourceProfiler::measure_call`] of a call that can fail, as
    /// vertebrae measures a Python call that raises: the error is returned
    /// untouched and the call is not recorded (nor synchronized after), but
    /// the host-memory window still observes it.
    pub fn measure_fallible<T, E>(
        &mut self,
        call: impl FnOnce() -> Result<T, E>,
        spec: CallSpec,
    ) -> Result<T, E> {
        if !self.config.enabled {
            return call();
        }
        if self.config.host_memory && matches!(self.host, HostState::NotStarted) {
            let interval = Duration::from_nanos(self.config.host_sample_interval_ns.get());
            self.host = match HostWindow::open(self.config.host_memory_mode, interval) {
                Some(window) => HostState::Open(window),
                None => HostState::Failed,
            };
        }
        let before = self.synchronize();
        self.accumulate_synchronization(before);
        if !self.device_reset_attempted
            && self.config.device_memory
            && let Some(adapter) = self.adapter.as_deref_mut()
        {
            let reset = contained(adapter, &mut self.warnings, "reset_peak_device_memory", |adapter| {
                adapter.reset_peak_device_memory()
            })
            .unwrap_or_else(|| {
                AdapterOperationResult::unavailable(Some("The adapter device-memory reset hook failed."))
            });
            self.device_reset_result = Some(reset);
            self.device_reset_attempted = true;
        }
        let start = self.clock.now_ns();
        let outcome = catch_unwind(AssertUnwindSafe(call));
        if matches!(outcome, Ok(Ok(_))) {
            let after = self.synchronize();
            self.accumulate_synchronization(after);
        }
        let end = self.clock.now_ns();
        if let HostState::Open(window) = &mut self.host {
            window.observe();
        }
        match outcome {
            Ok(Err(error)) => Err(error),
            Ok(Ok(value)) => {
                self.records.push(CallRecord {
                    duration_ns: end.saturating_sub(start),
                    samples: spec.samples,
                    call_type: spec.call_type,
                    materialized: spec.materialized,
                    includes_fit: spec.includes_fit,
                });
                Ok(value)
            }
            Err(payload) => resume_unwind(payload),
        }
    }

    /// Turns the last call (a planning probe) into a counted call.
    pub fn mark_last_call_materialized(&mut self) {
        if let Some(last) = self.records.last_mut() {
            last.materialized = true;
        }
    }

    fn synchronize(&mut self) -> bool {
        let Some(adapter) = self.adapter.as_deref_mut() else {
            return true;
        };
        let result = contained(adapter, &mut self.warnings, "synchronize", |adapter| adapter.synchronize());
        result.is_some_and(|result| {
            matches!(result.status, OperationStatus::Succeeded | OperationStatus::NotApplicable)
        })
    }

    fn accumulate_synchronization(&mut self, synchronized: bool) {
        self.synchronized = Some(self.synchronized.map_or(synchronized, |before| before && synchronized));
    }

    fn metadata(&mut self) -> ResourceAdapterMetadata {
        if let Some(metadata) = &self.adapter_metadata {
            return metadata.clone();
        }
        let metadata = match self.adapter.as_deref_mut() {
            Some(adapter) => contained(adapter, &mut self.warnings, "metadata", |adapter| adapter.metadata())
                .unwrap_or_default(),
            None => ResourceAdapterMetadata::default(),
        };
        if metadata.device_resolution.as_str() == "model_state_conflicts_with_profiling_hint" {
            self.warnings
                .push("The loaded model device overrides a conflicting profiling_device hint.".to_owned());
        }
        self.adapter_metadata = Some(metadata.clone());
        metadata
    }

    /// Builds the profile from the calls measured so far; vertebrae's
    /// `finish`. `cache_hit` says the result was served from a cache (no
    /// call measured). Hooks that read results (`peak_device_memory`,
    /// `model_footprint`, `deployment_artifacts`) run here.
    pub fn finish(&mut self, cache_hit: bool) -> ResourceProfile {
        let inference = self.inference_profile(cache_hit);
        let host_memory = self.host_profile();
        let device_memory = self.device_profile(cache_hit);
        let model = self.model_profile();
        let metadata = self.metadata();
        if !self.records.is_empty() && self.synchronized == Some(false) && metadata.asynchronous {
            self.warnings
                .push("Device execution could not be synchronized; latency is host-observed.".to_owned());
        }
        if inference.warm_call_count == 0 && inference.status == ProfileStatus::Measured {
            self.warnings
                .push("Warm latency is unavailable because only one extractor call was measured.".to_owned());
        }
        let status = if !self.records.is_empty() {
            ProfileStatus::Measured
        } else if cache_hit {
            ProfileStatus::NotMeasuredCacheHit
        } else {
            ProfileStatus::NotMeasured
        };
        let context = self.context_map(cache_hit, &metadata);
        let mut warnings = self.warnings.clone();
        warnings.sort();
        warnings.dedup();
        ResourceProfile {
            status,
            inference,
            host_memory,
            device_memory,
            model,
            embedding: None,
            context,
            warnings,
        }
    }

    fn context_map(&self, cache_hit: bool, metadata: &ResourceAdapterMetadata) -> Map<String, Value> {
        let records = &self.records;
        let call_order: Vec<Value> = records
            .iter()
            .enumerate()
            .map(|(index, record)| {
                json!({
                    "index": index,
                    "call_type": record.call_type,
                    "samples": record.samples,
                    "materialized": record.materialized,
                })
            })
            .collect();
        let synchronization_status = if self.synchronized == Some(true) {
            "synchronized"
        } else if !records.is_empty() {
            "host_observed"
        } else {
            "not_measured"
        };
        let cache_status = if cache_hit {
            "hit"
        } else if !records.is_empty() {
            "miss"
        } else {
            "not_used"
        };
        let mut context = Map::new();
        let mut put = |key: &str, value: Value| {
            context.insert(key.to_owned(), value);
        };
        put("streaming", json!(self.streaming));
        put("call_types", json!(records.iter().map(|record| &record.call_type).collect::<Vec<_>>()));
        put("call_order", Value::Array(call_order));
        put("planning_probe_calls", json!(records.iter().filter(|record| !record.materialized).count()));
        put("first_call_materialized", json!(records.first().map(|record| record.materialized)));
        put("synchronization_status", json!(synchronization_status));
        put("preprocessing_included", json!(true));
        put("output_conversion_included", json!(true));
        put("cache_status", json!(cache_status));
        put("backend", json!(metadata.backend));
        put("device", json!(metadata.device));
        put("device_resolution", json!(metadata.device_resolution.as_str()));
        put("asynchronous", json!(metadata.asynchronous));
        put("synchronization_method", json!(metadata.synchronization_method));
        put("weight_dtypes", json!(metadata.weight_dtypes));
        put("resource_adapter", json!(self.adapter.as_deref().map(|adapter| adapter.name())));
        put(
            "profiling_device_hint",
            json!(self.adapter.as_deref().and_then(|adapter| adapter.profiling_device_hint())),
        );
        if self.config.host_memory
            && let HostState::Open(window) = &self.host
        {
            put("host_memory_method", json!(window.method().as_str()));
        }
        for (key, value) in &self.context {
            put(key, value.clone());
        }
        context
    }

    fn inference_profile(&self, cache_hit: bool) -> InferenceProfile {
        let materialized: Vec<&CallRecord> =
            self.records.iter().filter(|record| record.materialized).collect();
        let Some(first) = materialized.first() else {
            let status =
                if cache_hit { ProfileStatus::NotMeasuredCacheHit } else { ProfileStatus::NotMeasured };
            return InferenceProfile::unmeasured(status);
        };
        let seconds: Vec<f64> = materialized.iter().map(|record| ns_to_seconds(record.duration_ns)).collect();
        let warm = &seconds[1..];
        let total_seconds = python_sum(&seconds);
        let samples = materialized.iter().fold(0u64, |sum, record| sum.saturating_add(record.samples));
        let warm_samples =
            materialized[1..].iter().fold(0u64, |sum, record| sum.saturating_add(record.samples));
        InferenceProfile {
            status: ProfileStatus::Measured,
            first_call_seconds: Some(seconds[0]),
            first_call_includes_fit: first.includes_fit,
            warm_call_count: warm.len() as u64,
            warm_mean_seconds: numpy_mean(warm),
            warm_median_seconds: numpy_median(warm),
            warm_p95_seconds: numpy_percentile(warm, 95.0),
            warm_max_seconds: numpy_max(warm),
            // numpy divides its float64 sum by the integer converted to float64.
            warm_mean_seconds_per_sample: (warm_samples > 0).then(|| numpy_sum(warm) / warm_samples as f64),
            total_materialized_seconds: Some(total_seconds),
            materialized_samples: samples,
            // Python converts the integer to the nearest float, then divides.
            throughput_samples_per_second: (total_seconds > 0.0).then(|| samples as f64 / total_seconds),
            batch_sizes: materialized.iter().map(|record| record.samples).collect(),
        }
    }

    fn host_profile(&self) -> HostMemoryProfile {
        if !self.config.host_memory {
            return HostMemoryProfile::unmeasured(HostMemoryStatus::Disabled);
        }
        let HostState::Open(window) = &self.host else {
            return HostMemoryProfile::unmeasured(HostMemoryStatus::NotMeasured);
        };
        let interval = match window.method() {
            crate::host::HostMemoryMethod::RssSampler => {
                Some(ns_to_seconds(self.config.host_sample_interval_ns.get()))
            }
            _ => None,
        };
        HostMemoryProfile {
            status: HostMemoryStatus::Measured,
            baseline_rss_bytes: Some(window.baseline_bytes()),
            peak_rss_bytes: Some(window.peak_bytes()),
            peak_increase_bytes: Some(window.peak_bytes().saturating_sub(window.baseline_bytes())),
            sample_interval_seconds: interval,
        }
    }

    fn device_profile(&mut self, cache_hit: bool) -> DeviceMemoryProfile {
        let metadata = self.metadata();
        let with_metadata = |status: DeviceMemoryStatus, reason: Option<String>| DeviceMemoryProfile {
            backend: metadata.backend.clone(),
            device: metadata.device.clone(),
            unavailable_reason: reason,
            ..DeviceMemoryProfile::unmeasured(status)
        };
        if !self.config.device_memory {
            return with_metadata(DeviceMemoryStatus::Disabled, None);
        }
        if self.adapter.is_none() {
            return DeviceMemoryProfile {
                unavailable_reason: Some("The extractor does not provide a resource adapter.".to_owned()),
                ..DeviceMemoryProfile::unmeasured(DeviceMemoryStatus::Unavailable)
            };
        }
        if self.records.is_empty() {
            return if cache_hit {
                let reason = "Inference was served from cache; no device-memory window was measured.";
                with_metadata(DeviceMemoryStatus::NotMeasuredCacheHit, Some(reason.to_owned()))
            } else {
                with_metadata(
                    DeviceMemoryStatus::NotMeasured,
                    Some("No extractor calls were measured.".to_owned()),
                )
            };
        }
        let Some(reset) = self.device_reset_result.clone() else {
            let reason = "No device-memory measurement boundary was established.";
            return with_metadata(DeviceMemoryStatus::Unavailable, Some(reason.to_owned()));
        };
        if reset.status != OperationStatus::Succeeded {
            let status = if reset.status == OperationStatus::NotApplicable
                && is_cpu_device(metadata.device.as_deref())
            {
                DeviceMemoryStatus::NotApplicable
            } else {
                DeviceMemoryStatus::Unavailable
            };
            let reason = reset.reason.filter(|reason| !reason.is_empty()).unwrap_or_else(|| {
                if status == DeviceMemoryStatus::NotApplicable {
                    "CPU memory is reported through process RSS.".to_owned()
                } else {
                    "The backend cannot establish a scoped device-memory window.".to_owned()
                }
            });
            if status == DeviceMemoryStatus::Unavailable {
                self.warnings.push(format!("Peak device memory is unavailable: {reason}"));
            }
            return with_metadata(status, Some(reason));
        }
        let payload = match self.adapter.as_deref_mut() {
            Some(adapter) => contained(adapter, &mut self.warnings, "peak_device_memory", |adapter| {
                adapter.peak_device_memory()
            }),
            None => None,
        }
        .unwrap_or_else(|| {
            DeviceMemoryMeasurement::unavailable(Some("The adapter device-memory hook failed."))
        });
        let readings = payload.readings().clone();
        let status = match payload.status() {
            DeviceMeasurementStatus::Measured => DeviceMemoryStatus::Measured,
            DeviceMeasurementStatus::NotApplicable => DeviceMemoryStatus::NotApplicable,
            DeviceMeasurementStatus::Unavailable => {
                let tail = match readings.unavailable_reason.as_deref().filter(|reason| !reason.is_empty()) {
                    Some(reason) => format!(": {reason}"),
                    None => ".".to_owned(),
                };
                self.warnings
                    .push(format!("Peak device memory is unavailable for this extractor backend{tail}"));
                DeviceMemoryStatus::Unavailable
            }
        };
        DeviceMemoryProfile {
            status,
            backend: or_else(readings.backend, metadata.backend.as_ref()),
            device: or_else(readings.device, metadata.device.as_ref()),
            baseline_allocated_bytes: readings.baseline_allocated_bytes,
            baseline_reserved_bytes: readings.baseline_reserved_bytes,
            peak_allocated_bytes: readings.peak_allocated_bytes,
            peak_reserved_bytes: readings.peak_reserved_bytes,
            peak_allocated_increase_bytes: nonnegative_difference(
                readings.peak_allocated_bytes,
                readings.baseline_allocated_bytes,
            ),
            peak_reserved_increase_bytes: nonnegative_difference(
                readings.peak_reserved_bytes,
                readings.baseline_reserved_bytes,
            ),
            unavailable_reason: readings.unavailable_reason,
        }
    }

    fn model_profile(&mut self) -> ModelFootprint {
        let (payload, declarations) = match self.adapter.as_deref_mut() {
            Some(adapter) => {
                let payload = contained(adapter, &mut self.warnings, "model_footprint", |adapter| {
                    adapter.model_footprint()
                })
                .unwrap_or_else(|| {
                    ModelFootprintMeasurement::unavailable(Some("The adapter model-footprint hook failed."))
                });
                let declarations =
                    contained(adapter, &mut self.warnings, "deployment_artifacts", |adapter| {
                        adapter.deployment_artifacts()
                    })
                    .unwrap_or_default();
                (payload, declarations)
            }
            None => (ModelFootprintMeasurement::unavailable(None::<String>), Vec::new()),
        };
        let artifacts = deployment_artifact_footprint(&declarations);
        let counted =
            |status: ArtifactStatus| matches!(status, ArtifactStatus::Measured | ArtifactStatus::Partial);
        let fully =
            |status: ArtifactStatus| matches!(status, ArtifactStatus::Measured | ArtifactStatus::Duplicate);
        let any_counted = artifacts.iter().any(|artifact| counted(artifact.status));
        let checkpoint_bytes = artifacts
            .iter()
            .filter(|artifact| counted(artifact.status))
            .fold(0u64, |sum, artifact| sum.saturating_add(artifact.bytes));
        let parameter_status = if payload.status() == ModelMeasurementStatus::Measured {
            FootprintStatus::Measured
        } else {
            FootprintStatus::Unavailable
        };
        let checkpoint_status = if artifacts.is_empty() {
            FootprintStatus::Unavailable
        } else if artifacts.iter().all(|artifact| fully(artifact.status)) {
            FootprintStatus::Measured
        } else if any_counted {
            FootprintStatus::Partial
        } else {
            FootprintStatus::Unavailable
        };
        let status = match (parameter_status, checkpoint_status) {
            (FootprintStatus::Measured, FootprintStatus::Measured) => FootprintStatus::Measured,
            (FootprintStatus::Measured, _) | (_, FootprintStatus::Measured | FootprintStatus::Partial) => {
                FootprintStatus::Partial
            }
            _ => FootprintStatus::Unavailable,
        };
        if status == FootprintStatus::Unavailable {
            self.warnings.push("Model parameter and checkpoint footprint is unavailable.".to_owned());
        }
        if artifacts.iter().any(|artifact| !fully(artifact.status)) {
            self.warnings
                .push("One or more explicit deployment artifacts could not be fully measured.".to_owned());
        }
        let readings = payload.readings().clone();
        let in_memory_bytes = readings.in_memory_bytes.or_else(|| {
            readings
                .parameter_bytes
                .map(|parameters| parameters.saturating_add(readings.buffer_bytes.unwrap_or(0)))
        });
        ModelFootprint {
            status,
            parameter_status,
            checkpoint_status,
            parameter_count: readings.parameter_count,
            parameter_bytes: readings.parameter_bytes,
            trainable_parameter_count: readings.trainable_parameter_count,
            trainable_parameter_bytes: readings.trainable_parameter_bytes,
            buffer_bytes: readings.buffer_bytes,
            in_memory_bytes,
            checkpoint_bytes: any_counted.then_some(checkpoint_bytes),
            weight_dtypes: readings.weight_dtypes,
            artifacts,
        }
    }
}
