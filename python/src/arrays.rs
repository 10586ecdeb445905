//! Arrays across the boundary: the Python side hands over float64 arrays (it widens float32
//! and keeps every memory order), read here as strided views without a copy; results go back
//! as new NumPy arrays.

use ndarray::{Array2, ArrayView2, Axis};
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray2, PyReadonlyArray3};
use pyo3::prelude::*;
use reservoir_runtime::Workload;

/// Many sequences from Python: one 3-D array (B × T × K), borrowed once for all of them, or a
/// list of 2-D arrays (T_i × K), one borrow each (NumPy's borrow checking makes each new
/// borrow of views into one array cost as many checks as there are borrows already, so a
/// batch of 40,000 views would take seconds).
#[derive(FromPyObject)]
pub enum SequenceArrays<'py> {
    /// B sequences of the same length.
    Batch(PyReadonlyArray3<'py, f64>),
    /// Sequences of any lengths.
    List(Vec<PyReadonlyArray2<'py, f64>>),
}

impl SequenceArrays<'_> {
    /// Views of the sequences (valid while they are borrowed).
    pub fn views(&self) -> Vec<ArrayView2<'_, f64>> {
        match self {
            Self::Batch(batch) => {
                let batch = batch.as_array();
                (0..batch.len_of(Axis(0)))
                    .map(|i| batch.index_axis_move(Axis(0), i))
                    .collect()
            }
            Self::List(arrays) => arrays.iter().map(|a| a.as_array()).collect(),
        }
    }
}

/// The work of running every one of `sequences`: what `device="auto"` weighs.
pub fn workload(sequences: &[ArrayView2<f64>]) -> Workload {
    Workload::many(sequences.len(), sequences.iter().map(|s| s.nrows()).sum())
}

/// Ids for messages: each sequence's index.
pub fn ids(count: usize) -> Vec<String> {
    (0..count).map(|i| i.to_string()).collect()
}

/// `arrays` as a list of NumPy arrays.
pub fn to_list<'py>(py: Python<'py>, arrays: Vec<Array2<f64>>) -> Vec<Bound<'py, PyArray2<f64>>> {
    arrays.into_iter().map(|a| a.into_pyarray(py)).collect()
}
