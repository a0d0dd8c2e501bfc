//! JSON values between Python and Rust: a record dict becomes the
//! `serde_json::Value` tally's parsers take, and a value becomes the dict
//! stormlog's `to_record()` gives. Only the data's shape is converted here;
//! every rule about what a record may hold is tally-core's.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// A Python value as JSON, as `json.dumps` then tally's reader would see
/// it: an integer beyond 64 bits becomes the float serde_json reads from
/// its digits; `NaN` and the infinities, which JSON cannot hold, are
/// refused as tally's reader refuses them.
pub fn to_json(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    if value.is_none() {
        return Ok(Value::Null);
    }
    // bool before int: Python's True is an int too.
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if let Ok(integer) = value.cast::<PyInt>() {
        if let Ok(small) = integer.extract::<i64>() {
            return Ok(Value::from(small));
        }
        if let Ok(large) = integer.extract::<u64>() {
            return Ok(Value::from(large));
        }
        let digits = integer.str()?.to_string();
        return serde_json::from_str::<Value>(&digits)
            .map_err(|error| PyValueError::new_err(format!("integer {digits} is not JSON: {error}")));
    }
    if let Ok(float) = value.cast::<PyFloat>() {
        return Number::from_f64(float.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err("Out of range float values are not JSON compliant"));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Value::String(text.to_str()?.to_owned()));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        return dict_to_json(dict).map(Value::Object);
    }
    if let Ok(list) = value.cast::<PyList>() {
        return list.iter().map(|item| to_json(&item)).collect::<PyResult<Vec<_>>>().map(Value::Array);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return tuple.iter().map(|item| to_json(&item)).collect::<PyResult<Vec<_>>>().map(Value::Array);
    }
    Err(PyTypeError::new_err(format!("Object of type {} is not JSON serializable", value.get_type().name()?)))
}

/// A dict with string keys as a JSON object.
pub fn dict_to_json(dict: &Bound<'_, PyDict>) -> PyResult<Map<String, Value>> {
    let mut map = Map::new();
    for (key, item) in dict.iter() {
        let Ok(key) = key.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!("keys must be str, not {}", key.get_type().name()?)));
        };
        map.insert(key.to_str()?.to_owned(), to_json(&item)?);
    }
    Ok(map)
}

/// A JSON value as the Python object `json.loads` gives.
pub fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Value::Number(number) => {
            if let Some(unsigned) = number.as_u64() {
                unsigned.into_pyobject(py)?.into_any()
            } else if let Some(signed) = number.as_i64() {
                signed.into_pyobject(py)?.into_any()
            } else {
                // A serde_json number is one of the three.
                number.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(text) => PyString::new(py, text).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => map_to_python(py, map)?.into_any(),
    })
}

/// A JSON object as a dict.
pub fn map_to_python<'py>(py: Python<'py>, map: &Map<String, Value>) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, item) in map {
        dict.set_item(key, to_python(py, item)?)?;
    }
    Ok(dict)
}
