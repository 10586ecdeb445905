//! CPU benchmark of the LIF step, `LifNetwork::step`, on the network of `gpu_lif_bench`
//! (defaults: bias 0.9, ρ = 2, 80 % excitatory, dt = 0.1 ms, t_ref = 2 ms; one input channel
//! into 10 % of the neurons, a level uniform on [0.3, 1) held for 10 ms) at 1 % connectivity.
//!
//! Per size it times `runs` runs of `steps` steps after one warm-up run of as many steps,
//! continuing the trajectory from rest (`lif_setup::time_cpu`: median wall-clock µs per step
//! over the runs), on one thread and then, with `--threads 1,2`, split over two by neuron range
//! (`LifNetwork::set_step_par`; a network too small to split is measured once). It prints
//! a line of text and JSON lines (`Recorder`) per measurement: µs per step, the firing rate
//! (spikes of the last run / N / its model time) and synaptic events per second.
//!
//! With `--export DIR` it first writes the network, with its synapses, for
//! `benches/python/lif_vs_brian2.py` (the files: `lif_export.rs`).
//!
//! The weights' generation is reported by phase on stderr (draw, checks, spectral setup,
//! products and host work, scale, input).
//!
//! `cargo run --release -p reservoir-benches --bin cpu_lif_bench -- [--sizes 10000,100000]
//! [--steps S] [--runs R] [--threads 1,2] [--export DIR]` (defaults: both sizes; S = 10,000
//! at N ≤ 10^4, 2000 above; R = 5; one thread).

mod lif_export;
mod lif_setup;

use std::path::PathBuf;

use lif_export::{export_network, export_synapses, HOLD_STEPS};
use lif_setup::{held_input, lif_config, time_cpu};
use reservoir_benches::{lif_weights_phased, phase_line, Param, Recorder};
use reservoir_core::lif::{LifNetwork, MIN_PART_NEURONS};
use reservoir_core::{Reservoir, ReservoirError, Result};

/// The command line.
struct Options {
    sizes: Vec<usize>,
    steps: Option<usize>,
    runs: usize,
    threads: Vec<usize>,
    export: Option<PathBuf>,
}

fn usage(problem: &str) -> ReservoirError {
    ReservoirError::invalid(
        "cpu_lif_bench",
        format!(
            "{problem}; usage: cpu_lif_bench [--sizes N,...] [--steps S] [--runs R] \
             [--threads T,...] [--export DIR]"
        ),
    )
}

fn parse_list(flag: &str, value: Option<String>) -> Result<Vec<usize>> {
    let value = value.ok_or_else(|| usage(&format!("{flag} needs a value")))?;
    value
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<usize>()
                .ok()
                .filter(|&x| x > 0)
                .ok_or_else(|| usage(&format!("{flag}: {v:?} is not a positive integer")))
        })
        .collect()
}

fn parse_one(flag: &str, value: Option<String>) -> Result<usize> {
    match parse_list(flag, value)?.as_slice() {
        [x] => Ok(*x),
        _ => Err(usage(&format!("{flag} takes one number"))),
    }
}

fn options() -> Result<Options> {
    let mut options = Options {
        sizes: vec![10_000, 100_000],
        steps: None,
        runs: 5,
        threads: vec![1],
        export: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--sizes" => options.sizes = parse_list(&flag, args.next())?,
            "--steps" => options.steps = Some(parse_one(&flag, args.next())?),
            "--runs" => options.runs = parse_one(&flag, args.next())?,
            "--threads" => options.threads = parse_list(&flag, args.next())?,
            "--export" => {
                let dir = args
                    .next()
                    .ok_or_else(|| usage("--export needs a folder"))?;
                options.export = Some(PathBuf::from(dir));
            }
            other => return Err(usage(&format!("unknown argument {other:?}"))),
        }
    }
    Ok(options)
}

fn main() -> Result<()> {
    let options = options()?;
    let rec = Recorder::new("cpu_lif_bench", None);
    for &n in &options.sizes {
        let steps = options
            .steps
            .unwrap_or(if n <= 10_000 { 10_000 } else { 2000 });
        let config = lif_config(n, 0.01)?;
        let started = std::time::Instant::now();
        let (weights, phases) = lif_weights_phased(&config)?;
        eprintln!(
            "N = {n}: weights {:.3} s: {}",
            started.elapsed().as_secs_f64(),
            phase_line(&phases)
        );
        let inputs = held_input(steps, HOLD_STEPS);
        let synapses = weights.recurrent().nnz();
        let mut network = LifNetwork::from_weights(&config, weights)?;
        if let Some(dir) = &options.export {
            export_network(
                dir,
                &config,
                network.weights(),
                &inputs,
                1,
                options.runs,
                true,
            )?;
            export_synapses(dir, &mut network, &inputs)?;
        }
        let mut measured = Vec::new();
        for &threads in &options.threads {
            network.set_step_par(reservoir_core::Par::rayon(threads))?;
            if measured.contains(&network.step_threads()) {
                eprintln!(
                    "N = {n}: {threads} threads step on {} (parts of at least {} neurons): \
                     measured already",
                    network.step_threads(),
                    MIN_PART_NEURONS
                );
                continue;
            }
            measured.push(network.step_threads());
            network.reset()?;
            let timing = time_cpu(&mut network, &inputs, options.runs)?;
            let seconds = timing.micros_per_step * 1e-6 * steps as f64;
            let model_s = steps as f64 * config.dt_ms() * 1e-3;
            let rate = timing.spikes as f64 / n as f64 / model_s;
            let events = timing.synaptic_events as f64 / seconds;
            let threads = network.step_threads();
            println!(
                "N = {n} ({synapses} synapses), {threads} threads, {steps} steps × {} runs: \
                 {:.3} µs/step, {rate:.3} Hz, {events:.4e} synaptic events/s",
                options.runs, timing.micros_per_step,
            );
            let case = [
                ("N", Param::from(n)),
                ("connection", 0.01.into()),
                ("steps", steps.into()),
                ("runs", options.runs.into()),
                ("threads", threads.into()),
            ];
            rec.figure(&case, "step", timing.micros_per_step, "µs/step");
            rec.figure(&case, "firing rate", rate, "Hz");
            rec.figure(&case, "synaptic events", events, "per s");
        }
    }
    Ok(())
}
