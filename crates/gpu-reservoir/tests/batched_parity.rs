//! Many sequences through `GpuReservoirComputer::run_many` (one GEMM per step for all of them)
//! against the CPU reservoir run on each sequence from the zero state.

use crate::common;

use common::{f16_product, f16_weights, fresh_seed, gpu, relative_error, run_many};
use gpu_reservoir::{BatchKernel, GemmMath, GpuReservoirComputer, ManySequences};
use ndarray::{Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::real::Real;
use reservoir_core::{
    Activation, EchoStateNetwork, Reservoir, ReservoirConfig, ReservoirParams, ReservoirWeights,
};

/// The f16 batched step on the CPU as the GPU computes it: W and every step's state rounded
/// to f16 before the product ([`f16_product`]), the drive b + W_in·u and the update in f32, the same
/// rational tanh.
fn f16_reference(
    config: &ReservoirConfig,
    weights: &ReservoirWeights,
    inputs: ArrayView2<f64>,
) -> Array2<f64> {
    let w = f16_weights(&weights.recurrent().to_dense());
    let (w_in, bias) = (
        weights.input().mapv(|v| v as f32),
        weights.bias().mapv(|v| v as f32),
    );
    let a = config.leak_rate() as f32;
    let mut x = vec![0.0f32; config.size()];
    let mut states = Array2::zeros((inputs.nrows(), config.size()));
    for (t, u) in inputs.rows().into_iter().enumerate() {
        let mut pre = f16_product(&w, &x);
        for (i, p) in pre.iter_mut().enumerate() {
            let mut drive = bias[i];
            for (k, &u_k) in u.iter().enumerate() {
                drive += w_in[(i, k)] * u_k as f32;
            }
            *p += drive;
        }
        <f32 as Real>::tanh_in_place(&mut pre);
        for (i, (x_i, &f)) in x.iter_mut().zip(&pre).enumerate() {
            *x_i = (1.0 - a) * *x_i + a * f;
            states[(t, i)] = f64::from(*x_i);
        }
    }
    states
}

/// The worst relative differences of `pairs` of states (got, expected): over x(1) and x(2),
/// which differ by the f32 sums' order only when both sides round the same f16 operands, and
/// over every step, where f16 flips add up.
fn f16_drift<'a>(pairs: impl IntoIterator<Item = (&'a Array2<f64>, Array2<f64>)>) -> (f64, f64) {
    let rows = ndarray::s![..2, ..];
    pairs
        .into_iter()
        .fold((0.0f64, 0.0f64), |(first_two, whole), (got, expected)| {
            let head = relative_error(
                &got.slice(rows).to_owned(),
                &expected.slice(rows).to_owned(),
            );
            (
                first_two.max(head.0),
                whole.max(relative_error(got, &expected).0),
            )
        })
}

/// The CPU reference of sequence `inputs`: a fresh f32 reservoir, from the zero state.
fn cpu_states(config: &ReservoirConfig, inputs: ArrayView2<f64>) -> Array2<f64> {
    EchoStateNetwork::<f32>::new(config)
        .expect("cpu")
        .run(inputs)
        .expect("cpu run")
}

#[test]
fn batched_states_match_the_cpu_per_sequence() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("batched"));
    let config = ReservoirParams::new()
        .size(500)
        .input_size(2)
        .connection_prob(0.2)
        .spectral_radius(0.9)
        .bias_scaling(0.2)
        .seed(rng.random())
        .check()
        .expect("config");
    let batch = 7;
    let sequences: Vec<Array2<f64>> = (0..batch)
        .map(|_| Array2::from_shape_fn((1000, 2), |_| rng.random_range(-1.0..1.0)))
        .collect();
    let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
    for (math, bound) in [
        (GemmMath::F32, 1e-4),
        (GemmMath::Tf32, 2e-2),
        (GemmMath::F16, 2e-2),
    ] {
        let mut gpu = GpuReservoirComputer::new_shared(&config, &device)
            .expect("gpu reservoir")
            .with_many_sequences(ManySequences::Batched(math))
            .expect("batch math");
        let got = run_many(&mut gpu, &views).expect("batched run");
        assert_eq!(got.len(), batch, "{math:?}: one result per sequence");
        let mut worst: f64 = 0.0;
        for (seq, states) in sequences.iter().zip(&got) {
            let expected = cpu_states(&config, seq.view());
            assert_eq!(states.dim(), expected.dim());
            worst = worst.max(relative_error(states, &expected).0);
        }
        eprintln!("{math:?}: worst relative error over {batch} sequences x 1000 steps {worst:.2e}");
        assert!(worst < bound, "{math:?}: {worst:.2e}");
        assert!(
            gpu.state().expect("state").iter().all(|&x| x == 0.0),
            "{math:?}: run_many leaves the reservoir reset"
        );
    }
    // A sequence of the wrong width is refused before anything runs.
    let mut gpu = GpuReservoirComputer::new_shared(&config, &device)
        .expect("gpu reservoir")
        .with_many_sequences(ManySequences::Batched(GemmMath::F32))
        .expect("batch math");
    let wrong = Array2::<f64>::zeros((1000, 3));
    let mut visited = 0;
    let refused = gpu.run_many(&[views[0], wrong.view(), views[1]], &mut |_, _| {
        visited += 1;
        Ok(())
    });
    assert!(refused.is_err(), "wrong input width");
    assert_eq!(visited, 0, "nothing is handed out before the checks");
}

