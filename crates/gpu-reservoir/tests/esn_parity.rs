//! The GPU echo-state reservoir against the CPU reference, on fresh random inputs: states over
//! 1,000 steps within 1e-4 relative (f32), and the kernels' details on every step path.

use crate::common;

use common::{fresh_seed, gpu, random_inputs, relative_error};
use gpu_reservoir::{GpuDevice, GpuError, GpuReservoirComputer, PersistentWeights, StepPath};
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::spikes::{Spike, SpikePattern};
use reservoir_core::{
    Activation, CsrMatrix, EchoStateNetwork, HalfFormat, Reservoir, ReservoirConfig,
    ReservoirParams, ReservoirWeights,
};

fn compare(device: &GpuDevice, config: &ReservoirConfig, inputs: &Array2<f64>, label: &str) {
    let gpu = GpuReservoirComputer::new_shared(config, device).expect("gpu reservoir");
    compare_with(gpu, config, inputs, label);
}

/// [`compare`] on a GPU reservoir already built (e.g. on a forced step path).
fn compare_with(
    mut gpu: GpuReservoirComputer,
    config: &ReservoirConfig,
    inputs: &Array2<f64>,
    label: &str,
) {
    let mut cpu = EchoStateNetwork::<f32>::new(config).expect("cpu reservoir");
    let expected = cpu.run(inputs.view()).expect("cpu run");
    let got = gpu.run(inputs.view()).expect("gpu run");
    let (relative, max) = relative_error(&got, &expected);
    eprintln!("{label}: relative {relative:.2e}, max abs {max:.2e}");
    assert!(
        relative < 1e-4,
        "{label}: GPU states differ from the CPU by {relative:.2e} (relative)"
    );
    let (end_gpu, end_cpu) = (
        gpu.state().expect("gpu state"),
        cpu.state().expect("cpu state"),
    );
    // Within 1e-3 of the state's size: a linear reservoir's states can grow far past 1, and
    // f32 rounds them in proportion.
    assert!(
        end_gpu
            .iter()
            .zip(&end_cpu)
            .all(|(g, c)| (g - c).abs() < 1e-3 * c.abs().max(1.0)),
        "{label}: final states differ"
    );
}

#[test]
fn echo_state_states_match_the_cpu_over_1000_steps() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("echo_state_parity"));
    for case in 0..6 {
        let activation = if case == 5 {
            Activation::Identity
        } else {
            Activation::Tanh
        };
        let params = ReservoirParams::new()
            .size([1000, 300, 64][case % 3])
            .input_size(1 + case % 3)
            .connection_prob([0.1, 0.8, 0.02][case % 3])
            .spectral_radius(rng.random_range(0.5..1.2))
            .leak_rate(rng.random_range(0.1..1.0))
            .input_scaling(rng.random_range(0.1..2.0))
            .bias_scaling(rng.random_range(0.0..0.5))
            .noise_level(if case == 4 { 0.01 } else { 0.0 })
            .activation(activation)
            .seed(rng.random());
        let params = if activation == Activation::Identity {
            params.spectral_radius(0.9)
        } else {
            params
        };
        let config = params.check().expect("config");
        let inputs = random_inputs(&mut rng, 1000, config.input_size());
        compare(
            &device,
            &config,
            &inputs,
            &format!("case {case} ({config:?})"),
        );
    }
}

#[test]
fn runs_continue_across_chunks_and_calls_and_state_round_trips() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("chunks"));
    let config = ReservoirParams::new()
        .size(100)
        .seed(rng.random())
        .check()
        .expect("config");
    let steps = gpu_reservoir::internals::CHUNK_STEPS + 300;
    let inputs = random_inputs(&mut rng, steps, 1);
    compare(&device, &config, &inputs, "two chunks");

    let mut gpu = GpuReservoirComputer::new_shared(&config, &device).expect("gpu reservoir");
    let whole = gpu.run(inputs.slice(ndarray::s![..500, ..])).expect("run");
    gpu.reset().expect("reset");
    let first = gpu.run(inputs.slice(ndarray::s![..200, ..])).expect("run");
    let saved = gpu.state().expect("state");
    let second = gpu
        .run(inputs.slice(ndarray::s![200..500, ..]))
        .expect("run");
    assert_eq!(first.row(199), whole.row(199));
    assert_eq!(
        second.row(299),
        whole.row(499),
        "a run continues from the previous state"
    );
    let x = Array1::from_shape_fn(100, |_| rng.random_range(-0.5..0.5));
    gpu.set_state(x.view()).expect("set state");
    let back = gpu.state().expect("state");
    assert!((&back - &x).iter().all(|d| d.abs() < 1e-7));
    gpu.set_state(saved.view()).expect("set state");
    assert_eq!(
        gpu.run(inputs.slice(ndarray::s![200..500, ..]))
            .expect("run"),
        second
    );
    assert!(gpu.set_state(Array1::zeros(3).view()).is_err());
    assert!(
        gpu.run(random_inputs(&mut rng, 5, 2).view()).is_err(),
        "wrong input width"
    );
}

