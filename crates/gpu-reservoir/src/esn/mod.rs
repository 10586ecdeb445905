//! The echo-state reservoir on the GPU, with the CPU reservoir's weights and update.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaSlice, CudaView};
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2, Axis};
use rand_chacha::ChaCha8Rng;
use reservoir_core::checks::{check_inputs, check_run, check_state};
use reservoir_core::features::SequenceFeatures;
use reservoir_core::random::{stream_rng, Stream};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::reservoir::{features_of_runs, run_one_by_one, SequenceVisitor};
use reservoir_core::spikes::SpikePattern;
use reservoir_core::{Par, Reservoir, ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::batched::{BatchEngine, DevicePlan};
use crate::driver::csr::DeviceCsr;
use crate::driver::staging::Staging;
use crate::driver::GpuDevice;
use crate::error::{DriverContext, GpuError, Result};
use crate::gemm::{BatchKernel, GemmMath};
use crate::noise::noise_values;
use crate::ops::cluster::{ClusterPlan, ClusterRun, CLUSTER_MAX_N};
use crate::ops::esn::{activation_code, input_drive, step_two_launches, EsnKernels, Update};
use crate::ops::persistent::{PersistentPlan, PersistentRun, PersistentWeights, StepPath};
use crate::ridge_sums::DeviceRidgeSums;

pub(crate) mod many;

pub use many::ManySequences;

/// Steps run per chunk: inputs, drive and states of a chunk live on the device together, and
/// the states are copied back once per chunk (never per step).
pub const CHUNK_STEPS: usize = 8192;

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
    /// The arithmetic [`ManySequences::Auto`] batches in.
    auto_math: GemmMath,
    /// The kernel of batches with f16 operands.
    batch_kernel: BatchKernel,
    /// The many-sequence engine (a dense W), made on the first `run_many` that uses it.
    batch: Option<BatchEngine>,
    /// Page-locked buffers the states are copied back through.
    staging: Staging,
    /// Device buffers of a chunk, kept so that a run allocates nothing once they fit.
    chunk: ChunkBuffers,
    /// The CPU threads the host's share of the work may use (summaries of states that come
    /// back whole, [`reservoir_core::reservoir::features_of_runs`]).
    host_par: Par,
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
        // The modules of every step path and of the readout's sums, compiled side by side.
        device.preload(&[
            reservoir_kernels::esn::MODULE,
            reservoir_kernels::esn_persistent::MODULE,
            reservoir_kernels::esn_cluster::MODULE,
            reservoir_kernels::ridge::MODULE,
        ]);
        let kernels = device.kernels::<EsnKernels>()?;
        let w = weights.recurrent();
        let started = Instant::now();
        let persistent = PersistentPlan::for_matrix(device, w)?;
        let cluster = ClusterPlan::for_matrix(device, w)?;
        let path = match (&cluster, &persistent) {
            (Some(_), _) => StepPath::Cluster,
            (None, Some(_)) => StepPath::Persistent,
            (None, None) => StepPath::PerStep,
        };
        device.record("esn plans", started);
        let started = Instant::now();
        let recurrent = DeviceCsr::upload(device, w, |v| v as f32)?;
        let input = device.upload_f32(weights.input(), "uploading W_in")?;
        let bias = device.upload_f32(weights.bias(), "uploading b")?;
        let state = device
            .stream()
            .alloc_zeros::<f32>(config.size())
            .alloc_context::<f32>("allocating the state", config.size())?;
        device.record("esn uploads", started);
        Ok(Self {
            kernels,
            recurrent,
            input,
            bias,
            state,
            noise: stream_rng(config.seed(), Stream::Noise),
            device: device.clone(),
            config: config.clone(),
            weights,
            dt_ms: 1.0,
            path,
            persistent,
            cluster,
            many: ManySequences::default(),
            auto_math: GemmMath::F32,
            batch_kernel: BatchKernel::default(),
            batch: None,
            staging: Staging::default(),
            chunk: ChunkBuffers::new(device, config.size(), config.input_size())?,
            host_par: Par::Seq,
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

    /// Runs `inputs` (checked) in chunks of [`CHUNK_STEPS`] and hands each chunk's states
    /// (rows × N, row-major f32) to `take` with the chunk's first row. The copy of chunk k
    /// back to the host goes into a page-locked buffer while the device runs chunk k + 1, and
    /// `take` reads chunk k meanwhile: the states come back at the link's speed, overlapped
    /// with the run. The two buffers are kept between calls.
    fn run_chunks(
        &mut self,
        inputs: ArrayView2<f64>,
        mut take: impl FnMut(usize, &[f32]),
    ) -> Result<()> {
        let n = self.config.size();
        let rows = inputs.nrows().min(CHUNK_STEPS);
        self.staging.reserve(&self.device, rows * n)?;
        let mut pending: Option<(usize, usize, usize)> = None;
        for (index, start) in (0..inputs.nrows()).step_by(CHUNK_STEPS).enumerate() {
            let end = (start + CHUNK_STEPS).min(inputs.nrows());
            let len = self.run_chunk_on_device(inputs.slice(s![start..end, ..]))?;
            let slot = index % 2;
            let states = self.chunk.states.slice(..len);
            self.staging.copy_back(&self.device, slot, &states)?;
            if let Some((previous, first, len)) = pending {
                take(first, self.staging.read(previous, len)?);
            }
            pending = Some((slot, start, (end - start) * n));
        }
        if let Some((previous, first, len)) = pending {
            take(first, self.staging.read(previous, len)?);
        }
        Ok(())
    }

    /// Runs over `inputs` (T × K) from the current state and writes the states into `states`
    /// (T × N) in `f32`, as the device computes them: [`Reservoir::run_into`] without the
    /// conversion to `f64`.
    ///
    /// # Errors
    /// As [`Reservoir::run_into`].
    pub fn run_into_f32(
        &mut self,
        inputs: ArrayView2<f64>,
        mut states: ArrayViewMut2<f32>,
    ) -> reservoir_core::Result<()> {
        check_inputs(self.input_size(), &inputs)?;
        let expected = (inputs.nrows(), self.size());
        if states.dim() != expected {
            return Err(ReservoirError::shape(
                "states",
                format!("{} × {}", expected.0, expected.1),
                format!("{} × {}", states.nrows(), states.ncols()),
            ));
        }
        let n = self.size();
        self.run_chunks(inputs, |first, chunk| {
            let rows = chunk.len() / n;
            write_rows(states.slice_mut(s![first..first + rows, ..]), chunk, |v| v);
        })?;
        Ok(())
    }

    /// Runs the rows of `inputs` (≤ [`CHUNK_STEPS`], at least one, already checked) from the
    /// current state into the chunk buffers (kept between calls, so a run of the same length
    /// allocates nothing): the first steps × N values of `chunk.states` (row-major) are its
    /// states, and their count is returned; the reservoir keeps the last.
    pub(crate) fn run_chunk_on_device(&mut self, inputs: ArrayView2<f64>) -> Result<usize> {
        let (steps, n, k) = (inputs.nrows(), self.config.size(), self.config.input_size());
        self.chunk.reserve(&self.device, steps * k, steps * n)?;
        let chunk = &mut self.chunk;
        chunk.host_u.clear();
        chunk.host_u.extend(inputs.iter().map(|&v| v as f32));
        self.device
            .stream()
            .memcpy_htod(chunk.host_u.as_slice(), &mut chunk.u)
            .context("uploading inputs")?;
        self.step_chunk(None, steps)
    }

    /// [`GpuReservoirComputer::run_chunk_on_device`] for `steps` steps whose inputs are
    /// already on this reservoir's device: row t is `below`'s row t (steps × (K − K_b), a
    /// deep layer's states below) followed by `beside`'s (steps × K_b, the stack's input).
    /// Nothing crosses the bus.
    pub(crate) fn run_chunk_from_device(
        &mut self,
        below: &CudaView<'_, f32>,
        beside: Option<(&CudaView<'_, f32>, usize)>,
        steps: usize,
    ) -> Result<usize> {
        let n = self.config.size();
        self.chunk.reserve(&self.device, 0, steps * n)?;
        self.step_chunk(Some(DeviceInputs { below, beside }), steps)
    }

    /// The drive of `steps` steps (at least one, within the chunk buffers) from inputs on the
    /// device (`from`, else the chunk's uploaded inputs), then the steps on the reservoir's
    /// path; returns the count of state values written into `chunk.states`.
    fn step_chunk(&mut self, from: Option<DeviceInputs<'_, '_>>, steps: usize) -> Result<usize> {
        let (n, k) = (self.config.size(), self.config.input_size());
        let stream = self.device.stream().clone();
        let noise = if self.config.noise_level() > 0.0 {
            let host = noise_values(&mut self.noise, self.config.noise_level(), steps * n);
            Some(
                stream
                    .clone_htod(&host)
                    .alloc_context::<f32>("uploading the noise", host.len())?,
            )
        } else {
            None
        };
        let chunk = &mut self.chunk;
        let own = chunk.u.slice(..);
        let DeviceInputs { below: u, beside } = from.unwrap_or(DeviceInputs {
            below: &own,
            beside: None,
        });
        let beside_width = beside.map_or(0, |(_, width)| width);
        let k_u = k.checked_sub(beside_width).ok_or_else(|| {
            ReservoirError::shape(
                "a chunk's inputs beside the states below",
                format!("at most {k} columns"),
                beside_width,
            )
        })?;
        input_drive(
            &self.device,
            &self.kernels,
            u,
            beside,
            &self.input.slice(..),
            &self.bias.slice(..),
            noise.as_ref().map(|noise| noise.slice(..)).as_ref(),
            &mut chunk.drive.slice_mut(..),
            (steps, n, k_u),
        )?;
        let update = Update {
            leak: self.config.leak_rate() as f32,
            activation: activation_code(self.config.activation()),
        };
        let (drive, states) = (&chunk.drive, &mut chunk.states);
        match (self.path, self.persistent.as_mut(), self.cluster.as_ref()) {
            (StepPath::Cluster, _, Some(plan)) => {
                let run = ClusterRun {
                    drive,
                    x0: &self.state,
                    steps,
                    update,
                };
                plan.launch(&self.device, run, states)?;
            }
            (StepPath::Persistent, Some(plan), _) => {
                let run = PersistentRun {
                    w: &self.recurrent,
                    drive,
                    x0: self.state.slice(..),
                    steps,
                    update,
                };
                plan.launch(&self.device, run, states)?;
            }
            _ => per_step(
                &self.device,
                &self.kernels,
                &self.recurrent,
                (&self.state, drive, states),
                (steps, update),
            )?,
        }
        stream
            .memcpy_dtod(&states.slice((steps - 1) * n..steps * n), &mut self.state)
            .context("keeping the final state")?;
        Ok(steps * n)
    }

    /// The first `len` values of the last chunk's states, on the device.
    pub(crate) fn chunk_states(&self, len: usize) -> Result<CudaView<'_, f32>> {
        within(&self.chunk.states, len, "the last chunk's states")
    }

    /// The first `len` values of the last chunk's inputs as uploaded (steps × K, f32), on the
    /// device.
    pub(crate) fn chunk_inputs(&self, len: usize) -> Result<CudaView<'_, f32>> {
        within(&self.chunk.u, len, "the last chunk's inputs")
    }

    /// Makes each page-locked buffer the states come back through hold `len` values.
    pub(crate) fn reserve_staging(&mut self, len: usize) -> Result<()> {
        self.staging.reserve(&self.device, len)
    }

    /// Queues the copy of the last chunk's first `len` state values into page-locked buffer
    /// `slot` (0 or 1), read by [`GpuReservoirComputer::staged_states`].
    pub(crate) fn stage_chunk_states(&mut self, slot: usize, len: usize) -> Result<()> {
        let states = within(&self.chunk.states, len, "the last chunk's states")?;
        self.staging.copy_back(&self.device, slot, &states)
    }

    /// The `len` values copied into page-locked buffer `slot`, once they have arrived.
    pub(crate) fn staged_states(&mut self, slot: usize, len: usize) -> Result<&[f32]> {
        self.staging.read(slot, len)
    }
}

/// A chunk's inputs already on the device: row t is `below`'s row t followed by `beside`'s
/// (of the width given), as a deep layer takes the states below it and the stack's input.
#[derive(Clone, Copy)]
struct DeviceInputs<'a, 'b> {
    below: &'a CudaView<'b, f32>,
    beside: Option<(&'a CudaView<'b, f32>, usize)>,
}

/// The first `len` values of `buffer`, or an error naming `what` where it holds fewer.
fn within<'a>(buffer: &'a CudaSlice<f32>, len: usize, what: &str) -> Result<CudaView<'a, f32>> {
    buffer
        .try_slice(..len)
        .ok_or_else(|| ReservoirError::shape(what, format!("{len} values"), buffer.len()).into())
}

