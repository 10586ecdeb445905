//! The model kinds and sequence representations built around GPU echo-state networks against
//! the same built around the CPU's, on fresh random inputs: a deep stack with GPU layers (its
//! runs and its many sequences), the input link, and bidirectional, projected and model-space
//! sequence features, whose states come from the GPU's batched runs.

use crate::common;

use common::{fresh_seed, gpu, relative_error};
use gpu_reservoir::GpuReservoirComputer;
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::architecture::{Architecture, ReservoirKind};
use reservoir_core::deep::{DeepEsnLayerParams, DeepEsnParams};
use reservoir_core::features::{FeatureParams, Summary};
use reservoir_core::reservoir::fit_features;
use reservoir_core::{Par, Precision, ReservoirParams};

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
