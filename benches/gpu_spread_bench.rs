//! GPU benchmark of work spread over several GPUs of one host through NCCL, each figure next to
//! the same work on one GPU, measured in the same process:
//!
//! - `fit`: a many-sequence classifier (`fit_classifier`, as `reservoir fit --label-column`
//!   runs it) on synthetic sequences (default 100,000 of 100 steps, 2 inputs, 4 classes,
//!   N = 500, last-state features): seconds from the weights to the readout on GPU 0 alone
//!   and with `devices = "all"` (sequences split over the GPUs, device ridge sums added by an
//!   all-reduce), after a warm-up of both; accuracy of each and the share of equal
//!   predictions.
//! - `sharded`: an echo-state reservoir of N = 8192, 16384, 32768 units (W dense, or
//!   `--density D` connected), µs per step of `run` over 200 steps (states copied back) of
//!   `GpuReservoirComputer` on GPU 0 and of `ShardedReservoir` on GPU 0 alone and split over
//!   every GPU, the largest state difference from `GpuReservoirComputer`'s, and µs per
//!   all-gather of the N-value state alone. W is drawn here (uniform, scaled by the circular
//!   law to radius 0.9) rather than by `ReservoirWeights::generate`, whose spectral estimate at
//!   this size is not what is timed.
//!
//! - `lif`: the benchmark LIF network of `gpu_lif_bench` (one held input channel) at 10⁵
//!   neurons 1 % connected and 10⁶ neurons 0.1 % connected (`--lif-sizes`): µs per step of
//!   1000 steps (after 100 of warm-up, from rest) of `GpuLifNetwork` event-driven on GPU 0 and
//!   of `ShardedLifNetwork` on GPU 0 alone and split over every GPU, the spikes per step, and
//!   whether the split network's features equal one GPU's bit for bit (exits 1 if not);
//!   drawing the weights and uploading them are timed apart. Then the steps alone, continuing
//!   those runs: the same three, each run one chunk of steps with the features left on the
//!   GPUs (what `run` copies back and widens per chunk dominates the first table at 10⁶).
//!
//! Every figure is also printed as a JSON line (`Recorder`).
//!
//! Build with `cargo build --release -p reservoir-benches --bins`; run
//! `target/release/gpu_spread_bench [fit|sharded|lif|all] [--sequences S] [--repeats R] [--sizes N,N] [--density D] [--lif-sizes N:P,N:P]`.
//! Exits 0 with a message when there is no GPU.

use std::time::Instant;

// The benchmark network of `gpu_lif_bench`; its CPU timing is not used here.
#[allow(dead_code)]
mod lif_setup;

use gpu_reservoir::{probe, Collective, ShardedReservoir};
use ndarray::{Array1, Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use reservoir_benches::{Param, Recorder};
use reservoir_core::sparse::CsrMatrix;
use reservoir_core::{Reservoir, ReservoirConfig, ReservoirWeights};
use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::jobs::sequences::{fit_classifier, Labelled};
use reservoir_runtime::{Device, Devices, Dispatch};

type Failure = Box<dyn std::error::Error>;

/// `count` sequences of `steps` steps and their labels: two noisy sines whose frequency and
/// phase depend on the class.
fn sequences(count: usize, steps: usize, seed: u64) -> (Vec<Array2<f64>>, Vec<String>) {
    (0..count)
        .into_par_iter()
        .map(|i| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9E37_79B9));
            let class = rng.random_range(0..4usize);
            let frequency = 0.05 + 0.03 * class as f64;
            let phase: f64 = rng.random_range(0.0..std::f64::consts::TAU);
            let inputs = Array2::from_shape_fn((steps, 2), |(t, k)| {
                let angle = frequency * t as f64 + phase + k as f64 * 0.5 * class as f64;
                angle.sin() + 0.3 * rng.random_range(-1.0..1.0)
            });
            (inputs, format!("c{class}"))
        })
        .unzip()
}

