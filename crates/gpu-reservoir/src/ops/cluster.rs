//! Launch plan for `esn_cluster.cu`: a whole single-sequence run in one thread-block cluster,
//! with W held on chip across the cluster's blocks (sm_90 and later).

use cudarc::driver::{CudaFunction, CudaSlice};
use reservoir_core::CsrMatrix;
use reservoir_kernels::esn_cluster;

use super::esn::Update;
use crate::driver::launch::{
    allow_large_clusters, clusters_available, dim, fits, ClusterLaunch, KernelArgs,
};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::Result;

/// The kernel of `esn_cluster.cu`.
#[derive(Debug)]
pub(crate) struct ClusterKernels {
    run: CudaFunction,
}

impl KernelSet for ClusterKernels {
    const MODULE: reservoir_kernels::Module = esn_cluster::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            run: module.function(esn_cluster::RUN)?,
        })
    }
}

/// Largest N the cluster kernel holds on chip: a block holds up to 64 rows of up to 1024
/// columns (24 of every 64 in shared memory, the rest in registers), and a cluster has at most
/// 16 blocks.
pub(crate) const CLUSTER_MAX_N: usize = 1024;
/// Threads per block (`CLUSTER_WARPS * 32` in the kernel).
const THREADS: u32 = 512;
/// Most rows per block (`CLUSTER_ROWS`): two per lane.
const MAX_ROWS_PER_BLOCK: usize = 64;
/// Dynamic shared memory of the kernel (`CLUSTER_SHARED_FLOATS` floats): two padded copies
/// of x (2 × 1024), the 16 warps' partial sums (16 × 64) and the shared-memory part of W
/// (16 warps × 6 quads × 2 rows × 32 lanes × 4).
const SHARED_BYTES: usize = 4 * (2 * 1024 + 16 * 64 + 16 * 6 * 2 * 32 * 4);

/// How N's rows are spread over the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Geometry {
    blocks: u32,
    rows_per_block: usize,
}

impl Geometry {
    /// The fewest blocks (a power of two, ≤ `max_blocks`) that hold N rows at ≤ 64 rows per
    /// block, when the kernel's shared memory fits in `max_shared` bytes. Rows per block are a
    /// multiple of 4, so every block's slice of x is 16-byte aligned for the stores to its
    /// peers. Fewer blocks mean fewer stores per step.
    fn choose(n: usize, max_blocks: u32, max_shared: usize) -> Option<Self> {
        if n == 0 || n > CLUSTER_MAX_N || SHARED_BYTES > max_shared {
            return None;
        }
        (0..=4)
            .map(|p| 1u32 << p)
            .filter(|&b| b <= max_blocks)
            .map(|blocks| Self {
                blocks,
                rows_per_block: n.div_ceil(blocks as usize).next_multiple_of(4),
            })
            .find(|g| g.rows_per_block <= MAX_ROWS_PER_BLOCK)
    }
}

/// The shape of a cluster plan, as the benchmark prints it.
#[cfg(feature = "internals")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterShape {
    /// Blocks (SMs) in the cluster.
    pub blocks: u32,
    /// Registers per thread.
    pub registers: i32,
    /// Local memory per thread (register spills); 0 means W's register rows stayed in registers.
    pub spilled_bytes: i32,
}

/// The plan of one reservoir: the kernel, a dense copy of W and the cluster geometry.
#[derive(Debug)]
pub(crate) struct ClusterPlan {
    function: CudaFunction,
    weights: CudaSlice<f32>,
    geometry: Geometry,
}

/// The per-launch arguments of a cluster run.
pub(crate) struct ClusterRun<'a> {
    pub drive: &'a CudaSlice<f32>,
    pub x0: &'a CudaSlice<f32>,
    pub steps: usize,
    pub update: Update,
}

impl ClusterPlan {
    /// A plan for W, or `None` when the device has no thread-block clusters (compute
    /// capability below 9.0), N exceeds [`CLUSTER_MAX_N`], or the cluster cannot be resident.
    pub(crate) fn for_matrix(device: &GpuDevice, w: &CsrMatrix<f64>) -> Result<Option<Self>> {
        let n = w.nrows();
        if n > CLUSTER_MAX_N || !clusters_available(device)? {
            return Ok(None);
        }
        let function = device.kernels::<ClusterKernels>()?.run.clone();
        let max_blocks = allow_large_clusters(&function);
        let max_shared = device.allow_shared_memory(&function)?;
        let Some(geometry) = Geometry::choose(n, max_blocks, max_shared) else {
            return Ok(None);
        };
        let plan = Self {
            weights: device.upload_f32(&w.to_dense(), "uploading the dense W")?,
            function,
            geometry,
        };
        if plan.resident_clusters(device)? == 0 {
            return Ok(None);
        }
        Ok(Some(plan))
    }

