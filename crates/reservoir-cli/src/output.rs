//! Output: CSV documents, written atomically to a file or to standard output.

use std::io::Write;
use std::path::Path;

use ndarray::ArrayView2;
use reservoir_runtime::model::write_atomically;

use crate::error::{CliError, Result};

/// Rows formatted between two calls of the progress callback of [`csv_bytes_with_progress`].
const PROGRESS_ROWS: usize = 65_536;

/// A CSV document: the header, then one row per row of `values`, numbers with full precision
/// (Rust's shortest round-tripping decimal form).
pub fn csv_bytes(header: &[String], values: ArrayView2<'_, f64>) -> Result<Vec<u8>> {
    csv_bytes_with_progress(header, values, &mut |_, _| {})
}

/// [`csv_bytes`], calling `progress(rows_done, rows)` every [`PROGRESS_ROWS`] rows and at the end.
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
        return Err(CliError::Format {
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
    let format_error = |e: csv::Error| CliError::Format {
        what: "the CSV output",
        message: e.to_string(),
    };
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
    writer.into_inner().map_err(|e| CliError::Format {
        what: "the CSV output",
        message: e.to_string(),
    })
}

/// Writes `bytes` atomically to `path`, or to standard output when there is no path.
pub fn write_output(path: Option<&Path>, bytes: &[u8]) -> Result<()> {
    match path {
        Some(path) => {
            write_atomically(path, bytes).map_err(|e| CliError::writing("output file", e))
        }
        None => write_stdout(bytes),
    }
}

/// Writes to standard output; a closed pipe (`| head`) is not an error.
pub fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Stdout(e)),
        _ => Ok(()),
    }
}

/// Fails early, before any work, when `path`'s folder does not exist (`flag` names the option).
pub fn check_output_folder(flag: &'static str, path: &Path) -> Result<()> {
    if path.file_name().is_none() {
        return Err(CliError::Argument {
            flag,
            message: format!("`{}` does not name a file", path.display()),
        });
    }
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => Err(CliError::Argument {
            flag,
            message: format!("the folder `{}` does not exist", dir.display()),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
