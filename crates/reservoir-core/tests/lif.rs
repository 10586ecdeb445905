//! The LIF reservoir: single-neuron dynamics against the analytic solution, Dale's law,
//! event-driven against dense propagation, determinism, shapes and errors, the default regime.

use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::lif::{
    LifConfig, LifFeatures, LifInputMode, LifIntegration, LifNetwork, LifParams, LifWeights,
};
use reservoir_core::spectral::SpectralOptions;
use reservoir_core::spikes::{Spike, SpikePattern};
use reservoir_core::{CsrMatrix, Reservoir, ReservoirError};

/// One neuron without recurrence, driven through W_in = [[1]] (so u is the current I).
fn isolated(config: &LifConfig) -> LifNetwork {
    let config = config
        .to_params()
        .size(1)
        .input_size(1)
        .bias_current(0.0)
        .check()
        .unwrap();
    let w = CsrMatrix::from_parts(1, 1, vec![0, 0], vec![], vec![]).unwrap();
    let weights = LifWeights::from_parts(w, Array2::ones((1, 1)), vec![true]).unwrap();
    LifNetwork::from_weights(&config, weights).unwrap()
}

/// Piecewise-constant uniform input in [0, 1), a new value every `hold` steps.
fn held_uniform(steps: usize, channels: usize, hold: usize, seed: u64) -> Array2<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut u = Array2::zeros((steps, channels));
    for t in 0..steps {
        for k in 0..channels {
            u[(t, k)] = if t % hold == 0 {
                rng.random_range(0.0..1.0)
            } else {
                u[(t - 1, k)]
            };
        }
    }
    u
}

/// Poisson-like spike counts: each step and channel spikes with probability `p`.
fn poisson(steps: usize, channels: usize, p: f64, seed: u64) -> Array2<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((steps, channels), |_| {
        f64::from(u8::from(rng.random_bool(p)))
    })
}

/// Mean rate in Hz of `spikes` spikes of `n` neurons over `steps` steps of `dt_ms`.
fn rate_hz(spikes: u64, n: usize, steps: usize, dt_ms: f64) -> f64 {
    spikes as f64 / n as f64 / (steps as f64 * dt_ms / 1000.0)
}

/// The mean inter-spike interval T is exact up to the step grid: the membrane update
/// integrates a constant current exactly, so the only error is that a threshold crossing is
/// registered at the end of its step. The interval is (n_ref + ⌈T_charge/dt⌉)·dt, late by
/// less than one dt (t_ref is a multiple of dt here), so the relative error is below dt/T,
/// plus f32 rounding. At dt = 0.01 ms and T ≥ 13 ms that is < 0.08 %, well inside 1 %; at
/// the default dt = 0.1 ms it is < 0.8 %, still inside 1 % for these T.
#[test]
fn mean_isi_matches_the_analytic_interval() {
    // (R·I, τ_m, t_ref)
    let cases = [
        (1.5, 20.0, 2.0),
        (1.2, 10.0, 0.0),
        (3.0, 20.0, 5.0),
        (1.1, 5.0, 1.0),
        (2.0, 30.0, 2.0),
    ];
    for dt in [0.01, 0.1] {
        for (current, tau, t_ref) in cases {
            let config = LifParams::new()
                .dt_ms(dt)
                .tau_m_ms(tau)
                .refractory_ms(t_ref)
                .check()
                .unwrap();
            let expected: f64 = t_ref + tau * (current / (current - 1.0_f64)).ln();
            let steps = (60.0 * expected / dt) as usize;
            let mut net = isolated(&config);
            let (_, pattern) = net
                .run_recording(Array2::from_elem((steps, 1), current).view())
                .unwrap();
            let times: Vec<f64> = pattern.spikes().iter().map(|s| s.time_ms).collect();
            assert!(times.len() >= 50, "only {} spikes", times.len());
            let mean = (times[times.len() - 1] - times[0]) / (times.len() - 1) as f64;
            let error = (mean - expected) / expected;
            eprintln!(
                "ISI dt {dt} R·I {current} τ_m {tau} t_ref {t_ref}: analytic {expected:.4} ms, \
                 measured {mean:.4} ms, error {:+.4} %",
                100.0 * error
            );
            assert!(
                (0.0..dt / expected + 1e-5).contains(&error),
                "{error} not in [0, dt/T)"
            );
            assert!(error.abs() < 0.01);
        }
    }
}

