//! `GpuReservoirComputer::sequence_features` (summed on the device when the sequences are
//! batched, projected and modelled there too, summarized on the host when they run one after
//! another) against the CPU reservoir's `sequence_features` with the same config and weights,
//! in f32.

use crate::common;

use common::{fresh_seed, gpu, relative_error};
use gpu_reservoir::{GemmMath, GpuDevice, GpuReservoirComputer, ManySequences};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::features::{FeatureParams, SequenceFeatures, Summary};
use reservoir_core::{cpu_reservoir, Precision, Reservoir, ReservoirConfig, ReservoirParams};
use reservoir_core::{ReservoirWeights, Result};

/// Bound of ‖GPU − CPU‖ / ‖CPU‖ over all features, and of the largest |GPU − CPU|: the f32
/// bound of `batched_parity.rs` (states of the batched GEMM differ from the CPU's by the f32
/// sum order only; sums of at most 60 states in f32 add ~60 roundings of 6e-8).
const RELATIVE_BOUND: f64 = 1e-4;
const ABSOLUTE_BOUND: f64 = 1e-4;

/// An f32 echo-state config of `n` units and `k` inputs.
fn config(rng: &mut ChaCha8Rng, n: usize, k: usize, noise: f64) -> ReservoirConfig {
    ReservoirParams::new()
        .size(n)
        .input_size(k)
        .connection_prob(0.1)
        .spectral_radius(0.9)
        .leak_rate(0.5)
        .bias_scaling(0.2)
        .noise_level(noise)
        .precision(Precision::F32)
        .seed(rng.random())
        .check()
        .expect("config")
}

/// `count` sequences of `k` inputs in (−1, 1), of random lengths in `lengths`.
fn sequences(
    rng: &mut ChaCha8Rng,
    count: usize,
    k: usize,
    lengths: std::ops::RangeInclusive<usize>,
) -> Vec<Array2<f64>> {
    (0..count)
        .map(|_| {
            let steps = rng.random_range(lengths.clone());
            Array2::from_shape_fn((steps, k), |_| rng.random_range(-1.0..1.0))
        })
        .collect()
}

/// The GPU reservoir of `config` and `weights`, running many sequences as `how` says.
fn gpu_reservoir(
    device: &GpuDevice,
    config: &ReservoirConfig,
    weights: &ReservoirWeights,
    how: ManySequences,
) -> GpuReservoirComputer {
    GpuReservoirComputer::from_weights(config, weights.clone(), device)
        .expect("gpu reservoir")
        .with_many_sequences(how)
        .expect("many sequences")
}

/// Every `(done, total)` progress call of a run.
type Progress = Vec<(usize, usize)>;

/// `reservoir.sequence_features`, with every progress call recorded.
fn features_of(
    reservoir: &mut dyn Reservoir,
    sequences: &[Array2<f64>],
    features: &SequenceFeatures,
) -> Result<(Array2<f64>, Progress)> {
    let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
    let mut calls = Vec::new();
    let rows = reservoir.sequence_features(&views, features, &mut |done, total| {
        calls.push((done, total))
    })?;
    Ok((rows, calls))
}

/// Asserts the GPU's features within the bounds of the CPU's, and returns the (relative,
/// max abs) difference.
fn assert_close(what: &str, got: &Array2<f64>, expected: &Array2<f64>) -> (f64, f64) {
    assert_eq!(got.dim(), expected.dim(), "{what}: shape");
    assert!(
        got.iter().all(|v| v.is_finite()),
        "{what}: a feature is not finite"
    );
    let (relative, max) = relative_error(got, expected);
    eprintln!("{what}: relative {relative:.2e}, max abs {max:.2e}");
    assert!(relative < RELATIVE_BOUND, "{what}: relative {relative:.2e}");
    assert!(max < ABSOLUTE_BOUND, "{what}: max abs {max:.2e}");
    (relative, max)
}

/// Progress ends with every sequence done, never goes back, and is called `at_least` times.
fn assert_progress(what: &str, calls: &[(usize, usize)], total: usize, at_least: usize) {
    assert!(
        calls.len() >= at_least,
        "{what}: {} progress calls",
        calls.len()
    );
    assert_eq!(
        calls.last(),
        Some(&(total, total)),
        "{what}: progress ends done"
    );
    assert!(
        calls.windows(2).all(|w| w[0].0 < w[1].0) && calls.iter().all(|c| c.1 == total),
        "{what}: progress {calls:?}"
    );
}

