//! The model kinds and sequence representations built around GPU echo-state networks against
//! the same built around the CPU's, on fresh random inputs: a deep stack with GPU layers (its
//! runs and its many sequences), the deep stack run whole on the device
//! ([`GpuDeepReservoir`]), the input link, and bidirectional, projected and model-space
//! sequence features, whose states come from the GPU's batched runs.

use crate::common;

use common::{fresh_seed, gpu, random_inputs, relative_error, run_many, views};
use gpu_reservoir::internals::CHUNK_STEPS;
use gpu_reservoir::{GpuDeepReservoir, GpuReservoirComputer};
use ndarray::{s, Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::architecture::{Architecture, ArchitectureWeights, ReservoirKind};
use reservoir_core::deep::{cpu_deep_esn, DeepEsnConfig, DeepEsnLayerParams, DeepEsnParams};
use reservoir_core::features::{FeatureParams, Summary};
use reservoir_core::reservoir::fit_features;
use reservoir_core::{
    CsrMatrix, EchoStateNetwork, Par, Precision, Reservoir, ReservoirParams, ReservoirWeights,
};

/// f32 states of the GPU and the CPU differ by their sum orders: the bound of
/// `batched_parity.rs`, for states and for features summed from them.
const BOUND: f64 = 1e-4;

fn sequences(rng: &mut ChaCha8Rng, count: usize, k: usize) -> Vec<Array2<f64>> {
    (0..count)
        .map(|_| {
            let steps = rng.random_range(6..=40);
            Array2::from_shape_fn((steps, k), |_| rng.random_range(-1.0..1.0))
        })
        .collect()
}

fn check(what: &str, gpu: &Array2<f64>, cpu: &Array2<f64>) {
    assert_eq!(gpu.dim(), cpu.dim(), "{what}: shapes");
    let (relative, largest) = relative_error(gpu, cpu);
    assert!(
        relative < BOUND && largest < BOUND * 10.0,
        "{what}: relative {relative:.2e}, largest {largest:.2e}"
    );
}

#[test]
fn a_deep_stack_of_gpu_layers_runs_as_the_cpus() {
    let Some(device) = gpu() else { return };
    let mut rng =
        ChaCha8Rng::seed_from_u64(fresh_seed("a_deep_stack_of_gpu_layers_runs_as_the_cpus"));
    let layers = vec![
        DeepEsnLayerParams::new().size(300).spectral_radius(0.9),
        DeepEsnLayerParams::new()
            .size(200)
            .leak_rate(0.5)
            .input_scaling(0.5),
        DeepEsnLayerParams::new().size(100).spectral_radius(0.8),
    ];
    for input_to_all in [false, true] {
        let config = DeepEsnParams::new()
            .layers(layers.clone())
            .input_size(4)
            .input_to_all(input_to_all)
            .seed(rng.random())
            .precision(Precision::F32)
            .check()
            .expect("config");
        let architecture =
            Architecture::new(ReservoirKind::DeepEchoState(config)).with_input_to_readout(true);
        let weights = architecture.generate(&[]).expect("weights");
        let mut on_gpu = architecture
            .build(&weights, Par::Seq, |c, w| {
                Ok(Box::new(GpuReservoirComputer::from_weights(c, w, &device)?))
            })
            .expect("gpu stack");
        let mut on_cpu = architecture.cpu(&weights, Par::Seq).expect("cpu stack");
        let data = sequences(&mut rng, 3, 4);
        let long = Array2::from_shape_fn((500, 4), |_| rng.random_range(-1.0..1.0));
        check(
            "one long run",
            &on_gpu.run(long.view()).expect("gpu run"),
            &on_cpu.run(long.view()).expect("cpu run"),
        );
        let views: Vec<_> = data.iter().map(|s| s.view()).collect();
        let features = FeatureParams::new()
            .summaries(vec![Summary::Last, Summary::Mean])
            .check()
            .expect("features");
        check(
            "features of many sequences",
            &on_gpu
                .sequence_features(&views, &features, &mut |_, _| {})
                .expect("gpu"),
            &on_cpu
                .sequence_features(&views, &features, &mut |_, _| {})
                .expect("cpu"),
        );
    }
}

/// Three layers of different sizes, K = 4, with and without the input to every layer, every
/// layer or layers 0 and 2 read out.
fn deep_configs(rng: &mut ChaCha8Rng) -> Vec<DeepEsnConfig> {
    let layers = vec![
        DeepEsnLayerParams::new().size(300).spectral_radius(0.9),
        DeepEsnLayerParams::new()
            .size(200)
            .leak_rate(0.5)
            .input_scaling(0.5),
        DeepEsnLayerParams::new().size(100).spectral_radius(0.8),
    ];
    let mut configs = Vec::new();
    for input_to_all in [false, true] {
        for readout in [None, Some(vec![0, 2])] {
            let config = DeepEsnParams::new()
                .layers(layers.clone())
                .input_size(4)
                .input_to_all(input_to_all)
                .readout_layers(readout)
                .seed(rng.random())
                .precision(Precision::F32)
                .check()
                .expect("config");
            configs.push(config);
        }
    }
    configs
}

#[test]
fn the_device_stack_runs_as_the_cpus_across_chunks_calls_and_states() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed(
        "the_device_stack_runs_as_the_cpus_across_chunks_calls_and_states",
    ));
    for config in deep_configs(&mut rng) {
        let label = format!(
            "input_to_all {}, readout {:?}",
            config.input_to_all(),
            config.readout_layers()
        );
        let mut on_gpu = GpuDeepReservoir::new_shared(&config, &device).expect("gpu stack");
        let mut on_cpu = cpu_deep_esn(&config, Par::all()).expect("cpu stack");
        assert_eq!(
            (on_gpu.size(), on_gpu.input_size()),
            (on_cpu.size(), on_cpu.input_size())
        );
        // Longer than a device chunk: the second chunk starts from the first's last states.
        let long = random_inputs(&mut rng, CHUNK_STEPS + 300, 4);
        let whole = on_gpu.run(long.view()).expect("gpu run");
        check(
            &format!("{label}: a run of two chunks"),
            &whole,
            &on_cpu.run(long.view()).expect("cpu run"),
        );
        assert_eq!(
            on_gpu.state().expect("state"),
            whole.row(whole.nrows() - 1),
            "{label}: the state is the last row"
        );
        check(
            &format!("{label}: the state after the run"),
            &on_gpu
                .state()
                .expect("gpu state")
                .insert_axis(ndarray::Axis(0)),
            &on_cpu
                .state()
                .expect("cpu state")
                .insert_axis(ndarray::Axis(0)),
        );

        // A run split across calls continues from where the first call left every layer.
        on_gpu.reset().expect("reset");
        let head = on_gpu.run(long.slice(s![..200, ..])).expect("head");
        let saved = on_gpu.state().expect("state");
        let tail = on_gpu.run(long.slice(s![200..500, ..])).expect("tail");
        assert_eq!(head, whole.slice(s![..200, ..]), "{label}: the first call");
        assert_eq!(
            tail,
            whole.slice(s![200..500, ..]),
            "{label}: the second call continues the first"
        );

        if config.readout_layers().is_some() {
            // The state does not hold layer 1's: setting it is refused, as on the CPU.
            assert!(on_gpu.set_state(saved.view()).is_err(), "{label}");
            assert!(on_cpu.set_state(saved.view()).is_err(), "{label}");
            continue;
        }
        let x = Array1::from_shape_fn(on_gpu.size(), |_| rng.random_range(-0.5..0.5));
        on_gpu.set_state(x.view()).expect("set state");
        let back = on_gpu.state().expect("state");
        assert!(
            (&back - &x).iter().all(|d| d.abs() < 1e-7),
            "{label}: the state set comes back"
        );
        on_cpu.set_state(x.view()).expect("cpu set state");
        let more = random_inputs(&mut rng, 300, 4);
        check(
            &format!("{label}: a run from a state set"),
            &on_gpu.run(more.view()).expect("gpu run"),
            &on_cpu.run(more.view()).expect("cpu run"),
        );
        on_gpu.set_state(saved.view()).expect("set state");
        assert_eq!(
            on_gpu.run(long.slice(s![200..500, ..])).expect("again"),
            tail,
            "{label}: a run from a saved state repeats"
        );
        assert!(on_gpu.set_state(Array1::zeros(3).view()).is_err());
        assert!(
            on_gpu.run(random_inputs(&mut rng, 5, 3).view()).is_err(),
            "{label}: wrong input width"
        );
    }
}

