//! Resource-profile types: vertebrae 1.1.0's `vertebrae.profiling`
//! dataclasses, the interchange format of tally's profiler.
//!
//! Two groups of types live here:
//!
//! - what a framework adapter reports to the profiler
//!   ([`AdapterOperationResult`], [`ResourceAdapterMetadata`],
//!   [`DeviceMemoryMeasurement`], [`ModelFootprintMeasurement`],
//!   [`DeploymentArtifact`]), validated with vertebrae's `__post_init__`
//!   rules and messages;
//! - the profile itself ([`ResourceProfile`] and its parts), whose JSON is
//!   exactly `dataclasses.asdict` of vertebrae's: same field names, order,
//!   nesting, status strings, and `null` where vertebrae writes `None`.
//!
//! [`stats`] reproduces the float arithmetic vertebrae uses (numpy's pairwise
//! sums, median and linear percentile; Python's `sum` and integer division),
//! so a profile tally builds from the same call timings is bit-identical.
//!
//! # Where tally differs from vertebrae
//!
//! - Statuses are enums with the values vertebrae writes; vertebrae accepts
//!   any string on load, tally rejects a status vertebrae never writes.
//! - Counts and byte sizes are `u64`: negative or larger values (which
//!   vertebrae never writes but would load) are rejected.
//! - Fields are typed: vertebrae builds its dataclasses without type checks,
//!   so it would load `"first_call_seconds": "fast"`; tally does not.
//! - `ResourceProfile.status` must be a string; vertebrae applies `str()`.
//! - Seconds, throughput and the embedding ratios are `f64` because the
//!   interchange format has floats there and a loaded profile must write back
//!   unchanged; tally's own measurements stay integer nanoseconds until the
//!   profile is built.
//! - `context` is a JSON object whose keys serialize in sorted order; Python
//!   keeps insertion order. JSON object order carries no meaning.

mod adapter;
mod columns;
mod json;
pub mod schema;
pub mod stats;
mod status;
mod types;

pub use adapter::{
    AdapterOperationResult, DeploymentArtifact, DeviceMemoryMeasurement, DeviceMemoryReadings,
    ModelFootprintMeasurement, ModelFootprintReadings, PROFILE_WINDOW, ResourceAdapterMetadata,
};
pub use columns::{LOCAL_SCOPE, common_profile_columns, resource_profile_columns};
pub use json::{
    check_finite_float, profile_from_json_str, profile_from_json_value, profile_to_json_string,
    profile_to_json_value, resource_profile_from_dict, resource_profile_from_json, resource_profile_to_dict,
    resource_profile_to_json,
};
pub use status::{
    ArtifactStatus, DeviceMeasurementStatus, DeviceMemoryStatus, FootprintStatus, HostMemoryStatus,
    ModelMeasurementStatus, OperationStatus, PersistedStatus, ProfileStatus,
};
pub use types::{
    ArtifactFootprint, DeviceMemoryProfile, EmbeddingFootprint, HostMemoryProfile, InferenceProfile,
    ModelFootprint, PersistedArtifactFootprint, ResourceProfile,
};
