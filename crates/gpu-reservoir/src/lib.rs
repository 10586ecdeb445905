//! # gpu-reservoir
//!
//! The CUDA backend of the reservoir engine, on cudarc with the CUDA libraries loaded at run
//! time: it builds and its tests run on a machine without CUDA, and at run time it finds the
//! driver and cuBLAS or says which one is missing ([`probe()`](fn@probe)).
//!
//! ```text
//! probe() ─► GpuDevice::shared(ordinal) ─► GpuReservoirComputer::new_shared(&config, &device)
//!            (context, stream; kernel         (weights from reservoir-core, uploaded once;
//!             modules loaded on first use)   state stays on the device)
//! ```
//!
//! Layers: [`driver`] (device, kernel modules, launches, cuBLAS, graphs) → `ops` (one typed
//! operation per kernel, lengths checked) → the reservoirs ([`GpuReservoirComputer`],
//! [`GpuLifNetwork`], [`GpuLaneRunner`]), which implement `reservoir-core`'s interfaces.
//! Kernels come from `reservoir-kernels` as PTX, compiled by the driver for the device (and
//! kept in a disk cache);
//! every kernel has a CPU reference in `reservoir-core` and a test comparing them on fresh
//! random inputs.

#![warn(missing_docs)]

mod batched;
pub mod collective;
mod deep;
pub mod detection;
pub mod driver;
pub mod encoding;
mod error;
mod esn;
mod features;
mod gemm;
#[cfg(feature = "internals")]
pub mod internals;
mod lanes;
mod lif;
mod multi_gpu;
mod noise;
mod ops;
mod ridge_solve;
mod ridge_sums;
mod sharded;
pub mod spectral;

pub use collective::Collective;
pub use deep::GpuDeepReservoir;
pub use driver::{probe, DeviceInfo, GpuDevice, GpuSupport, Startup, StartupPhase, CACHE_ENV};
pub use error::{GpuError, Result};
pub use esn::{GpuReservoirComputer, ManySequences};
pub use gemm::{BatchKernel, GemmMath};
pub use lanes::{GpuLaneRunner, LANE_GROUP};
pub use lif::{GpuLifNetwork, LifStepPath, ShardedLifNetwork};
pub use multi_gpu::MultiGpuLaneRunner;
pub use ops::persistent::{PersistentWeights, StepPath};
pub use ridge_sums::DeviceRidgeSums;
pub use sharded::{shards_pay, ShardedReservoir};