#[test]
fn sequences_of_different_lengths_match_the_cpu_one_by_one() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("batched_lengths"));
    let config = ReservoirParams::new()
        .size(400)
        .input_size(3)
        .connection_prob(0.1)
        .spectral_radius(0.9)
        .leak_rate(0.5)
        .bias_scaling(0.2)
        .seed(rng.random())
        .check()
        .expect("config");
    // Longest in the middle, shortest last: the shorter ones are padded, and their padding
    // must not reach their states.
    let lengths = [37, 80, 5];
    let sequences: Vec<Array2<f64>> = lengths
        .iter()
        .map(|&steps| Array2::from_shape_fn((steps, 3), |_| rng.random_range(-1.0..1.0)))
        .collect();
    let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
    for (math, bound) in [
        (GemmMath::F32, 1e-4),
        (GemmMath::Tf32, 2e-2),
        (GemmMath::F16, 2e-2),
    ] {
        let mut gpu = GpuReservoirComputer::new_shared(&config, &device)
            .expect("gpu reservoir")
            .with_many_sequences(ManySequences::Batched(math))
            .expect("batch math");
        let got = run_many(&mut gpu, &views).expect("batched run");
        assert_eq!(
            got.len(),
            lengths.len(),
            "{math:?}: one result per sequence"
        );
        for ((seq, states), steps) in sequences.iter().zip(&got).zip(lengths) {
            let expected = cpu_states(&config, seq.view());
            assert_eq!(states.dim(), (steps, 400), "{math:?}: {steps} steps");
            let (relative, max) = relative_error(states, &expected);
            eprintln!("{math:?}, {steps} steps: relative {relative:.2e}, max abs {max:.2e}");
            assert!(relative < bound, "{math:?}, {steps} steps: {relative:.2e}");
        }
    }
}

#[test]
fn noisy_sequences_match_the_cpu_run_many() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("batched_noise"));
    let config = ReservoirParams::new()
        .size(300)
        .input_size(2)
        .connection_prob(0.1)
        .spectral_radius(0.9)
        .bias_scaling(0.1)
        .noise_level(0.05)
        .seed(rng.random())
        .check()
        .expect("config");
    let sequences: Vec<Array2<f64>> = [300, 200, 250]
        .iter()
        .map(|&steps| Array2::from_shape_fn((steps, 2), |_| rng.random_range(-1.0..1.0)))
        .collect();
    let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
    // The CPU's own run_many: one sequence after another from the zero state, the noise
    // stream carrying on from sequence to sequence (and from call to call).
    let mut cpu = EchoStateNetwork::<f32>::new(&config).expect("cpu");
    let mut gpu = GpuReservoirComputer::new_shared(&config, &device).expect("gpu reservoir");
    for call in 0..2 {
        let expected = run_many(&mut cpu, &views).expect("cpu run_many");
        let got = run_many(&mut gpu, &views).expect("gpu run_many");
        assert_eq!(got.len(), 3);
        for (index, (states, expected)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(states.dim(), expected.dim());
            let (relative, max) = relative_error(states, expected);
            eprintln!("call {call}, sequence {index}: relative {relative:.2e}, max abs {max:.2e}");
            assert!(
                relative < 1e-4,
                "call {call}, sequence {index}: GPU states differ from the CPU's by \
                 {relative:.2e} (relative): the noise is not drawn in the CPU's order"
            );
        }
    }
    // The noise matters: without it the states are far from these (else the comparison above
    // could not see a wrong order).
    let quiet = config.to_params().noise_level(0.0).check().expect("config");
    let noisy = run_many(
        &mut EchoStateNetwork::<f32>::new(&config).expect("cpu"),
        &views,
    )
    .expect("cpu run_many");
    let (effect, _) = relative_error(&noisy[1], &cpu_states(&quiet, views[1]));
    eprintln!("noise changes the states by {effect:.2e} (relative)");
    assert!(effect > 1e-2, "the noise is too weak to test: {effect:.2e}");
}

