//! One profiling run of a model on synthetic inputs: what `tally profile
//! MODEL.onnx` does, as a library call that also hands back the inputs and
//! outputs (so a caller can check the runtime really computed).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use tally_profile::profile::ResourceProfile;
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};

use crate::adapter::OnnxResourceProfileAdapter;
use crate::error::OnnxError;
use crate::model::ModelInfo;
use crate::runtime::{LibraryPath, LibrarySource, OnnxRuntime};
use crate::session::{IoInfo, OnnxSession, OutputValue, SessionOptions, ShapeBindings, TensorData};

/// What to run and how to measure it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileOptions {
    /// The ONNX Runtime library; `None` reads `ORT_DYLIB_PATH`, else looks
    /// for the `onnxruntime` package of the `python3` on `PATH`
    /// ([`crate::LibraryPath::locate`]).
    pub library: Option<PathBuf>,
    /// Sizes of the inputs' dynamic dimensions.
    pub bindings: ShapeBindings,
    /// Measured calls (at least 1). The first is the profile's first call,
    /// the rest are warm calls.
    pub calls: u64,
    /// Run one more call before them, recorded as the first call (call type
    /// `warmup`), so every one of `calls` is a warm call.
    pub warmup: bool,
    /// Session settings.
    pub session: SessionOptions,
    /// What the profiler measures.
    pub profiler: ProfilerConfig,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        Self {
            library: None,
            bindings: ShapeBindings::default(),
            calls: 10,
            warmup: false,
            session: SessionOptions::default(),
            profiler: ProfilerConfig::default(),
        }
    }
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct ProfileRun {
    /// The profile, as vertebrae's `ResourceProfile`.
    pub profile: ResourceProfile,
    /// The model's declared inputs.
    pub declared_inputs: Vec<IoInfo>,
    /// The model's declared outputs.
    pub declared_outputs: Vec<IoInfo>,
    /// The inputs every call was fed.
    pub inputs: Vec<TensorData>,
    /// The last call's outputs, in the model's output order.
    pub outputs: Vec<OutputValue>,
    /// Samples per call (the batch size).
    pub samples_per_call: u64,
    /// ONNX Runtime's version.
    pub runtime_version: String,
    /// The library it was loaded from.
    pub runtime_library: PathBuf,
    /// How that library was found.
    pub runtime_origin: LibrarySource,
}

/// Loads ONNX Runtime, opens `model_path`, and measures `calls` runs (plus
/// the warmup) on synthetic inputs through a [`ResourceProfiler`] with an
/// [`OnnxResourceProfileAdapter`].
///
/// Every call copies its outputs out of the session, as a program using the
/// results would (the profile's context says output conversion is
/// included). A failing call ends the run with its error. The profile's
/// context also gets `onnxruntime_version` and `onnxruntime_library`.
pub fn profile_model(model_path: &Path, options: &ProfileOptions) -> Result<ProfileRun, OnnxError> {
    if options.calls == 0 {
        return Err(OnnxError::Options("at least one call must be measured".to_owned()));
    }
    let located = LibraryPath::locate(options.library.as_deref())?;
    let runtime = OnnxRuntime::load_from(&located)?;
    let mut session = OnnxSession::open(&runtime, model_path, &options.session)?;
    let inputs = session.synthetic_inputs(&options.bindings)?;
    let adapter = OnnxResourceProfileAdapter::for_session(&session);
    let adapter = match ModelInfo::read(model_path) {
        Ok(model) => adapter.with_model_info(model),
        Err(_) => adapter,
    };
    let mut context = Map::new();
    context.insert("onnxruntime_version".to_owned(), json!(runtime.version()));
    context.insert("onnxruntime_library".to_owned(), Value::String(runtime.library().display().to_string()));
    let mut profiler =
        ResourceProfiler::new(options.profiler).with_adapter(Box::new(adapter)).with_context(context);
    let samples = inputs.samples();
    let mut outputs = Vec::new();
    let total = options.calls + u64::from(options.warmup);
    for index in 0..total {
        let call_type = if options.warmup && index == 0 { "warmup" } else { "batch" };
        let result =
            profiler.measure_call(|| session.run_with_outputs(&inputs), CallSpec::new(samples, call_type));
        outputs = result?;
    }
    Ok(ProfileRun {
        profile: profiler.finish(false),
        declared_inputs: session.inputs().to_vec(),
        declared_outputs: session.outputs().to_vec(),
        inputs: inputs.tensors().to_vec(),
        outputs,
        samples_per_call: samples,
        runtime_version: runtime.version().to_owned(),
        runtime_library: runtime.library().to_path_buf(),
        runtime_origin: located.origin,
    })
}
