//! Rate encoding on the GPU, spike for spike the same as `reservoir_core::encoding`.

use cudarc::driver::{CudaFunction, PushKernelArg};
use ndarray::{Array2, ArrayView1, ArrayView2, Axis};
use reservoir_core::encoding::{RateOptions, STREAM_RATE};
use reservoir_core::random::counter::stream_key;
use reservoir_core::ReservoirError;
use reservoir_kernels::encoding;

use crate::driver::launch::{dim, per_item};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, Result};

/// The kernel of `encoding.cu`.
#[derive(Debug)]
struct EncodingKernels {
    rate: CudaFunction,
}

impl KernelSet for EncodingKernels {
    const MODULE: reservoir_kernels::Module = encoding::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            rate: module.function(encoding::RATE)?,
        })
    }
}

/// `reservoir_core::encoding::rate_sequence` on the GPU: row `t` of `x` (T × K intensities)
/// gives step `t`; spike iff `keyed_f32(stream_key(seed, STREAM_RATE), t·K + i) < p`.
pub fn rate_sequence(
    device: &GpuDevice,
    x: ArrayView2<f64>,
    options: RateOptions,
    seed: u64,
) -> Result<Array2<f64>> {
    encode(device, x, 1, options, seed)
}

/// `reservoir_core::encoding::rate` on the GPU: a static input held for `steps` steps.
pub fn rate(
    device: &GpuDevice,
    x: ArrayView1<f64>,
    steps: usize,
    options: RateOptions,
    seed: u64,
) -> Result<Array2<f64>> {
    if steps == 0 {
        return Err(ReservoirError::invalid("rate encoder", "steps must be >= 1").into());
    }
    encode(device, x.insert_axis(Axis(0)), steps, options, seed)
}

fn encode(
    device: &GpuDevice,
    x: ArrayView2<f64>,
    repeat: usize,
    options: RateOptions,
    seed: u64,
) -> Result<Array2<f64>> {
    if let Some(((row, col), _)) = x.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(ReservoirError::invalid(
            "rate encoder",
            format!("x[[{row}, {col}]] is not finite"),
        )
        .into());
    }
    let (rows, k) = x.dim();
    let total = rows * repeat * k;
    if total == 0 {
        return Ok(Array2::zeros((rows * repeat, k)));
    }
    const WHAT: &str = "rate encoder";
    let (rows_i, k_i, repeat_i) = (dim(rows, WHAT)?, dim(k, WHAT)?, dim(repeat, WHAT)?);
    let stream = device.stream();
    let host: Vec<f64> = x.iter().copied().collect();
    let dx = stream
        .clone_htod(&host)
        .context("uploading the encoder input")?;
    let mut out = stream
        .alloc_zeros::<f32>(total)
        .context("allocating the spike trains")?;
    let kernels = device.kernels::<EncodingKernels>()?;
    let (gain, offset, key) = (
        options.gain() as f32,
        options.offset() as f32,
        stream_key(seed, STREAM_RATE),
    );
    let mut launch = stream.launch_builder(&kernels.rate);
    launch
        .arg(&dx)
        .arg(&rows_i)
        .arg(&k_i)
        .arg(&repeat_i)
        .arg(&gain)
        .arg(&offset)
        .arg(&key)
        .arg(&mut out);
    // SAFETY: x holds rows·k values, out rows·repeat·k; the kernel guards idx < rows·repeat·k.
    unsafe { launch.launch(per_item(total)?) }.context("launching rate_encode_kernel")?;
    let spikes = stream
        .clone_dtoh(&out)
        .context("copying the spike trains back")?;
    Ok(Array2::from_shape_vec(
        (rows * repeat, k),
        spikes.into_iter().map(f64::from).collect(),
    )
    .map_err(|e| ReservoirError::invalid("rate encoder", e))?)
}
