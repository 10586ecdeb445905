//! GPU benchmark of the LIF reservoir at scale: N = 10,000 and 100,000 neurons at 1 %
//! connectivity (10^6 and 10^8 synapses), the event-driven GPU step (two launches per step,
//! and where the device has thread-block clusters and N ≤ 32,768 a whole run in one cluster
//! launch) next to the gather GPU step and the CPU `LifNetwork`, all measured in this process
//! on the same weights and inputs. The cluster run is also timed with no input (no spike,
//! nothing delivered): the fixed cost of a launch-free step.
//!
//! Per path: µs per step (GPU: median of timed runs from CUDA events, one warm-up run first,
//! features and spike flags left on the device; CPU: median wall time of timed runs of
//! `LifNetwork::step`, one warm-up run first), neuron updates/s (N per step), synaptic
//! events/s (spikes × out-degree), spikes/s and the mean firing rate in Hz, each from the
//! last timed run. The paths run the same trajectory from rest (same weights, inputs and
//! number of runs, bit-identical steps), so their last runs hold the same spikes and synaptic
//! events: the benchmark checks that and exits with an error otherwise. Start-up (context, the
//! kernel module loaded, weight generation on the CPU and with the spectral estimate's products
//! on the GPU, checked to be the same weights, the CPU network's Wᵀ, the GPU network's W and Wᵀ
//! on the device) is reported separately, and each weight generation by phase (through a
//! `spectral::Phases` hook: draw, checks, spectral setup, products and host work, scale, input).
//!
//! Input: one channel driving 10 % of the neurons (the default config), a level uniform on
//! [0.3, 1) held for 10 ms, then the next: the default regime (bias 0.9, ρ = 2), which fires
//! at a few Hz.
//!
//! Build with `cargo build --release -p reservoir-benches --bins` and run on a machine with a
//! GPU: `target/release/gpu_lif_bench`. Without a GPU it says so and measures the CPU rows only
//! (`cargo run --release -p reservoir-benches --bin gpu_lif_bench`).
//!
//! Options: `--sizes N:p,...` (sizes and connection probabilities instead of the two cases),
//! `--steps S`, `--runs R` and `--warmup-runs W` (steps per run, timed runs, and untimed runs
//! before them on the GPU: default 1; a large network's first steps from rest are silent),
//! `--gpu-only` (no CPU rows and no path-rule table) and `--export DIR` (the network for
//! `benches/python/lif_vs_gpu_simulators.py`, with its synapses up to [`EXPORT_MAX_SYNAPSES`];
//! files: `lif_export.rs`). Every figure is also printed as a JSON line (`Recorder`).

mod lif_export;
mod lif_setup;

use std::path::PathBuf;
use std::time::Instant;

use gpu_reservoir::internals::{generate_lif, LifSteps, LIF_EVENT_MIN_SYNAPSES};
use gpu_reservoir::{probe, GpuDevice, GpuError, GpuLifNetwork, LifStepPath, Result};
use lif_export::{export_network, export_synapses, HOLD_STEPS};
use lif_setup::{held_input, lif_config, time_cpu, LifStepTiming};
use ndarray::{Array2, ArrayView2};
use reservoir_benches::{lif_weights_phased, median_micros_per_step, phase_line, Param, Recorder};
use reservoir_core::lif::{spectral_products, LifConfig, LifNetwork};
use reservoir_core::{Reservoir, ReservoirError};

/// (N, steps per timed run) at 1 % connectivity, 5 timed runs. Every path runs as many timed
/// runs, so that the last runs coincide; steps per run fit one GPU chunk.
const CASES: [(usize, usize); 2] = [(10_000, 4000), (100_000, 500)];

/// The most synapses `--export` writes (2.4 GB of files); a larger network's simulators draw
/// their own synapses alike.
const EXPORT_MAX_SYNAPSES: usize = 200_000_000;

/// One size to measure.
struct Case {
    n: usize,
    connection_prob: f64,
    steps: usize,
}