#[test]
fn batched_features_of_ragged_sequences_match_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("features_ragged"));
    let config = config(&mut rng, 300, 3, 0.0);
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let warmup = 3;
    let averages = FeatureParams::new()
        .summaries(vec![Summary::MeanLast, Summary::Last, Summary::Mean])
        .last_k(5)
        .warmup(warmup)
        .check()
        .expect("features");
    let last = SequenceFeatures::default();
    // Every length from the shortest the summaries allow (1 for `last`) to 60.
    let cases = [
        (
            "last, mean, mean_last after a warm-up",
            &averages,
            warmup + 1,
        ),
        ("last of sequences from 1 step", &last, 1),
    ];
    for (what, features, shortest) in cases {
        let inputs = sequences(&mut rng, 300, 3, shortest..=60);
        let mut cpu = cpu_reservoir(&config, weights.clone(), reservoir_core::Par::all())
            .expect("cpu reservoir");
        let (expected, _) = features_of(cpu.as_mut(), &inputs, features).expect("cpu features");
        // Auto batches 300 sequences of at most 60 steps with N = 300 (f32 GEMM).
        let mut gpu = gpu_reservoir(&device, &config, &weights, ManySequences::Auto);
        let (got, calls) = features_of(&mut gpu, &inputs, features).expect("gpu features");
        assert_eq!(got.ncols(), features.width(300));
        assert_close(what, &got, &expected);
        assert_progress(what, &calls, inputs.len(), 1);
        // The sums are taken in a fixed order: the same features bit for bit, run to run.
        let (again, _) = features_of(&mut gpu, &inputs, features).expect("gpu features");
        assert!(
            again
                .iter()
                .zip(&got)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{what}: the features differ from one run to the next"
        );
        assert!(
            gpu.state().expect("state").iter().all(|&x| x == 0.0),
            "{what}: the reservoir is left reset"
        );
    }

    // Too short a sequence, or one of the wrong width, is refused before anything runs.
    let mut gpu = gpu_reservoir(
        &device,
        &config,
        &weights,
        ManySequences::Batched(GemmMath::F32),
    );
    let mut inputs = sequences(&mut rng, 40, 3, 10..=20);
    inputs[7] = Array2::zeros((warmup, 3));
    let mut called = false;
    let views: Vec<_> = inputs.iter().map(|s| s.view()).collect();
    let message = gpu
        .sequence_features(&views, &averages, &mut |_, _| called = true)
        .expect_err("sequence 7 is all warm-up")
        .to_string();
    assert!(message.contains("sequence 7"), "{message}");
    inputs[7] = Array2::zeros((15, 4));
    let views: Vec<_> = inputs.iter().map(|s| s.view()).collect();
    assert!(
        gpu.sequence_features(&views, &averages, &mut |_, _| called = true)
            .is_err(),
        "wrong input width"
    );
    assert!(!called, "no progress before the checks pass");
    let (empty, _) = features_of(&mut gpu, &[], &averages).expect("no sequences");
    assert_eq!(empty.dim(), (0, averages.width(300)));
}

#[test]
fn features_over_several_batches_and_time_chunks_match_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("features_batches"));
    // N = 512: a features batch holds 4096 sequences, whose 60 steps take 4 time chunks of 16
    // (`batched::tests::feature_batches_are_limited_by_the_device_chunk_and_the_noise_only`),
    // so 4100 sequences make two batches, the first of several chunks.
    let (n, k) = (512, 2);
    let config = config(&mut rng, n, k, 0.0);
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let features = FeatureParams::new()
        .summaries(vec![Summary::Last, Summary::Mean, Summary::MeanLast])
        .last_k(8)
        .warmup(1)
        .check()
        .expect("features");
    let mut inputs = sequences(&mut rng, 4100, k, 2..=60);
    inputs[0] = Array2::from_shape_fn((60, k), |_| rng.random_range(-1.0..1.0));
    let mut cpu =
        cpu_reservoir(&config, weights.clone(), reservoir_core::Par::all()).expect("cpu reservoir");
    let (expected, _) = features_of(cpu.as_mut(), &inputs, &features).expect("cpu features");
    let mut gpu = gpu_reservoir(
        &device,
        &config,
        &weights,
        ManySequences::Batched(GemmMath::F32),
    );
    let (got, calls) = features_of(&mut gpu, &inputs, &features).expect("gpu features");
    eprintln!("progress calls (one per batch): {calls:?}");
    assert_progress("several batches", &calls, inputs.len(), 2);
    assert_close(
        "4100 sequences, several batches and chunks",
        &got,
        &expected,
    );
}

