//! Population coding with Gaussian receptive fields (after Norse `population_encode`).

use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, Axis};

use super::{bernoulli_rows, check, check_finite_1d, check_finite_2d, check_steps};
use super::{rate_probability, STREAM_POPULATION};
use crate::config::checked_options;
use crate::error::{ConfigError, ReservoirError, Result};
use crate::random::counter::stream_key;

checked_options! {
    /// Unchecked options of [`population`] and [`population_activations`].
    params PopulationParams;
    /// Checked options of [`population`] and [`population_activations`] (from
    /// [`PopulationParams::check`]).
    checked PopulationOptions = "PopulationParams";
    /// M, receptive fields per input feature, ≥ 1; default 10.
    neurons_per_feature: usize = 10,
    /// Centre of the first field, finite; default 0.
    min: f64 = 0.0,
    /// Centre of the last field, finite and > `min`; default 1.
    max: f64 = 1.0,
    /// σ of every field, finite and > 0; default `None`: the spacing of the centres
    /// (`(max − min) / (M − 1)`, or `max − min` when M = 1).
    sigma: Option<f64> = None,
    /// Output steps of [`population`], ≥ 1; default 1.
    steps: usize = 1,
    /// Spike probability per step of a field at activation 1, in [0, 1]; default 1.
    max_probability: f64 = 1.0,
}

impl PopulationParams {
    /// The checked options; the error names the first field that breaks its rule.
    pub fn check(self) -> Result<PopulationOptions, ConfigError> {
        let m = self.neurons_per_feature;
        check(m >= 1, "neurons_per_feature", "must be >= 1", m)?;
        check(self.min.is_finite(), "min", "must be finite", self.min)?;
        check(self.max.is_finite(), "max", "must be finite", self.max)?;
        check(self.max > self.min, "max", "must be > min", self.max)?;
        check(
            (self.max - self.min).is_finite(),
            "max",
            "max − min must be finite",
            self.max,
        )?;
        if let Some(sigma) = self.sigma {
            check(
                sigma.is_finite() && sigma > 0.0,
                "sigma",
                "must be finite and > 0",
                sigma,
            )?;
        }
        check_steps(self.steps)?;
        let p = self.max_probability;
        check(
            (0.0..=1.0).contains(&p),
            "max_probability",
            "must be in [0, 1]",
            p,
        )?;
        Ok(PopulationOptions { params: self })
    }
}

impl PopulationOptions {
    /// The M centres, `linspace(min, max, M)` evaluated like `torch.linspace`: with
    /// `h = (max − min) / (M − 1)`, `c_j = min + j·h` for `j < M/2` and `c_j = max − (M − 1 − j)·h`
    /// otherwise (so both ends are exact); `[min]` when M = 1.
    pub fn centres(&self) -> Array1<f64> {
        let PopulationParams { min, max, .. } = self.params;
        let m = self.neurons_per_feature();
        if m == 1 {
            return Array1::from_elem(1, min);
        }
        let h = (max - min) / (m - 1) as f64;
        Array1::from_shape_fn(m, |j| {
            if j < m / 2 {
                min + j as f64 * h
            } else {
                max - (m - 1 - j) as f64 * h
            }
        })
    }

    /// σ: `sigma` if set, else the centre spacing `(max − min) / max(M − 1, 1)`.
    pub fn sigma_or_spacing(&self) -> f64 {
        let gaps = self.neurons_per_feature().saturating_sub(1).max(1);
        self.sigma()
            .unwrap_or((self.max() - self.min()) / gaps as f64)
    }
}

/// Receptive-field activations (K × M): `a[[i, j]] = exp(−(x[i] − c_j)² / (2σ²))` with the
/// centres `c_j` of [`PopulationOptions::centres`] and σ of
/// [`PopulationOptions::sigma_or_spacing`]. Inputs outside `[min, max]` are allowed.
///
/// # Errors
/// A non-finite `x[i]` (naming `i`).
pub fn population_activations(
    x: ArrayView1<f64>,
    options: PopulationOptions,
) -> Result<Array2<f64>> {
    check_finite_1d("population encoder", x)?;
    let flat = activations_2d(x.insert_axis(Axis(0)), options);
    let shape = (x.len(), options.neurons_per_feature());
    flat.into_shape_with_order(shape)
        .map_err(|e| ReservoirError::shape("population activations", format!("{shape:?}"), e))
}

/// Rows of `x` (R × K) → activations R × (K·M), feature-major (column `i·M + j`).
fn activations_2d(x: ArrayView2<f64>, options: PopulationOptions) -> Array2<f64> {
    let centres = options.centres();
    let sigma = options.sigma_or_spacing();
    let two_var = 2.0 * sigma * sigma;
    let m = centres.len();
    let (rows, k) = x.dim();
    Array2::from_shape_fn((rows, k * m), |(r, col)| {
        let d = x[[r, col / m]] - centres[col % m];
        (-(d * d) / two_var).exp()
    })
}

/// Population code: `steps` × (K·M) spikes, feature-major (column `i·M + j` is field `j` of
/// feature `i`). With `a` = [`population_activations`] flattened row-major and
/// `p_c = rate_probability(a_c, max_probability as f32, 0)` (the same `f32` arithmetic as
/// [`rate`](super::rate)), `out[[t, c]] = 1.0` iff
/// `uniform_f32(seed, STREAM_POPULATION, t·K·M + c) < p_c`. The field whose centre is nearest
/// `x[i]` has the highest probability.
///
/// # Errors
/// As [`population_activations`].
pub fn population(
    x: ArrayView1<f64>,
    options: PopulationOptions,
    seed: u64,
) -> Result<Array2<f64>> {
    check_finite_1d("population encoder", x)?;
    population_rows(x.insert_axis(Axis(0)), options.steps(), options, seed)
}

/// Each row `r` of `x` held for `repeat` steps; output row `t = r·repeat + s` uses counters
/// `t·K·M + c`.
pub(crate) fn population_rows(
    x: ArrayView2<f64>,
    repeat: usize,
    options: PopulationOptions,
    seed: u64,
) -> Result<Array2<f64>> {
    check_finite_2d("population encoder", x)?;
    let activations = activations_2d(x, options);
    let key = stream_key(seed, STREAM_POPULATION);
    let scale = options.max_probability() as f32;
    let mut out = Array2::zeros((x.nrows() * repeat, activations.ncols()));
    for (r, row) in activations.rows().into_iter().enumerate() {
        let p: Vec<f32> = row
            .iter()
            .map(|&a| rate_probability(a, scale, 0.0))
            .collect();
        let first = r * repeat;
        bernoulli_rows(
            out.slice_mut(s![first..first + repeat, ..]),
            &p,
            key,
            first as u64,
        );
    }
    Ok(out)
}