#[test]
fn f16_states_match_a_cpu_step_with_f16_operands() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("batched_f16"));
    let config = ReservoirParams::new()
        .size(300)
        .input_size(1)
        .connection_prob(0.5)
        .spectral_radius(0.9)
        .bias_scaling(0.3)
        .leak_rate(0.6)
        .seed(rng.random())
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let batch = 5;
    let sequences: Vec<Array2<f64>> = (0..batch)
        .map(|_| Array2::from_shape_fn((500, 1), |_| rng.random_range(-1.0..1.0)))
        .collect();
    let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
    let mut gpu = GpuReservoirComputer::from_weights(&config, weights.clone(), &device)
        .expect("gpu reservoir")
        .with_many_sequences(ManySequences::Batched(GemmMath::F16))
        .expect("batch math");
    let got = run_many(&mut gpu, &views).expect("batched run");
    assert_eq!(got.len(), batch);
    // x(1) (from the zero state) is the same f32 value on both sides, so is its f16 rounding,
    // and x(2), from the first f16 product, differs only by the f32 sum order. From then on
    // a state 1e-7 away from the CPU's can round to the neighbouring f16 (seen from the third
    // step on the H200), and such flips add up to ~1.5e-4 over 500 steps. A missing or wrong
    // rounding of W or x shows as ~1e-4 already in x(2).
    let (first_two, whole) = f16_drift(
        got.iter()
            .zip(&sequences)
            .map(|(states, seq)| (states, f16_reference(&config, &weights, seq.view()))),
    );
    eprintln!(
        "F16 against the f16 CPU step: x(1), x(2) {first_two:.2e}; all 500 steps {whole:.2e}"
    );
    assert!(first_two < 1e-6, "x(1), x(2): {first_two:.2e}");
    assert!(whole < 1e-3, "all steps: {whole:.2e}");

    let linear = config
        .to_params()
        .activation(Activation::Identity)
        .check()
        .expect("config");
    let refused = GpuReservoirComputer::new_shared(&linear, &device)
        .expect("gpu reservoir")
        .with_many_sequences(ManySequences::Batched(GemmMath::F16));
    let message = match refused {
        Ok(_) => panic!("F16 with a linear reservoir must be refused"),
        Err(e) => e.to_string(),
    };
    assert!(message.contains("tanh"), "{message}");
}

/// Short runs of every group count per tile (also the compute-sanitizer's case: few steps,
/// every code path of the kernel) against the f16 CPU step.
#[test]
fn tensor_core_runs_of_every_group_count_match_the_f16_cpu_step() {
    let Some(device) = gpu() else { return };
    if device.info().compute_capability != (9, 0) {
        eprintln!("no tensor-core batches on this device");
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("batched_tensor_core_groups"));
    // On 132 SMs: N = 100 (4 row blocks) 40 sequences one group a tile; N = 1000 (16 row
    // blocks) 200 two groups a tile, 300 four.
    for (n, batch, steps) in [(100, 40, 20), (1000, 200, 3), (1000, 300, 3)] {
        let config = ReservoirParams::new()
            .size(n)
            .input_size(1)
            .connection_prob(0.5)
            .spectral_radius(0.9)
            .bias_scaling(0.3)
            .leak_rate(0.7)
            .seed(rng.random())
            .check()
            .expect("config");
        let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
        let sequences: Vec<Array2<f64>> = (0..batch)
            .map(|_| Array2::from_shape_fn((steps, 1), |_| rng.random_range(-1.0..1.0)))
            .collect();
        let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
        let mut gpu = GpuReservoirComputer::from_weights(&config, weights.clone(), &device)
            .expect("gpu reservoir")
            .with_many_sequences(ManySequences::Batched(GemmMath::F16))
            .expect("batch math")
            .with_batch_kernel(BatchKernel::TensorCore)
            .expect("tensor cores");
        let got = run_many(&mut gpu, &views).expect("batched run");
        let (first_two, whole) = f16_drift(
            [0, batch / 2, batch - 1]
                .map(|j| (&got[j], f16_reference(&config, &weights, views[j]))),
        );
        eprintln!(
            "N = {n}, B = {batch}, {steps} steps from the f16 CPU step: x(1), x(2) {first_two:.2e}; all {whole:.2e}"
        );
        // x(1) and x(2) differ by the f32 sums' order only; later steps by f16 flips too
        // (1.2e-4 seen over 20 steps at N = 100).
        assert!(
            first_two < 1e-6,
            "N = {n}, B = {batch}: x(1), x(2) {first_two:.2e}"
        );
        assert!(whole < 1e-3, "N = {n}, B = {batch}: {whole:.2e}");
    }
}

