//! The two places tally touches tensor memory directly: filling a freshly
//! allocated input and copying a host output out. `ort` has typed accessors
//! only for the element types it maps to Rust types (not float16 or
//! bfloat16 without its `half` feature), and this crate handles every ONNX
//! type as bytes.

use ort::value::{DynTensor, DynTensorValueType, Value};

/// Copies `bytes` into a CPU tensor allocated for exactly that many bytes.
#[allow(unsafe_code, reason = "writing a CPU tensor's buffer, whose size ONNX Runtime fixed at allocation")]
pub(crate) fn write_tensor_bytes(tensor: &mut DynTensor, bytes: &[u8]) -> Result<(), String> {
    if !tensor.memory_info().is_cpu_accessible() {
        return Err("the input tensor is not in host memory".to_owned());
    }
    let expected = tensor.data_type().byte_size(tensor.shape().num_elements());
    if expected != Some(bytes.len()) {
        return Err(format!("{} bytes prepared for a tensor of {expected:?} bytes", bytes.len()));
    }
    if bytes.is_empty() {
        return Ok(());
    }
    let pointer = tensor.data_ptr_mut().cast::<u8>();
    if pointer.is_null() {
        return Err("ONNX Runtime gave the input tensor no buffer".to_owned());
    }
    // SAFETY: the tensor lives in host memory (checked above) and its buffer
    // holds byte_size(num_elements) bytes, which equals bytes.len(); the
    // mutable borrow of `tensor` excludes any other access meanwhile.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), pointer, bytes.len()) };
    Ok(())
}

/// A copy of a host tensor's bytes; `None` for device memory, strings, or
/// types without a fixed size.
#[allow(unsafe_code, reason = "reading a CPU tensor's buffer of the size ONNX Runtime reports")]
pub(crate) fn read_tensor_bytes(tensor: &Value<DynTensorValueType>) -> Option<Vec<u8>> {
    if !tensor.memory_info().is_cpu_accessible() {
        return None;
    }
    let length = tensor.data_type().byte_size(tensor.shape().num_elements())?;
    if length == 0 {
        return Some(Vec::new());
    }
    let pointer = tensor.data_ptr().cast::<u8>();
    if pointer.is_null() {
        return None;
    }
    // SAFETY: a host tensor's buffer holds byte_size(num_elements) bytes and
    // stays alive while `tensor` is borrowed; it is only read here.
    Some(unsafe { std::slice::from_raw_parts(pointer, length) }.to_vec())
}
