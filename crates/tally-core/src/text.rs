//! Strings that the model requires to be non-empty.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

use crate::ValidationError;

/// A string that is never empty. Every identifier and name in the event model
/// is one of these, so an empty ID cannot exist after construction.
///
/// ```
/// use tally_core::NonEmptyString;
/// assert!(NonEmptyString::new("gpu-0").is_ok());
/// assert!(NonEmptyString::new("").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NonEmptyString(String);

impl NonEmptyString {
    /// Validates that `value` is not empty.
    pub fn new(value: impl Into<String>) -> Result<Self, ValidationError> {
        Self::for_field(value, "value")
    }

    /// Like [`NonEmptyString::new`], naming `field` in the error.
    pub fn for_field(value: impl Into<String>, field: &'static str) -> Result<Self, ValidationError> {
        let value = value.into();
        if value.is_empty() {
            return Err(ValidationError::non_empty(field));
        }
        Ok(Self(value))
    }

    /// The string itself.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Gives the `String` back.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl Deref for NonEmptyString {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for NonEmptyString {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for NonEmptyString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for NonEmptyString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl TryFrom<String> for NonEmptyString {
    type Error = ValidationError;
    fn try_from(value: String) -> Result<Self, ValidationError> {
        Self::new(value)
    }
}

impl TryFrom<&str> for NonEmptyString {
    type Error = ValidationError;
    fn try_from(value: &str) -> Result<Self, ValidationError> {
        Self::new(value)
    }
}

impl From<NonEmptyString> for String {
    fn from(value: NonEmptyString) -> String {
        value.0
    }
}

impl PartialEq<str> for NonEmptyString {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for NonEmptyString {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}