#[test]
fn one_by_one_features_match_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("features_one_by_one"));
    let config = config(&mut rng, 200, 2, 0.0);
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let features = FeatureParams::new()
        .summaries(vec![Summary::Mean, Summary::MeanLast, Summary::Last])
        .last_k(4)
        .warmup(2)
        .check()
        .expect("features");
    let inputs = sequences(&mut rng, 20, 2, 3..=40);
    let mut cpu =
        cpu_reservoir(&config, weights.clone(), reservoir_core::Par::all()).expect("cpu reservoir");
    let (expected, _) = features_of(cpu.as_mut(), &inputs, &features).expect("cpu features");
    let mut gpu = gpu_reservoir(&device, &config, &weights, ManySequences::OneByOne);
    let (got, calls) = features_of(&mut gpu, &inputs, &features).expect("gpu features");
    assert_progress("one by one", &calls, inputs.len(), inputs.len());
    assert_close("one by one", &got, &expected);
    // Auto runs fewer sequences than it batches one after another too.
    let mut auto = gpu_reservoir(&device, &config, &weights, ManySequences::Auto);
    let (got, calls) = features_of(&mut auto, &inputs, &features).expect("gpu features");
    assert_progress("auto, few sequences", &calls, inputs.len(), inputs.len());
    assert_close("auto, few sequences", &got, &expected);
}

#[test]
fn noisy_batched_features_match_the_cpu_call_after_call() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("features_noise"));
    let config = config(&mut rng, 300, 2, 0.1);
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let features = FeatureParams::new()
        .summaries(vec![Summary::Last, Summary::MeanLast, Summary::Mean])
        .last_k(6)
        .warmup(4)
        .check()
        .expect("features");
    let inputs = sequences(&mut rng, 64, 2, 5..=60);
    // The CPU runs noisy sequences one after another, its noise stream carrying on from
    // sequence to sequence and from call to call; the batched GPU draws the same values.
    let mut cpu =
        cpu_reservoir(&config, weights.clone(), reservoir_core::Par::all()).expect("cpu reservoir");
    let mut gpu = gpu_reservoir(
        &device,
        &config,
        &weights,
        ManySequences::Batched(GemmMath::F32),
    );
    let mut first = None;
    for call in 0..2 {
        let (expected, _) = features_of(cpu.as_mut(), &inputs, &features).expect("cpu features");
        let (got, calls) = features_of(&mut gpu, &inputs, &features).expect("gpu features");
        assert_progress("noise", &calls, inputs.len(), 1);
        assert_close(&format!("noise, call {call}"), &got, &expected);
        first.get_or_insert(expected);
    }
    // The noise matters: without it the features are far from these (else the comparison
    // above could not see noise drawn in the wrong order).
    let quiet = config.to_params().noise_level(0.0).check().expect("config");
    let mut cpu =
        cpu_reservoir(&quiet, weights, reservoir_core::Par::all()).expect("cpu reservoir");
    let (noiseless, _) = features_of(cpu.as_mut(), &inputs, &features).expect("cpu features");
    let noisy = first.expect("two calls ran");
    let (effect, _) = relative_error(&noisy, &noiseless);
    eprintln!("noise changes the features by {effect:.2e} (relative)");
    assert!(effect > 1e-2, "the noise is too weak to test: {effect:.2e}");
}

/// Bound of ‖GPU − CPU‖ / ‖CPU‖ for features made from projected states or state models:
/// the projection adds an f32 GEMM, and a model's solve multiplies the states' f32
/// differences by its system's conditioning (a ridge of 1 keeps it small); well within what a
/// classifier on these features can tell apart.
const SUMMARIZED_RELATIVE_BOUND: f64 = 1e-3;

/// `features` of `params` ready to compute: fitted on the CPU's states of `training` when
/// they ask for principal components.
fn fitted(
    cpu: &mut dyn Reservoir,
    training: &[Array2<f64>],
    params: FeatureParams,
) -> SequenceFeatures {
    let features = params.check().expect("features");
    let views: Vec<_> = training.iter().map(|s| s.view()).collect();
    reservoir_core::reservoir::fit_features(cpu, &views, &features).expect("fit")
}

