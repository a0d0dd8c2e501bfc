//! The C++ shim (csrc/shim.cpp): the only unsafe code of the crate.
#![allow(unsafe_code)]

use std::ffi::{CStr, c_char, c_int, c_void};

use tch::{CModule, Tensor};

use crate::error::TorchError;

/// `c10::DeviceType` values the adapter acts on (c10/core/DeviceType.h).
pub(crate) const DEVICE_TYPE_CPU: i32 = 0;
pub(crate) const DEVICE_TYPE_CUDA: i32 = 1;
pub(crate) const DEVICE_TYPE_VULKAN: i32 = 10;
pub(crate) const DEVICE_TYPE_MPS: i32 = 13;

#[repr(C)]
struct RawTensorInfo {
    impl_id: usize,
    defined: i32,
    scalar_type: i32,
    element_size: i64,
    numel: i64,
    device_type: i32,
    device_index: i32,
    requires_grad: i32,
    device_name: [c_char; 64],
}

#[repr(C)]
#[derive(Default)]
struct RawAllocatorStats {
    allocated_current: i64,
    allocated_peak: i64,
    reserved_current: i64,
    reserved_peak: i64,
}

type BufferCallback = extern "C" fn(*mut c_void, *const c_char, *mut c_void);

unsafe extern "C" {
    fn tally_tensor_describe(
        tensor: *const c_void,
        out: *mut RawTensorInfo,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
    fn tally_module_named_buffers(
        module: *mut c_void,
        data: *mut c_void,
        callback: BufferCallback,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
    fn tally_device_synchronize(device_type: i32, device_index: i32, err: *mut c_char, len: usize) -> c_int;
    fn tally_allocator_stats(
        device_type: i32,
        device_index: i32,
        out: *mut RawAllocatorStats,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
    fn tally_allocator_reset_peak(device_type: i32, device_index: i32, err: *mut c_char, len: usize)
    -> c_int;
    fn tally_libtorch_version() -> *const c_char;
}

/// The libtorch version the shim was compiled against (`TORCH_VERSION`),
/// which is the one linked: torch-sys checks it at build time.
pub(crate) fn libtorch_version() -> String {
    // SAFETY: the shim returns a pointer to a static NUL-terminated literal.
    unsafe { CStr::from_ptr(tally_libtorch_version()) }.to_string_lossy().into_owned()
}

const ERROR_CAPACITY: usize = 2048;

/// Runs a shim call with an error buffer and turns a nonzero return into
/// a typed error carrying the C++ message.
fn checked(
    operation: &'static str,
    call: impl FnOnce(*mut c_char, usize) -> c_int,
) -> Result<(), TorchError> {
    let mut buffer = vec![0 as c_char; ERROR_CAPACITY];
    if call(buffer.as_mut_ptr(), buffer.len()) == 0 {
        return Ok(());
    }
    // SAFETY: the shim writes a NUL-terminated string of at most len - 1
    // bytes, and the buffer starts zeroed, so a NUL is always present.
    let message = unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy().into_owned();
    Err(TorchError::Libtorch { operation, message })
}

/// What the shim reads from one tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TensorFacts {
    /// `TensorImpl` address: equal for shallow clones, as Python's `id()` is
    /// equal for the same parameter object.
    pub(crate) identity: usize,
    pub(crate) scalar_type: i32,
    pub(crate) element_size: u64,
    pub(crate) numel: u64,
    pub(crate) device_type: i32,
    pub(crate) device_index: i32,
    pub(crate) device_name: String,
    pub(crate) requires_grad: bool,
}

pub(crate) fn describe(tensor: &Tensor) -> Result<TensorFacts, TorchError> {
    let mut raw = RawTensorInfo {
        impl_id: 0,
        defined: 0,
        scalar_type: 0,
        element_size: 0,
        numel: 0,
        device_type: 0,
        device_index: -1,
        requires_grad: 0,
        device_name: [0; 64],
    };
    checked("describing a tensor", |err, len| {
        // SAFETY: `as_ptr` is tch's live `torch::Tensor*`, borrowed for the
        // call; `raw` is a valid out-parameter of the matching layout.
        unsafe { tally_tensor_describe(tensor.as_ptr().cast(), &mut raw, err, len) }
    })?;
    if raw.defined == 0 {
        return Err(TorchError::UndefinedTensor);
    }
    // SAFETY: the shim NUL-terminates device_name within its 64 bytes.
    let device_name = unsafe { CStr::from_ptr(raw.device_name.as_ptr()) }.to_string_lossy().into_owned();
    let nonnegative =
        |value: i64, what: &'static str| u64::try_from(value).map_err(|_| TorchError::Overflow { what });
    Ok(TensorFacts {
        identity: raw.impl_id,
        scalar_type: raw.scalar_type,
        element_size: nonnegative(raw.element_size, "element size")?,
        numel: nonnegative(raw.numel, "element count")?,
        device_type: raw.device_type,
        device_index: raw.device_index,
        device_name,
        requires_grad: raw.requires_grad != 0,
    })
}

// tch 0.26.0 (pinned with `=`) defines `pub struct CModule { c_module: *mut
// CModule_ }` and exposes no accessor. A struct of one pointer-sized field
// whose size is one pointer has that field at offset 0; if a tch upgrade
// adds a field, this assertion stops the build instead of misreading memory.
const _: () = assert!(size_of::<CModule>() == size_of::<*mut c_void>());

fn module_pointer(module: &CModule) -> *mut c_void {
    // SAFETY: see the assertion above: the struct's only bytes are the
    // `torch::jit::Module*` that tch owns and keeps alive while `module` is
    // borrowed.
    unsafe { *std::ptr::from_ref(module).cast::<*mut c_void>() }
}

extern "C" fn push_buffer(data: *mut c_void, name: *const c_char, tensor: *mut c_void) {
    // SAFETY: `data` is the `&mut Vec` passed to tally_module_named_buffers
    // below, alive for the whole call; `name` is a NUL-terminated C string
    // valid during the callback; `tensor` is a fresh `new at::Tensor` whose
    // ownership the shim hands over, which tch's Tensor frees on drop.
    unsafe {
        let buffers = &mut *data.cast::<Vec<(String, Tensor)>>();
        let name = CStr::from_ptr(name).to_string_lossy().into_owned();
        buffers.push((name, Tensor::from_ptr(tensor.cast())));
    }
}

/// `module.named_buffers(recurse=True)` of a TorchScript module.
pub(crate) fn module_buffers(module: &CModule) -> Result<Vec<(String, Tensor)>, TorchError> {
    let mut buffers: Vec<(String, Tensor)> = Vec::new();
    let data = std::ptr::from_mut(&mut buffers).cast::<c_void>();
    checked("listing TorchScript buffers", |err, len| {
        // SAFETY: the module pointer is live (borrowed), `data` points to
        // `buffers`, which outlives the call, and push_buffer matches the
        // callback's C signature.
        unsafe { tally_module_named_buffers(module_pointer(module), data, push_buffer, err, len) }
    })?;
    Ok(buffers)
}

/// Waits for the device's queued work (`DeviceGuardImpl::synchronizeDevice`).
pub(crate) fn synchronize(device_type: i32, device_index: i32) -> Result<(), TorchError> {
    checked("synchronizing the device", |err, len| {
        // SAFETY: plain values in, error buffer sized by `checked`.
        unsafe { tally_device_synchronize(device_type, device_index, err, len) }
    })
}

/// The caching allocator's aggregate byte counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawStats {
    pub(crate) allocated_current: i64,
    pub(crate) allocated_peak: i64,
    pub(crate) reserved_current: i64,
    pub(crate) reserved_peak: i64,
}

pub(crate) fn allocator_stats(device_type: i32, device_index: i32) -> Result<RawStats, TorchError> {
    let mut raw = RawAllocatorStats::default();
    checked("reading allocator statistics", |err, len| {
        // SAFETY: `raw` is a valid out-parameter of the matching layout.
        unsafe { tally_allocator_stats(device_type, device_index, &mut raw, err, len) }
    })?;
    Ok(RawStats {
        allocated_current: raw.allocated_current,
        allocated_peak: raw.allocated_peak,
        reserved_current: raw.reserved_current,
        reserved_peak: raw.reserved_peak,
    })
}

pub(crate) fn allocator_reset_peak(device_type: i32, device_index: i32) -> Result<(), TorchError> {
    checked("resetting allocator peak statistics", |err, len| {
        // SAFETY: plain values in, error buffer sized by `checked`.
        unsafe { tally_allocator_reset_peak(device_type, device_index, err, len) }
    })
}
