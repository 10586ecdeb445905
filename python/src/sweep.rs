//! Hyper-parameter sweeps over many sequences: every (lane, ridge) of a `[sweep]` grid
//! scored on validation folds of the training sequences, as `reservoir sweep --train` does.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use reservoir_runtime::jobs::sequences::sweep::{
    sweep_classifier, sweep_series, SequenceSweepReport,
};
use reservoir_runtime::jobs::sequences::{Labelled, Series};
use reservoir_runtime::Dispatch;

use crate::arrays::{ids, SequenceArrays};
use crate::config::{experiment_config, to_python};
use crate::errors::IntoPy;

/// Sweeps the grid of `params`' `sweep` table on `inputs` with one label each (`labels`)
/// or per-row `targets`; returns the report as a dict (results best first, failures, what
/// the score is, where the lanes ran).
#[pyfunction]
#[pyo3(signature = (params, inputs, labels = None, targets = None))]
pub fn sweep<'py>(
    py: Python<'py>,
    params: &Bound<'py, PyDict>,
    inputs: SequenceArrays<'py>,
    labels: Option<Vec<String>>,
    targets: Option<SequenceArrays<'py>>,
) -> PyResult<Bound<'py, PyAny>> {
    let config = experiment_config(params)?;
    let inputs = inputs.views();
    let ids = ids(inputs.len());
    let columns: Vec<String> = (0..inputs.first().map_or(0, |u| u.ncols()))
        .map(|i| format!("x{i}"))
        .collect();
    let targets = targets
        .as_ref()
        .map(SequenceArrays::views)
        .unwrap_or_default();
    let report: SequenceSweepReport = match labels {
        Some(labels) => py.detach(|| {
            sweep_classifier(
                &config,
                &columns,
                Labelled {
                    ids: &ids,
                    inputs: &inputs,
                    labels: &labels,
                },
                None,
                &mut Dispatch::new(config.device()),
                &mut |_, _, _| {},
            )
            .map(|(report, _)| report)
        }),
        None if !targets.is_empty() => {
            let outputs: Vec<String> = (0..targets[0].ncols()).map(|i| format!("y{i}")).collect();
            py.detach(|| {
                sweep_series(
                    &config,
                    &columns,
                    &outputs,
                    Series {
                        ids: &ids,
                        inputs: &inputs,
                        targets: &targets,
                    },
                    None,
                    &mut Dispatch::new(config.device()),
                    &mut |_, _, _| {},
                )
                .map(|(report, _)| report)
            })
        }
        None => return Err(PyValueError::new_err("sweep: give labels or targets")),
    }
    .py_err()?;
    to_python(py, &report)
}
