//! Reading typed fields out of a JSON object with stormlog's rules.
//!
//! stormlog builds its dataclasses with `Class(**record)`, so a missing
//! required field, an unexpected field and a wrong type are all rejections.
//! A field whose default is `None` may be absent or `null`; a field with any
//! other default (a list, an object, `"unknown"`) may be absent but not `null`.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::{EntityRef, NonEmptyString, ValidationError};

pub(crate) struct Fields {
    map: Map<String, Value>,
}

pub(crate) fn expect_object(value: Value, what: &'static str) -> Result<Map<String, Value>, ValidationError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(ValidationError::new(what, format!("{what} must be an object"))),
    }
}

fn missing(name: &'static str) -> ValidationError {
    ValidationError::new(name, format!("missing required field {name}"))
}

/// A JSON integer that fits in `i128`, or `None` for any other value:
/// Python's `isinstance(x, int)` on a decoded JSON value, as stormlog's
/// checks apply it (booleans and floats are not integers here).
///
/// ```
/// use serde_json::json;
/// assert_eq!(tally_core::json_integer(&json!(-3)), Some(-3));
/// assert_eq!(tally_core::json_integer(&json!(3.0)), None);
/// assert_eq!(tally_core::json_integer(&json!(true)), None);
/// ```
pub fn json_integer(value: &Value) -> Option<i128> {
    match value {
        Value::Number(number) => number.as_u64().map(i128::from).or_else(|| number.as_i64().map(i128::from)),
        _ => None,
    }
}

pub(crate) fn to_u64(value: &Value, name: &'static str, nullable: bool) -> Result<u64, ValidationError> {
    match json_integer(value) {
        Some(integer) => u64::try_from(integer).map_err(|_| ValidationError::non_negative(name, nullable)),
        None => Err(ValidationError::non_negative(name, nullable)),
    }
}

impl Fields {
    pub(crate) fn new(map: Map<String, Value>) -> Self {
        Self { map }
    }

    pub(crate) fn take(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name)
    }

    /// A present, non-null value.
    fn present(&mut self, name: &'static str) -> Option<Value> {
        match self.map.remove(name) {
            None | Some(Value::Null) => None,
            Some(value) => Some(value),
        }
    }

    pub(crate) fn required_string(&mut self, name: &'static str) -> Result<NonEmptyString, ValidationError> {
        match self.map.remove(name) {
            None => Err(missing(name)),
            Some(Value::String(text)) => NonEmptyString::for_field(text, name),
            Some(_) => Err(ValidationError::non_empty(name)),
        }
    }

    pub(crate) fn optional_string(
        &mut self,
        name: &'static str,
    ) -> Result<Option<NonEmptyString>, ValidationError> {
        match self.present(name) {
            None => Ok(None),
            Some(Value::String(text)) => NonEmptyString::for_field(text, name).map(Some),
            Some(_) => Err(ValidationError::non_empty(name)),
        }
    }

    /// A required string that must be one of `allowed`; returns its index.
    pub(crate) fn required_choice(
        &mut self,
        name: &'static str,
        allowed: &[&str],
        message: &str,
    ) -> Result<usize, ValidationError> {
        match self.map.remove(name) {
            None => Err(missing(name)),
            Some(value) => choice(&value, name, allowed, message),
        }
    }

    pub(crate) fn defaulted_choice(
        &mut self,
        name: &'static str,
        allowed: &[&str],
        default: usize,
        message: &str,
    ) -> Result<usize, ValidationError> {
        match self.map.remove(name) {
            None => Ok(default),
            Some(value) => choice(&value, name, allowed, message),
        }
    }

    pub(crate) fn required_u64(&mut self, name: &'static str) -> Result<u64, ValidationError> {
        match self.map.remove(name) {
            None => Err(missing(name)),
            Some(value) => to_u64(&value, name, false),
        }
    }

    pub(crate) fn optional_u64(&mut self, name: &'static str) -> Result<Option<u64>, ValidationError> {
        match self.present(name) {
            None => Ok(None),
            Some(value) => to_u64(&value, name, true).map(Some),
        }
    }

    /// [`Self::optional_u64`] of the field `name`, whose error names
    /// `shown` instead (stormlog's wording for a field it checks under
    /// another name).
    pub(crate) fn optional_u64_shown_as(
        &mut self,
        name: &'static str,
        shown: &'static str,
    ) -> Result<Option<u64>, ValidationError> {
        match self.present(name) {
            None => Ok(None),
            Some(value) => to_u64(&value, shown, true).map(Some),
        }
    }

    pub(crate) fn required_i64(&mut self, name: &'static str) -> Result<i64, ValidationError> {
        let value = self.map.remove(name).ok_or_else(|| missing(name))?;
        json_integer(&value)
            .and_then(|integer| i64::try_from(integer).ok())
            .ok_or_else(|| ValidationError::new(name, format!("{name} must be an integer")))
    }

    pub(crate) fn required_bool(&mut self, name: &'static str) -> Result<bool, ValidationError> {
        match self.map.remove(name) {
            None => Err(missing(name)),
            Some(Value::Bool(flag)) => Ok(flag),
            Some(_) => Err(ValidationError::new(name, format!("{name} must be a boolean"))),
        }
    }

    pub(crate) fn required_ref(&mut self, name: &'static str) -> Result<EntityRef, ValidationError> {
        match self.map.remove(name) {
            None => Err(missing(name)),
            Some(Value::Null) => Err(ValidationError::new(name, format!("{name} must be an EntityRef"))),
            Some(value) => EntityRef::from_json(value, name),
        }
    }

    pub(crate) fn optional_ref(&mut self, name: &'static str) -> Result<Option<EntityRef>, ValidationError> {
        match self.present(name) {
            None => Ok(None),
            Some(value) => EntityRef::from_json(value, name).map(Some),
        }
    }

    /// A list of non-empty, distinct strings that defaults to empty.
    pub(crate) fn name_list(&mut self, name: &'static str) -> Result<Vec<NonEmptyString>, ValidationError> {
        let Some(value) = self.map.remove(name) else {
            return Ok(Vec::new());
        };
        let bad = || ValidationError::new(name, format!("{name} must be a list of non-empty strings"));
        let Value::Array(items) = value else {
            return Err(bad());
        };
        let mut names = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Value::String(text) if !text.is_empty() => names.push(NonEmptyString::for_field(text, name)?),
                _ => return Err(bad()),
            }
        }
        let mut sorted: Vec<&str> = names.iter().map(NonEmptyString::as_str).collect();
        sorted.sort_unstable();
        if sorted.windows(2).any(|pair| pair[0] == pair[1]) {
            return Err(ValidationError::new(name, format!("{name} must not contain duplicates")));
        }
        Ok(names)
    }

    /// Fails on the first field nobody took, as `Class(**record)` would.
    pub(crate) fn finish(self, what: &str) -> Result<(), ValidationError> {
        match self.map.into_iter().next() {
            None => Ok(()),
            Some((key, _)) => Err(ValidationError::new(
                Cow::Owned(key.clone()),
                format!("invalid {what} record: unexpected field {:?}", crate::shown(&key)),
            )),
        }
    }
}

fn choice(
    value: &Value,
    name: &'static str,
    allowed: &[&str],
    message: &str,
) -> Result<usize, ValidationError> {
    value
        .as_str()
        .and_then(|text| allowed.iter().position(|candidate| *candidate == text))
        .ok_or_else(|| ValidationError::new(name, message.to_owned()))
}
