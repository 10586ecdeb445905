//! Closed-loop forecast of Mackey–Glass: teacher-forced training on one-step prediction, then
//! the reservoir runs free on its own predictions for 84 steps
//! (`Architecture::closed_loop`).
//!
//! `cargo run --release -p reservoir-examples --example 02_closed_loop_forecast`

use std::time::Instant;

use ndarray::s;
use reservoir_core::architecture::{Architecture, ReservoirKind};
use reservoir_core::forecast::Continuation;
use reservoir_core::{fit, Par, Precision, ReadoutParams, ReservoirParams};
use reservoir_runtime::data::tasks::mackey_glass::{
    mackey_glass, one_step_task, MackeyGlassOptions,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();

    // The series x(0..3200), scaled to [−1, 1]; input row t is x(t), target row t is x(t+1).
    let series = mackey_glass(3200, MackeyGlassOptions::default())?;
    let (train, _) = one_step_task(series.view()).split(3000)?;

    // A free run feeds its own errors back, so it pays to compute in f64 (CPU only).
    let config = ReservoirParams::new()
        .size(500)
        .spectral_radius(1.0)
        .leak_rate(0.3)
        .precision(Precision::F64)
        .check()?;
    let architecture = Architecture::new(ReservoirKind::EchoState(config));
    let weights = architecture.generate(&[])?;
    let mut reservoir = architecture.cpu(&weights, Par::all())?;
    let readout = ReadoutParams::new().ridge(1e-8).washout(100).check()?;
    let fit = fit::fit_ridge(
        reservoir.as_mut(),
        train.inputs.view(),
        train.targets.view(),
        &readout,
    )?;
    println!("one-step training NRMSE: {:.2e}", fit.train_nrmse);

    // Training ended after input x(2999); feed the true x(3000), then the predictions.
    let mut from = Continuation {
        last_input: series.slice(s![2999..3000]).to_owned(),
        last_output: series.slice(s![3000..3001]).to_owned(),
    };
    let forecast = architecture.closed_loop(reservoir.as_mut(), &fit.readout, &mut from, 84)?;
    let std = series.std(0.0);
    for step in [1, 10, 42, 84] {
        let (predicted, truth) = (forecast[(step - 1, 0)], series[3000 + step]);
        println!(
            "step {step:>2}: predicted {predicted:+.5}, true {truth:+.5}, error/std {:.2e}",
            (predicted - truth).abs() / std
        );
    }
    println!("({:.2} s)", started.elapsed().as_secs_f64());
    Ok(())
}
