//! Intrinsic plasticity: adapted units' outputs move toward N(μ, σ²) on held-out input, the
//! same bits on every run, and the adapted weights are the gain-and-bias form of the update.

use ndarray::{s, Array1, Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::plasticity::{adapt, learn, PlasticityParams};
use reservoir_core::{
    Activation, EchoStateNetwork, Precision, Reservoir, ReservoirConfig, ReservoirError,
    ReservoirParams, ReservoirWeights,
};

fn config(leak_rate: f64) -> ReservoirConfig {
    ReservoirParams::new()
        .size(100)
        .input_size(2)
        .spectral_radius(0.9)
        .input_scaling(1.5)
        .bias_scaling(0.5)
        .leak_rate(leak_rate)
        .precision(Precision::F64)
        .seed(12)
        .check()
        .unwrap()
}

fn inputs(seed: u64, steps: usize) -> Array2<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((steps, 2), |(t, k)| {
        (0.05 * t as f64 * (k + 1) as f64).sin() + 0.3 * rng.random_range(-1.0..1.0)
    })
}

/// The mean over units of KL(N(mᵢ, sᵢ²) ‖ N(μ, σ²)), mᵢ and sᵢ unit i's mean and standard
/// deviation over the states after a washout; and the mean |sᵢ − σ| and |mᵢ − μ|.
fn distance(states: ArrayView2<f64>, mu: f64, sigma: f64) -> (f64, f64, f64) {
    let states = states.slice(s![100.., ..]);
    let means = states.mean_axis(ndarray::Axis(0)).unwrap();
    let stds = states.std_axis(ndarray::Axis(0), 0.0);
    let n = means.len() as f64;
    let kl = means
        .iter()
        .zip(&stds)
        .map(|(&m, &s)| {
            (sigma / s).ln() + (s * s + (m - mu) * (m - mu)) / (2.0 * sigma * sigma) - 0.5
        })
        .sum::<f64>()
        / n;
    let std_gap = stds.iter().map(|s| (s - sigma).abs()).sum::<f64>() / n;
    let mean_gap = means.iter().map(|m| (m - mu).abs()).sum::<f64>() / n;
    (kl, std_gap, mean_gap)
}

#[test]
fn adapted_outputs_move_toward_the_target_distribution_on_held_out_input() {
    // Leak rate 1: the states are the units' outputs y.
    let config = config(1.0);
    let (weights, _) = ReservoirWeights::generate(&config).unwrap();
    let training: Vec<Array2<f64>> = (0..4).map(|i| inputs(i, 1500)).collect();
    let views: Vec<ArrayView2<f64>> = training.iter().map(|t| t.view()).collect();
    let held_out = inputs(99, 2000);
    for (mu, sigma) in [(0.0, 0.2), (0.1, 0.3)] {
        let plasticity = PlasticityParams::new()
            .learning_rate(1e-3)
            .mean(mu)
            .std(sigma)
            .epochs(3)
            .warmup(50)
            .check()
            .unwrap();
        let adapted = adapt(&config, &weights, &plasticity, &views).unwrap();
        let run = |w: &ReservoirWeights| {
            EchoStateNetwork::<f64>::from_weights(&config, w.clone())
                .unwrap()
                .run(held_out.view())
                .unwrap()
        };
        let before = distance(run(&weights).view(), mu, sigma);
        let after = distance(run(&adapted).view(), mu, sigma);
        eprintln!("μ {mu}, σ {sigma}: (KL, |s − σ|, |m − μ|) {before:?} → {after:?}");
        assert!(after.0 < 0.5 * before.0, "KL {before:?} → {after:?}");
        assert!(after.1 < before.1, "std gap {before:?} → {after:?}");
        assert!(after.2 < before.2, "mean gap {before:?} → {after:?}");
    }
}

#[test]
fn two_runs_give_the_same_bits() {
    let config = config(0.5);
    let (weights, _) = ReservoirWeights::generate(&config).unwrap();
    let training: Vec<Array2<f64>> = (0..3).map(|i| inputs(i, 400)).collect();
    let views: Vec<ArrayView2<f64>> = training.iter().map(|t| t.view()).collect();
    let plasticity = PlasticityParams::new().epochs(2).check().unwrap();
    let first = adapt(&config, &weights, &plasticity, &views).unwrap();
    let second = adapt(&config, &weights, &plasticity, &views).unwrap();
    assert_eq!(first, second);
    assert_ne!(first, weights, "the weights were adapted");
    // The sequences' order is part of the result.
    let reversed: Vec<ArrayView2<f64>> = views.iter().rev().copied().collect();
    assert_ne!(
        adapt(&config, &weights, &plasticity, &reversed).unwrap(),
        first
    );
}