#[test]
fn euler_integration_steps_the_forward_euler_recurrence() {
    // A current held in `current` mode: v ← v·(1 − dt/τ_m) + R·I·dt/τ_m, in f64 beside it.
    let config = LifParams::new()
        .integration(LifIntegration::Euler)
        .resistance(1.5)
        .check()
        .unwrap();
    let mut net = isolated(&config);
    let (dt, tau, r, current) = (config.dt_ms(), config.tau_m_ms(), 1.5, 0.6);
    let mut v = 0.0f64;
    for step in 0..400 {
        net.run(Array2::from_elem((1, 1), current).view()).unwrap();
        v = v * (1.0 - dt / tau) + r * current * dt / tau;
        let got = f64::from(net.membrane()[0]);
        assert!((got - v).abs() < 1e-5, "step {step}: v {got} vs Euler {v}");
    }
    assert_eq!(net.spike_count(), 0);
    // The exact step differs from it by the Euler error, O(dt/τ) relative per step.
    let mut exact = isolated(
        &config
            .to_params()
            .integration(LifIntegration::Exact)
            .check()
            .unwrap(),
    );
    exact
        .run(Array2::from_elem((400, 1), current).view())
        .unwrap();
    let gap = (f64::from(exact.membrane()[0]) - v).abs();
    assert!(
        gap > 1e-5 && gap < 1e-2,
        "exact vs Euler after 400 steps: {gap}"
    );
    // Euler needs every τ above dt: its decay 1 − dt/τ is then in (0, 1).
    let refused = LifParams::new()
        .integration(LifIntegration::Euler)
        .dt_ms(1.0)
        .tau_syn_ms(0.5)
        .check()
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("tau_syn_ms") && refused.contains("euler"),
        "{refused}"
    );
}

#[test]
fn below_threshold_never_spikes_and_v_converges_to_r_i() {
    for (current, resistance) in [(0.8, 1.0), (0.45, 2.0), (-0.5, 1.0)] {
        let config = LifParams::new().resistance(resistance).check().unwrap();
        let mut net = isolated(&config);
        let steps = (20.0 * config.tau_m_ms() / config.dt_ms()) as usize;
        net.run(Array2::from_elem((steps, 1), current).view())
            .unwrap();
        assert_eq!(net.spike_count(), 0);
        // f32 state: each step rounds to ~6e-8, which the contraction α_m = 0.995 can pile
        // up to ~6e-8 / (1 − α_m) ≈ 1.2e-5 at the fixed point.
        let v = f64::from(net.membrane()[0]);
        assert!(
            (v - resistance * current).abs() < 3e-5,
            "v {v} vs R·I {}",
            resistance * current
        );
    }
}

#[test]
fn refractory_period_holds_v_at_reset_for_round_t_ref_over_dt_steps() {
    for (t_ref, dt, n_ref) in [
        (2.0, 0.1, 20),
        (0.26, 0.1, 3),
        (0.0, 0.1, 0),
        (1.0, 0.25, 4),
    ] {
        let config = LifParams::new()
            .refractory_ms(t_ref)
            .dt_ms(dt)
            .v_reset(-0.2)
            .check()
            .unwrap();
        assert_eq!(config.refractory_steps(), n_ref);
        let mut net = isolated(&config);
        assert_eq!(net.constants().refractory_steps, n_ref);
        let u = Array1::from_elem(1, 5.0);
        let mut first = None;
        for step in 0..2000 {
            let spiked = !net.step(u.view()).unwrap().is_empty();
            if spiked {
                first = Some(step);
                break;
            }
        }
        assert!(first.is_some());
        assert_eq!(net.membrane()[0], -0.2);
        for held in 0..n_ref {
            assert!(net.step(u.view()).unwrap().is_empty());
            assert_eq!(
                net.membrane()[0],
                -0.2,
                "step {held} of the refractory period"
            );
            assert_eq!(net.refractory()[0], n_ref - held - 1);
        }
        net.step(u.view()).unwrap();
        assert!(
            net.membrane()[0] > -0.2,
            "integrates again after {n_ref} steps"
        );
    }
}

