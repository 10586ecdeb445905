//! The GPU sweep lanes (one GEMM per step for all lanes, sums on the device) against the CPU
//! lanes (one reservoir per lane), and both runners behind the `LaneRunner` trait.

use crate::common;

use common::{f16_product, f16_weights, fresh_seed, gpu, relative_error};
use gpu_reservoir::{BatchKernel, GemmMath, GpuDevice, GpuLaneRunner, MultiGpuLaneRunner};
use ndarray::{s, Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::lanes::{CpuLaneRunner, Lane, LaneData, LaneRunner, LaneSums};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::real::Real;
use reservoir_core::{Activation, Precision, ReservoirConfig, ReservoirParams, ReservoirWeights};

/// Inputs u ~ U[0, 0.5] and two targets with memory: u(t−1)·u(t−2) and sin(6·u(t−4)).
fn task(rng: &mut ChaCha8Rng, steps: usize) -> (Array2<f64>, Array2<f64>) {
    let u: Array2<f64> = Array2::from_shape_fn((steps, 1), |_| rng.random_range(0.0..0.5));
    let y = Array2::from_shape_fn((steps, 2), |(t, m)| match m {
        0 => u[(t.saturating_sub(1), 0)] * u[(t.saturating_sub(2), 0)],
        _ => (6.0 * u[(t.saturating_sub(4), 0)]).sin(),
    });
    (u, y)
}

fn random_lanes(rng: &mut ChaCha8Rng, base: &ReservoirConfig, count: usize) -> Vec<Lane> {
    (0..count)
        .map(|i| {
            let spectral_radius = rng.random_range(0.5..0.95);
            // One lane without leak (a = 1), the others anywhere in (0.1, 1).
            let leak_rate = if i == 0 {
                1.0
            } else {
                rng.random_range(0.1..1.0)
            };
            let input_scaling = rng.random_range(0.1..1.5);
            Lane::new(base, spectral_radius, leak_rate, input_scaling).expect("lane")
        })
        .collect()
}

/// Worst relative difference of XᵀX, XᵀY and ΣX of two accumulators over the same rows.
fn sums_difference(got: &RidgeAccumulator, expected: &RidgeAccumulator) -> f64 {
    assert_eq!(got.rows(), expected.rows());
    let vector = |v: &[f64]| Array2::from_shape_vec((1, v.len()), v.to_vec()).expect("row");
    relative_error(&got.gram(), &expected.gram())
        .0
        .max(relative_error(&got.cross(), &expected.cross()).0)
        .max(
            relative_error(
                &vector(got.feature_sums()),
                &vector(expected.feature_sums()),
            )
            .0,
        )
}

/// Compares every lane's sums, and the validation NRMSE of the readout trained on each lane's
/// training sums for each ridge value; returns the worst (sums, NRMSE) relative differences.
fn compare(gpu: &[LaneSums], cpu: &[LaneSums], ridges: &[f64]) -> (f64, f64) {
    assert_eq!(gpu.len(), cpu.len());
    let (mut sums, mut scores): (f64, f64) = (0.0, 0.0);
    for (lane, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        sums = sums
            .max(sums_difference(&g.train, &c.train))
            .max(sums_difference(&g.validation, &c.validation));
        for &ridge in ridges {
            let score = |s: &LaneSums| {
                let fit = s.train.solve(ridge).expect("solve");
                s.validation
                    .score(&fit.readout)
                    .expect("score")
                    .mean_nrmse()
            };
            let (a, b) = (score(g), score(c));
            let difference = (a - b).abs() / b;
            eprintln!("lane {lane}, ridge {ridge:e}: validation NRMSE GPU {a:.6}, CPU {b:.6}");
            scores = scores.max(difference);
        }
    }
    (sums, scores)
}

/// A random sweep: its base config, lanes, task (inputs and targets) and the lanes' chunk.
struct RandomSweep {
    base: ReservoirConfig,
    lanes: Vec<Lane>,
    u: Array2<f64>,
    y: Array2<f64>,
    chunk: usize,
}

/// A random base of `n` units (10 % connected, with a bias), `count` random lanes around it
/// and a task two full chunks of those lanes (replayed from a run's CUDA graph) and `extra`
/// steps (plain launches) long.
fn random_sweep(rng: &mut ChaCha8Rng, n: usize, count: usize, extra: usize) -> RandomSweep {
    let base = ReservoirParams::new()
        .size(n)
        .connection_prob(0.1)
        .bias_scaling(0.1)
        .seed(rng.random())
        .check()
        .expect("config");
    let lanes = random_lanes(rng, &base, count);
    let chunk = GpuLaneRunner::chunk_steps(n, count);
    let (u, y) = task(rng, 2 * chunk + extra);
    RandomSweep {
        base,
        lanes,
        u,
        y,
        chunk,
    }
}

#[test]
fn gpu_lanes_match_the_cpu_lanes() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("sweep_lanes"));
    // The split between training and validation rows inside the second chunk.
    let RandomSweep {
        base,
        lanes,
        u,
        y,
        chunk,
    } = random_sweep(&mut rng, 300, 6, 1000);
    let steps = u.nrows();
    let data = LaneData {
        inputs: u.view(),
        targets: y.view(),
        washout: 100,
        train_rows: chunk + 500,
    };
    let expected = CpuLaneRunner::new(reservoir_core::Par::all())
        .run_lanes(&base, &lanes, &data)
        .expect("cpu");
    let mut runner = GpuLaneRunner::new(&device).expect("runner");
    let got = runner.run_lanes(&base, &lanes, &data).expect("gpu");
    let (sums, scores) = compare(&got, &expected, &[1e-6, 1e-4, 1e-2]);
    eprintln!("{lanes:?}: sums {sums:.2e}, validation NRMSE {scores:.2e} (worst relative)");
    assert!(sums < 1e-4, "lane sums differ by {sums:.2e}");
    assert!(scores < 1e-3, "validation NRMSE differs by {scores:.2e}");
    assert!(got
        .iter()
        .all(|l| l.train.rows() == chunk + 400 && l.validation.rows() == steps - chunk - 500));

    // The same runner again (weights reused) gives the same sums.
    let again = runner.run_lanes(&base, &lanes, &data).expect("gpu");
    assert_eq!(again[3].train.gram(), got[3].train.gram());
}

