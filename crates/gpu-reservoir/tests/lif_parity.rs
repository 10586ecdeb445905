//! The GPU LIF reservoir against the CPU reference on fresh random inputs: identical spike
//! trains and features over 1,000 steps.

use crate::common;

use common::{fresh_seed, gpu};
use gpu_reservoir::internals::LIF_GPU_ESTIMATE_SYNAPSES;
use gpu_reservoir::{GpuLifNetwork, LifStepPath};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::lif::{
    LifFeatures, LifInputMode, LifIntegration, LifNetwork, LifParams, LifWeights,
};
use reservoir_core::Reservoir;

#[test]
fn spike_trains_and_features_are_identical_over_1000_steps() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("lif_parity"));
    for case in 0..6 {
        let config = LifParams::new()
            .size([1000, 300, 2000][case % 3])
            .input_size(1 + case % 4)
            .connection_prob([0.1, 0.05, 0.01][case % 3])
            .spectral_radius(rng.random_range(0.5..2.0))
            .input_scaling(rng.random_range(0.5..3.0))
            .features(
                [
                    LifFeatures::Trace,
                    LifFeatures::Membrane,
                    LifFeatures::Counts,
                ][case % 3],
            )
            .input_mode(if case % 2 == 0 {
                LifInputMode::Current
            } else {
                LifInputMode::Synaptic
            })
            // Forward Euler (the NIR importers' step) in half the cases.
            .integration(if case % 4 < 2 {
                LifIntegration::Exact
            } else {
                LifIntegration::Euler
            })
            .count_window_steps(50)
            .seed(rng.random())
            .check()
            .expect("config");
        let inputs = Array2::from_shape_fn((1000, config.input_size()), |_| {
            if rng.random_bool(0.3) {
                rng.random_range(0.0..2.0)
            } else {
                0.0
            }
        });
        let mut cpu = LifNetwork::new(&config).expect("cpu network");
        let mut gpu = GpuLifNetwork::new_shared(&config, &device).expect("gpu network");
        let (cpu_features, cpu_spikes) = cpu.run_recording(inputs.view()).expect("cpu run");
        let (gpu_features, gpu_spikes) = gpu.run_recording(inputs.view()).expect("gpu run");
        eprintln!(
            "case {case}: {} spikes over 1000 steps of {} neurons",
            cpu_spikes.spikes().len(),
            config.size()
        );
        assert!(
            !cpu_spikes.spikes().is_empty(),
            "case {case}: the network is silent, the test proves nothing"
        );
        assert_eq!(
            gpu_spikes, cpu_spikes,
            "case {case}: spike trains differ ({config:?})"
        );
        let differing = gpu_features
            .iter()
            .zip(&cpu_features)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(
            differing, 0,
            "case {case}: {differing} feature values differ"
        );
        assert_eq!(gpu.spike_count(), cpu.spike_count());
        // A second run continues from the kept state, on both.
        let more =
            Array2::from_shape_fn((200, config.input_size()), |_| rng.random_range(0.0..1.0));
        assert_eq!(
            gpu.run(more.view()).expect("gpu"),
            cpu.run(more.view()).expect("cpu"),
            "case {case}: continuation differs"
        );
        gpu.reset().expect("gpu reset");
        cpu.reset().expect("cpu reset");
        assert_eq!(
            gpu.run(more.view()).expect("gpu"),
            cpu.run(more.view()).expect("cpu"),
            "case {case}: after reset"
        );
    }
}

/// Weights drawn with the spectral estimate's products on the GPU are the CPU's bit for bit:
/// one W whose estimate converges within the default 5000 products, one that stops at its
/// budget (above ~1.7·10^6 synapses), both past the size from which the GPU estimates.
#[test]
fn weights_with_the_gpu_estimate_are_the_cpus() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("lif_gpu_estimate"));
    for (size, connection_prob) in [(12_000, 0.01), (20_000, 0.01)] {
        let config = LifParams::new()
            .size(size)
            .connection_prob(connection_prob)
            .spectral_radius(rng.random_range(0.5..2.0))
            .seed(rng.random())
            .check()
            .expect("config");
        let on_cpu = LifWeights::generate(&config).expect("CPU weights");
        assert!(on_cpu.recurrent().nnz() >= LIF_GPU_ESTIMATE_SYNAPSES);
        let with_gpu = GpuLifNetwork::generate_weights(&config, &device).expect("GPU weights");
        assert!(with_gpu == on_cpu, "N = {size}: the weights differ");
        // The network made from the estimate's copy of W on the device (scaled and rounded
        // there) runs as the CPU network on the same weights: its W for the gather, its Wᵀ
        // (built from that W) for the events.
        let (network, weights) = GpuLifNetwork::generate(&config, &device).expect("network");
        assert!(
            weights == on_cpu,
            "N = {size}: the network's weights differ"
        );
        // Levels held for 10 ms (100 steps) at a time over 100 ms: the first neurons fire
        // after 15–35 ms from rest.
        let levels: Vec<f64> = (0..10).map(|_| rng.random_range(1.0..3.0)).collect();
        let inputs = Array2::from_shape_fn((1000, config.input_size()), |(t, _)| levels[t / 100]);
        let mut cpu = LifNetwork::from_weights(&config, on_cpu).expect("cpu network");
        let (cpu_features, cpu_spikes) = cpu.run_recording(inputs.view()).expect("cpu run");
        assert!(!cpu_spikes.spikes().is_empty(), "N = {size}: silent");
        let mut network = Some(network);
        for path in [LifStepPath::Gather, LifStepPath::EventDriven] {
            let mut gpu = match network.take() {
                Some(network) => network,
                None => {
                    GpuLifNetwork::generate(&config, &device)
                        .expect("network")
                        .0
                }
            }
            .with_step_path(path);
            let (features, spikes) = gpu.run_recording(inputs.view()).expect("gpu run");
            assert_eq!(spikes, cpu_spikes, "N = {size}, {path:?}: spike trains");
            let bits = |a: &Array2<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&features), bits(&cpu_features), "N = {size}, {path:?}");
        }
    }
}

