//! Launches of `sequence_features.cu`: projected states centred, a chunk's summarized states
//! gathered per sequence in f64, and the model-space solve of every sequence of a batch. Each
//! checks the lengths of its buffers first, so a wrong length is an error rather than an
//! out-of-bounds access on the device.

use cudarc::driver::{CudaFunction, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use reservoir_kernels::sequence_features as kernels;

use crate::driver::launch::{dim, fits, per_item};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, Result};

/// The kernels of `sequence_features.cu`.
#[derive(Debug)]
pub(crate) struct FeatureKernels {
    centre: CudaFunction,
    gather: CudaFunction,
    model_space_solve: CudaFunction,
}

impl KernelSet for FeatureKernels {
    const MODULE: reservoir_kernels::Module = kernels::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            centre: module.function(kernels::CENTRE)?,
            gather: module.function(kernels::GATHER)?,
            model_space_solve: module.function(kernels::MODEL_SPACE_SOLVE)?,
        })
    }
}

/// `values[c·d + i] −= shift[i]` for the first `columns` columns of d values.
pub(crate) fn centre(
    device: &GpuDevice,
    kernels: &FeatureKernels,
    values: &mut CudaViewMut<'_, f32>,
    shift: &CudaView<'_, f32>,
    columns: usize,
) -> Result<()> {
    const WHAT: &str = "centring the projected states";
    let d = shift.len();
    let count = columns.saturating_mul(d);
    if count == 0 {
        return Ok(());
    }
    fits(values.len(), count, WHAT)?;
    let (columns_i, d_i) = (columns as i64, dim(d, WHAT)?);
    let mut launch = device.stream().launch_builder(&kernels.centre);
    launch.arg(values).arg(shift).arg(&columns_i).arg(&d_i);
    // SAFETY: values holds columns·d values and shift d (checked above); the kernel guards
    // idx < columns·d.
    unsafe { launch.launch(per_item(count)?) }.context("launching features_centre")?;
    Ok(())
}

/// Where [`gather`] puts a time chunk: steps `first..first + steps` of `batch` sequences, each
/// step `width` values, into rows `offset..offset + width` of d-wide states of `longest` steps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GatherChunk {
    pub first: usize,
    pub steps: usize,
    pub batch: usize,
    pub width: usize,
    pub longest: usize,
    pub d: usize,
    pub offset: usize,
}

/// Adds the chunk's values (steps × batch × width, sequence j's step `first + t` at
/// `(t·batch + j)·width`) into `summarized` (batch × longest × d, f64), the steps before each
/// sequence's length (`lengths`, one per sequence) only.
pub(crate) fn gather(
    device: &GpuDevice,
    kernels: &FeatureKernels,
    chunk_values: &CudaView<'_, f32>,
    lengths: &CudaView<'_, i32>,
    summarized: &mut CudaViewMut<'_, f64>,
    chunk: GatherChunk,
) -> Result<()> {
    const WHAT: &str = "gathering the summarized states";
    let GatherChunk {
        first,
        steps,
        batch,
        width,
        longest,
        d,
        offset,
    } = chunk;
    let count = steps.saturating_mul(batch).saturating_mul(width);
    if count == 0 {
        return Ok(());
    }
    if offset.saturating_add(width) > d {
        return Err(reservoir_core::ReservoirError::invalid(
            WHAT,
            format!("rows {offset}..{} of states {d} wide", offset + width),
        )
        .into());
    }
    fits(chunk_values.len(), count, WHAT)?;
    fits(lengths.len(), batch, WHAT)?;
    fits(
        summarized.len(),
        batch.saturating_mul(longest).saturating_mul(d),
        WHAT,
    )?;
    // The kernel adds first + t in int.
    dim(first.saturating_add(steps), WHAT)?;
    let ints = [first, steps, batch, width, longest, d, offset]
        .into_iter()
        .map(|v| dim(v, WHAT))
        .collect::<Result<Vec<i32>>>()?;
    let mut launch = device.stream().launch_builder(&kernels.gather);
    launch.arg(chunk_values).arg(lengths).arg(summarized);
    for value in &ints {
        launch.arg(value);
    }
    // SAFETY: the chunk holds steps·batch·width values, lengths batch and summarized
    // batch·longest·d (checked above), offset + width ≤ d; the kernel guards idx against
    // steps·batch·width and writes only rows below `longest`, at
    // (j·longest + row)·d + offset + c < batch·longest·d, whatever the lengths hold.
    unsafe { launch.launch(per_item(count)?) }.context("launching features_gather")?;
    Ok(())
}

