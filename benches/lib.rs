//! What the benchmarks share: their inputs, and timing on the GPU with CUDA events (medians
//! after a warm-up, start-up excluded).

use cudarc::driver::sys::CUevent_flags;
use gpu_reservoir::{GpuDevice, GpuError, Result};
use ndarray::Array2;
use reservoir_core::lif::{LifConfig, LifWeights};
use reservoir_core::spectral::{Phases, SpectralOptions};
use reservoir_core::CsrMatrix;
use std::time::Duration;

/// The CPU's model name as the kernel reports it (`/proc/cpuinfo`), or "unknown CPU".
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string())
}

/// `LifWeights::generate` (the spectral estimate on the CPU), with each phase's time.
///
/// # Errors
/// As `LifWeights::generate`.
pub fn lif_weights_phased(
    config: &LifConfig,
) -> reservoir_core::Result<(LifWeights, Vec<(&'static str, Duration)>)> {
    let mut phases = Vec::new();
    let estimate = |w: &CsrMatrix<f64>, options: &SpectralOptions, phases: &mut dyn Phases| {
        w.spectral_radius_with(options, phases)
    };
    let weights = LifWeights::generate_with(config, estimate, &mut phases)?;
    Ok((weights, phases))
}

/// Phases as a `reservoir_core::spectral::Phases` hook records them, on one line in the order
/// each first ended, a phase that ended more than once summed: `draw 1.234 s, checks 0.123 s, …`.
pub fn phase_line(phases: &[(&'static str, Duration)]) -> String {
    let mut summed: Vec<(&str, Duration)> = Vec::new();
    for &(name, spent) in phases {
        match summed.iter_mut().find(|(seen, _)| *seen == name) {
            Some((_, total)) => *total += spent,
            None => summed.push((name, spent)),
        }
    }
    let phases: Vec<String> = summed
        .iter()
        .map(|(name, spent)| format!("{name} {:.3} s", spent.as_secs_f64()))
        .collect();
    phases.join(", ")
}

/// A smooth deterministic 1-D input of `len` steps.
pub fn sine_input(len: usize) -> Array2<f64> {
    Array2::from_shape_fn((len, 1), |(t, _)| (t as f64 * 0.1).sin() * 0.5)
}

fn driver(context: &'static str) -> impl Fn(cudarc::driver::DriverError) -> GpuError {
    move |source| GpuError::Driver { context, source }
}

/// Median µs per step of `enqueue` (which queues `steps` steps on the device's stream), timed
/// with CUDA events over `repeats` runs after one untimed warm-up run.
pub fn median_micros_per_step(
    device: &GpuDevice,
    steps: usize,
    repeats: usize,
    mut enqueue: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let (ctx, stream) = (device.context(), device.stream());
    enqueue()?;
    let mut samples = Vec::with_capacity(repeats.max(1));
    for _ in 0..repeats.max(1) {
        let start = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("creating an event"))?;
        let end = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("creating an event"))?;
        start.record(stream).map_err(driver("recording an event"))?;
        enqueue()?;
        end.record(stream).map_err(driver("recording an event"))?;
        end.synchronize()
            .map_err(driver("waiting for the timed run"))?;
        let ms = start.elapsed_ms(&end).map_err(driver("reading an event"))?;
        samples.push(f64::from(ms) * 1e3 / steps.max(1) as f64);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

/// Device-to-device copy bandwidth in GB/s (bytes read plus written), median of 5, over a
/// buffer of `bytes`: the floor a step that streams W from memory is compared with.
pub fn copy_bandwidth(device: &GpuDevice, bytes: usize) -> Result<f64> {
    let s = device.stream();
    let count = bytes / 4;
    let src = s
        .alloc_zeros::<f32>(count)
        .map_err(driver("allocating the copy source"))?;
    let mut dst = s
        .alloc_zeros::<f32>(count)
        .map_err(driver("allocating the copy target"))?;
    let micros = median_micros_per_step(device, 1, 5, || {
        s.memcpy_dtod(&src, &mut dst).map_err(driver("copying"))
    })?;
    Ok(2.0 * (count * 4) as f64 / (micros * 1e-6) / 1e9)
}