#[test]
fn tanh_and_input_drive_are_bit_identical_to_the_cpu() {
    // With W = 0 and leak 1 the state is tanh(b + W_in·u): no summation-order difference is
    // left, so the rational tanh and the input kernel must match the CPU bit for bit.
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("tanh_bits"));
    let (n, k) = (512, 2);
    let empty = CsrMatrix::from_parts(n, n, vec![0; n + 1], vec![], vec![]).expect("empty W");
    let input = Array2::from_shape_fn((n, k), |_| rng.random_range(-4.0..4.0));
    let bias = Array1::from_shape_fn(n, |_| rng.random_range(-3.0..3.0));
    let weights = ReservoirWeights::from_parts(empty, input, bias).expect("weights");
    let config = ReservoirParams::new()
        .size(n)
        .input_size(k)
        .leak_rate(1.0)
        .check()
        .expect("config");
    let inputs = random_inputs(&mut rng, 200, k) * 3.0;
    let expected = EchoStateNetwork::<f32>::from_weights(&config, weights.clone())
        .expect("cpu")
        .run(inputs.view())
        .expect("run");
    let got = GpuReservoirComputer::from_weights(&config, weights, &device)
        .expect("gpu")
        .run(inputs.view())
        .expect("run");
    let mismatches = got
        .iter()
        .zip(&expected)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    assert_eq!(
        mismatches,
        0,
        "{mismatches} of {} values differ in their bits",
        got.len()
    );
}

#[test]
fn process_gpu_runs_a_spike_pattern_like_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("process_gpu"));
    let channels = 20;
    let spikes: Vec<Spike> = (0..400)
        .map(|_| Spike {
            neuron_id: rng.random_range(0..channels),
            time_ms: rng.random_range(0.0..100.0),
            amplitude: 1.0,
        })
        .collect();
    let pattern = SpikePattern::new(spikes, channels as usize, 100.0).expect("pattern");
    let config = ReservoirParams::new()
        .size(500)
        .input_size(channels as usize)
        .input_scaling(0.5)
        .seed(rng.random())
        .check()
        .expect("config");
    let mut gpu = GpuReservoirComputer::new_shared(&config, &device).expect("gpu reservoir");
    let got = gpu.process_gpu(&pattern).expect("process_gpu");
    let expected = EchoStateNetwork::<f32>::new(&config)
        .expect("cpu")
        .run(pattern.to_input_matrix(1.0).expect("bins").view())
        .expect("run");
    assert_eq!(got.dim(), (100, 500));
    assert!(relative_error(&got, &expected).0 < 1e-4);
    let wrong = SpikePattern::new(vec![], 3, 10.0).expect("pattern");
    assert!(gpu.process_gpu(&wrong).is_err());
    assert!(GpuReservoirComputer::new_shared(&config, &device)
        .expect("gpu")
        .with_dt_ms(0.0)
        .is_err());
}

#[test]
fn the_per_step_kernels_give_the_cpu_results() {
    // The per-step path's kernels: matvec_input_kernel, matvec_reservoir_kernel,
    // leaky_integration_kernel.
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("per_step"));
    let config = ReservoirParams::new()
        .size(200)
        .seed(rng.random())
        .check()
        .expect("config");
    let gpu = GpuReservoirComputer::new_shared(&config, &device)
        .expect("gpu reservoir")
        .with_step_path(StepPath::PerStep)
        .expect("the per-step path runs on every device");
    assert_eq!(gpu.step_path(), StepPath::PerStep);
    compare_with(
        gpu,
        &config,
        &random_inputs(&mut rng, 1000, 1),
        "per-step kernels",
    );
}

