//! What the benchmarks and this crate's tests reach beneath the public reservoirs (feature
//! `internals`): the step plans and kernel launches alone, on fixed buffers, so
//! `reservoir-benches` can time each next to in-process baselines; the tuning constants the
//! tests size their runs by; the LIF network's making phase by phase. Nothing here times
//! anything, and none of it is a supported interface.

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{Gemv, GemvConfig};
use cudarc::driver::{CudaGraph, CudaSlice};
use ndarray::{Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::lanes::Lane;
use reservoir_core::lif::{LifConfig, LifWeights};
use reservoir_core::spectral::Phases;
use reservoir_core::{Activation, ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::batched::{BatchEngine, Shared};
use crate::driver::blas::blas_error;
use crate::driver::csr::DeviceCsr;
use crate::driver::GpuDevice;
use crate::error::{DriverContext, GpuError, Result};
use crate::gemm::{f16_bits, BatchKernel, GemmMath};
use crate::lanes::{GpuLaneRunner, LaneRun};
use crate::lif::{chunk_steps, GpuLifNetwork, ShardedLifNetwork};
use crate::ops::cluster::{ClusterPlan, ClusterRun};
use crate::ops::esn::{activation_code, elementwise, step_fused, EsnKernels, Update};
use crate::ops::persistent::{PersistentPlan, PersistentRun, PersistentWeights};
use crate::ops::tensor_core::{
    unsupported, TensorCoreDrive, TensorCoreRun, TensorCoreScratch, TensorCoreW,
};
use crate::ridge_sums::DeviceRidgeSums;

pub use crate::esn::many::BATCH_MIN_SEQUENCES;
pub use crate::esn::CHUNK_STEPS;
pub use crate::lif::{LIF_EVENT_MIN_SYNAPSES, LIF_GPU_ESTIMATE_SYNAPSES, LIF_INBOX_CAPACITY};
pub use crate::ops::cluster::ClusterShape;
pub use crate::sharded::SHARD_MIN_SIZE;

/// `GpuLifNetwork::generate`, telling `phases` the time of each phase of the weights and of
/// the network's making on the device (`network`, enqueued, not waited for).
///
/// # Errors
/// As `GpuLifNetwork::generate`.
pub fn generate_lif(
    config: &LifConfig,
    device: &GpuDevice,
    phases: &mut dyn Phases,
) -> Result<(GpuLifNetwork, LifWeights)> {
    GpuLifNetwork::generate_with(config, device, phases)
}

/// The update every benchmark step uses: leak 0.3, `tanh`.
fn bench_update() -> Update {
    Update {
        leak: 0.3,
        activation: activation_code(Activation::Tanh),
    }
}

/// Captures what `enqueue` launches on the device's stream into a CUDA graph.
///
/// # Errors
/// Any error of the capture or of `enqueue`.
pub fn capture(device: &GpuDevice, enqueue: impl FnOnce() -> Result<()>) -> Result<CudaGraph> {
    device.capture(enqueue)
}

/// A single-sequence run of `steps` steps on a fixed random drive, by every path: W in CSR
/// (and dense for the cuBLAS baseline), the drive, x0 and the states, and the device's
/// cluster and persistent plans for W.
pub struct SingleSequenceSteps {
    device: GpuDevice,
    kernels: std::sync::Arc<EsnKernels>,
    n: usize,
    steps: usize,
    csr: DeviceCsr<f32>,
    dense: Option<CudaSlice<f32>>,
    drive: CudaSlice<f32>,
    x0: CudaSlice<f32>,
    states: CudaSlice<f32>,
    pre: CudaSlice<f32>,
    cluster: Option<ClusterPlan>,
    persistent: Option<PersistentPlan>,
}

impl SingleSequenceSteps {
    /// Uploads `weights`' W (and its dense form when `dense`), a seeded random drive of
    /// `steps` × N values in ±0.5 and a zero start state, and makes the plans.
    pub fn new(
        device: &GpuDevice,
        weights: &ReservoirWeights,
        steps: usize,
        dense: bool,
    ) -> Result<Self> {
        let w = weights.recurrent();
        let n = w.nrows();
        let s = device.stream();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let drive: Vec<f32> = (0..steps * n)
            .map(|_| rng.random_range(-0.5..0.5))
            .collect();
        Ok(Self {
            kernels: device.kernels::<EsnKernels>()?,
            n,
            steps,
            csr: DeviceCsr::upload(device, w, |v| v as f32)?,
            dense: if dense {
                Some(device.upload_f32(&w.to_dense(), "uploading the dense W")?)
            } else {
                None
            },
            drive: s.clone_htod(&drive).context("uploading the drive")?,
            x0: s.alloc_zeros(n).context("allocating x0")?,
            states: s.alloc_zeros(steps * n).context("allocating the states")?,
            pre: s.alloc_zeros(n).context("allocating W·x")?,
            cluster: ClusterPlan::for_matrix(device, w)?,
            persistent: PersistentPlan::for_matrix(device, w)?,
            device: device.clone(),
        })
    }

    /// Steps per run.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The states of the last run (steps × N).
    pub fn states(&self) -> Result<Vec<f32>> {
        self.device
            .stream()
            .clone_dtoh(&self.states)
            .context("copying the states back")
    }

    /// The cluster plan's blocks, registers and spills; `None` where there is no plan.
    pub fn cluster_shape(&self) -> Option<Result<ClusterShape>> {
        self.cluster.as_ref().map(ClusterPlan::describe)
    }

    /// Where the persistent plan reads W from; `None` where there is no plan.
    pub fn persistent_weights(&self) -> Option<PersistentWeights> {
        self.persistent.as_ref().map(PersistentPlan::weights)
    }

    fn unsupported(what: &str) -> GpuError {
        GpuError::Unsupported {
            what: what.into(),
            reason: "no plan on this device for this W".into(),
        }
    }

    /// Queues the run as one cluster launch.
    pub fn enqueue_cluster(&mut self) -> Result<()> {
        let plan = self
            .cluster
            .as_ref()
            .ok_or_else(|| Self::unsupported("the cluster path"))?;
        let run = ClusterRun {
            drive: &self.drive,
            x0: &self.x0,
            steps: self.steps,
            update: bench_update(),
        };
        plan.launch(&self.device, run, &mut self.states)
    }

    /// Queues the run as one cooperative launch.
    pub fn enqueue_persistent(&mut self) -> Result<()> {
        let plan = self
            .persistent
            .as_mut()
            .ok_or_else(|| Self::unsupported("the persistent path"))?;
        let run = PersistentRun {
            w: &self.csr,
            drive: &self.drive,
            x0: self.x0.slice(..),
            steps: self.steps,
            update: bench_update(),
        };
        plan.launch(&self.device, run, &mut self.states)
    }

    /// Queues the run as one fused launch per step (the per-step baseline).
    pub fn enqueue_fused(&mut self) -> Result<()> {
        let n = self.n;
        for t in 0..self.steps {
            let (done, mut rest) = self.states.split_at_mut(t * n);
            let x = if t == 0 {
                self.x0.slice(..)
            } else {
                done.slice((t - 1) * n..)
            };
            step_fused(
                &self.device,
                &self.kernels,
                &self.csr,
                &x,
                &self.drive.slice(t * n..(t + 1) * n),
                &mut rest.slice_mut(..n),
                bench_update(),
            )?;
        }
        Ok(())
    }

    /// Queues the run as cuBLAS SGEMV on the dense W plus the elementwise kernel, two launches
    /// per step (the library baseline); needs the dense W.
    pub fn enqueue_cublas_gemv(&mut self) -> Result<()> {
        let n = self.n;
        let n_i = i32::try_from(n)
            .map_err(|_| ReservoirError::invalid("cuBLAS baseline", "N exceeds 2^31 - 1"))?;
        let dense = self
            .dense
            .as_ref()
            .ok_or_else(|| Self::unsupported("the cuBLAS baseline without a dense W"))?;
        let blas = self.device.blas()?;
        for t in 0..self.steps {
            let (done, mut rest) = self.states.split_at_mut(t * n);
            let x = if t == 0 {
                self.x0.slice(..)
            } else {
                done.slice((t - 1) * n..)
            };
            // Row-major W is column-major Wᵀ: pre = op(A)·x with op = transpose.
            let gemv = GemvConfig {
                trans: cublasOperation_t::CUBLAS_OP_T,
                m: n_i,
                n: n_i,
                alpha: 1.0f32,
                lda: n_i,
                incx: 1,
                beta: 0.0f32,
                incy: 1,
            };
            // SAFETY: A is n×n, x and pre hold n values.
            unsafe { blas.gemv(gemv, dense, &x, &mut self.pre) }
                .map_err(|e| blas_error("the SGEMV baseline", e))?;
            elementwise(
                &self.device,
                &self.kernels,
                &self.pre.slice(..),
                &self.drive.slice(t * n..(t + 1) * n),
                &x,
                &mut rest.slice_mut(..n),
                None,
                n,
                bench_update(),
            )?;
        }
        Ok(())
    }
}

/// The many-sequence step alone: B sequences through the batch engine of a reservoir (W in
/// the GEMM's operand type) on a fixed drive, states alternating between two buffers.
pub struct BatchedSteps {
    device: GpuDevice,
    kernels: std::sync::Arc<EsnKernels>,
    config: ReservoirConfig,
    engine: BatchEngine,
    input: CudaSlice<f32>,
    bias: CudaSlice<f32>,
    drive: CudaSlice<f32>,
    states: [CudaSlice<f32>; 2],
    pre: CudaSlice<f32>,
    halves: Option<[CudaSlice<u16>; 2]>,
}

impl BatchedSteps {
    /// The engine of `config` and `weights` for `batch` sequences in `math`.
    pub fn new(
        device: &GpuDevice,
        config: &ReservoirConfig,
        weights: &ReservoirWeights,
        batch: usize,
        math: GemmMath,
    ) -> Result<Self> {
        let (n, s) = (config.size(), device.stream());
        let width = n * batch;
        let host_drive: Vec<f32> = (0..width)
            .map(|i| ((i * 7919 % 1000) as f32 / 1000.0) - 0.5)
            .collect();
        let alloc = |what| s.alloc_zeros::<f32>(width).context(what);
        let half = |what| s.alloc_zeros::<u16>(width).context(what);
        Ok(Self {
            kernels: device.kernels::<EsnKernels>()?,
            engine: BatchEngine::new(device, config, weights, math, BatchKernel::Gemm)?,
            input: device.upload_f32(weights.input(), "uploading W_in")?,
            bias: device.upload_f32(weights.bias(), "uploading b")?,
            drive: s.clone_htod(&host_drive).context("uploading a drive")?,
            states: [alloc("allocating X")?, alloc("allocating X")?],
            pre: alloc("allocating W·X")?,
            halves: match math {
                GemmMath::F16 => Some([half("allocating f16 X")?, half("allocating f16 X")?]),
                GemmMath::F32 | GemmMath::Tf32 => None,
            },
            config: config.clone(),
            device: device.clone(),
        })
    }

    /// Queues `steps` steps (one GEMM and one elementwise launch each).
    pub fn enqueue(&mut self, steps: usize) -> Result<()> {
        let blas = self.engine.blas(&self.device)?;
        let shared = Shared {
            device: &self.device,
            kernels: &self.kernels,
            config: &self.config,
            input: &self.input,
            bias: &self.bias,
        };
        for t in 0..steps {
            let [even, odd] = &mut self.states;
            let (x, next) = if t % 2 == 0 { (even, odd) } else { (odd, even) };
            let half = self.halves.as_mut().map(|[even, odd]| {
                if t % 2 == 0 {
                    (even.slice(..), odd)
                } else {
                    (odd.slice(..), even)
                }
            });
            self.engine.step(
                &shared,
                blas,
                &x.slice(..),
                half,
                &self.drive.slice(..),
                &mut self.pre,
                &mut next.slice_mut(..),
            )?;
        }
        Ok(())
    }
}

/// The many-sequence step on the tensor cores alone: B sequences through one reservoir for a
/// fixed number of steps on a fixed random drive, in one run (a cooperative launch per up to
/// 512 sequences), from the zero state.
pub struct TensorCoreSteps {
    device: GpuDevice,
    w: TensorCoreW,
    scratch: TensorCoreScratch,
    drive: CudaSlice<f32>,
    x0: CudaSlice<f32>,
    states: CudaSlice<f32>,
    batch: usize,
    steps: usize,
}

impl TensorCoreSteps {
    /// The run of `weights`' W in f16 for `batch` sequences over `steps` steps (drive values
    /// in ±0.5).
    ///
    /// # Errors
    /// [`GpuError::Unsupported`] where the device or N cannot run the kernel.
    pub fn new(
        device: &GpuDevice,
        weights: &ReservoirWeights,
        batch: usize,
        steps: usize,
    ) -> Result<Self> {
        let n = weights.recurrent().nrows();
        let refused = |reason: String| GpuError::Unsupported {
            what: "the tensor-core batch kernel".into(),
            reason,
        };
        if let Some(reason) = unsupported(device, n)? {
            return Err(refused(reason));
        }
        let w = TensorCoreW::upload(device, &f16_bits(weights, "bench W")?, n)?
            .ok_or_else(|| refused("the device cannot run it".into()))?;
        let s = device.stream();
        let values = steps * batch * n;
        let host_drive: Vec<f32> = (0..values)
            .map(|i| ((i * 7919 % 1000) as f32 / 1000.0) - 0.5)
            .collect();
        Ok(Self {
            scratch: w.scratch(device, batch)?,
            w,
            drive: s.clone_htod(&host_drive).context("uploading a drive")?,
            x0: s.alloc_zeros(batch * n).context("allocating x0")?,
            states: s.alloc_zeros(values).context("allocating the states")?,
            device: device.clone(),
            batch,
            steps,
        })
    }

    /// Steps of one run.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Queues one run of all the steps.
    pub fn enqueue(&mut self) -> Result<()> {
        self.w.run(
            &self.device,
            &mut self.scratch,
            TensorCoreRun {
                drive: TensorCoreDrive::Sequences {
                    drive: self.drive.slice(..),
                    leak: bench_update().leak,
                },
                x0: self.x0.slice(..),
                states: &mut self.states,
                batch: self.batch,
                steps: self.steps,
            },
        )
    }
}

/// A sweep's lanes over one chunk of a seeded random input, for timing their steps (plain or
/// replayed from a graph) and their ridge sums.
pub struct LaneSteps<'a> {
    runner: &'a mut GpuLaneRunner,
    run: LaneRun,
    targets: Array2<f64>,
    steps: usize,
}

impl<'a> LaneSteps<'a> {
    /// The lanes around `base` over `steps` steps (at most one chunk), run once so the inputs
    /// are projected and the states filled.
    pub fn new(
        runner: &'a mut GpuLaneRunner,
        base: &ReservoirConfig,
        lanes: &[Lane],
        steps: usize,
    ) -> Result<Self> {
        if lanes.is_empty() || steps == 0 {
            return Err(ReservoirError::invalid("lane steps", "need a lane and a step").into());
        }
        let steps = steps.min(GpuLaneRunner::chunk_steps(base.size(), lanes.len()));
        let mut run = runner.prepare(base, lanes, steps)?;
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let inputs =
            Array2::from_shape_fn((steps, base.input_size()), |_| rng.random_range(-0.5..0.5));
        let targets = Array2::from_shape_fn((steps, 1), |_| rng.random_range(-1.0..1.0));
        runner.run_chunk(&mut run, inputs.view(), false)?;
        Ok(Self {
            runner,
            run,
            targets,
            steps,
        })
    }

    /// Steps per run.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Queues the steps (one GEMM and one elementwise launch each, or one tensor-core run).
    pub fn enqueue(&mut self) -> Result<()> {
        self.runner.enqueue_steps(&mut self.run, self.steps)
    }

    /// Whether the steps are one tensor-core run (a single launch: nothing for a graph to
    /// save).
    pub fn on_tensor_cores(&self) -> bool {
        self.run.on_tensor_cores()
    }

    /// The steps captured into a CUDA graph.
    pub fn capture(&mut self) -> Result<CudaGraph> {
        let device = self.runner.device().clone();
        device.capture(|| self.runner.enqueue_steps(&mut self.run, self.steps))
    }

    /// Adds the run's states (all lanes) with random targets to `sums`.
    pub fn add_to(&self, sums: &mut DeviceRidgeSums) -> Result<()> {
        sums.add(&self.run.states.slice(..), self.targets.view())
    }
}

/// LIF steps alone: inputs uploaded once, runs alternating between two flag buffers so the
/// events of the last run can be counted as the CPU counts them.
pub struct LifSteps<'a> {
    network: &'a mut GpuLifNetwork,
    u: CudaSlice<f32>,
    features: CudaSlice<f32>,
    flags: [CudaSlice<u8>; 2],
    steps: usize,
    runs: usize,
}

