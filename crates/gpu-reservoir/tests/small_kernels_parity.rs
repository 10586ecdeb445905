//! The kernels no other test runs on small inputs, against the CPU on fresh random inputs:
//! the dense streaming persistent kernels (W in f32, f16 and bf16), the device sums of
//! sequence features, and the fused one-launch step (feature `internals`, the benchmarks'
//! baseline). With `tests/kernels_compile.rs`, which runs every other kernel once on tiny
//! inputs, these make a run of every kernel that compute-sanitizer can afford
//! (`crates/gpu-reservoir/sanitize.sh`).

use crate::common;

use common::{fresh_seed, gpu, relative_error};
use gpu_reservoir::{GemmMath, GpuReservoirComputer, ManySequences, PersistentWeights, StepPath};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::features::{FeatureParams, Summary};
use reservoir_core::{
    cpu_reservoir, EchoStateNetwork, HalfFormat, Reservoir, ReservoirParams, ReservoirWeights,
};

#[test]
fn dense_streamed_w_in_f32_f16_and_bf16_matches_the_cpu_over_a_few_steps() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("dense_streamed"));
    // N = 2048, dense: too large for the blocks' shared memory on every GPU of up to ~150 SMs
    // (16 rows of 2048 values per block on 132), so the persistent kernel streams W.
    let config = ReservoirParams::new()
        .size(2048)
        .connection_prob(1.0)
        .spectral_radius(0.9)
        .seed(rng.random())
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let inputs = Array2::from_shape_fn((3, 1), |_| rng.random_range(-1.0..1.0));
    let cases = [
        (None, PersistentWeights::DenseStreamed),
        (
            Some(HalfFormat::F16),
            PersistentWeights::DenseStreamedHalf(HalfFormat::F16),
        ),
        (
            Some(HalfFormat::Bf16),
            PersistentWeights::DenseStreamedHalf(HalfFormat::Bf16),
        ),
    ];
    for (format, streamed) in cases {
        let weights = match format {
            Some(format) => weights.with_recurrent_rounded(format).expect("rounded W"),
            None => weights.clone(),
        };
        let gpu =
            GpuReservoirComputer::from_weights(&config, weights.clone(), &device).expect("gpu");
        if gpu.persistent_weights() != Some(streamed) {
            eprintln!(
                "{streamed:?}: not this device's plan for N = 2048 ({:?}); skipped",
                gpu.persistent_weights()
            );
            continue;
        }
        let mut gpu = gpu
            .with_step_path(StepPath::Persistent)
            .expect("persistent path");
        let got = gpu.run(inputs.view()).expect("gpu run");
        let expected = EchoStateNetwork::<f32>::from_weights(&config, weights)
            .expect("cpu")
            .run(inputs.view())
            .expect("cpu run");
        let (relative, _) = relative_error(&got, &expected);
        eprintln!("{streamed:?}: relative {relative:.2e} over 3 steps");
        assert!(relative < 1e-4, "{streamed:?}: {relative:.2e}");
    }
}

#[test]
fn device_sums_of_sequence_features_match_the_cpu_on_a_small_batch() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("small_features"));
    let config = ReservoirParams::new()
        .size(64)
        .input_size(2)
        .connection_prob(0.2)
        .spectral_radius(0.9)
        .bias_scaling(0.2)
        .seed(rng.random())
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let features = FeatureParams::new()
        .summaries(vec![Summary::Last, Summary::Mean, Summary::MeanLast])
        .last_k(3)
        .warmup(2)
        .check()
        .expect("features");
    let sequences: Vec<Array2<f64>> = (0..5)
        .map(|_| {
            let steps = rng.random_range(3..=12);
            Array2::from_shape_fn((steps, 2), |_| rng.random_range(-1.0..1.0))
        })
        .collect();
    let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
    let mut cpu =
        cpu_reservoir(&config, weights.clone(), reservoir_core::Par::all()).expect("cpu reservoir");
    let expected = cpu
        .sequence_features(&views, &features, &mut |_, _| {})
        .expect("cpu features");
    let mut gpu = GpuReservoirComputer::from_weights(&config, weights, &device)
        .expect("gpu")
        .with_many_sequences(ManySequences::Batched(GemmMath::F32))
        .expect("batched");
    let got = gpu
        .sequence_features(&views, &features, &mut |_, _| {})
        .expect("gpu features");
    assert_eq!(got.dim(), expected.dim());
    let (relative, max) = relative_error(&got, &expected);
    eprintln!("features of 5 sequences: relative {relative:.2e}, max abs {max:.2e}");
    assert!(relative < 1e-4 && max < 1e-4, "{relative:.2e} {max:.2e}");
}

#[cfg(feature = "internals")]
#[test]
fn the_fused_step_matches_the_cpu() {
    use gpu_reservoir::internals::SingleSequenceSteps;
    use reservoir_core::real::Real;

    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("fused_step"));
    let (n, steps) = (300, 20);
    let config = ReservoirParams::new()
        .size(n)
        .connection_prob(0.1)
        .spectral_radius(0.9)
        .seed(rng.random())
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let mut run = SingleSequenceSteps::new(&device, &weights, steps, false).expect("steps");
    run.enqueue_fused().expect("fused steps");
    let got = run.states().expect("states");
    // The CPU reference of SingleSequenceSteps: x(0) = 0, its drive (ChaCha8 seeded with 7,
    // uniform in ±0.5, steps × N, drawn as f32), leak 0.3, tanh, all in f32.
    let mut drive_rng = ChaCha8Rng::seed_from_u64(7);
    let drive: Vec<f32> = (0..steps * n)
        .map(|_| drive_rng.random_range(-0.5..0.5))
        .collect();
    let w = weights.recurrent();
    let values: Vec<f32> = w.values().iter().map(|&v| v as f32).collect();
    let mut x = vec![0.0f32; n];
    let mut expected = Array2::<f64>::zeros((steps, n));
    for t in 0..steps {
        let mut pre: Vec<f32> = (0..n)
            .map(|i| {
                let (start, end) = (w.row_ptr()[i] as usize, w.row_ptr()[i + 1] as usize);
                let sum = (start..end).fold(0.0f32, |acc, e| {
                    acc + values[e] * x[w.col_idx()[e] as usize]
                });
                sum + drive[t * n + i]
            })
            .collect();
        <f32 as Real>::tanh_in_place(&mut pre);
        for (i, (x_i, &f)) in x.iter_mut().zip(&pre).enumerate() {
            *x_i = (1.0 - 0.3f32) * *x_i + 0.3 * f;
            expected[(t, i)] = f64::from(*x_i);
        }
    }
    let got = Array2::from_shape_vec((steps, n), got.iter().map(|&v| f64::from(v)).collect())
        .expect("shape");
    let (relative, max) = relative_error(&got, &expected);
    eprintln!("fused step over {steps} steps: relative {relative:.2e}, max abs {max:.2e}");
    assert!(relative < 1e-4, "{relative:.2e}");
}
