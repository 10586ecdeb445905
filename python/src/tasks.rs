//! The benchmark tasks' data, seeded and identical to the command line's.

use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;
use reservoir_runtime::data::tasks::lorenz::{lorenz as lorenz_series, LorenzOptions};
use reservoir_runtime::data::tasks::mackey_glass::{
    mackey_glass as mackey_glass_series, MackeyGlassOptions,
};
use reservoir_runtime::data::tasks::memory::{memory_capacity_data, MemoryCapacityOptions};
use reservoir_runtime::data::tasks::narma::narma10 as narma10_task;

use crate::errors::IntoPy;

type Pair<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>);

/// NARMA-10: inputs u (T × 1, uniform in [0, 0.5]) and targets y (T × 1).
#[pyfunction]
#[pyo3(signature = (length, seed = 0))]
pub fn narma10(py: Python<'_>, length: usize, seed: u64) -> PyResult<Pair<'_>> {
    let data = py.detach(|| narma10_task(length, seed)).py_err()?;
    Ok((data.inputs.into_pyarray(py), data.targets.into_pyarray(py)))
}

/// The Mackey–Glass series (τ = `tau`), `length` samples.
#[pyfunction]
#[pyo3(signature = (length, tau = 17, seed = None))]
pub fn mackey_glass(
    py: Python<'_>,
    length: usize,
    tau: usize,
    seed: Option<u64>,
) -> PyResult<Bound<'_, PyArray1<f64>>> {
    let options = MackeyGlassOptions {
        tau,
        history_seed: seed,
        ..MackeyGlassOptions::default()
    };
    let series = py
        .detach(|| mackey_glass_series(length, options))
        .py_err()?;
    Ok(series.into_pyarray(py))
}

/// The Lorenz-63 system sampled every `dt` (T × 3: x, y, z).
#[pyfunction]
#[pyo3(signature = (length, dt = None))]
pub fn lorenz(
    py: Python<'_>,
    length: usize,
    dt: Option<f64>,
) -> PyResult<Bound<'_, PyArray2<f64>>> {
    let defaults = LorenzOptions::default();
    let options = LorenzOptions {
        dt: dt.unwrap_or(defaults.dt),
        ..defaults
    };
    let series = py.detach(|| lorenz_series(length, options)).py_err()?;
    Ok(series.into_pyarray(py))
}

/// Memory capacity data: inputs u (T × 1, uniform in [−0.5, 0.5]) and targets u(t − k) for
/// k = 1..=`max_delay` (T × max_delay), over `washout + train + test` rows.
#[pyfunction]
#[pyo3(signature = (max_delay, train, test, washout, seed = 0))]
pub fn memory_capacity(
    py: Python<'_>,
    max_delay: usize,
    train: usize,
    test: usize,
    washout: usize,
    seed: u64,
) -> PyResult<Pair<'_>> {
    let options = MemoryCapacityOptions {
        max_delay,
        train_len: train,
        test_len: test,
        washout,
        seed,
        ..MemoryCapacityOptions::default()
    };
    let data = py.detach(|| memory_capacity_data(&options)).py_err()?;
    Ok((data.inputs.into_pyarray(py), data.targets.into_pyarray(py)))
}
