//! The driver layer: the only code that calls cudarc's driver, NVRTC and cuBLAS directly.
//! Above it, `ops` launches kernels through typed operations and the reservoirs use
//! those.

pub(crate) mod blas;
mod cache;
mod compile;
pub(crate) mod csr;
mod device;
pub(crate) mod launch;
mod probe;
pub(crate) mod staging;
mod startup;

pub use blas::preload_cublas;
pub use cache::CACHE_ENV;
pub use device::GpuDevice;
pub(crate) use device::{KernelSet, LoadedModule};
pub use probe::{probe, DeviceInfo, GpuSupport};
pub use startup::{Startup, StartupPhase};
