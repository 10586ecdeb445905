//! The echo-state reservoir on the GPU, with the CPU reservoir's weights and update.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use reservoir_core::reservoir::{check_run_shapes, check_state, AccumulateRun};
use reservoir_core::rng::{stream_rng, Stream};
use reservoir_core::spikes::SpikePattern;
use reservoir_core::{Activation, Reservoir, ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::cluster::{ClusterPlan, ClusterRun};
use crate::csr::DeviceCsr;
use crate::device::GpuDevice;
use crate::error::{DriverContext, GpuError, Result};
use crate::persistent::{PersistentPlan, PersistentRun, PersistentWeights, StepPath};

/// Steps run per chunk: inputs, drive and states of a chunk live on the device together, and
/// the states are copied back once per chunk (never per step).
pub const CHUNK_STEPS: usize = 8192;
const THREADS: u32 = 256;

/// An echo-state reservoir whose state lives on the GPU for the whole run.
///
/// The weights are `reservoir-core`'s (same config and seed ⇒ the same matrices as the CPU
/// reservoir), rounded to `f32` and uploaded once. Each chunk of steps: one launch computes
/// the input drive of every step (`matvec_input_kernel`), then the steps run on the
/// reservoir's [`StepPath`] (one cluster or cooperative launch for the whole chunk, or two
/// launches per step) with no host synchronisation; the recorded states are copied back once,
/// or, for a ridge fit, added into ridge sums on the device. Noise, when configured, is drawn on the CPU from the
/// same seeded stream as the CPU reservoir and uploaded, so both backends see the same noise.
#[derive(Debug)]
pub struct GpuReservoirComputer {
    device: GpuDevice,
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
}

fn blocks(threads: usize) -> u32 {
    threads.div_ceil(THREADS as usize) as u32
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
        let stream = device.stream();
        let w = weights.recurrent();
        let recurrent = DeviceCsr::upload(device, w, |v| v as f32)?;
        let input = device.upload_f32(weights.input(), "uploading W_in")?;
        let bias = device.upload_f32(weights.bias(), "uploading b")?;
        let state = stream
            .alloc_zeros::<f32>(config.size)
            .context("allocating the state")?;
        let persistent = PersistentPlan::for_matrix(device, w)?;
        let cluster = ClusterPlan::for_matrix(device, w)?;
        let path = match (&cluster, &persistent) {
            (Some(_), _) => StepPath::Cluster,
            (None, Some(_)) => StepPath::Persistent,
            (None, None) => StepPath::PerStep,
        };
        Ok(Self {
            device: device.clone(),
            noise: stream_rng(config.seed, Stream::Noise),
            config: config.clone(),
            weights,
            recurrent,
            input,
            bias,
            state,
            dt_ms: 1.0,
            path,
            persistent,
            cluster,
        })
    }

    /// The device the reservoir runs on.
    pub fn device(&self) -> &GpuDevice {
        &self.device
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
    /// [`StepPath::Persistent`] on a device or matrix it cannot run on.
    pub fn with_step_path(mut self, path: StepPath) -> Result<Self> {
        if path == StepPath::Persistent && self.persistent.is_none() {
            return Err(GpuError::Unavailable("this device cannot run the persistent kernel (no cooperative launch, or x does not fit in shared memory)".into()));
        }
        if path == StepPath::Cluster && self.cluster.is_none() {
            return Err(GpuError::Unavailable(format!(
                "this device cannot run the cluster kernel (it needs compute capability 9.0+ and N <= {})",
                crate::cluster::CLUSTER_MAX_N
            )));
        }
        self.path = path;
        Ok(self)
    }

    /// Where the persistent kernel reads W from (`None` without a persistent plan).
    pub fn persistent_weights(&self) -> Option<PersistentWeights> {
        self.persistent.as_ref().map(PersistentPlan::weights)
    }

    /// Sets the bin width (ms) of the spike patterns given to
    /// [`GpuReservoirComputer::process_gpu`] (default 1 ms: one reservoir step per bin).
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

    /// Runs a spike pattern through the reservoir from its current state: the pattern is binned
    /// at the reservoir's `dt_ms` (spike counts kept), one step per bin; returns the states
    /// (bins × N) for a readout to train on.
    pub fn process_gpu(&mut self, pattern: &SpikePattern) -> Result<Array2<f64>> {
        if pattern.n_neurons() != self.config.input_size {
            return Err(ReservoirError::shape(
                "spike pattern channels",
                self.config.input_size,
                pattern.n_neurons(),
            )
            .into());
        }
        let inputs = pattern.to_input_matrix(self.dt_ms)?;
        Ok(self.run(inputs.view())?)
    }

    /// Runs `steps` rows of `inputs` (≤ [`CHUNK_STEPS`]) and copies their states into `out`.
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

    /// Runs the rows of `inputs` (≤ [`CHUNK_STEPS`], at least one) from the current state and
    /// returns their states (steps × N, row-major) on the device; the reservoir keeps the last.
    pub(crate) fn run_chunk_on_device(
        &mut self,
        inputs: ArrayView2<f64>,
    ) -> Result<CudaSlice<f32>> {
        let (steps, n, k) = (inputs.nrows(), self.config.size, self.config.input_size);
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
        let kernels = self.device.gemv();
        let (steps_i, n_i, k_i) = (steps as i32, n as i32, k as i32);
        let mut launch = stream.launch_builder(&kernels.matvec_input);
        launch.arg(&u).arg(&self.input).arg(&self.bias);
        let null: u64 = 0;
        match &noise {
            Some(noise) => launch.arg(noise),
            None => launch.arg(&null),
        };
        launch.arg(&mut drive).arg(&steps_i).arg(&n_i).arg(&k_i);
        // SAFETY: u is steps×k, input n×k, bias n, noise (when given) and drive steps×n, all
        // allocated above with those lengths; the kernel guards idx < steps·n.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: (blocks(steps * n), 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .context("launching matvec_input_kernel")?;
        let leak = self.config.leak_rate as f32;
        let activation: i32 = match self.config.activation {
            Activation::Tanh => 0,
            Activation::Identity => 1,
        };
        match (self.path, self.persistent.as_mut(), self.cluster.as_ref()) {
            (StepPath::Cluster, _, Some(plan)) => {
                let run = ClusterRun {
                    drive: &drive,
                    x0: &self.state,
                    n,
                    steps,
                    leak,
                    activation,
                };
                plan.launch(&self.device, run, &mut states)?;
            }
            (StepPath::Persistent, Some(plan), _) => {
                let run = PersistentRun {
                    row_ptr: &self.recurrent.row_ptr,
                    col_idx: &self.recurrent.col_idx,
                    values: &self.recurrent.values,
                    drive: &drive,
                    x0: self.state.slice(..),
                    n,
                    steps,
                    leak,
                    activation,
                };
                plan.launch(&self.device, run, &mut states)?;
            }
            _ => self.per_step(&drive, &mut states, steps, leak, activation)?,
        }
        stream
            .memcpy_dtod(&states.slice((steps - 1) * n..), &mut self.state)
            .context("keeping the final state")?;
        Ok(states)
    }

    /// The two-launches-per-step path (shipped PTX kernels).
    fn per_step(
        &self,
        drive: &CudaSlice<f32>,
        states: &mut CudaSlice<f32>,
        steps: usize,
        leak: f32,
        activation: i32,
    ) -> Result<()> {
        let n = self.config.size;
        let n_i = n as i32;
        let stream = self.device.stream();
        let kernels = self.device.gemv();
        let mut pre = stream
            .alloc_zeros::<f32>(n)
            .context("allocating the pre-activation")?;
        let rows = LaunchConfig {
            grid_dim: (blocks(n * 32), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let elementwise = LaunchConfig {
            grid_dim: (blocks(n), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        for t in 0..steps {
            let (done, mut rest) = states.split_at_mut(t * n);
            let mut next = rest.slice_mut(..n);
            let previous = if t == 0 {
                self.state.slice(..)
            } else {
                done.slice((t - 1) * n..)
            };
            let drive_t = drive.slice(t * n..(t + 1) * n);
            let mut launch = stream.launch_builder(&kernels.matvec_reservoir);
            launch
                .arg(&self.recurrent.row_ptr)
                .arg(&self.recurrent.col_idx)
                .arg(&self.recurrent.values)
                .arg(&previous)
                .arg(&drive_t)
                .arg(&mut pre)
                .arg(&n_i);
            // SAFETY: row_ptr has n+1 entries ending at nnz = len(col_idx) = len(values), every
            // column index < n = len(previous); drive_t and pre have n entries.
            unsafe { launch.launch(rows) }.context("launching matvec_reservoir_kernel")?;
            let mut launch = stream.launch_builder(&kernels.leaky_integration);
            launch
                .arg(&previous)
                .arg(&pre)
                .arg(&mut next)
                .arg(&leak)
                .arg(&activation)
                .arg(&n_i);
            // SAFETY: previous, pre and next have n entries; next does not overlap previous.
            unsafe { launch.launch(elementwise) }.context("launching leaky_integration_kernel")?;
        }
        Ok(())
    }

    /// The noise of `steps` steps, drawn exactly as the CPU reservoir draws it.
    fn draw_noise(&mut self, steps: usize) -> Result<Option<CudaSlice<f32>>> {
        if self.config.noise_level <= 0.0 {
            return Ok(None);
        }
        let host = noise_values(
            &mut self.noise,
            self.config.noise_level,
            steps * self.config.size,
        );
        Ok(Some(
            self.device
                .stream()
                .clone_htod(&host)
                .context("uploading the noise")?,
        ))
    }
}

/// `count` noise values `level·ξ` (ξ standard normal from `rng`, the config's noise stream)
/// rounded to f32: the CPU reservoir's draws in its order (step by step, unit by unit).
pub(crate) fn noise_values(rng: &mut ChaCha8Rng, level: f64, count: usize) -> Vec<f32> {
    (0..count)
        .map(|_| {
            let xi: f64 = rng.sample(StandardNormal);
            (level * xi) as f32
        })
        .collect()
}

impl Reservoir for GpuReservoirComputer {
    fn size(&self) -> usize {
        self.config.size
    }

    fn echo_state_weights(&self) -> Option<&ReservoirWeights> {
        Some(&self.weights)
    }

    fn input_size(&self) -> usize {
        self.config.input_size
    }

    fn reset(&mut self) {
        // A failed memset means a dead context, which the next run reports as a driver error.
        let _ = self.device.stream().memset_zeros(&mut self.state);
    }

    fn state(&self) -> Array1<f64> {
        match self.device.stream().clone_dtoh(&self.state) {
            Ok(host) => host.iter().map(|&v| f64::from(v)).collect(),
            Err(_) => Array1::from_elem(self.config.size, f64::NAN),
        }
    }

    fn set_state(&mut self, state: ArrayView1<f64>) -> reservoir_core::Result<()> {
        check_state(self.size(), &state)?;
        let host: Vec<f32> = state.iter().map(|&v| v as f32).collect();
        self.device
            .stream()
            .memcpy_htod(&host, &mut self.state)
            .context("uploading the state")
            .map_err(ReservoirError::from)
    }

    fn run_into(
        &mut self,
        inputs: ArrayView2<f64>,
        mut states: ArrayViewMut2<f64>,
    ) -> reservoir_core::Result<()> {
        check_run_shapes(self.size(), self.input_size(), &inputs, &states)?;
        for start in (0..inputs.nrows()).step_by(CHUNK_STEPS) {
            let end = (start + CHUNK_STEPS).min(inputs.nrows());
            self.run_chunk(
                inputs.slice(ndarray::s![start..end, ..]),
                states.slice_mut(ndarray::s![start..end, ..]),
            )
            .map_err(ReservoirError::from)?;
        }
        Ok(())
    }

    /// The device's own ridge sums (`crate::gram`): `fit_ridge` on this reservoir adds XᵀX
    /// on the GPU and never copies the states to the host.
    fn as_accumulator(&mut self) -> Option<&mut dyn AccumulateRun> {
        Some(self)
    }
}