#[test]
fn weights_obey_dales_law_fixed_in_degree_and_spectral_radius() {
    let config = LifParams::new()
        .size(500)
        .connection_prob(0.05)
        .excitatory_fraction(0.75)
        .spectral_radius(1.7)
        .check()
        .unwrap();
    let weights = LifWeights::generate(&config).unwrap();
    let mask = weights.excitatory();
    assert_eq!(mask.iter().filter(|&&e| e).count(), 375);
    let w = weights.recurrent();
    let dense = w.to_dense();
    for j in 0..500 {
        let column = dense.column(j);
        assert!(column
            .iter()
            .all(|&x| if mask[j] { x >= 0.0 } else { x <= 0.0 }));
        assert_eq!(column[j], 0.0, "no self-connection");
    }
    for row in w.row_ptr().windows(2) {
        assert_eq!(row[1] - row[0], 25, "round(0.05 · 499) inputs per neuron");
    }
    // Balance: the inhibitory gain N_E/N_I makes the summed weight small against its scale.
    let total: f64 = w.values().iter().sum();
    let scale: f64 = w.values().iter().map(|x| x.abs()).sum();
    assert!(total.abs() < 0.05 * scale, "sum {total} vs sum |w| {scale}");
    let rho = w.spectral_radius(&SpectralOptions::default()).unwrap();
    assert!((rho.radius - 1.7).abs() < 1e-5, "ρ = {}", rho.radius);
    // Wrong signs are refused.
    let bad = LifWeights::from_parts(w.clone(), weights.input().clone(), vec![false; 500]);
    assert!(matches!(bad, Err(ReservoirError::InvalidInput { .. })));
    // A single neuron has no self-loop, so no recurrence.
    let single = LifWeights::generate(&LifParams::new().size(1).check().unwrap()).unwrap();
    assert_eq!(single.recurrent().nnz(), 0);
}

