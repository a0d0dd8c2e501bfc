//! Behaviour of the profiler that the golden fixtures cannot show: panics,
//! hook call counts, host memory, concurrent windows.

mod support;

use std::cell::Cell;
use std::rc::Rc;

use serde_json::json;
use support::ScriptClock;
use tally_profile::profile::{
    AdapterOperationResult, DeviceMemoryMeasurement, DeviceMemoryReadings, DeviceMemoryStatus,
    HostMemoryStatus, ProfileStatus, ResourceAdapterMetadata,
};
use tally_profile::{
    CallSpec, HookError, HostMemoryMode, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler,
    current_rss_and_hwm,
};

const MIB: u64 = 1024 * 1024;

fn host_off() -> ProfilerConfig {
    ProfilerConfig { host_memory: false, ..ProfilerConfig::default() }
}

/// Counts hook calls; panics or fails in the hooks it is told to.
#[derive(Default)]
struct Counting {
    calls: Rc<Counts>,
    panic_in: &'static [&'static str],
    fail_in: &'static [&'static str],
}

#[derive(Default)]
struct Counts {
    metadata: Cell<u32>,
    synchronize: Cell<u32>,
    reset: Cell<u32>,
    peak: Cell<u32>,
    model: Cell<u32>,
    artifacts: Cell<u32>,
}

impl Counting {
    fn enter(&self, hook: &'static str, counter: &Cell<u32>) -> Result<(), HookError> {
        counter.set(counter.get() + 1);
        if self.panic_in.contains(&hook) {
            panic!("{hook} exploded");
        }
        if self.fail_in.contains(&hook) {
            return Err(HookError::new("DriverError", format!("{hook} refused")));
        }
        Ok(())
    }
}

impl ResourceProfileAdapter for Counting {
    fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
        self.enter("metadata", &self.calls.metadata)?;
        Ok(ResourceAdapterMetadata {
            backend: Some("accel".into()),
            device: Some("accel:0".into()),
            asynchronous: true,
            ..Default::default()
        })
    }
    fn synchronize(&mut self) -> Result<AdapterOperationResult, HookError> {
        self.enter("synchronize", &self.calls.synchronize)?;
        Ok(AdapterOperationResult::succeeded())
    }
    fn reset_peak_device_memory(&mut self) -> Result<AdapterOperationResult, HookError> {
        self.enter("reset_peak_device_memory", &self.calls.reset)?;
        Ok(AdapterOperationResult::succeeded())
    }
    fn peak_device_memory(&mut self) -> Result<DeviceMemoryMeasurement, HookError> {
        self.enter("peak_device_memory", &self.calls.peak)?;
        Ok(DeviceMemoryMeasurement::measured(DeviceMemoryReadings {
            peak_allocated_bytes: Some(100),
            baseline_allocated_bytes: Some(40),
            ..Default::default()
        })
        .expect("a peak is given"))
    }
    fn model_footprint(&mut self) -> Result<tally_profile::profile::ModelFootprintMeasurement, HookError> {
        self.enter("model_footprint", &self.calls.model)?;
        Ok(tally_profile::profile::ModelFootprintMeasurement::unavailable(Some("no model")))
    }
    fn deployment_artifacts(&mut self) -> Result<Vec<tally_profile::profile::DeploymentArtifact>, HookError> {
        self.enter("deployment_artifacts", &self.calls.artifacts)?;
        Ok(Vec::new())
    }
}

#[test]
fn disabled_profiler_only_runs_the_call() {
    let config = ProfilerConfig { enabled: false, ..ProfilerConfig::default() };
    // An empty script: any clock read would panic.
    let mut profiler = ResourceProfiler::new(config).with_clock(ScriptClock(Vec::new().into_iter()));
    assert_eq!(profiler.measure_call(|| "value", CallSpec::new(1, "batch")), "value");
    assert!(profiler.records().is_empty());
    let profile = profiler.finish(false);
    assert_eq!(profile.status, ProfileStatus::NotMeasured);
    assert_eq!(profile.host_memory.status, HostMemoryStatus::NotMeasured);
}

