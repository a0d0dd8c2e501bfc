//! The resource-profile adapter for a CUDA context and stream.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tally_profile::profile::{
    AdapterOperationResult, DeviceMemoryMeasurement, DeviceMemoryReadings, ResourceAdapterMetadata,
};
use tally_profile::{HookError, ResourceProfileAdapter};

use crate::{CudaDevice, CudaError};

/// The default interval of the device-memory sampler.
pub const DEFAULT_SAMPLE_INTERVAL: Duration = Duration::from_millis(1);

/// The adapter of a CUDA device and stream for [`tally_profile::ResourceProfiler`].
///
/// - `metadata`: backend `cuda`, the device's name and UUID, asynchronous,
///   synchronized with `cuStreamSynchronize`.
/// - `synchronize`: waits for the stream.
/// - `reset_peak_device_memory`: reads the device's used memory (`total −
///   free` from `cuMemGetInfo`) as the baseline and starts a sampler thread.
/// - `peak_device_memory`: the highest used memory the sampler (and the
///   hooks themselves) saw since the reset, `measured` over the profile
///   window. It is device-wide, not the allocator's: other processes and
///   contexts on the device count, and a peak shorter than the sampling
///   interval can be missed. The measurement's reason says so.
///
/// Without a usable driver every hook answers `unavailable` with the reason
/// (and `metadata` says the device is unknown): the profiler records that
/// instead of failing.
///
/// ```
/// use tally_cuda::CudaProfileAdapter;
/// use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};
/// let adapter = CudaProfileAdapter::open(0);
/// let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
/// profiler.measure_call(|| (), CallSpec::new(1, "batch"));
/// let profile = profiler.finish(false);
/// let json = profile.to_json_value().unwrap();
/// assert!(["measured", "unavailable"].contains(&json["device_memory"]["status"].as_str().unwrap()));
/// ```
#[derive(Debug)]
pub struct CudaProfileAdapter {
    device: Result<CudaDevice, String>,
    interval: Duration,
    window: Option<Window>,
}

impl CudaProfileAdapter {
    /// The adapter of device `ordinal` on a stream of its own. Never fails:
    /// without a driver or device the hooks answer `unavailable`.
    pub fn open(ordinal: usize) -> Self {
        Self::from_result(CudaDevice::open(ordinal))
    }

    /// The adapter of an opened device (and its stream).
    pub fn new(device: CudaDevice) -> Self {
        Self::from_result(Ok(device))
    }

    fn from_result(device: Result<CudaDevice, CudaError>) -> Self {
        Self {
            device: device.map_err(|error| error.reason()),
            interval: DEFAULT_SAMPLE_INTERVAL,
            window: None,
        }
    }

    /// The same adapter sampling device memory every `interval` (at least
    /// 10 µs).
    pub fn with_sample_interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_micros(10));
        self
    }

    /// The device, or why there is none.
    pub fn device(&self) -> Result<&CudaDevice, &str> {
        self.device.as_ref().map_err(String::as_str)
    }

    fn device_label(device: &CudaDevice) -> String {
        format!("{} ({})", device.name(), device.uuid())
    }

    fn scope_note(&self) -> String {
        format!(
            "Device-wide used memory (cuMemGetInfo total - free), sampled every {} us between the reset and \
             the read: other processes and contexts on the device count, it is not allocator-scoped, and \
             peaks shorter than the interval can be missed.",
            self.interval.as_micros()
        )
    }

    fn stop_window(&mut self) -> Option<WindowResult> {
        self.window.take().map(Window::finish)
    }
}

impl Drop for CudaProfileAdapter {
    fn drop(&mut self) {
        let _ = self.stop_window();
    }
}

fn hook_error(error: CudaError) -> HookError {
    let kind = match &error {
        CudaError::Unavailable { .. } => "CudaUnavailable",
        CudaError::Driver { .. } => "CudaError",
        CudaError::Panicked { .. } => "panic",
        CudaError::Measurement(_) => "CudaMeasurementError",
        CudaError::Validation(_) => "ValueError",
    };
    HookError::new(kind, error.to_string())
}

