//! [`Dispatch`]: builds every reservoir of a job (or a sweep's lanes) where the
//! [`Device`] asked for says, remembering where each went.

use gpu_reservoir::{
    shards_pay, Collective, GemmMath, GpuDeepReservoir, GpuDevice, GpuLaneRunner, GpuLifNetwork,
    GpuReservoirComputer, MultiGpuLaneRunner, ShardedReservoir, Startup, LANE_GROUP,
};
use reservoir_core::architecture::{Architecture, ArchitectureWeights, EchoStateBuilder};
use reservoir_core::deep::{DeepEsnConfig, DeepReservoir};
use reservoir_core::lanes::{CpuLaneRunner, LaneRunner};
use reservoir_core::lif::{LifConfig, LifNetwork, LifWeights};
use reservoir_core::{
    cpu_reservoir, Par, Reservoir, ReservoirConfig, ReservoirError, ReservoirWeights,
};

use super::cost::{Shape, Workload};
use super::launch::Launch;
use super::name::{Device, Devices};
use super::placement::{gpu_precision, Chooser, Placement};
use super::ranks::RankLaneRunner;
use super::topology::Topology;
use crate::error::{Result, RuntimeError};

/// Data files of at least this many bytes make `auto` open GPU 0 while they are read
/// ([`Dispatch::open_early`]): jobs of that size run on a GPU where one is usable.
pub const EARLY_OPEN_BYTES: u64 = 64 << 20;

/// The thread of [`Dispatch::open_early`], waited for when dropped.
#[derive(Debug)]
pub struct EarlyOpen(Option<std::thread::JoinHandle<()>>);

impl Drop for EarlyOpen {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

/// A many-sequence job's reservoirs, one per GPU of this process, and the collective that
/// joins them to each other (and to the other processes of a launch).
#[derive(Debug)]
pub(crate) struct Spread {
    /// The GPUs' collective; its ranks say which share of the sequences each takes.
    pub(crate) collective: Collective,
    /// The reservoir of each local member of `collective`, in order, all with the same
    /// weights.
    pub(crate) reservoirs: Vec<GpuReservoirComputer>,
}

/// A reservoir for a job of many sequences: on one device, or spread over several GPUs.
pub(crate) enum Built {
    /// One reservoir, on the CPU or one GPU.
    One(Box<dyn Reservoir>),
    /// One reservoir per GPU.
    Spread(Spread),
}

/// The one dispatch point: builds every reservoir of a job on the device asked for, and
/// remembers where each went. The GPU is opened once, on first use.
#[derive(Debug)]
pub struct Dispatch {
    device: Device,
    topology: Topology,
    batch_math: GemmMath,
    chooser: Chooser,
    placements: Vec<(&'static str, Placement)>,
}

impl Dispatch {
    /// Dispatches to `device`.
    pub fn new(device: Device) -> Self {
        Self {
            device,
            topology: Topology::default(),
            batch_math: GemmMath::F32,
            chooser: Chooser::default(),
            placements: Vec::new(),
        }
    }

    /// Lets a job that runs on a GPU spread over `devices` (`None`: only the GPU of the device
    /// asked for): a sweep's lanes, a classifier's sequences, a large dense W's rows.
    pub fn with_devices(mut self, devices: Option<Devices>) -> Self {
        self.topology.devices = devices;
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
        self.topology.launch = launch;
        self
    }

    /// This process's launch, if it is one of several.
    pub fn launch(&self) -> Option<&Launch> {
        self.topology.launch.as_ref()
    }

    /// The device asked for.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Starts opening the GPU this job will use on a thread of its own, so that the GPU opens
    /// while the job reads `data_bytes` of files: the GPU asked for by name (this rank's
    /// under a launch), or under `auto` GPU 0 when the data is large enough that the GPU is
    /// likely chosen ([`EARLY_OPEN_BYTES`]). The guard waits for the thread when dropped, so
    /// that no thread is inside the driver when the process ends.
    pub fn open_early(&self, data_bytes: u64) -> EarlyOpen {
        let ordinal = match self.topology.device(self.device) {
            Ok(Device::Cuda(ordinal)) => ordinal,
            Ok(Device::Auto) if data_bytes >= EARLY_OPEN_BYTES => 0,
            _ => return EarlyOpen(None),
        };
        gpu_reservoir::driver::preload_cublas();
        EarlyOpen(Some(std::thread::spawn(move || {
            // An error here is met again, and reported, where the job opens the GPU.
            if let Ok(device) = GpuDevice::shared(ordinal) {
                let _ = device.warm_up_blas();
            }
        })))
    }

