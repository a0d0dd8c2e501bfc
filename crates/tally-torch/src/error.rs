//! Typed errors of the adapter.

use tally_profile::HookError;

/// What went wrong reading model state or device state from libtorch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TorchError {
    /// A tch call failed (libtorch raised).
    #[error("{0}")]
    Tch(#[from] tch::TchError),
    /// A call through tally-torch's C++ shim raised; `message` is libtorch's,
    /// without the C++ backtrace.
    #[error("{operation}: {message}")]
    Libtorch {
        /// What the shim was doing, e.g. `reading CUDA allocator statistics`.
        operation: &'static str,
        /// The C++ exception's message.
        message: String,
    },
    /// A tensor handle holds no tensor.
    #[error("the model holds an undefined tensor")]
    UndefinedTensor,
    /// A size does not fit in 64 bits (Python's integers do not overflow).
    #[error("{what} exceeds the 64-bit range tally supports")]
    Overflow {
        /// Which quantity overflowed.
        what: &'static str,
    },
    /// libtorch reported a scalar type tally does not know.
    #[error("unknown libtorch scalar type {0}")]
    UnknownScalarType(i32),
    /// Another thread panicked while holding the VarStore's lock.
    #[error("the VarStore's variables are poisoned by a panic in another thread")]
    PoisonedVarStore,
    /// A profile value failed vertebrae's validation.
    #[error(transparent)]
    Invalid(#[from] tally_core::ValidationError),
    /// Options that cannot be run (no calls, no input shapes).
    #[error("{0}")]
    Options(String),
    /// A device index outside libtorch's range (`c10::DeviceIndex` is 8 bits).
    #[error("device index {0} is out of range")]
    DeviceIndex(usize),
}

impl From<TorchError> for HookError {
    /// Named as the Python exception torch would raise, so warnings read as
    /// vertebrae's do.
    fn from(error: TorchError) -> Self {
        let kind = match error {
            TorchError::Overflow { .. } => "OverflowError",
            TorchError::DeviceIndex(_) | TorchError::Invalid(_) | TorchError::Options(_) => "ValueError",
            _ => "RuntimeError",
        };
        HookError::new(kind, error.to_string())
    }
}