#[test]
fn a_failed_call_is_returned_and_not_recorded_as_vertebrae_does() {
    let counts = Rc::new(Counts::default());
    let adapter = Counting { calls: Rc::clone(&counts), ..Counting::default() };
    let mut profiler = ResourceProfiler::new(host_off()).with_adapter(Box::new(adapter));
    let failed = profiler.measure_fallible(|| Err::<u32, &str>("boom"), CallSpec::new(4, "batch"));
    assert_eq!(failed, Err("boom"));
    assert!(profiler.records().is_empty(), "vertebrae appends no record for a call that raised");
    // Synchronized before the call only: the raise skips the one after.
    assert_eq!(counts.synchronize.get(), 1);
    let value = profiler.measure_fallible(|| Ok::<u32, &str>(7), CallSpec::new(4, "batch"));
    assert_eq!(value, Ok(7));
    assert_eq!(profiler.records().len(), 1);
    assert_eq!(counts.synchronize.get(), 3);
}

#[test]
fn hooks_run_as_often_as_vertebrae_runs_them() {
    let counts = Rc::new(Counts::default());
    let adapter = Counting { calls: Rc::clone(&counts), ..Default::default() };
    let mut profiler = ResourceProfiler::new(host_off()).with_adapter(Box::new(adapter));
    for i in 0..3 {
        assert_eq!(profiler.measure_call(|| i * 10, CallSpec::new(2, "batch")), i * 10);
    }
    let first = profiler.finish(false);
    let second = profiler.finish(false);
    assert_eq!(counts.synchronize.get(), 6, "before and after every call");
    assert_eq!(counts.reset.get(), 1, "once, before the first call");
    assert_eq!(counts.metadata.get(), 1, "cached across finish calls");
    assert_eq!(counts.peak.get(), 2, "once per finish");
    assert_eq!(counts.model.get(), 2);
    assert_eq!(counts.artifacts.get(), 2);
    assert_eq!(first, second, "finishing twice gives the same profile");
    assert_eq!(first.device_memory.status, DeviceMemoryStatus::Measured);
    assert_eq!(first.device_memory.peak_allocated_increase_bytes, Some(60));
    assert_eq!(first.context["synchronization_status"], "synchronized");
    assert!(first.context["resource_adapter"].as_str().expect("a name").ends_with("Counting"));
}

#[test]
fn panicking_and_failing_hooks_are_contained_and_named() {
    let all = &[
        "metadata",
        "synchronize",
        "reset_peak_device_memory",
        "peak_device_memory",
        "model_footprint",
        "deployment_artifacts",
    ];
    for (panic_in, fail_in) in [(&all[..], &[][..]), (&[][..], &all[..])] {
        let counts = Rc::new(Counts::default());
        let adapter = Counting { calls: Rc::clone(&counts), panic_in, fail_in };
        let mut profiler = ResourceProfiler::new(host_off()).with_adapter(Box::new(adapter));
        let values: Vec<u64> =
            (0..3).map(|i| profiler.measure_call(|| i * i + 7, CallSpec::new(1, "batch"))).collect();
        assert_eq!(values, [7, 8, 11], "results come back untouched");
        let profile = profiler.finish(false);
        let kind = if panic_in.is_empty() { "DriverError" } else { "panic" };
        // After a failed reset the peak is never read.
        assert_eq!(counts.peak.get(), 0);
        for hook in all.iter().filter(|hook| **hook != "peak_device_memory") {
            let tail =
                if panic_in.is_empty() { format!("{hook} refused") } else { format!("{hook} exploded") };
            let expected = format!("Resource profiling adapter hook '{hook}' failed with {kind}: {tail}");
            assert!(profile.warnings.contains(&expected), "missing {expected:?} in {:?}", profile.warnings);
        }
        // Unavailable defaults were used for every hook.
        assert_eq!(profile.context["synchronization_status"], "host_observed");
        assert_eq!(profile.context["backend"], serde_json::Value::Null, "default metadata");
        assert_eq!(profile.device_memory.status, DeviceMemoryStatus::Unavailable);
        assert_eq!(
            profile.device_memory.unavailable_reason.as_deref(),
            Some("The adapter device-memory reset hook failed.")
        );
        assert_eq!(profile.inference.batch_sizes, [1, 1, 1]);
        let sorted = {
            let mut sorted = profile.warnings.clone();
            sorted.sort();
            sorted.dedup();
            sorted
        };
        assert_eq!(profile.warnings, sorted, "warnings are sorted and unique");
    }
    let adapter = Counting { panic_in: &["peak_device_memory"], ..Default::default() };
    let mut profiler = ResourceProfiler::new(host_off()).with_adapter(Box::new(adapter));
    profiler.measure_call(|| (), CallSpec::new(1, "batch"));
    let profile = profiler.finish(false);
    assert_eq!(profile.device_memory.status, DeviceMemoryStatus::Unavailable);
    assert_eq!(
        profile.device_memory.unavailable_reason.as_deref(),
        Some("The adapter device-memory hook failed.")
    );
    assert!(profile.warnings.contains(
        &"Peak device memory is unavailable for this extractor backend: The adapter device-memory hook failed."
            .to_owned()
    ));
    assert!(profile.warnings.contains(
        &"Resource profiling adapter hook 'peak_device_memory' failed with panic: peak_device_memory exploded"
            .to_owned()
    ));
}

