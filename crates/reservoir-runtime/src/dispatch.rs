//! [`Dispatch`]: the one place that builds a reservoir (or a sweep's lanes) on the CPU or a GPU,
//! as the [`Device`] asked for says. Under `auto` it picks the device the cost model
//! (see `docs/design.md`) expects to finish the job first, and opens a GPU only when that is
//! one.

use std::time::Duration;

use gpu_reservoir::collective::exchange_id;
use gpu_reservoir::{
    shards_pay, Collective, DeviceInfo, GemmMath, GpuDevice, GpuLaneRunner, GpuLifNetwork,
    GpuReservoirComputer, MultiGpuLaneRunner, ShardedReservoir, Startup, LANE_GROUP,
};
use reservoir_core::lanes::{CpuLaneRunner, LaneRunner};

use crate::sweep::RankLaneRunner;
use reservoir_core::lif::{LifConfig, LifNetwork, LifWeights};
use reservoir_core::{cpu_reservoir, Par, Precision, Reservoir, ReservoirConfig, ReservoirWeights};

pub use crate::cost::Workload;
use crate::cost::{cpu_seconds, gpu_seconds, Shape};
use crate::device::{Device, Devices};
use crate::error::{Result, RuntimeError};
use crate::launch::Launch;

/// How long the ranks of a launch wait for each other to exchange NCCL's unique id.
const RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(300);

/// A many-sequence job's reservoirs, one per GPU of this process, and the collective that
/// joins them to each other (and to the other processes of a launch).
#[derive(Debug)]
pub struct Spread {
    /// The GPUs' collective; its ranks say which share of the sequences each takes.
    pub collective: Collective,
    /// The reservoir of each local member of `collective`, in order, all with the same
    /// weights.
    pub reservoirs: Vec<GpuReservoirComputer>,
}

/// A reservoir for a job of many sequences: on one device, or spread over several GPUs.
pub enum Built {
    /// One reservoir, on the CPU or one GPU.
    One(Box<dyn Reservoir>),
    /// One reservoir per GPU.
    Spread(Spread),
}

/// Where a reservoir was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// The CPU; with [`Device::Auto`], `fallback` says why no GPU was used.
    Cpu {
        /// Why `auto` did not pick a GPU (`None` when the CPU was asked for).
        fallback: Option<String>,
    },
    /// A GPU; with [`Device::Auto`], `reason` says why it was picked.
    Cuda {
        /// The GPU (the first, where the job spread over several).
        info: DeviceInfo,
        /// The ordinals of the other GPUs of this process the job spread over, if any.
        others: Vec<usize>,
        /// This process's rank and the number of processes, where it is one rank of a launch.
        rank: Option<(usize, usize)>,
        /// Why `auto` picked it (`None` when a GPU was asked for).
        reason: Option<String>,
    },
}

impl Placement {
    /// `cpu`, `cuda` / `cuda:N` for GPU N, `cuda:0,1` for a job spread over GPUs 0 and 1, and
    /// `cuda:1, rank 1 of 2` for the GPU of one rank of a launch.
    pub fn name(&self) -> String {
        match self {
            Placement::Cpu { .. } => "cpu".to_string(),
            Placement::Cuda {
                info, others, rank, ..
            } => {
                let gpus = if others.is_empty() {
                    Device::Cuda(info.ordinal).to_string()
                } else {
                    let all: Vec<String> = std::iter::once(info.ordinal)
                        .chain(others.iter().copied())
                        .map(|ordinal| ordinal.to_string())
                        .collect();
                    format!("cuda:{}", all.join(","))
                };
                match rank {
                    Some((rank, world)) => format!("{gpus}, rank {rank} of {world}"),
                    None => gpus,
                }
            }
        }
    }
}

/// The one dispatch point: builds every reservoir of a job on the device asked for, and
/// remembers where each went. The GPU is opened once, on first use.
#[derive(Debug)]
pub struct Dispatch {
    device: Device,
    devices: Option<Devices>,
    launch: Option<Launch>,
    batch_math: GemmMath,
    gpu: Option<std::result::Result<GpuDevice, String>>,
    placements: Vec<(&'static str, Placement)>,
}

impl Dispatch {
    /// Dispatches to `device`.
    pub fn new(device: Device) -> Self {
        Self {
            device,
            devices: None,
            launch: None,
            batch_math: GemmMath::F32,
            gpu: None,
            placements: Vec::new(),
        }
    }

