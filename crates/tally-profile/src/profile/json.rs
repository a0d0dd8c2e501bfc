//! Loading and writing profiles as vertebrae's JSON.
//!
//! The serialized form is `dataclasses.asdict(profile)`: what vertebrae
//! stores and what `resource_profile_from_dict` reads back.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::types::{EmbeddingFootprint, ResourceProfile};
use tally_core::ValidationError;

/// Loads one of vertebrae's profile dataclasses from the decoded JSON of its
/// `asdict`; `what` names it in the errors (`"resource profile"`). Shared by
/// every profile type so that they load, and fail, alike.
pub fn profile_from_json_value<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, ValidationError> {
    if !value.is_object() {
        return Err(ValidationError::new("profile", format!("a {what} must be a JSON object")));
    }
    serde_json::from_value(value).map_err(|error| load_error(error, what))
}

/// [`profile_from_json_value`] on JSON text.
pub fn profile_from_json_str<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, ValidationError> {
    let text = tally_utils::json_text::pythonic_json_text(text);
    let value: Value = serde_json::from_str(&text).map_err(|error| load_error(error, what))?;
    profile_from_json_value(value, what)
}

/// The decoded JSON of a profile type; the caller checks its floats are
/// finite first (see [`check_finite_float`]).
pub fn profile_to_json_value<T: Serialize>(profile: &T) -> Result<Value, ValidationError> {
    serde_json::to_value(profile).map_err(|error| ValidationError::new("profile", error.to_string()))
}

/// Compact JSON text of a profile type; the caller checks its floats are
/// finite first (see [`check_finite_float`]).
pub fn profile_to_json_string<T: Serialize>(profile: &T) -> Result<String, ValidationError> {
    serde_json::to_string(profile).map_err(|error| ValidationError::new("profile", error.to_string()))
}

/// Fails on a non-finite float field `name`, which JSON cannot hold, with
/// vertebrae's `make_json_safe` message; `None` passes.
pub fn check_finite_float(name: &'static str, value: Option<f64>) -> Result<(), ValidationError> {
    match value {
        Some(value) if !value.is_finite() => {
            Err(ValidationError::new(name, format!("Cannot serialize non-finite float at {name}.")))
        }
        _ => Ok(()),
    }
}

fn load_error(error: serde_json::Error, what: &str) -> ValidationError {
    ValidationError::new("profile", format!("invalid {what}: {error}"))
}

/// How a load error names a [`ResourceProfile`].
const RESOURCE_PROFILE: &str = "resource profile";

/// The JSON methods every profile type has, written once: inside the
/// type's `impl`, `profile_json_methods!(WHAT)` (a `&str` naming the type
/// in load errors) adds `from_json_value`, `from_json_str`, `to_json_value`
/// and `to_json_string`, which load with [`profile_from_json_value`]'s rules
/// and write after the type's own `check_finite` (vertebrae's
/// `make_json_safe` refuses a non-finite float, which JSON cannot hold).
#[macro_export]
macro_rules! profile_json_methods {
    ($what:expr) => {
        /// Loads the profile from the decoded JSON of `dataclasses.asdict`,
        /// with the rules of vertebrae's `*_from_dict` (unknown top-level
        /// keys are ignored there and here; unknown keys inside a part are
        /// errors).
        pub fn from_json_value(value: ::serde_json::Value) -> Result<Self, ::tally_core::ValidationError> {
            $crate::profile::profile_from_json_value(value, $what)
        }

        /// Loads the profile from JSON text.
        pub fn from_json_str(text: &str) -> Result<Self, ::tally_core::ValidationError> {
            $crate::profile::profile_from_json_str(text, $what)
        }

        /// The JSON object `dataclasses.asdict(profile)` gives. Fails on a
        /// non-finite float.
        pub fn to_json_value(&self) -> Result<::serde_json::Value, ::tally_core::ValidationError> {
            self.check_finite()?;
            $crate::profile::profile_to_json_value(self)
        }

        /// Compact JSON text of `to_json_value`.
        pub fn to_json_string(&self) -> Result<String, ::tally_core::ValidationError> {
            self.check_finite()?;
            $crate::profile::profile_to_json_string(self)
        }
    };
}

impl ResourceProfile {
    profile_json_methods!(RESOURCE_PROFILE);

    /// Every float field is finite.
    pub fn check_finite(&self) -> Result<(), ValidationError> {
        let inference = &self.inference;
        let floats = [
            ("inference.first_call_seconds", inference.first_call_seconds),
            ("inference.warm_mean_seconds", inference.warm_mean_seconds),
            ("inference.warm_median_seconds", inference.warm_median_seconds),
            ("inference.warm_p95_seconds", inference.warm_p95_seconds),
            ("inference.warm_max_seconds", inference.warm_max_seconds),
            ("inference.warm_mean_seconds_per_sample", inference.warm_mean_seconds_per_sample),
            ("inference.total_materialized_seconds", inference.total_materialized_seconds),
            ("inference.throughput_samples_per_second", inference.throughput_samples_per_second),
            ("host_memory.sample_interval_seconds", self.host_memory.sample_interval_seconds),
        ];
        for (name, value) in floats {
            check_finite_float(name, value)?;
        }
        if let Some(embedding) = &self.embedding {
            embedding.check_finite()?;
        }
        Ok(())
    }
}

impl EmbeddingFootprint {
    /// Both float fields are finite.
    pub fn check_finite(&self) -> Result<(), ValidationError> {
        check_finite_float("embedding.bytes_per_embedding", Some(self.bytes_per_embedding))?;
        check_finite_float("embedding.compression_savings_ratio", Some(self.compression_savings_ratio))
    }
}

/// vertebrae's `resource_profile_from_dict` on decoded JSON.
pub fn resource_profile_from_dict(value: Value) -> Result<ResourceProfile, ValidationError> {
    ResourceProfile::from_json_value(value)
}

/// `dataclasses.asdict(profile)` as decoded JSON.
pub fn resource_profile_to_dict(profile: &ResourceProfile) -> Result<Value, ValidationError> {
    profile.to_json_value()
}

/// Loads a profile from JSON text.
pub fn resource_profile_from_json(text: &str) -> Result<ResourceProfile, ValidationError> {
    ResourceProfile::from_json_str(text)
}

/// Writes a profile as compact JSON text.
pub fn resource_profile_to_json(profile: &ResourceProfile) -> Result<String, ValidationError> {
    profile.to_json_string()
}
