//! Ridge sums on the device against `RidgeAccumulator::add` on the same f32 states, and the
//! GPU reservoir's `accumulate_ridge` (states never copied back), which `fit::accumulate_run`
//! and `fit::fit_ridge` call, against the CPU path.

use crate::common;

use common::{fresh_seed, gpu, relative_error};
use gpu_reservoir::internals::CHUNK_STEPS;
use gpu_reservoir::{DeviceRidgeSums, GpuReservoirComputer};
use ndarray::{s, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::fit::{accumulate_run, accumulate_run_with_progress};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::{EchoStateNetwork, Reservoir, ReservoirParams, ReservoirWeights};

/// ‖a − b‖ / ‖b‖ of two vectors.
fn relative(a: &[f64], b: &[f64]) -> f64 {
    relative_error(
        &Array2::from_shape_vec((1, a.len()), a.to_vec()).expect("row"),
        &Array2::from_shape_vec((1, b.len()), b.to_vec()).expect("row"),
    )
    .0
}

/// Worst relative difference of XᵀX, XᵀY, ΣX, ΣY and ΣY² (the row counts must be equal).
fn sums_difference(got: &RidgeAccumulator, expected: &RidgeAccumulator) -> f64 {
    assert_eq!(got.rows(), expected.rows());
    relative_error(&got.gram(), &expected.gram())
        .0
        .max(relative_error(&got.cross(), &expected.cross()).0)
        .max(relative(got.feature_sums(), expected.feature_sums()))
        .max(relative(got.target_sums(), expected.target_sums()))
        .max(relative(got.target_squares(), expected.target_squares()))
}

#[test]
fn device_sums_equal_the_cpu_sums_of_the_same_f32_states() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("device_sums"));
    // (features, outputs, blocks, rows): one reservoir, and several side by side (sweep lanes).
    for (features, outputs, blocks, rows) in [(300, 3, 1, 2500), (64, 2, 5, 1200), (1, 1, 3, 40)] {
        let width = features * blocks;
        let host: Vec<f32> = (0..rows * width)
            .map(|_| rng.random_range(-1.0f32..1.0))
            .collect();
        let states = device.stream().clone_htod(&host).expect("upload");
        let targets = Array2::from_shape_fn((rows, outputs), |_| rng.random_range(-2.0..2.0));
        let mut sums = DeviceRidgeSums::new(&device, features, outputs, blocks).expect("sums");
        // Two row ranges of one buffer (as the reservoir adds a chunk after its washout), and
        // an empty one.
        let split = rows / 3;
        sums.add(
            &states.slice(..split * width),
            targets.slice(s![..split, ..]),
        )
        .expect("add");
        sums.add(
            &states.slice(split * width..split * width),
            targets.slice(s![split..split, ..]),
        )
        .expect("empty add");
        sums.add(
            &states.slice(split * width..),
            targets.slice(s![split.., ..]),
        )
        .expect("add");
        assert_eq!(sums.rows(), rows);
        let got = sums.download().expect("download");
        assert_eq!(got.len(), blocks);
        let all = Array2::from_shape_fn((rows, width), |(r, c)| f64::from(host[r * width + c]));
        let mut worst: f64 = 0.0;
        for (block, got) in got.iter().enumerate() {
            let mut expected =
                RidgeAccumulator::new(features, outputs, reservoir_core::Par::Seq).unwrap();
            expected
                .add(
                    all.slice(s![.., block * features..(block + 1) * features]),
                    targets.view(),
                )
                .expect("cpu add");
            worst = worst.max(sums_difference(got, &expected));
        }
        eprintln!("F = {features}, M = {outputs}, blocks = {blocks}, rows = {rows}: worst relative difference {worst:.2e}");
        assert!(worst < 1e-10, "device sums differ by {worst:.2e}");
    }
}

