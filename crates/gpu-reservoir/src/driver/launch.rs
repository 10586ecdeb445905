//! Launch geometry, and the thread-block cluster launch cudarc does not wrap.

use std::ffi::c_void;

use cudarc::driver::sys::{
    self, CUdevice_attribute, CUfunction_attribute, CUlaunchAttribute, CUlaunchAttributeID,
    CUlaunchAttributeValue, CUlaunchConfig,
};
use cudarc::driver::{result, CudaFunction, DevicePtr, LaunchConfig};
use reservoir_core::ReservoirError;

pub(crate) use super::args::{dim, fits};
use super::GpuDevice;
use crate::error::{DriverContext, Result};

/// Threads per block of the elementwise and warp-per-row kernels.
pub(crate) const BLOCK_THREADS: u32 = 256;

/// One thread per item (the kernel guards its index against the item count).
pub(crate) fn per_item(items: usize) -> Result<LaunchConfig> {
    per_item_in_blocks_of(items, BLOCK_THREADS)
}

/// One thread per item in blocks of `threads`, for a kernel that needs that block size.
pub(crate) fn per_item_in_blocks_of(items: usize, threads: u32) -> Result<LaunchConfig> {
    let blocks = u32::try_from(items.div_ceil(threads as usize)).map_err(|_| {
        ReservoirError::invalid(
            "GPU launch",
            format!("{items} threads exceed the grid limit"),
        )
    })?;
    Ok(LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// One warp per row (the kernel guards the row against the row count).
pub(crate) fn warp_per_row(rows: usize) -> Result<LaunchConfig> {
    per_item(rows.saturating_mul(32))
}

/// The arguments of a kernel launched through [`launch_cluster`], in the order of its
/// parameters. Each is kept in an 8-byte slot whose low bytes hold the value (the driver reads
/// as many bytes as the parameter has, and the targets are little-endian); the device
/// pointers' stream guards live as long as the arguments.
pub(crate) struct KernelArgs<'a> {
    slots: Vec<u64>,
    _guards: Vec<Box<dyn Held + 'a>>,
}

/// Anything kept alive until a launch is done (a buffer's stream guard).
trait Held {}

impl<T> Held for T {}

impl<'a> KernelArgs<'a> {
    /// No arguments yet.
    pub(crate) fn new() -> Self {
        Self {
            slots: Vec::new(),
            _guards: Vec::new(),
        }
    }

    /// A device buffer's address.
    pub(crate) fn buffer<T>(
        mut self,
        buffer: &'a impl DevicePtr<T>,
        device: &'a GpuDevice,
    ) -> Self {
        let (address, guard) = buffer.device_ptr(device.stream());
        self.slots.push(address);
        self._guards.push(Box::new(guard));
        self
    }

    /// An `int`.
    pub(crate) fn int(mut self, value: i32) -> Self {
        self.slots.push(u64::from(value as u32));
        self
    }

    /// A `float`.
    pub(crate) fn float(mut self, value: f32) -> Self {
        self.slots.push(u64::from(value.to_bits()));
        self
    }
}

/// Whether `device` launches thread-block clusters (compute capability 9.0 or later with the
/// cluster-launch attribute).
pub(crate) fn clusters_available(device: &GpuDevice) -> Result<bool> {
    Ok(device.info().compute_capability.0 >= 9
        && device.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)? != 0)
}

/// Allows `function` clusters of 16 blocks ("non-portable" sizes must be allowed explicitly)
/// and returns the most blocks its clusters may have: 16, or the portable 8 where the driver
/// refuses.
pub(crate) fn allow_large_clusters(function: &CudaFunction) -> u32 {
    // SAFETY: sets a launch attribute of a function loaded on a live context.
    match unsafe {
        result::function::set_function_attribute(
            function.cu_function(),
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
            1,
        )
    } {
        Ok(()) => 16,
        Err(_) => 8,
    }
}

/// A launch of a whole grid as one thread-block cluster of `blocks` blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClusterLaunch {
    /// Blocks in the grid, all in one cluster.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared memory per block.
    pub shared_bytes: u32,
}

impl ClusterLaunch {
    fn attribute(&self) -> CUlaunchAttribute {
        // SAFETY: an all-zero launch attribute is a valid value of this plain C union.
        let mut value: CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.clusterDim.x = self.blocks;
        value.clusterDim.y = 1;
        value.clusterDim.z = 1;
        CUlaunchAttribute {
            id: CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            pad: [0; 4],
            value,
        }
    }

    fn config(&self, device: &GpuDevice, attribute: &mut CUlaunchAttribute) -> CUlaunchConfig {
        CUlaunchConfig {
            gridDimX: self.blocks,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: self.threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: self.shared_bytes,
            hStream: device.stream().cu_stream(),
            attrs: attribute,
            numAttrs: 1,
        }
    }

    /// How many such clusters of `function` the device can hold at once (0: a launch would
    /// fail).
    pub(crate) fn resident(&self, device: &GpuDevice, function: &CudaFunction) -> Result<i32> {
        let mut attribute = self.attribute();
        let config = self.config(device, &mut attribute);
        let mut clusters = 0;
        // SAFETY: config points at one live attribute; the function belongs to this context.
        unsafe {
            sys::cuOccupancyMaxActiveClusters(&mut clusters, function.cu_function(), &config)
        }
        .result()
        .context("reading the cluster occupancy")?;
        Ok(clusters)
    }

    /// Launches `function` on the device's stream.
    ///
    /// # Safety
    /// `args` must match the kernel's parameters in order and type, every buffer must hold
    /// what the kernel reads and writes, and the shared memory must be what it expects.
    pub(crate) unsafe fn launch(
        &self,
        device: &GpuDevice,
        function: &CudaFunction,
        args: &KernelArgs<'_>,
    ) -> Result<()> {
        let mut params: Vec<*mut c_void> = args
            .slots
            .iter()
            .map(|slot| slot as *const u64 as *mut c_void)
            .collect();
        let mut attribute = self.attribute();
        let config = self.config(device, &mut attribute);
        // SAFETY: the caller vouches for the arguments; params points at slots that outlive
        // the call, config at one live attribute.
        unsafe {
            sys::cuLaunchKernelEx(
                &config,
                function.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .context("launching a thread-block cluster")
    }
}
