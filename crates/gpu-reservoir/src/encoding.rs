//! Rate encoding on the GPU, spike for spike the same as `reservoir_core::encoding`.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use ndarray::{Array2, ArrayView1, ArrayView2, Axis};
use reservoir_core::counter_rng::stream_key;
use reservoir_core::encoding::{RateOptions, STREAM_RATE};
use reservoir_core::ReservoirError;

use crate::device::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::kernels;

/// `reservoir_core::encoding::rate_sequence` on the GPU: row `t` of `x` (T × K intensities)
/// gives step `t`; spike iff `keyed_f32(stream_key(seed, STREAM_RATE), t·K + i) < p`.
pub fn gpu_rate_sequence(
    device: &GpuDevice,
    x: ArrayView2<f64>,
    options: RateOptions,
    seed: u64,
) -> Result<Array2<f64>> {
    encode(device, x, 1, options, seed)
}

/// `reservoir_core::encoding::rate` on the GPU: a static input held for `steps` steps.
pub fn gpu_rate(
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
    options.validate().map_err(ReservoirError::from)?;
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
    let dims = [rows, k, repeat].map(i32::try_from);
    let [Ok(rows_i), Ok(k_i), Ok(repeat_i)] = dims else {
        return Err(ReservoirError::invalid("rate encoder", "dimensions exceed 2^31 - 1").into());
    };
    let stream = device.stream();
    let host: Vec<f64> = x.iter().copied().collect();
    let dx = stream
        .clone_htod(&host)
        .context("uploading the encoder input")?;
    let mut out = stream
        .alloc_zeros::<f32>(total)
        .context("allocating the spike trains")?;
    let function = device.nvrtc_function(&kernels::ENCODING, kernels::encoding::RATE_ENCODE)?;
    let (gain, offset, key) = (
        options.gain as f32,
        options.offset as f32,
        stream_key(seed, STREAM_RATE),
    );
    let mut launch = stream.launch_builder(&function);
    launch
        .arg(&dx)
        .arg(&rows_i)
        .arg(&k_i)
        .arg(&repeat_i)
        .arg(&gain)
        .arg(&offset)
        .arg(&key)
        .arg(&mut out);
    let blocks = total.div_ceil(256) as u32;
    // SAFETY: x holds rows·k values, out rows·repeat·k; the kernel guards idx < rows·repeat·k.
    unsafe {
        launch.launch(LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        })
    }
    .context("launching rate_encode_kernel")?;
    let spikes = stream
        .clone_dtoh(&out)
        .context("copying the spike trains back")?;
    Ok(Array2::from_shape_vec(
        (rows * repeat, k),
        spikes.into_iter().map(f64::from).collect(),
    )
    .map_err(|e| ReservoirError::invalid("rate encoder", e))?)
}