/// Values from which a chunk's states are written by several threads: writing a large chunk
/// into the caller's array (first touch of its pages, conversion) on one thread takes longer
/// than the device takes for the next chunk.
const PARALLEL_WRITE_VALUES: usize = 1 << 19;

/// Writes `chunk` (the rows of `out`, row-major) into `out` through `convert` (generic, so
/// that it inlines), on up to eight threads when the chunk is large.
pub(crate) fn write_rows<T, F>(mut out: ArrayViewMut2<T>, chunk: &[f32], convert: F)
where
    T: Send,
    F: Fn(f32) -> T + Copy + Send,
{
    let write = move |mut out: ArrayViewMut2<T>, chunk: &[f32]| match out.as_slice_mut() {
        Some(flat) => {
            for (d, &v) in flat.iter_mut().zip(chunk) {
                *d = convert(v);
            }
        }
        None => {
            for (d, &v) in out.iter_mut().zip(chunk) {
                *d = convert(v);
            }
        }
    };
    if chunk.len() < PARALLEL_WRITE_VALUES {
        return write(out, chunk);
    }
    // Asked only for large chunks: the answer costs tens of µs (it reads the cgroup's quota).
    let threads = Par::all().threads().min(8);
    if threads == 1 {
        return write(out, chunk);
    }
    let n = out.ncols().max(1);
    let rows_per_thread = out.nrows().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (part, values) in out
            .axis_chunks_iter_mut(Axis(0), rows_per_thread)
            .zip(chunk.chunks(rows_per_thread * n))
        {
            scope.spawn(move || write(part, values));
        }
    });
}

