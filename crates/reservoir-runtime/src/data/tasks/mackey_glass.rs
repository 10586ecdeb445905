//! The Mackey–Glass delay differential equation, sampled once per time unit.
//!
//! Definition used (Mackey & Glass 1977, with the benchmark settings of the reservoir-computing
//! literature):
//!
//! > τ = 17: dx/dt = 0.2 x(t−τ) / (1 + x(t−τ)^10) − 0.1 x(t), one sample per time unit,
//! > integrated with RK4 at h = 1 with the delayed value interpolated (as ReservoirPy does) or at
//! > a finer step; drop the first 500 samples; min–max scale to [−1, 1]. One-step task: predict
//! > x(t+1).
//!
//! What [`mackey_glass`] does, with the defaults of [`MackeyGlassOptions`] in parentheses:
//!
//! - RK4 with step h = 1 / `substeps` (default h = 1), on a grid where the delay τ (default 17)
//!   is exactly D = τ · `substeps` steps. In the step from x_k = x(kh) to x_{k+1}, the delayed
//!   value is x_{k−D} for stage 1, x_{k−D+1} for stage 4, and for the two half-step stages (2 and
//!   3) the average (x_{k−D} + x_{k−D+1}) / 2 — linear interpolation at the midpoint.
//!   (ReservoirPy's `mackey_glass`, as its `datasets/_chaos.py` reads, does *not* interpolate: it
//!   holds x(t−τ) at its start-of-step value for all four stages, so its series differ.)
//! - History: x(t) = x0 (default 1.2) on [−τ, 0]. With `history_seed = Some(s)`, the history grid
//!   values x_{−D}, …, x_{−1} are instead `x0 + 0.2 · (U − 0.5)` (U = `rand`'s standard `f64` in
//!   [0, 1) from `ChaCha8Rng::seed_from_u64(s)`, drawn oldest first), as ReservoirPy perturbs its
//!   history; x(0) = x0 either way.
//! - Samples x(0), x(1), … (every `substeps` grid steps); the first `discard` (default 500) are
//!   dropped and the next `len` kept.
//! - If `scale` (default true): `2 (x − min) / (max − min) − 1` with min and max over the kept
//!   samples, so the result lies in [−1, 1] with −1 and 1 attained exactly.
//!
//! Accuracy (measured, see `tests/tasks.rs`): h = 1 stays within 3.6e-3 of an h = 0.01 solution
//! over the first 100 time units (x ≈ 0.4–1.3); the chaotic dynamics then separate them, so h = 1
//! and finer steps give different (equally valid) realisations of the attractor.

use std::collections::VecDeque;

