//! Engine errors as Python exceptions: a bad argument or file content is a `ValueError`, a
//! missing or unreadable file an `OSError`, a job too large for memory a `MemoryError`, and a
//! GPU that fails or is missing `reservoir.GpuError`. The message is the one the command line
//! prints after `error: `.

use std::io::ErrorKind;

use pyo3::exceptions::{
    PyFileNotFoundError, PyMemoryError, PyOSError, PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use reservoir_core::ReservoirError;
use reservoir_runtime::error::DataError;
use reservoir_runtime::RuntimeError;

pyo3::create_exception!(
    reservoir,
    GpuError,
    PyRuntimeError,
    "A GPU was asked for and is missing, unusable or failed (out of memory, driver, cuBLAS)."
);

/// An engine error as the Python exception a caller can act on.
pub fn to_py(error: impl Into<RuntimeError>) -> PyErr {
    let error = error.into();
    let message = error.to_string();
    match &error {
        RuntimeError::Gpu(_) | RuntimeError::Device { .. } => GpuError::new_err(message),
        RuntimeError::Core(core) => core_to_py(core, message),
        RuntimeError::Io { source, .. } => io_to_py(source, message),
        RuntimeError::Data(data) => match data.as_ref() {
            DataError::Read { source, .. } => io_to_py(source, message),
            DataError::DataTooLarge { .. } => PyMemoryError::new_err(message),
            _ => PyValueError::new_err(message),
        },
        _ => PyValueError::new_err(message),
    }
}

fn io_to_py(error: &std::io::Error, message: String) -> PyErr {
    match error.kind() {
        ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
        ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
        _ => PyOSError::new_err(message),
    }
}

fn core_to_py(error: &ReservoirError, message: String) -> PyErr {
    match error {
        ReservoirError::OutOfMemory { .. } => PyMemoryError::new_err(message),
        ReservoirError::Backend { .. } => GpuError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// The engine's `Result` as a Python one.
pub trait IntoPy<T> {
    /// The error, if any, as a Python exception.
    fn py_err(self) -> PyResult<T>;
}

impl<T, E: Into<RuntimeError>> IntoPy<T> for Result<T, E> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
