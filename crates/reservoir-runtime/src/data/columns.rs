//! Named numeric columns of a CSV file read into matrices: one series (its input and target
//! columns), and the CSV machinery the long-form sequence reader shares.
//!
//! CSV files have a header row; cells and names are trimmed of surrounding whitespace. Only the
//! columns asked for are parsed, so other columns (timestamps, labels) may hold anything.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use super::lines::{BoundedLines, LineCounter};
use crate::data::Result;
use crate::error::{quoted, DataError};
use ndarray::Array2;
use reservoir_core::checks::{MAX_INPUT, MAX_TARGET};
use reservoir_core::memory::{ensure_available, Bytes};

/// Most header names listed in a missing-column message before it says how many more there are.
const MAX_LISTED_COLUMNS: usize = 8;

/// Rows read between two checks of the memory they hold ([`check_held`]).
const CHECK_EVERY_ROWS: usize = 1 << 16;

/// Every [`CHECK_EVERY_ROWS`] rows, an error naming `path` and `line` unless the memory that the
/// next growth of the `held` bytes read so far needs (as much again) is available: a file too
/// large for this machine, or one without end (a pipe), is refused with its line instead of
/// exhausting the machine's memory.
pub(super) fn check_held(path: &Path, rows: usize, line: u64, held: u64) -> Result<()> {
    if !rows.is_multiple_of(CHECK_EVERY_ROWS) {
        return Ok(());
    }
    let what = format!("the {rows} rows read so far ({} held) to grow", Bytes(held));
    ensure_available(&what, held).map_err(|source| DataError::DataTooLarge {
        path: path.to_path_buf(),
        line,
        source,
    })
}

/// A group of columns to read together: their role in messages (`input`, `target`) and names.
#[derive(Debug, Clone, Copy)]
pub struct Group<'a> {
    /// `input` or `target`.
    pub role: &'static str,
    /// Column names, in the order of the matrix's columns.
    pub names: &'a [String],
}