impl<'a> LifSteps<'a> {
    /// `inputs` (T × K, T at most one chunk) uploaded for `network`.
    pub fn new(network: &'a mut GpuLifNetwork, inputs: ArrayView2<f64>) -> Result<Self> {
        use reservoir_core::Reservoir;
        let (steps, n) = (inputs.nrows(), network.size());
        if steps == 0 || steps > chunk_steps(n) || inputs.ncols() != network.input_size() {
            return Err(ReservoirError::shape(
                "timed LIF inputs",
                format!("1..={} rows x {}", chunk_steps(n), network.input_size()),
                format!("{} x {}", inputs.nrows(), inputs.ncols()),
            )
            .into());
        }
        let s = network.device().stream().clone();
        let host_u: Vec<f32> = inputs.iter().map(|&v| v as f32).collect();
        let flags = || {
            s.alloc_zeros::<u8>(steps * n)
                .context("allocating the spike flags")
        };
        Ok(Self {
            u: s.clone_htod(&host_u).context("uploading inputs")?,
            features: s
                .alloc_zeros(steps * n)
                .context("allocating the features")?,
            flags: [flags()?, flags()?],
            steps,
            runs: 0,
            network,
        })
    }

    /// Steps per run.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Queues one run of the steps from the network's evolving state.
    pub fn enqueue(&mut self) -> Result<()> {
        self.runs += 1;
        let flags = &mut self.flags[self.runs % 2];
        self.network
            .enqueue_steps(&self.u, &mut self.features, flags, self.steps)
    }

