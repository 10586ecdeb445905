//! Intrinsic plasticity of tanh echo-state units (Schrauwen, Wardermann, Verstraeten, Steil
//! and Stroobandt, "Improving reservoirs using intrinsic plasticity", Neurocomputing 71,
//! 2008): each unit's output `y = tanh(a·z + b)`, z its net input, gets a gain a and a bias b
//! adapted online so that its outputs follow a Gaussian N(μ, σ²):
//!
//! ```text
//! Δb = −η·(−μ/σ² + (y/σ²)·(2σ² + 1 − y² + μ·y))
//! Δa = η/a + Δb·z
//! ```
//!
//! The echo-state update is `x(t+1) = (1 − α)·x(t) + α·tanh(W·x(t) + W_in·u(t) + bias)`, so a
//! gain and a bias per unit are the same reservoir with the weights `W' = diag(a)·W`,
//! `W_in' = diag(a)·W_in`, `bias' = a⊙bias + b` ([`IntrinsicGains::apply`]): [`adapt`] returns
//! those weights, which any backend, on the CPU or a GPU, then runs unchanged.
//!
//! The adaptation runs in `f64` on the CPU, one step after another, every training sequence
//! from the zero state, in the order given, epoch after epoch: the same config, weights and
//! sequences give the same bits on every run. It runs without the config's noise (the
//! adapted weights scale the net input, not the noise the reservoir adds to it).

use ndarray::{Array1, ArrayView2};

use crate::checks::check_inputs;
use crate::config::{check, checked_options, Activation, ReservoirConfig};
use crate::error::{ConfigError, ReservoirError, Result};
use crate::memory::try_vec;
use crate::sparse::CsrMatrix;
use crate::weights::ReservoirWeights;

/// Most passes over the training sequences.
pub const MAX_EPOCHS: usize = 1_000_000;

checked_options! {
    /// Unchecked options of intrinsic plasticity ([`adapt`]).
    params PlasticityParams;
    /// Checked options of intrinsic plasticity (from [`PlasticityParams::check`]).
    checked PlasticityConfig = "PlasticityParams";
    /// Learning rate η, in (0, 1]; default 5e-4.
    learning_rate: f64 = 5e-4,
    /// Mean μ of the target output distribution, in (−1, 1) (tanh's range); default 0.
    mean: f64 = 0.0,
    /// Standard deviation σ of the target output distribution, in (0, 1]; default 0.2.
    std: f64 = 0.2,
    /// Passes over the training sequences, 1..=[`MAX_EPOCHS`]; default 1.
    epochs: usize = 1,
    /// Leading steps of each sequence run without adapting (the start from the zero state);
    /// default 0.
    warmup: usize = 0,
}

impl PlasticityParams {
    /// The checked options; the error names the first field that breaks its rule.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the field.
    pub fn check(self) -> std::result::Result<PlasticityConfig, ConfigError> {
        let eta = self.learning_rate;
        check(
            eta > 0.0 && eta <= 1.0,
            "learning_rate",
            "must be in (0, 1]",
            eta,
        )?;
        let mu = self.mean;
        check(mu > -1.0 && mu < 1.0, "mean", "must be in (-1, 1)", mu)?;
        let sigma = self.std;
        check(
            sigma > 0.0 && sigma <= 1.0,
            "std",
            "must be in (0, 1]",
            sigma,
        )?;
        check(
            (1..=MAX_EPOCHS).contains(&self.epochs),
            "epochs",
            &format!("must be in 1..={MAX_EPOCHS}"),
            self.epochs,
        )?;
        Ok(PlasticityConfig { params: self })
    }
}

/// The gain a and bias b of every unit learned by intrinsic plasticity ([`learn`]).
#[derive(Debug, Clone, PartialEq)]
pub struct IntrinsicGains {
    gain: Array1<f64>,
    bias: Array1<f64>,
}

impl IntrinsicGains {
    /// Gain a of each unit (1 before any learning).
    pub fn gain(&self) -> &Array1<f64> {
        &self.gain
    }

    /// Bias b of each unit, added after the gain (0 before any learning).
    pub fn bias(&self) -> &Array1<f64> {
        &self.bias
    }

