//! Launch plans for `esn_persistent.cu`: many echo-state steps in one cooperative launch.

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use reservoir_core::{CsrMatrix, HalfFormat, ReservoirError};
use reservoir_kernels::esn_persistent;

use crate::driver::csr::DeviceCsr;
use crate::driver::launch::{dim, fits};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, Result};
use crate::ops::esn::Update;

/// Density from which a W too large for the chips streams as a dense matrix (16-byte loads of
/// every value) rather than as a CSR (an index read per value).
const DENSE_DENSITY: f64 = 0.7;

/// The kernels of `esn_persistent.cu`.
#[derive(Debug)]
pub(crate) struct PersistentKernels {
    csr: CudaFunction,
    dense: CudaFunction,
    dense_f16: CudaFunction,
    dense_bf16: CudaFunction,
    shard_dense_step: CudaFunction,
}

impl KernelSet for PersistentKernels {
    const MODULE: reservoir_kernels::Module = esn_persistent::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            csr: module.function(esn_persistent::CSR)?,
            dense: module.function(esn_persistent::DENSE)?,
            dense_f16: module.function(esn_persistent::DENSE_F16)?,
            dense_bf16: module.function(esn_persistent::DENSE_BF16)?,
            shard_dense_step: module.function(esn_persistent::SHARD_DENSE_STEP)?,
        })
    }
}

/// Threads per block of the persistent kernel (32 warps, a warp per row): one block per SM,
/// as many warps as an SM runs, so the per-step copy of x and the rows have the most loads in
/// flight.
pub const PERSISTENT_THREADS: u32 = 1024;

/// How a single sequence is stepped on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepPath {
    /// One launch per chunk of steps in a single thread-block cluster that holds W on chip and
    /// exchanges x through distributed shared memory (sm_90+, N ≤ 1024; the default there).
    Cluster,
    /// One cooperative launch per chunk of steps, W cached in shared memory when it fits, a
    /// grid barrier between steps (the default where the cluster path is unavailable and the
    /// device supports cooperative launch).
    Persistent,
    /// Two launches per step (`matvec_reservoir_kernel`, `leaky_integration_kernel`): the
    /// path of every device, used where cooperative launch is unavailable.
    PerStep,
}

/// Where the persistent kernel reads W from each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersistentWeights {
    /// Each block's CSR slice of W lives in its shared memory (`esn_persistent_csr`).
    CsrOnChip,
    /// A dense W (density ≥ 0.7, N % 4 == 0) too large for the chips, streamed from HBM with
    /// 16-byte loads (`esn_persistent_dense`).
    DenseStreamed,
    /// The same for a W whose values are all exact in a 16-bit format (weights made with
    /// `ReservoirWeights::with_recurrent_rounded`, N % 8 == 0), streamed in that format: half
    /// the bytes per step, the same results.
    DenseStreamedHalf(HalfFormat),
    /// The CSR W read from L2 / HBM (`esn_persistent_csr` without caching).
    CsrStreamed,
}

/// The geometry of one persistent launch, fixed per reservoir.
#[derive(Debug)]
pub(crate) struct PersistentPlan {
    function: CudaFunction,
    weights: PersistentWeights,
    /// The dense copy of W for the streamed paths.
    dense: Option<DenseW>,
    blocks: u32,
    rows_per_block: i32,
    shared_bytes: u32,
    barrier: CudaSlice<u64>,
}

/// A dense W on the device, in f32 or as 16-bit patterns.
#[derive(Debug)]
enum DenseW {
    F32(CudaSlice<f32>),
    Half(CudaSlice<u16>),
}

/// The 16-bit format that holds every value of W exactly, if any (bf16 first: it decodes with
/// a shift), when N suits the 16-bit kernel (N % 8 == 0).
fn exact_half_format(w: &CsrMatrix<f64>) -> Option<HalfFormat> {
    [HalfFormat::Bf16, HalfFormat::F16]
        .into_iter()
        .find(|f| w.nrows().is_multiple_of(8) && w.values().iter().all(|&v| f.holds(v)))
}

/// The per-launch arguments of a persistent run.
pub(crate) struct PersistentRun<'a> {
    pub w: &'a DeviceCsr<f32>,
    pub drive: &'a CudaSlice<f32>,
    pub x0: CudaView<'a, f32>,
    pub steps: usize,
    pub update: super::esn::Update,
}