/// Seconds and training accuracy of one classifier fit, and its training predictions.
fn fit_once(
    config: &ExperimentConfig,
    inputs: &[ArrayView2<f64>],
    ids: &[String],
    labels: &[String],
    devices: Option<Devices>,
) -> Result<(f64, f64, String), Failure> {
    let mut dispatch = Dispatch::new(Device::Cuda(0)).with_devices(devices);
    let names = ["u0".to_string(), "u1".to_string()];
    let train = Labelled {
        ids,
        inputs,
        labels,
    };
    let started = Instant::now();
    let outcome = fit_classifier(
        config,
        &names,
        train,
        None,
        &mut dispatch,
        &mut |_, _, _| {},
    )?;
    let seconds = started.elapsed().as_secs_f64();
    let placement = dispatch
        .placements()
        .iter()
        .map(|(_, p)| p.name())
        .collect::<Vec<_>>()
        .join(",");
    Ok((seconds, outcome.train.accuracy, placement))
}

/// Where the seconds of a fit go: the weights, the features on one GPU and on every GPU at
/// once (each its share), and the readout from the features on the host.
fn fit_phases(
    config: &ExperimentConfig,
    views: &[ArrayView2<f64>],
    labels: &[String],
) -> Result<(), Failure> {
    use gpu_reservoir::collective::share;
    use gpu_reservoir::{GpuDevice, GpuReservoirComputer};
    use reservoir_runtime::jobs::sequences::fit_class_readout;
    use reservoir_runtime::model::Classes;
    let reservoir_config = config.reservoir().to_params().input_size(2).check()?;
    let started = Instant::now();
    let (weights, _) = ReservoirWeights::generate(&reservoir_config)?;
    println!("  weights: {:.3} s", started.elapsed().as_secs_f64());
    let gpus: Vec<usize> = probe().devices.iter().map(|d| d.ordinal).collect();
    let mut reservoirs = gpus
        .iter()
        .map(|&g| {
            GpuReservoirComputer::from_weights(
                &reservoir_config,
                weights.clone(),
                &GpuDevice::shared(g)?,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let features = config.features();
    let started = Instant::now();
    let rows = reservoirs[0].sequence_features(views, features, &mut |_, _| {})?;
    println!(
        "  features on one GPU: {:.3} s",
        started.elapsed().as_secs_f64()
    );
    let world = reservoirs.len();
    let started = Instant::now();
    std::thread::scope(|scope| {
        let threads: Vec<_> = reservoirs
            .iter_mut()
            .enumerate()
            .map(|(rank, r)| {
                let mine = &views[share(views.len(), world, rank)];
                scope.spawn(move || {
                    let t = Instant::now();
                    let out = r.sequence_features(mine, features, &mut |_, _| {});
                    (out.map(|_| ()), t.elapsed().as_secs_f64())
                })
            })
            .collect();
        for (rank, t) in threads.into_iter().enumerate() {
            if let Ok((result, seconds)) = t.join() {
                println!("    GPU {rank}: {seconds:.3} s ({:?})", result.err());
            }
        }
    });
    println!(
        "  features on {world} GPUs at once: {:.3} s",
        started.elapsed().as_secs_f64()
    );
    let classes = Classes::from_labels(labels)?;
    let ids: Vec<String> = (0..labels.len()).map(|i| i.to_string()).collect();
    let indices = classes.indices(labels, &ids)?;
    let started = Instant::now();
    fit_class_readout(rows.view(), &indices, classes.len(), 1e-4)?;
    println!(
        "  readout on the host: {:.3} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn bench_fit(rec: &Recorder, count: usize, repeats: usize) -> Result<(), Failure> {
    let config = ExperimentConfig::from_toml(
        "device = \"cuda\"\n[reservoir]\nsize = 500\nconnection_prob = 0.1\nleak_rate = 0.5\nseed = 7\n\
         [readout]\nridge = 1e-4\n[features]\nsummaries = [\"last\"]\n",
        "<gpu_spread_bench>",
    )?;
    let started = Instant::now();
    let (data, labels) = sequences(count, 100, 11);
    let views: Vec<ArrayView2<f64>> = data.iter().map(|a| a.view()).collect();
    let ids: Vec<String> = (0..count).map(|i| i.to_string()).collect();
    println!(
        "fit: {count} sequences of 100 steps generated in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    // Warm-up: start every GPU, compile the kernels and create the communicator (timed).
    let gpus: Vec<usize> = probe().devices.iter().map(|d| d.ordinal).collect();
    for &gpu in &gpus {
        gpu_reservoir::GpuDevice::shared(gpu)?;
    }
    let started = Instant::now();
    drop(Collective::local(&gpus)?);
    println!(
        "communicator of {} GPUs created in {:.3} s (once per process)",
        gpus.len(),
        started.elapsed().as_secs_f64()
    );
    let warm = count.min(2000);
    fit_once(&config, &views[..warm], &ids[..warm], &labels[..warm], None)?;
    fit_once(
        &config,
        &views[..warm],
        &ids[..warm],
        &labels[..warm],
        Some(Devices::All),
    )?;
    fit_phases(&config, &views, &labels)?;
    let mut one = Vec::new();
    let mut all = Vec::new();
    for _ in 0..repeats.max(1) {
        let (s, accuracy, placement) = fit_once(&config, &views, &ids, &labels, None)?;
        println!("fit on {placement}: {s:.3} s, training accuracy {accuracy:.4}");
        one.push(s);
        let (s, accuracy, placement) =
            fit_once(&config, &views, &ids, &labels, Some(Devices::All))?;
        println!("fit on {placement}: {s:.3} s, training accuracy {accuracy:.4}");
        all.push(s);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (one, all) = (median(&mut one), median(&mut all));
    println!(
        "fit median of {repeats}: one GPU {one:.3} s, all GPUs {all:.3} s, speed-up {:.2}x",
        one / all
    );
    for (gpus, seconds) in [(1, one), (gpus.len(), all)] {
        let case = [
            ("N", Param::from(500)),
            ("sequences", count.into()),
            ("steps", 100.into()),
            ("GPUs", gpus.into()),
        ];
        rec.figure(&case, "fit_classifier", seconds, "s");
    }
    Ok(())
}

/// An N × N reservoir with one input, each weight present with probability `density`,
/// uniform and scaled to spectral radius about 0.9 (circular law), drawn on all cores.
fn random_weights(n: usize, density: f64) -> Result<(ReservoirConfig, ReservoirWeights), Failure> {
    let config = ReservoirConfig::default()
        .to_params()
        .size(n)
        .input_size(1)
        .connection_prob(density)
        .leak_rate(0.5)
        .check()?;
    let scale = 0.9 / (density * n as f64 / 3.0).sqrt();
    let rows: Vec<(Vec<u32>, Vec<f64>)> = (0..n)
        .into_par_iter()
        .map(|row| {
            let mut rng = ChaCha8Rng::seed_from_u64(row as u64);
            let mut columns = Vec::with_capacity((density * n as f64) as usize + 16);
            let mut values = Vec::with_capacity(columns.capacity());
            for column in 0..n as u32 {
                if density >= 1.0 || rng.random_bool(density) {
                    columns.push(column);
                    values.push(scale * rng.random_range(-1.0..1.0));
                }
            }
            (columns, values)
        })
        .collect();
    let mut row_ptr = Vec::with_capacity(n + 1);
    row_ptr.push(0u32);
    for (columns, _) in &rows {
        row_ptr.push(row_ptr[row_ptr.len() - 1] + columns.len() as u32);
    }
    let (col_idx, values): (Vec<Vec<u32>>, Vec<Vec<f64>>) = rows.into_iter().unzip();
    let recurrent = CsrMatrix::from_parts(n, n, row_ptr, col_idx.concat(), values.concat())?;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let input = Array2::from_shape_fn((n, 1), |_| rng.random_range(-1.0..1.0));
    let bias = Array1::from_shape_fn(n, |_| 0.1 * rng.random_range(-1.0..1.0));
    Ok((
        config,
        ReservoirWeights::from_parts(recurrent, input, bias)?,
    ))
}

/// µs per step of `reservoir.run` over `inputs` after a warm-up of 20 steps, and its states.
fn timed_run(
    reservoir: &mut dyn Reservoir,
    inputs: &Array2<f64>,
) -> Result<(f64, Array2<f64>), Failure> {
    reservoir.run(inputs.slice(ndarray::s![..20, ..]))?;
    reservoir.reset()?;
    let started = Instant::now();
    let states = reservoir.run(inputs.view())?;
    Ok((
        started.elapsed().as_secs_f64() * 1e6 / inputs.nrows() as f64,
        states,
    ))
}

fn bench_sharded(rec: &Recorder, sizes: &[usize], density: f64) -> Result<(), Failure> {
    let gpus: Vec<usize> = probe().devices.iter().map(|d| d.ordinal).collect();
    const STEPS: usize = 200;
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let inputs = Array2::from_shape_fn((STEPS, 1), |_| rng.random_range(-1.0..1.0));
    println!(
        "W {:.0} % connected; one GPU's GpuReservoirComputer, then ShardedReservoir",
        density * 100.0
    );
    println!("| N | reservoir | GPUs | set-up (s) | µs/step | max |Δ| vs GpuReservoirComputer | µs/all-gather |");
    println!("|---|---|---|---|---|---|---|");
    for &n in sizes {
        let started = Instant::now();
        let (config, weights) = random_weights(n, density)?;
        println!(
            "N = {n}: weights drawn in {:.2} s",
            started.elapsed().as_secs_f64()
        );
        let started = Instant::now();
        let device = gpu_reservoir::GpuDevice::shared(gpus[0])?;
        let mut one =
            gpu_reservoir::GpuReservoirComputer::from_weights(&config, weights.clone(), &device)?;
        let setup = started.elapsed().as_secs_f64();
        let (micros, expected) = timed_run(&mut one, &inputs)?;
        drop(one);
        println!("| {n} | GpuReservoirComputer | 1 | {setup:.2} | {micros:.1} | 0 | |");
        let case = |reservoir: &str, gpus: usize| {
            [
                ("N", Param::from(n)),
                ("density", density.into()),
                ("reservoir", reservoir.into()),
                ("GPUs", gpus.into()),
            ]
        };
        let one_gpu = case("GpuReservoirComputer", 1);
        rec.figure(&one_gpu, "set-up", setup, "s");
        rec.figure(&one_gpu, "step, states copied back", micros, "µs/step");
        for ordinals in [&gpus[..1], &gpus[..]] {
            let started = Instant::now();
            let collective = Collective::local(ordinals)?;
            let mut reservoir = ShardedReservoir::new(&config, &weights, collective)?;
            let setup = started.elapsed().as_secs_f64();
            let (micros, states) = timed_run(&mut reservoir, &inputs)?;
            let difference = (&states - &expected)
                .iter()
                .fold(0.0f64, |m, v| m.max(v.abs()));
            let gather = gather_micros(n, ordinals)?;
            println!(
                "| {n} | ShardedReservoir | {} | {setup:.2} | {micros:.1} | {difference:.1e} | {gather:.1} |",
                ordinals.len()
            );
            let sharded = case("ShardedReservoir", ordinals.len());
            rec.figure(&sharded, "set-up", setup, "s");
            rec.figure(&sharded, "step, states copied back", micros, "µs/step");
            let against = "largest state difference from GpuReservoirComputer";
            rec.figure(&sharded, against, difference, "");
            rec.figure(&sharded, "all-gather of the state", gather, "µs");
        }
    }
    Ok(())
}

/// µs per all-gather of an N-value f32 state over the GPUs `ordinals` (1000 in a row).
fn gather_micros(n: usize, ordinals: &[usize]) -> Result<f64, Failure> {
    let mut collective = Collective::local(ordinals)?;
    let world = ordinals.len();
    let rows = n.div_ceil(world);
    let devices = collective.devices();
    let sends = devices
        .iter()
        .map(|d| d.stream().alloc_zeros::<f32>(rows))
        .collect::<Result<Vec<_>, _>>()?;
    let mut receives = devices
        .iter()
        .map(|d| d.stream().alloc_zeros::<f32>(rows * world))
        .collect::<Result<Vec<_>, _>>()?;
    let mut once = |collective: &mut Collective| -> Result<(), Failure> {
        let s: Vec<_> = sends.iter().map(|b| b.slice(..)).collect();
        let mut r: Vec<_> = receives.iter_mut().map(|b| b.slice_mut(..)).collect();
        collective.all_gather(&s, &mut r)?;
        Ok(())
    };
    for _ in 0..20 {
        once(&mut collective)?;
    }
    for d in &devices {
        d.stream().synchronize()?;
    }
    let started = Instant::now();
    for _ in 0..1000 {
        once(&mut collective)?;
    }
    for d in &devices {
        d.stream().synchronize()?;
    }
    Ok(started.elapsed().as_secs_f64() * 1e6 / 1000.0)
}

/// Seconds of `steps` steps of `network` from its state, and its features.
fn timed_lif(
    network: &mut dyn Reservoir,
    inputs: &Array2<f64>,
) -> Result<(f64, Array2<f64>), Failure> {
    let started = Instant::now();
    let features = network.run(inputs.view())?;
    Ok((started.elapsed().as_secs_f64(), features))
}

/// Median wall-clock µs per step of `runs` calls of `run` (each `steps` steps, waited for)
/// after one untimed call.
fn micros_per_step(
    steps: usize,
    runs: usize,
    mut run: impl FnMut() -> Result<(), Failure>,
) -> Result<f64, Failure> {
    run()?;
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        run()?;
        samples.push(started.elapsed().as_secs_f64() * 1e6 / steps as f64);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

fn bench_lif(rec: &Recorder, sizes: &[(usize, f64)]) -> Result<(), Failure> {
    use gpu_reservoir::internals::{lif_chunk_steps, LifSteps, ShardedLifSteps};
    use gpu_reservoir::{GpuDevice, GpuLifNetwork, LifStepPath, ShardedLifNetwork};
    let gpus: Vec<usize> = probe().devices.iter().map(|d| d.ordinal).collect();
    let (warm, steps) = (100, 1000);
    let inputs = lif_setup::held_input(warm + steps, 100);
    let (warm_inputs, timed_inputs) = (
        inputs.slice(ndarray::s![..warm, ..]).to_owned(),
        inputs.slice(ndarray::s![warm.., ..]).to_owned(),
    );
    let mut steps_alone = Vec::new();
    println!("\n| N | connection | synapses | weights drawn (s) | one GPU, µs/step | split, GPU 0 alone | split, {} GPUs | speed-up | spikes/step | same bits |", gpus.len());
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &(n, p) in sizes {
        let config = lif_setup::lif_config(n, p)?;
        let started = Instant::now();
        // The CPU's weights, with the spectral estimate's products on GPU 0.
        let weights = GpuLifNetwork::generate_weights(&config, &GpuDevice::shared(gpus[0])?)?;
        let drawn = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let mut one = GpuLifNetwork::from_weights(&config, &weights, &GpuDevice::shared(gpus[0])?)?
            .with_step_path(LifStepPath::EventDriven);
        let mut built = vec![started.elapsed().as_secs_f64()];
        one.run(warm_inputs.view())?;
        let (one_s, expected) = timed_lif(&mut one, &timed_inputs)?;
        let spikes = one.spike_count() as f64 / (warm + steps) as f64;
        let synapses = weights.recurrent().nnz();
        // The steps alone, continuing from there: as many per run as one chunk of one GPU
        // and of the split network hold (53 at 10^6 neurons).
        let alone_steps = lif_chunk_steps(n).min(500);
        let alone_inputs = inputs.slice(ndarray::s![..alone_steps, ..]);
        let one_device = one.device().clone();
        let mut one_steps = LifSteps::new(&mut one, alone_inputs)?;
        let mut alone = vec![micros_per_step(alone_steps, STEP_RUNS, || {
            one_steps.enqueue()?;
            one_device.stream().synchronize()?;
            Ok(())
        })?];
        drop(one);
        let mut split_s = Vec::new();
        let mut same = true;
        for ordinals in [&gpus[..1], &gpus[..]] {
            let building = Instant::now();
            let mut split =
                ShardedLifNetwork::new(&config, &weights, Collective::local(ordinals)?)?;
            built.push(building.elapsed().as_secs_f64());
            split.run(warm_inputs.view())?;
            let (seconds, got) = timed_lif(&mut split, &timed_inputs)?;
            same &= got
                .iter()
                .zip(&expected)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            split_s.push(seconds);
            let steps = alone_steps.min(ShardedLifSteps::chunk_steps(&split));
            let mut split_steps =
                ShardedLifSteps::new(&mut split, alone_inputs.slice(ndarray::s![..steps, ..]))?;
            alone.push(micros_per_step(
                steps,
                STEP_RUNS,
                || Ok(split_steps.run()?),
            )?);
        }
        let networks = [
            ("GpuLifNetwork", 1),
            ("ShardedLifNetwork", 1),
            ("ShardedLifNetwork", gpus.len()),
        ];
        for (((network, count), whole), (set_up, micros)) in networks
            .into_iter()
            .zip([one_s].iter().chain(&split_s))
            .zip(built.iter().zip(&alone))
        {
            let case = [
                ("N", Param::from(n)),
                ("connection", p.into()),
                ("network", network.into()),
                ("GPUs", count.into()),
            ];
            rec.figure(&case, "set-up", *set_up, "s");
            let run = whole * 1e6 / steps as f64;
            rec.figure(&case, "run, features copied back", run, "µs/step");
            rec.figure(&case, "steps alone", *micros, "µs/step");
        }
        let case = [("N", Param::from(n)), ("connection", p.into())];
        rec.figure(&case, "weights drawn", drawn, "s");
        rec.figure(&case, "spikes per step", spikes, "");
        steps_alone.push((n, alone_steps, alone));
        eprintln!(
            "N = {n}: built in {:.2} s on one GPU, {:.2} s split on GPU 0, {:.2} s split on all \
             (weights drawn before, {drawn:.2} s); {:.1} s with the runs",
            built[0],
            built[1],
            built[2],
            started.elapsed().as_secs_f64()
        );
        let micros = |s: f64| s * 1e6 / steps as f64;
        println!(
            "| {n} | {p} | {synapses} | {drawn:.1} | {:.1} | {:.1} | {:.1} | {:.2}× | {spikes:.1} | {same} |",
            micros(one_s),
            micros(split_s[0]),
            micros(split_s[1]),
            one_s / split_s[1]
        );
        if !same {
            println!("FAILED: the split network's features differ from one GPU's");
            std::process::exit(1);
        }
    }
    println!(
        "\nThe steps alone (features left on the GPUs; {STEP_RUNS} runs after one untimed, \
         median wall time with every GPU waited for), continuing the runs above:\n"
    );
    println!(
        "| N | steps per run | one GPU, µs/step | split, GPU 0 alone | split, {} GPUs | speed-up |",
        gpus.len()
    );
    println!("|---|---|---|---|---|---|");
    for (n, steps, micros) in steps_alone {
        println!(
            "| {n} | {steps} | {:.1} | {:.1} | {:.1} | {:.2}× |",
            micros[0],
            micros[1],
            micros[2],
            micros[0] / micros[2]
        );
    }
    Ok(())
}

/// Timed runs of the LIF steps alone.
const STEP_RUNS: usize = 9;

fn main() -> Result<(), Failure> {
    let support = probe();
    if let Some(problem) = support.problem {
        println!("no GPU: {problem}");
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let what = args.first().map_or("all", String::as_str);
    let count = value("--sequences").map_or(Ok(100_000), |s| s.parse())?;
    let sizes: Vec<usize> = value("--sizes")
        .unwrap_or_else(|| "8192,16384,32768".to_string())
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let rec = Recorder::new(
        "gpu_spread_bench",
        support.devices.first().map(|d| d.name.clone()),
    );
    println!(
        "{} GPU(s): {}",
        support.devices.len(),
        support
            .devices
            .iter()
            .map(|d| d.name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if what == "fit" || what == "all" {
        bench_fit(
            &rec,
            count,
            value("--repeats").map_or(Ok(5), |s| s.parse())?,
        )?;
    }
    let density = value("--density").map_or(Ok(1.0), |s| s.parse())?;
    if what == "sharded" || what == "all" {
        bench_sharded(&rec, &sizes, density)?;
    }
    if what == "lif" || what == "all" {
        let lif_sizes: Vec<(usize, f64)> = value("--lif-sizes")
            .unwrap_or_else(|| "100000:0.01,1000000:0.001".to_string())
            .split(',')
            .map(|pair| -> Result<(usize, f64), Failure> {
                let (n, p) = pair.split_once(':').ok_or("--lif-sizes takes N:P,N:P")?;
                Ok((n.parse()?, p.parse()?))
            })
            .collect::<Result<_, _>>()?;
        bench_lif(&rec, &lif_sizes)?;
    }
    Ok(())
}
