//! Profiling a TorchScript file on synthetic inputs: what `tally profile
//! MODEL.pt` runs.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tally_profile::profile::{DeploymentArtifact, ResourceProfile};
use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};
use tch::{CModule, Device, IValue, Kind, Tensor};

use crate::adapter::TorchResourceProfileAdapter;
use crate::error::TorchError;
use crate::ffi;

/// How to run a TorchScript model for a profile.
#[derive(Debug, Clone)]
pub struct ScriptProfileOptions {
    /// The shape of each `forward` argument, in order (at least one). Each
    /// input is a float32 tensor filled by [`synthetic_input`].
    pub input_shapes: Vec<Vec<i64>>,
    /// The device to load the module on and create the inputs on.
    pub device: Device,
    /// Measured calls (at least 1). The first is the profile's first call,
    /// the rest are warm calls.
    pub calls: u64,
    /// Run one more call before them, recorded as the first call (call type
    /// `warmup`), so every one of `calls` is a warm call.
    pub warmup: bool,
    /// Intra-op threads (`torch.set_num_threads`); `None` keeps libtorch's choice.
    pub threads: Option<i32>,
    /// What the profiler measures.
    pub profiler: ProfilerConfig,
}

impl Default for ScriptProfileOptions {
    fn default() -> Self {
        Self {
            input_shapes: Vec::new(),
            device: Device::Cpu,
            calls: 10,
            warmup: false,
            threads: None,
            profiler: ProfilerConfig::default(),
        }
    }
}

/// A finished TorchScript run.
#[derive(Debug)]
pub struct ScriptProfileRun {
    /// The profile.
    pub profile: ResourceProfile,
    /// The inputs every call received.
    pub inputs: Vec<Tensor>,
    /// The last call's outputs, on the CPU, in the order `forward` returned
    /// them (tuples and lists flattened; non-tensor values left out).
    pub outputs: Vec<Tensor>,
    /// Samples per call: the first input's first dimension (1 for a scalar).
    pub samples_per_call: u64,
    /// The linked libtorch's version, e.g. `2.13.0`.
    pub libtorch_version: String,
}

/// The synthetic input of `shape`: float32, row-major values
/// `((i mod 17) - 8) / 4 + 1/8`, exact binary fractions in [-1.875, 2.125],
/// the same ramp python/fixtures/make_torchscript_models.py feeds its models.
///
/// ```
/// let input = tally_torch::synthetic_input(&[2, 3], tch::Device::Cpu).unwrap();
/// let values = Vec::<f32>::try_from(&input.reshape([-1])).unwrap();
/// assert_eq!(values, [-1.875, -1.625, -1.375, -1.125, -0.875, -0.625]);
/// ```
pub fn synthetic_input(shape: &[i64], device: Device) -> Result<Tensor, TorchError> {
    let ramp = Tensor::f_arange(shape.iter().product::<i64>(), (Kind::Double, Device::Cpu))?;
    let values = ramp.f_remainder(17)?.f_sub_scalar(8)?.f_mul_scalar(0.25)?.f_add_scalar(0.125)?;
    Ok(values.f_reshape(shape)?.f_to_kind(Kind::Float)?.f_to_device(device)?)
}

fn collect_tensors(value: IValue, into: &mut Vec<Tensor>) {
    match value {
        IValue::Tensor(tensor) => into.push(tensor),
        IValue::TensorList(tensors) => into.extend(tensors),
        IValue::Tuple(values) | IValue::GenericList(values) => {
            values.into_iter().for_each(|value| collect_tensors(value, into));
        }
        IValue::GenericDict(entries) => {
            entries.into_iter().for_each(|(_, value)| collect_tensors(value, into));
        }
        _ => {}
    }
}

/// One call: `forward` without autograd, then every output tensor copied
/// to the CPU, as a program that uses the results would.
fn forward(module: &CModule, inputs: &[IValue]) -> Result<Vec<Tensor>, TorchError> {
    let output = tch::no_grad(|| module.forward_is(inputs))?;
    let mut tensors = Vec::new();
    collect_tensors(output, &mut tensors);
    tensors.into_iter().map(|tensor| Ok(tensor.f_to_device(Device::Cpu)?)).collect()
}

/// Loads the TorchScript module at `path` on `options.device`, runs it on
/// synthetic inputs `options.calls` times (plus a warm-up) under a
/// [`ResourceProfiler`] with a [`TorchResourceProfileAdapter`], which
/// declares the file as the `checkpoint` artifact. The profile's context
/// gets `libtorch_version`.
pub fn profile_torchscript(
    path: &Path,
    options: &ScriptProfileOptions,
) -> Result<ScriptProfileRun, TorchError> {
    if options.calls == 0 {
        return Err(TorchError::Options("at least one call must be measured".to_owned()));
    }
    if options.input_shapes.is_empty() {
        return Err(TorchError::Options("give the shape of each forward input".to_owned()));
    }
    if let Some(shape) = options.input_shapes.iter().find(|shape| shape.iter().any(|size| *size <= 0)) {
        return Err(TorchError::Options(format!("input shape {shape:?} has a size below 1")));
    }
    if let Some(threads) = options.threads {
        tch::set_num_threads(threads);
    }
    let mut module = CModule::load_on_device(path, options.device)?;
    module.f_set_eval()?;
    let module = Arc::new(module);
    let inputs: Vec<Tensor> = options
        .input_shapes
        .iter()
        .map(|shape| synthetic_input(shape, options.device))
        .collect::<Result<_, _>>()?;
    let input_values: Vec<IValue> =
        inputs.iter().map(|tensor| IValue::Tensor(tensor.shallow_clone())).collect();
    let samples = options.input_shapes[0].first().map_or(1, |size| size.unsigned_abs());

    let artifact = DeploymentArtifact::new(path.display().to_string())?;
    let adapter = TorchResourceProfileAdapter::for_module(Arc::clone(&module))
        .with_device(options.device)
        .with_artifact(artifact);
    let version = ffi::libtorch_version();
    let mut context = Map::new();
    context.insert("libtorch_version".to_owned(), json!(version));
    let mut profiler =
        ResourceProfiler::new(options.profiler).with_adapter(Box::new(adapter)).with_context(context);
    let mut outputs = Vec::new();
    let total = options.calls + u64::from(options.warmup);
    for index in 0..total {
        let call_type = if options.warmup && index == 0 { "warmup" } else { "batch" };
        outputs =
            profiler.measure_call(|| forward(&module, &input_values), CallSpec::new(samples, call_type))?;
    }
    Ok(ScriptProfileRun {
        profile: profiler.finish(false),
        inputs,
        outputs,
        samples_per_call: samples,
        libtorch_version: version,
    })
}

/// A tensor as JSON for an input/output dump: dtype as Python spells it,
/// shape, and the values as float64 (`null` for NaN and infinities).
pub fn tensor_json(name: &str, tensor: &Tensor) -> Result<Value, TorchError> {
    let facts = ffi::describe(tensor)?;
    let dtype = crate::dtype::python_dtype_name(facts.scalar_type)
        .ok_or(TorchError::UnknownScalarType(facts.scalar_type))?;
    let flat = tensor.f_to_device(Device::Cpu)?.f_to_kind(Kind::Double)?.f_reshape([-1])?;
    let values: Vec<f64> = Vec::<f64>::try_from(&flat)?;
    let values: Vec<Value> =
        values.into_iter().map(|value| if value.is_finite() { json!(value) } else { Value::Null }).collect();
    Ok(json!({"name": name, "dtype": dtype, "shape": tensor.size(), "values": values}))
}