impl PersistentPlan {
    /// A plan for W, or `None` when the device cannot launch cooperatively or x alone does not
    /// fit in a block's shared memory. W's slices are cached on chip when they fit; otherwise
    /// a dense W streams from HBM (in 16 bits when its values are all exact there) and a
    /// sparse one is read through L2. Each beats one launch per step (docs/benchmarks.md, `gpu_bench`).
    pub(crate) fn for_matrix(device: &GpuDevice, w: &CsrMatrix<f64>) -> Result<Option<Self>> {
        let n = w.nrows();
        let row_ptr = w.row_ptr();
        let cooperative =
            device.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)?;
        let max_shared = device
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
            as usize;
        let x_bytes = n * 4;
        if cooperative == 0 || n == 0 || x_bytes > max_shared {
            return Ok(None);
        }
        let blocks = device.info().multiprocessors.max(1) as usize;
        let rows_per_block = n.div_ceil(blocks);
        let largest_slice = (0..blocks)
            .map(|b| {
                let (r0, r1) = (
                    (b * rows_per_block).min(n),
                    ((b + 1) * rows_per_block).min(n),
                );
                (row_ptr[r1] - row_ptr[r0]) as usize
            })
            .max()
            .unwrap_or(0);
        let density = w.nnz() as f64 / (n as f64 * n as f64);
        // The CSR kernel keeps the block's row offsets next to x.
        let csr_bytes = x_bytes + (rows_per_block + 1) * 4;
        let cached = csr_bytes + largest_slice * 8;
        let (weights, shared) = if cached <= max_shared {
            (PersistentWeights::CsrOnChip, cached)
        } else if density >= DENSE_DENSITY && n.is_multiple_of(4) {
            match exact_half_format(w) {
                Some(format) => (PersistentWeights::DenseStreamedHalf(format), x_bytes),
                None => (PersistentWeights::DenseStreamed, x_bytes),
            }
        } else {
            (PersistentWeights::CsrStreamed, csr_bytes)
        };
        let kernels = device.kernels::<PersistentKernels>()?;
        let function = match weights {
            PersistentWeights::DenseStreamed => &kernels.dense,
            PersistentWeights::DenseStreamedHalf(HalfFormat::F16) => &kernels.dense_f16,
            PersistentWeights::DenseStreamedHalf(HalfFormat::Bf16) => &kernels.dense_bf16,
            PersistentWeights::CsrOnChip | PersistentWeights::CsrStreamed => &kernels.csr,
        }
        .clone();
        if shared > device.allow_shared_memory(&function)? {
            return Ok(None);
        }
        let resident = function
            .occupancy_max_active_blocks_per_multiprocessor(PERSISTENT_THREADS, shared, None)
            .context("reading the occupancy")?;
        if resident < 1 {
            return Ok(None);
        }
        let stream = device.stream();
        let dense = match weights {
            PersistentWeights::DenseStreamed => Some(DenseW::F32(
                device.upload_f32(&w.to_dense(), "uploading the dense W")?,
            )),
            PersistentWeights::DenseStreamedHalf(format) => {
                let bits = w
                    .to_dense()
                    .iter()
                    .map(|&v| {
                        format.to_bits(v).ok_or_else(|| {
                            ReservoirError::invalid(
                                "recurrent weights",
                                format!("{v} is beyond the range of {format:?}"),
                            )
                        })
                    })
                    .collect::<std::result::Result<Vec<u16>, _>>()?;
                Some(DenseW::Half(
                    stream
                        .clone_htod(&bits)
                        .alloc_context::<u16>("uploading the dense 16-bit W", bits.len())?,
                ))
            }
            PersistentWeights::CsrOnChip | PersistentWeights::CsrStreamed => None,
        };
        Ok(Some(Self {
            function,
            weights,
            dense,
            blocks: blocks as u32,
            rows_per_block: rows_per_block as i32,
            shared_bytes: shared as u32,
            barrier: stream
                .alloc_zeros(1)
                .context("allocating the grid barrier")?,
        }))
    }

    /// Where the kernel reads W from.
    pub(crate) fn weights(&self) -> PersistentWeights {
        self.weights
    }

    /// Runs `run.steps` steps into `states` (steps × n) in one cooperative launch.
    pub(crate) fn launch(
        &mut self,
        device: &GpuDevice,
        run: PersistentRun<'_>,
        states: &mut CudaSlice<f32>,
    ) -> Result<()> {
        const WHAT: &str = "persistent run";
        let n = run.w.rows();
        let values = run.steps.saturating_mul(n);
        fits(run.drive.len(), values, WHAT)?;
        fits(states.len(), values, WHAT)?;
        fits(run.x0.len(), n, WHAT)?;
        let (n_i, steps) = (dim(n, WHAT)?, dim(run.steps, WHAT)?);
        let stream = device.stream();
        stream
            .memset_zeros(&mut self.barrier)
            .context("zeroing the grid barrier")?;
        let mut launch = stream.launch_builder(&self.function);
        let cache_w = i32::from(self.weights == PersistentWeights::CsrOnChip);
        match &self.dense {
            Some(DenseW::F32(dense)) => launch.arg(dense),
            Some(DenseW::Half(dense)) => launch.arg(dense),
            None => launch
                .arg(&run.w.row_ptr)
                .arg(&run.w.col_idx)
                .arg(&run.w.values),
        };
        launch
            .arg(run.drive)
            .arg(&run.x0)
            .arg(states)
            .arg(&n_i)
            .arg(&steps)
            .arg(&run.update.leak)
            .arg(&run.update.activation);
        if self.dense.is_none() {
            launch.arg(&self.rows_per_block).arg(&cache_w);
        }
        launch.arg(&mut self.barrier);
        let config = LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (PERSISTENT_THREADS, 1, 1),
            shared_mem_bytes: self.shared_bytes,
        };
        // SAFETY: the arguments follow esn_persistent_dense's signature (and its f16 and bf16
        // twins') when the plan holds the dense W (n×n f32 with n % 4 == 0, or n×n 16-bit
        // values with n % 8 == 0: whole 16-byte groups per row) and esn_persistent_csr's
        // otherwise (row_ptr has n+1 entries ending at len(col_idx) = len(values), columns
        // < n); drive and states hold steps·n values, x0 n (checked above); the plan was made
        // for this W, so blocks·rows_per_block >= n; the shared memory holds x (n
        // floats), for the CSR kernel rows_per_block + 1 row offsets and, when cached, the
        // largest block's slice of W; the barrier is one 64-bit counter zeroed just above; the
        // cooperative launch guarantees that all blocks are resident, which the grid barrier
        // needs.
        unsafe { launch.launch_cooperative(config) }.context("launching the persistent kernel")?;
        Ok(())
    }
}