#[test]
fn adapted_weights_run_the_gain_and_bias_form_of_the_update() {
    let config = config(0.3);
    let (weights, _) = ReservoirWeights::generate(&config).unwrap();
    let training = inputs(1, 800);
    let plasticity = PlasticityParams::new().learning_rate(2e-3).check().unwrap();
    let gains = learn(&config, &weights, &plasticity, &[training.view()]).unwrap();
    assert!(gains.gain().iter().any(|&a| (a - 1.0).abs() > 1e-3));
    let adapted = gains.apply(&weights).unwrap();

    // x(t+1) = (1 − α)·x(t) + α·tanh(a ⊙ (W·x + W_in·u + bias) + b), with the original weights.
    let u = inputs(2, 150);
    let (w, w_in, bias) = (
        weights.recurrent().to_dense(),
        weights.input(),
        weights.bias(),
    );
    let alpha = config.leak_rate();
    let mut x = Array1::<f64>::zeros(100);
    let mut expected = Array2::zeros((150, 100));
    for (t, row) in u.rows().into_iter().enumerate() {
        let z = w.dot(&x) + w_in.dot(&row) + bias;
        let y = (gains.gain() * &z + gains.bias()).mapv(f64::tanh);
        x = &x * (1.0 - alpha) + &y * alpha;
        expected.row_mut(t).assign(&x);
    }
    let got = EchoStateNetwork::<f64>::from_weights(&config, adapted)
        .unwrap()
        .run(u.view())
        .unwrap();
    let error = reservoir_conformance::relative_error(got.view(), expected.view());
    assert!(error < 1e-12, "relative error {error:e}");
}

#[test]
fn plasticity_refuses_what_it_cannot_adapt() {
    let identity = config(1.0)
        .to_params()
        .activation(Activation::Identity)
        .check()
        .unwrap();
    let (weights, _) = ReservoirWeights::generate(&identity).unwrap();
    let plasticity = PlasticityParams::new().check().unwrap();
    let u = inputs(0, 10);
    match adapt(&identity, &weights, &plasticity, &[u.view()]) {
        Err(ReservoirError::Config(e)) => assert_eq!(e.field, "activation"),
        other => panic!("identity activation: {other:?}"),
    }
    let tanh = config(1.0);
    let mut bad = inputs(0, 10);
    bad[(4, 1)] = f64::NAN;
    assert!(matches!(
        adapt(&tanh, &weights, &plasticity, &[u.view(), bad.view()]),
        Err(ReservoirError::InvalidInput { .. })
    ));
    let wide = Array2::zeros((5, 3));
    assert!(matches!(
        adapt(&tanh, &weights, &plasticity, &[wide.view()]),
        Err(ReservoirError::Shape { .. })
    ));
    let other = ReservoirParams::new()
        .size(50)
        .input_size(2)
        .check()
        .unwrap();
    assert!(adapt(&other, &weights, &plasticity, &[u.view()]).is_err());
}

#[test]
fn bad_plasticity_parameters_name_their_field() {
    let field = |p: PlasticityParams| p.check().unwrap_err().field;
    assert_eq!(
        field(PlasticityParams::new().learning_rate(0.0)),
        "learning_rate"
    );
    assert_eq!(
        field(PlasticityParams::new().learning_rate(f64::NAN)),
        "learning_rate"
    );
    assert_eq!(field(PlasticityParams::new().mean(1.0)), "mean");
    assert_eq!(field(PlasticityParams::new().std(0.0)), "std");
    assert_eq!(field(PlasticityParams::new().std(f64::INFINITY)), "std");
    assert_eq!(field(PlasticityParams::new().epochs(0)), "epochs");
    let defaults = PlasticityParams::new().check().unwrap();
    assert_eq!(
        (
            defaults.learning_rate(),
            defaults.mean(),
            defaults.std(),
            defaults.epochs()
        ),
        (5e-4, 0.0, 0.2, 1)
    );
}
