//! Latency (time-to-first-spike) coding, snnTorch `spikegen.latency` semantics.

use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2};

use super::{check, check_finite_1d, check_steps};
use crate::config::checked_options;
use crate::error::{ConfigError, ReservoirError, Result};

/// The ε of the log code: inputs are clamped to at least `threshold + ε` (snnTorch's `epsilon`
/// default, `1e-7`).
pub const LATENCY_EPSILON: f64 = 1e-7;

checked_options! {
    /// Unchecked options of [`latency`]; defaults are snnTorch's.
    params LatencyParams;
    /// Checked options of [`latency`] (from [`LatencyParams::check`]).
    checked LatencyOptions = "LatencyParams";
    /// θ, in the open interval (0, 1) as snnTorch requires; default 0.01.
    threshold: f64 = 0.01,
    /// τ, the RC time constant in steps, finite and > 0; default 1.
    tau: f64 = 1.0,
    /// Linear code `t = −τ(x − 1)` instead of the log code; default false.
    linear: bool = false,
    /// Rescale the times so the latest spike lands on step `steps − 1`; default false.
    normalize: bool = false,
    /// Drop the spike of every feature with `x < θ`; default false.
    clip: bool = false,
}

impl LatencyParams {
    /// The checked options: `threshold` must lie in (0, 1) and `tau` be finite and > 0; the
    /// error names the field.
    pub fn check(self) -> Result<LatencyOptions, ConfigError> {
        let t = self.threshold;
        check(t > 0.0 && t < 1.0, "threshold", "must be in (0, 1)", t)?;
        let tau = self.tau;
        check(
            tau.is_finite() && tau > 0.0,
            "tau",
            "must be finite and > 0",
            tau,
        )?;
        Ok(LatencyOptions { params: self })
    }
}

/// The continuous spike times of [`latency`] before rounding and clipping (snnTorch
/// `latency_code`), in `f64`:
///
/// - **log code** (`linear = false`): `x' = max(x, θ + ε)`, `t = τ · ln(x' / (x' − θ))`, with
///   ε = [`LATENCY_EPSILON`]. With `normalize`: `t ← t · (steps − 1) / max_j t_j` (the maximum
///   over this input; when it is 0 every time stays 0).
/// - **linear code**: `τ' = steps − 1` with `normalize`, else `τ`;
///   `t = min(−τ' · (x − 1), −τ' · (θ − 1))`. With `normalize` and `min_j t_j < 0` (some
///   `x > 1`): `t ← (t − min) · (1 / (max − min)) · (steps − 1)`, and all times 0 when
///   `max = min`.
///
/// # Errors
/// `steps = 0` ([`ConfigError`]); a non-finite `x[i]`; with
/// the linear code and no `normalize`, an `x[i] > 1` (it would spike before step 0).
pub fn latency_times(
    x: ArrayView1<f64>,
    steps: usize,
    options: LatencyOptions,
) -> Result<Array1<f64>> {
    const CTX: &str = "latency encoder";
    check_steps(steps)?;
    check_finite_1d(CTX, x)?;
    let (theta, last) = (options.threshold(), (steps - 1) as f64);
    if !options.linear() {
        let tau = options.tau();
        let mut t = x.mapv(|v| {
            let v = v.max(theta + LATENCY_EPSILON);
            tau * (v / (v - theta)).ln()
        });
        if options.normalize() {
            let max = t.fold(0.0f64, |m, &v| m.max(v));
            if max > 0.0 {
                t.mapv_inplace(|v| v * last / max);
            }
        }
        return Ok(t);
    }
    if !options.normalize() {
        if let Some(i) = x.iter().position(|&v| v > 1.0) {
            return Err(ReservoirError::invalid(
                CTX,
                format!(
                    "x[{i}] = {} > 1 gives a negative spike time with the linear code; \
                     set `normalize` or scale x to <= 1",
                    x[i]
                ),
            ));
        }
    }
    let tau = if options.normalize() {
        last
    } else {
        options.tau()
    };
    let cap = -tau * (theta - 1.0);
    let mut t = x.mapv(|v| (-tau * (v - 1.0)).min(cap));
    let min = t.fold(f64::INFINITY, |m, &v| m.min(v));
    if options.normalize() && min < 0.0 {
        let max = t.fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        if max > min {
            let inv = 1.0 / (max - min);
            t.mapv_inplace(|v| (v - min) * inv * last);
        } else {
            t.fill(0.0);
        }
    }
    Ok(t)
}

/// Latency code: one spike per feature (steps × K output). Feature `i` spikes at step
/// `min(round_half_even(t_i), steps − 1)` with `t_i` from [`latency_times`] (`torch.round`
/// rounds half to even); with `clip`, features with `x[i] < θ` do not spike at all. Strong
/// inputs spike early, inputs at or below θ spike late. Deterministic.
///
/// snnTorch differs in one corner: when some time rounds past `steps − 1` it clamps those
/// spikes to the last step and then clears the whole last step; here they stay on the last step.
///
/// # Errors
/// As [`latency_times`].
pub fn latency(x: ArrayView1<f64>, steps: usize, options: LatencyOptions) -> Result<Array2<f64>> {
    let times = latency_times(x, steps, options)?;
    let mut out = Array2::zeros((steps, x.len()));
    for (i, (&t, &v)) in times.iter().zip(x.iter()).enumerate() {
        if options.clip() && v < options.threshold() {
            continue;
        }
        // t >= 0 here (or -0.0); `as usize` saturates, so huge times land on the last step.
        let step = (t.round_ties_even() as usize).min(steps - 1);
        out[[step, i]] = 1.0;
    }
    Ok(out)
}

/// [`latency`] of each row of `x` (R × K) into `steps` rows each: `(R·steps)` × K.
pub(crate) fn latency_rows(
    x: ArrayView2<f64>,
    steps: usize,
    options: LatencyOptions,
) -> Result<Array2<f64>> {
    let mut out = Array2::zeros((x.nrows() * steps, x.ncols()));
    for (r, row) in x.rows().into_iter().enumerate() {
        let block = latency(row, steps, options)?;
        out.slice_mut(s![r * steps..(r + 1) * steps, ..])
            .assign(&block);
    }
    Ok(out)
}
