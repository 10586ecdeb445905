//! Homogeneous Poisson spike trains with continuous spike times.

use ndarray::{Array2, ArrayView1, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::check;
use crate::error::{ReservoirError, Result};
use crate::spikes::{Spike, SpikePattern};

/// ChaCha stream number of [`poisson`] (`0x504F_4953`, ASCII "POIS"); far from the engine's
/// own streams (1–5 in [`crate::random::Stream`]).
pub const STREAM_POISSON: u64 = 0x504F_4953;

/// Largest expected total spike count, `Σ rates_hz · duration_ms / 1000`, that [`poisson`]
/// accepts (10^8); a larger one is almost certainly a unit mistake and would exhaust memory.
pub const MAX_EXPECTED_SPIKES: f64 = 1e8;

/// The generator [`poisson`] uses: `ChaCha8Rng::seed_from_u64(seed)` with
/// `set_stream(STREAM_POISSON)`.
pub fn poisson_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(STREAM_POISSON);
    rng
}

/// Homogeneous Poisson spike trains: channel `i` fires at `rates_hz[i]` spikes per second over
/// `[0, duration_ms)`, every spike with amplitude 1. Equivalent to
/// `poisson_with_rng(rates_hz, duration_ms, &mut poisson_rng(seed))`.
///
/// # Errors
/// As [`poisson_with_rng`].
pub fn poisson(rates_hz: ArrayView1<f64>, duration_ms: f64, seed: u64) -> Result<SpikePattern> {
    poisson_with_rng(rates_hz, duration_ms, &mut poisson_rng(seed))
}

/// Poisson trains drawn from `rng`, channels in index order. For channel `i` with
/// `λ = rates_hz[i] / 1000` spikes per ms (none drawn when λ = 0 in `f64`), starting from `t = 0`:
/// repeat `u = rng.random::<f64>()` (53 bits, in [0, 1)), `t += −ln(1 − u) / λ`, and keep a
/// spike at `t` while `t < duration_ms`; the first `t ≥ duration_ms` ends the channel (its
/// draw is consumed). Inter-spike intervals are therefore exponential with mean `1/λ` ms.
///
/// # Errors
/// A non-finite or non-positive `duration_ms`; a non-finite or negative `rates_hz[i]` (naming
/// `i`); more than 2^32 channels; an expected total above [`MAX_EXPECTED_SPIKES`].
pub fn poisson_with_rng(
    rates_hz: ArrayView1<f64>,
    duration_ms: f64,
    rng: &mut ChaCha8Rng,
) -> Result<SpikePattern> {
    const CTX: &str = "poisson encoder";
    check(
        duration_ms.is_finite() && duration_ms > 0.0,
        "duration_ms",
        "must be finite and > 0",
        duration_ms,
    )?;
    if let Some(i) = rates_hz.iter().position(|r| !(r.is_finite() && *r >= 0.0)) {
        return Err(ReservoirError::invalid(
            CTX,
            format!("rates_hz[{i}] must be finite and >= 0, got {}", rates_hz[i]),
        ));
    }
    if rates_hz.len() > u32::MAX as usize + 1 {
        return Err(ReservoirError::invalid(
            CTX,
            format!("{} channels exceed the 2^32 neuron ids", rates_hz.len()),
        ));
    }
    let expected = rates_hz.sum() * duration_ms / 1000.0;
    if expected > MAX_EXPECTED_SPIKES {
        return Err(ReservoirError::invalid(
            CTX,
            format!(
                "rates_hz × duration_ms expects {expected:.3e} spikes, more than {MAX_EXPECTED_SPIKES:e}; \
                 rates are in Hz and durations in ms"
            ),
        ));
    }
    let mut spikes = Vec::with_capacity((expected * 1.1) as usize + 16);
    for (i, &rate) in rates_hz.iter().enumerate() {
        let lambda = rate / 1000.0;
        if lambda == 0.0 {
            continue; // also a subnormal rate that underflows
        }
        let mut t = 0.0f64;
        loop {
            let u: f64 = rng.random();
            t += -(1.0 - u).ln() / lambda;
            if t >= duration_ms {
                break;
            }
            spikes.push(Spike {
                neuron_id: i as u32,
                time_ms: t,
                amplitude: 1.0,
            });
        }
    }
    SpikePattern::new(spikes, rates_hz.len(), duration_ms)
}

/// Rows of finite intensities `x` (R × K; a negative one is an error) as Poisson trains at `x · max_rate_hz` over
/// `steps · dt_ms` each, from one [`poisson_rng`] in row order; a spike at time τ of row `r`
/// adds 1 to output `[r·steps + min(floor(τ / dt_ms), steps − 1), i]`.
pub(crate) fn poisson_rows(
    x: ArrayView2<f64>,
    max_rate_hz: f64,
    dt_ms: f64,
    steps: usize,
    seed: u64,
) -> Result<Array2<f64>> {
    if let Some(((t, i), v)) = x.indexed_iter().find(|(_, v)| **v < 0.0) {
        return Err(ReservoirError::invalid(
            "poisson encoder",
            format!("x[{t}, {i}] must be >= 0 (a rate), got {v}"),
        ));
    }
    let mut rng = poisson_rng(seed);
    let mut out = Array2::zeros((x.nrows() * steps, x.ncols()));
    for (r, row) in x.rows().into_iter().enumerate() {
        let rates = row.mapv(|v| v * max_rate_hz);
        let pattern = poisson_with_rng(rates.view(), steps as f64 * dt_ms, &mut rng)?;
        for spike in pattern.spikes() {
            let bin = ((spike.time_ms / dt_ms) as usize).min(steps - 1);
            out[[r * steps + bin, spike.neuron_id as usize]] += spike.amplitude;
        }
    }
    Ok(out)
}
