//! Launches of `ridge.cu`: f32 states widened to f64 before the device's ridge sums.

use cudarc::driver::{CudaFunction, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use reservoir_kernels::ridge;

use crate::driver::launch::{fits, BLOCK_THREADS};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, Result};

/// Most blocks of one widening launch (its grid-stride loop covers the rest).
const MAX_BLOCKS: usize = 1 << 16;

/// The kernel of `ridge.cu`.
#[derive(Debug)]
pub(crate) struct RidgeKernels {
    widen: CudaFunction,
}

impl KernelSet for RidgeKernels {
    const MODULE: reservoir_kernels::Module = ridge::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            widen: module.function(ridge::WIDEN)?,
        })
    }
}

/// `wide[i] = f64(narrow[i])` for the first `count` values (exact).
pub(crate) fn widen(
    device: &GpuDevice,
    kernels: &RidgeKernels,
    narrow: &CudaView<'_, f32>,
    wide: &mut CudaViewMut<'_, f64>,
    count: usize,
) -> Result<()> {
    const WHAT: &str = "widening the states";
    fits(narrow.len(), count, WHAT)?;
    fits(wide.len(), count, WHAT)?;
    let count_i = count as i64;
    let mut launch = device.stream().launch_builder(&kernels.widen);
    launch.arg(narrow).arg(wide).arg(&count_i);
    let config = LaunchConfig {
        grid_dim: (
            count.div_ceil(BLOCK_THREADS as usize).clamp(1, MAX_BLOCKS) as u32,
            1,
            1,
        ),
        block_dim: (BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: narrow holds count f32 values and wide count f64 (checked above); the kernel's
    // grid-stride loop writes wide[i] for i < count only.
    unsafe { launch.launch(config) }.context("launching widen_f32_to_f64")?;
    Ok(())
}