    /// The weights of the same reservoir with these gains and biases folded in:
    /// `W' = diag(a)·W`, `W_in' = diag(a)·W_in`, `bias' = a⊙bias + b`.
    ///
    /// # Errors
    /// Weights of another size than the gains, or a folded weight that is not finite.
    pub fn apply(&self, weights: &ReservoirWeights) -> Result<ReservoirWeights> {
        let n = weights.size();
        if self.gain.len() != n {
            return Err(ReservoirError::shape(
                "intrinsic gains for these weights",
                n,
                self.gain.len(),
            ));
        }
        let w = weights.recurrent();
        let mut values = try_vec("the adapted recurrent weights", w.nnz(), 0.0)?;
        for (row, &a) in self.gain.iter().enumerate() {
            let range = w.row_ptr()[row] as usize..w.row_ptr()[row + 1] as usize;
            for (v, &w) in values[range.clone()].iter_mut().zip(&w.values()[range]) {
                *v = a * w;
            }
        }
        let recurrent =
            CsrMatrix::from_parts(n, n, w.row_ptr().to_vec(), w.col_idx().to_vec(), values)?;
        let mut input = weights.input().clone();
        for (mut row, &a) in input.rows_mut().into_iter().zip(&self.gain) {
            row.mapv_inplace(|w| a * w);
        }
        let bias = &self.gain * weights.bias() + &self.bias;
        ReservoirWeights::from_parts(recurrent, input, bias)
    }
}

/// Learns each unit's gain and bias by intrinsic plasticity over `sequences` (each T × K),
/// the reservoir of `config` and `weights` running in `f64` with the gains as they are
/// learned (see the module documentation).
///
/// # Errors
/// An activation other than tanh (a config error naming `activation`), weights that do not
/// fit `config`, a sequence of the wrong width or with a value that is not finite (checked
/// before any step), or a gain or bias that stops being finite (a learning rate too high).
pub fn learn(
    config: &ReservoirConfig,
    weights: &ReservoirWeights,
    plasticity: &PlasticityConfig,
    sequences: &[ArrayView2<f64>],
) -> Result<IntrinsicGains> {
    if config.activation() != Activation::Tanh {
        return Err(ConfigError::new(
            "activation",
            "must be tanh: intrinsic plasticity is derived for tanh units",
            format!("{:?}", config.activation()).to_lowercase(),
        )
        .into());
    }
    weights.check_fits(config)?;
    for inputs in sequences {
        check_inputs(config.input_size(), inputs)?;
    }
    if !sequences.is_empty() && sequences.iter().all(|u| u.nrows() <= plasticity.warmup()) {
        return Err(ConfigError::new(
            "model.plasticity.warmup",
            "leaves no step to adapt on: every training sequence is at most this long",
            plasticity.warmup(),
        )
        .into());
    }
    let n = config.size();
    let mut gain = try_vec("intrinsic gains", n, 1.0)?;
    let mut bias = try_vec("intrinsic biases", n, 0.0)?;
    let mut state = try_vec("the plasticity run's state", n, 0.0)?;
    let mut net = try_vec("the plasticity run's net inputs", n, 0.0)?;
    let (eta, mu) = (plasticity.learning_rate(), plasticity.mean());
    let var = plasticity.std() * plasticity.std();
    let alpha = config.leak_rate();
    let (w, w_in, w_bias) = (weights.recurrent(), weights.input(), weights.bias());
    for epoch in 0..plasticity.epochs() {
        for (index, inputs) in sequences.iter().enumerate() {
            state.fill(0.0);
            for (step, u) in inputs.rows().into_iter().enumerate() {
                w.mul_vec(&state, &mut net)?;
                let adapting = step >= plasticity.warmup();
                for (unit, z) in net.iter_mut().enumerate() {
                    *z += w_bias[unit] + w_in.row(unit).dot(&u);
                    let y = (gain[unit] * *z + bias[unit]).tanh();
                    if adapting {
                        let db =
                            -eta * (-mu / var + (y / var) * (2.0 * var + 1.0 - y * y + mu * y));
                        gain[unit] += eta / gain[unit] + db * *z;
                        bias[unit] += db;
                    }
                    state[unit] = (1.0 - alpha) * state[unit] + alpha * y;
                }
            }
            if let Some(unit) = (0..n).find(|&u| !gain[u].is_finite() || !bias[u].is_finite()) {
                return Err(ReservoirError::numerical(
                    "intrinsic plasticity",
                    format!(
                        "unit {unit}'s gain or bias stopped being finite in epoch {epoch}, \
                         sequence {index}: lower learning_rate"
                    ),
                ));
            }
        }
    }
    Ok(IntrinsicGains {
        gain: Array1::from(gain),
        bias: Array1::from(bias),
    })
}

/// The weights of the reservoir of `config` and `weights` after intrinsic plasticity over
/// `sequences`: [`learn`], then [`IntrinsicGains::apply`].
///
/// # Errors
/// As [`learn`] and [`IntrinsicGains::apply`].
pub fn adapt(
    config: &ReservoirConfig,
    weights: &ReservoirWeights,
    plasticity: &PlasticityConfig,
    sequences: &[ArrayView2<f64>],
) -> Result<ReservoirWeights> {
    learn(config, weights, plasticity, sequences)?.apply(weights)
}
