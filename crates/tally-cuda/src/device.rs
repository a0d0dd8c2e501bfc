//! One device and the stream this crate measures on.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

use crate::driver::{DeviceInfo, call};
use crate::{CudaError, format_uuid};

/// A CUDA device, its context and a stream: what the adapter synchronizes,
/// what windows are timed on and what the clock is calibrated on.
///
/// Cloning is cheap (the context and stream are shared).
///
/// ```
/// match tally_cuda::CudaDevice::open(0) {
///     Ok(device) => println!("{} {}", device.name(), device.uuid()),
///     Err(error) => assert!(error.is_unavailable() || !error.reason().is_empty()),
/// }
/// ```
#[derive(Debug, Clone)]
pub struct CudaDevice {
    stream: Arc<CudaStream>,
    name: String,
    uuid: String,
}

impl CudaDevice {
    /// Opens device `ordinal` (its primary context) with a new stream of
    /// its own.
    pub fn open(ordinal: usize) -> Result<Self, CudaError> {
        let count = crate::device_count()?;
        if ordinal >= count {
            return Err(CudaError::unavailable(format!(
                "CUDA device {ordinal} does not exist: the driver sees {count} device(s)"
            )));
        }
        let context = call("cuDevicePrimaryCtxRetain", || CudaContext::new(ordinal))?;
        let stream = call("cuStreamCreate", || context.new_stream())?;
        Self::with_stream(stream)
    }

    /// Measures on a stream the caller owns (e.g. the one its kernels run
    /// on), so synchronizing and timing cover that work.
    pub fn with_stream(stream: Arc<CudaStream>) -> Result<Self, CudaError> {
        let context = stream.context().clone();
        let name = call("cuDeviceGetName", || context.name())?;
        let uuid = call("cuDeviceGetUuid", || context.uuid())?;
        // c_char is signed on some targets; the UUID is 16 raw bytes.
        let bytes = uuid.bytes.map(|byte| byte as u8);
        Ok(Self { stream, name, uuid: format_uuid(bytes) })
    }

    /// The stream windows are timed on and `synchronize` waits for.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        self.stream.context()
    }

    /// The ordinal.
    pub fn ordinal(&self) -> usize {
        self.context().ordinal()
    }

    /// The device's name, e.g. `NVIDIA H200`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's UUID, `GPU-…` as `nvidia-smi -L` prints it.
    pub fn uuid(&self) -> &str {
        &self.uuid
    }

    /// `cuStreamSynchronize` on the stream.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        call("cuStreamSynchronize", || self.stream.synchronize())
    }

    /// `cuMemGetInfo`: device-wide free and total memory.
    pub fn memory(&self) -> Result<DeviceMemory, CudaError> {
        let (free, total) = call("cuMemGetInfo", || self.context().mem_get_info())?;
        Ok(DeviceMemory { free_bytes: free as u64, total_bytes: total as u64 })
    }

    /// Name, UUID, compute capability and memory.
    pub fn info(&self) -> Result<DeviceInfo, CudaError> {
        let compute_capability = call("cuDeviceGetAttribute", || self.context().compute_capability())?;
        let memory = self.memory()?;
        Ok(DeviceInfo {
            ordinal: self.ordinal(),
            name: self.name.clone(),
            uuid: self.uuid.clone(),
            compute_capability,
            total_bytes: memory.total_bytes,
            free_bytes: memory.free_bytes,
        })
    }
}

/// One `cuMemGetInfo` reading. It covers the whole device: every process
/// and context on it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceMemory {
    /// Free bytes.
    pub free_bytes: u64,
    /// Total bytes.
    pub total_bytes: u64,
}

impl DeviceMemory {
    /// `total − free`: memory in use on the device.
    ///
    /// ```
    /// let reading = tally_cuda::DeviceMemory { free_bytes: 30, total_bytes: 100 };
    /// assert_eq!(reading.used_bytes(), 70);
    /// ```
    pub fn used_bytes(&self) -> u64 {
        self.total_bytes.saturating_sub(self.free_bytes)
    }
}