use ndarray::{Array1, ArrayView1, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{next_step_task, TaskData};
use reservoir_core::error::{ReservoirError, Result};

/// Parameters of [`mackey_glass`]; `Default` gives the usual benchmark settings (τ = 17).
#[derive(Debug, Clone, PartialEq)]
pub struct MackeyGlassOptions {
    /// Delay τ in time units, at least 1. Default 17.
    pub tau: usize,
    /// Production rate β (the 0.2 in the equation). Default 0.2.
    pub beta: f64,
    /// Decay rate γ (the 0.1 in the equation). Default 0.1.
    pub gamma: f64,
    /// Hill exponent n (the 10 in the equation), at least 1. Default 10.
    pub n: i32,
    /// Initial value and constant history x0. Default 1.2.
    pub x0: f64,
    /// RK4 steps per time unit (h = 1 / substeps), at least 1. Default 1 (h = 1).
    pub substeps: usize,
    /// Leading samples dropped (transient). Default 500.
    pub discard: usize,
    /// Seed to perturb the history by ±0.1 for a different series; `None` (default) keeps it
    /// constant at x0.
    pub history_seed: Option<u64>,
    /// Min–max scale the kept samples to [−1, 1]. Default true.
    pub scale: bool,
}

impl Default for MackeyGlassOptions {
    fn default() -> Self {
        Self {
            tau: 17,
            beta: 0.2,
            gamma: 0.1,
            n: 10,
            x0: 1.2,
            substeps: 1,
            discard: 500,
            history_seed: None,
            scale: true,
        }
    }
}

/// A Mackey–Glass series of `len` samples, one per time unit (see the module docs for exactly
/// how it is integrated, trimmed and scaled).
///
/// Errors ([`ReservoirError::InvalidInput`]): `len < 2` when scaling (min–max needs two
/// samples; otherwise `len < 1`), `tau`, `substeps` or `n` below 1, a non-finite or negative
/// rate, a non-finite `x0`, or sizes that overflow. [`ReservoirError::Numerical`]: a non-finite
/// value, or a constant series that cannot be scaled.
pub fn mackey_glass(len: usize, options: MackeyGlassOptions) -> Result<Array1<f64>> {
    let o = &options;
    let ctx = "mackey_glass";
    if len < 1 + usize::from(o.scale) {
        return Err(ReservoirError::invalid(
            ctx,
            format!("len too small: {len}"),
        ));
    }
    if o.tau == 0 || o.substeps == 0 || o.n < 1 {
        let msg = format!(
            "tau, substeps and n must be >= 1 (tau {}, substeps {}, n {})",
            o.tau, o.substeps, o.n
        );
        return Err(ReservoirError::invalid(ctx, msg));
    }
    if !(o.beta.is_finite() && o.gamma.is_finite() && o.beta >= 0.0 && o.gamma >= 0.0) {
        let msg = format!(
            "beta and gamma must be finite and >= 0 (beta {}, gamma {})",
            o.beta, o.gamma
        );
        return Err(ReservoirError::invalid(ctx, msg));
    }
    if !o.x0.is_finite() {
        return Err(ReservoirError::invalid(
            ctx,
            format!("x0 must be finite, got {}", o.x0),
        ));
    }
    let overflow = || ReservoirError::invalid(ctx, "tau * substeps or discard + len overflows");
    let delay = o.tau.checked_mul(o.substeps).ok_or_else(overflow)?;
    let total = o.discard.checked_add(len).ok_or_else(overflow)?;
    // The series, its grid history, and the task's inputs and targets made from it.
    super::ensure_rows_fit("Mackey–Glass", len.saturating_add(delay), 4)?;

    // Ring of the last delay + 1 grid values: window[0] = x_{k−D}, window[D] = x_k.
    let mut window: VecDeque<f64> = VecDeque::with_capacity(delay + 1);
    let mut rng = o.history_seed.map(ChaCha8Rng::seed_from_u64);
    for _ in 0..delay {
        let jitter = rng
            .as_mut()
            .map_or(0.0, |r| 0.2 * (r.random::<f64>() - 0.5));
        window.push_back(o.x0 + jitter);
    }
    window.push_back(o.x0);

    let h = 1.0 / o.substeps as f64;
    let rhs = |x: f64, delayed: f64| o.beta * delayed / (1.0 + delayed.powi(o.n)) - o.gamma * x;
    let mut x = o.x0;
    let mut kept = Vec::with_capacity(len);
    for sample in 0..total {
        if sample >= o.discard {
            kept.push(x);
        }
        if sample + 1 == total {
            break;
        }
        for _ in 0..o.substeps {
            let d0 = window.front().copied().unwrap_or(o.x0);
            let d1 = window.get(1).copied().unwrap_or(x);
            let d_half = 0.5 * (d0 + d1);
            let k1 = rhs(x, d0);
            let k2 = rhs(x + 0.5 * h * k1, d_half);
            let k3 = rhs(x + 0.5 * h * k2, d_half);
            let k4 = rhs(x + h * k3, d1);
            x += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
            if !x.is_finite() {
                return Err(ReservoirError::numerical(
                    ctx,
                    format!("non-finite value at sample {sample}"),
                ));
            }
            window.pop_front();
            window.push_back(x);
        }
    }

    let mut series = Array1::from_vec(kept);
    if o.scale {
        let min = series.fold(f64::INFINITY, |m, &v| m.min(v));
        let max = series.fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        if max <= min {
            return Err(ReservoirError::numerical(
                ctx,
                "series is constant; cannot min-max scale",
            ));
        }
        series.mapv_inplace(|v| 2.0 * ((v - min) / (max - min)) - 1.0);
    }
    Ok(series)
}

/// One-step-ahead prediction on a series of length L: input row t = x(t), target row t = x(t+1),
/// for t = 0..L−2 (L − 1 rows, one column each; no rows if L < 2).
pub fn one_step_task(series: ArrayView1<'_, f64>) -> TaskData {
    next_step_task(series.insert_axis(Axis(1)))
}
