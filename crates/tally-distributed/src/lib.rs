#![doc = include_str!("../README.md")]
//!
//! Aggregation of worker-local resource profiles and rank artifacts of a
//! distributed run, as vertebrae 1.1.0 aggregates them.
//!
//! When inference is spread over workers (shards of a data set, ranks of a
//! server), each worker profiles its own window with
//! [`tally_profile::ResourceProfiler`] and records its own correlation
//! evidence; the driver combines what they report without pretending it was
//! one local run:
//!
//! - [`aggregate_distributed_resource_profiles`] (and its rayon twin
//!   [`aggregate_distributed_resource_profiles_parallel`], same result)
//!   builds a [`DistributedResourceProfile`]: status `measured` / `partial` /
//!   `not_measured`, shard counts, the distribution of worker first calls,
//!   summed compute and samples, the call-weighted warm mean, the largest
//!   worker peaks and who had them, the model footprint every worker agreed
//!   on, and the merged embeddings' footprint;
//! - [`with_distributed_embedding_footprint`], [`ResourceProfileLike`] and
//!   [`distributed_resource_profile_columns`] are vertebrae's
//!   `with_distributed_embedding_footprint`, `resource_profile_like_from_dict`
//!   and the distributed branch of `resource_profile_columns`;
//! - [`AggregateRequest`] is the JSON request of `tally aggregate --request`;
//! - [`account_ranks`] accounts the GPU time of several ranks' artifacts
//!   together, one row per device clock, as tally-gpu-time's
//!   [`tally_gpu_time::AccountingReport`]; [`CpuStandInRecorder`] makes
//!   honest stand-in evidence of CPU work where there is no GPU (see
//!   [`evidence`]).
//!
//! - [`ranks`] holds what a rank sends the driver ([`ranks::RankReport`]),
//!   how the driver combines the reports (a rank that failed leaves its
//!   shard unprofiled), and [`ranks::run_with_deadline`], which bounds a
//!   rank's work in time.
//!
//! With the off-by-default feature `mpi`, the `mpi` module gathers
//! every rank's serialized profile and artifact to rank 0 (variable-length
//! gathers with a deadline) and the `mpi-shards` program runs the whole
//! path end to end under `mpirun`; `mpi::account` and the `mpi-account`
//! program account a run with each rank reading its share of the files
//! (tally-partial's partials, reduced to rank 0 along a binomial tree).
//! Without the feature nothing of MPI is compiled.
//!
//! # Where tally differs from vertebrae
//!
//! - The merged embeddings are described, not passed: by metadata
//!   ([`tally_profile::EmbeddingMetadata`]: shape, dtype, sparse, nnz) or by
//!   what a binding reads of an array ([`tally_profile::EmbeddingSource`]).
//! - Counts are `u64`: a sum over workers beyond 2^64 − 1 is
//!   [`AggregateError::Overflow`], where Python's integers grow.
//! - The inconsistent-model error names the two disagreeing shards in its
//!   fields; its message is vertebrae's.
//! - Statuses are closed enums; a distributed status other than `measured`,
//!   `partial` or `not_measured` (which vertebrae's loader would keep as any
//!   string) is rejected on load, and fields are typed (vertebrae applies
//!   `int()` to counts, so it loads `"shard_count": "3"` or `2.7`; tally does
//!   not).
//! - Nothing else: given the same worker profiles, every float is
//!   bit-identical (Python's left-to-right sums, numpy's median and linear
//!   95th percentile), which the golden tests check against vertebrae.
//!
//! # Features
//!
#![doc = document_features::document_features!()]

mod aggregate;
pub mod evidence;
mod like;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod ranks;
mod request;
mod types;

pub use aggregate::{
    AggregateError, AggregateOptions, aggregate_distributed_resource_profiles,
    aggregate_distributed_resource_profiles_parallel, aggregate_in_chunks,
};
pub use evidence::{CpuStandInRecorder, stand_in_clock_name};
pub use like::{
    ResourceProfileLike, distributed_resource_profile_columns, resource_profile_like_from_dict,
    with_distributed_embedding_footprint,
};
pub use ranks::account_ranks;
pub use request::{AggregateRequest, RequestError};
pub use types::{
    DISTRIBUTED_SCOPE, DistributedResourceProfile, DistributedStatus, LatencyDistribution, THROUGHPUT_KIND,
    distributed_resource_profile_from_dict,
};
