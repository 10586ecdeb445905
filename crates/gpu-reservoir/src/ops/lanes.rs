//! Launches of `lanes.cu`: one step of a sweep's lanes after the shared product.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};
use reservoir_kernels::lanes;

use crate::driver::launch::{dim, fits, per_item};
use crate::driver::{KernelSet, LoadedModule};
use crate::error::{DriverContext, Result};

/// The kernel of `lanes.cu`.
#[derive(Debug)]
pub(crate) struct LaneKernels {
    step: CudaFunction,
}

impl KernelSet for LaneKernels {
    const MODULE: reservoir_kernels::Module = lanes::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            step: module.function(lanes::STEP)?,
        })
    }
}

/// Each lane's own parameters (B values each).
pub(crate) struct LaneParameters<'a> {
    pub radius: &'a CudaSlice<f32>,
    pub scaling: &'a CudaSlice<f32>,
    pub leak: &'a CudaSlice<f32>,
    pub activation: i32,
}

/// What one step of the lanes reads: their states X and W₁X (N × B, column-major), the step's
/// projected input W_in₁u (N), the bias (N) and the step's noise (N, optional).
pub(crate) struct LaneStepInputs<'a, 'v> {
    pub x: &'a CudaView<'v, f32>,
    pub product: &'a CudaSlice<f32>,
    pub input_t: &'a CudaView<'v, f32>,
    pub bias: &'a CudaSlice<f32>,
    pub noise_t: Option<&'a CudaView<'v, f32>>,
}

/// `x_b ← (1 − a_b)·x_b + a_b·f(ρ_b·(W₁X)_b + b + s_b·W_in₁u + noise)` for the `lanes` lanes
/// of `n` units: `next` is N × B (column-major) like `inputs.x`, not overlapping it; with
/// `next_half`, the new states in f16 too (the next f16 GEMM's operand). Launched on `stream`
/// (the device's, or a sweep's capture stream).
pub(crate) fn lane_step(
    stream: &Arc<CudaStream>,
    kernels: &LaneKernels,
    inputs: &LaneStepInputs<'_, '_>,
    lanes: &LaneParameters<'_>,
    next: &mut CudaViewMut<'_, f32>,
    next_half: Option<&mut CudaViewMut<'_, u16>>,
    (n, b): (usize, usize),
) -> Result<()> {
    const WHAT: &str = "lane step";
    let width = n.saturating_mul(b);
    let x = inputs.x;
    for len in [inputs.product.len(), x.len(), next.len()] {
        fits(len, width, WHAT)?;
    }
    for len in [inputs.input_t.len(), inputs.bias.len()] {
        fits(len, n, WHAT)?;
    }
    if let Some(noise) = inputs.noise_t {
        fits(noise.len(), n, WHAT)?;
    }
    if let Some(half) = &next_half {
        fits(half.len(), width, WHAT)?;
    }
    for len in [lanes.radius.len(), lanes.scaling.len(), lanes.leak.len()] {
        fits(len, b, WHAT)?;
    }
    let (n_i, b_i) = (dim(n, WHAT)?, dim(b, WHAT)?);
    let null: u64 = 0;
    let mut launch = stream.launch_builder(&kernels.step);
    launch
        .arg(inputs.product)
        .arg(inputs.input_t)
        .arg(inputs.bias);
    match inputs.noise_t {
        Some(noise_t) => launch.arg(noise_t),
        None => launch.arg(&null),
    };
    launch
        .arg(lanes.radius)
        .arg(lanes.scaling)
        .arg(lanes.leak)
        .arg(x)
        .arg(next);
    match next_half {
        Some(half) => launch.arg(half),
        None => launch.arg(&null),
    };
    launch.arg(&n_i).arg(&b_i).arg(&lanes.activation);
    // SAFETY: product, x, next and next_half (when given, else null) hold n·b values (next
    // does not overlap x); input_t, bias and noise_t (when given, else null) n; radius, scaling and leak b (checked above). The
    // kernel guards idx < n·b.
    unsafe { launch.launch(per_item(width)?) }.context("launching sweep_lane_step")?;
    Ok(())
}
