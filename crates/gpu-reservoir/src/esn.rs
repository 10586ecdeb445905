//! The echo-state reservoir on the GPU, with the CPU reservoir's weights and update.

use std::sync::Arc;

use cudarc::driver::CudaSlice;
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};
use rand_chacha::ChaCha8Rng;
use reservoir_core::checks::{check_inputs, check_run, check_state};
use reservoir_core::random::{stream_rng, Stream};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::reservoir::{run_one_by_one, SequenceVisitor};
use reservoir_core::spikes::SpikePattern;
use reservoir_core::{Reservoir, ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::batched::{BatchEngine, GemmMath, Shared};
use crate::driver::csr::DeviceCsr;
use crate::driver::GpuDevice;
use crate::error::{DriverContext, GpuError, Result};
use crate::noise::noise_values;
use crate::ops::cluster::{ClusterPlan, ClusterRun, CLUSTER_MAX_N};
use crate::ops::esn::{activation_code, input_drive, step_two_launches, EsnKernels, Update};
use crate::ops::persistent::{PersistentPlan, PersistentRun, PersistentWeights, StepPath};
use crate::ridge_sums::DeviceRidgeSums;

/// Steps run per chunk: inputs, drive and states of a chunk live on the device together, and
/// the states are copied back once per chunk (never per step).
pub const CHUNK_STEPS: usize = 8192;

/// How [`Reservoir::run_many`] of a [`GpuReservoirComputer`] steps its sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ManySequences {
    /// One after another on the reservoir's single-sequence step path (the default).
    #[default]
    OneByOne,
    /// All together: the states of a batch are an N × B matrix, one GEMM per step for all of
    /// them in the given arithmetic.
    Batched(GemmMath),
}

/// An echo-state reservoir whose state lives on the GPU for the whole run.
///
/// The weights are `reservoir-core`'s (same config and seed ⇒ the same matrices as the CPU
/// reservoir), rounded to `f32` and uploaded once. Each chunk of steps: one launch computes
/// the input drive of every step, then the steps run on the reservoir's [`StepPath`] (one
/// cluster or cooperative launch for the whole chunk, or two launches per step) with no host
/// synchronisation; the recorded states are copied back once, or, for a ridge fit, added into
/// ridge sums on the device. Noise, when configured, is drawn on the CPU from the same seeded
/// stream as the CPU reservoir and uploaded, so both backends see the same noise.
#[derive(Debug)]
pub struct GpuReservoirComputer {
    device: GpuDevice,
    kernels: Arc<EsnKernels>,
    config: ReservoirConfig,
    weights: ReservoirWeights,
    recurrent: DeviceCsr<f32>,
    input: CudaSlice<f32>,
    bias: CudaSlice<f32>,
    state: CudaSlice<f32>,
    noise: ChaCha8Rng,
    /// Bin width of spike patterns given to [`GpuReservoirComputer::process_gpu`].
    dt_ms: f64,
    persistent: Option<PersistentPlan>,
    cluster: Option<ClusterPlan>,
    path: StepPath,
    many: ManySequences,
    /// The many-sequence engine (a dense W), made on the first `run_many` that uses it.
    batch: Option<BatchEngine>,
}

impl GpuReservoirComputer {
    /// Generates the weights for `config` (as the CPU reservoir does) and uploads them to
    /// `device`, which every reservoir on that GPU can share.
    pub fn new_shared(config: &ReservoirConfig, device: &GpuDevice) -> Result<Self> {
        let (weights, _) = ReservoirWeights::generate(config)?;
        Self::from_weights(config, weights, device)
    }

    /// Uploads existing weights (a loaded model) to `device`.
    pub fn from_weights(
        config: &ReservoirConfig,
        weights: ReservoirWeights,
        device: &GpuDevice,
    ) -> Result<Self> {
        weights.check_fits(config)?;
        let w = weights.recurrent();
        let persistent = PersistentPlan::for_matrix(device, w)?;
        let cluster = ClusterPlan::for_matrix(device, w)?;
        let path = match (&cluster, &persistent) {
            (Some(_), _) => StepPath::Cluster,
            (None, Some(_)) => StepPath::Persistent,
            (None, None) => StepPath::PerStep,
        };
        Ok(Self {
            kernels: device.kernels::<EsnKernels>()?,
            recurrent: DeviceCsr::upload(device, w, |v| v as f32)?,
            input: device.upload_f32(weights.input(), "uploading W_in")?,
            bias: device.upload_f32(weights.bias(), "uploading b")?,
            state: device
                .stream()
                .alloc_zeros::<f32>(config.size())
                .context("allocating the state")?,
            noise: stream_rng(config.seed(), Stream::Noise),
            device: device.clone(),
            config: config.clone(),
            weights,
            dt_ms: 1.0,
            path,
            persistent,
            cluster,
            many: ManySequences::default(),
            batch: None,
        })
    }