#[test]
fn gpu_lanes_match_with_noise_and_a_linear_reservoir() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("sweep_noise_identity"));
    let (u, y) = task(&mut rng, 3000);
    let data = LaneData {
        inputs: u.view(),
        targets: y.view(),
        washout: 50,
        train_rows: 2000,
    };
    let mut runner = GpuLaneRunner::new(&device).expect("runner");
    for (noise_level, activation) in [(0.01, Activation::Tanh), (0.0, Activation::Identity)] {
        let base = ReservoirParams::new()
            .size(200)
            .connection_prob(0.2)
            .noise_level(noise_level)
            .activation(activation)
            .seed(rng.random())
            .check()
            .expect("config");
        let lanes = random_lanes(&mut rng, &base, 3);
        let expected = CpuLaneRunner::new(reservoir_core::Par::all())
            .run_lanes(&base, &lanes, &data)
            .expect("cpu");
        let got = runner.run_lanes(&base, &lanes, &data).expect("gpu");
        let (sums, scores) = compare(&got, &expected, &[1e-4]);
        eprintln!(
            "noise {noise_level}, {activation:?}: sums {sums:.2e}, validation NRMSE {scores:.2e}"
        );
        assert!(sums < 1e-4, "lane sums differ by {sums:.2e}");
        assert!(scores < 1e-3, "validation NRMSE differs by {scores:.2e}");
    }
}

