//! GPU benchmarks under criterion: wall time of the public `Reservoir::run` on the GPU, i.e.
//! what a caller sees (drive, the step kernel, copying the states back as f64), per path;
//! `run_into_f32` (the states as the device computes them); and the latency of one
//! `process_gpu` call on a 100-bin pattern. The kernel-only figures, with baselines in the
//! same process, come from `gpu_bench`; start-up and latency percentiles from
//! `gpu_startup_bench`.
//!
//! `cargo bench -p reservoir-benches --bench gpu` on a CUDA machine. Without a usable GPU it
//! prints why and measures nothing.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gpu_reservoir::{GpuDevice, GpuError, GpuReservoirComputer, StepPath};
use ndarray::Array2;
use reservoir_benches::sine_input;
use reservoir_core::spikes::SpikePattern;
use reservoir_core::{Reservoir, ReservoirParams};

/// GPU 0, or `None` after saying why the GPU benches are skipped.
fn device() -> Option<GpuDevice> {
    match GpuDevice::shared(0) {
        Ok(device) => Some(device),
        Err(e) => {
            eprintln!("skipping GPU benches: {e}");
            None
        }
    }
}

fn gpu_run(c: &mut Criterion) {
    let Some(device) = device() else { return };
    let steps = 10_000;
    let inputs = sine_input(steps);
    let mut group = c.benchmark_group("gpu_run");
    group
        .throughput(Throughput::Elements(steps as u64))
        .sample_size(10);
    for (size, density) in [(1000, 1.0), (1000, 0.1), (10_000, 0.01), (4096, 1.0)] {
        let config = ReservoirParams::new()
            .size(size)
            .connection_prob(density)
            .check()
            .expect("config");
        for path in [StepPath::Cluster, StepPath::Persistent, StepPath::PerStep] {
            let reservoir =
                GpuReservoirComputer::new_shared(&config, &device).expect("gpu reservoir");
            let mut reservoir = match reservoir.with_step_path(path) {
                Ok(reservoir) => reservoir,
                // This path does not exist for this N on this device.
                Err(GpuError::Unsupported { .. }) => continue,
                Err(e) => panic!("{path:?}: {e}"),
            };
            let id = BenchmarkId::new(format!("{path:?}/density {density}"), size);
            group.bench_function(id, |b| {
                b.iter(|| reservoir.run(inputs.view()).expect("gpu run"));
            });
        }
    }
    group.finish();
}

/// `run_into_f32` at N = 1000 dense, 10,000 steps, into a kept array.
fn gpu_run_f32(c: &mut Criterion) {
    let Some(device) = device() else { return };
    let (n, steps) = (1000, 10_000);
    let config = ReservoirParams::new()
        .size(n)
        .connection_prob(1.0)
        .check()
        .expect("config");
    let inputs = sine_input(steps);
    let mut states = Array2::<f32>::zeros((steps, n));
    let mut reservoir = GpuReservoirComputer::new_shared(&config, &device).expect("gpu reservoir");
    let mut group = c.benchmark_group("gpu_run_into_f32");
    group
        .throughput(Throughput::Elements(steps as u64))
        .sample_size(10);
    group.bench_function(BenchmarkId::new("dense", n), |b| {
        b.iter(|| {
            reservoir
                .run_into_f32(inputs.view(), states.view_mut())
                .expect("gpu run")
        });
    });
    group.finish();
}

/// One `reset` + `process_gpu` of a 100-bin pattern over 40 channels at N = 1000, 10 %.
fn gpu_process_pattern(c: &mut Criterion) {
    let Some(device) = device() else { return };
    let (channels, bins) = (40, 100);
    let config = ReservoirParams::new()
        .size(1000)
        .input_size(channels)
        .check()
        .expect("config");
    let mut counts = Array2::<f64>::zeros((bins, channels));
    for ((t, c), v) in counts.indexed_iter_mut() {
        *v = f64::from(u8::from((t * 7 + c * 3) % 11 == 0));
    }
    let pattern = SpikePattern::from_matrix(&counts, 1.0).expect("pattern");
    let mut reservoir = GpuReservoirComputer::new_shared(&config, &device).expect("gpu reservoir");
    c.bench_function("gpu_process_gpu/100 bins", |b| {
        b.iter(|| {
            reservoir.reset().expect("reset");
            reservoir.process_gpu(&pattern).expect("process_gpu")
        });
    });
}

criterion_group!(benches, gpu_run, gpu_run_f32, gpu_process_pattern);
criterion_main!(benches);
