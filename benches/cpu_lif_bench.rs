//! CPU benchmark of the LIF step, `LifNetwork::step`, on the network of `gpu_lif_bench`
//! (defaults: bias 0.9, ρ = 2, 80 % excitatory, dt = 0.1 ms, t_ref = 2 ms; one input channel
//! into 10 % of the neurons, a level uniform on [0.3, 1) held for 10 ms) at 1 % connectivity.
//!
//! Per size it times `runs` runs of `steps` steps after one warm-up run of as many steps,
//! continuing the trajectory from rest (`lif_setup::time_cpu`: median wall-clock µs per step
//! over the runs), on one thread and then, with `--threads 1,2`, split over two by neuron range
//! (`LifNetwork::set_step_threads`; a network too small to split is measured once). It prints
//! one JSON line per measurement: `tool`, `n`, `synapses`, `threads`, `steps`, `runs`,
//! `us_per_step`, `rate_hz` (spikes of the last run / N / its model time),
//! `synaptic_events_per_s`, `spikes`, `cpu` (model name from `/proc/cpuinfo`).
//!
//! With `--export DIR` it first writes the network for `benches/python/lif_vs_brian2.py`, per
//! size N: `nN.json` (parameters), `nN_pre.u32` / `nN_post.u32` / `nN_w.f64` (each synapse's
//! source j, target i and weight W[i, j], raw little-endian, W's row order), `nN_w_in.f64`
//! (W_in, N × K row-major), `nN_u.f64` (the input levels, one per hold, K per level) and
//! `nN_spikes.u32` (the spikes of the first 1000 steps from rest, as (step, neuron) pairs).
//!
//! `cargo run --release -p reservoir-benches --bin cpu_lif_bench -- [--sizes 10000,100000]
//! [--steps S] [--runs R] [--threads 1,2] [--export DIR]` (defaults: both sizes; S = 10,000
//! at N ≤ 10^4, 2000 above; R = 5; one thread).

mod lif_setup;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use lif_setup::{held_input, lif_config, time_cpu};
use ndarray::Array2;
use reservoir_benches::cpu_model;
use reservoir_core::lif::{LifNetwork, LifWeights, MIN_PART_NEURONS};
use reservoir_core::{Reservoir, ReservoirError, Result};

/// Steps the input level is held: 10 ms at dt = 0.1 ms.
const HOLD_STEPS: usize = 100;

/// Steps from rest whose spikes `--export` writes, for a simulator to check its model against.
const CHECK_STEPS: usize = 1000;

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

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> ReservoirError + '_ {
    move |e| ReservoirError::invalid("cpu_lif_bench export", format!("{}: {e}", path.display()))
}

/// Writes `values` as raw little-endian bytes to `dir/name`.
fn write_raw<T: Copy, const B: usize>(
    dir: &Path,
    name: &str,
    values: impl IntoIterator<Item = T>,
    to_bytes: impl Fn(T) -> [u8; B],
) -> Result<()> {
    let path = dir.join(name);
    let mut out = BufWriter::new(File::create(&path).map_err(io_error(&path))?);
    for v in values {
        out.write_all(&to_bytes(v)).map_err(io_error(&path))?;
    }
    out.flush().map_err(io_error(&path))
}

/// Writes the network, its input levels and its first spikes for the Brian2 script (module
/// docs); `network` is at rest and is left so.
fn export(
    dir: &Path,
    network: &mut LifNetwork,
    inputs: &Array2<f64>,
    steps: usize,
    runs: usize,
) -> Result<()> {
    let (config, weights) = (network.config(), network.weights());
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let n = config.size();
    let w = weights.recurrent();
    let posts = w
        .row_ptr()
        .windows(2)
        .enumerate()
        .flat_map(|(i, r)| std::iter::repeat_n(i as u32, (r[1] - r[0]) as usize));
    write_raw(dir, &format!("n{n}_post.u32"), posts, u32::to_le_bytes)?;
    let pres = w.col_idx().iter().copied();
    write_raw(dir, &format!("n{n}_pre.u32"), pres, u32::to_le_bytes)?;
    let values = w.values().iter().copied();
    write_raw(dir, &format!("n{n}_w.f64"), values, f64::to_le_bytes)?;
    let w_in = weights.input().iter().copied();
    write_raw(dir, &format!("n{n}_w_in.f64"), w_in, f64::to_le_bytes)?;
    let levels = inputs
        .rows()
        .into_iter()
        .step_by(HOLD_STEPS)
        .flatten()
        .copied();
    write_raw(dir, &format!("n{n}_u.f64"), levels, f64::to_le_bytes)?;
    let meta = format!(
        "{{\"n\": {n}, \"input_size\": {}, \"synapses\": {}, \"dt_ms\": {}, \"tau_m_ms\": {}, \
         \"tau_syn_ms\": {}, \"threshold\": {}, \"v_rest\": {}, \"v_reset\": {}, \
         \"refractory_steps\": {}, \"resistance\": {}, \"bias\": {}, \"hold_steps\": {}, \
         \"steps\": {steps}, \"runs\": {runs}, \"check_steps\": {CHECK_STEPS}}}\n",
        config.input_size(),
        w.nnz(),
        config.dt_ms(),
        config.tau_m_ms(),
        config.tau_syn_ms(),
        config.threshold(),
        config.v_rest(),
        config.v_reset(),
        config.refractory_steps(),
        config.resistance(),
        config.bias_current(),
        HOLD_STEPS,
    );
    let path = dir.join(format!("n{n}.json"));
    std::fs::write(&path, meta).map_err(io_error(&path))?;
    let mut first = Vec::new();
    for (t, u) in inputs.rows().into_iter().take(CHECK_STEPS).enumerate() {
        first.extend(network.step(u)?.iter().flat_map(|&j| [t as u32, j]));
    }
    network.reset()?;
    write_raw(dir, &format!("n{n}_spikes.u32"), first, u32::to_le_bytes)
}

fn main() -> Result<()> {
    let options = options()?;
    let cpu = cpu_model();
    for &n in &options.sizes {
        let steps = options
            .steps
            .unwrap_or(if n <= 10_000 { 10_000 } else { 2000 });
        let config = lif_config(n, 0.01)?;
        let weights = LifWeights::generate(&config)?;
        let inputs = held_input(steps, HOLD_STEPS);
        let synapses = weights.recurrent().nnz();
        let mut network = LifNetwork::from_weights(&config, weights)?;
        if let Some(dir) = &options.export {
            let all = held_input((steps * (options.runs + 1)).max(CHECK_STEPS), HOLD_STEPS);
            export(dir, &mut network, &all, steps, options.runs)?;
        }
        let mut measured = Vec::new();
        for &threads in &options.threads {
            network.set_step_threads(threads)?;
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
            println!(
                "{{\"tool\": \"reservoir-core LifNetwork::step\", \"n\": {n}, \"synapses\": \
                 {synapses}, \"threads\": {}, \"steps\": {steps}, \"runs\": {}, \
                 \"us_per_step\": {:.3}, \"rate_hz\": {:.3}, \"synaptic_events_per_s\": {:.4e}, \
                 \"spikes\": {}, \"cpu\": \"{cpu}\"}}",
                network.step_threads(),
                options.runs,
                timing.micros_per_step,
                timing.spikes as f64 / n as f64 / model_s,
                timing.synaptic_events as f64 / seconds,
                timing.spikes,
            );
        }
    }
    Ok(())
}
