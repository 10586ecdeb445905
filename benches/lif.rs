//! LIF reservoir throughput: neuron updates/s (N × steps / time) and synaptic events/s
//! (delivered spikes × out-degree / time) at N = 1000 and 10,000, 1 % and 10 % connectivity.
//!
//! `cargo bench -p reservoir-benches --bench lif`; the device is the machine it runs on. Each
//! case first prints the figures of one timed 10,000-step run (1 s of model time at the
//! default dt = 0.1 ms), then criterion times runs of 1000 steps (throughput in neuron
//! updates). Input: one channel, uniform on [0, 1) and held for 10 ms, as in the tests.

use std::time::Instant;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::Array2;
use reservoir_core::lif::{LifConfig, LifNetwork, LifParams};
use reservoir_core::Reservoir;

/// Piecewise-constant pseudo-random input in [0, 1), a new value every 100 steps (10 ms).
fn held_input(steps: usize) -> Array2<f64> {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut value = 0.0;
    Array2::from_shape_fn((steps, 1), |(t, _)| {
        if t % 100 == 0 {
            // SplitMix64, top 53 bits as a fraction.
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            value = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
        }
        value
    })
}

/// The cases: default config at each size and density, plus a busier net (stronger coupling
/// and bias: self-sustained firing) to load the event path.
fn cases() -> Vec<(String, LifConfig)> {
    let mut cases = Vec::new();
    for size in [1000, 10_000] {
        for p in [0.01, 0.1] {
            let params = LifParams::new().size(size).connection_prob(p);
            let config = params.clone().check().expect("config");
            cases.push((format!("default N={size} p={p}"), config));
            if size == 10_000 {
                let busy = params
                    .spectral_radius(3.0)
                    .bias_current(0.95)
                    .check()
                    .expect("config");
                cases.push((format!("busy N={size} p={p}"), busy));
            }
        }
    }
    cases
}

fn lif_run(c: &mut Criterion) {
    let steps = 1000;
    let inputs = held_input(steps);
    let timed_steps = 10_000;
    let timed_inputs = held_input(timed_steps);
    let mut group = c.benchmark_group("lif_run");
    group.sample_size(10);
    for (name, config) in cases() {
        let n = config.size();
        let setup = Instant::now();
        let mut net = LifNetwork::new(&config).expect("network");
        let setup = setup.elapsed().as_secs_f64();
        net.run(inputs.view()).expect("warm-up");
        net.reset().expect("reset");
        let start = Instant::now();
        for u in timed_inputs.rows() {
            net.step(u).expect("step");
        }
        let stepping = start.elapsed().as_secs_f64();
        net.reset().expect("reset");
        let start = Instant::now();
        net.run(timed_inputs.view()).expect("timed run");
        let seconds = start.elapsed().as_secs_f64();
        let model_s = timed_steps as f64 * config.dt_ms() / 1000.0;
        eprintln!(
            "lif {name}: set-up {setup:.2} s; {timed_steps} steps in {seconds:.3} s \
             ({:.2}x real time): {:.3e} neuron updates/s, {:.3e} synaptic events/s, \
             {:.3e} spikes/s; mean rate {:.2} Hz; stepping alone (no T x N f64 output): \
             {:.3e} neuron updates/s, {:.3e} synaptic events/s",
            model_s / seconds,
            net.neuron_updates() as f64 / seconds,
            net.synaptic_events() as f64 / seconds,
            net.spike_count() as f64 / seconds,
            net.spike_count() as f64 / n as f64 / model_s,
            net.neuron_updates() as f64 / stepping,
            net.synaptic_events() as f64 / stepping,
        );
        group.throughput(Throughput::Elements((n * steps) as u64));
        group.bench_function(BenchmarkId::new(name, steps), |b| {
            b.iter(|| net.run(inputs.view()).expect("run"));
        });
    }
    group.finish();
}

criterion_group!(benches, lif_run);
criterion_main!(benches);
