//! vertebrae 1.1.0's `TorchResourceProfileAdapter` over PyTorch's Python
//! objects (the `python` feature).
//!
//! Python users of vertebrae hold Python `torch.nn.Module`s, which libtorch
//! bindings cannot see, so [`TorchAdapter`] asks torch through pyo3 exactly
//! what vertebrae's adapter asks, in the same order: the same model getter
//! calls, the same `torch.device(...)` conversions, the same allocator
//! calls, hence the same answers, and the same exceptions (class and
//! message) where torch or the user's objects raise.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Mutex, PoisonError};

use pyo3::exceptions::{PyAttributeError, PyOverflowError, PyValueError};
use pyo3::prelude::*;
use tally_profile::profile::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, DeviceMemoryReadings,
    ModelFootprintMeasurement, ModelFootprintReadings, ResourceAdapterMetadata,
};
use tally_profile::python::PythonHooks;
use tally_profile::python::python_int;

const MULTI_DEVICE_REASON: &str =
    "multi_device_model: scoped allocator peaks are unavailable for Torch models spanning multiple devices.";
const CPU_REASON: &str = "CPU memory is reported through process RSS.";
const DEVICE_CHANGED_REASON: &str =
    "The active Torch device changed after the allocator measurement boundary was established.";

/// Where the profiling device comes from when the model's state does not
/// say (vertebrae's `device_resolver` argument).
#[derive(Debug)]
pub enum DeviceResolver {
    /// A Python callable, called with the torch module; `None` means "no
    /// preference".
    Callable(Py<PyAny>),
    /// A fixed device, as a resolver that always answers it
    /// (`lambda torch: profiling_device`, what vertebrae's Keras adapter
    /// passes for its torch backend).
    Fixed(String),
}

/// The CUDA allocator window opened by `reset_peak_device_memory`.
#[derive(Debug, Default, Clone)]
struct AllocatorWindow {
    baseline_allocated: Option<i128>,
    baseline_reserved: Option<i128>,
    device: Option<String>,
}

/// vertebrae's `TorchResourceProfileAdapter` over Python handles.
///
/// The hooks are inherent methods returning `PyResult` (the `tally` Python
/// package calls them with the GIL held and hands torch's exceptions to the
/// caller as they are); the [`ResourceProfileAdapter`](tally_profile::ResourceProfileAdapter) implementation
/// attaches to Python and turns an exception into a [`HookError`](tally_profile::HookError) named
/// after its class.
#[derive(Debug)]
pub struct TorchAdapter {
    extractor: Py<PyAny>,
    artifacts: Vec<DeploymentArtifact>,
    model_getter: Option<Py<PyAny>>,
    device_resolver: Option<DeviceResolver>,
    torch_loader: Option<Py<PyAny>>,
    // A lock rather than `&mut self`: the hooks run Python code (the model
    // getter, torch itself) that may call back into the same adapter, so
    // the window is only touched between Python calls, never across one.
    window: Mutex<AllocatorWindow>,
}

impl TorchAdapter {
    /// An adapter for `extractor` declaring `artifacts`, whose model
    /// `model_getter` returns (none: the extractor's `model`, else its
    /// `_model`), with torch from `torch_loader` (else the extractor's
    /// `_load_torch()`, else `import torch`).
    pub fn new(
        extractor: Py<PyAny>,
        artifacts: Vec<DeploymentArtifact>,
        model_getter: Option<Py<PyAny>>,
        device_resolver: Option<DeviceResolver>,
        torch_loader: Option<Py<PyAny>>,
    ) -> Self {
        Self {
            extractor,
            artifacts,
            model_getter,
            device_resolver,
            torch_loader,
            window: Mutex::new(AllocatorWindow::default()),
        }
    }

    /// The extractor.
    pub fn extractor(&self) -> &Py<PyAny> {
        &self.extractor
    }

    /// The deployment artifacts declared at construction.
    pub fn artifacts(&self) -> &[DeploymentArtifact] {
        &self.artifacts
    }

