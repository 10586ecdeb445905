//! The linear readout `y = W_outᵀ·x + c`.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};

use crate::error::{ReservoirError, Result};

/// Output weights (features × outputs) and an intercept per output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LinearParts")]
pub struct LinearReadout {
    weights: Array2<f64>,
    intercept: Array1<f64>,
}

#[derive(Deserialize)]
struct LinearParts {
    weights: Array2<f64>,
    intercept: Array1<f64>,
}

impl TryFrom<LinearParts> for LinearReadout {
    type Error = ReservoirError;
    fn try_from(p: LinearParts) -> Result<Self> {
        Self::new(p.weights, p.intercept)
    }
}

impl LinearReadout {
    /// Wraps weights (features × outputs) and an intercept (outputs).
    ///
    /// # Errors
    /// A shape error when the intercept length differs from the number of outputs, or an
    /// invalid-input error for non-finite values.
    pub fn new(weights: Array2<f64>, intercept: Array1<f64>) -> Result<Self> {
        if intercept.len() != weights.ncols() {
            return Err(ReservoirError::shape(
                "readout intercept",
                weights.ncols(),
                intercept.len(),
            ));
        }
        if weights
            .iter()
            .chain(intercept.iter())
            .any(|v| !v.is_finite())
        {
            return Err(ReservoirError::invalid("readout", "weights must be finite"));
        }
        Ok(Self { weights, intercept })
    }

    /// Number of input features (reservoir units).
    pub fn n_features(&self) -> usize {
        self.weights.nrows()
    }

    /// Number of outputs.
    pub fn n_outputs(&self) -> usize {
        self.weights.ncols()
    }

    /// Output weights (features × outputs).
    pub fn weights(&self) -> &Array2<f64> {
        &self.weights
    }

    /// Intercept (outputs).
    pub fn intercept(&self) -> &Array1<f64> {
        &self.intercept
    }

    /// Predictions (rows × outputs) for states (rows × features).
    ///
    /// # Errors
    /// A shape error, or a numerical error naming the first prediction that overflows.
    pub fn predict(&self, states: ArrayView2<f64>) -> Result<Array2<f64>> {
        if states.ncols() != self.n_features() {
            return Err(ReservoirError::shape(
                "readout input",
                format!("{} columns", self.n_features()),
                format!("{} columns", states.ncols()),
            ));
        }
        finite_predictions(states.dot(&self.weights) + &self.intercept)
    }

    /// Prediction for one state.
    pub fn predict_one(&self, state: ArrayView1<f64>) -> Result<Array1<f64>> {
        if state.len() != self.n_features() {
            return Err(ReservoirError::shape(
                "readout input",
                self.n_features(),
                state.len(),
            ));
        }
        let prediction = self.weights.t().dot(&state) + &self.intercept;
        match prediction.iter().position(|v| !v.is_finite()) {
            Some(k) => Err(overflow(0, k)),
            None => Ok(prediction),
        }
    }
}

/// `predictions`, or an error naming the first that is not finite: finite weights on finite
/// states can still overflow f64, and an infinite prediction must not pass as a result.
fn finite_predictions(predictions: Array2<f64>) -> Result<Array2<f64>> {
    match predictions.indexed_iter().find(|(_, v)| !v.is_finite()) {
        Some(((row, k), _)) => Err(overflow(row, k)),
        None => Ok(predictions),
    }
}

fn overflow(row: usize, output: usize) -> ReservoirError {
    ReservoirError::numerical(
        "readout",
        format!("prediction row {row}, output {output} overflows f64 (the readout's weights are too large for these states)"),
    )
}