/// The command line.
struct Options {
    cases: Vec<Case>,
    warmup_runs: usize,
    runs: usize,
    gpu_only: bool,
    export: Option<PathBuf>,
}

fn usage(problem: &str) -> GpuError {
    ReservoirError::invalid(
        "gpu_lif_bench",
        format!(
            "{problem}; usage: gpu_lif_bench [--sizes N:p,...] [--steps S] [--runs R] \
             [--warmup-runs W] [--gpu-only] [--export DIR]"
        ),
    )
    .into()
}

fn positive(flag: &str, value: &str) -> Result<usize> {
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|&x| x > 0)
        .ok_or_else(|| usage(&format!("{flag}: {value:?} is not a positive integer")))
}

fn options() -> Result<Options> {
    let mut options = Options {
        cases: CASES
            .iter()
            .map(|&(n, steps)| Case {
                n,
                connection_prob: 0.01,
                steps,
            })
            .collect(),
        warmup_runs: 1,
        runs: 5,
        gpu_only: false,
        export: None,
    };
    let mut steps = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| usage(&format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--sizes" => {
                options.cases = value()?
                    .split(',')
                    .map(|item| {
                        let (n, p) = item
                            .split_once(':')
                            .ok_or_else(|| usage(&format!("--sizes: {item:?} is not N:p")))?;
                        let connection_prob = p
                            .trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|p| *p > 0.0 && *p <= 1.0)
                            .ok_or_else(|| usage(&format!("--sizes: {p:?} is not in (0, 1]")))?;
                        let n = positive("--sizes", n)?;
                        // One GPU chunk holds 5N bytes a step in 256 MiB: 53 steps at 10^6.
                        let steps = match n {
                            0..=10_000 => 4000,
                            10_001..=100_000 => 500,
                            _ => 50,
                        };
                        Ok(Case {
                            n,
                            connection_prob,
                            steps,
                        })
                    })
                    .collect::<Result<_>>()?
            }
            "--steps" => steps = Some(positive(&flag, &value()?)?),
            "--runs" => options.runs = positive(&flag, &value()?)?,
            "--warmup-runs" => options.warmup_runs = positive(&flag, &value()?)?,
            "--gpu-only" => options.gpu_only = true,
            "--export" => options.export = Some(PathBuf::from(value()?)),
            other => return Err(usage(&format!("unknown argument {other:?}"))),
        }
    }
    if let Some(steps) = steps {
        options.cases.iter_mut().for_each(|case| case.steps = steps);
    }
    Ok(options)
}

/// (N, p) of the path-rule table: synapse counts from 1.25·10^4 to 4·10^6, below and above
/// `LIF_EVENT_MIN_SYNAPSES`, every GPU path the device has timed on 2000 steps (5 runs).
const RULE_CASES: [(usize, f64); 7] = [
    (500, 0.05),
    (1000, 0.02),
    (1000, 0.1),
    (3000, 0.05),
    (5000, 0.04),
    (10_000, 0.01),
    (20_000, 0.01),
];

struct Row {
    n: usize,
    path: &'static str,
    runs: usize,
    timing: LifStepTiming,
}

