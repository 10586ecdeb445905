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

    /// The device ran out of memory (for page-locked buffers: the host could not lock more;
    /// for cuBLAS: it could not allocate its workspace). A reservoir whose run fails so keeps
    /// its state and runs again once memory is free.
    #[error(
        "the GPU ran out of memory while {context}{}{}",
        bytes.map_or(String::new(), |b| format!(" ({} asked for)", size(b))),
        free.map_or(String::new(), |(f, t)| format!("; {} of {} free on the device", size(f), size(t)))
    )]
    OutOfMemory {
        /// What was being allocated.
        context: &'static str,
        /// Bytes asked for, where one allocation failed and its size is known.
        bytes: Option<usize>,
        /// The device's free and total memory in bytes just after the failure, where the
        /// driver could tell.
        free: Option<(usize, usize)>,
    },

    /// A CUDA driver call failed.
    #[error("CUDA driver error while {context}: {source}")]
    Driver {
        /// What was being done.
        context: &'static str,
        /// The driver's error, with its code.
        source: DriverError,
    },

    /// The driver could not compile a kernel module's PTX.
    #[error("the driver could not compile the PTX of {module}: {log}")]
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

    /// An NCCL collective (or creating its communicator) failed.
    #[error("NCCL error while {context}: {code}")]
    Collective {
        /// What was being done.
        context: &'static str,
        /// NCCL's result code.
        code: String,
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

/// `bytes` for a message: `12.0 MiB`, `512 B`.
fn size(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

impl GpuError {
    /// The out-of-memory error of `context` (`bytes` asked for, when known), with the
    /// device's free and total memory as the driver reports them now.
    pub(crate) fn out_of_memory(context: &'static str, bytes: Option<usize>) -> Self {
        GpuError::OutOfMemory {
            context,
            bytes,
            free: cudarc::driver::result::mem_get_info().ok(),
        }
    }
}

/// Adds what was being done to a driver error (out of memory as its own variant).
pub(crate) trait DriverContext<T> {
    fn context(self, context: &'static str) -> Result<T>;

    /// [`DriverContext::context`] of an allocation of `len` values of `E` (an upload or
    /// `alloc_zeros`), whose size an out-of-memory error then names.
    fn alloc_context<E>(self, context: &'static str, len: usize) -> Result<T>;
}

impl<T> DriverContext<T> for std::result::Result<T, DriverError> {
    fn context(self, context: &'static str) -> Result<T> {
        self.map_err(|source| driver_error(context, source, None))
    }

    fn alloc_context<E>(self, context: &'static str, len: usize) -> Result<T> {
        let bytes = len.saturating_mul(std::mem::size_of::<E>());
        self.map_err(|source| driver_error(context, source, Some(bytes)))
    }
}

fn driver_error(context: &'static str, source: DriverError, bytes: Option<usize>) -> GpuError {
    match source.0 {
        CUresult::CUDA_ERROR_OUT_OF_MEMORY => GpuError::out_of_memory(context, bytes),
        _ => GpuError::Driver { context, source },
    }
}
