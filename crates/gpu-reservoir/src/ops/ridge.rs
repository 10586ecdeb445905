//! Launches of `ridge.cu`: f32 states widened to f64 before the device's ridge sums, and the
//! kernels of the device's ridge solve ([`crate::ridge_solve`]).

use cudarc::driver::{CudaFunction, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use reservoir_kernels::ridge;

use reservoir_core::ReservoirError;

use crate::driver::launch::{dim, fits, BLOCK_THREADS};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, Result};

/// Most blocks of one grid-stride launch (its loop covers the rest).
pub(crate) const MAX_BLOCKS: usize = 1 << 16;

/// The kernels of `ridge.cu`.
#[derive(Debug)]
pub(crate) struct RidgeKernels {
    widen: CudaFunction,
    pub(crate) build_systems: CudaFunction,
    pub(crate) factor_diagonal: CudaFunction,
    pub(crate) readout_products: CudaFunction,
}

impl KernelSet for RidgeKernels {
    const MODULE: reservoir_kernels::Module = ridge::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            widen: module.function(ridge::WIDEN)?,
            build_systems: module.function(ridge::BUILD_SYSTEMS)?,
            factor_diagonal: module.function(ridge::FACTOR_DIAGONAL)?,
            readout_products: module.function(ridge::READOUT_PRODUCTS)?,
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

/// The shape of a batch of ridge systems (see `ridge.cu`): `lanes` lanes of F features and M
/// outputs, each solved for `ridges` ridge values, padded to `padded` rows (a whole number of
/// [`ridge::SOLVE_BLOCK`]s), the lanes' sums `width` columns apart in their XᵀY buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Systems {
    pub(crate) lanes: usize,
    pub(crate) ridges: usize,
    pub(crate) features: usize,
    pub(crate) outputs: usize,
    pub(crate) padded: usize,
    pub(crate) width: usize,
}

impl Systems {
    pub(crate) fn count(&self) -> usize {
        self.lanes * self.ridges
    }

    /// Diagonal blocks per system.
    pub(crate) fn blocks(&self) -> usize {
        self.padded / ridge::SOLVE_BLOCK
    }

    /// An error unless an XᵀX view of `gram` values holds the batch's lanes.
    fn check_gram(&self, gram: usize, what: &'static str) -> Result<()> {
        fits(gram, self.lanes * self.features * self.features, what)
    }

    /// An error unless an Xᵀ[Y, 1] view of `cross` values holds the batch's lanes.
    fn check_cross(&self, cross: usize, what: &'static str) -> Result<()> {
        let (f, m) = (self.features, self.outputs);
        fits(cross, (self.lanes - 1) * f + m * self.width + f, what)
    }
}

