//! The driver layer: the only code that calls cudarc's driver and cuBLAS directly.
//! Above it, `ops` launches kernels through typed operations and the reservoirs use
//! those.

mod args;
pub(crate) mod blas;
mod cache;
pub(crate) mod csr;
mod device;
mod jit;
pub(crate) mod launch;
mod probe;
pub(crate) mod staging;
mod startup;

pub use blas::preload_cublas;
pub use cache::CACHE_ENV;
pub use device::{GpuDevice, KERNELS_ENV};
pub(crate) use device::{KernelSet, LoadedModule};
pub use probe::{probe, DeviceInfo, GpuSupport};
pub use startup::{Startup, StartupPhase};

/// GPU 0 for the crate's unit tests, or `None` with the reason printed (a failure with
/// `RESERVOIR_REQUIRE_GPU=1`); the integration tests have their own in `tests/common`.
#[cfg(test)]
pub(crate) fn test_gpu() -> Option<GpuDevice> {
    match GpuDevice::shared(0) {
        Ok(device) => Some(device),
        Err(e) => {
            let required = std::env::var("RESERVOIR_REQUIRE_GPU").is_ok_and(|v| v == "1");
            assert!(!required, "RESERVOIR_REQUIRE_GPU=1 but no usable GPU: {e}");
            eprintln!("skipping GPU test: {e}");
            None
        }
    }
}

/// A seed that differs on every run (fresh random inputs) for the crate's unit tests, printed
/// with the test's name; `RESERVOIR_TEST_SEED` replays one.
#[cfg(test)]
pub(crate) use reservoir_conformance::fresh_seed as test_seed;
