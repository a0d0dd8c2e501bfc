#![doc = include_str!("../README.md")]
//!
//! Measured inference-resource profiles of real calls, in vertebrae 1.1.0's
//! interchange format.
//!
//! A [`ResourceProfiler`] wraps the inference calls a program already makes
//! (it never adds a call of its own and never changes what a call returns)
//! and, at [`ResourceProfiler::finish`], builds a
//! [`ResourceProfile`](profile::ResourceProfile): first-call and warm latency,
//! throughput, host and device memory peaks, model and deployment-artifact
//! footprint. The profile serializes to exactly the JSON of
//! `dataclasses.asdict` on vertebrae's `ResourceProfile`, and
//! `vertebrae.profiling.resource_profile_from_dict` loads it unchanged.
//!
//! Framework knowledge lives in adapters ([`ResourceProfileAdapter`]), in
//! their own crates; this crate knows no framework.
//!
//! ```
//! use tally_profile::{CallSpec, ProfilerConfig, ResourceProfiler};
//! let mut profiler = ResourceProfiler::new(ProfilerConfig::default());
//! let doubled = profiler.measure_call(|| vec![1, 2, 3].into_iter().map(|x| x * 2).collect::<Vec<_>>(),
//!                                     CallSpec::new(3, "batch"));
//! assert_eq!(doubled, [2, 4, 6]);
//! let profile = profiler.finish(false);
//! let json = profile.to_json_value().unwrap();
//! assert_eq!(json["inference"]["batch_sizes"], serde_json::json!([3]));
//! assert_eq!(json["device_memory"]["unavailable_reason"],
//!            "The extractor does not provide a resource adapter.");
//! ```
//!
//! # Where tally differs from vertebrae
//!
//! - **Host memory** is the kernel's exact high-water mark on Linux (see
//!   [`HostMemoryMethod`]), not a 10 ms sample, so short peaks are not
//!   missed. The window spans the first call's start to the last call's end,
//!   including time between calls. `host_memory.sample_interval_seconds` is
//!   `null` unless the fallback sampler measured, and
//!   `context.host_memory_method` says which method did. Outside Linux host
//!   memory is `not_measured`.
//! - **Durations** are integer nanoseconds until the profile is built, then
//!   `ns / 1e9`. vertebrae subtracts two `perf_counter()` floats, which
//!   rounds the difference of two large numbers; tally's seconds are the
//!   correctly rounded duration. Given the same durations, every statistic
//!   is bit-identical (see [`profile::stats`]).
//! - **Hook failures** that vertebrae can only detect at run time (a hook
//!   returning the wrong type) cannot happen: hooks are typed. Errors and
//!   panics are contained with vertebrae's warning text; a panic is reported
//!   with the kind `panic`.
//! - **Paths**: see [`deployment_artifact_footprint`] for the cases where vertebrae
//!   raises and tally records an `unreadable` artifact instead. Non-UTF-8
//!   paths are written lossily.
//! - **Embeddings** are described, not passed: by their metadata
//!   ([`EmbeddingMetadata`]) or by what a binding reads of an array
//!   ([`EmbeddingSource`]: shape, element size, a sparse matrix's component
//!   sizes). Sizes are `u64`, where Python's integers would also hold a
//!   negative or a larger figure.
//! - The `resource_adapter` context value is [`ResourceProfileAdapter::name`]
//!   (the Rust type name by default) where vertebrae writes `module.Class`.
//!
//! # Features
//!
#![doc = document_features::document_features!()]

mod adapter;
mod clock;
mod config;
mod deployment;
mod embedding;
mod host;
pub mod profile;
mod profiler;
mod pytext;
#[cfg(feature = "python")]
pub mod python;
mod sys;

pub use adapter::{BaseResourceProfileAdapter, HookError, ResourceProfileAdapter};
pub use clock::{Clock, MonotonicClock};
pub use config::ResourceProfilingConfig;
pub use deployment::deployment_artifact_footprint;
pub use embedding::{
    EmbeddingError, EmbeddingMetadata, EmbeddingSize, EmbeddingSource, EmbeddingStore, LocalEmbeddingStore,
    PersistedSizes, StoreError, StoredEmbeddingStat, dtype_itemsize, embedding_footprint,
    persisted_array_footprint, set_embedding_footprint, with_embedding_footprint,
};
pub use host::{HostMemoryMethod, HostMemoryMode, current_rss_and_hwm};
pub use profile::{
    resource_profile_columns, resource_profile_from_dict, resource_profile_from_json,
    resource_profile_to_dict, resource_profile_to_json,
};
pub use profiler::{CallRecord, CallSpec, ProfilerConfig, ResourceProfiler, panic_text};
pub use pytext::{python_repr, python_unpack_message};
