//! Arrays across the boundary: the Python side hands over float64 arrays (it widens float32
//! and keeps every memory order), read here as strided views without a copy; results go back
//! as new NumPy arrays.

use ndarray::{Array2, ArrayView2};
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray2};
use pyo3::prelude::*;
use reservoir_runtime::Workload;

/// Views of `arrays` (valid while they are borrowed).
pub fn views<'a>(arrays: &'a [PyReadonlyArray2<'_, f64>]) -> Vec<ArrayView2<'a, f64>> {
    arrays.iter().map(|a| a.as_array()).collect()
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
