//! Next-generation reservoir computing's features as a Python object: run inputs, continuing
//! the inputs it has seen.

use std::sync::Mutex;

use numpy::{IntoPyArray, PyArray2, PyReadonlyArray2};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use reservoir_core::nvar::{self, NvarParams};

use crate::errors::IntoPy;

/// NVAR features (ReservoirPy's names and feature order).
#[pyclass(module = "reservoir._engine", frozen)]
pub struct Nvar {
    nvar: Mutex<nvar::Nvar>,
}

#[pymethods]
impl Nvar {
    /// The features of `delay` inputs taken every `strides` steps from `input_size` channels,
    /// and their monomials of degree `order`.
    #[new]
    fn new(delay: usize, order: usize, strides: usize, input_size: usize) -> PyResult<Self> {
        let config = NvarParams::new()
            .delay(delay)
            .order(order)
            .strides(strides)
            .input_size(input_size)
            .check()
            .map_err(|e| e.prefixed("nvar"))
            .py_err()?;
        let nvar = nvar::Nvar::new(&config).py_err()?;
        Ok(Self {
            nvar: Mutex::new(nvar),
        })
    }

    /// The features (T × width) after each row of `inputs` (T × K), continuing from the
    /// inputs seen before.
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let inputs = inputs.as_array();
        let features = py.detach(|| self.with(|nvar| nvar.run(inputs).py_err()))??;
        Ok(features.into_pyarray(py))
    }

    /// Forgets the inputs seen.
    fn reset(&self) -> PyResult<()> {
        self.with(nvar::Nvar::reset)
    }

    /// Features a step.
    #[getter]
    fn width(&self) -> PyResult<usize> {
        self.with(|n| n.config().width())
    }

    /// Values of the linear part (`delay · input_size`).
    #[getter]
    fn linear_width(&self) -> PyResult<usize> {
        self.with(|n| n.config().linear_width())
    }
}

impl Nvar {
    /// `f` on the NVAR, one call at a time.
    fn with<T>(&self, f: impl FnOnce(&mut nvar::Nvar) -> T) -> PyResult<T> {
        let mut nvar = self
            .nvar
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the NVAR failed in another call"))?;
        Ok(f(&mut nvar))
    }
}
