//! A model's parameters and buffers, and what vertebrae reads from them.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Mutex;

use tally_profile::profile::{ModelFootprintMeasurement, ModelFootprintReadings};
use tch::nn::{VarStore, Variables};
use tch::{CModule, Device, Tensor};

use crate::device::TorchDevice;
use crate::dtype::python_dtype_name;
use crate::error::TorchError;
use crate::ffi::{self, TensorFacts};

/// The tensors of a loaded model: parameters and buffers, as torch's
/// `model.parameters()` and `model.buffers()` list them. Holding them shares
/// the model's storage (shallow clones); nothing is copied or loaded.
///
/// - From a [`VarStore`]: the parameters are its trainable variables (a
///   frozen one, `requires_grad == false`, is still a parameter, as a frozen
///   `nn.Parameter` is), the buffers its other variables (those made with
///   `zeros_no_train`, `ones_no_train` or `add(.., false)`, such as batch
///   norm's running statistics, which torch keeps as buffers).
/// - From a TorchScript [`CModule`]: `named_parameters()` and
///   `named_buffers()`, both recursive.
///
/// As Python's `parameters()` does, a tensor reachable under several names
/// (tied weights) counts once.
#[derive(Debug)]
pub struct ModelTensors {
    parameters: Vec<Tensor>,
    buffers: Vec<Tensor>,
    device_attribute: Option<Device>,
}

impl ModelTensors {
    /// Parameters and buffers given directly.
    pub fn new(parameters: Vec<Tensor>, buffers: Vec<Tensor>) -> Self {
        Self { parameters, buffers, device_attribute: None }
    }

    /// The same tensors with the model's own notion of its device, used only
    /// when the model has no tensors (vertebrae reads `model.device` then).
    pub fn with_device_attribute(mut self, device: Device) -> Self {
        self.device_attribute = Some(device);
        self
    }

    /// The variables of a [`VarStore`] (and so of every module built on it);
    /// its device is the device attribute.
    pub fn from_var_store(var_store: &VarStore) -> Result<Self, TorchError> {
        Self::from_variables(&var_store.variables_, var_store.device())
    }

    pub(crate) fn from_variables(variables: &Mutex<Variables>, device: Device) -> Result<Self, TorchError> {
        let variables = variables.lock().map_err(|_| TorchError::PoisonedVarStore)?;
        let parameters: Vec<Tensor> =
            variables.trainable_variables.iter().map(|var| var.tensor.shallow_clone()).collect();
        let parameter_ids = parameters
            .iter()
            .map(|tensor| ffi::describe(tensor).map(|facts| facts.identity))
            .collect::<Result<HashSet<_>, _>>()?;
        let mut buffers = Vec::new();
        // Sorted by name so that the order (which nothing reported depends
        // on) does not follow HashMap iteration.
        let named: BTreeMap<&String, &Tensor> = variables.named_variables.iter().collect();
        for tensor in named.into_values() {
            if !parameter_ids.contains(&ffi::describe(tensor)?.identity) {
                buffers.push(tensor.shallow_clone());
            }
        }
        Ok(Self { parameters, buffers, device_attribute: Some(device) })
    }

    /// [`ModelTensors::devices`] of a VarStore's variables, without
    /// building the tensors.
    pub(crate) fn variable_devices(
        variables: &Mutex<Variables>,
        device: Device,
    ) -> Result<Vec<TorchDevice>, TorchError> {
        let variables = variables.lock().map_err(|_| TorchError::PoisonedVarStore)?;
        let mut devices = BTreeSet::new();
        for tensor in variables.named_variables.values() {
            let facts = ffi::describe(tensor)?;
            devices.insert(TorchDevice::from_parts(facts.device_name, facts.device_type, facts.device_index));
        }
        if devices.is_empty() {
            devices.insert(TorchDevice::from(device));
        }
        Ok(devices.into_iter().collect())
    }

    /// The parameters and buffers of a TorchScript module.
    pub fn from_module(module: &CModule) -> Result<Self, TorchError> {
        let parameters = module.named_parameters()?.into_iter().map(|(_, tensor)| tensor).collect();
        let buffers = ffi::module_buffers(module)?.into_iter().map(|(_, tensor)| tensor).collect();
        Ok(Self { parameters, buffers, device_attribute: None })
    }

    /// The parameters, as given (before deduplication).
    pub fn parameters(&self) -> &[Tensor] {
        &self.parameters
    }

    /// The buffers, as given (before deduplication).
    pub fn buffers(&self) -> &[Tensor] {
        &self.buffers
    }