#[test]
fn process_gpu_and_bad_inputs() {
    let Some(device) = gpu() else { return };
    let config = LifParams::new()
        .size(100)
        .input_size(4)
        .input_mode(LifInputMode::Synaptic)
        .check()
        .expect("config");
    let mut gpu = GpuLifNetwork::new_shared(&config, &device).expect("gpu network");
    let mut bad = Array2::zeros((10, 4));
    bad[(3, 1)] = f64::INFINITY;
    assert!(gpu.run(bad.view()).is_err());
    assert!(gpu.run(Array2::zeros((10, 3)).view()).is_err());
    let pattern = reservoir_core::spikes::SpikePattern::new(vec![], 4, 20.0).expect("pattern");
    assert_eq!(
        gpu.process_gpu(&pattern).expect("process").dim(),
        ((20.0 / config.dt_ms()).ceil() as usize, 100)
    );
}

/// Runs `sequences` through `run_many` and returns every sequence's features, in the order
/// they were visited (checked to be the input order).
fn visited(reservoir: &mut dyn Reservoir, sequences: &[Array2<f64>]) -> Vec<Array2<f64>> {
    let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
    let mut out = Vec::new();
    reservoir
        .run_many(&views, &mut |index, states| {
            assert_eq!(index, out.len(), "sequences visited out of order");
            out.push(states.to_owned());
            Ok(())
        })
        .expect("run_many");
    out
}

#[test]
fn many_sequences_run_as_batches_identical_to_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("lif_batches"));
    // (neurons, sequences, longest): the last case's flags and features exceed one batch's
    // bytes, so it runs as several batches.
    for (case, (size, count, longest)) in [(400, 37, 120), (1000, 9, 300), (2000, 10, 3000)]
        .into_iter()
        .enumerate()
    {
        let config = LifParams::new()
            .size(size)
            .input_size(1 + case)
            .connection_prob(0.05)
            .spectral_radius(rng.random_range(0.8..1.5))
            // Current input (case 1) needs the stronger drive: below 3, over half of its nine
            // sequences stayed silent for one seed in five (the CPU side alone, 200 seeds), and
            // the check below failed without testing anything.
            .input_scaling(if case == 1 {
                rng.random_range(3.0..4.0)
            } else {
                rng.random_range(1.0..4.0)
            })
            .features(
                [
                    LifFeatures::Counts,
                    LifFeatures::Trace,
                    LifFeatures::Membrane,
                ][case],
            )
            .input_mode(if case == 1 {
                LifInputMode::Current
            } else {
                LifInputMode::Synaptic
            })
            .count_window_steps(20)
            .seed(rng.random())
            .check()
            .expect("config");
        // Uneven lengths, with an empty sequence and a one-step one among them.
        let sequences: Vec<Array2<f64>> = (0..count)
            .map(|i| {
                let steps = match i {
                    1 => 0,
                    2 => 1,
                    _ => rng.random_range(longest / 2..=longest),
                };
                Array2::from_shape_fn((steps, config.input_size()), |_| {
                    if rng.random_bool(0.3) {
                        rng.random_range(0.0..2.0)
                    } else {
                        0.0
                    }
                })
            })
            .collect();
        let mut cpu = LifNetwork::new(&config).expect("cpu network");
        let mut gpu = GpuLifNetwork::new_shared(&config, &device).expect("gpu network");
        // State left by an earlier run must not leak into the sequences.
        gpu.run(sequences[0].view()).expect("gpu run");
        let expected = visited(&mut cpu, &sequences);
        let got = visited(&mut gpu, &sequences);
        let spiking = expected
            .iter()
            .filter(|s| s.iter().any(|&v| v != 0.0))
            .count();
        assert!(
            spiking > count / 2,
            "case {case}: too few sequences do anything"
        );
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(g.dim(), e.dim(), "case {case}, sequence {i}");
            let differing = g
                .iter()
                .zip(e)
                .filter(|(a, b)| a.to_bits() != b.to_bits())
                .count();
            assert_eq!(differing, 0, "case {case}, sequence {i}: values differ");
        }
        assert_eq!(gpu.state().expect("gpu"), cpu.state().expect("cpu"));
        assert_eq!(gpu.spike_count(), 0, "the network is left reset");
        // The gather path batches them (the last case in several batches), and the
        // event-driven path runs them one after another, with the same results.
        let mut gather = GpuLifNetwork::new_shared(&config, &device)
            .expect("gpu network")
            .with_step_path(gpu_reservoir::LifStepPath::Gather);
        assert_eq!(
            visited(&mut gather, &sequences),
            expected,
            "case {case}, gather"
        );
        let mut event = GpuLifNetwork::new_shared(&config, &device)
            .expect("gpu network")
            .with_step_path(gpu_reservoir::LifStepPath::EventDriven);
        assert_eq!(visited(&mut event, &sequences[..4]), expected[..4]);
    }
}