/// One lane's states with the f16 GEMM as the GPU computes them: W₁ and each step's states
/// rounded to f16 before the product ([`f16_product`]), then `ρ·P + b`, `+ s·W_in₁u` and the leaky
/// update in f32, with the same rational tanh.
fn f16_lane_states(unit: &ReservoirConfig, lane: &Lane, inputs: ArrayView2<f64>) -> Array2<f64> {
    let (weights, _) = ReservoirWeights::generate(unit).expect("weights");
    let w = f16_weights(&weights.recurrent().to_dense());
    let (w_in, bias) = (
        weights.input().mapv(|v| v as f32),
        weights.bias().mapv(|v| v as f32),
    );
    let (radius, scaling, a) = (
        lane.spectral_radius() as f32,
        lane.input_scaling() as f32,
        lane.leak_rate() as f32,
    );
    let mut x = vec![0.0f32; unit.size()];
    let mut states = Array2::zeros((inputs.nrows(), unit.size()));
    for (t, u) in inputs.rows().into_iter().enumerate() {
        let mut pre = f16_product(&w, &x);
        for (i, p) in pre.iter_mut().enumerate() {
            let v: f32 = w_in.row(i).iter().zip(u).map(|(&w, &u)| w * u as f32).sum();
            *p = radius * *p + bias[i];
            *p += scaling * v;
        }
        <f32 as Real>::tanh_in_place(&mut pre);
        for (i, (x_i, &f)) in x.iter_mut().zip(&pre).enumerate() {
            *x_i = (1.0 - a) * *x_i + a * f;
            states[(t, i)] = f64::from(*x_i);
        }
    }
    states
}

/// The training and validation sums of `states` over `data`'s rows, as a lane runner adds them.
fn sums_of(states: &Array2<f64>, data: &LaneData<'_>) -> LaneSums {
    let sums = |from: usize, to: usize| {
        let mut sums = RidgeAccumulator::new(
            states.ncols(),
            data.targets.ncols(),
            reservoir_core::Par::Seq,
        )
        .expect("sums");
        sums.add(
            states.slice(s![from..to, ..]),
            data.targets.slice(s![from..to, ..]),
        )
        .expect("add");
        sums
    };
    LaneSums {
        train: sums(data.washout, data.train_rows),
        validation: sums(data.train_rows, states.nrows()),
    }
}

