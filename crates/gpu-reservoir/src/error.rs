//! Errors of the CUDA backend.

use reservoir_core::ReservoirError;

/// Everything the CUDA backend can fail with. Nothing in this crate panics when there is no
/// GPU: the probe comes first and every later failure is one of these.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No usable GPU: a library or a device is missing; the message says which.
    #[error("no usable GPU: {0}")]
    Unavailable(String),

    /// A CUDA driver call failed.
    #[error("CUDA driver error while {context}: {source}")]
    Driver {
        /// What was being done.
        context: &'static str,
        /// The driver's error.
        source: cudarc::driver::DriverError,
    },

    /// NVRTC could not compile a kernel source.
    #[error("NVRTC could not compile {source_name}: {log}")]
    Compile {
        /// The kernel source file, e.g. `kernels/spiking.cu`.
        source_name: &'static str,
        /// The compiler's log.
        log: String,
    },

    /// A cuBLAS call failed.
    #[error("cuBLAS error while {context}: {message}")]
    Blas {
        /// What was being done.
        context: &'static str,
        /// The library's error.
        message: String,
    },

    /// An error of the core library (shapes, configs, inputs).
    #[error(transparent)]
    Core(#[from] ReservoirError),
}

/// Result type of the CUDA backend.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;

impl From<GpuError> for ReservoirError {
    /// Core errors pass through unchanged; CUDA errors are boxed as a `cuda` backend error.
    fn from(error: GpuError) -> Self {
        match error {
            GpuError::Core(core) => core,
            other => ReservoirError::Backend {
                backend: "cuda",
                source: Box::new(other),
            },
        }
    }
}

/// Adds what was being done to a driver error.
pub(crate) trait DriverContext<T> {
    fn context(self, context: &'static str) -> Result<T>;
}

impl<T> DriverContext<T> for std::result::Result<T, cudarc::driver::DriverError> {
    fn context(self, context: &'static str) -> Result<T> {
        self.map_err(|source| GpuError::Driver { context, source })
    }
}
