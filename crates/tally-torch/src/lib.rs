#![doc = include_str!("../README.md")]
// Without `libtorch` (docs.rs builds the `python` form: it has no libtorch)
// the libtorch items these docs name are absent; their links stay plain text.
#![cfg_attr(not(feature = "libtorch"), allow(rustdoc::broken_intra_doc_links))]
//!
//! The PyTorch adapter of tally's resource profiler, in two forms behind
//! two features:
//!
//! - **`libtorch`** (default): [`TorchResourceProfileAdapter`] over
//!   [`tch`] 0.26.0 (libtorch 2.13.0), for Rust programs that hold a
//!   [`tch::nn::VarStore`] or a TorchScript [`tch::CModule`];
//! - **`python`**: `python::TorchAdapter`, vertebrae 1.1.0's
//!   `TorchResourceProfileAdapter` over PyTorch's *Python* objects (pyo3),
//!   for programs that embed Python and for the `tally` Python package
//!   (`tally.profiling.TorchResourceProfileAdapter`). It needs neither tch
//!   nor libtorch at build time.
//!
//! Both give the profiler what vertebrae's `TorchResourceProfileAdapter`
//! gives it for a PyTorch model, with the same statuses, reasons,
//! device-resolution names and dtype spellings.
//!
//! # The libtorch adapter
//!
//! [`TorchResourceProfileAdapter`] reads the model's tensors in place and
//! never loads, moves or runs anything.
//!
//! ```no_run
//! # #[cfg(feature = "libtorch")] {
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
//! # }
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
//!
//! # The adapter over Python objects
//!
//! `python::TorchAdapter` holds Python handles (the extractor, an
//! optional model getter, device resolver and torch loader) and asks torch
//! through pyo3, hook by hook as vertebrae does, so its answers equal
//! vertebrae's on the same objects (`crates/tally-python/tests/test_torch.py`
//! compares them live):
//!
//! - **Device**: the devices of the model's parameters and buffers (and of
//!   a Keras model's `weights`), `model_state`, or `multi_device_model`
//!   when they span several; a single device differing from the device
//!   resolver's (else the extractor's `device`) is
//!   `model_state_conflicts_with_profiling_hint`. Without model state: the
//!   resolver's device (`extractor_resolver`), the extractor's `device`
//!   (`explicit`), its `_device(torch)` (`extractor_resolver`), else `cpu`
//!   (`default_cpu`).
//! - **Synchronization**: `torch.cuda.synchronize(device)` for every CUDA
//!   device, `torch.mps.synchronize()` once for MPS; the method is
//!   `torch.cuda.synchronize`, `torch.mps.synchronize`,
//!   `torch.synchronize_each_active_device` (several devices) or
//!   `not_applicable`.
//! - **Device memory**: on one CUDA device, a window opened by reading
//!   `memory_allocated` / `memory_reserved` as baselines and
//!   `reset_peak_memory_stats`, closed by `max_memory_allocated` /
//!   `max_memory_reserved` on the same device (else unavailable: the device
//!   changed); `not_applicable` on CPU, unavailable on MPS, other devices and
//!   several devices.
//! - **Model footprint**: parameters and buffers deduplicated by identity
//!   (tied weights count once), trainable by `requires_grad`, bytes as
//!   `numel() * element_size()`, the sorted distinct `str(dtype)`.
//! - **Deployment artifacts**: those given to the constructor.
//!
//! # Features
//!
#![doc = document_features::document_features!()]

#[cfg(feature = "libtorch")]
mod adapter;
#[cfg(feature = "libtorch")]
mod allocator;
#[cfg(feature = "libtorch")]
mod device;
#[cfg(feature = "libtorch")]
mod dtype;
#[cfg(feature = "libtorch")]
mod error;
#[cfg(feature = "libtorch")]
mod ffi;
#[cfg(feature = "libtorch")]
mod model;
#[cfg(feature = "python")]
pub mod python;
#[cfg(feature = "libtorch")]
mod script;

#[cfg(feature = "libtorch")]
pub use adapter::TorchResourceProfileAdapter;
#[cfg(feature = "libtorch")]
pub use allocator::{AllocatorStats, allocator_stats, reset_peak_stats, synchronize};
#[cfg(feature = "libtorch")]
pub use device::TorchDevice;
#[cfg(feature = "libtorch")]
pub use dtype::{kind_name, python_dtype_name};
#[cfg(feature = "libtorch")]
pub use error::TorchError;
#[cfg(feature = "libtorch")]
pub use model::ModelTensors;
#[cfg(feature = "libtorch")]
pub use script::{ScriptProfileOptions, ScriptProfileRun, profile_torchscript, synthetic_input, tensor_json};
/// The tch version this crate is built with, re-exported so that callers
/// use the same types.
#[cfg(feature = "libtorch")]
pub use tch;
