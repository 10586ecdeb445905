//! `run_many` of the CPU reservoirs runs sequences on every core, visited in order, errors
//! checked first or returned in order: the same bits as one after another (`run_one_by_one`)
//! for the LIF network and a dense or noisy echo-state reservoir; for a sparse one, stepped in
//! blocks, the same states to rounding and the same bits whatever the threads or the order.

use ndarray::{Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::features::{FeatureParams, Summary};
use reservoir_core::lif::{LifFeatures, LifInputMode, LifNetwork, LifParams};
use reservoir_core::reservoir::run_one_by_one;
use reservoir_core::{EchoStateNetwork, Par, Reservoir, ReservoirError, ReservoirParams};

const K: usize = 3;

/// 41 sequences of K channels and varied lengths (0 included), uniform in [0, 1).
fn sequences() -> Vec<Array2<f64>> {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    (0..41)
        .map(|i| {
            let t = [0, 1, 2, 9, 40, 83, 127][i % 7] + i;
            Array2::from_shape_fn((t, K), |_| rng.random_range(0.0..1.0))
        })
        .collect()
}

fn views(sequences: &[Array2<f64>]) -> Vec<ArrayView2<'_, f64>> {
    sequences.iter().map(|s| s.view()).collect()
}

fn echo_state_params() -> ReservoirParams {
    ReservoirParams::new()
        .size(90)
        .input_size(K)
        .leak_rate(0.4)
        .bias_scaling(0.2)
        .noise_level(0.0)
        .seed(3)
}

fn echo_state_f32(params: ReservoirParams) -> EchoStateNetwork<f32> {
    EchoStateNetwork::new(&params.check().unwrap()).unwrap()
}

fn echo_state_f64(params: ReservoirParams) -> EchoStateNetwork<f64> {
    EchoStateNetwork::new(&params.check().unwrap()).unwrap()
}

/// A LIF network that spikes under the inputs of [`sequences`].
fn lif(features: LifFeatures, input_mode: LifInputMode) -> LifNetwork {
    let config = LifParams::new()
        .size(120)
        .input_size(K)
        .input_scaling(4.0)
        .bias_current(0.5)
        .features(features)
        .input_mode(input_mode)
        .count_window_steps(5)
        .seed(8)
        .check()
        .unwrap();
    LifNetwork::new(&config).unwrap()
}

fn lif_networks() -> Vec<LifNetwork> {
    let mut networks = Vec::new();
    for features in [
        LifFeatures::Trace,
        LifFeatures::Membrane,
        LifFeatures::Counts,
    ] {
        for mode in [LifInputMode::Current, LifInputMode::Synaptic] {
            networks.push(lif(features, mode));
        }
    }
    networks
}

/// Every visit of `run`: (index, states).
fn visits(
    run: impl FnOnce(&mut dyn FnMut(usize, ArrayView2<f64>) -> reservoir_core::Result<()>),
) -> Vec<(usize, Array2<f64>)> {
    let mut got = Vec::new();
    run(&mut |index, states| {
        got.push((index, states.to_owned()));
        Ok(())
    });
    got
}

fn bits(visited: &[(usize, Array2<f64>)]) -> Vec<(usize, Vec<u64>)> {
    visited
        .iter()
        .map(|(i, s)| (*i, s.iter().map(|v| v.to_bits()).collect()))
        .collect()
}

/// `run_many` on `reservoir` given `par` and `run_one_by_one` on its twin visit the same
/// indices, in order, with the same bits, and both leave the reservoir in the same (reset)
/// state.
fn assert_same_as_one_by_one<R: Reservoir + Clone>(name: &str, reservoir: &R, par: Par) {
    let sequences = sequences();
    let views = views(&sequences);
    let (mut many, mut one) = (reservoir.clone(), reservoir.clone());
    many.set_par(par);
    // A state neither must carry into its sequences (and, with noise, draws both make alike).
    let earlier = Array2::from_elem((7, K), 0.9);
    many.run(earlier.view()).unwrap();
    one.run(earlier.view()).unwrap();
    let got = visits(|visit| many.run_many(&views, visit).unwrap());
    let expected = visits(|visit| run_one_by_one(&mut one, &views, visit).unwrap());
    let indices: Vec<usize> = got.iter().map(|(i, _)| *i).collect();
    assert_eq!(
        indices,
        (0..views.len()).collect::<Vec<_>>(),
        "{name}: order"
    );
    assert!(bits(&got) == bits(&expected), "{name}: states differ");
    assert_eq!(many.state().unwrap(), one.state().unwrap(), "{name}: reset");
}

