//! The spiking (LIF) reservoir as a Python object: run inputs, and read or give its weights
//! and parameters, which is what exporting to and importing from NIR needs.

use ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use reservoir_core::lif::{LifConfig, LifParams, LifWeights};
use reservoir_core::{CsrMatrix, Reservoir};
use reservoir_runtime::{Device, Dispatch, RuntimeError, Workload};

use crate::arrays::{to_list, SequenceArrays};
use crate::config::{experiment_config, to_python};
use crate::errors::IntoPy;
use crate::runner::{placed, Held};

/// Largest recurrent matrix given out dense: 2^27 entries (1 GiB of float64, N ≈ 11 585).
const MAX_DENSE_ENTRIES: usize = 1 << 27;

/// A current-based leaky integrate-and-fire reservoir on the device its parameters name; it
/// keeps its state between runs and its weights for export.
#[pyclass(module = "reservoir._engine", frozen)]
pub struct LifReservoir {
    config: LifConfig,
    weights: LifWeights,
    placed: String,
    reservoir: Held,
}

/// The `[lif]` table of `params` with `size` and `input_size` replaced where given, and the
/// device it names.
fn lif_config(
    params: &Bound<'_, PyDict>,
    size: Option<usize>,
    input_size: usize,
) -> PyResult<(LifConfig, Device)> {
    let experiment = experiment_config(params)?;
    let mut lif = experiment
        .lif()
        .map_or_else(LifParams::default, LifConfig::to_params)
        .input_size(input_size);
    if let Some(size) = size {
        lif = lif.size(size);
    }
    let config = lif.check().map_err(|e| e.prefixed("lif")).py_err()?;
    Ok((config, experiment.device()))
}

impl LifReservoir {
    /// The reservoir that `build` makes (with the weights it runs on) through a dispatch for
    /// `device`, off the interpreter's lock.
    fn place(
        py: Python<'_>,
        (config, device): (LifConfig, Device),
        build: impl FnOnce(
                &mut Dispatch,
                &LifConfig,
            ) -> Result<(Box<dyn Reservoir>, LifWeights), RuntimeError>
            + Send,
    ) -> PyResult<Self> {
        let ((reservoir, weights), placed) = py
            .detach(|| {
                let mut dispatch = Dispatch::new(device);
                let built = build(&mut dispatch, &config)?;
                Ok::<_, RuntimeError>((built, placed(&dispatch)))
            })
            .py_err()?;
        Ok(Self {
            config,
            weights,
            placed,
            reservoir: Held::new(reservoir),
        })
    }
}

#[pymethods]
impl LifReservoir {
    /// Builds the reservoir of `params` (the `device` and `lif` tables) for `input_size`
    /// channels, with weights drawn from its seed; `steps` is the work `device="auto"` weighs.
    #[new]
    #[pyo3(signature = (params, input_size, steps = 0))]
    fn new(
        py: Python<'_>,
        params: &Bound<'_, PyDict>,
        input_size: usize,
        steps: usize,
    ) -> PyResult<Self> {
        // Drawn where the reservoir runs: on a GPU with the spectral estimate's products there.
        Self::place(
            py,
            lif_config(params, None, input_size)?,
            |dispatch, config| dispatch.lif_drawn_with_weights(config, Workload::single(steps)),
        )
    }

    /// Builds the reservoir on given weights: `recurrent` W (N × N, row = target, column =
    /// source), `input` W_in (N × K), `excitatory` (N: each neuron's sign, which W's columns
    /// must then keep, Dale's law); without it any signs are taken. The `lif` table gives the
    /// neuron parameters; its size and input size come from the weights.
    #[staticmethod]
    #[pyo3(signature = (params, recurrent, input, excitatory = None, steps = 0))]
    fn from_weights(
        py: Python<'_>,
        params: &Bound<'_, PyDict>,
        recurrent: PyReadonlyArray2<'_, f64>,
        input: PyReadonlyArray2<'_, f64>,
        excitatory: Option<Vec<bool>>,
        steps: usize,
    ) -> PyResult<Self> {
        let (recurrent, input) = (recurrent.as_array(), input.as_array());
        let placement = lif_config(params, Some(recurrent.nrows()), input.ncols())?;
        let weights = py
            .detach(|| {
                let recurrent = CsrMatrix::from_dense(&recurrent.to_owned())?;
                match excitatory {
                    Some(mask) => LifWeights::from_parts(recurrent, input.to_owned(), mask),
                    None => LifWeights::with_any_signs(recurrent, input.to_owned()),
                }
            })
            .py_err()?;
        Self::place(py, placement, |dispatch, config| {
            let reservoir = dispatch.lif(config, weights.clone(), Workload::single(steps))?;
            Ok((reservoir, weights))
        })
    }

    /// Runs `inputs` (T × K spikes or currents, one row per `dt_ms`) from the current state;
    /// returns the features (T × N).
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let inputs = inputs.as_array();
        let features = self.reservoir.with(py, |r| r.run(inputs).py_err())?;
        Ok(features.into_pyarray(py))
    }

    /// Runs every sequence from rest; returns each one's features. The reservoir is left at
    /// rest.
    fn run_many<'py>(
        &self,
        py: Python<'py>,
        inputs: SequenceArrays<'py>,
    ) -> PyResult<Vec<Bound<'py, PyArray2<f64>>>> {
        let inputs = inputs.views();
        let features = self.reservoir.run_many(py, &inputs)?;
        Ok(to_list(py, features))
    }

    /// The current features (N): traces, membrane potentials or spike counts.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let state = self.reservoir.with(py, |r| r.state().py_err())?;
        Ok(state.into_pyarray(py))
    }

    /// Back to rest: v = v_rest, currents, traces, counts and refractory periods zero.
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        self.reservoir.with(py, |r| r.reset().py_err())
    }

    /// Neurons N.
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

    /// The `[lif]` table it was built from (times in ms), `size` and `input_size` included.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.config)
    }

    /// W as a dense N × N array (row = target, column = source); refused above 2^27
    /// entries, where `recurrent_csr` gives the same matrix sparse.
    #[getter]
    fn recurrent_weights<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let n = self.config.size();
        if n.saturating_mul(n) > MAX_DENSE_ENTRIES {
            return Err(PyValueError::new_err(format!(
                "recurrent_weights: {n} x {n} is more than the {MAX_DENSE_ENTRIES} entries a \
                 dense copy may have; use recurrent_csr"
            )));
        }
        let dense: Array2<f64> = py.detach(|| self.weights.recurrent().to_dense());
        Ok(dense.into_pyarray(py))
    }

    /// W in CSR form: row pointers (N + 1), column indices and values (one per synapse).
    #[getter]
    #[allow(clippy::type_complexity)]
    fn recurrent_csr<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        Bound<'py, PyArray1<u32>>,
        Bound<'py, PyArray1<u32>>,
        Bound<'py, PyArray1<f64>>,
    ) {
        let w = self.weights.recurrent();
        (
            w.row_ptr().to_vec().into_pyarray(py),
            w.col_idx().to_vec().into_pyarray(py),
            w.values().to_vec().into_pyarray(py),
        )
    }

    /// W_in as a dense N × K array.
    #[getter]
    fn input_weights<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.weights.input().clone().into_pyarray(py)
    }

    /// Whether each neuron is excitatory (Dale's law: its outgoing weights are all ≥ 0, an
    /// inhibitory one's all ≤ 0).
    #[getter]
    fn excitatory<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        self.weights.excitatory().to_vec().into_pyarray(py)
    }
}
