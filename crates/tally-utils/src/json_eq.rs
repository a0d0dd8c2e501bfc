//! JSON equality as Python's `==` sees decoded JSON.
//!
//! stormlog compares records as Python objects, where `1 == 1.0` and
//! `True == 1`. Two deliveries of one event that differ only in that way are
//! the same event to stormlog, so they must be to tally too.

use serde_json::{Number, Value};

/// Whether Python would find the two decoded JSON values equal.
///
/// ```
/// use serde_json::json;
/// use tally_utils::json_eq::python_json_eq;
/// assert!(python_json_eq(&json!({"a": 1}), &json!({"a": 1.0})));
/// assert!(python_json_eq(&json!([true]), &json!([1])));
/// assert!(!python_json_eq(&json!("1"), &json!(1)));
/// ```
pub fn python_json_eq(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Null, Value::Null) => true,
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| python_json_eq(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(key, x)| b.get(key).is_some_and(|y| python_json_eq(x, y)))
        }
        (Value::Bool(_) | Value::Number(_), Value::Bool(_) | Value::Number(_)) => {
            numeric(left) == numeric(right)
        }
        _ => false,
    }
}

/// A number as Python compares it: integers exactly, floats exactly.
#[derive(PartialEq)]
enum Numeric {
    Integer(i128),
    Float(f64),
}

fn numeric(value: &Value) -> Numeric {
    match value {
        Value::Bool(flag) => Numeric::Integer(i128::from(*flag)),
        Value::Number(number) => from_number(number),
        // Only called on booleans and numbers.
        _ => Numeric::Float(f64::NAN),
    }
    .normalized()
}

fn from_number(number: &Number) -> Numeric {
    if let Some(unsigned) = number.as_u64() {
        Numeric::Integer(i128::from(unsigned))
    } else if let Some(signed) = number.as_i64() {
        Numeric::Integer(i128::from(signed))
    } else {
        Numeric::Float(number.as_f64().unwrap_or(f64::NAN))
    }
}

impl Numeric {
    /// A float that holds an integer exactly compares as that integer, as in
    /// Python, where `2**53 + 1 != 2.0**53` but `3 == 3.0`.
    fn normalized(self) -> Self {
        match self {
            Numeric::Float(float) if float.fract() == 0.0 && float.abs() < 1.7e38 => {
                // The range check above keeps the value inside i128, and a
                // float with no fraction converts exactly.
                Numeric::Integer(float as i128)
            }
            other => other,
        }
    }
}
