//! What the LIF benchmark binaries (`gpu_lif_bench`, `cpu_lif_bench`, `gpu_spread_bench lif`)
//! share: the benchmark network's config, its held input and the timing of the CPU step, so
//! that their rows measure the same network the same way.

use std::time::Instant;

use ndarray::Array2;
use reservoir_core::lif::{LifConfig, LifNetwork, LifParams};
use reservoir_core::random::counter::uniform_f32;
use reservoir_core::{ReservoirError, Result};

/// Timing of the steps alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LifStepTiming {
    /// Median µs per step over the timed runs (after one warm-up run).
    pub micros_per_step: f64,
    /// Steps per run.
    pub steps: usize,
    /// Spikes in the last timed run.
    pub spikes: u64,
    /// Synaptic events delivered in the last timed run (each spike's out-degree, counted in
    /// the step after it, as the CPU network counts them).
    pub synaptic_events: u64,
}

/// The config of a benchmark network: the defaults (bias 0.9, ρ = 2, 80 % excitatory, dt =
/// 0.1 ms, t_ref = 2 ms, one input channel into 10 % of the neurons) with `size` and
/// `connection_prob`.
pub fn lif_config(size: usize, connection_prob: f64) -> Result<LifConfig> {
    Ok(LifParams::new()
        .size(size)
        .connection_prob(connection_prob)
        .check()?)
}

/// The held input: `steps` rows, level k uniform on [0.3, 1) from the counter-based generator
/// (seed 1, stream 0, counter k), held for `hold` steps. With [`lif_config`] the network
/// fires at a few Hz.
pub fn held_input(steps: usize, hold: usize) -> Array2<f64> {
    Array2::from_shape_fn((steps, 1), |(t, _)| {
        0.3 + 0.7 * f64::from(uniform_f32(1, 0, (t / hold) as u64))
    })
}

/// Times `runs` runs of `inputs` through `LifNetwork::step` after one warm-up run, continuing
/// the trajectory: the median wall-clock µs per step, and the spikes and synaptic events of
/// the last run.
pub fn time_cpu(cpu: &mut LifNetwork, inputs: &Array2<f64>, runs: usize) -> Result<LifStepTiming> {
    let steps = inputs.nrows();
    let mut samples = Vec::with_capacity(runs);
    let mut last = (0, 0);
    for run in 0..=runs {
        let before = (cpu.spike_count(), cpu.synaptic_events());
        let started = Instant::now();
        for u in inputs.rows() {
            cpu.step(u)?;
        }
        let micros = started.elapsed().as_secs_f64() * 1e6 / steps.max(1) as f64;
        if run > 0 {
            samples.push(micros);
        }
        last = (
            cpu.spike_count() - before.0,
            cpu.synaptic_events() - before.1,
        );
    }
    samples.sort_by(f64::total_cmp);
    let micros_per_step = *samples.get(samples.len() / 2).ok_or_else(|| {
        ReservoirError::invalid("LIF step timing", "at least one timed run is needed")
    })?;
    Ok(LifStepTiming {
        micros_per_step,
        steps,
        spikes: last.0,
        synaptic_events: last.1,
    })
}
