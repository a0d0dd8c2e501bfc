//! Devices named as torch names them.

use std::fmt;

use tch::Device;

use crate::error::TorchError;
use crate::ffi;

/// A device as `str(torch.device(...))` names it: `cpu`, `cuda:0`, `mps:0`.
///
/// Devices compare and sort by that name, as vertebrae sorts and compares them.
///
/// ```
/// use tally_torch::TorchDevice;
/// assert_eq!(TorchDevice::from(tch::Device::Cuda(1)).to_string(), "cuda:1");
/// assert_eq!(TorchDevice::from(tch::Device::Cpu).device_type(), "cpu");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TorchDevice {
    // Name first: the derived ordering is the ordering of the names.
    name: String,
    type_code: i32,
    index: Option<usize>,
}

impl TorchDevice {
    pub(crate) fn from_parts(name: String, type_code: i32, index: i32) -> Self {
        Self { name, type_code, index: usize::try_from(index).ok() }
    }

    /// The name, e.g. `cuda:0`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The type, the name before any `:` (`torch.device.type`).
    pub fn device_type(&self) -> &str {
        self.name.split(':').next().unwrap_or(&self.name)
    }

    /// The index, when the name has one.
    pub fn index(&self) -> Option<usize> {
        self.index
    }

    /// A CPU device.
    pub fn is_cpu(&self) -> bool {
        self.type_code == ffi::DEVICE_TYPE_CPU
    }

    /// A CUDA device.
    pub fn is_cuda(&self) -> bool {
        self.type_code == ffi::DEVICE_TYPE_CUDA
    }

    /// An Apple MPS device.
    pub fn is_mps(&self) -> bool {
        self.type_code == ffi::DEVICE_TYPE_MPS
    }

    pub(crate) fn type_code(&self) -> i32 {
        self.type_code
    }

    /// The `c10::DeviceIndex` (8 bits) of this device; `-1`, libtorch's
    /// "current device", when the name has no index.
    pub(crate) fn raw_index(&self) -> Result<i32, TorchError> {
        match self.index {
            None => Ok(-1),
            Some(index) => i8::try_from(index).map(i32::from).map_err(|_| TorchError::DeviceIndex(index)),
        }
    }
}

impl fmt::Display for TorchDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl From<Device> for TorchDevice {
    /// The name Python gives `torch.device(...)` of the same request:
    /// `Device::Mps` is `mps` (a tensor on it reports `mps:0`).
    fn from(device: Device) -> Self {
        match device {
            Device::Cpu => Self { name: "cpu".into(), type_code: ffi::DEVICE_TYPE_CPU, index: None },
            Device::Cuda(index) => {
                Self { name: format!("cuda:{index}"), type_code: ffi::DEVICE_TYPE_CUDA, index: Some(index) }
            }
            Device::Mps => Self { name: "mps".into(), type_code: ffi::DEVICE_TYPE_MPS, index: None },
            Device::Vulkan => Self { name: "vulkan".into(), type_code: ffi::DEVICE_TYPE_VULKAN, index: None },
        }
    }
}
