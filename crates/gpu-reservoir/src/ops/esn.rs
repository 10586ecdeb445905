//! Launches of `esn.cu`: the input drive, a step as two launches or one, the elementwise
//! update after a cuBLAS product, and the sums of sequence features over a batch's chunk. Each checks the lengths of its buffers first, so a wrong
//! length is an error rather than an out-of-bounds access on the device.

use cudarc::driver::{CudaFunction, CudaStream, CudaView, CudaViewMut, PushKernelArg};
use reservoir_core::Activation;
use reservoir_kernels::esn;

use crate::driver::csr::DeviceCsr;
use crate::driver::launch::{dim, fits, per_item, warp_per_row};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, Result};

/// The kernels of `esn.cu`.
#[derive(Debug)]
pub(crate) struct EsnKernels {
    input_drive: CudaFunction,
    reservoir_product: CudaFunction,
    leaky_integration: CudaFunction,
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    step_fused: CudaFunction,
    elementwise: CudaFunction,
    to_f16: CudaFunction,
    features_add: CudaFunction,
}

impl KernelSet for EsnKernels {
    const MODULE: reservoir_kernels::Module = esn::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            input_drive: module.function(esn::INPUT_DRIVE)?,
            reservoir_product: module.function(esn::RESERVOIR_PRODUCT)?,
            leaky_integration: module.function(esn::LEAKY_INTEGRATION)?,
            step_fused: module.function(esn::STEP_FUSED)?,
            elementwise: module.function(esn::ELEMENTWISE)?,
            to_f16: module.function(esn::TO_F16)?,
            features_add: module.function(esn::FEATURES_ADD)?,
        })
    }
}

/// The kernels' code of an activation.
pub(crate) fn activation_code(activation: Activation) -> i32 {
    match activation {
        Activation::Tanh => reservoir_kernels::activation::TANH,
        Activation::Identity => reservoir_kernels::activation::IDENTITY,
    }
}

/// The arguments every update kernel shares: leak rate and activation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Update {
    pub leak: f32,
    pub activation: i32,
}

/// `drive[t] = b + W_in·[u[t], beside[t]] (+ noise[t])` for `steps` steps: `u` is steps × K,
/// `beside` (when given, with its width K_b) steps × K_b, `w_in` N × (K + K_b), `bias` N,
/// `noise` and `drive` steps × N, all row-major. `beside` lets a deep layer take the states
/// below it and the stack's input from where they already are on the device.
#[allow(clippy::too_many_arguments)]
pub(crate) fn input_drive(
    device: &GpuDevice,
    kernels: &EsnKernels,
    u: &CudaView<'_, f32>,
    beside: Option<(&CudaView<'_, f32>, usize)>,
    w_in: &CudaView<'_, f32>,
    bias: &CudaView<'_, f32>,
    noise: Option<&CudaView<'_, f32>>,
    drive: &mut CudaViewMut<'_, f32>,
    (steps, n, k): (usize, usize, usize),
) -> Result<()> {
    const WHAT: &str = "input drive";
    let values = steps.saturating_mul(n);
    let k_beside = beside.map_or(0, |(_, width)| width);
    fits(u.len(), steps.saturating_mul(k), WHAT)?;
    if let Some((beside, width)) = beside {
        fits(beside.len(), steps.saturating_mul(width), WHAT)?;
    }
    fits(
        w_in.len(),
        n.saturating_mul(k.saturating_add(k_beside)),
        WHAT,
    )?;
    fits(bias.len(), n, WHAT)?;
    fits(drive.len(), values, WHAT)?;
    if let Some(noise) = noise {
        fits(noise.len(), values, WHAT)?;
    }
    let (steps_i, n_i, k_i) = (dim(steps, WHAT)?, dim(n, WHAT)?, dim(k, WHAT)?);
    let k_beside_i = dim(k_beside, WHAT)?;
    let null: u64 = 0;
    let mut launch = device.stream().launch_builder(&kernels.input_drive);
    launch.arg(u);
    match beside {
        Some((beside, _)) => launch.arg(beside),
        None => launch.arg(&null),
    };
    launch.arg(w_in).arg(bias);
    match noise {
        Some(noise) => launch.arg(noise),
        None => launch.arg(&null),
    };
    launch
        .arg(drive)
        .arg(&steps_i)
        .arg(&n_i)
        .arg(&k_i)
        .arg(&k_beside_i);
    // SAFETY: u holds steps·k values, beside (when given, else null with k_beside 0)
    // steps·k_beside, w_in n·(k + k_beside), bias n, noise (when given, else null) and drive
    // steps·n (checked above); the kernel guards idx < steps·n.
    unsafe { launch.launch(per_item(values)?) }.context("launching matvec_input_kernel")?;
    Ok(())
}

/// One step as two launches: `pre = W·x + drive_t` (a warp per row), then
/// `next = (1 − a)·x + a·f(pre)`. `x`, `drive_t`, `pre` and `next` hold N values; `next`
/// does not overlap `x`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn step_two_launches(
    device: &GpuDevice,
    kernels: &EsnKernels,
    w: &DeviceCsr<f32>,
    x: &CudaView<'_, f32>,
    drive_t: &CudaView<'_, f32>,
    pre: &mut CudaViewMut<'_, f32>,
    next: &mut CudaViewMut<'_, f32>,
    update: Update,
) -> Result<()> {
    const WHAT: &str = "echo-state step";
    let n = w.rows();
    for len in [x.len(), drive_t.len(), pre.len(), next.len()] {
        fits(len, n, WHAT)?;
    }
    let n_i = dim(n, WHAT)?;
    let stream = device.stream();
    let mut launch = stream.launch_builder(&kernels.reservoir_product);
    launch
        .arg(&w.row_ptr)
        .arg(&w.col_idx)
        .arg(&w.values)
        .arg(x)
        .arg(drive_t)
        .arg(&mut *pre)
        .arg(&n_i);
    // SAFETY: W is an n × n CSR (row_ptr n + 1 entries ending at len(col_idx) = len(values),
    // every column < n = len(x)); drive_t and pre hold n values; a warp per row, guarded.
    unsafe { launch.launch(warp_per_row(n)?) }.context("launching matvec_reservoir_kernel")?;
    let pre = pre.as_view();
    let mut launch = stream.launch_builder(&kernels.leaky_integration);
    launch
        .arg(x)
        .arg(&pre)
        .arg(next)
        .arg(&update.leak)
        .arg(&update.activation)
        .arg(&n_i);
    // SAFETY: x, pre and next hold n values; next does not overlap x; guarded i < n.
    unsafe { launch.launch(per_item(n)?) }.context("launching leaky_integration_kernel")?;
    Ok(())
}

