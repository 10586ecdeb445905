//! Timing helpers for the GPU benchmark binary: the recurrent step of each path timed with CUDA
//! events after a warm-up, and the in-process baselines it is compared against.

use cudarc::cublas::{sys::cublasOperation_t, Gemv, GemvConfig};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::ReservoirWeights;

use crate::cluster::{ClusterPlan, ClusterRun, ClusterShape};
use crate::csr::DeviceCsr;
use crate::device::GpuDevice;
use crate::error::{DriverContext, GpuError, Result};
use crate::kernels;
use crate::persistent::{PersistentPlan, PersistentRun, PersistentWeights};

/// A timed run: median microseconds per step over `repeats` timed runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepTiming {
    /// Median µs per step.
    pub micros_per_step: f64,
    /// Steps per timed run.
    pub steps: usize,
}

/// The buffers every path reads: W in CSR and dense form, a random drive, the states.
pub struct BenchBuffers {
    device: GpuDevice,
    n: usize,
    steps: usize,
    csr: DeviceCsr<f32>,
    dense: Option<CudaSlice<f32>>,
    drive: CudaSlice<f32>,
    x0: CudaSlice<f32>,
    states: CudaSlice<f32>,
    cluster: Option<ClusterPlan>,
    persistent: Option<PersistentPlan>,
}

