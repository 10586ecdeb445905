//! The reservoir model space of one sequence: a ridge model of its state dynamics, whose
//! weights and biases stand for the sequence (Bianchi et al., IEEE TNNLS 2020).

use faer::linalg::solvers::Solve;
use faer::{Mat, Side};
use ndarray::{s, ArrayView2, ArrayViewMut1, Axis};

use crate::error::{ReservoirError, Result};

/// Writes into `out` (d² + d values) the weights (d × d, row-major: input state × next state)
/// and biases (d) of the ridge model, of strength `ridge` (the biases not penalized),
/// predicting each row of `states` (R × d, R ≥ 2) from the row before: on the centred rows,
/// W = (XᵀX + ridge·I)⁻¹·XᵀY by Cholesky, b = ȳ − x̄·W. Small and called once per sequence,
/// so it allocates only its d × d systems.
///
/// # Errors
/// Fewer than two states, `out` of another length, or a system that is not positive
/// definite (a ridge too small for states this degenerate).
pub(super) fn write(
    states: ArrayView2<f64>,
    ridge: f64,
    mut out: ArrayViewMut1<f64>,
) -> Result<()> {
    let (rows, d) = states.dim();
    if rows < 2 {
        return Err(ReservoirError::invalid(
            "model space",
            format!("needs at least 2 states, got {rows}"),
        ));
    }
    if out.len() != d * d + d {
        return Err(ReservoirError::shape("model space", d * d + d, out.len()));
    }
    let (x, y) = (states.slice(s![..rows - 1, ..]), states.slice(s![1.., ..]));
    let (Some(x_mean), Some(y_mean)) = (x.mean_axis(Axis(0)), y.mean_axis(Axis(0))) else {
        return Err(ReservoirError::invalid("model space", "no state pairs"));
    };
    let (xc, yc) = (&x - &x_mean, &y - &y_mean);
    let gram = xc.t().dot(&xc);
    let cross = xc.t().dot(&yc);
    let system = Mat::from_fn(d, d, |i, j| gram[[i, j]] + if i == j { ridge } else { 0.0 });
    let mut weights = Mat::from_fn(d, d, |i, j| cross[[i, j]]);
    let llt = system.llt(Side::Lower).map_err(|_| {
        ReservoirError::invalid(
            "model space",
            format!("the state model's system is not positive definite (model_ridge {ridge})"),
        )
    })?;
    llt.solve_in_place(weights.as_mut());
    for i in 0..d {
        for j in 0..d {
            out[i * d + j] = weights[(i, j)];
        }
    }
    for j in 0..d {
        let shift: f64 = (0..d).map(|i| x_mean[i] * weights[(i, j)]).sum();
        out[d * d + j] = y_mean[j] - shift;
    }
    if out.iter().any(|v| !v.is_finite()) {
        return Err(ReservoirError::invalid(
            "model space",
            "the state model is not finite",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array2};

    #[test]
    fn a_linear_system_is_recovered_by_its_model() {
        // x(t+1) = A x(t) + c, exactly; a tiny ridge recovers A and c.
        let a = ndarray::array![[0.5, -0.3], [0.2, 0.8]];
        let c = ndarray::array![0.1, -0.2];
        let mut states = Array2::zeros((40, 2));
        states.row_mut(0).assign(&ndarray::array![1.0, -1.0]);
        for t in 1..40 {
            let next = a.dot(&states.row(t - 1)) + &c;
            states.row_mut(t).assign(&next);
            // Keep it excited: a kick every few steps.
            if t % 7 == 0 {
                states[[t, 0]] += 1.0;
            }
        }
        // Rows after a kick break the exact relation: fit on the clean stretch only.
        let clean = states.slice(s![7..14, ..]);
        let mut out = Array1::zeros(6);
        write(clean, 1e-10, out.view_mut()).expect("model");
        // weights[i][j]: input state i → next state j, i.e. Aᵀ.
        let expected = [0.5, 0.2, -0.3, 0.8, 0.1, -0.2];
        for (got, want) in out.iter().zip(expected) {
            assert!((got - want).abs() < 1e-4, "{out} against {expected:?}");
        }
        assert!(write(states.slice(s![..1, ..]), 1.0, out.view_mut()).is_err());
        assert!(write(clean, 1.0, Array1::zeros(5).view_mut()).is_err());
    }
}
