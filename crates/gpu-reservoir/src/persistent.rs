//! Launch plans for `kernels/persistent.cu`: many echo-state steps in one cooperative launch.

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{result, CudaFunction, CudaSlice, CudaView, LaunchConfig, PushKernelArg};

use crate::device::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::kernels;

/// Threads per block of the persistent kernels (8 warps, a warp per row).
pub const PERSISTENT_THREADS: u32 = 256;

/// Largest N the persistent kernel is used for. Every block copies all of x into shared memory
/// each step, so the copy grows with N: measured on an H200 (`gpu_bench`), the persistent
/// kernel beats one launch per step at N = 1000 (4.7 vs 6.6 µs/step dense, 3.8 vs 4.3 µs at
/// 10 %) and loses at N = 10,000, 1 % (17.4 vs 8.2 µs/step).
pub const PERSISTENT_MAX_N: usize = 4096;

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
    /// shipped-PTX path, used where cooperative launch is unavailable.
    PerStep,
}

/// The geometry of one persistent launch, fixed per reservoir.
#[derive(Debug)]
pub(crate) struct PersistentPlan {
    function: CudaFunction,
    blocks: u32,
    rows_per_block: i32,
    cache_w: i32,
    shared_bytes: u32,
    barrier: CudaSlice<u32>,
}

/// The per-launch arguments of a persistent run.
pub(crate) struct PersistentRun<'a> {
    pub row_ptr: &'a CudaSlice<i32>,
    pub col_idx: &'a CudaSlice<i32>,
    pub values: &'a CudaSlice<f32>,
    pub drive: &'a CudaSlice<f32>,
    pub x0: CudaView<'a, f32>,
    pub n: usize,
    pub steps: usize,
    pub leak: f32,
    pub activation: i32,
}

impl PersistentPlan {
    /// A plan for a CSR matrix with row pointers `row_ptr` (n + 1 entries), or `None` when the
    /// device cannot launch cooperatively, N exceeds [`PERSISTENT_MAX_N`] or x alone does not
    /// fit in shared memory.
    pub(crate) fn for_csr(device: &GpuDevice, row_ptr: &[u32]) -> Result<Option<Self>> {
        if row_ptr.len().saturating_sub(1) > PERSISTENT_MAX_N {
            return Ok(None);
        }
        Self::for_csr_unbounded(device, row_ptr)
    }

    /// [`PersistentPlan::for_csr`] without the [`PERSISTENT_MAX_N`] policy: the benchmark
    /// measures the persistent kernel at every size.
    pub(crate) fn for_csr_unbounded(device: &GpuDevice, row_ptr: &[u32]) -> Result<Option<Self>> {
        let n = row_ptr.len().saturating_sub(1);
        let ctx = device.context();
        let cooperative = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
            .context("reading the cooperative-launch attribute")?;
        let max_shared = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .context("reading the shared-memory limit")? as usize;
        let x_bytes = n * 4;
        if cooperative == 0 || n == 0 || x_bytes > max_shared {
            return Ok(None);
        }
        let function = device.nvrtc_function(&kernels::PERSISTENT, kernels::persistent::CSR)?;
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
        let cached = x_bytes + largest_slice * 8;
        let (cache_w, shared) = if cached <= max_shared {
            (1, cached)
        } else {
            (0, x_bytes)
        };
        // SAFETY: sets a launch attribute of a function loaded on this context.
        unsafe {
            result::function::set_function_attribute(
                function.cu_function(),
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared as i32,
            )
        }
        .context("raising the dynamic shared-memory limit")?;
        let resident = function
            .occupancy_max_active_blocks_per_multiprocessor(PERSISTENT_THREADS, shared, None)
            .context("reading the occupancy")?;
        if resident < 1 {
            return Ok(None);
        }
        Ok(Some(Self {
            function,
            blocks: blocks as u32,
            rows_per_block: rows_per_block as i32,
            cache_w,
            shared_bytes: shared as u32,
            barrier: device
                .stream()
                .alloc_zeros(2)
                .context("allocating the grid barrier")?,
        }))
    }

    /// Whether W's slices live in shared memory (otherwise they are read from global memory).
    pub(crate) fn caches_weights(&self) -> bool {
        self.cache_w != 0
    }

    /// Runs `run.steps` steps into `states` (steps × n) in one cooperative launch.
    pub(crate) fn launch(
        &mut self,
        device: &GpuDevice,
        run: PersistentRun<'_>,
        states: &mut CudaSlice<f32>,
    ) -> Result<()> {
        let (n, steps) = (run.n as i32, run.steps as i32);
        let stream = device.stream();
        let mut launch = stream.launch_builder(&self.function);
        launch
            .arg(run.row_ptr)
            .arg(run.col_idx)
            .arg(run.values)
            .arg(run.drive)
            .arg(&run.x0)
            .arg(states)
            .arg(&n)
            .arg(&steps)
            .arg(&run.leak)
            .arg(&run.activation)
            .arg(&self.rows_per_block)
            .arg(&self.cache_w)
            .arg(&mut self.barrier);
        let config = LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (PERSISTENT_THREADS, 1, 1),
            shared_mem_bytes: self.shared_bytes,
        };
        // SAFETY: row_ptr has n+1 entries ending at len(col_idx) = len(values) with columns < n;
        // drive and states hold steps·n values, x0 n; blocks·rows_per_block >= n; the shared
        // memory holds x (n floats) plus, when cached, the largest block's slice of W; the
        // barrier is two zeroed counters that every launch leaves at (0, k); the cooperative
        // launch guarantees that all blocks are resident, which the grid barrier needs.
        unsafe { launch.launch_cooperative(config) }.context("launching esn_persistent_csr")?;
        Ok(())
    }
}
