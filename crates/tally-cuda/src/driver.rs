//! Finding the driver, and calling it without letting it panic.
//!
//! cudarc loads `libcuda` on first use and panics when the library or one of
//! its symbols is missing. Every call into cudarc in this crate goes through
//! [`call`], which first checks [`driver_available`] (the library loads and
//! `cuInit` succeeds, asked once per process) and then contains any panic.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use cudarc::driver::{CudaContext, DriverError, result, sys};

use crate::CudaError;

/// Whether a usable driver is there: `Ok` when `libcuda` loads and `cuInit`
/// succeeds, else [`CudaError::Unavailable`] with the reason. Asked once per
/// process; every later call returns the same answer.
///
/// ```
/// match tally_cuda::driver_available() {
///     Ok(()) => println!("CUDA driver found"),
///     Err(error) => println!("{}", error.reason()), // e.g. "no CUDA driver found (...)"
/// }
/// ```
pub fn driver_available() -> Result<(), CudaError> {
    static STATE: OnceLock<Result<(), String>> = OnceLock::new();
    STATE.get_or_init(probe_driver).clone().map_err(CudaError::unavailable)
}

fn probe_driver() -> Result<(), String> {
    let present = catch_unwind(library_present).unwrap_or(false);
    if !present {
        return Err(format!(
            "no CUDA driver found (none of {} could be loaded: no NVIDIA driver is installed, \
             or it is not on the library search path)",
            library_names()
        ));
    }
    match catch_unwind(result::init) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            let (name, description) = describe_contained(error);
            Err(format!("the CUDA driver was found but cuInit failed: {name}: {description}"))
        }
        Err(payload) => {
            Err(format!("the CUDA driver was found but cuInit panicked: {}", panic_message(&*payload)))
        }
    }
}

#[allow(unsafe_code, reason = "cudarc's library probe is an unsafe fn")]
fn library_present() -> bool {
    // SAFETY: the probe only dlopens candidate names and drops the handles;
    // loading libcuda runs no code beyond the library's own initializers.
    unsafe { sys::is_culib_present() }
}

/// The first names cudarc tries, for the "not found" message.
fn library_names() -> String {
    let names = cudarc::get_lib_name_candidates("cuda");
    // The `libcuda.so*` names are the ones a Linux driver installs.
    let mut shown: Vec<&str> =
        names.iter().map(String::as_str).filter(|name| name.starts_with("libcuda.so")).collect();
    shown.dedup();
    if shown.is_empty() {
        shown = names.iter().map(String::as_str).take(3).collect();
    }
    format!("{} or {} other names", shown.join(", "), names.len() - shown.len())
}

/// Runs one cudarc call after checking the driver, with panics contained.
/// `name` is the driver function, for the error.
pub(crate) fn call<T>(
    name: &'static str,
    f: impl FnOnce() -> Result<T, DriverError>,
) -> Result<T, CudaError> {
    driver_available()?;
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => {
            let (code, description) = describe_contained(error);
            Err(CudaError::Driver { call: name, name: code, description })
        }
        Err(payload) => Err(CudaError::Panicked { call: name, message: panic_message(&*payload) }),
    }
}

/// The error's name and description from the driver; the raw enum when the
/// driver cannot say (asking it can panic too, on a partial driver).
fn describe_contained(error: DriverError) -> (String, String) {
    let fallback = format!("{:?}", error.0);
    let asked = catch_unwind(|| {
        let name = error.error_name().ok().map(|name| name.to_string_lossy().into_owned());
        let description = error.error_string().ok().map(|text| text.to_string_lossy().into_owned());
        (name, description)
    });
    match asked {
        Ok((name, description)) => (
            name.unwrap_or_else(|| fallback.clone()),
            description.unwrap_or_else(|| "no description from the driver".to_owned()),
        ),
        Err(_) => (fallback, "no description from the driver".to_owned()),
    }
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    tally_profile::panic_text(payload).unwrap_or("a panic without a message").to_owned()
}

/// The driver's version, as `cuDriverGetVersion` encodes it
/// (`1000 * major + 10 * minor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DriverVersion(pub i32);

impl DriverVersion {
    /// The major version, e.g. 12.
    pub fn major(self) -> i32 {
        self.0 / 1000
    }

    /// The minor version, e.g. 8.
    pub fn minor(self) -> i32 {
        (self.0 % 1000) / 10
    }
}

impl std::fmt::Display for DriverVersion {
    /// `12.8`, as `nvidia-smi` prints the CUDA version.
    ///
    /// ```
    /// assert_eq!(tally_cuda::DriverVersion(12080).to_string(), "12.8");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major(), self.minor())
    }
}

/// The CUDA version the driver supports.
pub fn driver_version() -> Result<DriverVersion, CudaError> {
    call("cuDriverGetVersion", raw_driver_version).map(DriverVersion)
}

#[allow(unsafe_code, reason = "cudarc has no safe wrapper for cuDriverGetVersion")]
fn raw_driver_version() -> Result<i32, DriverError> {
    let mut version: std::ffi::c_int = 0;
    // SAFETY: the pointer is to a live, writable local of the type the
    // driver writes.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result()?;
    Ok(version)
}

/// The number of CUDA devices.
pub fn device_count() -> Result<usize, CudaError> {
    let count = call("cuDeviceGetCount", CudaContext::device_count)?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// One device as the driver describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The ordinal, as `cuDeviceGet` counts.
    pub ordinal: usize,
    /// E.g. `NVIDIA H200`.
    pub name: String,
    /// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as `nvidia-smi -L` prints it.
    pub uuid: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Total device memory in bytes.
    pub total_bytes: u64,
    /// Free device memory in bytes, read through the device's primary context.
    pub free_bytes: u64,
}

/// The driver and its devices, for `tally cuda-info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverInfo {
    /// The CUDA version the driver supports.
    pub version: DriverVersion,
    /// Every device, by ordinal; a device that could not be opened is
    /// described in `device_errors` instead.
    pub devices: Vec<DeviceInfo>,
    /// (ordinal, reason) for each device that could not be read.
    pub device_errors: Vec<(usize, String)>,
}

/// Asks the driver for its version and its devices. Opening a device
/// retains its primary context, which reserves some device memory for as
/// long as the process holds it.
pub fn probe() -> Result<DriverInfo, CudaError> {
    let version = driver_version()?;
    let count = device_count()?;
    let mut devices = Vec::with_capacity(count);
    let mut device_errors = Vec::new();
    for ordinal in 0..count {
        match crate::CudaDevice::open(ordinal).and_then(|device| device.info()) {
            Ok(info) => devices.push(info),
            Err(error) => device_errors.push((ordinal, error.to_string())),
        }
    }
    Ok(DriverInfo { version, devices, device_errors })
}

/// `GPU-` and the 16 bytes in the 8-4-4-4-12 grouping `nvidia-smi` uses.
///
/// ```
/// let bytes = [0x5a, 0x2b, 0x1f, 0x03, 0x4c, 0x55, 0x61, 0x7e, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff];
/// assert_eq!(tally_cuda::format_uuid(bytes), "GPU-5a2b1f03-4c55-617e-8899-aabbccddeeff");
/// ```
pub fn format_uuid(bytes: [u8; 16]) -> String {
    let hex: Vec<String> = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex[0..4].concat(),
        hex[4..6].concat(),
        hex[6..8].concat(),
        hex[8..10].concat(),
        hex[10..16].concat()
    )
}
