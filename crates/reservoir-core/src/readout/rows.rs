//! Ridge regression on rows held in memory, in whichever form is the smaller system: the
//! normal equations (features × features) when there are at least as many rows as features,
//! else the dual form (rows × rows). A classifier on segment features has thousands of
//! features and a few hundred samples, where the dual form is orders of magnitude cheaper.

use faer::linalg::solvers::Solve;
use faer::{Mat, Side};
use ndarray::{Array1, Array2, ArrayView2, Axis};

use super::linear::LinearReadout;
use super::ridge::RidgeAccumulator;
use crate::checks::{check_finite_states, check_targets};
use crate::error::{ReservoirError, Result};
use crate::par::Par;

/// The ridge readout of `targets` (n × m) on `features` (n × f) with penalty `ridge` on the
/// weights and an unpenalised intercept: the same solution as [`RidgeAccumulator::solve`] on
/// the same rows, to rounding.
///
/// With fewer rows than features and `ridge > 0` it solves the dual form: with X and Y centred
/// on their column means, W = Xᵀ(XXᵀ + λI)⁻¹Y and the intercept ȳ − x̄ᵀW (centring is what
/// leaves the intercept unpenalised). Otherwise it accumulates the normal equations on the
/// threads of `par`.
///
/// # Errors
/// Mismatched row counts, no rows, a non-finite value, a negative or non-finite `ridge`, or
/// a system that is not positive definite.
pub fn ridge_from_rows(
    features: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    ridge: f64,
    par: Par,
) -> Result<LinearReadout> {
    let (n, f) = features.dim();
    let m = targets.ncols();
    if targets.nrows() != n {
        return Err(ReservoirError::shape(
            "ridge targets",
            format!("{n} rows"),
            format!("{} rows", targets.nrows()),
        ));
    }
    if n >= f || !(ridge > 0.0 && ridge.is_finite()) {
        let mut acc = RidgeAccumulator::new(f, m, par)?;
        acc.add(features, targets)?;
        return Ok(acc.solve(ridge)?.readout);
    }
    check_finite_states("ridge solve", &features)?;
    check_targets("ridge solve", "targets", &targets)?;
    let (feature_means, target_means) =
        match (features.mean_axis(Axis(0)), targets.mean_axis(Axis(0))) {
            (Some(x), Some(y)) => (x, y),
            _ => {
                return Err(ReservoirError::invalid(
                    "ridge solve",
                    "no rows to fit the readout on",
                ))
            }
        };
    let centred_x = &features - &feature_means;
    let centred_y = &targets - &target_means;
    let kernel = centred_x.dot(&centred_x.t());
    let system = Mat::<f64>::from_fn(n, n, |i, j| {
        kernel[(i, j)] + if i == j { ridge } else { 0.0 }
    });
    let llt = system.llt(Side::Lower).map_err(|_| {
        ReservoirError::numerical(
            "ridge solve",
            format!("the dual system is not positive definite with ridge = {ridge}; increase readout.ridge"),
        )
    })?;
    let mut alpha = Mat::<f64>::from_fn(n, m, |i, k| centred_y[(i, k)]);
    llt.solve_in_place(alpha.as_mut());
    let alpha = Array2::from_shape_fn((n, m), |(i, k)| alpha[(i, k)]);
    let weights = centred_x.t().dot(&alpha);
    let intercept: Array1<f64> = &target_means - &feature_means.dot(&weights);
    LinearReadout::new(weights, intercept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random(rows: usize, cols: usize, rng: &mut ChaCha8Rng) -> Array2<f64> {
        Array2::from_shape_fn((rows, cols), |_| rng.random_range(-1.0..1.0))
    }

    fn primal(x: &Array2<f64>, y: &Array2<f64>, ridge: f64) -> LinearReadout {
        let mut acc = RidgeAccumulator::new(x.ncols(), y.ncols(), Par::Seq).expect("sums");
        acc.add(x.view(), y.view()).expect("add");
        acc.solve(ridge).expect("solve").readout
    }

    #[test]
    fn the_dual_form_gives_the_primal_solution() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (x, y) = (random(40, 150, &mut rng), random(40, 4, &mut rng) + 2.0);
        for ridge in [1e-6, 1e-2, 10.0] {
            let dual = ridge_from_rows(x.view(), y.view(), ridge, Par::all()).expect("dual");
            let expected = primal(&x, &y, ridge);
            let scale = expected
                .weights()
                .iter()
                .fold(0.0f64, |a, &w| a.max(w.abs()));
            for (a, b) in dual.weights().iter().zip(expected.weights()) {
                assert!(
                    (a - b).abs() <= 1e-7 * scale.max(1.0),
                    "ridge {ridge}: {a} vs {b}"
                );
            }
            for (a, b) in dual.intercept().iter().zip(expected.intercept()) {
                assert!(
                    (a - b).abs() <= 1e-7 * b.abs().max(1.0),
                    "ridge {ridge}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn more_rows_than_features_is_the_primal_solve() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let (x, y) = (random(60, 10, &mut rng), random(60, 2, &mut rng));
        let got = ridge_from_rows(x.view(), y.view(), 1e-3, Par::all()).expect("fit");
        assert_eq!(got, primal(&x, &y, 1e-3));
    }

    #[test]
    fn bad_rows_are_errors() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut x = random(5, 20, &mut rng);
        let y = random(5, 2, &mut rng);
        assert!(ridge_from_rows(x.view(), y.slice(ndarray::s![..4, ..]), 1.0, Par::Seq).is_err());
        x[(2, 3)] = f64::NAN;
        assert!(ridge_from_rows(x.view(), y.view(), 1.0, Par::Seq).is_err());
        assert!(ridge_from_rows(x.view(), y.view(), -1.0, Par::Seq).is_err());
    }
}
