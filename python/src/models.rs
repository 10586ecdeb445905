//! Trained models: fitted from Python, saved and loaded as the same files the command line
//! writes and reads, and pickled as those files' bytes.
//!
//! Every sequence runs from the zero state, in fitting and in prediction, so a prediction
//! depends only on its inputs (the command line's `predict --reset`), unless it is asked to
//! continue from the model's saved state (the end of the last training series, or of the
//! command line's fit).

use std::io::Read;
use std::path::{Path, PathBuf};

use ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::types::PyDict;
use reservoir_core::features::FeatureParams;
use reservoir_runtime::config::ModelParams;
use reservoir_runtime::jobs::predict::{continue_from, generate};
use reservoir_runtime::jobs::sequences::{self, Labelled, Series};
use reservoir_runtime::model::{Model, SequenceClassifier, SEQUENCE_MAGIC, SPIKE_MAGIC};
use reservoir_runtime::{Dispatch, RuntimeError};

use crate::arrays::{ids, to_list, SequenceArrays};
use crate::config::{experiment_config, to_python};
use crate::errors::IntoPy;
use crate::runner::{device, placed, Runner};

/// A ridge readout over the states of many series (`reservoir fit --targets`).
#[pyclass(module = "reservoir._engine", frozen)]
pub struct SeriesModel {
    model: Model,
    runner: Runner,
}

/// A classifier of whole sequences (`reservoir fit --label-column`).
#[pyclass(module = "reservoir._engine", frozen)]
pub struct ClassifierModel {
    model: SequenceClassifier,
    runner: Runner,
}

/// Fits a readout over `inputs` (series, each Tᵢ × K) to `targets` (Tᵢ × M) as `params`
/// say; returns the model and where it ran.
#[pyfunction]
pub fn fit_series(
    py: Python<'_>,
    params: &Bound<'_, PyDict>,
    inputs: SequenceArrays<'_>,
    targets: SequenceArrays<'_>,
    input_columns: Vec<String>,
    target_columns: Vec<String>,
) -> PyResult<(SeriesModel, String)> {
    let config = experiment_config(params)?;
    let (inputs, targets) = (inputs.views(), targets.views());
    let ids = ids(inputs.len());
    let (model, placed) = py
        .detach(|| {
            let mut dispatch = Dispatch::new(config.device())
                .with_devices(config.devices().cloned())
                .with_batch_math(config.gpu_matmul());
            let outcome = sequences::fit_series(
                &config,
                &input_columns,
                &target_columns,
                Series {
                    ids: &ids,
                    inputs: &inputs,
                    targets: &targets,
                },
                None,
                &mut dispatch,
                &mut |_, _, _| {},
            )?;
            Ok::<_, RuntimeError>((outcome.model, placed(&dispatch)))
        })
        .py_err()?;
    Ok((SeriesModel::new(model), placed))
}

/// Fits a classifier of `inputs` (sequences, each Tᵢ × K) with one label each as `params`
/// say, the labels' NumPy dtype kept in the model; returns the model and where it ran.
#[pyfunction]
pub fn fit_classifier(
    py: Python<'_>,
    params: &Bound<'_, PyDict>,
    inputs: SequenceArrays<'_>,
    labels: Vec<String>,
    input_columns: Vec<String>,
    label_dtype: String,
) -> PyResult<(ClassifierModel, String)> {
    let config = experiment_config(params)?;
    let inputs = inputs.views();
    let ids = ids(inputs.len());
    let (model, placed) = py
        .detach(|| {
            let mut dispatch = Dispatch::new(config.device())
                .with_devices(config.devices().cloned())
                .with_batch_math(config.gpu_matmul());
            let outcome = sequences::fit_classifier(
                &config,
                &input_columns,
                Labelled {
                    ids: &ids,
                    inputs: &inputs,
                    labels: &labels,
                },
                None,
                &mut dispatch,
                &mut |_, _, _| {},
            )?;
            Ok::<_, RuntimeError>((outcome.model, placed(&dispatch)))
        })
        .py_err()?;
    let model = SequenceClassifier {
        label_dtype: Some(label_dtype),
        ..model
    };
    Ok((ClassifierModel::new(model), placed))
}