    /// The device the reservoir runs on.
    pub fn device(&self) -> &GpuDevice {
        &self.device
    }

    /// The configuration the reservoir was built from.
    pub fn config(&self) -> &ReservoirConfig {
        &self.config
    }

    /// The weights (in `f64`, as generated).
    pub fn weights(&self) -> &ReservoirWeights {
        &self.weights
    }

    /// How steps are launched: by default [`StepPath::Cluster`] where the device and N allow
    /// it, else [`StepPath::Persistent`] where the device supports cooperative launch, else
    /// [`StepPath::PerStep`].
    pub fn step_path(&self) -> StepPath {
        self.path
    }

    /// Forces a step path (benchmarks and tests compare them).
    ///
    /// # Errors
    /// [`GpuError::Unsupported`] for a path this device or matrix cannot run.
    pub fn with_step_path(mut self, path: StepPath) -> Result<Self> {
        if path == StepPath::Persistent && self.persistent.is_none() {
            return Err(GpuError::Unsupported {
                what: "the persistent step path".into(),
                reason: "this device has no cooperative launch, or x does not fit in shared \
                         memory"
                    .into(),
            });
        }
        if path == StepPath::Cluster && self.cluster.is_none() {
            return Err(GpuError::Unsupported {
                what: "the cluster step path".into(),
                reason: format!(
                    "no thread-block cluster of this device holds this W (a cluster needs \
                     compute capability 9.0+ and room for N <= {CLUSTER_MAX_N} on chip; here \
                     {:?} and N = {})",
                    self.device.info().compute_capability,
                    self.config.size()
                ),
            });
        }
        self.path = path;
        Ok(self)
    }

    /// Where the persistent kernel reads W from (`None` without a persistent plan).
    pub fn persistent_weights(&self) -> Option<PersistentWeights> {
        self.persistent.as_ref().map(PersistentPlan::weights)
    }

    /// How [`Reservoir::run_many`] steps its sequences (default one after another).
    ///
    /// # Errors
    /// [`GemmMath::F16`] for a linear reservoir (its states can leave f16's range) or a W
    /// with a weight beyond f16's range.
    pub fn with_many_sequences(mut self, how: ManySequences) -> Result<Self> {
        if let ManySequences::Batched(math) = how {
            BatchEngine::check(&self.config, &self.weights, math)?;
        }
        self.many = how;
        self.batch = None;
        Ok(self)
    }

    /// Sets the bin width (ms) of the spike patterns given to
    /// [`GpuReservoirComputer::process_gpu`] (default 1 ms: one reservoir step per bin).
    ///
    /// # Errors
    /// A `dt_ms` that is not finite and > 0.
    pub fn with_dt_ms(mut self, dt_ms: f64) -> Result<Self> {
        if !(dt_ms.is_finite() && dt_ms > 0.0) {
            return Err(ReservoirError::invalid(
                "process_gpu",
                format!("dt_ms must be finite and > 0, got {dt_ms}"),
            )
            .into());
        }
        self.dt_ms = dt_ms;
        Ok(self)
    }

    /// Runs a spike pattern through the reservoir from its current state, binned at the
    /// reservoir's `dt_ms` (one step per bin): [`Reservoir::run_pattern`] with that bin width.
    /// Returns the states (bins × N) for a readout to train on.
    pub fn process_gpu(&mut self, pattern: &SpikePattern) -> reservoir_core::Result<Array2<f64>> {
        self.run_pattern(pattern, self.dt_ms)
    }

