//! Scoring a readout: NRMSE, RMSE and R², in `f64`.
//!
//! Predictions and targets are `rows × outputs` matrices of equal shape; every metric is computed
//! per output column over all rows passed in (the *scored rows*) and then averaged over the columns
//! with equal weight. Slice the rows you want scored (for example the test set after a washout)
//! before calling. The `*_1d` wrappers treat a vector as one output column.
//!
//! Definitions, for one column with targets `y_t`, predictions `ŷ_t`, `t = 1..T`, mean `ȳ`:
//!
//! - `RMSE = sqrt( Σ_t (ŷ_t − y_t)² / T )`
//! - **NRMSE** = RMSE / std(target) over the scored rows (population std, ddof 0), averaged over
//!   output columns: Jaeger's definition, so `std = sqrt( Σ_t (y_t − ȳ)² / T )`. This is *not* ReservoirPy's `nrmse`, which divides by the
//!   range by default (or by the variance with its `"var"` option).
//! - `R² = 1 − SS_res / SS_tot` with `SS_res = Σ_t (ŷ_t − y_t)²`, `SS_tot = Σ_t (y_t − ȳ)²`.
//!
//! Sums run over the rows in order. Predicting the column mean gives NRMSE exactly 1 and R²
//! exactly 0 (the two sums are then the same floating-point operations); a perfect prediction
//! gives NRMSE 0 and R² 1.
//!
//! Errors: a shape mismatch ([`ReservoirError::Shape`]), no rows or no columns, a value that is
//! NaN, infinite or beyond ±[`MAX_TARGET`](crate::checks::MAX_TARGET) (naming the array, row and
//! column: larger values would overflow the sums of squares), or — for NRMSE and R² — a target column that is
//! constant, so its standard deviation is zero (naming the column index) are all
//! [`ReservoirError::InvalidInput`] unless stated otherwise.

use ndarray::{Array1, ArrayView1, ArrayView2, Axis};

use crate::checks::check_targets;
use crate::error::{ReservoirError, Result};

/// Normalised root-mean-square error, averaged over output columns: per column
/// `RMSE / std(target)` with the population standard deviation (ddof 0) of the target over the
/// scored rows.
///
/// A constant target column is an error naming its index, since the ratio is undefined.
pub fn nrmse(pred: ArrayView2<'_, f64>, target: ArrayView2<'_, f64>) -> Result<f64> {
    Ok(mean_of(&nrmse_per_column(pred, target)?))
}

/// [`nrmse`] for each output column separately (not averaged); length = number of columns.
pub fn nrmse_per_column(
    pred: ArrayView2<'_, f64>,
    target: ArrayView2<'_, f64>,
) -> Result<Array1<f64>> {
    check("nrmse", pred, target)?;
    let mut out = Array1::zeros(target.ncols());
    for (j, value) in out.iter_mut().enumerate() {
        let (p, y) = (pred.column(j), target.column(j));
        let ss_tot = total_sum_of_squares("nrmse", y, j)?;
        // RMSE / std = sqrt(SS_res / T) / sqrt(SS_tot / T) = sqrt(SS_res / SS_tot); computing it
        // as the quotient of the two square roots keeps "predict the mean ⇒ exactly 1".
        let n = y.len() as f64;
        *value = finite(
            "nrmse",
            j,
            (residual_sum_of_squares(p, y) / n).sqrt() / (ss_tot / n).sqrt(),
        )?;
    }
    Ok(out)
}

/// Root-mean-square error per output column, averaged over columns.
pub fn rmse(pred: ArrayView2<'_, f64>, target: ArrayView2<'_, f64>) -> Result<f64> {
    check("rmse", pred, target)?;
    let n = target.nrows() as f64;
    let per_column = (0..target.ncols())
        .map(|j| {
            let rss = residual_sum_of_squares(pred.column(j), target.column(j));
            finite("rmse", j, (rss / n).sqrt())
        })
        .collect::<Result<Array1<f64>>>()?;
    Ok(mean_of(&per_column))
}

