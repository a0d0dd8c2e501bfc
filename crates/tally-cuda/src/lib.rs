#![doc = include_str!("../README.md")]
//!
//! CUDA evidence for tally, on the CUDA driver API through
//! [`cudarc`](https://docs.rs/cudarc) 0.19 with the driver loaded at run
//! time: the crate builds on machines with no CUDA toolkit and no GPU, and
//! there every operation answers [`CudaError::Unavailable`] with a reason.
//!
//! - [`CudaProfileAdapter`]: the resource-profile adapter of a device and
//!   stream (synchronization, device memory over the profile window).
//! - [`CudaRecorder`]: event-timed windows of GPU work with device time
//!   beside host time, an `infer.activity_ref` per window on the device
//!   clock, and [`Calibration`] of that clock against the host monotonic
//!   clock, emitted as an `infer.clock_alignment` that `tally-clock`'s
//!   align functions use to place device activity on the host timeline.
//! - [`probe`]: the driver version and devices, for `tally cuda-info`.
//!
//! # No driver, no panic
//!
//! cudarc panics when `libcuda` or one of its symbols is missing. Every call
//! here first asks [`driver_available`] (`libcuda` loads and `cuInit`
//! succeeds; asked once) and runs the cudarc call under `catch_unwind`, so a
//! missing library is [`CudaError::Unavailable`] and a missing symbol (an
//! older driver) is [`CudaError::Panicked`].
//!
//! ```
//! match tally_cuda::probe() {
//!     Ok(info) => println!("CUDA {} with {} device(s)", info.version, info.devices.len()),
//!     Err(error) => {
//!         // e.g. "no CUDA driver found (libcuda.so, ... could not be loaded ...)"
//!         assert!(!error.reason().is_empty());
//!     }
//! }
//! ```
//!
//! # Times
//!
//! Everything is integer nanoseconds. The one float is the `f32`
//! milliseconds `cuEventElapsedTime` returns, rounded to nanoseconds where
//! it is read; [`device_reading_error_ns`] bounds its error, and calibration
//! brackets include it.
//!
//! Re-exports [`cudarc`] so that callers use the same version for the
//! streams and kernels they hand in.

mod adapter;
mod clock;
mod device;
mod driver;
mod error;
mod host;
mod recorder;

pub use cudarc;

pub use adapter::{CudaProfileAdapter, DEFAULT_SAMPLE_INTERVAL};
pub use clock::{
    ALIGNMENT_BASIS, Calibration, CalibrationSample, CudaEventClock, EVENT_RESOLUTION_NS,
    device_reading_error_ns,
};
pub use device::{CudaDevice, DeviceMemory};
pub use driver::{
    DeviceInfo, DriverInfo, DriverVersion, device_count, driver_available, driver_version, format_uuid, probe,
};
pub use error::CudaError;
pub use host::{boot_id, host_clock_domain, host_monotonic_ns, host_name};
pub use recorder::{CudaRecorder, Producer, SOURCE, TimedWindow, WindowOptions};
