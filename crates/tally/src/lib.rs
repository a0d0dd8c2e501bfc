#![doc = include_str!("../README.md")]
//!
//! tally: what ML inference really costs. This umbrella re-exports the
//! workspace's crates as modules.
//!
//! # Features
//!
#![doc = document_features::document_features!()]

pub use tally_artifact as artifact;
pub use tally_clock as clock;
pub use tally_conformance as conformance;
pub use tally_core as core;
/// CUDA evidence (feature `cuda`, on by default).
#[cfg(feature = "cuda")]
pub use tally_cuda as cuda;
/// Aggregation of worker profiles and rank artifacts; MPI with feature `mpi`.
pub use tally_distributed as distributed;
pub use tally_gpu_time as gpu_time;
pub use tally_ingest as ingest;
/// The ONNX Runtime adapter (feature `onnx`, on by default).
#[cfg(feature = "onnx")]
pub use tally_onnx as onnx;
pub use tally_profile as profile;
/// One self-contained HTML page of a breakdown or a diff (`tally report`).
pub use tally_report as report;
pub use tally_resolve as resolve;
/// The libtorch adapter (feature `torch`, off by default: it links libtorch).
#[cfg(feature = "torch")]
pub use tally_torch as torch;
pub use tally_trace as trace;
