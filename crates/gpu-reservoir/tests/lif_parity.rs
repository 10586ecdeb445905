//! The GPU LIF reservoir against the CPU reference on fresh random inputs: identical spike
//! trains and features over 1,000 steps.

mod common;

use common::{fresh_seed, gpu};
use gpu_reservoir::GpuLifNetwork;
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::lif::{LifFeatures, LifInputMode, LifNetwork, LifParams};
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