#[test]
fn cluster_persistent_and_per_step_paths_agree_with_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("paths"));
    let clusters = device.info().compute_capability.0 >= 9;
    // (N, density, steps): W in registers / on chip for the small ones, a dense W streamed
    // from HBM at N = 4096, a CSR W streamed through L2 at N = 20,000, 5 %.
    for (size, density, steps) in [
        (1000, 1.0, 1000),
        (1024, 0.1, 1000),
        (100, 0.5, 1000),
        (2000, 0.05, 1000),
        (4096, 0.02, 1000),
        (37, 0.3, 1000),
        // Cluster edges: 2 blocks of 36 rows (the second owns 29 and sends 32 values), 16
        // blocks of 36, 16 blocks of 60 of which the last owns no row, runs of one and two steps.
        (65, 0.5, 1000),
        (513, 0.2, 1000),
        (900, 0.1, 1000),
        (300, 0.3, 1),
        (300, 0.3, 2),
        (4096, 1.0, 200),
        (20_000, 0.05, 200),
    ] {
        let config = ReservoirParams::new()
            .size(size)
            .connection_prob(density)
            .spectral_radius(0.9)
            .seed(rng.random())
            .check()
            .expect("config");
        let inputs = random_inputs(&mut rng, steps, 1);
        let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
        let expected = EchoStateNetwork::<f32>::from_weights(&config, weights.clone())
            .expect("cpu")
            .run(inputs.view())
            .expect("cpu run");
        for path in [StepPath::Cluster, StepPath::Persistent, StepPath::PerStep] {
            let gpu =
                GpuReservoirComputer::from_weights(&config, weights.clone(), &device).expect("gpu");
            let expected_weights = match (size, density) {
                (4096, 1.0) => Some(PersistentWeights::DenseStreamed),
                (20_000, _) => Some(PersistentWeights::CsrStreamed),
                _ => Some(PersistentWeights::CsrOnChip),
            };
            assert_eq!(
                gpu.persistent_weights(),
                expected_weights,
                "N {size} p {density}"
            );
            if path == StepPath::Cluster && !(clusters && size <= 1024) {
                let refused = gpu.with_step_path(path);
                assert!(
                    matches!(refused, Err(GpuError::Unsupported { .. })),
                    "N {size}: no cluster plan expected, got {:?}",
                    refused.map(|gpu| gpu.step_path())
                );
                continue;
            }
            let mut gpu = gpu.with_step_path(path).expect("path");
            let got = gpu.run(inputs.view()).expect("gpu run");
            let (relative, _) = relative_error(&got, &expected);
            eprintln!(
                "N {size} p {density} {path:?} (persistent W: {:?}): relative {relative:.2e}",
                gpu.persistent_weights()
            );
            assert!(relative < 1e-4, "N {size} {path:?}: {relative:.2e}");
        }
    }
}

#[test]
fn a_dense_w_rounded_to_16_bits_streams_in_16_bits_with_the_cpu_results() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("half_w"));
    let config = ReservoirParams::new()
        .size(4096)
        .connection_prob(1.0)
        .spectral_radius(0.9)
        .seed(rng.random())
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let inputs = random_inputs(&mut rng, 200, 1);
    for format in [HalfFormat::Bf16, HalfFormat::F16] {
        let rounded = weights.with_recurrent_rounded(format).expect("rounded W");
        let expected = EchoStateNetwork::<f32>::from_weights(&config, rounded.clone())
            .expect("cpu")
            .run(inputs.view())
            .expect("cpu run");
        let mut gpu = GpuReservoirComputer::from_weights(&config, rounded, &device).expect("gpu");
        assert_eq!(
            gpu.persistent_weights(),
            Some(PersistentWeights::DenseStreamedHalf(format))
        );
        let got = gpu.run(inputs.view()).expect("gpu run");
        let (relative, _) = relative_error(&got, &expected);
        eprintln!("N 4096 dense, {format:?} W streamed in 16 bits: relative {relative:.2e}");
        assert!(relative < 1e-4, "{format:?}: {relative:.2e}");
    }
}
