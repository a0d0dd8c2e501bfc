//! `TorchResourceProfileAdapter`: vertebrae's adapter of the same name.

use std::fmt;
use std::sync::{Arc, Mutex};

use tally_profile::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, DeviceMemoryReadings,
    ModelFootprintMeasurement, OperationStatus, ResourceAdapterMetadata,
};
use tally_profile::{HookError, ResourceProfileAdapter};
use tch::nn::{VarStore, Variables};
use tch::{CModule, Device};

use crate::allocator;
use crate::device::TorchDevice;
use crate::error::TorchError;
use crate::model::ModelTensors;

const MULTI_DEVICE_REASON: &str =
    "multi_device_model: scoped allocator peaks are unavailable for Torch models spanning multiple devices.";
const CPU_REASON: &str = "CPU memory is reported through process RSS.";
const DEVICE_CHANGED_REASON: &str =
    "The active Torch device changed after the allocator measurement boundary was established.";
const NOT_LOADED_REASON: &str = "The model has not been loaded.";

type ModelGetter = Box<dyn FnMut() -> Result<Option<ModelTensors>, TorchError>>;
type DeviceResolver = Box<dyn FnMut() -> Option<Device>>;

enum ModelSource {
    NotLoaded,
    Variables { variables: Arc<Mutex<Variables>>, device: Device },
    Module(Arc<CModule>),
    Getter(ModelGetter),
}

/// Resource hooks for a libtorch model, as vertebrae 1.1.0's
/// `TorchResourceProfileAdapter` gives them for a PyTorch model; it never
/// loads a model, never moves one and never runs one.
///
/// - **Device resolution**: the devices of the model's parameters and
///   buffers (`model_state`; several: `multi_device_model`; one that differs
///   from the resolver's or the explicit device: `model_state_conflicts_with_profiling_hint`,
///   which makes the profiler warn), else the resolver's device
///   (`extractor_resolver`), else the explicit device (`explicit`), else
///   `cpu` (`default_cpu`).
/// - **Metadata**: backend `torch`, the device names joined by `,`,
///   asynchronous on CUDA or MPS, the synchronization method
///   (`torch.cuda.synchronize`, `torch.mps.synchronize`,
///   `torch.synchronize_each_active_device` for several devices, else
///   `not_applicable`), and the weight dtypes spelled as Python prints them
///   (`torch.float32`).
/// - **Synchronize**: every CUDA device, and MPS once; `not_applicable` when
///   there is none.
/// - **Device memory**: CPU is `not_applicable` (process RSS covers it);
///   CUDA is the caching allocator's peak allocated and reserved bytes over
///   the window, with the values at the reset as baseline; several devices,
///   other device types, or a device that changed since the reset are
///   unavailable, each with vertebrae's reason.
/// - **Model footprint**: see [`ModelTensors::footprint`]; unavailable
///   ("The model has not been loaded.") without a model.
/// - **Deployment artifacts**: the files declared with
///   [`with_artifact`](Self::with_artifact) / [`with_artifacts`](Self::with_artifacts).
///
/// ```no_run
/// use std::sync::Arc;
/// use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};
/// use tally_torch::TorchResourceProfileAdapter;
///
/// let module = Arc::new(tch::CModule::load("model.pt")?);
/// let adapter = TorchResourceProfileAdapter::for_module(Arc::clone(&module)).with_artifacts(["model.pt"])?;
/// let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
/// let input = tch::Tensor::zeros([8, 3, 224, 224], tch::kind::FLOAT_CPU);
/// let output = profiler.measure_call(|| module.forward_ts(&[&input]), CallSpec::new(8, "batch"))?;
/// let profile = profiler.finish(false);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TorchResourceProfileAdapter {
    model: ModelSource,
    artifacts: Vec<DeploymentArtifact>,
    explicit_device: Option<Device>,
    resolver: Option<DeviceResolver>,
    baseline_allocated: Option<u64>,
    baseline_reserved: Option<u64>,
    reset_device: Option<String>,
}

impl fmt::Debug for TorchResourceProfileAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let model = match &self.model {
            ModelSource::NotLoaded => "not loaded",
            ModelSource::Variables { .. } => "VarStore",
            ModelSource::Module(_) => "CModule",
            ModelSource::Getter(_) => "getter",
        };
        f.debug_struct("TorchResourceProfileAdapter")
            .field("model", &model)
            .field("artifacts", &self.artifacts)
            .field("explicit_device", &self.explicit_device)
            .field("resolver", &self.resolver.is_some())
            .field("reset_device", &self.reset_device)
            .finish()
    }
}

impl Default for TorchResourceProfileAdapter {
    fn default() -> Self {
        Self::new()
    }
}

impl TorchResourceProfileAdapter {
    /// An adapter with no model (footprint unavailable, device from the
    /// resolver, the explicit device, or `cpu`).
    pub fn new() -> Self {
        Self {
            model: ModelSource::NotLoaded,
            artifacts: Vec::new(),
            explicit_device: None,
            resolver: None,
            baseline_allocated: None,
            baseline_reserved: None,
            reset_device: None,
        }
    }

