//! One trait, two backends: picks the CPU or the GPU reservoir for a config.

use reservoir_core::experiment::ReservoirFactory;
use reservoir_core::lif::{LifConfig, LifNetwork};
use reservoir_core::sweep::{CpuLaneRunner, LaneRunner};
use reservoir_core::{
    cpu_reservoir_from_weights, Backend, Precision, Reservoir, ReservoirConfig, ReservoirWeights,
};

use crate::device::GpuDevice;
use crate::error::{GpuError, Result};
use crate::esn::GpuReservoirComputer;
use crate::lif::GpuLifNetwork;
use crate::probe::DeviceInfo;
use crate::sweep::GpuLaneRunner;

/// Which backend a reservoir was built on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    /// The CPU; with `backend = "auto"`, `fallback` says why the GPU was not used.
    Cpu {
        /// Why `auto` did not pick the GPU (`None` when the config asked for the CPU).
        fallback: Option<String>,
    },
    /// GPU `device`.
    Cuda {
        /// The device the reservoir runs on.
        device: DeviceInfo,
    },
}

impl Chosen {
    /// `cpu` or `cuda`.
    pub fn name(&self) -> &'static str {
        match self {
            Chosen::Cpu { .. } => "cpu",
            Chosen::Cuda { .. } => "cuda",
        }
    }
}

/// Builds with `on_gpu` or `on_cpu` as `backend` asks: `cpu`; `cuda` (`gpu`'s error, naming
/// what is missing, when no GPU is usable); `auto` = the GPU when `gpu` gives one, otherwise
/// the CPU with the reason in [`Chosen::Cpu`]. `parts` go to whichever builds.
fn on_backend<T, P>(
    backend: Backend,
    gpu: impl FnOnce() -> Result<GpuDevice>,
    parts: P,
    on_gpu: impl FnOnce(&GpuDevice, P) -> Result<T>,
    on_cpu: impl FnOnce(P) -> Result<T>,
) -> Result<(T, Chosen)> {
    let cuda = |device: GpuDevice, parts| -> Result<(T, Chosen)> {
        Ok((
            on_gpu(&device, parts)?,
            Chosen::Cuda {
                device: device.info().clone(),
            },
        ))
    };
    match backend {
        Backend::Cpu => Ok((on_cpu(parts)?, Chosen::Cpu { fallback: None })),
        Backend::Cuda => cuda(gpu()?, parts),
        Backend::Auto => match gpu() {
            Ok(device) => cuda(device, parts),
            Err(why) => Ok((
                on_cpu(parts)?,
                Chosen::Cpu {
                    fallback: Some(why.to_string()),
                },
            )),
        },
    }
}

/// GPU 0 for an echo-state `config`: an error when the config asks for `f64`, which the GPU
/// does not compute in.
fn gpu_for(config: &ReservoirConfig) -> Result<GpuDevice> {
    if config.precision == Precision::F64 {
        return Err(GpuError::Unavailable(
            "precision = \"f64\" runs on the CPU only; the GPU computes in f32".into(),
        ));
    }
    GpuDevice::shared(0)
}

/// Builds the echo-state reservoir for `weights` on the backend `config.backend` asks for:
/// `cpu`; `cuda` (an error naming what is missing when no GPU is usable, or when the config
/// asks for `f64`, which the GPU does not compute in); `auto` = the GPU when usable and the
/// config is `f32`, otherwise the CPU with the reason in [`Chosen::Cpu`].
pub fn build_reservoir(
    config: &ReservoirConfig,
    weights: ReservoirWeights,
) -> Result<(Box<dyn Reservoir + Send>, Chosen)> {
    on_backend(
        config.backend,
        || gpu_for(config),
        weights,
        |device, weights| -> Result<Box<dyn Reservoir + Send>> {
            Ok(Box::new(GpuReservoirComputer::from_weights(
                config, weights, device,
            )?))
        },
        |weights| Ok(cpu_reservoir_from_weights(config, weights)?),
    )
}

/// [`build_reservoir`] with freshly generated weights.
pub fn reservoir_for(config: &ReservoirConfig) -> Result<(Box<dyn Reservoir + Send>, Chosen)> {
    let (weights, _) = ReservoirWeights::generate(config)?;
    build_reservoir(config, weights)
}

/// Builds the LIF reservoir for `config` on `backend` (the LIF runs in `f32` on both).
pub fn lif_for(
    config: &LifConfig,
    backend: Backend,
) -> Result<(Box<dyn Reservoir + Send>, Chosen)> {
    on_backend(
        backend,
        || GpuDevice::shared(0),
        (),
        |device, ()| -> Result<Box<dyn Reservoir + Send>> {
            Ok(Box::new(GpuLifNetwork::new_shared(config, device)?))
        },
        |()| -> Result<Box<dyn Reservoir + Send>> { Ok(Box::new(LifNetwork::new(config)?)) },
    )
}

/// The runner of a sweep's lanes around `base` on `base.backend`, as for its reservoirs:
/// [`GpuLaneRunner`] on the GPU, [`CpuLaneRunner`] on the CPU (and for `precision = "f64"`).
pub fn lane_runner_for(base: &ReservoirConfig) -> Result<(Box<dyn LaneRunner>, Chosen)> {
    on_backend(
        base.backend,
        || gpu_for(base),
        (),
        |device, ()| -> Result<Box<dyn LaneRunner>> { Ok(Box::new(GpuLaneRunner::new(device)?)) },
        |()| -> Result<Box<dyn LaneRunner>> { Ok(Box::new(CpuLaneRunner)) },
    )
}

/// A [`ReservoirFactory`] that honours `backend` (the `[reservoir]` table's, for the LIF too)
/// and remembers where each reservoir went.
#[derive(Debug, Clone)]
pub struct BackendFactory {
    backend: Backend,
    /// `(reservoir kind, where it runs)` for every reservoir built, in order.
    pub chosen: Vec<(&'static str, Chosen)>,
}

impl BackendFactory {
    /// A factory for `backend`.
    pub fn new(backend: Backend) -> Self {
        Self {
            backend,
            chosen: Vec::new(),
        }
    }
}

impl ReservoirFactory for BackendFactory {
    fn echo_state(
        &mut self,
        config: &ReservoirConfig,
    ) -> reservoir_core::Result<Box<dyn Reservoir + Send>> {
        let (reservoir, chosen) = reservoir_for(&ReservoirConfig {
            backend: self.backend,
            ..config.clone()
        })?;
        self.chosen.push(("esn", chosen));
        Ok(reservoir)
    }

    fn lif(&mut self, config: &LifConfig) -> reservoir_core::Result<Box<dyn Reservoir + Send>> {
        let (network, chosen) = lif_for(config, self.backend)?;
        self.chosen.push(("lif", chosen));
        Ok(network)
    }

    fn lane_runner(
        &mut self,
        base: &ReservoirConfig,
    ) -> reservoir_core::Result<Box<dyn LaneRunner>> {
        let (runner, chosen) = lane_runner_for(&ReservoirConfig {
            backend: self.backend,
            ..base.clone()
        })?;
        self.chosen.push(("sweep", chosen));
        Ok(runner)
    }
}