#[test]
fn device_sums_reject_bad_shapes_and_targets() {
    let Some(device) = gpu() else { return };
    assert!(DeviceRidgeSums::new(&device, 0, 1, 1).is_err());
    assert!(DeviceRidgeSums::new(&device, 4, 1, 0).is_err());
    let mut sums = DeviceRidgeSums::new(&device, 4, 1, 2).expect("sums");
    let states = device.stream().alloc_zeros::<f32>(3 * 8).expect("alloc");
    let good = Array2::<f64>::zeros((3, 1));
    assert!(
        sums.add(&states.slice(..), Array2::zeros((3, 2)).view())
            .is_err(),
        "outputs"
    );
    assert!(
        sums.add(&states.slice(..20), good.view()).is_err(),
        "state length"
    );
    let mut bad = good.clone();
    bad[(1, 0)] = f64::NAN;
    let err = sums
        .add(&states.slice(..), bad.view())
        .expect_err("NaN target");
    assert!(err.to_string().contains("row 1"), "{err}");
    assert_eq!(sums.rows(), 0, "failed adds add nothing");
}

fn inputs_and_targets(rng: &mut ChaCha8Rng, steps: usize, k: usize) -> (Array2<f64>, Array2<f64>) {
    let u: Array2<f64> = Array2::from_shape_fn((steps, k), |_| rng.random_range(-1.0..1.0));
    let y = Array2::from_shape_fn((steps, 2), |(t, m)| match m {
        0 => u[(t.saturating_sub(1), 0)] * u[(t.saturating_sub(2), 0)],
        _ => (3.0 * u[(t.saturating_sub(4), 0)]).sin(),
    });
    (u, y)
}

#[test]
fn gpu_accumulate_run_matches_the_cpu_path() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("gpu_accumulate_run"));
    let config = ReservoirParams::new()
        .size(300)
        .input_size(2)
        .spectral_radius(rng.random_range(0.6..0.95))
        .leak_rate(rng.random_range(0.2..1.0))
        .bias_scaling(0.2)
        .seed(rng.random())
        .check()
        .expect("config");
    let steps = CHUNK_STEPS + 1500;
    let (u, y) = inputs_and_targets(&mut rng, steps, 2);
    // A washout inside the first chunk, and one that ends inside the second.
    for washout in [100, CHUNK_STEPS + 40] {
        let mut cpu = EchoStateNetwork::<f32>::new(&config).expect("cpu reservoir");
        let mut expected = RidgeAccumulator::new(300, 2, reservoir_core::Par::Seq).unwrap();
        accumulate_run(&mut cpu, u.view(), y.view(), washout, &mut expected).expect("cpu");

        let mut gpu = GpuReservoirComputer::new_shared(&config, &device).expect("gpu reservoir");
        let mut got = RidgeAccumulator::new(300, 2, reservoir_core::Par::Seq).unwrap();
        let mut calls = Vec::new();
        accumulate_run_with_progress(
            &mut gpu,
            u.view(),
            y.view(),
            washout,
            &mut got,
            &mut |done, total| calls.push((done, total)),
        )
        .expect("gpu");
        assert_eq!(
            calls,
            [(CHUNK_STEPS, steps), (steps, steps)],
            "progress per chunk"
        );
        let sums = sums_difference(&got, &expected);
        let (end_gpu, end_cpu) = (
            gpu.state().expect("gpu state"),
            cpu.state().expect("cpu state"),
        );
        let end = (&end_gpu - &end_cpu)
            .iter()
            .fold(0.0f64, |m, d| m.max(d.abs()));
        let states = EchoStateNetwork::<f32>::new(&config)
            .expect("cpu reservoir")
            .run(u.view())
            .expect("cpu run");
        let mut worst_prediction: f64 = 0.0;
        let mut worst_nrmse: f64 = 0.0;
        for ridge in [1e-6, 1e-4, 1e-2] {
            let (a, b) = (
                got.solve(ridge).expect("solve"),
                expected.solve(ridge).expect("solve"),
            );
            let (pa, pb) = (
                a.readout.predict(states.view()).expect("predict"),
                b.readout.predict(states.view()).expect("predict"),
            );
            worst_prediction = worst_prediction.max(relative_error(&pa, &pb).0);
            worst_nrmse = worst_nrmse.max((a.train_nrmse - b.train_nrmse).abs() / b.train_nrmse);
        }
        eprintln!(
            "washout {washout}: sums {sums:.2e}, final state max abs {end:.2e}, predictions {worst_prediction:.2e}, train NRMSE {worst_nrmse:.2e} (relative)"
        );
        assert!(sums < 1e-4, "sums differ by {sums:.2e}");
        assert!(end < 1e-4, "final states differ by {end:.2e}");
        assert!(
            worst_prediction < 1e-3,
            "predictions differ by {worst_prediction:.2e}"
        );
        assert!(
            worst_nrmse < 1e-3,
            "train NRMSE differs by {worst_nrmse:.2e}"
        );
    }
}