    /// vertebrae's `_load_torch`.
    fn torch<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(loader) = &self.torch_loader {
            return loader.bind(py).call0();
        }
        let extractor = self.extractor.bind(py);
        if let Some(loader) = attribute(extractor, "_load_torch")?
            && loader.is_callable()
        {
            return loader.call0();
        }
        py.import("torch").map(Bound::into_any)
    }

    /// The model: the getter's answer (vertebrae keeps `model_getter or
    /// default`, so a falsy getter falls back too), else the extractor's
    /// `model`, else its `_model`; `None` when there is none.
    fn model<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        if let Some(getter) = &self.model_getter {
            let getter = getter.bind(py);
            if getter.is_truthy()? {
                return Ok(Some(getter.call0()?).filter(|model| !model.is_none()));
            }
        }
        let extractor = self.extractor.bind(py);
        match attribute(extractor, "model")?.filter(|model| !model.is_none()) {
            Some(model) => Ok(Some(model)),
            None => Ok(attribute(extractor, "_model")?.filter(|model| !model.is_none())),
        }
    }

    /// The resolver's device for `torch`, `None` for no preference.
    fn resolver_device<'py>(
        &self,
        py: Python<'py>,
        torch: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(match &self.device_resolver {
            None => None,
            Some(DeviceResolver::Callable(resolver)) => {
                Some(resolver.bind(py).call1((torch,))?).filter(|device| !device.is_none())
            }
            Some(DeviceResolver::Fixed(device)) => Some(device.into_pyobject(py)?.into_any()),
        })
    }

    /// vertebrae's `_resolved_devices`: the `torch.device`s the model runs on
    /// and how they were found. Never empty (the last resort is `cpu`).
    fn resolved_devices<'py>(
        &self,
        py: Python<'py>,
        torch: &Bound<'py, PyAny>,
    ) -> PyResult<(Vec<Bound<'py, PyAny>>, &'static str)> {
        let device_of = |value: &Bound<'py, PyAny>| torch.call_method1("device", (value,));
        let model = self.model(py)?;
        let model_devices = model_devices(model.as_ref())?;
        if !model_devices.is_empty() {
            let devices = model_devices.iter().map(device_of).collect::<PyResult<Vec<_>>>()?;
            let mut source = if devices.len() > 1 { "multi_device_model" } else { "model_state" };
            if let [only] = devices.as_slice() {
                let hinted = if self.device_resolver.is_some() {
                    self.resolver_device(py, torch)?
                } else {
                    attribute(self.extractor.bind(py), "device")?.filter(|device| !device.is_none())
                };
                if let Some(hinted) = hinted
                    && device_of(&hinted)?.str()?.to_str()? != only.str()?.to_str()?
                {
                    source = "model_state_conflicts_with_profiling_hint";
                }
            }
            return Ok((devices, source));
        }
        if self.device_resolver.is_some()
            && let Some(device) = self.resolver_device(py, torch)?
        {
            return Ok((vec![device_of(&device)?], "extractor_resolver"));
        }
        let extractor = self.extractor.bind(py);
        if let Some(explicit) = attribute(extractor, "device")?.filter(|device| !device.is_none()) {
            return Ok((vec![device_of(&explicit)?], "explicit"));
        }
        if let Some(resolver) = attribute(extractor, "_device")?
            && resolver.is_callable()
        {
            return Ok((vec![device_of(&resolver.call1((torch,))?)?], "extractor_resolver"));
        }
        Ok((vec![device_of(&"cpu".into_pyobject(py)?.into_any())?], "default_cpu"))
    }

    fn with_window<T>(&self, action: impl FnOnce(&mut AllocatorWindow) -> T) -> T {
        // The window is plain data, valid whatever a panicking holder left.
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        action(&mut window)
    }
}

/// Python's `getattr(value, name, None)`: `None` only when the attribute is
/// missing (an `AttributeError`); any other exception propagates.
fn attribute<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    match value.getattr(name) {
        Ok(found) => Ok(Some(found)),
        Err(error) if error.is_instance_of::<PyAttributeError>(value.py()) => Ok(None),
        Err(error) => Err(error),
    }
}

/// `getattr(value, name, None)`, `None` also when the attribute is `None`.
fn present<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(attribute(value, name)?.filter(|found| !found.is_none()))
}

/// `device.type == kind`, compared as Python compares.
fn is_type(device: &Bound<'_, PyAny>, kind: &str) -> PyResult<bool> {
    device.getattr("type")?.eq(kind)
}

fn overflow() -> PyErr {
    PyOverflowError::new_err("the model's size exceeds the 128-bit range tally adds in")
}

