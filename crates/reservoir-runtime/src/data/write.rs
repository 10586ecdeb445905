//! Data out: predictions as CSV documents or `.npy` bytes, for the caller to write
//! atomically ([`crate::files`]).

use ndarray::{Array1, ArrayView2};
use ndarray_npy::WriteNpyExt;

use crate::data::Result;
use crate::error::DataError;

/// Rows formatted between two calls of the progress callback of [`csv_bytes_with_progress`].
const PROGRESS_ROWS: usize = 65_536;

/// A CSV document: the header, then one row per row of `values`, numbers with full precision
/// (Rust's shortest round-tripping decimal form).
pub fn csv_bytes(header: &[String], values: ArrayView2<'_, f64>) -> Result<Vec<u8>> {
    csv_bytes_with_progress(header, values, &mut |_, _| {})
}

/// [`csv_bytes`], calling `progress(rows_done, rows)` every 65,536 rows and at the end.
pub fn csv_bytes_with_progress(
    header: &[String],
    values: ArrayView2<'_, f64>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<u8>> {
    csv_rows(None, header, values, progress)
}

/// [`csv_bytes`] with a first column `key` holding `keys[i]` on row i (a sequence's id).
pub fn keyed_csv_bytes(
    key: &str,
    keys: &[String],
    header: &[String],
    values: ArrayView2<'_, f64>,
) -> Result<Vec<u8>> {
    if keys.len() != values.nrows() {
        return Err(DataError::Format {
            what: "the CSV output",
            message: format!("{} keys for {} rows", keys.len(), values.nrows()),
        });
    }
    csv_rows(Some((key, keys)), header, values, &mut |_, _| {})
}

/// The CSV document of [`csv_bytes_with_progress`], with a leading key column when given.
fn csv_rows(
    keyed: Option<(&str, &[String])>,
    header: &[String],
    values: ArrayView2<'_, f64>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<u8>> {
    let rows = values.nrows();
    let mut writer = csv::Writer::from_writer(Vec::new());
    let names = keyed.map(|(key, _)| key).into_iter();
    writer
        .write_record(names.chain(header.iter().map(String::as_str)))
        .map_err(format_error)?;
    for (i, row) in values.rows().into_iter().enumerate() {
        let key = keyed.map(|(_, keys)| keys[i].clone()).into_iter();
        writer
            .write_record(key.chain(row.iter().map(|v| v.to_string())))
            .map_err(format_error)?;
        if (i + 1) % PROGRESS_ROWS == 0 {
            progress(i + 1, rows);
        }
    }
    progress(rows, rows);
    writer.into_inner().map_err(format_error)
}

/// Why a CSV document could not be formatted.
fn format_error(error: impl std::fmt::Display) -> DataError {
    DataError::Format {
        what: "the CSV output",
        message: error.to_string(),
    }
}

/// A CSV document of one class label per sequence: the header `sequence,label`, then each
/// sequence's id and label.
pub fn labels_csv_bytes(ids: &[String], labels: &[&str]) -> Result<Vec<u8>> {
    if ids.len() != labels.len() {
        return Err(DataError::Format {
            what: "the CSV output",
            message: format!("{} sequences for {} labels", ids.len(), labels.len()),
        });
    }
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer
        .write_record(["sequence", "label"])
        .map_err(format_error)?;
    for (id, label) in ids.iter().zip(labels) {
        writer
            .write_record([id.as_str(), label])
            .map_err(format_error)?;
    }
    writer.into_inner().map_err(format_error)
}

/// Encodes a 2-D f64 array as `.npy` bytes (for writing predictions; the caller writes the
/// bytes atomically).
///
/// # Errors
/// The encoder fails (it does not for in-memory output, but its error is passed on).
pub fn npy_bytes(array: ArrayView2<'_, f64>) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    array.write_npy(&mut bytes).map_err(|e| DataError::Format {
        what: "the .npy output",
        message: e.to_string(),
    })?;
    Ok(bytes)
}

/// Class labels as `.npy` bytes (a 1-D `int64` array).
pub fn npy_labels_bytes(labels: &Array1<i64>) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    labels
        .write_npy(&mut bytes)
        .map_err(|e| DataError::Format {
            what: "the NumPy output",
            message: e.to_string(),
        })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};
    use ndarray_npy::ReadNpyExt;

    #[test]
    fn written_numbers_round_trip() {
        let values = ndarray::array![[0.1, -1.0 / 3.0], [1e-300, 12345.678901234567]];
        let header = vec!["a".to_string(), "b".to_string()];
        let text = csv_bytes(&header, values.view()).map(String::from_utf8);
        let Ok(Ok(text)) = text else {
            panic!("CSV output failed: {text:?}");
        };
        let parsed: Vec<f64> = text
            .lines()
            .skip(1)
            .flat_map(|l| l.split(',').map(|c| c.parse::<f64>().unwrap_or(f64::NAN)))
            .collect();
        assert_eq!(parsed, values.iter().copied().collect::<Vec<_>>());
    }

    #[test]
    fn npy_bytes_round_trip() {
        let a = array![[1.0, -2.5, 3.0], [4.0, 5.0, f64::MAX]];
        let bytes = npy_bytes(a.view()).expect("encode");
        let back = Array2::<f64>::read_npy(bytes.as_slice()).expect("decode");
        assert_eq!(back, a);
        // A transposed (column-major) view encodes its logical order.
        let bytes = npy_bytes(a.t()).expect("encode transposed");
        let back = Array2::<f64>::read_npy(bytes.as_slice()).expect("decode transposed");
        assert_eq!(back, a.t());
    }
}