/// Builds the augmented normal equations of every (lane, ridge) of `systems` into `a` and
/// their right-hand sides into `b` (`ridge_build_systems`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_systems(
    device: &GpuDevice,
    kernels: &RidgeKernels,
    systems: &Systems,
    (gram, cross): (&CudaView<'_, f64>, &CudaView<'_, f64>),
    (ridges, target_sums, rows): (&CudaView<'_, f64>, &CudaView<'_, f64>, f64),
    a: &mut CudaViewMut<'_, f64>,
    b: &mut CudaViewMut<'_, f64>,
) -> Result<()> {
    const WHAT: &str = "building the ridge systems";
    let Systems {
        ridges: r,
        features: f,
        outputs: m,
        padded: p,
        ..
    } = *systems;
    let count = systems.count();
    if count == 0 {
        return Ok(());
    }
    systems.check_gram(gram.len(), WHAT)?;
    systems.check_cross(cross.len(), WHAT)?;
    fits(ridges.len(), r, WHAT)?;
    fits(target_sums.len(), m, WHAT)?;
    fits(a.len(), count * p * p, WHAT)?;
    fits(b.len(), count * p * m, WHAT)?;
    let (width, count_i) = (systems.width as i64, count as i64);
    let (r_i, f_i, m_i, p_i) = (dim(r, WHAT)?, dim(f, WHAT)?, dim(m, WHAT)?, dim(p, WHAT)?);
    let mut launch = device.stream().launch_builder(&kernels.build_systems);
    launch
        .arg(gram)
        .arg(cross)
        .arg(&width)
        .arg(ridges)
        .arg(&r_i)
        .arg(target_sums)
        .arg(&rows)
        .arg(&f_i)
        .arg(&m_i)
        .arg(&p_i)
        .arg(&count_i)
        .arg(a)
        .arg(b);
    let config = LaunchConfig {
        grid_dim: (
            (count * p * p)
                .div_ceil(BLOCK_THREADS as usize)
                .clamp(1, MAX_BLOCKS) as u32,
            1,
            1,
        ),
        block_dim: (BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the views hold the batch's lanes' sums, the ridges, the target sums, and every
    // system's matrix and right-hand side (checked above); the kernel's grid-stride loops
    // stay within count·p² and count·p·m values.
    unsafe { launch.launch(config) }.context("launching ridge_build_systems")?;
    Ok(())
}

/// Factors diagonal block `block` of every system of `a` into `l` and its inverse into
/// `inverse`, marking failed systems in `status` (`ridge_factor_diagonal`).
pub(crate) fn factor_diagonal(
    device: &GpuDevice,
    kernels: &RidgeKernels,
    systems: &Systems,
    block: usize,
    (a, l, inverse): (
        &CudaView<'_, f64>,
        &mut CudaViewMut<'_, f64>,
        &mut CudaViewMut<'_, f64>,
    ),
    status: &mut CudaViewMut<'_, i32>,
) -> Result<()> {
    const WHAT: &str = "factoring the ridge systems' diagonal blocks";
    let (count, p) = (systems.count(), systems.padded);
    if count == 0 {
        return Ok(());
    }
    if block >= systems.blocks() {
        return Err(ReservoirError::invalid(WHAT, "block beyond the systems").into());
    }
    fits(a.len(), count * p * p, WHAT)?;
    fits(l.len(), count * p * p, WHAT)?;
    fits(inverse.len(), count * p * ridge::SOLVE_BLOCK, WHAT)?;
    fits(status.len(), count, WHAT)?;
    let (p_i, block_i) = (dim(p, WHAT)?, dim(block, WHAT)?);
    let mut launch = device.stream().launch_builder(&kernels.factor_diagonal);
    launch
        .arg(a)
        .arg(l)
        .arg(inverse)
        .arg(status)
        .arg(&p_i)
        .arg(&block_i);
    let config = LaunchConfig {
        grid_dim: (dim(count, WHAT)? as u32, 1, 1),
        block_dim: (BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: a and l hold count p × p systems, inverse count·(p / SOLVE_BLOCK) blocks of
    // SOLVE_BLOCK² values and status count values (checked above); block b of system s reads
    // and writes within system s only.
    unsafe { launch.launch(config) }.context("launching ridge_factor_diagonal")?;
    Ok(())
}

/// The solved readouts' products with the training and validation sums, 7 values per
/// (system, output) into `out` (`ridge_readout_products`). `x` holds the solutions (p × M per
/// system), `gram_w` G·w of the training and of the validation sums (F × M per system).
pub(crate) fn readout_products(
    device: &GpuDevice,
    kernels: &RidgeKernels,
    systems: &Systems,
    x: &CudaView<'_, f64>,
    gram_w: [&CudaView<'_, f64>; 2],
    cross: [&CudaView<'_, f64>; 2],
    out: &mut CudaViewMut<'_, f64>,
) -> Result<()> {
    const WHAT: &str = "the ridge readouts' products";
    let (count, f, m, p) = (
        systems.count(),
        systems.features,
        systems.outputs,
        systems.padded,
    );
    if count == 0 || m == 0 {
        return Ok(());
    }
    fits(x.len(), count * p * m, WHAT)?;
    for (gw, sums) in gram_w.iter().zip(&cross) {
        fits(gw.len(), count * f * m, WHAT)?;
        systems.check_cross(sums.len(), WHAT)?;
    }
    fits(out.len(), count * m * 7, WHAT)?;
    let width = systems.width as i64;
    let (r_i, f_i, m_i, p_i) = (
        dim(systems.ridges, WHAT)?,
        dim(f, WHAT)?,
        dim(m, WHAT)?,
        dim(p, WHAT)?,
    );
    let mut launch = device.stream().launch_builder(&kernels.readout_products);
    launch
        .arg(x)
        .arg(gram_w[0])
        .arg(gram_w[1])
        .arg(cross[0])
        .arg(cross[1])
        .arg(&width)
        .arg(&r_i)
        .arg(&f_i)
        .arg(&m_i)
        .arg(&p_i)
        .arg(out);
    let config = LaunchConfig {
        grid_dim: (dim(count, WHAT)? as u32, m_i as u32, 1),
        block_dim: (ridge::PRODUCT_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: x, the products G·w, the lanes' sums and out hold every system's values
    // (checked above); the kernel's block (s, k) reads system s's column k and writes its 7
    // values; the block has the PRODUCT_THREADS threads its reduction assumes.
    unsafe { launch.launch(config) }.context("launching ridge_readout_products")?;
    Ok(())
}
