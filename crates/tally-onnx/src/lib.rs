#![doc = include_str!("../README.md")]
//!
//! ONNX Runtime for tally: the resource-profile adapter, sessions on
//! synthetic inputs, and the model footprint read from the `.onnx` file
//! (feature `runtime`, on by default); vertebrae's adapter over Python's
//! `onnxruntime` sessions (feature `python`).
//!
//! # The runtime library
//!
//! ONNX Runtime is loaded at run time (`ort`'s `load-dynamic`), from a path
//! given explicitly or, failing that, from `ORT_DYLIB_PATH`: PyPI's
//! `onnxruntime` wheel (1.31 or later) ships it as
//! `onnxruntime/capi/libonnxruntime.so.<version>`. [`OnnxRuntime::load`]
//! checks the file before `ort` sees it, so a missing or wrong library is a
//! [`LoadError`], never a panic.
//!
//! # Profiling
//!
//! [`profile_model`] does what `tally profile MODEL.onnx` does: synthetic
//! inputs matching the model's declared inputs, measured calls through
//! `tally_profile::ResourceProfiler` with an [`OnnxResourceProfileAdapter`],
//! and the profile in vertebrae 1.1.0's format.
//!
//! ```no_run
//! use tally_onnx::{ProfileOptions, profile_model};
//! let run = profile_model("model.onnx".as_ref(), &ProfileOptions { calls: 20, ..Default::default() })?;
//! println!("{}", run.profile.to_json_value().map_err(|e| e.to_string()).unwrap_or_default());
//! # Ok::<(), tally_onnx::OnnxError>(())
//! ```
//!
//! # Where tally differs from vertebrae
//!
//! - **Model footprint**: vertebrae's `ONNXResourceProfileAdapter` reports
//!   it unavailable ("ONNX parameters are not parsed without the optional
//!   onnx package."). tally reads the `.onnx` protobuf itself
//!   ([`ModelInfo`]): parameters are the initializers (dense and sparse, of
//!   the main graph and every subgraph), buffers the tensors held in node
//!   attributes (`Constant` values); bytes are element count × element size
//!   for every ONNX type (sub-byte types packed as ONNX packs them), the
//!   string lengths for `STRING`, values plus indices for sparse tensors.
//!   Trainable counts are not reported. A model with no initializers is a
//!   measured zero.
//! - **Deployment artifacts**: the model file (`checkpoint`) as vertebrae,
//!   plus every external data file the model names (`external_weights`).
//! - **weight_dtypes** (metadata and footprint) are the sorted distinct
//!   `TensorProto.<TYPE>` names of the stored tensors; vertebrae reports
//!   none for ONNX.
//! - **Device**: this build registers no execution provider, so sessions
//!   run on `CPUExecutionProvider`, which is what the metadata reports.
//! - The adapter's `resource_adapter` name is
//!   `tally_onnx.OnnxResourceProfileAdapter`.
//!
//! # Over Python's `onnxruntime`
//!
//! The `python` feature adds `python::OnnxAdapter`, vertebrae's
//! `ONNXResourceProfileAdapter` over a Python extractor holding an
//! `onnxruntime.InferenceSession` (the `tally` Python package's
//! `tally.profiling.ONNXResourceProfileAdapter`), answering as vertebrae
//! does, hook by hook:
//!
//! - **Device**: the session's first provider (`_session.get_providers()`,
//!   `active_provider`), else the extractor's first configured `providers`
//!   entry (`configured_provider`), else `CPUExecutionProvider`; never
//!   asynchronous, synchronized by `InferenceSession.run`.
//! - **Synchronization**: succeeds (a run returns when its outputs are ready).
//! - **Device memory**: unavailable (no portable allocator peak API).
//! - **Model footprint**: unavailable, with vertebrae's reason (vertebrae
//!   does not parse the model).
//! - **Deployment artifacts**: the extractor's `model_path` (`checkpoint`),
//!   then the external artifacts given (`external_weights`).
//!
//! It needs no `ort` (the session is Python's), so the package builds
//! without the `runtime` feature.
//!
//! # Features
//!
#![doc = document_features::document_features!()]

#[cfg(feature = "runtime")]
mod adapter;
mod dtype;
#[cfg(feature = "runtime")]
mod error;
mod model;
#[cfg(feature = "runtime")]
mod profile;
#[cfg(feature = "python")]
pub mod python;
#[cfg(feature = "runtime")]
mod raw;
#[cfg(feature = "runtime")]
pub mod runtime;
#[cfg(feature = "runtime")]
mod session;
mod wire;
#[cfg(feature = "model-writer")]
pub mod write;

#[cfg(feature = "runtime")]
pub use adapter::{NO_ALLOCATOR_PEAK_API, OnnxResourceProfileAdapter};
pub use dtype::DataType;
#[cfg(feature = "runtime")]
pub use error::{OnnxError, ShapeError};
pub use model::{ModelInfo, ModelReadError, Storage, TensorInfo, TensorRole};
#[cfg(feature = "runtime")]
pub use profile::{ProfileOptions, ProfileRun, profile_model};
#[cfg(feature = "runtime")]
pub use runtime::{
    LibraryPath, LibrarySource, LoadError, ORT_DYLIB_PATH, OnnxRuntime, PYTHON_INTERPRETER,
    python_package_library,
};
#[cfg(feature = "runtime")]
pub use session::{
    CPU_EXECUTION_PROVIDER, Dim, IoInfo, IoType, OnnxSession, OutputValue, SessionOptions, ShapeBindings,
    SyntheticInputs, TensorData, f16_to_f64, f64_to_f16,
};
