//! States out, your own model in: run the reservoir, take its states as a plain array, and
//! train any readout on them. Here the "own model" is a least-squares classifier of the
//! input's sign three steps ago, fitted with the `RidgeAccumulator` building block (any
//! linear-algebra or ML library would do just as well on the same array).
//!
//! `cargo run --release -p reservoir-examples --example 03_custom_readout`

use std::time::Instant;

use ndarray::{s, Array2};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::{EchoStateNetwork, Reservoir, ReservoirParams};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let config = ReservoirParams::new().size(200).leak_rate(0.5).check()?;
    // `new` generates the seeded weights itself; f32 arithmetic, f64 states.
    let mut reservoir = EchoStateNetwork::<f32>::new(&config)?;

    // Input: a noisy square wave; label: its sign three steps ago (needs memory).
    let steps = 4000;
    let input = Array2::from_shape_fn((steps, 1), |(t, _)| {
        let square = if (t / 25) % 2 == 0 { 1.0 } else { -1.0 };
        square + 0.3 * ((t * 7919 % 1000) as f64 / 500.0 - 1.0)
    });
    let label = Array2::from_shape_fn((steps, 1), |(t, _)| {
        if t >= 3 && input[(t - 3, 0)] > 0.0 {
            1.0
        } else {
            0.0
        }
    });

    // 1. The states: a T × N array of f64, whatever precision the reservoir computes in.
    let states = reservoir.run(input.view())?;

    // 2. Your model on those states: least squares through the accumulator, trained on rows
    //    100..3000 (the first 100 still remember the zero start), scored on the rest.
    let (train, test) = (s![100..3000, ..], s![3000.., ..]);
    let mut acc = RidgeAccumulator::new(states.ncols(), 1, reservoir_core::Par::Seq)?;
    acc.add(states.slice(train), label.slice(train))?;
    let fit = acc.solve(1e-4)?;
    let scores = fit.readout.predict(states.slice(test))?;
    let correct = scores
        .iter()
        .zip(label.slice(test).iter())
        .filter(|(score, truth)| (**score > 0.5) == (**truth > 0.5))
        .count();
    println!(
        "delayed-sign accuracy on {} held-out steps: {:.1} % ({:.2} s)",
        scores.len(),
        100.0 * correct as f64 / scores.len() as f64,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