#[test]
fn tensor_core_lanes_match_their_operand_rounding_and_stay_near_f32() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("sweep_lanes_tensor_cores"));
    // The graph's f16 operands alternate between two buffers over an odd number of steps.
    let RandomSweep {
        base,
        lanes,
        u,
        y,
        chunk,
    } = random_sweep(&mut rng, 200, 3, 501);
    let data = LaneData {
        inputs: u.view(),
        targets: y.view(),
        washout: 100,
        train_rows: chunk + 500,
    };
    let ridges = [1e-4, 1e-2];
    let cpu = CpuLaneRunner::new(reservoir_core::Par::all())
        .run_lanes(&base, &lanes, &data)
        .expect("cpu");
    let f32_gpu = GpuLaneRunner::new(&device)
        .expect("runner")
        .run_lanes(&base, &lanes, &data)
        .expect("f32 lanes");
    let hopper = device.info().compute_capability == (9, 0);
    for (math, kernel) in [
        (GemmMath::Tf32, BatchKernel::Gemm),
        (GemmMath::F16, BatchKernel::Gemm),
        (GemmMath::F16, BatchKernel::Auto),
    ] {
        let mut runner = GpuLaneRunner::new(&device)
            .expect("runner")
            .with_math(math)
            .with_kernel(kernel);
        assert_eq!(runner.math(), math);
        let got = runner.run_lanes(&base, &lanes, &data).expect("lanes");
        let ran = runner.kernel(base.size(), lanes.len()).expect("kernel");
        if kernel == BatchKernel::Auto {
            assert_eq!(
                ran == BatchKernel::TensorCore,
                hopper,
                "f16 lanes run on the tensor-core kernel exactly on compute capability 9.0"
            );
        }
        assert_ne!(
            sums_bits(&got),
            sums_bits(&f32_gpu),
            "{math}: the tensor-core GEMM gives other bits than the f32 one"
        );
        let (sums, scores) = compare(&got, &cpu, &ridges);
        eprintln!(
            "{math} ({ran:?}) against the f32 CPU lanes: sums {sums:.2e}, validation NRMSE {scores:.2e}"
        );
        // Seen with fresh seeds: sums 2e-4 to 7e-4, NRMSE 1.1e-2 to 6.2e-2 (the
        // readouts solved from the sums amplify their drift by the Gram matrix's conditioning).
        assert!(sums < 2e-3, "{math}: lane sums differ by {sums:.2e}");
        assert!(
            scores < 1.5e-1,
            "{math}: validation NRMSE differs by {scores:.2e}"
        );
        if math == GemmMath::F16 {
            let unit = base
                .to_params()
                .spectral_radius(1.0)
                .input_scaling(1.0)
                .check()
                .expect("unit config");
            let expected: Vec<LaneSums> = lanes
                .iter()
                .map(|lane| sums_of(&f16_lane_states(&unit, lane, u.view()), &data))
                .collect();
            let (sums, scores) = compare(&got, &expected, &ridges);
            eprintln!(
                "f16 ({ran:?}) against its CPU reference: sums {sums:.2e}, NRMSE {scores:.2e}"
            );
            // The same operand rounding leaves f32 summation order: sums 2e-6 to 1e-5 and
            // NRMSE 1e-3 to 3e-3 seen.
            assert!(sums < 1e-4, "f16 lane sums differ by {sums:.2e}");
            assert!(
                scores < 1e-2,
                "f16 validation NRMSE differs by {scores:.2e}"
            );
        }
    }
    // f16 states of a linear reservoir could leave f16's range: refused.
    let linear = base
        .to_params()
        .activation(Activation::Identity)
        .check()
        .expect("config");
    let lane = Lane::new(&linear, 0.9, 0.5, 1.0).expect("lane");
    let err = GpuLaneRunner::new(&device)
        .expect("runner")
        .with_math(GemmMath::F16)
        .run_lanes(&linear, &[lane], &data)
        .expect_err("f16 with a linear reservoir");
    assert!(err.to_string().contains("tanh"), "{err}");
}

#[test]
fn tensor_core_lanes_with_noise_match_the_f16_gemm_lanes() {
    let Some(device) = gpu() else { return };
    let tensor_cores = GpuLaneRunner::new(&device)
        .expect("runner")
        .with_math(GemmMath::F16)
        .with_kernel(BatchKernel::TensorCore);
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("sweep_lanes_tensor_core_noise"));
    // 70 lanes of N = 300: five groups of 16 on one tile, the last group part padding.
    let RandomSweep {
        base, u, y, chunk, ..
    } = random_sweep(&mut rng, 300, 70, 37);
    let base = base
        .to_params()
        .noise_level(0.05)
        .check()
        .expect("noisy config");
    let lanes = random_lanes(&mut rng, &base, 70);
    let data = LaneData {
        inputs: u.view(),
        targets: y.view(),
        washout: 50,
        train_rows: chunk + 10,
    };
    let mut tensor_cores = tensor_cores;
    let got = match tensor_cores.run_lanes(&base, &lanes, &data) {
        Ok(got) => got,
        Err(e) if device.info().compute_capability != (9, 0) => {
            assert!(e.to_string().contains("9.0"), "{e}");
            eprintln!("no tensor-core lanes on this device: {e}");
            return;
        }
        Err(e) => panic!("tensor-core lanes: {e}"),
    };
    assert_eq!(
        tensor_cores
            .kernel(base.size(), lanes.len())
            .expect("kernel"),
        BatchKernel::TensorCore
    );
    let gemm = GpuLaneRunner::new(&device)
        .expect("runner")
        .with_math(GemmMath::F16)
        .with_kernel(BatchKernel::Gemm)
        .run_lanes(&base, &lanes, &data)
        .expect("f16 GEMM lanes");
    let (sums, scores) = compare(&got, &gemm, &[1e-4, 1e-2]);
    eprintln!(
        "tensor-core lanes with noise against the f16 GEMM's: sums {sums:.2e}, NRMSE {scores:.2e}"
    );
    // Both round the same operands; only the f32 sums' order differs. Dropping the noise, a
    // lane's parameters or the bias moves the sums by far more than this.
    assert!(sums < 1e-4, "sums differ by {sums:.2e}");
    assert!(scores < 1e-2, "validation NRMSE differs by {scores:.2e}");
    let quiet = base.to_params().noise_level(0.0).check().expect("config");
    let quiet_lanes: Vec<Lane> = lanes
        .iter()
        .map(|l| {
            Lane::new(
                &quiet,
                l.spectral_radius(),
                l.leak_rate(),
                l.input_scaling(),
            )
        })
        .collect::<Result<_, _>>()
        .expect("lanes");
    let without = tensor_cores
        .run_lanes(&quiet, &quiet_lanes, &data)
        .expect("quiet lanes");
    let (effect, _) = compare(&without, &gemm, &[1e-4]);
    assert!(effect > 1e-3, "the noise is too weak to test: {effect:.2e}");
}