/// Loads a model file of either kind the command line writes from sequences: a
/// `SeriesModel` or a `ClassifierModel`.
#[pyfunction]
pub fn load(py: Python<'_>, path: PathBuf) -> PyResult<Py<PyAny>> {
    match magic_bytes(&path) {
        Some(SEQUENCE_MAGIC) => {
            let model = py.detach(|| SequenceClassifier::load(&path)).py_err()?;
            Ok(Py::new(py, ClassifierModel::new(model))?.into_any())
        }
        Some(SPIKE_MAGIC) => Err(PyValueError::new_err(format!(
            "{}: a spike-classifier model (from `reservoir run` on a spike_classification \
             config) is not loaded from Python; `reservoir predict` runs it",
            path.display()
        ))),
        // A series model, or a file that is none (missing, short, foreign): the loader
        // says which.
        _ => {
            let model = py.detach(|| Model::load(&path)).py_err()?;
            Ok(Py::new(py, SeriesModel::new(model))?.into_any())
        }
    }
}

/// A model from the bytes `to_bytes` gave (a pickled estimator's): a `SeriesModel` or a
/// `ClassifierModel`.
#[pyfunction]
pub fn model_from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Py<PyAny>> {
    let origin = Path::new("(pickled model)");
    if data.starts_with(&SEQUENCE_MAGIC) {
        let model = py
            .detach(|| SequenceClassifier::from_bytes(data, origin))
            .py_err()?;
        return Ok(Py::new(py, ClassifierModel::new(model))?.into_any());
    }
    let model = py.detach(|| Model::from_bytes(data, origin)).py_err()?;
    Ok(Py::new(py, SeriesModel::new(model))?.into_any())
}

/// The first eight bytes of the file at `path`, when it has them.
fn magic_bytes(path: &Path) -> Option<[u8; 8]> {
    let mut magic = [0u8; 8];
    let mut file = std::fs::File::open(path).ok()?;
    file.read_exact(&mut magic).ok()?;
    Some(magic)
}

impl SeriesModel {
    fn new(model: Model) -> Self {
        Self {
            model,
            runner: Runner::default(),
        }
    }
}

#[pymethods]
impl SeriesModel {
    /// The predictions for every row of every series, on `device`; returns them and where
    /// they ran. Each series runs from the zero state, or with `continue_state` (one series)
    /// from the model's saved state.
    #[pyo3(signature = (inputs, device = "auto", continue_state = false))]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        inputs: SequenceArrays<'py>,
        device: &str,
        continue_state: bool,
    ) -> PyResult<(Vec<Bound<'py, PyArray2<f64>>>, String)> {
        let device = self::device(device)?;
        let inputs = inputs.views();
        let architecture = &self.model.architecture;
        let (predictions, placed) = py.detach(|| {
            self.runner.with(
                &self.model.architecture,
                &self.model.weights,
                device,
                &inputs,
                |reservoir| match (continue_state, inputs.as_slice()) {
                    (false, _) => architecture
                        .predict_series(reservoir, &self.model.readout, &inputs, &mut |_, _| {})
                        .py_err(),
                    (true, [series]) => {
                        let mut from = continue_from(reservoir, &self.model).py_err()?;
                        let rows = architecture.predict(
                            reservoir,
                            &self.model.readout,
                            *series,
                            &mut from,
                            &mut |_, _| {},
                        );
                        reservoir.reset().py_err()?;
                        Ok(vec![rows.py_err()?])
                    }
                    (true, _) => Err(PyValueError::new_err(format!(
                        "continue_state: one series continues the saved state, got {}",
                        inputs.len()
                    ))),
                },
            )
        })?;
        Ok((to_list(py, predictions), placed))
    }

    /// The `steps` values that follow the saved state in closed loop (each prediction fed back
    /// as the next input), after running through `context` (rows that continue the series)
    /// when given; on `device`. Returns them (steps × outputs) and where they ran.
    #[pyo3(signature = (steps, context = None, device = "auto"))]
    fn generate<'py>(
        &self,
        py: Python<'py>,
        steps: usize,
        context: Option<PyReadonlyArray2<'py, f64>>,
        device: &str,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, String)> {
        let device = self::device(device)?;
        let context = context.as_ref().map(|c| c.as_array());
        let work: Vec<_> = context.iter().copied().collect();
        let (values, placed) = py.detach(|| {
            self.runner.with(
                &self.model.architecture,
                &self.model.weights,
                device,
                &work,
                |reservoir| {
                    let values = generate(reservoir, &self.model, context, steps);
                    reservoir.reset().py_err()?;
                    values.py_err()
                },
            )
        })?;
        Ok((values.into_pyarray(py), placed))
    }

    /// The model file's bytes (what `save` writes; `model_from_bytes` reads them).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.detach(|| self.model.to_bytes()).py_err()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The saved state (N): where `continue_state` and `generate` start.
    #[getter]
    fn state<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.model.state.clone().into_pyarray(py)
    }

    /// Writes the model file (`reservoir predict --model` reads it).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.model.save(&path)).py_err()
    }

    /// The reservoir's parameters (a `[reservoir]` table).
    #[getter]
    fn reservoir_params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &ModelParams::describing(&self.model.architecture).0)
    }

    /// The model's reservoir kind, links and plasticity (a `[model]` table).
    #[getter]
    fn model_params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &ModelParams::describing(&self.model.architecture).1)
    }

    /// Names of the input columns.
    #[getter]
    fn input_columns(&self) -> Vec<String> {
        self.model.input_columns.clone()
    }

    /// Names of the target columns.
    #[getter]
    fn target_columns(&self) -> Vec<String> {
        self.model.target_columns.clone()
    }

    /// The readout's weights, N × M.
    #[getter]
    fn readout_weights<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.model.readout.weights().clone().into_pyarray(py)
    }

    /// The readout's intercept, M.
    #[getter]
    fn intercept<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.model.readout.intercept().clone().into_pyarray(py)
    }
}