#[test]
fn adapter_factory_failures_leave_no_adapter() {
    let failing = ResourceProfiler::new(host_off())
        .with_adapter_factory(|| Err(HookError::new("ImportError", "no module named torch")));
    let panicking = ResourceProfiler::new(host_off()).with_adapter_factory(|| panic!("factory exploded"));
    for (mut profiler, tail) in
        [(failing, "ImportError: no module named torch"), (panicking, "panic: factory exploded")]
    {
        profiler.measure_call(|| (), CallSpec::new(1, "batch"));
        let profile = profiler.finish(false);
        let expected =
            format!("Resource profiling adapter hook 'get_resource_profile_adapter' failed with {tail}");
        assert!(profile.warnings.contains(&expected), "{:?}", profile.warnings);
        assert_eq!(
            profile.device_memory.unavailable_reason.as_deref(),
            Some("The extractor does not provide a resource adapter.")
        );
        assert_eq!(profile.context["resource_adapter"], serde_json::Value::Null);
    }
    let working =
        ResourceProfiler::new(host_off()).with_adapter_factory(|| Ok(Box::new(Counting::default())));
    let mut working = working;
    working.measure_call(|| (), CallSpec::new(1, "batch"));
    assert_eq!(working.finish(false).device_memory.status, DeviceMemoryStatus::Measured);
}

#[test]
fn a_panicking_call_propagates_and_is_not_recorded() {
    let counts = Rc::new(Counts::default());
    let adapter = Counting { calls: Rc::clone(&counts), ..Default::default() };
    let mut profiler = ResourceProfiler::new(host_off())
        .with_clock(ScriptClock(vec![0, 5, 0, 7].into_iter()))
        .with_adapter(Box::new(adapter));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        profiler.measure_call(|| -> u8 { panic!("inference failed") }, CallSpec::new(4, "batch"))
    }));
    assert!(outcome.is_err(), "the call's panic reaches the caller");
    assert_eq!(counts.synchronize.get(), 1, "no synchronization after a failed call");
    assert_eq!(profiler.measure_call(|| 3, CallSpec::new(2, "batch")), 3);
    assert_eq!(profiler.records().len(), 1);
    assert_eq!(profiler.records()[0].duration_ns, 7);
    let profile = profiler.finish(false);
    assert_eq!(profile.inference.first_call_seconds, Some(7e-9));
    assert_eq!(profile.context["call_types"], json!(["batch"]));
}

#[test]
fn caller_context_wins_and_marking_without_calls_is_harmless() {
    let context =
        json!({"cache_status": "custom", "modality": "audio"}).as_object().cloned().expect("object");
    let mut profiler = ResourceProfiler::new(host_off()).with_context(context).streaming(true);
    profiler.mark_last_call_materialized();
    let profile = profiler.finish(true);
    assert_eq!(profile.status, ProfileStatus::NotMeasuredCacheHit);
    assert_eq!(profile.context["cache_status"], "custom");
    assert_eq!(profile.context["modality"], "audio");
    assert_eq!(profile.context["streaming"], true);
    assert_eq!(profile.context["first_call_materialized"], serde_json::Value::Null);
    assert!(!profile.context.contains_key("host_memory_method"));
}

