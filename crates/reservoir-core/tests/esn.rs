//! The CPU echo-state reservoir: determinism, the update equation, state handling, shapes.

use ndarray::{Array1, Array2};
use proptest::prelude::*;
use reservoir_core::{
    Activation, EchoStateNetwork, Reservoir, ReservoirConfig, ReservoirParams, ReservoirWeights,
};

fn small(seed: u64) -> ReservoirConfig {
    ReservoirParams::new()
        .size(60)
        .input_size(2)
        .seed(seed)
        .bias_scaling(0.3)
        .noise_level(0.0)
        .check()
        .unwrap()
}

fn inputs(t: usize, k: usize) -> Array2<f64> {
    Array2::from_shape_fn((t, k), |(i, j)| ((i * 7 + j * 3) as f64 * 0.37).sin())
}

#[test]
fn same_config_and_seed_give_bit_identical_weights_and_states() {
    for noise in [0.0, 0.05] {
        let config = small(9).to_params().noise_level(noise).check().unwrap();
        let (w1, e1) = ReservoirWeights::generate(&config).unwrap();
        let (w2, e2) = ReservoirWeights::generate(&config).unwrap();
        assert_eq!(w1, w2);
        assert_eq!(e1, e2);
        let u = inputs(300, 2);
        let s1 = EchoStateNetwork::<f32>::new(&config)
            .unwrap()
            .run(u.view())
            .unwrap();
        let s2 = EchoStateNetwork::<f32>::new(&config)
            .unwrap()
            .run(u.view())
            .unwrap();
        assert!(s1.iter().zip(&s2).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
    let (a, _) = ReservoirWeights::generate(&small(1)).unwrap();
    let (b, _) = ReservoirWeights::generate(&small(2)).unwrap();
    assert_ne!(a, b, "different seeds must give different weights");
}

#[test]
fn weights_have_the_configured_structure_and_spectral_radius() {
    let config = ReservoirParams::new()
        .size(300)
        .connection_prob(0.05)
        .input_connectivity(0.2)
        .input_size(3)
        .spectral_radius(1.25)
        .check()
        .unwrap();
    let (w, unscaled) = ReservoirWeights::generate(&config).unwrap();
    assert!(unscaled.converged);
    let rows = w.recurrent().row_ptr();
    assert!(
        rows.windows(2).all(|r| r[1] - r[0] == 15),
        "15 connections per unit"
    );
    for k in 0..3 {
        assert_eq!(
            w.input().column(k).iter().filter(|v| **v != 0.0).count(),
            60
        );
    }
    assert!(w.input().iter().all(|v| v.abs() <= 1.0));
    let rho = w
        .recurrent()
        .spectral_radius(&Default::default())
        .unwrap()
        .radius;
    assert!((rho - 1.25).abs() < 1e-6 * 1.25, "scaled radius {rho}");
}

#[test]
fn one_step_follows_the_leaky_update_equation() {
    let config = small(3).to_params().leak_rate(0.4).check().unwrap();
    let mut esn = EchoStateNetwork::<f64>::new(&config).unwrap();
    let x0 = Array1::from_shape_fn(60, |i| (i as f64 * 0.1).cos() * 0.5);
    esn.set_state(x0.view()).unwrap();
    let u = inputs(1, 2);
    let got = esn.run(u.view()).unwrap();
    let w = esn.weights();
    let pre = w.recurrent().to_dense().dot(&x0) + w.input().dot(&u.row(0)) + w.bias();
    let want = &x0 * 0.6 + pre.mapv(f64::tanh) * 0.4;
    for (g, e) in got.row(0).iter().zip(want.iter()) {
        assert!((g - e).abs() < 1e-12, "{g} vs {e}");
    }
}

#[test]
fn identity_activation_with_leak_one_is_linear() {
    let config = small(4)
        .to_params()
        .activation(Activation::Identity)
        .leak_rate(1.0)
        .spectral_radius(0.5)
        .check()
        .unwrap();
    let mut esn = EchoStateNetwork::<f64>::new(&config).unwrap();
    let u = inputs(20, 2);
    let a = esn.run(u.view()).unwrap();
    esn.reset().unwrap();
    let b = esn.run((&u * 2.0).view()).unwrap();
    // With zero bias the states are linear in the input.
    let config0 = config.to_params().bias_scaling(0.0).check().unwrap();
    let mut lin = EchoStateNetwork::<f64>::new(&config0).unwrap();
    let a0 = lin.run(u.view()).unwrap();
    lin.reset().unwrap();
    let b0 = lin.run((&u * 2.0).view()).unwrap();
    assert!((&b0 - &(&a0 * 2.0)).iter().all(|d| d.abs() < 1e-12));
    assert!(
        (&b - &(&a * 2.0)).iter().any(|d| d.abs() > 1e-6),
        "bias breaks linearity"
    );
}

#[test]
fn f32_states_track_f64_states() {
    let config = small(5);
    let u = inputs(500, 2);
    let a = EchoStateNetwork::<f32>::new(&config)
        .unwrap()
        .run(u.view())
        .unwrap();
    let b = EchoStateNetwork::<f64>::new(&config)
        .unwrap()
        .run(u.view())
        .unwrap();
    let worst = (&a - &b).iter().fold(0.0f64, |m, d| m.max(d.abs()));
    assert!(worst < 1e-4, "f32 vs f64 states differ by {worst}");
}

#[test]
fn state_can_be_read_reset_and_restored() {
    let mut esn = EchoStateNetwork::<f32>::new(&small(6)).unwrap();
    let u = inputs(100, 2);
    esn.run(u.view()).unwrap();
    let saved = esn.state().unwrap();
    let continued = esn.run(u.view()).unwrap();
    esn.set_state(saved.view()).unwrap();
    assert_eq!(esn.run(u.view()).unwrap(), continued);
    esn.reset().unwrap();
    assert!(esn.state().unwrap().iter().all(|v| *v == 0.0));
    assert!(esn.set_state(Array1::zeros(3).view()).is_err());
    assert!(esn
        .set_state(Array1::from_elem(60, f64::NAN).view())
        .is_err());
}

#[test]
fn run_many_runs_each_sequence_from_zero() {
    let mut esn = EchoStateNetwork::<f32>::new(&small(7)).unwrap();
    let (a, b) = (inputs(30, 2), inputs(55, 2));
    esn.run(b.view()).unwrap(); // a state that run_many must not carry into its sequences
    let mut many: Vec<(usize, Array2<f64>)> = Vec::new();
    esn.run_many(&[a.view(), b.view()], &mut |index, states| {
        many.push((index, states.to_owned()));
        Ok(())
    })
    .unwrap();
    assert!(
        esn.state().unwrap().iter().all(|v| *v == 0.0),
        "run_many leaves the reservoir reset"
    );
    let single_b = esn.run(b.view()).unwrap();
    assert_eq!(many.len(), 2);
    assert_eq!((many[0].0, many[1].0), (0, 1), "visited in order");
    assert_eq!(many[0].1.dim(), (30, 60));
    assert_eq!(many[1].1, single_b);
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let mut esn = EchoStateNetwork::<f32>::new(&small(8)).unwrap();
    assert!(esn.run(inputs(10, 3).view()).is_err(), "wrong input width");
    let mut u = inputs(10, 2);
    u[(4, 1)] = f64::NAN;
    let err = esn.run(u.view()).unwrap_err().to_string();
    assert!(err.contains("row 4"), "{err}");
    let (w, _) = ReservoirWeights::generate(&small(8)).unwrap();
    assert!(EchoStateNetwork::<f32>::from_weights(
        &small(8).to_params().size(61).check().unwrap(),
        w
    )
    .is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn states_have_the_right_shape_and_stay_bounded(size in 1usize..80, k in 1usize..4, t in 0usize..40, seed in 0u64..1000, p in 0.05f64..1.0) {
        let config = ReservoirParams::new().size(size).input_size(k).seed(seed).connection_prob(p).spectral_radius(1.1).check().unwrap();
        match EchoStateNetwork::<f32>::new(&config) {
            Ok(mut esn) => {
                let s = esn.run(inputs(t, k).view()).unwrap();
                prop_assert_eq!(s.dim(), (t, size));
                prop_assert!(s.iter().all(|v| v.abs() <= 1.0));
            }
            // Very sparse tiny reservoirs can be nilpotent: that must be a clear error.
            Err(e) => prop_assert!(e.to_string().contains("spectral radius"), "{}", e),
        }
    }
}
