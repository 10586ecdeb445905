//! Metrics against hand-computed values and their defining identities.

use ndarray::{array, Array2};
use reservoir_core::metrics::{nrmse, nrmse_1d, nrmse_per_column, r2, r2_1d, rmse, rmse_1d};
use reservoir_core::ReservoirError;

/// Exact binary fractions keep every hand computation below exact in `f64`.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-14 * b.abs().max(1.0)
}

#[test]
fn hand_computed_single_column() {
    // target 1, 2, 3, 6: mean 3, deviations −2 −1 0 3, SS_tot = 14, population var 3.5.
    // pred   1, 2, 4, 4: errors 0 0 1 −2, SS_res = 5, MSE 1.25.
    let y = array![1.0, 2.0, 3.0, 6.0];
    let p = array![1.0, 2.0, 4.0, 4.0];
    assert!(close(rmse_1d(p.view(), y.view()).unwrap(), 1.25_f64.sqrt()));
    assert!(close(
        nrmse_1d(p.view(), y.view()).unwrap(),
        (1.25_f64 / 3.5).sqrt()
    ));
    assert!(close(r2_1d(p.view(), y.view()).unwrap(), 1.0 - 5.0 / 14.0));
}

#[test]
fn perfect_prediction() {
    let y = array![[0.5, -1.0], [1.5, 2.0], [-3.0, 0.25]];
    assert_eq!(nrmse(y.view(), y.view()).unwrap(), 0.0);
    assert_eq!(rmse(y.view(), y.view()).unwrap(), 0.0);
    assert_eq!(r2(y.view(), y.view()).unwrap(), 1.0);
}

#[test]
fn predicting_the_mean_gives_nrmse_one_and_r2_zero() {
    // Column means 3 and −0.5 are exact, so the prediction equals the library's mean bit for bit.
    let y = array![[1.0, -2.0], [2.0, 1.0], [3.0, 0.5], [6.0, -1.5]];
    let mut p = Array2::zeros(y.dim());
    p.column_mut(0).fill(3.0);
    p.column_mut(1).fill(-0.5);
    assert_eq!(nrmse(p.view(), y.view()).unwrap(), 1.0);
    assert_eq!(r2(p.view(), y.view()).unwrap(), 0.0);
    // Also with a mean that is not exact in binary: still exactly 1 if the same mean is used.
    let z = array![0.1, 0.2, 0.7];
    let m = (0.0 + 0.1 + 0.2 + 0.7) / 3.0;
    let q = array![m, m, m];
    assert_eq!(nrmse_1d(q.view(), z.view()).unwrap(), 1.0);
    assert_eq!(r2_1d(q.view(), z.view()).unwrap(), 0.0);
}

#[test]
fn multi_column_values_are_averaged_with_equal_weight() {
    // Column 0 as in `hand_computed_single_column`; column 1: target 0, 4 (mean 2, var 4,
    // SS_tot 8), pred 1, 4 → SS_res 1, MSE 0.5.
    let y = array![[1.0, 0.0], [2.0, 4.0], [3.0, 0.0], [6.0, 4.0]];
    let p = array![[1.0, 1.0], [2.0, 4.0], [4.0, 0.0], [4.0, 4.0]];
    let (n0, n1) = ((1.25_f64 / 3.5).sqrt(), (0.25_f64 / 4.0).sqrt());
    let per = nrmse_per_column(p.view(), y.view()).unwrap();
    assert!(close(per[0], n0) && close(per[1], n1), "{per}");
    assert!(close(nrmse(p.view(), y.view()).unwrap(), 0.5 * (n0 + n1)));
    let rm = 0.5 * (1.25_f64.sqrt() + 0.25_f64.sqrt());
    assert!(close(rmse(p.view(), y.view()).unwrap(), rm));
    let r = 0.5 * ((1.0 - 5.0 / 14.0) + (1.0 - 1.0 / 16.0));
    assert!(close(r2(p.view(), y.view()).unwrap(), r));
}

#[test]
fn nrmse_is_invariant_to_scaling_and_shifting_both() {
    let y = array![[0.3], [-1.2], [2.5], [0.9], [-0.4]];
    let p = array![[0.1], [-1.0], [2.0], [1.3], [-0.2]];
    let base = nrmse(p.view(), y.view()).unwrap();
    let (ys, ps) = (y.mapv(|v| 7.0 * v - 3.0), p.mapv(|v| 7.0 * v - 3.0));
    assert!((nrmse(ps.view(), ys.view()).unwrap() - base).abs() < 1e-13);
}

#[test]
fn zero_std_target_column_is_an_error_naming_the_column() {
    let y = array![[1.0, 0.1, 2.0], [2.0, 0.1, 3.0], [3.0, 0.1, 5.0]];
    let p = y.clone();
    for result in [nrmse(p.view(), y.view()), r2(p.view(), y.view())] {
        match result {
            Err(ReservoirError::InvalidInput { message, .. }) => {
                assert!(message.contains("column 1"), "{message}")
            }
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }
    // RMSE does not need the target's spread.
    assert_eq!(rmse(p.view(), y.view()).unwrap(), 0.0);
}

#[test]
fn shape_mismatch_is_a_shape_error() {
    let y = Array2::<f64>::ones((4, 2));
    for p in [Array2::<f64>::ones((3, 2)), Array2::<f64>::ones((4, 1))] {
        assert!(matches!(
            nrmse(p.view(), y.view()),
            Err(ReservoirError::Shape { .. })
        ));
        assert!(matches!(
            rmse(p.view(), y.view()),
            Err(ReservoirError::Shape { .. })
        ));
        assert!(matches!(
            r2(p.view(), y.view()),
            Err(ReservoirError::Shape { .. })
        ));
    }
    let (a, b) = (array![1.0, 2.0], array![1.0, 2.0, 3.0]);
    assert!(matches!(
        nrmse_1d(a.view(), b.view()),
        Err(ReservoirError::Shape { .. })
    ));
}

#[test]
fn empty_input_is_an_error() {
    for dim in [(0, 2), (3, 0), (0, 0)] {
        let e = Array2::<f64>::zeros(dim);
        assert!(matches!(
            nrmse(e.view(), e.view()),
            Err(ReservoirError::InvalidInput { .. })
        ));
        assert!(matches!(
            rmse(e.view(), e.view()),
            Err(ReservoirError::InvalidInput { .. })
        ));
        assert!(matches!(
            r2(e.view(), e.view()),
            Err(ReservoirError::InvalidInput { .. })
        ));
    }
}

#[test]
fn non_finite_values_are_errors_naming_where() {
    let y = array![[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]];
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut p = y.clone();
        p[[2, 1]] = bad;
        for result in [
            nrmse(p.view(), y.view()),
            rmse(p.view(), y.view()),
            r2(p.view(), y.view()),
        ] {
            match result {
                Err(ReservoirError::InvalidInput { message, .. }) => {
                    assert!(message.contains("prediction row 2, column 1"), "{message}")
                }
                other => panic!("expected InvalidInput, got {other:?}"),
            }
        }
        let mut t = y.clone();
        t[[0, 0]] = bad;
        let mut huge = y.clone();
        huge[[1, 0]] = 1e200;
        let message = rmse(huge.view(), y.view()).unwrap_err().to_string();
        assert!(
            message.contains("prediction row 1, column 0 is 1e200"),
            "{message}"
        );
        match nrmse(y.view(), t.view()) {
            Err(ReservoirError::InvalidInput { message, .. }) => {
                assert!(message.contains("target row 0, column 0"), "{message}")
            }
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }
}
