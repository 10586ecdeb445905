//! Spike-encoder throughput in encoded elements (steps × channels) per second, plus raw
//! counter-RNG draws per second.
//!
//! `cargo bench -p reservoir-benches --bench encoding`; the device is the machine it runs on.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndarray::{Array1, Array2};
use reservoir_core::encoding::{
    delta, latency, poisson, population, rate, rate_sequence, DeltaParams, LatencyOptions,
    PopulationParams, RateOptions,
};
use reservoir_core::random::counter::{keyed_f32, stream_key};

/// `n` intensities spread over [0, 1] in a fixed, scrambled order.
fn intensities(n: usize) -> Array1<f64> {
    Array1::from_shape_fn(n, |i| ((i * 7919) % n) as f64 / n.max(2) as f64)
}

fn encoders(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");

    let (steps, channels) = (1000, 100);
    let x = intensities(channels);
    group.throughput(Throughput::Elements((steps * channels) as u64));
    group.bench_function("rate 1000 steps x 100", |b| {
        b.iter(|| rate(black_box(x.view()), steps, RateOptions::default(), 1).expect("rate"))
    });
    let seq = Array2::from_shape_fn((steps, channels), |(t, i)| ((t + i) % 10) as f64 / 10.0);
    group.bench_function("rate_sequence 1000 x 100", |b| {
        b.iter(|| rate_sequence(black_box(seq.view()), RateOptions::default(), 1).expect("rate"))
    });

    let (steps, features) = (100, 10_000);
    let x = intensities(features);
    group.throughput(Throughput::Elements((steps * features) as u64));
    group.bench_function("latency 10000 features x 100 steps", |b| {
        b.iter(|| latency(black_box(x.view()), steps, LatencyOptions::default()).expect("latency"))
    });

    let (len, channels) = (10_000, 100);
    let signal =
        Array2::from_shape_fn((len, channels), |(t, i)| (t as f64 * 0.05 + i as f64).sin());
    group.throughput(Throughput::Elements((len * channels) as u64));
    group.bench_function("delta 10000 steps x 100", |b| {
        let o = DeltaParams::new().off_spike(true).check().expect("options");
        b.iter(|| delta(black_box(signal.view()), o).expect("delta"))
    });

    let (features, neurons, steps) = (100, 10, 1000);
    let x = intensities(features);
    let o = PopulationParams::new()
        .neurons_per_feature(neurons)
        .steps(steps)
        .check()
        .expect("options");
    group.throughput(Throughput::Elements((features * neurons * steps) as u64));
    group.bench_function("population 100 x 10 neurons x 1000 steps", |b| {
        b.iter(|| population(black_box(x.view()), o, 1).expect("population"))
    });

    // 100 channels at 20 Hz for 10 s: ~20,000 spikes; elements = 10,000 1-ms bins × 100.
    let rates = Array1::from_elem(100, 20.0);
    group.throughput(Throughput::Elements(10_000 * 100));
    group.bench_function("poisson 100 ch 20 Hz 10 s (1 ms bins)", |b| {
        b.iter(|| poisson(black_box(rates.view()), 10_000.0, 1).expect("poisson"))
    });
    group.finish();
}

fn counter_rng(c: &mut Criterion) {
    let mut group = c.benchmark_group("counter_rng");
    let n = 1_000_000u64;
    group.throughput(Throughput::Elements(n));
    group.bench_function("keyed_f32 x 1e6", |b| {
        let key = stream_key(1, 2);
        b.iter(|| (0..n).map(|c| keyed_f32(key, c)).sum::<f32>())
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = encoders, counter_rng
}
criterion_main!(benches);