#[test]
fn tensor_core_batches_match_the_f16_gemm_and_the_f16_cpu_step() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("batched_tensor_cores"));
    // N = 1000 pads to 16 row blocks: on 132 SMs 200 sequences take two groups a tile, 600
    // a launch of four groups a tile (512) and one of one group (88, the last tile part
    // padding). N = 100 pads to 256 with 156 zero rows and columns.
    for (n, batch, steps) in [(1000, 200, 40), (1000, 600, 23), (100, 37, 300)] {
        let config = ReservoirParams::new()
            .size(n)
            .input_size(2)
            .connection_prob(0.2)
            .spectral_radius(0.9)
            .bias_scaling(0.3)
            .leak_rate(0.6)
            .noise_level(0.01)
            .seed(rng.random())
            .check()
            .expect("config");
        let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
        let sequences: Vec<Array2<f64>> = (0..batch)
            .map(|_| Array2::from_shape_fn((steps, 2), |_| rng.random_range(-1.0..1.0)))
            .collect();
        let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
        let run = |kernel: BatchKernel| {
            let mut gpu = GpuReservoirComputer::from_weights(&config, weights.clone(), &device)
                .expect("gpu reservoir")
                .with_many_sequences(ManySequences::Batched(GemmMath::F16))
                .expect("batch math")
                .with_batch_kernel(kernel)?;
            let got = run_many(&mut gpu, &views).expect("batched run");
            let ran = gpu.batch_kernel(GemmMath::F16, batch).expect("kernel");
            Ok::<_, gpu_reservoir::GpuError>((got, ran))
        };
        let (got, ran) = match run(BatchKernel::TensorCore) {
            Ok(result) => result,
            Err(e) if device.info().compute_capability != (9, 0) => {
                assert!(e.to_string().contains("9.0"), "{e}");
                eprintln!("no tensor-core batches on this device: {e}");
                return;
            }
            Err(e) => panic!("tensor-core batches: {e}"),
        };
        assert_eq!(ran, BatchKernel::TensorCore);
        let (gemm, gemm_ran) = run(BatchKernel::Gemm).expect("GEMM batches");
        assert_eq!(gemm_ran, BatchKernel::Gemm);
        // Both round W and x(t) to f16 and add the same noise; the f32 sums' order differs,
        // so x(1) agrees to rounding and later steps drift by f16 flips (see
        // f16_states_match_a_cpu_step_with_f16_operands).
        assert!(got.iter().all(|a| a.dim() == (steps, n)));
        let (first, whole) = f16_drift(got.iter().zip(gemm));
        eprintln!(
            "N = {n}, B = {batch}: tensor cores against the f16 GEMM: x(1), x(2) {first:.2e}; all {steps} steps {whole:.2e}"
        );
        assert!(first < 1e-6, "x(1), x(2): {first:.2e}");
        assert!(whole < 1e-3, "all steps: {whole:.2e}");
    }
    // Without noise, against the CPU step with the same operand rounding: the first and the
    // last sequence of a launch of four groups a tile.
    let config = ReservoirParams::new()
        .size(1000)
        .input_size(1)
        .connection_prob(0.3)
        .spectral_radius(0.95)
        .bias_scaling(0.3)
        .leak_rate(0.5)
        .seed(rng.random())
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let sequences: Vec<Array2<f64>> = (0..500)
        .map(|_| Array2::from_shape_fn((60, 1), |_| rng.random_range(-1.0..1.0)))
        .collect();
    let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
    let mut gpu = GpuReservoirComputer::from_weights(&config, weights.clone(), &device)
        .expect("gpu reservoir")
        .with_many_sequences(ManySequences::Batched(GemmMath::F16))
        .expect("batch math")
        .with_batch_kernel(BatchKernel::TensorCore)
        .expect("tensor cores");
    let got = run_many(&mut gpu, &views).expect("batched run");
    let mut worst: f64 = 0.0;
    for j in [0, 255, 256, 499] {
        let expected = f16_reference(&config, &weights, views[j]);
        worst = worst.max(relative_error(&got[j], &expected).0);
    }
    eprintln!("tensor cores against the f16 CPU step: {worst:.2e} over 60 steps");
    assert!(worst < 1e-3, "{worst:.2e}");
    // By default, the tensor-core run takes f16 batches it runs in one launch; the GEMM
    // takes wider ones, and every f32 batch.
    let auto = GpuReservoirComputer::from_weights(&config, weights.clone(), &device)
        .expect("gpu reservoir");
    assert_eq!(
        auto.batch_kernel(GemmMath::F16, 1).expect("kernel"),
        BatchKernel::TensorCore
    );
    assert_eq!(
        auto.batch_kernel(GemmMath::F16, 100_000).expect("kernel"),
        BatchKernel::Gemm
    );
    assert_eq!(
        auto.batch_kernel(GemmMath::F32, 1).expect("kernel"),
        BatchKernel::Gemm
    );
    // The setting is for f16 batches: `Auto`'s f32 batches still run (on the GEMM).
    let mut forced = GpuReservoirComputer::from_weights(&config, weights.clone(), &device)
        .expect("gpu reservoir")
        .with_batch_kernel(BatchKernel::TensorCore)
        .expect("tensor cores");
    assert_eq!(
        forced.batch_kernel(GemmMath::F32, 40).expect("kernel"),
        BatchKernel::Gemm
    );
    let short: Vec<ArrayView2<f64>> = views[..gpu_reservoir::internals::BATCH_MIN_SEQUENCES + 1]
        .iter()
        .map(|v| v.slice_move(ndarray::s![..10, ..]))
        .collect();
    let got = run_many(&mut forced, &short).expect("auto batches in f32");
    let worst = got
        .iter()
        .zip(&short)
        .map(|(g, u)| relative_error(g, &cpu_states(&config, *u)).0)
        .fold(0.0f64, f64::max);
    assert!(worst < 1e-4, "f32 auto batches: {worst:.2e}");
    // `Auto` batching in f16 (`with_batch_math`): its batches take the f16 operands.
    let mut auto_f16 = GpuReservoirComputer::from_weights(&config, weights.clone(), &device)
        .expect("gpu reservoir")
        .with_batch_math(GemmMath::F16)
        .expect("f16 batches");
    let got = run_many(&mut auto_f16, &short).expect("auto batches in f16");
    let (first_two, whole) = f16_drift(
        got.iter()
            .zip(&short)
            .map(|(g, u)| (g, f16_reference(&config, &weights, *u))),
    );
    eprintln!("auto batches in f16 against the f16 CPU step: x(1), x(2) {first_two:.2e}; 10 steps {whole:.2e}");
    // An f32 batch would be ~1e-4 from the f16 step already at x(2).
    assert!(
        first_two < 1e-6,
        "f16 auto batches: x(1), x(2) {first_two:.2e}"
    );
    assert!(whole < 1e-3, "f16 auto batches: {whole:.2e}");
    // f32 batches never run on the tensor-core kernel.
    let refused = GpuReservoirComputer::from_weights(&config, weights, &device)
        .expect("gpu reservoir")
        .with_many_sequences(ManySequences::Batched(GemmMath::F32))
        .expect("batch math")
        .with_batch_kernel(BatchKernel::TensorCore);
    match refused {
        Ok(_) => panic!("the tensor-core kernel takes f16 operands only"),
        Err(e) => assert!(e.to_string().contains("f16"), "{e}"),
    }
}