    /// What the benchmark reports about the plan: blocks in the cluster, registers per thread
    /// and local (spilled) bytes per thread of the compiled kernel.
    #[cfg(feature = "internals")]
    pub(crate) fn describe(&self) -> Result<ClusterShape> {
        use crate::error::DriverContext;
        Ok(ClusterShape {
            blocks: self.geometry.blocks,
            registers: self
                .function
                .num_regs()
                .context("reading the register count")?,
            spilled_bytes: self
                .function
                .local_size_bytes()
                .context("reading the local memory size")?,
        })
    }

    fn launch_shape(&self) -> ClusterLaunch {
        ClusterLaunch {
            blocks: self.geometry.blocks,
            threads: THREADS,
            shared_bytes: SHARED_BYTES as u32,
        }
    }

    /// How many such clusters the device can hold at once (0: the launch would fail).
    fn resident_clusters(&self, device: &GpuDevice) -> Result<i32> {
        self.launch_shape().resident(device, &self.function)
    }

    /// Runs `run.steps` steps into `states` (steps × n) in one cluster launch.
    pub(crate) fn launch(
        &self,
        device: &GpuDevice,
        run: ClusterRun<'_>,
        states: &mut CudaSlice<f32>,
    ) -> Result<()> {
        const WHAT: &str = "cluster run";
        let n = self.weights.len().isqrt();
        let values = run.steps.saturating_mul(n);
        fits(run.x0.len(), n, WHAT)?;
        fits(run.drive.len(), values, WHAT)?;
        fits(states.len(), values, WHAT)?;
        let args = KernelArgs::new()
            .buffer(&self.weights, device)
            .buffer(run.drive, device)
            .buffer(run.x0, device)
            .buffer(&*states, device)
            .int(dim(n, WHAT)?)
            .int(dim(run.steps, WHAT)?)
            .float(run.update.leak)
            .int(run.update.activation)
            .int(self.geometry.rows_per_block as i32);
        // SAFETY: the arguments follow esn_cluster's signature (w, drive, x0, states, n,
        // steps, leak, activation, rows_per_block); W is n×n, drive and states hold ≥
        // steps·n floats and x0 n (checked above); n ≤ CLUSTER_MAX_N, blocks·rows_per_block ≥ n
        // and rows_per_block ≤ 64, a multiple of 4 (Geometry::choose); the dynamic shared memory
        // is CLUSTER_SHARED_FLOATS floats; the cluster is the whole grid.
        unsafe { self.launch_shape().launch(device, &self.function, &args) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_uses_the_fewest_blocks_that_hold_every_row() {
        let big = 227 * 1024;
        let shape = |n, max_blocks| {
            Geometry::choose(n, max_blocks, big).map(|g| (g.blocks, g.rows_per_block))
        };
        assert_eq!(shape(1000, 16), Some((16, 64)));
        assert_eq!(shape(1024, 16), Some((16, 64)));
        // 15 blocks of 60 rows hold 900: the last block owns none and only listens.
        assert_eq!(shape(900, 16), Some((16, 60)));
        assert_eq!(shape(100, 16), Some((2, 52)));
        assert_eq!(shape(64, 16), Some((1, 64)));
        assert_eq!(shape(65, 16), Some((2, 36)));
        assert_eq!(shape(1, 16), Some((1, 4)));
        // Portable clusters (8 blocks) hold 512 rows.
        assert_eq!(shape(512, 8), Some((8, 64)));
        assert_eq!(shape(513, 8), None);
        assert_eq!(shape(1025, 16), None);
        assert_eq!(shape(0, 16), None);
        // Without room for the kernel's shared memory there is no plan.
        assert_eq!(Geometry::choose(100, 16, 64 * 1024), None);
    }

    /// The value of `#define NAME value` in the kernel source.
    fn kernel_define(name: &str) -> usize {
        let prefix = format!("#define {name} ");
        let line = esn_cluster::MODULE
            .source
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("{name} is not defined in esn_cluster.cu"));
        let value = line.split_whitespace().next().unwrap_or_default();
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} = {value:?}"))
    }

    #[test]
    fn launch_constants_match_the_kernel() {
        let warps = kernel_define("CLUSTER_WARPS");
        let rows = kernel_define("CLUSTER_ROWS");
        let x = kernel_define("CLUSTER_X");
        let quads = (kernel_define("CLUSTER_SLICE") - kernel_define("CLUSTER_REG_COLS")) / 4;
        assert_eq!(THREADS as usize, 32 * warps);
        assert_eq!(MAX_ROWS_PER_BLOCK, rows);
        assert_eq!(CLUSTER_MAX_N, x);
        assert_eq!(warps * kernel_define("CLUSTER_SLICE"), x);
        assert_eq!(
            SHARED_BYTES,
            4 * (2 * x + warps * rows + warps * quads * 2 * 32 * 4)
        );
    }
}