#[test]
fn host_memory_disabled_and_not_measured() {
    let mut off = ResourceProfiler::new(host_off());
    off.measure_call(|| (), CallSpec::new(1, "batch"));
    assert_eq!(off.finish(false).host_memory.status, HostMemoryStatus::Disabled);
    let mut idle = ResourceProfiler::new(ProfilerConfig::default());
    let profile = idle.finish(false);
    assert_eq!(profile.host_memory.status, HostMemoryStatus::NotMeasured);
    assert_eq!(profile.host_memory.peak_rss_bytes, None);
}

/// Allocates `bytes`, writes every page so it is resident, and frees it.
fn touch_and_free(bytes: u64) -> u64 {
    let mut buffer = vec![0u8; bytes as usize];
    for index in (0..buffer.len()).step_by(4096) {
        buffer[index] = 1;
    }
    let checksum = std::hint::black_box(&buffer).iter().step_by(4096).map(|&byte| u64::from(byte)).sum();
    drop(buffer);
    checksum
}

/// How far the kernel's high-water mark may lag the true peak. The kernel
/// keeps each RSS counter (file, anon, shmem) per CPU and folds a CPU's
/// count into the total only every `max(32, 2 * cpus)` pages, and it takes
/// the high-water mark from the folded totals; so the mark can miss up to
/// `3 * cpus * batch` pages of a peak (768 KiB on 2 CPUs). Observed here:
/// a touched 256 MiB buffer raises the mark by 256 MiB minus 3 to 34 pages.
fn kernel_counter_slack() -> u64 {
    let cpus = std::fs::read_to_string("/proc/cpuinfo")
        .map(|text| text.lines().filter(|line| line.starts_with("processor")).count() as u64)
        .unwrap_or(0)
        .max(std::thread::available_parallelism().map_or(1, |n| n.get() as u64));
    3 * cpus * (2 * cpus).max(32) * 4096
}

#[test]
fn a_peak_made_by_another_thread_is_measured() {
    // The profiler reads the mark through the calling thread's getrusage; the
    // kernel's mark is the address space's, so a worker thread's peak counts.
    if current_rss_and_hwm().is_none() {
        return tally_testkit::skip("/proc/self/status is unavailable (not Linux)");
    }
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default());
    profiler.measure_call(|| (), CallSpec::new(1, "warmup"));
    let pages = profiler.measure_call(
        || std::thread::spawn(|| touch_and_free(192 * MIB)).join().expect("the worker finishes"),
        CallSpec::new(1, "batch"),
    );
    assert_eq!(pages, 192 * MIB / 4096);
    let profile = profiler.finish(false);
    let increase = profile.host_memory.peak_increase_bytes.expect("measured");
    assert!(increase + kernel_counter_slack() >= 192 * MIB, "peak increase {increase} < 192 MiB");
}

#[test]
fn a_short_256_mib_peak_inside_one_call_is_measured() {
    if current_rss_and_hwm().is_none() {
        return tally_testkit::skip("/proc/self/status is unavailable (not Linux)");
    }
    let mut profiler = ResourceProfiler::new(ProfilerConfig::default());
    profiler.measure_call(|| (), CallSpec::new(1, "warmup"));
    let pages = profiler.measure_call(|| touch_and_free(256 * MIB), CallSpec::new(1, "batch"));
    assert_eq!(pages, 256 * MIB / 4096, "the call's value comes back");
    let profile = profiler.finish(false);
    let host = &profile.host_memory;
    assert_eq!(host.status, HostMemoryStatus::Measured);
    let increase = host.peak_increase_bytes.expect("measured");
    assert!(increase + kernel_counter_slack() >= 256 * MIB, "peak increase {increase} < 256 MiB");
    assert_eq!(host.peak_rss_bytes, Some(host.baseline_rss_bytes.expect("baseline") + increase));
    let method = profile.context["host_memory_method"].as_str().expect("method recorded");
    assert!(method.starts_with("vmhwm") || method == "rss_sampler", "{method}");
    if method.starts_with("vmhwm") {
        assert_eq!(host.sample_interval_seconds, None, "the kernel's mark does not sample");
    }
}