/// One step in one launch (a warp per row): `next = (1 − a)·x + a·f(W·x + drive_t)`; the
/// per-step baseline of the benchmarks.
#[cfg(feature = "internals")]
pub(crate) fn step_fused(
    device: &GpuDevice,
    kernels: &EsnKernels,
    w: &DeviceCsr<f32>,
    x: &CudaView<'_, f32>,
    drive_t: &CudaView<'_, f32>,
    next: &mut CudaViewMut<'_, f32>,
    update: Update,
) -> Result<()> {
    const WHAT: &str = "fused echo-state step";
    let n = w.rows();
    for len in [x.len(), drive_t.len(), next.len()] {
        fits(len, n, WHAT)?;
    }
    let n_i = dim(n, WHAT)?;
    let mut launch = device.stream().launch_builder(&kernels.step_fused);
    launch
        .arg(&w.row_ptr)
        .arg(&w.col_idx)
        .arg(&w.values)
        .arg(drive_t)
        .arg(x)
        .arg(next)
        .arg(&n_i)
        .arg(&update.leak)
        .arg(&update.activation);
    // SAFETY: W is an n × n CSR with columns < n; drive_t, x and next hold n values and next
    // does not overlap x; a warp per row, guarded.
    unsafe { launch.launch(warp_per_row(n)?) }.context("launching esn_step_fused")?;
    Ok(())
}

