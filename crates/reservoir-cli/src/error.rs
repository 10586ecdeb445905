//! Every error the command line reports: each message names the file, line, column or config
//! field at fault, and fits on one line (`main` prints it as `error: <message>`).

use std::path::PathBuf;

use reservoir_core::{ConfigError, ReservoirError};
use reservoir_runtime::RuntimeError;

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

/// Result type of the command line.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// What went wrong, with enough context to find it.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
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

    /// A command-line value is unusable (beyond what clap checks).
    #[error("{flag}: {message}")]
    Argument {
        /// The flag, e.g. `--inputs`.
        flag: &'static str,
        /// What is wrong with its value.
        message: String,
    },

    /// A config value broke its rule (the core names the field).
    #[error("{}: {source}", path.display())]
    Config {
        /// The config file.
        path: PathBuf,
        /// The field, its rule and the value.
        source: ConfigError,
    },

    /// An engine error, with what the command line was doing when it happened.
    #[error("{context}: {source}")]
    Core {
        /// What was being done, naming the files involved.
        context: String,
        /// The engine's error.
        source: RuntimeError,
    },

    /// An engine error whose message already names its file or device (config parse, model
    /// load, I/O, a device that cannot be used).
    #[error(transparent)]
    CoreNamed(RuntimeError),

    /// A file could not be written (the previous content, if any, is left as it was).
    #[error("cannot write {what} `{}`: {source}", path.display())]
    Write {
        /// What the file is for (`model file`, `output file`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        source: std::io::Error,
    },

    /// A plot could not be drawn (writing it is a [`CliError::Write`]).
    #[error("cannot draw the plot `{}`: {message}", path.display())]
    Plot {
        /// The PNG file asked for.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },

    /// Writing to standard output failed.
    #[error("cannot write to standard output: {0}")]
    Stdout(std::io::Error),

    /// Serialising a CSV or JSON output failed.
    #[error("cannot format {what}: {message}")]
    Format {
        /// What was being formatted.
        what: &'static str,
        /// The serialiser's message.
        message: String,
    },
}

impl CliError {
    /// Wraps an engine error with what was being done, unless its message already names its
    /// file or device.
    pub fn core(context: impl Into<String>, source: impl Into<RuntimeError>) -> Self {
        match source.into() {
            source @ (RuntimeError::ConfigParse { .. }
            | RuntimeError::Io { .. }
            | RuntimeError::ModelFormat { .. }
            | RuntimeError::Device { .. }) => CliError::CoreNamed(source),
            other => CliError::Core {
                context: context.into(),
                source: other,
            },
        }
    }

    /// An engine error from writing the `what` file: an I/O error names the file it could
    /// not write.
    pub fn writing(what: &'static str, source: impl Into<RuntimeError>) -> Self {
        match source.into() {
            RuntimeError::Io { path, source } => CliError::Write { what, path, source },
            other => CliError::core(format!("writing the {what}"), other),
        }
    }

    /// An engine error from reading the `what` file: an I/O error names the file it could not
    /// read.
    pub fn reading(what: &'static str, source: impl Into<RuntimeError>) -> Self {
        match source.into() {
            RuntimeError::Io { path, source } => CliError::Read { what, path, source },
            other => CliError::core(format!("reading the {what}"), other),
        }
    }

    /// An engine error from the config file at `path`: field errors get the file name.
    pub fn config(path: &std::path::Path, source: impl Into<RuntimeError>) -> Self {
        match source.into() {
            RuntimeError::Core(ReservoirError::Config(source)) => CliError::Config {
                path: path.to_path_buf(),
                source,
            },
            other => CliError::core(format!("with the config {}", path.display()), other),
        }
    }
}

/// Context for `map_err` on an engine result.
pub trait CoreContext<T> {
    /// Wraps the error with `context` (see [`CliError::core`]).
    fn context(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<RuntimeError>> CoreContext<T> for std::result::Result<T, E> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| CliError::core(context(), e))
    }
}