/// The case of a timed run: the network, the runs and the path.
fn step_case(
    n: usize,
    connection_prob: f64,
    timing: &LifStepTiming,
    warmup_runs: usize,
    runs: usize,
    path: &str,
) -> [(&'static str, Param); 6] {
    [
        ("N", n.into()),
        ("connection", connection_prob.into()),
        ("steps", timing.steps.into()),
        ("runs", runs.into()),
        ("warm-up runs", warmup_runs.into()),
        ("path", path.into()),
    ]
}

/// Times `runs` runs of `inputs` on the GPU network from its evolving state (features and
/// flags left on the device) after `warmup_runs` (at least one) untimed runs: CUDA events,
/// median.
fn time_gpu(
    gpu: &mut GpuLifNetwork,
    inputs: ArrayView2<f64>,
    warmup_runs: usize,
    runs: usize,
) -> Result<LifStepTiming> {
    let device = gpu.device().clone();
    let mut bench = LifSteps::new(gpu, inputs)?;
    let steps = bench.steps();
    // `median_micros_per_step` runs the last warm-up run itself.
    for _ in 1..warmup_runs {
        bench.enqueue()?;
    }
    let micros_per_step = median_micros_per_step(&device, steps, runs, || bench.enqueue())?;
    let (spikes, synaptic_events) = bench.last_run_counts()?;
    Ok(LifStepTiming {
        micros_per_step,
        steps,
        spikes,
        synaptic_events,
    })
}

struct Startup {
    n: usize,
    synapses: usize,
    generate_s: f64,
    /// `GpuLifNetwork::generate_weights` (the same weights, checked), when there is a GPU.
    gpu_generate_s: Option<f64>,
    spectral_products: usize,
    /// The CPU network's construction, unless `--gpu-only`.
    cpu_build_s: Option<f64>,
    /// Upload time and device bytes, when there is a GPU.
    gpu: Option<(f64, usize)>,
}

/// The shared GPU 0 with the seconds its context and the first load of `lif.cu`
/// took, or `None` (the reason printed) when there is none.
fn gpu_device() -> Result<Option<(GpuDevice, f64, f64)>> {
    if let Some(problem) = probe().problem {
        println!("no usable GPU ({problem}): measuring the CPU only");
        return Ok(None);
    }
    let started = Instant::now();
    let device = GpuDevice::shared(0)?;
    let context_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    GpuLifNetwork::new_shared(&lif_config(2, 0.1)?, &device)?;
    let kernels_s = started.elapsed().as_secs_f64();
    println!(
        "device: {} ({} SMs)",
        device.info().name,
        device.info().multiprocessors
    );
    Ok(Some((device, context_s, kernels_s)))
}

/// A GPU path as the tables and records name it.
fn path_label(path: LifStepPath) -> &'static str {
    match path {
        LifStepPath::EventDriven => "GPU event-driven",
        LifStepPath::Gather => "GPU gather",
        LifStepPath::EventCluster => "GPU event-driven, one cluster launch",
    }
}

/// An error unless every (spikes, synaptic events) pair is the same.
fn check_same(what: String, counts: &[(u64, u64)]) -> Result<()> {
    if counts.windows(2).any(|w| w[0] != w[1]) {
        let message = format!("{what}: the paths' last runs differ (spikes, events): {counts:?}");
        return Err(ReservoirError::numerical("gpu_lif_bench", message).into());
    }
    Ok(())
}

