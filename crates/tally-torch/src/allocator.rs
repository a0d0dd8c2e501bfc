//! libtorch's caching device allocator statistics, which tch does not bind
//! (`torch.cuda.memory_allocated`, `max_memory_allocated`,
//! `memory_reserved`, `max_memory_reserved`, `reset_peak_memory_stats`),
//! and device synchronization.

use crate::device::TorchDevice;
use crate::error::TorchError;
use crate::ffi;

/// The aggregate byte counters of a device's caching allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocatorStats {
    /// Bytes allocated to tensors now (`torch.cuda.memory_allocated`).
    pub allocated_bytes: u64,
    /// Highest `allocated_bytes` since the last peak reset
    /// (`torch.cuda.max_memory_allocated`).
    pub peak_allocated_bytes: u64,
    /// Bytes the allocator holds from the device now, used or cached
    /// (`torch.cuda.memory_reserved`).
    pub reserved_bytes: u64,
    /// Highest `reserved_bytes` since the last peak reset
    /// (`torch.cuda.max_memory_reserved`).
    pub peak_reserved_bytes: u64,
}

/// Reads the caching allocator's counters for `device` (a CUDA device).
///
/// Fails with libtorch's message when the device has no caching allocator
/// (CPU, or a libtorch built without CUDA), when the allocator is not yet
/// initialized (no tensor was ever allocated on the device type), or when
/// the index is out of range.
pub fn allocator_stats(device: &TorchDevice) -> Result<AllocatorStats, TorchError> {
    let raw = ffi::allocator_stats(device.type_code(), device.raw_index()?)?;
    let bytes =
        |value: i64| u64::try_from(value).map_err(|_| TorchError::Overflow { what: "allocator bytes" });
    Ok(AllocatorStats {
        allocated_bytes: bytes(raw.allocated_current)?,
        peak_allocated_bytes: bytes(raw.allocated_peak)?,
        reserved_bytes: bytes(raw.reserved_current)?,
        peak_reserved_bytes: bytes(raw.reserved_peak)?,
    })
}

/// Sets the allocator's peaks to the current values
/// (`torch.cuda.reset_peak_memory_stats`).
pub fn reset_peak_stats(device: &TorchDevice) -> Result<(), TorchError> {
    ffi::allocator_reset_peak(device.type_code(), device.raw_index()?)
}

/// Waits until the device has finished its queued work
/// (`torch.cuda.synchronize(device)`, `torch.mps.synchronize()`). On a CPU
/// device it returns at once.
pub fn synchronize(device: &TorchDevice) -> Result<(), TorchError> {
    ffi::synchronize(device.type_code(), device.raw_index()?)
}
