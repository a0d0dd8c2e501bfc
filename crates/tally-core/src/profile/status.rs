//! The status strings of vertebrae's profile dataclasses, one enum per field.
//!
//! vertebrae keeps every status as a free `str`; tally gives each field the
//! closed set of values vertebrae 1.1.0 can write there, so a typo cannot
//! exist after loading. A status vertebrae never writes is rejected on load.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ValidationError;

macro_rules! status_enum {
    (
        $(#[$meta:meta])*
        $name:ident, field = $field:literal, message = $message:expr,
        { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The string vertebrae writes.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl FromStr for $name {
            type Err = ValidationError;
            fn from_str(text: &str) -> Result<Self, ValidationError> {
                match text {
                    $($text => Ok($name::$variant),)+
                    _ => Err(ValidationError::new($field, $message)),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

status_enum! {
    /// `AdapterOperationResult.status`: the outcome of an optional adapter
    /// operation (synchronize, reset of the device peak).
    OperationStatus, field = "status",
    message = "AdapterOperationResult.status must be 'succeeded', 'not_applicable', or 'unavailable'.",
    {
        /// The operation ran.
        Succeeded => "succeeded",
        /// The operation has no meaning here (e.g. synchronizing a CPU).
        NotApplicable => "not_applicable",
        /// The operation could not run.
        Unavailable => "unavailable",
    }
}

status_enum! {
    /// `DeviceMemoryMeasurement.status`: what an adapter could read of the
    /// allocator.
    DeviceMeasurementStatus, field = "status",
    message = "DeviceMemoryMeasurement.status must be 'measured', 'not_applicable', or 'unavailable'.",
    {
        /// Peaks were read over the profile window.
        Measured => "measured",
        /// The device has no allocator of its own (CPU).
        NotApplicable => "not_applicable",
        /// The backend exposes no usable allocator counters.
        Unavailable => "unavailable",
    }
}

status_enum! {
    /// `ModelFootprintMeasurement.status`.
    ModelMeasurementStatus, field = "status",
    message = "ModelFootprintMeasurement.status must be 'measured' or 'unavailable'.",
    {
        /// Parameter or in-memory sizes were read.
        Measured => "measured",
        /// The adapter cannot see the model state.
        Unavailable => "unavailable",
    }
}

status_enum! {
    /// `ResourceProfile.status` and `InferenceProfile.status`.
    ProfileStatus, field = "status",
    message = "status must be 'measured', 'not_measured', or 'not_measured_cache_hit'.",
    {
        /// At least one call (materialized, for the inference part) was measured.
        Measured => "measured",
        /// Nothing was measured.
        NotMeasured => "not_measured",
        /// Nothing was measured because the result came from a cache.
        NotMeasuredCacheHit => "not_measured_cache_hit",
    }
}

status_enum! {
    /// `HostMemoryProfile.status`.
    HostMemoryStatus, field = "status",
    message = "HostMemoryProfile.status must be 'measured', 'not_measured', or 'disabled'.",
    {
        /// Baseline and peak RSS were measured.
        Measured => "measured",
        /// Host memory tracking was on but no call was measured.
        NotMeasured => "not_measured",
        /// Host memory tracking was off.
        Disabled => "disabled",
    }
}

status_enum! {
    /// `DeviceMemoryProfile.status`.
    DeviceMemoryStatus, field = "status",
    message = "DeviceMemoryProfile.status must be one of 'measured', 'not_applicable', 'unavailable', \
               'disabled', 'not_measured', or 'not_measured_cache_hit'.",
    {
        /// Allocator peaks over the profile window.
        Measured => "measured",
        /// CPU: memory is reported through process RSS.
        NotApplicable => "not_applicable",
        /// No scoped measurement was possible.
        Unavailable => "unavailable",
        /// Device memory tracking was off.
        Disabled => "disabled",
        /// No call was measured.
        NotMeasured => "not_measured",
        /// No call was measured because the result came from a cache.
        NotMeasuredCacheHit => "not_measured_cache_hit",
    }
}

status_enum! {
    /// `ModelFootprint.status`, `.parameter_status` and `.checkpoint_status`.
    FootprintStatus, field = "status",
    message = "ModelFootprint status must be 'measured', 'partial', or 'unavailable'.",
    {
        /// Fully measured.
        Measured => "measured",
        /// Some of it was measured.
        Partial => "partial",
        /// Nothing could be measured.
        Unavailable => "unavailable",
    }
}

status_enum! {
    /// `ArtifactFootprint.status`: the outcome for one declared artifact.
    ArtifactStatus, field = "status",
    message = "ArtifactFootprint.status must be one of 'measured', 'partial', 'duplicate', 'missing', \
               'unreadable', or 'directory_requires_recursive'.",
    {
        /// Every file was counted.
        Measured => "measured",
        /// A recursive directory where some entries were skipped.
        Partial => "partial",
        /// A file already counted by an earlier declaration.
        Duplicate => "duplicate",
        /// The path does not exist.
        Missing => "missing",
        /// The path could not be resolved or read.
        Unreadable => "unreadable",
        /// A directory declared without `recursive`.
        DirectoryRequiresRecursive => "directory_requires_recursive",
    }
}

status_enum! {
    /// `PersistedArtifactFootprint.status`.
    PersistedStatus, field = "status",
    message = "PersistedArtifactFootprint.status must be one of 'measured', 'not_persisted', \
               'unavailable', or 'disabled'.",
    {
        /// The store reported the persisted size.
        Measured => "measured",
        /// No store, no key, or the key is not in the store.
        NotPersisted => "not_persisted",
        /// The store failed.
        Unavailable => "unavailable",
        /// Persisted-size measurement was off.
        Disabled => "disabled",
    }
}
