//! Readouts on states the caller holds: ridge regression and recursive least squares.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use reservoir_core::readout::{ridge_from_rows, LinearReadout, Rls as RlsState};

use crate::errors::IntoPy;

/// A trained linear readout: outputs = states · weights + intercept.
#[pyclass(module = "reservoir._engine", frozen)]
pub struct Readout {
    readout: LinearReadout,
}

#[pymethods]
impl Readout {
    /// Ridge regression of `targets` (T × M) on `states` (T × F), the intercept not
    /// penalised.
    #[staticmethod]
    #[pyo3(signature = (states, targets, ridge = 1e-6))]
    fn ridge(
        py: Python<'_>,
        states: PyReadonlyArray2<'_, f64>,
        targets: PyReadonlyArray2<'_, f64>,
        ridge: f64,
    ) -> PyResult<Self> {
        let (states, targets) = (states.as_array(), targets.as_array());
        let readout = py
            .detach(|| ridge_from_rows(states, targets, ridge, reservoir_core::Par::all()))
            .py_err()?;
        Ok(Self { readout })
    }

    /// The outputs for `states` (T × F): T × M.
    fn predict<'py>(
        &self,
        py: Python<'py>,
        states: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let states = states.as_array();
        let outputs = py.detach(|| self.readout.predict(states)).py_err()?;
        Ok(outputs.into_pyarray(py))
    }

    /// F × M.
    #[getter]
    fn weights<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.readout.weights().clone().into_pyarray(py)
    }

    /// M.
    #[getter]
    fn intercept<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.readout.intercept().clone().into_pyarray(py)
    }
}

/// Recursive least squares: a readout learned one (state, target) pair at a time.
#[pyclass(module = "reservoir._engine")]
pub struct Rls {
    rls: RlsState,
}

#[pymethods]
impl Rls {
    /// A readout of `n_features` → `n_outputs`, forgetting factor in (0, 1], initial
    /// inverse-correlation scale `delta` > 0.
    #[new]
    #[pyo3(signature = (n_features, n_outputs, forgetting = 1.0, delta = 1.0))]
    fn new(n_features: usize, n_outputs: usize, forgetting: f64, delta: f64) -> PyResult<Self> {
        let rls = RlsState::new(n_features, n_outputs, forgetting, delta).py_err()?;
        Ok(Self { rls })
    }

    /// Learns from one pair; returns the error made before the update.
    fn update<'py>(
        &mut self,
        py: Python<'py>,
        state: PyReadonlyArray1<'py, f64>,
        target: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let error = self
            .rls
            .update(state.as_array(), target.as_array())
            .py_err()?;
        Ok(error.into_pyarray(py))
    }

    /// The output for one state.
    fn predict<'py>(
        &self,
        py: Python<'py>,
        state: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let output = self.rls.predict(state.as_array()).py_err()?;
        Ok(output.into_pyarray(py))
    }

    /// The readout learned so far.
    fn readout(&self) -> PyResult<Readout> {
        Ok(Readout {
            readout: self.rls.readout().py_err()?,
        })
    }
}