#[test]
fn gpu_lanes_reject_what_the_cpu_rejects_and_f64() {
    let Some(device) = gpu() else { return };
    let (u, y) = task(&mut ChaCha8Rng::seed_from_u64(1), 300);
    let data = LaneData {
        inputs: u.view(),
        targets: y.view(),
        washout: 10,
        train_rows: 200,
    };
    let base = ReservoirParams::new().size(50).check().expect("config");
    let lane = Lane::new(&base, 0.9, 0.5, 1.0).expect("lane");
    let mut runner = GpuLaneRunner::new(&device).expect("runner");
    assert!(runner
        .run_lanes(&base, &[], &data)
        .expect("no lanes")
        .is_empty());
    // A lane with leak 0 cannot be made any more: the config check refuses it for both runners.
    let err = Lane::new(&base, 0.9, 0.0, 1.0).expect_err("leak 0");
    assert!(err.to_string().contains("leak_rate"), "{err}");
    assert_eq!(err.field, "leak_rate");
    let f64_base = base
        .to_params()
        .precision(Precision::F64)
        .check()
        .expect("config");
    let f64_lane = Lane::new(&f64_base, 0.9, 0.5, 1.0).expect("lane");
    let err = runner
        .run_lanes(&f64_base, &[f64_lane], &data)
        .expect_err("f64");
    assert!(err.to_string().contains("precision"), "{err}");
    let short = LaneData {
        train_rows: 300,
        ..data
    };
    assert!(
        runner.run_lanes(&base, &[lane], &short).is_err(),
        "no validation rows"
    );
}

#[test]
fn lane_runners_run_behind_the_trait_where_the_device_allows() {
    let (u, y) = task(&mut ChaCha8Rng::seed_from_u64(2), 300);
    let data = LaneData {
        inputs: u.view(),
        targets: y.view(),
        washout: 10,
        train_rows: 200,
    };
    let base = ReservoirParams::new().size(50).check().expect("config");
    let lanes = [
        Lane::new(&base, 0.9, 0.5, 1.0).expect("lane"),
        Lane::new(&base, 0.7, 1.0, 0.5).expect("lane"),
    ];
    let mut cpu: Box<dyn LaneRunner> = Box::new(CpuLaneRunner::new(reservoir_core::Par::all()));
    let expected = cpu.run_lanes(&base, &lanes, &data).expect("cpu runner");
    assert_eq!(expected.len(), 2);

    let f64_base = base
        .to_params()
        .precision(Precision::F64)
        .check()
        .expect("config");
    let f64_lanes = [Lane::new(&f64_base, 0.9, 0.5, 1.0).expect("lane")];
    cpu.run_lanes(&f64_base, &f64_lanes, &data)
        .expect("f64 runs on the CPU");

    match gpu() {
        Some(device) => {
            let mut on_cuda: Box<dyn LaneRunner> =
                Box::new(GpuLaneRunner::new(&device).expect("cuda runner"));
            let got = on_cuda.run_lanes(&base, &lanes, &data).expect("gpu runner");
            let (sums, scores) = compare(&got, &expected, &[1e-4]);
            assert!(sums < 1e-4, "lane sums differ by {sums:.2e}");
            assert!(scores < 1e-3, "validation NRMSE differs by {scores:.2e}");
            let why = on_cuda
                .run_lanes(&f64_base, &f64_lanes, &data)
                .expect_err("f64 does not run on a GPU");
            assert!(why.to_string().contains("f64"), "{why}");
        }
        None => {
            let on_cuda = GpuDevice::shared(0).and_then(|device| GpuLaneRunner::new(&device));
            assert!(on_cuda.is_err(), "cuda without a GPU is an error");
        }
    }
}