    /// An adapter over the variables of `var_store` (and every module built
    /// on it). It shares the store's variables, so variables added, frozen
    /// or converted later are seen; the store itself may be dropped.
    pub fn for_var_store(var_store: &VarStore) -> Self {
        let variables = Arc::clone(&var_store.variables_);
        Self { model: ModelSource::Variables { variables, device: var_store.device() }, ..Self::new() }
    }

    /// An adapter over a loaded TorchScript module.
    pub fn for_module(module: Arc<CModule>) -> Self {
        Self { model: ModelSource::Module(module), ..Self::new() }
    }

    /// An adapter that asks `getter` for the model's tensors each time it
    /// needs them; `Ok(None)` means not loaded (yet). This is vertebrae's
    /// `model_getter`, for models loaded lazily.
    pub fn with_model_getter(
        getter: impl FnMut() -> Result<Option<ModelTensors>, TorchError> + 'static,
    ) -> Self {
        Self { model: ModelSource::Getter(Box::new(getter)), ..Self::new() }
    }

    /// The device the caller asked for (vertebrae's `extractor.device`):
    /// used when the model has no tensors (`explicit`) and compared with the
    /// model's device otherwise, unless a resolver is set.
    pub fn with_device(mut self, device: Device) -> Self {
        self.explicit_device = Some(device);
        self
    }

    /// A function naming the intended device (vertebrae's
    /// `device_resolver`); it takes precedence over [`with_device`](Self::with_device).
    pub fn with_device_resolver(mut self, resolver: impl FnMut() -> Option<Device> + 'static) -> Self {
        self.resolver = Some(Box::new(resolver));
        self
    }

    /// Declares a deployment artifact.
    pub fn with_artifact(mut self, artifact: DeploymentArtifact) -> Self {
        self.artifacts.push(artifact);
        self
    }

    /// Declares files (`.pt`, `.safetensors`, ...) as `checkpoint` artifacts,
    /// as vertebrae normalizes plain paths. Fails on an empty path.
    pub fn with_artifacts<P: Into<String>>(
        mut self,
        paths: impl IntoIterator<Item = P>,
    ) -> Result<Self, tally_core::ValidationError> {
        for path in paths {
            self.artifacts.push(DeploymentArtifact::new(path)?);
        }
        Ok(self)
    }

    /// The model's tensors now, or `None` when no model is loaded.
    pub fn model_tensors(&mut self) -> Result<Option<ModelTensors>, TorchError> {
        match &mut self.model {
            ModelSource::NotLoaded => Ok(None),
            ModelSource::Variables { variables, device } => {
                ModelTensors::from_variables(variables, *device).map(Some)
            }
            ModelSource::Module(module) => ModelTensors::from_module(module).map(Some),
            ModelSource::Getter(getter) => getter(),
        }
    }

    /// vertebrae's `_resolved_devices`: the devices and how they were found.
    pub fn resolved_devices(&mut self) -> Result<(Vec<TorchDevice>, &'static str), TorchError> {
        let model_devices = match &self.model {
            // Every variable is a parameter or a buffer: no need to tell
            // them apart (this runs twice per measured call).
            ModelSource::Variables { variables, device } => {
                ModelTensors::variable_devices(variables, *device)?
            }
            _ => match self.model_tensors()? {
                Some(tensors) => tensors.devices()?,
                None => Vec::new(),
            },
        };
        if !model_devices.is_empty() {
            if model_devices.len() > 1 {
                return Ok((model_devices, "multi_device_model"));
            }
            // vertebrae asks the resolver for the hint when there is one,
            // even if it answers None, and only otherwise the explicit device.
            let hinted = match &mut self.resolver {
                Some(resolver) => resolver(),
                None => self.explicit_device,
            };
            let conflicts =
                hinted.is_some_and(|hint| TorchDevice::from(hint).name() != model_devices[0].name());
            let source = if conflicts { "model_state_conflicts_with_profiling_hint" } else { "model_state" };
            return Ok((model_devices, source));
        }
        if let Some(resolver) = &mut self.resolver
            && let Some(device) = resolver()
        {
            return Ok((vec![TorchDevice::from(device)], "extractor_resolver"));
        }
        if let Some(device) = self.explicit_device {
            return Ok((vec![TorchDevice::from(device)], "explicit"));
        }
        Ok((vec![TorchDevice::from(Device::Cpu)], "default_cpu"))
    }

    fn single_device_answer(
        &mut self,
    ) -> Result<Result<TorchDevice, (Vec<TorchDevice>, &'static str)>, TorchError> {
        let (devices, _) = self.resolved_devices()?;
        match <[TorchDevice; 1]>::try_from(devices) {
            Ok([device]) => Ok(Ok(device)),
            Err(devices) => Ok(Err((devices, MULTI_DEVICE_REASON))),
        }
    }
}