/// Runs `check` for every core, one thread and 3 threads (waves of 12).
fn on_pars(mut check: impl FnMut(Par)) {
    for par in [Par::all(), Par::Seq, Par::rayon(3)] {
        check(par);
    }
}

/// `run_many` of a sparse echo-state reservoir (blocks): every state within `tolerance` of one
/// after another, the same bits on every pool and with the sequences reversed, the reservoir
/// left reset; and `sequence_features` the same bits as summarizing those states.
fn assert_blocks_agree<R: Reservoir + Clone + Sync>(name: &str, reservoir: &R, tolerance: f64) {
    let sequences = sequences();
    let views = views(&sequences);
    let mut one = reservoir.clone();
    let expected = visits(|visit| run_one_by_one(&mut one, &views, visit).unwrap());
    let mut first = reservoir.clone();
    let reference = visits(|visit| first.run_many(&views, visit).unwrap());
    for ((i, got), (_, want)) in reference.iter().zip(&expected) {
        let worst = got
            .iter()
            .zip(want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(
            worst <= tolerance,
            "{name}: sequence {i} differs by {worst}"
        );
    }
    let features = FeatureParams::new()
        .summaries(vec![Summary::MeanLast, Summary::Last, Summary::Mean])
        .last_k(4)
        .warmup(1)
        .check()
        .unwrap();
    // The sequences the features can summarize (a step after the warm-up), and the bits of
    // their summaries of the states above.
    let long: Vec<usize> = (0..views.len())
        .filter(|&i| views[i].nrows() >= 2)
        .collect();
    let long_views: Vec<ArrayView2<f64>> = long.iter().map(|&i| views[i]).collect();
    let summarized: Vec<Vec<u64>> = long
        .iter()
        .enumerate()
        .map(|(row, &i)| {
            let states = reference[i].1.view();
            let features = features.of(states, row).unwrap();
            features.iter().map(|x| x.to_bits()).collect()
        })
        .collect();
    on_pars(|par| {
        let mut many = reservoir.clone();
        many.set_par(par);
        many.run(Array2::from_elem((7, K), 0.9).view()).unwrap();
        let got = visits(|visit| many.run_many(&views, visit).unwrap());
        assert!(
            bits(&got) == bits(&reference),
            "{name}: depends on the threads"
        );
        assert_eq!(many.state().unwrap(), one.state().unwrap(), "{name}: reset");
        let reversed: Vec<ArrayView2<f64>> = views.iter().rev().copied().collect();
        let back = visits(|visit| many.run_many(&reversed, visit).unwrap());
        for (j, states) in &back {
            let (_, want) = &reference[views.len() - 1 - j];
            assert!(
                states
                    .iter()
                    .map(|v| v.to_bits())
                    .eq(want.iter().map(|v| v.to_bits())),
                "{name}: depends on the order"
            );
        }
        let rows = many
            .sequence_features(&long_views, &features, &mut |_, _| {})
            .unwrap();
        for (i, row) in rows.rows().into_iter().enumerate() {
            assert!(
                row.iter()
                    .map(|x| x.to_bits())
                    .eq(summarized[i].iter().copied()),
                "{name}: features of sequence {i}"
            );
        }
    });
}

#[test]
fn sparse_echo_state_run_many_agrees_with_one_by_one_and_not_with_the_threads() {
    assert_blocks_agree("ESN f32 sparse", &echo_state_f32(echo_state_params()), 1e-5);
    assert_blocks_agree(
        "ESN f64 sparse",
        &echo_state_f64(echo_state_params()),
        1e-12,
    );
}

#[test]
fn dense_echo_state_run_many_equals_one_by_one_bit_for_bit() {
    let f32_dense = echo_state_f32(echo_state_params().connection_prob(1.0));
    let f64_dense = echo_state_f64(echo_state_params().connection_prob(1.0));
    on_pars(|par| {
        assert_same_as_one_by_one("ESN f32 dense", &f32_dense, par);
        assert_same_as_one_by_one("ESN f64 dense", &f64_dense, par);
    });
}

#[test]
fn noisy_echo_state_run_many_equals_one_by_one() {
    let noisy = echo_state_f32(echo_state_params().noise_level(0.05));
    on_pars(|par| assert_same_as_one_by_one("ESN f32 with noise", &noisy, par));
}

#[test]
fn lif_run_many_equals_one_by_one_bit_for_bit_for_every_feature() {
    let networks = lif_networks();
    on_pars(|par| {
        for network in &networks {
            let name = format!(
                "LIF {:?} {:?}",
                network.config().features(),
                network.config().input_mode()
            );
            assert_same_as_one_by_one(&name, network, par);
        }
    });
}

#[test]
fn lif_counters_end_as_after_one_by_one() {
    let sequences = sequences();
    let views = views(&sequences);
    let mut network = lif(LifFeatures::Trace, LifInputMode::Current).with_par(Par::all());
    network.run(views[40]).unwrap();
    assert!(
        network.spike_count() > 0,
        "the inputs make the network spike"
    );
    network.run_many(&views, &mut |_, _| Ok(())).unwrap();
    let counters = |n: &LifNetwork| (n.neuron_updates(), n.spike_count(), n.synaptic_events());
    let mut one = lif(LifFeatures::Trace, LifInputMode::Current);
    run_one_by_one(&mut one, &views, &mut |_, _| Ok(())).unwrap();
    assert_eq!(counters(&network), counters(&one));
}

/// A bad sequence (wrong width, or a non-finite value) anywhere is refused before any
/// sequence is visited.
fn assert_bad_sequences_refused_first(reservoir: &mut dyn Reservoir) {
    let wide = Array2::zeros((4, K + 1));
    let mut nan = Array2::zeros((4, K));
    nan[(2, 1)] = f64::NAN;
    let sequences = sequences();
    let mut views = views(&sequences);
    for (bad, is_expected) in [
        (wide.view(), "columns"),
        (nan.view(), "row 2, column 1 is not finite"),
    ] {
        views.push(bad);
        let mut visited = 0;
        let result = reservoir.run_many(&views, &mut |_, _| {
            visited += 1;
            Ok(())
        });
        let error = result.expect_err("a bad last sequence");
        assert!(error.to_string().contains(is_expected), "{error}");
        assert_eq!(visited, 0, "refused before any sequence was visited");
        views.pop();
    }
}

#[test]
fn bad_sequences_are_refused_before_any_is_visited() {
    on_pars(|par| {
        assert_bad_sequences_refused_first(&mut echo_state_f32(echo_state_params()).with_par(par));
        assert_bad_sequences_refused_first(&mut echo_state_f64(echo_state_params()).with_par(par));
        let mut network = lif(LifFeatures::Trace, LifInputMode::Current).with_par(par);
        assert_bad_sequences_refused_first(&mut network);
    });
}

#[test]
fn an_input_beyond_f32_is_refused_before_any_sequence_runs() {
    // Finite in f64 but not in f32, the arithmetic of the LIF network and of a GPU: refused up
    // front by every reservoir, naming the sequence's row and column.
    let sequences = sequences();
    let mut huge = sequences[17].clone();
    huge[(3, 0)] = 1e300;
    let mut views = views(&sequences);
    views[17] = huge.view();
    on_pars(|par| {
        let mut reservoirs: Vec<Box<dyn Reservoir>> = vec![
            Box::new(lif(LifFeatures::Membrane, LifInputMode::Synaptic).with_par(par)),
            Box::new(echo_state_f64(echo_state_params()).with_par(par)),
        ];
        for reservoir in &mut reservoirs {
            let mut visited = Vec::new();
            let error = reservoir
                .run_many(&views, &mut |index, _| {
                    visited.push(index);
                    Ok(())
                })
                .expect_err("1e300 is beyond f32");
            assert!(
                error
                    .to_string()
                    .contains("row 3, column 0: 1e300 is beyond"),
                "{error}"
            );
            assert!(visited.is_empty());
        }
    });
}

#[test]
fn a_visitor_error_stops_the_run_and_is_returned() {
    let sequences = sequences();
    let views = views(&sequences);
    let mut reservoirs: Vec<Box<dyn Reservoir>> = vec![
        Box::new(echo_state_f32(echo_state_params())),
        Box::new(echo_state_f64(echo_state_params())),
        Box::new(lif(LifFeatures::Counts, LifInputMode::Current)),
    ];
    on_pars(|par| {
        for reservoir in &mut reservoirs {
            reservoir.set_par(par);
            let mut visited = Vec::new();
            let result = reservoir.run_many(&views, &mut |index, _| {
                visited.push(index);
                if index == 13 {
                    Err(ReservoirError::invalid("visitor", "stop here"))
                } else {
                    Ok(())
                }
            });
            let error = result.expect_err("the visitor stops at 13");
            assert!(error.to_string().contains("stop here"), "{error}");
            assert_eq!(visited, (0..=13).collect::<Vec<_>>());
        }
    });
}
