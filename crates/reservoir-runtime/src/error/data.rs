//! Errors of reading and checking data files: each message names the file and the line,
//! column, array or sequence at fault, and fits on one line.

use std::path::PathBuf;

use reservoir_core::ReservoirError;

/// Most characters of a file's text (a cell, a column name, a sequence id, a label) quoted in a
/// message; longer text is cut with `…`.
pub const MAX_QUOTED_CHARS: usize = 40;

/// `text` as quoted in a message: at most [`MAX_QUOTED_CHARS`] characters, cut with `…` (a
/// file's cell or name can be megabytes long; the message must stay one short line).
pub fn quoted(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().count() <= MAX_QUOTED_CHARS {
        return text.into();
    }
    let kept: String = text.chars().take(MAX_QUOTED_CHARS - 1).collect();
    format!("{kept}…").into()
}

/// What is wrong with a data file, or with the data read from it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// A file could not be opened or read.
    #[error("cannot read {what} `{}`: {source}", path.display())]
    Read {
        /// What the file is for (`config file`, `train file`, ...).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        source: std::io::Error,
    },

    /// The CSV reader rejected the file's structure (encoding, quoting, field counts).
    #[error("{}: line {line}: {message}", path.display())]
    CsvFormat {
        /// The CSV file.
        path: PathBuf,
        /// The 1-based line the problem is on.
        line: u64,
        /// What is wrong.
        message: String,
    },

    /// The CSV file has no header row at all.
    #[error("{}: the file is empty (no header row)", path.display())]
    NoHeader {
        /// The CSV file.
        path: PathBuf,
    },

    /// The CSV file has a header but no data rows.
    #[error("{}: no data rows (only a header)", path.display())]
    NoRows {
        /// The CSV file.
        path: PathBuf,
    },

    /// A named column is not in the header.
    #[error("{}: no {role} column named `{}` (columns present: {present})", path.display(), quoted(column))]
    MissingColumn {
        /// The CSV file.
        path: PathBuf,
        /// `input`, `target`, `sequence`, `time` or `label`.
        role: &'static str,
        /// The column asked for.
        column: String,
        /// The header's columns, comma-separated.
        present: String,
    },

    /// A named column appears more than once in the header.
    #[error("{}: column `{}` appears more than once in the header", path.display(), quoted(column))]
    DuplicateHeader {
        /// The CSV file.
        path: PathBuf,
        /// The repeated name.
        column: String,
    },

    /// A cell of a used column is not a finite number.
    #[error("{}: line {line}, column `{}`: {problem}", path.display(), quoted(column))]
    BadCell {
        /// The CSV file.
        path: PathBuf,
        /// The 1-based line of the row.
        line: u64,
        /// The column's name.
        column: String,
        /// What is wrong, quoting the cell's text.
        problem: String,
    },

    /// Rows of one sequence of a long-form CSV file disagree: two labels, or two rows at the
    /// same time.
    #[error("{}: line {line}: sequence `{}`: {message}", path.display(), quoted(sequence))]
    BadSequence {
        /// The CSV file.
        path: PathBuf,
        /// The 1-based line of the later of the rows at fault.
        line: u64,
        /// The sequence's id.
        sequence: String,
        /// What is wrong, naming the other row's line.
        message: String,
    },

    /// A NumPy file as a whole is unusable: not a readable archive, an array missing, or
    /// arrays asked for that the file kind cannot hold.
    #[error("{}: {message}", path.display())]
    NumpyFile {
        /// The `.npy` or `.npz` file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// One array of a NumPy file is unusable: corrupt, of a dtype or shape that does not fit,
    /// or holding a value that is not finite.
    #[error("{}: array `{array}`: {message}", path.display())]
    NumpyArray {
        /// The `.npy` or `.npz` file.
        path: PathBuf,
        /// The array's name in the archive (`x` for a `.npy` file).
        array: String,
        /// What is wrong, with shapes or the index of the bad value.
        message: String,
    },

    /// The rows of a data file do not fit in the memory available (a file too large for this
    /// machine, or one without end).
    #[error("{}: line {line}: {source}", path.display())]
    DataTooLarge {
        /// The data file.
        path: PathBuf,
        /// The line reached when memory ran short.
        line: u64,
        /// The out-of-memory error: what is held and what is available.
        source: ReservoirError,
    },

    /// A target column has one value over the rows it is scored on.
    #[error("{}: target column `{}` is constant over {rows}; {consequence}", path.display(), quoted(column))]
    ConstantTarget {
        /// The CSV file.
        path: PathBuf,
        /// The column's name.
        column: String,
        /// Which rows, in words.
        rows: String,
        /// Why that is fatal.
        consequence: &'static str,
    },

    /// A target column's values are all too small for their squares to be summed in f64.
    #[error(
        "{}: target column `{}` is below {limit:e} in magnitude over {rows} (at most \
         {scale:e}): its squares underflow f64, so the readout cannot be fitted or scored; \
         rescale the column",
        path.display(),
        quoted(column)
    )]
    TinyTarget {
        /// The CSV file.
        path: PathBuf,
        /// The column's name.
        column: String,
        /// Which rows, in words.
        rows: String,
        /// The column's largest magnitude over those rows.
        scale: f64,
        /// The smallest largest magnitude accepted.
        limit: f64,
    },

    /// Not enough rows for what was asked.
    #[error("{}: {message}", path.display())]
    TooFewRows {
        /// The CSV file.
        path: PathBuf,
        /// What is needed and what there is.
        message: String,
    },

    /// Serialising a CSV or JSON output failed.
    #[error("cannot format {what}: {message}")]
    Format {
        /// What was being formatted.
        what: &'static str,
        /// The serialiser's message.
        message: String,
    },
}