#[test]
fn small_and_one_sided_networks_generate() {
    for size in 2..=20 {
        for excitatory_fraction in [0.0, 0.5, 0.8, 1.0] {
            let config = LifParams::new()
                .size(size)
                .excitatory_fraction(excitatory_fraction)
                .seed(size as u64)
                .check()
                .unwrap();
            let weights = LifWeights::generate(&config)
                .unwrap_or_else(|e| panic!("size {size}, f_E {excitatory_fraction}: {e}"));
            assert!(weights.recurrent().nnz() >= size);
        }
    }
    let silent = LifWeights::generate(
        &LifParams::new()
            .spectral_radius(0.0)
            .size(50)
            .check()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(silent.recurrent().nnz(), 0);
}

/// The step of the module docs with I_syn ← I_syn·α_syn + W·s computed densely.
fn dense_reference(net: &LifNetwork, inputs: &Array2<f64>) -> Vec<Vec<u32>> {
    let c = net.constants();
    let config = net.config();
    let n = config.size();
    let w = net.weights().recurrent().to_dense().mapv(|x| x as f32);
    let w_in = net.weights().input().mapv(|x| x as f32);
    let (mut v, mut i_syn) = (vec![c.v_rest; n], vec![0f32; n]);
    let (mut refr, mut s) = (vec![0u32; n], vec![0f32; n]);
    let mut trains = Vec::new();
    for u in inputs.rows() {
        for (i, current) in i_syn.iter_mut().enumerate() {
            *current *= c.alpha_syn;
            for j in 0..n {
                *current += w[(i, j)] * s[j];
            }
        }
        let mut ext = vec![c.bias; n];
        let target = match config.input_mode() {
            LifInputMode::Current => &mut ext,
            LifInputMode::Synaptic => &mut i_syn,
        };
        for (i, x) in target.iter_mut().enumerate() {
            for (k, &u_k) in u.iter().enumerate() {
                *x += w_in[(i, k)] * u_k as f32;
            }
        }
        let mut spiked = Vec::new();
        for i in 0..n {
            s[i] = 0.0;
            if refr[i] > 0 {
                refr[i] -= 1;
                v[i] = c.v_reset;
                continue;
            }
            let vi = c.v_rest + (v[i] - c.v_rest) * c.alpha_m + (i_syn[i] + ext[i]) * c.drive_gain;
            if vi >= c.threshold {
                (v[i], refr[i], s[i]) = (c.v_reset, c.refractory_steps, 1.0);
                spiked.push(i as u32);
            } else {
                v[i] = vi;
            }
        }
        trains.push(spiked);
    }
    trains
}

#[test]
fn event_driven_propagation_equals_the_dense_product() {
    for mode in [LifInputMode::Current, LifInputMode::Synaptic] {
        let config = LifParams::new()
            .size(200)
            .input_size(2)
            .input_mode(mode)
            .input_connectivity(1.0)
            .input_scaling(2.0)
            .bias_current(0.95)
            .check()
            .unwrap();
        let inputs = match mode {
            LifInputMode::Current => held_uniform(1000, 2, 50, 3),
            LifInputMode::Synaptic => poisson(1000, 2, 0.05, 3),
        };
        let mut net = LifNetwork::new(&config).unwrap();
        let reference = dense_reference(&net, &inputs);
        let mut events = Vec::new();
        for u in inputs.rows() {
            events.push(net.step(u).unwrap().to_vec());
        }
        assert_eq!(events, reference, "{mode:?}");
        let total: usize = events.iter().map(Vec::len).sum();
        eprintln!("event-driven = dense, {mode:?} input: {total} spikes");
        assert!(total > 300, "{mode:?}: only {total} spikes, a weak test");
        assert!(net.synaptic_events() > 0);
    }
}

#[test]
fn same_seed_gives_identical_spikes_and_reset_restores_them() {
    let config = LifParams::new().size(300).seed(5).check().unwrap();
    let inputs = held_uniform(3000, 1, 100, 1);
    let mut a = LifNetwork::new(&config).unwrap();
    let mut b = LifNetwork::new(&config).unwrap();
    assert_eq!(a.weights(), b.weights());
    let (states_a, spikes_a) = a.run_recording(inputs.view()).unwrap();
    let (states_b, spikes_b) = b.run_recording(inputs.view()).unwrap();
    assert!(spikes_a.spikes().len() > 100);
    assert_eq!(spikes_a, spikes_b);
    let bits = |s: &Array2<f64>| s.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&states_a), bits(&states_b));

    let mut other = LifNetwork::new(&config.to_params().seed(6).check().unwrap()).unwrap();
    let (_, spikes_other) = other.run_recording(inputs.view()).unwrap();
    assert_ne!(spikes_a, spikes_other);

    a.reset().unwrap();
    assert_eq!((a.spike_count(), a.neuron_updates()), (0, 0));
    assert!(a.state().unwrap().iter().all(|&x| x == 0.0));
    let (states_again, spikes_again) = a.run_recording(inputs.view()).unwrap();
    assert_eq!(spikes_again, spikes_a);
    assert_eq!(bits(&states_again), bits(&states_a));
    assert_eq!(a.neuron_updates(), 300 * 3000);
    assert_eq!(a.spike_count(), spikes_a.spikes().len() as u64);
}

