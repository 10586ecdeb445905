//! The echo-state reservoir as a Python object: run inputs, read and set its state.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use reservoir_core::{ReservoirConfig, ReservoirWeights};
use reservoir_runtime::{Dispatch, Workload};

use crate::arrays::{to_list, SequenceArrays};
use crate::config::experiment_config;
use crate::errors::IntoPy;
use crate::runner::{placed, Held};

/// An echo-state reservoir on the device its parameters name; it keeps its state between
/// runs.
#[pyclass(module = "reservoir._engine", frozen)]
pub struct EchoStateNetwork {
    config: ReservoirConfig,
    placed: String,
    reservoir: Held,
}

#[pymethods]
impl EchoStateNetwork {
    /// Builds the reservoir of `params` (the `device` and `reservoir` tables) for
    /// `input_size` channels; `steps` is the work `device="auto"` weighs.
    #[new]
    #[pyo3(signature = (params, input_size, steps = 0))]
    fn new(
        py: Python<'_>,
        params: &Bound<'_, PyDict>,
        input_size: usize,
        steps: usize,
    ) -> PyResult<Self> {
        let experiment = experiment_config(params)?;
        let config = experiment
            .reservoir()
            .to_params()
            .input_size(input_size)
            .check()
            .map_err(|e| e.prefixed("reservoir"))
            .py_err()?;
        let (reservoir, placed) = py
            .detach(|| {
                let (weights, _) = ReservoirWeights::generate(&config)?;
                let mut dispatch = Dispatch::new(experiment.device());
                let reservoir = dispatch.echo_state(&config, weights, Workload::single(steps))?;
                Ok::<_, reservoir_runtime::RuntimeError>((reservoir, placed(&dispatch)))
            })
            .py_err()?;
        Ok(Self {
            config,
            placed,
            reservoir: Held::new(reservoir),
        })
    }

    /// Runs `inputs` (T × K) from the current state; returns the states (T × N).
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let inputs = inputs.as_array();
        let states = self.reservoir.with(py, |r| r.run(inputs).py_err())?;
        Ok(states.into_pyarray(py))
    }

    /// Runs every sequence from the zero state; returns each one's states. The reservoir's
    /// own state is left as it was.
    fn run_many<'py>(
        &self,
        py: Python<'py>,
        inputs: SequenceArrays<'py>,
    ) -> PyResult<Vec<Bound<'py, PyArray2<f64>>>> {
        let inputs = inputs.views();
        let states = self.reservoir.run_many(py, &inputs)?;
        Ok(to_list(py, states))
    }

    /// The current state (N).
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let state = self.reservoir.with(py, |r| r.state().py_err())?;
        Ok(state.into_pyarray(py))
    }

    /// Sets the state (N values, finite).
    fn set_state(&self, py: Python<'_>, state: PyReadonlyArray1<'_, f64>) -> PyResult<()> {
        let state = state.as_array();
        self.reservoir.with(py, |r| r.set_state(state).py_err())
    }

    /// Sets the state to zero.
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        self.reservoir.with(py, |r| r.reset().py_err())
    }

    /// Reservoir units N.
    #[getter]
    fn size(&self) -> usize {
        self.config.size()
    }

    /// Input channels K.
    #[getter]
    fn input_size(&self) -> usize {
        self.config.input_size()
    }

    /// Where it runs: `cpu` or `cuda:N`.
    #[getter]
    fn device(&self) -> String {
        self.placed.clone()
    }
}
