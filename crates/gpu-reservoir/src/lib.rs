//! # gpu-reservoir
//!
//! The CUDA backend of the reservoir engine, on cudarc with the CUDA libraries loaded at run
//! time: it builds and its tests run on a machine without CUDA, and at run time it finds the
//! driver, NVRTC and cuBLAS or says which one is missing ([`probe()`](fn@probe)).
//!
//! ```text
//! probe() ─► GpuDevice::shared(0) ─► GpuReservoirComputer::new_shared(&config, &device)
//!            (context, stream,        (weights from reservoir-core, uploaded once;
//!             kernels loaded once)     state stays on the device; states copied back once)
//! ```
//!
//! Kernels live in `kernels/*.cu`: the echo-state kernels ship as PTX (with an NVRTC fallback
//! when a driver rejects it), the others are compiled with NVRTC on first use. Every kernel
//! has a CPU reference in `reservoir-core` and a test comparing them on fresh random inputs.

#![warn(missing_docs)]

pub mod backend;
pub mod batched;
pub mod bench;
mod blas;
pub mod cluster;
mod csr;
pub mod detection;
pub mod device;
pub mod encoding;
pub mod error;
pub mod esn;
pub mod gram;
pub mod kernels;
pub mod lif;
pub mod persistent;
pub mod probe;
pub mod spectral;
pub mod sweep;

pub use backend::{
    build_reservoir, lane_runner_for, lif_for, reservoir_for, BackendFactory, Chosen,
};
pub use batched::{GemmMath, GpuBatchedReservoir};
pub use detection::{gpu_detect, gpu_scores};
pub use device::{GpuDevice, KernelSource};
pub use encoding::{gpu_rate, gpu_rate_sequence};
pub use error::{GpuError, Result};
pub use esn::GpuReservoirComputer;
pub use gram::DeviceRidgeSums;
pub use lif::{GpuLifNetwork, LifStepPath};
pub use persistent::{PersistentWeights, StepPath};
pub use probe::{probe, DeviceInfo, GpuSupport};
pub use spectral::gpu_spectral_radius;
pub use sweep::GpuLaneRunner;
