//! The reservoir a trained model runs on, built on first use for the device asked for and
//! kept for the next call on the same device (a GPU's start-up is paid once).

use std::sync::Mutex;

use ndarray::ArrayView2;
use pyo3::exceptions::PyRuntimeError;
use pyo3::PyResult;
use reservoir_core::architecture::{Architecture, ArchitectureWeights};
use reservoir_core::Reservoir;
use reservoir_runtime::{Device, Dispatch};

use crate::arrays::workload;
use crate::errors::IntoPy;

/// A reservoir kept between calls, with the device it was built for and where it runs.
#[derive(Default)]
pub struct Runner {
    built: Mutex<Option<Built>>,
}

struct Built {
    asked: Device,
    placed: String,
    reservoir: Box<dyn Reservoir>,
}

impl Runner {
    /// Runs `body` on the reservoir `architecture` describes, on its `weights`, on `device`
    /// (built when none is kept for it; `sequences` are the work `auto` weighs); returns its
    /// result and where it ran (`cpu`, `cuda:N`).
    pub fn with<T>(
        &self,
        architecture: &Architecture,
        weights: &ArchitectureWeights,
        device: Device,
        sequences: &[ArrayView2<f64>],
        body: impl FnOnce(&mut dyn Reservoir) -> PyResult<T>,
    ) -> PyResult<(T, String)> {
        let mut built = self
            .built
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the model's reservoir failed in another call"))?;
        if built.as_ref().is_none_or(|b| b.asked != device) {
            let mut dispatch = Dispatch::new(device);
            let reservoir = dispatch
                .build(architecture, weights, workload(sequences))
                .py_err()?;
            let placed = placed(&dispatch);
            *built = Some(Built {
                asked: device,
                placed,
                reservoir,
            });
        }
        let Some(built) = built.as_mut() else {
            return Err(PyRuntimeError::new_err("no reservoir was built"));
        };
        let result = body(built.reservoir.as_mut())?;
        Ok((result, built.placed.clone()))
    }
}

/// Where the last reservoir `dispatch` built runs: `cpu` or `cuda:N`.
pub fn placed(dispatch: &Dispatch) -> String {
    dispatch
        .placements()
        .last()
        .map_or_else(|| "cpu".to_string(), |(_, p)| p.name())
}

/// `text` as a device (`auto`, `cpu`, `cuda`, `cuda:N`).
pub fn device(text: &str) -> PyResult<Device> {
    text.parse().map_err(|message: String| {
        pyo3::exceptions::PyValueError::new_err(format!("device: {message}"))
    })
}

/// A reservoir object's own reservoir, one call at a time, run without the GIL.
pub struct Held(Mutex<Box<dyn Reservoir>>);

impl Held {
    /// Holds `reservoir`.
    pub fn new(reservoir: Box<dyn Reservoir>) -> Self {
        Self(Mutex::new(reservoir))
    }

    /// Runs `body` on the reservoir, without the GIL.
    pub fn with<T: Send>(
        &self,
        py: pyo3::Python<'_>,
        body: impl FnOnce(&mut dyn Reservoir) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut reservoir = self
                .0
                .lock()
                .map_err(|_| PyRuntimeError::new_err("the reservoir failed in another call"))?;
            body(reservoir.as_mut())
        })
    }

    /// The outputs of every one of `inputs`, each run from the zero state.
    pub fn run_many(
        &self,
        py: pyo3::Python<'_>,
        inputs: &[ArrayView2<f64>],
    ) -> PyResult<Vec<ndarray::Array2<f64>>> {
        self.with(py, |r| {
            let mut outputs = Vec::with_capacity(inputs.len());
            r.run_many(inputs, &mut |_, o| {
                outputs.push(o.to_owned());
                Ok(())
            })
            .py_err()?;
            Ok(outputs)
        })
    }
}