/// A figure as the profile holds it, with vertebrae's check (`>= 0`) first.
fn size(name: &str, value: Option<i128>) -> PyResult<Option<u64>> {
    match value {
        None => Ok(None),
        Some(value) if value < 0 => Err(PyValueError::new_err(format!("{name} must be >= 0 when provided."))),
        Some(value) => u64::try_from(value).map(Some).map_err(|_| {
            PyOverflowError::new_err(format!("{name} exceeds the 64-bit range tally supports."))
        }),
    }
}

fn numel(value: &Bound<'_, PyAny>) -> PyResult<i128> {
    python_int::<i128>(&value.call_method0("numel")?)
}

fn tensor_bytes(value: &Bound<'_, PyAny>) -> PyResult<i128> {
    let elements = numel(value)?;
    let element_size = python_int::<i128>(&value.call_method0("element_size")?)?;
    elements.checked_mul(element_size).ok_or_else(overflow)
}

fn total<'py>(
    values: &[Bound<'py, PyAny>],
    figure: impl Fn(&Bound<'py, PyAny>) -> PyResult<i128>,
) -> PyResult<i128> {
    values.iter().try_fold(0i128, |sum, value| sum.checked_add(figure(value)?).ok_or_else(overflow))
}

/// `model.<method>()` when the model has such a method, else nothing.
fn method_values<'py>(model: &Bound<'py, PyAny>, method: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    match present(model, method)? {
        Some(method) if method.is_callable() => method.call0()?.try_iter()?.collect(),
        _ => Ok(Vec::new()),
    }
}

/// vertebrae's `_deduplicated_values` of `model.<method>()`: each object
/// once, by identity (a tied weight is one parameter), in first-seen order.
fn deduplicated<'py>(model: &Bound<'py, PyAny>, method: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let mut seen = HashSet::new();
    let mut values = method_values(model, method)?;
    // The values stay alive in `values`, so no identity is reused meanwhile.
    values.retain(|value| seen.insert(value.as_ptr() as usize));
    Ok(values)
}

/// vertebrae's `_torch_model_devices`: the distinct devices (by name, the
/// last object seen for each) of the parameters and buffers, and of a Keras
/// model's `weights` (or `variables`); the model's own `device` when none
/// has one. Sorted by name.
fn model_devices<'py>(model: Option<&Bound<'py, PyAny>>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let Some(model) = model else {
        return Ok(Vec::new());
    };
    let mut devices = BTreeMap::new();
    for method in ["parameters", "buffers"] {
        for value in method_values(model, method)? {
            if let Some(device) = present(&value, "device")? {
                devices.insert(device.str()?.to_string(), device);
            }
        }
    }
    let weights = match attribute(model, "weights")? {
        Some(weights) if weights.is_truthy()? => Some(weights),
        _ => attribute(model, "variables")?,
    };
    if let Some(weights) = weights {
        for value in weights.try_iter()? {
            let value = value?;
            let unwrapped = attribute(&value, "value")?.unwrap_or(value);
            if let Some(device) = present(&unwrapped, "device")? {
                devices.insert(device.str()?.to_string(), device);
            }
        }
    }
    // Read whatever the others found, as vertebrae reads it.
    let model_device = present(model, "device")?;
    if devices.is_empty()
        && let Some(device) = model_device
    {
        devices.insert(device.str()?.to_string(), device);
    }
    Ok(devices.into_values().collect())
}

/// vertebrae's `_torch_weight_dtypes`: sorted distinct `str(dtype)` of the
/// parameters and buffers (not deduplicated: a set needs no identity).
fn weight_dtypes(model: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(model) = model else {
        return Ok(Vec::new());
    };
    let mut values = method_values(model, "parameters")?;
    values.extend(method_values(model, "buffers")?);
    let mut dtypes = BTreeSet::new();
    for value in &values {
        if let Some(dtype) = attribute(value, "dtype")? {
            dtypes.insert(dtype.str()?.to_string());
        }
    }
    Ok(dtypes.into_iter().collect())
}

