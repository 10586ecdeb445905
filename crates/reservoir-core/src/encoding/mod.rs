//! Spike encoders: turn analog inputs into spike trains, seeded and reproducible.
//!
//! The deterministic and Bernoulli encoders return a spike-train matrix (steps × channels) with
//! `1.0` for a spike, `−1.0` for an off-spike (delta code) and `0.0` otherwise;
//! [`SpikePattern::from_matrix`](crate::spikes::SpikePattern::from_matrix) turns one into a
//! pattern. [`poisson`] returns continuous spike times as a [`SpikePattern`](crate::spikes::SpikePattern).
//!
//! | encoder | rule | randomness |
//! |---|---|---|
//! | [`rate`], [`rate_sequence`] | spike iff `u < clamp(x·gain + offset, 0, 1)` (snnTorch `spikegen.rate`) | [`random::counter`](crate::random::counter), stream [`STREAM_RATE`] |
//! | [`latency`] | one spike per feature at `round(t)`, RC or linear code (snnTorch `spikegen.latency`) | none |
//! | [`delta`] | `+1` when `x[t] − x[t−1] ≥ θ`, `−1` when `≤ −θ` (snnTorch `spikegen.delta`) | none |
//! | [`population`] | Gaussian receptive fields, then Bernoulli per step | [`random::counter`](crate::random::counter), stream [`STREAM_POPULATION`] |
//! | [`poisson`] | exponential inter-spike intervals | ChaCha8, stream [`STREAM_POISSON`] |
//!
//! Options follow the configs' convention: `...Params` (serde, builder) `check()` into the
//! `...Options` (or [`Encoder`]) the encoders take, so they are checked once; a bad option is
//! a [`ConfigError`] naming the field (`threshold`, `tau`, `steps`, ...). A non-finite input
//! is an [`InvalidInput`](crate::ReservoirError::InvalidInput) error naming its index.

mod delta;
mod encoder;
mod latency;
mod poisson;
mod population;
mod rate;

pub use delta::{delta, DeltaOptions, DeltaParams};
pub use encoder::{Encoder, EncoderParams};
pub use latency::{latency, latency_times, LatencyOptions, LatencyParams, LATENCY_EPSILON};
pub use poisson::{poisson, poisson_rng, poisson_with_rng, MAX_EXPECTED_SPIKES, STREAM_POISSON};
pub use population::{population, population_activations, PopulationOptions, PopulationParams};
pub use rate::{rate, rate_probability, rate_sequence, RateOptions, RateParams};

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut2};

use crate::error::{ConfigError, ReservoirError, Result};
use crate::random::counter::keyed_f32;

/// Counter-RNG stream of [`rate`] and [`rate_sequence`] (`0x5241_5445`, ASCII "RATE").
pub const STREAM_RATE: u64 = 0x5241_5445;

/// Counter-RNG stream of [`population`] (`0x504F_5055`, ASCII "POPU").
pub const STREAM_POPULATION: u64 = 0x504F_5055;

pub(crate) use crate::config::check;

/// `steps` must be at least 1.
pub(crate) fn check_steps(steps: usize) -> Result<(), ConfigError> {
    check(steps >= 1, "steps", "must be >= 1", steps)
}

/// Every `x[i]` must be finite; the error names the first index that is not.
pub(crate) fn check_finite_1d(context: &str, x: ArrayView1<f64>) -> Result<()> {
    match x.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(ReservoirError::invalid(
            context,
            format!("x[{i}] is not finite (got {})", x[i]),
        )),
    }
}

/// Every `x[[t, i]]` must be finite; the error names the first `[t, i]` (row-major) that is not.
pub(crate) fn check_finite_2d(context: &str, x: ArrayView2<f64>) -> Result<()> {
    if x.iter().all(|v| v.is_finite()) {
        return Ok(());
    }
    match x.indexed_iter().find(|(_, v)| !v.is_finite()) {
        None => Ok(()),
        Some(((t, i), v)) => Err(ReservoirError::invalid(
            context,
            format!("x[{t}, {i}] is not finite (got {v})"),
        )),
    }
}

/// Bernoulli spikes: for every row `r` of `out` and channel `j`,
/// `out[[r, j]] = 1.0` iff `keyed_f32(key, (first_step + r) · C + j) < p[j]` with
/// `C = p.len()`, else `0.0`. `out` must have `p.len()` columns.
pub(crate) fn bernoulli_rows(mut out: ArrayViewMut2<f64>, p: &[f32], key: u64, first_step: u64) {
    let channels = p.len();
    let row_fill = |r: usize, row: &mut [f64]| {
        let base = (first_step + r as u64) * channels as u64;
        for ((j, slot), &prob) in row.iter_mut().enumerate().zip(p) {
            let u = keyed_f32(key, base + j as u64);
            *slot = if u < prob { 1.0 } else { 0.0 };
        }
    };
    if channels == 0 {
        return;
    }
    if let Some(flat) = out.as_slice_mut() {
        flat.chunks_exact_mut(channels)
            .enumerate()
            .for_each(|(r, row)| row_fill(r, row));
        return;
    }
    let mut buffer = vec![0.0; channels];
    for (r, mut row) in out.rows_mut().into_iter().enumerate() {
        row_fill(r, &mut buffer);
        row.assign(&ndarray::ArrayView1::from(&buffer[..]));
    }
}
