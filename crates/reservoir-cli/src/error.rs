//! Every error the command line reports: each message names the file, line, column or config
//! field at fault, and fits on one line (`main` prints it as `error: <message>`).

use std::path::PathBuf;

use reservoir_core::{ConfigError, ReservoirError};
use reservoir_runtime::error::DataError;
use reservoir_runtime::RuntimeError;

/// Result type of the command line.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// What went wrong, with enough context to find it.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
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

    /// An engine error whose message already names its file or device (a data file, config
    /// parse, model load, I/O, a device that cannot be used).
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
}

impl CliError {
    /// Wraps an engine error with what was being done, unless its message already names its
    /// file or device.
    pub fn core(context: impl Into<String>, source: impl Into<RuntimeError>) -> Self {
        match source.into() {
            source @ (RuntimeError::Data(_)
            | RuntimeError::ConfigParse { .. }
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
            RuntimeError::Io { path, source } => DataError::Read { what, path, source }.into(),
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

impl From<DataError> for CliError {
    fn from(error: DataError) -> Self {
        CliError::CoreNamed(error.into())
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
