//! GPU benchmark of what a user waits for outside the kernels: start-up (process start to the
//! first kernel's result, phase by phase), the latency of one `process_gpu` call, and states
//! coming back through the public `run`, each beside the CPU path of the same host.
//!
//! - Start-up: from `main` to the states of a one-step run of a fresh N = 1000 reservoir
//!   (driver and context, kernel modules shipped, from the disk cache or compiled from PTX, plans, uploads, the
//!   run). Run it twice with the same `RESERVOIR_KERNEL_CACHE` folder: the first run fills the
//!   cache (cold), the second loads from it (warm).
//! - `process_gpu`: a 100-bin pattern over 40 channels at N = 1000 (10 % connected),
//!   p50 and p99 of 1,000 calls after 20 warm-up calls, and the CPU `run_pattern` of the same
//!   reservoir.
//! - `run`: 100,000 steps at N = 1000 dense through `Reservoir::run` (f64 states) and
//!   `run_into_f32`, against the kernel alone (the cluster or persistent step with the
//!   states left on the device, CUDA events) plus the states' bytes over the measured
//!   device-to-host bandwidth of page-locked memory.
//!
//! Every figure is also printed as a JSON line (`Recorder`). Build with `cargo build --release
//! -p reservoir-benches --bins`; run `target/release/gpu_startup_bench`. Without a GPU it says
//! so and exits 0.

use std::time::Instant;

use gpu_reservoir::internals::SingleSequenceSteps;
use gpu_reservoir::{GpuDevice, GpuError, GpuReservoirComputer, Result, StepPath};
use ndarray::Array2;
use reservoir_benches::{median_micros_per_step, sine_input, Param, Recorder};
use reservoir_core::spikes::{Spike, SpikePattern};
use reservoir_core::{
    EchoStateNetwork, Reservoir, ReservoirConfig, ReservoirParams, ReservoirWeights,
};