/// One step of one shard of a dense W (`esn_shard_dense_step`): the shard's `rows` rows of all
/// `n` columns (row-major f32) times the whole state `x`, plus `drive_t`, leaky-integrated into
/// `own` from `x[first..first + rows]`; W streams from HBM as the dense persistent run reads it.
#[derive(Debug)]
pub(crate) struct ShardStep {
    function: CudaFunction,
    blocks: u32,
}

impl ShardStep {
    /// The step for shards of `n` columns, or `None` where x does not fit the shared memory
    /// or `n` is not a multiple of 4 (whole 16-byte groups per row).
    pub(crate) fn for_columns(device: &GpuDevice, n: usize) -> Result<Option<Self>> {
        let kernels = device.kernels::<PersistentKernels>()?;
        let function = kernels.shard_dense_step.clone();
        if !n.is_multiple_of(4) || n * 4 > device.allow_shared_memory(&function)? {
            return Ok(None);
        }
        Ok(Some(Self {
            function,
            blocks: device.info().multiprocessors.max(1) as u32,
        }))
    }

    /// `own[r] = leaky(x[first + r], W[r]·x + drive_t[r])` for the shard's rows.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch(
        &self,
        device: &GpuDevice,
        w: &CudaView<'_, f32>,
        drive_t: &CudaView<'_, f32>,
        x: &CudaView<'_, f32>,
        own: &mut CudaViewMut<'_, f32>,
        (rows, n, first): (usize, usize, usize),
        update: Update,
    ) -> Result<()> {
        const WHAT: &str = "the step of a shard";
        fits(w.len(), rows.saturating_mul(n), WHAT)?;
        fits(x.len(), n, WHAT)?;
        fits(drive_t.len(), rows, WHAT)?;
        fits(own.len(), rows, WHAT)?;
        fits(n, first.saturating_add(rows), WHAT)?;
        let (rows_i, n_i, first_i) = (dim(rows, WHAT)?, dim(n, WHAT)?, dim(first, WHAT)?);
        let mut launch = device.stream().launch_builder(&self.function);
        launch
            .arg(w)
            .arg(drive_t)
            .arg(x)
            .arg(own)
            .arg(&rows_i)
            .arg(&n_i)
            .arg(&first_i)
            .arg(&update.leak)
            .arg(&update.activation);
        let config = LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (PERSISTENT_THREADS, 1, 1),
            shared_mem_bytes: (n * 4) as u32,
        };
        // SAFETY: w holds rows·n f32 values (whole 16-byte groups per row: n % 4 == 0, checked
        // when the step was made, and the allocation is 256-byte aligned), x n values (in the
        // dynamic shared memory, which the limit raised at construction holds), drive_t and own
        // rows values, first + rows <= n (checked above); own overlaps neither x nor w.
        unsafe { launch.launch(config) }.context("launching esn_shard_dense_step")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn matrix(n: usize, value: impl Fn(usize, usize) -> f64) -> CsrMatrix<f64> {
        CsrMatrix::from_dense(&Array2::from_shape_fn((n, n), |(i, j)| value(i, j))).expect("csr")
    }

    #[test]
    fn a_w_streams_in_the_16_bit_format_that_holds_every_value() {
        // Multiples of 1/64 below 4 are exact in bf16 (and in f16).
        let coarse = |i: usize, j: usize| ((i * 7 + j) % 200) as f64 / 64.0 - 1.5;
        assert_eq!(
            exact_half_format(&matrix(8, coarse)),
            Some(HalfFormat::Bf16)
        );
        // f16 values that need more than bf16's 8 significant bits.
        let fine = |i: usize, j: usize| {
            HalfFormat::F16
                .round(0.1 + (i * 8 + j) as f64 * 1e-3)
                .expect("in range")
        };
        assert_eq!(exact_half_format(&matrix(16, fine)), Some(HalfFormat::F16));
        // Unrounded values, or N not a multiple of 8: f32.
        assert_eq!(
            exact_half_format(&matrix(8, |i, j| 0.1 + (i * 8 + j) as f64 * 1e-3)),
            None
        );
        assert_eq!(exact_half_format(&matrix(12, coarse)), None);
    }
}