/// Every lane's sums as bits: XᵀX, XᵀY and ΣX of its training and validation accumulators.
fn sums_bits(sums: &[LaneSums]) -> Vec<Vec<u64>> {
    sums.iter()
        .map(|lane| {
            [&lane.train, &lane.validation]
                .iter()
                .flat_map(|a| {
                    let mut bits: Vec<u64> = a.gram().iter().map(|v| v.to_bits()).collect();
                    bits.extend(a.cross().iter().map(|v| v.to_bits()));
                    bits.extend(a.feature_sums().iter().map(|v| v.to_bits()));
                    bits
                })
                .collect()
        })
        .collect()
}

#[test]
fn lanes_over_several_gpus_give_the_bits_of_one_gpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("multi_gpu_lanes"));
    let (u, y) = task(&mut rng, 700);
    let data = LaneData {
        inputs: u.view(),
        targets: y.view(),
        washout: 20,
        train_rows: 500,
    };
    let base = ReservoirParams::new()
        .size(40)
        .connection_prob(0.3)
        .seed(rng.random())
        .check()
        .expect("config");
    // Three groups of lanes: 128, 128 and 44.
    let lanes = random_lanes(&mut rng, &base, 2 * gpu_reservoir::LANE_GROUP + 44);
    let one = GpuLaneRunner::new(&device)
        .expect("runner")
        .run(&base, &lanes, &data)
        .expect("one GPU");
    assert_eq!(one.len(), lanes.len());
    let count = gpu_reservoir::probe().devices.len();
    let ordinals: Vec<usize> = (0..count).collect();
    if count < 2 {
        eprintln!("several GPUs: only {count} here, so the lanes ran on GPU 0 alone");
    }
    let mut multi = MultiGpuLaneRunner::new(&ordinals).expect("runner");
    let spread = multi.run(&base, &lanes, &data).expect("several GPUs");
    assert!(
        sums_bits(&spread) == sums_bits(&one),
        "the sums over {count} GPUs differ from one GPU's"
    );
    // The same lanes on the CPU, to rounding (the GPU's f32 product order differs).
    let cpu = CpuLaneRunner::new(reservoir_core::Par::all())
        .run_lanes(&base, &lanes[..4], &data)
        .expect("cpu");
    for (got, expected) in spread.iter().zip(&cpu) {
        assert!(sums_difference(&got.train, &expected.train) < 1e-3);
    }
    // One group (5 lanes): the other GPUs are not needed, and the bits are one GPU's again.
    let few = MultiGpuLaneRunner::new(&ordinals)
        .expect("runner")
        .run(&base, &lanes[..5], &data)
        .expect("one group");
    let few_on_one = GpuLaneRunner::new(&device)
        .expect("runner")
        .run(&base, &lanes[..5], &data)
        .expect("one GPU");
    assert!(sums_bits(&few) == sums_bits(&few_on_one));
    // With f16 GEMM operands too, every GPU (opened at once or in its thread) steps in f16.
    let f16_one = GpuLaneRunner::new(&device)
        .expect("runner")
        .with_math(GemmMath::F16)
        .run(&base, &lanes, &data)
        .expect("one GPU, f16");
    let f16_spread = MultiGpuLaneRunner::new(&ordinals)
        .expect("runner")
        .with_math(GemmMath::F16)
        .run(&base, &lanes, &data)
        .expect("several GPUs, f16");
    assert!(sums_bits(&f16_spread) == sums_bits(&f16_one));
    assert!(
        sums_bits(&f16_one) != sums_bits(&one),
        "f16 operands change the sums"
    );
    let err = MultiGpuLaneRunner::new(&[count]).expect_err("a GPU the driver does not list");
    assert!(
        err.to_string().contains(&format!("no GPU {count}")),
        "{err}"
    );
}

