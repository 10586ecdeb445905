//! The Lorenz-63 system, integrated with classical RK4 and sampled every `dt`.
//!
//! dx/dt = σ (y − x),  dy/dt = x (ρ − z) − y,  dz/dt = x y − β z,
//! with σ = 10, ρ = 28, β = 8/3 by default (the chaotic regime).
//!
//! [`lorenz`] takes one RK4 step of size `dt` (default 0.01) per sample, starting from the state
//! chosen by [`LorenzInit`]; it integrates and drops `discard` (default 1000) steps — 10 time units
//! at the default `dt` — so the trajectory is on the attractor, and returns the next `len` states
//! as rows `[x, y, z]`.
//! [`standardize`] rescales each column to mean 0 and population standard deviation 1.

use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use reservoir_core::error::{ReservoirError, Result};

/// Where the integration starts (before the discarded transient).
#[derive(Debug, Clone, PartialEq)]
pub enum LorenzInit {
    /// This exact state `[x, y, z]`.
    Fixed([f64; 3]),
    /// A state drawn from `ChaCha8Rng::seed_from_u64(seed)`: x, then y, uniform in [−10, 10),
    /// then z uniform in [0, 40) (each as `a + (b − a) · U` with `rand`'s standard `f64` U).
    Random {
        /// Seed of the portable generator.
        seed: u64,
    },
}

/// Parameters of [`lorenz`]; `Default` gives σ = 10, ρ = 28, β = 8/3, dt = 0.01, 1000 discarded
/// steps and the fixed start [1, 1, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct LorenzOptions {
    /// σ. Default 10.
    pub sigma: f64,
    /// ρ. Default 28.
    pub rho: f64,
    /// β. Default 8/3.
    pub beta: f64,
    /// Time between samples, also the RK4 step; finite and > 0. Default 0.01.
    pub dt: f64,
    /// RK4 steps integrated and dropped before the first returned row. Default 1000.
    pub discard: usize,
    /// Initial state. Default `LorenzInit::Fixed([1.0, 1.0, 1.0])`.
    pub init: LorenzInit,
}

impl Default for LorenzOptions {
    fn default() -> Self {
        Self {
            sigma: 10.0,
            rho: 28.0,
            beta: 8.0 / 3.0,
            dt: 0.01,
            discard: 1000,
            init: LorenzInit::Fixed([1.0, 1.0, 1.0]),
        }
    }
}

/// A Lorenz-63 trajectory of `len` samples as a `len × 3` array of `[x, y, z]` rows; row i is the
/// state after `discard + i` RK4 steps of size `dt` from the initial state.
///
/// Errors: `len == 0`, non-finite parameters or initial state, `dt` not > 0
/// ([`ReservoirError::InvalidInput`]); a non-finite state during integration, e.g. from a too
/// large `dt` ([`ReservoirError::Numerical`]).
pub fn lorenz(len: usize, options: LorenzOptions) -> Result<Array2<f64>> {
    let o = &options;
    let ctx = "lorenz";
    if len == 0 {
        return Err(ReservoirError::invalid(ctx, "len must be at least 1"));
    }
    let params = [o.sigma, o.rho, o.beta, o.dt];
    if !params.iter().all(|p| p.is_finite()) || o.dt <= 0.0 {
        let msg = format!("[sigma, rho, beta, dt] must be finite with dt > 0, got {params:?}");
        return Err(ReservoirError::invalid(ctx, msg));
    }
    let mut state = match o.init {
        LorenzInit::Fixed(s) => s,
        LorenzInit::Random { seed } => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut uniform = |a: f64, b: f64| a + (b - a) * rng.random::<f64>();
            let x = uniform(-10.0, 10.0);
            let y = uniform(-10.0, 10.0);
            [x, y, uniform(0.0, 40.0)]
        }
    };
    if !state.iter().all(|v| v.is_finite()) {
        let msg = format!("initial state must be finite, got {state:?}");
        return Err(ReservoirError::invalid(ctx, msg));
    }

    let total = o
        .discard
        .checked_add(len)
        .ok_or_else(|| ReservoirError::invalid(ctx, "discard + len overflows usize"))?;
    // The trajectory, and the task's inputs and targets made from it.
    super::ensure_rows_fit("Lorenz", len, 9)?;
    let mut out = Array2::zeros((len, 3));
    for step in 0..total {
        if step >= o.discard {
            out.row_mut(step - o.discard)
                .assign(&Array1::from(state.to_vec()));
        }
        if step + 1 < total {
            state = rk4_step(state, o);
            if !state.iter().all(|v| v.is_finite()) {
                let msg = format!("state became non-finite after step {}; reduce dt", step + 1);
                return Err(ReservoirError::numerical(ctx, msg));
            }
        }
    }
    Ok(out)
}

/// The Lorenz vector field at `s = [x, y, z]`.
fn derivative(s: [f64; 3], o: &LorenzOptions) -> [f64; 3] {
    [
        o.sigma * (s[1] - s[0]),
        s[0] * (o.rho - s[2]) - s[1],
        s[0] * s[1] - o.beta * s[2],
    ]
}

/// One classical RK4 step of size `o.dt`.
fn rk4_step(s: [f64; 3], o: &LorenzOptions) -> [f64; 3] {
    let h = o.dt;
    let add =
        |a: [f64; 3], k: [f64; 3], c: f64| [a[0] + c * k[0], a[1] + c * k[1], a[2] + c * k[2]];
    let k1 = derivative(s, o);
    let k2 = derivative(add(s, k1, 0.5 * h), o);
    let k3 = derivative(add(s, k2, 0.5 * h), o);
    let k4 = derivative(add(s, k3, h), o);
    std::array::from_fn(|i| s[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]))
}

/// Column-wise standardisation of a `T × D` array: returns `(standardized, mean, std)` where
/// `standardized[t, j] = (data[t, j] − mean[j]) / std[j]`, `mean` is the column mean and `std` the
/// population standard deviation (ddof 0) over all rows. Undo with `x · std[j] + mean[j]`.
///
/// Errors: no rows, a non-finite value, or a constant column (named by index).
pub fn standardize(data: ArrayView2<'_, f64>) -> Result<(Array2<f64>, Array1<f64>, Array1<f64>)> {
    let ctx = "standardize";
    if data.nrows() == 0 {
        return Err(ReservoirError::invalid(ctx, "no rows"));
    }
    if let Some(((row, col), v)) = data.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(ReservoirError::invalid(
            ctx,
            format!("value at row {row}, column {col} is {v}"),
        ));
    }
    let n = data.nrows() as f64;
    let mean: Array1<f64> = data
        .axis_iter(Axis(1))
        .map(|c| c.iter().fold(0.0, |a, v| a + v) / n)
        .collect();
    let std: Array1<f64> = data
        .axis_iter(Axis(1))
        .zip(mean.iter())
        .map(|(c, m)| (c.iter().fold(0.0, |a, v| a + (v - m) * (v - m)) / n).sqrt())
        .collect();
    if let Some(j) = std.iter().position(|&s| s <= 0.0) {
        let msg = format!("column {j} is constant (standard deviation 0)");
        return Err(ReservoirError::invalid(ctx, msg));
    }
    let mut out = data.to_owned();
    for ((mut column, m), s) in out.axis_iter_mut(Axis(1)).zip(mean.iter()).zip(std.iter()) {
        column.mapv_inplace(|v| (v - m) / s);
    }
    Ok((out, mean, std))
}