fn main() -> Result<()> {
    let options = options()?;
    let gpu_device = gpu_device()?;
    let rec = Recorder::new(
        "gpu_lif_bench",
        gpu_device
            .as_ref()
            .map(|(device, _, _)| device.info().name.clone()),
    );
    let runs = options.runs;
    let mut rows = Vec::new();
    let mut silent_rows = Vec::new();
    let mut startups = Vec::new();
    for &Case {
        n,
        connection_prob,
        steps,
    } in &options.cases
    {
        let config = lif_config(n, connection_prob)?;
        let t = Instant::now();
        let (weights, cpu_phases) = lif_weights_phased(&config)?;
        let generate_s = t.elapsed().as_secs_f64();
        let synapses = weights.recurrent().nnz();
        println!(
            "N = {n}: weights with the CPU estimate {generate_s:.3} s: {}",
            phase_line(&cpu_phases)
        );
        let inputs = held_input(steps, HOLD_STEPS);
        let export_synapses_too = synapses <= EXPORT_MAX_SYNAPSES;
        if let Some(dir) = &options.export {
            let (warmup, synapses_too) = (options.warmup_runs, export_synapses_too);
            export_network(dir, &config, &weights, &inputs, warmup, runs, synapses_too)?;
            if export_synapses_too {
                let mut network = LifNetwork::from_weights(&config, weights.clone())?;
                export_synapses(dir, &mut network, &inputs)?;
            }
        }
        let mut cpu = None;
        let mut cpu_build_s = None;
        if !options.gpu_only {
            let t = Instant::now();
            cpu = Some(LifNetwork::from_weights(&config, weights.clone())?);
            cpu_build_s = Some(t.elapsed().as_secs_f64());
        }
        let mut timings = Vec::new();
        let mut gpu_startup = None;
        let mut gpu_generate_s = None;
        if let Some((device, _, _)) = &gpu_device {
            // The weights with the GPU's estimate, then the network made on the device (from
            // the estimate's copy of W where the GPU estimated), waited for.
            let t = Instant::now();
            let mut gpu_phases = Vec::new();
            let (mut gpu, with_gpu) = generate_lif(&config, device, &mut gpu_phases)?;
            let enqueued = t.elapsed();
            // The network's making on the device apart from the weights' phases.
            let (network, weight_phases): (Vec<_>, Vec<_>) = gpu_phases
                .into_iter()
                .partition(|&(name, _)| name == "network");
            let build = network
                .iter()
                .map(|&(_, spent)| spent)
                .sum::<std::time::Duration>();
            device
                .stream()
                .synchronize()
                .map_err(|source| GpuError::Driver {
                    context: "waiting for the network",
                    source,
                })?;
            let network_s = (build + t.elapsed().saturating_sub(enqueued)).as_secs_f64();
            let spent = enqueued.saturating_sub(build).as_secs_f64();
            gpu_generate_s = Some(spent);
            println!(
                "N = {n}: weights with the GPU estimate {spent:.3} s: {}",
                phase_line(&weight_phases)
            );
            if with_gpu != weights {
                let message = format!("N = {n}: the weights with the GPU estimate differ");
                return Err(ReservoirError::numerical("gpu_lif_bench", message).into());
            }
            drop((with_gpu, weights));
            gpu_startup = Some((network_s, gpu.device_bytes()));
            println!(
                "N = {n}: {synapses} synapses; auto path {:?}",
                gpu.step_path()
            );
            let phases: Vec<String> = device
                .startup()
                .phases
                .iter()
                .map(|p| format!("{} {:.3} s", p.name, p.seconds))
                .collect();
            println!("  device start-up so far: {}", phases.join(", "));
            let mut paths = vec![LifStepPath::EventDriven, LifStepPath::Gather];
            let cluster = gpu.cluster_run_available()?;
            if cluster {
                paths.push(LifStepPath::EventCluster);
            }
            for path in paths {
                gpu = gpu.with_step_path(path);
                gpu.reset()?;
                let warmup = options.warmup_runs;
                let timing = time_gpu(&mut gpu, inputs.view(), warmup, runs)?;
                timings.push((path_label(path), timing));
            }
            if cluster {
                // The run's fixed cost: the same steps with no input, so no spike and nothing
                // to deliver (the bias alone stays below threshold).
                gpu = gpu.with_step_path(LifStepPath::EventCluster);
                gpu.reset()?;
                let silent = Array2::zeros(inputs.dim());
                let timing = time_gpu(&mut gpu, silent.view(), options.warmup_runs, runs)?;
                if timing.spikes == 0 {
                    let path = "GPU event-driven, one cluster launch, no input";
                    let case =
                        step_case(n, connection_prob, &timing, options.warmup_runs, runs, path);
                    rec.figure(&case, "step", timing.micros_per_step, "µs/step");
                    silent_rows.push((n, timing));
                }
            }
        }
        if let Some(cpu) = &mut cpu {
            cpu.reset()?;
            // `time_cpu` runs the last warm-up run itself, as on the GPU.
            for _ in 1..options.warmup_runs {
                for u in inputs.rows() {
                    cpu.step(u)?;
                }
            }
            timings.push(("CPU LifNetwork (1 core)", time_cpu(cpu, &inputs, runs)?));
        }
        let counts: Vec<(u64, u64)> = timings
            .iter()
            .map(|(_, t)| (t.spikes, t.synaptic_events))
            .collect();
        check_same(format!("N = {n}"), &counts)?;
        let model_s = steps as f64 * config.dt_ms() * 1e-3;
        for (path, timing) in &timings {
            let case = step_case(n, connection_prob, timing, options.warmup_runs, runs, path);
            let seconds = timing.micros_per_step * 1e-6 * steps as f64;
            let rate = timing.spikes as f64 / n as f64 / model_s;
            rec.figure(&case, "step", timing.micros_per_step, "µs/step");
            let events = timing.synaptic_events as f64 / seconds;
            rec.figure(&case, "synaptic events", events, "per s");
            rec.figure(&case, "firing rate", rate, "Hz");
        }
        let case = [
            ("N", Param::from(n)),
            ("connection", connection_prob.into()),
        ];
        rec.figure(&case, "synapses", synapses as f64, "");
        rec.figure(&case, "weights, CPU estimate", generate_s, "s");
        if let Some(seconds) = gpu_generate_s {
            rec.figure(&case, "weights, GPU estimate", seconds, "s");
        }
        if let Some(seconds) = cpu_build_s {
            rec.figure(&case, "CPU network (Wᵀ)", seconds, "s");
        }
        if let Some((seconds, bytes)) = gpu_startup {
            rec.figure(&case, "GPU network (W, Wᵀ)", seconds, "s");
            rec.figure(&case, "device memory", bytes as f64 / 1e9, "GB");
        }
        rows.extend(timings.iter().map(|&(path, timing)| Row {
            n,
            path,
            runs,
            timing,
        }));
        startups.push(Startup {
            n,
            synapses,
            generate_s,
            gpu_generate_s,
            spectral_products: spectral_products(synapses),
            cpu_build_s,
            gpu: gpu_startup,
        });
    }

    let mut rule_rows = Vec::new();
    for (n, p) in RULE_CASES {
        let (Some((device, _, _)), false) = (&gpu_device, options.gpu_only) else {
            break;
        };
        let config = lif_config(n, p)?;
        let mut gpu = GpuLifNetwork::new_shared(&config, device)?;
        let auto = gpu.step_path();
        let inputs = held_input(2000, 100);
        let mut paths = vec![LifStepPath::EventDriven, LifStepPath::Gather];
        if gpu.cluster_run_available()? {
            paths.push(LifStepPath::EventCluster);
        }
        let mut timings = Vec::new();
        for &path in &paths {
            gpu = gpu.with_step_path(path);
            gpu.reset()?;
            timings.push(time_gpu(&mut gpu, inputs.view(), 1, 5)?);
        }
        let counts: Vec<(u64, u64)> = timings
            .iter()
            .map(|t| (t.spikes, t.synaptic_events))
            .collect();
        check_same(format!("N = {n}, p = {p}"), &counts)?;
        let micros: Vec<f64> = timings.iter().map(|t| t.micros_per_step).collect();
        let fastest = (0..micros.len())
            .min_by(|&a, &b| micros[a].total_cmp(&micros[b]))
            .map_or(LifStepPath::Gather, |at| paths[at]);
        let rate = counts[0].0 as f64 / n as f64 / (2000.0 * LifConfig::default().dt_ms() * 1e-3);
        for (&path, timing) in paths.iter().zip(&timings) {
            let case = step_case(n, p, timing, 1, 5, path_label(path));
            rec.figure(&case, "step", timing.micros_per_step, "µs/step");
            rec.figure(&case, "firing rate", rate, "Hz");
        }
        rule_rows.push((n, p, gpu.synapses(), micros, rate, auto, fastest));
    }

    if let Some((_, context_s, kernels_s)) = &gpu_device {
        println!(
            "\nGPU start-up (excluded below): context {context_s:.3} s, first load \
             of lif.cu {kernels_s:.3} s"
        );
        for (phase, seconds) in [
            ("context", *context_s),
            ("first load of lif.cu", *kernels_s),
        ] {
            rec.figure(&[("phase", phase.into())], "start-up", seconds, "s");
        }
    }
    println!(
        "\nCPU: {} threads available, the CPU network steps on one",
        reservoir_core::Par::all().threads()
    );
    println!("\n| N | synapses | weights (generate) | weights (GPU estimate) | spectral budget (products) | CPU network (Wᵀ) | GPU network (W, Wᵀ) | host W + Wᵀ | device bytes |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for s in &startups {
        let (upload, device_bytes) = match s.gpu {
            Some((seconds, bytes)) => (
                format!("{seconds:.2} s"),
                format!("{:.2} GB", bytes as f64 / 1e9),
            ),
            None => ("—".to_string(), "—".to_string()),
        };
        let cpu_build = s
            .cpu_build_s
            .map_or_else(|| "—".to_string(), |seconds| format!("{seconds:.2} s"));
        let gpu_generate = s
            .gpu_generate_s
            .map_or_else(|| "—".to_string(), |seconds| format!("{seconds:.2} s"));
        println!(
            "| {} | {} | {:.2} s | {gpu_generate} | {} | {cpu_build} | {upload} | {:.2} GB | {device_bytes} |",
            s.n,
            s.synapses,
            s.generate_s,
            s.spectral_products,
            // W in f64 (value + column index) and Wᵀ in f32 (value + target).
            (s.synapses * (12 + 8)) as f64 / 1e9
        );
    }
    println!("\n| N | path | steps × runs | µs/step | neuron updates/s | synaptic events/s | spikes/s | rate (Hz) |");
    println!("|---|---|---|---|---|---|---|---|");
    let dt_s = LifConfig::default().dt_ms() * 1e-3;
    for r in &rows {
        let seconds = r.timing.micros_per_step * 1e-6 * r.timing.steps as f64;
        println!(
            "| {} | {} | {} × {} | {:.2} | {:.3e} | {:.3e} | {:.3e} | {:.2} |",
            r.n,
            r.path,
            r.timing.steps,
            r.runs,
            r.timing.micros_per_step,
            r.n as f64 / (r.timing.micros_per_step * 1e-6),
            r.timing.synaptic_events as f64 / seconds,
            r.timing.spikes as f64 / seconds,
            r.timing.spikes as f64 / r.n as f64 / (r.timing.steps as f64 * dt_s)
        );
    }
    if !silent_rows.is_empty() {
        println!(
            "\nThe cluster run with no input (no spike, nothing delivered: the fixed cost of its \
             steps)\n\n| N | steps × runs | µs/step |\n|---|---|---|"
        );
    }
    for (n, timing) in &silent_rows {
        println!(
            "| {n} | {} × {runs} | {:.2} |",
            timing.steps, timing.micros_per_step
        );
    }
    if !rule_rows.is_empty() {
        println!(
            "\npath rule (LifStepPath::auto: the cluster run where the device has it, else \
             event-driven from {LIF_EVENT_MIN_SYNAPSES} synapses), 2000 steps × 5 runs\n"
        );
        println!("| N | p | synapses | event-driven µs/step | gather µs/step | cluster run µs/step | rate (Hz) | auto picks | fastest |");
        println!("|---|---|---|---|---|---|---|---|---|");
    }
    for (n, p, synapses, micros, rate, auto, fastest) in &rule_rows {
        let cluster = micros
            .get(2)
            .map_or_else(|| "—".to_string(), |us| format!("{us:.2}"));
        println!(
            "| {n} | {p} | {synapses} | {:.2} | {:.2} | {cluster} | {rate:.2} | {auto:?} | {fastest:?} |",
            micros[0], micros[1]
        );
    }

    println!(
        "\nGPU steps write their features (N f32) and spike flags to device memory; the CPU's \
         step writes neither. The last timed runs of the paths measured held the same spikes \
         and synaptic events (checked)."
    );
    Ok(())
}
