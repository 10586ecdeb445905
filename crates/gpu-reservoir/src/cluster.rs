//! Launch plan for `esn_cluster` (`kernels/persistent.cu`): a whole single-sequence run in one
//! thread-block cluster, with W held on chip across the cluster's blocks (sm_90 and later).

use std::ffi::c_void;

use cudarc::driver::sys::{
    self, CUdevice_attribute, CUfunction_attribute, CUlaunchAttribute, CUlaunchAttributeID,
    CUlaunchAttributeValue, CUlaunchConfig,
};
use cudarc::driver::{result, CudaFunction, CudaSlice, DevicePtr, DevicePtrMut};
use reservoir_core::{CsrMatrix, ReservoirError};

use crate::device::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::kernels;

/// Largest N the cluster kernel holds on chip: each of a block's 32 warps keeps a row of up to
/// 1024 columns in registers (32 per lane) and one more in shared memory, and a cluster has at
/// most 16 blocks.
pub const CLUSTER_MAX_N: usize = 1024;
const THREADS: u32 = 1024;
const WARPS: usize = 32;
/// Floats of one padded copy of x (`CLUSTER_X` in the kernel).
const PADDED_X: usize = 1024;

/// How N's rows are spread over the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Geometry {
    blocks: u32,
    rows_per_block: usize,
    shared_rows: bool,
}

impl Geometry {
    /// The fewest blocks (a power of two, ≤ `max_blocks`) that hold N rows: 32 rows per block
    /// in registers, 64 when a second row per warp fits in `max_shared` bytes of shared memory.
    /// Rows per block are a multiple of 4, so every block's slice of x is 16-byte aligned for
    /// the bulk copies. Fewer blocks mean fewer copies per step.
    fn choose(n: usize, max_blocks: u32, max_shared: usize) -> Option<Self> {
        if n == 0 || n > CLUSTER_MAX_N {
            return None;
        }
        let shared_row_fits = Self::shared_bytes(true) <= max_shared;
        (0..=4)
            .map(|p| 1u32 << p)
            .filter(|&b| b <= max_blocks)
            .find_map(|blocks| {
                let rows_per_block = n.div_ceil(blocks as usize).next_multiple_of(4);
                if rows_per_block <= WARPS {
                    Some(Self {
                        blocks,
                        rows_per_block,
                        shared_rows: false,
                    })
                } else if rows_per_block <= 2 * WARPS && shared_row_fits {
                    Some(Self {
                        blocks,
                        rows_per_block,
                        shared_rows: true,
                    })
                } else {
                    None
                }
            })
    }

    fn shared_bytes(shared_rows: bool) -> usize {
        4 * (2 * PADDED_X + if shared_rows { WARPS * PADDED_X } else { 0 })
    }
}

/// The shape of a cluster plan, as the benchmark prints it.
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
    shared_bytes: u32,
}

/// The per-launch arguments of a cluster run.
pub(crate) struct ClusterRun<'a> {
    pub drive: &'a CudaSlice<f32>,
    pub x0: &'a CudaSlice<f32>,
    pub n: usize,
    pub steps: usize,
    pub leak: f32,
    pub activation: i32,
}