impl PythonHooks for TorchAdapter {
    /// The `metadata` hook: backend `torch`, the resolved devices, whether
    /// they run asynchronously, the synchronization method and the weight
    /// dtypes.
    fn metadata(&self, py: Python<'_>) -> PyResult<ResourceAdapterMetadata> {
        let torch = self.torch(py)?;
        let (devices, source) = self.resolved_devices(py, &torch)?;
        let model = self.model(py)?;
        let names =
            devices.iter().map(|device| Ok(device.str()?.to_string())).collect::<PyResult<Vec<_>>>()?;
        let mut asynchronous = false;
        for device in &devices {
            if is_type(device, "cuda")? || is_type(device, "mps")? {
                asynchronous = true;
                break;
            }
        }
        let method = match devices.as_slice() {
            [_, _, ..] => "torch.synchronize_each_active_device",
            [only] if is_type(only, "cuda")? => "torch.cuda.synchronize",
            [only] if is_type(only, "mps")? => "torch.mps.synchronize",
            _ => "not_applicable",
        };
        let metadata = ResourceAdapterMetadata {
            backend: Some("torch".to_owned()),
            device: (!names.is_empty()).then(|| names.join(",")),
            asynchronous,
            synchronization_method: Some(method.to_owned()),
            weight_dtypes: weight_dtypes(model.as_ref())?,
            ..ResourceAdapterMetadata::default()
        };
        metadata.with_device_resolution(source).map_err(|error| PyValueError::new_err(error.to_string()))
    }

    /// The `synchronize` hook: `torch.cuda.synchronize(device)` for each
    /// CUDA device, `torch.mps.synchronize()` once for MPS; `succeeded` if
    /// anything was synchronized, else `not_applicable`.
    fn synchronize(&self, py: Python<'_>) -> PyResult<AdapterOperationResult> {
        let torch = self.torch(py)?;
        let (devices, _) = self.resolved_devices(py, &torch)?;
        let (mut synchronized, mut mps_synchronized) = (false, false);
        for device in &devices {
            if is_type(device, "cuda")? {
                torch.getattr("cuda")?.call_method1("synchronize", (device,))?;
                synchronized = true;
            } else if is_type(device, "mps")? && attribute(&torch, "mps")?.is_some() && !mps_synchronized {
                torch.getattr("mps")?.call_method0("synchronize")?;
                synchronized = true;
                mps_synchronized = true;
            }
        }
        Ok(if synchronized {
            AdapterOperationResult::succeeded()
        } else {
            AdapterOperationResult::not_applicable(None::<String>)
        })
    }

    /// The `reset_peak_device_memory` hook: on one CUDA device, reads the
    /// allocated and reserved baselines and resets the allocator's peaks.
    fn reset_peak_device_memory(&self, py: Python<'_>) -> PyResult<AdapterOperationResult> {
        let torch = self.torch(py)?;
        let (devices, _) = self.resolved_devices(py, &torch)?;
        let device = match devices.as_slice() {
            [only] => only,
            _ => return Ok(AdapterOperationResult::unavailable(Some(MULTI_DEVICE_REASON))),
        };
        if is_type(device, "cpu")? {
            return Ok(AdapterOperationResult::not_applicable(Some(CPU_REASON)));
        }
        if !is_type(device, "cuda")? {
            let kind = device.getattr("type")?.str()?;
            return Ok(AdapterOperationResult::unavailable(Some(format!(
                "Torch does not expose resettable allocator peak counters for {kind}."
            ))));
        }
        let cuda = torch.getattr("cuda")?;
        let allocated = python_int::<i128>(&cuda.call_method1("memory_allocated", (device,))?)?;
        self.with_window(|window| window.baseline_allocated = Some(allocated));
        let reserved = python_int::<i128>(&cuda.call_method1("memory_reserved", (device,))?)?;
        self.with_window(|window| window.baseline_reserved = Some(reserved));
        cuda.call_method1("reset_peak_memory_stats", (device,))?;
        let name = device.str()?.to_string();
        self.with_window(|window| window.device = Some(name));
        Ok(AdapterOperationResult::succeeded())
    }