impl BenchBuffers {
    /// Uploads `weights`' W (and its dense form when `dense`), a seeded random drive of
    /// `steps` × N values in ±0.5 and a zero start state.
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
        let dense_w = if dense {
            Some(device.upload_f32(&w.to_dense(), "uploading dense W")?)
        } else {
            None
        };
        Ok(Self {
            device: device.clone(),
            n,
            steps,
            csr: DeviceCsr::upload(device, w, |v| v as f32)?,
            dense: dense_w,
            drive: s.clone_htod(&drive).context("uploading the drive")?,
            x0: s.alloc_zeros(n).context("allocating x0")?,
            states: s.alloc_zeros(steps * n).context("allocating the states")?,
            cluster: ClusterPlan::for_matrix(device, w)?,
            persistent: PersistentPlan::for_matrix(device, w)?,
        })
    }

    /// The final states of the last timed run (steps × N).
    pub fn states(&self) -> Result<Vec<f32>> {
        self.device
            .stream()
            .clone_dtoh(&self.states)
            .context("copying the states back")
    }

    /// Median µs per step of `run` (which must enqueue all `steps` steps), after one warm-up.
    fn time(
        &mut self,
        repeats: usize,
        mut run: impl FnMut(&mut Self) -> Result<()>,
    ) -> Result<StepTiming> {
        let device = self.device.clone();
        let steps = self.steps;
        let micros_per_step = median_micros_per_step(&device, steps, repeats, || run(self))?;
        Ok(StepTiming {
            micros_per_step,
            steps,
        })
    }

    /// The thread-block cluster kernel (W on chip across the cluster), with its shape; `None`
    /// where the device or N does not allow it.
    pub fn time_cluster(&mut self, repeats: usize) -> Result<Option<(StepTiming, ClusterShape)>> {
        let Some(plan) = self.cluster.take() else {
            return Ok(None);
        };
        let timing = self.time(repeats, |b| {
            let run = ClusterRun {
                drive: &b.drive,
                x0: &b.x0,
                n: b.n,
                steps: b.steps,
                leak: 0.3,
                activation: 0,
            };
            plan.launch(&b.device, run, &mut b.states)
        });
        let shape = plan.describe();
        self.cluster = Some(plan);
        Ok(Some((timing?, shape?)))
    }

    /// The persistent cooperative kernel, reading W from where its plan puts it (see
    /// [`PersistentWeights`]).
    pub fn time_persistent(&mut self, repeats: usize) -> Result<(StepTiming, PersistentWeights)> {
        let mut plan = self
            .persistent
            .take()
            .ok_or_else(|| GpuError::Unavailable("no persistent plan on this device".into()))?;
        let timing = self.time(repeats, |b| {
            let run = PersistentRun {
                row_ptr: &b.csr.row_ptr,
                col_idx: &b.csr.col_idx,
                values: &b.csr.values,
                drive: &b.drive,
                x0: b.x0.slice(..),
                n: b.n,
                steps: b.steps,
                leak: 0.3,
                activation: 0,
            };
            plan.launch(&b.device, run, &mut b.states)
        });
        let weights = plan.weights();
        self.persistent = Some(plan);
        Ok((timing?, weights))
    }

    /// Baseline: one launch per step of a fused CSR kernel (a warp per row).
    pub fn time_fused_per_step(&mut self, repeats: usize) -> Result<StepTiming> {
        let f = self
            .device
            .nvrtc_function(&kernels::PERSISTENT, kernels::persistent::STEP_FUSED)?;
        let n_i = self.n as i32;
        let config = LaunchConfig {
            grid_dim: ((self.n * 32).div_ceil(256) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        self.time(repeats, |b| {
            let s = b.device.stream().clone();
            for t in 0..b.steps {
                let (done, mut rest) = b.states.split_at_mut(t * b.n);
                let mut next = rest.slice_mut(..b.n);
                let x = if t == 0 {
                    b.x0.slice(..)
                } else {
                    done.slice((t - 1) * b.n..)
                };
                let drive_t = b.drive.slice(t * b.n..(t + 1) * b.n);
                let mut launch = s.launch_builder(&f);
                launch
                    .arg(&b.csr.row_ptr)
                    .arg(&b.csr.col_idx)
                    .arg(&b.csr.values)
                    .arg(&drive_t)
                    .arg(&x)
                    .arg(&mut next)
                    .arg(&n_i)
                    .arg(&0.3f32)
                    .arg(&0i32);
                // SAFETY: CSR n×n with columns < n; drive_t, x and next hold n values.
                unsafe { launch.launch(config) }.context("launching esn_step_fused")?;
            }
            Ok(())
        })
    }

    /// Baseline: cuBLAS SGEMV on the dense W plus an elementwise kernel, two launches per step.
    pub fn time_cublas_gemv(&mut self, repeats: usize) -> Result<StepTiming> {
        let f = self
            .device
            .nvrtc_function(&kernels::PERSISTENT, kernels::persistent::ELEMENTWISE)?;
        let mut pre = self
            .device
            .stream()
            .alloc_zeros::<f32>(self.n)
            .context("allocating pre")?;
        let n_i = self.n as i32;
        let config = LaunchConfig {
            grid_dim: (self.n.div_ceil(256) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let device = self.device.clone();
        let blas = device.blas()?;
        self.time(repeats, |b| {
            let Some(dense) = b.dense.as_ref() else {
                return Err(GpuError::Unavailable(
                    "the cuBLAS baseline needs the dense W".into(),
                ));
            };
            let s = b.device.stream().clone();
            for t in 0..b.steps {
                let (done, mut rest) = b.states.split_at_mut(t * b.n);
                let mut next = rest.slice_mut(..b.n);
                let x = if t == 0 {
                    b.x0.slice(..)
                } else {
                    done.slice((t - 1) * b.n..)
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
                unsafe { blas.gemv(gemv, dense, &x, &mut pre) }.map_err(|e| GpuError::Blas {
                    context: "SGEMV baseline",
                    message: e.to_string(),
                })?;
                let drive_t = b.drive.slice(t * b.n..(t + 1) * b.n);
                let mut launch = s.launch_builder(&f);
                launch
                    .arg(&pre)
                    .arg(&drive_t)
                    .arg(&x)
                    .arg(&mut next)
                    .arg(&0u64)
                    .arg(&n_i)
                    .arg(&0.3f32)
                    .arg(&0i32);
                // SAFETY: pre, drive_t, x and next hold n values; no f16 copy (null).
                unsafe { launch.launch(config) }.context("launching esn_elementwise")?;
            }
            Ok(())
        })
    }
}

/// Median µs per step of `enqueue` (which queues `steps` steps on the device's stream), timed
/// with CUDA events over `repeats` runs after one untimed warm-up run.
pub fn median_micros_per_step(
    device: &GpuDevice,
    steps: usize,
    repeats: usize,
    mut enqueue: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let (ctx, stream) = (device.context(), device.stream());
    enqueue()?;
    let mut samples = Vec::with_capacity(repeats.max(1));
    for _ in 0..repeats.max(1) {
        let start = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .context("creating an event")?;
        let end = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .context("creating an event")?;
        start.record(stream).context("recording an event")?;
        enqueue()?;
        end.record(stream).context("recording an event")?;
        end.synchronize().context("waiting for the timed run")?;
        samples.push(
            f64::from(start.elapsed_ms(&end).context("reading an event")?) * 1e3
                / steps.max(1) as f64,
        );
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

/// Device-to-device copy bandwidth in GB/s (bytes read plus written), median of 5, over a
/// buffer of `bytes`.
pub fn copy_bandwidth(device: &GpuDevice, bytes: usize) -> Result<f64> {
    let s = device.stream();
    let count = bytes / 4;
    let src = s
        .alloc_zeros::<f32>(count)
        .context("allocating the copy source")?;
    let mut dst = s
        .alloc_zeros::<f32>(count)
        .context("allocating the copy target")?;
    let ctx = device.context();
    let mut samples = Vec::new();
    for round in 0..6 {
        let start = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .context("creating an event")?;
        let end = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .context("creating an event")?;
        start.record(s).context("recording an event")?;
        s.memcpy_dtod(&src, &mut dst).context("copying")?;
        end.record(s).context("recording an event")?;
        end.synchronize().context("waiting for the copy")?;
        if round > 0 {
            samples.push(
                2.0 * (count * 4) as f64
                    / (f64::from(start.elapsed_ms(&end).context("reading an event")?) * 1e-3)
                    / 1e9,
            );
        }
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}
