//! Data files read as the command line reads them: long-form CSV (a sequence column, an
//! optional time column) and NumPy `.npy`/`.npz` files of sequences, through the engine's own
//! readers, so a file gives the same arrays, limits and messages in Python as in `reservoir
//! fit`.

use std::path::PathBuf;

use numpy::PyArray2;
use pyo3::prelude::*;
use reservoir_runtime::data::{read_sequences as read, SequenceColumns, SequenceFile};

use crate::arrays::to_list;
use crate::errors::IntoPy;

/// Many sequences read from one file: ids, inputs (each Tᵢ × K), targets (each Tᵢ × M, or
/// none), labels (or none), and the input and target column names.
type Read<'py> = (
    Vec<String>,
    Vec<Bound<'py, PyArray2<f64>>>,
    Option<Vec<Bound<'py, PyArray2<f64>>>>,
    Option<Vec<String>>,
    Vec<String>,
    Vec<String>,
);

/// Reads the sequences of `path` (`.npy`/`.npz` by extension, CSV otherwise) with the
/// columns (CSV) or arrays (`.npz`) named.
#[pyfunction]
#[pyo3(signature = (path, inputs, targets = None, label = None, sequence = None, time = None, lengths = None))]
#[allow(clippy::too_many_arguments)]
pub fn read_sequences<'py>(
    py: Python<'py>,
    path: PathBuf,
    inputs: Vec<String>,
    targets: Option<Vec<String>>,
    label: Option<String>,
    sequence: Option<String>,
    time: Option<String>,
    lengths: Option<String>,
) -> PyResult<Read<'py>> {
    let columns = SequenceColumns {
        inputs: &inputs,
        targets: targets.as_deref(),
        label: label.as_deref(),
        sequence: sequence.as_deref(),
        time: time.as_deref(),
        lengths: lengths.as_deref(),
    };
    let file = py.detach(|| read("data file", &path, &columns)).py_err()?;
    let SequenceFile {
        ids,
        inputs,
        targets,
        labels,
        input_names,
        target_names,
    } = file;
    Ok((
        ids,
        to_list(py, inputs),
        targets.map(|t| to_list(py, t)),
        labels,
        input_names,
        target_names,
    ))
}