/// The two-launches-per-step path: `states` (≥ steps × N) from `x0` and the drive.
fn per_step(
    device: &GpuDevice,
    kernels: &EsnKernels,
    recurrent: &DeviceCsr<f32>,
    (x0, drive, states): (&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>),
    (steps, update): (usize, Update),
) -> Result<()> {
    let n = recurrent.rows();
    let mut pre = device
        .stream()
        .alloc_zeros::<f32>(n)
        .alloc_context::<f32>("allocating the pre-activation", n)?;
    for t in 0..steps {
        let (done, mut rest) = states.split_at_mut(t * n);
        let previous = if t == 0 {
            x0.slice(..)
        } else {
            done.slice((t - 1) * n..)
        };
        step_two_launches(
            device,
            kernels,
            recurrent,
            &previous,
            &drive.slice(t * n..(t + 1) * n),
            &mut pre.slice_mut(..),
            &mut rest.slice_mut(..n),
            update,
        )?;
    }
    Ok(())
}

/// The device buffers of one chunk and the host buffer its inputs are converted in, grown on
/// demand and kept between runs.
#[derive(Debug)]
struct ChunkBuffers {
    host_u: Vec<f32>,
    u: CudaSlice<f32>,
    drive: CudaSlice<f32>,
    states: CudaSlice<f32>,
}