    /// Runs the rows of `inputs` (≤ [`CHUNK_STEPS`]) and copies their states into `out`.
    fn run_chunk(&mut self, inputs: ArrayView2<f64>, mut out: ArrayViewMut2<f64>) -> Result<()> {
        let states = self.run_chunk_on_device(inputs)?;
        let host = self
            .device
            .stream()
            .clone_dtoh(&states)
            .context("copying the states back")?;
        for (dst, &src) in out.iter_mut().zip(&host) {
            *dst = f64::from(src);
        }
        Ok(())
    }

    /// Runs the rows of `inputs` (≤ [`CHUNK_STEPS`], at least one, already checked) from the
    /// current state and returns their states (steps × N, row-major) on the device; the
    /// reservoir keeps the last.
    pub(crate) fn run_chunk_on_device(
        &mut self,
        inputs: ArrayView2<f64>,
    ) -> Result<CudaSlice<f32>> {
        let (steps, n, k) = (inputs.nrows(), self.config.size(), self.config.input_size());
        let stream = self.device.stream().clone();
        let host_u: Vec<f32> = inputs.iter().map(|&v| v as f32).collect();
        let u = stream.clone_htod(&host_u).context("uploading inputs")?;
        let mut drive = stream
            .alloc_zeros::<f32>(steps * n)
            .context("allocating the drive")?;
        let mut states = stream
            .alloc_zeros::<f32>(steps * n)
            .context("allocating the states")?;
        let noise = self.draw_noise(steps)?;
        input_drive(
            &self.device,
            &self.kernels,
            &u.slice(..),
            &self.input.slice(..),
            &self.bias.slice(..),
            noise.as_ref().map(|noise| noise.slice(..)).as_ref(),
            &mut drive.slice_mut(..),
            (steps, n, k),
        )?;
        let update = Update {
            leak: self.config.leak_rate() as f32,
            activation: activation_code(self.config.activation()),
        };
        match (self.path, self.persistent.as_mut(), self.cluster.as_ref()) {
            (StepPath::Cluster, _, Some(plan)) => {
                let run = ClusterRun {
                    drive: &drive,
                    x0: &self.state,
                    steps,
                    update,
                };
                plan.launch(&self.device, run, &mut states)?;
            }
            (StepPath::Persistent, Some(plan), _) => {
                let run = PersistentRun {
                    w: &self.recurrent,
                    drive: &drive,
                    x0: self.state.slice(..),
                    steps,
                    update,
                };
                plan.launch(&self.device, run, &mut states)?;
            }
            _ => self.per_step(&drive, &mut states, steps, update)?,
        }
        stream
            .memcpy_dtod(&states.slice((steps - 1) * n..), &mut self.state)
            .context("keeping the final state")?;
        Ok(states)
    }

    /// The two-launches-per-step path.
    fn per_step(
        &self,
        drive: &CudaSlice<f32>,
        states: &mut CudaSlice<f32>,
        steps: usize,
        update: Update,
    ) -> Result<()> {
        let n = self.config.size();
        let mut pre = self
            .device
            .stream()
            .alloc_zeros::<f32>(n)
            .context("allocating the pre-activation")?;
        for t in 0..steps {
            let (done, mut rest) = states.split_at_mut(t * n);
            let previous = if t == 0 {
                self.state.slice(..)
            } else {
                done.slice((t - 1) * n..)
            };
            step_two_launches(
                &self.device,
                &self.kernels,
                &self.recurrent,
                &previous,
                &drive.slice(t * n..(t + 1) * n),
                &mut pre.slice_mut(..),
                &mut rest.slice_mut(..n),
                update,
            )?;
        }
        Ok(())
    }

    /// The noise of `steps` steps, drawn exactly as the CPU reservoir draws it.
    fn draw_noise(&mut self, steps: usize) -> Result<Option<CudaSlice<f32>>> {
        if self.config.noise_level() <= 0.0 {
            return Ok(None);
        }
        let host = noise_values(
            &mut self.noise,
            self.config.noise_level(),
            steps * self.config.size(),
        );
        Ok(Some(
            self.device
                .stream()
                .clone_htod(&host)
                .context("uploading the noise")?,
        ))
    }
}

impl Reservoir for GpuReservoirComputer {
    fn size(&self) -> usize {
        self.config.size()
    }

    fn input_size(&self) -> usize {
        self.config.input_size()
    }

