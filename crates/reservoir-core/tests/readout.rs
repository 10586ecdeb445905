//! Ridge (batch, streamed) and RLS readouts against a direct dense solution.

use ndarray::{s, Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::fit::{accumulate_run, fit_ridge};
use reservoir_core::readout::{RidgeAccumulator, Rls};
use reservoir_core::{
    cpu_reservoir, ReadoutParams, ReservoirConfig, ReservoirParams, ReservoirWeights,
};

fn random(rows: usize, cols: usize, seed: u64) -> Array2<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((rows, cols), |_| rng.random_range(-1.0..1.0))
}

/// The CPU reservoir of `config` on its generated weights.
fn reservoir(config: &ReservoirConfig) -> Box<dyn reservoir_core::Reservoir> {
    let (weights, _) = ReservoirWeights::generate(config).unwrap();
    cpu_reservoir(config, weights, reservoir_core::Par::all()).unwrap()
}

/// Solves the augmented normal equations by Gaussian elimination with partial pivoting.
fn direct_ridge(x: &Array2<f64>, y: &Array2<f64>, ridge: f64) -> (Array2<f64>, Array1<f64>) {
    let (n, f) = x.dim();
    let mut z = Array2::ones((n, f + 1));
    z.slice_mut(s![.., ..f]).assign(x);
    let mut a = z.t().dot(&z);
    for i in 0..f {
        a[(i, i)] += ridge;
    }
    let mut b = z.t().dot(y);
    let d = f + 1;
    for col in 0..d {
        let piv = (col..d)
            .max_by(|&i, &j| a[(i, col)].abs().total_cmp(&a[(j, col)].abs()))
            .unwrap();
        for k in 0..d {
            a.swap((col, k), (piv, k));
        }
        for k in 0..b.ncols() {
            b.swap((col, k), (piv, k));
        }
        for row in 0..d {
            if row != col {
                let factor = a[(row, col)] / a[(col, col)];
                for k in 0..d {
                    a[(row, k)] -= factor * a[(col, k)];
                }
                for k in 0..b.ncols() {
                    b[(row, k)] -= factor * b[(col, k)];
                }
            }
        }
    }
    for row in 0..d {
        let pivot = a[(row, row)];
        b.row_mut(row).mapv_inplace(|v| v / pivot);
    }
    (b.slice(s![..f, ..]).to_owned(), b.row(f).to_owned())
}

#[test]
fn ridge_matches_a_direct_solve_and_does_not_penalise_the_intercept() {
    let x = random(400, 12, 1);
    let true_w = random(12, 3, 2);
    let y = x.dot(&true_w) + 5.0 + random(400, 3, 3) * 0.01;
    for ridge in [0.0, 1e-3, 10.0] {
        let mut acc = RidgeAccumulator::new(12, 3, reservoir_core::Par::Seq).unwrap();
        acc.add(x.view(), y.view()).unwrap();
        let fit = acc.solve(ridge).unwrap();
        let (w, c) = direct_ridge(&x, &y, ridge);
        let dw = (fit.readout.weights() - &w)
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let dc = (fit.readout.intercept() - &c)
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(
            dw < 1e-9 && dc < 1e-9,
            "ridge {ridge}: weights off by {dw}, intercept by {dc}"
        );
    }
    // A huge ridge shrinks the weights to zero but the intercept still fits the mean.
    let mut acc = RidgeAccumulator::new(12, 3, reservoir_core::Par::Seq).unwrap();
    acc.add(x.view(), y.view()).unwrap();
    let fit = acc.solve(1e12).unwrap();
    let mean = y.mean_axis(ndarray::Axis(0)).unwrap();
    assert!((fit.readout.intercept() - &mean)
        .iter()
        .all(|d| d.abs() < 1e-6));
}

#[test]
fn chunked_and_merged_accumulation_equal_one_batch_and_train_nrmse_is_exact() {
    let x = random(1000, 20, 4);
    let y = x.dot(&random(20, 2, 5)).mapv(f64::sin);
    let mut whole = RidgeAccumulator::new(20, 2, reservoir_core::Par::all()).unwrap();
    whole.add(x.view(), y.view()).unwrap();
    let (mut first, mut second) = (
        RidgeAccumulator::new(20, 2, reservoir_core::Par::Seq).unwrap(),
        RidgeAccumulator::new(20, 2, reservoir_core::Par::Seq).unwrap(),
    );
    for start in (0..600).step_by(77) {
        let end = (start + 77).min(600);
        first
            .add(x.slice(s![start..end, ..]), y.slice(s![start..end, ..]))
            .unwrap();
    }
    second
        .add(x.slice(s![600.., ..]), y.slice(s![600.., ..]))
        .unwrap();
    first.merge(&second).unwrap();
    let (a, b) = (whole.solve(1e-6).unwrap(), first.solve(1e-6).unwrap());
    assert_eq!(a.rows, 1000);
    assert!((a.readout.weights() - b.readout.weights())
        .iter()
        .all(|d| d.abs() < 1e-9));
    let pred = a.readout.predict(x.view()).unwrap();
    let direct = reservoir_core::metrics::nrmse(pred.view(), y.view()).unwrap();
    assert!(
        (a.train_nrmse - direct).abs() < 1e-9 * direct.max(1e-3),
        "{} vs {direct}",
        a.train_nrmse
    );
}