    /// The `peak_device_memory` hook: the allocator's peaks since the reset
    /// on the same CUDA device, with the baselines.
    fn peak_device_memory(&self, py: Python<'_>) -> PyResult<DeviceMemoryMeasurement> {
        let torch = self.torch(py)?;
        let (devices, _) = self.resolved_devices(py, &torch)?;
        let backend = Some("torch".to_owned());
        let device = match devices.as_slice() {
            [only] => only,
            _ => {
                let names = devices
                    .iter()
                    .map(|device| Ok(device.str()?.to_string()))
                    .collect::<PyResult<Vec<_>>>()?;
                return Ok(DeviceMemoryMeasurement::unavailable(Some(MULTI_DEVICE_REASON))
                    .with_backend_device(backend, Some(names.join(","))));
            }
        };
        let name = device.str()?.to_string();
        if is_type(device, "cpu")? {
            return Ok(DeviceMemoryMeasurement::not_applicable(Some(CPU_REASON))
                .with_backend_device(backend, Some(name)));
        }
        if !is_type(device, "cuda")? {
            let kind = device.getattr("type")?.str()?;
            return Ok(DeviceMemoryMeasurement::unavailable(Some(format!(
                "Torch does not expose allocator peak counters for {kind}."
            )))
            .with_backend_device(backend, Some(name)));
        }
        let window = self.with_window(|window| window.clone());
        if window.device.as_deref() != Some(name.as_str()) {
            return Ok(DeviceMemoryMeasurement::unavailable(Some(DEVICE_CHANGED_REASON))
                .with_backend_device(backend, Some(name)));
        }
        let cuda = torch.getattr("cuda")?;
        let peak_allocated = python_int::<i128>(&cuda.call_method1("max_memory_allocated", (device,))?)?;
        let peak_reserved = python_int::<i128>(&cuda.call_method1("max_memory_reserved", (device,))?)?;
        let readings = DeviceMemoryReadings {
            backend,
            device: Some(name),
            baseline_allocated_bytes: size("baseline_allocated_bytes", window.baseline_allocated)?,
            baseline_reserved_bytes: size("baseline_reserved_bytes", window.baseline_reserved)?,
            peak_allocated_bytes: size("peak_allocated_bytes", Some(peak_allocated))?,
            peak_reserved_bytes: size("peak_reserved_bytes", Some(peak_reserved))?,
            unavailable_reason: None,
        };
        DeviceMemoryMeasurement::measured(readings).map_err(|error| PyValueError::new_err(error.to_string()))
    }

    /// The `model_footprint` hook: vertebrae's `_torch_model_footprint` of
    /// the model.
    fn model_footprint(&self, py: Python<'_>) -> PyResult<ModelFootprintMeasurement> {
        let Some(model) = self.model(py)? else {
            return Ok(ModelFootprintMeasurement::unavailable(Some("The model has not been loaded.")));
        };
        let parameters = deduplicated(&model, "parameters")?;
        let buffers = deduplicated(&model, "buffers")?;
        if parameters.is_empty() && buffers.is_empty() {
            return Ok(ModelFootprintMeasurement::unavailable(Some(
                "The model exposes no parameters or buffers.",
            )));
        }
        // The passes run in vertebrae's order, so an object that raises
        // raises at the same call.
        let parameter_count = total(&parameters, numel)?;
        let parameter_bytes = total(&parameters, tensor_bytes)?;
        let mut trainable = Vec::new();
        for value in &parameters {
            let requires_grad = match attribute(value, "requires_grad")? {
                Some(flag) => flag.is_truthy()?,
                None => true,
            };
            if requires_grad {
                trainable.push(value.clone());
            }
        }
        let trainable_count = total(&trainable, numel)?;
        let trainable_bytes = total(&trainable, tensor_bytes)?;
        let buffer_bytes = total(&buffers, tensor_bytes)?;
        let in_memory = parameter_bytes.checked_add(buffer_bytes).ok_or_else(overflow)?;
        let mut dtypes = BTreeSet::new();
        for value in parameters.iter().chain(&buffers) {
            if let Some(dtype) = attribute(value, "dtype")? {
                dtypes.insert(dtype.str()?.to_string());
            }
        }
        let readings = ModelFootprintReadings {
            parameter_count: size("parameter_count", Some(parameter_count))?,
            parameter_bytes: size("parameter_bytes", Some(parameter_bytes))?,
            trainable_parameter_count: size("trainable_parameter_count", Some(trainable_count))?,
            trainable_parameter_bytes: size("trainable_parameter_bytes", Some(trainable_bytes))?,
            buffer_bytes: size("buffer_bytes", Some(buffer_bytes))?,
            in_memory_bytes: size("in_memory_bytes", Some(in_memory))?,
            weight_dtypes: dtypes.into_iter().collect(),
            unavailable_reason: None,
        };
        ModelFootprintMeasurement::measured(readings)
            .map_err(|error| PyValueError::new_err(error.to_string()))
    }

    fn deployment_artifacts(&self, _py: Python<'_>) -> PyResult<Vec<DeploymentArtifact>> {
        Ok(self.artifacts.clone())
    }

    fn class_name(&self) -> &'static str {
        "tally.profiling.TorchResourceProfileAdapter"
    }
}