#[test]
fn readouts_solved_on_the_gpus_match_the_host_and_one_gpus_bits() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("multi_gpu_scores"));
    let (u, y) = task(&mut rng, 500);
    let data = LaneData {
        inputs: u.view(),
        targets: y.view(),
        washout: 20,
        train_rows: 350,
    };
    let base = ReservoirParams::new()
        .size(30)
        .connection_prob(0.3)
        .seed(rng.random())
        .check()
        .expect("config");
    // Three groups: 128, 128 and 33 lanes.
    let lanes = random_lanes(&mut rng, &base, 2 * gpu_reservoir::LANE_GROUP + 33);
    let ridges = [1e-8, 1e-4];
    let mut one = GpuLaneRunner::new(&device).expect("runner");
    let sums = one.run(&base, &lanes, &data).expect("sums");
    let mut solved = Vec::new();
    let mut firsts = Vec::new();
    one.score(&base, &lanes, &data, &ridges, &mut |first, outcomes| {
        firsts.push(first);
        solved.extend(outcomes);
        Ok(())
    })
    .expect("scores on one GPU");
    assert_eq!(firsts, vec![0, 128, 256]);
    assert_eq!(solved.len(), lanes.len());
    // The host's solve of the same sums, to the rounding of another factorisation order.
    for (lane, (sums, outcomes)) in sums.iter().zip(&solved).enumerate() {
        for (&ridge, outcome) in ridges.iter().zip(outcomes) {
            let host = sums.score(ridge).expect("host solve");
            let device = outcome.as_ref().expect("device solve");
            let relative = |a: f64, b: f64| (a - b).abs() / b.abs();
            assert!(
                relative(device.train_nrmse, host.train_nrmse) < 1e-6
                    && relative(device.validation.mean_nrmse(), host.validation.mean_nrmse())
                        < 1e-6,
                "lane {lane}, ridge {ridge}: {device:?} vs {host:?}"
            );
        }
    }
    let count = gpu_reservoir::probe().devices.len();
    let ordinals: Vec<usize> = (0..count).collect();
    let mut multi = MultiGpuLaneRunner::new(&ordinals).expect("runner");
    let mut spread = Vec::new();
    multi
        .score_lanes(&base, &lanes, &data, &ridges, 0, &mut |first, outcomes| {
            assert_eq!(first, spread.len(), "outcomes out of order");
            spread.extend(outcomes);
            Ok(())
        })
        .expect("scores over the GPUs");
    let bits = |outcomes: &[Vec<reservoir_core::Result<reservoir_core::lanes::LaneScores>>]| {
        outcomes
            .iter()
            .flatten()
            .map(|o| {
                let s = o.as_ref().expect("solved");
                let mut v = vec![s.train_nrmse.to_bits()];
                v.extend(s.validation.nrmse.iter().map(|x| x.to_bits()));
                v.extend(s.validation.squared_correlation.iter().map(|x| x.to_bits()));
                v
            })
            .collect::<Vec<_>>()
    };
    assert!(
        bits(&spread) == bits(&solved),
        "the scores over {count} GPUs differ from one GPU's"
    );
    // An error of `visit` ends the run with that error.
    let error = multi
        .score_lanes(&base, &lanes, &data, &ridges, 0, &mut |_, _| {
            Err(reservoir_core::ReservoirError::invalid(
                "visit",
                "stop here",
            ))
        })
        .expect_err("visit fails");
    assert!(error.to_string().contains("stop here"), "{error}");
}