    /// `(what, where)` for everything built so far, in order (`what` is `esn`, `lif` or
    /// `sweep`).
    pub fn placements(&self) -> &[(&'static str, Placement)] {
        &self.placements
    }

    /// What starting the GPU cost, phase by phase (`None` when no GPU was opened).
    pub fn startup(&self) -> Option<Startup> {
        self.chooser.startup()
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
        self.device = self.topology.device(self.device)?;
        let shape = Shape::of_weights(weights.recurrent(), weights.input());
        let gpu = self.gpu_for("esn", gpu_precision(config.precision()), shape, work)?;
        self.echo_state_on(gpu, config, weights)
    }

    /// The echo-state reservoir for `config` on `weights` on `gpu` (placed already; `None`:
    /// the CPU), split over the GPUs or the ranks where [`Dispatch::echo_state`] says.
    fn echo_state_on(
        &mut self,
        gpu: Option<GpuDevice>,
        config: &ReservoirConfig,
        weights: ReservoirWeights,
    ) -> Result<Box<dyn Reservoir>> {
        let Some(device) = gpu else {
            return cpu_reservoir(config, weights, Par::all()).map_err(Into::into);
        };
        // Under a launch a reservoir worth splitting is split over the ranks, one shard per
        // process; a smaller one runs whole on every rank.
        if let Some(world) = self.topology.launch.as_ref().map(|l| l.world) {
            if shards_pay(config, world) {
                let collective = self.join_launch(&device)?;
                return Ok(Box::new(ShardedReservoir::new(
                    config, &weights, collective,
                )?));
            }
        } else if self.topology.devices.is_some() {
            let ordinals = self.listed_gpus(&device)?;
            if shards_pay(config, ordinals.len()) {
                let collective = Collective::local(&ordinals)?;
                return Ok(Box::new(ShardedReservoir::new(
                    config, &weights, collective,
                )?));
            }
            self.record_others(&[]);
        }
        let mut reservoir = GpuReservoirComputer::from_weights(config, weights, &device)?
            .with_batch_math(self.batch_math)?;
        // The host's share of the work (summaries of states that come back whole).
        reservoir.set_par(Par::all());
        Ok(Box::new(reservoir))
    }

    /// The reservoir `architecture` describes, on its `weights`, for a job of `work`: each
    /// echo-state network placed as [`Dispatch::echo_state`] places it (a deep stack whose
    /// every layer goes to one GPU runs there whole, as a [`GpuDeepReservoir`]), NVAR on the
    /// CPU, the links around them.
    ///
    /// # Errors
    /// As [`Dispatch::echo_state`]; weights that do not fit the description.
    pub fn build(
        &mut self,
        architecture: &Architecture,
        weights: &ArchitectureWeights,
        work: Workload,
    ) -> Result<Box<dyn Reservoir>> {
        let mut placing = Placing {
            dispatch: self,
            work,
            error: None,
        };
        let built = architecture.build_with(weights, Par::all(), &mut placing);
        match (built, placing.error) {
            (Ok(reservoir), _) => Ok(reservoir),
            (Err(_), Some(e)) => Err(e),
            (Err(e), None) => Err(e.into()),
        }
    }

    /// The deep stack of `config` on its layers' `weights` (one per layer), for a job of
    /// `work`: each layer placed as [`Dispatch::echo_state`] places it. When every layer goes
    /// to the one GPU of a process that is not spreading work over several, the stack is a
    /// [`GpuDeepReservoir`], whose layers keep their states on the device; otherwise each
    /// layer is built where it was placed, and the stack passes states between them on the
    /// host.
    ///
    /// # Errors
    /// As [`Dispatch::echo_state`]; layers that do not stack.
    fn deep_echo_state(
        &mut self,
        config: &DeepEsnConfig,
        weights: &[ReservoirWeights],
        work: Workload,
    ) -> Result<Box<dyn Reservoir>> {
        let layers = config.layer_configs().iter().zip(weights);
        let readout = config.readout_layers().map(<[usize]>::to_vec);
        self.device = self.topology.device(self.device)?;
        if self.topology.launch.is_some() || self.topology.devices.is_some() {
            // A layer worth splitting is split over the GPUs or the ranks, each on its own.
            let built = layers
                .map(|(c, w)| self.echo_state(c, w.clone(), work))
                .collect::<Result<Vec<_>>>()?;
            return Ok(Box::new(DeepReservoir::new(
                built,
                config.input_to_all(),
                readout,
            )?));
        }
        let mut placed = Vec::with_capacity(weights.len());
        for (c, w) in layers.clone() {
            let shape = Shape::of_weights(w.recurrent(), w.input());
            placed.push(self.gpu_for("esn", gpu_precision(c.precision()), shape, work)?);
        }
        let one_gpu = match placed.first() {
            Some(Some(first)) => placed
                .iter()
                .all(|gpu| gpu.as_ref() == Some(first))
                .then(|| first.clone()),
            _ => None,
        };
        if let Some(device) = one_gpu {
            let built = layers
                .map(|(c, w)| {
                    let mut layer = GpuReservoirComputer::from_weights(c, w.clone(), &device)?
                        .with_batch_math(self.batch_math)?;
                    // The host's share of the work (summaries of states that come back whole).
                    layer.set_par(Par::all());
                    Ok(layer)
                })
                .collect::<Result<Vec<_>>>()?;
            return Ok(Box::new(GpuDeepReservoir::from_layers(
                built,
                config.input_to_all(),
                readout,
            )?));
        }
        let built = layers
            .zip(placed)
            .map(|((c, w), gpu)| self.echo_state_on(gpu, c, w.clone()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(DeepReservoir::new(
            built,
            config.input_to_all(),
            readout,
        )?))
    }

    /// The echo-state reservoir of a job of many sequences: on the CPU as
    /// [`Dispatch::echo_state`] places it, or on GPUs as a [`Spread`]: one GPU alone (no NCCL
    /// needed), every GPU `devices` lists, or, where this process is a rank of a launch, GPU
    /// `LOCAL_RANK` joined to the other ranks.
    ///
    /// # Errors
    /// As [`Dispatch::echo_state`]; a launch with the CPU asked for; any error of meeting the
    /// other ranks or of building the collective.
    pub(crate) fn echo_state_spread(
        &mut self,
        config: &ReservoirConfig,
        weights: ReservoirWeights,
        work: Workload,
    ) -> Result<Built> {
        self.device = self.topology.device(self.device)?;
        let shape = Shape::of_weights(weights.recurrent(), weights.input());
        let Some(device) = self.gpu_for("esn", gpu_precision(config.precision()), shape, work)?
        else {
            return Ok(Built::One(cpu_reservoir(config, weights, Par::all())?));
        };
        let collective = if self.topology.launch.is_some() {
            self.join_launch(&device)?
        } else {
            match self.listed_gpus(&device)?.as_slice() {
                [_] => Collective::solo(&device),
                ordinals => Collective::local(ordinals)?,
            }
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
                        let mut reservoir =
                            GpuReservoirComputer::from_weights(config, weights, device)?
                                .with_batch_math(math)?;
                        reservoir.set_par(Par::all());
                        Ok::<_, gpu_reservoir::GpuError>(reservoir)
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|thread| {
                    thread
                        .join()
                        .map_err(|_| RuntimeError::Device {
                            device: self.device.to_string(),
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
        self.device = self.topology.device(self.device)?;
        let per_row = |density: f64| ((density * base.size() as f64).round() as usize).max(1);
        let shape = Shape {
            size: base.size(),
            nonzeros: per_row(base.connection_prob()) * base.size(),
            input_nonzeros: per_row(base.input_connectivity()) * base.input_size(),
            lanes,
            batches_sequences: false,
        };
        let gpu = self.gpu_for("sweep", gpu_precision(base.precision()), shape, work)?;
        let Some(device) = gpu else {
            return Ok(Box::new(CpuLaneRunner::new(Par::all())));
        };
        if self.topology.launch.is_some() {
            let collective = self.join_launch(&device)?;
            let runner = GpuLaneRunner::new(&device)?.with_math(math);
            return Ok(Box::new(RankLaneRunner::new(runner, collective)));
        }
        // Only the GPUs that get a group of lanes.
        let mut ordinals = self.listed_gpus(&device)?;
        ordinals.truncate(lanes.div_ceil(LANE_GROUP).max(1));
        self.record_others(&ordinals[1..]);
        match ordinals.as_slice() {
            [_] => Ok(Box::new(GpuLaneRunner::new(&device)?.with_math(math))),
            ordinals => Ok(Box::new(MultiGpuLaneRunner::new(ordinals)?.with_math(math))),
        }
    }

    /// The GPU to build `what` on, or `None` for the CPU, recording the placement.
    fn gpu_for(
        &mut self,
        what: &'static str,
        runs_on_gpu: std::result::Result<(), String>,
        shape: Shape,
        work: Workload,
    ) -> Result<Option<GpuDevice>> {
        let (gpu, placement) = self.chooser.choose(self.device, runs_on_gpu, shape, work)?;
        self.placements.push((what, placement));
        Ok(gpu)
    }

    /// [`Topology::join_launch`], the rank recorded with the reservoir being built.
    fn join_launch(&mut self, device: &GpuDevice) -> Result<Collective> {
        let collective = self.topology.join_launch(device)?;
        let ranked = self.topology.launch.as_ref().map(|l| (l.rank, l.world));
        if let Some((_, Placement::Cuda { rank, .. })) = self.placements.last_mut() {
            *rank = ranked;
        }
        Ok(collective)
    }

    /// [`Topology::listed_gpus`], the others recorded with the reservoir being built.
    fn listed_gpus(&mut self, first: &GpuDevice) -> Result<Vec<usize>> {
        let ordinals = self.topology.listed_gpus(self.device, first)?;
        self.record_others(&ordinals[1..]);
        Ok(ordinals)
    }

    /// Records `others` as the other GPUs of the reservoir being built.
    fn record_others(&mut self, others: &[usize]) {
        if let Some((_, Placement::Cuda { others: listed, .. })) = self.placements.last_mut() {
            *listed = others.to_vec();
        }
    }
}

/// How [`Dispatch::build`] builds an architecture's echo-state networks: each placed by the
/// dispatch, the first error of placing one kept whole (the builder hands the core's on).
struct Placing<'a> {
    dispatch: &'a mut Dispatch,
    work: Workload,
    error: Option<RuntimeError>,
}

impl Placing<'_> {
    /// `built`, its error kept and handed on as the core's.
    fn keep(
        &mut self,
        built: Result<Box<dyn Reservoir>>,
    ) -> reservoir_core::Result<Box<dyn Reservoir>> {
        built.map_err(|e| {
            let core = ReservoirError::invalid("reservoir", e.to_string());
            self.error.get_or_insert(e);
            core
        })
    }
}

impl EchoStateBuilder for Placing<'_> {
    fn echo_state(
        &mut self,
        config: &ReservoirConfig,
        weights: ReservoirWeights,
    ) -> reservoir_core::Result<Box<dyn Reservoir>> {
        let built = self.dispatch.echo_state(config, weights, self.work);
        self.keep(built)
    }

    fn deep_echo_state(
        &mut self,
        config: &DeepEsnConfig,
        weights: &[ReservoirWeights],
    ) -> reservoir_core::Result<Box<dyn Reservoir>> {
        let built = self.dispatch.deep_echo_state(config, weights, self.work);
        self.keep(built)
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
}