#[test]
fn a_boxed_gpu_reservoir_accumulates_through_the_device_sums() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("cuda_fit_path"));
    let config = ReservoirParams::new()
        .size(100)
        .seed(rng.random())
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    // What the runtime's dispatch builds on a GPU: the GPU reservoir behind the trait.
    let mut reservoir: Box<dyn Reservoir> = Box::new(
        GpuReservoirComputer::from_weights(&config, weights, &device).expect("cuda reservoir"),
    );
    // Its accumulate_ridge is the device one: progress once per chunk of CHUNK_STEPS (the
    // CPU's provided method streams in chunks of 512 rows).
    let total = CHUNK_STEPS + 100;
    let (long_u, long_y) = inputs_and_targets(&mut rng, total, 1);
    let mut scratch = RidgeAccumulator::new(100, 2, reservoir_core::Par::Seq).unwrap();
    let mut calls = Vec::new();
    accumulate_run_with_progress(
        reservoir.as_mut(),
        long_u.view(),
        long_y.view(),
        0,
        &mut scratch,
        &mut |done, rows| calls.push((done, rows)),
    )
    .expect("gpu");
    assert_eq!(
        calls,
        [(CHUNK_STEPS, total), (total, total)],
        "the GPU reservoir accumulates on the device"
    );
    assert_eq!(scratch.rows(), total);
    reservoir.reset().expect("reset");

    let (u, y) = inputs_and_targets(&mut rng, 500, 1);
    let mut acc = RidgeAccumulator::new(100, 2, reservoir_core::Par::Seq).unwrap();
    let wide = Array2::from_shape_fn((500, 2), |_| 0.1);
    assert!(accumulate_run(reservoir.as_mut(), wide.view(), y.view(), 10, &mut acc).is_err());
    let mut bad = u.clone();
    bad[(7, 0)] = f64::INFINITY;
    assert!(accumulate_run(reservoir.as_mut(), bad.view(), y.view(), 10, &mut acc).is_err());
    assert_eq!(acc.rows(), 0, "failed runs add nothing");
    // Sums are added to what the accumulator holds, and a run continues from the last state.
    let mut cpu = EchoStateNetwork::<f32>::new(&config).expect("cpu reservoir");
    let mut expected = RidgeAccumulator::new(100, 2, reservoir_core::Par::Seq).unwrap();
    for (start, washout) in [(0, 10), (200, 0)] {
        let (u, y) = (u.slice(s![start.., ..]), y.slice(s![start.., ..]));
        accumulate_run(reservoir.as_mut(), u, y, washout, &mut acc).expect("gpu");
        accumulate_run(&mut cpu, u, y, washout, &mut expected).expect("cpu");
    }
    assert_eq!(acc.rows(), 490 + 300);
    let difference = sums_difference(&acc, &expected);
    eprintln!("two runs into one accumulator: sums differ by {difference:.2e} (relative)");
    assert!(difference < 1e-4, "{difference:.2e}");
}
