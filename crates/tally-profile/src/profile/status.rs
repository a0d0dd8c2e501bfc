//! The status strings of vertebrae's profile dataclasses, one enum per field.
//!
//! vertebrae keeps every status as a free `str`; tally gives each field the
//! closed set of values vertebrae 1.1.0 can write there, so a typo cannot
//! exist after loading. A status vertebrae never writes is rejected on load.

use tally_core::string_enum;

string_enum!(
    /// `AdapterOperationResult.status`: the outcome of an optional adapter
    /// operation (synchronize, reset of the device peak).
    OperationStatus, "status",
    "AdapterOperationResult.status must be 'succeeded', 'not_applicable', or 'unavailable'.",
    {
        /// The operation ran.
        Succeeded = "succeeded",
        /// The operation has no meaning here (e.g. synchronizing a CPU).
        NotApplicable = "not_applicable",
        /// The operation could not run.
        Unavailable = "unavailable",
    }
);

string_enum!(
    /// `DeviceMemoryMeasurement.status`: what an adapter could read of the
    /// allocator.
    DeviceMeasurementStatus, "status",
    "DeviceMemoryMeasurement.status must be 'measured', 'not_applicable', or 'unavailable'.",
    {
        /// Peaks were read over the profile window.
        Measured = "measured",
        /// The device has no allocator of its own (CPU).
        NotApplicable = "not_applicable",
        /// The backend exposes no usable allocator counters.
        Unavailable = "unavailable",
    }
);

string_enum!(
    /// `ModelFootprintMeasurement.status`.
    ModelMeasurementStatus, "status",
    "ModelFootprintMeasurement.status must be 'measured' or 'unavailable'.",
    {
        /// Parameter or in-memory sizes were read.
        Measured = "measured",
        /// The adapter cannot see the model state.
        Unavailable = "unavailable",
    }
);

string_enum!(
    /// `ResourceProfile.status` and `InferenceProfile.status`.
    ProfileStatus, "status",
    "status must be 'measured', 'not_measured', or 'not_measured_cache_hit'.",
    {
        /// At least one call (materialized, for the inference part) was measured.
        Measured = "measured",
        /// Nothing was measured.
        NotMeasured = "not_measured",
        /// Nothing was measured because the result came from a cache.
        NotMeasuredCacheHit = "not_measured_cache_hit",
    }
);

string_enum!(
    /// `HostMemoryProfile.status`.
    HostMemoryStatus, "status",
    "HostMemoryProfile.status must be 'measured', 'not_measured', or 'disabled'.",
    {
        /// Baseline and peak RSS were measured.
        Measured = "measured",
        /// Host memory tracking was on but no call was measured.
        NotMeasured = "not_measured",
        /// Host memory tracking was off.
        Disabled = "disabled",
    }
);

string_enum!(
    /// `DeviceMemoryProfile.status`.
    DeviceMemoryStatus, "status",
    "DeviceMemoryProfile.status must be one of 'measured', 'not_applicable', 'unavailable', \
               'disabled', 'not_measured', or 'not_measured_cache_hit'.",
    {
        /// Allocator peaks over the profile window.
        Measured = "measured",
        /// CPU: memory is reported through process RSS.
        NotApplicable = "not_applicable",
        /// No scoped measurement was possible.
        Unavailable = "unavailable",
        /// Device memory tracking was off.
        Disabled = "disabled",
        /// No call was measured.
        NotMeasured = "not_measured",
        /// No call was measured because the result came from a cache.
        NotMeasuredCacheHit = "not_measured_cache_hit",
    }
);

string_enum!(
    /// `ModelFootprint.status`, `.parameter_status` and `.checkpoint_status`.
    FootprintStatus, "status",
    "ModelFootprint status must be 'measured', 'partial', or 'unavailable'.",
    {
        /// Fully measured.
        Measured = "measured",
        /// Some of it was measured.
        Partial = "partial",
        /// Nothing could be measured.
        Unavailable = "unavailable",
    }
);

string_enum!(
    /// `ArtifactFootprint.status`: the outcome for one declared artifact.
    ArtifactStatus, "status",
    "ArtifactFootprint.status must be one of 'measured', 'partial', 'duplicate', 'missing', \
               'unreadable', or 'directory_requires_recursive'.",
    {
        /// Every file was counted.
        Measured = "measured",
        /// A recursive directory where some entries were skipped.
        Partial = "partial",
        /// A file already counted by an earlier declaration.
        Duplicate = "duplicate",
        /// The path does not exist.
        Missing = "missing",
        /// The path could not be resolved or read.
        Unreadable = "unreadable",
        /// A directory declared without `recursive`.
        DirectoryRequiresRecursive = "directory_requires_recursive",
    }
);

string_enum!(
    /// `PersistedArtifactFootprint.status`.
    PersistedStatus, "status",
    "PersistedArtifactFootprint.status must be one of 'measured', 'not_persisted', \
               'unavailable', or 'disabled'.",
    {
        /// The store reported the persisted size.
        Measured = "measured",
        /// No store, no key, or the key is not in the store.
        NotPersisted = "not_persisted",
        /// The store failed.
        Unavailable = "unavailable",
        /// Persisted-size measurement was off.
        Disabled = "disabled",
    }
);
