//! Rate (Bernoulli) coding, snnTorch `spikegen.rate` semantics with a portable counter RNG.

use ndarray::{s, Array2, ArrayView1, ArrayView2, Axis};

use super::{bernoulli_rows, check, check_finite_1d, check_finite_2d, check_steps, STREAM_RATE};
use crate::config::checked_options;
use crate::error::{ConfigError, Result};
use crate::random::counter::stream_key;

checked_options! {
    /// Unchecked options of [`rate`]: the spike probability of intensity `x` is
    /// `clamp(x·gain + offset, 0, 1)` (see [`rate_probability`] for the exact arithmetic).
    params RateParams;
    /// Checked options of [`rate`] (from [`RateParams::check`]).
    checked RateOptions = "RateParams";
    /// Multiplies the intensity; default 1. Must be finite as an `f32`.
    gain: f64 = 1.0,
    /// Added after the gain; default 0. Must be finite as an `f32`.
    offset: f64 = 0.0,
}

impl RateParams {
    /// The checked options: `gain` and `offset` must be finite after rounding to `f32`
    /// (`|v| ≤ f32::MAX`); the error names the field.
    pub fn check(self) -> Result<RateOptions, ConfigError> {
        let finite32 = |v: f64| (v as f32).is_finite();
        check(
            finite32(self.gain),
            "gain",
            "must be finite in f32",
            self.gain,
        )?;
        check(
            finite32(self.offset),
            "offset",
            "must be finite in f32",
            self.offset,
        )?;
        Ok(RateOptions { params: self })
    }
}

/// The spike probability of intensity `x`, computed in `f32` with two separately rounded
/// operations and no fused multiply-add:
///
/// `q = (x as f32) * (gain as f32) + (offset as f32)`, then `p = 1` if `q ≥ 1`, `p = q` if
/// `0 < q < 1`, else `p = 0`
///
/// where `as f32` rounds to nearest even. A NaN `q` (possible only when `x` overflows `f32`
/// and `gain` is 0) gives 0. A CUDA port must
/// write `fminf(fmaxf(__fadd_rn(__fmul_rn(__double2float_rn(x), gain), offset), 0.f), 1.f)`:
/// the `_rn` intrinsics stop nvcc from contracting the two operations into one FMA.
#[inline]
pub fn rate_probability(x: f64, gain: f32, offset: f32) -> f32 {
    let scaled = (x as f32) * gain;
    let p = scaled + offset;
    // Not `clamp`: a NaN must give 0, as CUDA's fmaxf/fminf do.
    if p >= 1.0 {
        1.0
    } else if p > 0.0 {
        p
    } else {
        0.0
    }
}

/// Rate code of a static input: `steps` × K spikes where, for step `t` and feature `i`,
/// `out[[t, i]] = 1.0` iff `uniform_f32(seed, STREAM_RATE, t·K + i) < p_i` with
/// `p_i = rate_probability(x[i], gain, offset)`. So `p_i = 0` never spikes and `p_i = 1`
/// always does.
///
/// # Errors
/// `steps = 0` ([`ConfigError`]); a non-finite `x[i]` (naming `i`).
pub fn rate(
    x: ArrayView1<f64>,
    steps: usize,
    options: RateOptions,
    seed: u64,
) -> Result<Array2<f64>> {
    check_steps(steps)?;
    check_finite_1d("rate encoder", x)?;
    rate_rows(x.insert_axis(Axis(0)), steps, options, seed, "rate encoder")
}

/// Rate code of a sequence: row `t` of `x` (T × K intensities) gives output step `t`, with
/// `out[[t, i]] = 1.0` iff `uniform_f32(seed, STREAM_RATE, t·K + i) < rate_probability(x[[t, i]], ..)`.
/// A constant sequence therefore gives exactly [`rate`] with `steps = T`.
///
/// # Errors
/// A non-finite `x[[t, i]]` (naming `[t, i]`).
pub fn rate_sequence(x: ArrayView2<f64>, options: RateOptions, seed: u64) -> Result<Array2<f64>> {
    rate_rows(x, 1, options, seed, "rate_sequence encoder")
}

/// Each row `r` of `x` held for `repeat` steps: output row `r·repeat + s` uses global step
/// `t = r·repeat + s` and counters `t·K + i`.
pub(crate) fn rate_rows(
    x: ArrayView2<f64>,
    repeat: usize,
    options: RateOptions,
    seed: u64,
    context: &str,
) -> Result<Array2<f64>> {
    check_finite_2d(context, x)?;
    let (rows, channels) = x.dim();
    let (gain, offset) = (options.gain() as f32, options.offset() as f32);
    let key = stream_key(seed, STREAM_RATE);
    let mut out = Array2::zeros((rows * repeat, channels));
    let mut p = vec![0.0f32; channels];
    for (r, row) in x.rows().into_iter().enumerate() {
        for (slot, &v) in p.iter_mut().zip(row) {
            *slot = rate_probability(v, gain, offset);
        }
        let first = r * repeat;
        let block = out.slice_mut(s![first..first + repeat, ..]);
        bernoulli_rows(block, &p, key, first as u64);
    }
    Ok(out)
}
