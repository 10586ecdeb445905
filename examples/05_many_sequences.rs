//! Many short sequences in one call: classify 200 noisy sine, square and sawtooth snippets
//! (30–80 steps each, random period, phase and amplitude) by their shape.
//!
//! `Reservoir::sequence_features` runs every sequence from the zero state and summarizes its
//! states (here: its last state, as the default `SequenceFeatures` say), and a one-hot ridge
//! readout (one output per class) names the class. The reservoir comes from
//! `Dispatch`: under `auto` (the default) on the device expected to finish first, which says
//! why; on a GPU `run_many` steps many short sequences together (one GEMM per step), on the
//! CPU it spreads them over the cores.
//!
//! `cargo run --release -p reservoir-examples --example 05_many_sequences [-- DEVICE]`
//! (DEVICE: `auto`, `cpu`, `cuda`, `cuda:N`)

use std::f64::consts::TAU;
use std::time::Instant;

use ndarray::{s, Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::features::SequenceFeatures;
use reservoir_core::{ReservoirParams, ReservoirWeights};
use reservoir_runtime::jobs::sequences::fit_class_readout;
use reservoir_runtime::model::predict_classes;
use reservoir_runtime::{Device, Dispatch, Placement, Workload};

const CLASSES: [&str; 3] = ["sine", "square", "sawtooth"];
const SEQUENCES: usize = 200;
const TRAIN: usize = 150;

/// One noisy snippet (T × 1) of the wave `class`.
fn snippet(class: usize, rng: &mut ChaCha8Rng) -> Array2<f64> {
    let len = rng.random_range(30..=80);
    let period = rng.random_range(8.0..20.0);
    let phase = rng.random::<f64>();
    let amplitude = rng.random_range(0.5..1.0);
    Array2::from_shape_fn((len, 1), |(t, _)| {
        let x = (t as f64 / period + phase).fract(); // where in its cycle, in [0, 1)
        let wave = match class {
            0 => (TAU * x).sin(),
            1 => {
                if x < 0.5 {
                    1.0
                } else {
                    -1.0
                }
            }
            _ => 2.0 * x - 1.0,
        };
        amplitude * wave + 0.2 * (rng.random::<f64>() - 0.5)
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The data: labels drawn at random, then a snippet of that class each (seeded).
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let labels: Vec<usize> = (0..SEQUENCES)
        .map(|_| rng.random_range(0..CLASSES.len()))
        .collect();
    let sequences: Vec<Array2<f64>> = labels.iter().map(|&c| snippet(c, &mut rng)).collect();

    // The reservoir, on GPU 0 when one is usable (f32, the default precision), else the CPU.
    // The bias matters here: without one, tanh is odd, so a wave half a period on (−u for the
    // sine and the square) gives the negated state and a linear readout the negated scores.
    let config = ReservoirParams::new()
        .size(300)
        .spectral_radius(0.9)
        .leak_rate(0.3)
        .input_scaling(3.0)
        .bias_scaling(0.5)
        .seed(2)
        .check()?;
    let (weights, _) = ReservoirWeights::generate(&config)?;
    let device: Device = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => Device::Auto,
    };
    let mut dispatch = Dispatch::new(device);
    // `auto` weighs the job (its sequences and steps) to pick the faster device.
    let work = Workload::many(SEQUENCES, sequences.iter().map(|x| x.nrows()).sum());
    let mut reservoir = dispatch.echo_state(&config, weights, work)?;
    for (what, placement) in dispatch.placements() {
        match placement {
            Placement::Cpu {
                fallback: Some(reason),
            } => println!("{what} reservoir on the CPU: {reason}"),
            Placement::Cuda { info, .. } => {
                println!("{what} reservoir on GPU {}: {}", info.ordinal, info.name)
            }
            other => println!("{what} reservoir on {}", other.name()),
        }
    }

    // One call for all sequences; row i of `features` is the last state of sequence i.
    let started = Instant::now();
    let views: Vec<ArrayView2<f64>> = sequences.iter().map(|x| x.view()).collect();
    let features =
        reservoir.sequence_features(&views, &SequenceFeatures::default(), &mut |_, _| {})?;
    let seconds = started.elapsed().as_secs_f64();

    // Train on the first TRAIN sequences, score the rest.
    let readout = fit_class_readout(
        features.slice(s![..TRAIN, ..]),
        &labels[..TRAIN],
        CLASSES.len(),
        1e-3,
    )?;
    let predicted = predict_classes(&readout, features.slice(s![TRAIN.., ..]))?;
    let right = predicted
        .iter()
        .zip(&labels[TRAIN..])
        .filter(|(p, l)| p == l)
        .count();

    let steps: usize = sequences.iter().map(Array2::nrows).sum();
    println!("sequence_features: {SEQUENCES} sequences, {steps} steps in {seconds:.3} s");
    println!(
        "held-out accuracy: {right} of {} ({:.1} %; chance {:.1} %)",
        SEQUENCES - TRAIN,
        100.0 * right as f64 / (SEQUENCES - TRAIN) as f64,
        100.0 / CLASSES.len() as f64
    );
    Ok(())
}