impl ChunkBuffers {
    /// Buffers for one step of `n` units and `k` inputs.
    fn new(device: &GpuDevice, n: usize, k: usize) -> Result<Self> {
        let alloc = |len: usize| {
            device
                .stream()
                .alloc_zeros::<f32>(len)
                .alloc_context::<f32>("allocating the chunk buffers", len)
        };
        Ok(Self {
            host_u: Vec::new(),
            u: alloc(k)?,
            drive: alloc(n)?,
            states: alloc(n)?,
        })
    }

    /// Makes the buffers hold `inputs` input values and `states` state values (the drive is
    /// as long as the states).
    fn reserve(&mut self, device: &GpuDevice, inputs: usize, states: usize) -> Result<()> {
        let grow = |buffer: &mut CudaSlice<f32>, len: usize| {
            if buffer.len() < len {
                *buffer = device
                    .stream()
                    .alloc_zeros::<f32>(len)
                    .alloc_context::<f32>("allocating the chunk buffers", len)?;
            }
            Ok::<(), GpuError>(())
        };
        grow(&mut self.u, inputs)?;
        grow(&mut self.drive, states)?;
        grow(&mut self.states, states)
    }
}

impl Reservoir for GpuReservoirComputer {
    fn size(&self) -> usize {
        self.config.size()
    }

