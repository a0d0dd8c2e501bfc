//! The one error type of the crate.

use tally_core::ValidationError;

/// Why a CUDA operation gave no answer.
///
/// [`CudaError::Unavailable`] is the answer of every operation on a machine
/// without a usable driver (no `libcuda`, `cuInit` failing, no device, an
/// ordinal out of range); the other variants are failures of a driver that
/// does work.
///
/// ```
/// use tally_cuda::CudaError;
/// let error = CudaError::unavailable("no CUDA driver found (libcuda.so could not be loaded)");
/// assert!(error.is_unavailable());
/// assert_eq!(error.reason(), "no CUDA driver found (libcuda.so could not be loaded)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// No usable driver or device; `reason` says which and why.
    #[error("CUDA is unavailable: {reason}")]
    Unavailable {
        /// A sentence a person can act on.
        reason: String,
    },
    /// A driver call failed.
    #[error("{call} failed: {name}: {description}")]
    Driver {
        /// The driver function, e.g. `cuEventRecord`.
        call: &'static str,
        /// The `CUresult` name, e.g. `CUDA_ERROR_INVALID_VALUE`.
        name: String,
        /// The driver's description of it.
        description: String,
    },
    /// The driver bindings panicked (e.g. a symbol missing from an old
    /// driver); the panic was contained.
    #[error("{call} panicked: {message}")]
    Panicked {
        /// The driver function being called.
        call: &'static str,
        /// The panic message.
        message: String,
    },
    /// A reading that cannot be a measurement (e.g. an event that completed
    /// before the clock's origin).
    #[error("{0}")]
    Measurement(String),
    /// An event the model rejects (e.g. an empty identifier).
    #[error(transparent)]
    Validation(#[from] ValidationError),
}

impl CudaError {
    /// An [`CudaError::Unavailable`] with `reason`.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self::Unavailable { reason: reason.into() }
    }

    /// Whether this is [`CudaError::Unavailable`].
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    /// The reason alone, without the "CUDA is unavailable" prefix; for the
    /// other variants, the whole message.
    pub fn reason(&self) -> String {
        match self {
            Self::Unavailable { reason } => reason.clone(),
            other => other.to_string(),
        }
    }
}
