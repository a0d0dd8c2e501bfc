//! What a framework adapter hands the profiler: vertebrae's frozen payload
//! dataclasses, validated the way their `__post_init__` validates them.

use serde::{Deserialize, Serialize};

use super::status::{DeviceMeasurementStatus, ModelMeasurementStatus, OperationStatus};
use tally_core::{NonEmptyString, ValidationError};

/// The only scope a measured device-memory reading may have: from the reset
/// before the first call to the read at `finish`.
pub const PROFILE_WINDOW: &str = "profile_window";

/// Outcome of an optional framework-specific operation (`synchronize`,
/// `reset_peak_device_memory`); vertebrae's `AdapterOperationResult`.
///
/// ```
/// use tally_profile::profile::{AdapterOperationResult, OperationStatus};
/// let done = AdapterOperationResult::succeeded();
/// assert_eq!(done.status, OperationStatus::Succeeded);
/// let cpu = AdapterOperationResult::not_applicable(Some("CPU memory is reported through process RSS."));
/// assert!(cpu.reason.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterOperationResult {
    /// What happened.
    pub status: OperationStatus,
    /// Why, when it did not succeed (optional).
    #[serde(default)]
    pub reason: Option<String>,
}

impl AdapterOperationResult {
    /// A result with `status` and an optional reason.
    pub fn new(status: OperationStatus, reason: Option<impl Into<String>>) -> Self {
        Self { status, reason: reason.map(Into::into) }
    }

    /// The operation ran.
    pub fn succeeded() -> Self {
        Self { status: OperationStatus::Succeeded, reason: None }
    }

    /// The operation has no meaning for this device.
    pub fn not_applicable(reason: Option<impl Into<String>>) -> Self {
        Self::new(OperationStatus::NotApplicable, reason)
    }

    /// The operation could not run.
    pub fn unavailable(reason: Option<impl Into<String>>) -> Self {
        Self::new(OperationStatus::Unavailable, reason)
    }
}

/// Framework, device and synchronization context supplied by an adapter;
/// vertebrae's `ResourceAdapterMetadata`. The default is what vertebrae's
/// base adapter reports: nothing known, `device_resolution` `"unavailable"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawMetadata")]
pub struct ResourceAdapterMetadata {
    /// Framework name, e.g. `torch` or `onnxruntime`.
    pub backend: Option<String>,
    /// Device the model runs on, e.g. `cuda:0`, `cpu`, or a comma-separated list.
    pub device: Option<String>,
    /// How the device was determined, e.g. `model_state`, `explicit`. The value
    /// `model_state_conflicts_with_profiling_hint` makes the profiler warn.
    pub device_resolution: NonEmptyString,
    /// Whether device work may still run after the call returns.
    pub asynchronous: bool,
    /// How `synchronize` waits for the device, e.g. `torch.cuda.synchronize`.
    pub synchronization_method: Option<String>,
    /// Weight dtypes of the model, e.g. `torch.float16`.
    pub weight_dtypes: Vec<String>,
}

impl Default for ResourceAdapterMetadata {
    fn default() -> Self {
        Self {
            backend: None,
            device: None,
            // "unavailable" is a non-empty literal.
            device_resolution: NonEmptyString::new("unavailable").expect("literal is non-empty"),
            asynchronous: false,
            synchronization_method: None,
            weight_dtypes: Vec::new(),
        }
    }
}

impl ResourceAdapterMetadata {
    /// Sets `device_resolution`, rejecting an empty string as vertebrae does.
    pub fn with_device_resolution(mut self, resolution: impl Into<String>) -> Result<Self, ValidationError> {
        self.device_resolution = non_empty_resolution(resolution.into())?;
        Ok(self)
    }
}