/// `next = (1 − a)·x + a·f(pre + drive_t)` over `len` values after a cuBLAS product wrote
/// `pre`; with `next_half`, `next` is also written there in f16 (the next step's operand of
/// an f16 product).
#[allow(clippy::too_many_arguments)]
pub(crate) fn elementwise(
    device: &GpuDevice,
    kernels: &EsnKernels,
    pre: &CudaView<'_, f32>,
    drive_t: &CudaView<'_, f32>,
    x: &CudaView<'_, f32>,
    next: &mut CudaViewMut<'_, f32>,
    next_half: Option<&mut CudaViewMut<'_, u16>>,
    len: usize,
    update: Update,
) -> Result<()> {
    const WHAT: &str = "elementwise step";
    for buffer in [pre.len(), drive_t.len(), x.len(), next.len()] {
        fits(buffer, len, WHAT)?;
    }
    if let Some(half) = &next_half {
        fits(half.len(), len, WHAT)?;
    }
    let len_i = dim(len, WHAT)?;
    let null: u64 = 0;
    let mut launch = device.stream().launch_builder(&kernels.elementwise);
    launch.arg(pre).arg(drive_t).arg(x).arg(next);
    match next_half {
        Some(half) => launch.arg(half),
        None => launch.arg(&null),
    };
    launch.arg(&len_i).arg(&update.leak).arg(&update.activation);
    // SAFETY: pre, drive_t, x and next hold len values, and so does the f16 copy when given
    // (else null); next overlaps neither x nor pre; guarded i < len.
    unsafe { launch.launch(per_item(len)?) }.context("launching esn_elementwise")?;
    Ok(())
}

/// `half = f16(x)` over `len` values, rounded to nearest even, on `stream`.
pub(crate) fn to_f16(
    stream: &CudaStream,
    kernels: &EsnKernels,
    x: &CudaView<'_, f32>,
    half: &mut CudaViewMut<'_, u16>,
    len: usize,
) -> Result<()> {
    const WHAT: &str = "f16 conversion";
    fits(x.len(), len, WHAT)?;
    fits(half.len(), len, WHAT)?;
    let len_i = dim(len, WHAT)?;
    let mut launch = stream.launch_builder(&kernels.to_f16);
    launch.arg(x).arg(half).arg(&len_i);
    // SAFETY: x and half hold len values; guarded i < len.
    unsafe { launch.launch(per_item(len)?) }.context("launching f32_to_f16")?;
    Ok(())
}

/// The shape of one [`add_features`] launch: the time chunk `first..first + steps` of a batch
/// of `batch` sequences of `n` units, with `summaries` summaries each.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FeatureChunk {
    pub first: usize,
    pub steps: usize,
    pub batch: usize,
    pub summaries: usize,
    pub n: usize,
}

/// `sums[(j·S + s)·N + i] += Σ_t states[((t − first)·B + j)·N + i]` over the rows t of the
/// pair `rows[2(j·S + s)..][..2]` (`[start, end)`) inside the chunk, in increasing t: `states`
/// holds steps × B × N values, `rows` B·S pairs, `sums` B·S·N.
pub(crate) fn add_features(
    device: &GpuDevice,
    kernels: &EsnKernels,
    states: &CudaView<'_, f32>,
    rows: &CudaView<'_, i32>,
    sums: &mut CudaViewMut<'_, f32>,
    chunk: FeatureChunk,
) -> Result<()> {
    const WHAT: &str = "sequence features";
    let FeatureChunk {
        first,
        steps,
        batch,
        summaries,
        n,
    } = chunk;
    let pairs = batch.saturating_mul(summaries);
    let values = pairs.saturating_mul(n);
    if values == 0 || steps == 0 {
        return Ok(());
    }
    fits(
        states.len(),
        steps.saturating_mul(batch).saturating_mul(n),
        WHAT,
    )?;
    fits(rows.len(), pairs.saturating_mul(2), WHAT)?;
    fits(sums.len(), values, WHAT)?;
    // The kernel adds first + steps and indexes its pairs' rows in int.
    dim(first.saturating_add(steps), WHAT)?;
    dim(pairs.saturating_mul(2), WHAT)?;
    let (first_i, steps_i) = (dim(first, WHAT)?, dim(steps, WHAT)?);
    let (batch_i, summaries_i, n_i) = (dim(batch, WHAT)?, dim(summaries, WHAT)?, dim(n, WHAT)?);
    let mut launch = device.stream().launch_builder(&kernels.features_add);
    launch
        .arg(states)
        .arg(rows)
        .arg(sums)
        .arg(&first_i)
        .arg(&steps_i)
        .arg(&batch_i)
        .arg(&summaries_i)
        .arg(&n_i);
    // SAFETY: states holds steps·B·N values, rows B·S pairs and sums B·S·N (checked above);
    // the kernel guards its index against B·S·N and reads only the rows t of
    // [first, first + steps), at (t − first)·B·N + j·N + i < steps·B·N, whatever the pairs hold.
    unsafe { launch.launch(per_item(values)?) }.context("launching sequence_features_add")?;
    Ok(())
}