/// The shape of a batch's model-space solve: `batch` sequences of at most `longest` steps
/// whose summarized states are `d` wide, the first `warmup` steps of each left out, with ridge
/// strength `ridge`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModelSpaceBatch {
    pub batch: usize,
    pub longest: usize,
    pub d: usize,
    pub warmup: usize,
    pub ridge: f64,
}

/// The model space of every sequence of a batch (`model_space_solve`): from its states
/// (`summarized`, batch × longest × d) and its Grams (`gram` and `cross`, batch × d² each,
/// overwritten), its weights and biases into `out` (batch × (d² + d)) and its status into
/// `status` (batch).
#[allow(clippy::too_many_arguments)]
pub(crate) fn model_space_solve(
    device: &GpuDevice,
    kernels: &FeatureKernels,
    summarized: &CudaView<'_, f64>,
    (gram, cross): (&mut CudaViewMut<'_, f64>, &mut CudaViewMut<'_, f64>),
    lengths: &CudaView<'_, i32>,
    out: &mut CudaViewMut<'_, f64>,
    status: &mut CudaViewMut<'_, i32>,
    shape: ModelSpaceBatch,
) -> Result<()> {
    const WHAT: &str = "the model-space solve";
    let ModelSpaceBatch {
        batch,
        longest,
        d,
        warmup,
        ridge,
    } = shape;
    if batch == 0 {
        return Ok(());
    }
    if d == 0 || d > kernels::MODEL_SPACE_MAX_WIDTH {
        return Err(reservoir_core::ReservoirError::invalid(
            WHAT,
            format!(
                "states {d} wide: from 1 to {}",
                kernels::MODEL_SPACE_MAX_WIDTH
            ),
        )
        .into());
    }
    let squares = batch.saturating_mul(d * d);
    fits(
        summarized.len(),
        batch.saturating_mul(longest).saturating_mul(d),
        WHAT,
    )?;
    fits(gram.len(), squares, WHAT)?;
    fits(cross.len(), squares, WHAT)?;
    fits(lengths.len(), batch, WHAT)?;
    fits(out.len(), batch.saturating_mul(d * d + d), WHAT)?;
    fits(status.len(), batch, WHAT)?;
    let blocks = u32::try_from(batch).map_err(|_| {
        reservoir_core::ReservoirError::invalid(WHAT, format!("{batch} sequences in one launch"))
    })?;
    let (longest_i, warmup_i, d_i) = (dim(longest, WHAT)?, dim(warmup, WHAT)?, dim(d, WHAT)?);
    let mut launch = device.stream().launch_builder(&kernels.model_space_solve);
    launch
        .arg(summarized)
        .arg(gram)
        .arg(cross)
        .arg(lengths)
        .arg(&longest_i)
        .arg(&warmup_i)
        .arg(&d_i)
        .arg(&ridge)
        .arg(out)
        .arg(status);
    let config = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (kernels::MODEL_SPACE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: a block per sequence j < batch; summarized holds batch·longest·d values, gram and
    // cross batch·d², lengths and status batch, out batch·(d² + d) (checked above), and d is
    // within the kernel's shared means; the kernel reads sequence j's rows below its length
    // only once it has checked that length against `longest`.
    unsafe { launch.launch(config) }.context("launching model_space_solve")?;
    Ok(())
}
