//! Recursive least squares (the FORCE learning rule) for streaming use.

use ndarray::{Array1, Array2, ArrayView1};

use super::linear::LinearReadout;
use crate::error::{ReservoirError, Result};

/// Online linear readout trained one sample at a time by recursive least squares with a
/// forgetting factor λ ∈ (0, 1] (1 = ordinary least squares, smaller = adapt faster).
///
/// P starts at I/δ; with λ = 1 the weights after n samples equal ridge regression with
/// penalty δ on all coefficients (the intercept included). Cost per update is O(F²).
#[derive(Debug, Clone)]
pub struct Rls {
    /// Weights of the augmented input [x, 1] ((F + 1) × M).
    weights: Array2<f64>,
    /// Inverse correlation matrix of [x, 1], kept exactly symmetric.
    p: Array2<f64>,
    forgetting: f64,
    augmented: Vec<f64>,
    p_z: Vec<f64>,
}

impl Rls {
    /// A zero readout for `n_features` inputs and `n_outputs` outputs.
    ///
    /// # Errors
    /// `forgetting` outside (0, 1] or `delta` not > 0.
    pub fn new(n_features: usize, n_outputs: usize, forgetting: f64, delta: f64) -> Result<Self> {
        if !(forgetting > 0.0 && forgetting <= 1.0) {
            return Err(ReservoirError::invalid(
                "RLS",
                format!("forgetting must be in (0, 1], got {forgetting}"),
            ));
        }
        if !(delta > 0.0 && delta.is_finite()) {
            return Err(ReservoirError::invalid(
                "RLS",
                format!("delta must be > 0, got {delta}"),
            ));
        }
        let dim = n_features + 1;
        Ok(Self {
            weights: Array2::zeros((dim, n_outputs)),
            p: Array2::eye(dim) / delta,
            forgetting,
            augmented: vec![1.0; dim],
            p_z: vec![0.0; dim],
        })
    }

    /// Current prediction for `state`.
    pub fn predict(&self, state: ArrayView1<f64>) -> Result<Array1<f64>> {
        let f = self.weights.nrows() - 1;
        if state.len() != f {
            return Err(ReservoirError::shape("RLS input", f, state.len()));
        }
        let linear = self.weights.slice(ndarray::s![..f, ..]).t().dot(&state);
        Ok(linear + self.weights.row(f))
    }

    /// Learns from one (state, target) pair; returns the error `target − prediction` made
    /// before the update.
    ///
    /// # Errors
    /// Shape errors, or non-finite values.
    pub fn update(
        &mut self,
        state: ArrayView1<f64>,
        target: ArrayView1<f64>,
    ) -> Result<Array1<f64>> {
        let f = self.weights.nrows() - 1;
        if state.len() != f || target.len() != self.weights.ncols() {
            return Err(ReservoirError::shape(
                "RLS update",
                format!("state {f}, target {}", self.weights.ncols()),
                format!("state {}, target {}", state.len(), target.len()),
            ));
        }
        if state.iter().chain(target.iter()).any(|v| !v.is_finite()) {
            return Err(ReservoirError::invalid(
                "RLS update",
                "state and target must be finite",
            ));
        }
        for (z, &s) in self.augmented.iter_mut().zip(state.iter()) {
            *z = s;
        }
        let z = &self.augmented;
        for (pz, row) in self.p_z.iter_mut().zip(self.p.rows()) {
            *pz = row.iter().zip(z).map(|(a, b)| a * b).sum();
        }
        let denom = self.forgetting + z.iter().zip(&self.p_z).map(|(a, b)| a * b).sum::<f64>();
        let error: Array1<f64> = &target - &self.weights.t().dot(&ArrayView1::from(z.as_slice()));
        let inv = 1.0 / denom;
        for (i, mut row) in self.weights.rows_mut().into_iter().enumerate() {
            let gain = self.p_z[i] * inv;
            row.scaled_add(gain, &error);
        }
        let inv_forgetting = 1.0 / self.forgetting;
        for (i, mut row) in self.p.rows_mut().into_iter().enumerate() {
            let pz_i = self.p_z[i];
            for (p, &pz_j) in row.iter_mut().zip(&self.p_z) {
                // (pz_i·pz_j) is commutative, so P stays exactly symmetric.
                *p = (*p - (pz_i * pz_j) * inv) * inv_forgetting;
            }
        }
        Ok(error)
    }

    /// The current weights as a [`LinearReadout`].
    ///
    /// # Errors
    /// An invalid-input error if the weights diverged to non-finite values.
    pub fn readout(&self) -> Result<LinearReadout> {
        let f = self.weights.nrows() - 1;
        let weights = self.weights.slice(ndarray::s![..f, ..]).to_owned();
        LinearReadout::new(weights, self.weights.row(f).to_owned())
    }
}