#[test]
fn held_out_nrmse_from_sums_equals_scoring_the_predictions_and_sums_round_trip() {
    let x = random(900, 15, 7);
    let y = x.dot(&random(15, 2, 8)).mapv(f64::tanh) + random(900, 2, 9) * 0.05;
    let mut train = RidgeAccumulator::new(15, 2, reservoir_core::Par::Seq).unwrap();
    train
        .add(x.slice(s![..600, ..]), y.slice(s![..600, ..]))
        .unwrap();
    let mut held_out = RidgeAccumulator::new(15, 2, reservoir_core::Par::Seq).unwrap();
    held_out
        .add(x.slice(s![600.., ..]), y.slice(s![600.., ..]))
        .unwrap();
    let fit = train.solve(1e-3).unwrap();
    let pred = fit.readout.predict(x.slice(s![600.., ..])).unwrap();
    let direct = reservoir_core::metrics::nrmse(pred.view(), y.slice(s![600.., ..])).unwrap();
    let from_sums = held_out.score(&fit.readout).unwrap().mean_nrmse();
    assert!(
        (from_sums - direct).abs() < 1e-9 * direct,
        "{from_sums} vs {direct}"
    );
    assert_eq!(
        train.score(&fit.readout).unwrap().mean_nrmse(),
        fit.train_nrmse
    );

    let gram = held_out.gram();
    assert_eq!(gram, gram.t(), "both triangles are filled");
    let expected = x.slice(s![600.., ..]).t().dot(&x.slice(s![600.., ..]));
    assert!((&gram - &expected).iter().all(|d| d.abs() < 1e-9));
    let copy = RidgeAccumulator::from_sums(
        gram.view(),
        held_out.cross().view(),
        held_out.feature_sums(),
        held_out.target_shift(),
        held_out.target_sums(),
        held_out.target_squares(),
        held_out.rows(),
    )
    .unwrap();
    assert_eq!(copy.score(&fit.readout).unwrap().mean_nrmse(), from_sums);
    assert!(RidgeAccumulator::new(15, 2, reservoir_core::Par::Seq)
        .unwrap()
        .score(&fit.readout)
        .is_err());
    assert!(RidgeAccumulator::new(14, 2, reservoir_core::Par::Seq)
        .unwrap()
        .score(&fit.readout)
        .is_err());
}

#[test]
fn streamed_fit_equals_fit_on_materialised_states() {
    let config = ReservoirParams::new().size(80).seed(3).check().unwrap();
    let u = random(2000, 1, 6);
    let y = u.mapv(|v| v * v);
    let readout = ReadoutParams::new()
        .ridge(1e-6)
        .washout(50)
        .check()
        .unwrap();
    let mut r = reservoir(&config);
    let streamed = fit_ridge(r.as_mut(), u.view(), y.view(), &readout).unwrap();
    let end_state = r.state().unwrap();
    let mut r2 = reservoir(&config);
    let states = r2.run(u.view()).unwrap();
    let mut acc = RidgeAccumulator::new(80, 1, reservoir_core::Par::Seq).unwrap();
    acc.add(states.slice(s![50.., ..]), y.slice(s![50.., ..]))
        .unwrap();
    let direct = acc.solve(1e-6).unwrap();
    assert_eq!(streamed.rows, 1950);
    // The weights of an ill-conditioned fit depend on summation order; its predictions do not.
    let a = streamed.readout.predict(states.view()).unwrap();
    let b = direct.readout.predict(states.view()).unwrap();
    let worst = (&a - &b).iter().fold(0.0f64, |m, d| m.max(d.abs()));
    assert!(
        worst < 1e-8,
        "streamed and direct predictions differ by {worst}"
    );
    assert!((streamed.train_nrmse - direct.train_nrmse).abs() < 1e-8);
    assert_eq!(
        end_state,
        r2.state().unwrap(),
        "training leaves the reservoir at the end of the run"
    );
}

#[test]
fn bad_training_data_are_errors() {
    let mut acc = RidgeAccumulator::new(3, 1, reservoir_core::Par::Seq).unwrap();
    assert!(acc.solve(1e-3).is_err(), "no rows");
    let mut x = random(10, 3, 7);
    assert!(acc.add(x.view(), random(9, 1, 8).view()).is_err());
    x[(6, 2)] = f64::INFINITY;
    let err = acc
        .add(x.view(), random(10, 1, 8).view())
        .unwrap_err()
        .to_string();
    assert!(err.contains("row 6"), "{err}");
    let mut acc = RidgeAccumulator::new(3, 1, reservoir_core::Par::Seq).unwrap();
    let collinear = Array2::from_shape_fn((10, 3), |(i, _)| i as f64);
    acc.add(collinear.view(), random(10, 1, 9).view()).unwrap();
    assert!(acc.solve(0.0).unwrap_err().to_string().contains("ridge"));
    let mut r = reservoir(&ReservoirParams::new().size(20).check().unwrap());
    let u = random(30, 1, 1);
    let mut acc = RidgeAccumulator::new(20, 1, reservoir_core::Par::Seq).unwrap();
    let err = accumulate_run(r.as_mut(), u.view(), u.view(), 30, &mut acc)
        .unwrap_err()
        .to_string();
    assert!(err.contains("washout"), "{err}");
}

