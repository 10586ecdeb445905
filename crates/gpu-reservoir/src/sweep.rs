//! A sweep's lanes on the GPU: B echo-state reservoirs that share one random W, W_in and b and
//! differ in spectral radius, leak rate and input scaling, stepped together with one SGEMM per
//! step, their ridge sums kept on the device.

use std::time::Instant;

use cudarc::driver::{CudaFunction, CudaGraph, CudaSlice, LaunchConfig, PushKernelArg};
use ndarray::{s, Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::rng::{stream_rng, Stream};
use reservoir_core::sweep::{Lane, LaneData, LaneRunner, LaneSums};
use reservoir_core::{Activation, Precision, ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::bench::median_micros_per_step;
use crate::blas::product_row_major;
use crate::device::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::esn::{noise_values, CHUNK_STEPS};
use crate::gram::DeviceRidgeSums;
use crate::kernels;

/// Most bytes of f32 states one chunk of a sweep holds (all lanes): a chunk has
/// `LANE_CHUNK_BYTES / (4·N·B)` steps, at least 1 and at most [`CHUNK_STEPS`].
pub const LANE_CHUNK_BYTES: usize = 1 << 28;

/// Threads per block of the lane step.
const THREADS: u32 = 256;

/// Runs a sweep's lanes together on one GPU (see [`LaneRunner`]).
///
/// The lanes are the columns of an N × B state matrix X. W₁ and W_in₁ are the base config's
/// draws at spectral radius 1 and input scaling 1 (same seed ⇒ the same random structure as
/// every lane's own config), uploaded once (W₁ dense). A chunk of steps first projects its
/// inputs, v_t = W_in₁·u_t for every step (one SGEMM); each step is then one SGEMM P = W₁·X
/// for all lanes and one elementwise launch
/// `x_b ← (1 − a_b)·x_b + a_b·f(ρ_b·P_b + b + s_b·v_t + noise_t)`, so lane b is the reservoir
/// of `lane.config(base)` to f32 rounding. Noise, when configured, is drawn on the host from
/// the base seed's noise stream, as every CPU lane draws it (the lanes share one seed, hence
/// one noise sequence). The rows of each chunk go to the lanes' training and validation
/// [`DeviceRidgeSums`] on the device; the sums are copied back once per run.
#[derive(Debug)]
pub struct GpuLaneRunner {
    device: GpuDevice,
    step: CudaFunction,
    shared: Option<SharedWeights>,
}

/// The weights every lane shares, for the config they were drawn for.
#[derive(Debug)]
struct SharedWeights {
    config: ReservoirConfig,
    /// W₁, dense, row-major N × N.
    w: CudaSlice<f32>,
    /// W_in₁, row-major N × K.
    input: CudaSlice<f32>,
    /// b (N).
    bias: CudaSlice<f32>,
}

/// The device buffers of one run of lanes: per-lane parameters, the states and a chunk's
/// scratch.
struct LaneRun {
    n: usize,
    k: usize,
    lanes: usize,
    chunk_steps: usize,
    activation: i32,
    radius: CudaSlice<f32>,
    scaling: CudaSlice<f32>,
    leak: CudaSlice<f32>,
    /// X (N × B, column-major): the lanes' current states.
    state: CudaSlice<f32>,
    /// W₁·X of the current step.
    product: CudaSlice<f32>,
    /// A chunk's inputs (steps × K) and their projections v_t (steps × N).
    inputs: CudaSlice<f32>,
    drive: CudaSlice<f32>,
    /// A chunk's noise (steps × N), with its level and stream, when noise_level > 0.
    noise: Option<(CudaSlice<f32>, f64, ChaCha8Rng)>,
    /// A chunk's states: row t is X after step t (B·N values, lane b at [b·N, (b + 1)·N)).
    states: CudaSlice<f32>,
    /// The steps of a full chunk captured as a CUDA graph (the buffers above are the same for
    /// every chunk of a run, so one capture serves them all).
    graph: Option<CudaGraph>,
}

/// Median timings of one set of lanes ([`GpuLaneRunner::time_lanes`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaneTiming {
    /// µs per step of the recurrence of all lanes replayed from a CUDA graph, as `run_lanes`
    /// runs full chunks (the inputs already projected).
    pub micros_per_step: f64,
    /// The same steps as plain launches, one SGEMM and one elementwise launch per step (the
    /// first chunk of a run, and runs of fewer than two full chunks).
    pub launch_micros_per_step: f64,
    /// µs per step of the ridge sums of all lanes over those states (widening, one batched
    /// DGEMM for XᵀX, one DGEMM for XᵀY and ΣX, the targets' upload).
    pub sums_micros_per_step: f64,
    /// Seconds to copy one set of the lanes' sums back and assemble their accumulators (a run
    /// does it twice: training and validation).
    pub download_seconds: f64,
    /// Steps per chunk (the timed runs have at most this many).
    pub chunk_steps: usize,
}

impl GpuLaneRunner {
    /// A runner on `device` (compiles the lane kernel on first use per device).
    pub fn new(device: &GpuDevice) -> Result<Self> {
        Ok(Self {
            step: device.nvrtc_function(&kernels::SWEEP, kernels::sweep::LANE_STEP)?,
            device: device.clone(),
            shared: None,
        })
    }

    /// Steps per chunk for N units and B lanes.
    pub fn chunk_steps(n: usize, lanes: usize) -> usize {
        (LANE_CHUNK_BYTES / (4 * n * lanes).max(1)).clamp(1, CHUNK_STEPS)
    }

    /// Checks the base and the lanes, draws (or reuses) the shared weights and allocates a
    /// run's buffers for chunks of up to `chunk_steps` steps, every lane at the zero state.
    fn prepare(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        chunk_steps: usize,
    ) -> Result<LaneRun> {
        if base.precision == Precision::F64 {
            return Err(ReservoirError::invalid(
                "sweep on the GPU",
                "reservoir.precision = \"f64\" runs on the CPU only; the GPU lanes compute in f32",
            )
            .into());
        }
        for (index, lane) in lanes.iter().enumerate() {
            lane.config(base)
                .validate()
                .map_err(|e| ReservoirError::invalid(&format!("sweep lane {index}"), e))?;
        }
        let unit = ReservoirConfig {
            spectral_radius: 1.0,
            input_scaling: 1.0,
            ..base.clone()
        };
        if self.shared.as_ref().is_none_or(|w| w.config != unit) {
            self.shared = Some(self.upload_shared(unit)?);
        }
        let (n, k, b) = (base.size, base.input_size, lanes.len());
        let s = self.device.stream();
        let per_lane = |value: fn(&Lane) -> f64| -> Result<CudaSlice<f32>> {
            let host: Vec<f32> = lanes.iter().map(|l| value(l) as f32).collect();
            s.clone_htod(&host)
                .context("uploading the lanes' parameters")
        };
        let noise = if base.noise_level > 0.0 {
            Some((
                s.alloc_zeros(chunk_steps * n)
                    .context("allocating the noise")?,
                base.noise_level,
                stream_rng(base.seed, Stream::Noise),
            ))
        } else {
            None
        };
        Ok(LaneRun {
            n,
            k,
            lanes: b,
            chunk_steps,
            activation: match base.activation {
                Activation::Tanh => 0,
                Activation::Identity => 1,
            },
            radius: per_lane(|l| l.spectral_radius)?,
            scaling: per_lane(|l| l.input_scaling)?,
            leak: per_lane(|l| l.leak_rate)?,
            state: s.alloc_zeros(n * b).context("allocating the states")?,
            product: s.alloc_zeros(n * b).context("allocating W·X")?,
            inputs: s
                .alloc_zeros(chunk_steps * k)
                .context("allocating the inputs")?,
            drive: s
                .alloc_zeros(chunk_steps * n)
                .context("allocating W_in·u")?,
            noise,
            states: s
                .alloc_zeros(chunk_steps * n * b)
                .context("allocating a chunk's states")?,
            graph: None,
        })
    }

    /// Draws the weights of `unit` (spectral radius 1, input scaling 1) and uploads them.
    fn upload_shared(&self, unit: ReservoirConfig) -> Result<SharedWeights> {
        let (weights, _) = ReservoirWeights::generate(&unit)?;
        let device = &self.device;
        Ok(SharedWeights {
            w: device.upload_f32(&weights.recurrent().to_dense(), "uploading W")?,
            input: device.upload_f32(weights.input(), "uploading W_in")?,
            bias: device.upload_f32(weights.bias(), "uploading b")?,
            config: unit,
        })
    }

    /// Runs the rows of `inputs` (≤ the run's chunk steps) from the lanes' current states:
    /// their states land in `run.states` (first rows) and the lanes keep the last. With
    /// `replay` (a full chunk of a run that has several), the steps are the run's CUDA graph,
    /// captured on first use: one launch instead of two per step.
    fn run_chunk(&self, run: &mut LaneRun, inputs: ArrayView2<f64>, replay: bool) -> Result<()> {
        let steps = inputs.nrows();
        let s = self.device.stream().clone();
        let host: Vec<f32> = inputs.iter().map(|&v| v as f32).collect();
        s.memcpy_htod(&host, &mut run.inputs.slice_mut(..host.len()))
            .context("uploading inputs")?;
        if let Some((buffer, level, rng)) = run.noise.as_mut() {
            let host = noise_values(rng, *level, steps * run.n);
            s.memcpy_htod(&host, &mut buffer.slice_mut(..host.len()))
                .context("uploading the noise")?;
        }
        let shared = self.shared()?;
        // v_t = W_in₁·u_t for every step: u is row-major steps × K, i.e. column-major
        // K × steps, so V (column-major N × steps) = W_in₁·U in one GEMM.
        product_row_major(
            self.device.blas()?,
            &shared.input.slice(..),
            &run.inputs.slice(..steps * run.k),
            &mut run.drive.slice_mut(..steps * run.n),
            (run.n, run.k, steps),
            "projecting a sweep's inputs",
        )?;
        if replay && steps == run.chunk_steps {
            if run.graph.is_none() {
                let graph = self.device.capture(|| self.enqueue_steps(run, steps))?;
                run.graph = Some(graph);
            }
            if let Some(graph) = &run.graph {
                graph.launch().context("replaying the sweep's steps")?;
            }
        } else {
            self.enqueue_steps(run, steps)?;
        }
        let width = run.n * run.lanes;
        s.memcpy_dtod(
            &run.states.slice((steps - 1) * width..steps * width),
            &mut run.state,
        )
        .context("keeping the lanes' last states")?;
        Ok(())
    }

    /// Enqueues `steps` steps from `run.state` on the chunk's projected inputs (and noise),
    /// writing row t of `run.states`; `run.state` is left as it was.
    fn enqueue_steps(&self, run: &mut LaneRun, steps: usize) -> Result<()> {
        let shared = self.shared()?;
        let blas = self.device.blas()?;
        let s = self.device.stream();
        let (n, b) = (run.n, run.lanes);
        let width = n * b;
        let (n_i, b_i) = (n as i32, b as i32);
        let null: u64 = 0;
        let config = LaunchConfig {
            grid_dim: (width.div_ceil(THREADS as usize) as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        for t in 0..steps {
            let (done, mut rest) = run.states.split_at_mut(t * width);
            let mut next = rest.slice_mut(..width);
            let x = if t == 0 {
                run.state.slice(..)
            } else {
                done.slice((t - 1) * width..)
            };
            product_row_major(
                blas,
                &shared.w.slice(..),
                &x,
                &mut run.product.slice_mut(..),
                (n, n, b),
                "the sweep step GEMM",
            )?;
            let input_t = run.drive.slice(t * n..(t + 1) * n);
            let noise_t = run
                .noise
                .as_ref()
                .map(|(buffer, _, _)| buffer.slice(t * n..(t + 1) * n));
            let mut launch = s.launch_builder(&self.step);
            launch.arg(&run.product).arg(&input_t).arg(&shared.bias);
            match &noise_t {
                Some(noise_t) => launch.arg(noise_t),
                None => launch.arg(&null),
            };
            launch
                .arg(&run.radius)
                .arg(&run.scaling)
                .arg(&run.leak)
                .arg(&x)
                .arg(&mut next)
                .arg(&n_i)
                .arg(&b_i)
                .arg(&run.activation);
            // SAFETY: product, x and next hold n·b values (next is row t of the states, x the
            // state before it, so they do not overlap); input_t, bias and noise_t (when given)
            // n; radius, scaling and leak b. The kernel guards idx < n·b.
            unsafe { launch.launch(config) }.context("launching sweep_lane_step")?;
        }
        Ok(())
    }

    fn shared(&self) -> Result<&SharedWeights> {
        self.shared.as_ref().ok_or_else(|| {
            ReservoirError::invalid("sweep on the GPU", "the shared weights were not uploaded")
                .into()
        })
    }

    /// Runs every lane over `data` and returns its sums (see [`LaneRunner::run_lanes`]).
    ///
    /// # Errors
    /// The errors of [`LaneData::check`], an invalid lane config, a base with
    /// `precision = "f64"`, any driver or cuBLAS error.
    pub fn run(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>> {
        data.check(base)?;
        if lanes.is_empty() {
            return Ok(Vec::new());
        }
        let (total, n, b) = (data.inputs.nrows(), base.size, lanes.len());
        let chunk = Self::chunk_steps(n, b).min(total);
        let mut run = self.prepare(base, lanes, chunk)?;
        // A graph pays for its capture when it replaces the launches of several chunks.
        let replay = total / chunk >= 2;
        let outputs = data.targets.ncols();
        let mut train = DeviceRidgeSums::new(&self.device, n, outputs, b)?;
        let mut validation = DeviceRidgeSums::new(&self.device, n, outputs, b)?;
        let width = n * b;
        for start in (0..total).step_by(chunk) {
            let end = (start + chunk).min(total);
            self.run_chunk(&mut run, data.inputs.slice(s![start..end, ..]), replay)?;
            let parts = [
                (&mut train, data.washout, data.train_rows),
                (&mut validation, data.train_rows, total),
            ];
            for (sums, from, to) in parts {
                let (first, last) = (from.clamp(start, end), to.clamp(start, end));
                if first < last {
                    sums.add(
                        &run.states
                            .slice((first - start) * width..(last - start) * width),
                        data.targets.slice(s![first..last, ..]),
                    )?;
                }
            }
        }
        Ok(train
            .download()?
            .into_iter()
            .zip(validation.download()?)
            .map(|(train, validation)| LaneSums { train, validation })
            .collect())
    }

    /// Times `lanes` around `base` over `steps` steps (at most one chunk) of a seeded random
    /// input, after a warm-up, median of `repeats`: the recurrence alone, then the ridge sums
    /// of all lanes over the states it produced (for the benchmark).
    pub fn time_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        steps: usize,
        repeats: usize,
    ) -> Result<LaneTiming> {
        if lanes.is_empty() || steps == 0 {
            return Err(ReservoirError::invalid(
                "sweep timing",
                "need at least one lane and one step",
            )
            .into());
        }
        let chunk_steps = Self::chunk_steps(base.size, lanes.len());
        let steps = steps.min(chunk_steps);
        let mut run = self.prepare(base, lanes, steps)?;
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let inputs =
            Array2::from_shape_fn((steps, base.input_size), |_| rng.random_range(-0.5..0.5));
        let targets = Array2::from_shape_fn((steps, 1), |_| rng.random_range(-1.0..1.0));
        // Projects the inputs, draws the noise and runs once; the timed runs repeat the steps.
        self.run_chunk(&mut run, inputs.view(), false)?;
        let device = self.device.clone();
        let launch_micros_per_step = median_micros_per_step(&device, steps, repeats, || {
            self.enqueue_steps(&mut run, steps)
        })?;
        let graph = device.capture(|| self.enqueue_steps(&mut run, steps))?;
        let micros_per_step = median_micros_per_step(&device, steps, repeats, || {
            graph.launch().context("replaying the sweep's steps")
        })?;
        let mut sums = DeviceRidgeSums::new(&device, base.size, 1, lanes.len())?;
        let states = run.states.slice(..);
        let sums_micros_per_step = median_micros_per_step(&device, steps, repeats, || {
            sums.add(&states, targets.view())
        })?;
        let started = Instant::now();
        sums.download()?;
        Ok(LaneTiming {
            micros_per_step,
            launch_micros_per_step,
            sums_micros_per_step,
            download_seconds: started.elapsed().as_secs_f64(),
            chunk_steps,
        })
    }
}

impl LaneRunner for GpuLaneRunner {
    fn run_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> reservoir_core::Result<Vec<LaneSums>> {
        Ok(self.run(base, lanes, data)?)
    }

    fn backend(&self) -> &'static str {
        "cuda"
    }
}