impl ResourceProfileAdapter for CudaProfileAdapter {
    fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
        let base = ResourceAdapterMetadata {
            backend: Some("cuda".to_owned()),
            asynchronous: true,
            synchronization_method: Some("cuStreamSynchronize".to_owned()),
            ..ResourceAdapterMetadata::default()
        };
        match &self.device {
            Ok(device) => ResourceAdapterMetadata { device: Some(Self::device_label(device)), ..base }
                .with_device_resolution("explicit")
                .map_err(|error| HookError::new("ValueError", error.to_string())),
            Err(_) => Ok(base),
        }
    }

    fn synchronize(&mut self) -> Result<AdapterOperationResult, HookError> {
        let device = match &self.device {
            Ok(device) => device,
            Err(reason) => return Ok(AdapterOperationResult::unavailable(Some(reason.clone()))),
        };
        device.synchronize().map_err(hook_error)?;
        // A synchronized stream is a moment worth sampling: the call's
        // allocations are live and not yet freed.
        if let Some(window) = &self.window {
            window.sample_now();
        }
        Ok(AdapterOperationResult::succeeded())
    }

    fn reset_peak_device_memory(&mut self) -> Result<AdapterOperationResult, HookError> {
        let device = match &self.device {
            Ok(device) => device.clone(),
            Err(reason) => return Ok(AdapterOperationResult::unavailable(Some(reason.clone()))),
        };
        let _ = self.stop_window();
        let baseline = device.memory().map_err(hook_error)?.used_bytes();
        self.window = Some(Window::open(device, baseline, self.interval));
        Ok(AdapterOperationResult::succeeded())
    }

    fn peak_device_memory(&mut self) -> Result<DeviceMemoryMeasurement, HookError> {
        let device = match &self.device {
            Ok(device) => device.clone(),
            Err(reason) => return Ok(DeviceMemoryMeasurement::unavailable(Some(reason.clone()))),
        };
        let backend = Some("cuda".to_owned());
        let label = Some(Self::device_label(&device));
        let note = self.scope_note();
        let Some(result) = self.stop_window() else {
            return Ok(DeviceMemoryMeasurement::unavailable(Some(
                "reset_peak_device_memory was not called, so no window was opened.",
            ))
            .with_backend_device(backend, label));
        };
        if let Some(failure) = result.failure {
            return Ok(DeviceMemoryMeasurement::unavailable(Some(format!(
                "The device-memory sampler failed: {failure}"
            )))
            .with_backend_device(backend, label));
        }
        DeviceMemoryMeasurement::measured(DeviceMemoryReadings {
            backend,
            device: label,
            baseline_allocated_bytes: Some(result.baseline),
            peak_allocated_bytes: Some(result.peak),
            unavailable_reason: Some(format!("{note} {} samples.", result.samples)),
            ..DeviceMemoryReadings::default()
        })
        .map_err(|error| HookError::new("ValueError", error.to_string()))
    }

    fn profiling_device_hint(&self) -> Option<String> {
        self.device.as_ref().ok().map(|device| format!("cuda:{}", device.ordinal()))
    }
}

/// What the sampler thread and the hooks share.
#[derive(Debug)]
struct Shared {
    device: CudaDevice,
    peak: AtomicU64,
    samples: AtomicU64,
    failure: Mutex<Option<String>>,
}

impl Shared {
    fn sample(&self) -> bool {
        let reading = catch_unwind(AssertUnwindSafe(|| self.device.memory()));
        let outcome = match reading {
            Ok(Ok(memory)) => {
                self.peak.fetch_max(memory.used_bytes(), Ordering::Relaxed);
                self.samples.fetch_add(1, Ordering::Relaxed);
                return true;
            }
            Ok(Err(error)) => error.to_string(),
            Err(payload) => format!("cuMemGetInfo panicked: {}", crate::driver::panic_message(&*payload)),
        };
        if let Ok(mut failure) = self.failure.lock() {
            failure.get_or_insert(outcome);
        }
        false
    }
}

/// An open device-memory window: the baseline and a sampler thread.
#[derive(Debug)]
struct Window {
    shared: Arc<Shared>,
    baseline: u64,
    stop: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

struct WindowResult {
    baseline: u64,
    peak: u64,
    samples: u64,
    failure: Option<String>,
}

impl Window {
    fn open(device: CudaDevice, baseline: u64, interval: Duration) -> Self {
        let shared = Arc::new(Shared {
            device,
            peak: AtomicU64::new(baseline),
            samples: AtomicU64::new(1),
            failure: Mutex::new(None),
        });
        let (stop, stopped) = mpsc::channel::<()>();
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("tally-cuda-memory".to_owned())
            .spawn(move || {
                loop {
                    if !worker.sample() {
                        return;
                    }
                    match stopped.recv_timeout(interval) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })
            .ok();
        if thread.is_none()
            && let Ok(mut failure) = shared.failure.lock()
        {
            *failure = Some("the sampler thread could not be started".to_owned());
        }
        Self { shared, baseline, stop, thread }
    }

    fn sample_now(&self) {
        self.shared.sample();
    }

    fn finish(mut self) -> WindowResult {
        // One last reading, so a peak still held at the read counts.
        self.shared.sample();
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let failure = self.shared.failure.lock().ok().and_then(|failure| failure.clone());
        WindowResult {
            baseline: self.baseline,
            peak: self.shared.peak.load(Ordering::Relaxed),
            samples: self.shared.samples.load(Ordering::Relaxed),
            failure,
        }
    }
}
