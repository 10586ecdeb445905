//! Labelled sequence datasets: many sequences, each T_i × K inputs with optional per-row
//! targets and one optional label, read from long-form CSV or NumPy files.
//!
//! The file kind follows the extension (`.npy`, `.npz`, any case); anything else is CSV with a
//! header row, one row per time step (see `long_csv`). NumPy arrays are read with
//! `ndarray-npy` (see `npy`).

use std::path::Path;

use crate::data::Result;
use ndarray::{Array2, ArrayView2};

mod long_csv;
mod npy;

/// Many sequences read from one file.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceFile {
    /// One id per sequence: CSV: the value of the sequence column (in order of first
    /// appearance in the file); NumPy: "0", "1", ... (the index along the first axis).
    pub ids: Vec<String>,
    /// Inputs of each sequence, T_i × K (K = number of input columns / last axis of the
    /// inputs array).
    pub inputs: Vec<Array2<f64>>,
    /// Per-row targets of each sequence, T_i × M, when target columns/array were asked for.
    pub targets: Option<Vec<Array2<f64>>>,
    /// One label per sequence (as text), when a label column/array was asked for.
    pub labels: Option<Vec<String>>,
    /// Names of the input columns (CSV) or the inputs array's name followed by the index
    /// (`x0, x1, ...`) for NumPy.
    pub input_names: Vec<String>,
    /// Names of the target columns (CSV) or the targets array's name followed by the index
    /// for NumPy; empty when no targets.
    pub target_names: Vec<String>,
}

impl SequenceFile {
    /// Views of the inputs of every sequence, in order.
    pub fn input_views(&self) -> Vec<ArrayView2<'_, f64>> {
        self.inputs.iter().map(|u| u.view()).collect()
    }

    /// Views of the targets of every sequence, in order (none without targets).
    pub fn target_views(&self) -> Vec<ArrayView2<'_, f64>> {
        self.targets.iter().flatten().map(|y| y.view()).collect()
    }
}

/// What to read, as named on the command line (the default reads nothing but a `.npy` file's
/// inputs: set at least `inputs`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SequenceColumns<'a> {
    /// CSV: input column names. NumPy .npz: one name, the inputs array. .npy: ignored (the
    /// file is the inputs array).
    pub inputs: &'a [String],
    /// CSV: target column names; .npz: one name, the targets array. None: no targets.
    pub targets: Option<&'a [String]>,
    /// CSV: the label column; .npz: the labels array (1-D). None: no labels.
    pub label: Option<&'a str>,
    /// CSV: the sequence-id column. None: the whole file is one sequence. Ignored for NumPy.
    pub sequence: Option<&'a str>,
    /// CSV only: optional time-order column (numeric); rows of each sequence are ordered by it.
    pub time: Option<&'a str>,
    /// .npz only: optional 1-D integer array of per-sequence lengths for ragged 3-D inputs.
    pub lengths: Option<&'a str>,
}

/// Reads `path` (`what` names the file's role in messages, e.g. "train file"): `.npy` and
/// `.npz` by extension (case-insensitive), anything else as CSV with a header row.
///
/// # Errors
/// The file cannot be read, or is malformed; each message names the file and the line,
/// column or array at fault.
pub fn read_sequences(
    what: &'static str,
    path: &Path,
    columns: &SequenceColumns<'_>,
) -> Result<SequenceFile> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("npy") => npy::read_npy_file(what, path, columns),
        Some("npz") => npy::read_npz_file(what, path, columns),
        _ => long_csv::read_long_csv(what, path, columns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array3};

    #[test]
    fn extension_picks_the_reader_case_insensitively() {
        let dir = tempfile::tempdir().expect("tempdir");
        let x = Array3::from_shape_fn((2, 3, 1), |(b, t, _)| (10 * b + t) as f64);
        let path = dir.path().join("data.NPY");
        ndarray_npy::write_npy(&path, &x).expect("write");
        let inputs: Vec<String> = Vec::new();
        let columns = SequenceColumns {
            inputs: &inputs,
            targets: None,
            label: None,
            sequence: None,
            time: None,
            lengths: None,
        };
        let file = read_sequences("train file", &path, &columns).expect("read");
        assert_eq!(file.ids, ["0", "1"]);
        assert_eq!(file.inputs[1], array![[10.0], [11.0], [12.0]]);
        assert_eq!(file.input_names, ["x0"]);

        let csv = dir.path().join("data.txt");
        std::fs::write(&csv, "u\n1\n2\n").expect("write csv");
        let columns = SequenceColumns {
            inputs: &["u".to_string()],
            ..columns
        };
        let file = read_sequences("train file", &csv, &columns).expect("read csv");
        assert_eq!(file.ids, ["data.txt"]);
        assert_eq!(file.inputs, [array![[1.0], [2.0]]]);
    }
}