    /// The threads of the host's share of the work; the device's runs do not use them.
    fn par(&self) -> Par {
        self.host_par
    }

    fn set_par(&mut self, par: Par) {
        self.host_par = par;
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
        let n = self.size();
        self.run_chunks(inputs, |first, chunk| {
            let rows = chunk.len() / n;
            write_rows(
                states.slice_mut(s![first..first + rows, ..]),
                chunk,
                f64::from,
            );
        })?;
        Ok(())
    }

    /// As [`ManySequences`] says: one after another, or all together, one GEMM per step for
    /// all of them.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> reservoir_core::Result<()> {
        let Some(math) = self.batch_math(sequences) else {
            return run_one_by_one(self, sequences, visit);
        };
        for inputs in sequences {
            check_inputs(self.input_size(), inputs)?;
        }
        self.with_batch_engine(math, |engine, shared, noise| {
            engine.run(shared, sequences, noise, visit)
        })?;
        self.reset()
    }

    /// Where [`GpuReservoirComputer::run_many`] batches the sequences, their features are
    /// summed on the device as each time chunk is stepped, and only the sums (B × F per
    /// batch) come back, to be divided by their row counts on the host (in f64); the states
    /// never leave the device. Where it runs them one after another, their states are
    /// summarized on the host as the provided method does. `progress` is called after each
    /// batch (each sequence, one after another). Batched features with a fitted projection or
    /// a model space are made on the device too where a [`DevicePlan`] takes them (projected
    /// chunk by chunk, each sequence's model solved there); the others are the provided
    /// method's, from the batched runs' states.
    fn sequence_features(
        &mut self,
        sequences: &[ArrayView2<f64>],
        features: &SequenceFeatures,
        progress: &mut dyn FnMut(usize, usize),
    ) -> reservoir_core::Result<Array2<f64>> {
        if !features.is_plain() {
            let noise = self.config.noise_level() > 0.0;
            let device_path = self
                .batch_math(sequences)
                .and_then(|math| Some((math, DevicePlan::new(features, self.size(), noise)?)));
            let Some((math, plan)) = device_path else {
                return features_of_runs(self, sequences, features, progress);
            };
            check_sequences(self.input_size(), sequences, features)?;
            let rows = self.with_batch_engine(math, |engine, shared, noise| {
                engine.summarized_features(shared, sequences, &plan, noise, progress)
            })?;
            self.reset()?;
            return Ok(rows);
        }
        let Some(math) = self.batch_math(sequences) else {
            // The provided method's way: the states of each run, summarized on the host.
            return features_of_runs(self, sequences, features, progress);
        };
        check_sequences(self.input_size(), sequences, features)?;
        let rows = self.with_batch_engine(math, |engine, shared, noise| {
            engine.features(shared, sequences, features, noise, progress)
        })?;
        self.reset()?;
        Ok(rows)
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

/// Checks every sequence (K columns, finite, long enough for `features`) on rayon's threads;
/// the error is the first sequence's that fails.
fn check_sequences(
    input_size: usize,
    sequences: &[ArrayView2<f64>],
    features: &SequenceFeatures,
) -> reservoir_core::Result<()> {
    use rayon::prelude::*;
    let check = |index: usize, inputs: &ArrayView2<f64>| {
        features.check_steps(index, inputs.nrows())?;
        check_inputs(input_size, inputs)
    };
    match sequences
        .par_iter()
        .enumerate()
        .position_first(|(index, inputs)| check(index, inputs).is_err())
    {
        Some(index) => check(index, &sequences[index]),
        None => Ok(()),
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
        let len = reservoir.run_chunk_on_device(inputs.slice(s![start..end, ..]))?;
        let first = washout.clamp(start, end);
        if first < end {
            sums.add(
                &reservoir.chunk.states.slice((first - start) * n..len),
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