    /// Lets a sweep that runs on a GPU spread its lanes over `devices` (`None`: only the GPU
    /// of the device asked for).
    pub fn with_devices(mut self, devices: Option<Devices>) -> Self {
        self.devices = devices;
        self
    }

    /// The arithmetic of the batches of sequences that the echo-state reservoirs it builds on
    /// a GPU step together (`gpu_matmul`; default f32): see
    /// [`GpuReservoirComputer::with_batch_math`]. The CPU ignores it.
    pub fn with_batch_math(mut self, math: GemmMath) -> Self {
        self.batch_math = math;
        self
    }

    /// Makes this process one rank of `launch` (`None`: the only process): its many-sequence
    /// fits take their share of the sequences on GPU `LOCAL_RANK` and add their sums to the
    /// other ranks'.
    pub fn with_launch(mut self, launch: Option<Launch>) -> Self {
        self.launch = launch;
        self
    }

    /// This process's launch, if it is one of several.
    pub fn launch(&self) -> Option<&Launch> {
        self.launch.as_ref()
    }

    /// The device asked for.
    pub fn device(&self) -> Device {
        self.device
    }

    /// `(what, where)` for everything built so far, in order (`what` is `esn`, `lif` or
    /// `sweep`).
    pub fn placements(&self) -> &[(&'static str, Placement)] {
        &self.placements
    }

    /// What starting the GPU cost, phase by phase (`None` when no GPU was opened).
    pub fn startup(&self) -> Option<Startup> {
        match &self.gpu {
            Some(Ok(device)) => Some(device.startup()),
            _ => None,
        }
    }

    /// The echo-state reservoir for `config` on `weights`, for a job of `work`. A GPU
    /// computes in f32, so a config asking for f64 runs on the CPU under `auto` and is an
    /// error under `cuda`. With several GPUs listed, or under a launch (on GPU `LOCAL_RANK`),
    /// a reservoir worth splitting ([`shards_pay`]) is split over the GPUs or the ranks.
    ///
    /// # Errors
    /// A GPU that was asked for and is not usable; a launch with the CPU asked for; any error
    /// of meeting the other ranks or of building the reservoir.
    pub fn echo_state(
        &mut self,
        config: &ReservoirConfig,
        weights: ReservoirWeights,
        work: Workload,
    ) -> Result<Box<dyn Reservoir>> {
        self.launch_on_local_gpu()?;
        let shape = Shape::of_weights(weights.recurrent(), weights.input());
        let gpu = self.gpu_for("esn", gpu_precision(config.precision()), shape, work)?;
        let Some(device) = gpu else {
            return cpu_reservoir(config, weights, Par::all()).map_err(Into::into);
        };
        // Under a launch a reservoir worth splitting is split over the ranks, one shard per
        // process; a smaller one runs whole on every rank.
        if let Some(world) = self.launch.as_ref().map(|l| l.world) {
            if shards_pay(config, world) {
                let collective = self.join_launch(&device)?;
                return Ok(Box::new(ShardedReservoir::new(
                    config, &weights, collective,
                )?));
            }
        } else if self.devices.is_some() {
            let ordinals = self.listed_gpus(&device)?;
            if shards_pay(config, ordinals.len()) {
                let collective = Collective::local(&ordinals)?;
                return Ok(Box::new(ShardedReservoir::new(
                    config, &weights, collective,
                )?));
            }
            if let Some((_, Placement::Cuda { others, .. })) = self.placements.last_mut() {
                others.clear();
            }
        }
        Ok(Box::new(
            GpuReservoirComputer::from_weights(config, weights, &device)?
                .with_batch_math(self.batch_math)?,
        ))
    }

    /// The echo-state reservoir of a job of many sequences: on the CPU as
    /// [`Dispatch::echo_state`] places it, or on GPUs as a [`Spread`]: one GPU alone (no NCCL
    /// needed), every GPU `devices` lists, or, where this process is a rank of a launch, GPU
    /// `LOCAL_RANK` joined to the other ranks.
    ///
    /// # Errors
    /// As [`Dispatch::echo_state`]; a launch with the CPU asked for; any error of meeting the
    /// other ranks or of building the collective.
    pub fn echo_state_spread(
        &mut self,
        config: &ReservoirConfig,
        weights: ReservoirWeights,
        work: Workload,
    ) -> Result<Built> {
        self.launch_on_local_gpu()?;
        let shape = Shape::of_weights(weights.recurrent(), weights.input());
        let Some(device) = self.gpu_for("esn", gpu_precision(config.precision()), shape, work)?
        else {
            return Ok(Built::One(cpu_reservoir(config, weights, Par::all())?));
        };
        let collective = match self.launch {
            Some(_) => self.join_launch(&device)?,
            None => match self.listed_gpus(&device)?.as_slice() {
                [_] => Collective::solo(&device),
                ordinals => Collective::local(ordinals)?,
            },
        };
        // Each GPU's reservoir is built (its plans and uploads) on a thread of its own.
        let devices = collective.devices();
        let math = self.batch_math;
        let reservoirs = std::thread::scope(|scope| {
            let threads: Vec<_> = devices
                .iter()
                .map(|device| {
                    let weights = weights.clone();
                    scope.spawn(move || {
                        GpuReservoirComputer::from_weights(config, weights, device)?
                            .with_batch_math(math)
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|thread| {
                    thread
                        .join()
                        .map_err(|_| RuntimeError::Device {
                            device: self.device,
                            reason: "the thread building a GPU's reservoir panicked".to_string(),
                        })?
                        .map_err(RuntimeError::from)
                })
                .collect::<Result<Vec<_>>>()
        })?;
        Ok(Built::Spread(Spread {
            collective,
            reservoirs,
        }))
    }

    /// The LIF reservoir for `config` on `weights` (it runs in f32 on both), for a job of
    /// `work`.
    ///
    /// # Errors
    /// As [`Dispatch::echo_state`].
    pub fn lif(
        &mut self,
        config: &LifConfig,
        weights: LifWeights,
        work: Workload,
    ) -> Result<Box<dyn Reservoir>> {
        let shape = Shape::of_weights(weights.recurrent(), weights.input());
        Ok(match self.gpu_for("lif", Ok(()), shape, work)? {
            Some(device) => Box::new(GpuLifNetwork::from_weights(config, &weights, &device)?),
            None => Box::new(LifNetwork::from_weights(config, weights)?.with_par(Par::all())),
        })
    }

    /// The LIF reservoir of `config` on the weights drawn from its seed (`LifWeights::generate`;
    /// on a GPU, `GpuLifNetwork::generate_weights`: the same weights, their spectral estimate
    /// there), for a job of `work`.
    ///
    /// # Errors
    /// As [`Dispatch::echo_state`].
    pub fn lif_drawn(&mut self, config: &LifConfig, work: Workload) -> Result<Box<dyn Reservoir>> {
        Ok(
            match self.gpu_for("lif", Ok(()), Shape::of_lif(config), work)? {
                Some(device) => Box::new(GpuLifNetwork::new_shared(config, &device)?),
                None => Box::new(LifNetwork::new(config)?.with_par(Par::all())),
            },
        )
    }

    /// [`Dispatch::lif_drawn`], also handing back the weights (the Python `LifReservoir`
    /// keeps them for export): on a GPU they are drawn with the spectral estimate's products
    /// there, as `lif_drawn` draws them, the same weights as the CPU's bit for bit, in a
    /// fraction of the CPU estimate's time from 10^8 synapses.
    ///
    /// # Errors
    /// As [`Dispatch::echo_state`].
    pub fn lif_drawn_with_weights(
        &mut self,
        config: &LifConfig,
        work: Workload,
    ) -> Result<(Box<dyn Reservoir>, LifWeights)> {
        Ok(
            match self.gpu_for("lif", Ok(()), Shape::of_lif(config), work)? {
                Some(device) => {
                    let (network, weights) = GpuLifNetwork::generate(config, &device)?;
                    (Box::new(network), weights)
                }
                None => {
                    let weights = LifWeights::generate(config)?;
                    let network =
                        LifNetwork::from_weights(config, weights.clone())?.with_par(Par::all());
                    (Box::new(network), weights)
                }
            },
        )
    }

    /// The runner of a sweep's `lanes` lanes around `base`, each run over `work`; on GPUs, their
    /// steps' GEMM in `math`.
    ///
    /// # Errors
    /// As [`Dispatch::echo_state`].
    pub fn lane_runner(
        &mut self,
        base: &ReservoirConfig,
        lanes: usize,
        work: Workload,
        math: GemmMath,
    ) -> Result<Box<dyn LaneRunner>> {
        self.launch_on_local_gpu()?;
        let per_row = |density: f64| ((density * base.size() as f64).round() as usize).max(1);
        let shape = Shape {
            size: base.size(),
            nonzeros: per_row(base.connection_prob()) * base.size(),
            input_nonzeros: per_row(base.input_connectivity()) * base.input_size(),
            lanes,
        };
        let gpu = self.gpu_for("sweep", gpu_precision(base.precision()), shape, work)?;
        let Some(device) = gpu else {
            return Ok(Box::new(CpuLaneRunner::new(Par::all())));
        };
        if self.launch.is_some() {
            let collective = self.join_launch(&device)?;
            let runner = GpuLaneRunner::new(&device)?.with_math(math);
            return Ok(Box::new(RankLaneRunner::new(runner, collective)));
        }
        // Only the GPUs that get a group of lanes.
        let mut ordinals = self.listed_gpus(&device)?;
        ordinals.truncate(lanes.div_ceil(LANE_GROUP).max(1));
        if let Some((_, Placement::Cuda { others, .. })) = self.placements.last_mut() {
            others.truncate(ordinals.len() - 1);
        }
        match ordinals.as_slice() {
            [_] => Ok(Box::new(GpuLaneRunner::new(&device)?.with_math(math))),
            ordinals => Ok(Box::new(MultiGpuLaneRunner::new(ordinals)?.with_math(math))),
        }
    }

    /// Under a launch, puts the job on this process's GPU (`LOCAL_RANK`).
    ///
    /// # Errors
    /// A launch with the CPU asked for.
    fn launch_on_local_gpu(&mut self) -> Result<()> {
        if let Some(launch) = &self.launch {
            if self.device == Device::Cpu {
                return Err(RuntimeError::Device {
                    device: self.device,
                    reason: "a launch of several processes runs on GPUs; use --device cuda"
                        .to_string(),
                });
            }
            self.device = Device::Cuda(launch.local_rank);
        }
        Ok(())
    }

    /// Meets the other ranks of the launch (NCCL's unique id from rank 0) and joins them in a
    /// collective of one GPU per process, `device` this process's; the placement records the
    /// rank.
    ///
    /// # Errors
    /// No launch; any error of the rendezvous or of NCCL.
    fn join_launch(&mut self, device: &GpuDevice) -> Result<Collective> {
        let Some(launch) = self.launch.clone() else {
            return Err(RuntimeError::from(reservoir_core::ReservoirError::invalid(
                "launch",
                "this process is not a rank of a launch",
            )));
        };
        let id = exchange_id(
            launch.rank,
            launch.world,
            &launch.address,
            RENDEZVOUS_TIMEOUT,
        )?;
        if let Some((_, Placement::Cuda { rank, .. })) = self.placements.last_mut() {
            *rank = Some((launch.rank, launch.world));
        }
        Ok(Collective::process(device, launch.rank, launch.world, id)?)
    }

    /// The GPUs a job placed on `first` spreads over: `first`, then the others of `devices`
    /// (none without `devices`), which the job's placement records.
    fn listed_gpus(&mut self, first: &GpuDevice) -> Result<Vec<usize>> {
        let others = self.other_gpus(first)?;
        if let Some((_, Placement::Cuda { others: listed, .. })) = self.placements.last_mut() {
            listed.clone_from(&others);
        }
        let mut ordinals = vec![first.info().ordinal];
        ordinals.extend(others);
        Ok(ordinals)
    }

    /// The ordinals of the GPUs of `devices` besides `first` (none without `devices`).
    fn other_gpus(&self, first: &GpuDevice) -> Result<Vec<usize>> {
        let Some(devices) = &self.devices else {
            return Ok(Vec::new());
        };
        let count = gpu_reservoir::probe().devices.len();
        let ordinals = devices
            .ordinals(count)
            .map_err(|reason| RuntimeError::Device {
                device: self.device,
                reason: format!("devices = {devices}: {reason}"),
            })?;
        let primary = first.info().ordinal;
        if !ordinals.contains(&primary) {
            return Err(RuntimeError::Device {
                device: self.device,
                reason: format!(
                    "devices = {devices} leaves out GPU {primary}, where the job was placed; \
                     list it, or set device = \"cuda:N\" to one of the listed GPUs"
                ),
            });
        }
        Ok(ordinals.into_iter().filter(|&o| o != primary).collect())
    }

    /// The GPU to build `what` on, or `None` for the CPU, recording the placement.
    /// `runs_on_gpu` says why this reservoir cannot run on a GPU, if it cannot; under `auto`
    /// the cost model decides between the two before any GPU is opened.
    fn gpu_for(
        &mut self,
        what: &'static str,
        runs_on_gpu: std::result::Result<(), String>,
        shape: Shape,
        work: Workload,
    ) -> Result<Option<GpuDevice>> {
        let (gpu, placement) = match self.device {
            Device::Cpu => (None, Placement::Cpu { fallback: None }),
            Device::Cuda(ordinal) => {
                runs_on_gpu.map_err(|reason| RuntimeError::Device {
                    device: self.device,
                    reason,
                })?;
                let device = self.open(ordinal).map_err(|reason| RuntimeError::Device {
                    device: Device::Cuda(ordinal),
                    reason,
                })?;
                let info = device.info().clone();
                (
                    Some(device),
                    Placement::Cuda {
                        info,
                        others: Vec::new(),
                        rank: None,
                        reason: None,
                    },
                )
            }
            Device::Auto => {
                let cores = Par::all().threads();
                let cpu = cpu_seconds(shape, work, cores);
                let gpu = gpu_seconds(shape, work, matches!(self.gpu, Some(Ok(_))));
                let estimate = format!(
                    "estimated {cpu:.3} s on the CPU ({cores} threads) against {gpu:.3} s on a \
                     GPU with its start-up"
                );
                let chosen = runs_on_gpu
                    .and_then(|()| {
                        if cpu <= gpu {
                            Err(format!("the CPU is faster for this job ({estimate})"))
                        } else {
                            Ok(())
                        }
                    })
                    .and_then(|()| self.open(0));
                match chosen {
                    Ok(device) => {
                        let info = device.info().clone();
                        let reason = Some(format!("the GPU is faster for this job ({estimate})"));
                        (
                            Some(device),
                            Placement::Cuda {
                                info,
                                others: Vec::new(),
                                rank: None,
                                reason,
                            },
                        )
                    }
                    Err(reason) => (
                        None,
                        Placement::Cpu {
                            fallback: Some(reason),
                        },
                    ),
                }
            }
        };
        self.placements.push((what, placement));
        Ok(gpu)
    }

    /// GPU `ordinal`, opened on first use; the reason it is not usable otherwise.
    fn open(&mut self, ordinal: usize) -> std::result::Result<GpuDevice, String> {
        self.gpu
            .get_or_insert_with(|| {
                // Most GPU jobs fit their readouts with cuBLAS on the device: its library
                // loads while the GPU opens (a job that makes no handle spends a thread's
                // time on it, not its own).
                gpu_reservoir::driver::preload_cublas();
                GpuDevice::shared(ordinal).map_err(|e| e.to_string())
            })
            .clone()
    }
}

/// Why a config with `precision` cannot run on a GPU, if it cannot.
fn gpu_precision(precision: Precision) -> std::result::Result<(), String> {
    match precision {
        Precision::F32 => Ok(()),
        Precision::F64 => {
            Err("precision = \"f64\" runs on the CPU only; a GPU computes in f32".to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_is_used_when_asked_for() {
        let mut dispatch = Dispatch::new(Device::Cpu);
        let config = ReservoirConfig::default();
        let config = config.to_params().size(20).check().expect("config");
        let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
        let reservoir = dispatch
            .echo_state(&config, weights, Workload::single(10))
            .expect("reservoir");
        assert_eq!(reservoir.size(), 20);
        assert_eq!(
            dispatch.placements(),
            &[("esn", Placement::Cpu { fallback: None })]
        );
    }

    #[test]
    fn a_placement_names_its_gpus_and_its_rank() {
        let info = DeviceInfo {
            ordinal: 1,
            name: "GPU".to_string(),
            compute_capability: (9, 0),
            total_memory: 1,
            multiprocessors: 1,
        };
        let placement = |others: Vec<usize>, rank| Placement::Cuda {
            info: info.clone(),
            others,
            rank,
            reason: None,
        };
        assert_eq!(placement(Vec::new(), None).name(), "cuda:1");
        assert_eq!(placement(vec![0, 2], None).name(), "cuda:1,0,2");
        assert_eq!(
            placement(Vec::new(), Some((1, 2))).name(),
            "cuda:1, rank 1 of 2"
        );
    }
}