#[test]
fn auto_batches_many_short_sequences_and_matches_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("batched_auto"));
    let config = ReservoirParams::new()
        .size(400)
        .input_size(40)
        .connection_prob(0.1)
        .spectral_radius(0.9)
        .leak_rate(0.3)
        .seed(rng.random())
        .check()
        .expect("config");
    // The spike task's shape: many sequences of 80 bins, a few spikes per bin.
    let sequences: Vec<Array2<f64>> = (0..gpu_reservoir::internals::BATCH_MIN_SEQUENCES + 8)
        .map(|_| {
            Array2::from_shape_fn((80, 40), |_| {
                f64::from(u8::from(rng.random_range(0.0..1.0) < 0.05))
            })
        })
        .collect();
    let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
    let mut gpu = GpuReservoirComputer::new_shared(&config, &device).expect("gpu reservoir");
    let got = run_many(&mut gpu, &views).expect("auto run");
    let mut worst: f64 = 0.0;
    for (seq, states) in sequences.iter().zip(&got) {
        worst = worst.max(relative_error(states, &cpu_states(&config, seq.view())).0);
    }
    eprintln!(
        "auto over {} sequences x 80 steps: worst relative error {worst:.2e}",
        views.len()
    );
    assert!(worst < 1e-4, "{worst:.2e}");
}
