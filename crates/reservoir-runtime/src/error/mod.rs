//! Errors of the runtime: the engine's own, the GPU's, and those of data files, devices,
//! config files and model files.

use std::path::PathBuf;

use gpu_reservoir::GpuError;
use reservoir_core::{ConfigError, ReservoirError};

mod data;

pub use data::{quoted, DataError, MAX_QUOTED_CHARS};

/// Everything the runtime can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// An error of the engine (a config value, shapes, inputs, numerics, a backend).
    #[error(transparent)]
    Core(#[from] ReservoirError),

    /// A GPU error (out of memory, unsupported on this device, driver, cuBLAS, ...).
    #[error(transparent)]
    Gpu(#[from] GpuError),

    /// A data file is unreadable, malformed or holds values the engine cannot use (the
    /// message names the file and the line, column, array or sequence). Boxed: its variants
    /// carry several names and paths, and every `Result` of the runtime would grow with them.
    #[error(transparent)]
    Data(Box<DataError>),

    /// The device asked for cannot run this job.
    #[error("device {device}: {reason}")]
    Device {
        /// The device asked for, as users write it (`cuda:1`).
        device: String,
        /// Why it cannot be used.
        reason: String,
    },

    /// A launcher's environment variable is missing or wrong.
    #[error("environment variable {variable} {reason}")]
    Launch {
        /// The variable.
        variable: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The ranks of a launch could not meet to share NCCL's unique id.
    #[error("the ranks could not meet at {address}: {reason}")]
    Meeting {
        /// Rank 0's `host:port`.
        address: String,
        /// What went wrong, and what to set about it.
        reason: String,
    },

    /// A TOML configuration could not be parsed (syntax, type or unknown key).
    #[error("{origin}: {message}")]
    ConfigParse {
        /// The file (or `<embedded>`) the text came from.
        origin: String,
        /// The parser's message, naming the key and line.
        message: String,
    },

    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The operating-system error.
        source: std::io::Error,
    },

    /// A saved model file is not one of ours, is truncated, corrupted or of another version.
    #[error("{}: {message}", path.display())]
    ModelFormat {
        /// The model file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
}

impl From<DataError> for RuntimeError {
    fn from(error: DataError) -> Self {
        RuntimeError::Data(Box::new(error))
    }
}

impl From<ConfigError> for RuntimeError {
    fn from(error: ConfigError) -> Self {
        RuntimeError::Core(error.into())
    }
}

/// Result type of the runtime.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;