#[test]
fn the_device_stack_runs_many_sequences_of_unequal_lengths_as_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed(
        "the_device_stack_runs_many_sequences_of_unequal_lengths_as_the_cpu",
    ));
    let features = FeatureParams::new()
        .summaries(vec![Summary::Last, Summary::Mean])
        .check()
        .expect("features");
    for config in deep_configs(&mut rng) {
        let label = format!(
            "input_to_all {}, readout {:?}",
            config.input_to_all(),
            config.readout_layers()
        );
        let mut on_gpu = GpuDeepReservoir::new_shared(&config, &device).expect("gpu stack");
        let mut on_cpu = cpu_deep_esn(&config, Par::all()).expect("cpu stack");
        // A few sequences run one after another on the device; many short ones the layers
        // batch, layer by layer.
        for count in [5, 40] {
            let data = sequences(&mut rng, count, 4);
            let views = views(&data);
            let got = run_many(&mut on_gpu, &views).expect("gpu run_many");
            let expected = run_many(&mut on_cpu, &views).expect("cpu run_many");
            assert_eq!(got.len(), count);
            for (index, (got, expected)) in got.iter().zip(&expected).enumerate() {
                check(
                    &format!("{label}: sequence {index} of {count}"),
                    got,
                    expected,
                );
            }
            assert!(
                on_gpu.state().expect("state").iter().all(|&v| v == 0.0),
                "{label}: run_many leaves the stack reset"
            );
            check(
                &format!("{label}: features of {count} sequences"),
                &on_gpu
                    .sequence_features(&views, &features, &mut |_, _| {})
                    .expect("gpu"),
                &on_cpu
                    .sequence_features(&views, &features, &mut |_, _| {})
                    .expect("cpu"),
            );
        }
    }
}