    fn reset(&mut self) -> reservoir_core::Result<()> {
        self.device
            .stream()
            .memset_zeros(&mut self.state)
            .context("resetting the state")?;
        Ok(())
    }

    fn state(&self) -> reservoir_core::Result<Array1<f64>> {
        let host = self
            .device
            .stream()
            .clone_dtoh(&self.state)
            .context("copying the state back")?;
        Ok(host.iter().map(|&v| f64::from(v)).collect())
    }

    fn set_state(&mut self, state: ArrayView1<f64>) -> reservoir_core::Result<()> {
        check_state(self.size(), &state)?;
        let host: Vec<f32> = state.iter().map(|&v| v as f32).collect();
        self.device
            .stream()
            .memcpy_htod(&host, &mut self.state)
            .context("uploading the state")?;
        Ok(())
    }

    fn run_into(
        &mut self,
        inputs: ArrayView2<f64>,
        mut states: ArrayViewMut2<f64>,
    ) -> reservoir_core::Result<()> {
        check_run(self.size(), self.input_size(), &inputs, &states)?;
        for start in (0..inputs.nrows()).step_by(CHUNK_STEPS) {
            let end = (start + CHUNK_STEPS).min(inputs.nrows());
            self.run_chunk(
                inputs.slice(ndarray::s![start..end, ..]),
                states.slice_mut(ndarray::s![start..end, ..]),
            )?;
        }
        Ok(())
    }

    /// As [`ManySequences`] says: one after another, or all together, one GEMM per step for
    /// all of them.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> reservoir_core::Result<()> {
        let ManySequences::Batched(math) = self.many else {
            return run_one_by_one(self, sequences, visit);
        };
        for inputs in sequences {
            check_inputs(self.input_size(), inputs)?;
        }
        if self.batch.as_ref().is_none_or(|b| b.math() != math) {
            self.batch = Some(BatchEngine::new(
                &self.device,
                &self.config,
                &self.weights,
                math,
            )?);
        }
        if let Some(engine) = &self.batch {
            let shared = Shared {
                device: &self.device,
                kernels: &self.kernels,
                config: &self.config,
                input: &self.input,
                bias: &self.bias,
            };
            let level = self.config.noise_level();
            let noise = (level > 0.0).then_some((&mut self.noise, level));
            engine.run(&shared, sequences, noise, visit)?;
        }
        self.reset()
    }

    /// Adds XᵀX on the device ([`crate::DeviceRidgeSums`]): the states never cross the bus.
    fn accumulate_ridge(
        &mut self,
        inputs: ArrayView2<f64>,
        targets: ArrayView2<f64>,
        washout: usize,
        acc: &mut RidgeAccumulator,
        progress: &mut dyn FnMut(usize, usize),
    ) -> reservoir_core::Result<()> {
        Ok(accumulate_on_device(
            self, inputs, targets, washout, acc, progress,
        )?)
    }
}

/// Runs `reservoir` over `inputs` in chunks of [`CHUNK_STEPS`] steps and adds each chunk's
/// rows after the washout to [`DeviceRidgeSums`] on the device; the sums are copied back once,
/// at the end, and merged into `acc`. `progress` is called after each chunk.
fn accumulate_on_device(
    reservoir: &mut GpuReservoirComputer,
    inputs: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    washout: usize,
    acc: &mut RidgeAccumulator,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<()> {
    let (total, n) = (inputs.nrows(), reservoir.size());
    check_inputs(reservoir.input_size(), &inputs)?;
    if targets.nrows() != total {
        return Err(ReservoirError::shape(
            "training targets",
            format!("{total} rows"),
            format!("{} rows", targets.nrows()),
        )
        .into());
    }
    let mut sums = DeviceRidgeSums::new(reservoir.device(), n, targets.ncols(), 1)?;
    for start in (0..total).step_by(CHUNK_STEPS) {
        let end = (start + CHUNK_STEPS).min(total);
        let states = reservoir.run_chunk_on_device(inputs.slice(s![start..end, ..]))?;
        let first = washout.clamp(start, end);
        if first < end {
            sums.add(
                &states.slice((first - start) * n..),
                targets.slice(s![first..end, ..]),
            )?;
        }
        progress(end, total);
    }
    for block in sums.download()? {
        acc.merge(&block)?;
    }
    Ok(())
}
