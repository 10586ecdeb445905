//! Timing the LIF steps on the device alone, for the benchmark.

use ndarray::ArrayView2;
use reservoir_core::ReservoirError;

use super::{check_finite, chunk_steps, GpuLifNetwork};
use crate::bench::median_micros_per_step;
use crate::error::{DriverContext, Result};

/// Timing of the device steps alone ([`GpuLifNetwork::time_steps`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LifStepTiming {
    /// Median µs per step over the timed runs (CUDA events, after one warm-up run).
    pub micros_per_step: f64,
    /// Steps per run.
    pub steps: usize,
    /// Spikes in the last timed run.
    pub spikes: u64,
    /// Synaptic events delivered in the last timed run (each spike's out-degree, counted in
    /// the step after it, as the CPU network counts them).
    pub synaptic_events: u64,
}

impl GpuLifNetwork {
    /// Times the steps alone, for benchmarks: uploads `inputs` (T × K, T at most one chunk,
    /// see [`LIF_CHUNK_BYTES`](super::LIF_CHUNK_BYTES)) once, then runs them `repeats + 1` times on the device from the
    /// evolving state, features and flags left on the device, and returns the median µs per
    /// step of the last `repeats` runs with the spikes and synaptic events of the last one.
    /// The state advances; the spike and event counters are left as they were.
    ///
    /// # Errors
    /// A shape error for inputs of the wrong width or longer than a chunk, an invalid-input
    /// error for non-finite inputs, or a driver error.
    pub fn time_steps(&mut self, inputs: ArrayView2<f64>, repeats: usize) -> Result<LifStepTiming> {
        let (steps, n) = (inputs.nrows(), self.config.size);
        let chunk = chunk_steps(n);
        if steps == 0 || steps > chunk {
            let expected = format!("1..={chunk} rows");
            return Err(ReservoirError::shape("timed LIF inputs", expected, steps).into());
        }
        if inputs.ncols() != self.config.input_size {
            let expected = self.config.input_size;
            return Err(ReservoirError::shape("timed LIF inputs", expected, inputs.ncols()).into());
        }
        check_finite(&inputs)?;
        let s = self.device.stream().clone();
        let host_u: Vec<f32> = inputs.iter().map(|&v| v as f32).collect();
        let u = s.clone_htod(&host_u).context("uploading inputs")?;
        let mut features = s
            .alloc_zeros::<f32>(steps * n)
            .context("allocating the features")?;
        // Runs alternate between two flag buffers, so the run before the last one is still
        // there to say which events the last run delivered first.
        let mut flags = [
            s.alloc_zeros::<u8>(steps * n)
                .context("allocating the spike flags")?,
            s.alloc_zeros::<u8>(steps * n)
                .context("allocating the spike flags")?,
        ];
        let mut runs = 0;
        let device = self.device.clone();
        let micros_per_step = median_micros_per_step(&device, steps, repeats, || {
            runs += 1;
            self.enqueue_steps(&u, &mut features, &mut flags[runs % 2], steps)
        })?;
        let previous = s
            .clone_dtoh(&flags[(runs + 1) % 2])
            .context("copying the spikes back")?;
        let last = s
            .clone_dtoh(&flags[runs % 2])
            .context("copying the spikes back")?;
        let carried = self.count_events(&previous, 0).undelivered;
        let count = self.count_events(&last, carried);
        Ok(LifStepTiming {
            micros_per_step,
            steps,
            spikes: count.spikes,
            synaptic_events: count.delivered,
        })
    }
}