#[test]
fn the_device_stack_matches_the_stack_of_gpu_layers_bit_for_bit() {
    // The same kernels on the same values: layer k + 1 reads layer k's f32 states on the
    // device where the other stack uploads them again from the host, and the input drive sums
    // the states below and the input beside them in the order of the joined rows.
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed(
        "the_device_stack_matches_the_stack_of_gpu_layers_bit_for_bit",
    ));
    for config in deep_configs(&mut rng) {
        let architecture = Architecture::new(ReservoirKind::DeepEchoState(config.clone()));
        let weights = architecture.generate(&[]).expect("weights");
        let mut layered = architecture
            .build(&weights, Par::Seq, |c, w| {
                Ok(Box::new(GpuReservoirComputer::from_weights(c, w, &device)?))
            })
            .expect("stack of gpu layers");
        let ArchitectureWeights::DeepEchoState(layers) = weights else {
            panic!("a deep stack's weights")
        };
        let mut whole = GpuDeepReservoir::from_weights(&config, layers, &device).expect("stack");
        let inputs = random_inputs(&mut rng, 1000, 4);
        assert_eq!(
            whole.run(inputs.view()).expect("device stack"),
            layered.run(inputs.view()).expect("stack of gpu layers"),
            "input_to_all {}, readout {:?}",
            config.input_to_all(),
            config.readout_layers()
        );
    }
}

