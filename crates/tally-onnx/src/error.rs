//! Errors of sessions and profiling runs.

use std::path::PathBuf;

use crate::model::ModelReadError;
use crate::runtime::LoadError;

/// Something went wrong between loading ONNX Runtime and running the model.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    /// The runtime library could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The model file could not be read.
    #[error(transparent)]
    Model(#[from] ModelReadError),
    /// ONNX Runtime refused the model.
    #[error("ONNX Runtime could not load {path}: {message}")]
    Session {
        /// The model file.
        path: PathBuf,
        /// ONNX Runtime's message.
        message: String,
    },
    /// An input cannot be synthesized.
    #[error("input '{input}' cannot be synthesized: {reason}")]
    UnsupportedInput {
        /// The input's name.
        input: String,
        /// Why.
        reason: String,
    },
    /// The input shapes cannot be fixed from the bindings given.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// A run failed.
    #[error("ONNX Runtime run failed: {message}")]
    Run {
        /// ONNX Runtime's message.
        message: String,
    },
    /// The options are inconsistent (e.g. zero calls).
    #[error("{0}")]
    Options(String),
}

/// Why the inputs' shapes cannot be fixed from a [`crate::ShapeBindings`]:
/// typed, so that a front end can word each case in its own terms (the
/// `tally` command names its `--dim` and `--batch` flags).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeError {
    /// A batch size was asked for, but the input's first dimension is fixed
    /// at another size.
    #[error("input '{input}' has a fixed first dimension of {size}; a batch size of {batch} cannot apply")]
    FixedBatch {
        /// The input.
        input: String,
        /// Its fixed first dimension.
        size: u64,
        /// The batch size asked for.
        batch: u64,
    },
    /// A binding of the first dimension disagrees with the batch size.
    #[error("input '{input}': the dimension binding {binding}={size} conflicts with the batch size {batch}")]
    BindingConflictsWithBatch {
        /// The input.
        input: String,
        /// The binding's key (a symbolic name or `INPUT[INDEX]`).
        binding: String,
        /// Its size.
        size: u64,
        /// The batch size.
        batch: u64,
    },
    /// A dynamic dimension past the first has no binding.
    #[error("input '{input}' dimension {index} ({dimension}) is dynamic and has no size: bind {binding}")]
    Unbound {
        /// The input.
        input: String,
        /// The dimension's position.
        index: usize,
        /// The dimension as the model declares it.
        dimension: String,
        /// The key that would bind it: its symbolic name, or `INPUT[INDEX]`
        /// when it has none.
        binding: String,
    },
    /// A binding names no dynamic dimension of any input.
    #[error("the dimension binding {binding} matches no dynamic dimension of the model's inputs")]
    UnusedBinding {
        /// The binding's key.
        binding: String,
    },
}