impl ResourceProfileAdapter for TorchResourceProfileAdapter {
    fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
        let (devices, source) = self.resolved_devices()?;
        let weight_dtypes = match self.model_tensors()? {
            Some(tensors) => tensors.weight_dtypes()?,
            None => Vec::new(),
        };
        let names: Vec<&str> = devices.iter().map(TorchDevice::name).collect();
        let synchronization_method = if devices.len() > 1 {
            "torch.synchronize_each_active_device"
        } else if devices.first().is_some_and(TorchDevice::is_cuda) {
            "torch.cuda.synchronize"
        } else if devices.first().is_some_and(TorchDevice::is_mps) {
            "torch.mps.synchronize"
        } else {
            "not_applicable"
        };
        let metadata = ResourceAdapterMetadata {
            backend: Some("torch".into()),
            device: (!names.is_empty()).then(|| names.join(",")),
            asynchronous: devices.iter().any(|device| device.is_cuda() || device.is_mps()),
            synchronization_method: Some(synchronization_method.into()),
            weight_dtypes,
            ..ResourceAdapterMetadata::default()
        };
        Ok(metadata.with_device_resolution(source).map_err(TorchError::from)?)
    }

    fn synchronize(&mut self) -> Result<AdapterOperationResult, HookError> {
        let (devices, _) = self.resolved_devices()?;
        let mut synchronized = false;
        let mut mps_synchronized = false;
        for device in &devices {
            if device.is_cuda() {
                allocator::synchronize(device)?;
                synchronized = true;
            } else if device.is_mps() && !mps_synchronized {
                allocator::synchronize(device)?;
                synchronized = true;
                mps_synchronized = true;
            }
        }
        let status = if synchronized { OperationStatus::Succeeded } else { OperationStatus::NotApplicable };
        Ok(AdapterOperationResult { status, reason: None })
    }

    fn reset_peak_device_memory(&mut self) -> Result<AdapterOperationResult, HookError> {
        let device = match self.single_device_answer()? {
            Ok(device) => device,
            Err((_, reason)) => return Ok(AdapterOperationResult::unavailable(Some(reason))),
        };
        if device.is_cpu() {
            return Ok(AdapterOperationResult::not_applicable(Some(CPU_REASON)));
        }
        if !device.is_cuda() {
            let reason = format!(
                "Torch does not expose resettable allocator peak counters for {}.",
                device.device_type()
            );
            return Ok(AdapterOperationResult::unavailable(Some(reason)));
        }
        let stats = allocator::allocator_stats(&device)?;
        allocator::reset_peak_stats(&device)?;
        self.baseline_allocated = Some(stats.allocated_bytes);
        self.baseline_reserved = Some(stats.reserved_bytes);
        self.reset_device = Some(device.name().to_owned());
        Ok(AdapterOperationResult::succeeded())
    }

    fn peak_device_memory(&mut self) -> Result<DeviceMemoryMeasurement, HookError> {
        let torch = Some("torch".to_owned());
        let device = match self.single_device_answer()? {
            Ok(device) => device,
            Err((devices, reason)) => {
                let names: Vec<&str> = devices.iter().map(TorchDevice::name).collect();
                return Ok(DeviceMemoryMeasurement::unavailable(Some(reason))
                    .with_backend_device(torch, Some(names.join(","))));
            }
        };
        let name = Some(device.name().to_owned());
        if device.is_cpu() {
            return Ok(
                DeviceMemoryMeasurement::not_applicable(Some(CPU_REASON)).with_backend_device(torch, name)
            );
        }
        if !device.is_cuda() {
            let reason =
                format!("Torch does not expose allocator peak counters for {}.", device.device_type());
            return Ok(DeviceMemoryMeasurement::unavailable(Some(reason)).with_backend_device(torch, name));
        }
        if self.reset_device.as_deref() != Some(device.name()) {
            return Ok(DeviceMemoryMeasurement::unavailable(Some(DEVICE_CHANGED_REASON))
                .with_backend_device(torch, name));
        }
        let stats = allocator::allocator_stats(&device)?;
        let readings = DeviceMemoryReadings {
            backend: torch,
            device: name,
            baseline_allocated_bytes: self.baseline_allocated,
            baseline_reserved_bytes: self.baseline_reserved,
            peak_allocated_bytes: Some(stats.peak_allocated_bytes),
            peak_reserved_bytes: Some(stats.peak_reserved_bytes),
            unavailable_reason: None,
        };
        Ok(DeviceMemoryMeasurement::measured(readings).map_err(TorchError::from)?)
    }

    fn model_footprint(&mut self) -> Result<ModelFootprintMeasurement, HookError> {
        match self.model_tensors()? {
            Some(tensors) => Ok(tensors.footprint()?),
            None => Ok(ModelFootprintMeasurement::unavailable(Some(NOT_LOADED_REASON))),
        }
    }

    fn deployment_artifacts(&mut self) -> Result<Vec<DeploymentArtifact>, HookError> {
        Ok(self.artifacts.clone())
    }

    fn name(&self) -> String {
        "tally_torch.TorchResourceProfileAdapter".to_owned()
    }
}
