//! Parameters from Python as a checked config: a dict of config tables (`{"device": "cpu",
//! "reservoir": {"size": 500}, "readout": {"ridge": 1e-6}}`) read by the same code as a
//! config file, so the same values pass or fail with the same messages.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use reservoir_runtime::config::{ExperimentConfig, ExperimentParams};
use toml::{Table, Value};

use crate::errors::IntoPy;

/// `params` (a dict of tables, `None` values left out) as a checked config.
pub fn experiment_config(params: &Bound<'_, PyDict>) -> PyResult<ExperimentConfig> {
    let table = table(params, "")?;
    let params: ExperimentParams =
        serde_path_to_error::deserialize(Value::Table(table)).map_err(|e| {
            PyValueError::new_err(format!("`{}`: {}", e.path(), e.inner().message().trim()))
        })?;
    params.check().py_err()
}

/// A dict as a TOML table; `path` names where it is, for messages.
fn table(dict: &Bound<'_, PyDict>, path: &str) -> PyResult<Table> {
    let mut table = Table::new();
    for (key, value) in dict.iter() {
        let key: String = key
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("{path}: keys must be strings")))?;
        let here = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        if let Some(value) = toml_value(&value, &here)? {
            table.insert(key, value);
        }
    }
    Ok(table)
}

/// A Python value as a TOML value (`None`: left out, so the key takes its default).
fn toml_value(value: &Bound<'_, PyAny>, path: &str) -> PyResult<Option<Value>> {
    if value.is_none() {
        return Ok(None);
    }
    let converted = if value.is_instance_of::<PyBool>() {
        Value::Boolean(value.extract()?)
    } else if value.is_instance_of::<PyInt>() {
        let integer: i64 = value.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "`{path}`: {value} is beyond the range of a 64-bit integer"
            ))
        })?;
        Value::Integer(integer)
    } else if value.is_instance_of::<PyFloat>() {
        Value::Float(value.extract()?)
    } else if value.is_instance_of::<PyString>() {
        Value::String(value.extract()?)
    } else if let Ok(dict) = value.cast::<PyDict>() {
        Value::Table(table(dict, path)?)
    } else if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in value.try_iter()?.enumerate() {
            let item = item?;
            match toml_value(&item, &format!("{path}[{i}]"))? {
                Some(item) => items.push(item),
                None => {
                    return Err(PyTypeError::new_err(format!(
                        "`{path}[{i}]`: None is not a value"
                    )))
                }
            }
        }
        Value::Array(items)
    } else if let Ok(number) = value.extract::<f64>() {
        // NumPy scalars and other numbers: integers stay integers.
        match value.extract::<i64>() {
            Ok(integer) if value.hasattr("__index__")? => Value::Integer(integer),
            _ => Value::Float(number),
        }
    } else {
        return Err(PyTypeError::new_err(format!(
            "`{path}`: expected a number, a string, a bool, a list or a dict, got {}",
            value.get_type().name()?
        )));
    };
    Ok(Some(converted))
}

/// `value` (what a config type serializes to) as a Python dict.
pub fn to_python<'py>(
    py: Python<'py>,
    value: &impl serde::Serialize,
) -> PyResult<Bound<'py, PyAny>> {
    let value = Value::try_from(value)
        .map_err(|e| PyValueError::new_err(format!("cannot describe the parameters: {e}")))?;
    python_value(py, &value)
}

fn python_value<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Integer(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Datetime(d) => d.to_string().into_pyobject(py)?.into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(python_value(py, item)?)?;
            }
            list.into_any()
        }
        Value::Table(table) => {
            let dict = PyDict::new(py);
            for (key, item) in table {
                dict.set_item(key, python_value(py, item)?)?;
            }
            dict.into_any()
        }
    })
}