impl ClassifierModel {
    fn new(model: SequenceClassifier) -> Self {
        Self {
            model,
            runner: Runner::default(),
        }
    }

    /// What the readout sees of every sequence (B × features), on `device`; and where
    /// they ran.
    fn features(
        &self,
        py: Python<'_>,
        inputs: &SequenceArrays<'_>,
        device: &str,
    ) -> PyResult<(Array2<f64>, String)> {
        let device = self::device(device)?;
        let inputs = inputs.views();
        py.detach(|| {
            self.runner.with(
                &self.model.architecture,
                &self.model.weights,
                device,
                &inputs,
                |reservoir| {
                    reservoir
                        .sequence_features(&inputs, &self.model.features, &mut |_, _| {})
                        .py_err()
                },
            )
        })
    }
}

#[pymethods]
impl ClassifierModel {
    /// The readout's output for every sequence and class (B × classes), on `device`.
    #[pyo3(signature = (inputs, device = "auto"))]
    fn decision_function<'py>(
        &self,
        py: Python<'py>,
        inputs: SequenceArrays<'py>,
        device: &str,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, String)> {
        let (features, placed) = self.features(py, &inputs, device)?;
        let outputs = py
            .detach(|| self.model.readout.predict(features.view()))
            .py_err()?;
        Ok((outputs.into_pyarray(py), placed))
    }

    /// Writes the model file (`reservoir predict --model` reads it).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.model.save(&path)).py_err()
    }

    /// The reservoir's parameters (a `[reservoir]` table).
    #[getter]
    fn reservoir_params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &ModelParams::describing(&self.model.architecture).0)
    }

    /// The model's reservoir kind, links and plasticity (a `[model]` table).
    #[getter]
    fn model_params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &ModelParams::describing(&self.model.architecture).1)
    }

    /// What the readout sees of a sequence (a `[features]` table).
    #[getter]
    fn feature_params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &FeatureParams::from(self.model.features.clone()))
    }

    /// The class names, in the readout's output order.
    #[getter]
    fn classes(&self) -> Vec<String> {
        self.model.classes.names().to_vec()
    }

    /// The NumPy dtype (`dtype.str`) of the labels it was fitted on; `None` for labels the
    /// command line read as text.
    #[getter]
    fn label_dtype(&self) -> Option<String> {
        self.model.label_dtype.clone()
    }

    /// The model file's bytes (what `save` writes; `model_from_bytes` reads them).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.detach(|| self.model.to_bytes()).py_err()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Names of the input columns.
    #[getter]
    fn input_columns(&self) -> Vec<String> {
        self.model.input_columns.clone()
    }
}