fn non_empty_resolution(text: String) -> Result<NonEmptyString, ValidationError> {
    NonEmptyString::new(text).map_err(|_| {
        ValidationError::new(
            "device_resolution",
            "ResourceAdapterMetadata.device_resolution must be non-empty.",
        )
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetadata {
    #[serde(default)]
    backend: Option<String>,
    #[serde(default)]
    device: Option<String>,
    #[serde(default = "unavailable_text")]
    device_resolution: String,
    #[serde(default)]
    asynchronous: bool,
    #[serde(default)]
    synchronization_method: Option<String>,
    #[serde(default)]
    weight_dtypes: Vec<String>,
}

fn unavailable_text() -> String {
    "unavailable".to_owned()
}

impl TryFrom<RawMetadata> for ResourceAdapterMetadata {
    type Error = ValidationError;
    fn try_from(raw: RawMetadata) -> Result<Self, ValidationError> {
        Ok(Self {
            backend: raw.backend,
            device: raw.device,
            device_resolution: non_empty_resolution(raw.device_resolution)?,
            asynchronous: raw.asynchronous,
            synchronization_method: raw.synchronization_method,
            weight_dtypes: raw.weight_dtypes,
        })
    }
}

/// The readings of a [`DeviceMemoryMeasurement`], all optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceMemoryReadings {
    /// Framework name; the profile falls back to the adapter metadata's.
    pub backend: Option<String>,
    /// Device; the profile falls back to the adapter metadata's.
    pub device: Option<String>,
    /// Allocated bytes when the window was opened.
    pub baseline_allocated_bytes: Option<u64>,
    /// Reserved (cached) bytes when the window was opened.
    pub baseline_reserved_bytes: Option<u64>,
    /// Peak allocated bytes over the window.
    pub peak_allocated_bytes: Option<u64>,
    /// Peak reserved bytes over the window.
    pub peak_reserved_bytes: Option<u64>,
    /// Why nothing (or not everything) was measured.
    pub unavailable_reason: Option<String>,
}

/// Framework allocator memory over one profile window; vertebrae's
/// `DeviceMemoryMeasurement`.
///
/// A measured reading always has `peak_allocated_bytes` and the scope
/// [`PROFILE_WINDOW`]; an unmeasured one has no scope. Both rules hold by
/// construction.
///
/// ```
/// use tally_profile::profile::{DeviceMemoryMeasurement, DeviceMemoryReadings, DeviceMeasurementStatus};
/// let missing_peak = DeviceMemoryMeasurement::new(DeviceMeasurementStatus::Measured, DeviceMemoryReadings::default());
/// assert_eq!(
///     missing_peak.unwrap_err().to_string(),
///     "Measured DeviceMemoryMeasurement requires peak_allocated_bytes."
/// );
/// let ok = DeviceMemoryMeasurement::measured(DeviceMemoryReadings {
///     peak_allocated_bytes: Some(1 << 20),
///     ..Default::default()
/// })
/// .unwrap();
/// assert_eq!(ok.measurement_scope(), Some("profile_window"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawDeviceMeasurement", into = "RawDeviceMeasurement")]
pub struct DeviceMemoryMeasurement {
    status: DeviceMeasurementStatus,
    readings: DeviceMemoryReadings,
}

impl DeviceMemoryMeasurement {
    /// Validates vertebrae's rule: a measured reading needs `peak_allocated_bytes`.
    pub fn new(
        status: DeviceMeasurementStatus,
        readings: DeviceMemoryReadings,
    ) -> Result<Self, ValidationError> {
        if status == DeviceMeasurementStatus::Measured && readings.peak_allocated_bytes.is_none() {
            return Err(ValidationError::new(
                "peak_allocated_bytes",
                "Measured DeviceMemoryMeasurement requires peak_allocated_bytes.",
            ));
        }
        Ok(Self { status, readings })
    }

    /// A measured reading (scope [`PROFILE_WINDOW`]).
    pub fn measured(readings: DeviceMemoryReadings) -> Result<Self, ValidationError> {
        Self::new(DeviceMeasurementStatus::Measured, readings)
    }

    /// A `not_applicable` reading (a CPU device) with an optional reason.
    pub fn not_applicable(reason: Option<impl Into<String>>) -> Self {
        let readings =
            DeviceMemoryReadings { unavailable_reason: reason.map(Into::into), ..Default::default() };
        Self { status: DeviceMeasurementStatus::NotApplicable, readings }
    }

    /// An `unavailable` reading with an optional reason.
    pub fn unavailable(reason: Option<impl Into<String>>) -> Self {
        let readings =
            DeviceMemoryReadings { unavailable_reason: reason.map(Into::into), ..Default::default() };
        Self { status: DeviceMeasurementStatus::Unavailable, readings }
    }

    /// The same reading with the backend and device set (for an unmeasured
    /// reading built by [`DeviceMemoryMeasurement::unavailable`]).
    pub fn with_backend_device(mut self, backend: Option<String>, device: Option<String>) -> Self {
        self.readings.backend = backend;
        self.readings.device = device;
        self
    }

    /// What was measured.
    pub fn status(&self) -> DeviceMeasurementStatus {
        self.status
    }

    /// The readings.
    pub fn readings(&self) -> &DeviceMemoryReadings {
        &self.readings
    }

    /// `Some("profile_window")` when measured, else `None`.
    pub fn measurement_scope(&self) -> Option<&'static str> {
        (self.status == DeviceMeasurementStatus::Measured).then_some(PROFILE_WINDOW)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDeviceMeasurement {
    status: DeviceMeasurementStatus,
    #[serde(default)]
    backend: Option<String>,
    #[serde(default)]
    device: Option<String>,
    #[serde(default)]
    baseline_allocated_bytes: Option<i128>,
    #[serde(default)]
    baseline_reserved_bytes: Option<i128>,
    #[serde(default)]
    peak_allocated_bytes: Option<i128>,
    #[serde(default)]
    peak_reserved_bytes: Option<i128>,
    #[serde(default)]
    measurement_scope: Option<String>,
    #[serde(default)]
    unavailable_reason: Option<String>,
}

/// vertebrae's `_validate_optional_nonnegative`, plus tally's 64-bit range.
pub(crate) fn optional_nonnegative(
    name: &'static str,
    value: Option<i128>,
) -> Result<Option<u64>, ValidationError> {
    match value {
        None => Ok(None),
        Some(value) if value < 0 => {
            Err(ValidationError::new(name, format!("{name} must be >= 0 when provided.")))
        }
        Some(value) => u64::try_from(value).map(Some).map_err(|_| {
            ValidationError::new(name, format!("{name} exceeds the 64-bit range tally supports."))
        }),
    }
}

/// vertebrae's rule for a device-memory `measurement_scope` of `class`:
/// exactly [`PROFILE_WINDOW`] when measured, absent otherwise (`scope`
/// names the field in the second message, each class words it its way).
pub(crate) fn check_scope(
    class: &str,
    measured: bool,
    value: Option<&str>,
    scope: &str,
) -> Result<(), ValidationError> {
    if measured && value != Some(PROFILE_WINDOW) {
        let message = format!("Measured {class} requires measurement_scope='profile_window'.");
        return Err(ValidationError::new("measurement_scope", message));
    }
    if !measured && value.is_some() {
        return Err(ValidationError::new(
            "measurement_scope",
            format!("Unmeasured {class} must not declare {scope}."),
        ));
    }
    Ok(())
}

impl TryFrom<RawDeviceMeasurement> for DeviceMemoryMeasurement {
    type Error = ValidationError;
    fn try_from(raw: RawDeviceMeasurement) -> Result<Self, ValidationError> {
        let readings = DeviceMemoryReadings {
            backend: raw.backend,
            device: raw.device,
            baseline_allocated_bytes: optional_nonnegative(
                "baseline_allocated_bytes",
                raw.baseline_allocated_bytes,
            )?,
            baseline_reserved_bytes: optional_nonnegative(
                "baseline_reserved_bytes",
                raw.baseline_reserved_bytes,
            )?,
            peak_allocated_bytes: optional_nonnegative("peak_allocated_bytes", raw.peak_allocated_bytes)?,
            peak_reserved_bytes: optional_nonnegative("peak_reserved_bytes", raw.peak_reserved_bytes)?,
            unavailable_reason: raw.unavailable_reason,
        };
        let measurement = Self::new(raw.status, readings)?;
        let measured = raw.status == DeviceMeasurementStatus::Measured;
        let scope = raw.measurement_scope.as_deref();
        check_scope("DeviceMemoryMeasurement", measured, scope, "a measurement_scope")?;
        Ok(measurement)
    }
}

impl From<DeviceMemoryMeasurement> for RawDeviceMeasurement {
    fn from(value: DeviceMemoryMeasurement) -> Self {
        let scope = value.measurement_scope().map(str::to_owned);
        let readings = value.readings;
        Self {
            status: value.status,
            backend: readings.backend,
            device: readings.device,
            baseline_allocated_bytes: readings.baseline_allocated_bytes.map(i128::from),
            baseline_reserved_bytes: readings.baseline_reserved_bytes.map(i128::from),
            peak_allocated_bytes: readings.peak_allocated_bytes.map(i128::from),
            peak_reserved_bytes: readings.peak_reserved_bytes.map(i128::from),
            measurement_scope: scope,
            unavailable_reason: readings.unavailable_reason,
        }
    }
}

/// The readings of a [`ModelFootprintMeasurement`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelFootprintReadings {
    /// Number of parameters.
    pub parameter_count: Option<u64>,
    /// Bytes of the parameters.
    pub parameter_bytes: Option<u64>,
    /// Number of trainable parameters (at most `parameter_count`).
    pub trainable_parameter_count: Option<u64>,
    /// Bytes of the trainable parameters (at most `parameter_bytes`).
    pub trainable_parameter_bytes: Option<u64>,
    /// Bytes of non-parameter buffers.
    pub buffer_bytes: Option<u64>,
    /// Bytes the model state holds in memory; when absent the profile uses
    /// `parameter_bytes + buffer_bytes`.
    pub in_memory_bytes: Option<u64>,
    /// Dtypes of the weights.
    pub weight_dtypes: Vec<String>,
    /// Why the model state could not be read.
    pub unavailable_reason: Option<String>,
}

/// In-memory model state exposed by an adapter; vertebrae's
/// `ModelFootprintMeasurement`.
///
/// ```
/// use tally_profile::profile::{ModelFootprintMeasurement, ModelFootprintReadings};
/// let error = ModelFootprintMeasurement::measured(ModelFootprintReadings {
///     parameter_count: Some(10),
///     trainable_parameter_count: Some(11),
///     ..Default::default()
/// })
/// .unwrap_err();
/// assert_eq!(error.to_string(), "trainable_parameter_count must not exceed parameter_count.");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawModelMeasurement", into = "RawModelMeasurement")]
pub struct ModelFootprintMeasurement {
    status: ModelMeasurementStatus,
    readings: ModelFootprintReadings,
}

impl ModelFootprintMeasurement {
    /// Validates vertebrae's rules: a measured footprint needs parameter or
    /// in-memory data; trainable counts and bytes never exceed the totals.
    pub fn new(
        status: ModelMeasurementStatus,
        readings: ModelFootprintReadings,
    ) -> Result<Self, ValidationError> {
        let r = &readings;
        if status == ModelMeasurementStatus::Measured
            && r.parameter_count.is_none()
            && r.parameter_bytes.is_none()
            && r.in_memory_bytes.is_none()
        {
            return Err(ValidationError::new(
                "status",
                "Measured ModelFootprintMeasurement requires parameter or in-memory data.",
            ));
        }
        if let (Some(total), Some(trainable)) = (r.parameter_count, r.trainable_parameter_count)
            && trainable > total
        {
            return Err(ValidationError::new(
                "trainable_parameter_count",
                "trainable_parameter_count must not exceed parameter_count.",
            ));
        }
        if let (Some(total), Some(trainable)) = (r.parameter_bytes, r.trainable_parameter_bytes)
            && trainable > total
        {
            return Err(ValidationError::new(
                "trainable_parameter_bytes",
                "trainable_parameter_bytes must not exceed parameter_bytes.",
            ));
        }
        Ok(Self { status, readings })
    }

    /// A measured footprint.
    pub fn measured(readings: ModelFootprintReadings) -> Result<Self, ValidationError> {
        Self::new(ModelMeasurementStatus::Measured, readings)
    }

    /// An unavailable footprint with an optional reason.
    pub fn unavailable(reason: Option<impl Into<String>>) -> Self {
        let readings =
            ModelFootprintReadings { unavailable_reason: reason.map(Into::into), ..Default::default() };
        Self { status: ModelMeasurementStatus::Unavailable, readings }
    }

    /// Whether the footprint was measured.
    pub fn status(&self) -> ModelMeasurementStatus {
        self.status
    }

    /// The readings.
    pub fn readings(&self) -> &ModelFootprintReadings {
        &self.readings
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModelMeasurement {
    status: ModelMeasurementStatus,
    #[serde(default)]
    parameter_count: Option<i128>,
    #[serde(default)]
    parameter_bytes: Option<i128>,
    #[serde(default)]
    trainable_parameter_count: Option<i128>,
    #[serde(default)]
    trainable_parameter_bytes: Option<i128>,
    #[serde(default)]
    buffer_bytes: Option<i128>,
    #[serde(default)]
    in_memory_bytes: Option<i128>,
    #[serde(default)]
    weight_dtypes: Vec<String>,
    #[serde(default)]
    unavailable_reason: Option<String>,
}

impl TryFrom<RawModelMeasurement> for ModelFootprintMeasurement {
    type Error = ValidationError;
    fn try_from(raw: RawModelMeasurement) -> Result<Self, ValidationError> {
        let readings = ModelFootprintReadings {
            parameter_count: optional_nonnegative("parameter_count", raw.parameter_count)?,
            parameter_bytes: optional_nonnegative("parameter_bytes", raw.parameter_bytes)?,
            trainable_parameter_count: optional_nonnegative(
                "trainable_parameter_count",
                raw.trainable_parameter_count,
            )?,
            trainable_parameter_bytes: optional_nonnegative(
                "trainable_parameter_bytes",
                raw.trainable_parameter_bytes,
            )?,
            buffer_bytes: optional_nonnegative("buffer_bytes", raw.buffer_bytes)?,
            in_memory_bytes: optional_nonnegative("in_memory_bytes", raw.in_memory_bytes)?,
            weight_dtypes: raw.weight_dtypes,
            unavailable_reason: raw.unavailable_reason,
        };
        Self::new(raw.status, readings)
    }
}

impl From<ModelFootprintMeasurement> for RawModelMeasurement {
    fn from(value: ModelFootprintMeasurement) -> Self {
        let r = value.readings;
        Self {
            status: value.status,
            parameter_count: r.parameter_count.map(i128::from),
            parameter_bytes: r.parameter_bytes.map(i128::from),
            trainable_parameter_count: r.trainable_parameter_count.map(i128::from),
            trainable_parameter_bytes: r.trainable_parameter_bytes.map(i128::from),
            buffer_bytes: r.buffer_bytes.map(i128::from),
            in_memory_bytes: r.in_memory_bytes.map(i128::from),
            weight_dtypes: r.weight_dtypes,
            unavailable_reason: r.unavailable_reason,
        }
    }
}

/// An explicit local artifact whose deployment footprint should be measured;
/// vertebrae's `DeploymentArtifact`.
///
/// ```
/// use tally_profile::profile::DeploymentArtifact;
/// let bundle = DeploymentArtifact::new("/models/bert").unwrap().recursive(true);
/// assert_eq!(bundle.role.as_str(), "checkpoint");
/// assert_eq!(DeploymentArtifact::new("").unwrap_err().to_string(), "DeploymentArtifact.path must be non-empty.");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawArtifact")]
pub struct DeploymentArtifact {
    /// The path as declared (`~` is expanded when measuring).
    pub path: NonEmptyString,
    /// What the artifact is, e.g. `checkpoint` or `external_weights`.
    pub role: NonEmptyString,
    /// Whether a directory is measured file by file.
    pub recursive: bool,
}

impl DeploymentArtifact {
    /// A non-recursive `checkpoint` artifact.
    pub fn new(path: impl Into<String>) -> Result<Self, ValidationError> {
        Ok(Self {
            path: NonEmptyString::new(path)
                .map_err(|_| ValidationError::new("path", "DeploymentArtifact.path must be non-empty."))?,
            role: NonEmptyString::new("checkpoint").expect("literal is non-empty"),
            recursive: false,
        })
    }

    /// The same artifact with another role.
    pub fn with_role(mut self, role: impl Into<String>) -> Result<Self, ValidationError> {
        self.role = NonEmptyString::new(role)
            .map_err(|_| ValidationError::new("role", "DeploymentArtifact.role must be non-empty."))?;
        Ok(self)
    }

    /// The same artifact, measured recursively when it is a directory.
    pub fn recursive(mut self, recursive: bool) -> Self {
        self.recursive = recursive;
        self
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArtifact {
    path: String,
    #[serde(default = "checkpoint_text")]
    role: String,
    #[serde(default)]
    recursive: bool,
}

fn checkpoint_text() -> String {
    "checkpoint".to_owned()
}

impl TryFrom<RawArtifact> for DeploymentArtifact {
    type Error = ValidationError;
    fn try_from(raw: RawArtifact) -> Result<Self, ValidationError> {
        Ok(Self::new(raw.path)?.with_role(raw.role)?.recursive(raw.recursive))
    }
}