#[test]
fn projected_and_model_space_features_made_on_the_device_match_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("features_summarized"));
    // N = 60: the model space of the raw states of both directions (120 wide) is within the
    // device solve's 128.
    let (n, k, warmup) = (60, 3, 2);
    let config = config(&mut rng, n, k, 0.0);
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let mut cpu =
        cpu_reservoir(&config, weights.clone(), reservoir_core::Par::all()).expect("cpu reservoir");
    let training = sequences(&mut rng, 80, k, 20..=50);
    let base = || {
        FeatureParams::new()
            .last_k(4)
            .warmup(warmup)
            .model_ridge(1.0)
    };
    let cases = [
        (
            "projection, last, mean, mean_last",
            base()
                .summaries(vec![Summary::Last, Summary::Mean, Summary::MeanLast])
                .components(12),
        ),
        (
            "projection, model space between mean and last",
            base()
                .summaries(vec![Summary::Mean, Summary::ModelSpace, Summary::Last])
                .components(10),
        ),
        (
            "model space of the raw states",
            base().summaries(vec![Summary::ModelSpace, Summary::Mean]),
        ),
        (
            "bidirectional, projection, model space",
            base()
                .summaries(vec![Summary::Last, Summary::ModelSpace])
                .components(8)
                .bidirectional(true),
        ),
        (
            "bidirectional, projection, averages",
            base()
                .summaries(vec![Summary::MeanLast, Summary::Mean])
                .components(16)
                .bidirectional(true),
        ),
        (
            "bidirectional model space of the raw states",
            base()
                .summaries(vec![Summary::Last, Summary::ModelSpace])
                .bidirectional(true),
        ),
    ];
    let mut gpu = gpu_reservoir(
        &device,
        &config,
        &weights,
        ManySequences::Batched(GemmMath::F32),
    );
    for (what, params) in cases {
        let features = fitted(cpu.as_mut(), &training, params);
        // Fresh sequences of unequal lengths, from the shortest a model allows.
        let inputs = sequences(&mut rng, 150, k, warmup + 2..=45);
        let (expected, _) = features_of(cpu.as_mut(), &inputs, &features).expect("cpu features");
        let (got, calls) = features_of(&mut gpu, &inputs, &features).expect("gpu features");
        assert_eq!(got.ncols(), features.width(n), "{what}");
        assert_summarized_close(what, &got, &expected);
        assert_progress(what, &calls, inputs.len(), 1);
        assert!(
            gpu.state().expect("state").iter().all(|&x| x == 0.0),
            "{what}: the reservoir is left reset"
        );
    }
}

#[test]
fn model_space_features_over_several_batches_match_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("features_model_batches"));
    // 128 components: the model space's Grams keep a batch to 680 sequences
    // (`batched::summarized::tests::model_space_batches_keep_their_grams_within_budget`), so
    // 1500 sequences make three batches.
    let (n, k) = (300, 2);
    let config = config(&mut rng, n, k, 0.0);
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let mut cpu =
        cpu_reservoir(&config, weights.clone(), reservoir_core::Par::all()).expect("cpu reservoir");
    let training = sequences(&mut rng, 200, k, 30..=60);
    let features = fitted(
        cpu.as_mut(),
        &training,
        FeatureParams::new()
            .summaries(vec![Summary::ModelSpace, Summary::Last])
            .components(128)
            .warmup(1),
    );
    let inputs = sequences(&mut rng, 1500, k, 3..=60);
    let (expected, _) = features_of(cpu.as_mut(), &inputs, &features).expect("cpu features");
    let mut gpu = gpu_reservoir(
        &device,
        &config,
        &weights,
        ManySequences::Batched(GemmMath::F32),
    );
    let (got, calls) = features_of(&mut gpu, &inputs, &features).expect("gpu features");
    eprintln!("progress calls (one per batch): {calls:?}");
    assert_progress("model space, several batches", &calls, inputs.len(), 3);
    assert_summarized_close("model space, several batches", &got, &expected);
    // With noise, one direction: the batches draw the noise in the CPU's order.
    let noisy = config
        .to_params()
        .noise_level(0.05)
        .check()
        .expect("config");
    let mut cpu =
        cpu_reservoir(&noisy, weights.clone(), reservoir_core::Par::all()).expect("cpu reservoir");
    let mut gpu = gpu_reservoir(
        &device,
        &noisy,
        &weights,
        ManySequences::Batched(GemmMath::F32),
    );
    let few = &inputs[..200];
    let (expected, _) = features_of(cpu.as_mut(), few, &features).expect("cpu features");
    let (got, _) = features_of(&mut gpu, few, &features).expect("gpu features");
    assert_summarized_close("model space with noise", &got, &expected);
}

/// Asserts the GPU's projected or modelled features within [`SUMMARIZED_RELATIVE_BOUND`] of
/// the CPU's.
fn assert_summarized_close(what: &str, got: &Array2<f64>, expected: &Array2<f64>) {
    assert_eq!(got.dim(), expected.dim(), "{what}: shape");
    assert!(
        got.iter().all(|v| v.is_finite()),
        "{what}: a feature is not finite"
    );
    let (relative, max) = relative_error(got, expected);
    let largest = expected.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    eprintln!("{what}: relative {relative:.2e}, max abs {max:.2e} (largest {largest:.2e})");
    assert!(
        relative < SUMMARIZED_RELATIVE_BOUND,
        "{what}: relative {relative:.2e}"
    );
    assert!(
        max < SUMMARIZED_RELATIVE_BOUND * largest.max(1.0),
        "{what}: max abs {max:.2e}"
    );
}