/// Reads the named columns of the CSV file at `path` (`what` says what the file is for, e.g.
/// `train file`): one matrix (rows × names) per group, all with the same rows.
///
/// # Errors
/// The file cannot be opened or is malformed, a column is missing or repeated in the header, a
/// used cell is not a finite number (naming line and column), or there are no data rows.
pub fn read_columns(
    what: &'static str,
    path: &Path,
    groups: &[Group<'_>],
) -> Result<Vec<Array2<f64>>> {
    let CsvFile {
        mut reader,
        headers,
        mut lines,
    } = open_csv(what, path)?;
    let indices = groups
        .iter()
        .map(|g| {
            g.names
                .iter()
                .map(|name| find_column(path, &headers, g.role, name))
                .collect::<Result<Vec<usize>>>()
        })
        .collect::<Result<Vec<_>>>()?;

    let mut values: Vec<Vec<f64>> = vec![Vec::new(); groups.len()];
    let row_bytes = 8 * indices.iter().map(Vec::len).sum::<usize>() as u64;
    let mut record = csv::StringRecord::new();
    let mut rows = 0usize;
    while reader
        .read_record(&mut record)
        .map_err(|e| csv_error(what, path, e, &mut lines))?
    {
        let line = lines.line(record.position());
        for ((group_values, group_indices), group) in values.iter_mut().zip(&indices).zip(groups) {
            for &column in group_indices {
                let text = record.get(column).unwrap_or("");
                let value =
                    parse_cell(text, limit(group.role)).map_err(|problem| DataError::BadCell {
                        path: path.to_path_buf(),
                        line,
                        column: headers.get(column).unwrap_or("?").to_string(),
                        problem,
                    })?;
                group_values.push(value);
            }
        }
        rows += 1;
        check_held(path, rows, line, row_bytes.saturating_mul(rows as u64))?;
    }
    if rows == 0 {
        return Err(DataError::NoRows {
            path: path.to_path_buf(),
        });
    }
    values
        .into_iter()
        .zip(&indices)
        .map(|(v, idx)| {
            Array2::from_shape_vec((rows, idx.len()), v).map_err(|e| DataError::Format {
                what: "the data matrix",
                message: e.to_string(),
            })
        })
        .collect()
}

/// Reads the `inputs` and `targets` columns of a CSV file (see [`read_columns`]).
pub fn read_inputs_targets(
    what: &'static str,
    path: &Path,
    inputs: &[String],
    targets: &[String],
) -> Result<(Array2<f64>, Array2<f64>)> {
    let groups = [
        Group {
            role: "input",
            names: inputs,
        },
        Group {
            role: "target",
            names: targets,
        },
    ];
    let mut matrices = read_columns(what, path, &groups)?.into_iter();
    match (matrices.next(), matrices.next()) {
        (Some(inputs), Some(targets)) => Ok((inputs, targets)),
        _ => Err(DataError::NoRows {
            path: path.to_path_buf(),
        }),
    }
}

/// Reads the `inputs` columns of a CSV file (see [`read_columns`]).
pub fn read_inputs(what: &'static str, path: &Path, inputs: &[String]) -> Result<Array2<f64>> {
    let groups = [Group {
        role: "input",
        names: inputs,
    }];
    read_columns(what, path, &groups)?
        .pop()
        .ok_or_else(|| DataError::NoRows {
            path: path.to_path_buf(),
        })
}

/// An open CSV file: its reader positioned after the header row, that row, and the counter
/// of its lines.
pub(super) struct CsvFile {
    pub(super) reader: csv::Reader<BufReader<BoundedLines<File>>>,
    pub(super) headers: csv::StringRecord,
    pub(super) lines: LineCounter,
}

/// Opens the CSV file at `path` and reads its header row; lines longer than
/// [`super::lines::MAX_LINE_BYTES`] are an error.
pub(super) fn open_csv(what: &'static str, path: &Path) -> Result<CsvFile> {
    let file = File::open(path).map_err(|source| DataError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })?;
    let mut lines = LineCounter::open(path);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(BufReader::new(BoundedLines::new(file)));
    let headers = reader
        .headers()
        .map_err(|e| csv_error(what, path, e, &mut lines))?
        .clone();
    if headers.is_empty() || (headers.len() == 1 && headers.get(0) == Some("")) {
        return Err(DataError::NoHeader {
            path: path.to_path_buf(),
        });
    }
    Ok(CsvFile {
        reader,
        headers,
        lines,
    })
}

/// The largest magnitude a value of `role` may have: targets are bounded so that their squares
/// can be summed ([`MAX_TARGET`]), every other number by what f32 holds ([`MAX_INPUT`]), the
/// same bounds the engine checks, here caught with the file's line.
pub(super) fn limit(role: &str) -> f64 {
    if role == "target" {
        MAX_TARGET
    } else {
        MAX_INPUT
    }
}

/// A finite `f64` within ±`limit`, or what is wrong with the text (quoted, cut if long).
pub(super) fn parse_cell(text: &str, limit: f64) -> std::result::Result<f64, String> {
    let parsed = text.parse::<f64>();
    let text = quoted(text);
    match parsed {
        Ok(v) if v.is_finite() && v.abs() <= limit => Ok(v),
        Ok(v) if v.is_finite() => Err(format!(
            "`{text}` is beyond ±{limit:.4e}, {}",
            beyond(limit)
        )),
        // A number too large for f64 (`1e309`) is finite, just beyond every limit.
        Ok(v) if v.is_infinite() && !text.to_ascii_lowercase().contains("inf") => Err(format!(
            "`{text}` is beyond ±{limit:.4e}, {}",
            beyond(limit)
        )),
        Ok(_) => Err(format!("`{text}` is not a finite number")),
        Err(_) if text.is_empty() => Err("the cell is empty".to_string()),
        Err(_) => Err(format!("`{text}` is not a number")),
    }
}

/// Why values beyond `limit` are refused.
fn beyond(limit: f64) -> &'static str {
    if limit == MAX_TARGET {
        "the largest target whose square sums stay within f64"
    } else {
        "the range of f32 arithmetic"
    }
}