#[test]
fn rls_converges_to_the_ridge_solution() {
    let x = random(3000, 8, 10);
    let y = x.dot(&random(8, 2, 11)) - 0.7;
    let mut rls = Rls::new(8, 2, 1.0, 1e-6).unwrap();
    for (xr, yr) in x.rows().into_iter().zip(y.rows()) {
        rls.update(xr, yr).unwrap();
    }
    let (w, c) = direct_ridge(&x, &y, 0.0);
    let learned = rls.readout().unwrap();
    assert!((learned.weights() - &w).iter().all(|d| d.abs() < 1e-6));
    assert!((learned.intercept() - &c).iter().all(|d| d.abs() < 1e-6));
    let p = rls.predict(x.row(0)).unwrap();
    assert!((&p - &y.row(0)).iter().all(|d| d.abs() < 1e-6));
}

#[test]
fn rls_with_forgetting_tracks_a_changing_target() {
    let x = random(4000, 4, 12);
    let (w1, w2) = (random(4, 1, 13), random(4, 1, 14));
    let mut rls = Rls::new(4, 1, 0.98, 1e-2).unwrap();
    for (t, xr) in x.rows().into_iter().enumerate() {
        let w = if t < 2000 { &w1 } else { &w2 };
        rls.update(xr, w.t().dot(&xr).view()).unwrap();
    }
    let learned = rls.readout().unwrap();
    assert!(
        (learned.weights() - &w2).iter().all(|d| d.abs() < 1e-6),
        "tracks the new weights"
    );
    assert!(Rls::new(4, 1, 0.0, 1.0).is_err() && Rls::new(4, 1, 1.0, 0.0).is_err());
}

/// Targets far from zero (a unit-variance series plus a large offset) score as the same series
/// without it: the sums are taken from a shift, so nothing cancels; a split accumulated in two
/// parts and merged scores the same as one accumulator.
#[test]
fn targets_with_a_large_offset_score_as_without_it() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let x = Array2::from_shape_fn((800, 12), |_| rng.random_range(-1.0..1.0));
    let noise = Array2::from_shape_fn((800, 1), |_| rng.random_range(-0.1..0.1));
    let y = x.slice(s![.., 0..1]).mapv(|v| v * 0.7) + noise;
    let fit_of = |offset: f64, parts: usize| {
        let shifted = y.mapv(|v| v + offset);
        let mut acc = RidgeAccumulator::new(12, 1, reservoir_core::Par::Seq).unwrap();
        let rows = 800 / parts;
        for p in 0..parts {
            let mut part = RidgeAccumulator::new(12, 1, reservoir_core::Par::Seq).unwrap();
            part.add(
                x.slice(s![p * rows..(p + 1) * rows, ..]),
                shifted.slice(s![p * rows..(p + 1) * rows, ..]),
            )
            .unwrap();
            acc.merge(&part).unwrap();
        }
        acc.solve(1e-6).unwrap()
    };
    let plain = fit_of(0.0, 1).train_nrmse;
    // An offset of 1e10 leaves the targets ~2e-6 of rounding (f64's spacing there).
    for (offset, tolerance) in [(1e6, 1e-6), (1e8, 1e-6), (1e10, 1e-3)] {
        for parts in [1, 4] {
            let fit = fit_of(offset, parts);
            assert!(
                (fit.train_nrmse - plain).abs() < tolerance * plain,
                "offset {offset}, {parts} parts: {} vs {plain}",
                fit.train_nrmse
            );
            let intercept = fit.readout.intercept()[0];
            assert!(
                (intercept - offset).abs() < 1e-3 * offset.max(1.0),
                "{intercept}"
            );
        }
    }
}

#[test]
fn column_major_states_and_targets_give_the_same_sums() {
    let (x, y) = (random(60, 5, 21), random(60, 2, 22));
    // The same values laid out by columns.
    let column_major = |a: &Array2<f64>| a.t().as_standard_layout().into_owned().reversed_axes();
    let (xf, yf) = (column_major(&x), column_major(&y));
    assert!(!xf.is_standard_layout() && !yf.is_standard_layout());
    assert_eq!((&xf, &yf), (&x, &y));
    let solve = |x: &Array2<f64>, y: &Array2<f64>| {
        let mut acc = RidgeAccumulator::new(5, 2, reservoir_core::Par::Seq).unwrap();
        acc.add(x.view(), y.view()).unwrap();
        acc.solve(1e-3).unwrap().readout
    };
    assert_eq!(solve(&xf, &yf), solve(&x, &y));
}
