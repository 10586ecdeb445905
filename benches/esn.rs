//! CPU engine benchmarks: the reservoir run (steps/s, on one thread and on all), the sparse
//! mat-vec with each kernel, spectral radius, ridge accumulation, the end-to-end fit of the
//! ReservoirPy comparison, and drawing a row's sorted columns.
//!
//! `cargo bench -p reservoir-benches --bench esn`; the device is the machine it runs on.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::Array2;
use reservoir_benches::sine_input;
use reservoir_core::fit::fit_ridge;
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::real::ProductKernel;
use reservoir_core::sparse::SparseProduct;
use reservoir_core::spectral::SpectralOptions;
use reservoir_core::{
    cpu_reservoir, CsrMatrix, Par, Precision, ReadoutConfig, Reservoir, ReservoirConfig,
    ReservoirParams, ReservoirWeights,
};

/// The default config with `size`, `density` and `precision`.
fn config(size: usize, density: f64, precision: Precision) -> ReservoirConfig {
    ReservoirParams::new()
        .size(size)
        .connection_prob(density)
        .precision(precision)
        .check()
        .expect("config")
}

/// The CPU reservoir of [`config`].
fn reservoir(size: usize, density: f64, precision: Precision) -> Box<dyn Reservoir> {
    let config = config(size, density, precision);
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    cpu_reservoir(&config, weights, Par::all()).expect("reservoir")
}

/// Steps per second of `Reservoir::run` (states returned as T × N f64, as callers get them).
fn reservoir_run(c: &mut Criterion) {
    let steps = 2000;
    let inputs = sine_input(steps);
    let mut group = c.benchmark_group("run");
    group
        .throughput(Throughput::Elements(steps as u64))
        .sample_size(20);
    for (size, density) in [(100, 0.1), (1000, 0.1), (1000, 1.0), (4000, 0.1)] {
        for precision in [Precision::F32, Precision::F64] {
            let mut reservoir = reservoir(size, density, precision);
            let id = BenchmarkId::new(format!("{precision:?}/density {density}"), size);
            group.bench_function(id, |b| {
                b.iter(|| reservoir.run(inputs.view()).expect("run"));
            });
        }
    }
    group.finish();
}

/// The sparse product with each kernel this CPU has (they give the same bits; the reservoir
/// uses the one timed fastest).
fn sparse_mat_vec(c: &mut Criterion) {
    let mut group = c.benchmark_group("csr_mat_vec");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(2));
    for size in [100, 1000, 4000] {
        let (weights, _) =
            ReservoirWeights::generate(&config(size, 0.1, Precision::F32)).expect("weights");
        let w32: CsrMatrix<f32> = weights.recurrent().cast();
        let x: Vec<f32> = (0..size).map(|i| (i as f32 * 0.37).sin()).collect();
        let mut y = vec![0.0f32; size];
        group.throughput(Throughput::Elements(w32.nnz() as u64));
        for kernel in ProductKernel::available::<f32>() {
            let product = SparseProduct::with_kernel(&w32, kernel).expect("layout");
            group.bench_function(BenchmarkId::new(format!("f32 10% {kernel}"), size), |b| {
                b.iter(|| product.mul_vec(&x, &mut y).expect("mat-vec"));
            });
        }
    }
    group.finish();
}

/// One sequence on one thread and on all of them (each step's rows split, the same bits).
fn run_threads(c: &mut Criterion) {
    let steps = 2000;
    let inputs = sine_input(steps);
    let cores = Par::all().threads();
    let mut group = c.benchmark_group("run_threads");
    group
        .throughput(Throughput::Elements(steps as u64))
        .sample_size(10);
    let mut reservoir = reservoir(1000, 0.1, Precision::F32);
    for threads in [1, cores] {
        reservoir.set_par(Par::rayon(threads));
        group.bench_function(BenchmarkId::new("F32 N=1000 10%", threads), |b| {
            b.iter(|| reservoir.run(inputs.view()).expect("run"));
        });
    }
    group.finish();
}

fn spectral_radius(c: &mut Criterion) {
    let mut group = c.benchmark_group("spectral_radius");
    group.sample_size(10);
    for size in [1000, 4000] {
        let (weights, _) =
            ReservoirWeights::generate(&config(size, 0.1, Precision::F64)).expect("weights");
        group.bench_function(BenchmarkId::new("10%", size), |b| {
            b.iter(|| {
                weights
                    .recurrent()
                    .spectral_radius(&SpectralOptions::default())
                    .expect("radius")
            });
        });
    }
    group.finish();
}

fn ridge_accumulate(c: &mut Criterion) {
    let states = Array2::from_shape_fn((512, 1000), |(t, i)| {
        ((t * 31 + i * 7) as f64 * 0.001).sin()
    });
    let targets = Array2::from_shape_fn((512, 1), |(t, _)| (t as f64).cos());
    let mut group = c.benchmark_group("ridge_accumulate");
    group.throughput(Throughput::Elements(512));
    for threads in [1, 2] {
        let mut acc = RidgeAccumulator::new(1000, 1, reservoir_core::Par::rayon(threads)).unwrap();
        group.bench_function(
            BenchmarkId::new("N=1000 chunk 512 rows, threads", threads),
            |b| {
                b.iter(|| acc.add(states.view(), targets.view()).expect("add"));
            },
        );
    }
    group.finish();
}

/// The ReservoirPy comparison: N = 1000, 10 % W, T = 10,000, 1-D input, weights + spectral
/// radius + run + ridge fit (what `compare_reservoirpy.py` times for both engines).
fn fit_end_to_end(c: &mut Criterion) {
    let inputs = sine_input(10_000);
    let targets = sine_input(10_001).slice_move(ndarray::s![1.., ..]);
    let mut group = c.benchmark_group("fit_end_to_end");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("N=1000 T=10000 incl. set-up", |b| {
        b.iter(|| {
            let mut reservoir = reservoir(1000, 0.1, Precision::F32);
            fit_ridge(
                reservoir.as_mut(),
                inputs.view(),
                targets.view(),
                &ReadoutConfig::default(),
            )
            .expect("fit")
        });
    });
    group.finish();
}

/// One row's sorted columns, as weight generation draws them: `rand::seq::index::sample` and a
/// sort against `SortedSampler` (the same indices), at N = 10^6 with 1000 per row (rand's
/// rejection sampler) and N = 10^5 with 1000 per row (its partial Fisher–Yates).
fn sorted_sample(c: &mut Criterion) {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use reservoir_core::random::SortedSampler;

    let mut group = c.benchmark_group("sorted_sample");
    for length in [999_999, 99_999] {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        group.bench_function(
            BenchmarkId::new("rand index::sample + sort, of", length),
            |b| {
                b.iter(|| {
                    let mut picked = rand::seq::index::sample(&mut rng, length, 1000).into_vec();
                    picked.sort_unstable();
                    picked
                });
            },
        );
        let mut sampler = SortedSampler::new(length).expect("sampler");
        group.bench_function(BenchmarkId::new("SortedSampler, of", length), |b| {
            b.iter(|| sampler.sample(&mut rng, 1000).expect("sample").len());
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    reservoir_run,
    sparse_mat_vec,
    run_threads,
    spectral_radius,
    ridge_accumulate,
    fit_end_to_end,
    sorted_sample
);
criterion_main!(benches);