/// The index of the one header column called `name`.
pub(super) fn find_column(
    path: &Path,
    headers: &csv::StringRecord,
    role: &'static str,
    name: &str,
) -> Result<usize> {
    let mut matches = headers
        .iter()
        .enumerate()
        .filter(|(_, h)| *h == name)
        .map(|(i, _)| i);
    match (matches.next(), matches.next()) {
        (Some(i), None) => Ok(i),
        (Some(_), Some(_)) => Err(DataError::DuplicateHeader {
            path: path.to_path_buf(),
            column: name.to_string(),
        }),
        (None, _) => Err(DataError::MissingColumn {
            path: path.to_path_buf(),
            role,
            column: name.to_string(),
            present: list_columns(headers),
        }),
    }
}

/// The header's names as `a, b, c`, shortened when there are many.
fn list_columns(headers: &csv::StringRecord) -> String {
    let mut listed: Vec<String> = headers
        .iter()
        .take(MAX_LISTED_COLUMNS)
        .map(|h| format!("`{}`", quoted(h)))
        .collect();
    if headers.len() > MAX_LISTED_COLUMNS {
        listed.push(format!("and {} more", headers.len() - MAX_LISTED_COLUMNS));
    }
    listed.join(", ")
}

/// Turns a CSV reader error into one naming the file and line.
pub(super) fn csv_error(
    what: &'static str,
    path: &Path,
    error: csv::Error,
    lines: &mut LineCounter,
) -> DataError {
    let line = lines.line(error.position());
    let message = match error.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields, but the header has {expected_len}"),
        csv::ErrorKind::Utf8 { err, .. } => {
            format!("field {} is not valid UTF-8", err.field() + 1)
        }
        _ => error.to_string(),
    };
    match error.into_kind() {
        csv::ErrorKind::Io(source) => DataError::Read {
            what,
            path: path.to_path_buf(),
            source,
        },
        _ => DataError::CsvFormat {
            path: path.to_path_buf(),
            line,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_that_cannot_grow_in_memory_are_refused_with_their_line() {
        let path = Path::new("endless.csv");
        if reservoir_core::memory::available().is_some() {
            let message = check_held(path, CHECK_EVERY_ROWS, 65538, u64::MAX / 2)
                .map_err(|e| e.to_string())
                .expect_err("more than any machine has");
            assert!(
                message.starts_with(
                    "endless.csv: line 65538: not enough memory for the 65536 rows read so far"
                ),
                "{message}"
            );
        }
        // Only every CHECK_EVERY_ROWS rows, and a small file always fits.
        assert!(check_held(path, CHECK_EVERY_ROWS + 1, 9, u64::MAX).is_ok());
        assert!(check_held(path, CHECK_EVERY_ROWS, 9, 1 << 20).is_ok());
    }

    #[test]
    fn cells_must_be_finite_numbers() {
        assert_eq!(parse_cell("1.5e-3", MAX_INPUT), Ok(1.5e-3));
        assert!(parse_cell("NaN", MAX_INPUT).is_err_and(|m| m.contains("not a finite number")));
        assert!(parse_cell("-inf", MAX_INPUT).is_err());
        assert!(parse_cell("+Infinity", MAX_INPUT).is_err_and(|m| m.contains("not a finite")));
        assert!(parse_cell("1e309", MAX_INPUT).is_err_and(|m| m.contains("`1e309` is beyond ±")));
        assert!(parse_cell("-1e400", MAX_TARGET).is_err_and(|m| m.contains("is beyond ±1.0")));
        assert!(parse_cell("nan", MAX_INPUT).is_err_and(|m| m.contains("not a finite")));
        assert!(parse_cell("abc", MAX_INPUT).is_err_and(|m| m.contains("`abc` is not a number")));
        assert!(parse_cell("", MAX_INPUT).is_err_and(|m| m.contains("empty")));
        assert!(parse_cell("-1e39", MAX_INPUT).is_err_and(|m| m.contains("range of f32")));
        assert_eq!(parse_cell("1e39", MAX_TARGET), Ok(1e39));
        assert!(parse_cell("1e200", MAX_TARGET).is_err_and(|m| m.contains("beyond ±1.0000e150")));
    }
}