    /// vertebrae's `_torch_model_footprint`: counts and bytes (`numel *
    /// element_size`) of the parameters, the trainable ones and the buffers;
    /// in-memory bytes are parameters plus buffers; the dtypes of both.
    /// Unavailable when the model has no tensors.
    pub fn footprint(&self) -> Result<ModelFootprintMeasurement, TorchError> {
        let parameters = unique_facts(&self.parameters)?;
        let buffers = unique_facts(&self.buffers)?;
        if parameters.is_empty() && buffers.is_empty() {
            return Ok(ModelFootprintMeasurement::unavailable(Some(
                "The model exposes no parameters or buffers.",
            )));
        }
        let trainable: Vec<&TensorFacts> = parameters.iter().filter(|facts| facts.requires_grad).collect();
        let parameter_bytes = total_bytes(parameters.iter())?;
        let buffer_bytes = total_bytes(buffers.iter())?;
        let readings = ModelFootprintReadings {
            parameter_count: Some(total_count(parameters.iter())?),
            parameter_bytes: Some(parameter_bytes),
            trainable_parameter_count: Some(total_count(trainable.iter().copied())?),
            trainable_parameter_bytes: Some(total_bytes(trainable.iter().copied())?),
            buffer_bytes: Some(buffer_bytes),
            in_memory_bytes: Some(
                parameter_bytes
                    .checked_add(buffer_bytes)
                    .ok_or(TorchError::Overflow { what: "in-memory bytes" })?,
            ),
            weight_dtypes: dtype_names(parameters.iter().chain(buffers.iter()))?,
            unavailable_reason: None,
        };
        // Trainable tensors are a subset of the parameters, so the rules
        // ModelFootprintMeasurement checks hold by construction.
        Ok(ModelFootprintMeasurement::measured(readings)?)
    }

    /// vertebrae's `_torch_model_devices`: the distinct devices of the
    /// parameters and buffers, sorted by name; the device attribute when
    /// there are no tensors.
    pub fn devices(&self) -> Result<Vec<TorchDevice>, TorchError> {
        let mut devices = BTreeSet::new();
        for tensor in self.parameters.iter().chain(self.buffers.iter()) {
            let facts = ffi::describe(tensor)?;
            devices.insert(TorchDevice::from_parts(facts.device_name, facts.device_type, facts.device_index));
        }
        if devices.is_empty()
            && let Some(device) = self.device_attribute
        {
            devices.insert(TorchDevice::from(device));
        }
        Ok(devices.into_iter().collect())
    }

    /// vertebrae's `_torch_weight_dtypes`: the sorted distinct dtypes of the
    /// parameters and buffers, e.g. `["torch.float16", "torch.float32"]`.
    pub fn weight_dtypes(&self) -> Result<Vec<String>, TorchError> {
        let facts = self
            .parameters
            .iter()
            .chain(self.buffers.iter())
            .map(ffi::describe)
            .collect::<Result<Vec<_>, _>>()?;
        dtype_names(facts.iter())
    }
}

/// Facts of each distinct tensor (by `TensorImpl`), first occurrence kept.
fn unique_facts(tensors: &[Tensor]) -> Result<Vec<TensorFacts>, TorchError> {
    let mut seen = HashSet::new();
    let mut unique = Vec::new();
    for tensor in tensors {
        let facts = ffi::describe(tensor)?;
        if seen.insert(facts.identity) {
            unique.push(facts);
        }
    }
    Ok(unique)
}

fn total_count<'a>(mut facts: impl Iterator<Item = &'a TensorFacts>) -> Result<u64, TorchError> {
    facts.try_fold(0u64, |sum, facts| {
        sum.checked_add(facts.numel).ok_or(TorchError::Overflow { what: "parameter count" })
    })
}

fn total_bytes<'a>(mut facts: impl Iterator<Item = &'a TensorFacts>) -> Result<u64, TorchError> {
    facts.try_fold(0u64, |sum, facts| {
        facts
            .numel
            .checked_mul(facts.element_size)
            .and_then(|bytes| sum.checked_add(bytes))
            .ok_or(TorchError::Overflow { what: "tensor bytes" })
    })
}

fn dtype_names<'a>(facts: impl Iterator<Item = &'a TensorFacts>) -> Result<Vec<String>, TorchError> {
    let mut names = BTreeSet::new();
    for facts in facts {
        let name =
            python_dtype_name(facts.scalar_type).ok_or(TorchError::UnknownScalarType(facts.scalar_type))?;
        names.insert(name);
    }
    Ok(names.into_iter().map(str::to_owned).collect())
}
