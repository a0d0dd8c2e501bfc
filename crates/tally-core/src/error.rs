//! The one error type of the event model: a value broke a rule of the model.

use std::borrow::Cow;

/// A record or value broke one rule of the event model.
///
/// The message names the field and the rule, in the words stormlog uses, so a
/// person comparing the two tools sees the same reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ValidationError {
    field: Cow<'static, str>,
    message: String,
}

impl ValidationError {
    /// An error about `field`, with a message that names the broken rule.
    pub fn new(field: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }

    /// The field (or record part) the rule is about, e.g. `end_ns` or `context`.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The human-readable reason.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn non_empty(field: impl Into<Cow<'static, str>>) -> Self {
        let field = field.into();
        let message = format!("{field} must be a non-empty string");
        Self { field, message }
    }

    pub(crate) fn non_negative(field: impl Into<Cow<'static, str>>, nullable: bool) -> Self {
        let field = field.into();
        let tail = if nullable { " or null" } else { "" };
        let message = format!("{field} must be a non-negative integer{tail}");
        Self { field, message }
    }
}

/// The longest value an error message quotes whole.
const SHOWN_BYTES: usize = 200;

/// A value as an error message quotes it: whole when it is short (as the
/// reference tools quote it), else its first characters, an ellipsis and
/// its length, so that a 64 MB bad value is not echoed into the error.
///
/// ```
/// assert_eq!(tally_core::shown("infer.nope"), "infer.nope");
/// let long = "x".repeat(1_000_000);
/// assert_eq!(tally_core::shown(&long), format!("{}… (1000000 bytes)", "x".repeat(64)));
/// ```
pub fn shown(text: &str) -> Cow<'_, str> {
    if text.len() <= SHOWN_BYTES {
        return Cow::Borrowed(text);
    }
    let mut end = 64;
    // A char boundary at or before byte 64: UTF-8 is at most 4 bytes a char.
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}… ({} bytes)", &text[..end], text.len()))
}