#[test]
fn features_match_the_recorded_spikes() {
    let base = LifParams::new()
        .size(100)
        .count_window_steps(37)
        .input_connectivity(1.0)
        .input_scaling(2.0)
        .bias_current(0.95)
        .check()
        .unwrap();
    let inputs = held_uniform(2000, 1, 40, 2);
    let (_, pattern) = LifNetwork::new(&base)
        .unwrap()
        .run_recording(inputs.view())
        .unwrap();
    let trains = pattern.to_input_matrix(base.dt_ms()).unwrap();
    assert!(trains.sum() > 200.0, "{} spikes", trains.sum());
    let c = LifNetwork::new(&base).unwrap().constants();
    for features in [
        LifFeatures::Trace,
        LifFeatures::Counts,
        LifFeatures::Membrane,
    ] {
        let config = base.to_params().features(features).check().unwrap();
        let mut net = LifNetwork::new(&config).unwrap();
        let states = net.run(inputs.view()).unwrap();
        assert_eq!(states.row(1999), net.state().unwrap());
        let mut trace = vec![0f32; 100];
        for t in 0..2000 {
            for i in 0..100 {
                trace[i] = trace[i] * c.alpha_trace + trains[(t, i)] as f32;
                let expected = match features {
                    LifFeatures::Trace => f64::from(trace[i]),
                    LifFeatures::Counts => trains
                        .column(i)
                        .slice(ndarray::s![t.saturating_sub(36)..=t])
                        .sum(),
                    LifFeatures::Membrane => states[(t, i)],
                };
                assert_eq!(states[(t, i)], expected, "{features:?} step {t} neuron {i}");
            }
        }
        if features == LifFeatures::Membrane {
            let v = Array1::from_shape_fn(100, |i| i as f64 * 0.001);
            net.set_state(v.view()).unwrap();
            assert_eq!(net.state().unwrap(), v.mapv(|x| f64::from(x as f32)));
        }
    }
}

#[test]
fn spike_patterns_in_and_out() {
    let config = LifParams::new()
        .size(150)
        .input_size(3)
        .input_mode(LifInputMode::Synaptic)
        .check()
        .unwrap();
    let trains = poisson(500, 3, 0.05, 9);
    // Spikes at bin centres, so binning does not hinge on how t·dt / dt rounds.
    let spikes = trains
        .indexed_iter()
        .filter(|(_, &x)| x != 0.0)
        .map(|((t, k), &x)| Spike {
            neuron_id: k as u32,
            time_ms: (t as f64 + 0.5) * config.dt_ms(),
            amplitude: x,
        })
        .collect();
    let pattern = SpikePattern::new(spikes, 3, 500.0 * config.dt_ms()).unwrap();
    assert_eq!(pattern.to_input_matrix(config.dt_ms()).unwrap(), trains);
    let mut net = LifNetwork::new(&config).unwrap();
    let from_pattern = net.run_pattern(&pattern, config.dt_ms()).unwrap();
    net.reset().unwrap();
    let (from_matrix, out) = net.run_recording(trains.view()).unwrap();
    assert_eq!(from_pattern, from_matrix);
    assert_eq!(out.n_neurons(), 150);
    assert!((out.duration_ms() - 50.0).abs() < 1e-9);
    assert_eq!(out.spikes().len() as u64, net.spike_count());
    let wrong = SpikePattern::from_matrix(&poisson(10, 2, 0.5, 1), 0.1).unwrap();
    assert!(matches!(
        net.run_pattern(&wrong, config.dt_ms()),
        Err(ReservoirError::Shape { .. })
    ));
}