fn main() {
    let started = Instant::now();
    match measure(started) {
        Ok(()) => {}
        Err(GpuError::Unavailable { reason }) => {
            println!("no usable GPU ({reason}); nothing to measure");
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

fn config(size: usize, density: f64, inputs: usize) -> Result<ReservoirConfig> {
    Ok(ReservoirParams::new()
        .size(size)
        .connection_prob(density)
        .input_size(inputs)
        .seed(7)
        .check()
        .map_err(reservoir_core::ReservoirError::from)?)
}

fn measure(started: Instant) -> Result<()> {
    let device = GpuDevice::shared(0)?;
    let config = config(1000, 0.1, 1)?;
    let weights_started = Instant::now();
    let (weights, _) = ReservoirWeights::generate(&config)?;
    let weights_seconds = weights_started.elapsed().as_secs_f64();
    let mut first = GpuReservoirComputer::from_weights(&config, weights, &device)?;
    first.run(sine_input(1).view())?;
    let to_first_kernel = started.elapsed().as_secs_f64();
    let rec = Recorder::new("gpu_startup_bench", Some(device.info().name.clone()));
    println!("## start-up on {}", device.info().name);
    println!("process start to the first kernel's states: {to_first_kernel:.4} s");
    println!(
        "  {:<40} {weights_seconds:.4} s",
        "weights on the CPU (N = 1000, 10 %)"
    );
    let startup = device.startup();
    for phase in &startup.phases {
        println!("  {:<40} {:.4} s", phase.name, phase.seconds);
    }
    for note in &startup.notes {
        println!("  note: {note}");
    }
    // A phase named `kernels … (compiled)` means the disk cache held none of them.
    let compiled = " (compiled)";
    let cache = if startup.phases.iter().any(|p| p.name.ends_with(compiled)) {
        "empty"
    } else {
        "warm"
    };
    let phases = [
        (
            "process start to the first kernel's states",
            to_first_kernel,
        ),
        ("weights on the CPU (N = 1000, 10 %)", weights_seconds),
    ];
    let device_phases = startup.phases.iter().map(|p| {
        let name = p
            .name
            .trim_end_matches(compiled)
            .trim_end_matches(" (cached)");
        (name, p.seconds)
    });
    for (phase, seconds) in phases.into_iter().chain(device_phases) {
        let case = [
            ("kernel cache", Param::from(cache)),
            ("phase", phase.into()),
        ];
        rec.figure(&case, "start-up", seconds, "s");
    }
    process_gpu_latency(&rec, &device)?;
    states_back(&rec, &device)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

/// p50 and p99 in µs of `call` over 1,000 calls after 20 warm-up calls.
fn latency(mut call: impl FnMut() -> Result<()>) -> Result<(f64, f64)> {
    for _ in 0..20 {
        call()?;
    }
    let mut micros = Vec::with_capacity(1000);
    for _ in 0..1000 {
        let t = Instant::now();
        call()?;
        micros.push(t.elapsed().as_secs_f64() * 1e6);
    }
    micros.sort_by(f64::total_cmp);
    Ok((percentile(&micros, 0.5), percentile(&micros, 0.99)))
}

fn process_gpu_latency(rec: &Recorder, device: &GpuDevice) -> Result<()> {
    let (channels, bins) = (40, 100);
    let config = config(1000, 0.1, channels)?;
    let spikes = (0..bins)
        .flat_map(|t| {
            (0..channels)
                .filter(move |c| (t * 7 + c * 3) % 11 == 0)
                .map(move |c| Spike {
                    neuron_id: c as u32,
                    time_ms: t as f64 + 0.5,
                    amplitude: 1.0,
                })
        })
        .collect::<Vec<_>>();
    let pattern = SpikePattern::new(spikes, channels, bins as f64)?;
    let mut gpu = GpuReservoirComputer::new_shared(&config, device)?;
    let (gpu_p50, gpu_p99) = latency(|| {
        gpu.reset()?;
        gpu.process_gpu(&pattern)?;
        Ok(())
    })?;
    let (reset_p50, reset_p99) = latency(|| Ok(gpu.reset()?))?;
    let inputs = pattern.to_input_matrix(1.0)?;
    let mut states = Array2::<f32>::zeros((bins, 1000));
    let (f32_p50, f32_p99) = latency(|| {
        gpu.run_into_f32(inputs.view(), states.view_mut())?;
        Ok(())
    })?;
    let mut cpu = EchoStateNetwork::<f32>::new(&config)?;
    let (cpu_p50, cpu_p99) = latency(|| {
        cpu.reset()?;
        cpu.run_pattern(&pattern, 1.0)?;
        Ok(())
    })?;
    println!(
        "## process_gpu, {bins}-bin pattern, {channels} channels, N = 1000 (10 %), 1,000 calls"
    );
    println!("| path | p50 µs | p99 µs |\n|---|---|---|");
    for (path, p50, p99) in [
        ("GPU reset + process_gpu", gpu_p50, gpu_p99),
        ("GPU reset alone", reset_p50, reset_p99),
        (
            "GPU run_into_f32 of the binned pattern, no reset",
            f32_p50,
            f32_p99,
        ),
        ("CPU reset + run_pattern (one core)", cpu_p50, cpu_p99),
    ] {
        println!("| {path} | {p50:.1} | {p99:.1} |");
        let case = [
            ("N", Param::from(1000)),
            ("connection", 0.1.into()),
            ("bins", bins.into()),
            ("channels", channels.into()),
            ("path", path.into()),
        ];
        rec.figure(&case, "p50", p50, "µs");
        rec.figure(&case, "p99", p99, "µs");
    }
    Ok(())
}

fn states_back(rec: &Recorder, device: &GpuDevice) -> Result<()> {
    let (n, steps) = (1000, 100_000);
    let config = config(n, 1.0, 1)?;
    let inputs = sine_input(steps);
    let mut reservoir = GpuReservoirComputer::new_shared(&config, device)?;
    let kernel = {
        let weights = reservoir.weights().clone();
        let mut run = SingleSequenceSteps::new(device, &weights, 8192, false)?;
        let path = reservoir.step_path();
        median_micros_per_step(device, run.steps(), 5, || match path {
            StepPath::Cluster => run.enqueue_cluster(),
            _ => run.enqueue_persistent(),
        })?
    };
    let bandwidth = pinned_bandwidth(device, 8192 * n)?;
    let floor = kernel + (n * 4) as f64 / bandwidth / 1e3;
    reservoir.run(inputs.slice(ndarray::s![..8192, ..]))?;
    let timed = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let mut samples = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            f()?;
            samples.push(t.elapsed().as_secs_f64() * 1e6 / steps as f64);
        }
        samples.sort_by(f64::total_cmp);
        Ok(samples[1])
    };
    let f64_run = timed(&mut || {
        reservoir.reset()?;
        reservoir.run(inputs.view())?;
        Ok(())
    })?;
    let mut states = Array2::<f32>::zeros((steps, n));
    let f32_run = timed(&mut || {
        reservoir.reset()?;
        reservoir.run_into_f32(inputs.view(), states.view_mut())?;
        Ok(())
    })?;
    let mut cpu = EchoStateNetwork::<f32>::new(&config)?;
    let cpu_run = timed(&mut || {
        cpu.reset()?;
        cpu.run(inputs.slice(ndarray::s![..10_000, ..]))?;
        Ok(())
    })? / 10.0;
    println!(
        "## states back: {steps} steps, N = {n} dense, path {:?}",
        reservoir.step_path()
    );
    println!("kernel alone {kernel:.3} µs/step; page-locked device-to-host {bandwidth:.1} GB/s; floor (kernel + bytes/bandwidth) {floor:.3} µs/step");
    println!("| path | µs/step | × floor |\n|---|---|---|");
    println!(
        "| GPU run (f64 states) | {f64_run:.3} | {:.2} |",
        f64_run / floor
    );
    println!(
        "| GPU run_into_f32 | {f32_run:.3} | {:.2} |",
        f32_run / floor
    );
    println!("| CPU run, f32, one core (10,000 steps) | {cpu_run:.3} | |");
    rec.figure(
        &[("copy", "device to page-locked host".into())],
        "bandwidth",
        bandwidth,
        "GB/s",
    );
    for (path, micros) in [
        ("kernel alone, states left on the device", kernel),
        ("floor: kernel + states' bytes / copy bandwidth", floor),
        ("GPU run (f64 states)", f64_run),
        ("GPU run_into_f32", f32_run),
        ("CPU run, f32, one core (10,000 steps)", cpu_run),
    ] {
        let case = [
            ("N", Param::from(n)),
            ("density", 1.0.into()),
            ("steps", steps.into()),
            ("path", path.into()),
        ];
        rec.figure(&case, "step", micros, "µs/step");
    }
    Ok(())
}

/// Device-to-host bandwidth into page-locked memory, GB/s, median of 5 copies of `len` f32.
fn pinned_bandwidth(device: &GpuDevice, len: usize) -> Result<f64> {
    let driver = |context| move |source| GpuError::Driver { context, source };
    let stream = device.stream();
    let source = stream
        .alloc_zeros::<f32>(len)
        .map_err(driver("allocating the copy source"))?;
    // SAFETY: the buffer is written by the copy before it is read; flags 0: cached memory.
    let mut target = unsafe { device.context().alloc_pinned_with_flags::<f32>(len, 0) }
        .map_err(driver("allocating page-locked memory"))?;
    let mut samples = Vec::new();
    for _ in 0..6 {
        let t = Instant::now();
        stream
            .memcpy_dtoh(&source, &mut target)
            .map_err(driver("copying"))?;
        stream.synchronize().map_err(driver("waiting"))?;
        samples.push((len * 4) as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[3])
}
