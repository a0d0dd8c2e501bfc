//! The adapter trait a framework implements to let the profiler see the
//! device and the model.

use std::borrow::Cow;
use std::fmt;

use crate::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, ModelFootprintMeasurement,
    OperationStatus, ResourceAdapterMetadata,
};

/// A hook failed. The profiler records it as vertebrae records an exception:
/// `Resource profiling adapter hook '<hook>' failed with <kind>: <message>`,
/// then uses the hook's unavailable answer.
///
/// `kind` plays the part of Python's exception class name, so an adapter
/// that mirrors a Python one can produce the same warning text.
///
/// ```
/// use tally_profile::HookError;
/// let error = HookError::new("RuntimeError", "CUDA driver not loaded");
/// assert_eq!(error.to_string(), "RuntimeError: CUDA driver not loaded");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookError {
    kind: Cow<'static, str>,
    message: String,
    invalid_payload: bool,
}

impl HookError {
    /// An error of `kind` (e.g. `"CudaError"`) with a message.
    pub fn new(kind: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self { kind: kind.into(), message: message.into(), invalid_payload: false }
    }

    /// The hook ran but answered something that is not the typed payload it
    /// owes (vertebrae's check of `deployment_artifacts`: a sequence of
    /// `DeploymentArtifact`s). The profiler records it as vertebrae does:
    /// `Resource profiling adapter hook '<hook>' returned an invalid typed
    /// payload.`, then uses the hook's unavailable answer.
    ///
    /// ```
    /// use tally_profile::{CallSpec, HookError, ProfilerConfig, ResourceProfileAdapter, ResourceProfiler};
    /// use tally_profile::profile::DeploymentArtifact;
    /// assert!(!HookError::new("TypeError", "no").is_invalid_payload());
    ///
    /// struct Untyped;
    /// impl ResourceProfileAdapter for Untyped {
    ///     fn deployment_artifacts(&mut self) -> Result<Vec<DeploymentArtifact>, HookError> {
    ///         Err(HookError::invalid_payload("a generator, not a sequence"))
    ///     }
    /// }
    /// let config = ProfilerConfig { host_memory: false, ..ProfilerConfig::default() };
    /// let mut profiler = ResourceProfiler::new(config).with_adapter(Box::new(Untyped));
    /// profiler.measure_call(|| (), CallSpec::new(1, "batch"));
    /// let profile = profiler.finish(false);
    /// assert!(profile.warnings.contains(
    ///     &"Resource profiling adapter hook 'deployment_artifacts' returned an invalid typed payload.".to_owned()
    /// ));
    /// assert!(profile.model.artifacts.is_empty());
    /// ```
    pub fn invalid_payload(message: impl Into<String>) -> Self {
        Self { kind: Cow::Borrowed("InvalidPayload"), message: message.into(), invalid_payload: true }
    }

    /// Whether it is [`HookError::invalid_payload`].
    pub fn is_invalid_payload(&self) -> bool {
        self.invalid_payload
    }