#[test]
fn shapes_and_errors_name_what_is_wrong() {
    let config = LifParams::new().size(20).input_size(2).check().unwrap();
    let mut net = LifNetwork::new(&config).unwrap();
    let err = net.run(Array2::zeros((5, 3)).view()).unwrap_err();
    assert!(matches!(err, ReservoirError::Shape { .. }), "{err}");
    let mut bad = Array2::zeros((5, 2));
    bad[(3, 1)] = f64::NAN;
    let err = net.run(bad.view()).unwrap_err();
    assert!(err.to_string().contains("row 3, column 1"), "{err}");
    bad[(3, 1)] = 1e300;
    assert!(matches!(
        net.run(bad.view()),
        Err(ReservoirError::InvalidInput { .. })
    ));
    assert!(net.step(Array1::zeros(1).view()).is_err());
    assert!(net.set_state(Array1::zeros(19).view()).is_err());
    assert!(net
        .set_state(Array1::from_elem(20, f64::INFINITY).view())
        .is_err());

    type Edit = fn(LifParams) -> LifParams;
    let cases: [(&str, Edit); 18] = [
        ("size", |p| p.size(0)),
        ("input_size", |p| p.input_size(0)),
        ("dt_ms", |p| p.dt_ms(0.0)),
        ("tau_m_ms", |p| p.tau_m_ms(-1.0)),
        ("tau_syn_ms", |p| p.tau_syn_ms(f64::NAN)),
        ("threshold", |p| p.threshold(f64::INFINITY)),
        ("v_rest", |p| p.v_rest(f64::NAN)),
        ("v_reset", |p| p.v_reset(1.0)),
        ("refractory_ms", |p| p.refractory_ms(-0.1)),
        ("resistance", |p| p.resistance(0.0)),
        ("excitatory_fraction", |p| p.excitatory_fraction(1.5)),
        ("connection_prob", |p| p.connection_prob(0.0)),
        ("spectral_radius", |p| p.spectral_radius(-1.0)),
        ("input_scaling", |p| p.input_scaling(f64::NAN)),
        ("input_connectivity", |p| p.input_connectivity(1.1)),
        ("bias_current", |p| p.bias_current(1e40)),
        ("trace_tau_ms", |p| p.trace_tau_ms(0.0)),
        ("count_window_steps", |p| p.count_window_steps(0)),
    ];
    for (field, edit) in cases {
        let bad = edit(config.to_params());
        let err = bad.clone().check().unwrap_err();
        assert_eq!(err.field, field);
        // Every other way to a LifConfig (TryFrom, deserialisation) goes through the same rule.
        assert_eq!(LifConfig::try_from(bad.clone()).unwrap_err(), err);
        let text = toml::to_string(&bad).unwrap();
        let message = toml::from_str::<LifConfig>(&text).unwrap_err().to_string();
        assert!(message.contains(&err.to_string()), "{field}: {message}");
    }

    let parsed: LifConfig =
        toml::from_str("features = \"counts\"\ninput_mode = \"synaptic\"\nsize = 10\n").unwrap();
    assert_eq!(
        (parsed.features(), parsed.input_mode(), parsed.size()),
        (LifFeatures::Counts, LifInputMode::Synaptic, 10)
    );
    let err = toml::from_str::<LifConfig>("tau_m = 3.0\n").unwrap_err();
    assert!(err.to_string().contains("tau_m"), "{err}");
}

/// The default network under moderate random input neither dies nor saturates, and falls
/// silent once the input stops (it is driven, not self-sustained).
#[test]
fn default_network_fires_at_a_sane_rate_under_moderate_input() {
    let config = LifConfig::default();
    let steps = 10_000; // 1 s
    for (mode, inputs) in [
        (LifInputMode::Current, held_uniform(steps, 1, 100, 11)),
        (LifInputMode::Synaptic, poisson(steps, 1, 0.02, 11)), // 200 Hz input train
    ] {
        let mut net =
            LifNetwork::new(&config.to_params().input_mode(mode).check().unwrap()).unwrap();
        let (_, pattern) = net.run_recording(inputs.view()).unwrap();
        let rate = rate_hz(net.spike_count(), config.size(), steps, config.dt_ms());
        let mut active = vec![false; config.size()];
        pattern
            .spikes()
            .iter()
            .for_each(|s| active[s.neuron_id as usize] = true);
        let active = active.iter().filter(|&&a| a).count();
        eprintln!("default net, {mode:?} input: {rate:.2} Hz, {active} of 1000 neurons fired");
        assert!((1.0..100.0).contains(&rate), "{mode:?}: {rate} Hz");
        assert!(active > 500, "{mode:?}: only {active} neurons fired");
        net.run(Array2::zeros((5000, 1)).view()).unwrap();
        let before = net.spike_count();
        net.run(Array2::zeros((5000, 1)).view()).unwrap();
        assert_eq!(
            net.spike_count(),
            before,
            "{mode:?}: self-sustained activity"
        );
    }
}
