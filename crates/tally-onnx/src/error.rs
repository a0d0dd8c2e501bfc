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
    /// The input shapes cannot be fixed from the options given.
    #[error("{0}")]
    Shape(String),
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
