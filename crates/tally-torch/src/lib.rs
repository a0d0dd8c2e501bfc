//! The libtorch adapter of tally's resource profiler, through
//! [`tch`] 0.26.0 (libtorch 2.13.0).
//!
//! [`TorchResourceProfileAdapter`] gives the profiler what vertebrae 1.1.0's
//! `TorchResourceProfileAdapter` gives it for a PyTorch model, with the same
//! statuses, reasons, device-resolution names and dtype spellings, for a
//! [`tch::nn::VarStore`] (and the modules built on it) or a TorchScript
//! [`tch::CModule`]. It reads the model's tensors in place and never loads,
//! moves or runs anything.
//!
//! ```no_run
//! use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};
//! use tally_torch::TorchResourceProfileAdapter;
//! use tch::nn::{self, Module};
//!
//! let var_store = nn::VarStore::new(tch::Device::cuda_if_available());
//! let layer = nn::linear(var_store.root() / "fc", 16, 4, Default::default());
//! let adapter = TorchResourceProfileAdapter::for_var_store(&var_store);
//! let mut profiler = ResourceProfiler::new(ProfilerConfig::default()).with_adapter(Box::new(adapter));
//! let input = tch::Tensor::ones([32, 16], (tch::Kind::Float, var_store.device()));
//! let output = profiler.measure_call(|| layer.forward(&input), CallSpec::new(32, "batch"));
//! let profile = profiler.finish(false);
//! println!("{}", profile.to_json_value().unwrap_or_default());
//! ```
//!
//! # Build setup
//!
//! tch needs libtorch 2.13.0 at build time and at run time. The workspace
//! builds it from a Python environment with `torch==2.13.0` whose `python`
//! is first on `PATH`, with `LIBTORCH_USE_PYTORCH=1` (set in
//! `.cargo/config.toml`). This crate's build script compiles a small C++
//! shim against that libtorch's headers, adds an rpath to libtorch's
//! library directory to this crate's test binaries, and links `libtorch.so`
//! with `--no-as-needed` so that its CUDA half is loaded where there is one.
//! Dependents that build binaries (the `tally` command) read the library
//! directory as `DEP_TALLY_TORCH_LIBTORCH_LIB` and add the same rpath.
//!
//! # What tch does not bind
//!
//! A C++ shim (`csrc/shim.cpp`) reaches what tch 0.26 has no binding for:
//! the identity, dtype and size of tensors of every libtorch dtype,
//! TorchScript `named_buffers`, device synchronization that reports errors
//! instead of aborting, and the caching allocator's statistics
//! ([`allocator_stats`], [`reset_peak_stats`]).
//!
//! # Where tally differs from vertebrae
//!
//! - **Model kinds**: vertebrae reads any object with `parameters()` and
//!   `buffers()`. Here a model is a VarStore (trainable variables are the
//!   parameters, the other variables the buffers, see [`ModelTensors`]), a
//!   TorchScript module, or tensors given through
//!   [`TorchResourceProfileAdapter::with_model_getter`].
//! - **Devices** are [`tch::Device`]s, so a hint cannot name `cuda` without
//!   an index; `Device::Mps` is named `mps`, as `torch.device("mps")` is.
//! - **Allocator not initialized**: vertebrae's baseline reads 0 before
//!   CUDA is initialized and the reset then raises; here reading the
//!   baseline raises, so the hook fails a step earlier with libtorch's
//!   message. A model whose tensors are on the GPU has initialized it.
//! - **Failures** raise typed errors ([`TorchError`]) that the profiler
//!   records as a hook failure, named like the Python exception
//!   (`RuntimeError`).
//! - The `resource_adapter` context value is
//!   `tally_torch.TorchResourceProfileAdapter`.

mod adapter;
mod allocator;
mod device;
mod dtype;
mod error;
mod ffi;
mod model;
mod script;

pub use adapter::TorchResourceProfileAdapter;
pub use allocator::{AllocatorStats, allocator_stats, reset_peak_stats, synchronize};
pub use device::TorchDevice;
pub use dtype::{kind_name, python_dtype_name};
pub use error::TorchError;
pub use model::ModelTensors;
pub use script::{ScriptProfileOptions, ScriptProfileRun, profile_torchscript, synthetic_input, tensor_json};
/// The tch version this crate is built with, re-exported so that callers
/// use the same types.
pub use tch;