    /// Spikes of the last run and the synaptic events it delivered (the CPU's counting).
    pub fn last_run_counts(&self) -> Result<(u64, u64)> {
        let s = self.network.device().stream();
        let previous = s
            .clone_dtoh(&self.flags[(self.runs + 1) % 2])
            .context("copying the spikes back")?;
        let last = s
            .clone_dtoh(&self.flags[self.runs % 2])
            .context("copying the spikes back")?;
        let carried = self.network.count_events(&previous, 0).undelivered;
        let count = self.network.count_events(&last, carried);
        Ok((count.spikes, count.delivered))
    }
}

/// Steps per chunk of a LIF network of `n` neurons on one GPU: the most a [`LifSteps`] run
/// takes.
pub fn lif_chunk_steps(n: usize) -> usize {
    chunk_steps(n)
}

/// The steps of a LIF network split over GPUs alone: a chunk's inputs uploaded once to every
/// shard, each run the chunk's steps from the network's evolving state, the features left on
/// the devices (what `run` copies back and widens to f64 per chunk is not timed).
pub struct ShardedLifSteps<'a> {
    network: &'a mut ShardedLifNetwork,
    steps: usize,
}

impl<'a> ShardedLifSteps<'a> {
    /// `inputs` (T × K, T at most one chunk of the split network) uploaded for `network`.
    pub fn new(network: &'a mut ShardedLifNetwork, inputs: ArrayView2<f64>) -> Result<Self> {
        if inputs.nrows() == 0 {
            return Err(ReservoirError::invalid("timed LIF inputs", "no steps").into());
        }
        network.upload_chunk(inputs)?;
        Ok(Self {
            steps: inputs.nrows(),
            network,
        })
    }

    /// Steps per run.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Steps per chunk of `network` (the most one run takes).
    pub fn chunk_steps(network: &ShardedLifNetwork) -> usize {
        network.chunk_steps()
    }

    /// One run of the steps on every GPU, waited for.
    pub fn run(&mut self) -> Result<()> {
        self.network.run_chunk(self.steps)?;
        self.network.synchronize()
    }
}
