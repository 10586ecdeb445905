//! Errors of the CUDA backend: one variant per thing a caller can act on.

use cudarc::cublas::result::CublasError;
use cudarc::driver::sys::CUresult;
use cudarc::driver::DriverError;
use reservoir_core::ReservoirError;

/// Everything the CUDA backend can fail with. Nothing in this crate panics when there is no
/// GPU: the probe comes first and every later failure is one of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// No usable GPU: a library or a device is missing; the reason says which.
    #[error("no usable GPU: {reason}")]
    Unavailable {
        /// What is missing.
        reason: String,
    },

    /// This device (or this build of the driver) cannot do what was asked, e.g. a step path
    /// that needs thread-block clusters on a GPU without them.
    #[error("{what} is not supported here: {reason}")]
    Unsupported {
        /// What was asked for.
        what: String,
        /// Why this device cannot do it.
        reason: String,
    },

    /// The device ran out of memory.
    #[error("the GPU ran out of memory while {context}")]
    OutOfMemory {
        /// What was being allocated.
        context: &'static str,
    },

    /// A CUDA driver call failed.
    #[error("CUDA driver error while {context}: {source}")]
    Driver {
        /// What was being done.
        context: &'static str,
        /// The driver's error, with its code.
        source: DriverError,
    },

    /// NVRTC could not compile a kernel module.
    #[error("NVRTC could not compile {module}: {log}")]
    Compile {
        /// The kernel source file, e.g. `esn.cu`.
        module: &'static str,
        /// The compiler's log.
        log: String,
    },

    /// A cuBLAS call failed.
    #[error("cuBLAS error while {context}: {source}")]
    Blas {
        /// What was being done.
        context: &'static str,
        /// The library's error, with its status code.
        source: CublasError,
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

/// Adds what was being done to a driver error (out of memory as its own variant).
pub(crate) trait DriverContext<T> {
    fn context(self, context: &'static str) -> Result<T>;
}

impl<T> DriverContext<T> for std::result::Result<T, DriverError> {
    fn context(self, context: &'static str) -> Result<T> {
        self.map_err(|source| match source.0 {
            CUresult::CUDA_ERROR_OUT_OF_MEMORY => GpuError::OutOfMemory { context },
            _ => GpuError::Driver { context, source },
        })
    }
}
