//! One trait, two backends: picks the CPU or the GPU reservoir for a config.

use reservoir_core::experiment::ReservoirFactory;
use reservoir_core::lif::{LifConfig, LifNetwork};
use reservoir_core::{
    cpu_reservoir_from_weights, Backend, Precision, Reservoir, ReservoirConfig, ReservoirWeights,
};

use crate::device::GpuDevice;
use crate::error::{GpuError, Result};
use crate::esn::GpuReservoirComputer;
use crate::lif::GpuLifNetwork;
use crate::probe::DeviceInfo;

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

/// Builds the echo-state reservoir for `weights` on the backend `config.backend` asks for:
/// `cpu`; `cuda` (an error naming what is missing when no GPU is usable, or when the config
/// asks for `f64`, which the GPU does not compute in); `auto` = the GPU when usable and the
/// config is `f32`, otherwise the CPU with the reason in [`Chosen::Cpu`].
pub fn build_reservoir(
    config: &ReservoirConfig,
    weights: ReservoirWeights,
) -> Result<(Box<dyn Reservoir + Send>, Chosen)> {
    let gpu_ready = || -> Result<GpuDevice> {
        if config.precision == Precision::F64 {
            return Err(GpuError::Unavailable(
                "precision = \"f64\" runs on the CPU only; the GPU computes in f32".into(),
            ));
        }
        GpuDevice::shared(0)
    };
    let on_gpu = |device: GpuDevice, weights| -> Result<(Box<dyn Reservoir + Send>, Chosen)> {
        let reservoir = GpuReservoirComputer::from_weights(config, weights, &device)?;
        Ok((
            Box::new(reservoir),
            Chosen::Cuda {
                device: device.info().clone(),
            },
        ))
    };
    let on_cpu = |weights, fallback| -> Result<(Box<dyn Reservoir + Send>, Chosen)> {
        Ok((
            cpu_reservoir_from_weights(config, weights)?,
            Chosen::Cpu { fallback },
        ))
    };
    match config.backend {
        Backend::Cpu => on_cpu(weights, None),
        Backend::Cuda => on_gpu(gpu_ready()?, weights),
        Backend::Auto => match gpu_ready() {
            Ok(device) => on_gpu(device, weights),
            Err(why) => on_cpu(weights, Some(why.to_string())),
        },
    }
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
    let on_gpu = |device: GpuDevice| -> Result<(Box<dyn Reservoir + Send>, Chosen)> {
        let network = GpuLifNetwork::new_shared(config, &device)?;
        Ok((
            Box::new(network),
            Chosen::Cuda {
                device: device.info().clone(),
            },
        ))
    };
    let on_cpu = |fallback| -> Result<(Box<dyn Reservoir + Send>, Chosen)> {
        Ok((Box::new(LifNetwork::new(config)?), Chosen::Cpu { fallback }))
    };
    match backend {
        Backend::Cpu => on_cpu(None),
        Backend::Cuda => on_gpu(GpuDevice::shared(0)?),
        Backend::Auto => match GpuDevice::shared(0) {
            Ok(device) => on_gpu(device),
            Err(why) => on_cpu(Some(why.to_string())),
        },
    }
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
}
