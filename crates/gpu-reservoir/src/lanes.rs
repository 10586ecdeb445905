//! A sweep's lanes on the GPU: B echo-state reservoirs that share one random W, W_in and b and
//! differ in spectral radius, leak rate and input scaling, stepped together with one GEMM per
//! step, their ridge sums kept on the device.

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaGraph, CudaSlice, CudaStream};
use ndarray::{s, ArrayView2};
use rand_chacha::ChaCha8Rng;
use reservoir_core::lanes::{Lane, LaneData, LaneOutcomes, LaneRunner, LaneSums};
use reservoir_core::random::{stream_rng, Stream};
use reservoir_core::{Precision, ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::driver::blas::{blas_handle_on, product_row_major};
use crate::driver::GpuDevice;
use crate::error::{DriverContext, GpuError, Result};
use crate::esn::CHUNK_STEPS;
use crate::gemm::{batch_kernel, BatchKernel, BatchW, DeviceW, GemmMath};
use crate::noise::noise_values;
use crate::ops::esn::{activation_code, to_f16, EsnKernels};
use crate::ops::lanes::{lane_step, LaneKernels, LaneParameters, LaneStepInputs};
use crate::ops::ridge::RidgeKernels;
use crate::ops::tensor_core::{TensorCoreDrive, TensorCoreRun, TensorCoreScratch};
use crate::ridge_sums::DeviceRidgeSums;

/// Most bytes of f32 states one chunk of a sweep holds (all lanes): a chunk has
/// `LANE_CHUNK_BYTES / (4·N·B)` steps, at least 1 and at most [`CHUNK_STEPS`].
pub const LANE_CHUNK_BYTES: usize = 1 << 28;

/// Most lanes stepped together: a sweep's lanes go in groups of this many (the last one
/// smaller), one group after another on one GPU, spread over the GPUs of a
/// [`crate::MultiGpuLaneRunner`]. A lane's results depend on the size of its group (the
/// GEMM's shape and the chunk length), never on how many GPUs ran the sweep, so every device
/// count gives the same numbers.
pub const LANE_GROUP: usize = 128;

/// Runs a sweep's lanes together on one GPU (see [`LaneRunner`]), in groups of
/// [`LANE_GROUP`].
///
/// The lanes are the columns of an N × B state matrix X. W₁ and W_in₁ are the base config's
/// draws at spectral radius 1 and input scaling 1 (same seed ⇒ the same random structure as
/// every lane's own config), uploaded once (W₁ dense, in the operand type of the runner's
/// [`GemmMath`]). A chunk of steps first projects its inputs, v_t = W_in₁·u_t for every step
/// (one SGEMM); each step is then one GEMM P = W₁·X for all lanes and one elementwise launch
/// `x_b ← (1 − a_b)·x_b + a_b·f(ρ_b·P_b + b + s_b·v_t + noise_t)`, so lane b is the reservoir
/// of `lane.config(base)` to f32 rounding with the f32 GEMM (the default), and to that
/// arithmetic's drift with TF32 or f16 operands ([`GpuLaneRunner::with_math`]). With f16
/// operands the steps of a chunk are by default one tensor-core run instead
/// ([`GpuLaneRunner::with_kernel`]), with the same update. Noise, when configured, is drawn on
/// the host from the base seed's noise stream, as every CPU lane draws it (the lanes share one
/// seed, hence one noise sequence). The rows of each chunk go to the lanes' training and
/// validation [`DeviceRidgeSums`] on the device; the sums are copied back once per run.
#[derive(Debug)]
pub struct GpuLaneRunner {
    device: GpuDevice,
    kernels: Arc<LaneKernels>,
    math: GemmMath,
    kernel: BatchKernel,
    shared: Option<SharedWeights>,
    /// The stream the runs' graphs are captured on and replayed from, made by the first run
    /// of several chunks and kept for the next (a cuBLAS handle costs tens of milliseconds).
    capture: Option<CaptureStream>,
}

/// The weights every lane shares, for the config they were drawn for.
#[derive(Debug)]
struct SharedWeights {
    config: ReservoirConfig,
    /// W₁, dense, row-major N × N, in the operand type of the runner's arithmetic (padded f16
    /// on the tensor cores).
    w: BatchW,
    /// W_in₁, row-major N × K.
    input: CudaSlice<f32>,
    /// b (N).
    bias: CudaSlice<f32>,
}

/// The device buffers of one run of lanes: per-lane parameters, the states and a chunk's
/// scratch.
pub(crate) struct LaneRun {
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
    pub(crate) states: CudaSlice<f32>,
    /// X in f16, with f16 GEMM operands.
    halves: Option<HalfStates>,
    /// The scratch of the tensor-core run, where it steps the lanes.
    tensor_core: Option<TensorCoreScratch>,
    /// The steps of a full chunk captured as a CUDA graph (the buffers above are the same for
    /// every chunk of a run, so one capture serves them all), on the runner's capture stream.
    graph: Option<CudaGraph>,
}

/// The f16 operands of a run's GEMMs: step t reads `buffers[t % 2]` and writes the other;
/// before a chunk's first step, `buffers[0]` gets the f16 copy of the lanes' states by the
/// conversion kernel of `esn.cu`.
struct HalfStates {
    buffers: [CudaSlice<u16>; 2],
    kernels: Arc<EsnKernels>,
}

impl LaneRun {
    /// Whether the run's steps are one tensor-core run per chunk.
    pub(crate) fn on_tensor_cores(&self) -> bool {
        self.tensor_core.is_some()
    }
}

/// A stream of the runner's own, for its runs' graphs: a capture takes every launch into the
/// captured stream, from any thread, so capturing on the device's stream would take the
/// launches of other threads' reservoirs into the sweep's graph (their work then runs at the
/// graph's replays, or never) and break the capture with their copies. Work on it is ordered
/// with the device's stream by events. Its cuBLAS handle is in the math mode of the runner's
/// arithmetic.
#[derive(Debug)]
struct CaptureStream {
    stream: Arc<CudaStream>,
    blas: CudaBlas,
}

impl CaptureStream {
    fn new(device: &GpuDevice, math: GemmMath) -> Result<Self> {
        let stream = device
            .context()
            .new_stream()
            .context("creating a sweep's capture stream")?;
        let blas = blas_handle_on(stream.clone(), math == GemmMath::Tf32)?;
        Ok(Self { stream, blas })
    }
}

impl GpuLaneRunner {
    /// A runner on `device`, ready to run: its kernels compiled (or loaded from the cache) and
    /// the device's cuBLAS handle made, so that a runner made in a thread of its own starts
    /// its GPU beside other work.
    pub fn new(device: &GpuDevice) -> Result<Self> {
        device.blas()?;
        device.kernels::<RidgeKernels>()?;
        Ok(Self {
            kernels: device.kernels::<LaneKernels>()?,
            device: device.clone(),
            math: GemmMath::F32,
            kernel: BatchKernel::Auto,
            shared: None,
            capture: None,
        })
    }

    /// This runner with the steps' GEMM in `math` (default [`GemmMath::F32`]). With
    /// [`GemmMath::F16`], runs need a `tanh` base config and fail otherwise.
    pub fn with_math(mut self, math: GemmMath) -> Self {
        self.math = math;
        self.shared = None;
        self.capture = None;
        self
    }

    /// The arithmetic of the steps' GEMM.
    pub fn math(&self) -> GemmMath {
        self.math
    }

    /// This runner with the lanes stepped by `kernel` when their products have f16 operands
    /// (default [`BatchKernel::Auto`]: the tensor-core run where the device and N allow it and
    /// it takes a group in one launch, as it does up to N = 1024 on 32 SMs or more). With
    /// [`BatchKernel::TensorCore`], runs fail where it cannot run.
    pub fn with_kernel(mut self, kernel: BatchKernel) -> Self {
        self.kernel = kernel;
        self.shared = None;
        self.capture = None;
        self
    }

    /// The kernel that steps a group of `lanes` lanes of `n` units (`Gemm` or `TensorCore`;
    /// see [`crate::GpuReservoirComputer::batch_kernel`]).
    ///
    /// # Errors
    /// [`GpuError::Unsupported`] for [`BatchKernel::TensorCore`] where it cannot run.
    pub fn kernel(&self, n: usize, lanes: usize) -> Result<BatchKernel> {
        batch_kernel(&self.device, n, self.math, self.kernel, lanes)
    }

    /// The device the lanes run on.
    pub fn device(&self) -> &GpuDevice {
        &self.device
    }

    /// Steps per chunk for N units and B lanes.
    pub fn chunk_steps(n: usize, lanes: usize) -> usize {
        (LANE_CHUNK_BYTES / (4 * n * lanes).max(1)).clamp(1, CHUNK_STEPS)
    }

    /// Checks the base and the lanes, draws (or reuses) the shared weights and allocates a
    /// run's buffers for chunks of up to `chunk_steps` steps, every lane at the zero state.
    pub(crate) fn prepare(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        chunk_steps: usize,
    ) -> Result<LaneRun> {
        if base.precision() == Precision::F64 {
            return Err(GpuError::Unsupported {
                what: "precision = \"f64\"".into(),
                reason: "the GPU lanes compute in f32; f64 runs on the CPU".into(),
            });
        }
        let unit = base
            .to_params()
            .spectral_radius(1.0)
            .input_scaling(1.0)
            .check()
            .map_err(ReservoirError::from)?;
        if self.shared.as_ref().is_none_or(|w| w.config != unit) {
            self.shared = Some(self.upload_shared(unit)?);
        }
        let (n, k, b) = (base.size(), base.input_size(), lanes.len());
        let tensor_core = match self.shared()?.w.tensor_core_for(b) {
            Some(w) => Some(w.scratch(&self.device, b)?),
            None => None,
        };
        let s = self.device.stream();
        let per_lane = |value: fn(&Lane) -> f64| -> Result<CudaSlice<f32>> {
            let host: Vec<f32> = lanes.iter().map(|lane| value(lane) as f32).collect();
            s.clone_htod(&host)
                .context("uploading the lanes' parameters")
        };
        let half = || s.alloc_zeros(n * b).context("allocating the f16 states");
        let noise = if base.noise_level() > 0.0 {
            Some((
                s.alloc_zeros(chunk_steps * n)
                    .context("allocating the noise")?,
                base.noise_level(),
                stream_rng(base.seed(), Stream::Noise),
            ))
        } else {
            None
        };
        Ok(LaneRun {
            n,
            k,
            lanes: b,
            chunk_steps,
            activation: activation_code(base.activation()),
            radius: per_lane(Lane::spectral_radius)?,
            scaling: per_lane(Lane::input_scaling)?,
            leak: per_lane(Lane::leak_rate)?,
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
            halves: match self.math {
                GemmMath::F16 if tensor_core.is_none() => Some(HalfStates {
                    buffers: [half()?, half()?],
                    kernels: self.device.kernels::<EsnKernels>()?,
                }),
                GemmMath::F16 | GemmMath::F32 | GemmMath::Tf32 => None,
            },
            tensor_core,
            graph: None,
        })
    }

    /// Draws the weights of `unit` (spectral radius 1, input scaling 1) and uploads them, W
    /// for the runner's arithmetic.
    fn upload_shared(&self, unit: ReservoirConfig) -> Result<SharedWeights> {
        let (weights, _) = ReservoirWeights::generate(&unit)?;
        let device = &self.device;
        Ok(SharedWeights {
            w: BatchW::upload(
                device,
                &unit,
                &weights,
                self.math,
                self.kernel,
                "sweep lanes",
            )?,
            input: device.upload_f32(weights.input(), "uploading W_in")?,
            bias: device.upload_f32(weights.bias(), "uploading b")?,
            config: unit,
        })
    }

    /// Runs the rows of `inputs` (≤ the run's chunk steps) from the lanes' current states:
    /// their states land in `run.states` (first rows) and the lanes keep the last. With
    /// `replay` (a full chunk of a run that has several), the steps are the run's CUDA graph,
    /// captured on first use: one launch instead of two per step.
    pub(crate) fn run_chunk(
        &self,
        run: &mut LaneRun,
        inputs: ArrayView2<f64>,
        replay: bool,
    ) -> Result<()> {
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
        if run.on_tensor_cores() {
            self.enqueue_steps(run, steps)?;
        } else if replay && steps == run.chunk_steps {
            let capture = self.capture.as_ref().ok_or_else(|| {
                ReservoirError::invalid("sweep on the GPU", "no stream to capture the steps on")
            })?;
            self.replay(run, steps, capture)?;
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

    /// Runs the `steps` steps of a full chunk as the run's graph on `capture`'s stream
    /// (captured there on first use), after the device stream's work and before its next.
    fn replay(&self, run: &mut LaneRun, steps: usize, capture: &CaptureStream) -> Result<()> {
        let (main, own) = (self.device.stream(), &capture.stream);
        own.join(main)
            .context("ordering a sweep's steps after its inputs")?;
        if run.graph.is_none() {
            // A first product outside the capture: whatever cuBLAS sets up on first use of
            // a handle (workspace) must not happen while capturing. Its result is overwritten.
            self.gemm_w()?.product(
                &capture.blas,
                own,
                &run.state.slice(..),
                run.halves.as_mut().map(
                    |HalfStates {
                         buffers: [x, next], ..
                     }| (x.slice(..), next),
                ),
                &mut run.product.slice_mut(..),
                (run.n, run.lanes),
                "the sweep step GEMM",
            )?;
            let graph = GpuDevice::capture_on(own, || {
                self.enqueue_steps_on(run, steps, own, &capture.blas)
            })?;
            run.graph = Some(graph);
        }
        if let Some(graph) = &run.graph {
            graph.launch().context("replaying the sweep's steps")?;
        }
        main.join(own)
            .context("ordering a sweep's steps before their sums")
    }

    /// Enqueues `steps` steps from `run.state` on the chunk's projected inputs (and noise),
    /// writing row t of `run.states`; `run.state` is left as it was. On the device's stream:
    /// one tensor-core run, or a GEMM and a lane step per step.
    pub(crate) fn enqueue_steps(&self, run: &mut LaneRun, steps: usize) -> Result<()> {
        if let (Some(w), Some(scratch)) = (
            self.shared()?.w.tensor_core_for(run.lanes),
            run.tensor_core.as_mut(),
        ) {
            let shared = self.shared()?;
            return w.run(
                &self.device,
                scratch,
                TensorCoreRun {
                    drive: TensorCoreDrive::Lanes {
                        input: run.drive.slice(..steps * run.n),
                        bias: &shared.bias,
                        noise: run
                            .noise
                            .as_ref()
                            .map(|(buffer, _, _)| buffer.slice(..steps * run.n)),
                        radius: &run.radius,
                        scaling: &run.scaling,
                        leak: &run.leak,
                    },
                    x0: run.state.slice(..),
                    states: &mut run.states,
                    batch: run.lanes,
                    steps,
                },
            );
        }
        self.enqueue_steps_on(
            run,
            steps,
            self.device.stream(),
            self.math.blas(&self.device)?,
        )
    }

    /// [`GpuLaneRunner::enqueue_steps`] on `stream`, with `blas` a cuBLAS handle on it.
    fn enqueue_steps_on(
        &self,
        run: &mut LaneRun,
        steps: usize,
        stream: &Arc<CudaStream>,
        blas: &CudaBlas,
    ) -> Result<()> {
        let shared = self.shared()?;
        let w = self.gemm_w()?;
        let (n, b) = (run.n, run.lanes);
        let width = n * b;
        let parameters = LaneParameters {
            radius: &run.radius,
            scaling: &run.scaling,
            leak: &run.leak,
            activation: run.activation,
        };
        if let Some(HalfStates {
            buffers: [first, _],
            kernels,
        }) = run.halves.as_mut()
        {
            to_f16(
                stream,
                kernels,
                &run.state.slice(..),
                &mut first.slice_mut(..),
                width,
            )?;
        }
        for t in 0..steps {
            let (done, mut rest) = run.states.split_at_mut(t * width);
            let x = if t == 0 {
                run.state.slice(..)
            } else {
                done.slice((t - 1) * width..)
            };
            let half = run.halves.as_mut().map(
                |HalfStates {
                     buffers: [even, odd],
                     ..
                 }| {
                    if t % 2 == 0 {
                        (even.slice(..), odd)
                    } else {
                        (odd.slice(..), even)
                    }
                },
            );
            let mut next_half = w.product(
                blas,
                stream,
                &x,
                half,
                &mut run.product.slice_mut(..),
                (n, b),
                "the sweep step GEMM",
            )?;
            let input_t = run.drive.slice(t * n..(t + 1) * n);
            let noise_t = run
                .noise
                .as_ref()
                .map(|(buffer, _, _)| buffer.slice(t * n..(t + 1) * n));
            let inputs = LaneStepInputs {
                x: &x,
                product: &run.product,
                input_t: &input_t,
                bias: &shared.bias,
                noise_t: noise_t.as_ref(),
            };
            lane_step(
                stream,
                &self.kernels,
                &inputs,
                &parameters,
                &mut rest.slice_mut(..width),
                next_half.as_mut(),
                (n, b),
            )?;
        }
        Ok(())
    }

    fn shared(&self) -> Result<&SharedWeights> {
        self.shared.as_ref().ok_or_else(|| {
            ReservoirError::invalid("sweep on the GPU", "the shared weights were not uploaded")
                .into()
        })
    }

    /// W₁ for the GEMM steps.
    fn gemm_w(&self) -> Result<&DeviceW> {
        self.shared()?.w.gemm()
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
        let mut sums = Vec::with_capacity(lanes.len());
        for group in lanes.chunks(LANE_GROUP) {
            sums.extend(self.run_group(base, group, data)?);
        }
        Ok(sums)
    }

    /// Runs one group of at most [`LANE_GROUP`] lanes over `data` (checked) and returns their
    /// sums in order.
    pub(crate) fn run_group(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>> {
        match self.sum_group(base, lanes, data)? {
            Some(sums) => sums.download(),
            None => Ok(Vec::new()),
        }
    }

    /// Runs one group of at most [`LANE_GROUP`] lanes over `data` (checked) into sums that
    /// stay on the device (`None` for no lanes).
    pub(crate) fn sum_group(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Option<GroupSums>> {
        if lanes.is_empty() {
            return Ok(None);
        }
        let (total, n, b) = (data.inputs.nrows(), base.size(), lanes.len());
        let chunk = Self::chunk_steps(n, b).min(total);
        let mut run = self.prepare(base, lanes, chunk)?;
        // A graph pays for its capture when it replaces the launches of several chunks; the
        // tensor-core run is one launch a chunk already.
        let replay = total / chunk >= 2 && !run.on_tensor_cores();
        if replay && self.capture.is_none() {
            self.capture = Some(CaptureStream::new(&self.device, self.math)?);
        }
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
        Ok(Some(GroupSums { train, validation }))
    }
}

impl GpuLaneRunner {
    /// Runs one group of at most [`LANE_GROUP`] lanes over `data` and solves and scores every
    /// lane's readout for every ridge value on the device
    /// ([`DeviceRidgeSums::solve_and_score`]): the unit of work that runners over several
    /// GPUs or processes hand out. A lane's outcome depends on its group alone.
    ///
    /// # Errors
    /// More than [`LANE_GROUP`] lanes; as [`GpuLaneRunner::run`].
    pub fn score_group(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
        ridges: &[f64],
    ) -> Result<LaneOutcomes> {
        if lanes.len() > LANE_GROUP {
            return Err(ReservoirError::invalid(
                "sweep lanes",
                format!(
                    "a group has at most {LANE_GROUP} lanes, got {}",
                    lanes.len()
                ),
            )
            .into());
        }
        data.check(base)?;
        match self.sum_group(base, lanes, data)? {
            Some(sums) => sums.train.solve_and_score(&sums.validation, ridges),
            None => Ok(Vec::new()),
        }
    }

    /// Runs every lane over `data`, solves and scores its readouts on the device and hands
    /// each group's outcomes to `visit(first_lane, outcomes)` in order (see
    /// [`LaneRunner::score_lanes`]): only the scores come back to the host.
    ///
    /// # Errors
    /// As [`GpuLaneRunner::run`]; the first error `visit` returns.
    pub fn score(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
        ridges: &[f64],
        visit: &mut dyn FnMut(usize, LaneOutcomes) -> reservoir_core::Result<()>,
    ) -> Result<()> {
        data.check(base)?;
        for (index, group) in lanes.chunks(LANE_GROUP).enumerate() {
            let outcomes = self.score_group(base, group, data, ridges)?;
            visit(index * LANE_GROUP, outcomes)?;
        }
        Ok(())
    }
}

/// A group's training and validation sums, still on the device.
#[derive(Debug)]
pub(crate) struct GroupSums {
    train: DeviceRidgeSums,
    validation: DeviceRidgeSums,
}

impl GroupSums {
    /// Copies the sums back, one [`LaneSums`] per lane of the group, in order.
    pub(crate) fn download(&self) -> Result<Vec<LaneSums>> {
        Ok(self
            .train
            .download()?
            .into_iter()
            .zip(self.validation.download()?)
            .map(|(train, validation)| LaneSums { train, validation })
            .collect())
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

    /// Solves on the device; `host_bytes` does not apply (only scores come back).
    fn score_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
        ridges: &[f64],
        _host_bytes: usize,
        visit: &mut dyn FnMut(usize, LaneOutcomes) -> reservoir_core::Result<()>,
    ) -> reservoir_core::Result<()> {
        Ok(self.score(base, lanes, data, ridges, visit)?)
    }
}
