//! Canonical NARMA-10 (non-linear auto-regressive moving average of order 10).
//!
//! Definition used (canonical NARMA-10, Atiya & Parlos 2000), followed literally:
//!
//! > u(t) ~ U[0, 0.5] i.i.d.;
//! > y(t+1) = 0.3 y(t) + 0.05 y(t) Σ_{i=0..9} y(t−i) + 1.5 u(t−9) u(t) + 0.1,
//! > y = 0 for the first 10 steps.
//!
//! So y(0) = … = y(9) = 0 and the recurrence gives y(10), y(11), …; the first value it produces
//! is y(10) = 1.5 u(0) u(9) + 0.1. There is no `tanh` squashing.
//!
//! **ReservoirPy's `narma()` is not this task.** Its loop (`reservoirpy/datasets/_chaos.py`) is
//! `y[t+1] = a1*y[t] + a2*y[t]*np.sum(y[t-order:t]) + b*u[t-order]*u[t] + c`: with `order = 10`
//! the sum runs over y(t−10)..y(t−1) instead of y(t−9)..y(t), and the input term is
//! u(t−10)·u(t) instead of u(t−9)·u(t) — one step off (an order-11 input delay, and its own
//! docstring says `u[t-(n-1)]`). Its defaults (`order=30, a1=0.2, a2=0.04, b=1.5, c=0.001`) are
//! NARMA-30 constants, not NARMA-10. It also returns `u` with `order` extra leading rows, and in
//! its documented pairing `(u[order:], y)` the target in row t is y(t), which does not depend on
//! the input u(t) of that row; here target row t is y(t+1), which does.

use ndarray::{Array1, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::TaskData;
use reservoir_core::error::{ReservoirError, Result};

/// Time steps simulated and dropped by [`narma10`] before the first returned row, so that no
/// returned target comes from the y = 0 start-up (the transient dies out within a few dozen steps).
pub const NARMA10_WASHOUT: usize = 200;

/// Order of the task: the number of past outputs in the sum and the input delay + 1.
const ORDER: usize = 10;

/// |y| beyond which the series is declared diverged. Bounded sequences stay below 1.25 (2000 seeds
/// × 20,000 steps); every sequence seen above that went on past 1e6.
const DIVERGENCE_BOUND: f64 = 10.0;

/// Canonical NARMA-10 with [`NARMA10_WASHOUT`] leading steps dropped: `len` rows, 1 input and
/// 1 target column. Same as `narma10_with_washout(len, NARMA10_WASHOUT, seed)`.
pub fn narma10(len: usize, seed: u64) -> Result<TaskData> {
    narma10_with_washout(len, NARMA10_WASHOUT, seed)
}

/// Canonical NARMA-10, returning rows for absolute times `t = washout .. washout + len − 1`.
///
/// Exactly what happens:
///
/// 1. `n = washout + len` inputs u(0), …, u(n−1) are drawn in that order as `0.5 · U`, where `U`
///    is `rand`'s standard `f64` in [0, 1) from `ChaCha8Rng::seed_from_u64(seed)`, so u ∈
///    [0, 0.5).
/// 2. y(0..=9) = 0; for t = 9, …, n−1:
///    `y(t+1) = 0.3 * y(t) + 0.05 * y(t) * s + 1.5 * u(t-9) * u(t) + 0.1` evaluated left to right
///    in `f64`, with `s = y(t) + y(t−1) + … + y(t−9)` accumulated from i = 0 to 9 starting at 0.0.
/// 3. Row r (r = 0..len) holds input u(washout + r) and target y(washout + r + 1).
///
/// With `washout = 0` the first nine targets are the fixed zeros y(1..=9) and row 9 has target
/// y(10) = 1.5 u(0) u(9) + 0.1: the literal start of the definition.
///
/// Errors: `len == 0` or `washout + len` overflowing ([`ReservoirError::InvalidInput`]); y
/// leaving |y| ≤ 10 ([`ReservoirError::Numerical`], naming the step). The canonical recurrence
/// has no squashing and **does diverge for some input sequences**: measured here, 7 of 1000 seeds
/// at `len` 1000, 16 of 1000 at 3000, 49 of 1000 at 10,000 (with the default washout). Such a
/// seed is reported, not silently replaced; pick another seed.
pub fn narma10_with_washout(len: usize, washout: usize, seed: u64) -> Result<TaskData> {
    if len == 0 {
        return Err(ReservoirError::invalid("narma10", "len must be at least 1"));
    }
    let n = washout
        .checked_add(len)
        .ok_or_else(|| ReservoirError::invalid("narma10", "washout + len overflows usize"))?;
    // u and y, then the rows' inputs and targets.
    super::ensure_rows_fit("NARMA-10", n, 4)?;

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let u: Vec<f64> = (0..n).map(|_| 0.5 * rng.random::<f64>()).collect();

    // y[t] for t = 0..=n; the first ORDER entries stay 0.
    let mut y = vec![0.0_f64; n + 1];
    for t in (ORDER - 1)..n {
        let mut sum = 0.0;
        for i in 0..ORDER {
            sum += y[t - i];
        }
        let next = 0.3 * y[t] + 0.05 * y[t] * sum + 1.5 * u[t - (ORDER - 1)] * u[t] + 0.1;
        if !next.is_finite() || next.abs() > DIVERGENCE_BOUND {
            return Err(ReservoirError::numerical(
                "narma10",
                format!("y({}) = {next} diverged; try another seed", t + 1),
            ));
        }
        y[t + 1] = next;
    }

    let inputs = Array1::from_vec(u[washout..n].to_vec()).insert_axis(Axis(1));
    let targets = Array1::from_vec(y[washout + 1..=n].to_vec()).insert_axis(Axis(1));
    TaskData::new(inputs, targets)
}
