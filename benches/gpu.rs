//! GPU benchmarks under criterion: wall time of the public `Reservoir::run` on the GPU, i.e.
//! what a caller sees (drive, the step kernel, copying the states back as f64), per path.
//! The kernel-only figures, with baselines in the same process, come from `gpu_bench`.
//!
//! `cargo bench -p reservoir-benches --bench gpu` on a CUDA machine. Without a usable GPU it
//! prints why and measures nothing.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gpu_reservoir::{probe, GpuDevice, GpuError, GpuReservoirComputer, StepPath};
use reservoir_benches::sine_input;
use reservoir_core::{Reservoir, ReservoirParams};

fn gpu_run(c: &mut Criterion) {
    if let Some(problem) = probe().problem {
        eprintln!("skipping GPU benches: {problem}");
        return;
    }
    let device = match GpuDevice::shared(0) {
        Ok(device) => device,
        Err(e) => {
            eprintln!("skipping GPU benches: {e}");
            return;
        }
    };
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

criterion_group!(benches, gpu_run);
criterion_main!(benches);