impl ClusterPlan {
    /// A plan for W, or `None` when the device has no thread-block clusters (compute
    /// capability below 9.0), N exceeds [`CLUSTER_MAX_N`], or the cluster cannot be resident.
    pub(crate) fn for_matrix(device: &GpuDevice, w: &CsrMatrix<f64>) -> Result<Option<Self>> {
        let n = w.nrows();
        let ctx = device.context();
        let cluster_launch = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)
            .context("reading the cluster-launch attribute")?;
        if device.info().compute_capability.0 < 9 || cluster_launch == 0 || n > CLUSTER_MAX_N {
            return Ok(None);
        }
        let function = device.nvrtc_function(&kernels::PERSISTENT, kernels::persistent::CLUSTER)?;
        // SAFETY: sets a launch attribute of a function loaded on this context; 16-block
        // clusters are "non-portable" and must be allowed explicitly.
        let max_blocks = match unsafe {
            result::function::set_function_attribute(
                function.cu_function(),
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1,
            )
        } {
            Ok(()) => 16,
            Err(_) => 8,
        };
        let max_shared = device.allow_shared_memory(&function)?;
        let Some(geometry) = Geometry::choose(n, max_blocks, max_shared) else {
            return Ok(None);
        };
        let shared_bytes = Geometry::shared_bytes(geometry.shared_rows) as u32;
        let plan = Self {
            weights: device.upload_f32(&w.to_dense(), "uploading the dense W")?,
            function,
            geometry,
            shared_bytes,
        };
        if plan.resident_clusters(device)? == 0 {
            return Ok(None);
        }
        Ok(Some(plan))
    }

    /// What the benchmark reports about the plan: blocks in the cluster, registers per thread
    /// and local (spilled) bytes per thread of the compiled kernel.
    pub(crate) fn describe(&self) -> Result<ClusterShape> {
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

    fn config(&self, device: &GpuDevice, attribute: &mut CUlaunchAttribute) -> CUlaunchConfig {
        CUlaunchConfig {
            gridDimX: self.geometry.blocks,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: THREADS,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: self.shared_bytes,
            hStream: device.stream().cu_stream(),
            attrs: attribute,
            numAttrs: 1,
        }
    }

    fn cluster_attribute(&self) -> CUlaunchAttribute {
        // SAFETY: an all-zero launch attribute is a valid value of this plain C union.
        let mut value: CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.clusterDim.x = self.geometry.blocks;
        value.clusterDim.y = 1;
        value.clusterDim.z = 1;
        CUlaunchAttribute {
            id: CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            pad: [0; 4],
            value,
        }
    }

    /// How many such clusters the device can hold at once (0: the launch would fail).
    fn resident_clusters(&self, device: &GpuDevice) -> Result<i32> {
        let mut attribute = self.cluster_attribute();
        let config = self.config(device, &mut attribute);
        let mut clusters = 0;
        // SAFETY: config points at one live attribute; the function belongs to this context.
        unsafe {
            sys::cuOccupancyMaxActiveClusters(&mut clusters, self.function.cu_function(), &config)
        }
        .result()
        .context("reading the cluster occupancy")?;
        Ok(clusters)
    }

    /// Runs `run.steps` steps into `states` (steps × n) in one cluster launch.
    pub(crate) fn launch(
        &self,
        device: &GpuDevice,
        run: ClusterRun<'_>,
        states: &mut CudaSlice<f32>,
    ) -> Result<()> {
        let n = self.weights.len().isqrt();
        if run.n != n
            || run.x0.len() < n
            || run.drive.len() < run.steps * n
            || states.len() < run.steps * n
        {
            return Err(ReservoirError::shape(
                "cluster run",
                format!("N = {n}, x0 of N, drive and states of steps × N"),
                format!(
                    "N = {}, x0 {}, drive {}, states {} for {} steps",
                    run.n,
                    run.x0.len(),
                    run.drive.len(),
                    states.len(),
                    run.steps
                ),
            )
            .into());
        }
        let stream = device.stream();
        let (mut w, _w_sync) = self.weights.device_ptr(stream);
        let (mut drive, _drive_sync) = run.drive.device_ptr(stream);
        let (mut x0, _x0_sync) = run.x0.device_ptr(stream);
        let (mut out, _out_sync) = states.device_ptr_mut(stream);
        let mut n = run.n as i32;
        let mut steps = run.steps as i32;
        let mut leak = run.leak;
        let mut activation = run.activation;
        let mut rows_per_block = self.geometry.rows_per_block as i32;
        let mut shared_rows = i32::from(self.geometry.shared_rows);
        let mut params: [*mut c_void; 10] = [
            (&mut w as *mut u64).cast(),
            (&mut drive as *mut u64).cast(),
            (&mut x0 as *mut u64).cast(),
            (&mut out as *mut u64).cast(),
            (&mut n as *mut i32).cast(),
            (&mut steps as *mut i32).cast(),
            (&mut leak as *mut f32).cast(),
            (&mut activation as *mut i32).cast(),
            (&mut rows_per_block as *mut i32).cast(),
            (&mut shared_rows as *mut i32).cast(),
        ];
        let mut attribute = self.cluster_attribute();
        let config = self.config(device, &mut attribute);
        // SAFETY: the parameters match esn_cluster's signature in order and type and outlive
        // the call; W is n×n, drive and states hold ≥ steps·n floats (checked above), x0 n;
        // n ≤ CLUSTER_MAX_N and blocks·rows_per_block ≥ n (Geometry::choose); the dynamic
        // shared memory is the size the kernel indexes for this geometry; the cluster
        // dimension equals the grid, so the whole grid is one cluster.
        unsafe {
            sys::cuLaunchKernelEx(
                &config,
                self.function.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .context("launching esn_cluster")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_uses_the_fewest_blocks_that_hold_every_row() {
        let big = 227 * 1024;
        let g = Geometry::choose(1000, 16, big).expect("fits");
        assert_eq!((g.blocks, g.rows_per_block, g.shared_rows), (16, 64, true));
        let g = Geometry::choose(100, 16, big).expect("fits");
        assert_eq!((g.blocks, g.rows_per_block, g.shared_rows), (2, 52, true));
        let g = Geometry::choose(30, 16, big).expect("fits");
        assert_eq!((g.blocks, g.rows_per_block, g.shared_rows), (1, 32, false));
        let g = Geometry::choose(32, 16, big).expect("fits");
        assert_eq!((g.blocks, g.shared_rows), (1, false));
        // Without room for the shared row, N = 1000 needs 32 blocks: no plan.
        assert_eq!(Geometry::choose(1000, 16, 64 * 1024), None);
        // Portable clusters (8 blocks) hold 512 rows.
        assert_eq!(Geometry::choose(512, 8, big).map(|g| g.blocks), Some(8));
        assert_eq!(Geometry::choose(513, 8, big), None);
        assert_eq!(Geometry::choose(1025, 16, big), None);
    }
}
