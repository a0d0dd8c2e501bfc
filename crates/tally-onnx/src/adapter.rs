//! `OnnxResourceProfileAdapter`: vertebrae 1.1.0's
//! `ONNXResourceProfileAdapter`, plus the model footprint read from the
//! model file.

use std::path::{Path, PathBuf};

use tally_profile::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, ModelFootprintMeasurement,
    ResourceAdapterMetadata,
};
use tally_profile::{HookError, ResourceProfileAdapter};

use crate::model::ModelInfo;
use crate::session::{CPU_EXECUTION_PROVIDER, OnnxSession};

/// vertebrae's reason for every device-memory answer of this adapter.
pub const NO_ALLOCATOR_PEAK_API: &str = "ONNX Runtime does not expose a portable allocator peak API.";

/// The profiler's view of an ONNX Runtime session.
///
/// As vertebrae's adapter: backend `onnxruntime`; device the session's
/// first execution provider (`device_resolution` `active_provider`), or the
/// first configured one before a session exists (`configured_provider`,
/// default `CPUExecutionProvider`); not asynchronous, since a session run
/// returns when its outputs are ready (`InferenceSession.run`);
/// `synchronize` succeeds; device memory is unavailable with vertebrae's
/// reason (no provider this build can run on has an allocator whose peak
/// can be read for a scoped window).
///
/// Beyond vertebrae, which reports the footprint unavailable without the
/// `onnx` package: the model footprint comes from the `.onnx` file
/// ([`ModelInfo`]) and the external data files are declared as deployment
/// artifacts (role `external_weights`) beside the model (role
/// `checkpoint`). The metadata's `weight_dtypes` are the model's tensor
/// types.
///
/// ```no_run
/// use tally_onnx::{OnnxResourceProfileAdapter, OnnxRuntime, OnnxSession, SessionOptions};
/// use tally_profile::{ProfilerConfig, ResourceProfiler};
/// let runtime = OnnxRuntime::load(None)?;
/// let session = OnnxSession::open(&runtime, "model.onnx".as_ref(), &SessionOptions::default())?;
/// let profiler = ResourceProfiler::new(ProfilerConfig::default())
///     .with_adapter(Box::new(OnnxResourceProfileAdapter::for_session(&session)));
/// # Ok::<(), tally_onnx::OnnxError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OnnxResourceProfileAdapter {
    model_path: PathBuf,
    providers: Vec<String>,
    session_active: bool,
    model: Result<ModelInfo, String>,
    external_artifacts: Vec<DeploymentArtifact>,
}

impl OnnxResourceProfileAdapter {
    /// For a live session: its providers, its model file read for the footprint.
    pub fn for_session(session: &OnnxSession) -> Self {
        let mut adapter = Self::configured(session.model_path(), session.providers().to_vec());
        adapter.session_active = true;
        adapter
    }

    /// Before a session exists: the providers it will be configured with
    /// (empty means ONNX Runtime's default, `CPUExecutionProvider`).
    pub fn configured(model_path: &Path, providers: Vec<String>) -> Self {
        let model = ModelInfo::read(model_path).map_err(|error| error.to_string());
        Self {
            model_path: model_path.to_path_buf(),
            providers,
            session_active: false,
            model,
            external_artifacts: Vec::new(),
        }
    }

    /// Uses an already read [`ModelInfo`] instead of reading the file again.
    pub fn with_model_info(mut self, model: ModelInfo) -> Self {
        self.model = Ok(model);
        self
    }

    /// Extra deployment artifacts, as vertebrae's `external_artifacts`
    /// argument: declared after the model and its external data files.
    pub fn with_external_artifacts(mut self, artifacts: Vec<DeploymentArtifact>) -> Self {
        self.external_artifacts = artifacts;
        self
    }

    /// The model as read from its file, or why it could not be read.
    pub fn model(&self) -> Result<&ModelInfo, &str> {
        self.model.as_ref().map_err(String::as_str)
    }

    fn device(&self) -> String {
        self.providers.first().cloned().unwrap_or_else(|| CPU_EXECUTION_PROVIDER.to_owned())
    }
}

impl ResourceProfileAdapter for OnnxResourceProfileAdapter {
    fn metadata(&mut self) -> Result<ResourceAdapterMetadata, HookError> {
        let resolution = if self.session_active { "active_provider" } else { "configured_provider" };
        let metadata = ResourceAdapterMetadata {
            backend: Some("onnxruntime".to_owned()),
            device: Some(self.device()),
            asynchronous: false,
            synchronization_method: Some("InferenceSession.run".to_owned()),
            weight_dtypes: self.model.as_ref().map(ModelInfo::weight_dtypes).unwrap_or_default(),
            ..Default::default()
        };
        metadata
            .with_device_resolution(resolution)
            .map_err(|error| HookError::new("ValueError", error.to_string()))
    }

    fn synchronize(&mut self) -> Result<AdapterOperationResult, HookError> {
        Ok(AdapterOperationResult::succeeded())
    }

    fn reset_peak_device_memory(&mut self) -> Result<AdapterOperationResult, HookError> {
        Ok(AdapterOperationResult::unavailable(Some(NO_ALLOCATOR_PEAK_API)))
    }

    fn peak_device_memory(&mut self) -> Result<DeviceMemoryMeasurement, HookError> {
        Ok(DeviceMemoryMeasurement::unavailable(Some(NO_ALLOCATOR_PEAK_API))
            .with_backend_device(Some("onnxruntime".to_owned()), Some(self.device())))
    }

    fn model_footprint(&mut self) -> Result<ModelFootprintMeasurement, HookError> {
        Ok(match &self.model {
            Ok(model) => model.footprint(),
            Err(reason) => ModelFootprintMeasurement::unavailable(Some(format!(
                "The ONNX model could not be read: {reason}"
            ))),
        })
    }

    fn deployment_artifacts(&mut self) -> Result<Vec<DeploymentArtifact>, HookError> {
        let mut artifacts = match &self.model {
            Ok(model) => model.deployment_artifacts(),
            Err(_) => DeploymentArtifact::new(self.model_path.to_string_lossy()).into_iter().collect(),
        };
        artifacts.extend(self.external_artifacts.iter().cloned());
        Ok(artifacts)
    }

    fn name(&self) -> String {
        "tally_onnx.OnnxResourceProfileAdapter".to_owned()
    }
}