#[test]
fn the_input_drive_reads_the_states_below_and_the_input_beside_them() {
    // Layers with W = 0 and leak 1: each state is tanh(b + W_in·[states below, input]), the
    // input drive alone, against the CPU's f64 stack of the same f32-rounded weights.
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed(
        "the_input_drive_reads_the_states_below_and_the_input_beside_them",
    ));
    let (k, sizes) = (3, [70, 45, 30]);
    let mut gpu_layers = Vec::new();
    let mut cpu_layers: Vec<Box<dyn Reservoir>> = Vec::new();
    let mut width = k;
    for n in sizes {
        let empty = CsrMatrix::from_parts(n, n, vec![0; n + 1], vec![], vec![]).expect("W = 0");
        let round = |v: f64| f64::from(v as f32);
        let input = Array2::from_shape_fn((n, width), |_| round(rng.random_range(-1.0..1.0)));
        let bias = Array1::from_shape_fn(n, |_| round(rng.random_range(-0.5..0.5)));
        let weights = ReservoirWeights::from_parts(empty, input, bias).expect("weights");
        let config = ReservoirParams::new()
            .size(n)
            .input_size(width)
            .leak_rate(1.0)
            .precision(Precision::F64)
            .check()
            .expect("config");
        cpu_layers.push(Box::new(
            EchoStateNetwork::<f64>::from_weights(&config, weights.clone()).expect("cpu layer"),
        ));
        gpu_layers
            .push(GpuReservoirComputer::from_weights(&config, weights, &device).expect("gpu"));
        width = n + k;
    }
    let mut on_gpu = GpuDeepReservoir::from_layers(gpu_layers, true, None).expect("gpu stack");
    let mut on_cpu = reservoir_core::DeepReservoir::new(cpu_layers, true, None).expect("cpu stack");
    let inputs = random_inputs(&mut rng, 300, k).mapv(|v| f64::from(v as f32));
    let got = on_gpu.run(inputs.view()).expect("gpu run");
    let expected = on_cpu.run(inputs.view()).expect("cpu run");
    let largest = (&got - &expected)
        .iter()
        .fold(0.0f64, |m, d| m.max(d.abs()));
    // f32 sums of up to 73 products of values below 1 in magnitude, through an f32 tanh, over
    // three layers: far below what a misread column would give.
    assert!(largest < 1e-4, "largest difference {largest:.2e}");
}

#[test]
fn bidirectional_projected_and_model_space_features_match_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed(
        "bidirectional_projected_and_model_space_features_match_the_cpu",
    ));
    let config = ReservoirParams::new()
        .size(400)
        .input_size(3)
        .connection_prob(0.1)
        .spectral_radius(0.9)
        .leak_rate(0.5)
        .precision(Precision::F32)
        .seed(rng.random())
        .check()
        .expect("config");
    let architecture = Architecture::new(ReservoirKind::EchoState(config));
    let weights = architecture.generate(&[]).expect("weights");
    let mut on_gpu = architecture
        .build(&weights, Par::Seq, |c, w| {
            Ok(Box::new(GpuReservoirComputer::from_weights(c, w, &device)?))
        })
        .expect("gpu");
    let mut on_cpu = architecture.cpu(&weights, Par::all()).expect("cpu");
    let data = sequences(&mut rng, 300, 3);
    let views: Vec<_> = data.iter().map(|s| s.view()).collect();
    let plain_bidirectional = FeatureParams::new()
        .summaries(vec![Summary::Last, Summary::Mean])
        .bidirectional(true)
        .check()
        .expect("features");
    check(
        "bidirectional last and mean",
        &on_gpu
            .sequence_features(&views, &plain_bidirectional, &mut |_, _| {})
            .expect("gpu"),
        &on_cpu
            .sequence_features(&views, &plain_bidirectional, &mut |_, _| {})
            .expect("cpu"),
    );
    // The projection fitted on the CPU's states, so both sides project the same way.
    let unfitted = FeatureParams::new()
        .summaries(vec![Summary::ModelSpace, Summary::Last])
        .bidirectional(true)
        .components(10)
        .check()
        .expect("features");
    let fitted = fit_features(on_cpu.as_mut(), &views, &unfitted).expect("projection");
    check(
        "bidirectional model space of 10 components",
        &on_gpu
            .sequence_features(&views, &fitted, &mut |_, _| {})
            .expect("gpu"),
        &on_cpu
            .sequence_features(&views, &fitted, &mut |_, _| {})
            .expect("cpu"),
    );
}