/// Coefficient of determination `1 − SS_res / SS_tot` per output column, averaged over columns.
///
/// A constant target column (`SS_tot = 0`) is an error naming its index.
pub fn r2(pred: ArrayView2<'_, f64>, target: ArrayView2<'_, f64>) -> Result<f64> {
    check("r2", pred, target)?;
    let mut per_column = Array1::zeros(target.ncols());
    for (j, value) in per_column.iter_mut().enumerate() {
        let (p, y) = (pred.column(j), target.column(j));
        let ss_tot = total_sum_of_squares("r2", y, j)?;
        *value = finite("r2", j, 1.0 - residual_sum_of_squares(p, y) / ss_tot)?;
    }
    Ok(mean_of(&per_column))
}

/// [`nrmse`] of a single output given as vectors.
pub fn nrmse_1d(pred: ArrayView1<'_, f64>, target: ArrayView1<'_, f64>) -> Result<f64> {
    nrmse(pred.insert_axis(Axis(1)), target.insert_axis(Axis(1)))
}

/// [`rmse`] of a single output given as vectors.
pub fn rmse_1d(pred: ArrayView1<'_, f64>, target: ArrayView1<'_, f64>) -> Result<f64> {
    rmse(pred.insert_axis(Axis(1)), target.insert_axis(Axis(1)))
}

/// [`r2`] of a single output given as vectors.
pub fn r2_1d(pred: ArrayView1<'_, f64>, target: ArrayView1<'_, f64>) -> Result<f64> {
    r2(pred.insert_axis(Axis(1)), target.insert_axis(Axis(1)))
}

/// Equal shapes, at least one row and one column, every value finite and within
/// ±[`MAX_TARGET`](crate::checks::MAX_TARGET).
fn check(context: &str, pred: ArrayView2<'_, f64>, target: ArrayView2<'_, f64>) -> Result<()> {
    if pred.dim() != target.dim() {
        return Err(ReservoirError::shape(
            &format!("{context} (predictions vs targets)"),
            format!("{} x {}", target.nrows(), target.ncols()),
            format!("{} x {}", pred.nrows(), pred.ncols()),
        ));
    }
    if target.nrows() == 0 || target.ncols() == 0 {
        return Err(ReservoirError::invalid(
            context,
            format!(
                "nothing to score: {} rows x {} columns",
                target.nrows(),
                target.ncols()
            ),
        ));
    }
    check_targets(context, "target", &target)?;
    check_targets(context, "prediction", &pred)?;
    Ok(())
}

/// `Σ_t (ŷ_t − y_t)²`, summed over rows in order.
fn residual_sum_of_squares(pred: ArrayView1<'_, f64>, target: ArrayView1<'_, f64>) -> f64 {
    pred.iter()
        .zip(target.iter())
        .fold(0.0, |acc, (p, y)| acc + (p - y) * (p - y))
}

/// `Σ_t (y_t − ȳ)²` with `ȳ = (Σ_t y_t) / T`, both summed over rows in order; an error naming
/// `column` if the column is constant (zero standard deviation).
fn total_sum_of_squares(context: &str, target: ArrayView1<'_, f64>, column: usize) -> Result<f64> {
    let first = target.first().copied().unwrap_or(0.0);
    let mean = target.iter().fold(0.0, |acc, y| acc + y) / target.len() as f64;
    let ss_tot = target
        .iter()
        .fold(0.0, |acc, y| acc + (y - mean) * (y - mean));
    if target.iter().all(|&y| y == first) || ss_tot <= 0.0 {
        return Err(ReservoirError::invalid(
            context,
            format!(
                "target column {column} is constant (standard deviation 0); the metric is undefined"
            ),
        ));
    }
    finite(context, column, ss_tot)
}

/// `value`, or an error when the sums behind it overflowed f64 (possible only with values near
/// [`MAX_TARGET`](crate::checks::MAX_TARGET) over very many rows): a metric must not report an
/// overflow as a score.
fn finite(context: &str, column: usize, value: f64) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(ReservoirError::numerical(
            context,
            format!("column {column}: the sums of squares overflow f64"),
        ))
    }
}

fn mean_of(values: &Array1<f64>) -> f64 {
    values.iter().fold(0.0, |acc, v| acc + v) / values.len() as f64
}