    /// The kind, e.g. `"RuntimeError"`; `"panic"` for a hook that panicked.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for HookError {}

#[cfg(feature = "python")]
impl From<pyo3::PyErr> for HookError {
    /// Kind is the exception's class name (`"TypeError"`), message its
    /// `str()`: the warning then reads as vertebrae's for the same exception.
    fn from(error: pyo3::PyErr) -> Self {
        use pyo3::types::PyTypeMethods;
        pyo3::Python::attach(|py| {
            let kind = error
                .get_type(py)
                .name()
                .map(|name| name.to_string())
                .unwrap_or_else(|_| "Exception".to_owned());
            Self::new(kind, error.value(py).to_string())
        })
    }
}

impl From<std::io::Error> for HookError {
    /// Named like the Python `OSError` subclass for the same error.
    fn from(error: std::io::Error) -> Self {
        let kind = match error.kind() {
            std::io::ErrorKind::NotFound => "FileNotFoundError",
            std::io::ErrorKind::PermissionDenied => "PermissionError",
            _ => "OSError",
        };
        Self::new(kind, error.to_string())
    }
}

/// The framework-specific side of profiling: six hooks, each with a default
/// body that gives vertebrae's `BaseResourceProfileAdapter` answer, so an
/// adapter implements only what its framework can measure.
///
/// The profiler calls `synchronize` before and after every measured call,
/// `reset_peak_device_memory` once before the first, and `metadata` (once),
/// `peak_device_memory`, `model_footprint` and `deployment_artifacts` when
/// it builds the profile. A hook that returns an error or panics never
/// changes the measured call's result: the profile gets a warning naming the
/// hook and the hook's unavailable answer.
///
/// The trait is object safe; the profiler holds a `Box<dyn ResourceProfileAdapter>`.
///
/// ```
/// use tally_profile::{HookError, ResourceProfileAdapter};
/// use tally_profile::profile::{AdapterOperationResult, ResourceAdapterMetadata};
///
/// /// An accelerator whose queue must be drained before timing stops.
/// struct Accelerator;
///
/// impl ResourceProfileAdapter for Accelerator {
///     fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
///         Ok(ResourceAdapterMetadata {
///             backend: Some("accel".into()),
///             device: Some("accel:0".into()),
///             asynchronous: true,
///             ..Default::default()
///         })
///     }
///     fn synchronize(&mut self) -> Result<AdapterOperationResult, HookError> {
///         // drain the device queue here
///         Ok(AdapterOperationResult::succeeded())
///     }
/// }
/// let adapter: Box<dyn ResourceProfileAdapter> = Box::new(Accelerator);
/// assert!(adapter.name().ends_with("Accelerator"));
/// ```
pub trait ResourceProfileAdapter {
    /// Framework, device and synchronization context. Called once per profile.
    /// Default: nothing known.
    fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
        Ok(ResourceAdapterMetadata::default())
    }

    /// Waits for the device's queued work. Default: `not_applicable`.
    fn synchronize(&mut self) -> Result<AdapterOperationResult, HookError> {
        Ok(AdapterOperationResult { status: OperationStatus::NotApplicable, reason: None })
    }

    /// Opens the device-memory window: resets the allocator's peak counters
    /// and remembers the baseline. Default: `not_applicable`.
    fn reset_peak_device_memory(&mut self) -> Result<AdapterOperationResult, HookError> {
        Ok(AdapterOperationResult { status: OperationStatus::NotApplicable, reason: None })
    }

    /// Reads the allocator peaks since the reset. Default: unavailable.
    fn peak_device_memory(&mut self) -> Result<DeviceMemoryMeasurement, HookError> {
        Ok(DeviceMemoryMeasurement::unavailable(Some("The adapter does not expose allocator memory.")))
    }

    /// Parameter and in-memory sizes of the model. Default: unavailable.
    fn model_footprint(&mut self) -> Result<ModelFootprintMeasurement, HookError> {
        Ok(ModelFootprintMeasurement::unavailable(Some("The adapter does not expose model state.")))
    }

    /// Local files whose deployment footprint should be measured. Default: none.
    fn deployment_artifacts(&mut self) -> Result<Vec<DeploymentArtifact>, HookError> {
        Ok(Vec::new())
    }

    /// The adapter's name in the profile's `context.resource_adapter`
    /// (vertebrae writes `module.ClassName`). Default: the Rust type name.
    fn name(&self) -> String {
        std::any::type_name::<Self>().to_owned()
    }

    /// The device the user asked to profile on, if any, for
    /// `context.profiling_device_hint`. Default: none.
    fn profiling_device_hint(&self) -> Option<String> {
        None
    }
}

/// vertebrae's `BaseResourceProfileAdapter`: every hook at its default.
#[derive(Debug, Clone, Copy, Default)]
pub struct BaseResourceProfileAdapter;

impl ResourceProfileAdapter for BaseResourceProfileAdapter {}