#[test]
fn the_sampler_fallback_measures_a_held_allocation() {
    let config = ProfilerConfig { host_memory_mode: HostMemoryMode::Sampler, ..ProfilerConfig::default() };
    let mut profiler = ResourceProfiler::new(config);
    profiler.measure_call(
        || {
            let mut buffer = vec![0u8; (64 * MIB) as usize];
            for index in (0..buffer.len()).step_by(4096) {
                buffer[index] = 1;
            }
            // Held for several sampling periods, then freed inside the call.
            std::thread::sleep(std::time::Duration::from_millis(60));
            drop(buffer);
        },
        CallSpec::new(1, "batch"),
    );
    let profile = profiler.finish(false);
    if profile.host_memory.status != HostMemoryStatus::Measured {
        return tally_testkit::skip("no /proc/self/statm to sample (not Linux)");
    }
    assert_eq!(profile.context["host_memory_method"], "rss_sampler");
    assert_eq!(profile.host_memory.sample_interval_seconds, Some(0.01));
    let increase = profile.host_memory.peak_increase_bytes.expect("measured");
    assert!(increase >= 60 * MIB, "sampler saw only {increase} bytes");
}

#[test]
fn a_nested_profiler_does_not_erase_the_outer_window() {
    if current_rss_and_hwm().is_none() {
        return tally_testkit::skip("/proc/self/status is unavailable (not Linux)");
    }
    let mut outer = ResourceProfiler::new(ProfilerConfig::default());
    outer.measure_call(
        || {
            touch_and_free(128 * MIB);
            // The inner window opens after the peak and resets the kernel's mark.
            let mut inner = ResourceProfiler::new(ProfilerConfig::default());
            inner.measure_call(|| (), CallSpec::new(1, "inner"));
            assert_eq!(inner.finish(false).host_memory.status, HostMemoryStatus::Measured);
        },
        CallSpec::new(1, "outer"),
    );
    let profile = outer.finish(false);
    let increase = profile.host_memory.peak_increase_bytes.expect("measured");
    assert!(increase + kernel_counter_slack() >= 128 * MIB, "outer window lost its peak: {increase}");
}

/// `ru_maxrss` of this process in bytes.
#[allow(unsafe_code, reason = "the test checks what getrusage itself reports")]
fn getrusage_max_rss() -> u64 {
    // SAFETY: rusage is plain old data; the pointer is to a live local.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) }, 0);
    u64::try_from(usage.ru_maxrss).expect("non-negative") * 1024
}

/// A child spawned by a large parent inherits the parent's mark in
/// `ru_maxrss`; the profiler must still see the child's own 256 MiB peak.
#[test]
fn a_peak_below_an_inherited_mark_is_still_measured() {
    const CHILD: &str = "TALLY_PROFILE_INHERITED_MARK_CHILD";
    if current_rss_and_hwm().is_none() {
        return tally_testkit::skip("/proc/self/status is unavailable (not Linux)");
    }
    if std::env::var_os(CHILD).is_some() {
        let (_, own_mark) = current_rss_and_hwm().expect("Linux");
        let inherited = getrusage_max_rss();
        assert!(inherited > own_mark + 512 * MIB, "the parent's mark ({inherited}) is not inherited");
        let mut profiler = ResourceProfiler::new(ProfilerConfig::default());
        profiler.measure_call(|| (), CallSpec::new(1, "warmup"));
        profiler.measure_call(|| touch_and_free(256 * MIB), CallSpec::new(1, "batch"));
        let profile = profiler.finish(false);
        assert!(profile.context["host_memory_method"].as_str().expect("method").starts_with("vmhwm"));
        let increase = profile.host_memory.peak_increase_bytes.expect("measured");
        assert!(
            increase + kernel_counter_slack() >= 256 * MIB,
            "peak increase {increase} < 256 MiB under an inherited mark"
        );
        assert!(
            profile.host_memory.peak_rss_bytes.expect("measured") < inherited,
            "below the inherited mark"
        );
        return;
    }
    // Hold 1 GiB resident while the child starts, so its inherited mark is high.
    let mut ballast = vec![0u8; 1 << 30];
    for index in (0..ballast.len()).step_by(4096) {
        ballast[index] = 1;
    }
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "a_peak_below_an_inherited_mark_is_still_measured",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .expect("the child runs");
    drop(ballast);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "child failed:\n{}\n{stderr}", String::from_utf8_lossy(&output.stdout));
    assert!(String::from_utf8_lossy(&output.stdout).contains("1 passed"), "the child ran the test");
}
